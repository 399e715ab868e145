//! The subset workloads of a UnitedDeployment, one per kind of template, as kruise's adapters
//! (`pkg/controller/uniteddeployment/adapter/{cloneset,advanced_statefulset,statefulset,deployment}_adapter.go`,
//! v1.9.0) see them: [`desired`] is `ApplySubsetTemplate` (the workload of a subset at a revision),
//! the [`Workload`] readers are `GetSpecReplicas`, `GetSpecPartition`, `GetStatusReplicas` and
//! `GetStatusReadyReplicas`, and [`stuck_pods`] is the apps/v1 StatefulSet's `PostUpdate`.
//!
//! What the four share (kruise copies it into each adapter): the workload carries the template's
//! labels and annotations, the selector's `matchLabels`, `apps.kruise.io/subset-name` and the
//! UnitedDeployment revision; its name is generated from `<ud>-<subset>-`; it is controlled by the
//! UnitedDeployment; its selector is the UnitedDeployment's narrowed to the subset; its pod
//! template carries the subset and revision labels, the subset's node selector term added to every
//! required node-affinity term, the subset's tolerations appended and its `patch` merged; the
//! patch is kept in the `apps.kruise.io/subset-patch` annotation. Where they differ:
//!
//! | kind | partition written | partition read back |
//! |---|---|---|
//! | CloneSet | `updateStrategy.partition` | that, scaled against the replicas when a percentage |
//! | Advanced StatefulSet | `updateStrategy.rollingUpdate.partition` when the template's strategy is RollingUpdate (or unset) | OnDelete: the pods not at the workload's revision; else `rollingUpdate.partition` |
//! | apps/v1 StatefulSet | the same, and `updateStrategy.type` set to RollingUpdate | the same |
//! | Deployment | none: `manualUpdate` partitions are ignored | none (0) |
//!
//! An apps/v1 StatefulSet rolling update can stall on a pod that is not ready
//! (kubernetes/kubernetes#67250): after each update kruise deletes the pods at or above the
//! partition that are not at the revision and not ready ([`stuck_pods`]).

use k8s_openapi::api::apps::v1::{
    Deployment, RollingUpdateStatefulSetStrategy, StatefulSet, StatefulSetUpdateStrategy,
};
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::subsets::{
    REVISION_LABEL, SUBSET_NAME_LABEL, SUBSET_PATCH_ANNOTATION, attach_node_affinity, owner_reference, patch_template,
    patch_text, subset_prefix,
};
use crate::apis::CloneSet;
use crate::apis::statefulset::v1beta1::StatefulSet as AdvancedStatefulSet;
use crate::apis::statefulset::{ON_DELETE, ROLLING_UPDATE, RollingUpdateStatefulSetStrategy as AdvancedRollingUpdate};
use crate::apis::uniteddeployment::{Subset, UnitedDeployment};
use crate::core::pods;

/// The kind of workload a UnitedDeployment's subsets are (kruise's `subSetType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SubsetKind {
    /// apps/v1 StatefulSet (`statefulSetTemplate`).
    StatefulSet,
    /// Advanced StatefulSet, apps.kruise.io/v1beta1 (`advancedStatefulSetTemplate`).
    AdvancedStatefulSet,
    /// CloneSet (`cloneSetTemplate`).
    CloneSet,
    /// apps/v1 Deployment (`deploymentTemplate`).
    Deployment,
}

impl SubsetKind {
    /// Every kind, in kruise's order of precedence.
    pub const ALL: [SubsetKind; 4] =
        [SubsetKind::StatefulSet, SubsetKind::AdvancedStatefulSet, SubsetKind::CloneSet, SubsetKind::Deployment];

    /// kruise `getSubsetControls`: the first template set, in the order StatefulSet, Advanced
    /// StatefulSet, CloneSet, Deployment (the webhook admits exactly one).
    pub fn of(ud: &UnitedDeployment) -> Option<SubsetKind> {
        let t = &ud.spec.template;
        if t.stateful_set_template.is_some() {
            Some(SubsetKind::StatefulSet)
        } else if t.advanced_stateful_set_template.is_some() {
            Some(SubsetKind::AdvancedStatefulSet)
        } else if t.clone_set_template.is_some() {
            Some(SubsetKind::CloneSet)
        } else if t.deployment_template.is_some() {
            Some(SubsetKind::Deployment)
        } else {
            None
        }
    }

