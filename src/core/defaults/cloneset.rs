//! CloneSet defaults, exactly kruise's `SetDefaultsCloneSet` (spec §1.1.3) and, on the same
//! model, `SetDefaultsCloneSetV1beta1` (spec §1.1.4).

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::pod::{QuantityError, default_workload_templates};
use crate::apis::cloneset::{
    CloneSetSpec, DEFAULT_MAX_UNAVAILABLE, IN_PLACE_IF_POSSIBLE, IN_PLACE_ONLY, ON_DELETE, RECREATE,
};
use crate::apis::common::InPlaceUpdateStrategy;
use crate::core::features::FeatureGates;

/// Defaults a CloneSet spec. Template and volume claim template defaults are applied only when
/// `inject_template_defaults` (see [`super::pod::should_inject_template_defaults`]).
pub fn default_cloneset(
    spec: &mut CloneSetSpec,
    inject_template_defaults: bool,
    gates: &FeatureGates,
) -> Result<(), QuantityError> {
    spec.replicas.get_or_insert(1);
    spec.revision_history_limit.get_or_insert(10);
    if inject_template_defaults {
        default_workload_templates(&mut spec.template, &mut spec.volume_claim_templates, gates)?;
    }
    let strategy = &mut spec.update_strategy;
    match strategy.type_.as_str() {
        "" => strategy.type_ = RECREATE.to_string(),
        IN_PLACE_IF_POSSIBLE | IN_PLACE_ONLY => {
            strategy.in_place_update_strategy.get_or_insert_with(InPlaceUpdateStrategy::default);
        }
        _ => {}
    }
    strategy.partition.get_or_insert(IntOrString::Int(0));
    strategy.max_unavailable.get_or_insert_with(|| IntOrString::String(DEFAULT_MAX_UNAVAILABLE.to_string()));
    strategy.max_surge.get_or_insert(IntOrString::Int(0));
    Ok(())
}

/// kruise's `SetDefaultsCloneSetV1beta1` on the v1alpha1 model (spec §1.1.4): the same
/// defaults, except that under OnDelete the rolling parameters (partition, maxUnavailable,
/// maxSurge) stay unset, as v1beta1 defaults them only for RollingUpdate.
pub fn default_cloneset_v1beta1(
    spec: &mut CloneSetSpec,
    inject_template_defaults: bool,
    gates: &FeatureGates,
) -> Result<(), QuantityError> {
    if spec.update_strategy.type_ != ON_DELETE {
        return default_cloneset(spec, inject_template_defaults, gates);
    }
    let strategy = spec.update_strategy.clone();
    default_cloneset(spec, inject_template_defaults, gates)?;
    spec.update_strategy = strategy;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategy_defaults() {
        let g = FeatureGates::default();
        let cases = [
            ("", RECREATE, false),
            (IN_PLACE_IF_POSSIBLE, IN_PLACE_IF_POSSIBLE, true),
            (IN_PLACE_ONLY, IN_PLACE_ONLY, true),
            ("Bogus", "Bogus", false),
        ];
        for (given, want, in_place) in cases {
            let mut spec = CloneSetSpec::default();
            spec.update_strategy.type_ = given.into();
            default_cloneset(&mut spec, false, &g).unwrap();
            assert_eq!(spec.update_strategy.type_, want);
            assert_eq!(spec.update_strategy.in_place_update_strategy.is_some(), in_place, "{given}");
            assert_eq!(spec.replicas, Some(1));
            assert_eq!(spec.revision_history_limit, Some(10));
            assert_eq!(spec.update_strategy.partition, Some(IntOrString::Int(0)));
            assert_eq!(spec.update_strategy.max_unavailable, Some(IntOrString::String("20%".into())));
            assert_eq!(spec.update_strategy.max_surge, Some(IntOrString::Int(0)));
        }
    }

    #[test]
    fn v1beta1_on_delete_leaves_the_rolling_parameters_unset() {
        let g = FeatureGates::default();
        let mut spec = CloneSetSpec::default();
        spec.update_strategy.type_ = ON_DELETE.into();
        default_cloneset_v1beta1(&mut spec, false, &g).unwrap();
        assert_eq!(spec.update_strategy.partition, None);
        assert_eq!(spec.update_strategy.max_unavailable, None);
        assert_eq!((spec.replicas, spec.revision_history_limit), (Some(1), Some(10)));
        let mut spec = CloneSetSpec::default();
        spec.update_strategy.type_ = IN_PLACE_ONLY.into();
        default_cloneset_v1beta1(&mut spec, false, &g).unwrap();
        assert_eq!(spec.update_strategy.max_surge, Some(IntOrString::Int(0)));
    }

    #[test]
    fn set_values_are_kept() {
        let mut spec = CloneSetSpec { replicas: Some(0), revision_history_limit: Some(3), ..Default::default() };
        spec.update_strategy.partition = Some(IntOrString::String("50%".into()));
        spec.update_strategy.max_unavailable = Some(IntOrString::Int(2));
        spec.update_strategy.max_surge = Some(IntOrString::String("10%".into()));
        default_cloneset(&mut spec, true, &FeatureGates::default()).unwrap();
        assert_eq!(spec.replicas, Some(0));
        assert_eq!(spec.revision_history_limit, Some(3));
        assert_eq!(spec.update_strategy.partition, Some(IntOrString::String("50%".into())));
        assert_eq!(spec.update_strategy.max_unavailable, Some(IntOrString::Int(2)));
        assert_eq!(spec.update_strategy.max_surge, Some(IntOrString::String("10%".into())));
    }
}
