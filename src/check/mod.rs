//! `kruise check`: admission offline, for CI (issue 5). Each input object is sent through the
//! webhooks that would intercept it, as the apiserver would: the AdmissionReview it would build is
//! encoded, decoded by the server's own `review::decode` and answered by the server's own
//! `webhook::handle`, mutating webhooks first (patches applied in turn), then validating ones. So CI
//! and the cluster cannot disagree. Objects matched by group, kind, namespace and name in `--old`
//! are checked as UPDATEs against their stored (mutated) old version; objects only in `--old` as
//! DELETEs. Other objects of the input (SidecarSets, Namespaces, Pods, ControllerRevisions) and
//! `--objects-dir` form the cluster view; pods are previewed after the rest of the change.

pub mod input;
pub mod report;
pub mod resources;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use kube::core::admission::Operation;
use serde_json::{Value, json};

use crate::cluster::files::Snapshot;
use crate::core::features::FeatureGates;
use crate::webhook::paths::{Kind, Rule, WEBHOOKS, Webhook};
use crate::webhook::request::ReviewRequest;
use crate::webhook::review::decode;
use crate::webhook::{Context, handle};
use input::Manifest;
use resources::{KindInfo, group_version, lookup};

/// Exit codes.
pub mod exit {
    /// Everything admitted.
    pub const OK: i32 = 0;
    /// Something denied.
    pub const DENIED: i32 = 1;
    /// Usage error or unreadable input.
    pub const USAGE: i32 = 2;
    /// Internal error.
    pub const INTERNAL: i32 = 3;
}

/// What happened to one object.
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    /// Admitted unchanged.
    Ok,
    /// Admitted with changes.
    Mutated,
    /// Refused by a webhook.
    Denied,
    /// No webhook handles it.
    Skipped(String),
    /// The check itself failed (a patch that does not apply, an unexpected answer).
    Error(String),
}

/// The result for one object.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Input file and line.
    pub file: String,
    /// Line of the document.
    pub line: usize,
    /// `apiVersion`.
    pub api_version: String,
    /// Kind.
    pub kind: String,
    /// Namespace ("" when cluster-scoped).
    pub namespace: String,
    /// Name.
    pub name: String,
    /// CREATE, UPDATE or DELETE.
    pub operation: &'static str,
    /// Verdict.
    pub status: Status,
    /// `status.code` of the deciding answer (200 when admitted).
    pub code: u16,
    /// Denial message, as kubectl shows it.
    pub message: String,
    /// Warnings of every webhook.
    pub warnings: Vec<String>,
    /// RFC 6902 patch from the input object to the admitted one.
    pub patch: Option<json_patch::Patch>,
    /// The admitted object (after mutation).
    pub mutated: Option<Value>,
}

/// Check settings.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// Namespace for namespaced objects that have none.
    pub namespace: String,
    /// Feature gates, as the server's.
    pub gates: FeatureGates,
}

type Key = (String, String, String, String);

fn key(object: &Value, default_ns: &str) -> Key {
    let (group, _) = group_version(object["apiVersion"].as_str().unwrap_or_default());
    let kind = object["kind"].as_str().unwrap_or_default();
    let namespaced = lookup(group, kind).is_none_or(|k| k.namespaced);
    let ns = match object["metadata"]["namespace"].as_str() {
        Some(ns) if namespaced => ns.to_string(),
        _ if namespaced => default_ns.to_string(),
        _ => String::new(),
    };
    let name = object["metadata"]["name"].as_str().unwrap_or_default().to_string();
    (group.to_string(), kind.to_string(), ns, name)
}

