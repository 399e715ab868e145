//! UnitedDeployment defaults, kruise's `SetDefaultsUnitedDeployment` (`apis/apps/defaults/
//! v1alpha1.go`, v1.9.0; issue 34 item 1): `revisionHistoryLimit` 10, `updateStrategy.type`
//! Manual with an empty `manualUpdate`, the statefulSetTemplate's pod template and
//! volumeClaimTemplates defaulted when template defaults apply (only that template: kruise leaves
//! the other three as sent), and `minReplicas: 0` on every subset without one when some subset
//! has `minReplicas`/`maxReplicas` and none has `replicas`. `spec.replicas` is not defaulted
//! (kruise v1.9.0; HEAD defaults it to 1).

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::pod::{QuantityError, default_pod_spec, default_volume_claim_template};
use crate::apis::uniteddeployment::{MANUAL, ManualUpdate, UnitedDeploymentSpec};
use crate::core::features::FeatureGates;

/// The default `revisionHistoryLimit`.
pub const DEFAULT_REVISION_HISTORY_LIMIT: i32 = 10;

/// Defaults a UnitedDeployment spec in place; `inject_template` as decided by
/// [`super::pod::should_inject_template_defaults`].
pub fn default_uniteddeployment(
    spec: &mut UnitedDeploymentSpec,
    inject_template: bool,
    gates: &FeatureGates,
) -> Result<(), QuantityError> {
    if spec.revision_history_limit.is_none() {
        spec.revision_history_limit = Some(DEFAULT_REVISION_HISTORY_LIMIT);
    }
    if spec.update_strategy.type_.is_empty() {
        spec.update_strategy.type_ = MANUAL.into();
    }
    if spec.update_strategy.type_ == MANUAL && spec.update_strategy.manual_update.is_none() {
        spec.update_strategy.manual_update = Some(ManualUpdate::default());
    }
    if let Some(sts) = spec.template.stateful_set_template.as_mut()
        && inject_template
    {
        let path = "spec.template.statefulSetTemplate.spec";
        let pod_spec = sts.spec.template.spec.get_or_insert_with(Default::default);
        default_pod_spec(pod_spec, gates, &format!("{path}.template.spec"))?;
        for (i, vct) in sts.spec.volume_claim_templates.iter_mut().flatten().enumerate() {
            default_volume_claim_template(vct, &format!("{path}.volumeClaimTemplates[{i}]"))?;
        }
    }
    let subsets = &mut spec.topology.subsets;
    let has_replicas = subsets.iter().any(|s| s.replicas.is_some());
    let has_capacity = subsets.iter().any(|s| s.min_replicas.is_some() || s.max_replicas.is_some());
    if has_capacity && !has_replicas {
        for s in subsets.iter_mut().filter(|s| s.min_replicas.is_none()) {
            s.min_replicas = Some(IntOrString::Int(0));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(v: serde_json::Value) -> UnitedDeploymentSpec {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn empty_spec_gets_kruise_defaults() {
        let mut s = spec(json!({}));
        default_uniteddeployment(&mut s, true, &FeatureGates::default()).unwrap();
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            json!({"revisionHistoryLimit": 10, "updateStrategy": {"type": "Manual", "manualUpdate": {}}})
        );
    }

    #[test]
    fn statefulset_template_defaulted_only_when_injecting() {
        let raw = json!({"template": {"statefulSetTemplate": {"spec": {"template": {"spec": {
            "containers": [{"name": "c", "image": "nginx"}]}}}}}});
        let mut s = spec(raw.clone());
        default_uniteddeployment(&mut s, false, &FeatureGates::default()).unwrap();
        let pod = s.template.stateful_set_template.as_ref().unwrap().spec.template.spec.clone().unwrap();
        assert_eq!(pod.restart_policy, None);
        let mut s = spec(raw);
        default_uniteddeployment(&mut s, true, &FeatureGates::default()).unwrap();
        let pod = s.template.stateful_set_template.as_ref().unwrap().spec.template.spec.clone().unwrap();
        assert_eq!(pod.restart_policy.as_deref(), Some("Always"));
        assert_eq!(pod.dns_policy.as_deref(), Some("ClusterFirst"));
        assert_eq!(pod.containers[0].termination_message_path.as_deref(), Some("/dev/termination-log"));
    }

    #[test]
    fn clone_set_template_left_as_sent() {
        let raw = json!({"template": {"cloneSetTemplate": {"spec": {"template": {"spec": {
            "containers": [{"name": "c", "image": "nginx"}]}}}}}});
        let mut s = spec(raw);
        let before = s.template.clone();
        default_uniteddeployment(&mut s, true, &FeatureGates::default()).unwrap();
        assert_eq!(s.template, before);
    }

    #[test]
    fn min_replicas_zero_only_with_capacity_and_no_replicas() {
        let mut s = spec(json!({"topology": {"subsets": [{"name": "a", "maxReplicas": 2}, {"name": "b"}]}}));
        default_uniteddeployment(&mut s, true, &FeatureGates::default()).unwrap();
        assert_eq!(s.topology.subsets[0].min_replicas, Some(IntOrString::Int(0)));
        assert_eq!(s.topology.subsets[1].min_replicas, Some(IntOrString::Int(0)));
        let mut s =
            spec(json!({"topology": {"subsets": [{"name": "a", "maxReplicas": 2}, {"name": "b", "replicas": 1}]}}));
        default_uniteddeployment(&mut s, true, &FeatureGates::default()).unwrap();
        assert_eq!(s.topology.subsets[1].min_replicas, None);
    }
}
