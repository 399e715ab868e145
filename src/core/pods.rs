//! What the workload controllers read off a pod: active, ready, available for `minReadySeconds`,
//! scheduled, its conditions, and Kubernetes' `ActivePods` order (the default update order, spec
//! §5.5 step 5). These are Kubernetes' `podutil` and `controller` helpers that kruise calls; the
//! clock is a value so that every decision is repeatable.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// Condition type `Ready`.
pub const POD_READY: &str = "Ready";
/// Condition type `ContainersReady`.
pub const CONTAINERS_READY: &str = "ContainersReady";

static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

/// The pod's labels (empty when it has none).
pub fn labels(pod: &Pod) -> &BTreeMap<String, String> {
    pod.metadata.labels.as_ref().unwrap_or(&NO_LABELS)
}

/// The pod's annotations (empty when it has none).
pub fn annotations(pod: &Pod) -> &BTreeMap<String, String> {
    pod.metadata.annotations.as_ref().unwrap_or(&NO_LABELS)
}

/// One label.
pub fn label<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    labels(pod).get(key).map(String::as_str)
}

/// The pod's name ("" when it has none).
pub fn name(pod: &Pod) -> &str {
    pod.metadata.name.as_deref().unwrap_or("")
}

/// `status.phase` ("" when unset).
pub fn phase(pod: &Pod) -> &str {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("")
}

/// The condition of a type.
pub fn condition<'a>(pod: &'a Pod, type_: &str) -> Option<&'a PodCondition> {
    pod.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == type_)
}

/// `podutil.IsPodReady`: condition `Ready` is True.
pub fn is_ready(pod: &Pod) -> bool {
    condition(pod, POD_READY).is_some_and(|c| c.status == "True")
}

/// `controller.IsPodActive`: not Succeeded, not Failed, not being deleted.
pub fn is_active(pod: &Pod) -> bool {
    !matches!(phase(pod), "Succeeded" | "Failed") && pod.metadata.deletion_timestamp.is_none()
}

/// `util.HasPodScheduled`: `spec.nodeName` is set.
pub fn is_scheduled(pod: &Pod) -> bool {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).is_some_and(|n| !n.is_empty())
}

fn node_name(pod: &Pod) -> &str {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or("")
}

/// `podutil.IsPodAvailable`: ready, and ready for more than `min_ready_seconds` at `now`.
pub fn is_available(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> bool {
    let Some(c) = condition(pod, POD_READY).filter(|c| c.status == "True") else { return false };
    if min_ready_seconds <= 0 {
        return true;
    }
    c.last_transition_time.as_ref().is_some_and(|t| t.0 + SignedDuration::from_secs(i64::from(min_ready_seconds)) < now)
}

/// kruise's `IsRunningAndAvailable`: phase Running and available.
pub fn is_running_and_available(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> bool {
    phase(pod) == "Running" && is_available(pod, min_ready_seconds, now)
}

/// When a still-available pod stops counting as "not yet available for minReadySeconds": the
/// delay until it becomes available, when it is ready but not yet available.
pub fn becomes_available_in(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> Option<SignedDuration> {
    let c = condition(pod, POD_READY).filter(|c| c.status == "True")?;
    let at = c.last_transition_time.as_ref()?.0 + SignedDuration::from_secs(i64::from(min_ready_seconds));
    (at >= now).then(|| at.duration_since(now))
}

/// Kubernetes' `podPhaseToOrdinal`: Pending < Unknown < Running; anything else counts as Pending.
pub fn phase_ordinal(pod: &Pod) -> u8 {
    match phase(pod) {
        "Unknown" => 1,
        "Running" => 2,
        _ => 0,
    }
}

/// The `Ready` condition's transition time when the pod is ready.
pub fn ready_time(pod: &Pod) -> Option<Timestamp> {
    if !is_ready(pod) {
        return None;
    }
    condition(pod, POD_READY).and_then(|c| c.last_transition_time.as_ref()).map(|t| t.0)
}

/// The highest restart count of the pod's containers.
pub fn max_restarts(pod: &Pod) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .map(|cs| cs.iter().map(|c| c.restart_count).max().unwrap_or(0))
        .unwrap_or(0)
}

/// `afterOrZero` as an order: a zero (absent) time sorts first, then the later time first.
pub fn later_or_zero_first(a: Option<Timestamp>, b: Option<Timestamp>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(x), Some(y)) => y.cmp(&x),
    }
}

fn created(pod: &Pod) -> Option<Timestamp> {
    pod.metadata.creation_timestamp.as_ref().map(|t: &Time| t.0)
}

