//! PodUnavailableBudget (kruise `pkg/control/pubcontrol`, v1.9, the v1alpha1 API we serve): how
//! many pods a budget lets go unavailable, and what that means for one pod operation.
//!
//! - this file: the vocabulary — the annotations, the operations a budget protects
//!   (`isNeedPubProtection`), which budget covers a new pod (`podunavailablebudget.GetPubForPod`,
//!   for the pod mutating webhook's `kruise.io/related-pub` annotation).
//! - [`pod`]: what kruise reads off a pod — ready, state consistent, whether an UPDATE may make it
//!   unavailable (`IsPodUnavailableChanged`) or is a resize in place (`CanResizeInplace`).
//! - [`admit`]: the verdict on one DELETE, eviction or UPDATE and the budget status it writes
//!   (`PodUnavailableBudgetValidatePod`, `checkAndDecrement`).
//! - [`rollout`]: whether a workload controller may update a pod in place now (gate
//!   PodUnavailableBudgetUpdateGate), spending the cached budget over one round.
//! - [`targets`]: the pods a budget counts and how many it expects (kruise's controller finder).
//! - [`status`]: the controller's status of a budget over its pods (`podunavailablebudget_controller.go`).

pub mod admit;
pub mod pod;
pub mod rollout;
pub mod status;
pub mod targets;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use crate::apis::podunavailablebudget::{PodUnavailableBudget, TargetReference};
use crate::compat::selector::Selector;
use crate::core::validation::podunavailablebudget::same_workload;

/// Budget annotation: the operations it protects, comma-separated (all but RESIZE when absent).
pub const PROTECT_OPERATIONS: &str = "kruise.io/pub-protect-operations";
/// Budget annotation: the number of pods it counts, instead of the workload's replicas.
pub const PROTECT_TOTAL_REPLICAS: &str = "pub.kruise.io/protect-total-replicas";
/// Pod annotation `"true"`: the pod is never protected (forced deletions).
pub const NO_PROTECT: &str = "pub.kruise.io/no-protect";
/// Pod annotation naming the budget that covers it, set by the pod mutating webhook at CREATE.
pub const RELATED_PUB: &str = "kruise.io/related-pub";
/// kruise HEAD's spelling of [`RELATED_PUB`] (`GetPodRelatedPubName` reads it first; HEAD writes
/// both). Read here, so pods a newer kruise annotated keep their budget; we write v1.9's.
pub const RELATED_PUB_STABLE: &str = "pub.kruise.io/related-pub";
/// Pod label prefix: a pod carrying such a label is unavailable whatever its conditions say.
pub const UNAVAILABLE_LABEL_PREFIX: &str = "unavailable-pod.kruise.io/";
/// At most this many pods in `disruptedPods` + `unavailablePods` (`MaxUnavailablePodSize`).
pub const MAX_UNAVAILABLE_POD_SIZE: usize = 2000;

/// A pod operation a budget may protect (`PubOperation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    /// The pod is deleted.
    Delete,
    /// The pod is evicted (`pods/eviction`).
    Evict,
    /// The pod is updated in a way that may make it unavailable.
    Update,
    /// Only container resources change, in place.
    Resize,
}

impl Operation {
    /// The annotation's spelling of an operation; `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "DELETE" => Operation::Delete,
            "EVICT" => Operation::Evict,
            "UPDATE" => Operation::Update,
            "RESIZE" => Operation::Resize,
            _ => return None,
        })
    }

    /// kruise's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Delete => "DELETE",
            Operation::Evict => "EVICT",
            Operation::Update => "UPDATE",
            Operation::Resize => "RESIZE",
        }
    }
}

/// `isNeedPubProtection`: the operations of the annotation, or DELETE, UPDATE and EVICT when it
/// is absent or empty; with gate InPlacePodVerticalScaling off a protected UPDATE also protects
/// RESIZE (a resize then restarts containers like any update).
pub fn needs_protection(pub_: &PodUnavailableBudget, op: Operation, in_place_pod_vertical_scaling: bool) -> bool {
    let value = pub_.metadata.annotations.as_ref().and_then(|a| a.get(PROTECT_OPERATIONS)).map_or("", String::as_str);
    let mut ops: Vec<Operation> = value.split(',').filter_map(Operation::parse).collect();
    if value.is_empty() {
        ops.extend([Operation::Delete, Operation::Update, Operation::Evict]);
    }
    if !in_place_pod_vertical_scaling && ops.contains(&Operation::Update) {
        ops.push(Operation::Resize);
    }
    ops.contains(&op)
}

