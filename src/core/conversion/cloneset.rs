//! CloneSet v1alpha1 <-> v1beta1 on the JSON object (spec §1.1.4), as kruise HEAD's
//! `apis/apps/v1alpha1/cloneset_conversion.go`:
//! - `updateStrategy.type` ReCreate / InPlaceIfPossible / InPlaceOnly (or unset) <->
//!   `type: RollingUpdate` + `rollingUpdate.podUpdatePolicy`; OnDelete <-> OnDelete; the rolling
//!   parameters (partition, maxUnavailable, maxSurge, paused, priority, scatter, in-place) move
//!   under `rollingUpdate`;
//! - `scaleStrategy.disablePVCReuse` <-> `!enablePVCReuse` (each version's default is its zero);
//! - the `apps.kruise.io/image-predownload-*` annotations -> `inPlaceUpdateStrategy` fields, and
//!   the fields -> annotations on the way back (metadata is shared, so annotations stay);
//! - the `cloneset-scaling-exclude-preparing-delete: "true"` label -> `excludePreparingDelete`.
//!
//! Deliberate differences from kruise (each one keeps data kruise's conversion drops; v1alpha1
//! is the storage version, so a drop would lose what a v1beta1 user wrote):
//! - `excludePreparingDelete: true` becomes the label on the way to v1alpha1 (kruise drops it);
//! - under OnDelete the rolling parameters still move (kruise drops them going to v1beta1);
//! - an unknown `type`/`podUpdatePolicy` is carried as is, for validation to name (kruise maps
//!   it to ReCreate); an empty `inPlaceUpdateStrategy: {}` stays (kruise drops it);
//! - a v1alpha1 `inPlaceUpdateStrategy.imagePreDownload*` field without its annotation stays
//!   (kruise reads only the annotations).

use serde_json::{Map, Value};

use super::{child, meta_map, meta_value};
use crate::apis::cloneset::RECREATE;
use crate::apis::cloneset::v1beta1::{ON_DELETE, ROLLING_UPDATE};
use crate::apis::keys::{
    IMAGE_PREDOWNLOAD_MIN_UPDATED_READY_PODS, IMAGE_PREDOWNLOAD_PARALLELISM, IMAGE_PREDOWNLOAD_TIMEOUT_SECONDS,
    SCALING_EXCLUDE_PREPARING_DELETE,
};

/// The v1alpha1 `updateStrategy` fields that live under v1beta1's `rollingUpdate`.
const ROLLING: [&str; 7] = [
    "partition",
    "maxUnavailable",
    "maxSurge",
    "paused",
    "priorityStrategy",
    "scatterStrategy",
    "inPlaceUpdateStrategy",
];

/// The image pre-download annotations and the `inPlaceUpdateStrategy` field each one becomes,
/// with whether it is an int-or-string (parallelism) or an int32.
const PREDOWNLOAD: [(&str, &str, bool); 3] = [
    (IMAGE_PREDOWNLOAD_PARALLELISM, "imagePreDownloadParallelism", true),
    (IMAGE_PREDOWNLOAD_TIMEOUT_SECONDS, "imagePreDownloadTimeoutSeconds", false),
    (IMAGE_PREDOWNLOAD_MIN_UPDATED_READY_PODS, "imagePreDownloadMinUpdatedReadyPods", false),
];

/// An annotation's value as kruise parses it: `intstr.Parse` for parallelism (an int when it
/// parses as one), `strconv.ParseInt(_, 10, 32)` for the others (skipped when it does not).
fn parse_annotation(text: &str, int_or_string: bool) -> Option<Value> {
    match text.parse::<i32>() {
        Ok(n) => Some(Value::from(n)),
        Err(_) if int_or_string => Some(Value::String(text.to_string())),
        Err(_) => None,
    }
}

