//! The tag entry an ImagePullJob wants in a NodeImage, and which NodeImages get it this round
//! (kruise `imagepulljob_controller.go` `syncNodeImages`).
//!
//! Each job owns its own owner reference in a tag: a job whose tag is already there with other
//! owners appends its reference (raising the tag's `version`, which makes the daemon pull again,
//! only when the pull there failed or the job asks for `Always`; kruise always raises it), and nothing a job writes removes another job's reference (kruise #1517: the
//! NodeImage controller removes a reference only once its job is gone). A write is a JSON patch of
//! the one image entry, pinned to the NodeImage's resourceVersion (`replace
//! /metadata/resourceVersion` first), so two writers racing on one NodeImage get a 409 Conflict
//! and decide again on the new version instead of overwriting each other.
//!
//! `parallelism` is counted from the NodeImages themselves: a node is busy for the job while its
//! tag carries the job's uid and its status at that version is neither Succeeded nor Failed
//! ([`super::status`]), so a new tag counts as soon as it is written, whoever wrote it and
//! whenever the manager restarted; at most `parallelism − active` not-synced nodes (in name
//! order) get a write per round (kruise #1271, #2208).

use std::sync::Arc;

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, Patch, PatchOperation, ReplaceOperation};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

use super::status::Observed;
use super::{image_name_tag, owner_ref, parallelism, same_ref, tag_pull_policy};
use crate::apis::imagepulljob::v1beta1::ImagePullJob;
use crate::apis::nodeimage::ImageTagSpec;
use crate::apis::nodeimage::v1beta1::{ImageSpec, NodeImage, ReferenceObject};
use crate::compat::image::ImageError;

/// A write to one NodeImage's spec.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeImagePatch {
    /// The NodeImage (its Node's name).
    pub name: String,
    /// The resourceVersion the patch was computed from (the patch's first operation pins it).
    pub resource_version: String,
    /// The JSON patch to send.
    pub patch: Patch,
    /// Whether the write adds the job's owner reference (a pull starts) rather than only secrets.
    pub starts_pull: bool,
}

fn contains(list: &[ReferenceObject], r: &ReferenceObject) -> bool {
    list.iter().any(|o| o.namespace == r.namespace && o.name == r.name)
}

/// The image entry `job` wants in `ni`, or `None` when the NodeImage has it already (the job's
/// owner reference on the tag and every secret listed): kruise's per-NodeImage update closure.
pub fn desired_image_spec(
    ni: &NodeImage,
    job: &ImagePullJob,
    secrets: &[ReferenceObject],
    now: Timestamp,
) -> Result<Option<(String, ImageSpec, bool)>, ImageError> {
    let (image, tag) = image_name_tag(&job.spec.fields.image)?;
    let me = owner_ref(job);
    let node = ni.metadata.name.as_deref().unwrap_or("");
    let mut spec = ni.spec.images.get(&image).cloned().unwrap_or_default();
    spec.sandbox_config = job.spec.fields.sandbox_config.clone();
    let mut found = false;
    let mut starts_pull = false;
    if let Some(t) = spec.tags.iter_mut().find(|t| t.tag == tag) {
        found = true;
        if t.owner_references.iter().any(|r| same_ref(r, &me)) {
            if secrets.iter().all(|s| contains(&spec.pull_secrets, s)) {
                return Ok(None);
            }
        } else {
            // Another job's tag: this job joins it. kruise always raises the version (the daemon
            // pulls again); we do only when the pull at this version failed or this job asks
            // for `Always`: re-pulling an image that is there, or restarting a pull in progress,
            // would count as a pull again for the jobs already on the tag and take them past
            // their `parallelism`.
            let phase = super::status::tag_phase(ni, &image, &tag, t.version);
            let always = job.spec.fields.image_pull_policy == "Always";
            if always || !matches!(phase, Some(super::PHASE_SUCCEEDED) | Some(super::PHASE_PULLING)) {
                t.version += 1;
                t.created_at = Some(Time(now));
                t.image_pull_policy = job.spec.fields.image_pull_policy.clone();
                starts_pull = true;
            }
            t.owner_references.push(me.clone());
        }
    }
    for s in secrets {
        if !contains(&spec.pull_secrets, s) {
            spec.pull_secrets.push(s.clone());
        }
    }
    if !found {
        let reported = ni
            .status
            .as_ref()
            .and_then(|st| st.image_statuses.get(&image))
            .and_then(|st| st.tags.iter().find(|t| t.tag == tag))
            .map_or(-1, |t| t.version);
        let seed = format!("{}/{node}", job.metadata.uid.as_deref().unwrap_or(""));
        spec.tags.push(ImageTagSpec {
            tag: tag.clone(),
            version: reported + 1,
            pull_policy: Some(tag_pull_policy(job, &seed)),
            owner_references: vec![me],
            created_at: Some(Time(now)),
            image_pull_policy: job.spec.fields.image_pull_policy.clone(),
        });
        starts_pull = true;
    }
    // `SortSpecImageTags` (a stable sort by tag).
    spec.tags.sort_by(|a, b| a.tag.cmp(&b.tag));
    Ok(Some((image, spec, starts_pull)))
}

