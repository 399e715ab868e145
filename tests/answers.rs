//! Exact answers (issue 16): the admission hot path may be rewritten for speed, but not one byte
//! of an answer may change. This test sends a fixed corpus through the in-process router — the
//! example reviews, variants of the workload reviews, and a few hundred generated pods with
//! SidecarSets (re-sent once mutated, as a re-invocation) — and compares every response body with
//! the one recorded under `tests/data/answers/` before the rewrite.
//!
//! The recorded form is the response body with the base64 patch decoded in place and timestamps
//! (`updateTimestamp`, written from the clock) masked. `KRUISE_RECORD_ANSWERS=1` rewrites the
//! files; only do that for a deliberate change of behaviour, and say so in the commit.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::fmt::Write as _;
use std::sync::Arc;

use axum::body::Body;
use base64::Engine;
use common::sidecar::sidecarset;
use common::snapshot;
use http_body_util::BodyExt;
use kruise::core::features::FeatureGates;
use kruise::metrics::Metrics;
use kruise::webhook::Context;
use kruise::webhook::http::{AppState, router};
use kruise::webhook::paths;
use kruise::webhook::request::ReviewRequest;
use kube::core::admission::Operation;
use serde_json::{Value, json};
use tower::ServiceExt;

/// One request of the corpus.
struct Request {
    name: String,
    path: &'static str,
    body: Vec<u8>,
}

