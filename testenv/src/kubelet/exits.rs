//! Containers that run to completion, for job tests (BroadcastJob, issue 33 item 4): a pod
//! annotated `testenv.kruise.io/exit: "[container=]code[@ms]"` (several comma-separated; no
//! container name means every container) has that container exit with `code` `ms` milliseconds
//! (default 0) after it started. Containers without an entry, and pods without the annotation,
//! run forever as before.
//!
//! Applied to the status [`super::runtime::render`] reports, as a pure function of the pod, the
//! container's start time and the clock (the runtime state is not touched), as the kubelet does:
//! - an exited container is `terminated` (`Completed` for 0, `Error` otherwise), not ready;
//! - it is restarted per `restartPolicy` (Always: any exit; OnFailure: a non-zero one; Never:
//!   none) after [`RESTART_DELAY`]: meanwhile it waits in `CrashLoopBackOff` with the exit in
//!   `lastState`, then runs again with `restartCount + 1` (and exits again `ms` later);
//! - the pod is `Succeeded` once every container exited 0 for good, `Failed` once every
//!   container exited for good and one of them non-zero; `Ready` and `ContainersReady` turn
//!   False (reason `PodCompleted` for a finished pod).

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting, Pod, PodStatus,
};
use std::collections::BTreeMap;
use std::time::Duration;

use super::runtime::{PodRuntime, RunState, time};

/// The annotation naming exits.
pub const EXIT_ANNOTATION: &str = "testenv.kruise.io/exit";
/// Between an exit and the restart it earns.
pub const RESTART_DELAY: Duration = Duration::from_secs(1);

/// One container's planned exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit {
    /// The exit code.
    pub code: i32,
    /// Run time before it exits.
    pub after: Duration,
}

/// Parses the annotation: container name (or "" for every container) → exit. Malformed entries
/// are ignored.
pub fn parse(value: &str) -> BTreeMap<String, Exit> {
    let mut out = BTreeMap::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, rest) = entry.split_once('=').unwrap_or(("", entry));
        let (code, ms) = rest.split_once('@').unwrap_or((rest, "0"));
        let (Ok(code), Ok(ms)) = (code.trim().parse::<i32>(), ms.trim().parse::<u64>()) else { continue };
        out.insert(name.trim().to_string(), Exit { code, after: Duration::from_millis(ms) });
    }
    out
}

fn exits_of(pod: &Pod) -> BTreeMap<String, Exit> {
    pod.metadata.annotations.as_ref().and_then(|a| a.get(EXIT_ANNOTATION)).map(|v| parse(v)).unwrap_or_default()
}

fn add(t: Timestamp, d: Duration) -> Timestamp {
    t.checked_add(jiff::SignedDuration::try_from(d).unwrap_or(jiff::SignedDuration::ZERO)).unwrap_or(t)
}

fn sub(t: Timestamp, d: Duration) -> Timestamp {
    t.checked_sub(jiff::SignedDuration::try_from(d).unwrap_or(jiff::SignedDuration::ZERO)).unwrap_or(t)
}

fn restarts_after(policy: &str, code: i32) -> bool {
    match policy {
        "Never" => false,
        "OnFailure" => code != 0,
        _ => true,
    }
}

/// Where one container is in its run / exit / restart cycle at `now`.
enum Phase {
    /// Running (instance `restarts`), exits at `at`.
    Running { restarts: i32, since: Timestamp, exits_at: Timestamp },
    /// Exited for good.
    Done { restarts: i32, started: Timestamp, finished: Timestamp },
    /// Exited, restarting at `at`.
    BackOff { restarts: i32, started: Timestamp, finished: Timestamp, restarts_at: Timestamp },
}

fn cycle(exit: Exit, policy: &str, first_start: Timestamp, now: Timestamp) -> Phase {
    let mut restarts = 0;
    let mut since = first_start;
    loop {
        let exits_at = add(since, exit.after);
        if now < exits_at {
            return Phase::Running { restarts, since, exits_at };
        }
        if !restarts_after(policy, exit.code) {
            return Phase::Done { restarts, started: since, finished: exits_at };
        }
        let restarts_at = add(exits_at, RESTART_DELAY);
        if now < restarts_at {
            return Phase::BackOff { restarts, started: since, finished: exits_at, restarts_at };
        }
        restarts += 1;
        since = restarts_at;
    }
}

