//! Many jobs' wishes for one NodeImage merged into one write (issue 29: write contention at
//! scale). kruise's `syncNodeImages` has every job read, change and update a NodeImage on its
//! own, retrying on conflict; with 50 jobs over 200 nodes most of those writes race for the same
//! objects and lose (409). Here one writer per NodeImage takes every job's pending wish
//! ([`Intent`]: the job and its synced pull secrets), applies them one after another to the
//! NodeImage as last read with [`desired_image_spec`] — the same per-job rule as before: each job
//! adds only its own owner reference and its secrets, and a job whose tag is already there asks
//! for nothing (change detection per tag) — and sends one JSON patch of the images that changed,
//! pinned to the resourceVersion it was computed from ([`merged_patch`]). A conflict means the
//! writer reads again and merges again; no job ever overwrites another's entry.

use std::collections::BTreeMap;

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, Patch, PatchOperation, ReplaceOperation};
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

use super::sync::desired_image_spec;
use crate::apis::imagepulljob::v1beta1::ImagePullJob;
use crate::apis::nodeimage::v1beta1::{ImageSpec, NodeImage, ReferenceObject};
use crate::compat::image::ImageError;

/// One job's wish for one NodeImage: its tag there, with its owner reference and secrets.
#[derive(Clone, Debug)]
pub struct Intent {
    pub job: std::sync::Arc<ImagePullJob>,
    pub secrets: Vec<ReferenceObject>,
}

/// What merging the intents on one NodeImage decided.
#[derive(Debug, Default, PartialEq)]
pub struct Merged {
    /// The patch to send, `None` when every intent is already satisfied.
    pub patch: Option<Patch>,
    /// Per intent (in the order given): whether it changed anything, or why it could not be
    /// applied (an image that does not parse; the planner has checked it already).
    pub outcomes: Vec<Result<bool, String>>,
}

fn pointer(tokens: &[&str]) -> PointerBuf {
    PointerBuf::from_tokens(tokens.iter().copied())
}

/// Applies every intent, in order, to `ni` and returns the one patch that makes the changes.
pub fn merge(ni: &NodeImage, intents: &[Intent], now: Timestamp) -> Merged {
    let mut working = ni.clone();
    let mut changed: BTreeMap<String, ImageSpec> = BTreeMap::new();
    let mut outcomes = Vec::with_capacity(intents.len());
    for i in intents {
        match desired_image_spec(&working, &i.job, &i.secrets, now) {
            Ok(Some((image, spec, _))) => {
                working.spec.images.insert(image.clone(), spec.clone());
                changed.insert(image, spec);
                outcomes.push(Ok(true));
            }
            Ok(None) => outcomes.push(Ok(false)),
            Err(e) => outcomes.push(Err(image_error(&i.job, &e))),
        }
    }
    // An image entry that ended as it started (cannot happen with the rules of
    // `desired_image_spec`, which only add) is not written.
    changed.retain(|image, spec| ni.spec.images.get(image) != Some(spec));
    let patch = (!changed.is_empty()).then(|| merged_patch(ni, &changed));
    Merged { patch, outcomes }
}

fn image_error(job: &ImagePullJob, e: &ImageError) -> String {
    format!("invalid image {}: {e}", job.spec.fields.image)
}

