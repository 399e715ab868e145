//! Advanced StatefulSet defaults, exactly kruise's `SetDefaultsStatefulSet` (spec §1.2.3), on the
//! v1beta1 shape; v1alpha1 objects are converted before and after (`core::conversion`).

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::pod::{QuantityError, default_workload_templates};
use crate::apis::statefulset::v1beta1::{StatefulSetPersistentVolumeClaimRetentionPolicy, StatefulSetSpec};
use crate::apis::statefulset::{ORDERED_READY, RECREATE, RETAIN, ROLLING_UPDATE};
use crate::core::features::{FeatureGates, Gate};

/// Defaults an Advanced StatefulSet spec (the caller also resets `status`, item 8).
pub fn default_statefulset(
    spec: &mut StatefulSetSpec,
    inject_template_defaults: bool,
    gates: &FeatureGates,
) -> Result<(), QuantityError> {
    if spec.pod_management_policy.is_empty() {
        spec.pod_management_policy = ORDERED_READY.to_string();
    }
    if spec.update_strategy.type_.is_empty() {
        spec.update_strategy.type_ = ROLLING_UPDATE.to_string();
    }
    if spec.update_strategy.type_ == ROLLING_UPDATE {
        let rolling = spec.update_strategy.rolling_update.get_or_insert_with(Default::default);
        rolling.partition.get_or_insert(0);
        rolling.max_unavailable.get_or_insert(IntOrString::Int(1));
        if rolling.pod_update_policy.is_empty() {
            rolling.pod_update_policy = RECREATE.to_string();
        }
        rolling.min_ready_seconds.get_or_insert(0);
    }
    if gates.enabled(Gate::StatefulSetAutoDeletePVC) {
        let policy = spec
            .persistent_volume_claim_retention_policy
            .get_or_insert_with(StatefulSetPersistentVolumeClaimRetentionPolicy::default);
        if policy.when_deleted.is_empty() {
            policy.when_deleted = RETAIN.to_string();
        }
        if policy.when_scaled.is_empty() {
            policy.when_scaled = RETAIN.to_string();
        }
    }
    if gates.enabled(Gate::StatefulSetAutoResizePVCGate) && spec.volume_claim_update_strategy.type_.is_empty() {
        spec.volume_claim_update_strategy.type_ = crate::apis::statefulset::ON_DELETE.to_string();
    }
    spec.replicas.get_or_insert(1);
    spec.revision_history_limit.get_or_insert(10);
    if inject_template_defaults {
        default_workload_templates(&mut spec.template, &mut spec.volume_claim_templates, gates)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::statefulset::{ON_DELETE, PARALLEL};

    #[test]
    fn empty_spec_gets_every_default() {
        let mut spec = StatefulSetSpec::default();
        default_statefulset(&mut spec, true, &FeatureGates::default()).unwrap();
        assert_eq!(spec.pod_management_policy, ORDERED_READY);
        assert_eq!(spec.update_strategy.type_, ROLLING_UPDATE);
        let r = spec.update_strategy.rolling_update.as_ref().unwrap();
        assert_eq!(r.partition, Some(0));
        assert_eq!(r.max_unavailable, Some(IntOrString::Int(1)));
        assert_eq!(r.pod_update_policy, RECREATE);
        assert_eq!(r.min_ready_seconds, Some(0));
        assert!(r.in_place_update_strategy.is_none(), "not auto-created, unlike CloneSet");
        let p = spec.persistent_volume_claim_retention_policy.as_ref().unwrap();
        assert_eq!((p.when_deleted.as_str(), p.when_scaled.as_str()), (RETAIN, RETAIN));
        assert_eq!(spec.volume_claim_update_strategy.type_, "", "gate StatefulSetAutoResizePVCGate is off");
        assert_eq!(spec.replicas, Some(1));
        assert_eq!(spec.revision_history_limit, Some(10));
    }

    #[test]
    fn gates_and_on_delete() {
        let gates = FeatureGates::parse("StatefulSetAutoDeletePVC=false,StatefulSetAutoResizePVCGate=true").unwrap();
        let mut spec = StatefulSetSpec { pod_management_policy: PARALLEL.into(), ..Default::default() };
        spec.update_strategy.type_ = ON_DELETE.into();
        default_statefulset(&mut spec, false, &gates).unwrap();
        assert_eq!(spec.pod_management_policy, PARALLEL);
        assert!(spec.update_strategy.rolling_update.is_none(), "OnDelete gets no rollingUpdate");
        assert!(spec.persistent_volume_claim_retention_policy.is_none());
        assert_eq!(spec.volume_claim_update_strategy.type_, ON_DELETE);
    }

    #[test]
    fn partial_retention_policy_is_completed() {
        let mut spec = StatefulSetSpec {
            persistent_volume_claim_retention_policy: Some(StatefulSetPersistentVolumeClaimRetentionPolicy {
                when_deleted: "Delete".into(),
                when_scaled: String::new(),
            }),
            ..Default::default()
        };
        default_statefulset(&mut spec, false, &FeatureGates::default()).unwrap();
        let p = spec.persistent_volume_claim_retention_policy.unwrap();
        assert_eq!((p.when_deleted.as_str(), p.when_scaled.as_str()), ("Delete", RETAIN));
    }
}
