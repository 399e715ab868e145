//! The pod validating handler on `/validate-pod`: `vpod.kb.io` (pod UPDATE and DELETE) and
//! `vpodeviction.kb.io` (`pods/eviction` CREATE) — kruise v1.9 `pkg/webhook/pod/validating`
//! (`validatingPodFn`, `podUnavailableBudgetValidatingPod`). The PodUnavailableBudget part, then (once
//! the budget allowed) the WorkloadSpread part: [`spread_check`] finds the pod placed by a
//! WorkloadSpread (from the raw annotation, before any decoding) and [`super::spread`] records it
//! in its subset's `deletingPods`.
//!
//! [`check`] is the pure first half: gates (`PodUnavailableBudgetUpdateGate` for UPDATE, off by
//! default; `PodUnavailableBudgetDeleteGate` for DELETE and eviction, on by default), the pod the
//! budget is checked on (the old pod of an UPDATE that may make it unavailable, the deleted pod,
//! the evicted pod read from the view), the dry-run flag, and the budget's precheck
//! (`core::budget::admit::precheck`) on the budget the view holds. Most reviews end there, and a
//! pod that names no budget (`kruise.io/related-pub`) is allowed from the raw JSON before any
//! decoding, so an unrelated pod costs about what `/mutate-pod` does. What is left is a
//! [`BudgetCheck`]: consuming one unit of the budget, which [`super::budget`] does with an
//! optimistic-concurrency write of its status. Offline (`kruise check`, no store) [`handle`]
//! answers it as a dry run against the budget of the view.
//!
//! A refusal is kruise's Forbidden message, which names the budget; for an eviction it is a
//! 429 `TooManyRequests` (kruise answers 403, which `kubectl drain` treats as fatal instead of
//! retrying as it does for a PodDisruptionBudget), for a DELETE or UPDATE a 403.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kube::core::admission::Operation as AdmissionOperation;
use serde_json::Value;

use super::review::{Review, Verdict};
use super::{Context, decode_object};
use crate::apis::podunavailablebudget::PodUnavailableBudget;
use crate::core::budget::admit::{Gates, Precheck, consume, precheck};
use crate::core::budget::pod::{can_resize_in_place, is_unavailable_changed};
use crate::core::budget::{Operation, RELATED_PUB, RELATED_PUB_STABLE, pub_for_pod, related_pub};
use crate::core::features::Gate;

/// A budget unit to take for one pod operation.
#[derive(Clone, Debug)]
pub struct BudgetCheck {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod the operation is on (the old pod of an UPDATE).
    pub pod: Pod,
    /// The operation.
    pub op: Operation,
    /// A dry run: decided, never written.
    pub dry_run: bool,
    /// The budget as the view holds it (the first copy the write starts from).
    pub budget: Arc<PodUnavailableBudget>,
}

impl BudgetCheck {
    /// The pod's name.
    pub fn pod_name(&self) -> &str {
        crate::core::pods::name(&self.pod)
    }
}

/// What the pure half decided.
#[derive(Debug)]
pub enum PodCheck {
    /// The answer.
    Done(Verdict),
    /// A budget unit must be taken first.
    Budget(Box<BudgetCheck>),
}

/// The refusal of `op`: 429 for an eviction (retried by `kubectl drain`), else 403.
pub fn refusal(op: Operation, message: impl Into<String>) -> Verdict {
    match op {
        Operation::Evict => Verdict { reason: "TooManyRequests".into(), ..Verdict::errored(429, message) },
        _ => Verdict::forbidden(message),
    }
}

