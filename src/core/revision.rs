//! What ties pods to ControllerRevisions, for every workload controller that keeps a history
//! (CloneSet, Advanced StatefulSet, SidecarSet, Advanced DaemonSet; spec §3.1, §5.8, §6.2,
//! decision §11.6): the pod labels naming a pod's revision (`controller-revision-hash`, and its
//! short hash in `pod-template-hash`) with kruise's `EqualToRevisionHash`/`WriteRevisionHash`, the
//! revision data kruise stores for a pod template (`{"spec":{"template":{…,"$patch":"replace"}}}`,
//! every object's keys sorted, as kruise's `getPatch` re-encodes it through a map), the
//! volume-claim-template hash, the template a revision holds (`ApplyRevision`), and the planners'
//! [`Revision`] (an object with its exact data bytes). Naming, hashing, ordering and truncation of
//! revisions are in [`crate::core::history`].

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, PodTemplateSpec};
use serde_json::{Map, Value, json};

use crate::compat::gojson;
use crate::compat::gotypes::{PERSISTENT_VOLUME_CLAIM, POD_TEMPLATE_SPEC};
use crate::core::history;
use crate::core::pods;

/// Pod label naming the pod's revision.
pub const CONTROLLER_REVISION_HASH: &str = "controller-revision-hash";
/// Pod label holding the short hash of the pod's revision.
pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";

/// `GetShortHash`: the part after the last `-`.
pub fn short_hash(name: &str) -> &str {
    name.rsplit('-').next().unwrap_or(name)
}

/// `EqualToRevisionHash`: the pod's revision label is the revision name or has its short hash.
pub fn equal_to_revision_hash(pod: &Pod, revision: &str) -> bool {
    let label = pods::label(pod, CONTROLLER_REVISION_HASH).unwrap_or("");
    label == revision || short_hash(label) == short_hash(revision)
}

/// `WriteRevisionHash`.
pub fn write_revision_hash(pod: &mut Pod, revision: &str, short_hash_gate: bool) {
    let labels = pod.metadata.labels.get_or_insert_with(Default::default);
    let short = short_hash(revision).to_string();
    labels.insert(CONTROLLER_REVISION_HASH.into(), if short_hash_gate { short.clone() } else { revision.to_string() });
    labels.insert(POD_TEMPLATE_HASH.into(), short);
}

/// Go's encoding of one typed object through its struct table, re-read as a JSON value.
pub(crate) fn go_value(fields: &[crate::compat::gojson::Field], v: &impl serde::Serialize) -> Value {
    let mut out = String::new();
    gojson::go_struct(fields, &serde_json::to_value(v).unwrap_or(Value::Null), &mut out);
    serde_json::from_str(&out).unwrap_or(Value::Null)
}

/// Largest integer a float64 holds exactly.
const EXACT_F64: u64 = 1 << 53;

/// What Go's `map[string]interface{}` round trip does to a number: integers beyond 2^53 become
/// the nearest float64 (`9007199254740993` is written `9007199254740992`,
/// `9223372036854775807` as `9223372036854776000`).
pub(crate) fn through_float64(v: &mut Value) {
    match v {
        Value::Number(n)
            if n.as_i64().is_some_and(|i| i.unsigned_abs() > EXACT_F64)
                || n.as_u64().is_some_and(|u| u > EXACT_F64) =>
        {
            if let Some(f) = n.as_f64().and_then(serde_json::Number::from_f64) {
                *n = f;
            }
        }
        Value::Array(a) => a.iter_mut().for_each(through_float64),
        Value::Object(m) => m.values_mut().for_each(through_float64),
        _ => {}
    }
}

/// A revision's data bytes for a template: kruise's `getPatch` (CloneSet and Advanced
/// StatefulSet alike) encodes the workload, decodes it into a `map[string]interface{}` — keys
/// sorted, every number a float64 — and encodes that again.
pub fn revision_data(template: &PodTemplateSpec) -> String {
    let mut t = go_value(POD_TEMPLATE_SPEC, template);
    through_float64(&mut t);
    if let Value::Object(m) = &mut t {
        m.insert("$patch".into(), json!("replace"));
    }
    gojson::to_string(&json!({"spec": {"template": t}}))
}

