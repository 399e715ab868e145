//! The reviews the admission benchmarks run (criterion's `admission` and
//! `examples/loadtest_review_cost.rs`, which counts their instructions): a name, the review
//! under `examples/`, and the handler that answers it.

use kruise::webhook::paths::Handler;

pub const CASES: [(&str, &str, Handler); 8] = [
    ("mutate_pod_create", "reviews/pod-create.json", Handler::MutatePod),
    ("mutate_cloneset_create", "reviews/cloneset-create.json", Handler::MutateCloneSet),
    ("validate_cloneset_create", "reviews/cloneset-create.json", Handler::ValidateCloneSet),
    ("validate_cloneset_update", "reviews/cloneset-update-inplaceonly-env.json", Handler::ValidateCloneSet),
    ("mutate_statefulset_create", "reviews/statefulset-create.json", Handler::MutateStatefulSet),
    ("validate_statefulset_create", "reviews/statefulset-create.json", Handler::ValidateStatefulSet),
    // A pod DELETE no PodUnavailableBudget covers (no `kruise.io/related-pub`), and one the budget
    // `web-pub` of the admission benchmark's view covers: decided and the unit taken in memory
    // (the status write of the server is not part of it).
    ("validate_pod_delete_unmatched", "reviews/pod-delete-unmatched.json", Handler::ValidatePod),
    ("validate_pod_delete_budget", "reviews/pod-delete.json", Handler::ValidatePod),
];

/// The budget the pod of `reviews/pod-delete.json` names (`web-pub`), with one unit left: the
/// view of the cases holds it.
pub fn budget() -> serde_json::Value {
    serde_json::json!({"apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
        "metadata": {"name": "web-pub", "namespace": "default", "resourceVersion": "1"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1},
        "status": {"observedGeneration": 1, "desiredAvailable": 2, "currentAvailable": 3,
                   "unavailableAllowed": 1, "totalReplicas": 3}})
}