/// The WorkloadSpread part's pure half (kruise `workloadSpreadValidatingPod`): a DELETE of the
/// pod itself or an eviction, not a dry run, of an active pod with a controller whose
/// `apps.kruise.io/matched-workloadspread` annotation names a WorkloadSpread.
pub fn spread_check(ctx: &Context, review: &Review) -> Option<crate::webhook::spread::DeleteCheck> {
    use crate::core::workloadspread::{self as ws, Injected, MATCHED_ANNOTATION};
    let req = &review.request;
    if !ctx.config.gates.enabled(Gate::WorkloadSpread) {
        return None;
    }
    let sub_resource = req.sub_resource.as_deref().unwrap_or("");
    let (pod, op) = match req.operation {
        AdmissionOperation::Delete if sub_resource.is_empty() => {
            let raw = review.old_object.as_ref()?;
            raw.pointer("/metadata/annotations")?.get(MATCHED_ANNOTATION)?;
            if req.dry_run || options_dry_run(req.options.as_ref().map(|o| &o.0)) {
                return None;
            }
            (decode_object::<Pod>(Some(raw), "Pod").ok()?, ws::Operation::Delete)
        }
        AdmissionOperation::Create if sub_resource == "eviction" => {
            let eviction = review.object.as_ref()?;
            if req.dry_run || options_dry_run(eviction.get("deleteOptions")) {
                return None;
            }
            let namespace = req.namespace.as_deref().unwrap_or("default");
            ((*ctx.cluster.pod(namespace, &req.name)?).clone(), ws::Operation::Eviction)
        }
        _ => return None,
    };
    let injected = Injected::parse(pod.metadata.annotations.as_ref()?.get(MATCHED_ANNOTATION)?)?;
    if !crate::core::pods::is_active(&pod) || ws::controller_of(&pod).is_none() {
        return None;
    }
    let namespace =
        pod.metadata.namespace.clone().or_else(|| req.namespace.clone()).unwrap_or_else(|| "default".into());
    let spread = ctx
        .cluster
        .workload_spreads(&namespace)
        .into_iter()
        .find(|w| w.metadata.name.as_deref() == Some(injected.name.as_str()));
    Some(crate::webhook::spread::DeleteCheck { pod, injected, op, ws: spread })
}

/// Answers without writing anything: the [`BudgetCheck`] is decided as a dry run on the view's
/// budget (offline checks; the server goes through [`super::budget`]).
pub fn validate(ctx: &Context, review: &Review) -> Verdict {
    match check(ctx, review) {
        PodCheck::Done(v) => v,
        PodCheck::Budget(c) => match consume(c.pod_name(), &c.budget, c.op, now(ctx)) {
            Ok(_) => Verdict::allow(),
            Err(message) => refusal(c.op, message),
        },
    }
}

/// The clock of the context as a timestamp.
pub(crate) fn now(ctx: &Context) -> k8s_openapi::jiff::Timestamp {
    let t = ctx.config.clock.now();
    k8s_openapi::jiff::Timestamp::try_from(t).unwrap_or(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)
}