fn examples(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/reviews").join(name);
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

async fn answer(app: &axum::Router, path: &str, body: Vec<u8>) -> (u16, Vec<u8>) {
    let req =
        axum::http::Request::post(path).header("content-type", "application/json").body(Body::from(body)).unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    let code = resp.status().as_u16();
    (code, resp.into_body().collect().await.unwrap().to_bytes().to_vec())
}

/// The body with its patch decoded and clock-written timestamps masked.
fn recorded_form(code: u16, body: &[u8]) -> String {
    let mut text = String::from_utf8(body.to_vec()).unwrap();
    const KEY: &str = "\"patch\":\"";
    if let Some(start) = text.find(KEY).map(|i| i + KEY.len()) {
        let end = start + text[start..].find('"').unwrap();
        let decoded = base64::engine::general_purpose::STANDARD.decode(&text[start..end]).unwrap();
        text.replace_range(start - 1..end + 1, &format!("<{}>", String::from_utf8(decoded).unwrap()));
    }
    format!("{code} {}", mask_timestamps(&text))
}

/// Replaces `dddd-dd-ddTdd:dd:ddZ` with `<time>`.
fn mask_timestamps(s: &str) -> String {
    let b = s.as_bytes();
    let shape = b"dddd-dd-ddTdd:dd:ddZ";
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        let fits = i + shape.len() <= b.len()
            && shape.iter().zip(&b[i..]).all(|(p, c)| if *p == b'd' { c.is_ascii_digit() } else { p == c });
        if fits {
            out.push_str("<time>");
            i += shape.len();
        } else {
            let ch = s[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// Runs a corpus against a router and returns its recorded form, one line per request; a
/// mutated pod is sent again as it would be after the patch (re-invocation).
async fn run_corpus(app: &axum::Router, requests: Vec<Request>) -> String {
    let mut out = String::new();
    for r in requests {
        let (code, body) = answer(app, r.path, r.body.clone()).await;
        writeln!(out, "{}\t{}", r.name, recorded_form(code, &body)).unwrap();
        if r.path == "/mutate-pod"
            && let Some(patched) = patched_request(&r.body, &body)
        {
            let (code, body) = answer(app, r.path, patched).await;
            writeln!(out, "{} (again)\t{}", r.name, recorded_form(code, &body)).unwrap();
        }
    }
    out
}

/// The request with its object patched by the answer, when the answer has a patch.
fn patched_request(request: &[u8], answer: &[u8]) -> Option<Vec<u8>> {
    let answer: Value = serde_json::from_slice(answer).ok()?;
    let patch = answer["response"]["patch"].as_str()?;
    let patch: json_patch::Patch =
        serde_json::from_slice(&base64::engine::general_purpose::STANDARD.decode(patch).ok()?).ok()?;
    let mut review: Value = serde_json::from_slice(request).ok()?;
    json_patch::patch(&mut review["request"]["object"], &patch).ok()?;
    Some(serde_json::to_vec(&review).unwrap())
}

fn compare(corpus: &str, got: &str) {
    let file =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/answers").join(format!("{corpus}.txt"));
    if std::env::var_os("KRUISE_RECORD_ANSWERS").is_some() {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    for (n, (w, g)) in want.lines().zip(got.lines()).enumerate() {
        assert_eq!(g, w, "{corpus}: line {} differs", n + 1);
    }
    assert_eq!(got.lines().count(), want.lines().count(), "{corpus}: number of answers");
}

fn app(objects: &[Value], gates: &str) -> axum::Router {
    let ctx = Context::with_gates(FeatureGates::parse(gates).unwrap(), Arc::new(snapshot(objects)));
    router(Arc::new(AppState::new(ctx, Metrics::new())))
}

/// Sets `pointer` (created when missing) or removes it (`None`) in a copy of `v`.
fn edit(v: &Value, edits: &[(&str, Option<Value>)]) -> Value {
    let mut out = v.clone();
    for (pointer, value) in edits {
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        let mut node = &mut out;
        for token in parent.split('/').filter(|t| !t.is_empty()) {
            if !node[token].is_object() {
                node[token] = json!({});
            }
            node = &mut node[token];
        }
        match value {
            Some(v) => node[key] = v.clone(),
            None => {
                node.as_object_mut().unwrap().remove(key);
            }
        }
    }
    out
}

/// Pointers to set (or remove, with `None`) in a review.
type Edits = Vec<(String, Option<Value>)>;

fn request(name: impl Into<String>, path: &'static str, review: &Value) -> Request {
    Request { name: name.into(), path, body: serde_json::to_vec(review).unwrap() }
}

#[tokio::test]
async fn workload_and_sidecarset_answers_are_unchanged() {
    let cloneset = examples("cloneset-create.json");
    let update = examples("cloneset-update-inplaceonly-env.json");
    let asts = examples("statefulset-create.json");
    let sidecar = examples("sidecarset-create.json");
    let o = "/request/object";
    let cloneset_edits: Vec<(&str, Edits)> = vec![
        ("as sent", vec![]),
        ("no replicas", vec![(format!("{o}/spec/replicas"), None)]),
        ("negative replicas", vec![(format!("{o}/spec/replicas"), Some(json!(-1)))]),
        ("in-place only", vec![(format!("{o}/spec/updateStrategy"), Some(json!({"type": "InPlaceOnly"})))]),
        (
            "surge and partition",
            vec![(
                format!("{o}/spec/updateStrategy"),
                Some(json!({"type": "ReCreate", "partition": "50%", "maxSurge": "20%", "maxUnavailable": 0})),
            )],
        ),
        ("selector mismatch", vec![(format!("{o}/spec/selector"), Some(json!({"matchLabels": {"app": "other"}})))]),
        (
            "unknown fields",
            vec![
                (format!("{o}/spec/futureField"), Some(json!({"x": [1, 2]}))),
                (format!("{o}/metadata/annotations"), Some(json!({"a/b~c": "1"}))),
            ],
        ),
        (
            "claim templates",
            vec![(
                format!("{o}/spec/volumeClaimTemplates"),
                Some(json!([{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}}}}])),
            )],
        ),
        ("scale strategy", vec![(format!("{o}/spec/scaleStrategy"), Some(json!({"maxUnavailable": "10%"})))]),
        ("empty template", vec![(format!("{o}/spec/template"), Some(json!({})))]),
    ];
    let asts_edits: Vec<(&str, Edits)> = vec![
        ("as sent", vec![]),
        ("ordered with max unavailable", vec![(format!("{o}/spec/podManagementPolicy"), Some(json!("OrderedReady")))]),
        (
            "no replicas, no policy",
            vec![(format!("{o}/spec/replicas"), None), (format!("{o}/spec/podManagementPolicy"), None)],
        ),
        ("status on create", vec![(format!("{o}/status"), Some(json!({"replicas": 3, "future": 1})))]),
        ("reserve ordinals", vec![(format!("{o}/spec/reserveOrdinals"), Some(json!([1, "3-5"])))]),
        (
            "retention policy",
            vec![(
                format!("{o}/spec/persistentVolumeClaimRetentionPolicy"),
                Some(json!({"whenDeleted": "Delete", "whenScaled": "Retain"})),
            )],
        ),
        ("v1alpha1", vec![(format!("{o}/apiVersion"), Some(json!("apps.kruise.io/v1alpha1")))]),
        (
            "bad max unavailable",
            vec![(format!("{o}/spec/updateStrategy/rollingUpdate/maxUnavailable"), Some(json!("150%")))],
        ),
    ];
    let mut requests = Vec::new();
    for (name, edits) in &cloneset_edits {
        let edits: Vec<(&str, Option<Value>)> = edits.iter().map(|(p, v)| (p.as_str(), v.clone())).collect();
        let review = edit(&cloneset, &edits);
        requests.push(request(format!("cloneset mutate {name}"), paths::MUTATE_CLONESET, &review));
        requests.push(request(format!("cloneset validate {name}"), paths::VALIDATE_CLONESET, &review));
        let review = edit(&update, &edits);
        requests.push(request(format!("cloneset update mutate {name}"), paths::MUTATE_CLONESET, &review));
        requests.push(request(format!("cloneset update validate {name}"), paths::VALIDATE_CLONESET, &review));
    }
    for (name, edits) in &asts_edits {
        let edits: Vec<(&str, Option<Value>)> = edits.iter().map(|(p, v)| (p.as_str(), v.clone())).collect();
        let review = edit(&asts, &edits);
        requests.push(request(format!("asts mutate {name}"), paths::MUTATE_STATEFULSET, &review));
        requests.push(request(format!("asts validate {name}"), paths::VALIDATE_STATEFULSET, &review));
    }
    for (name, review) in [
        ("as sent", sidecar.clone()),
        ("v1beta1 review", edit(&sidecar, &[("/apiVersion", Some(json!("admission.k8s.io/v1beta1")))])),
        ("bad container", edit(&sidecar, &[("/request/object/spec/containers", Some(json!([{"name": "Bad_Name"}])))])),
    ] {
        requests.push(request(format!("sidecarset mutate {name}"), paths::MUTATE_SIDECARSET, &review));
        requests.push(request(format!("sidecarset validate {name}"), paths::VALIDATE_SIDECARSET, &review));
    }
    for (name, body) in [
        ("not json", b"{".to_vec()),
        ("not a review", b"{\"kind\":\"Pod\",\"apiVersion\":\"v1\"}".to_vec()),
        ("no request", b"{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\"}".to_vec()),
    ] {
        requests.push(Request {
            name: format!("malformed {name}"),
            path: "/mutate-apps-kruise-io-v1alpha1-cloneset",
            body,
        });
    }
    let routed = paths::routed_paths();
    for r in &requests {
        assert!(routed.contains(&r.path), "{} is not routed", r.path);
    }
    let got = run_corpus(&app(&[], ""), requests).await;
    compare("workloads", &got);
}

/// A small deterministic generator (xorshift64*), so that the corpus is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

fn gen_container(rng: &mut Rng, name: &str) -> Value {
    let mut c = json!({"name": name, "image": format!("app:{}", rng.below(3))});
    let envs: Vec<Value> =
        (0..rng.below(3)).map(|e| json!({"name": format!("E{e}"), "value": format!("{name}-{e}")})).collect();
    if !envs.is_empty() {
        c["env"] = json!(envs);
    }
    let mounts: Vec<Value> = (0..rng.below(3))
        .map(|v| {
            let mut m = json!({"name": format!("v{v}"), "mountPath": format!("/{name}/p{v}")});
            if v == 1 {
                m["subPathExpr"] = json!("$(E0)/$(E1)");
            }
            m
        })
        .collect();
    if !mounts.is_empty() {
        c["volumeMounts"] = json!(mounts);
    }
    if rng.chance(15) {
        c["volumeDevices"] = json!([{"name": "v2", "devicePath": format!("/dev/{name}")}]);
    }
    if rng.chance(20) {
        c["futureField"] = json!({"nested": [1, {"k": "v"}]});
    }
    if rng.chance(30) {
        c["resources"] = json!({"requests": {"cpu": "100m", "memory": "64Mi"}});
        c["terminationMessagePath"] = json!("/dev/termination-log");
        c["terminationMessagePolicy"] = json!("File");
        c["imagePullPolicy"] = json!("IfNotPresent");
    }
    if rng.chance(10) {
        c["env"] = json!([{"name": "KRUISE_CONTAINER_PRIORITY", "value": format!("{}", rng.below(3))}]);
    }
    c
}

fn gen_pod(rng: &mut Rng) -> Value {
    let mut containers: Vec<Value> = (0..1 + rng.below(3)).map(|i| gen_container(rng, &format!("app-{i}"))).collect();
    if rng.chance(15) {
        // A container named like a sidecar: injection replaces it.
        containers.push(json!({"name": "s0-c0", "image": "old:0"}));
    }
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("p-{}", rng.below(1000)), "namespace": "default",
                     "labels": {"app": if rng.chance(70) { "a" } else { "b" }}},
        "spec": {"containers": containers}});
    if rng.chance(50) {
        pod["metadata"]["creationTimestamp"] = Value::Null;
    }
    if rng.chance(40) {
        let mut a = json!({"merge": "{\"pod\":1}", "a/b~c": "x"});
        if rng.chance(30) {
            a["apps.kruise.io/container-launch-priority"] = json!("Ordered");
        }
        pod["metadata"]["annotations"] = a;
    }
    if rng.chance(20) {
        pod["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "name": "c", "uid": "u", "controller": true}]);
    }
    if rng.chance(70) {
        pod["spec"]["volumes"] = json!([{"name": "v0", "emptyDir": {}}, {"name": "v1", "emptyDir": {}},
            {"name": "v2", "persistentVolumeClaim": {"claimName": "c"}}]);
    }
    if rng.chance(30) {
        pod["spec"]["initContainers"] = json!([{"name": "setup", "image": "setup:1"}]);
    }
    if rng.chance(30) {
        pod["spec"]["imagePullSecrets"] = json!([{"name": format!("secret-{}", rng.below(2))}]);
    }
    if rng.chance(40) {
        pod["spec"]["restartPolicy"] = json!("Always");
        pod["spec"]["dnsPolicy"] = json!("ClusterFirst");
        pod["status"] = json!({});
    }
    pod
}

