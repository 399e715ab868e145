//! An Advanced DaemonSet's pods as kruise sees them (`daemonset_util.go`, upstream
//! `daemon/util`): grouped by the node they are for (`getNodesToDaemonPods` with
//! `GetTargetNodeName`), which are updated (`IsPodUpdated`: the revision hash label, or the
//! `pod-template-generation` label when the set has the deprecated template-generation
//! annotation), the new and old pod of a node (`findUpdatedPodsOnNode`), their order
//! (`podByCreationTimestampAndPhase`), and the pod a round creates on a node
//! (`CreatePodTemplate` + `ReplaceDaemonSetPodNodeNameNodeAffinity`, the `InPlaceUpdateReady`
//! readiness gate under InPlaceIfPossible, `generateName: <ds>-`).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, PodReadinessGate};

use super::eligibility::{add_daemon_tolerations, bind_to_node, target_node};
use super::revision::controller_ref;
use crate::apis::daemonset::v1beta1::DaemonSet;
use crate::apis::daemonset::{IN_PLACE_IF_POSSIBLE, ROLLING_UPDATE};
use crate::core::lifecycle::{self, State};
use crate::core::pods;
use crate::core::revision::CONTROLLER_REVISION_HASH;

/// Label of the template generation (`extensions.DaemonSetTemplateGenerationKey`).
pub const POD_TEMPLATE_GENERATION: &str = "pod-template-generation";
/// The set annotation holding it (`apps.DeprecatedTemplateGeneration`).
pub const TEMPLATE_GENERATION_ANNOTATION: &str = "deprecated.daemonset.template.generation";
/// The in-place readiness gate.
pub const IN_PLACE_UPDATE_READY: &str = "InPlaceUpdateReady";

/// `GetTemplateGeneration` (a value that does not parse counts as none, as the callers treat it).
pub fn template_generation(ds: &DaemonSet) -> Option<i64> {
    ds.metadata.annotations.as_ref()?.get(TEMPLATE_GENERATION_ANNOTATION)?.parse().ok()
}

/// `IsPodUpdated`.
pub fn is_updated(pod: &Pod, hash: &str, generation: Option<i64>) -> bool {
    let template =
        generation.is_some_and(|g| pods::label(pod, POD_TEMPLATE_GENERATION).is_some_and(|l| l == g.to_string()));
    let by_hash = !hash.is_empty() && pods::label(pod, CONTROLLER_REVISION_HASH) == Some(hash);
    by_hash || template
}

/// `isPodPreDeleting`.
pub fn is_pre_deleting(pod: &Pod) -> bool {
    lifecycle::state(pod) == State::PreparingDelete
}

/// The set's pods by the node they are for (pods naming no node are left out).
pub fn by_node<'a>(pods: &[&'a Pod]) -> BTreeMap<String, Vec<&'a Pod>> {
    let mut out: BTreeMap<String, Vec<&'a Pod>> = BTreeMap::new();
    for p in pods {
        if let Some(n) = target_node(p) {
            out.entry(n.to_string()).or_default().push(p);
        }
    }
    out
}

/// The new and old pod of a node; `None` when a node has two of either (`ok == false`).
pub fn updated_and_old<'a>(
    pods: &[&'a Pod],
    hash: &str,
    generation: Option<i64>,
) -> Option<(Option<&'a Pod>, Option<&'a Pod>)> {
    let (mut new, mut old) = (None, None);
    for p in pods.iter().copied().filter(|p| p.metadata.deletion_timestamp.is_none()) {
        let slot = if is_updated(p, hash, generation) { &mut new } else { &mut old };
        if slot.is_some() {
            return None;
        }
        *slot = Some(p);
    }
    Some((new, old))
}

/// `podByCreationTimestampAndPhase`: scheduled first, then older, then by name.
pub fn creation_order(a: &Pod, b: &Pod) -> Ordering {
    pods::is_scheduled(b)
        .cmp(&pods::is_scheduled(a))
        .then_with(|| {
            let t = |p: &Pod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
            t(a).cmp(&t(b))
        })
        .then_with(|| pods::name(a).cmp(pods::name(b)))
}

/// Whether the set updates in place when it can.
pub fn in_place_if_possible(ds: &DaemonSet) -> bool {
    let s = &ds.spec.update_strategy;
    s.type_ == ROLLING_UPDATE
        && s.rolling_update.as_ref().is_some_and(|r| r.rolling_update_type == IN_PLACE_IF_POSSIBLE)
}