/// Whether labels mark a pod unavailable (`appspub.HasUnavailableLabel`).
pub fn has_unavailable_label(labels: Option<&BTreeMap<String, String>>) -> bool {
    labels.is_some_and(|l| l.keys().any(|k| k.starts_with(UNAVAILABLE_LABEL_PREFIX)))
}

/// The name of the budget a pod records in [`RELATED_PUB`] ("" when none).
pub fn related_pub(pod: &Pod) -> &str {
    let annotations = pod.metadata.annotations.as_ref();
    let named = |key: &str| annotations.and_then(|a| a.get(key)).map(String::as_str).filter(|n| !n.is_empty());
    named(RELATED_PUB_STABLE).or_else(|| named(RELATED_PUB)).unwrap_or("")
}

/// The workload a pod's controller reference stands for, as kruise's controller finder resolves
/// it (`GetScaleAndSelectorForRef`): the reference itself, except that a ReplicaSet owned by a
/// Deployment stands for the Deployment. kruise reads the ReplicaSet to learn its owner; the
/// webhook has no ReplicaSets at hand, so the Deployment is named the way its controller names
/// ReplicaSets, `<deployment>-<pod-template-hash>`, with the hash the pod carries in its
/// `pod-template-hash` label. A ReplicaSet not named that way stands for itself.
pub fn workload_of(pod: &Pod, owner: &OwnerReference) -> TargetReference {
    let group = owner.api_version.split('/').next().unwrap_or("");
    if owner.kind == "ReplicaSet" && group == "apps" {
        let hash = pod.metadata.labels.as_ref().and_then(|l| l.get("pod-template-hash"));
        if let Some(deployment) = hash.and_then(|h| owner.name.strip_suffix(&format!("-{h}")))
            && !deployment.is_empty()
        {
            return TargetReference {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                name: deployment.into(),
            };
        }
    }
    TargetReference { api_version: owner.api_version.clone(), kind: owner.kind.clone(), name: owner.name.clone() }
}

/// The controller reference of a pod (`metav1.GetControllerOf`).
pub fn controller_of(pod: &Pod) -> Option<&OwnerReference> {
    pod.metadata.owner_references.as_ref()?.iter().find(|r| r.controller == Some(true))
}

/// `podunavailablebudget.GetPubForPod`: the first budget of the pod's namespace, in list order,
/// whose targetRef is the pod's workload ([`workload_of`]) or, for a budget without targetRef
/// (or a pod without controller), whose selector matches the pod's labels. A budget whose
/// selector is missing, empty or invalid covers nothing.
pub fn pub_for_pod<'a>(pod: &Pod, budgets: &[&'a PodUnavailableBudget]) -> Option<&'a PodUnavailableBudget> {
    let workload = controller_of(pod).map(|owner| workload_of(pod, owner));
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    budgets.iter().copied().find(|b| match (&b.spec.target_reference, &workload) {
        (Some(target), Some(workload)) => same_workload(workload, target),
        _ => match b.spec.selector.as_ref().map(Selector::from_label_selector) {
            Some(Ok(sel)) => !sel.is_empty() && sel.matches(&labels),
            _ => false,
        },
    })
}

#[cfg(test)]
pub(crate) mod testkit {
    //! Budgets and pods for the tables of this module's files (kruise's `pubDemo` / `podDemo`).
    use super::*;
    use serde_json::{Value, json};

    /// kruise's `pubDemo`: selector `app=pub-controller`, maxUnavailable 50%, status 10 desired,
    /// 10 current... as the rows need.
    pub fn budget(f: impl FnOnce(&mut Value)) -> PodUnavailableBudget {
        let mut v = json!({"apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
            "metadata": {"namespace": "default", "name": "pub-test", "uid": "uid-pub", "resourceVersion": "1",
                         "annotations": {}, "generation": 1},
            "spec": {"selector": {"matchLabels": {"app": "pub-controller"}}, "maxUnavailable": "50%"},
            "status": {"observedGeneration": 1, "unavailableAllowed": 0, "currentAvailable": 0,
                       "desiredAvailable": 0, "totalReplicas": 0}});
        f(&mut v);
        serde_json::from_value(v).expect("a budget")
    }

    /// kruise's `podDemo`: running, ready, owned by ReplicaSet `rs-1`, labelled
    /// `app=pub-controller`, covered by `pub-test`.
    pub fn pod(f: impl FnOnce(&mut Value)) -> Pod {
        let mut v = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"namespace": "default", "name": "test-pod-0", "labels": {"app": "pub-controller"},
                         "annotations": {RELATED_PUB: "pub-test"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs-1",
                                              "uid": "uid-rs", "controller": true}]},
            "spec": {"containers": [{"name": "main", "image": "nginx:v1"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                       "containerStatuses": [{"name": "main", "image": "nginx:v1", "imageID": "nginx@sha256:1",
                                              "ready": true, "restartCount": 0}]}});
        f(&mut v);
        serde_json::from_value(v).expect("a pod")
    }
}