fn gen_set(rng: &mut Rng, i: u64) -> Value {
    let selector = match rng.below(4) {
        0 | 1 => json!({"matchLabels": {"app": "a"}}),
        2 => json!({"matchExpressions": [{"key": "app", "operator": "Exists"}]}),
        _ => json!({"matchLabels": {"tier": "x"}}),
    };
    let volumes: Vec<Value> = (0..rng.below(3))
        .map(|k| json!({"name": if k == 0 { "v0".into() } else { format!("s{i}-v{k}") }, "emptyDir": {}}))
        .collect();
    let containers: Vec<Value> = (0..rng.below(3))
        .map(|j| {
            let mut c = json!({"name": format!("s{i}-c{j}"), "image": format!("side{i}:1"),
                "podInjectPolicy": if rng.chance(50) { "BeforeAppContainer" } else { "AfterAppContainer" },
                "shareVolumePolicy": {"type": if rng.chance(50) { "enabled" } else { "disabled" }}});
            if rng.chance(40) {
                c["transferEnv"] = json!([{"sourceContainerName": "app-0", "envName": "E0"}]);
            }
            if rng.chance(30) && volumes.len() > 1 {
                c["volumeMounts"] = json!([{"name": format!("s{i}-v1"), "mountPath": "/side"}]);
            }
            if rng.chance(20) {
                c["upgradeStrategy"] = json!({"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "empty:1"});
            }
            if rng.chance(20) {
                c["shareVolumeDevicePolicy"] = json!({"type": "enabled"});
            }
            c
        })
        .collect();
    let init: Vec<Value> = (0..rng.below(2))
        .map(|k| {
            let mut c = json!({"name": format!("s{i}-i{k}"), "image": "init:1"});
            if rng.chance(50) {
                c["restartPolicy"] = json!("Always");
            }
            c
        })
        .collect();
    let mut spec = json!({"selector": selector, "containers": containers, "initContainers": init, "volumes": volumes});
    if rng.chance(30) {
        spec["imagePullSecrets"] = json!([{"name": format!("secret-{}", rng.below(3))}]);
    }
    match rng.below(5) {
        1 => spec["namespace"] = json!("default"),
        2 => spec["namespace"] = json!("other"),
        _ => {}
    }
    match rng.below(5) {
        1 => spec["patchPodMetadata"] = json!([{"annotations": {format!("set-{i}/x"): "r"}, "patchPolicy": "Retain"}]),
        2 => {
            spec["patchPodMetadata"] =
                json!([{"annotations": {"merge": format!("{{\"s{i}\":1}}")}, "patchPolicy": "MergePatchJson"}])
        }
        _ => {}
    }
    sidecarset(&format!("set-{i}"), spec)
}

#[tokio::test]
async fn pod_injection_answers_are_unchanged() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut out = String::new();
    // The example review with the example SidecarSet, and with every gate that changes injection.
    let sample: Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sidecarset.yaml"))
            .unwrap(),
    )
    .unwrap();
    for gates in ["", "KruisePodReadinessGate=true,EnableSortSidecarContainerByName=true", "PodWebhook=false"] {
        let requests = vec![request(format!("example [{gates}]"), "/mutate-pod", &examples("pod-create.json"))];
        out.push_str(&run_corpus(&app(std::slice::from_ref(&sample), gates), requests).await);
    }
    for case in 0..300 {
        let sets: Vec<Value> = (0..rng.below(4)).map(|i| gen_set(&mut rng, i)).collect();
        let pod = gen_pod(&mut rng);
        let gates = match rng.below(6) {
            0 => "KruisePodReadinessGate=true",
            1 => "EnableSortSidecarContainerByName=true",
            _ => "",
        };
        let review = ReviewRequest::new(Operation::Create, "", "v1", "Pod", "pods")
            .namespace("default")
            .uid("00000000-0000-0000-0000-000000000001")
            .object(pod.clone())
            .to_json();
        let mut requests = vec![request(format!("case {case} [{gates}]"), "/mutate-pod", &review)];
        if case % 25 == 0 {
            let mut other = review.clone();
            other["request"]["subResource"] = json!("status");
            requests.push(request(format!("case {case} subresource"), "/mutate-pod", &other));
            other["request"]["operation"] = json!("UPDATE");
            other["request"]["oldObject"] = pod.clone();
            requests.push(request(format!("case {case} update"), "/mutate-pod", &other));
            let mut v1beta1 = review.clone();
            v1beta1["apiVersion"] = json!("admission.k8s.io/v1beta1");
            requests.push(request(format!("case {case} v1beta1"), "/mutate-pod", &v1beta1));
            let mut bad = review.clone();
            bad["request"]["object"]["spec"] = json!({"containers": 1});
            requests.push(request(format!("case {case} bad pod"), "/mutate-pod", &bad));
        }
        out.push_str(&run_corpus(&app(&sets, gates), requests).await);
    }
    compare("pods", &out);
}
