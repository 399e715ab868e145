//! What injecting the matched SidecarSets changes in a new pod (spec §4.3–§4.7): kruise's
//! `sidecarsetMutatingPod` / `buildSidecars` for a CREATE.
//!
//! [`plan_injection`] returns an [`InjectionPlan`]; [`InjectionPlan::apply`] performs it on a
//! pod. Per matched set, in order: `patchPodMetadata` (all sets first), then each init container
//! and container is built — own volume mounts plus the app containers' mounts when
//! `shareVolumePolicy` is enabled (own mount paths win), env = own + `IS_INJECTED=true` +
//! transferEnv + the env vars the shared `subPathExpr`s reference (first name wins), devices
//! likewise — and the set's volumes referenced by the sidecar's own mounts and devices are
//! collected. Hot-upgrade sidecars become the pair `X-1`/`X-2`. Init containers are merged
//! sorted by name; containers in injection order (sorted by name under
//! `EnableSortSidecarContainerByName`); a same-named pod container is replaced in place,
//! `BeforeAppContainer` ones go first, the rest last. Pod volumes and image pull secrets win
//! over the sets'.
//!
//! Re-injecting an already injected pod is a no-op: injected containers are recognised by
//! `IS_INJECTED` and are not shared from, same-named containers are replaced by identical ones,
//! and an unchanged hash-annotation entry keeps its `updateTimestamp` (kruise would renew it,
//! which would make every `reinvocationPolicy: IfNeeded` call patch the pod again). Where two
//! matched sets inject containers of the same name (validation forbids it for overlapping sets),
//! the later one replaces the earlier instead of producing a pod with duplicate names.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{
    Container, EnvVar, EnvVarSource, LocalObjectReference, ObjectFieldSelector, Pod, Volume, VolumeDevice, VolumeMount,
};

use super::annotations::{self, UpgradeSpec};
use super::matching::{self, MatchError, MatchInput};
use super::metadata::{self, MetadataError};
use super::{
    BEFORE_APP_CONTAINER, INJECTED_ENV, SHARE_ENABLED, VERSION_ALT_ENV, VERSION_ENV, WORKING_HOT_UPGRADE_CONTAINER,
    hot_upgrade_names, is_hot_upgrade, is_native_sidecar,
};
use crate::apis::SidecarSet;
use crate::apis::keys::{SIDECARSET_HASH, SIDECARSET_HASH_WITHOUT_IMAGE, SIDECARSET_INJECTED_LIST};
use crate::apis::sidecarset::SidecarContainer;
use crate::compat::names::is_qualified_name;

/// What injection reads besides the pod and the candidate sets.
pub struct InjectionInput<'a> {
    /// Labels of the pod's Namespace (with `kubernetes.io/metadata.name`).
    pub namespace_labels: &'a BTreeMap<String, String>,
    /// The ControllerRevisions of kruise's namespace; only called for sets pinning a revision.
    pub revisions: &'a dyn Fn() -> Vec<Arc<ControllerRevision>>,
    /// A number in [0, 1) drawn for the `Partial` revision policy.
    pub draw: f64,
    /// `updateTimestamp` of new hash-annotation entries (`2006-01-02T15:04:05Z`).
    pub now: &'a str,
    /// Gate `EnableSortSidecarContainerByName`.
    pub sort_by_name: bool,
}