/// A field's value as its annotation: `IntOrString.String()` / `FormatInt`.
fn annotation_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// v1alpha1 -> v1beta1, in place (apiVersion is set by the caller).
pub fn to_v1beta1(obj: &mut Map<String, Value>) {
    let exclude = meta_value(obj, "labels", SCALING_EXCLUDE_PREPARING_DELETE) == Some("true");
    let predownload: Vec<(&str, Value)> = PREDOWNLOAD
        .iter()
        .filter_map(|(key, field, ios)| {
            let text = meta_value(obj, "annotations", key).filter(|t| !t.is_empty())?;
            Some((*field, parse_annotation(text, *ios)?))
        })
        .collect();
    let any_annotation =
        PREDOWNLOAD.iter().any(|(key, _, _)| meta_value(obj, "annotations", key).is_some_and(|t| !t.is_empty()));
    let Some(spec) = child(obj, "spec") else { return };
    if let Some(scale) = child(spec, "scaleStrategy") {
        let disable = scale.remove("disablePVCReuse").and_then(|v| v.as_bool()).unwrap_or(false);
        if !disable {
            scale.insert("enablePVCReuse".into(), Value::Bool(true));
        }
        if exclude {
            scale.insert("excludePreparingDelete".into(), Value::Bool(true));
        }
    }
    // `disablePVCReuse: true` alone becomes nothing (v1beta1's default).
    if spec.get("scaleStrategy").and_then(Value::as_object).is_some_and(Map::is_empty) {
        spec.remove("scaleStrategy");
    }
    let mut strategy = take_object(spec, "updateStrategy");
    let kind = strategy.remove("type");
    let mut rolling = Map::new();
    for key in ROLLING {
        if let Some(v) = strategy.remove(key) {
            rolling.insert(key.into(), v);
        }
    }
    if kind.as_ref().and_then(Value::as_str) == Some(ON_DELETE) {
        strategy.insert("type".into(), Value::from(ON_DELETE));
    } else {
        strategy.insert("type".into(), Value::from(ROLLING_UPDATE));
        let policy = match kind {
            None => Value::from(RECREATE),
            Some(Value::String(s)) if s.is_empty() => Value::from(RECREATE),
            Some(other) => other,
        };
        rolling.insert("podUpdatePolicy".into(), policy);
    }
    if any_annotation && let Some(in_place) = child(&mut rolling, "inPlaceUpdateStrategy") {
        for (field, value) in predownload {
            in_place.insert(field.into(), value);
        }
    }
    if !rolling.is_empty() {
        strategy.insert("rollingUpdate".into(), Value::Object(rolling));
    }
    spec.insert("updateStrategy".into(), Value::Object(strategy));
}

/// v1beta1 -> v1alpha1, in place (apiVersion is set by the caller).
pub fn to_v1alpha1(obj: &mut Map<String, Value>) {
    let mut exclude = false;
    let mut annotations: Vec<(&str, Value)> = Vec::new();
    {
        let Some(spec) = child(obj, "spec") else { return };
        if let Some(scale) = child(spec, "scaleStrategy") {
            let enable = scale.remove("enablePVCReuse").and_then(|v| v.as_bool()).unwrap_or(false);
            if !enable {
                scale.insert("disablePVCReuse".into(), Value::Bool(true));
            }
            exclude = scale.remove("excludePreparingDelete").and_then(|v| v.as_bool()).unwrap_or(false);
        }
        let mut strategy = take_object(spec, "updateStrategy");
        let kind = strategy.remove("type");
        let mut rolling = match strategy.remove("rollingUpdate") {
            Some(Value::Object(m)) => Some(m),
            _ => None,
        };
        let policy = rolling.as_mut().and_then(|r| r.remove("podUpdatePolicy"));
        let v1alpha1_type = if kind.as_ref().and_then(Value::as_str) == Some(ON_DELETE) {
            Value::from(ON_DELETE)
        } else {
            match policy {
                None => Value::from(RECREATE),
                Some(Value::String(s)) if s.is_empty() => Value::from(RECREATE),
                Some(other) => other,
            }
        };
        strategy.insert("type".into(), v1alpha1_type);
        if let Some(mut rolling) = rolling {
            if let Some(Value::Object(in_place)) = rolling.get_mut("inPlaceUpdateStrategy") {
                for (key, field, _) in PREDOWNLOAD {
                    if let Some(v) = in_place.remove(field) {
                        annotations.push((key, v));
                    }
                }
            }
            strategy.extend(rolling);
        }
        spec.insert("updateStrategy".into(), Value::Object(strategy));
    }
    if exclude && let Some(labels) = meta_map(obj, "labels") {
        labels.insert(SCALING_EXCLUDE_PREPARING_DELETE.into(), Value::from("true"));
    }
    for (key, value) in annotations {
        let ios = key == IMAGE_PREDOWNLOAD_PARALLELISM;
        // An annotation that already says this value is kept as written ("05" stays "05").
        let same = meta_value(obj, "annotations", key).and_then(|t| parse_annotation(t, ios)) == Some(value.clone());
        if !same && let Some(map) = meta_map(obj, "annotations") {
            map.insert(key.into(), Value::String(annotation_text(&value)));
        }
    }
}

fn take_object(map: &mut Map<String, Value>, key: &str) -> Map<String, Value> {
    match map.remove(key) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

#[cfg(test)]
#[path = "cloneset_tests.rs"]
mod tests;
