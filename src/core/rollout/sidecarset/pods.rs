//! Which pods a SidecarSet manages and what a round reads of each (spec §4.12.1 and §4.12.3;
//! kruise `sidecarcontrol/util.go` `IsPodInjectedSidecarSet`, `IsPodConsistentWithSidecarSet`,
//! `IsPodSidecarUpdated`, and `sidecarset_control.go` `IsPodStateConsistent`,
//! `IsSidecarContainerUpdateCompleted`, `IsPodReady`, `IsSidecarSetUpgradable`).
//!
//! [`SetView`] is what a round computes once about the set (its hashes, the sidecars it upgrades
//! in place, the container names they have in a pod); [`Facts`] is what it computes once about
//! each pod, so that status, strategy and upgrade never parse a pod's annotations twice.
//!
//! Native sidecars (SidecarSet init containers with `restartPolicy: Always`) count as sidecars
//! here, found among the pod's init containers and init container statuses: kruise ignores them
//! after injection (kruise #1540, #1671); issue 28 asks for them to be upgraded like containers.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod};

use super::INPLACE_UPDATE_STATE;
use crate::apis::SidecarSet;
use crate::apis::keys::{SIDECARSET_HASH, SIDECARSET_HASH_WITHOUT_IMAGE, SIDECARSET_INJECTED_LIST};
use crate::apis::sidecarset::SidecarContainer;
use crate::core::inplace::state::InPlaceUpdateState;
use crate::core::pods;
use crate::core::sidecar::annotations::{self, UpgradeSpec};
use crate::core::sidecar::{WORKING_HOT_UPGRADE_CONTAINER, hot_upgrade_names, is_hot_upgrade, is_native_sidecar};

/// One sidecar of the set that is upgraded in place.
#[derive(Clone, Copy, Debug)]
pub struct Sidecar<'a> {
    pub spec: &'a SidecarContainer,
    /// A native sidecar: lives among the pod's init containers.
    pub native: bool,
}

impl Sidecar<'_> {
    pub fn name(&self) -> &str {
        &self.spec.container.name
    }

    pub fn image(&self) -> &str {
        self.spec.container.image.as_deref().unwrap_or("")
    }

    pub fn hot(&self) -> bool {
        is_hot_upgrade(self.spec)
    }

    pub fn empty_image(&self) -> &str {
        &self.spec.upgrade_strategy.hot_upgrade_empty_image
    }
}

/// What a round knows about the set, computed once.
#[derive(Debug)]
pub struct SetView<'a> {
    pub set: &'a SidecarSet,
    pub name: &'a str,
    /// `kruise.io/sidecarset-hash` of the set.
    pub hash: &'a str,
    /// `kruise.io/sidecarset-hash-without-image` of the set.
    pub hash_without_image: &'a str,
    /// The containers, then the native init sidecars.
    pub sidecars: Vec<Sidecar<'a>>,
    /// Names those sidecars have in a pod (hot upgrade: `X-1` and `X-2`): kruise's
    /// `GetSidecarContainersInPod`, plus the native sidecars.
    pub names_in_pod: BTreeSet<String>,
}

impl<'a> SetView<'a> {
    pub fn new(set: &'a SidecarSet) -> SetView<'a> {
        let annotation = |k: &str| {
            set.metadata.annotations.as_ref().and_then(|a| a.get(k)).map(String::as_str).unwrap_or("")
        };
        let sidecars: Vec<Sidecar<'a>> = set
            .spec
            .containers
            .iter()
            .map(|spec| Sidecar { spec, native: false })
            .chain(
                set.spec
                    .init_containers
                    .iter()
                    .filter(|c| is_native_sidecar(&c.container))
                    .map(|spec| Sidecar { spec, native: true }),
            )
            .collect();
        let mut names_in_pod = BTreeSet::new();
        for s in &sidecars {
            if s.hot() {
                let (a, b) = hot_upgrade_names(s.name());
                names_in_pod.insert(a);
                names_in_pod.insert(b);
            } else {
                names_in_pod.insert(s.name().to_string());
            }
        }
        SetView {
            set,
            name: set.metadata.name.as_deref().unwrap_or(""),
            hash: annotation(SIDECARSET_HASH),
            hash_without_image: annotation(SIDECARSET_HASH_WITHOUT_IMAGE),
            sidecars,
            names_in_pod,
        }
    }

    /// kruise `listSidecarNameInSidecarSet`: the `sidecarList` of a hash-annotation entry.
    pub fn sidecar_list(&self) -> Vec<String> {
        let names: BTreeSet<String> = self
            .set
            .spec
            .init_containers
            .iter()
            .filter(|c| is_native_sidecar(&c.container))
            .chain(&self.set.spec.containers)
            .map(|c| c.container.name.clone())
            .collect();
        names.into_iter().collect()
    }
}

/// A container of the pod by name: its containers, then (for native sidecars) init containers.
pub fn container<'p>(pod: &'p Pod, name: &str) -> Option<&'p Container> {
    let spec = pod.spec.as_ref()?;
    spec.containers
        .iter()
        .find(|c| c.name == name)
        .or_else(|| spec.init_containers.iter().flatten().find(|c| c.name == name && is_native_sidecar(c)))
}

