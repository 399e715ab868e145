//! The vocabulary every workload planner speaks (CloneSet now; Advanced StatefulSet, SidecarSet and
//! the others to come): what one step of a round decided ([`Step`]: actions, Events, why the
//! rollout waits, an error, when to look again), the Events recorded on the workload with kruise's
//! reasons ([`Event`], typed [`EventType`]), and the status write a round plans
//! ([`status_write`]: the reconciler sends it as planned and diffs nothing itself).

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::SignedDuration;
use serde::Serialize;

use super::actions::{Action, Pin, Write, object_patch};
use crate::core::pods;

/// An Event's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum EventType {
    Normal,
    Warning,
}

/// An Event to record on the workload, as kruise names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Event {
    #[serde(rename = "type")]
    pub type_: EventType,
    /// Kruise's reason (`SuccessfulCreate`, `ScaleUpLimited`, …).
    pub reason: &'static str,
    /// Message.
    pub message: String,
}

impl Event {
    /// A Normal event.
    pub fn normal(reason: &'static str, message: String) -> Event {
        Event { type_: EventType::Normal, reason, message }
    }

    /// A Warning event.
    pub fn warning(reason: &'static str, message: String) -> Event {
        Event { type_: EventType::Warning, reason, message }
    }
}

/// What one step of a round decided.
#[derive(Debug, Default)]
pub struct Step {
    pub actions: Vec<Action>,
    pub events: Vec<Event>,
    pub waiting: Vec<String>,
    pub error: Option<String>,
    pub requeue: Option<SignedDuration>,
}

impl Step {
    /// Requeue after `d` (the shortest positive wins, as kruise's DurationStore keeps it).
    pub fn requeue_after(&mut self, d: SignedDuration) {
        self.requeue = min_positive(self.requeue, d);
    }
}

/// The shorter of `cur` and `d`, ignoring a `d` that is not positive.
pub fn min_positive(cur: Option<SignedDuration>, d: SignedDuration) -> Option<SignedDuration> {
    if d <= SignedDuration::ZERO {
        return cur;
    }
    Some(cur.map_or(d, |c| c.min(d)))
}

/// "web-a, web-b and 3 more": names for a waiting message.
pub fn name_list(pods: &[&Pod]) -> String {
    let names: Vec<&str> = pods.iter().map(|p| pods::name(p)).collect();
    match names.len() {
        0 => String::new(),
        1..=3 => names.join(", "),
        n => format!("{} and {} more", names[..3].join(", "), n - 3),
    }
}

/// The write of a workload's status through its status subresource: the `/status` part of the
/// diff between the observed workload and the same workload with `status` replaced, pinned to the
/// observed resourceVersion — or, when `after_own_write` (this round also patches the workload's
/// spec first), to the version that write returns. `None` when nothing in `status` changes.
pub fn status_write<W: Serialize + Clone>(
    observed: &W,
    name: &str,
    resource_version: &str,
    set_status: impl FnOnce(&mut W),
    after_own_write: bool,
) -> Option<Write> {
    let mut intended = observed.clone();
    set_status(&mut intended);
    let ops: Vec<_> = object_patch(observed, &intended)
        .0
        .into_iter()
        .filter(|op| {
            let path = op.path().as_str();
            path == "/status" || path.starts_with("/status/")
        })
        .collect();
    if ops.is_empty() {
        return None;
    }
    let pin = if after_own_write { Pin::Latest } else { Pin::Observed(resource_version.to_string()) };
    Some(Write::PatchWorkloadStatus { name: name.to_string(), pin, patch: json_patch::Patch(ops) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_serialize_with_their_type_name() {
        let e = Event::warning("ScaleUpLimited", "m".into());
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!({"type": "Warning", "reason": "ScaleUpLimited", "message": "m"})
        );
        assert_eq!(Event::normal("X", String::new()).type_, EventType::Normal);
    }

    #[test]
    fn requeue_keeps_the_shortest_positive() {
        let mut s = Step::default();
        s.requeue_after(SignedDuration::ZERO);
        assert_eq!(s.requeue, None);
        s.requeue_after(SignedDuration::from_secs(5));
        s.requeue_after(SignedDuration::from_secs(9));
        s.requeue_after(SignedDuration::from_secs(-1));
        assert_eq!(s.requeue, Some(SignedDuration::from_secs(5)));
    }

    #[test]
    fn status_write_is_the_status_diff_and_applies() {
        let observed = json!({"metadata": {"name": "w", "resourceVersion": "7", "labels": {"a/b": "1"}},
            "spec": {"replicas": 2}, "status": {"replicas": 1, "conditions": [{"type": "X"}]}});
        let w = status_write(&observed, "w", "7", |o| o["status"]["replicas"] = json!(2), false).unwrap();
        let Write::PatchWorkloadStatus { name, pin, patch } = &w else { panic!("{w:?}") };
        assert_eq!((name.as_str(), pin), ("w", &Pin::Observed("7".into())));
        let mut applied = observed.clone();
        json_patch::patch(&mut applied, patch).unwrap();
        assert_eq!(applied["status"], json!({"replicas": 2, "conditions": [{"type": "X"}]}));
        assert_eq!(applied["spec"], observed["spec"]);
        // Only status ops, even when the intended object differs elsewhere.
        let w = status_write(&observed, "w", "7", |o| o["spec"]["replicas"] = json!(5), true);
        assert_eq!(w, None);
        let w =
            status_write(&json!({"metadata": {}}), "w", "7", |o| o["status"] = json!({"replicas": 1}), true).unwrap();
        let Write::PatchWorkloadStatus { pin, patch, .. } = &w else { panic!("{w:?}") };
        assert_eq!(pin, &Pin::Latest);
        let mut applied = json!({"metadata": {}});
        json_patch::patch(&mut applied, patch).unwrap();
        assert_eq!(applied["status"]["replicas"], 1);
    }
}
