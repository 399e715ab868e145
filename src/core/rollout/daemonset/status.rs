//! The Advanced DaemonSet's status counters (kruise's `updateDaemonSetStatus` /
//! `storeDaemonSetStatus`): per node that should run a pod, desired; with a pod (the oldest by
//! `podByCreationTimestampAndPhase` counts), current, ready, available (`isDaemonPodAvailable`:
//! available for `minReadySeconds` and `InPlaceUpdateReady` not False when gated) and updated;
//! a pod on a node that should not run one is misscheduled; unavailable = desired − available;
//! `updateRevision` is the update revision's hash. The write is skipped when nothing changed and
//! the generation was observed, as kruise skips it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::eligibility::Eligibility;
use super::pods::{IN_PLACE_UPDATE_READY, creation_order, is_updated};
use crate::apis::daemonset::v1beta1::{DaemonSet, DaemonSetStatus};
use crate::core::pods;

/// `isDaemonPodAvailable`.
pub fn is_daemon_pod_available(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> bool {
    if !pods::is_available(pod, min_ready_seconds, now) {
        return false;
    }
    let gated = pod
        .spec
        .as_ref()
        .and_then(|s| s.readiness_gates.as_ref())
        .is_some_and(|g| g.iter().any(|g| g.condition_type == IN_PLACE_UPDATE_READY));
    !gated || pods::condition(pod, IN_PLACE_UPDATE_READY).is_none_or(|c| c.status == "True")
}

/// The round's status (with `observedGeneration` when `observe`), and when to look again for a
/// pod becoming available (kruise resyncs after `minReadySeconds` when ready ≠ available).
#[allow(clippy::too_many_arguments)]
pub fn status(
    ds: &DaemonSet,
    nodes: &[&Node],
    eligibility: &BTreeMap<String, Eligibility>,
    by_node: &BTreeMap<String, Vec<&Pod>>,
    hash: &str,
    generation: Option<i64>,
    now: Timestamp,
    observe: bool,
) -> (DaemonSetStatus, Option<SignedDuration>) {
    let mut st = ds.status.clone().unwrap_or_default();
    let (mut desired, mut current, mut misscheduled, mut ready, mut updated, mut available) = (0, 0, 0, 0, 0, 0);
    for node in nodes {
        let name = node.metadata.name.as_deref().unwrap_or("");
        let should_run = eligibility.get(name).is_some_and(|e| e.should_run);
        let pods = by_node.get(name).filter(|p| !p.is_empty());
        match (should_run, pods) {
            (true, Some(pods)) => {
                desired += 1;
                current += 1;
                let mut sorted = pods.clone();
                sorted.sort_by(|a, b| creation_order(a, b));
                let p = sorted[0];
                if pods::is_ready(p) {
                    ready += 1;
                    available += i32::from(is_daemon_pod_available(p, ds.spec.min_ready_seconds, now));
                }
                updated += i32::from(is_updated(p, hash, generation));
            }
            (true, None) => desired += 1,
            (false, Some(_)) => misscheduled += 1,
            (false, None) => {}
        }
    }
    st.desired_number_scheduled = desired;
    st.current_number_scheduled = current;
    st.number_misscheduled = misscheduled;
    st.number_ready = ready;
    st.updated_number_scheduled = updated;
    st.number_available = available;
    st.number_unavailable = desired - available;
    st.update_revision = hash.to_string();
    if observe {
        st.observed_generation = ds.metadata.generation.unwrap_or(0);
    }
    let again = (ready != available).then(|| SignedDuration::from_secs(i64::from(ds.spec.min_ready_seconds.max(0))));
    (st, again)
}

/// Whether `storeDaemonSetStatus` writes: a counter or the hash changed, or the generation is
/// not observed yet.
pub fn needs_write(ds: &DaemonSet, st: &DaemonSetStatus) -> bool {
    let old = ds.status.clone().unwrap_or_default();
    old.desired_number_scheduled != st.desired_number_scheduled
        || old.current_number_scheduled != st.current_number_scheduled
        || old.number_misscheduled != st.number_misscheduled
        || old.number_ready != st.number_ready
        || old.updated_number_scheduled != st.updated_number_scheduled
        || old.number_available != st.number_available
        || old.number_unavailable != st.number_unavailable
        || old.observed_generation < ds.metadata.generation.unwrap_or(0)
        || old.update_revision != st.update_revision
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counters_follow_the_oldest_pod_of_each_node() {
        let ds: DaemonSet = serde_json::from_value(json!({"metadata": {"name": "d", "generation": 4},
            "spec": {"selector": {}, "template": {}}, "status": {"observedGeneration": 3}}))
        .unwrap();
        let node = |n: &str| -> Node { serde_json::from_value(json!({"metadata": {"name": n}})).unwrap() };
        let (a, b, c) = (node("a"), node("b"), node("c"));
        let nodes = [&a, &b, &c];
        let run = Eligibility { should_run: true, should_continue_running: true };
        let not = Eligibility { should_run: false, should_continue_running: false };
        let elig: BTreeMap<String, Eligibility> = [("a".into(), run), ("b".into(), run), ("c".into(), not)].into();
        let pod = |name: &str, node: &str, hash: &str, ready: bool, gate: Option<&str>| -> Pod {
            let mut v = json!({"metadata": {"name": name, "labels": {"controller-revision-hash": hash}},
                "spec": {"nodeName": node, "containers": []},
                "status": {"conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]}});
            if let Some(g) = gate {
                v["spec"]["readinessGates"] = json!([{"conditionType": "InPlaceUpdateReady"}]);
                v["status"]["conditions"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"type": "InPlaceUpdateReady", "status": g}));
            }
            serde_json::from_value(v).unwrap()
        };
        let pa = pod("pa", "a", "new", true, Some("False"));
        let pc = pod("pc", "c", "old", true, None);
        let refs = [&pa, &pc];
        let by = super::super::pods::by_node(&refs);
        let (st, again) = status(&ds, &nodes, &elig, &by, "new", None, Timestamp::UNIX_EPOCH, true);
        assert_eq!(
            (st.desired_number_scheduled, st.current_number_scheduled, st.number_misscheduled, st.number_ready),
            (2, 1, 1, 1)
        );
        assert_eq!((st.number_available, st.number_unavailable, st.updated_number_scheduled), (0, 2, 1));
        assert_eq!((st.observed_generation, st.update_revision.as_str()), (4, "new"));
        assert_eq!(again, Some(SignedDuration::ZERO));
        assert!(needs_write(&ds, &st));
        let mut same = ds.clone();
        same.status = Some(st.clone());
        assert!(!needs_write(&same, &st));
    }
}
