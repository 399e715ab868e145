//! One function per fuzz target, `fn(&[u8])`, panicking when a property fails. The cargo-fuzz
//! targets under `fuzz/fuzz_targets/` call them, and `tests/fuzz_regressions.rs` feeds them the
//! inputs kept under `tests/data/fuzz/<target>/` on the stable toolchain.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use arbitrary::Unstructured;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kruise::apis::sidecarset::{SidecarContainer, SidecarSetSpec};
use kruise::check::{Settings, Status, check};
use kruise::cluster::files::Snapshot;
use kruise::compat::image::{ImageRef, default_pull_policy, parse_image, parse_image_legacy};
use kruise::compat::quantity::{Quantity, normalize};
use kruise::compat::selector::{self, Operator, Selector};
use kruise::core::features::FeatureGates;
use kruise::core::sidecar::{defaults, hash};
use kruise::source::read_text;
use kruise::webhook::Context;
use kruise::webhook::paths::Handler;
use serde_json::{Value, json};

use super::admission::{HANDLERS, check_body};
use super::generate::Gen;

/// A target: panics when its property fails for the input.
pub type Target = fn(&[u8]);

/// Every target by name (the name of its file under `fuzz/fuzz_targets/` and of its directory
/// of kept inputs).
pub const TARGETS: &[(&str, Target)] = &[
    ("review_bytes", review_bytes),
    ("router_bytes", router_bytes),
    ("pod_shaped", pod_shaped),
    ("cloneset_shaped", cloneset_shaped),
    ("statefulset_shaped", statefulset_shaped),
    ("sidecarset_shaped", sidecarset_shaped),
    ("check_yaml", check_yaml),
    ("quantity", quantity),
    ("selector", selector),
    ("image", image),
    ("sidecarset_hash", sidecarset_hash),
];

/// A context holding `objects` (those the view cannot hold are left out: a generated object
/// may be malformed on purpose).
pub fn context(objects: &[Value], gates: &str) -> Context {
    let mut snap = Snapshot::default();
    for o in objects {
        let _ = snap.insert(o.clone());
    }
    Context::with_gates(FeatureGates::parse(gates).unwrap_or_default(), Arc::new(snap))
}

/// The view of the byte-level targets: the example SidecarSet and one that matches every pod
/// labelled `app`, so that pods sent as bytes meet injection.
fn example_context() -> &'static Context {
    static CTX: OnceLock<Context> = OnceLock::new();
    CTX.get_or_init(|| {
        let sample: Value =
            serde_yaml_ng::from_str(include_str!("../../examples/sidecarset.yaml")).unwrap_or(Value::Null);
        let wide = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet", "metadata": {"name": "wide"},
            "spec": {"selector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
                     "containers": [{"name": "wide-c", "image": "side:1", "shareVolumePolicy": {"type": "enabled"},
                                     "transferEnv": [{"sourceContainerName": "web", "envName": "LOG_LEVEL"}]}],
                     "volumes": [{"name": "wide-v", "emptyDir": {}}]}});
        context(&[sample, wide], "")
    })
}

/// Arbitrary bytes as an AdmissionReview body, answered by every handler.
pub fn review_bytes(data: &[u8]) {
    for handler in HANDLERS {
        if check_body(example_context(), handler, data).is_none() {
            return;
        }
    }
}

