//! The status a PodUnavailableBudget's controller writes (kruise v1.9
//! `podunavailablebudget_controller.go` `syncPodUnavailableBudget`): from the budget's active pods
//! and the number of pods it expects (the workload's replicas, or the
//! `pub.kruise.io/protect-total-replicas` annotation), the desired and current available counts,
//! what may still go unavailable, and the disrupted / unavailable records the webhook left —
//! a disrupted pod is forgotten 20 s after it was recorded (kruise warns it was not deleted), an
//! unavailable one 10 s after (long enough for the informer to see the update), and a pod no
//! longer active or no longer the budget's is forgotten at once. The status is written only when
//! it differs from the one held (`updatePubStatus`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::pod::{is_ready, is_state_consistent};
use crate::apis::podunavailablebudget::{PodUnavailableBudget, PodUnavailableBudgetStatus};
use crate::compat::intstr::k8s_scaled_value;
use crate::core::pods;

/// How long a disrupted pod is waited for to go (`DeletionTimeout`).
pub const DELETION_TIMEOUT: SignedDuration = SignedDuration::from_secs(20);
/// How long an updated pod stays recorded unavailable (`UpdatedDelayCheckTime`).
pub const UPDATED_DELAY_CHECK: SignedDuration = SignedDuration::from_secs(10);

/// What one sync decided.
#[derive(Clone, Debug, PartialEq)]
pub struct StatusPlan {
    /// The status the budget should have.
    pub status: PodUnavailableBudgetStatus,
    /// Whether it differs from the one it has (kruise writes only then).
    pub changed: bool,
    /// When a record expires: sync again then.
    pub recheck: Option<Timestamp>,
    /// Pods recorded disrupted that were not deleted in time (kruise's `NotDeleted` event).
    pub not_deleted: Vec<String>,
}

/// `getDesiredAvailableForPub`: `expected - maxUnavailable` (a percent rounded up, at least 0),
/// or `minAvailable` (a percent of `expected` rounded up). Kubernetes' scaling: a percent must be
/// an integer followed by `%`.
pub fn desired_available(budget: &PodUnavailableBudget, expected: i32) -> Result<i32, String> {
    if let Some(max) = &budget.spec.max_unavailable {
        let max = k8s_scaled_value(Some(max), i64::from(expected), true)?;
        return Ok(i32::try_from((i64::from(expected) - max).max(0)).unwrap_or(0));
    }
    match &budget.spec.min_available {
        Some(IntOrString::Int(n)) => Ok(*n),
        Some(min @ IntOrString::String(_)) => {
            let v = k8s_scaled_value(Some(min), i64::from(expected), true)?;
            Ok(i32::try_from(v).unwrap_or(i32::MAX))
        }
        None => Ok(0),
    }
}

/// The status of `budget` over `pods` (the pods it covers, in any state) expecting `expected`
/// pods, at `now`. `vertical_scaling` is gate InPlaceWorkloadVerticalScaling (how in-place
/// update completion is judged). `Err` when the budget's numbers cannot be scaled.
pub fn plan_status(
    budget: &PodUnavailableBudget,
    pods: &[&Pod],
    expected: i32,
    now: Timestamp,
    vertical_scaling: bool,
) -> Result<StatusPlan, String> {
    let desired = desired_available(budget, expected)?;
    let held = budget.status.clone().unwrap_or_default();
    let mut disrupted = BTreeMap::new();
    let mut unavailable = BTreeMap::new();
    let mut recheck: Option<Timestamp> = None;
    let mut not_deleted = Vec::new();
    let mut sooner = |t: Timestamp| {
        if recheck.is_none_or(|r| t < r) {
            recheck = Some(t);
        }
    };
    for pod in pods.iter().filter(|p| pods::is_active(p)) {
        let name = pods::name(pod);
        if let Some(at) = held.disrupted_pods.get(name) {
            let expires = at.0 + DELETION_TIMEOUT;
            if expires < now {
                not_deleted.push(name.to_string());
            } else {
                disrupted.insert(name.to_string(), at.clone());
                sooner(expires);
            }
        }
        if let Some(at) = held.unavailable_pods.get(name) {
            let expires = at.0 + UPDATED_DELAY_CHECK;
            if expires >= now {
                unavailable.insert(name.to_string(), at.clone());
                sooner(expires);
            }
        }
    }
    let current = count_available(pods, &disrupted, &unavailable, vertical_scaling);
    let status = PodUnavailableBudgetStatus {
        observed_generation: budget.metadata.generation.unwrap_or(0),
        disrupted_pods: disrupted,
        unavailable_pods: unavailable,
        unavailable_allowed: (current - desired).max(0),
        current_available: current,
        desired_available: desired,
        total_replicas: expected,
    };
    let changed = status != held;
    Ok(StatusPlan { status, changed, recheck, not_deleted })
}

