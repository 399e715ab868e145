//! A CloneSet's spec read the way kruise's controller reads it (spec §5.3 inputs): replicas
//! (nil → 1), the computed partition, maxSurge (0 while paused), maxUnavailable (default 20%,
//! rounded up unless maxSurge is set), scaleStrategy.maxUnavailable (unset = unlimited), the update
//! policy, and the feature gates that change controller decisions. The v1alpha1 object is read
//! directly; kruise HEAD reads its v1beta1 conversion, which holds the same values
//! (`updateStrategy.type` → `rollingUpdate.podUpdatePolicy`, label
//! `apps.kruise.io/cloneset-scaling-exclude-preparing-delete` → `excludePreparingDelete`).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;

use crate::apis::cloneset::{CloneSet, DEFAULT_MAX_UNAVAILABLE, IN_PLACE_IF_POSSIBLE, IN_PLACE_ONLY, ON_DELETE};
use crate::apis::common::Lifecycle;
use crate::apis::keys::{IN_PLACE_UPDATE_READY, SPECIFIED_DELETE};
use crate::compat::intstr::{calculate_partition_replicas, k8s_value_from_int_or_percent};
use crate::core::features::{FeatureGates, Gate};
use crate::core::lifecycle::State;
use crate::core::{lifecycle, pods};

/// CloneSet label asking to leave PreparingDelete pods out of the scale arithmetic.
pub const SCALING_EXCLUDE_PREPARING_DELETE: &str = "apps.kruise.io/cloneset-scaling-exclude-preparing-delete";

/// How pods move to a new revision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Recreate every pod (the default).
    ReCreate,
    /// In place when the revisions allow it, else recreate that pod.
    InPlaceIfPossible,
    /// In place only; a pod that cannot be is an error.
    InPlaceOnly,
    /// Never update (kruise v1.9 type; the v1alpha1 webhook rejects it).
    OnDelete,
}

/// The feature gates that change CloneSet controller decisions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gates {
    /// CloneSetPartitionRollback.
    pub partition_rollback: bool,
    /// PreparingUpdateAsUpdate.
    pub preparing_update_as_update: bool,
    /// CloneSetShortHash.
    pub short_hash: bool,
    /// InPlaceWorkloadVerticalScaling.
    pub vertical_scaling: bool,
    /// The in-place classifier's gates (InPlaceUpdateEnvFromMetadata, vertical scaling,
    /// RecreatePodWhenChangeVCTInCloneSetGate), read once.
    pub in_place: crate::core::inplace::classify::Gates,
    /// PodUnavailableBudgetUpdateGate: the budgets' verdict on an UPDATE (with the gates it
    /// reads), asked before each pod update; `None` when the gate is off.
    pub budget_update: Option<crate::core::budget::admit::Gates>,
}

impl Gates {
    /// The gates as set.
    pub fn from_feature_gates(g: &FeatureGates) -> Gates {
        Gates {
            partition_rollback: g.enabled(Gate::CloneSetPartitionRollback),
            preparing_update_as_update: g.enabled(Gate::PreparingUpdateAsUpdate),
            short_hash: g.enabled(Gate::CloneSetShortHash),
            vertical_scaling: g.enabled(Gate::InPlaceWorkloadVerticalScaling),
            in_place: crate::core::inplace::classify::Gates::from_features(g),
            budget_update: g.enabled(Gate::PodUnavailableBudgetUpdateGate).then(|| crate::core::budget::admit::Gates {
                in_place_pod_vertical_scaling: g.enabled(Gate::InPlacePodVerticalScaling),
                in_place_workload_vertical_scaling: g.enabled(Gate::InPlaceWorkloadVerticalScaling),
            }),
        }
    }
}

/// The spec values the decisions read.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// `spec.replicas` (nil → 1).
    pub replicas: i32,
    /// Pods kept at the current revision.
    pub partition: i32,
    /// Pods allowed above replicas.
    pub max_surge: i32,
    /// Pods allowed unavailable during updates.
    pub max_unavailable: i32,
    /// Pods allowed unavailable while scaling up.
    pub scale_max_unavailable: i32,
    /// Update policy.
    pub policy: Policy,
    /// `updateStrategy.paused`.
    pub paused: bool,
    /// `minReadySeconds`.
    pub min_ready_seconds: i32,
    /// `inPlaceUpdateStrategy.gracePeriodSeconds`.
    pub grace_period_seconds: i32,
    /// Scale arithmetic leaves PreparingDelete pods out.
    pub exclude_preparing_delete: bool,
    /// `scaleStrategy.podsToDelete`.
    pub pods_to_delete: BTreeSet<String>,
    /// `scaleStrategy.disablePVCReuse`.
    pub disable_pvc_reuse: bool,
    /// `lifecycle`.
    pub lifecycle: Option<Lifecycle>,
    /// Gates.
    pub gates: Gates,
}

fn scaled(v: Option<&IntOrString>, total: i32, round_up: bool) -> i32 {
    // kruise ignores the error of GetValueFromIntOrPercent, whose value is then 0.
    k8s_value_from_int_or_percent(v, i64::from(total), round_up).map_or(0, |n| n.clamp(0, i64::from(i32::MAX)) as i32)
}