/// The pod `syncNodes` creates on `node` at revision `hash`, named `name` (what the API server
/// makes of `generateName: <ds>-`; the name is chosen here so that the controller can expect it).
pub fn new_pod(ds: &DaemonSet, node: &str, hash: &str, name: &str) -> Pod {
    let template = &ds.spec.template;
    let mut meta = template.metadata.clone().unwrap_or_default();
    let labels = meta.labels.get_or_insert_with(Default::default);
    if let Some(g) = template_generation(ds) {
        labels.insert(POD_TEMPLATE_GENERATION.into(), g.to_string());
    }
    if !hash.is_empty() {
        labels.insert(CONTROLLER_REVISION_HASH.into(), hash.into());
    }
    let mut spec = template.spec.clone().unwrap_or_default();
    add_daemon_tolerations(&mut spec);
    if in_place_if_possible(ds) {
        spec.readiness_gates
            .get_or_insert_with(Vec::new)
            .push(PodReadinessGate { condition_type: IN_PLACE_UPDATE_READY.into() });
    }
    spec.affinity = Some(bind_to_node(spec.affinity.take(), node));
    meta.generate_name = Some(format!("{}-", ds.metadata.name.as_deref().unwrap_or("")));
    meta.name = Some(name.to_string());
    meta.namespace = ds.metadata.namespace.clone();
    meta.owner_references = Some(vec![controller_ref(ds)]);
    Pod { metadata: meta, spec: Some(spec), status: None }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, hash: &str, generation: Option<&str>) -> Pod {
        let mut labels = json!({"controller-revision-hash": hash});
        if let Some(g) = generation {
            labels["pod-template-generation"] = json!(g);
        }
        serde_json::from_value(
            json!({"metadata": {"name": name, "labels": labels}, "spec": {"containers": [], "nodeName": "n"}}),
        )
        .unwrap()
    }

    /// kruise's `TestGetTemplateGeneration` and upstream's `TestIsPodUpdated`.
    #[test]
    fn updated_by_hash_or_template_generation() {
        let mut ds = DaemonSet::default();
        assert_eq!(template_generation(&ds), None);
        ds.metadata.annotations = Some([(TEMPLATE_GENERATION_ANNOTATION.to_string(), "1000".to_string())].into());
        assert_eq!(template_generation(&ds), Some(1000));
        ds.metadata.annotations = Some([(TEMPLATE_GENERATION_ANNOTATION.to_string(), "x".to_string())].into());
        assert_eq!(template_generation(&ds), None);
        // (hash label, generation label, set hash, set generation, updated)
        let rows = [
            ("h1", Some("12345"), "h1", Some(12345), true),
            ("h1", Some("12345"), "h2", Some(12345), true),
            ("h1", Some("12344"), "h1", Some(12345), true),
            ("h1", Some("12344"), "h2", Some(12345), false),
            ("h1", None, "h2", Some(12345), false),
            ("h1", None, "h1", None, true),
            ("h1", Some("1"), "", Some(2), false),
        ];
        for (label, g, hash, set_g, want) in rows {
            assert_eq!(is_updated(&pod("p", label, g), hash, set_g), want, "{label} {g:?} {hash} {set_g:?}");
        }
    }

    #[test]
    fn a_node_with_two_new_or_two_old_pods_is_not_ok() {
        let (a, b, c) = (pod("a", "v1", None), pod("b", "v2", None), pod("c", "v2", None));
        let (new, old) = updated_and_old(&[&a, &b], "v2", None).unwrap();
        assert_eq!((new.map(pods::name), old.map(pods::name)), (Some("b"), Some("a")));
        assert!(updated_and_old(&[&b, &c], "v2", None).is_none());
        let mut gone = c.clone();
        gone.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
        assert!(updated_and_old(&[&b, &gone], "v2", None).is_some(), "terminating pods are not counted");
    }

    #[test]
    fn new_pods_are_bound_labelled_and_gated() {
        let ds: DaemonSet = serde_json::from_value(json!({"metadata": {"name": "ds", "namespace": "ns", "uid": "u",
            "annotations": {TEMPLATE_GENERATION_ANNOTATION: "3"}},
            "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]}},
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"rollingUpdateType": "InPlaceIfPossible"}}}}))
        .unwrap();
        let p = new_pod(&ds, "node-1", "abc", "ds-xyz12");
        assert_eq!(p.metadata.generate_name.as_deref(), Some("ds-"));
        assert_eq!(pods::label(&p, CONTROLLER_REVISION_HASH), Some("abc"));
        assert_eq!(pods::label(&p, POD_TEMPLATE_GENERATION), Some("3"));
        assert_eq!(target_node(&p), Some("node-1"));
        let spec = p.spec.as_ref().unwrap();
        assert_eq!(spec.readiness_gates.as_ref().unwrap()[0].condition_type, IN_PLACE_UPDATE_READY);
        assert_eq!(spec.tolerations.as_ref().unwrap().len(), 6);
        assert_eq!(p.metadata.owner_references.as_ref().unwrap()[0].uid, "u");
    }
}
