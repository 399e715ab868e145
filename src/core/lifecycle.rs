//! Pod lifecycle hooks shared by CloneSet and Advanced StatefulSet (spec §1.0 Lifecycle, §3.5
//! lifecycle states, §5.9): whether a pod is held by a hook ("hooked": any of the hook's labels or
//! finalizers present; "all hooked": every one present), and what moving a pod to a lifecycle
//! state changes on it — the `lifecycle.apps.kruise.io/state` label with its timestamp
//! annotation, and, for hooks with `markPodNotReady`, the `KruisePodReady` condition whose message
//! lists who holds the pod not ready (kruise's `lifecycle` and `podreadiness` packages).
//!
//! Every function returns the intended pod; [`crate::core::rollout::actions::pod_writes`] turns
//! it into pinned patches. Deliberate deviation: kruise adds a missing `KruisePodReady` condition
//! with an empty status; here it is written `False`, which is what kruise means (a condition that
//! is not True) and what the pod-readiness docs show.

use k8s_openapi::api::core::v1::{Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::apis::common::{Lifecycle, LifecycleHook};
use crate::apis::keys::{KRUISE_POD_READY, LIFECYCLE_STATE, LIFECYCLE_TIMESTAMP};
use crate::core::pods;

/// Lifecycle state `PreparingNormal`.
pub const PREPARING_NORMAL: &str = "PreparingNormal";
/// Lifecycle state `Normal`.
pub const NORMAL: &str = "Normal";
/// Lifecycle state `PreparingUpdate`.
pub const PREPARING_UPDATE: &str = "PreparingUpdate";
/// Lifecycle state `Updating`.
pub const UPDATING: &str = "Updating";
/// Lifecycle state `Updated`.
pub const UPDATED: &str = "Updated";
/// Lifecycle state `PreparingDelete`.
pub const PREPARING_DELETE: &str = "PreparingDelete";

/// `KruisePodReady` message key added while a pod waits in `PreparingDelete`.
pub const PRE_DELETE_HOOK_KEY: &str = "preDeleteHook";
/// `KruisePodReady` message key added while a pod waits in `PreparingUpdate`.
pub const PRE_UPDATE_HOOK_KEY: &str = "preUpdateHook";

/// A pod's lifecycle state (the `lifecycle.apps.kruise.io/state` label).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// No label: a pod made without lifecycle states (kruise treats it as `Normal`).
    Unset,
    PreparingNormal,
    Normal,
    PreparingUpdate,
    Updating,
    Updated,
    PreparingDelete,
    /// A label kruise does not know (see [`state_text`] for it).
    Unknown,
}

impl State {
    /// The label value ("" for [`State::Unset`], "Unknown" for [`State::Unknown`]).
    pub fn as_str(self) -> &'static str {
        match self {
            State::Unset => "",
            State::PreparingNormal => PREPARING_NORMAL,
            State::Normal => NORMAL,
            State::PreparingUpdate => PREPARING_UPDATE,
            State::Updating => UPDATING,
            State::Updated => UPDATED,
            State::PreparingDelete => PREPARING_DELETE,
            State::Unknown => "Unknown",
        }
    }

    /// The state a label value names.
    pub fn parse(label: &str) -> State {
        match label {
            "" => State::Unset,
            PREPARING_NORMAL => State::PreparingNormal,
            NORMAL => State::Normal,
            PREPARING_UPDATE => State::PreparingUpdate,
            UPDATING => State::Updating,
            UPDATED => State::Updated,
            PREPARING_DELETE => State::PreparingDelete,
            _ => State::Unknown,
        }
    }
}

impl From<&str> for State {
    fn from(label: &str) -> State {
        State::parse(label)
    }
}