/// A container's status by name, among container and init container statuses.
pub fn status<'p>(pod: &'p Pod, name: &str) -> Option<&'p ContainerStatus> {
    let s = pod.status.as_ref()?;
    s.container_statuses
        .iter()
        .flatten()
        .find(|c| c.name == name)
        .or_else(|| s.init_container_statuses.iter().flatten().find(|c| c.name == name))
}

fn all_statuses(pod: &Pod) -> impl Iterator<Item = &ContainerStatus> {
    let s = pod.status.as_ref();
    s.and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .chain(s.and_then(|s| s.init_container_statuses.as_ref()).into_iter().flatten())
}

fn all_containers(pod: &Pod) -> impl Iterator<Item = &Container> {
    let s = pod.spec.as_ref();
    s.map(|s| &s.containers)
        .into_iter()
        .flatten()
        .chain(s.and_then(|s| s.init_containers.as_ref()).into_iter().flatten().filter(|c| is_native_sidecar(c)))
}

/// `GetPodHotUpgradeContainers`: `(working, idle)` of hot-upgrade sidecar `name`; `X-2` works
/// unless the annotation says `X-1`.
pub fn hot_containers(pod: &Pod, name: &str) -> (String, String) {
    let working = annotations::parse_working(pods::annotations(pod).get(WORKING_HOT_UPGRADE_CONTAINER).map(String::as_str));
    let (one, two) = hot_upgrade_names(name);
    if working.get(name) == Some(&one) { (one, two) } else { (two, one) }
}

/// The set's entry of a hash annotation of the pod (kruise `GetPodSidecarSetUpgradeSpecInAnnotations`:
/// an unparsable annotation is an empty entry).
pub fn hash_entry(pod: &Pod, key: &str, set: &str) -> Option<UpgradeSpec> {
    let text = pods::annotations(pod).get(key)?;
    annotations::parse_hashes(text).ok()?.remove(set)
}

/// `IsPodInjectedSidecarSet`: the injected list names the set.
pub fn is_injected(pod: &Pod, set: &str) -> bool {
    pods::annotations(pod).get(SIDECARSET_INJECTED_LIST).is_some_and(|l| l.split(',').any(|n| n == set))
}

/// `IsPodConsistentWithSidecarSet`: the pod still has every container of the set (a hot-upgrade
/// sidecar: its working-container entry and both `X-1` and `X-2`).
pub fn has_set_containers(view: &SetView<'_>, pod: &Pod) -> bool {
    let working =
        annotations::parse_working(pods::annotations(pod).get(WORKING_HOT_UPGRADE_CONTAINER).map(String::as_str));
    let names: BTreeSet<&str> = pod.spec.iter().flat_map(|s| &s.containers).map(|c| c.name.as_str()).collect();
    view.set.spec.containers.iter().all(|c| {
        if is_hot_upgrade(c) {
            let (one, two) = hot_upgrade_names(&c.container.name);
            working.contains_key(&c.container.name) && names.contains(one.as_str()) && names.contains(two.as_str())
        } else {
            names.contains(c.container.name.as_str())
        }
    })
}

/// The set's namespace scope: `spec.namespace` (v1alpha1, wins), else `namespaceSelector` over
/// the namespace's labels (a namespace not known is not matched), else every namespace.
pub fn in_scope(set: &SidecarSet, namespace: &str, labels: Option<&BTreeMap<String, String>>) -> bool {
    if !set.spec.namespace.is_empty() {
        return set.spec.namespace == namespace;
    }
    match &set.spec.namespace_selector {
        None => true,
        Some(sel) => labels.is_some_and(|l| {
            crate::compat::selector::Selector::from_validated(Some(sel)).is_ok_and(|s| s.matches(l))
        }),
    }
}