    /// kruise's `subSetType` names (in events and logs).
    pub fn name(self) -> &'static str {
        match self {
            SubsetKind::StatefulSet => "StatefulSet",
            SubsetKind::AdvancedStatefulSet => "AdvancedStatefulSet",
            SubsetKind::CloneSet => "CloneSet",
            SubsetKind::Deployment => "Deployment",
        }
    }
}

/// One subset workload.
#[derive(Clone, Debug, PartialEq)]
pub enum Workload {
    /// A CloneSet.
    CloneSet(CloneSet),
    /// An Advanced StatefulSet.
    AdvancedStatefulSet(AdvancedStatefulSet),
    /// An apps/v1 StatefulSet.
    StatefulSet(StatefulSet),
    /// An apps/v1 Deployment.
    Deployment(Deployment),
}

impl Workload {
    /// Its kind.
    pub fn kind(&self) -> SubsetKind {
        match self {
            Workload::CloneSet(_) => SubsetKind::CloneSet,
            Workload::AdvancedStatefulSet(_) => SubsetKind::AdvancedStatefulSet,
            Workload::StatefulSet(_) => SubsetKind::StatefulSet,
            Workload::Deployment(_) => SubsetKind::Deployment,
        }
    }

    /// Its metadata.
    pub fn meta(&self) -> &ObjectMeta {
        match self {
            Workload::CloneSet(w) => &w.metadata,
            Workload::AdvancedStatefulSet(w) => &w.metadata,
            Workload::StatefulSet(w) => &w.metadata,
            Workload::Deployment(w) => &w.metadata,
        }
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        match self {
            Workload::CloneSet(w) => &mut w.metadata,
            Workload::AdvancedStatefulSet(w) => &mut w.metadata,
            Workload::StatefulSet(w) => &mut w.metadata,
            Workload::Deployment(w) => &mut w.metadata,
        }
    }

    /// Its name ("" before it is created).
    pub fn name(&self) -> &str {
        self.meta().name.as_deref().unwrap_or("")
    }

    /// The order kruise keeps a subset's workloads in (the first is kept, the others are
    /// duplicates): oldest first, then by name.
    pub fn oldest_first(a: &Workload, b: &Workload) -> std::cmp::Ordering {
        let t = |w: &Workload| w.meta().creation_timestamp.as_ref().map(|t| t.0);
        t(a).cmp(&t(b)).then_with(|| a.name().cmp(b.name()))
    }

    /// Its selector (the subset's).
    pub fn selector(&self) -> Option<&LabelSelector> {
        match self {
            Workload::CloneSet(w) => w.spec.selector.as_ref(),
            Workload::AdvancedStatefulSet(w) => w.spec.selector.as_ref(),
            Workload::StatefulSet(w) => w.spec.as_ref().map(|s| &s.selector),
            Workload::Deployment(w) => w.spec.as_ref().map(|s| &s.selector),
        }
    }

    /// `GetSpecReplicas` (0 when unset, as kruise leaves the subset's replicas at zero).
    pub fn spec_replicas(&self) -> i32 {
        match self {
            Workload::CloneSet(w) => w.spec.replicas,
            Workload::AdvancedStatefulSet(w) => w.spec.replicas,
            Workload::StatefulSet(w) => w.spec.as_ref().and_then(|s| s.replicas),
            Workload::Deployment(w) => w.spec.as_ref().and_then(|s| s.replicas),
        }
        .unwrap_or(0)
    }

    /// The UnitedDeployment revision the workload was written at (its label).
    pub fn revision(&self) -> &str {
        self.meta().labels.as_ref().and_then(|l| l.get(REVISION_LABEL)).map_or("", String::as_str)
    }

    /// The subset it belongs to (its label), if any.
    pub fn subset(&self) -> Option<&str> {
        self.meta().labels.as_ref()?.get(SUBSET_NAME_LABEL).map(String::as_str).filter(|s| !s.is_empty())
    }

    /// The subset patch it was written with (its annotation).
    pub fn patch(&self) -> &str {
        self.meta().annotations.as_ref().and_then(|a| a.get(SUBSET_PATCH_ANNOTATION)).map_or("", String::as_str)
    }