/// Kubernetes' `controller.ActivePods` order ("less" pods first: the ones cheapest to disturb):
/// unassigned before assigned, Pending < Unknown < Running, not ready before ready, ready for a
/// shorter time first, more restarts first, newer first.
pub fn active_pods_order(a: &Pod, b: &Pod) -> Ordering {
    let (na, nb) = (node_name(a), node_name(b));
    if na != nb && (na.is_empty() || nb.is_empty()) {
        return if na.is_empty() { Ordering::Less } else { Ordering::Greater };
    }
    phase_ordinal(a)
        .cmp(&phase_ordinal(b))
        .then_with(|| is_ready(a).cmp(&is_ready(b)))
        .then_with(|| {
            if is_ready(a) && is_ready(b) { later_or_zero_first(ready_time(a), ready_time(b)) } else { Ordering::Equal }
        })
        .then_with(|| max_restarts(b).cmp(&max_restarts(a)))
        .then_with(|| later_or_zero_first(created(a), created(b)))
}

/// `util.GetContainerStatus`.
pub fn container_status<'a>(pod: &'a Pod, name: &str) -> Option<&'a k8s_openapi::api::core::v1::ContainerStatus> {
    pod.status.as_ref()?.container_statuses.as_ref()?.iter().find(|c| c.name == name)
}

/// Whether the pod declares a readiness gate of this condition type.
pub fn has_readiness_gate(pod: &Pod, condition_type: &str) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.readiness_gates.as_ref())
        .is_some_and(|g| g.iter().any(|g| g.condition_type == condition_type))
}

/// `util.SetPodCondition`: replace the condition of the same type only when its status differs,
/// else append it when absent. Returns whether anything changed.
pub fn set_condition(pod: &mut Pod, condition: PodCondition) -> bool {
    let conditions = pod.status.get_or_insert_with(Default::default).conditions.get_or_insert_with(Vec::new);
    match conditions.iter_mut().find(|c| c.type_ == condition.type_) {
        Some(c) if c.status != condition.status => {
            *c = condition;
            true
        }
        Some(_) => false,
        None => {
            conditions.push(condition);
            true
        }
    }
}

/// `util.SetPodReadyCondition`: when `Ready` exists and `ContainersReady` is True, recompute
/// `Ready` from the readiness gates (False with reason `ReadinessGatesNotReady` and a message
/// naming every gate that is not True).
pub fn recompute_ready(pod: &mut Pod, now: Timestamp) {
    if condition(pod, POD_READY).is_none() {
        return;
    }
    if condition(pod, CONTAINERS_READY).is_none_or(|c| c.status != "True") {
        return;
    }
    let gates: Vec<String> = pod
        .spec
        .as_ref()
        .and_then(|s| s.readiness_gates.as_ref())
        .map(|g| g.iter().map(|g| g.condition_type.clone()).collect())
        .unwrap_or_default();
    let mut unready = Vec::new();
    for gate in &gates {
        match condition(pod, gate) {
            None => unready.push(format!("corresponding condition of pod readiness gate \"{gate}\" does not exist.")),
            Some(c) if c.status != "True" => {
                unready.push(format!("the status of pod readiness gate \"{gate}\" is not \"True\", but {}", c.status))
            }
            Some(_) => {}
        }
    }
    let ready = if unready.is_empty() {
        PodCondition {
            type_: POD_READY.into(),
            status: "True".into(),
            last_transition_time: Some(Time(now)),
            ..Default::default()
        }
    } else {
        PodCondition {
            type_: POD_READY.into(),
            status: "False".into(),
            reason: Some("ReadinessGatesNotReady".into()),
            message: Some(unready.join(", ")),
            ..Default::default()
        }
    };
    set_condition(pod, ready);
}

/// A timestamp at whole seconds, as `metav1.Time` serialises (RFC 3339, no fraction).
pub fn whole_seconds(t: Timestamp) -> Timestamp {
    Timestamp::from_second(t.as_second()).unwrap_or(t)
}

/// RFC 3339 text at whole seconds (`time.Now().Format(time.RFC3339)` in UTC).
pub fn rfc3339(t: Timestamp) -> String {
    whole_seconds(t).to_string()
}

