//! The pod-update machine every workload planner runs on its pods (spec §3.3–§3.5, §5.9): Go kruise
//! copies it between `cloneset_update.go` (`refreshPodState`, `updatePod`) and
//! `stateful_set_control.go`; here it is one [`Machine`] that a planner builds from its workload
//! and calls per pod.
//!
//! - [`Machine::refresh`] follows a pod's in-place update to completion
//!   ([`crate::core::inplace::refresh`]: grace period, next container batch, `InPlaceUpdateReady`)
//!   and moves its lifecycle on: PreparingNormal → Normal once scheduled (or, with a preNormal
//!   hook, once the hook's labels/finalizers are all present); Updating → Updated/Normal once the
//!   update completed; Updated → Normal once the inPlaceUpdate hook is back; a PreparingUpdate pod
//!   already at the update revision → Updated/Normal.
//! - [`Machine::update_in_place`] starts an in-place update the classifier allowed: the
//!   inPlaceUpdate hook's PreparingUpdate gate first (and Updated → PreparingUpdate to put the hook
//!   back), then [`crate::core::inplace::apply::begin`] with the workload's revision labels and the
//!   lifecycle state `Updating`.
//!
//! - [`in_place_possible_on`] says whether a pod can take an update the classifier allowed: an
//!   update of env read from the pod's labels/annotations (`InPlaceUpdateEnvFromMetadata`)
//!   completes only when kruise-daemon on the pod's node restarts the container and reports
//!   `apps.kruise.io/runtime-containers-meta`; a pod without that report (no daemon on its node)
//!   would wait forever, so it is recreated instead (issue 26 item 8) — in place again as soon as
//!   its node's daemon reports it.
//!
//! Each change is a [`PodChanges`] diff, so several changes of one pod in a round compose.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::actions::{Action, ActionKind, PodChanges};
use super::plan::{Event, Step};
use crate::apis::common::Lifecycle;
use crate::core::inplace::apply::{self, Options};
use crate::core::inplace::classify::UpdateSpec;
use crate::core::inplace::refresh::{self, Refresh};
use crate::core::inplace::state;
use crate::core::lifecycle::State;
use crate::core::revision::CONTROLLER_REVISION_HASH;
use crate::core::{lifecycle, pods};

/// The start of the refusal [`in_place_possible_on`] gives for env read from metadata.
pub const ENV_FROM_METADATA_NEEDS_DAEMON: &str = "its containers read env from labels/annotations that changed";

/// The Event reason of a pod recreated because its env-from-metadata update cannot be in place.
pub const RECREATE_FOR_ENV_FROM_METADATA: &str = "RecreateForEnvFromMetadata";

/// Whether `pod` can take the in-place update `spec` (see the module documentation); `Err` says why
/// not.
pub fn in_place_possible_on(pod: &Pod, spec: &UpdateSpec) -> Result<(), String> {
    let reported = pod.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(state::RUNTIME_CONTAINERS_META));
    if spec.update_env_from_metadata && !reported {
        return Err(format!(
            "{ENV_FROM_METADATA_NEEDS_DAEMON}, and no kruise-daemon on its node reports its containers ({}), \
             so a restart in place could never be confirmed",
            state::RUNTIME_CONTAINERS_META
        ));
    }
    Ok(())
}

/// One workload's pod-update machine for one round.
pub struct Machine<'a> {
    /// The workload's `lifecycle` hooks.
    pub lifecycle: Option<&'a Lifecycle>,
    /// Grace period and vertical scaling of its in-place updates.
    pub options: Options,
    /// The round's clock.
    pub now: Timestamp,
    /// The update revision's name.
    pub update_revision: &'a str,
    /// Whether a pod's revision labels name a revision (kruise's `EqualToRevisionHash`).
    pub at_revision: fn(&Pod, &str) -> bool,
    /// Writes the workload's revision labels for a revision on a pod.
    pub write_revision: &'a dyn Fn(&mut Pod, &str),
}