    /// `GetSpecPartition` (0 where kruise returns nil): see the module table. `pods` are the
    /// workload's pods (an OnDelete StatefulSet's partition is counted from them).
    pub fn spec_partition(&self, pods: &[impl std::borrow::Borrow<Pod>]) -> i32 {
        let on_delete = |revision: &str| {
            pods.iter()
                .filter(|p| pods::label(std::borrow::Borrow::<Pod>::borrow(*p), REVISION_LABEL) != Some(revision))
                .count()
        };
        match self {
            Workload::CloneSet(w) => match &w.spec.update_strategy.partition {
                Some(IntOrString::Int(p)) => *p,
                Some(p @ IntOrString::String(_)) => crate::compat::intstr::k8s_value_from_int_or_percent(
                    Some(p),
                    i64::from(w.spec.replicas.unwrap_or(0)),
                    true,
                )
                .unwrap_or(0) as i32,
                None => 0,
            },
            Workload::AdvancedStatefulSet(w) => {
                if w.spec.update_strategy.type_ == ON_DELETE {
                    on_delete(self.revision()) as i32
                } else {
                    w.spec.update_strategy.rolling_update.as_ref().and_then(|r| r.partition).unwrap_or(0)
                }
            }
            Workload::StatefulSet(w) => {
                let strategy = w.spec.as_ref().and_then(|s| s.update_strategy.as_ref());
                if strategy.and_then(|s| s.type_.as_deref()) == Some(ON_DELETE) {
                    on_delete(self.revision()) as i32
                } else {
                    strategy.and_then(|s| s.rolling_update.as_ref()).and_then(|r| r.partition).unwrap_or(0)
                }
            }
            Workload::Deployment(_) => 0,
        }
    }

    /// Whether the workload takes a partition at all (a Deployment does not: its subsets never
    /// need an update for a partition).
    pub fn has_partition(&self) -> bool {
        !matches!(self, Workload::Deployment(_))
    }

    /// The adapters' `SetMaxUnavailable` (reservation, [`super::reservation::max_unavailable`]):
    /// the rolling update's `maxUnavailable` set to `v`, only where the workload accepts it —
    /// `v` at least 1 (kruise's webhooks and the apiserver refuse 0 without surge), a rolling
    /// update strategy (kruise would add `rollingUpdate` to an OnDelete StatefulSet or a Recreate
    /// Deployment, which is refused), and on an Advanced StatefulSet anything but 1 only with
    /// `Parallel`. Answers whether it was set; where not, the template's value stays.
    pub fn set_max_unavailable(&mut self, v: i32) -> bool {
        if v < 1 {
            return false;
        }
        let value = Some(IntOrString::Int(v));
        match self {
            Workload::CloneSet(w) => w.spec.update_strategy.max_unavailable = value,
            Workload::AdvancedStatefulSet(w) => {
                let parallel = w.spec.pod_management_policy == crate::apis::statefulset::PARALLEL;
                if w.spec.update_strategy.type_ != ROLLING_UPDATE || (v != 1 && !parallel) {
                    return false;
                }
                w.spec
                    .update_strategy
                    .rolling_update
                    .get_or_insert_with(AdvancedRollingUpdate::default)
                    .max_unavailable = value;
            }
            Workload::StatefulSet(w) => {
                let Some(strategy) = w.spec.as_mut().and_then(|s| s.update_strategy.as_mut()) else { return false };
                if strategy.type_.as_deref() != Some(ROLLING_UPDATE) {
                    return false;
                }
                strategy.rolling_update.get_or_insert_with(RollingUpdateStatefulSetStrategy::default).max_unavailable =
                    value;
            }
            Workload::Deployment(w) => {
                let Some(spec) = w.spec.as_mut() else { return false };
                let strategy = spec.strategy.get_or_insert_with(Default::default);
                if strategy.type_.as_deref().is_some_and(|t| t != ROLLING_UPDATE) {
                    return false;
                }
                strategy.rolling_update.get_or_insert_with(Default::default).max_unavailable = value;
            }
        }
        true
    }

    /// `GetStatusReplicas`.
    pub fn status_replicas(&self) -> i32 {
        match self {
            Workload::CloneSet(w) => w.status.as_ref().map_or(0, |s| s.replicas),
            Workload::AdvancedStatefulSet(w) => w.status.as_ref().map_or(0, |s| s.replicas),
            Workload::StatefulSet(w) => w.status.as_ref().map_or(0, |s| s.replicas),
            Workload::Deployment(w) => w.status.as_ref().and_then(|s| s.replicas).unwrap_or(0),
        }
    }