impl Settings {
    /// Reads a CloneSet.
    pub fn new(cs: &CloneSet, gates: Gates) -> Settings {
        let spec = &cs.spec;
        let replicas = spec.replicas.unwrap_or(1);
        let us = &spec.update_strategy;
        let partition = calculate_partition_replicas(us.partition.as_ref(), Some(replicas)).unwrap_or(0) as i32;
        let max_surge =
            if us.paused || us.max_surge.is_none() { 0 } else { scaled(us.max_surge.as_ref(), replicas, true) };
        let default_unavailable = IntOrString::String(DEFAULT_MAX_UNAVAILABLE.into());
        let max_unavailable =
            scaled(Some(us.max_unavailable.as_ref().unwrap_or(&default_unavailable)), replicas, max_surge == 0);
        let unlimited = IntOrString::Int(i32::MAX);
        let scale_max_unavailable =
            scaled(Some(spec.scale_strategy.max_unavailable.as_ref().unwrap_or(&unlimited)), replicas, true);
        let policy = match us.type_.as_str() {
            IN_PLACE_IF_POSSIBLE => Policy::InPlaceIfPossible,
            IN_PLACE_ONLY => Policy::InPlaceOnly,
            ON_DELETE => Policy::OnDelete,
            _ => Policy::ReCreate,
        };
        let labels = cs.metadata.labels.as_ref();
        Settings {
            replicas,
            partition,
            max_surge,
            max_unavailable,
            scale_max_unavailable,
            policy,
            paused: us.paused,
            min_ready_seconds: spec.min_ready_seconds,
            grace_period_seconds: us.in_place_update_strategy.as_ref().map_or(0, |s| s.grace_period_seconds),
            exclude_preparing_delete: labels
                .and_then(|l| l.get(SCALING_EXCLUDE_PREPARING_DELETE))
                .is_some_and(|v| v == "true"),
            pods_to_delete: spec.scale_strategy.pods_to_delete.iter().cloned().collect(),
            disable_pvc_reuse: spec.scale_strategy.disable_pvc_reuse,
            lifecycle: spec.lifecycle.clone(),
            gates,
        }
    }

    /// `isSpecifiedDelete`: the `apps.kruise.io/specified-delete` label, or named in podsToDelete.
    pub fn is_specified_delete(&self, pod: &Pod) -> bool {
        pods::labels(pod).contains_key(SPECIFIED_DELETE) || self.pods_to_delete.contains(pods::name(pod))
    }

    /// `IsPodUpdateReady`: running, available for `min_ready_seconds`, and `InPlaceUpdateReady`
    /// absent or True.
    pub fn is_update_ready(&self, pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> bool {
        pods::is_running_and_available(pod, min_ready_seconds, now)
            && pods::condition(pod, IN_PLACE_UPDATE_READY).is_none_or(|c| c.status == "True")
    }

    /// `IsPodAvailable`: lifecycle state "" or Normal, and update-ready for minReadySeconds.
    pub fn is_available(&self, pod: &Pod, now: Timestamp) -> bool {
        matches!(lifecycle::state(pod), State::Unset | State::Normal)
            && self.is_update_ready(pod, self.min_ready_seconds, now)
    }

    /// `isPodReady`: available without minReadySeconds.
    pub fn is_ready(&self, pod: &Pod, now: Timestamp) -> bool {
        matches!(lifecycle::state(pod), State::Unset | State::Normal) && self.is_update_ready(pod, 0, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::cloneset::CloneSetSpec;

    fn cs(edit: impl FnOnce(&mut CloneSetSpec)) -> CloneSet {
        let mut c = CloneSet::new("web", CloneSetSpec { replicas: Some(10), ..Default::default() });
        edit(&mut c.spec);
        c
    }

    #[test]
    fn values_as_kruise_computes_them() {
        let s = |edit: fn(&mut CloneSetSpec)| Settings::new(&cs(edit), Gates::default());
        let d = s(|_| {});
        assert_eq!((d.partition, d.max_surge, d.max_unavailable, d.scale_max_unavailable), (0, 0, 2, i32::MAX));
        assert_eq!(d.policy, Policy::ReCreate);
        // maxSurge set: maxUnavailable rounds down.
        let surge = s(|c| {
            c.update_strategy.max_surge = Some(IntOrString::String("15%".into()));
            c.update_strategy.max_unavailable = Some(IntOrString::String("25%".into()));
        });
        assert_eq!((surge.max_surge, surge.max_unavailable), (2, 2));
        // paused: no surge, maxUnavailable rounds up again.
        let paused = s(|c| {
            c.update_strategy.max_surge = Some(IntOrString::String("15%".into()));
            c.update_strategy.max_unavailable = Some(IntOrString::String("25%".into()));
            c.update_strategy.paused = true;
        });
        assert_eq!((paused.max_surge, paused.max_unavailable), (0, 3));
        let partition = s(|c| c.update_strategy.partition = Some(IntOrString::String("100%".into())));
        assert_eq!(partition.partition, 10);
        let almost = s(|c| c.update_strategy.partition = Some(IntOrString::String("99%".into())));
        assert_eq!(almost.partition, 9, "a percent under 100% keeps one pod to update");
        let nil = Settings::new(&CloneSet::new("x", CloneSetSpec::default()), Gates::default());
        assert_eq!(nil.replicas, 1);
        let bad = s(|c| c.update_strategy.max_unavailable = Some(IntOrString::String("x%".into())));
        assert_eq!(bad.max_unavailable, 0, "kruise ignores the parse error");
    }
}