impl Machine<'_> {
    fn in_place_hook(&self) -> Option<&crate::apis::common::LifecycleHook> {
        self.lifecycle.and_then(|l| l.in_place_update.as_ref())
    }

    /// `refreshPodState`: in-place progress, then lifecycle.
    pub fn refresh(&self, changes: &mut PodChanges, step: &mut Step, p: &Pod) -> Result<(), String> {
        let opts = self.options;
        let revision = pods::label(p, CONTROLLER_REVISION_HASH).unwrap_or("").to_string();
        match refresh::refresh(changes.current(p), opts, self.now, self.at_revision)? {
            Refresh::Nothing => {}
            Refresh::InGracePeriod(d) => {
                step.requeue_after(d);
                step.waiting.push(format!(
                    "{} waits {}s more in its in-place update grace period",
                    pods::name(p),
                    d.as_secs()
                ));
            }
            Refresh::Updating(why) => step.waiting.push(format!("{} is updating in place: {why}", pods::name(p))),
            Refresh::FinishGrace { pod, applied } => {
                let reason = if applied {
                    "its grace period ended: the new images are applied".to_string()
                } else {
                    "it moved to another revision during its grace period: the parked update is dropped".to_string()
                };
                push_change(changes, step, p, *pod, ActionKind::FinishGracePeriod, &revision, reason);
            }
            Refresh::NextBatch { pod, containers } => {
                let reason = format!("the previous batch is ready: updating containers {}", containers.join(", "));
                push_change(changes, step, p, *pod, ActionKind::UpdateNextBatch, &revision, reason);
            }
            Refresh::MarkReady { pod } => {
                let reason = if state::state_text(p).is_some() {
                    "its in-place update completed".to_string()
                } else {
                    "it has the InPlaceUpdateReady readiness gate and no update in progress".to_string()
                };
                push_change(changes, step, p, *pod, ActionKind::MarkInPlaceUpdateReady, &revision, reason);
            }
        }

        let lc = self.lifecycle;
        let in_place_hook = self.in_place_hook();
        let next = match lifecycle::state(p) {
            State::PreparingNormal => {
                let normal = match lc.and_then(|l| l.pre_normal.as_ref()) {
                    None => pods::is_scheduled(p),
                    Some(hook) => lifecycle::is_all_hooked(Some(hook), p),
                };
                if !normal {
                    let why = if lc.and_then(|l| l.pre_normal.as_ref()).is_some() {
                        "waits in PreparingNormal until its preNormal hook labels/finalizers are all present"
                    } else {
                        "waits in PreparingNormal until it is scheduled"
                    };
                    step.waiting.push(format!("{} {why}", pods::name(p)));
                }
                normal.then_some(State::Normal)
            }
            State::PreparingUpdate if (self.at_revision)(p, self.update_revision) => {
                Some(if lc.is_some() && !lifecycle::is_all_hooked(in_place_hook, p) {
                    State::Updated
                } else {
                    State::Normal
                })
            }
            State::Updating => match refresh::update_completed(p, opts) {
                Ok(()) => Some(if lc.is_some() && !lifecycle::is_all_hooked(in_place_hook, p) {
                    State::Updated
                } else {
                    State::Normal
                }),
                Err(_) => None,
            },
            State::Updated => (lc.is_none() || in_place_hook.is_none() || lifecycle::is_all_hooked(in_place_hook, p))
                .then_some(State::Normal),
            _ => None,
        };
        if let Some(next) = next {
            let mark = in_place_hook.is_some_and(|h| h.mark_pod_not_ready);
            let current = changes.current(p).clone();
            if let Some(after) = lifecycle::update_lifecycle(&current, next, mark, self.now) {
                let writes = changes.change(p, after);
                let reason = format!("{} -> {next}", lifecycle::state(p));
                step.actions.push(Action::new(
                    ActionKind::SetLifecycle,
                    Some(pods::name(p)),
                    &revision,
                    reason,
                    writes,
                ));
            }
        }
        Ok(())
    }

    /// Starts (or prepares) the in-place update of `p` to `target` that `spec` describes.
    pub fn update_in_place(
        &self,
        changes: &mut PodChanges,
        step: &mut Step,
        p: &Pod,
        target: &str,
        spec: &UpdateSpec,
    ) -> Result<(), String> {
        let name = pods::name(p).to_string();
        let hook = self.in_place_hook();
        let now = self.now;
        match lifecycle::state(p) {
            State::Unset | State::PreparingNormal | State::Normal if lifecycle::is_hooked(hook, p) => {
                let mark = hook.is_some_and(|h| h.mark_pod_not_ready);
                let current = changes.current(p).clone();
                if let Some(after) = lifecycle::update_lifecycle(&current, State::PreparingUpdate, mark, now) {
                    let writes = changes.change(p, after);
                    let reason = format!(
                        "{} -> PreparingUpdate: its inPlaceUpdate hook holds it before the update to {target}",
                        lifecycle::state(p),
                    );
                    step.actions.push(Action::new(ActionKind::SetLifecycle, Some(&name), target, reason, writes));
                }
                return Ok(());
            }
            State::Unset | State::PreparingNormal | State::Normal | State::Updating => {}
            State::Updated => {
                let current = changes.current(p).clone();
                if let Some(after) =
                    lifecycle::update_lifecycle_with_handler(&current, State::PreparingUpdate, hook, now)
                {
                    let writes = changes.change(p, after);
                    let reason = format!(
                        "Updated -> PreparingUpdate: the inPlaceUpdate hook is put back before the update to {target}"
                    );
                    step.actions.push(Action::new(ActionKind::SetLifecycle, Some(&name), target, reason, writes));
                }
                return Ok(());
            }
            State::PreparingUpdate => {
                if lifecycle::is_hooked(hook, p) {
                    step.waiting.push(format!(
                        "{name} waits in PreparingUpdate until its inPlaceUpdate hook labels/finalizers are removed"
                    ));
                    return Ok(());
                }
            }
            State::PreparingDelete | State::Unknown => {
                let state = lifecycle::state_text(p);
                return Err(format!("not allowed to in-place update pod {name} in state {state}"));
            }
        }
        let current = changes.current(p).clone();
        let write_revision = self.write_revision;
        let after = apply::begin(
            &current,
            spec,
            target,
            self.options,
            now,
            |pod| write_revision(pod, target),
            |pod| lifecycle::set_state(pod, State::Updating, now),
        )?;
        let writes = changes.change(p, after);
        let grace = self.options.grace_period_seconds;
        let mut action =
            Action::new(ActionKind::UpdateInPlace, Some(&name), target, in_place_reason(spec, grace), writes);
        action.images = spec.container_images.clone();
        step.actions.push(action);
        if grace > 0 {
            step.requeue_after(SignedDuration::from_secs(i64::from(grace)));
        }
        step.events.push(Event::normal(
            "SuccessfulUpdatePodInPlace",
            format!("successfully update pod {name} in-place(revision {target})"),
        ));
        Ok(())
    }
}

