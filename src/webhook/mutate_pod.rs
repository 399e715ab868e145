//! The pod mutating handler `mpod.kb.io` on `/mutate-pod` (spec §4.1): on a pod CREATE, the
//! `KruisePodReady` readiness gate for kruise-owned pods, SidecarSet injection, container
//! launch priority, then the `kruise.io/related-pub` annotation naming the PodUnavailableBudget
//! that covers the pod; one patch against the request pod, none when nothing changed. Decode
//! failures answer 400, any mutator error 500, as kruise. Only CREATE is registered and
//! handled: other operations are allowed unchanged.
//!
//! With the `WorkloadSpread` gate, a pod a WorkloadSpread of its namespace targets is placed in
//! a subset after the readiness gate (kruise's order): [`spread_check`] is the pure half (a
//! namespace without WorkloadSpreads costs one index lookup), [`super::spread`] finds the spread
//! and records the pod in its status, [`mutate_placed`] injects the subset.
//!
//! The handler gathers what the pure decisions need from the cluster view — the SidecarSets
//! indexed under the pod's namespace and labels (never the whole list), the namespace's labels, and the
//! ControllerRevisions only when a matched set pins a revision — plus the clock and a random
//! draw, and turns the result into a patch.

use std::collections::BTreeSet;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kube::core::admission::Operation;

use super::review::{Review, Verdict};
use super::spread::{CreateCheck, Placement};
use super::{Context, decode_object};
use crate::cluster::namespace_labels;
use crate::core::features::Gate;
use crate::core::pod_mutation::{init_launch_priority, inject_readiness_gate, owned_by_kruise};
use crate::core::sidecar::annotations::format_utc;
use crate::core::sidecar::inject::{InjectionInput, plan_injection};
use crate::core::sidecar::{pod_namespace, podpatch};

/// Answers a pod CREATE offline: a WorkloadSpread placement is decided on the view's copies
/// and written nowhere (the server places through [`super::spread`] and calls [`mutate_placed`]).
pub fn mutate(ctx: &Context, review: &Review) -> Verdict {
    let placement = spread_check(ctx, review).and_then(|check| offline_placement(ctx, &check));
    mutate_placed(ctx, review, placement.as_ref())
}

/// The WorkloadSpread part's pure half (kruise `workloadSpreadMutatingPod`): a pod CREATE of the
/// `pods` resource, not a dry run, in a namespace that has WorkloadSpreads. A pod of a namespace
/// without any costs one lookup in the view's index and no decoding.
pub fn spread_check(ctx: &Context, review: &Review) -> Option<CreateCheck> {
    let req = &review.request;
    if !ctx.config.gates.enabled(Gate::PodWebhook)
        || !ctx.config.gates.enabled(Gate::WorkloadSpread)
        || req.operation != Operation::Create
        || !req.sub_resource.as_deref().unwrap_or("").is_empty()
        || req.resource.resource != "pods"
        || req.dry_run
    {
        return None;
    }
    let raw = review.object.as_ref()?;
    let namespace = raw
        .pointer("/metadata/namespace")
        .and_then(serde_json::Value::as_str)
        .filter(|n| !n.is_empty())
        .or(req.namespace.as_deref())
        .unwrap_or("default");
    let candidates = ctx.cluster.workload_spreads(namespace);
    if candidates.is_empty() || raw.pointer("/metadata/ownerReferences").is_none() {
        return None;
    }
    let mut pod: Pod = decode_object(Some(raw), "Pod").ok()?;
    if !is_active(&pod) {
        return None;
    }
    pod.metadata.namespace = Some(namespace.to_string());
    Some(CreateCheck { pod, candidates })
}

