//! CloneSet and Advanced StatefulSet admission through the router, in-process (issue 3): the
//! validating handlers answer AdmissionReview JSON with `allowed`, `status.code` and the
//! field-error message (spec §2.1, §2.2, §11), and the "pipeline" tests send objects through the
//! mutating handler and then the validating one, as the apiserver does, showing that defaulted
//! objects validate and that the InPlaceOnly guard judges defaulted templates (spec §10.4, §11.8).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use common::app::App;
use common::objects::{CloneSetBuilder, ContainerExt, StatefulSetBuilder, WorkloadBuilder, container};
use common::*;
use kruise::cluster::files::Snapshot;
use kruise::core::features::{FeatureGates, Gate};
use kruise::webhook::request::ReviewRequest;
use kube::core::admission::Operation;
use serde_json::{Value, json};

const VALIDATE_CLONESET: &str = "/validate-apps-kruise-io-cloneset";
const MUTATE_CLONESET: &str = "/mutate-apps-kruise-io-cloneset";
const VALIDATE_STS: &str = "/validate-apps-kruise-io-statefulset";
const MUTATE_STS: &str = "/mutate-apps-kruise-io-statefulset";

/// A review of the CloneSet or StatefulSet `web` in namespace `ns` at `version`.
fn review(kind: &str, version: &str, op: Operation, object: Option<&Value>, old: Option<&Value>) -> ReviewRequest {
    let resource = format!("{}s", kind.to_lowercase());
    ReviewRequest::new(op, "apps.kruise.io", version, kind, &resource).name("web").namespace("ns").objects(object, old)
}

fn denied(response: &Value) -> (i64, String) {
    assert_eq!(response["allowed"], false, "{response}");
    (response["status"]["code"].as_i64().unwrap(), response["status"]["message"].as_str().unwrap().to_string())
}

fn assert_allowed(response: &Value) {
    assert_eq!(response["allowed"], true, "{response}");
    assert_eq!(response["status"]["code"], 200, "{response}");
}

/// A CloneSet manifest as a user writes it (no defaults).
fn cloneset_manifest() -> Value {
    CloneSetBuilder::new("web")
        .namespace("ns")
        .uid("cs-uid")
        .replicas(3)
        .container(container("main", "nginx:1.27").env("MODE", "prod").request("cpu", "0.5"))
        .update_strategy("InPlaceOnly")
        .json()
}

/// An Advanced StatefulSet manifest as a user writes it (no defaults).
fn statefulset_manifest(version: &str) -> Value {
    StatefulSetBuilder::new("web")
        .namespace("ns")
        .uid("sts-uid")
        .replicas(3)
        .readiness_gate("InPlaceUpdateReady")
        .container(container("main", "nginx:1.27").env("MODE", "prod"))
        .json_at(version)
}

/// Sends `object` through the mutating webhook (as the apiserver does before validation) and
/// returns the object with the patch applied.
async fn mutated(app: &App, path: &str, review: ReviewRequest) -> Value {
    let response = app.send(path, &review).await;
    assert_allowed(&response);
    apply(&review.to_json()["request"]["object"], response_patch(&response).as_ref())
}

