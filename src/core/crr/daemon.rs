//! What kruise-daemon decides for the ContainerRecreateRequests of one pod (kruise
//! `pkg/daemon/containerrecreate`, `crr_daemon_controller.go` `sync`/`pickRecreateRequest`/`manage`
//! and `crr_daemon_util.go` `getCurrentCRRContainersRecreateStates`):
//!
//! - [`pick`]: of a pod's unfinished requests, the one to work on (Recreating first, then Pending,
//!   then new ones, oldest first); the other new ones are marked Pending.
//! - [`current_states`]: each container's state from what the runtime reports and the manager's
//!   copy of the pod's statuses — a new container id, a higher restart count or a start after the
//!   request means recreated, Succeeded once it is the one the pod reports ready for
//!   `minStartedSeconds`.
//! - [`step`]: the next thing to do — write the states, stop the next container (one per step;
//!   with `orderedRecreate` only once the previous one succeeded), or complete the request
//!   (every container finished, or one failed under `failurePolicy: Fail`).
//!
//! What this daemon already stopped for a request (by request uid, in memory) counts as killed
//! even when the status write saying so was lost, and is never stopped twice.

use std::collections::BTreeSet;

use k8s_openapi::jiff::{SignedDuration, Timestamp};

use crate::apis::containerrecreaterequest::{
    ContainerRecreateRequest, ContainerRecreateRequestContainerRecreateState as State, PHASE_COMPLETED, PHASE_FAILED,
    PHASE_PENDING, PHASE_RECREATING, PHASE_SUCCEEDED, SYNC_CONTAINER_STATUSES_KEY, SyncContainerStatus,
    UNREADY_ACQUIRED_KEY,
};

/// One container as the runtime reports it (the newest instance of that name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    /// Name in the pod.
    pub name: String,
    /// `<runtime>://<id>`, as the pod status spells it.
    pub id: String,
    /// Running (false: exited).
    pub running: bool,
    /// The kubelet's restart count.
    pub restart_count: i32,
    /// When it started.
    pub started_at: Timestamp,
}

fn phase(crr: &ContainerRecreateRequest) -> &str {
    crr.status.as_ref().map(|s| s.phase.as_str()).unwrap_or_default()
}

fn finished(crr: &ContainerRecreateRequest) -> bool {
    crr.metadata.deletion_timestamp.is_some() || crr.status.as_ref().and_then(|s| s.completion_time.as_ref()).is_some()
}

fn weight(phase: &str) -> u8 {
    match phase {
        PHASE_COMPLETED => 1,
        PHASE_RECREATING => 2,
        PHASE_PENDING => 3,
        _ => 4,
    }
}