/// A placement decided on the view alone (no owner walked beyond the pod's own controller, no
/// status written): what `kruise check` and in-process handler tests see.
fn offline_placement(ctx: &Context, check: &CreateCheck) -> Option<Placement> {
    use crate::core::workloadspread as ws;
    let owner = ws::controller_of(&check.pod)?;
    let labels = check.pod.metadata.labels.clone().unwrap_or_default();
    let matched = check.candidates.iter().find(|w| {
        w.metadata.deletion_timestamp.is_none()
            && w.spec.target_ref.as_ref().is_some_and(|t| ws::owner_matches(t, owner))
            && ws::selects_pod(w.spec.target_filter.as_ref(), &labels).unwrap_or(false)
    })?;
    let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(super::validate_pod::now(ctx));
    let mut copy = (**matched).clone();
    let update = ws::update_subset_for_pod(&mut copy, &check.pod, None, ws::Operation::Create, &now, 0, || {
        "00000000-0000-0000-0000-000000000000".into()
    });
    Some(Placement { ws: Arc::clone(matched), subset: update.subset?, generated_uid: update.generated_uid })
}

/// Answers a pod CREATE whose WorkloadSpread placement (if any) was already decided and recorded.
pub fn mutate_placed(ctx: &Context, review: &Review, placement: Option<&Placement>) -> Verdict {
    let req = &review.request;
    if !ctx.config.gates.enabled(Gate::PodWebhook) || req.operation != Operation::Create {
        return Verdict::allow();
    }
    let Some(raw) = review.object.as_ref() else {
        return Verdict::errored(400, "there is no content to decode");
    };
    let mut pod: Pod = match decode_object(Some(raw), "Pod") {
        Ok(p) => p,
        Err(v) => return v,
    };
    let request_namespace = pod.metadata.namespace.clone();
    if pod.metadata.namespace.as_deref().unwrap_or("").is_empty() {
        pod.metadata.namespace = req.namespace.clone();
    }
    let random = Random::new(&req.uid);

    // (1) KruisePodReady readiness gate.
    if owned_by_kruise(&pod) || ctx.config.gates.enabled(Gate::KruisePodReadinessGate) {
        inject_readiness_gate(&mut pod);
    }

    // (2) WorkloadSpread: the chosen subset's scheduling constraints, patch and annotation.
    if let Some(p) = placement {
        match crate::core::workloadspread::inject(&p.ws, &mut pod, &p.subset, &p.generated_uid) {
            Ok(_) => {}
            Err(e) => return Verdict::errored(500, e),
        }
    }

    // (3) SidecarSet injection.
    let pods_resource = req.sub_resource.as_deref().unwrap_or("").is_empty() && req.resource.resource == "pods";
    let mut replaced = BTreeSet::new();
    if pods_resource && is_active(&pod) {
        let namespace = pod_namespace(pod.metadata.namespace.as_deref()).to_string();
        let no_labels = std::collections::BTreeMap::new();
        let pod_labels = pod.metadata.labels.as_ref().unwrap_or(&no_labels);
        let candidates = ctx.cluster.sidecarsets_for_pod(&namespace, pod_labels);
        if !candidates.is_empty() {
            let labels = namespace_labels(ctx.cluster.as_ref(), &namespace);
            let (cluster, config) = (Arc::clone(&ctx.cluster), Arc::clone(&ctx.config));
            let revisions = move || cluster.controller_revisions(&config.namespace);
            let now = metav1_time(ctx.config.clock.now());
            let input = InjectionInput {
                namespace_labels: &labels,
                revisions: &revisions,
                draw: random.unit(),
                now: &now,
                sort_by_name: ctx.config.gates.enabled(Gate::EnableSortSidecarContainerByName),
            };
            match plan_injection(&pod, &candidates, &input) {
                Ok(plan) => {
                    replaced = plan.injected_names();
                    plan.apply(&mut pod);
                }
                Err(e) => return Verdict::errored(500, e.to_string()),
            }
        }
    }

    // (4) Container launch priority (after injection: sidecars take part).
    if pods_resource && let Err(e) = init_launch_priority(&mut pod, &random.name_suffix()) {
        return Verdict::errored(500, e.to_string());
    }

    // (5) The budget covering the pod (kruise `pubMutatingPod`), named for `/validate-pod`.
    let budgets_on = ctx.config.gates.enabled(Gate::PodUnavailableBudgetDeleteGate)
        || ctx.config.gates.enabled(Gate::PodUnavailableBudgetUpdateGate);
    if pods_resource && budgets_on {
        super::validate_pod::annotate_budget(ctx, &mut pod);
    }

    pod.metadata.namespace = request_namespace;
    // Mutators only write annotations, the name (launch priority) and the spec: the rest of the
    // pod stays exactly as sent. A pod sent without `metadata` gets none from us unless a mutator
    // wrote into it (kruise: allowed, no patch).
    let mut metadata = serde_json::Map::new();
    if let Some(annotations) = &pod.metadata.annotations {
        let value = annotations.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone()))).collect();
        metadata.insert("annotations".into(), serde_json::Value::Object(value));
    }
    // A WorkloadSpread subset's patch may also write labels.
    if let (Some(_), Some(labels)) = (placement, &pod.metadata.labels)
        && !labels.is_empty()
    {
        let value = labels.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone()))).collect();
        metadata.insert("labels".into(), serde_json::Value::Object(value));
    }
    if let Some(name) = &pod.metadata.name {
        metadata.insert("name".into(), serde_json::Value::String(name.clone()));
    }
    match podpatch::pod_patch(raw, metadata, pod.spec.as_ref(), &replaced) {
        Ok(patch) => Verdict::patched(patch),
        Err(e) => Verdict::errored(500, format!("cannot encode Pod: {e}")),
    }
}

