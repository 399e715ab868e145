//! The CloneSet and Advanced StatefulSet mutating handlers (spec §1.1.3, §1.2.3, §1.5), driven
//! in-process through `webhook::handle` exactly as the server calls it; every patch is applied to
//! the request object and the result compared with the expected object.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use common::apply;
use kruise::cluster::EmptyView;
use kruise::core::features::{FeatureGates, Gate};
use kruise::webhook::paths::Handler;
use kruise::webhook::request::ReviewRequest;
use kruise::webhook::{Context, Verdict};
use kube::core::admission::Operation;
use serde_json::{Value, json};

fn ctx(gates: FeatureGates) -> Context {
    Context::with_gates(gates, Arc::new(EmptyView))
}

/// A review of `object` (and `old`) in namespace `default`, as the apiserver sends it.
fn review(
    resource: &str,
    version: &str,
    kind: &str,
    op: Operation,
    object: &Value,
    old: Option<&Value>,
) -> ReviewRequest {
    ReviewRequest::new(op, "apps.kruise.io", version, kind, resource)
        .name("x")
        .namespace("default")
        .objects(Some(object), old)
}

/// Runs a handler; returns the verdict and the object with the patch applied.
fn run(handler: Handler, gates: FeatureGates, review: &ReviewRequest) -> (Verdict, Value) {
    let verdict = common::run(&ctx(gates), handler, review);
    let object = review.to_json()["request"]["object"].clone();
    let object = apply(&object, verdict.patch.as_ref());
    (verdict, object)
}

fn cloneset(spec: Value) -> Value {
    json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
           "metadata": {"name": "x", "namespace": "default", "creationTimestamp": null}, "spec": spec})
}