/// The JSON-pointer token of an image name (`/` and `~` escaped).
fn pointer(tokens: &[&str]) -> PointerBuf {
    PointerBuf::from_tokens(tokens.iter().copied())
}

/// The patch that sets `ni.spec.images[image] = spec`, pinned to `ni`'s resourceVersion.
pub fn image_patch(ni: &NodeImage, image: &str, spec: &ImageSpec) -> Patch {
    let rv = ni.metadata.resource_version.clone().unwrap_or_default();
    let value = serde_json::to_value(spec).unwrap_or(Value::Null);
    let mut ops = vec![PatchOperation::Replace(ReplaceOperation {
        path: pointer(&["metadata", "resourceVersion"]),
        value: Value::String(rv),
    })];
    if ni.spec.images.is_empty() {
        // `images` may be absent from the stored object: add the whole map.
        let map = serde_json::json!({ image: value });
        ops.push(PatchOperation::Add(AddOperation { path: pointer(&["spec", "images"]), value: map }));
    } else {
        ops.push(PatchOperation::Add(AddOperation { path: pointer(&["spec", "images", image]), value }));
    }
    Patch(ops)
}

/// The writes of this round: at most `parallelism − active` not-synced NodeImages, in name order
/// (kruise's `notSynced.List()[:parallelism]`); none once `parallelism` nodes are busy.
pub fn plan_writes(
    job: &ImagePullJob,
    observed: &Observed,
    targets: &[Arc<NodeImage>],
    secrets: &[ReferenceObject],
    now: Timestamp,
) -> Result<Vec<NodeImagePatch>, ImageError> {
    let slots = parallelism(job).saturating_sub(observed.status.active);
    let Ok(slots) = usize::try_from(slots) else { return Ok(Vec::new()) };
    let mut writes = Vec::new();
    for name in observed.not_synced.iter().take(slots) {
        let Ok(i) = targets.binary_search_by(|ni| ni.metadata.name.as_deref().unwrap_or("").cmp(name)) else {
            continue;
        };
        let ni = &targets[i];
        if let Some((image, spec, starts_pull)) = desired_image_spec(ni, job, secrets, now)? {
            writes.push(NodeImagePatch {
                name: name.clone(),
                resource_version: ni.metadata.resource_version.clone().unwrap_or_default(),
                patch: image_patch(ni, &image, &spec),
                starts_pull,
            });
        }
    }
    Ok(writes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::imagepulljob::status::calculate;
    use crate::core::imagepulljob::testkit::{at, job, node_image, tagged};
    use serde_json::json;

    fn apply(ni: &NodeImage, p: &Patch) -> NodeImage {
        let mut doc = serde_json::to_value(ni).unwrap();
        json_patch::patch(&mut doc, p).unwrap();
        serde_json::from_value(doc).unwrap()
    }

    #[test]
    fn a_new_tag_gets_the_next_version_owner_policy_and_creation_time() {
        let j = job(
            "j",
            json!({"image": "foo/bar:v2", "imagePullPolicy": "Always",
            "sandboxConfig": {"labels": {"a": "b"}}}),
        );
        // The daemon reports an old v2 pull at version 4 (its tag spec was dropped since).
        let mut ni = tagged(node_image("n1", &[]), "foo/bar", "v1", 0, &["uid-x"], None);
        ni.status.get_or_insert_default().image_statuses.entry("foo/bar".into()).or_default().tags.push(
            crate::apis::nodeimage::ImageTagStatus {
                tag: "v2".into(),
                phase: "Succeeded".into(),
                version: 4,
                ..Default::default()
            },
        );
        let (image, spec, starts) = desired_image_spec(&ni, &j, &[], at(7)).unwrap().unwrap();
        assert!(starts);
        assert_eq!(image, "foo/bar");
        assert_eq!(spec.tags.iter().map(|t| t.tag.as_str()).collect::<Vec<_>>(), ["v1", "v2"]);
        let t = &spec.tags[1];
        assert_eq!((t.version, t.image_pull_policy.as_str(), t.created_at.clone()), (5, "Always", Some(Time(at(7)))));
        assert_eq!(t.owner_references[0].uid.as_deref(), Some("uid-j"));
        assert_eq!(t.owner_references[0].api_version.as_deref(), Some("apps.kruise.io/v1beta1"));
        assert!(t.pull_policy.as_ref().unwrap().ttl_seconds_after_finished.is_some());
        assert_eq!(spec.sandbox_config.unwrap().labels["a"], "b");
        // The patch, applied, leaves the other tag alone; the image name's `/` is escaped.
        let p = image_patch(&ni, &image, &desired_image_spec(&ni, &j, &[], at(7)).unwrap().unwrap().1);
        assert!(serde_json::to_string(&p).unwrap().contains("/spec/images/foo~1bar"));
        let after = apply(&ni, &p);
        assert_eq!(after.spec.images["foo/bar"].tags.len(), 2);
        assert_eq!(after.spec.images["foo/bar"].tags[0].owner_references[0].uid.as_deref(), Some("uid-x"));
        assert_eq!(desired_image_spec(&after, &j, &[], at(8)).unwrap(), None, "converged: nothing to write");
    }

    /// kruise #1517: a second job on the same image joins the tag; neither loses its reference.
    #[test]
    fn a_second_job_on_the_same_tag_appends_its_reference_and_bumps_the_version() {
        let a = job("a", json!({"image": "nginx:1"}));
        let b = job("b", json!({"image": "nginx:1"}));
        let ni = node_image("n1", &[]);
        let (_, spec, _) = desired_image_spec(&ni, &a, &[], at(1)).unwrap().unwrap();
        let ni = apply(&ni, &image_patch(&ni, "nginx", &spec));
        assert_eq!(ni.spec.images["nginx"].tags[0].version, 0);
        let (_, spec, starts) = desired_image_spec(&ni, &b, &[], at(2)).unwrap().unwrap();
        assert!(starts);
        let ni = apply(&ni, &image_patch(&ni, "nginx", &spec));
        let t = &ni.spec.images["nginx"].tags[0];
        assert_eq!(t.version, 1);
        let owners: Vec<_> = t.owner_references.iter().map(|r| r.name.clone().unwrap()).collect();
        assert_eq!(owners, ["a", "b"]);
        assert_eq!(desired_image_spec(&ni, &a, &[], at(3)).unwrap(), None);
        assert_eq!(desired_image_spec(&ni, &b, &[], at(3)).unwrap(), None);
    }

    #[test]
    fn secrets_are_added_without_a_new_pull() {
        let j = job("j", json!({"image": "nginx:1"}));
        let ni = tagged(node_image("n1", &[]), "nginx", "1", 3, &["uid-j"], None);
        let s = ReferenceObject {
            namespace: "kruise-daemon-config".into(),
            name: "reg-abcdef".into(),
            mode: "batch".into(),
        };
        let (_, spec, starts) = desired_image_spec(&ni, &j, std::slice::from_ref(&s), at(1)).unwrap().unwrap();
        assert!(!starts);
        assert_eq!(spec.tags[0].version, 3, "the version stays: no new pull");
        assert_eq!(spec.pull_secrets, [s]);
    }

    #[test]
    fn parallelism_bounds_the_writes_of_a_round() {
        let uid = "uid-j";
        let targets: Vec<Arc<NodeImage>> = vec![
            Arc::new(tagged(node_image("n1", &[]), "nginx", "1", 0, &[uid], Some(("Pulling", 0)))),
            Arc::new(tagged(node_image("n2", &[]), "nginx", "1", 0, &[uid], Some(("Succeeded", 0)))),
            Arc::new(node_image("n3", &[])),
            Arc::new(node_image("n4", &[])),
            Arc::new(node_image("n5", &[])),
        ];
        let rows: Vec<(serde_json::Value, Vec<&str>)> = vec![
            (json!({"image": "nginx:1"}), vec![]),
            (json!({"image": "nginx:1", "parallelism": 2}), vec!["n3"]),
            (json!({"image": "nginx:1", "parallelism": 3}), vec!["n3", "n4"]),
            (json!({"image": "nginx:1", "parallelism": 10}), vec!["n3", "n4", "n5"]),
            (json!({"image": "nginx:1", "parallelism": 0}), vec![]),
        ];
        for (spec, want) in rows {
            let j = job("j", spec.clone());
            let o = calculate(&j, &targets, &[], at(1)).unwrap();
            let w = plan_writes(&j, &o, &targets, &[], at(1)).unwrap();
            assert_eq!(w.iter().map(|w| w.name.as_str()).collect::<Vec<_>>(), want, "{spec}");
            assert!(w.iter().all(|w| w.starts_pull && w.resource_version == "1"));
        }
    }
}
