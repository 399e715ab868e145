//! Which update strategies make pre-downloading pointless (spec §7.3's skip list), per kind:
//! kruise's checks at the top of `createImagePullJobsForInPlaceUpdate` for CloneSet and Advanced
//! StatefulSet. A skipped update revision is labelled `image-predownload-ignored`.

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;

use super::MINIMUM_REPLICAS;
use crate::apis::cloneset::{CloneSet, DEFAULT_MAX_UNAVAILABLE, IN_PLACE_ONLY, RECREATE};
use crate::apis::statefulset::v1beta1::StatefulSet;
use crate::apis::statefulset::{ON_DELETE, RECREATE as POD_RECREATE};
use crate::compat::intstr::{calculate_partition_replicas, k8s_value_from_int_or_percent};
use crate::core::features::FeatureGates;
use crate::core::inplace::classify::{self, ClassifyOptions, VCT_HASH_ANNOTATION, classify_revision_update};

/// The parts of a workload's update strategy the skip rules read.
#[derive(Clone, Debug, PartialEq)]
pub enum Strategy {
    /// A CloneSet (v1alpha1 `updateStrategy`).
    CloneSet {
        type_: String,
        partition: Option<IntOrString>,
        max_unavailable: Option<IntOrString>,
        gates: classify::Gates,
    },
    /// An Advanced StatefulSet (v1beta1 `updateStrategy`).
    StatefulSet {
        type_: String,
        /// `rollingUpdate`: partition, maxUnavailable, podUpdatePolicy (`None`: not set).
        rolling: Option<(Option<i32>, Option<IntOrString>, String)>,
        gates: classify::Gates,
    },
}

impl Strategy {
    /// A CloneSet's.
    pub fn of_cloneset(cs: &CloneSet, gates: &FeatureGates) -> Self {
        let s = &cs.spec.update_strategy;
        Strategy::CloneSet {
            type_: s.type_.clone(),
            partition: s.partition.clone(),
            max_unavailable: s.max_unavailable.clone(),
            gates: classify::Gates::from_features(gates),
        }
    }

    /// An Advanced StatefulSet's.
    pub fn of_statefulset(sts: &StatefulSet, gates: &FeatureGates) -> Self {
        let s = &sts.spec.update_strategy;
        Strategy::StatefulSet {
            type_: s.type_.clone(),
            rolling: s
                .rolling_update
                .as_ref()
                .map(|r| (r.partition, r.max_unavailable.clone(), r.pod_update_policy.clone())),
            gates: classify::Gates::from_features(gates),
        }
    }

    /// Why the update from `current` to `update` gets no jobs (`None`: it gets them); an error
    /// for a CloneSet partition that cannot be computed (kruise returns it, labelling nothing).
    pub fn skip_reason(
        &self,
        replicas: i32,
        current: &ControllerRevision,
        update: &ControllerRevision,
    ) -> Result<Option<String>, String> {
        let (partition, max_unavailable, opts) = match self {
            Strategy::CloneSet { type_, partition, max_unavailable, gates } => {
                if type_ == RECREATE {
                    return Ok(Some("the update type is ReCreate".into()));
                }
                if replicas <= MINIMUM_REPLICAS {
                    return Ok(Some(too_few(replicas)));
                }
                let partition = calculate_partition_replicas(partition.as_ref(), Some(replicas))
                    .map_err(|e| format!("spec.updateStrategy.partition cannot be computed: {e}"))?;
                let default = IntOrString::String(DEFAULT_MAX_UNAVAILABLE.into());
                // `intstrutil.GetValueFromIntOrPercent`, its error ignored (0).
                let max = k8s_value_from_int_or_percent(
                    Some(max_unavailable.as_ref().unwrap_or(&default)),
                    i64::from(replicas),
                    false,
                )
                .unwrap_or(0);
                let vct = |r: &ControllerRevision| {
                    r.metadata.annotations.as_ref().and_then(|a| a.get(VCT_HASH_ANNOTATION)).cloned()
                };
                let opts = ClassifyOptions {
                    gates: *gates,
                    old_vct_hash: vct(current),
                    new_vct_hash: vct(update),
                    ignore_vct_hash_diff: type_ == IN_PLACE_ONLY,
                };
                (partition, max, opts)
            }
            Strategy::StatefulSet { type_, rolling, gates } => {
                let Some((partition, max_unavailable, policy)) = rolling.as_ref().filter(|_| type_ != ON_DELETE) else {
                    return Ok(Some("the update type is OnDelete or has no rollingUpdate".into()));
                };
                if policy == POD_RECREATE {
                    return Ok(Some("the pod update policy is ReCreate".into()));
                }
                if replicas <= MINIMUM_REPLICAS {
                    return Ok(Some(too_few(replicas)));
                }
                // The default is the string "1", which the deprecated Go helper reads as 1%.
                let default = IntOrString::String("1".into());
                let max = k8s_value_from_int_or_percent(
                    Some(max_unavailable.as_ref().unwrap_or(&default)),
                    i64::from(replicas),
                    false,
                )
                .unwrap_or(0);
                let opts = ClassifyOptions { gates: *gates, ..Default::default() };
                (i64::from(partition.unwrap_or(0)), max, opts)
            }
        };
        if partition == 0 && max_unavailable >= i64::from(replicas) {
            return Ok(Some(format!(
                "every pod updates in one batch (partition 0, maxUnavailable {max_unavailable} of {replicas})"
            )));
        }
        let data = |r: &ControllerRevision| r.data.as_ref().map(|d| d.0.clone()).unwrap_or(Value::Null);
        if let Err(e) = classify_revision_update(&data(current), &data(update), &opts) {
            return Ok(Some(format!("the revisions cannot be updated in place: {e}")));
        }
        Ok(None)
    }
}

fn too_few(replicas: i32) -> String {
    format!("{replicas} replicas are not more than {MINIMUM_REPLICAS}")
}

/// kruise's `GetTemplateFromRevision`: the `spec.template` of the revision data (empty when
/// absent); `None` when the data is not JSON of that shape.
pub fn template_of(revision: &ControllerRevision) -> Option<PodTemplateSpec> {
    let data = revision.data.as_ref()?;
    match data.0.get("spec").and_then(|s| s.get("template")) {
        None | Some(Value::Null) => data.0.is_object().then(PodTemplateSpec::default),
        Some(t) => crate::compat::decode::from_value(t).ok(),
    }
}