/// kruise's volume-claim-template hash: FNV-1a over Go's `%#v` print of the JSON of the templates
/// (name and spec only, sorted by name); "" without templates.
pub fn vct_hash(templates: &[PersistentVolumeClaim]) -> String {
    if templates.is_empty() {
        return String::new();
    }
    let mut sorted: Vec<&PersistentVolumeClaim> = templates.iter().collect();
    sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let items: Vec<String> = sorted
        .iter()
        .map(|t| {
            let reduced = json!({"metadata": {"name": t.metadata.name}, "spec": t.spec});
            let mut out = String::new();
            gojson::go_struct(PERSISTENT_VOLUME_CLAIM, &reduced, &mut out);
            out
        })
        .collect();
    let bytes = format!("[{}]", items.join(","));
    let printed: Vec<String> = bytes.bytes().map(|b| b.to_string()).collect();
    history::fnv1a_32(format!("([]uint8)[{}]", printed.join(" ")).as_bytes()).to_string()
}

/// The template a revision stores (kruise's `ApplyRevision`: `$patch: replace` makes it the whole
/// template).
pub fn template_of(revision: &ControllerRevision) -> Result<PodTemplateSpec, String> {
    let name = revision.metadata.name.as_deref().unwrap_or("");
    let Some(data) = revision.data.as_ref().map(|d| &d.0) else {
        return Err(format!("revision {name} has no data"));
    };
    match data.get("spec").and_then(|s| s.get("template")) {
        None | Some(Value::Null) => Ok(PodTemplateSpec::default()),
        Some(Value::Object(t)) => {
            let t: Map<String, Value> =
                t.iter().filter(|(k, _)| *k != "$patch").map(|(k, v)| (k.clone(), v.clone())).collect();
            serde_json::from_value(Value::Object(t))
                .map_err(|e| format!("revision {name}: template does not decode: {e}"))
        }
        Some(other) => Err(format!("revision {name}: template is not an object: {other}")),
    }
}

/// A revision the planner uses, with its data bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct Revision {
    /// The object (for a revision to create, as it will be created).
    pub object: ControllerRevision,
    /// Its data bytes.
    pub data: String,
}

impl Revision {
    /// A revision as it exists, with its data bytes as Go would encode them.
    pub fn existing(object: &ControllerRevision) -> Revision {
        Revision { data: history::data_bytes(object), object: object.clone() }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        self.object.metadata.name.as_deref().unwrap_or("")
    }

    /// Its data as a JSON value (what the in-place classifier diffs).
    pub fn data_value(&self) -> Value {
        self.object.data.as_ref().map(|d| d.0.clone()).unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_passes_integers_through_float64_as_go_does() {
        let template: PodTemplateSpec = serde_json::from_value(json!({
            "spec": {"containers": [{"name": "c", "image": "i",
                "securityContext": {"runAsUser": 9007199254740993_i64}}],
                "activeDeadlineSeconds": 9223372036854775807_i64,
                "terminationGracePeriodSeconds": 9007199254740992_i64}
        }))
        .unwrap();
        let data = revision_data(&template);
        // Go: encoding/json -> map[string]interface{} (float64) -> encoding/json.
        assert!(data.contains(r#""runAsUser":9007199254740992"#), "{data}");
        assert!(data.contains(r#""activeDeadlineSeconds":9223372036854776000"#), "{data}");
        assert!(data.contains(r#""terminationGracePeriodSeconds":9007199254740992"#), "{data}");
        // Small integers are untouched.
        let small: PodTemplateSpec =
            serde_json::from_value(json!({"spec": {"containers": [], "activeDeadlineSeconds": 30}})).unwrap();
        assert!(revision_data(&small).contains(r#""activeDeadlineSeconds":30"#));
    }
}