    /// `GetStatusReadyReplicas`.
    pub fn status_ready_replicas(&self) -> i32 {
        match self {
            Workload::CloneSet(w) => w.status.as_ref().map_or(0, |s| s.ready_replicas),
            Workload::AdvancedStatefulSet(w) => w.status.as_ref().map_or(0, |s| s.ready_replicas),
            Workload::StatefulSet(w) => w.status.as_ref().and_then(|s| s.ready_replicas).unwrap_or(0),
            Workload::Deployment(w) => w.status.as_ref().and_then(|s| s.ready_replicas).unwrap_or(0),
        }
    }

    fn pod_template_mut(&mut self) -> &mut PodTemplateSpec {
        match self {
            Workload::CloneSet(w) => &mut w.spec.template,
            Workload::AdvancedStatefulSet(w) => &mut w.spec.template,
            Workload::StatefulSet(w) => &mut w.spec.get_or_insert_with(Default::default).template,
            Workload::Deployment(w) => &mut w.spec.get_or_insert_with(Default::default).template,
        }
    }

    /// The workload with its spec replaced by `ud`'s template of its kind (`Err` when the
    /// UnitedDeployment has no template of that kind), selector, replicas and partition set.
    fn apply_spec<'u>(
        &mut self,
        ud: &'u UnitedDeployment,
        selector: LabelSelector,
        replicas: i32,
        partition: i32,
    ) -> Result<&'u ObjectMeta, String> {
        let t = &ud.spec.template;
        let missing = |kind: SubsetKind| format!("the template is not a {} template", kind.name());
        let rolling = |type_: &str| type_.is_empty() || type_ == ROLLING_UPDATE;
        match self {
            Workload::CloneSet(w) => {
                let template = t.clone_set_template.as_ref().ok_or_else(|| missing(SubsetKind::CloneSet))?;
                w.spec = template.spec.clone();
                w.spec.selector = Some(selector);
                w.spec.replicas = Some(replicas);
                w.spec.update_strategy.partition = Some(IntOrString::Int(partition));
                Ok(&template.metadata)
            }
            Workload::AdvancedStatefulSet(w) => {
                let template = t
                    .advanced_stateful_set_template
                    .as_ref()
                    .ok_or_else(|| missing(SubsetKind::AdvancedStatefulSet))?;
                w.spec = template.spec.clone();
                w.spec.selector = Some(selector);
                w.spec.replicas = Some(replicas);
                if rolling(template.spec.update_strategy.type_.as_str()) {
                    w.spec
                        .update_strategy
                        .rolling_update
                        .get_or_insert_with(AdvancedRollingUpdate::default)
                        .partition = Some(partition);
                }
                Ok(&template.metadata)
            }
            Workload::StatefulSet(w) => {
                let template = t.stateful_set_template.as_ref().ok_or_else(|| missing(SubsetKind::StatefulSet))?;
                let mut spec = template.spec.clone();
                spec.selector = selector;
                spec.replicas = Some(replicas);
                let type_ = template.spec.update_strategy.as_ref().and_then(|s| s.type_.as_deref()).unwrap_or("");
                if rolling(type_) {
                    let strategy = spec.update_strategy.get_or_insert_with(StatefulSetUpdateStrategy::default);
                    strategy.type_ = Some(ROLLING_UPDATE.into());
                    strategy.rolling_update.get_or_insert_with(RollingUpdateStatefulSetStrategy::default).partition =
                        Some(partition);
                }
                w.spec = Some(spec);
                Ok(&template.metadata)
            }
            Workload::Deployment(w) => {
                let template = t.deployment_template.as_ref().ok_or_else(|| missing(SubsetKind::Deployment))?;
                let mut spec = template.spec.clone();
                spec.selector = selector;
                spec.replicas = Some(replicas);
                w.spec = Some(spec);
                Ok(&template.metadata)
            }
        }
    }
}

fn empty(kind: SubsetKind) -> Workload {
    match kind {
        SubsetKind::CloneSet => Workload::CloneSet(CloneSet::default()),
        SubsetKind::AdvancedStatefulSet => Workload::AdvancedStatefulSet(AdvancedStatefulSet::default()),
        SubsetKind::StatefulSet => Workload::StatefulSet(StatefulSet::default()),
        SubsetKind::Deployment => Workload::Deployment(Deployment::default()),
    }
}