#[cfg(test)]
mod tests {
    use super::testkit::{budget, pod};
    use super::*;
    use serde_json::json;

    /// kruise HEAD's `GetPodRelatedPubName` rows ("matched pub", "matched pub by deprecated
    /// annotation"): the stable annotation first, v1.9's otherwise; empty values name nothing.
    #[test]
    fn related_pub_reads_both_spellings() {
        let with = |annotations: serde_json::Value| pod(|v| v["metadata"]["annotations"] = annotations);
        assert_eq!(related_pub(&with(json!({RELATED_PUB: "old"}))), "old");
        assert_eq!(related_pub(&with(json!({RELATED_PUB_STABLE: "new"}))), "new");
        assert_eq!(related_pub(&with(json!({RELATED_PUB_STABLE: "new", RELATED_PUB: "old"}))), "new");
        assert_eq!(related_pub(&with(json!({RELATED_PUB_STABLE: "", RELATED_PUB: "old"}))), "old");
        assert_eq!(related_pub(&with(json!({}))), "");
    }

    #[test]
    fn protected_operations() {
        let rows = [
            (None, Operation::Delete, false, true),
            (None, Operation::Evict, false, true),
            (None, Operation::Update, false, true),
            (None, Operation::Resize, false, true),
            (None, Operation::Resize, true, false),
            (Some("EVICT"), Operation::Delete, false, false),
            (Some("EVICT"), Operation::Evict, false, true),
            (Some("DELETE,UPDATE"), Operation::Resize, false, true),
            (Some("DELETE,UPDATE"), Operation::Resize, true, false),
            (Some("RESIZE"), Operation::Resize, true, true),
            (Some(""), Operation::Update, false, true),
        ];
        for (annotation, op, vertical, want) in rows {
            let b = budget(|v| {
                if let Some(a) = annotation {
                    v["metadata"]["annotations"][PROTECT_OPERATIONS] = json!(a);
                }
            });
            assert_eq!(needs_protection(&b, op, vertical), want, "{annotation:?} {op:?} gate={vertical}");
        }
    }

    /// `GetPubForPod` of kruise's mutating tests (`pkg/webhook/pod/mutating/
    /// pod_unavailable_budget_test.go`): by selector, by targetRef through the ReplicaSet's
    /// Deployment, none when neither matches.
    #[test]
    fn budget_for_a_new_pod() {
        let by_selector = budget(|_| {});
        let by_deployment = budget(|v| {
            v["metadata"]["name"] = json!("pub-deploy");
            v["spec"] = json!({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                               "maxUnavailable": 1});
        });
        let empty_selector = budget(|v| v["spec"]["selector"] = json!({}));
        let deployment_pod = pod(|v| {
            v["metadata"]["labels"] = json!({"app": "other", "pod-template-hash": "5d4f"});
            v["metadata"]["ownerReferences"][0]["name"] = json!("web-5d4f");
        });
        let selected = pod(|_| {});
        let orphan = pod(|v| {
            v["metadata"].as_object_mut().expect("meta").remove("ownerReferences");
        });
        let unrelated = pod(|v| v["metadata"]["labels"] = json!({"app": "x"}));
        let all = [&by_deployment, &by_selector];
        let name = |p: &Pod, list: &[&PodUnavailableBudget]| {
            pub_for_pod(p, list).and_then(|b| b.metadata.name.clone()).unwrap_or_default()
        };
        assert_eq!(name(&deployment_pod, &all), "pub-deploy");
        assert_eq!(name(&selected, &all), "pub-test");
        assert_eq!(name(&orphan, &all), "pub-test");
        assert_eq!(name(&unrelated, &all), "");
        assert_eq!(name(&unrelated, &[&empty_selector]), "", "an empty selector covers nothing");
        // A ReplicaSet not named after a Deployment stands for itself.
        let rs_budget = budget(|v| {
            v["metadata"]["name"] = json!("pub-rs");
            v["spec"] = json!({"targetRef": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs-1"},
                               "maxUnavailable": 1});
        });
        assert_eq!(name(&selected, &[&rs_budget]), "pub-rs");
    }

    #[test]
    fn unavailable_labels() {
        let l = |k: &str| Some(BTreeMap::from([(k.to_string(), "true".to_string())]));
        assert!(has_unavailable_label(l("unavailable-pod.kruise.io/offline").as_ref()));
        assert!(!has_unavailable_label(l("app").as_ref()));
        assert!(!has_unavailable_label(None));
    }
}