impl PartialEq<&str> for State {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other && (*self != State::Unknown || State::parse(other) == State::Unknown)
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The pod's lifecycle state.
pub fn state(pod: &Pod) -> State {
    State::parse(state_text(pod))
}

/// The pod's lifecycle label as written ("" when it has none).
pub fn state_text(pod: &Pod) -> &str {
    pods::label(pod, LIFECYCLE_STATE).unwrap_or("")
}

fn has_finalizer(pod: &Pod, f: &str) -> bool {
    pod.metadata.finalizers.as_ref().is_some_and(|fs| fs.iter().any(|x| x == f))
}

/// `IsPodHooked`: any of the hook's finalizers or labels is on the pod.
pub fn is_hooked(hook: Option<&LifecycleHook>, pod: &Pod) -> bool {
    let Some(hook) = hook else { return false };
    hook.finalizers_handler.iter().any(|f| has_finalizer(pod, f))
        || hook.labels_handler.iter().any(|(k, v)| pods::label(pod, k) == Some(v.as_str()))
}

/// `IsPodAllHooked`: every finalizer and label of the hook is on the pod (false without a hook).
pub fn is_all_hooked(hook: Option<&LifecycleHook>, pod: &Pod) -> bool {
    let Some(hook) = hook else { return false };
    hook.finalizers_handler.iter().all(|f| has_finalizer(pod, f))
        && hook.labels_handler.iter().all(|(k, v)| pods::label(pod, k) == Some(v.as_str()))
}

/// `IsLifecycleMarkPodNotReady`: the preDelete or inPlaceUpdate hook marks pods not ready.
pub fn marks_pod_not_ready(lifecycle: Option<&Lifecycle>) -> bool {
    lifecycle.is_some_and(|l| {
        l.pre_delete.as_ref().is_some_and(|h| h.mark_pod_not_ready)
            || l.in_place_update.as_ref().is_some_and(|h| h.mark_pod_not_ready)
    })
}

/// `SetPodLifecycle`: the state label and its RFC 3339 timestamp annotation.
pub fn set_state(pod: &mut Pod, state: impl Into<State>, now: Timestamp) {
    let state = state.into();
    pod.metadata.labels.get_or_insert_with(Default::default).insert(LIFECYCLE_STATE.into(), state.as_str().into());
    pod.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(LIFECYCLE_TIMESTAMP.into(), pods::rfc3339(now));
}

/// One entry of the `KruisePodReady` condition message.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotReadyMessage {
    /// Who holds the pod not ready (`Lifecycle` for hooks).
    #[serde(default)]
    pub user_agent: String,
    /// Why.
    #[serde(default)]
    pub key: String,
}

fn messages(text: Option<&str>) -> Vec<NotReadyMessage> {
    text.filter(|t| !t.is_empty()).and_then(|t| serde_json::from_str(t).ok()).unwrap_or_default()
}

/// The message list as kruise writes it: sorted by user agent, then key.
fn dump(mut list: Vec<NotReadyMessage>) -> String {
    list.sort();
    // Keys and values here never hold characters Go escapes differently.
    serde_json::to_string(&list).unwrap_or_else(|_| "[]".into())
}

fn lifecycle_message(key: &str) -> NotReadyMessage {
    NotReadyMessage { user_agent: "Lifecycle".into(), key: key.into() }
}

/// `podreadiness.AddNotReadyKey` on `KruisePodReady` (only for pods with that readiness gate).
pub fn add_not_ready_key(pod: &mut Pod, msg: &NotReadyMessage, now: Timestamp) {
    if !pods::has_readiness_gate(pod, KRUISE_POD_READY) {
        return;
    }
    let conditions = pod.status.get_or_insert_with(Default::default).conditions.get_or_insert_with(Vec::new);
    let time = Some(Time(pods::whole_seconds(now)));
    match conditions.iter_mut().find(|c| c.type_ == KRUISE_POD_READY) {
        None => conditions.push(PodCondition {
            type_: KRUISE_POD_READY.into(),
            status: "False".into(),
            message: Some(dump(vec![msg.clone()])),
            last_transition_time: time,
            ..Default::default()
        }),
        Some(c) => {
            let mut list = messages(c.message.as_deref());
            if list.contains(msg) {
                return;
            }
            list.push(msg.clone());
            c.status = "False".into();
            c.message = Some(dump(list));
            c.last_transition_time = time;
        }
    }
    pods::recompute_ready(pod, now);
}

/// `podreadiness.RemoveNotReadyKey`: drop the key; the condition turns True when none are left.
pub fn remove_not_ready_key(pod: &mut Pod, msg: &NotReadyMessage, now: Timestamp) {
    if !pods::has_readiness_gate(pod, KRUISE_POD_READY) {
        return;
    }
    let Some(c) = pod
        .status
        .as_mut()
        .and_then(|s| s.conditions.as_mut())
        .and_then(|cs| cs.iter_mut().find(|c| c.type_ == KRUISE_POD_READY))
    else {
        return;
    };
    let mut list = messages(c.message.as_deref());
    let before = list.len();
    list.retain(|m| m != msg);
    if list.len() == before {
        return;
    }
    if list.is_empty() {
        c.status = "True".into();
    }
    c.message = Some(dump(list));
    c.last_transition_time = Some(Time(pods::whole_seconds(now)));
}

/// `executePodNotReadyPolicy`: entering PreparingDelete or PreparingUpdate adds a key, entering
/// Updated removes the update key.
fn not_ready_policy(pod: &mut Pod, state: State, now: Timestamp) {
    match state {
        State::PreparingDelete => add_not_ready_key(pod, &lifecycle_message(PRE_DELETE_HOOK_KEY), now),
        State::PreparingUpdate => add_not_ready_key(pod, &lifecycle_message(PRE_UPDATE_HOOK_KEY), now),
        State::Updated => remove_not_ready_key(pod, &lifecycle_message(PRE_UPDATE_HOOK_KEY), now),
        _ => {}
    }
}