/// kruise `pickRecreateRequest` (`crrListByPhaseAndCreated`): the request to work on and the
/// names of new requests to mark Pending. Finished requests are skipped.
pub fn pick(crrs: &[&ContainerRecreateRequest]) -> (Option<String>, Vec<String>) {
    let mut list: Vec<&ContainerRecreateRequest> = crrs.iter().copied().filter(|c| !finished(c)).collect();
    list.sort_by(|a, b| {
        let (pa, pb) = (phase(a), phase(b));
        let by_phase = if pa == pb { std::cmp::Ordering::Equal } else { weight(pa).cmp(&weight(pb)) };
        by_phase
            .then_with(|| {
                let t = |c: &ContainerRecreateRequest| c.metadata.creation_timestamp.as_ref().map(|t| t.0);
                t(a).cmp(&t(b))
            })
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
    let name = |c: &ContainerRecreateRequest| c.metadata.name.clone().unwrap_or_default();
    let picked = list.first().map(|c| name(c));
    let pending = list.iter().skip(1).filter(|c| phase(c).is_empty()).map(|c| name(c)).collect();
    (picked, pending)
}

/// The manager's copy of the pod's container statuses (kruise `getCRRSyncContainerStatuses`).
pub fn sync_statuses(crr: &ContainerRecreateRequest) -> Vec<SyncContainerStatus> {
    crr.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(SYNC_CONTAINER_STATUSES_KEY))
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_default()
}

/// How long the unready grace period still runs (`Ok(None)`: nothing to wait for; `Err`: the
/// acquired time does not parse, kruise completes the request with this message). `None` while
/// the manager has not marked the pod not ready yet is `Ok(Some(MAX))`: wait for it.
pub fn unready_wait(crr: &ContainerRecreateRequest, now: Timestamp) -> Result<Option<SignedDuration>, String> {
    let Some(grace) = crr.spec.strategy.as_ref().and_then(|s| s.unready_grace_period_seconds) else {
        return Ok(None);
    };
    let acquired =
        crr.metadata.annotations.as_ref().and_then(|a| a.get(UNREADY_ACQUIRED_KEY)).cloned().unwrap_or_default();
    if acquired.is_empty() {
        return Ok(Some(SignedDuration::MAX));
    }
    let at: Timestamp = acquired.parse().map_err(|e| format!("failed to parse unready time {acquired}: {e}"))?;
    let left = SignedDuration::from_secs(grace) - now.duration_since(at);
    Ok((left > SignedDuration::ZERO).then_some(left))
}

/// kruise `getCurrentCRRContainersRecreateStates`; `killed`: the containers this daemon stopped
/// for this request.
pub fn current_states(
    crr: &ContainerRecreateRequest,
    observed: &[Observed],
    killed: &BTreeSet<String>,
    now: Timestamp,
) -> Vec<State> {
    let strategy = crr.spec.strategy.clone().unwrap_or_default();
    let min_started = SignedDuration::from_secs(i64::from(strategy.min_started_seconds));
    let synced = sync_statuses(crr);
    let created = crr.metadata.creation_timestamp.as_ref().map(|t| t.0);
    let previous_of =
        |name: &str| crr.status.as_ref().and_then(|s| s.container_recreate_states.iter().find(|c| c.name == name));
    let mut out = Vec::with_capacity(crr.spec.containers.len());
    for c in &crr.spec.containers {
        let previous = previous_of(&c.name);
        if let Some(p) = previous.filter(|p| p.phase == PHASE_FAILED || p.phase == PHASE_SUCCEEDED) {
            out.push(p.clone());
            continue;
        }
        let was_killed = previous.is_some_and(|p| p.is_killed) || killed.contains(&c.name);
        let state = |phase: &str, is_killed: bool| State {
            name: c.name.clone(),
            phase: phase.into(),
            message: String::new(),
            is_killed,
        };
        let Some(o) = observed.iter().find(|o| o.name == c.name) else {
            out.push(State { message: "not found container on Node".into(), ..state(PHASE_PENDING, was_killed) });
            continue;
        };
        let context = c.status_context.clone().unwrap_or_default();
        let current = if !o.running {
            state(PHASE_RECREATING, was_killed)
        } else if strategy.force_recreate && !was_killed {
            state(PHASE_PENDING, false)
        } else if o.id != context.container_id
            || o.restart_count > context.restart_count
            || created.is_some_and(|t| o.started_at > t)
        {
            let mut s = state(PHASE_RECREATING, was_killed);
            let ready = synced.iter().find(|x| x.name == c.name).is_some_and(|x| x.container_id == o.id && x.ready);
            if ready && now.duration_since(o.started_at) > min_started {
                s.phase = PHASE_SUCCEEDED.into();
            }
            s
        } else {
            state(PHASE_PENDING, was_killed)
        };
        out.push(current);
    }
    out
}

/// What to do next for the picked request.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Write these `containerRecreateStates`.
    WriteStates(Vec<State>),
    /// Stop this container (its observed id), then write the states (it marked Recreating and
    /// killed); on failure mark it Failed with the error.
    Kill {
        /// Container name.
        name: String,
        /// Its id as observed.
        id: String,
        /// The states after a successful stop.
        states: Vec<State>,
    },
    /// Complete the request (phase Completed, completionTime now).
    Complete,
    /// Nothing to write; look again after this (minStartedSeconds) or on the next change.
    Wait(Option<SignedDuration>),
}