/// Arbitrary bytes through the HTTP router: first byte the path, second the content type.
pub fn router_bytes(data: &[u8]) {
    use axum::body::Body;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    static APP: OnceLock<(tokio::runtime::Runtime, axum::Router)> = OnceLock::new();
    let (rt, app) = APP.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap_or_else(|e| panic!("runtime: {e}"));
        let state = kruise::webhook::http::AppState::new(example_context().clone(), kruise::metrics::Metrics::new());
        (rt, kruise::webhook::http::router(Arc::new(state)))
    });
    let mut paths = kruise::webhook::paths::routed_paths();
    paths.extend(["/", "/healthz", "/mutate-pods", "/validate-pod/x"]);
    let path = paths[usize::from(data.first().copied().unwrap_or(0)) % paths.len()];
    let content_type = match data.get(1).copied().unwrap_or(0) % 6 {
        0 => None,
        1 => Some("text/plain"),
        2 => Some("application/json; charset=utf-8"),
        3 => Some("APPLICATION/JSON"),
        _ => Some("application/json"),
    };
    let body = data.get(2..).unwrap_or_default().to_vec();
    let mut req = axum::http::Request::post(path);
    if let Some(ct) = content_type {
        req = req.header("content-type", ct);
    }
    let req = req.body(Body::from(body.clone())).unwrap_or_else(|e| panic!("request: {e}"));
    let (status, bytes) = rt.block_on(async {
        let resp = app.clone().oneshot(req).await.unwrap_or_else(|e| match e {});
        let status = resp.status().as_u16();
        (status, resp.into_body().collect().await.map(|b| b.to_bytes().to_vec()).unwrap_or_default())
    });
    if path == "/healthz" {
        assert!(status == 405 || status == 200, "/healthz answered {status}");
        return;
    }
    assert!([200, 400, 404, 405, 413, 415].contains(&status), "{path} answered HTTP {status}");
    let out: Value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("{path}: HTTP {status} with a body that is not JSON: {e}"));
    if status == 200 {
        let review = kruise::webhook::review::decode(&body).unwrap_or_else(|e| panic!("200 for a bad review: {e}"));
        assert_eq!(out["response"]["uid"], review.request.uid.as_str());
        assert_eq!(out["kind"], "AdmissionReview");
    } else {
        assert_eq!(out["kind"], "Status", "{path}: HTTP {status} answers a Status: {out}");
        assert_eq!(out["code"], status, "{path}: the Status carries the HTTP code: {out}");
    }
}

/// A pod CREATE (sometimes another operation) with generated SidecarSets and Namespaces.
pub fn pod_shaped(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let mut g = Gen::new(&mut u);
    let gates = g.gates();
    let sets: Vec<Value> = (0..g.below(4)).map(|i| g.sidecarset(i)).collect();
    let mut objects: Vec<Value> = (0..g.below(3)).map(|_| g.namespace()).collect();
    // The cluster holds the SidecarSets its webhooks admitted (defaulted, validated against the
    // sets before them); one refused is left out. (The draws keep their order: the kept inputs
    // must build the objects they were found with.)
    for set in sets {
        if let Some(admitted) = admitted(&context(&objects, &gates), set) {
            objects.push(admitted);
        }
    }
    let pod = g.pod();
    let op = g.operation(&["CREATE"]);
    let old = (op != "CREATE").then(|| edited(&mut g, &pod));
    let review = g.review(("", "v1", "pods", "Pod"), op, (op != "DELETE").then_some(&pod), old.as_ref());
    send(&context(&objects, &gates), &[Handler::MutatePod], &review);
}

/// `set` as the SidecarSet webhooks admit it on CREATE: defaulted by the mutating handler and
/// accepted by the validating one; `None` when refused.
fn admitted(ctx: &Context, set: Value) -> Option<Value> {
    use kruise::webhook::{handle, request::ReviewRequest};
    let mut set = set;
    for handler in [Handler::MutateSidecarSet, Handler::ValidateSidecarSet] {
        let review = ReviewRequest::for_object(kube::core::admission::Operation::Create, &set).cluster_scoped();
        let verdict = handle(ctx, handler, &review.decode().ok()?)?;
        if !verdict.allowed {
            return None;
        }
        if let Some(patch) = verdict.patch {
            json_patch::patch(&mut set, &patch).ok()?;
        }
    }
    Some(set)
}