fn terminated(code: i32, id: &str, started: Timestamp, finished: Timestamp) -> ContainerState {
    ContainerState {
        terminated: Some(ContainerStateTerminated {
            container_id: Some(id.to_string()),
            exit_code: code,
            reason: Some(if code == 0 { "Completed" } else { "Error" }.into()),
            started_at: Some(time(started)),
            finished_at: Some(time(finished)),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Applies the pod's planned exits to the status `render` reported; returns the next moment the
/// status changes by itself. A pod without the annotation is left exactly as it is.
pub fn apply(pod: &Pod, rt: &PodRuntime, status: &mut PodStatus, now: Timestamp) -> Option<Timestamp> {
    let exits = exits_of(pod);
    if exits.is_empty() {
        return None;
    }
    let policy = pod.spec.as_ref().and_then(|s| s.restart_policy.clone()).unwrap_or_else(|| "Always".into());
    let mut wake: Option<Timestamp> = None;
    let mut soon = |t: Timestamp| wake = Some(wake.map_or(t, |w: Timestamp| w.min(t)));
    let mut done = 0usize;
    let mut failed = false;
    let statuses = status.container_statuses.get_or_insert_with(Vec::new);
    let total = statuses.len();
    for cs in statuses.iter_mut() {
        let Some(exit) = exits.get(&cs.name).or_else(|| exits.get("")).copied() else { continue };
        let Some(RunState::Running { container_id, started_at, .. }) = rt.containers.get(&cs.name).map(|c| &c.state)
        else {
            continue;
        };
        let base = rt.containers.get(&cs.name).map_or(0, |c| c.restart_count);
        match cycle(exit, &policy, *started_at, now) {
            Phase::Running { restarts, since, exits_at } => {
                soon(exits_at);
                if restarts > 0 {
                    cs.restart_count = base + restarts;
                    cs.state = Some(ContainerState {
                        running: Some(ContainerStateRunning { started_at: Some(time(since)) }),
                        ..Default::default()
                    });
                    let finished = sub(since, RESTART_DELAY);
                    cs.last_state = Some(terminated(exit.code, container_id, sub(finished, exit.after), finished));
                }
            }
            Phase::Done { restarts, started, finished } => {
                cs.restart_count = base + restarts;
                cs.ready = false;
                cs.started = Some(false);
                cs.state = Some(terminated(exit.code, container_id, started, finished));
                done += 1;
                failed |= exit.code != 0;
            }
            Phase::BackOff { restarts, started, finished, restarts_at } => {
                soon(restarts_at);
                cs.restart_count = base + restarts;
                cs.ready = false;
                cs.started = Some(false);
                cs.state = Some(ContainerState {
                    waiting: Some(ContainerStateWaiting {
                        reason: Some("CrashLoopBackOff".into()),
                        message: Some(format!("back-off restarting failed container {}", cs.name)),
                    }),
                    ..Default::default()
                });
                cs.last_state = Some(terminated(exit.code, container_id, started, finished));
            }
        }
    }
    let finished = total > 0 && done == total;
    if finished {
        status.phase = Some(if failed { "Failed" } else { "Succeeded" }.into());
    }
    let all_ready = statuses.iter().all(|s| s.ready);
    if !all_ready {
        let unready: Vec<&str> = statuses.iter().filter(|s| !s.ready).map(|s| s.name.as_str()).collect();
        let message = format!("containers with unready status: [{}]", unready.join(" "));
        let reason = if finished { "PodCompleted" } else { "ContainersNotReady" };
        for c in status.conditions.iter_mut().flatten() {
            if (c.type_ == "Ready" || c.type_ == "ContainersReady") && c.status == "True" {
                c.status = "False".into();
                c.reason = Some(reason.into());
                c.message = Some(message.clone());
                c.last_transition_time = Some(time(now));
            }
        }
    }
    wake
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kubelet::runtime::{ContainerRuntime, RuntimeSettings, render};
    use serde_json::json;

    fn at(ms: i64) -> Timestamp {
        Timestamp::from_millisecond(1_700_000_000_000 + ms).unwrap()
    }

    fn pod(policy: &str, exit: Option<&str>, containers: &[&str]) -> Pod {
        let cs: Vec<_> = containers.iter().map(|c| json!({"name": c, "image": "busybox"})).collect();
        let mut p: Pod = serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "ns"},
            "spec": {"restartPolicy": policy, "containers": cs}}))
        .unwrap();
        if let Some(e) = exit {
            p.metadata.annotations = Some([(EXIT_ANNOTATION.to_string(), e.to_string())].into());
        }
        p
    }

    fn runtime(containers: &[&str]) -> PodRuntime {
        PodRuntime {
            pod_ip: "10.0.0.2".into(),
            host_ip: "10.0.0.1".into(),
            start_time: at(0),
            init: BTreeMap::new(),
            containers: containers
                .iter()
                .map(|c| {
                    (
                        c.to_string(),
                        ContainerRuntime {
                            image: "docker.io/library/busybox:latest".into(),
                            state: RunState::Running {
                                container_id: format!("containerd://{c}"),
                                image_id: "sha".into(),
                                started_at: at(0),
                            },
                            restart_count: 0,
                            last: None,
                        },
                    )
                })
                .collect(),
        }
    }

    fn status_at(p: &Pod, rt: &PodRuntime, now: Timestamp) -> (PodStatus, Option<Timestamp>) {
        let settings = RuntimeSettings { ready_delay: Duration::ZERO, pull_failures: vec![] };
        let (mut s, _) = render(p, rt, &settings, now);
        let wake = apply(p, rt, &mut s, now);
        (s, wake)
    }

    fn cond(s: &PodStatus, t: &str) -> String {
        s.conditions.iter().flatten().find(|c| c.type_ == t).map(|c| c.status.clone()).unwrap_or_default()
    }

    #[test]
    fn parses_entries() {
        let e = parse("main=3@500, 0 ,bad=x, side=1");
        assert_eq!(e["main"], Exit { code: 3, after: Duration::from_millis(500) });
        assert_eq!(e[""], Exit { code: 0, after: Duration::ZERO });
        assert_eq!(e["side"].code, 1);
        assert!(!e.contains_key("bad"));
    }

    #[test]
    fn without_the_annotation_nothing_changes() {
        let p = pod("Never", None, &["c"]);
        let rt = runtime(&["c"]);
        let settings = RuntimeSettings { ready_delay: Duration::ZERO, pull_failures: vec![] };
        let (before, _) = render(&p, &rt, &settings, at(5000));
        let (after, wake) = status_at(&p, &rt, at(5000));
        assert_eq!((before, None), (after, wake));
    }

    #[test]
    fn never_succeeds_or_fails_once_every_container_exited() {
        let rt = runtime(&["c"]);
        let p = pod("Never", Some("0@200"), &["c"]);
        let (s, wake) = status_at(&p, &rt, at(100));
        assert_eq!((s.phase.as_deref(), wake), (Some("Running"), Some(at(200))));
        let (s, wake) = status_at(&p, &rt, at(200));
        assert_eq!((s.phase.as_deref(), wake), (Some("Succeeded"), None));
        let t = s.container_statuses.as_ref().unwrap()[0].state.clone().unwrap().terminated.unwrap();
        assert_eq!((t.exit_code, t.reason.as_deref()), (0, Some("Completed")));
        assert_eq!(cond(&s, "Ready"), "False");
        let p = pod("Never", Some("c=2"), &["c"]);
        assert_eq!(status_at(&p, &rt, at(0)).0.phase.as_deref(), Some("Failed"));
    }

    #[test]
    fn a_container_without_an_entry_keeps_the_pod_running() {
        let rt = runtime(&["a", "b"]);
        let p = pod("Never", Some("a=0"), &["a", "b"]);
        let (s, _) = status_at(&p, &rt, at(1000));
        assert_eq!(s.phase.as_deref(), Some("Running"));
        assert_eq!(cond(&s, "Ready"), "False");
    }

    #[test]
    fn on_failure_restarts_a_failing_container() {
        let rt = runtime(&["c"]);
        let p = pod("OnFailure", Some("1@100"), &["c"]);
        let (s, wake) = status_at(&p, &rt, at(150));
        let c = &s.container_statuses.as_ref().unwrap()[0];
        assert_eq!(c.state.as_ref().unwrap().waiting.as_ref().unwrap().reason.as_deref(), Some("CrashLoopBackOff"));
        assert_eq!((c.restart_count, wake), (0, Some(at(1100))));
        let (s, _) = status_at(&p, &rt, at(1150));
        let c = &s.container_statuses.as_ref().unwrap()[0];
        assert!(c.state.as_ref().unwrap().running.is_some());
        assert_eq!((c.restart_count, s.phase.as_deref()), (1, Some("Running")));
        let (s, _) = status_at(&p, &rt, at(3500));
        assert_eq!(s.container_statuses.as_ref().unwrap()[0].restart_count, 3);
        // OnFailure with exit 0 is done for good.
        let ok = pod("OnFailure", Some("0@100"), &["c"]);
        assert_eq!(status_at(&ok, &rt, at(150)).0.phase.as_deref(), Some("Succeeded"));
    }
}