/// `countAvailablePods`: active pods, not recorded, ready and consistent.
fn count_available(
    pods: &[&Pod],
    disrupted: &BTreeMap<String, Time>,
    unavailable: &BTreeMap<String, Time>,
    vertical_scaling: bool,
) -> i32 {
    let n = pods
        .iter()
        .filter(|p| pods::is_active(p))
        .filter(|p| !disrupted.contains_key(pods::name(p)) && !unavailable.contains_key(pods::name(p)))
        .filter(|p| is_state_consistent(p, vertical_scaling) && is_ready(p))
        .count();
    i32::try_from(n).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::super::testkit::{budget, pod};
    use super::*;
    use serde_json::{Value, json};

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(s).expect("a time")
    }

    fn pods(n: usize, f: impl Fn(usize, &mut Value)) -> Vec<Pod> {
        (0..n)
            .map(|i| {
                pod(|v| {
                    v["metadata"]["name"] = json!(format!("test-pod-{i}"));
                    f(i, v);
                })
            })
            .collect()
    }

    fn refs(p: &[Pod]) -> Vec<&Pod> {
        p.iter().collect()
    }

    /// `getDesiredAvailableForPub` over kruise's controller rows.
    #[test]
    fn desired_counts() {
        let rows = [
            (json!({"maxUnavailable": "50%"}), 10, 5),
            (json!({"maxUnavailable": "25%"}), 10, 7),
            (json!({"maxUnavailable": 3}), 10, 7),
            (json!({"maxUnavailable": 30}), 10, 0),
            (json!({"minAvailable": 8}), 10, 8),
            (json!({"minAvailable": "80%"}), 10, 8),
            (json!({"minAvailable": "25%"}), 10, 3),
            (json!({"maxUnavailable": 1}), 3, 2),
        ];
        for (spec, expected, want) in rows {
            let b = budget(|v| {
                v["spec"] = json!({"selector": {"matchLabels": {"app": "pub-controller"}}});
                for (k, x) in spec.as_object().expect("spec") {
                    v["spec"][k] = x.clone();
                }
            });
            assert_eq!(desired_available(&b, expected), Ok(want), "{spec} of {expected}");
        }
        let bad = budget(|v| v["spec"]["maxUnavailable"] = json!("12.5%"));
        assert!(desired_available(&bad, 10).is_err(), "Kubernetes scaling wants an integer percent");
    }

    /// kruise's `TestPubReconcile` rows: every pod ready; some not ready; some deleted or being
    /// deleted; recorded pods within and past their timeouts.
    #[test]
    fn reconcile_table() {
        let now = at(1000);
        let b = budget(|_| {});
        // "general scenario": 10 ready pods, maxUnavailable 50%.
        let all = pods(10, |_, _| {});
        let plan = plan_status(&b, &refs(&all), 10, now, false).expect("a plan");
        assert_eq!((plan.status.desired_available, plan.status.current_available), (5, 10));
        assert_eq!((plan.status.unavailable_allowed, plan.status.total_replicas), (5, 10));
        assert_eq!(plan.status.observed_generation, 1);
        assert!(plan.changed);
        // "four pods not ready".
        let some = pods(10, |i, v| {
            if i < 4 {
                v["status"]["conditions"][0]["status"] = json!("False");
            }
        });
        let plan = plan_status(&b, &refs(&some), 10, now, false).expect("a plan");
        assert_eq!((plan.status.current_available, plan.status.unavailable_allowed), (6, 1));
        // "six pods not ready": nothing allowed, never negative.
        let most = pods(10, |i, v| {
            if i < 6 {
                v["status"]["phase"] = json!("Pending");
            }
        });
        let plan = plan_status(&b, &refs(&most), 10, now, false).expect("a plan");
        assert_eq!((plan.status.current_available, plan.status.unavailable_allowed), (4, 0));
        // "pods being deleted are not active".
        let deleting = pods(10, |i, v| {
            if i < 2 {
                v["metadata"]["deletionTimestamp"] = json!("2021-01-01T00:00:00Z");
            }
        });
        let plan = plan_status(&b, &refs(&deleting), 10, now, false).expect("a plan");
        assert_eq!((plan.status.current_available, plan.status.unavailable_allowed), (8, 3));
    }

    /// Records: kept until they expire (and the next sync is asked for then), dropped after, or
    /// at once when the pod is gone.
    #[test]
    fn records_expire() {
        let now = at(1000);
        let t = |s: i64| Time(at(s));
        let b = budget(|v| {
            v["status"] = json!({"observedGeneration": 1, "unavailableAllowed": 3, "desiredAvailable": 5,
                "currentAvailable": 8, "totalReplicas": 10,
                "disruptedPods": {"test-pod-0": t(990), "test-pod-1": t(970), "gone": t(999)},
                "unavailablePods": {"test-pod-2": t(995), "test-pod-3": t(980)}});
        });
        let all = pods(10, |_, _| {});
        let plan = plan_status(&b, &refs(&all), 10, now, false).expect("a plan");
        let keys = |m: &BTreeMap<String, Time>| m.keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&plan.status.disrupted_pods), ["test-pod-0"]);
        assert_eq!(keys(&plan.status.unavailable_pods), ["test-pod-2"]);
        assert_eq!(plan.not_deleted, ["test-pod-1"]);
        assert_eq!(plan.recheck, Some(at(1005)), "test-pod-2's record ends first");
        // Recorded pods do not count as available.
        assert_eq!((plan.status.current_available, plan.status.unavailable_allowed), (8, 3));
    }

    /// Nothing is written when nothing changed.
    #[test]
    fn unchanged_status_is_not_written() {
        let all = pods(3, |_, _| {});
        let b = budget(|v| {
            v["spec"]["maxUnavailable"] = json!(1);
            v["status"] = json!({"observedGeneration": 1, "unavailableAllowed": 1, "desiredAvailable": 2,
                "currentAvailable": 3, "totalReplicas": 3});
        });
        let plan = plan_status(&b, &refs(&all), 3, at(1000), false).expect("a plan");
        assert!(!plan.changed, "{:?}", plan.status);
        let newer = budget(|v| {
            v["spec"]["maxUnavailable"] = json!(1);
            v["metadata"]["generation"] = json!(2);
            v["status"] = json!({"observedGeneration": 1, "unavailableAllowed": 1, "desiredAvailable": 2,
                "currentAvailable": 3, "totalReplicas": 3});
        });
        assert!(plan_status(&newer, &refs(&all), 3, at(1000), false).expect("a plan").changed, "a new generation");
    }
}