/// A CloneSet (v1alpha1 or v1beta1) CREATE, UPDATE or DELETE through its mutating then
/// validating handler.
pub fn cloneset_shaped(data: &[u8]) {
    workload(
        data,
        |g| g.cloneset_any_version(),
        ("apps.kruise.io", "v1alpha1", "clonesets", "CloneSet"),
        [Handler::MutateCloneSet, Handler::ValidateCloneSet],
    );
}

/// An Advanced StatefulSet (v1beta1 or v1alpha1) through its mutating then validating handler.
pub fn statefulset_shaped(data: &[u8]) {
    workload(
        data,
        |g| g.statefulset(),
        ("apps.kruise.io", "v1beta1", "statefulsets", "StatefulSet"),
        [Handler::MutateStatefulSet, Handler::ValidateStatefulSet],
    );
}

/// A SidecarSet (v1alpha1 or v1beta1) through its mutating then validating handler, with other
/// sets in the view (the conflict checks).
pub fn sidecarset_shaped(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let mut g = Gen::new(&mut u);
    let gates = g.gates();
    let others: Vec<Value> = (0..g.below(3)).map(|i| g.sidecarset(i + 1)).collect();
    let set = g.sidecarset(0);
    // A third of the sets are sent as v1beta1 (the storage version), in its own shape.
    let set = if g.chance(33) { g.sidecarset_v1beta1(set) } else { set };
    let version = if set["apiVersion"] == "apps.kruise.io/v1beta1" { "v1beta1" } else { "v1alpha1" };
    let op = g.operation(&["CREATE", "UPDATE"]);
    let old = (op != "CREATE").then(|| edited(&mut g, &set));
    let mut review = g.review(
        ("apps.kruise.io", version, "sidecarsets", "SidecarSet"),
        op,
        (op != "DELETE").then_some(&set),
        old.as_ref(),
    );
    review["request"]["namespace"] = json!("");
    send(&context(&others, &gates), &[Handler::MutateSidecarSet, Handler::ValidateSidecarSet], &review);
}

fn workload(
    data: &[u8],
    build: impl Fn(&mut Gen<'_, '_>) -> Value,
    resource: (&str, &str, &str, &str),
    handlers: [Handler; 2],
) {
    let mut u = Unstructured::new(data);
    let mut g = Gen::new(&mut u);
    let gates = g.gates();
    let object = build(&mut g);
    let op = g.operation(&["CREATE", "UPDATE", "DELETE"]);
    let old = match op {
        "CREATE" => None,
        _ if g.chance(70) => Some(edited(&mut g, &object)),
        _ => Some(build(&mut g)),
    };
    let (group, _, res, kind) = resource;
    let version = object["apiVersion"].as_str().and_then(|a| a.split_once('/')).map_or("v1beta1", |(_, v)| v);
    let version = if ["v1alpha1", "v1beta1"].contains(&version) { version } else { resource.1 };
    let review = g.review((group, version, res, kind), op, (op != "DELETE").then_some(&object), old.as_ref());
    // Pods of the workload, for the CloneSet's podsToDelete checks.
    let pods = vec![json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default",
        "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "c", "uid": "u", "controller": true}]}})];
    send(&context(&pods, &gates), &handlers, &review);
}

/// Up to three random edits of a copy of `v`.
fn edited(g: &mut Gen<'_, '_>, v: &Value) -> Value {
    let mut out = v.clone();
    for _ in 0..1 + g.below(3) {
        g.edit(&mut out);
    }
    out
}

/// Sends a generated review to the mutating handler, then (as the apiserver does) the object it
/// admitted to the validating one.
fn send(ctx: &Context, handlers: &[Handler], review: &Value) {
    let mut body = serde_json::to_vec(review).unwrap_or_default();
    for handler in handlers {
        let answer = check_body(ctx, *handler, &body).unwrap_or_else(|| panic!("a generated review decodes"));
        if !answer.allowed {
            return;
        }
        if let Some(patched) = answer.patched {
            let mut next = review.clone();
            next["request"]["object"] = patched;
            body = serde_json::to_vec(&next).unwrap_or_default();
        }
    }
}

/// `kruise check`'s YAML reader, then the whole offline check of what it read, then the
/// `--mutated-out` YAML read back.
pub fn check_yaml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    // Lines as YAML counts them: `\r\n`, `\n` and a lone `\r` each end one.
    let lines = text.replace("\r\n", "\n").split(['\n', '\r']).count();
    let read = read_text("in.yaml", text);
    for e in &read.problems {
        assert_eq!(e.file, "in.yaml");
        assert!(e.line.is_none_or(|l| l >= 1 && l <= lines + 1), "error line {:?} of {lines} lines", e.line);
        assert!(!e.message.is_empty());
    }
    let manifests = read.objects;
    for m in &manifests {
        assert!(m.line >= 1 && m.line <= lines + 1, "manifest line {} of {lines} lines", m.line);
        for key in ["apiVersion", "kind"] {
            assert!(m.object[key].as_str().is_some_and(|s| !s.is_empty()), "a manifest has {key}");
        }
    }
    let outcomes = check(&manifests, &[], &Snapshot::default(), &Settings::default());
    assert_eq!(outcomes.len(), manifests.len(), "one outcome per object");
    for o in &outcomes {
        assert!(
            !matches!(o.status, Status::Error(_)),
            "check failed on its own: {:?} for {}/{}",
            o.status,
            o.kind,
            o.name
        );
        if let Some(mutated) = &o.mutated {
            // Written as `--mutated-out` writes it (strings YAML 1.1 would misread are quoted).
            let yaml = kruise::compat::yaml::emit::to_yaml(mutated);
            let back = read_text("out.yaml", &yaml);
            assert!(back.problems.is_empty(), "--mutated-out cannot be read back: {:?}\n{yaml}", back.problems);
            let back = back.objects;
            assert_eq!(back.len(), 1, "{yaml}");
            assert_eq!(&back[0].object, mutated, "--mutated-out reads back as another object:\n{yaml}");
        }
    }
}

