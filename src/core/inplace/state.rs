//! The annotations an in-place update keeps on a pod (spec §3.3, §3.4), byte-compatible with
//! kruise so that pods half-way through an update survive a switch between the Go manager and
//! this one in either direction:
//! - `apps.kruise.io/inplace-update-state`: [`InPlaceUpdateState`], kruise's
//!   `appspub.InPlaceUpdateState` (old key `inplace-update-state` still read);
//! - `apps.kruise.io/inplace-update-grace`: [`GraceSpec`], kruise's `UpdateSpec` stored while the
//!   grace period runs (old key `inplace-update-grace` still read and removed);
//! - `apps.kruise.io/runtime-containers-meta`: [`RuntimeContainerMetaSet`], written by
//!   kruise-daemon, read to tell whether containers were really recreated.
//!
//! Both written annotations are encoded as Go's `json.Marshal` writes the Go structs (field
//! order, `omitempty`, `null` for nil maps), through tables like those of
//! [`crate::compat::gotypes`].

use std::collections::BTreeMap;

use base64::Engine;
use k8s_openapi::api::core::v1::{Pod, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::classify::UpdateSpec;
use crate::apis::keys::{IN_PLACE_UPDATE_GRACE, IN_PLACE_UPDATE_STATE};
use crate::compat::gojson::{self, Field, Go, f, o, p};
use crate::compat::gotypes::{OBJECT_META, POD_TEMPLATE_SPEC, RESOURCE_REQUIREMENTS, STRS};
use crate::core::pods;

/// The pre-`apps.kruise.io/` key of the state annotation, still read.
pub const IN_PLACE_UPDATE_STATE_OLD: &str = "inplace-update-state";
/// The pre-`apps.kruise.io/` key of the grace annotation, still read and removed.
pub const IN_PLACE_UPDATE_GRACE_OLD: &str = "inplace-update-grace";
/// Annotation kruise-daemon writes with what the runtime runs.
pub const RUNTIME_CONTAINERS_META: &str = "apps.kruise.io/runtime-containers-meta";

/// `appspub.InPlaceUpdateContainerStatus`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerStatusRecord {
    /// The container's imageID when the update started.
    #[serde(default, rename = "imageID")]
    pub image_id: String,
}

/// `appspub.InPlaceUpdatePreCheckBeforeNext`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PreCheckBeforeNext {
    /// Containers that must be ready before the next batch starts.
    #[serde(default)]
    pub containers_required_ready: Vec<String>,
}

/// `appspub.InPlaceUpdateContainerBatch`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerBatch {
    /// When the batch was applied.
    #[serde(default)]
    pub timestamp: Option<Time>,
    /// Its containers, sorted.
    #[serde(default)]
    pub containers: Vec<String>,
}

/// `appspub.InPlaceUpdateState`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InPlaceUpdateState {
    /// The revision the pod is updated to.
    #[serde(default)]
    pub revision: String,
    /// When the update started.
    #[serde(default)]
    pub update_timestamp: Option<Time>,
    /// imageIDs before the update, per container (`None` is Go's nil map, written `null`).
    #[serde(default)]
    pub last_container_statuses: Option<BTreeMap<String, ContainerStatusRecord>>,
    /// Env-from-metadata changed.
    #[serde(default)]
    pub update_env_from_metadata: bool,
    /// Resources changed.
    #[serde(default)]
    pub update_resources: bool,
    /// Images changed.
    #[serde(default)]
    pub update_images: bool,
    /// Images of the next (lower priority) batch.
    #[serde(default)]
    pub next_container_images: BTreeMap<String, String>,
    /// Env-referenced metadata of the next batch.
    #[serde(default)]
    pub next_container_ref_metadata: BTreeMap<String, ObjectMeta>,
    /// Resources of the next batch.
    #[serde(default)]
    pub next_container_resources: BTreeMap<String, ResourceRequirements>,
    /// What must be ready before the next batch.
    #[serde(default)]
    pub pre_check_before_next: Option<PreCheckBeforeNext>,
    /// Every batch applied so far.
    #[serde(default)]
    pub container_batches_record: Vec<ContainerBatch>,
}

impl InPlaceUpdateState {
    /// Whether a later batch is still to be applied.
    pub fn has_next_batch(&self) -> bool {
        !self.next_container_images.is_empty()
            || !self.next_container_ref_metadata.is_empty()
            || !self.next_container_resources.is_empty()
    }
}