/// kruise `manage` after the states were computed: `states` are [`current_states`], `recorded`
/// the request's status now.
pub fn step(
    crr: &ContainerRecreateRequest,
    mut states: Vec<State>,
    observed: &[Observed],
    killed: &BTreeSet<String>,
) -> Step {
    let recorded = crr.status.as_ref().map(|s| s.container_recreate_states.clone()).unwrap_or_default();
    if recorded != states {
        return Step::WriteStates(states);
    }
    let strategy = crr.spec.strategy.clone().unwrap_or_default();
    let ignore = strategy.failure_policy == crate::apis::containerrecreaterequest::FAILURE_POLICY_IGNORE;
    let mut completed = 0usize;
    let mut kill: Option<(String, String)> = None;
    for s in &mut states {
        match s.phase.as_str() {
            PHASE_SUCCEEDED => {
                completed += 1;
                continue;
            }
            PHASE_FAILED => {
                completed += 1;
                if ignore {
                    continue;
                }
                return Step::Complete;
            }
            _ => {}
        }
        if s.phase == PHASE_RECREATING {
            s.is_killed = true;
            if strategy.ordered_recreate {
                break;
            }
            continue;
        }
        let Some(o) = observed.iter().find(|o| o.name == s.name) else { break };
        s.is_killed = true;
        s.phase = PHASE_RECREATING.into();
        if !killed.contains(&s.name) {
            kill = Some((s.name.clone(), o.id.clone()));
        }
        break;
    }
    if let Some((name, id)) = kill {
        return Step::Kill { name, id, states };
    }
    if recorded != states {
        return Step::WriteStates(states);
    }
    if completed == states.len() {
        return Step::Complete;
    }
    let min = strategy.min_started_seconds;
    Step::Wait((min > 0).then(|| SignedDuration::from_secs(i64::from(min))))
}