/// Go's `ParseQuantity` and the defaulting round trip.
pub fn quantity(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else { return };
    if let Ok(q) = Quantity::parse(s) {
        let text = q.canonical();
        let again =
            Quantity::parse(&text).unwrap_or_else(|e| panic!("canonical {text:?} of {s:?} does not parse: {e}"));
        // Stable after at most two rounds, as in Go (see the normalising round trip below:
        // `62.5Ki` prints `64000`, which prints `64k`).
        let second = again.canonical();
        let third = Quantity::parse(&second)
            .unwrap_or_else(|e| panic!("canonical {second:?} of {s:?} does not parse: {e}"))
            .canonical();
        assert_eq!(third, second, "the canonical form of {s:?} has no fixed point");
        let _ = (q.milli_value(), q.value(), q.is_zero(), q.sign(), q.to_string());
        let mut r = q.clone();
        r.round_up_milli();
        let _ = r.canonical();
    }
    // Go's round trip reaches its fixed point in at most two rounds, not always in one: a binary
    // value that is no multiple of 1024 prints without a suffix and is decimal when read back
    // (`62.5Ki` -> `64000` -> `64k`, as the apiserver re-encodes it).
    if let Ok(n) = normalize(s) {
        let twice = normalize(&n).unwrap_or_else(|e| panic!("{n:?} (from {s:?}) does not parse: {e}"));
        assert_eq!(normalize(&twice).as_deref(), Ok(twice.as_str()), "normalising {s:?} has no fixed point");
    }
}

/// Image references: a parsed name is `domain/path`, and prints back as itself.
pub fn image(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let _ = default_pull_policy(s);
    for parse in [parse_image as fn(&str) -> _, parse_image_legacy] {
        if let Ok(r) = parse(s) {
            let r: ImageRef = r;
            // Go's `Named.Name()`: `domain/path`, or the path alone when no domain matched (a
            // first element with a dot that is not a host name, `index.doc__ker.io/n`).
            let name = if r.domain.is_empty() { r.path.clone() } else { format!("{}/{}", r.domain, r.path) };
            assert_eq!(r.name, name, "name is domain/path for {s:?}");
            let printed = r.to_string();
            assert_eq!(parse(&printed).as_ref(), Ok(&r), "{s:?} printed as {printed:?} parses differently");
        }
    }
}