/// Why injection failed: the pod webhook answers 500, as kruise does for any mutator error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InjectionError {
    /// Matching or version selection failed.
    #[error(transparent)]
    Match(#[from] MatchError),
    /// A `patchPodMetadata` entry could not be applied.
    #[error(transparent)]
    Metadata(#[from] MetadataError),
    /// A sidecar's `resourcesPolicy` cannot be applied to the pod (spec §4.10).
    #[error(transparent)]
    Resources(#[from] super::resources::PolicyError),
    /// An existing hash annotation of the pod does not parse.
    #[error("pod({namespace}/{name}) invalid annotations[{key}] value {value}, unmarshal failed: {message}")]
    Annotation {
        /// Pod namespace.
        namespace: String,
        /// Pod name.
        name: String,
        /// The annotation.
        key: String,
        /// Its value.
        value: String,
        /// The parse error.
        message: String,
    },
}

/// One container to merge into the pod.
#[derive(Clone, Debug, PartialEq)]
pub struct Injected {
    /// The container as it goes into the pod.
    pub container: Container,
    /// `BeforeAppContainer` (else after the pod's own containers).
    pub before: bool,
}

/// Everything injection changes in the pod.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InjectionPlan {
    /// Names of the SidecarSets that matched (after canary/base resolution), in order.
    pub matched: Vec<String>,
    /// Annotations to set (from `patchPodMetadata` and the injection bookkeeping).
    pub annotations: BTreeMap<String, String>,
    /// Whether any container is injected (else only `annotations` from patchPodMetadata apply).
    pub injects: bool,
    /// Sidecar init containers, sorted by name.
    pub init_containers: Vec<Injected>,
    /// Sidecar containers, in injection order.
    pub containers: Vec<Injected>,
    /// Volumes the sidecars use (added when the pod has none of that name).
    pub volumes: Vec<Volume>,
    /// Image pull secrets of the sets.
    pub image_pull_secrets: Vec<LocalObjectReference>,
}

impl InjectionPlan {
    /// Whether applying the plan can change the pod.
    pub fn is_empty(&self) -> bool {
        self.annotations.is_empty() && !self.injects
    }

    /// Names of every injected container and init container.
    pub fn injected_names(&self) -> BTreeSet<String> {
        self.init_containers.iter().chain(&self.containers).map(|i| i.container.name.clone()).collect()
    }

    /// Performs the plan on `pod`, moving its containers, volumes and annotations into it (a
    /// plan is applied once: cloning them cost about 3% of a pod review, issue 16).
    pub fn apply(self, pod: &mut Pod) {
        if !self.annotations.is_empty() {
            pod.metadata.annotations.get_or_insert_with(Default::default).extend(self.annotations);
        }
        if !self.injects {
            return;
        }
        let spec = pod.spec.get_or_insert_with(Default::default);
        if !self.init_containers.is_empty() {
            let init = spec.init_containers.take().unwrap_or_default();
            spec.init_containers = Some(merge_containers(init, self.init_containers));
        }
        spec.containers = merge_containers(std::mem::take(&mut spec.containers), self.containers);
        if !self.volumes.is_empty() {
            let mut volumes = spec.volumes.take().unwrap_or_default();
            let mut names: BTreeSet<String> = volumes.iter().map(|v| v.name.clone()).collect();
            for v in self.volumes {
                if names.insert(v.name.clone()) {
                    volumes.push(v);
                }
            }
            spec.volumes = Some(volumes);
        }
        // kruise rebuilds the list (deduplicated) whenever it injects.
        let mut seen = BTreeSet::new();
        let had_list = spec.image_pull_secrets.is_some();
        let secrets: Vec<LocalObjectReference> = spec
            .image_pull_secrets
            .take()
            .unwrap_or_default()
            .into_iter()
            .chain(self.image_pull_secrets)
            .filter(|s| seen.insert(s.name.clone()))
            .collect();
        spec.image_pull_secrets = if secrets.is_empty() && !had_list { None } else { Some(secrets) };
    }
}

/// kruise's `mergeSidecarContainers`: a same-named container is replaced in place (the last of
/// that name, as kruise's name-to-index map keeps it), the others go before or after the pod's
/// own containers.
fn merge_containers(origins: Vec<Container>, injected: Vec<Injected>) -> Vec<Container> {
    let mut origins = origins;
    let own = origins.len();
    let mut before: Vec<Container> = Vec::new();
    let mut after: Vec<Container> = Vec::new();
    for sidecar in injected {
        let c = sidecar.container;
        if let Some(i) = origins[..own].iter().rposition(|o| o.name == c.name) {
            origins[i] = c;
        } else if let Some(existing) = before.iter_mut().chain(after.iter_mut()).find(|e| e.name == c.name) {
            *existing = c;
        } else if sidecar.before {
            before.push(c);
        } else {
            after.push(c);
        }
    }
    before.extend(origins);
    before.extend(after);
    before
}

/// Decides what injecting the candidate SidecarSets changes in a new pod. `candidates` are the
/// sets of the pod's namespace and the cluster-wide ones (the view's namespace index).
pub fn plan_injection(
    pod: &Pod,
    candidates: &[Arc<SidecarSet>],
    input: &InjectionInput<'_>,
) -> Result<InjectionPlan, InjectionError> {
    let namespace = super::pod_namespace(pod.metadata.namespace.as_deref());
    let match_input =
        MatchInput { namespace_labels: input.namespace_labels, revisions: input.revisions, draw: input.draw };
    let sets = matching::matched_sets(pod, namespace, candidates, &match_input)?;
    let mut plan = InjectionPlan {
        matched: sets.iter().map(|s| s.metadata.name.clone().unwrap_or_default()).collect(),
        ..Default::default()
    };
    if sets.is_empty() {
        return Ok(plan);
    }

    // 1. patchPodMetadata of every set, before any container.
    let original = pod.metadata.annotations.as_ref();
    let mut annotations = original.cloned().unwrap_or_default();
    for set in &sets {
        metadata::patch_pod_metadata(&mut annotations, &set.spec.patch_pod_metadata)?;
    }

    // 2. Build the sidecars.
    let parse = |key: &str| -> Result<annotations::HashMap, InjectionError> {
        match annotations.get(key).filter(|v| !v.is_empty()) {
            None => Ok(Default::default()),
            Some(v) => annotations::parse_hashes(v).map_err(|message| InjectionError::Annotation {
                namespace: pod.metadata.namespace.clone().unwrap_or_default(),
                name: pod.metadata.name.clone().unwrap_or_default(),
                key: key.to_string(),
                value: v.clone(),
                message,
            }),
        }
    };
    let mut hashes = parse(SIDECARSET_HASH)?;
    let mut hashes_without_image = parse(SIDECARSET_HASH_WITHOUT_IMAGE)?;
    let mut working = annotations::parse_working(annotations.get(WORKING_HOT_UPGRADE_CONTAINER).map(String::as_str));
    let mut injected_annotations: BTreeMap<String, String> = BTreeMap::new();
    let mut names: BTreeSet<String> = BTreeSet::new();
    let context = PodContext::new(pod);
    // Containers of the matched sets: never targets of a resourcesPolicy.
    let sidecar_names: BTreeSet<String> = sets
        .iter()
        .flat_map(|s| s.spec.init_containers.iter().chain(&s.spec.containers))
        .map(|c| c.container.name.clone())
        .collect();
    let build = |sc: &SidecarContainer, volumes: &HashMap<&str, &Volume>, out: &mut Vec<Volume>| {
        let mut built = context.build(sc, volumes, out);
        if let Some(policy) = &sc.resources_policy {
            built.resources = Some(super::resources::sidecar_resources(policy, pod, &sidecar_names)?);
        }
        Ok::<_, InjectionError>(built)
    };

    for set in &sets {
        let set_name = set.metadata.name.clone().unwrap_or_default();
        names.insert(set_name.clone());
        let volumes: HashMap<&str, &Volume> = set.spec.volumes.iter().map(|v| (v.name.as_str(), v)).collect();
        let mut sidecar_list = BTreeSet::new();
        let mut injecting = false;

        for sc in &set.spec.init_containers {
            if is_native_sidecar(&sc.container) {
                sidecar_list.insert(sc.container.name.clone());
            }
            let built = build(sc, &volumes, &mut plan.volumes)?;
            injecting = true;
            let before = sc.pod_inject_policy == BEFORE_APP_CONTAINER;
            if is_native_sidecar(&sc.container) && is_hot_upgrade(sc) {
                for c in hot_pair(sc, built, &mut working, &mut injected_annotations) {
                    plan.init_containers.push(Injected { container: c, before });
                }
            } else {
                plan.init_containers.push(Injected { container: built, before });
            }
        }
        plan.image_pull_secrets.extend(set.spec.image_pull_secrets.iter().cloned());

        for sc in &set.spec.containers {
            sidecar_list.insert(sc.container.name.clone());
            let built = build(sc, &volumes, &mut plan.volumes)?;
            injecting = true;
            let before = sc.pod_inject_policy == BEFORE_APP_CONTAINER;
            if is_hot_upgrade(sc) {
                for c in hot_pair(sc, built, &mut working, &mut injected_annotations) {
                    plan.containers.push(Injected { container: c, before });
                }
            } else {
                plan.containers.push(Injected { container: built, before });
            }
        }

        if injecting {
            let annotation = |key: &str| set.metadata.annotations.as_ref().and_then(|a| a.get(key)).cloned();
            let list: Vec<String> = sidecar_list.into_iter().collect();
            let with_image = UpgradeSpec {
                update_timestamp: Some(input.now.to_string()),
                hash: annotation(SIDECARSET_HASH).unwrap_or_default(),
                sidecar_set_name: set_name.clone(),
                sidecar_list: Some(list.clone()),
                controller_revision: set.status.as_ref().map(|s| s.latest_revision.clone()).unwrap_or_default(),
            };
            let without_image = UpgradeSpec {
                update_timestamp: Some(input.now.to_string()),
                hash: annotation(SIDECARSET_HASH_WITHOUT_IMAGE).unwrap_or_default(),
                sidecar_set_name: set_name.clone(),
                sidecar_list: Some(list),
                controller_revision: String::new(),
            };
            record(&mut hashes, &set_name, with_image);
            record(&mut hashes_without_image, &set_name, without_image);
        }
    }

    plan.injects = !plan.containers.is_empty() || !plan.init_containers.is_empty();
    if plan.injects {
        plan.init_containers.sort_by(|a, b| a.container.name.cmp(&b.container.name));
        if input.sort_by_name {
            plan.containers.sort_by(|a, b| a.container.name.cmp(&b.container.name));
        }
        injected_annotations.insert(SIDECARSET_HASH.into(), annotations::write_hashes(&hashes));
        injected_annotations
            .insert(SIDECARSET_HASH_WITHOUT_IMAGE.into(), annotations::write_hashes(&hashes_without_image));
        injected_annotations.insert(
            SIDECARSET_INJECTED_LIST.into(),
            annotations::injected_list(annotations.get(SIDECARSET_INJECTED_LIST).map(String::as_str), &names),
        );
        annotations.extend(injected_annotations);
    } else {
        plan.volumes.clear();
        plan.image_pull_secrets.clear();
    }
    plan.annotations = annotations.into_iter().filter(|(k, v)| original.and_then(|o| o.get(k)) != Some(v)).collect();
    Ok(plan)
}

/// Records a set's entry, keeping an existing entry that differs only by its timestamp.
fn record(map: &mut annotations::HashMap, set: &str, entry: UpgradeSpec) {
    if map.get(set).is_some_and(|old| old.same_version(&entry)) {
        return;
    }
    map.insert(set.to_string(), entry);
}

/// `injectHotUpgradeContainers`: `X-1` (working, real image) and `X-2` (the empty image), each
/// with its version env vars, plus the version annotations and the working-container map.
fn hot_pair(
    sc: &SidecarContainer,
    built: Container,
    working: &mut BTreeMap<String, String>,
    out: &mut BTreeMap<String, String>,
) -> [Container; 2] {
    let (name1, name2) = hot_upgrade_names(&sc.container.name);
    let mut c1 = built.clone();
    let mut c2 = built;
    c1.name = name1.clone();
    c2.name = name2.clone();
    let empty = &sc.upgrade_strategy.hot_upgrade_empty_image;
    c2.image = if empty.is_empty() { None } else { Some(empty.clone()) };
    for c in [&mut c1, &mut c2] {
        let env = c.env.get_or_insert_with(Vec::new);
        for (var, prefix) in [(VERSION_ENV, "version"), (VERSION_ALT_ENV, "versionalt")] {
            env.push(EnvVar {
                name: var.into(),
                value_from: Some(EnvVarSource {
                    field_ref: Some(ObjectFieldSelector {
                        field_path: format!("metadata.annotations['{prefix}.sidecarset.kruise.io/{}']", c.name),
                        api_version: None,
                    }),
                    ..Default::default()
                }),
                value: None,
            });
        }
    }
    out.insert(format!("version.sidecarset.kruise.io/{name1}"), "1".into());
    out.insert(format!("versionalt.sidecarset.kruise.io/{name1}"), "0".into());
    out.insert(format!("version.sidecarset.kruise.io/{name2}"), "0".into());
    out.insert(format!("versionalt.sidecarset.kruise.io/{name2}"), "1".into());
    working.insert(sc.container.name.clone(), name1);
    out.insert(WORKING_HOT_UPGRADE_CONTAINER.into(), annotations::write_string_map(working));
    [c1, c2]
}

/// What sidecars read from the pod: the app containers (those not carrying `IS_INJECTED=true`)
/// and their env vars.
struct PodContext<'a> {
    pod: &'a Pod,
    apps: Vec<&'a Container>,
    containers: &'a [Container],
}

