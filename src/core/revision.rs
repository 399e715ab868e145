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
fn go_value(fields: &[crate::compat::gojson::Field], v: &impl serde::Serialize) -> Value {
    let mut out = String::new();
    gojson::go_struct(fields, &serde_json::to_value(v).unwrap_or(Value::Null), &mut out);
    serde_json::from_str(&out).unwrap_or(Value::Null)
}

/// A revision's data bytes for a template.
pub fn revision_data(template: &PodTemplateSpec) -> String {
    let mut t = go_value(POD_TEMPLATE_SPEC, template);
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