#[cfg(test)]
pub(crate) mod test_pods {
    //! Builders for pods in table tests.
    use super::*;
    use k8s_openapi::api::core::v1::{ContainerStatus, PodSpec, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    /// A timestamp `s` seconds after the epoch.
    pub fn at(s: i64) -> Timestamp {
        Timestamp::from_second(s).unwrap()
    }

    /// A pod with a name and labels.
    pub fn pod(name: &str, labels: &[(&str, &str)]) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
                ..Default::default()
            },
            spec: Some(PodSpec::default()),
            status: Some(PodStatus::default()),
        }
    }

    /// Phase Running and Ready True (since `ready_at`, when given).
    pub fn running_ready(mut p: Pod, ready_at: Option<Timestamp>) -> Pod {
        let status = p.status.get_or_insert_with(Default::default);
        status.phase = Some("Running".into());
        status.conditions.get_or_insert_with(Vec::new).push(PodCondition {
            type_: POD_READY.into(),
            status: "True".into(),
            last_transition_time: ready_at.map(Time),
            ..Default::default()
        });
        p
    }

    /// With a phase.
    pub fn with_phase(mut p: Pod, phase: &str) -> Pod {
        p.status.get_or_insert_with(Default::default).phase = Some(phase.into());
        p
    }

    /// On a node.
    pub fn on_node(mut p: Pod, node: &str) -> Pod {
        p.spec.get_or_insert_with(Default::default).node_name = Some(node.into());
        p
    }

    /// With a container restarted `n` times.
    pub fn restarted(mut p: Pod, n: i32) -> Pod {
        p.status
            .get_or_insert_with(Default::default)
            .container_statuses
            .get_or_insert_with(Vec::new)
            .push(ContainerStatus { name: "c".into(), restart_count: n, ..Default::default() });
        p
    }

    /// Created at.
    pub fn created_at(mut p: Pod, t: Timestamp) -> Pod {
        p.metadata.creation_timestamp = Some(Time(t));
        p
    }
}

#[cfg(test)]
mod tests {
    use super::test_pods::*;
    use super::*;

    #[test]
    fn availability_follows_min_ready_seconds() {
        let p = running_ready(pod("a", &[]), Some(at(100)));
        assert!(is_available(&p, 0, at(100)));
        assert!(!is_available(&p, 10, at(110)), "exactly minReadySeconds is not yet available");
        assert!(is_available(&p, 10, at(111)));
        assert_eq!(becomes_available_in(&p, 10, at(105)), Some(SignedDuration::from_secs(5)));
        let no_time = running_ready(pod("b", &[]), None);
        assert!(!is_available(&no_time, 10, at(1000)));
        assert!(!is_available(&pod("c", &[]), 0, at(0)));
        assert!(is_running_and_available(&p, 0, at(100)));
        assert!(!is_running_and_available(&with_phase(running_ready(pod("d", &[]), None), "Pending"), 0, at(0)));
    }

    #[test]
    fn active_pods_order_table() {
        // Each row: (a, b, expected order of a relative to b).
        let ready = |n: &str, t: i64| on_node(running_ready(pod(n, &[]), Some(at(t))), "n1");
        let rows: Vec<(Pod, Pod, Ordering)> = vec![
            (pod("a", &[]), on_node(pod("b", &[]), "n1"), Ordering::Less),
            (
                on_node(with_phase(pod("a", &[]), "Pending"), "n"),
                on_node(with_phase(pod("b", &[]), "Running"), "n"),
                Ordering::Less,
            ),
            (
                on_node(with_phase(pod("a", &[]), "Unknown"), "n"),
                on_node(with_phase(pod("b", &[]), "Pending"), "n"),
                Ordering::Greater,
            ),
            (on_node(with_phase(pod("a", &[]), "Running"), "n1"), ready("b", 5), Ordering::Less),
            (ready("a", 10), ready("b", 5), Ordering::Less),
            (restarted(ready("a", 5), 3), restarted(ready("b", 5), 1), Ordering::Less),
            (created_at(ready("a", 5), at(1)), created_at(ready("b", 5), at(2)), Ordering::Greater),
            (ready("a", 5), ready("b", 5), Ordering::Equal),
        ];
        for (i, (a, b, want)) in rows.iter().enumerate() {
            assert_eq!(active_pods_order(a, b), *want, "row {i}");
        }
    }

    #[test]
    fn ready_condition_recomputed_from_gates() {
        use k8s_openapi::api::core::v1::PodReadinessGate;
        let mut p = running_ready(pod("a", &[]), None);
        p.spec.as_mut().unwrap().readiness_gates =
            Some(vec![PodReadinessGate { condition_type: "InPlaceUpdateReady".into() }]);
        set_condition(
            &mut p,
            PodCondition { type_: "InPlaceUpdateReady".into(), status: "False".into(), ..Default::default() },
        );
        let before = p.clone();
        recompute_ready(&mut p, at(0));
        assert_eq!(p, before, "ContainersReady missing: Ready untouched");
        set_condition(
            &mut p,
            PodCondition { type_: CONTAINERS_READY.into(), status: "True".into(), ..Default::default() },
        );
        recompute_ready(&mut p, at(0));
        let ready = condition(&p, POD_READY).unwrap();
        assert_eq!(ready.status, "False");
        assert_eq!(ready.reason.as_deref(), Some("ReadinessGatesNotReady"));
        assert_eq!(
            ready.message.as_deref(),
            Some("the status of pod readiness gate \"InPlaceUpdateReady\" is not \"True\", but False")
        );
    }
}
