//! `kruise check`: admission offline, for CI (issue 5). Each input object is sent through the
//! webhooks that would intercept it, as the apiserver would: the AdmissionReview it would build is
//! encoded, decoded by the server's own `review::decode` and answered by the server's own
//! `webhook::handle`, mutating webhooks first (patches applied in turn), then validating ones. So CI
//! and the cluster cannot disagree. Objects matched by group, kind, namespace and name in `--old`
//! are checked as UPDATEs against their stored (mutated) old version; objects only in `--old` as
//! DELETEs. Other objects of the input (SidecarSets, Namespaces, Pods, ControllerRevisions) and
//! `--objects-dir` form the cluster view; pods are previewed after the rest of the change.
//!
//! What the check cannot vouch for is said, never passed over: objects of kruise's API groups that
//! no implemented webhook serves (other kinds: Advanced DaemonSets...) are
//! **unchecked**, with a warning; two objects with one identity get a warning naming both places;
//! files or documents that cannot be read are [`Problem`]s reported beside the results.

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
pub use input::{Manifest, Problem};
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
    /// No webhook intercepts it, in kruise either: nothing to check.
    Skipped(String),
    /// kruise's webhooks would intercept it, but this build does not implement them.
    Unchecked(String),
    /// The check itself failed (a patch that does not apply, an unexpected answer).
    Error(String),
}

/// The result for one object.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Input file.
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
    /// `metadata.generateName`, shown when the name is empty.
    pub generate_name: String,
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

/// What a check found: a result per object, and the inputs that could not be read.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// One outcome per object, in input order, then the DELETEs.
    pub outcomes: Vec<Outcome>,
    /// Files and documents that could not be read.
    pub problems: Vec<Problem>,
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
    warn_duplicates(inputs, &mut out, ns);
    // Objects only in --old: DELETEs.
    for (k, m) in &old_by_key {
        if !input_keys.contains(k) {
            let stored = stored_form(&ctx, &m.object, ns);
            out.push(admit_delete(&ctx, m, stored, ns));
        }
    }
    out
}

/// Two inputs with one identity: the cluster would hold only the later one (kubectl applies it
/// over the first), so the later gets a warning naming both places. Objects named by
/// `generateName` alone are all distinct.
fn warn_duplicates(inputs: &[Manifest], outcomes: &mut [Outcome], ns: &str) {
    let mut first: BTreeMap<Key, usize> = BTreeMap::new();
    for (i, m) in inputs.iter().enumerate() {
        let k = key(&m.object, ns);
        if k.3.is_empty() {
            continue;
        }
        match first.get(&k) {
            Some(&j) => {
                let (earlier, this) = (&inputs[j], m);
                if let Some(o) = outcomes.get_mut(i) {
                    let warning = format!(
                        "duplicate: {} is also defined at {}:{}; applied together, {}:{} replaces it",
                        display_name(o),
                        earlier.file,
                        earlier.line,
                        this.file,
                        this.line
                    );
                    o.warnings.push(warning);
                }
            }
            None => {
                first.insert(k, i);
            }
        }
    }
}

/// `Kind namespace/name` as the reports show it: an empty name is the `generateName` prefix, or
/// `<generated>`.
pub fn display_name(o: &Outcome) -> String {
    let name = match (o.name.as_str(), o.generate_name.as_str()) {
        ("", "") => "<generated>",
        ("", prefix) => prefix,
        (name, _) => name,
    };
    if o.namespace.is_empty() { format!("{} {name}", o.kind) } else { format!("{} {}/{name}", o.kind, o.namespace) }
}

fn with_namespace(object: &Value, ns: &str) -> Value {
    let mut o = object.clone();
    let (group, _) = group_version(o["apiVersion"].as_str().unwrap_or_default());
    let namespaced = lookup(group, o["kind"].as_str().unwrap_or_default()).is_none_or(|k| k.namespaced);
    // The apiserver sets the namespace of the request URL, creating `metadata` if need be.
    if namespaced && o["metadata"]["namespace"].as_str().is_none() && o.is_object() {
        if !o["metadata"].is_object() {
            o["metadata"] = json!({});
        }
        o["metadata"]["namespace"] = json!(ns);
    }
    o
}