/// kruise `util.ParseImage` (distribution's `reference.Parse`, not normalised): `(repo, tag,
/// digest)`, `None` when it does not parse.
pub fn parse_image(image: &str) -> Option<(&str, &str, &str)> {
    let (name, digest) = match image.split_once('@') {
        Some((n, d)) if d.contains(':') => (n, d),
        Some(_) => return None,
        None => (image, ""),
    };
    let (repo, tag) = match name.rfind(':') {
        Some(i) if !name[i..].contains('/') => (&name[..i], &name[i + 1..]),
        _ => (name, ""),
    };
    let valid = |s: &str| s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-/:".contains(&b));
    (!repo.is_empty() && valid(repo) && !repo.starts_with('/') && !repo.ends_with('/')).then_some((repo, tag, digest))
}

/// `util.IsImageDigest`.
pub fn is_image_digest(image: &str) -> bool {
    parse_image(image).is_some_and(|(_, _, d)| !d.is_empty())
}

/// `util.IsContainerImageEqual`: repo and digest when both are digests, else repo and tag.
pub fn is_image_equal(a: &str, b: &str) -> bool {
    let (Some((ra, ta, da)), Some((rb, tb, db))) = (parse_image(a), parse_image(b)) else { return false };
    if !da.is_empty() && !db.is_empty() { ra == rb && da == db } else { ra == rb && ta == tb }
}

/// The pod's `kruise.io/sidecarset-inplace-update-state`: `None` when absent, `Err` when it does
/// not parse.
pub fn update_states(pod: &Pod) -> Option<Result<BTreeMap<String, InPlaceUpdateState>, String>> {
    let text = pods::annotations(pod).get(INPLACE_UPDATE_STATE)?;
    Some(serde_json::from_str::<BTreeMap<String, Option<InPlaceUpdateState>>>(text).map_err(|e| e.to_string()).map(
        |m| m.into_iter().map(|(k, v)| (k, v.unwrap_or_default())).collect(),
    ))
}

/// `IsSidecarContainerUpdateCompleted`: no container of `containers` still reports the imageID it
/// had before the set's last in-place upgrade while its image differs from the spec.
pub fn update_completed(pod: &Pod, set: &str, containers: &BTreeSet<String>) -> bool {
    let states = match update_states(pod) {
        None => return true,
        Some(Err(_)) => return false,
        Some(Ok(s)) => s,
    };
    let Some(last) = states.get(set).and_then(|s| s.last_container_statuses.as_ref()) else { return true };
    let images: BTreeMap<&str, &str> =
        all_containers(pod).map(|c| (c.name.as_str(), c.image.as_deref().unwrap_or(""))).collect();
    all_statuses(pod).filter(|cs| containers.contains(&cs.name)).all(|cs| match last.get(&cs.name) {
        Some(old) => !(old.image_id == cs.image_id && images.get(cs.name.as_str()).copied() != Some(cs.image.as_str())),
        None => true,
    })
}

/// `IsPodStateConsistent`: the kubelet runs what the spec says for `containers` (every sidecar
/// container of the set when `None`).
pub fn is_state_consistent(view: &SetView<'_>, pod: &Pod, containers: Option<&BTreeSet<String>>) -> bool {
    let spec_len = pod.spec.as_ref().map_or(0, |s| s.containers.len());
    let status_len = pod.status.as_ref().and_then(|s| s.container_statuses.as_ref()).map_or(0, Vec::len);
    if spec_len != status_len {
        return false;
    }
    let names = containers.unwrap_or(&view.names_in_pod);
    let mut all_digest = true;
    for c in all_containers(pod).filter(|c| names.contains(&c.name)) {
        let image = c.image.as_deref().unwrap_or("");
        if !is_image_digest(image) {
            all_digest = false;
            break;
        }
        let Some(cs) = status(pod, &c.name) else { return false };
        let id = cs.image_id.split_once("://").map_or(cs.image_id.as_str(), |(_, rest)| rest);
        if !is_image_equal(image, id) {
            return false;
        }
    }
    all_digest || update_completed(pod, view.name, names)
}