fn template() -> Value {
    json!({"metadata": {"labels": {"app": "x"}},
           "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]}})
}

/// The template of `template()` after §1.5 pod defaults.
fn defaulted_template() -> Value {
    json!({"metadata": {"labels": {"app": "x"}},
           "spec": {
               "containers": [{"name": "main", "image": "nginx:1.27", "imagePullPolicy": "Always",
                               "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
               "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "securityContext": {},
               "terminationGracePeriodSeconds": 30, "schedulerName": "default-scheduler"}})
}

fn cloneset_defaults(template: Value) -> Value {
    json!({"replicas": 1, "revisionHistoryLimit": 10, "selector": {"matchLabels": {"app": "x"}},
           "template": template,
           "updateStrategy": {"type": "ReCreate", "partition": 0, "maxUnavailable": "20%", "maxSurge": 0}})
}

#[test]
fn cloneset_create_gets_every_default() {
    let obj = cloneset(json!({"selector": {"matchLabels": {"app": "x"}}, "template": template()}));
    let (v, out) = run(
        Handler::MutateCloneSet,
        FeatureGates::default(),
        &review("clonesets", "v1alpha1", "CloneSet", Operation::Create, &obj, None),
    );
    assert!(v.allowed && v.patch.is_some());
    assert_eq!(out["spec"], cloneset_defaults(defaulted_template()));
    assert_eq!(out["metadata"], obj["metadata"], "metadata untouched (no noise ops)");
}

#[test]
fn cloneset_strategy_defaults_table() {
    // (given updateStrategy, expected updateStrategy)
    let cases = [
        (
            json!({"type": "InPlaceIfPossible"}),
            json!({"type": "InPlaceIfPossible", "partition": 0, "maxUnavailable": "20%", "maxSurge": 0, "inPlaceUpdateStrategy": {}}),
        ),
        (
            json!({"type": "InPlaceOnly", "inPlaceUpdateStrategy": {"gracePeriodSeconds": 10}}),
            json!({"type": "InPlaceOnly", "partition": 0, "maxUnavailable": "20%", "maxSurge": 0, "inPlaceUpdateStrategy": {"gracePeriodSeconds": 10}}),
        ),
        (
            json!({"partition": "30%", "maxUnavailable": 3, "maxSurge": "10%", "paused": true}),
            json!({"type": "ReCreate", "partition": "30%", "maxUnavailable": 3, "maxSurge": "10%", "paused": true}),
        ),
    ];
    for (given, want) in cases {
        let obj = cloneset(
            json!({"replicas": 2, "selector": {"matchLabels": {"app": "x"}}, "template": template(), "updateStrategy": given}),
        );
        let (_, out) = run(
            Handler::MutateCloneSet,
            FeatureGates::default(),
            &review("clonesets", "v1alpha1", "CloneSet", Operation::Create, &obj, None),
        );
        assert_eq!(out["spec"]["updateStrategy"], want);
        assert_eq!(out["spec"]["replicas"], 2);
    }
}

#[test]
fn cloneset_update_defaults_the_template_only_when_it_changed() {
    let old = cloneset(cloneset_defaults(template()));
    // Unchanged template (without defaults): only non-template defaults are applied.
    let mut new = old.clone();
    new["spec"]["updateStrategy"] = json!({});
    let (_, out) = run(
        Handler::MutateCloneSet,
        FeatureGates::default(),
        &review("clonesets", "v1alpha1", "CloneSet", Operation::Update, &new, Some(&old)),
    );
    assert_eq!(out["spec"]["template"], template(), "template left alone");
    assert_eq!(out["spec"]["updateStrategy"]["maxUnavailable"], "20%");

    // Changed template: defaulted.
    let mut new = old.clone();
    new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.28");
    let (_, out) = run(
        Handler::MutateCloneSet,
        FeatureGates::default(),
        &review("clonesets", "v1alpha1", "CloneSet", Operation::Update, &new, Some(&old)),
    );
    let mut want = defaulted_template();
    want["spec"]["containers"][0]["image"] = json!("nginx:1.28");
    assert_eq!(out["spec"]["template"], want);

    // TemplateNoDefaults: never.
    let gates = FeatureGates::default().with(Gate::TemplateNoDefaults, true);
    let obj = cloneset(json!({"selector": {"matchLabels": {"app": "x"}}, "template": template()}));
    let (_, out) = run(
        Handler::MutateCloneSet,
        gates,
        &review("clonesets", "v1alpha1", "CloneSet", Operation::Create, &obj, None),
    );
    assert_eq!(out["spec"]["template"], template());
}

#[test]
fn already_defaulted_object_gets_no_patch() {
    let obj = cloneset(cloneset_defaults(defaulted_template()));
    let (v, out) = run(
        Handler::MutateCloneSet,
        FeatureGates::default(),
        &review("clonesets", "v1alpha1", "CloneSet", Operation::Create, &obj, None),
    );
    assert!(v.allowed);
    assert!(v.patch.is_none(), "{:?}", v.patch);
    assert_eq!(out, obj);
}

#[test]
fn unknown_fields_and_odd_keys_survive_the_patch() {
    let mut obj =
        cloneset(json!({"selector": {"matchLabels": {"app": "x"}}, "template": template(), "futureField": {"a": 1}}));
    obj["metadata"]["annotations"] =
        json!({"example.com/a~b": "1", "kubectl.kubernetes.io/last-applied-configuration": "{}"});
    obj["spec"]["template"]["spec"]["containers"][0]["futureContainerField"] = json!(true);
    obj["spec"]["template"]["spec"]["futurePodField"] = json!("x");
    obj["status"] = json!({"replicas": 3, "futureStatus": 1});
    let (_, out) = run(
        Handler::MutateCloneSet,
        FeatureGates::default(),
        &review("clonesets", "v1alpha1", "CloneSet", Operation::Create, &obj, None),
    );
    assert_eq!(out["spec"]["futureField"], json!({"a": 1}));
    assert_eq!(out["spec"]["template"]["spec"]["containers"][0]["futureContainerField"], true);
    assert_eq!(out["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"], "Always");
    assert_eq!(out["spec"]["template"]["spec"]["futurePodField"], "x");
    assert_eq!(out["metadata"], obj["metadata"]);
    assert_eq!(out["status"], obj["status"], "CloneSet status untouched");
}

#[test]
fn pod_template_defaults_table() {
    // (pod spec fragment, path into the defaulted spec, expected value)
    let spec = json!({
        "containers": [{"name": "main", "image": "nginx",
            "ports": [{"containerPort": 80}],
            "env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
            "resources": {"requests": {"cpu": "0.5", "memory": "1.5Gi"}, "limits": {"cpu": "1000m", "memory": "1e3"}},
            "livenessProbe": {"httpGet": {"port": 80}},
            "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 5},
            "lifecycle": {"preStop": {"httpGet": {"port": 8080}}}}],
        "initContainers": [
            {"name": "init-latest", "image": "busybox:latest"},
            {"name": "init-tagged", "image": "busybox:1.36"},
            {"name": "init-untagged", "image": "busybox"},
            {"name": "init-digest", "image": "busybox@sha256:1111111111111111111111111111111111111111111111111111111111111111"}],
        "volumes": [
            {"name": "empty"},
            {"name": "secret", "secret": {"secretName": "s"}},
            {"name": "cm", "configMap": {"name": "c"}},
            {"name": "host", "hostPath": {"path": "/tmp"}},
            {"name": "proj", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}},
                {"downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}}]}},
            {"name": "down", "downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}}],
        "overhead": {"cpu": "0.1"}
    });
    let tpl = json!({"metadata": {"labels": {"app": "x"}}, "spec": spec});
    let obj = cloneset(json!({"selector": {"matchLabels": {"app": "x"}}, "template": tpl}));
    let (_, out) = run(
        Handler::MutateCloneSet,
        FeatureGates::default(),
        &review("clonesets", "v1alpha1", "CloneSet", Operation::Create, &obj, None),
    );
    let s = &out["spec"]["template"]["spec"];
    let cases: &[(&str, Value)] = &[
        ("/containers/0/imagePullPolicy", json!("Always")),
        ("/containers/0/ports/0/protocol", json!("TCP")),
        ("/containers/0/env/0/valueFrom/fieldRef/apiVersion", json!("v1")),
        ("/containers/0/resources/requests/cpu", json!("500m")),
        ("/containers/0/resources/requests/memory", json!("1536Mi")),
        ("/containers/0/resources/limits/cpu", json!("1")),
        ("/containers/0/resources/limits/memory", json!("1e3")),
        (
            "/containers/0/livenessProbe",
            json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
            "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}),
        ),
        ("/containers/0/readinessProbe/periodSeconds", json!(5)),
        ("/containers/0/lifecycle/preStop/httpGet", json!({"port": 8080, "path": "/", "scheme": "HTTP"})),
        ("/initContainers/0/imagePullPolicy", json!("Always")),
        ("/initContainers/1/imagePullPolicy", json!("IfNotPresent")),
        ("/initContainers/2/imagePullPolicy", json!("Always")),
        ("/initContainers/3/imagePullPolicy", json!("IfNotPresent")),
        ("/initContainers/0/terminationMessagePolicy", json!("File")),
        ("/volumes/0", json!({"name": "empty", "emptyDir": {}})),
        ("/volumes/1/secret/defaultMode", json!(420)),
        ("/volumes/2/configMap/defaultMode", json!(420)),
        ("/volumes/3/hostPath/type", json!("")),
        ("/volumes/4/projected/defaultMode", json!(420)),
        ("/volumes/4/projected/sources/0/serviceAccountToken/expirationSeconds", json!(3600)),
        ("/volumes/4/projected/sources/1/downwardAPI/items/0/fieldRef/apiVersion", json!("v1")),
        ("/volumes/5/downwardAPI/defaultMode", json!(420)),
        ("/volumes/5/downwardAPI/items/0/fieldRef/apiVersion", json!("v1")),
        ("/overhead/cpu", json!("100m")),
        ("/dnsPolicy", json!("ClusterFirst")),
        ("/terminationGracePeriodSeconds", json!(30)),
    ];
    for (path, want) in cases {
        assert_eq!(s.pointer(path), Some(want), "{path} in {s:#}");
    }
}

#[test]
fn host_network_ports_only_with_the_gate() {
    let tpl = json!({"metadata": {"labels": {"app": "x"}}, "spec": {"hostNetwork": true,
        "containers": [{"name": "main", "image": "nginx", "ports": [{"containerPort": 8080}]}]}});
    let obj = cloneset(json!({"selector": {"matchLabels": {"app": "x"}}, "template": tpl}));
    let body = review("clonesets", "v1alpha1", "CloneSet", Operation::Create, &obj, None);
    let (_, out) = run(Handler::MutateCloneSet, FeatureGates::default(), &body);
    assert_eq!(out.pointer("/spec/template/spec/containers/0/ports/0/hostPort"), None);
    let gates = FeatureGates::default().with(Gate::DefaultHostNetworkHostPortsInPodTemplates, true);
    let (_, out) = run(Handler::MutateCloneSet, gates, &body);
    assert_eq!(out.pointer("/spec/template/spec/containers/0/ports/0/hostPort"), Some(&json!(8080)));
}

#[test]
fn volume_claim_templates_get_pending_phase_and_normalised_quantities() {
    let vct = json!([{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1.5Gi"}}}}]);
    let obj = cloneset(
        json!({"selector": {"matchLabels": {"app": "x"}}, "template": template(), "volumeClaimTemplates": vct}),
    );
    let (_, out) = run(
        Handler::MutateCloneSet,
        FeatureGates::default(),
        &review("clonesets", "v1alpha1", "CloneSet", Operation::Create, &obj, None),
    );
    let v = &out["spec"]["volumeClaimTemplates"][0];
    assert_eq!(v["status"]["phase"], "Pending");
    assert_eq!(v["spec"]["resources"]["requests"]["storage"], "1536Mi");
}

#[test]
fn bad_requests_are_refused_with_400() {
    let cases = [
        review("clonesets", "v1alpha1", "CloneSet", Operation::Create, &cloneset(json!({"replicas": "3"})), None),
        review("clonesets", "v2", "CloneSet", Operation::Create, &cloneset(json!({})), None),
        review("clonesets", "v1alpha1", "CloneSet", Operation::Create, &Value::Null, None),
        review(
            "clonesets",
            "v1alpha1",
            "CloneSet",
            Operation::Create,
            &cloneset(
                json!({"template": {"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "lots"}}}]}}}),
            ),
            None,
        ),
    ];
    let wants = [
        "cannot decode CloneSet",
        "unsupported version: v2",
        "there is no content to decode",
        "spec.template.spec.containers[0].resources.limits.cpu: quantities must match",
    ];
    for (body, want) in cases.iter().zip(wants) {
        let (v, _) = run(Handler::MutateCloneSet, FeatureGates::default(), body);
        assert!(!v.allowed);
        assert_eq!(v.code, 400);
        assert!(v.message.contains(want), "{} should contain {want}", v.message);
    }
    // DELETE reaches no mutation.
    let (v, _) = run(
        Handler::MutateCloneSet,
        FeatureGates::default(),
        &review("clonesets", "v1alpha1", "CloneSet", Operation::Delete, &Value::Null, Some(&cloneset(json!({})))),
    );
    assert!(v.allowed && v.patch.is_none());
}

fn sts(version: &str, spec: Value, status: Option<Value>) -> Value {
    let mut o = json!({"apiVersion": format!("apps.kruise.io/{version}"), "kind": "StatefulSet",
                       "metadata": {"name": "x", "namespace": "default"}, "spec": spec});
    if let Some(s) = status {
        o["status"] = s;
    }
    o
}

#[test]
fn statefulset_v1beta1_create_gets_every_default_and_status_is_reset() {
    let obj = sts(
        "v1beta1",
        json!({"selector": {"matchLabels": {"app": "x"}}, "template": template(), "serviceName": "svc"}),
        Some(json!({"replicas": 5, "readyReplicas": 2})),
    );
    let (v, out) = run(
        Handler::MutateStatefulSet,
        FeatureGates::default(),
        &review("statefulsets", "v1beta1", "StatefulSet", Operation::Create, &obj, None),
    );
    assert!(v.allowed);
    assert_eq!(
        out["spec"],
        json!({
            "replicas": 1, "revisionHistoryLimit": 10, "serviceName": "svc", "podManagementPolicy": "OrderedReady",
            "selector": {"matchLabels": {"app": "x"}}, "template": defaulted_template(),
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": 1, "podUpdatePolicy": "ReCreate", "minReadySeconds": 0}},
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"}
        })
    );
    assert_eq!(
        out["status"],
        json!({"replicas": 0, "readyReplicas": 0, "availableReplicas": 0, "currentReplicas": 0, "updatedReplicas": 0})
    );
}

#[test]
fn statefulset_v1alpha1_is_answered_against_the_v1alpha1_object() {
    let obj = sts(
        "v1alpha1",
        json!({"selector": {"matchLabels": {"app": "x"}}, "template": template(),
                                     "updateStrategy": {"rollingUpdate": {"maxUnavailable": "50%"}}}),
        None,
    );
    let (_, out) = run(
        Handler::MutateStatefulSet,
        FeatureGates::default(),
        &review("statefulsets", "v1alpha1", "StatefulSet", Operation::Create, &obj, None),
    );
    assert_eq!(out["apiVersion"], "apps.kruise.io/v1alpha1");
    assert_eq!(
        out["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {
        "partition": 0, "maxUnavailable": "50%", "podUpdatePolicy": "ReCreate", "minReadySeconds": 0}})
    );
    assert!(out["spec"].get("persistentVolumeClaimRetentionPolicy").is_none(), "v1alpha1 has no such field");
    assert!(out.get("status").is_none(), "no status added");
}

#[test]
fn statefulset_gates_and_on_delete() {
    let obj = sts(
        "v1beta1",
        json!({"selector": {"matchLabels": {"app": "x"}}, "template": template(), "updateStrategy": {"type": "OnDelete"}}),
        None,
    );
    let gates = FeatureGates::parse("StatefulSetAutoDeletePVC=false,StatefulSetAutoResizePVCGate=true").unwrap();
    let (_, out) = run(
        Handler::MutateStatefulSet,
        gates,
        &review("statefulsets", "v1beta1", "StatefulSet", Operation::Create, &obj, None),
    );
    assert_eq!(out["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
    assert!(out["spec"].get("persistentVolumeClaimRetentionPolicy").is_none());
    assert_eq!(out["spec"]["volumeClaimUpdateStrategy"], json!({"type": "OnDelete"}));
}

#[test]
fn statefulset_update_with_unchanged_template_and_no_changes_gets_no_patch() {
    let spec = json!({
        "replicas": 1, "revisionHistoryLimit": 10, "podManagementPolicy": "Parallel",
        "selector": {"matchLabels": {"app": "x"}}, "template": template(),
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": 1, "podUpdatePolicy": "ReCreate", "minReadySeconds": 0}},
        "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"}
    });
    let old = sts("v1beta1", spec.clone(), None);
    let new = sts("v1beta1", spec, None);
    let (v, _) = run(
        Handler::MutateStatefulSet,
        FeatureGates::default(),
        &review("statefulsets", "v1beta1", "StatefulSet", Operation::Update, &new, Some(&old)),
    );
    assert!(v.allowed && v.patch.is_none(), "{:?}", v.patch);
}