/// `kubecontroller.IsPodActive`: not Succeeded, not Failed, not being deleted.
fn is_active(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("");
    phase != "Succeeded" && phase != "Failed" && pod.metadata.deletion_timestamp.is_none()
}

/// `at` as `metav1.Time` writes it (whole seconds). The text of the last second is kept per
/// thread: reviews come many to a second, and the calendar arithmetic and formatting cost about
/// 1% of a review's instructions (issue 16).
fn metav1_time(at: std::time::SystemTime) -> String {
    thread_local! {
        static LAST: std::cell::RefCell<Option<(u64, String)>> = const { std::cell::RefCell::new(None) };
    }
    let format = || {
        let t = time::OffsetDateTime::from(at);
        format_utc(t.year(), u8::from(t.month()), t.day(), t.hour(), t.minute(), t.second())
    };
    let Ok(since_epoch) = at.duration_since(std::time::UNIX_EPOCH) else { return format() };
    let second = since_epoch.as_secs();
    LAST.with_borrow_mut(|last| match last {
        Some((s, text)) if *s == second => text.clone(),
        _ => {
            let text = format();
            *last = Some((second, text.clone()));
            text
        }
    })
}

/// Randomness for the `Partial` revision policy and generated pod names: not cryptographic, only
/// different for every request (std's per-process random hasher keys, the uid and the clock).
struct Random(u64);

impl Random {
    fn new(uid: &str) -> Self {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write(uid.as_bytes());
        h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
        Random(h.finish())
    }

    /// A number in [0, 1).
    fn unit(&self) -> f64 {
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Five characters of Kubernetes' name-generation alphabet.
    fn name_suffix(&self) -> String {
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        let mut n = self.0.rotate_left(17);
        (0..5)
            .map(|_| {
                let c = ALPHABET[(n % ALPHABET.len() as u64) as usize] as char;
                n /= ALPHABET.len() as u64;
                c
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    /// The per-thread cache gives what formatting gives, across seconds and back.
    #[test]
    fn metav1_time_is_the_formatted_second() {
        let at = |secs: u64, nanos: u32| UNIX_EPOCH + Duration::new(secs, nanos);
        for (t, want) in [
            (at(1_704_067_200, 0), "2024-01-01T00:00:00Z"),
            (at(1_704_067_200, 999_999_999), "2024-01-01T00:00:00Z"),
            (at(1_704_067_201, 1), "2024-01-01T00:00:01Z"),
            (at(1_704_067_200, 5), "2024-01-01T00:00:00Z"),
            (at(0, 0), "1970-01-01T00:00:00Z"),
            (UNIX_EPOCH - Duration::from_secs(1), "1969-12-31T23:59:59Z"),
        ] {
            assert_eq!(metav1_time(t), want);
        }
    }
}
