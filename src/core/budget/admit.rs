//! The verdict of a PodUnavailableBudget on one pod operation (kruise v1.9
//! `pubcontrol.PodUnavailableBudgetValidatePod` and `checkAndDecrement`), in the two steps kruise
//! takes them:
//! 1. [`precheck`], on the budget as the cache holds it: a pod marked `pub.kruise.io/no-protect`,
//!    a pod not ready or not consistent (it already counts as unavailable), no budget, a budget
//!    that wants nobody available, an operation it does not protect, or a pod it already records
//!    as disrupted or unavailable — all allowed without touching the budget;
//! 2. [`consume`], on the freshest copy of the budget each time the status write is retried: no
//!    unavailability left (or the records overflowing) refuses; otherwise one unit is taken and
//!    the pod recorded with the time, in `unavailablePods` for an UPDATE and in `disruptedPods`
//!    for everything else. A dry run stops after this step, without writing.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::{MAX_UNAVAILABLE_POD_SIZE, NO_PROTECT, Operation, needs_protection, pod};
use crate::apis::podunavailablebudget::{PodUnavailableBudget, PodUnavailableBudgetStatus};

/// The gates the verdict reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gates {
    /// InPlacePodVerticalScaling: a resize is its own operation, not an UPDATE.
    pub in_place_pod_vertical_scaling: bool,
    /// InPlaceWorkloadVerticalScaling: how in-place update completion is judged.
    pub in_place_workload_vertical_scaling: bool,
}

/// What step 1 decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Precheck {
    /// Allowed without consuming anything, and why (for logs).
    Allowed(&'static str),
    /// The budget must be consumed ([`consume`]).
    Consume,
}

/// Step 1: whether `op` on `pod` needs a unit of `budget` (the cached copy; `None` when the pod
/// names no budget or the budget is gone).
pub fn precheck(pod: &Pod, budget: Option<&PodUnavailableBudget>, op: Operation, gates: Gates) -> Precheck {
    let no_protect = pod.metadata.annotations.as_ref().and_then(|a| a.get(NO_PROTECT)).is_some_and(|v| v == "true");
    if no_protect {
        return Precheck::Allowed("the pod is marked pub.kruise.io/no-protect");
    }
    if !pod::is_ready(pod) || !pod::is_state_consistent(pod, gates.in_place_workload_vertical_scaling) {
        return Precheck::Allowed("the pod is not ready or not consistent: it is already unavailable");
    }
    let Some(budget) = budget else { return Precheck::Allowed("no budget covers the pod") };
    // kruise HEAD's `isPodMatchedIgnoredPubSelector` (v1beta1 `spec.ignoredPodSelector`).
    let ignored = budget.spec.ignored_pod_selector.as_ref().filter(|s| !crate::compat::selector::is_empty(s));
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    if ignored.is_some_and(|s| crate::compat::selector::matches(s, &labels).unwrap_or(false)) {
        return Precheck::Allowed("the pod matches the budget's ignoredPodSelector");
    }
    let status = budget.status.as_ref();
    if status.is_none_or(|s| s.desired_available == 0) {
        return Precheck::Allowed("the budget wants no pod available");
    }
    if !needs_protection(budget, op, gates.in_place_pod_vertical_scaling) {
        return Precheck::Allowed("the budget does not protect this operation");
    }
    if is_recorded(crate::core::pods::name(pod), budget) {
        return Precheck::Allowed("the budget already records the pod");
    }
    Precheck::Consume
}

/// Whether the budget's status records the pod as disrupted or unavailable.
pub fn is_recorded(pod_name: &str, budget: &PodUnavailableBudget) -> bool {
    budget
        .status
        .as_ref()
        .is_some_and(|s| s.unavailable_pods.contains_key(pod_name) || s.disrupted_pods.contains_key(pod_name))
}

/// Step 2 (`checkAndDecrement`): the status to write once `op` on `pod_name` took one unit of
/// `budget`, or kruise's Forbidden message (`podunavailablebudget.policy.kruise.io "<name>" is
/// forbidden: …`), which names the budget.
pub fn consume(
    pod_name: &str,
    budget: &PodUnavailableBudget,
    op: Operation,
    now: Timestamp,
) -> Result<PodUnavailableBudgetStatus, String> {
    if let Some(why) = refusal(budget, 0) {
        return Err(why);
    }
    let mut status = budget.status.clone().unwrap_or_default();
    status.unavailable_allowed -= 1;
    let record = if op == Operation::Update { &mut status.unavailable_pods } else { &mut status.disrupted_pods };
    record.insert(pod_name.to_string(), Time(now));
    Ok(status)
}