#[tokio::test]
async fn cloneset_reviews() {
    let mut pods = Snapshot::default();
    for (name, owner) in [("web-owned", "cs-uid"), ("web-other", "other-uid")] {
        pods.insert(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns",
            "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "web",
                                 "uid": owner, "controller": true}]}}))
            .unwrap();
    }
    let gates = FeatureGates::default().with(Gate::ResourcesDeletionProtection, true);
    let app = App::with(gates, Arc::new(pods));
    let create = |obj: &Value| review("CloneSet", "v1alpha1", Operation::Create, Some(obj), None);
    let valid = mutated(&app, MUTATE_CLONESET, create(&cloneset_manifest())).await;

    // CREATE: a defaulted object is admitted, on the HEAD and the v1.8 paths alike.
    assert_allowed(&app.send(VALIDATE_CLONESET, &create(&valid)).await);
    assert_allowed(&app.send("/validate-apps-kruise-io-v1alpha1-cloneset", &create(&valid)).await);

    // CREATE: invalid objects get 422 and every field error, aggregated.
    let bad = set(set(valid.clone(), "/spec/replicas", json!(-1)), "/spec/updateStrategy/maxSurge", json!(1));
    assert_eq!(
        denied(&app.send(VALIDATE_CLONESET, &create(&bad)).await),
        (
            422,
            "[spec.replicas: Invalid value: -1: must be greater than or equal to 0, spec.updateStrategy.maxSurge: \
             Invalid value: \"1\": can not use maxSurge with strategy type InPlaceOnly]"
                .into()
        )
    );
    let on_delete = set(valid.clone(), "/spec/updateStrategy/type", json!("OnDelete"));
    assert_eq!(
        denied(&app.send(VALIDATE_CLONESET, &create(&on_delete)).await),
        (
            422,
            "spec.updateStrategy.type: Invalid value: \"OnDelete\": must be 'ReCreate', InPlaceIfPossible or \
             'InPlaceOnly'"
                .into()
        )
    );

    // podsToDelete is checked against the pods of the cluster view.
    let owned = set(valid.clone(), "/spec/scaleStrategy", json!({"podsToDelete": ["web-owned"]}));
    assert_allowed(&app.send(VALIDATE_CLONESET, &create(&owned)).await);
    let foreign = set(valid.clone(), "/spec/scaleStrategy", json!({"podsToDelete": ["web-other", "web-gone"]}));
    assert_eq!(
        denied(&app.send(VALIDATE_CLONESET, &create(&foreign)).await),
        (
            422,
            "[spec.scaleStrategy.podsToDelete: Invalid value: \"web-gone\": find pod web-gone failed: pods \
             \"web-gone\" not found, spec.scaleStrategy.podsToDelete: Invalid value: \"web-other\": find pod \
             web-other owner is not this CloneSet]"
                .into()
        )
    );

    // UPDATE: the InPlaceOnly guard, and the InPlaceIfPossible warning.
    let update = |new: &Value, old: &Value| review("CloneSet", "v1alpha1", Operation::Update, Some(new), Some(old));
    let new_image = set(valid.clone(), "/spec/template/spec/containers/0/image", json!("nginx:1.28"));
    assert_allowed(&app.send(VALIDATE_CLONESET, &update(&new_image, &valid)).await);
    let new_env = set(valid.clone(), "/spec/template/spec/containers/0/env/0/value", json!("debug"));
    let (code, message) = denied(&app.send(VALIDATE_CLONESET, &update(&new_env, &valid)).await);
    assert_eq!(code, 422);
    assert_eq!(
        message,
        "spec.template.spec: Forbidden: only allowed to update images in spec for InPlaceOnly, but found replace \
         /containers/0/env/0/value; set spec.updateStrategy.type to InPlaceIfPossible to let pods be recreated for \
         this change"
    );
    let if_possible = set(valid.clone(), "/spec/updateStrategy/type", json!("InPlaceIfPossible"));
    let env_if_possible = set(if_possible.clone(), "/spec/template/spec/containers/0/env/0/value", json!("debug"));
    let response = app.send(VALIDATE_CLONESET, &update(&env_if_possible, &if_possible)).await;
    assert_allowed(&response);
    assert_eq!(
        response["warnings"],
        json!(["InPlaceIfPossible: pods will be recreated, not updated in place, because of replace \
             /spec/containers/0/env/0/value"])
    );
    let selector = set(valid.clone(), "/spec/selector/matchLabels/tier", json!("x"));
    let selector = set(selector, "/spec/template/metadata/labels/tier", json!("x"));
    let (code, message) = denied(&app.send(VALIDATE_CLONESET, &update(&selector, &valid)).await);
    assert_eq!(code, 422);
    assert!(message.starts_with("spec: Forbidden: updates to cloneset spec for fields other than"), "{message}");

    // DELETE: deletion protection (gate on) answers 403; no oldObject (Kubernetes < 1.16) is allowed.
    let delete = |old: Option<&Value>| review("CloneSet", "v1alpha1", Operation::Delete, None, old);
    assert_allowed(&app.send(VALIDATE_CLONESET, &delete(Some(&valid))).await);
    assert_allowed(&app.send(VALIDATE_CLONESET, &delete(None)).await);
    let protected = set(valid.clone(), "/metadata/labels", json!({"policy.kruise.io/delete-protection": "Always"}));
    assert_eq!(
        denied(&app.send(VALIDATE_CLONESET, &delete(Some(&protected))).await),
        (403, "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Always".into())
    );

    // 400: an object that does not decode, an UPDATE without oldObject, a version not served.
    let undecodable = set(valid.clone(), "/spec/replicas", json!("three"));
    let (code, message) = denied(&app.send(VALIDATE_CLONESET, &create(&undecodable)).await);
    assert_eq!(code, 400);
    assert!(message.starts_with("cannot decode CloneSet"), "{message}");
    let (code, message) = denied(&app.send(VALIDATE_CLONESET, &update(&valid, &Value::Null)).await);
    assert_eq!((code, message.as_str()), (400, "there is no content to decode"));
    let v2 = review("CloneSet", "v2", Operation::Create, Some(&valid), None);
    assert_eq!(denied(&app.send(VALIDATE_CLONESET, &v2).await), (400, "unsupported version: v2".into()));
}

