//! UnitedDeployment admission through the router, in-process (issue 34 item 1; kruise v1.9.0
//! `pkg/webhook/uniteddeployment`): both path spellings, the defaults (applied as a patch; kruise
//! HEAD's v1alpha1 handler tests `…CreateDefaultsAndClearsStatus` and
//! `…UpdatePreservesExplicitSpec`), template defaults only when the template changed on UPDATE,
//! the field errors (422), the immutable subset placement on UPDATE, deletion protection, and
//! versions not served. The rule tables are in `core::validation::uniteddeployment` and
//! `core::defaults::uniteddeployment`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use common::app::App;
use common::{apply, response_patch};
use kruise::cluster::EmptyView;
use kruise::core::features::FeatureGates;
use kruise::webhook::request::ReviewRequest;
use kube::core::admission::Operation;
use serde_json::{Value, json};

const MUTATE: [&str; 2] =
    ["/mutate-apps-kruise-io-uniteddeployment", "/mutate-apps-kruise-io-v1alpha1-uniteddeployment"];
const VALIDATE: [&str; 2] =
    ["/validate-apps-kruise-io-uniteddeployment", "/validate-apps-kruise-io-v1alpha1-uniteddeployment"];

fn app() -> App {
    App::with(FeatureGates::default(), Arc::new(EmptyView))
}

fn ud(spec: Value) -> Value {
    json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
        "metadata": {"name": "web", "namespace": "ns"}, "spec": spec})
}

fn review(version: &str, op: Operation, object: &Value) -> ReviewRequest {
    ReviewRequest::new(op, "apps.kruise.io", version, "UnitedDeployment", "uniteddeployments")
        .name("web")
        .namespace("ns")
        .object(object.clone())
}