/// The patch that sets every `changed` image entry of `ni`, pinned to `ni`'s resourceVersion.
pub fn merged_patch(ni: &NodeImage, changed: &BTreeMap<String, ImageSpec>) -> Patch {
    let rv = ni.metadata.resource_version.clone().unwrap_or_default();
    let mut ops = vec![PatchOperation::Replace(ReplaceOperation {
        path: pointer(&["metadata", "resourceVersion"]),
        value: Value::String(rv),
    })];
    if ni.spec.images.is_empty() {
        // `images` may be absent from the stored object: add the whole map.
        let map = serde_json::to_value(changed).unwrap_or(Value::Null);
        ops.push(PatchOperation::Add(AddOperation { path: pointer(&["spec", "images"]), value: map }));
    } else {
        for (image, spec) in changed {
            let value = serde_json::to_value(spec).unwrap_or(Value::Null);
            ops.push(PatchOperation::Add(AddOperation { path: pointer(&["spec", "images", image]), value }));
        }
    }
    Patch(ops)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::core::imagepulljob::testkit::{at, job, node_image, tagged};
    use serde_json::json;

    fn apply(ni: &NodeImage, p: &Patch) -> NodeImage {
        let mut doc = serde_json::to_value(ni).unwrap();
        json_patch::patch(&mut doc, p).unwrap();
        serde_json::from_value(doc).unwrap()
    }

    fn intent(name: &str, image: &str) -> Intent {
        Intent { job: Arc::new(job(name, json!({"image": image}))), secrets: Vec::new() }
    }

    fn owners(ni: &NodeImage, image: &str, tag: &str) -> Vec<String> {
        let t = ni.spec.images[image].tags.iter().find(|t| t.tag == tag).unwrap();
        t.owner_references.iter().map(|r| r.name.clone().unwrap()).collect()
    }

    #[test]
    fn many_jobs_on_one_node_image_make_one_patch_keeping_every_entry() {
        let ni = tagged(node_image("n1", &[]), "other", "1", 2, &["uid-x"], Some(("Succeeded", 2)));
        let intents =
            vec![intent("a", "nginx:1"), intent("b", "nginx:1"), intent("c", "redis:7"), intent("d", "foo/bar:v2")];
        let m = merge(&ni, &intents, at(5));
        assert_eq!(m.outcomes, vec![Ok(true), Ok(true), Ok(true), Ok(true)]);
        let p = m.patch.unwrap();
        // Pin first, then one op per changed image.
        assert_eq!(p.0.len(), 4);
        assert!(serde_json::to_string(&p).unwrap().contains("/spec/images/foo~1bar"));
        let after = apply(&ni, &p);
        assert_eq!(owners(&after, "nginx", "1"), ["a", "b"]);
        assert_eq!(owners(&after, "redis", "7"), ["c"]);
        assert_eq!(owners(&after, "foo/bar", "v2"), ["d"]);
        assert_eq!(owners(&after, "other", "1"), ["x"], "another job's entry is left alone");
        // Replayed on the result: nothing more to write.
        let again = merge(&after, &intents, at(6));
        assert_eq!(again, Merged { patch: None, outcomes: vec![Ok(false); 4] });
    }

    #[test]
    fn satisfied_intents_cause_no_write_and_a_mix_writes_only_the_changed_image() {
        let ni = tagged(node_image("n1", &[]), "nginx", "1", 0, &["uid-a"], Some(("Pulling", 0)));
        let ni = tagged(ni, "redis", "7", 0, &["uid-c"], None);
        let m = merge(&ni, &[intent("a", "nginx:1")], at(1));
        assert_eq!(m, Merged { patch: None, outcomes: vec![Ok(false)] });
        let m = merge(&ni, &[intent("a", "nginx:1"), intent("c", "redis:8")], at(1));
        let p = m.patch.unwrap();
        assert_eq!(p.0.len(), 2, "the pin and the redis entry only");
        let after = apply(&ni, &p);
        assert_eq!(after.spec.images["redis"].tags.iter().map(|t| t.tag.as_str()).collect::<Vec<_>>(), ["7", "8"]);
        assert_eq!(after.spec.images["nginx"], ni.spec.images["nginx"]);
    }

    #[test]
    fn an_empty_node_image_gets_the_whole_map_and_the_pin_is_the_version_read() {
        let mut ni = node_image("n1", &[]);
        ni.metadata.resource_version = Some("42".into());
        let m = merge(&ni, &[intent("a", "nginx:1"), intent("b", "redis:7")], at(1));
        let p = m.patch.unwrap();
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v[0], json!({"op": "replace", "path": "/metadata/resourceVersion", "value": "42"}));
        assert_eq!(v[1]["path"], "/spec/images");
        // The stored object may have no `images` at all.
        let mut doc = serde_json::to_value(&ni).unwrap();
        doc["spec"].as_object_mut().unwrap().remove("images");
        json_patch::patch(&mut doc, &p).unwrap();
        let after: NodeImage = serde_json::from_value(doc).unwrap();
        assert_eq!(after.spec.images.len(), 2);
    }

    #[test]
    fn a_bad_image_fails_its_own_intent_only() {
        let ni = node_image("n1", &[]);
        let m = merge(&ni, &[intent("a", "UPPER:1"), intent("b", "nginx:1")], at(1));
        assert!(m.outcomes[0].is_err());
        assert_eq!(m.outcomes[1], Ok(true));
        assert_eq!(owners(&apply(&ni, &m.patch.unwrap()), "nginx", "1"), ["b"]);
    }
}