/// Why `budget` refuses one more unit once `taken` units were already spoken for (kruise's
/// Forbidden message, naming the budget), or `None` when it has one to give.
pub fn refusal(budget: &PodUnavailableBudget, taken: usize) -> Option<String> {
    let name = budget.metadata.name.as_deref().unwrap_or("");
    let forbidden = |why: &str| format!("podunavailablebudget.policy.kruise.io {name:?} is forbidden: {why}");
    let status = budget.status.as_ref();
    let allowed = status.map_or(0, |s| i64::from(s.unavailable_allowed));
    if allowed - i64::try_from(taken).unwrap_or(i64::MAX) <= 0 {
        return Some(forbidden("pub unavailable allowed is negative"));
    }
    let recorded = status.map_or(0, |s| s.disrupted_pods.len() + s.unavailable_pods.len()) + taken;
    if recorded > MAX_UNAVAILABLE_POD_SIZE {
        return Some(forbidden(
            "DisruptedPods and UnavailablePods map too big - too many unavailable not confirmed by PUB controller",
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::testkit::{budget, pod};
    use super::*;
    use serde_json::{Value, json};

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(s).expect("a time")
    }

    /// A budget with `allowed` units left of 10 desired.
    fn with_allowed(allowed: i32) -> impl FnOnce(&mut Value) {
        move |v: &mut Value| {
            v["status"] = json!({"unavailableAllowed": allowed, "desiredAvailable": 10, "currentAvailable": 10 + allowed,
                                 "totalReplicas": 10 + allowed, "observedGeneration": 1});
        }
    }

    /// One row of kruise's `TestPodUnavailableBudgetValidatePod` (`pub_control_test.go`): the pod,
    /// the budget, the operation; whether it is allowed and the status the budget ends with.
    struct Row {
        name: &'static str,
        pod: Pod,
        budget: Option<PodUnavailableBudget>,
        op: Operation,
        allowed: bool,
        /// `(unavailableAllowed, disrupted pods, unavailable pods)` after the operation.
        after: Option<(i32, Vec<&'static str>, Vec<&'static str>)>,
    }

    /// Steps 1 and 2 together, as the webhook takes them when no write conflicts.
    fn run(row: &Row) -> (bool, Option<PodUnavailableBudgetStatus>) {
        match precheck(&row.pod, row.budget.as_ref(), row.op, Gates::default()) {
            Precheck::Allowed(_) => (true, None),
            Precheck::Consume => {
                let b = row.budget.as_ref().expect("consume needs a budget");
                match consume(crate::core::pods::name(&row.pod), b, row.op, at(100)) {
                    Ok(s) => (true, Some(s)),
                    Err(_) => (false, None),
                }
            }
        }
    }

    #[test]
    fn validate_pod_table() {
        let rows = vec![
            Row {
                name: "valid update pod, allowed 1",
                pod: pod(|_| {}),
                budget: Some(budget(with_allowed(1))),
                op: Operation::Update,
                allowed: true,
                after: Some((0, vec![], vec!["test-pod-0"])),
            },
            Row {
                name: "valid delete pod, allowed 1",
                pod: pod(|_| {}),
                budget: Some(budget(with_allowed(1))),
                op: Operation::Delete,
                allowed: true,
                after: Some((0, vec!["test-pod-0"], vec![])),
            },
            Row {
                name: "valid evict pod, allowed 1",
                pod: pod(|_| {}),
                budget: Some(budget(with_allowed(1))),
                op: Operation::Evict,
                allowed: true,
                after: Some((0, vec!["test-pod-0"], vec![])),
            },
            Row {
                name: "invalid update pod, allowed 0",
                pod: pod(|_| {}),
                budget: Some(budget(with_allowed(0))),
                op: Operation::Update,
                allowed: false,
                after: None,
            },
            Row {
                name: "invalid delete pod, allowed -1",
                pod: pod(|_| {}),
                budget: Some(budget(with_allowed(-1))),
                op: Operation::Delete,
                allowed: false,
                after: None,
            },
            Row {
                name: "pod not ready: allowed without consuming",
                pod: pod(|v| v["status"]["conditions"][0]["status"] = json!("False")),
                budget: Some(budget(with_allowed(0))),
                op: Operation::Delete,
                allowed: true,
                after: None,
            },
            Row {
                name: "pod not running: allowed",
                pod: pod(|v| v["status"]["phase"] = json!("Pending")),
                budget: Some(budget(with_allowed(0))),
                op: Operation::Delete,
                allowed: true,
                after: None,
            },
            Row {
                name: "pod with an unavailable label: allowed",
                pod: pod(|v| v["metadata"]["labels"]["unavailable-pod.kruise.io/drain"] = json!("true")),
                budget: Some(budget(with_allowed(0))),
                op: Operation::Evict,
                allowed: true,
                after: None,
            },
            Row {
                name: "pod marked no-protect: allowed",
                pod: pod(|v| v["metadata"]["annotations"][NO_PROTECT] = json!("true")),
                budget: Some(budget(with_allowed(0))),
                op: Operation::Delete,
                allowed: true,
                after: None,
            },
            Row {
                name: "no budget: allowed",
                pod: pod(|_| {}),
                budget: None,
                op: Operation::Delete,
                allowed: true,
                after: None,
            },
            Row {
                name: "desiredAvailable 0: allowed",
                pod: pod(|_| {}),
                budget: Some(budget(|v| v["status"]["desiredAvailable"] = json!(0))),
                op: Operation::Delete,
                allowed: true,
                after: None,
            },
            Row {
                name: "only EVICT protected: delete allowed",
                pod: pod(|_| {}),
                budget: Some(budget(|v| {
                    with_allowed(0)(v);
                    v["metadata"]["annotations"]["kruise.io/pub-protect-operations"] = json!("EVICT")
                })),
                op: Operation::Delete,
                allowed: true,
                after: None,
            },
            Row {
                name: "only EVICT protected: eviction refused",
                pod: pod(|_| {}),
                budget: Some(budget(|v| {
                    with_allowed(0)(v);
                    v["metadata"]["annotations"]["kruise.io/pub-protect-operations"] = json!("EVICT")
                })),
                op: Operation::Evict,
                allowed: false,
                after: None,
            },
            Row {
                name: "pod already in disruptedPods: allowed",
                pod: pod(|_| {}),
                budget: Some(budget(|v| {
                    with_allowed(0)(v);
                    v["status"]["disruptedPods"] = json!({"test-pod-0": "2021-01-01T00:00:00Z"})
                })),
                op: Operation::Delete,
                allowed: true,
                after: None,
            },
            Row {
                name: "pod already in unavailablePods: allowed",
                pod: pod(|_| {}),
                budget: Some(budget(|v| {
                    with_allowed(0)(v);
                    v["status"]["unavailablePods"] = json!({"test-pod-0": "2021-01-01T00:00:00Z"})
                })),
                op: Operation::Update,
                allowed: true,
                after: None,
            },
            Row {
                name: "resize counts as a disruption",
                pod: pod(|_| {}),
                budget: Some(budget(with_allowed(2))),
                op: Operation::Resize,
                allowed: true,
                after: Some((1, vec!["test-pod-0"], vec![])),
            },
        ];
        for row in &rows {
            let (allowed, status) = run(row);
            assert_eq!(allowed, row.allowed, "{}", row.name);
            let got = status.map(|s| {
                let keys = |m: &std::collections::BTreeMap<String, Time>| m.keys().cloned().collect::<Vec<_>>();
                (s.unavailable_allowed, keys(&s.disrupted_pods), keys(&s.unavailable_pods))
            });
            let want = row.after.as_ref().map(|(n, d, u)| {
                let owned = |l: &Vec<&str>| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
                (*n, owned(d), owned(u))
            });
            assert_eq!(got, want, "{}", row.name);
        }
    }

    #[test]
    fn refusals_name_the_budget() {
        let b = budget(with_allowed(0));
        assert_eq!(
            consume("p", &b, Operation::Evict, at(1)),
            Err("podunavailablebudget.policy.kruise.io \"pub-test\" is forbidden: pub unavailable allowed is negative"
                .into())
        );
        let full = budget(|v| {
            with_allowed(5)(v);
            let many: serde_json::Map<String, Value> =
                (0..=MAX_UNAVAILABLE_POD_SIZE).map(|i| (format!("p{i}"), json!("2021-01-01T00:00:00Z"))).collect();
            v["status"]["disruptedPods"] = Value::Object(many);
        });
        let err = consume("x", &full, Operation::Delete, at(1)).expect_err("overflow");
        assert!(err.ends_with(
            "DisruptedPods and UnavailablePods map too big - too many unavailable not confirmed by PUB controller"
        ));
    }

    /// kruise HEAD's row "valid delete pod, pod matches ignored selector, ignore"
    /// (`TestPodUnavailableBudgetValidatePod`), on a budget with no unit left: the ignored pod
    /// passes, another pod of the budget does not; an empty selector ignores nothing.
    #[test]
    fn ignored_pod_selector_bypasses_the_budget() {
        let selector = |labels: Value| serde_json::from_value(json!({"matchLabels": labels})).expect("selector");
        let mut b = budget(|v| with_allowed(0)(v));
        b.spec.ignored_pod_selector = Some(selector(json!({"kruise.io/force-deletable": "true"})));
        let ignored = pod(|v| v["metadata"]["labels"]["kruise.io/force-deletable"] = json!("true"));
        assert!(matches!(precheck(&ignored, Some(&b), Operation::Delete, Gates::default()), Precheck::Allowed(_)));
        let other = pod(|_| {});
        assert_eq!(precheck(&other, Some(&b), Operation::Delete, Gates::default()), Precheck::Consume);
        b.spec.ignored_pod_selector = Some(selector(json!({})));
        assert_eq!(precheck(&ignored, Some(&b), Operation::Delete, Gates::default()), Precheck::Consume);
    }

    /// The timestamp recorded is the time of the decision; other records are kept.
    #[test]
    fn records_keep_others() {
        let b = budget(|v| {
            with_allowed(2)(v);
            v["status"]["disruptedPods"] = json!({"old": "2021-01-01T00:00:00Z"});
        });
        let s = consume("new", &b, Operation::Delete, at(100)).expect("allowed");
        assert_eq!(s.disrupted_pods.len(), 2);
        assert_eq!(s.disrupted_pods["new"], Time(at(100)));
        assert_eq!(s.unavailable_allowed, 1);
        assert_eq!(s.desired_available, 10, "the rest of the status is kept");
    }
}