/// What validating webhooks see of an object created with `generateName` and no name: the
/// apiserver generates the name after the mutating webhooks and before the validating ones. The
/// five characters are fixed here (the apiserver draws them at random); the reported object and
/// patch keep the name empty, as the webhooks left it.
fn with_generated_name(object: &Value) -> Option<Value> {
    let meta = object.get("metadata")?;
    let prefix = meta.get("generateName").and_then(Value::as_str).filter(|p| !p.is_empty())?;
    if meta.get("name").and_then(Value::as_str).is_some_and(|n| !n.is_empty()) {
        return None;
    }
    let mut o = object.clone();
    o["metadata"]["name"] = json!(format!("{prefix}check"));
    Some(o)
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
        generate_name: object["metadata"]["generateName"].as_str().unwrap_or_default().to_string(),
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
    let Some(Hooks { info, version, mutating, validating }) = hooks(&mut out, op) else { return out };
    let mut current = object.clone();
    for (n, w) in mutating.iter().chain(validating.iter()).enumerate() {
        let sent = if w.kind == Kind::Validating { with_generated_name(&current) } else { None };
        let body = review_body(info, &version, op, Some(sent.as_ref().unwrap_or(&current)), old.as_ref(), ns, n);
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
    let Some(Hooks { info, version, mutating, validating }) = hooks(&mut out, "DELETE") else { return out };
    for (n, w) in mutating.iter().chain(&validating).enumerate() {
        let body = review_body(info, &version, "DELETE", None, Some(&stored), ns, n);
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

/// The implemented webhooks an object goes through.
struct Hooks {
    info: &'static KindInfo,
    version: String,
    mutating: Vec<&'static Webhook>,
    validating: Vec<&'static Webhook>,
}

/// The webhooks of `op` on the outcome's object; `None` (with the outcome's status set) when it
/// is unchecked or skipped. kruise webhooks of the table that match but are not implemented are
/// named in a warning.
fn hooks(out: &mut Outcome, op: &str) -> Option<Hooks> {
    match route(out, op) {
        Route::Run { info, version, mutating, validating, missing } => {
            let unchecked =
                missing.iter().map(|w| format!("webhook {} is not implemented: its rules were not checked", w.name));
            out.warnings.extend(unchecked);
            Some(Hooks { info, version, mutating, validating })
        }
        Route::Unchecked(why) => {
            out.warnings.push(format!("unchecked: {why}"));
            out.status = Status::Unchecked(why);
            None
        }
        Route::Skipped(why) => {
            out.status = Status::Skipped(why);
            None
        }
    }
}

/// Which webhooks an object goes through.
enum Route {
    /// Through these (implemented) webhooks; `missing` ones of kruise's also match.
    Run {
        info: &'static KindInfo,
        version: String,
        mutating: Vec<&'static Webhook>,
        validating: Vec<&'static Webhook>,
        missing: Vec<&'static Webhook>,
    },
    /// kruise would check it; this build cannot.
    Unchecked(String),
    /// No webhook of kruise's intercepts it.
    Skipped(String),
}

/// API groups whose objects kruise's webhooks serve.
fn is_kruise_group(group: &str) -> bool {
    group == "kruise.io" || group.ends_with(".kruise.io")
}

fn route(out: &Outcome, op: &str) -> Route {
    let (group, version) = group_version(&out.api_version);
    let Some(info) = lookup(group, &out.kind) else {
        return if is_kruise_group(group) {
            Route::Unchecked(format!("no webhook of this build serves {} {}", out.api_version, out.kind))
        } else {
            Route::Skipped("no webhook handles this kind".into())
        };
    };
    let any_op = WEBHOOKS.iter().any(|w| {
        w.implemented()
            && w.rules.iter().any(|r| {
                let has = |list: &[&str], v: &str| list.iter().any(|x| *x == "*" || *x == v);
                has(r.groups, info.group) && has(r.versions, version) && has(r.resources, info.resource)
            })
    });
    if is_kruise_group(group) && !any_op {
        return Route::Unchecked(format!("no webhook of this build serves {} {}", out.api_version, out.kind));
    }
    let matching = |kind: Kind| -> Vec<&'static Webhook> {
        WEBHOOKS.iter().filter(|w| w.kind == kind && w.rules.iter().any(|r| matches(r, info, version, op))).collect()
    };
    let (mutating, validating): (Vec<_>, Vec<_>) = (matching(Kind::Mutating), matching(Kind::Validating));
    let missing: Vec<_> = mutating.iter().chain(&validating).filter(|w| !w.implemented()).copied().collect();
    let mutating: Vec<_> = mutating.into_iter().filter(|w| w.implemented()).collect();
    let validating: Vec<_> = validating.into_iter().filter(|w| w.implemented()).collect();
    if mutating.is_empty() && validating.is_empty() {
        if let Some(w) = missing.first() {
            return Route::Unchecked(format!(
                "webhook {} ({op} of {}/{version} {}) is not implemented",
                w.name, info.group, info.resource
            ));
        }
        return Route::Skipped(format!("no webhook handles {op} of {}/{version} {}", info.group, info.resource));
    }
    Route::Run { info, version: version.to_string(), mutating, validating, missing }
}

/// The process exit code of a report: 3 for an internal error, 2 when an input could not be read,
/// 1 for a denial, `warn_exit_code` for warnings (unchecked objects, duplicates) and nothing worse.
pub fn exit_code(report: &Report, warn_exit_code: Option<i32>) -> i32 {
    let outcomes = &report.outcomes;
    if outcomes.iter().any(|o| matches!(o.status, Status::Error(_))) {
        exit::INTERNAL
    } else if !report.problems.is_empty() {
        exit::USAGE
    } else if outcomes.iter().any(|o| o.status == Status::Denied) {
        exit::DENIED
    } else if let Some(code) = warn_exit_code.filter(|_| outcomes.iter().any(|o| !o.warnings.is_empty())) {
        code
    } else {
        exit::OK
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(object: Value) -> Manifest {
        Manifest { file: "in.yaml".into(), line: 1, object }
    }

    fn budget(name: &str, spec: Value) -> Value {
        json!({"apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
               "metadata": {"name": name}, "spec": spec})
    }

    /// PodUnavailableBudgets go through `vpodunavailablebudget.kb.io` (issue 31): a valid one is
    /// admitted, an invalid one denied with kruise's field error, and two of one change whose
    /// selectors overlap deny each other, as the second would be denied in the cluster.
    #[test]
    fn pod_unavailable_budgets_are_checked() {
        let settings = Settings { namespace: "default".into(), gates: FeatureGates::default() };
        let good = budget(
            "web",
            json!({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxUnavailable": 1}),
        );
        let bad = budget("bad", json!({"maxUnavailable": 1}));
        let out = check(&[manifest(good.clone()), manifest(bad)], &[], &Snapshot::default(), &settings);
        assert_eq!(out[0].status, Status::Ok, "{}", out[0].message);
        assert_eq!(out[1].status, Status::Denied);
        assert_eq!(out[1].code, 422);
        assert!(
            out[1].message.contains("no selector or targetRef defined in PodUnavailableBudget"),
            "{}",
            out[1].message
        );
        let a = budget("a", json!({"selector": {"matchLabels": {"app": "x"}}, "maxUnavailable": 1}));
        let b = budget("b", json!({"selector": {"matchLabels": {"app": "x"}}, "minAvailable": 1}));
        let out = check(&[manifest(a), manifest(b)], &[], &Snapshot::default(), &settings);
        assert!(out.iter().all(|o| o.status == Status::Denied), "{out:?}");
        assert!(out[0].message.contains("in conflict with other PodUnavailableBudget b"), "{}", out[0].message);
    }

    /// ImageListPullJobs and NodeImages go through their mutating and validating webhooks (issue
    /// 29): defaulted then valid, or denied with the field error; an ImageListPullJob without
    /// ImagePullJobGate is refused as the cluster would refuse it.
    #[test]
    fn image_list_pull_jobs_and_node_images_are_checked() {
        let gates = FeatureGates::default().with(crate::core::features::Gate::ImagePullJobGate, true);
        let settings = Settings { namespace: "default".into(), gates };
        let list = |name: &str, images: Value| {
            json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "ImageListPullJob",
                   "metadata": {"name": name}, "spec": {"images": images, "completionPolicy": {}}})
        };
        let node = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "NodeImage", "metadata": {"name": "n1"},
            "spec": {"images": {"nginx": {"tags": [{"tag": "1", "pullPolicy": {"ttlSecondsAfterFinished": 60}}]}}}});
        let bad_node = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "NodeImage", "metadata": {"name": "n2"},
            "spec": {"images": {"nginx": {"tags": [{"tag": "1"}]}}}});
        let inputs = [
            manifest(list("ok", json!(["nginx:1"]))),
            manifest(list("dup", json!(["nginx:1", "nginx:1"]))),
            manifest(node),
            manifest(bad_node),
        ];
        let out = check(&inputs, &[], &Snapshot::default(), &settings);
        assert_eq!(out[0].status, Status::Mutated, "defaulted: {}", out[0].message);
        assert_eq!(out[1].status, Status::Denied);
        assert_eq!(out[1].code, 422);
        assert!(out[1].message.contains("images cannot have duplicate values"), "{}", out[1].message);
        assert_eq!(out[2].status, Status::Mutated, "createdAt and pullPolicy defaulted: {}", out[2].message);
        assert_eq!(out[3].status, Status::Denied);
        assert!(
            out[3].message.contains("pullPolicy.ttlSecondsAfterFinished for nginx/1 must set"),
            "{}",
            out[3].message
        );
        let off = Settings { namespace: "default".into(), gates: FeatureGates::default() };
        let out = check(&[manifest(list("ok", json!(["nginx:1"])))], &[], &Snapshot::default(), &off);
        assert_eq!(out[0].status, Status::Denied, "{}", out[0].message);
        assert_eq!(out[0].code, 403);
    }

    /// BroadcastJobs go through their mutating and validating webhooks (issue 33): defaulted then
    /// valid, or denied with kruise's field error.
    #[test]
    fn broadcast_jobs_are_checked() {
        let settings = Settings { namespace: "default".into(), gates: FeatureGates::default() };
        let job = |name: &str, restart: Value| {
            json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "BroadcastJob", "metadata": {"name": name},
                   "spec": {"template": {"spec": {"restartPolicy": restart,
                       "containers": [{"name": "c", "image": "busybox"}]}}}})
        };
        let out = check(
            &[manifest(job("ok", json!("Never"))), manifest(job("bad", json!("Always")))],
            &[],
            &Snapshot::default(),
            &settings,
        );
        assert_eq!(out[0].status, Status::Mutated, "defaulted: {}", out[0].message);
        assert_eq!(out[1].status, Status::Denied);
        assert_eq!(out[1].code, 422);
        assert!(out[1].message.contains("pod restartPolicy can only be Never or OnFailure"), "{}", out[1].message);
    }

    /// WorkloadSpreads go through their validating webhook (issue 34): admitted, or denied
    /// with kruise's field error.
    #[test]
    fn workload_spreads_are_checked() {
        let settings = Settings { namespace: "default".into(), gates: FeatureGates::default() };
        let ws = |name: &str, max: Value| {
            json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread", "metadata": {"name": name},
                   "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                       "subsets": [{"name": "a", "maxReplicas": max}, {"name": "b"}]}})
        };
        let out = check(
            &[manifest(ws("ok", json!(2))), manifest(ws("bad", json!("-1%")))],
            &[],
            &Snapshot::default(),
            &settings,
        );
        assert_eq!(out[0].status, Status::Ok, "{}", out[0].message);
        assert_eq!(out[1].status, Status::Denied);
        assert!(
            out[1]
                .message
                .contains("spec.subsets[0].maxReplicas: Invalid value: \"-1%\": maxReplicas is not valid for subset"),
            "{}",
            out[1].message
        );
    }

    /// AdvancedCronJobs go through their mutating and validating webhooks: defaulted then
    /// valid, or denied with kruise's schedule error.
    #[test]
    fn advanced_cron_jobs_are_checked() {
        let settings = Settings { namespace: "default".into(), gates: FeatureGates::default() };
        let acj = |name: &str, schedule: &str| {
            json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "AdvancedCronJob", "metadata": {"name": name},
                   "spec": {"schedule": schedule, "template": {"jobTemplate": {"spec": {"template": {"spec": {
                       "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}}})
        };
        let out = check(
            &[manifest(acj("ok", "@every 10s")), manifest(acj("bad", "61 * * * *"))],
            &[],
            &Snapshot::default(),
            &settings,
        );
        assert_eq!(out[0].status, Status::Mutated, "defaulted: {}", out[0].message);
        assert_eq!(out[1].status, Status::Denied);
        assert!(out[1].message.contains("end of range (61) above maximum (59): 61"), "{}", out[1].message);
    }

    /// ContainerRecreateRequests (issue 30) go through their webhook against the pods of the
    /// input: a request for a container the pod has is filled in from it, one for a container it
    /// lacks is denied with kruise's message, and with KruiseDaemon off every request is refused.
    #[test]
    fn container_recreate_requests_are_checked() {
        let settings = Settings { namespace: "default".into(), gates: FeatureGates::default() };
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default", "uid": "u1"},
            "spec": {"nodeName": "n1", "containers": [{"name": "app", "image": "nginx"}]},
            "status": {"phase": "Running", "containerStatuses": [{"name": "app", "image": "nginx", "imageID": "",
                "ready": true, "restartCount": 0, "containerID": "containerd://abc"}]}});
        let crr = |name: &str, container: &str| {
            json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "ContainerRecreateRequest",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"podName": "web", "containers": [{"name": container}]}})
        };
        let inputs = [manifest(pod.clone()), manifest(crr("ok", "app")), manifest(crr("nope", "sidecar"))];
        let out = check(&inputs, &[], &Snapshot::default(), &settings);
        let of = |name: &str| out.iter().find(|o| o.name == name).unwrap();
        assert_eq!(of("ok").status, Status::Mutated, "{}", of("ok").message);
        assert_eq!(of("nope").status, Status::Denied);
        assert!(of("nope").message.contains("container sidecar not found in Pod"), "{}", of("nope").message);
        let off = Settings {
            namespace: "default".into(),
            gates: FeatureGates::default().with(crate::core::features::Gate::KruiseDaemon, false),
        };
        let out = check(&[manifest(pod), manifest(crr("ok", "app"))], &[], &Snapshot::default(), &off);
        let ok = out.iter().find(|o| o.name == "ok").unwrap();
        assert_eq!((ok.status.clone(), ok.code), (Status::Denied, 403), "{}", ok.message);
    }

    /// PodProbeMarkers (issue 30 item 4) go through their validating webhook: valid, or denied
    /// with kruise's message.
    #[test]
    fn pod_probe_markers_are_checked() {
        let settings = Settings { namespace: "default".into(), gates: FeatureGates::default() };
        let ppm = |name: &str, probe: &str| {
            json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "PodProbeMarker",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"selector": {"matchLabels": {"app": "web"}}, "probes": [{"name": probe,
                    "containerName": "main", "probe": {"exec": {"command": ["true"]}},
                    "podConditionType": "game.kruise.io/healthy"}]}})
        };
        let out = check(
            &[manifest(ppm("ok", "healthy")), manifest(ppm("bad", "Ready"))],
            &[],
            &Snapshot::default(),
            &settings,
        );
        let of = |name: &str| out.iter().find(|o| o.name == name).unwrap();
        assert_eq!(of("ok").status, Status::Ok, "{}", of("ok").message);
        assert_eq!(of("bad").status, Status::Denied);
        assert!(of("bad").message.contains("probe name can't be Ready"), "{}", of("bad").message);
    }

    /// UnitedDeployments (issue 34) go through their mutating and validating webhooks: defaulted
    /// then valid, or denied with kruise's field error.
    #[test]
    fn united_deployments_are_checked() {
        let settings = Settings { namespace: "default".into(), gates: FeatureGates::default() };
        let ud = |name: &str, replicas: i32| {
            json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment", "metadata": {"name": name},
                "spec": {"replicas": 6, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"cloneSetTemplate": {"metadata": {"labels": {"app": "web"}}, "spec": {
                        "selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}},
                    "topology": {"subsets": [{"name": "a", "replicas": replicas}, {"name": "b"}]}}})
        };
        let out = check(&[manifest(ud("ok", 4)), manifest(ud("bad", 7))], &[], &Snapshot::default(), &settings);
        assert_eq!(out[0].status, Status::Mutated, "defaulted: {}", out[0].message);
        assert_eq!(out[1].status, Status::Denied);
        assert_eq!(out[1].code, 422);
        assert!(
            out[1]
                .message
                .contains("sum of indicated subset replicas 7 should not be greater than UnitedDeployment replicas 6"),
            "{}",
            out[1].message
        );
    }
}
