//! The CloneSet rules only a v1beta1 object can break (spec §1.1.4, kruise HEAD's
//! `validateUpdateStrategyV1beta1`): `updateStrategy.type` RollingUpdate|OnDelete (or unset),
//! `rollingUpdate.podUpdatePolicy` ReCreate|InPlaceIfPossible|InPlaceOnly (or unset), and the
//! image pre-download fields of `rollingUpdate.inPlaceUpdateStrategy` (parallelism an integer,
//! not a percentage, and none negative). They are checked on the v1beta1 object because the
//! conversion to the v1alpha1 model cannot carry an unknown `type` beside a `podUpdatePolicy`;
//! every other rule is [`super::cloneset`]'s, on that model, with [`super::cloneset::Shape::V1beta1`].

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::apis::cloneset::v1beta1::{CloneSet, ON_DELETE, ROLLING_UPDATE};
use crate::apis::cloneset::{IN_PLACE_IF_POSSIBLE, IN_PLACE_ONLY, RECREATE};
use crate::compat::field::FieldError;
use crate::compat::intstr::validate_nonnegative;

const ROLLING: &str = "spec.updateStrategy.rollingUpdate";

/// The v1beta1-only rules, in kruise's order.
pub fn validate_v1beta1_fields(cs: &CloneSet) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let strategy = &cs.spec.update_strategy;
    if ![ROLLING_UPDATE, ON_DELETE, ""].contains(&strategy.type_.as_str()) {
        errs.push(FieldError::invalid(
            "spec.updateStrategy.type",
            strategy.type_.as_str(),
            format!("must be '{ROLLING_UPDATE}' or '{ON_DELETE}'"),
        ));
    }
    let Some(rolling) = &strategy.rolling_update else { return errs };
    if ![RECREATE, IN_PLACE_IF_POSSIBLE, IN_PLACE_ONLY, ""].contains(&rolling.pod_update_policy.as_str()) {
        errs.push(FieldError::invalid(
            &format!("{ROLLING}.podUpdatePolicy"),
            rolling.pod_update_policy.as_str(),
            format!("must be '{RECREATE}', '{IN_PLACE_IF_POSSIBLE}' or '{IN_PLACE_ONLY}'"),
        ));
    }
    let Some(in_place) = &rolling.in_place_update_strategy else { return errs };
    let path = |f: &str| format!("{ROLLING}.inPlaceUpdateStrategy.{f}");
    let parallelism = path("imagePreDownloadParallelism");
    match &in_place.image_pre_download_parallelism {
        Some(IntOrString::String(s)) if s.ends_with('%') => {
            errs.push(FieldError::invalid(
                &parallelism,
                s.as_str(),
                "imagePreDownloadParallelism does not support percentage value",
            ));
        }
        Some(IntOrString::String(s)) => match s.parse::<i32>() {
            Err(e) => errs.push(FieldError::invalid(
                &parallelism,
                s.as_str(),
                format!("imagePreDownloadParallelism must be a valid integer: {}", go_parse_int_error(s, &e)),
            )),
            Ok(n) if n < 0 => {
                errs.push(FieldError::invalid(
                    &parallelism,
                    s.as_str(),
                    "imagePreDownloadParallelism must be non-negative",
                ));
            }
            Ok(_) => {}
        },
        Some(IntOrString::Int(n)) if *n < 0 => {
            errs.push(FieldError::invalid(&parallelism, *n, "imagePreDownloadParallelism must be non-negative"));
        }
        _ => {}
    }
    if let Some(t) = in_place.image_pre_download_timeout_seconds {
        errs.extend(validate_nonnegative(i64::from(t), &path("imagePreDownloadTimeoutSeconds")));
    }
    if let Some(m) = in_place.image_pre_download_min_updated_ready_pods {
        errs.extend(validate_nonnegative(i64::from(m), &path("imagePreDownloadMinUpdatedReadyPods")));
    }
    errs
}

/// Go's `strconv.ParseInt(s, 10, 32)` error text.
fn go_parse_int_error(s: &str, e: &std::num::ParseIntError) -> String {
    use std::num::IntErrorKind;
    let why = match e.kind() {
        IntErrorKind::PosOverflow | IntErrorKind::NegOverflow => "value out of range",
        _ => "invalid syntax",
    };
    format!("strconv.ParseInt: parsing {s:?}: {why}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::field::aggregate;
    use serde_json::{Value, json};

    fn errors(strategy: Value) -> String {
        let cs: CloneSet = serde_json::from_value(json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet",
            "metadata": {"name": "c"}, "spec": {"updateStrategy": strategy}}))
        .unwrap();
        aggregate(&validate_v1beta1_fields(&cs))
    }

    #[test]
    fn table() {
        let rows = [
            (json!({}), ""),
            (json!({"type": "OnDelete"}), ""),
            (json!({"type": "RollingUpdate", "rollingUpdate": {"podUpdatePolicy": "InPlaceOnly"}}), ""),
            (
                json!({"type": "ReCreate"}),
                "spec.updateStrategy.type: Invalid value: \"ReCreate\": must be 'RollingUpdate' or 'OnDelete'",
            ),
            (
                json!({"rollingUpdate": {"podUpdatePolicy": "Rolling"}}),
                "spec.updateStrategy.rollingUpdate.podUpdatePolicy: Invalid value: \"Rolling\": must be 'ReCreate', 'InPlaceIfPossible' or 'InPlaceOnly'",
            ),
            (
                json!({"rollingUpdate": {"inPlaceUpdateStrategy": {"imagePreDownloadParallelism": "50%"}}}),
                "spec.updateStrategy.rollingUpdate.inPlaceUpdateStrategy.imagePreDownloadParallelism: Invalid value: \"50%\": imagePreDownloadParallelism does not support percentage value",
            ),
            (
                json!({"rollingUpdate": {"inPlaceUpdateStrategy": {"imagePreDownloadParallelism": "abc"}}}),
                "spec.updateStrategy.rollingUpdate.inPlaceUpdateStrategy.imagePreDownloadParallelism: Invalid value: \"abc\": imagePreDownloadParallelism must be a valid integer: strconv.ParseInt: parsing \"abc\": invalid syntax",
            ),
            (
                json!({"rollingUpdate": {"inPlaceUpdateStrategy": {"imagePreDownloadParallelism": "-2"}}}),
                "spec.updateStrategy.rollingUpdate.inPlaceUpdateStrategy.imagePreDownloadParallelism: Invalid value: \"-2\": imagePreDownloadParallelism must be non-negative",
            ),
            (
                json!({"rollingUpdate": {"inPlaceUpdateStrategy": {"imagePreDownloadParallelism": -1}}}),
                "spec.updateStrategy.rollingUpdate.inPlaceUpdateStrategy.imagePreDownloadParallelism: Invalid value: -1: imagePreDownloadParallelism must be non-negative",
            ),
            (
                json!({"rollingUpdate": {"inPlaceUpdateStrategy": {"imagePreDownloadParallelism": 3, "imagePreDownloadTimeoutSeconds": -5, "imagePreDownloadMinUpdatedReadyPods": -1}}}),
                "[spec.updateStrategy.rollingUpdate.inPlaceUpdateStrategy.imagePreDownloadTimeoutSeconds: Invalid value: -5: must be greater than or equal to 0, spec.updateStrategy.rollingUpdate.inPlaceUpdateStrategy.imagePreDownloadMinUpdatedReadyPods: Invalid value: -1: must be greater than or equal to 0]",
            ),
        ];
        for (strategy, want) in rows {
            assert_eq!(errors(strategy.clone()), want, "{strategy}");
        }
    }
}
