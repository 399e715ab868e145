//! Helpers for SidecarSet tests: a cluster view from JSON objects, pod and SidecarSet reviews,
//! running a handler, applying its patch, and the objects as kruise writes them.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod cases;

use std::sync::Arc;

use kruise::cluster::files::Snapshot;
use kruise::core::features::FeatureGates;
use kruise::webhook::review::{Verdict, decode};
use kruise::webhook::{Context, Handler, handle};
use serde_json::{Value, json};

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
    Context { gates: FeatureGates::parse(gates).unwrap(), cluster: Arc::new(snapshot(objects)) }
}

/// A v1alpha1 SidecarSet.
pub fn sidecarset(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet", "metadata": {"name": name}, "spec": spec})
}

/// A Namespace with labels.
pub fn namespace(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
}

/// An AdmissionReview body for `object`.
pub fn review_json(
    operation: &str,
    resource: (&str, &str, &str),
    namespace: &str,
    object: &Value,
    old: Option<&Value>,
) -> Value {
    let (group, version, res) = resource;
    json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "00000000-0000-0000-0000-000000000001",
            "kind": {"group": group, "version": version, "kind": "X"},
            "resource": {"group": group, "version": version, "resource": res},
            "namespace": namespace, "name": object["metadata"]["name"].as_str().unwrap_or(""),
            "operation": operation, "userInfo": {"username": "test"},
            "object": object, "oldObject": old.cloned().unwrap_or(Value::Null)
        }
    })
}

/// Runs a handler on a review body.
pub fn run(ctx: &Context, handler: Handler, body: &Value) -> Verdict {
    let review = decode(&serde_json::to_vec(body).unwrap()).unwrap();
    handle(ctx, handler, &review).expect("handler exists")
}

/// Applies a verdict's patch to `object` with `json_patch::patch`.
pub fn apply(object: &Value, verdict: &Verdict) -> Value {
    let mut out = object.clone();
    if let Some(p) = &verdict.patch {
        json_patch::patch(&mut out, p).unwrap_or_else(|e| panic!("patch does not apply: {e}\n{p:?}"));
    }
    out
}

/// Sends a pod CREATE to `/mutate-pod` in namespace `ns`.
pub fn mutate_pod(ctx: &Context, ns: &str, pod: &Value) -> Verdict {
    run(ctx, Handler::MutatePod, &review_json("CREATE", ("", "v1", "pods"), ns, pod, None))
}

/// Replaces every non-null `updateTimestamp` in the hash annotations with `"T"`.
pub fn normalize_timestamps(pod: &mut Value) {
    let re = regex::Regex::new(r#""updateTimestamp":"[^"]*""#).unwrap();
    if let Some(a) = pod.get_mut("metadata").and_then(|m| m.get_mut("annotations")).and_then(Value::as_object_mut) {
        for key in ["kruise.io/sidecarset-hash", "kruise.io/sidecarset-hash-without-image"] {
            if let Some(Value::String(s)) = a.get_mut(key) {
                *s = re.replace_all(s, r#""updateTimestamp":"T""#).to_string();
            }
        }
    }
}

/// One entry of an expected hash annotation (timestamp `T`).
pub fn hash_entry(set: &str, hash: &str, list: &[&str], revision: Option<&str>) -> String {
    let list: Vec<String> = list.iter().map(|s| format!("\"{s}\"")).collect();
    let rev = revision.map(|r| format!(",\"controllerRevision\":\"{r}\"")).unwrap_or_default();
    format!(
        "\"{set}\":{{\"updateTimestamp\":\"T\",\"hash\":\"{hash}\",\"sidecarSetName\":\"{set}\",\"sidecarList\":[{}]{rev}}}",
        list.join(",")
    )
}

/// `{e1,e2}` of [`hash_entry`]s (given sorted by set name).
pub fn hash_map(entries: &[String]) -> String {
    format!("{{{}}}", entries.join(","))
}

/// The (hash, hash-without-image) the view stores for a SidecarSet.
pub fn stored_hashes(ctx: &Context, set: &str) -> (String, String) {
    let s = ctx.cluster.sidecarsets().into_iter().find(|s| s.metadata.name.as_deref() == Some(set)).unwrap();
    let a = s.metadata.annotations.clone().unwrap();
    (a["kruise.io/sidecarset-hash"].clone(), a["kruise.io/sidecarset-hash-without-image"].clone())
}

/// A sidecar container as injected: defaults of the SidecarSet webhook plus `env`.
pub fn injected(name: &str, image: &str, env: Value) -> Value {
    let policy = if image.contains(':') && !image.ends_with(":latest") { "IfNotPresent" } else { "Always" };
    json!({"name": name, "image": image, "imagePullPolicy": policy, "terminationMessagePath": "/dev/termination-log",
           "terminationMessagePolicy": "File", "env": env})
}

/// `IS_INJECTED=true`.
pub fn is_injected() -> Value {
    json!({"name": "IS_INJECTED", "value": "true"})
}