/// kruise HEAD's `newAlphaDeploymentUnitedDeployment` shape: a Deployment template over one subset.
fn deployment_spec() -> Value {
    json!({"replicas": 3, "selector": {"matchLabels": {"app": "demo"}},
        "template": {"deploymentTemplate": {"metadata": {"labels": {"app": "demo"}}, "spec": {
            "selector": {"matchLabels": {"app": "demo"}},
            "template": {"metadata": {"labels": {"app": "demo"}}, "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}}}}},
        "topology": {"subsets": [{"name": "subset-a", "nodeSelectorTerm": {"matchExpressions": [
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-a"]}]}}]}})
}

fn clone_set_spec() -> Value {
    json!({"replicas": 6, "selector": {"matchLabels": {"app": "web"}},
        "template": {"cloneSetTemplate": {"metadata": {"labels": {"app": "web"}}, "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}}}}},
        "topology": {"subsets": [
            {"name": "zone-a", "replicas": 4, "nodeSelectorTerm": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}},
            {"name": "zone-b", "nodeSelectorTerm": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}}]}})
}

/// kruise `TestUnitedDeploymentCreateUpdateHandlerHandleV1alpha1CreateDefaultsAndClearsStatus`
/// (the defaults part) and `…CreateAllowsValidDeploymentWorkload`, on both spellings.
#[tokio::test]
async fn defaulted_then_valid_on_both_paths() {
    let app = app();
    for (mutate, validate) in MUTATE.into_iter().zip(VALIDATE) {
        for spec in [deployment_spec(), clone_set_spec()] {
            let object = ud(spec);
            let r = app.send(mutate, &review("v1alpha1", Operation::Create, &object)).await;
            assert_eq!(r["allowed"], true, "{r}");
            let defaulted = apply(&object, response_patch(&r).as_ref());
            assert_eq!(defaulted["spec"]["revisionHistoryLimit"], 10);
            assert_eq!(defaulted["spec"]["updateStrategy"], json!({"type": "Manual", "manualUpdate": {}}));
            // Only the StatefulSet template gets pod defaults in kruise.
            assert!(defaulted.pointer("/spec/template/deploymentTemplate/spec/template/spec/dnsPolicy").is_none());
            let v = app.send(validate, &review("v1alpha1", Operation::Create, &defaulted)).await;
            assert_eq!(v["allowed"], true, "{mutate}: {v}");
            let again = app.send(mutate, &review("v1alpha1", Operation::Create, &defaulted)).await;
            assert!(again.get("patch").is_none_or(Value::is_null), "{again}");
        }
    }
}

/// kruise `…V1alpha1UpdatePreservesExplicitSpec`: an explicit update strategy and history limit
/// are kept.
#[tokio::test]
async fn explicit_spec_is_preserved() {
    let mut spec = deployment_spec();
    spec["revisionHistoryLimit"] = json!(3);
    spec["updateStrategy"] = json!({"type": "Manual", "manualUpdate": {"partitions": {"subset-a": 1}}});
    let old = ud(spec.clone());
    spec["replicas"] = json!(4);
    let new = ud(spec);
    let r = app().send(MUTATE[0], &review("v1alpha1", Operation::Update, &new).old_object(old)).await;
    assert_eq!(r["allowed"], true, "{r}");
    let out = apply(&new, response_patch(&r).as_ref());
    assert_eq!(out, new, "nothing to default");
}

#[tokio::test]
async fn statefulset_template_defaults_only_when_the_template_changed() {
    let app = app();
    let spec = json!({"replicas": 2, "selector": {"matchLabels": {"app": "db"}},
        "template": {"statefulSetTemplate": {"metadata": {"labels": {"app": "db"}}, "spec": {
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "db", "image": "redis"}]}}}}},
        "topology": {"subsets": [{"name": "a", "minReplicas": 1}, {"name": "b", "maxReplicas": 1}]}});
    let object = ud(spec);
    let r = app.send(MUTATE[0], &review("v1alpha1", Operation::Create, &object)).await;
    let created = apply(&object, response_patch(&r).as_ref());
    let pod = &created["spec"]["template"]["statefulSetTemplate"]["spec"]["template"]["spec"];
    assert_eq!((pod["dnsPolicy"].as_str(), pod["restartPolicy"].as_str()), (Some("ClusterFirst"), Some("Always")));
    assert_eq!(created["spec"]["topology"]["subsets"][1]["minReplicas"], 0, "capacity settings get minReplicas 0");
    let v = app.send(VALIDATE[0], &review("v1alpha1", Operation::Create, &created)).await;
    assert_eq!(v["allowed"], true, "{v}");

    // An UPDATE that leaves the template alone does not default it.
    let old = ud(object["spec"].clone());
    let mut new = old.clone();
    new["spec"]["replicas"] = json!(3);
    let r = app.send(MUTATE[0], &review("v1alpha1", Operation::Update, &new).old_object(old.clone())).await;
    let out = apply(&new, response_patch(&r).as_ref());
    assert!(out.pointer("/spec/template/statefulSetTemplate/spec/template/spec/dnsPolicy").is_none(), "{out}");
    new["spec"]["template"]["statefulSetTemplate"]["spec"]["template"]["spec"]["containers"][0]["image"] =
        json!("redis:7");
    let r = app.send(MUTATE[0], &review("v1alpha1", Operation::Update, &new).old_object(old)).await;
    let out = apply(&new, response_patch(&r).as_ref());
    assert_eq!(out["spec"]["template"]["statefulSetTemplate"]["spec"]["template"]["spec"]["dnsPolicy"], "ClusterFirst");
}

#[tokio::test]
async fn invalid_objects_are_denied_with_field_errors() {
    let app = app();
    let mut spec = clone_set_spec();
    spec["topology"]["subsets"][0]["replicas"] = json!(7);
    spec["topology"]["subsets"][1]["name"] = json!("zone-a");
    spec["updateStrategy"] = json!({"manualUpdate": {"partitions": {"zone-c": 1}}});
    let r = app.send(VALIDATE[1], &review("v1alpha1", Operation::Create, &ud(spec))).await;
    assert_eq!(r["allowed"], false);
    assert_eq!(r["status"]["code"], 422, "{r}");
    let message = r["status"]["message"].as_str().unwrap();
    for part in [
        "spec.topology.subsets: Invalid value: 7: sum of indicated subset replicas 7 should not be greater than UnitedDeployment replicas 6",
        "spec.topology.subsets[1].name: Invalid value: \"zone-a\": duplicated subset name zone-a",
        "spec.updateStrategy.partitions: Invalid value: {\"zone-c\":1}: subset zone-c does not exist",
    ] {
        assert!(message.contains(part), "{part}\n{message}");
    }
    let mut none = clone_set_spec();
    none["template"] = json!({});
    let r = app.send(VALIDATE[0], &review("v1alpha1", Operation::Create, &ud(none))).await;
    assert!(
        r["status"]["message"].as_str().unwrap().contains(
            "spec.template: Required value: should provide one of statefulSetTemplate, advancedStatefulSetTemplate, cloneSetTemplate, or deploymentTemplate"
        ),
        "{r}"
    );
    let undecodable = ud(json!({"replicas": "six"}));
    for path in [MUTATE[0], VALIDATE[0]] {
        let r = app.send(path, &review("v1alpha1", Operation::Create, &undecodable)).await;
        assert_eq!(r["status"]["code"], 400, "{path}: {r}");
    }
    let r = app.send(VALIDATE[0], &review("v1beta1", Operation::Create, &ud(clone_set_spec()))).await;
    assert_eq!(r["status"]["code"], 400, "{r}");
    assert!(r["status"]["message"].as_str().unwrap().contains("unsupported version: v1beta1"));
}

/// kruise `…V1alpha1UpdateRejectsNodeSelectorMutation`: a subset's placement is immutable; its
/// replicas are not.
#[tokio::test]
async fn subset_placement_is_immutable() {
    let app = app();
    let old = ud(clone_set_spec());
    let mut replicas = old.clone();
    replicas["spec"]["topology"]["subsets"][0]["replicas"] = json!(3);
    let r = app.send(VALIDATE[0], &review("v1alpha1", Operation::Update, &replicas).old_object(old.clone())).await;
    assert_eq!(r["allowed"], true, "{r}");
    let mut moved = old.clone();
    moved["spec"]["topology"]["subsets"][0]["nodeSelectorTerm"]["matchExpressions"][0]["values"] = json!(["c"]);
    moved["spec"]["topology"]["subsets"][1]["tolerations"] = json!([{"key": "k", "operator": "Exists"}]);
    let r = app.send(VALIDATE[0], &review("v1alpha1", Operation::Update, &moved).old_object(old)).await;
    assert_eq!(r["status"]["code"], 422, "{r}");
    assert_eq!(
        r["status"]["message"],
        "[spec.topology.subsets[0].nodeSelectorTerm: Forbidden: may not be changed in an update, \
         spec.topology.subsets[1].tolerations: Forbidden: may not be changed in an update]"
    );
}

/// Deletion protection (gate ResourcesDeletionProtection): `Cascading` refuses while replicas
/// are left; with the gate off (the default) nothing is refused.
#[tokio::test]
async fn deletion_protection() {
    let gates = FeatureGates::default().with(kruise::core::features::Gate::ResourcesDeletionProtection, true);
    let app = App::with(gates, Arc::new(EmptyView));
    let mut protected = ud(clone_set_spec());
    protected["metadata"]["labels"] = json!({"policy.kruise.io/delete-protection": "Cascading"});
    let delete =
        ReviewRequest::new(Operation::Delete, "apps.kruise.io", "v1alpha1", "UnitedDeployment", "uniteddeployments")
            .name("web")
            .namespace("ns")
            .old_object(protected.clone());
    let r = app.send(VALIDATE[0], &delete).await;
    assert_eq!(r["allowed"], false, "{r}");
    assert_eq!(r["status"]["code"], 403, "{r}");
    assert_eq!(
        r["status"]["message"],
        "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading and replicas 6>0"
    );
    assert_eq!(self::app().send(VALIDATE[0], &delete).await["allowed"], true, "gate off");
    let mut empty = protected;
    empty["spec"]["replicas"] = json!(0);
    let delete =
        ReviewRequest::new(Operation::Delete, "apps.kruise.io", "v1alpha1", "UnitedDeployment", "uniteddeployments")
            .name("web")
            .namespace("ns")
            .old_object(empty);
    let r = app.send(VALIDATE[0], &delete).await;
    assert_eq!(r["allowed"], true, "{r}");
}
