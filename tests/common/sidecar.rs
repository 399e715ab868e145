//! SidecarSet fixtures: SidecarSets and Namespaces as JSON, a pod CREATE through `/mutate-pod`,
//! and the containers and annotations as kruise writes them.

use kruise::webhook::request::ReviewRequest;
use kruise::webhook::{Context, Handler, Verdict};
use kube::core::admission::Operation;
use serde_json::{Value, json};

use super::run;

/// A v1alpha1 SidecarSet.
pub fn sidecarset(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet", "metadata": {"name": name}, "spec": spec})
}

/// A Namespace with labels.
pub fn namespace(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
}

/// Sends a pod CREATE to `/mutate-pod` in namespace `ns`.
pub fn mutate_pod(ctx: &Context, ns: &str, pod: &Value) -> Verdict {
    run(ctx, Handler::MutatePod, &pod_create(ns, pod))
}

/// A pod CREATE in namespace `ns`.
pub fn pod_create(ns: &str, pod: &Value) -> ReviewRequest {
    ReviewRequest::new(Operation::Create, "", "v1", "Pod", "pods").namespace(ns).object(pod.clone())
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