/// `IsPodReady` of the SidecarSet control: every idle hot-upgrade container runs the empty image,
/// and the pod is running and ready.
pub fn is_ready(view: &SetView<'_>, pod: &Pod) -> bool {
    for s in view.sidecars.iter().filter(|s| s.hot() && !s.empty_image().is_empty()) {
        let (_, idle) = hot_containers(pod, s.name());
        if container(pod, &idle).is_some_and(|c| c.image.as_deref().unwrap_or("") != s.empty_image()) {
            return false;
        }
    }
    is_running_and_ready(pod)
}

/// `util.IsRunningAndReady`.
pub fn is_running_and_ready(pod: &Pod) -> bool {
    pods::phase(pod) == "Running" && pods::is_ready(pod) && pod.metadata.deletion_timestamp.is_none()
}

/// What a round reads of one matched pod, computed once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Facts {
    /// The pod's hash entry equals the set's hash (`IsPodSidecarUpdated`).
    pub updated: bool,
    /// Every sidecar of the set runs what the spec says (`IsPodStateConsistent(pod, nil)`).
    pub consistent: bool,
    /// `IsPodReady`.
    pub ready: bool,
    /// Only images differ from the set (`hash-without-image` equal).
    pub can_upgrade: bool,
    /// No ready sidecar is still being upgraded (`IsSidecarSetUpgradable`'s second answer).
    pub upgrade_settled: bool,
    /// The `controllerRevision` of the pod's hash entry.
    pub controller_revision: String,
}