impl<'a> PodContext<'a> {
    fn new(pod: &'a Pod) -> Self {
        let containers: &[Container] = pod.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or(&[]);
        let apps = containers.iter().filter(|c| !is_injected(c)).collect();
        PodContext { pod, apps, containers }
    }

    /// The env var `name` of the container `container`: kruise reads it from a map of
    /// `container/env` filled in pod order, so the last such var of the last such container
    /// wins. Looked up rather than built: the map cost two clones per env var of every review.
    fn env(&self, container: &str, name: &str) -> Option<&'a EnvVar> {
        let mut named = self.containers.iter().rev().filter(|c| c.name == container);
        named.find_map(|c| c.env.iter().flatten().rev().find(|e| e.name == name))
    }

    /// One sidecar container as it goes into the pod; the set volumes it uses are appended to
    /// `volumes_out`.
    fn build(
        &self,
        sc: &SidecarContainer,
        set_volumes: &HashMap<&str, &Volume>,
        volumes_out: &mut Vec<Volume>,
    ) -> Container {
        let (shared_mounts, subpath_envs) = self.shared_mounts(sc);
        let transfer = merge_env(self.transfer_envs(sc), subpath_envs);
        let own = &sc.container;
        for name in own
            .volume_mounts
            .iter()
            .flatten()
            .map(|m| m.name.as_str())
            .chain(own.volume_devices.iter().flatten().map(|d| d.name.as_str()))
        {
            if let Some(v) = set_volumes.get(name) {
                volumes_out.push((*v).clone());
            }
        }
        let mut c = own.clone();
        let mounts = merge_mounts(&c, shared_mounts);
        c.volume_mounts = (!mounts.is_empty()).then_some(mounts);
        let mut env = c.env.take().unwrap_or_default();
        env.push(EnvVar { name: INJECTED_ENV.into(), value: Some("true".into()), value_from: None });
        c.env = Some(merge_env(env, transfer));
        let devices = merge_devices(&c, self.shared_devices(sc));
        c.volume_devices = (!devices.is_empty()).then_some(devices);
        c
    }

    /// `GetInjectedVolumeMountsAndEnvs`: the app containers' mounts, and the env vars their
    /// `subPathExpr`s reference.
    fn shared_mounts(&self, sc: &SidecarContainer) -> (Vec<VolumeMount>, Vec<EnvVar>) {
        if sc.share_volume_policy.type_ != SHARE_ENABLED {
            return (Vec::new(), Vec::new());
        }
        let mut mounts = Vec::new();
        let mut envs = Vec::new();
        for app in &self.apps {
            for m in app.volume_mounts.iter().flatten() {
                mounts.push(m.clone());
                for name in subpath_expr_refs(m.sub_path_expr.as_deref().unwrap_or("")) {
                    if let Some(e) = app.env.iter().flatten().find(|e| e.name == name) {
                        envs.push(e.clone());
                    }
                }
            }
        }
        (mounts, envs)
    }

    /// `GetInjectedVolumeDevices`.
    fn shared_devices(&self, sc: &SidecarContainer) -> Vec<VolumeDevice> {
        if sc.share_volume_device_policy.as_ref().is_none_or(|p| p.type_ != SHARE_ENABLED) {
            return Vec::new();
        }
        self.apps.iter().flat_map(|c| c.volume_devices.iter().flatten().cloned()).collect()
    }

    /// `GetSidecarTransferEnvs`.
    fn transfer_envs(&self, sc: &SidecarContainer) -> Vec<EnvVar> {
        let mut out = Vec::new();
        for t in &sc.transfer_env {
            let mut names: BTreeSet<&str> = t.env_names.iter().map(String::as_str).collect();
            if !t.env_name.is_empty() {
                names.insert(&t.env_name);
            }
            let from_field = t.source_container_name_from.as_ref().and_then(|s| s.field_ref.as_ref());
            let source = match from_field {
                Some(field_ref) => match container_name_from(&field_ref.field_path, self.pod) {
                    Some(name) => std::borrow::Cow::Owned(name),
                    None => continue,
                },
                None => std::borrow::Cow::Borrowed(t.source_container_name.as_str()),
            };
            for name in names {
                if let Some(e) = self.env(&source, name) {
                    out.push(e.clone());
                }
            }
        }
        out
    }
}