/// The pure half of the handler.
pub fn check(ctx: &Context, review: &Review) -> PodCheck {
    let req = &review.request;
    let gates = &ctx.config.gates;
    let sub_resource = req.sub_resource.as_deref().unwrap_or("");
    let (pod, op, dry_run) = match req.operation {
        AdmissionOperation::Delete if review.old_object.is_none() => return PodCheck::Done(Verdict::allow()),
        AdmissionOperation::Update => {
            if !gates.enabled(Gate::PodUnavailableBudgetUpdateGate) || related_in(review.object.as_ref()).is_empty() {
                return PodCheck::Done(Verdict::allow());
            }
            let new: Pod = match decode_object(review.object.as_ref(), "Pod") {
                Ok(p) => p,
                Err(v) => return PodCheck::Done(v),
            };
            let old: Pod = match decode_object(review.old_object.as_ref(), "old Pod") {
                Ok(p) => p,
                Err(v) => return PodCheck::Done(v),
            };
            if !is_unavailable_changed(&old, &new) {
                return PodCheck::Done(Verdict::allow());
            }
            let op = if can_resize_in_place(&old, &new) { Operation::Resize } else { Operation::Update };
            (old, op, req.dry_run || options_dry_run(req.options.as_ref().map(|o| &o.0)))
        }
        AdmissionOperation::Delete => {
            if !gates.enabled(Gate::PodUnavailableBudgetDeleteGate)
                || !sub_resource.is_empty()
                || related_in(review.old_object.as_ref()).is_empty()
            {
                return PodCheck::Done(Verdict::allow());
            }
            let old: Pod = match decode_object(review.old_object.as_ref(), "Pod") {
                Ok(p) => p,
                Err(v) => return PodCheck::Done(v),
            };
            (old, Operation::Delete, req.dry_run || options_dry_run(req.options.as_ref().map(|o| &o.0)))
        }
        AdmissionOperation::Create => {
            if !gates.enabled(Gate::PodUnavailableBudgetDeleteGate) || sub_resource != "eviction" {
                return PodCheck::Done(Verdict::allow());
            }
            let Some(eviction) = review.object.as_ref() else {
                return PodCheck::Done(Verdict::errored(400, "there is no content to decode"));
            };
            let dry_run = req.dry_run || options_dry_run(eviction.get("deleteOptions"));
            let namespace = req.namespace.as_deref().unwrap_or("default");
            match ctx.cluster.pod(namespace, &req.name) {
                Some(p) => ((*p).clone(), Operation::Evict, dry_run),
                None => return PodCheck::Done(Verdict::errored(400, format!("pods {:?} not found", req.name))),
            }
        }
        AdmissionOperation::Connect => return PodCheck::Done(Verdict::allow()),
    };
    let budget_name = related_pub(&pod);
    if budget_name.is_empty() {
        return PodCheck::Done(Verdict::allow());
    }
    let namespace =
        pod.metadata.namespace.clone().or_else(|| req.namespace.clone()).unwrap_or_else(|| "default".into());
    let budget = ctx
        .cluster
        .pod_unavailable_budgets(&namespace)
        .into_iter()
        .find(|b| b.metadata.name.as_deref() == Some(budget_name));
    let budget_gates = Gates {
        in_place_pod_vertical_scaling: gates.enabled(Gate::InPlacePodVerticalScaling),
        in_place_workload_vertical_scaling: gates.enabled(Gate::InPlaceWorkloadVerticalScaling),
    };
    match (precheck(&pod, budget.as_deref(), op, budget_gates), budget) {
        (Precheck::Consume, Some(budget)) => {
            PodCheck::Budget(Box::new(BudgetCheck { namespace, pod, op, dry_run, budget }))
        }
        _ => PodCheck::Done(Verdict::allow()),
    }
}

/// The budget a pod object's raw JSON names ("" when none), read without decoding the pod.
fn related_in(raw: Option<&Value>) -> &str {
    let annotations = raw.and_then(|o| o.pointer("/metadata/annotations"));
    let named = |key: &str| annotations.and_then(|a| a.get(key)).and_then(Value::as_str).filter(|n| !n.is_empty());
    named(RELATED_PUB_STABLE).or_else(|| named(RELATED_PUB)).unwrap_or("")
}

/// `dryrun.IsDryRun(options.DryRun)`: `dryRun` of Update/DeleteOptions holds `All`.
fn options_dry_run(options: Option<&Value>) -> bool {
    options
        .and_then(|o| o.get("dryRun"))
        .and_then(Value::as_array)
        .is_some_and(|list| list.iter().any(|v| v.as_str() == Some("All")))
}

/// The pod mutating webhook's part (kruise `pubMutatingPod`): names in [`RELATED_PUB`] the budget
/// of the pod's namespace that covers it (`core::budget::pub_for_pod`), when one does.
pub fn annotate_budget(ctx: &Context, pod: &mut Pod) {
    let namespace = crate::core::sidecar::pod_namespace(pod.metadata.namespace.as_deref()).to_string();
    let listed = ctx.cluster.pod_unavailable_budgets(&namespace);
    if listed.is_empty() {
        return;
    }
    let budgets: Vec<&PodUnavailableBudget> = listed.iter().map(AsRef::as_ref).collect();
    if let Some(name) = pub_for_pod(pod, &budgets).and_then(|b| b.metadata.name.clone()) {
        pod.metadata.annotations.get_or_insert_default().insert(RELATED_PUB.to_string(), name);
    }
}