/// Label selectors: conversion, validation and matching agree with a plain reading of the API.
pub fn selector(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let mut g = Gen::new(&mut u);
    let raw = g.selector();
    let labels: BTreeMap<String, String> =
        serde_json::from_value(g.string_map(4)).unwrap_or_else(|e| panic!("labels: {e}"));
    let Ok(sel) = serde_json::from_value::<LabelSelector>(raw) else { return };
    let valid = selector::validate_label_selector(&sel, "spec.selector").is_empty();
    let converted = Selector::from_label_selector(&sel);
    if valid {
        assert!(converted.is_ok(), "a selector that validates does not convert: {sel:?}: {converted:?}");
    }
    let _ = selector::format_label_selector(Some(&sel));
    let printed = selector::to_selector_string(&sel);
    if let Ok(s) = converted {
        assert_eq!(s.matches(&labels), plain_match(&sel, &labels), "{sel:?} on {labels:?}");
        assert_eq!(printed.as_deref(), Ok(s.to_string().as_str()));
        assert_eq!(s.is_empty(), selector::is_empty(&sel));
        let from_labels = s.requirements().iter().filter(|r| r.operator == Operator::Equals).count();
        assert_eq!(
            from_labels,
            sel.match_labels.as_ref().map_or(0, BTreeMap::len),
            "one requirement per matchLabels pair"
        );
    }
}

/// What a selector selects, read from the API documentation.
fn plain_match(sel: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let by_label = sel.match_labels.iter().flatten().all(|(k, v)| labels.get(k) == Some(v));
    let by_expr = sel.match_expressions.iter().flatten().all(|e| {
        let values = e.values.as_deref().unwrap_or_default();
        let value = labels.get(&e.key);
        match e.operator.as_str() {
            "In" => value.is_some_and(|v| values.contains(v)),
            "NotIn" => value.is_none_or(|v| !values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        }
    });
    by_label && by_expr
}

/// The SidecarSet hash of a generated (then defaulted) spec: well-formed, stable under a second
/// defaulting, and the Go-encoded text reads back as the containers it encodes.
pub fn sidecarset_hash(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let mut g = Gen::new(&mut u);
    let set = g.sidecarset(0);
    let Ok(mut spec) = serde_json::from_value::<SidecarSetSpec>(set["spec"].clone()) else { return };
    if defaults::default_spec(&mut spec).is_err() {
        return;
    }
    let (h, without) = hash::hashes(&spec);
    for x in [&h, &without] {
        assert_eq!(x.len(), 64);
        assert!(x.bytes().all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b)), "{x}");
    }
    let mut twice = spec.clone();
    defaults::default_spec(&mut twice).unwrap_or_else(|e| panic!("second defaulting fails: {e}"));
    assert_eq!(hash::hashes(&twice), (h.clone(), without), "defaulting twice changes the hash");
    let text = hash::encode(&spec, false);
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("the hashed text is not JSON: {e}\n{text}"));
    // Go's encoding/json writes an empty (nil) list as `null`.
    let list = |v: &Value| if v.is_null() { json!([]) } else { v.clone() };
    let containers: Vec<SidecarContainer> =
        serde_json::from_value(list(&v["containers"])).unwrap_or_else(|e| panic!("hashed containers: {e}\n{text}"));
    let mut back = spec.clone();
    back.containers = containers;
    if let Some(init) = v.get("initContainers") {
        back.init_containers = serde_json::from_value(list(init)).unwrap_or_else(|e| panic!("hashed init: {e}"));
    }
    assert_eq!(hash::encode(&back, false), text, "the Go-encoded containers do not read back as themselves");
}