/// `ExtractContainerNameFromFieldPath`: only `metadata.labels['k']` and
/// `metadata.annotations['k']` resolve; anything else skips the transferEnv entry.
fn container_name_from(field_path: &str, pod: &Pod) -> Option<String> {
    let (path, key) = split_subscripted(field_path)?;
    let empty = BTreeMap::new();
    match path {
        "metadata.annotations" if is_qualified_name(&key.to_lowercase()).is_empty() => {
            Some(pod.metadata.annotations.as_ref().unwrap_or(&empty).get(key).cloned().unwrap_or_default())
        }
        "metadata.labels" if is_qualified_name(key).is_empty() => {
            Some(pod.metadata.labels.as_ref().unwrap_or(&empty).get(key).cloned().unwrap_or_default())
        }
        _ => None,
    }
}

/// `fieldpath.SplitMaybeSubscriptedPath`: `path['key']` → `(path, key)`.
pub fn split_subscripted(field_path: &str) -> Option<(&str, &str)> {
    let s = field_path.strip_suffix("']")?;
    let (path, key) = s.split_once("['")?;
    (!path.is_empty()).then_some((path, key))
}

/// The `$(NAME)` references of a `subPathExpr` (`\$\(([-._a-zA-Z][-._a-zA-Z0-9]*)\)`).
fn subpath_expr_refs(expr: &str) -> Vec<&str> {
    let b = expr.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < b.len() {
        if b[i] == b'$' && b[i + 1] == b'(' {
            let start = i + 2;
            let first_ok = b.get(start).is_some_and(|c| c.is_ascii_alphabetic() || b"-._".contains(c));
            if first_ok {
                let mut j = start + 1;
                while j < b.len() && (b[j].is_ascii_alphanumeric() || b"-._".contains(&b[j])) {
                    j += 1;
                }
                if b.get(j) == Some(&b')') {
                    out.push(&expr[start..j]);
                    i = j + 1;
                    continue;
                }
            }
        }
        i += 1;
    }
    out
}