/// kruise `ApplySubsetTemplate` of the UnitedDeployment's template kind: the workload of
/// `subset` at `revision` with `replicas` and `partition`, laid over `base` (the existing
/// workload, or a new one). `Err` when the UnitedDeployment has no template, `base` is of another
/// kind, the subset is not in the spec, or the patch does not apply.
pub fn desired(
    ud: &UnitedDeployment,
    subset: &str,
    revision: &str,
    replicas: i32,
    partition: i32,
    base: Option<&Workload>,
) -> Result<Workload, String> {
    let kind = SubsetKind::of(ud).ok_or("the UnitedDeployment has no subset template")?;
    let config: &Subset = ud
        .spec
        .topology
        .subsets
        .iter()
        .find(|s| s.name == subset)
        .ok_or_else(|| format!("fail to find subset config {subset}"))?;
    let mut w = match base {
        Some(b) if b.kind() != kind => {
            return Err(format!("the {} {} is not a {}", b.kind().name(), b.name(), kind.name()));
        }
        Some(b) => b.clone(),
        None => empty(kind),
    };
    let selector = ud.spec.selector.clone().unwrap_or_default();
    let mut subset_selector = selector.clone();
    subset_selector.match_labels.get_or_insert_with(Default::default).insert(SUBSET_NAME_LABEL.into(), subset.into());
    let template_meta = w.apply_spec(ud, subset_selector, replicas, partition)?.clone();
    let ud_name = ud.metadata.name.clone().unwrap_or_default();
    let meta = w.meta_mut();
    meta.namespace = ud.metadata.namespace.clone();
    let labels = meta.labels.get_or_insert_with(Default::default);
    labels.extend(template_meta.labels.clone().unwrap_or_default());
    labels.extend(selector.match_labels.clone().unwrap_or_default());
    labels.insert(REVISION_LABEL.into(), revision.into());
    labels.insert(SUBSET_NAME_LABEL.into(), subset.into());
    let annotations = meta.annotations.get_or_insert_with(Default::default);
    annotations.extend(template_meta.annotations.clone().unwrap_or_default());
    annotations.insert(SUBSET_PATCH_ANNOTATION.into(), patch_text(config.patch.as_ref()));
    if meta.name.is_none() {
        meta.generate_name = Some(subset_prefix(&ud_name, subset));
    }
    let owner = owner_reference(ud);
    let refs = meta.owner_references.get_or_insert_with(Default::default);
    if !refs.iter().any(|r| r.uid == owner.uid) {
        refs.push(owner);
    }
    let template = w.pod_template_mut();
    let pod_labels = template.metadata.get_or_insert_with(Default::default).labels.get_or_insert_with(Default::default);
    pod_labels.insert(SUBSET_NAME_LABEL.into(), subset.into());
    pod_labels.insert(REVISION_LABEL.into(), revision.into());
    let pod_spec = template.spec.get_or_insert_with(Default::default);
    attach_node_affinity(pod_spec, &config.node_selector_term);
    if !config.tolerations.is_empty() {
        pod_spec.tolerations.get_or_insert_with(Default::default).extend(config.tolerations.iter().cloned());
    }
    if let Some(patch) = &config.patch {
        *template = patch_template(template, patch)?;
    }
    Ok(w)
}

/// The apps/v1 StatefulSet adapter's `PostUpdate` (`deleteStuckPods`): with a RollingUpdate
/// strategy, the pods (names and uids) whose ordinal is at or above `partition`, not at
/// `revision` and not ready — a rolling update would wait on them forever. Nothing for the other
/// kinds, or OnDelete.
pub fn stuck_pods(
    workload: &Workload,
    pods: &[impl std::borrow::Borrow<Pod>],
    revision: &str,
    partition: i32,
) -> Vec<(String, String)> {
    let Workload::StatefulSet(set) = workload else { return Vec::new() };
    let strategy = set.spec.as_ref().and_then(|s| s.update_strategy.as_ref()).and_then(|s| s.type_.as_deref());
    if strategy == Some(ON_DELETE) {
        return Vec::new();
    }
    pods.iter()
        .map(std::borrow::Borrow::<Pod>::borrow)
        .filter(|p| {
            let name = p.metadata.name.as_deref().unwrap_or("");
            let ordinal = crate::core::rollout::statefulset::identity::ordinal(name).unwrap_or(-1);
            // One already being deleted is left alone (deleting it again changes nothing).
            p.metadata.deletion_timestamp.is_none()
                && ordinal >= partition
                && pods::label(p, REVISION_LABEL) != Some(revision)
                && !pods::is_ready(p)
        })
        .map(|p| (p.metadata.name.clone().unwrap_or_default(), p.metadata.uid.clone().unwrap_or_default()))
        .collect()
}

#[cfg(test)]
mod tests;
