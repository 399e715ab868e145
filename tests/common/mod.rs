//! What the integration tests share, one home per helper:
//! - [`app`]: the router in-process (`router().oneshot()`): where handler answers are tested;
//! - [`tls`]: a real server on 127.0.0.1:0 with fresh certificates and a verifying TLS client,
//!   for the transport contract only;
//! - [`objects`]: typed builders of the objects tests send (`CloneSetBuilder::new("web")…`);
//! - [`sidecar`], [`cases`]: SidecarSet fixtures and the injection table runner;
//! - here: running a handler on a review, and applying a patch (the one patch-apply helper).
//!
//! AdmissionReview bodies come from the library's one builder, [`kruise::webhook::request`].
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod app;
pub mod cases;
pub mod objects;
pub mod sidecar;
mod tls;

use std::path::Path;
use std::sync::Arc;

use json_patch::Patch;
use kruise::cluster::files::Snapshot;
use kruise::core::features::FeatureGates;
use kruise::webhook::request::ReviewRequest;
use kruise::webhook::{Context, Handler, Verdict, handle};
use serde_json::Value;
pub use tls::*;

/// A cluster view holding `objects`.
pub fn snapshot(objects: &[Value]) -> Snapshot {
    let mut snap = Snapshot::default();
    for o in objects {
        assert!(snap.insert(o.clone()).unwrap(), "kind not held: {o}");
    }
    snap
}

/// A context over `objects` with `gates` (`Name=bool,...`).
pub fn context(objects: &[Value], gates: &str) -> Context {
    Context::with_gates(FeatureGates::parse(gates).unwrap(), Arc::new(snapshot(objects)))
}

/// Runs a handler on a review, as the router does after decoding the body.
pub fn run(ctx: &Context, handler: Handler, review: &ReviewRequest) -> Verdict {
    run_body(ctx, handler, &review.to_json())
}

/// Runs a handler on a review body (an example file, or a body edited by hand).
pub fn run_body(ctx: &Context, handler: Handler, body: &Value) -> Verdict {
    let review = kruise::webhook::review::decode(&serde_json::to_vec(body).unwrap()).unwrap();
    handle(ctx, handler, &review).expect("handler exists")
}

/// `object` with `patch` applied by `json_patch::patch` (unchanged for `None`); a patch that does
/// not apply fails the test, showing the patch.
pub fn apply(object: &Value, patch: Option<&Patch>) -> Value {
    let mut out = object.clone();
    if let Some(p) = patch {
        json_patch::patch(&mut out, p).unwrap_or_else(|e| panic!("patch does not apply: {e}\n{p:?}"));
    }
    out
}

/// The patch of an AdmissionReview `response` (base64 of a JSONPatch), if any.
pub fn response_patch(response: &Value) -> Option<Patch> {
    use base64::Engine;
    let p = response["patch"].as_str()?;
    assert_eq!(response["patchType"], "JSONPatch");
    let bytes = base64::engine::general_purpose::STANDARD.decode(p).expect("base64");
    Some(serde_json::from_slice(&bytes).expect("patch"))
}

/// Reads an example review from `examples/reviews`.
pub fn example_review(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/reviews").join(name);
    serde_json::from_slice(&std::fs::read(&path).expect("example")).expect("example JSON")
}

/// A review body with its envelope's `apiVersion` set (`admission.k8s.io/v1` or `v1beta1`).
pub fn review_body(mut review: Value, api_version: &str) -> Vec<u8> {
    review["apiVersion"] = api_version.into();
    serde_json::to_vec(&review).unwrap()
}

/// `v` with the JSON pointer `pointer` set to `value` (a missing last key is added to its
/// existing parent object).
pub fn set(mut v: Value, pointer: &str, value: Value) -> Value {
    if let Some(slot) = v.pointer_mut(pointer) {
        *slot = value;
        return v;
    }
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    match v.pointer_mut(parent).and_then(Value::as_object_mut) {
        Some(map) => map.insert(key.to_string(), value),
        None => panic!("no {parent} in the object"),
    };
    v
}

/// Applies `edit` to a copy of `v`.
pub fn with(v: &Value, edit: impl FnOnce(&mut Value)) -> Value {
    let mut out = v.clone();
    edit(&mut out);
    out
}