/// Checks `inputs` (and `old`, when given) against the webhooks; `extra` holds `--objects-dir`.
pub fn check(inputs: &[Manifest], old: &[Manifest], extra: &Snapshot, settings: &Settings) -> Vec<Outcome> {
    let ns = if settings.namespace.is_empty() { "default" } else { settings.namespace.as_str() };
    // The view of the change: the inputs as sent, plus --objects-dir.
    let mut view = extra.clone();
    for m in inputs {
        let _ = view.insert(with_namespace(&m.object, ns));
    }
    let ctx = Context::with_gates(settings.gates.clone(), Arc::new(view.clone()));

    let old_by_key: BTreeMap<Key, &Manifest> = old.iter().map(|m| (key(&m.object, ns), m)).collect();
    let input_keys: HashSet<Key> = inputs.iter().map(|m| key(&m.object, ns)).collect();
    let is_pod = |m: &Manifest| m.object["apiVersion"] == "v1" && m.object["kind"] == "Pod";

    let mut outcomes: Vec<(usize, Outcome)> = Vec::new();
    // Pass 1: everything but pods; admitted objects replace their input in the view.
    for (i, m) in inputs.iter().enumerate().filter(|(_, m)| !is_pod(m)) {
        let stored_old = old_by_key.get(&key(&m.object, ns)).map(|o| stored_form(&ctx, &o.object, ns));
        let outcome = admit(&ctx, m, stored_old, ns);
        if let Some(mutated) = &outcome.mutated {
            let _ = view.insert(mutated.clone());
        }
        outcomes.push((i, outcome));
    }
    // Pass 2: pods, previewed with the SidecarSets etc. of the same change.
    let ctx = Context::with_gates(settings.gates.clone(), Arc::new(view));
    for (i, m) in inputs.iter().enumerate().filter(|(_, m)| is_pod(m)) {
        let stored_old = old_by_key.get(&key(&m.object, ns)).map(|o| stored_form(&ctx, &o.object, ns));
        outcomes.push((i, admit(&ctx, m, stored_old, ns)));
    }
    outcomes.sort_by_key(|(i, _)| *i);
    let mut out: Vec<Outcome> = outcomes.into_iter().map(|(_, o)| o).collect();
    // Objects only in --old: DELETEs.
    for (k, m) in &old_by_key {
        if !input_keys.contains(k) {
            let stored = stored_form(&ctx, &m.object, ns);
            out.push(admit_delete(&ctx, m, stored, ns));
        }
    }
    out
}

fn with_namespace(object: &Value, ns: &str) -> Value {
    let mut o = object.clone();
    let (group, _) = group_version(o["apiVersion"].as_str().unwrap_or_default());
    let namespaced = lookup(group, o["kind"].as_str().unwrap_or_default()).is_none_or(|k| k.namespaced);
    if namespaced
        && o["metadata"]["namespace"].as_str().is_none()
        && let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut)
    {
        meta.insert("namespace".into(), json!(ns));
    }
    o
}

/// The old object as the cluster stores it: what the mutating webhooks made of it at CREATE.
fn stored_form(ctx: &Context, object: &Value, ns: &str) -> Value {
    let object = with_namespace(object, ns);
    let (group, version) = group_version(object["apiVersion"].as_str().unwrap_or_default());
    let Some(info) = lookup(group, object["kind"].as_str().unwrap_or_default()) else { return object };
    let mut current = object.clone();
    for w in webhooks(Kind::Mutating, info, version, "CREATE") {
        let body = review_body(info, version, "CREATE", Some(&current), None, ns, 0);
        let Ok(review) = decode(&body) else { break };
        if let Some(v) = handle(ctx, w.handler, &review)
            && let Some(p) = &v.patch
        {
            let _ = json_patch::patch(&mut current, p);
        }
    }
    current
}

fn webhooks<'a>(
    kind: Kind,
    info: &'a KindInfo,
    version: &'a str,
    op: &'a str,
) -> impl Iterator<Item = &'static Webhook> + 'a {
    WEBHOOKS
        .iter()
        .filter(move |w| w.kind == kind && w.implemented() && w.rules.iter().any(|r| matches(r, info, version, op)))
}

fn matches(rule: &Rule, info: &KindInfo, version: &str, op: &str) -> bool {
    let any = |list: &[&str], v: &str| list.iter().any(|x| *x == "*" || *x == v);
    any(rule.groups, info.group)
        && any(rule.versions, version)
        && any(rule.resources, info.resource)
        && any(rule.operations, op)
}

fn review_body(
    info: &KindInfo,
    version: &str,
    op: &str,
    object: Option<&Value>,
    old: Option<&Value>,
    ns: &str,
    n: usize,
) -> Vec<u8> {
    let any = object.or(old).cloned().unwrap_or(Value::Null);
    let operation = match op {
        "CREATE" => Operation::Create,
        "UPDATE" => Operation::Update,
        _ => Operation::Delete,
    };
    let mut review = ReviewRequest::new(operation, info.group, version, info.kind, info.resource)
        .uid(format!("kruise-check-{n}"))
        .name(any["metadata"]["name"].as_str().unwrap_or_default())
        .username("kruise-check")
        .dry_run(true);
    review = if info.namespaced {
        review.namespace(any["metadata"]["namespace"].as_str().unwrap_or(ns))
    } else {
        review.cluster_scoped()
    };
    review.objects(object, old).to_bytes()
}