const CONTAINER_STATUS_RECORD: &[Field] = &[o("imageID", Go::Str)];
const PRE_CHECK: &[Field] = &[o("containersRequiredReady", STRS)];
const BATCH: &[Field] = &[f("timestamp", Go::Time), f("containers", STRS)];
const STATE: &[Field] = &[
    f("revision", Go::Str),
    f("updateTimestamp", Go::Time),
    f("lastContainerStatuses", Go::Map(&Go::Struct(CONTAINER_STATUS_RECORD))),
    o("updateEnvFromMetadata", Go::Bool),
    o("updateResources", Go::Bool),
    o("updateImages", Go::Bool),
    o("nextContainerImages", Go::StrMap),
    o("nextContainerRefMetadata", Go::Map(&Go::Struct(OBJECT_META))),
    o("nextContainerResources", Go::Map(&Go::Struct(RESOURCE_REQUIREMENTS))),
    p("preCheckBeforeNext", Go::Struct(PRE_CHECK)),
    o("containerBatchesRecord", Go::List(&Go::Struct(BATCH))),
];

/// kruise's `UpdateSpec` as stored in the grace annotation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GraceSpec {
    /// Target revision.
    #[serde(default)]
    pub revision: String,
    /// Container name to new image.
    #[serde(default)]
    pub container_images: BTreeMap<String, String>,
    /// Env-referenced metadata per container.
    #[serde(default)]
    pub container_ref_metadata: BTreeMap<String, ObjectMeta>,
    /// New resources per container.
    #[serde(default)]
    pub container_resources: BTreeMap<String, ResourceRequirements>,
    /// The metadata patch, base64 of its JSON bytes (Go's `[]byte` encoding).
    #[serde(default)]
    pub meta_data_patch: Option<String>,
    /// Env-from-metadata changed.
    #[serde(default)]
    pub update_env_from_metadata: bool,
    /// The grace period.
    #[serde(default)]
    pub grace_seconds: i32,
}

const GRACE_SPEC: &[Field] = &[
    f("revision", Go::Str),
    o("containerImages", Go::StrMap),
    o("containerRefMetadata", Go::Map(&Go::Struct(OBJECT_META))),
    o("containerResources", Go::Map(&Go::Struct(RESOURCE_REQUIREMENTS))),
    o("metaDataPatch", Go::Str),
    o("updateEnvFromMetadata", Go::Bool),
    o("graceSeconds", Go::Int),
    p("oldTemplate", Go::Struct(POD_TEMPLATE_SPEC)),
    p("newTemplate", Go::Struct(POD_TEMPLATE_SPEC)),
];

impl GraceSpec {
    /// The stored form of a classifier result for `revision`.
    pub fn new(spec: &UpdateSpec, revision: &str, grace_seconds: i32) -> GraceSpec {
        GraceSpec {
            revision: revision.to_string(),
            container_images: spec.container_images.clone(),
            container_ref_metadata: spec.container_ref_metadata.clone(),
            container_resources: spec.container_resources.clone(),
            meta_data_patch: spec
                .meta_data_patch
                .as_ref()
                .map(|p| base64::engine::general_purpose::STANDARD.encode(gojson::to_string(p))),
            update_env_from_metadata: spec.update_env_from_metadata,
            grace_seconds,
        }
    }

    /// The classifier result it stores (`Err` when the metadata patch is not base64 JSON).
    pub fn update_spec(&self) -> Result<UpdateSpec, String> {
        let meta_data_patch = match &self.meta_data_patch {
            None => None,
            Some(b64) => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .map_err(|e| format!("metaDataPatch is not base64: {e}"))?;
                Some(serde_json::from_slice(&bytes).map_err(|e| format!("metaDataPatch is not JSON: {e}"))?)
            }
        };
        Ok(UpdateSpec {
            container_images: self.container_images.clone(),
            container_resources: self.container_resources.clone(),
            container_ref_metadata: self.container_ref_metadata.clone(),
            meta_data_patch,
            update_env_from_metadata: self.update_env_from_metadata,
        })
    }
}

/// kruise-daemon's `RuntimeContainerMetaSet`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeContainerMetaSet {
    /// One entry per container the runtime runs.
    #[serde(default)]
    pub containers: Vec<RuntimeContainerMeta>,
}