impl Facts {
    pub fn of(view: &SetView<'_>, pod: &Pod) -> Facts {
        let entry = hash_entry(pod, SIDECARSET_HASH, view.name).unwrap_or_default();
        let without_image = hash_entry(pod, SIDECARSET_HASH_WITHOUT_IMAGE, view.name).unwrap_or_default();
        let can_upgrade = without_image.hash == view.hash_without_image;
        let upgrade_settled = can_upgrade
            && view.names_in_pod.iter().all(|name| {
                let ready = status(pod, name).is_some_and(|s| s.ready);
                !ready || is_state_consistent(view, pod, Some(&BTreeSet::from([name.clone()])))
            });
        Facts {
            updated: entry.hash == view.hash,
            consistent: is_state_consistent(view, pod, None),
            ready: is_ready(view, pod),
            can_upgrade,
            upgrade_settled,
            controller_revision: entry.controller_revision,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::rollout::sidecarset::testkit::*;
    use serde_json::json;

    /// kruise `util_test.go` `TestIsPodConsistentWithSidecarSet`-style rows, and the hot-upgrade
    /// pair rule.
    #[test]
    fn set_containers_must_all_be_in_the_pod() {
        let set = sidecar_set(json!({"containers": [{"name": "cold-sidecar", "image": "a:1"}]}));
        let view = SetView::new(&set);
        assert!(has_set_containers(&view, &injected_pod("p", &set, &[])));
        let mut p = injected_pod("p", &set, &[]);
        p.spec.as_mut().unwrap().containers.retain(|c| c.name != "cold-sidecar");
        assert!(!has_set_containers(&view, &p));

        let hot = hot_set("a:1", "empty:1");
        let view = SetView::new(&hot);
        let p = injected_pod("p", &hot, &[]);
        assert!(has_set_containers(&view, &p));
        let mut no_annotation = p.clone();
        no_annotation.metadata.annotations.as_mut().unwrap().remove(WORKING_HOT_UPGRADE_CONTAINER);
        assert!(!has_set_containers(&view, &no_annotation));
        let mut one_missing = p.clone();
        one_missing.spec.as_mut().unwrap().containers.retain(|c| c.name != "hot-sidecar-2");
        assert!(!has_set_containers(&view, &one_missing));
    }

    /// kruise `util_test.go` `TestGetPodHotUpgradeContainers`.
    #[test]
    fn working_container_defaults_to_the_second() {
        let mut p = crate::core::pods::test_pods::pod("p", &[]);
        assert_eq!(hot_containers(&p, "x"), ("x-2".to_string(), "x-1".to_string()));
        p.metadata.annotations = Some([(WORKING_HOT_UPGRADE_CONTAINER.to_string(), r#"{"x":"x-1"}"#.into())].into());
        assert_eq!(hot_containers(&p, "x"), ("x-1".to_string(), "x-2".to_string()));
        p.metadata.annotations = Some([(WORKING_HOT_UPGRADE_CONTAINER.to_string(), "not json".into())].into());
        assert_eq!(hot_containers(&p, "x").0, "x-2");
    }

    /// kruise `util/tools_test.go` `TestIsContainerImageEqual` rows.
    #[test]
    fn image_equality_follows_kruise() {
        let d = "sha256:a9286defaba7b3a519d585ba0e37d0b2cbee74ebfe590960b0b1d6a5e97d1e1d";
        let rows = [
            ("docker.io/busybox:latest", "docker.io/busybox:latest", true),
            ("docker.io/busybox:latest", "docker.io/busybox:1.0", false),
            (&format!("docker.io/busybox@{d}") as &str, &format!("docker.io/busybox@{d}") as &str, true),
            (&format!("docker.io/busybox:latest@{d}"), &format!("docker.io/busybox@{d}"), true),
            (&format!("docker.io/busybox@{d}"), "docker.io/busybox:latest", false),
            ("busybox:latest", "docker.io/busybox:latest", false),
            ("Upper:1", "Upper:1", false),
        ];
        for (a, b, want) in rows {
            assert_eq!(is_image_equal(a, b), want, "{a} {b}");
        }
        assert!(is_image_digest(&format!("busybox@{d}")));
        assert!(!is_image_digest("busybox:1"));
        assert_eq!(parse_image("localhost:5000/x"), Some(("localhost:5000/x", "", "")));
    }

    /// kruise `sidecarset_control` `TestIsPodStateConsistent`-style rows: digests compared with
    /// the imageIDs; tags through the in-place update state.
    #[test]
    fn consistency_reads_image_ids_or_the_update_state() {
        let d1 = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
        let set = sidecar_set(json!({"containers": [{"name": "cold-sidecar", "image": format!("sc@{d1}")}]}));
        let view = SetView::new(&set);
        let mut p = run(injected_pod("p", &set, &[]));
        set_status(&mut p, "cold-sidecar", &format!("sc@{d1}"), &format!("docker-pullable://sc@{d1}"), true);
        assert!(is_state_consistent(&view, &p, None));
        set_status(&mut p, "cold-sidecar", &format!("sc@{d1}"), "docker-pullable://sc@sha256:2222", true);
        assert!(!is_state_consistent(&view, &p, None));

        let set = sidecar_set(json!({"containers": [{"name": "cold-sidecar", "image": "sc:2"}]}));
        let view = SetView::new(&set);
        let mut p = run(injected_pod("p", &set, &[]));
        // No state: consistent.
        assert!(is_state_consistent(&view, &p, None));
        p.metadata.annotations.as_mut().unwrap().insert(
            INPLACE_UPDATE_STATE.into(),
            json!({"test-sidecarset": {"revision": "r", "updateTimestamp": null,
                "lastContainerStatuses": {"cold-sidecar": {"imageID": "sha-sc:1"}}}})
            .to_string(),
        );
        set_status(&mut p, "cold-sidecar", "sc:1", "sha-sc:1", true);
        assert!(!is_state_consistent(&view, &p, None), "still the old imageID");
        set_status(&mut p, "cold-sidecar", "sc:2", "sha-sc:2", true);
        assert!(is_state_consistent(&view, &p, None));
        // A container without a status: the counts differ.
        p.spec.as_mut().unwrap().containers.push(Container { name: "extra".into(), ..Default::default() });
        assert!(!is_state_consistent(&view, &p, None));
        // Unparsable state: not consistent.
        let mut q = run(injected_pod("q", &set, &[]));
        q.metadata.annotations.as_mut().unwrap().insert(INPLACE_UPDATE_STATE.into(), "{".into());
        set_status(&mut q, "cold-sidecar", "sc:1", "sha-sc:1", true);
        assert!(!is_state_consistent(&view, &q, None));
    }

    /// kruise `sidecarset_control` `IsPodReady` with hot upgrade: the idle container must run the
    /// empty image.
    #[test]
    fn ready_needs_the_idle_container_empty() {
        let set = hot_set("a:1", "empty:1");
        let view = SetView::new(&set);
        let p = run(injected_pod("p", &set, &[]));
        assert!(is_ready(&view, &p));
        let mut q = p.clone();
        for c in &mut q.spec.as_mut().unwrap().containers {
            if c.name == "hot-sidecar-2" {
                c.image = Some("a:0".into());
            }
        }
        // Injection makes `X-1` the working one: `X-2` is idle and does not run the empty image.
        assert!(!is_ready(&view, &q));
    }
}