/// Whether a pod container was injected by a SidecarSet (`IS_INJECTED=true`).
pub fn is_injected(c: &Container) -> bool {
    c.env.iter().flatten().find(|e| e.name == INJECTED_ENV).and_then(|e| e.value.as_deref()) == Some("true")
}

/// `MergeEnvVar`: `original` as is, then each of `additional` whose name is not yet present.
fn merge_env(original: Vec<EnvVar>, additional: Vec<EnvVar>) -> Vec<EnvVar> {
    if additional.is_empty() {
        return original;
    }
    let mut names: BTreeSet<String> = original.iter().map(|e| e.name.clone()).collect();
    let mut out = original;
    for e in additional {
        if names.insert(e.name.clone()) {
            out.push(e);
        }
    }
    out
}

/// `MergeVolumeMounts`: own mounts, then shared ones whose path is not used by a mount or a
/// device.
fn merge_mounts(c: &Container, additional: Vec<VolumeMount>) -> Vec<VolumeMount> {
    let mut paths: BTreeSet<String> = c.volume_mounts.iter().flatten().map(|m| m.mount_path.clone()).collect();
    paths.extend(c.volume_devices.iter().flatten().map(|d| d.device_path.clone()));
    let mut out: Vec<VolumeMount> = c.volume_mounts.clone().unwrap_or_default();
    for m in additional {
        if paths.insert(m.mount_path.clone()) {
            out.push(m);
        }
    }
    out
}

/// `MergeVolumeDevices`: own devices, then shared ones whose path is free.
fn merge_devices(c: &Container, additional: Vec<VolumeDevice>) -> Vec<VolumeDevice> {
    let mut paths: BTreeSet<String> = c.volume_devices.iter().flatten().map(|d| d.device_path.clone()).collect();
    paths.extend(c.volume_mounts.iter().flatten().map(|m| m.mount_path.clone()));
    let mut out: Vec<VolumeDevice> = c.volume_devices.clone().unwrap_or_default();
    for d in additional {
        if paths.insert(d.device_path.clone()) {
            out.push(d);
        }
    }
    out
}

#[cfg(test)]
mod tests;