/// The states after a failed stop of `name` (kruise: Failed with "kill container error: ...").
pub fn kill_failed(mut states: Vec<State>, name: &str, error: &str) -> Vec<State> {
    for s in &mut states {
        if s.name == name {
            s.phase = PHASE_FAILED.into();
            s.is_killed = false;
            s.message = format!("kill container error: {error}");
        }
    }
    states
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn t(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn crr(extra: Value) -> ContainerRecreateRequest {
        let mut v = json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "ContainerRecreateRequest",
            "metadata": {"name": "r", "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"podName": "p", "containers": [
                {"name": "a", "statusContext": {"containerID": "containerd://a1", "restartCount": 0}},
                {"name": "b", "statusContext": {"containerID": "containerd://b1", "restartCount": 0}}
            ], "strategy": {"failurePolicy": "Fail"}}
        });
        json_patch::merge(&mut v, &extra);
        serde_json::from_value(v).unwrap()
    }

    fn obs(name: &str, id: &str, running: bool, restarts: i32, started: &str) -> Observed {
        Observed {
            name: name.into(),
            id: format!("containerd://{id}"),
            running,
            restart_count: restarts,
            started_at: t(started),
        }
    }

    fn st(name: &str, phase: &str, killed: bool) -> State {
        State { name: name.into(), phase: phase.into(), message: String::new(), is_killed: killed }
    }

    const OLD: &str = "2025-12-31T00:00:00Z";
    const NEW: &str = "2026-01-01T00:00:05Z";
    const NOW: &str = "2026-01-01T00:00:10Z";

    type Row<'a> = (&'a str, ContainerRecreateRequest, Vec<Observed>, &'a BTreeSet<String>, Vec<State>);

    /// `getCurrentCRRContainersRecreateStates`, row by row.
    #[test]
    fn states() {
        let none = BTreeSet::new();
        let killed_a = BTreeSet::from(["a".to_string()]);
        let sync_a2 = json!({"metadata": {"annotations": {SYNC_CONTAINER_STATUSES_KEY:
            r#"[{"name":"a","ready":true,"restartCount":1,"containerID":"containerd://a2"}]"#}}});
        let rows: Vec<Row<'_>> = vec![
            (
                "nothing changed: both pending",
                crr(json!({})),
                vec![obs("a", "a1", true, 0, OLD), obs("b", "b1", true, 0, OLD)],
                &none,
                vec![st("a", "Pending", false), st("b", "Pending", false)],
            ),
            (
                "not on the node",
                crr(json!({})),
                vec![obs("a", "a1", true, 0, OLD)],
                &none,
                vec![
                    st("a", "Pending", false),
                    State { message: "not found container on Node".into(), ..st("b", "Pending", false) },
                ],
            ),
            (
                "exited: recreating",
                crr(json!({"status": {"phase": "Recreating", "containerRecreateStates": [
                    {"name": "a", "phase": "Recreating", "isKilled": true}]}})),
                vec![obs("a", "a1", false, 0, OLD), obs("b", "b1", true, 0, OLD)],
                &none,
                vec![st("a", "Recreating", true), st("b", "Pending", false)],
            ),
            (
                "new id, not yet synced ready: recreating",
                crr(json!({})),
                vec![obs("a", "a2", true, 1, NEW), obs("b", "b1", true, 0, OLD)],
                &none,
                vec![st("a", "Recreating", false), st("b", "Pending", false)],
            ),
            (
                "new id synced ready: succeeded",
                crr(sync_a2.clone()),
                vec![obs("a", "a2", true, 1, NEW), obs("b", "b1", true, 0, OLD)],
                &none,
                vec![st("a", "Succeeded", false), st("b", "Pending", false)],
            ),
            (
                "minStartedSeconds 10 not reached",
                crr({
                    let mut v = sync_a2.clone();
                    json_patch::merge(&mut v, &json!({"spec": {"strategy": {"minStartedSeconds": 10}}}));
                    v
                }),
                vec![obs("a", "a2", true, 1, NEW), obs("b", "b1", true, 0, OLD)],
                &none,
                vec![st("a", "Recreating", false), st("b", "Pending", false)],
            ),
            (
                "succeeded and failed are final",
                crr(json!({"status": {"containerRecreateStates": [
                    {"name": "a", "phase": "Succeeded"}, {"name": "b", "phase": "Failed", "message": "x"}]}})),
                vec![],
                &none,
                vec![st("a", "Succeeded", false), State { message: "x".into(), ..st("b", "Failed", false) }],
            ),
            (
                "forceRecreate, not killed: pending even with a new id",
                crr(json!({"spec": {"strategy": {"forceRecreate": true}}})),
                vec![obs("a", "a2", true, 1, NEW), obs("b", "b1", true, 0, OLD)],
                &none,
                vec![st("a", "Pending", false), st("b", "Pending", false)],
            ),
            (
                "stopped by us, status write lost: still killed",
                crr(json!({"spec": {"strategy": {"forceRecreate": true}}})),
                vec![obs("a", "a2", true, 1, NEW), obs("b", "b1", true, 0, OLD)],
                &killed_a,
                vec![st("a", "Recreating", true), st("b", "Pending", false)],
            ),
        ];
        for (name, c, o, killed, want) in rows {
            assert_eq!(current_states(&c, &o, killed, t(NOW)), want, "{name}");
        }
    }

    #[test]
    fn steps() {
        let none = BTreeSet::new();
        let running = vec![obs("a", "a1", true, 0, OLD), obs("b", "b1", true, 0, OLD)];
        let recorded = |states: Value, strategy: Value| {
            crr(
                json!({"spec": {"strategy": strategy}, "status": {"phase": "Recreating", "containerRecreateStates": states}}),
            )
        };
        // States differ from the status: write them first.
        let c = crr(json!({}));
        let s = current_states(&c, &running, &none, t(NOW));
        assert_eq!(step(&c, s.clone(), &running, &none), Step::WriteStates(s));
        // Both pending: stop a first.
        let c = recorded(json!([{"name": "a", "phase": "Pending"}, {"name": "b", "phase": "Pending"}]), json!({}));
        let s = current_states(&c, &running, &none, t(NOW));
        assert_eq!(
            step(&c, s, &running, &none),
            Step::Kill {
                name: "a".into(),
                id: "containerd://a1".into(),
                states: vec![st("a", "Recreating", true), st("b", "Pending", false)]
            }
        );
        // a recreating, not ordered: stop b too.
        let after_a = vec![obs("a", "a1", false, 0, OLD), obs("b", "b1", true, 0, OLD)];
        let c = recorded(
            json!([{"name": "a", "phase": "Recreating", "isKilled": true}, {"name": "b", "phase": "Pending"}]),
            json!({}),
        );
        let s = current_states(&c, &after_a, &none, t(NOW));
        assert!(matches!(step(&c, s, &after_a, &none), Step::Kill { name, .. } if name == "b"));
        // Ordered: wait for a.
        let c = recorded(
            json!([{"name": "a", "phase": "Recreating", "isKilled": true}, {"name": "b", "phase": "Pending"}]),
            json!({"orderedRecreate": true}),
        );
        let s = current_states(&c, &after_a, &none, t(NOW));
        assert_eq!(step(&c, s, &after_a, &none), Step::Wait(None));
        // Already stopped by us (a lost write): marked, never stopped twice.
        let c = recorded(json!([{"name": "a", "phase": "Pending"}, {"name": "b", "phase": "Pending"}]), json!({}));
        let killed = BTreeSet::from(["a".to_string()]);
        let s = vec![st("a", "Pending", false), st("b", "Pending", false)];
        assert_eq!(
            step(&c, s, &running, &killed),
            Step::WriteStates(vec![st("a", "Recreating", true), st("b", "Pending", false)])
        );
        // Failed with Fail: complete; with Ignore: go on.
        let c = recorded(json!([{"name": "a", "phase": "Failed"}, {"name": "b", "phase": "Pending"}]), json!({}));
        let s = current_states(&c, &running, &none, t(NOW));
        assert_eq!(step(&c, s, &running, &none), Step::Complete);
        let c = recorded(
            json!([{"name": "a", "phase": "Failed"}, {"name": "b", "phase": "Pending"}]),
            json!({"failurePolicy": "Ignore"}),
        );
        let s = current_states(&c, &running, &none, t(NOW));
        assert!(matches!(step(&c, s, &running, &none), Step::Kill { name, .. } if name == "b"));
        // All succeeded: complete; minStartedSeconds waits.
        let c = recorded(json!([{"name": "a", "phase": "Succeeded"}, {"name": "b", "phase": "Succeeded"}]), json!({}));
        let s = current_states(&c, &running, &none, t(NOW));
        assert_eq!(step(&c, s, &running, &none), Step::Complete);
        let c = recorded(
            json!([{"name": "a", "phase": "Succeeded"}, {"name": "b", "phase": "Recreating", "isKilled": true}]),
            json!({"minStartedSeconds": 3}),
        );
        let b2 = vec![obs("a", "a2", true, 1, NEW), obs("b", "b2", true, 1, NEW)];
        let s = current_states(&c, &b2, &none, t(NOW));
        assert_eq!(step(&c, s, &b2, &none), Step::Wait(Some(SignedDuration::from_secs(3))));
        assert_eq!(
            kill_failed(vec![st("a", "Recreating", true)], "a", "boom"),
            vec![State { message: "kill container error: boom".into(), ..st("a", "Failed", false) }]
        );
    }

    #[test]
    fn picking() {
        let mk = |name: &str, created: &str, phase: &str, done: bool| {
            let mut status = json!({"phase": phase});
            if done {
                status["completionTime"] = json!(created);
            }
            crr(json!({"metadata": {"name": name, "creationTimestamp": created}, "status": status}))
        };
        let a = mk("a", "2026-01-01T00:00:01Z", "", false);
        let b = mk("b", "2026-01-01T00:00:00Z", "", false);
        let c = mk("c", "2026-01-01T00:00:02Z", "Recreating", false);
        let d = mk("d", "2025-01-01T00:00:00Z", "Completed", true);
        assert_eq!(pick(&[&a, &b, &c, &d]), (Some("c".into()), vec!["b".into(), "a".into()]));
        assert_eq!(pick(&[&a, &b]), (Some("b".into()), vec!["a".into()]));
        assert_eq!(pick(&[&d]), (None, vec![]));
        let p = mk("p", "2026-01-01T00:00:00Z", "Pending", false);
        assert_eq!(pick(&[&a, &p]), (Some("p".into()), vec!["a".into()]), "a Pending one goes before a new one");
    }

    #[test]
    fn unready() {
        let now = t(NOW);
        assert_eq!(unready_wait(&crr(json!({})), now), Ok(None));
        let g = |extra: Value| {
            let mut v = json!({"spec": {"strategy": {"unreadyGracePeriodSeconds": 5}}});
            json_patch::merge(&mut v, &extra);
            crr(v)
        };
        assert_eq!(unready_wait(&g(json!({})), now), Ok(Some(SignedDuration::MAX)));
        let at = |s: &str| g(json!({"metadata": {"annotations": {UNREADY_ACQUIRED_KEY: s}}}));
        assert_eq!(unready_wait(&at("2026-01-01T00:00:08Z"), now), Ok(Some(SignedDuration::from_secs(3))));
        assert_eq!(unready_wait(&at("2026-01-01T00:00:01Z"), now), Ok(None));
        assert!(unready_wait(&at("yesterday"), now).unwrap_err().starts_with("failed to parse unready time yesterday"));
    }
}
