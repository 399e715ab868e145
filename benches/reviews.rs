//! The reviews the admission benchmarks run (criterion's `admission` and
//! `examples/loadtest_review_cost.rs`, which counts their instructions): a name, the review
//! under `examples/`, and the handler that answers it.

use kruise::webhook::paths::Handler;

pub const CASES: [(&str, &str, Handler); 6] = [
    ("mutate_pod_create", "reviews/pod-create.json", Handler::MutatePod),
    ("mutate_cloneset_create", "reviews/cloneset-create.json", Handler::MutateCloneSet),
    ("validate_cloneset_create", "reviews/cloneset-create.json", Handler::ValidateCloneSet),
    ("validate_cloneset_update", "reviews/cloneset-update-inplaceonly-env.json", Handler::ValidateCloneSet),
    ("mutate_statefulset_create", "reviews/statefulset-create.json", Handler::MutateStatefulSet),
    ("validate_statefulset_create", "reviews/statefulset-create.json", Handler::ValidateStatefulSet),
];