#[tokio::test]
async fn deletion_protection_is_off_by_default() {
    let app = App::new();
    let protected =
        set(cloneset_manifest(), "/metadata/labels", json!({"policy.kruise.io/delete-protection": "Always"}));
    let delete = review("CloneSet", "v1alpha1", Operation::Delete, None, Some(&protected));
    assert_allowed(&app.send(VALIDATE_CLONESET, &delete).await);
    let sts = set(
        statefulset_manifest("v1beta1"),
        "/metadata/labels",
        json!({"policy.kruise.io/delete-protection": "Always"}),
    );
    assert_allowed(
        &app.send(VALIDATE_STS, &review("StatefulSet", "v1beta1", Operation::Delete, None, Some(&sts))).await,
    );
}

#[tokio::test]
async fn statefulset_reviews() {
    let gates = FeatureGates::default().with(Gate::ResourcesDeletionProtection, true);
    let app = App::with(gates, Arc::new(kruise::cluster::EmptyView));
    for version in ["v1beta1", "v1alpha1"] {
        let create = |obj: &Value| review("StatefulSet", version, Operation::Create, Some(obj), None);
        let valid = mutated(&app, MUTATE_STS, create(&statefulset_manifest(version))).await;
        assert_eq!(valid["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"], 1, "{version}");
        assert_allowed(&app.send(VALIDATE_STS, &create(&valid)).await);

        // The maxUnavailable rule: anything but the integer 1 needs Parallel.
        let two = set(valid.clone(), "/spec/updateStrategy/rollingUpdate/maxUnavailable", json!(2));
        assert_eq!(
            denied(&app.send(VALIDATE_STS, &create(&two)).await),
            (
                422,
                "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 2: can only work with Parallel \
                 PodManagementPolicyType"
                    .into()
            ),
            "{version}"
        );
        let parallel = set(two.clone(), "/spec/podManagementPolicy", json!("Parallel"));
        assert_allowed(&app.send(VALIDATE_STS, &create(&parallel)).await);
        let zero = set(parallel.clone(), "/spec/updateStrategy/rollingUpdate/maxUnavailable", json!("0%"));
        assert_eq!(
            denied(&app.send(VALIDATE_STS, &create(&zero)).await),
            (
                422,
                "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 0: should not be less than 1".into()
            ),
            "{version}"
        );

        // UPDATE: the InPlaceOnly guard (anchored: imagePullPolicy is not an image).
        let update = |new: &Value, old: &Value| review("StatefulSet", version, Operation::Update, Some(new), Some(old));
        let only = set(valid.clone(), "/spec/updateStrategy/rollingUpdate/podUpdatePolicy", json!("InPlaceOnly"));
        let pull = set(only.clone(), "/spec/template/spec/containers/0/imagePullPolicy", json!("IfNotPresent"));
        let (code, message) = denied(&app.send(VALIDATE_STS, &update(&pull, &only)).await);
        assert_eq!(code, 422, "{version}");
        assert_eq!(
            message,
            "spec.template.spec: Forbidden: only allowed to update images in spec for InPlaceOnly, but found replace \
             /containers/0/imagePullPolicy; set spec.updateStrategy.rollingUpdate.podUpdatePolicy to \
             InPlaceIfPossible to let pods be recreated for this change"
        );
        let image = set(only.clone(), "/spec/template/spec/containers/0/image", json!("nginx:1.28"));
        assert_allowed(&app.send(VALIDATE_STS, &update(&image, &only)).await);
        let service = set(valid.clone(), "/spec/serviceName", json!("other"));
        let (code, message) = denied(&app.send(VALIDATE_STS, &update(&service, &valid)).await);
        assert_eq!(code, 422);
        assert!(message.starts_with("spec: Forbidden: updates to statefulset spec"), "{message}");

        // DELETE: Cascading protection while replicas are wanted.
        let cascading =
            set(valid.clone(), "/metadata/labels", json!({"policy.kruise.io/delete-protection": "Cascading"}));
        let delete = review("StatefulSet", version, Operation::Delete, None, Some(&cascading));
        assert_eq!(
            denied(&app.send(VALIDATE_STS, &delete).await),
            (
                403,
                "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading and \
                 replicas 3>0"
                    .into()
            )
        );
        let scaled_down = set(cascading, "/spec/replicas", json!(0));
        let delete = review("StatefulSet", version, Operation::Delete, None, Some(&scaled_down));
        assert_allowed(&app.send(VALIDATE_STS, &delete).await);

        let undecodable = set(valid.clone(), "/spec/template", json!("nope"));
        assert_eq!(denied(&app.send(VALIDATE_STS, &create(&undecodable)).await).0, 400);
    }
}