/// `UpdatePodLifecycle`: the pod after moving to `state` (`None` when nothing changes).
pub fn update_lifecycle(pod: &Pod, state: impl Into<State>, mark_pod_not_ready: bool, now: Timestamp) -> Option<Pod> {
    let state = state.into();
    let mut after = pod.clone();
    if mark_pod_not_ready {
        not_ready_policy(&mut after, state, now);
    }
    if self::state(pod) != state {
        set_state(&mut after, state, now);
    }
    (after != *pod).then_some(after)
}

/// `UpdatePodLifecycleWithHandler`: like [`update_lifecycle`], and the hook's labels and
/// finalizers are put (back) on the pod; nothing happens without a hook.
pub fn update_lifecycle_with_handler(
    pod: &Pod,
    state: impl Into<State>,
    hook: Option<&LifecycleHook>,
    now: Timestamp,
) -> Option<Pod> {
    let state = state.into();
    let hook = hook?;
    let mut after = pod.clone();
    if hook.mark_pod_not_ready {
        not_ready_policy(&mut after, state, now);
    }
    if self::state(pod) != state {
        let labels = after.metadata.labels.get_or_insert_with(Default::default);
        for (k, v) in &hook.labels_handler {
            labels.insert(k.clone(), v.clone());
        }
        let finalizers = after.metadata.finalizers.get_or_insert_with(Vec::new);
        for f in &hook.finalizers_handler {
            if !finalizers.contains(f) {
                finalizers.push(f.clone());
            }
        }
        set_state(&mut after, state, now);
    }
    (after != *pod).then_some(after)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::pods::test_pods::{at, pod};
    use k8s_openapi::api::core::v1::PodReadinessGate;

    fn hook(labels: &[(&str, &str)], finalizers: &[&str], mark: bool) -> LifecycleHook {
        LifecycleHook {
            labels_handler: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            finalizers_handler: finalizers.iter().map(|f| f.to_string()).collect(),
            mark_pod_not_ready: mark,
        }
    }

    fn with_finalizers(mut p: Pod, f: &[&str]) -> Pod {
        p.metadata.finalizers = Some(f.iter().map(|s| s.to_string()).collect());
        p
    }

    /// kruise `TestGetPodLifecycleState`.
    #[test]
    fn state_is_the_label() {
        assert_eq!(state(&pod("a", &[])), "");
        assert_eq!(state(&pod("a", &[(LIFECYCLE_STATE, NORMAL)])), NORMAL);
        let mut no_labels = pod("a", &[]);
        no_labels.metadata.labels = None;
        assert_eq!(state(&no_labels), "");
    }

    /// kruise `TestIsHookMarkPodNotReady` and `TestIsLifecycleMarkPodNotReady`.
    #[test]
    fn mark_pod_not_ready_table() {
        let h = |m: bool| Some(hook(&[], &[], m));
        let rows: Vec<(Option<Lifecycle>, bool)> = vec![
            (None, false),
            (Some(Lifecycle::default()), false),
            (Some(Lifecycle { pre_delete: h(true), ..Default::default() }), true),
            (Some(Lifecycle { in_place_update: h(true), ..Default::default() }), true),
            (Some(Lifecycle { pre_delete: h(false), in_place_update: h(false), ..Default::default() }), false),
            // preNormal never marks pods not ready.
            (Some(Lifecycle { pre_normal: h(true), ..Default::default() }), false),
        ];
        for (i, (l, want)) in rows.iter().enumerate() {
            assert_eq!(marks_pod_not_ready(l.as_ref()), *want, "row {i}");
        }
    }

    /// kruise `TestIsPodHooked` and `TestIsPodAllHooked`.
    #[test]
    fn hooked_and_all_hooked_table() {
        let h = hook(&[("k1", "v1"), ("k2", "v2")], &["f1", "f2"], false);
        // (pod, hooked, all hooked)
        let rows: Vec<(Pod, bool, bool)> = vec![
            (pod("a", &[]), false, false),
            (pod("a", &[("k1", "v1")]), true, false),
            (pod("a", &[("k1", "other")]), false, false),
            (with_finalizers(pod("a", &[]), &["f2"]), true, false),
            (with_finalizers(pod("a", &[("k1", "v1"), ("k2", "v2")]), &["f1"]), true, false),
            (with_finalizers(pod("a", &[("k1", "v1"), ("k2", "v2")]), &["f1", "f2", "f3"]), true, true),
        ];
        for (i, (p, hooked, all)) in rows.iter().enumerate() {
            assert_eq!(is_hooked(Some(&h), p), *hooked, "row {i} hooked");
            assert_eq!(is_all_hooked(Some(&h), p), *all, "row {i} all hooked");
        }
        assert!(!is_hooked(None, &pod("a", &[("k1", "v1")])));
        assert!(!is_all_hooked(None, &pod("a", &[])));
        let empty = LifecycleHook::default();
        assert!(!is_hooked(Some(&empty), &pod("a", &[])));
        assert!(is_all_hooked(Some(&empty), &pod("a", &[])), "a hook without handlers holds every pod");
    }

    /// kruise `TestSetPodLifecycle`.
    #[test]
    fn set_state_writes_label_and_timestamp() {
        let mut p = pod("a", &[]);
        p.metadata.labels = None;
        set_state(&mut p, PREPARING_NORMAL, at(1_700_000_000));
        assert_eq!(pods::label(&p, LIFECYCLE_STATE), Some(PREPARING_NORMAL));
        assert_eq!(pods::annotations(&p).get(LIFECYCLE_TIMESTAMP).map(String::as_str), Some("2023-11-14T22:13:20Z"));
    }

    fn gated(p: Pod) -> Pod {
        let mut p = p;
        p.spec.get_or_insert_with(Default::default).readiness_gates =
            Some(vec![PodReadinessGate { condition_type: KRUISE_POD_READY.into() }]);
        p
    }

    fn kruise_ready(p: &Pod) -> Option<(String, String)> {
        pods::condition(p, KRUISE_POD_READY).map(|c| (c.status.clone(), c.message.clone().unwrap_or_default()))
    }

    /// kruise `Test_realControl_executePodNotReadyPolicy` and `Test_realControl_UpdatePodLifecycle`.
    #[test]
    fn update_lifecycle_with_mark_not_ready() {
        let now = at(100);
        let p = gated(pod("a", &[(LIFECYCLE_STATE, NORMAL)]));
        let after = update_lifecycle(&p, PREPARING_DELETE, true, now).unwrap();
        assert_eq!(state(&after), PREPARING_DELETE);
        assert_eq!(
            kruise_ready(&after),
            Some(("False".into(), r#"[{"userAgent":"Lifecycle","key":"preDeleteHook"}]"#.into()))
        );
        // The same state again changes nothing.
        assert_eq!(update_lifecycle(&after, PREPARING_DELETE, true, now), None);

        // A second key keeps the list sorted; Updated removes the update key.
        let updating = update_lifecycle(&after, PREPARING_UPDATE, true, now).unwrap();
        assert_eq!(
            kruise_ready(&updating).unwrap().1,
            r#"[{"userAgent":"Lifecycle","key":"preDeleteHook"},{"userAgent":"Lifecycle","key":"preUpdateHook"}]"#
        );
        let updated = update_lifecycle(&updating, UPDATED, true, now).unwrap();
        assert_eq!(
            kruise_ready(&updated),
            Some(("False".into(), r#"[{"userAgent":"Lifecycle","key":"preDeleteHook"}]"#.into()))
        );
        let only_update = update_lifecycle(&gated(pod("b", &[])), PREPARING_UPDATE, true, now).unwrap();
        let cleared = update_lifecycle(&only_update, UPDATED, true, now).unwrap();
        assert_eq!(kruise_ready(&cleared), Some(("True".into(), "[]".into())));

        // Without the readiness gate or without markPodNotReady only the label changes.
        let plain = update_lifecycle(&pod("c", &[]), PREPARING_DELETE, true, now).unwrap();
        assert_eq!(kruise_ready(&plain), None);
        let unmarked = update_lifecycle(&gated(pod("d", &[])), PREPARING_DELETE, false, now).unwrap();
        assert_eq!(kruise_ready(&unmarked), None);
    }

    /// kruise `Test_realControl_UpdatePodLifecycleWithHandler`.
    #[test]
    fn update_lifecycle_with_handler_puts_the_hook_back() {
        let now = at(100);
        let h = hook(&[("hold", "true")], &["slb/online"], false);
        let p = pod("a", &[(LIFECYCLE_STATE, UPDATED)]);
        let after = update_lifecycle_with_handler(&p, PREPARING_UPDATE, Some(&h), now).unwrap();
        assert_eq!(state(&after), PREPARING_UPDATE);
        assert_eq!(pods::label(&after, "hold"), Some("true"));
        assert_eq!(after.metadata.finalizers, Some(vec!["slb/online".to_string()]));
        assert_eq!(update_lifecycle_with_handler(&p, PREPARING_UPDATE, None, now), None);
        assert_eq!(update_lifecycle_with_handler(&after, PREPARING_UPDATE, Some(&h), now), None);
    }
}