/// One container of [`RuntimeContainerMetaSet`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeContainerMeta {
    /// Container name.
    #[serde(default)]
    pub name: String,
    /// Runtime container id.
    #[serde(default, rename = "containerID")]
    pub container_id: String,
    /// The kubelet's restart count when the daemon first saw the container.
    #[serde(default)]
    pub restart_count: i32,
    /// Hashes of what the container was started from.
    #[serde(default)]
    pub hashes: RuntimeContainerHashes,
}

/// The hashes of [`RuntimeContainerMeta`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeContainerHashes {
    /// Hash of the container spec (kubelet's `HashContainer`).
    #[serde(default)]
    pub plain_hash: u64,
    /// Hash of the env vars read from metadata.
    #[serde(default)]
    pub extracted_env_from_metadata_hash: u64,
}

fn go_encode<T: Serialize>(fields: &[Field], v: &T) -> String {
    let value = serde_json::to_value(v).unwrap_or(Value::Null);
    let mut out = String::new();
    gojson::go_struct(fields, &value, &mut out);
    out
}

/// The state annotation's text, as kruise writes it.
pub fn encode_state(state: &InPlaceUpdateState) -> String {
    go_encode(STATE, state)
}

/// The grace annotation's text, as kruise writes it.
pub fn encode_grace(spec: &GraceSpec) -> String {
    go_encode(GRACE_SPEC, spec)
}

fn annotation<'a>(pod: &'a Pod, key: &str, old_key: &str) -> Option<&'a str> {
    let a = pods::annotations(pod);
    a.get(key).or_else(|| a.get(old_key)).map(String::as_str)
}

/// The raw state annotation (new key first, then the old one).
pub fn state_text(pod: &Pod) -> Option<&str> {
    annotation(pod, IN_PLACE_UPDATE_STATE, IN_PLACE_UPDATE_STATE_OLD)
}

/// The raw grace annotation (new key first, then the old one).
pub fn grace_text(pod: &Pod) -> Option<&str> {
    annotation(pod, IN_PLACE_UPDATE_GRACE, IN_PLACE_UPDATE_GRACE_OLD)
}

/// The decoded state annotation: `None` when absent, `Err` when it is not kruise's JSON.
pub fn read_state(pod: &Pod) -> Option<Result<InPlaceUpdateState, String>> {
    state_text(pod)
        .map(|t| serde_json::from_str(t).map_err(|e| format!("annotation {IN_PLACE_UPDATE_STATE} is not valid: {e}")))
}

/// The decoded grace annotation.
pub fn read_grace(pod: &Pod) -> Option<Result<GraceSpec, String>> {
    grace_text(pod)
        .map(|t| serde_json::from_str(t).map_err(|e| format!("annotation {IN_PLACE_UPDATE_GRACE} is not valid: {e}")))
}

/// The decoded runtime meta (`Ok(None)` when kruise-daemon has not written it).
pub fn read_runtime_meta(pod: &Pod) -> Result<Option<RuntimeContainerMetaSet>, String> {
    match pods::annotations(pod).get(RUNTIME_CONTAINERS_META) {
        None => Ok(None),
        Some(t) => serde_json::from_str(t)
            .map(Some)
            .map_err(|e| format!("annotation {RUNTIME_CONTAINERS_META} is not valid: {e}")),
    }
}

/// Write the state annotation (and drop the old key).
pub fn write_state(pod: &mut Pod, state: &InPlaceUpdateState) {
    let a = pod.metadata.annotations.get_or_insert_with(Default::default);
    a.insert(IN_PLACE_UPDATE_STATE.into(), encode_state(state));
    a.remove(IN_PLACE_UPDATE_STATE_OLD);
}