#[tokio::test]
async fn example_review_inplaceonly_env_change_is_refused() {
    let app = App::new();
    let review = example_review("cloneset-update-inplaceonly-env.json");
    let response = app.send_body(VALIDATE_CLONESET, &review).await;
    let (code, message) = denied(&response);
    assert_eq!(code, 422);
    assert!(message.contains("replace /containers/0/env/0/value"), "{message}");
    assert!(message.contains("InPlaceIfPossible"), "{message}");
    // Without the env change the same review is admitted.
    let mut unchanged = review.clone();
    unchanged["request"]["object"] = review["request"]["oldObject"].clone();
    assert_allowed(&app.send_body(VALIDATE_CLONESET, &unchanged).await);
}

/// The apiserver's order: mutating webhook, then validating webhook on the mutated object.
#[tokio::test]
async fn pipeline_defaulted_objects_validate() {
    for gates in [FeatureGates::default(), FeatureGates::default().with(Gate::TemplateNoDefaults, true)] {
        let app = App::with(gates.clone(), Arc::new(kruise::cluster::EmptyView));
        let cs_review = |op, obj: &Value, old: Option<&Value>| review("CloneSet", "v1alpha1", op, Some(obj), old);

        // CREATE: the user's manifest, defaulted, validates.
        let stored = mutated(&app, MUTATE_CLONESET, cs_review(Operation::Create, &cloneset_manifest(), None)).await;
        assert_allowed(&app.send(VALIDATE_CLONESET, &cs_review(Operation::Create, &stored, None)).await);

        // UPDATE as `kubectl set image` on a CRD does it: a merge patch replaces the containers
        // list with the user's undefaulted containers. Mutation (or TemplateNoDefaults) and the
        // guard's own defaulting must make this an image-only change.
        let patched = set(
            stored.clone(),
            "/spec/template/spec/containers",
            json!([{"name": "main", "image": "nginx:1.28", "env": [{"name": "MODE", "value": "prod"}],
                    "resources": {"requests": {"cpu": "0.5"}}}]),
        );
        let new = mutated(&app, MUTATE_CLONESET, cs_review(Operation::Update, &patched, Some(&stored))).await;
        let response = app.send(VALIDATE_CLONESET, &cs_review(Operation::Update, &new, Some(&stored))).await;
        assert_allowed(&response);

        // The same path with an env change is refused by the guard.
        let patched = set(patched, "/spec/template/spec/containers/0/env/0/value", json!("debug"));
        let new = mutated(&app, MUTATE_CLONESET, cs_review(Operation::Update, &patched, Some(&stored))).await;
        let (code, message) =
            denied(&app.send(VALIDATE_CLONESET, &cs_review(Operation::Update, &new, Some(&stored))).await);
        assert_eq!(code, 422);
        assert!(message.contains("found replace /containers/0/env/0/value"), "{message}");

        // Advanced StatefulSet, both versions: create, then an InPlaceIfPossible env change is
        // admitted with a warning.
        for version in ["v1beta1", "v1alpha1"] {
            let sts_review = |op, obj: &Value, old: Option<&Value>| review("StatefulSet", version, op, Some(obj), old);
            let manifest = statefulset_manifest(version);
            let stored = mutated(&app, MUTATE_STS, sts_review(Operation::Create, &manifest, None)).await;
            assert_allowed(&app.send(VALIDATE_STS, &sts_review(Operation::Create, &stored, None)).await);
            let in_place =
                set(stored.clone(), "/spec/updateStrategy/rollingUpdate/podUpdatePolicy", json!("InPlaceIfPossible"));
            let new = mutated(&app, MUTATE_STS, sts_review(Operation::Update, &in_place, Some(&stored))).await;
            let response = app.send(VALIDATE_STS, &sts_review(Operation::Update, &new, Some(&stored))).await;
            assert_allowed(&response);
            assert!(response.get("warnings").is_none(), "{response}");
            let env = set(new.clone(), "/spec/template/spec/containers/0/env/0/value", json!("debug"));
            let env = mutated(&app, MUTATE_STS, sts_review(Operation::Update, &env, Some(&new))).await;
            let response = app.send(VALIDATE_STS, &sts_review(Operation::Update, &env, Some(&new))).await;
            assert_allowed(&response);
            let warning = response["warnings"][0].as_str().unwrap();
            assert!(warning.contains("replace /spec/containers/0/env/0/value"), "{warning}");
            assert!(warning.chars().count() <= 120, "{warning}");
        }
    }
}
