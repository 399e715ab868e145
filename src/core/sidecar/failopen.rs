//! Fail-open visibility (issue 10 item 6, openkruise/charts#54): which SidecarSets a pod should
//! carry but does not. A pod created while no webhook replica answered (under
//! `failurePolicy: Ignore`) misses its sidecars silently; the leader reports such pods.
//!
//! A set counts as missing from a pod when the set injects (not paused), matches the pod (namespace
//! scope, namespace selector, pod selector: spec §4.2), existed well before the pod was created
//! (by more than [`GRACE`], so a pod admitted while the view had not yet seen a new set is not
//! blamed), and the pod's `kruise.io/sidecarset-hash` annotation does not name it. Pods being
//! deleted, and pods of namespaces the pod webhook never intercepts (labelled
//! `control-plane: openkruise`, and `kube-system`), are never reported.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::core::v1::Pod;

use super::matching::pod_matches;
use crate::apis::SidecarSet;
use crate::apis::keys::SIDECARSET_HASH;

/// How much older than a pod a set must be for its absence to count.
pub const GRACE: Duration = Duration::from_secs(5);

/// The names of the sets `pod` (of `namespace`, whose labels are `namespace_labels`) should carry
/// and does not, in `candidates` order.
pub fn missing_sets(
    pod: &Pod,
    namespace: &str,
    namespace_labels: &BTreeMap<String, String>,
    candidates: &[Arc<SidecarSet>],
) -> Vec<String> {
    if pod.metadata.deletion_timestamp.is_some() || !intercepted(namespace, namespace_labels) {
        return Vec::new();
    }
    let Some(created) = pod.metadata.creation_timestamp.as_ref().map(|t| SystemTime::from(t.0)) else {
        return Vec::new();
    };
    let injected: BTreeMap<String, serde_json::Value> = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(SIDECARSET_HASH))
        .and_then(|h| serde_json::from_str(h).ok())
        .unwrap_or_default();
    candidates
        .iter()
        .filter(|set| !set.spec.injection_strategy.paused)
        .filter(|set| {
            let set_created = set.metadata.creation_timestamp.as_ref().map(|t| SystemTime::from(t.0));
            set_created.is_some_and(|t| t + GRACE < created)
        })
        .filter(|set| pod_matches(pod, namespace, namespace_labels, set).unwrap_or(false))
        .filter_map(|set| set.metadata.name.clone())
        .filter(|name| !injected.contains_key(name))
        .collect()
}

/// Whether the pod webhook intercepts pods of this namespace (its `namespaceSelector`).
fn intercepted(namespace: &str, labels: &BTreeMap<String, String>) -> bool {
    namespace != "kube-system" && labels.get("control-plane").map(String::as_str) != Some("openkruise")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    const T0: &str = "2026-01-01T00:00:00Z";
    const LATER: &str = "2026-01-01T00:01:00Z";
    const SOON: &str = "2026-01-01T00:00:03Z";

    fn set(name: &str, created: &str, extra: serde_json::Value) -> Arc<SidecarSet> {
        let mut v = json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet",
            "metadata": {"name": name, "creationTimestamp": created},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "containers": [{"name": "c", "image": "i"}]}
        });
        json_patch::merge(&mut v, &extra);
        Arc::new(serde_json::from_value(v).unwrap())
    }

    fn pod(created: &str, extra: serde_json::Value) -> Pod {
        let mut v = json!({"metadata": {"name": "p", "namespace": "team", "creationTimestamp": created,
                                        "labels": {"app": "web"}}});
        json_patch::merge(&mut v, &extra);
        serde_json::from_value(v).unwrap()
    }

    /// Name, pod, its namespace and the namespace's labels, the candidate sets, the sets missing.
    type Row = (&'static str, Pod, &'static str, BTreeMap<String, String>, Vec<Arc<SidecarSet>>, Vec<&'static str>);

    #[test]
    fn table() {
        let injected = json!({"metadata": {"annotations": {SIDECARSET_HASH: r#"{"log":{"hash":"x"}}"#}}});
        let rows: Vec<Row> = vec![
            (
                "matched and not injected",
                pod(LATER, json!({})),
                "team",
                BTreeMap::new(),
                vec![set("log", T0, json!({}))],
                vec!["log"],
            ),
            (
                "injected",
                pod(LATER, injected.clone()),
                "team",
                BTreeMap::new(),
                vec![set("log", T0, json!({}))],
                vec![],
            ),
            (
                "injected by one set, missing the other",
                pod(LATER, injected),
                "team",
                BTreeMap::new(),
                vec![set("log", T0, json!({})), set("mesh", T0, json!({}))],
                vec!["mesh"],
            ),
            (
                "selector does not match",
                pod(LATER, json!({"metadata": {"labels": {"app": "db"}}})),
                "team",
                BTreeMap::new(),
                vec![set("log", T0, json!({}))],
                vec![],
            ),
            (
                "set scoped to another namespace",
                pod(LATER, json!({})),
                "team",
                BTreeMap::new(),
                vec![set("log", T0, json!({"spec": {"namespace": "other"}}))],
                vec![],
            ),
            (
                "namespace selector does not match",
                pod(LATER, json!({})),
                "team",
                BTreeMap::new(),
                vec![set("log", T0, json!({"spec": {"namespaceSelector": {"matchLabels": {"mesh": "on"}}}}))],
                vec![],
            ),
            (
                "namespace selector matches",
                pod(LATER, json!({})),
                "team",
                BTreeMap::from([("mesh".into(), "on".into())]),
                vec![set("log", T0, json!({"spec": {"namespaceSelector": {"matchLabels": {"mesh": "on"}}}}))],
                vec!["log"],
            ),
            (
                "injection paused",
                pod(LATER, json!({})),
                "team",
                BTreeMap::new(),
                vec![set("log", T0, json!({"spec": {"injectionStrategy": {"paused": true}}}))],
                vec![],
            ),
            (
                "pod older than the set",
                pod(T0, json!({})),
                "team",
                BTreeMap::new(),
                vec![set("log", LATER, json!({}))],
                vec![],
            ),
            (
                "pod created within the grace period",
                pod(SOON, json!({})),
                "team",
                BTreeMap::new(),
                vec![set("log", T0, json!({}))],
                vec![],
            ),
            (
                "pod being deleted",
                pod(LATER, json!({"metadata": {"deletionTimestamp": LATER}})),
                "team",
                BTreeMap::new(),
                vec![set("log", T0, json!({}))],
                vec![],
            ),
            (
                "kruise's own namespace is never intercepted",
                pod(LATER, json!({})),
                "kruise-system",
                BTreeMap::from([("control-plane".into(), "openkruise".into())]),
                vec![set("log", T0, json!({}))],
                vec![],
            ),
            (
                "kube-system is never intercepted",
                pod(LATER, json!({})),
                "kube-system",
                BTreeMap::new(),
                vec![set("log", T0, json!({}))],
                vec![],
            ),
            (
                "unreadable hash annotation counts as none",
                pod(LATER, json!({"metadata": {"annotations": {SIDECARSET_HASH: "{"}}})),
                "team",
                BTreeMap::new(),
                vec![set("log", T0, json!({}))],
                vec!["log"],
            ),
        ];
        for (name, pod, ns, labels, sets, want) in rows {
            assert_eq!(missing_sets(&pod, ns, &labels, &sets), want, "{name}");
        }
    }
}