/// `RemoveInPlaceUpdateGrace`: both keys.
pub fn remove_grace(pod: &mut Pod) {
    if let Some(a) = pod.metadata.annotations.as_mut() {
        a.remove(IN_PLACE_UPDATE_GRACE);
        a.remove(IN_PLACE_UPDATE_GRACE_OLD);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::pods::test_pods::at;

    /// The exact annotations of kruise's `TestUpdate` rows "inplace update" and "inplace update
    /// with grace period" (cloneset_update_test.go).
    #[test]
    fn state_and_grace_bytes_match_kruise() {
        let now = Some(Time(at(1_700_000_000)));
        let state = InPlaceUpdateState {
            revision: "rev_new".into(),
            update_timestamp: now.clone(),
            update_images: true,
            last_container_statuses: Some(
                [("c1".to_string(), ContainerStatusRecord { image_id: "image-id-xyz".into() })].into(),
            ),
            container_batches_record: vec![ContainerBatch { timestamp: now.clone(), containers: vec!["c1".into()] }],
            ..Default::default()
        };
        assert_eq!(
            encode_state(&state),
            r#"{"revision":"rev_new","updateTimestamp":"2023-11-14T22:13:20Z","lastContainerStatuses":{"c1":{"imageID":"image-id-xyz"}},"updateImages":true,"containerBatchesRecord":[{"timestamp":"2023-11-14T22:13:20Z","containers":["c1"]}]}"#
        );
        let grace_state = InPlaceUpdateState {
            revision: "rev_new".into(),
            update_timestamp: now,
            update_images: true,
            ..Default::default()
        };
        assert_eq!(
            encode_state(&grace_state),
            r#"{"revision":"rev_new","updateTimestamp":"2023-11-14T22:13:20Z","lastContainerStatuses":null,"updateImages":true}"#
        );
        let spec = UpdateSpec { container_images: [("c1".into(), "foo2".into())].into(), ..Default::default() };
        let grace = GraceSpec::new(&spec, "rev_new", 3630);
        assert_eq!(
            encode_grace(&grace),
            r#"{"revision":"rev_new","containerImages":{"c1":"foo2"},"graceSeconds":3630}"#
        );
        let back: GraceSpec = serde_json::from_str(&encode_grace(&grace)).unwrap();
        assert_eq!(back.update_spec().unwrap(), spec);
    }

    #[test]
    fn next_batches_and_ref_metadata_are_go_shaped() {
        let state = InPlaceUpdateState {
            revision: "r".into(),
            next_container_images: [("c2".into(), "img<2>".into())].into(),
            next_container_ref_metadata: [(
                "c2".into(),
                ObjectMeta { labels: Some([("k".into(), "v".into())].into()), ..Default::default() },
            )]
            .into(),
            pre_check_before_next: Some(PreCheckBeforeNext { containers_required_ready: vec!["c1".into()] }),
            ..Default::default()
        };
        assert_eq!(
            encode_state(&state),
            r#"{"revision":"r","updateTimestamp":null,"lastContainerStatuses":null,"nextContainerImages":{"c2":"img\u003c2\u003e"},"nextContainerRefMetadata":{"c2":{"creationTimestamp":null,"labels":{"k":"v"}}},"preCheckBeforeNext":{"containersRequiredReady":["c1"]}}"#
        );
        let back: InPlaceUpdateState = serde_json::from_str(&encode_state(&state)).unwrap();
        assert_eq!(back, state);
    }

    #[test]
    fn metadata_patch_is_base64_of_go_json() {
        let spec = UpdateSpec {
            meta_data_patch: Some(serde_json::json!({"metadata": {"labels": {"b": "2", "a": null}}})),
            ..Default::default()
        };
        let grace = GraceSpec::new(&spec, "r", 5);
        let text = encode_grace(&grace);
        let b64 = base64::engine::general_purpose::STANDARD.encode(r#"{"metadata":{"labels":{"a":null,"b":"2"}}}"#);
        assert_eq!(text, format!(r#"{{"revision":"r","metaDataPatch":"{b64}","graceSeconds":5}}"#));
        let back: GraceSpec = serde_json::from_str(&text).unwrap();
        assert_eq!(back.update_spec().unwrap(), spec);
        let bad = GraceSpec { meta_data_patch: Some("%%%".into()), ..Default::default() };
        assert!(bad.update_spec().is_err());
    }

    #[test]
    fn old_keys_are_read() {
        let mut pod = Pod::default();
        pod.metadata.annotations =
            Some([(IN_PLACE_UPDATE_STATE_OLD.to_string(), r#"{"revision":"x"}"#.to_string())].into());
        assert_eq!(read_state(&pod).unwrap().unwrap().revision, "x");
        assert!(read_grace(&pod).is_none());
        pod.metadata.annotations.as_mut().unwrap().insert(IN_PLACE_UPDATE_GRACE_OLD.into(), "{".into());
        assert!(read_grace(&pod).unwrap().is_err());
        remove_grace(&mut pod);
        assert!(read_grace(&pod).is_none());
        write_state(&mut pod, &InPlaceUpdateState::default());
        assert!(!pods::annotations(&pod).contains_key(IN_PLACE_UPDATE_STATE_OLD));
    }
}