fn base_outcome(m: &Manifest, object: &Value, op: &'static str, ns: &str) -> Outcome {
    let (_, kind, namespace, name) = key(object, ns);
    Outcome {
        file: m.file.clone(),
        line: m.line,
        api_version: object["apiVersion"].as_str().unwrap_or_default().to_string(),
        kind,
        namespace,
        name,
        operation: op,
        status: Status::Ok,
        code: 200,
        message: String::new(),
        warnings: Vec::new(),
        patch: None,
        mutated: None,
    }
}

fn admit(ctx: &Context, m: &Manifest, old: Option<Value>, ns: &str) -> Outcome {
    let object = with_namespace(&m.object, ns);
    let op = if old.is_some() { "UPDATE" } else { "CREATE" };
    let mut out = base_outcome(m, &object, op, ns);
    let (group, version) = group_version(&out.api_version);
    let Some(info) = lookup(group, &out.kind) else {
        out.status = Status::Skipped("no webhook handles this kind".into());
        return out;
    };
    let mutating: Vec<_> = webhooks(Kind::Mutating, info, version, op).collect();
    let validating: Vec<_> = webhooks(Kind::Validating, info, version, op).collect();
    if mutating.is_empty() && validating.is_empty() {
        out.status = Status::Skipped(format!(
            "no implemented webhook handles {op} of {}/{version} {}",
            info.group, info.resource
        ));
        return out;
    }
    let mut current = object.clone();
    for (n, w) in mutating.iter().chain(validating.iter()).enumerate() {
        let body = review_body(info, version, op, Some(&current), old.as_ref(), ns, n);
        let verdict = match decode(&body).ok().and_then(|r| handle(ctx, w.handler, &r)) {
            Some(v) => v,
            None => {
                out.status = Status::Error(format!("webhook {} could not answer", w.name));
                return out;
            }
        };
        out.warnings.extend(verdict.warnings.iter().cloned());
        if !verdict.allowed {
            out.status = Status::Denied;
            out.code = verdict.code;
            out.message = format!("admission webhook \"{}\" denied the request: {}", w.name, verdict.message);
            return out;
        }
        if let Some(p) = &verdict.patch {
            if w.kind == Kind::Validating {
                out.status = Status::Error(format!("validating webhook {} returned a patch", w.name));
                return out;
            }
            if let Err(e) = json_patch::patch(&mut current, p) {
                out.status = Status::Error(format!("the patch of {} does not apply: {e}", w.name));
                return out;
            }
        }
    }
    let patch = json_patch::diff(&object, &current);
    if !patch.0.is_empty() {
        out.status = Status::Mutated;
        out.patch = Some(patch);
    }
    out.mutated = Some(current);
    out
}

fn admit_delete(ctx: &Context, m: &Manifest, stored: Value, ns: &str) -> Outcome {
    let mut out = base_outcome(m, &stored, "DELETE", ns);
    let (group, version) = group_version(&out.api_version);
    let Some(info) = lookup(group, &out.kind) else {
        out.status = Status::Skipped("no webhook handles this kind".into());
        return out;
    };
    let hooks: Vec<_> = webhooks(Kind::Mutating, info, version, "DELETE")
        .chain(webhooks(Kind::Validating, info, version, "DELETE"))
        .collect();
    if hooks.is_empty() {
        out.status = Status::Skipped(format!(
            "no implemented webhook handles DELETE of {}/{version} {}",
            info.group, info.resource
        ));
        return out;
    }
    for (n, w) in hooks.iter().enumerate() {
        let body = review_body(info, version, "DELETE", None, Some(&stored), ns, n);
        match decode(&body).ok().and_then(|r| handle(ctx, w.handler, &r)) {
            Some(v) if v.allowed => out.warnings.extend(v.warnings),
            Some(v) => {
                out.status = Status::Denied;
                out.code = v.code;
                out.message = format!("admission webhook \"{}\" denied the request: {}", w.name, v.message);
                return out;
            }
            None => {
                out.status = Status::Error(format!("webhook {} could not answer", w.name));
                return out;
            }
        }
    }
    out
}

/// The process exit code for a set of outcomes.
pub fn exit_code(outcomes: &[Outcome], warn_exit_code: Option<i32>) -> i32 {
    if outcomes.iter().any(|o| matches!(o.status, Status::Error(_))) {
        exit::INTERNAL
    } else if outcomes.iter().any(|o| o.status == Status::Denied) {
        exit::DENIED
    } else if let Some(code) = warn_exit_code.filter(|_| outcomes.iter().any(|o| !o.warnings.is_empty())) {
        code
    } else {
        exit::OK
    }
}