/// An action changing `p` to `intended`.
fn push_change(
    changes: &mut PodChanges,
    step: &mut Step,
    p: &Pod,
    intended: Pod,
    kind: ActionKind,
    revision: &str,
    reason: String,
) {
    let writes = changes.change(p, intended);
    step.actions.push(Action::new(kind, Some(pods::name(p)), revision, reason, writes));
}

/// What an in-place update changes, for the action's reason.
fn in_place_reason(spec: &UpdateSpec, grace: i32) -> String {
    let mut parts = Vec::new();
    if !spec.container_images.is_empty() {
        let images: Vec<String> = spec.container_images.iter().map(|(c, i)| format!("{c}={i}")).collect();
        parts.push(format!("images {}", images.join(", ")));
    }
    if spec.update_env_from_metadata {
        parts.push("env from labels/annotations".into());
    }
    if !spec.container_resources.is_empty() {
        parts.push("resources".into());
    }
    if spec.meta_data_patch.as_ref().is_some_and(|p| p.as_object().is_some_and(|o| !o.is_empty())) {
        parts.push("labels/annotations".into());
    }
    let what = if parts.is_empty() { "nothing but the revision".to_string() } else { parts.join("; ") };
    if grace > 0 { format!("in place: {what} (after a {grace}s grace period)") } else { format!("in place: {what}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::common::LifecycleHook;
    use crate::core::revision::{equal_to_revision_hash, write_revision_hash};
    use crate::core::rollout::actions::Write;
    use serde_json::{Value, json};

    fn pod(state: &str, labels: Value, node: Option<&str>) -> Pod {
        let mut labels = labels;
        labels["controller-revision-hash"] = json!("web-old");
        if !state.is_empty() {
            labels["lifecycle.apps.kruise.io/state"] = json!(state);
        }
        serde_json::from_value(json!({
            "metadata": {"name": "web-a", "namespace": "ns", "resourceVersion": "5", "labels": labels},
            "spec": {"nodeName": node, "containers": [{"name": "main", "image": "nginx:1"}]},
            "status": {"phase": "Running", "containerStatuses": [{"name": "main", "image": "nginx:1",
                "imageID": "sha-1", "ready": true, "restartCount": 0,
                "image": "nginx:1"}]}
        }))
        .unwrap()
    }

    fn now() -> Timestamp {
        Timestamp::from_second(1_700_000_000).unwrap()
    }

    fn applied(p: &Pod, step: &Step) -> Pod {
        let mut v = serde_json::to_value(p).unwrap();
        for w in step.actions.iter().flat_map(|a| &a.writes) {
            let (Write::PatchPod { patch, .. } | Write::PatchPodStatus { patch, .. }) = w else {
                panic!("unexpected write {w:?}")
            };
            json_patch::patch(&mut v, patch).unwrap();
        }
        serde_json::from_value(v).unwrap()
    }

    fn machine<'a>(lifecycle: Option<&'a Lifecycle>, write: &'a dyn Fn(&mut Pod, &str)) -> Machine<'a> {
        Machine {
            lifecycle,
            options: Options::default(),
            now: now(),
            update_revision: "web-new",
            at_revision: equal_to_revision_hash,
            write_revision: write,
        }
    }

    #[test]
    fn refresh_moves_lifecycles_on_as_kruise_does() {
        let write = |p: &mut Pod, r: &str| write_revision_hash(p, r, false);
        let pre_normal = Lifecycle {
            pre_normal: Some(LifecycleHook {
                labels_handler: [("ok".into(), "true".into())].into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        // (state, labels, node, lifecycle, next state or waiting)
        type Row<'a> = (&'a str, Value, Option<&'a str>, Option<&'a Lifecycle>, Result<&'a str, &'a str>);
        let rows: Vec<Row<'_>> = vec![
            ("PreparingNormal", json!({}), Some("n1"), None, Ok("Normal")),
            ("PreparingNormal", json!({}), None, None, Err("waits in PreparingNormal until it is scheduled")),
            ("PreparingNormal", json!({}), Some("n1"), Some(&pre_normal), Err("preNormal hook")),
            ("PreparingNormal", json!({"ok": "true"}), Some("n1"), Some(&pre_normal), Ok("Normal")),
            ("Updated", json!({}), Some("n1"), None, Ok("Normal")),
            ("Normal", json!({}), Some("n1"), None, Err("")),
        ];
        for (state, labels, node, lc, want) in rows {
            let p = pod(state, labels.clone(), node);
            let (mut changes, mut step) = (PodChanges::default(), Step::default());
            machine(lc, &write).refresh(&mut changes, &mut step, &p).unwrap();
            match want {
                Ok(next) => {
                    assert_eq!(step.actions.len(), 1, "{state} {labels}");
                    assert_eq!(crate::core::lifecycle::state(&applied(&p, &step)), next, "{state} {labels}");
                }
                Err(waiting) => {
                    assert!(step.actions.is_empty(), "{state} {labels}: {:?}", step.actions);
                    assert_eq!(
                        step.waiting.iter().any(|w| w.contains(waiting)),
                        !waiting.is_empty(),
                        "{:?}",
                        step.waiting
                    );
                }
            }
        }
    }

    #[test]
    fn update_in_place_waits_for_the_hook_then_updates_and_applies() {
        let write = |p: &mut Pod, r: &str| write_revision_hash(p, r, false);
        let spec =
            UpdateSpec { container_images: [("main".to_string(), "nginx:2".to_string())].into(), ..Default::default() };
        let hooked = Lifecycle {
            in_place_update: Some(LifecycleHook {
                labels_handler: [("hold".into(), "1".into())].into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        // Hooked: PreparingUpdate first, nothing else.
        let p = pod("Normal", json!({"hold": "1"}), Some("n1"));
        let (mut changes, mut step) = (PodChanges::default(), Step::default());
        machine(Some(&hooked), &write).update_in_place(&mut changes, &mut step, &p, "web-new", &spec).unwrap();
        assert_eq!(step.actions.len(), 1);
        assert_eq!(step.actions[0].kind, ActionKind::SetLifecycle);
        assert_eq!(crate::core::lifecycle::state(&applied(&p, &step)), "PreparingUpdate");
        // PreparingUpdate with the hook still there: waits.
        let p = pod("PreparingUpdate", json!({"hold": "1"}), Some("n1"));
        let (mut changes, mut step) = (PodChanges::default(), Step::default());
        machine(Some(&hooked), &write).update_in_place(&mut changes, &mut step, &p, "web-new", &spec).unwrap();
        assert!(step.actions.is_empty() && step.waiting.len() == 1);
        // No hook: the update itself, its Event, and the patched pod has the new image and revision.
        let p = pod("Normal", json!({}), Some("n1"));
        let (mut changes, mut step) = (PodChanges::default(), Step::default());
        machine(None, &write).update_in_place(&mut changes, &mut step, &p, "web-new", &spec).unwrap();
        assert_eq!(step.actions.len(), 1);
        assert_eq!(step.actions[0].kind, ActionKind::UpdateInPlace);
        assert_eq!(step.events[0].reason, "SuccessfulUpdatePodInPlace");
        let after = applied(&p, &step);
        assert_eq!(after.spec.as_ref().unwrap().containers[0].image.as_deref(), Some("nginx:2"));
        assert_eq!(crate::core::pods::label(&after, "controller-revision-hash"), Some("web-new"));
        assert_eq!(crate::core::lifecycle::state(&after), "Updating");
        // A state the update may not start from is an error.
        let p = pod("PreparingDelete", json!({}), Some("n1"));
        let err = machine(None, &write).update_in_place(
            &mut PodChanges::default(),
            &mut Step::default(),
            &p,
            "web-new",
            &spec,
        );
        assert!(err.unwrap_err().contains("PreparingDelete"));
    }

    #[test]
    fn env_from_metadata_is_in_place_only_where_a_daemon_reports_the_containers() {
        let spec = UpdateSpec { update_env_from_metadata: true, ..Default::default() };
        let mut p = pod("", json!({}), Some("n1"));
        let err = in_place_possible_on(&p, &spec).unwrap_err();
        assert!(err.starts_with(ENV_FROM_METADATA_NEEDS_DAEMON) && err.contains("kruise-daemon"), "{err}");
        assert_eq!(in_place_possible_on(&p, &UpdateSpec::default()), Ok(()), "images alone need no daemon");
        p.metadata.annotations = Some([(state::RUNTIME_CONTAINERS_META.to_string(), "{}".to_string())].into());
        assert_eq!(in_place_possible_on(&p, &spec), Ok(()));
    }
}
