//! Server dry-run (issue 5 item 2): `kubectl apply --dry-run=server` reaches a webhook only when it
//! declares no side effects, and must then get exactly the answer a real request gets. For every
//! routed, implemented handler, a review is sent through the router with `dryRun: false` and `true` and
//! the answers compared; every generated webhook declares `sideEffects: None`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::app::App;
use common::*;
use kruise::webhook::paths::{Handler, WEBHOOKS};
use serde_json::{Value, json};

/// The reviews each handler is exercised with. The match is exhaustive on purpose: a new handler
/// does not compile here until it has fixtures.
fn fixtures(handler: Handler) -> Vec<&'static str> {
    match handler {
        Handler::MutateCloneSet => vec!["cloneset-create.json"],
        Handler::MutateStatefulSet => vec!["statefulset-create.json"],
        Handler::ValidateCloneSet => vec!["cloneset-create.json", "cloneset-update-inplaceonly-env.json"],
        Handler::ValidateStatefulSet => vec!["statefulset-create.json"],
        Handler::MutatePod => vec!["pod-create.json"],
        Handler::MutateSidecarSet => vec!["sidecarset-create.json"],
        Handler::ValidateSidecarSet => vec!["sidecarset-create.json"],
        Handler::ValidateBuiltinWorkload => vec!["deployment-delete-protected.json"],
        Handler::ValidateNamespace => vec!["namespace-delete-protected.json"],
        Handler::ValidateService => vec!["service-delete-protected.json"],
        Handler::ValidateIngress => vec!["ingress-delete-protected.json"],
        Handler::ValidateCustomResourceDefinition => vec!["crd-delete-protected.json"],
        Handler::ValidatePod => vec!["pod-delete.json"],
        Handler::ValidatePodUnavailableBudget => vec!["podunavailablebudget-create.json"],
        Handler::MutateImagePullJob | Handler::ValidateImagePullJob => vec!["imagepulljob-create.json"],
        Handler::MutateImageListPullJob | Handler::ValidateImageListPullJob => vec!["imagelistpulljob-create.json"],
        Handler::MutateNodeImage | Handler::ValidateNodeImage => vec!["nodeimage-create.json"],
        Handler::MutateDaemonSet | Handler::ValidateDaemonSet => vec!["daemonset-create.json"],
        Handler::MutateBroadcastJob | Handler::ValidateBroadcastJob => vec!["broadcastjob-create.json"],
        Handler::MutateAdvancedCronJob | Handler::ValidateAdvancedCronJob => vec!["advancedcronjob-create.json"],
        Handler::MutateContainerRecreateRequest => vec!["containerrecreaterequest-create.json"],
        Handler::ValidatePodProbeMarker => vec!["podprobemarker-create.json"],
        Handler::MutateUnitedDeployment | Handler::ValidateUnitedDeployment => vec!["uniteddeployment-create.json"],
        Handler::ValidateWorkloadSpread => vec!["workloadspread-create.json"],
        Handler::Missing => vec![],
    }
}

#[tokio::test]
async fn dry_run_answers_equal_real_answers_for_every_handler() {
    let app = App::new();
    let mut covered = 0;
    for w in WEBHOOKS.iter().filter(|w| w.implemented()) {
        let files = fixtures(w.handler);
        assert!(!files.is_empty(), "{} has no dry-run fixture", w.name);
        for file in files {
            let mut answers = Vec::new();
            for dry_run in [false, true] {
                let mut review = example_review(file);
                review["request"]["dryRun"] = json!(dry_run);
                review["request"]["options"]["dryRun"] = if dry_run { json!(["All"]) } else { Value::Null };
                let r = app.post(w.path, serde_json::to_vec(&review).unwrap()).await;
                assert_eq!(r.status, 200, "{} {file}", w.name);
                answers.push(r.json());
            }
            assert_eq!(answers[0], answers[1], "{} answers a dry run differently ({file})", w.name);
            covered += 1;
        }
    }
    assert!(covered >= 2);
}

#[test]
fn every_generated_webhook_declares_no_side_effects() {
    let m = kruise::manifests::mutating();
    let v = kruise::manifests::validating();
    let effects = m
        .webhooks
        .unwrap_or_default()
        .into_iter()
        .map(|w| (w.name, w.side_effects))
        .chain(v.webhooks.unwrap_or_default().into_iter().map(|w| (w.name, w.side_effects)));
    for (name, side_effects) in effects {
        assert_eq!(side_effects, "None", "{name}");
    }
}
