//! Advanced DaemonSet defaults, exactly kruise v1.9.0's `SetDefaultsDaemonSet` (v1alpha1) and
//! `SetDefaultsDaemonSetV1beta1` (`apis/apps/defaults`): `burstReplicas` 250, `updateStrategy.type`
//! RollingUpdate with a `rollingUpdate` whose `rollingUpdateType` defaults to Standard and whose
//! `maxUnavailable`/`maxSurge` default to 1/0 when both are unset, `revisionHistoryLimit` 10.
//! v1alpha1 alone still reads the deprecated `Surging` type: maxSurge 1 and maxUnavailable 0 when
//! unset, then the type becomes Standard.
//!
//! Unlike CloneSet and Advanced StatefulSet, kruise does NOT default the pod template of a
//! DaemonSet here (its validating webhook defaults a copy only to validate it).

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::apis::daemonset::{
    DEPRECATED_SURGING, DaemonSetUpdateStrategy, ROLLING_UPDATE, RollingUpdateDaemonSet, STANDARD,
};

/// Which schema the object came in: the deprecated Surging type is read only from v1alpha1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    V1alpha1,
    V1beta1,
}

/// Defaults the fields both versions share, in place.
pub fn default_daemonset(
    burst_replicas: &mut Option<IntOrString>,
    strategy: &mut DaemonSetUpdateStrategy,
    revision_history_limit: &mut Option<i32>,
    version: Version,
) {
    burst_replicas.get_or_insert(IntOrString::Int(250));
    if strategy.type_.is_empty() {
        strategy.type_ = ROLLING_UPDATE.into();
    }
    if strategy.type_ == ROLLING_UPDATE {
        let rolling = strategy.rolling_update.get_or_insert_with(RollingUpdateDaemonSet::default);
        let surging = version == Version::V1alpha1 && rolling.rolling_update_type == DEPRECATED_SURGING;
        if surging {
            rolling.max_surge.get_or_insert(IntOrString::Int(1));
            rolling.max_unavailable.get_or_insert(IntOrString::Int(0));
        }
        if rolling.rolling_update_type.is_empty() || surging {
            rolling.rolling_update_type = STANDARD.into();
        }
        if rolling.max_unavailable.is_none() && rolling.max_surge.is_none() {
            rolling.max_unavailable = Some(IntOrString::Int(1));
            rolling.max_surge = Some(IntOrString::Int(0));
        }
    }
    revision_history_limit.get_or_insert(10);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(strategy: DaemonSetUpdateStrategy, version: Version) -> DaemonSetUpdateStrategy {
        let (mut burst, mut strategy, mut history) = (None, strategy, None);
        default_daemonset(&mut burst, &mut strategy, &mut history, version);
        assert_eq!(burst, Some(IntOrString::Int(250)));
        assert_eq!(history, Some(10));
        strategy
    }

    fn rolling(type_: &str, mu: Option<IntOrString>, ms: Option<IntOrString>) -> DaemonSetUpdateStrategy {
        DaemonSetUpdateStrategy {
            type_: ROLLING_UPDATE.into(),
            rolling_update: Some(RollingUpdateDaemonSet {
                rolling_update_type: type_.into(),
                max_unavailable: mu,
                max_surge: ms,
                ..Default::default()
            }),
        }
    }

    #[test]
    fn empty_strategy_becomes_standard_rolling_update_of_one() {
        for version in [Version::V1alpha1, Version::V1beta1] {
            let got = run(DaemonSetUpdateStrategy::default(), version);
            assert_eq!(got, rolling(STANDARD, Some(IntOrString::Int(1)), Some(IntOrString::Int(0))));
        }
    }

    #[test]
    fn surging_is_read_only_from_v1alpha1() {
        let got = run(rolling(DEPRECATED_SURGING, None, None), Version::V1alpha1);
        assert_eq!(got, rolling(STANDARD, Some(IntOrString::Int(0)), Some(IntOrString::Int(1))));
        // v1beta1 leaves it for validation to refuse.
        let got = run(rolling(DEPRECATED_SURGING, None, None), Version::V1beta1);
        assert_eq!(got, rolling(DEPRECATED_SURGING, Some(IntOrString::Int(1)), Some(IntOrString::Int(0))));
    }

    #[test]
    fn set_values_are_kept() {
        let set = rolling("InPlaceIfPossible", Some(IntOrString::String("20%".into())), None);
        assert_eq!(run(set.clone(), Version::V1beta1), set);
        let on_delete = DaemonSetUpdateStrategy { type_: "OnDelete".into(), rolling_update: None };
        assert_eq!(run(on_delete.clone(), Version::V1alpha1), on_delete);
        let (mut burst, mut strategy, mut history) = (Some(IntOrString::Int(3)), on_delete, Some(0));
        default_daemonset(&mut burst, &mut strategy, &mut history, Version::V1alpha1);
        assert_eq!((burst, history), (Some(IntOrString::Int(3)), Some(0)));
    }
}
