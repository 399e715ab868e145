//! Containers stopped through a node's CRI service (`StopContainer`, as kruise-daemon stops a
//! container for a ContainerRecreateRequest) are restarted by the kubelet, as the real kubelet's
//! pod worker restarts a container of a `restartPolicy: Always` pod that exited: a new container
//! id, restartCount + 1, the stopped instance in `lastState`, the image unchanged (issue 30 item 5).
//!
//! The pod annotation [`NO_RESTART_ANNOTATION`] (comma-separated container names) keeps the named
//! containers down once stopped: the runtime reports them exited and the pod status keeps the old
//! instance (a container that "does not come back", for deadline tests).
//!
//! A container of a `restartPolicy: Never` pod (or of an `OnFailure` pod, stopped with exit code
//! 0) is not restarted once stopped, as the real kubelet does not restart it: [`report_stopped`]
//! reports it `terminated` with the exit code and finish time the CRI runtime gives, and the pod
//! `Succeeded` (every container exited 0) or `Failed` once every container is terminated — how a
//! job pod whose sidecar kruise's SidecarTerminator stopped completes (issue 30 item 3).
//!
//! The kubelet registers every running container of its pods in the node's runtime
//! ([`register`]) so `ListContainers` answers as containerd does, with the kubelet's labels.

use super::runtime::{ContainerRuntime, Finished, Ids, PodRuntime, RunState, time};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{ContainerState, ContainerStateTerminated, Pod, PodStatus};
use kruise_cri::fake::{FakeRuntime, PodContainer};

/// Pod annotation: containers the kubelet does not restart after a CRI stop.
pub const NO_RESTART_ANNOTATION: &str = "testenv.kruise.io/no-restart-after-stop";

fn bare(id: &str) -> &str {
    id.split_once("://").map_or(id, |(_, b)| b)
}

fn kept_down(pod: &Pod) -> Vec<String> {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(NO_RESTART_ANNOTATION))
        .map(|v| v.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect())
        .unwrap_or_default()
}

fn restart_policy(pod: &Pod) -> &str {
    pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref()).unwrap_or("Always")
}

/// Whether the kubelet restarts a container of `pod` that exited with `code` (kubelet
/// `ShouldContainerBeRestarted`).
fn restarts(pod: &Pod, code: i32) -> bool {
    match restart_policy(pod) {
        "Never" => false,
        "OnFailure" => code != 0,
        _ => true,
    }
}

/// `previous` with every container the runtime stopped restarted (unless kept down, or the
/// pod's `restartPolicy` does not restart it).
pub fn after_stops(
    pod: &Pod,
    mut previous: PodRuntime,
    runtime: Option<&FakeRuntime>,
    now: Timestamp,
    ids: &mut impl Ids,
) -> PodRuntime {
    let Some(runtime) = runtime else { return previous };
    let down = kept_down(pod);
    let restart = |name: &str, c: &mut ContainerRuntime, ids: &mut dyn FnMut() -> String| {
        let RunState::Running { container_id, image_id, started_at } = &c.state else { return };
        let Some((code, _)) = runtime.stop_exit(bare(container_id)) else { return };
        if down.iter().any(|d| d == name) || !restarts(pod, code) {
            return;
        }
        c.last = Some(Finished {
            container_id: container_id.clone(),
            image_id: image_id.clone(),
            started_at: *started_at,
            finished_at: now,
        });
        c.state = RunState::Running { container_id: ids(), image_id: image_id.clone(), started_at: now };
        c.restart_count += 1;
    };
    let mut fresh = || ids.container_id();
    for (name, c) in previous.containers.iter_mut() {
        restart(name, c, &mut fresh);
    }
    for (name, c) in previous.init.iter_mut() {
        restart(name, c, &mut fresh);
    }
    previous
}

/// Reports the containers stopped through CRI that stay down ([`after_stops`] did not restart
/// them) `terminated`, with the runtime's exit code and finish time; the pod `Succeeded` or
/// `Failed` once every container is terminated, its Ready conditions False (`PodCompleted`).
/// Applied after [`super::exits::apply`]; a pod nothing was stopped in is left as it is.
pub fn report_stopped(
    pod: &Pod,
    rt: &PodRuntime,
    runtime: Option<&FakeRuntime>,
    status: &mut PodStatus,
    now: Timestamp,
) {
    let Some(runtime) = runtime else { return };
    let statuses = status.container_statuses.get_or_insert_with(Vec::new);
    let mut stopped = 0usize;
    for cs in statuses.iter_mut() {
        let Some(RunState::Running { container_id, started_at, .. }) = rt.containers.get(&cs.name).map(|c| &c.state)
        else {
            continue;
        };
        let Some((code, at)) = runtime.stop_exit(bare(container_id)) else { continue };
        // Kept-down containers keep their old status (see the module doc); restarted ones have a
        // new id already.
        if restarts(pod, code) || kept_down(pod).contains(&cs.name) {
            continue;
        }
        let finished = Timestamp::from_nanosecond(i128::from(at)).ok().filter(|t| *t >= *started_at).unwrap_or(now);
        stopped += 1;
        cs.ready = false;
        cs.started = Some(false);
        cs.state = Some(ContainerState {
            terminated: Some(ContainerStateTerminated {
                container_id: Some(container_id.clone()),
                exit_code: code,
                reason: Some(if code == 0 { "Completed" } else { "Error" }.into()),
                started_at: Some(time(*started_at)),
                finished_at: Some(time(finished)),
                ..Default::default()
            }),
            ..Default::default()
        });
    }
    if stopped == 0 {
        return;
    }
    let exits: Vec<Option<i32>> =
        statuses.iter().map(|s| s.state.as_ref().and_then(|st| st.terminated.as_ref()).map(|t| t.exit_code)).collect();
    let finished = !exits.is_empty() && exits.iter().all(Option::is_some);
    if finished {
        let failed = exits.iter().any(|c| *c != Some(0));
        status.phase = Some(if failed { "Failed" } else { "Succeeded" }.into());
    }
    let unready: Vec<&str> = statuses.iter().filter(|s| !s.ready).map(|s| s.name.as_str()).collect();
    let message = format!("containers with unready status: [{}]", unready.join(" "));
    let reason = if finished { "PodCompleted" } else { "ContainersNotReady" };
    for c in status.conditions.iter_mut().flatten() {
        if c.type_ == "Ready" || c.type_ == "ContainersReady" {
            if c.status == "True" {
                c.last_transition_time = Some(time(now));
            }
            c.status = "False".into();
            c.reason = Some(reason.into());
            c.message = Some(message.clone());
        }
    }
}

/// The environment the kubelet gives container `name` of `pod` now: literal values and the
/// `fieldRef`s of the downward API on the pod's metadata (`metadata.labels['k']`,
/// `metadata.annotations['k']`, name, namespace, uid) and `spec.nodeName`; anything else is left
/// out.
pub fn container_env(pod: &Pod, name: &str) -> Vec<(String, String)> {
    let Some(c) = pod.spec.as_ref().and_then(|s| s.containers.iter().find(|c| c.name == name)) else {
        return Vec::new();
    };
    let meta = &pod.metadata;
    let mut out = Vec::new();
    for e in c.env.iter().flatten() {
        let value = match e.value_from.as_ref().and_then(|v| v.field_ref.as_ref()) {
            None if e.value_from.is_none() => Some(e.value.clone().unwrap_or_default()),
            None => None,
            Some(f) => {
                let path = f.field_path.as_str();
                let subscript = |prefix: &str| {
                    path.strip_prefix(prefix).and_then(|r| r.strip_prefix("['")).and_then(|r| r.strip_suffix("']"))
                };
                if let Some(k) = subscript("metadata.labels") {
                    Some(meta.labels.as_ref().and_then(|l| l.get(k)).cloned().unwrap_or_default())
                } else if let Some(k) = subscript("metadata.annotations") {
                    Some(meta.annotations.as_ref().and_then(|a| a.get(k)).cloned().unwrap_or_default())
                } else {
                    match path {
                        "metadata.name" => meta.name.clone(),
                        "metadata.namespace" => meta.namespace.clone(),
                        "metadata.uid" => meta.uid.clone(),
                        "spec.nodeName" => pod.spec.as_ref().and_then(|s| s.node_name.clone()),
                        _ => None,
                    }
                }
            }
        };
        if let Some(v) = value {
            out.push((e.name.clone(), v));
        }
    }
    out
}

/// Registers the pod's running containers in its node's runtime, with the environment each
/// started with (the runtime keeps the first one registered for a container id).
pub fn register(pod: &Pod, rt: &PodRuntime, runtime: Option<&FakeRuntime>) {
    let Some(runtime) = runtime else { return };
    for (n, c) in rt.containers.iter() {
        if let RunState::Running { container_id, .. } = &c.state {
            runtime.set_container_env(bare(container_id), container_env(pod, n));
        }
    }
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    let containers = rt
        .init
        .iter()
        .chain(rt.containers.iter())
        .filter_map(|(n, c)| match &c.state {
            RunState::Running { container_id, started_at, .. } => Some(PodContainer {
                id: bare(container_id).to_string(),
                name: n.clone(),
                restart_count: c.restart_count,
                started_at_nanos: i64::try_from(started_at.as_nanosecond()).unwrap_or(0),
                running: true,
            }),
            _ => None,
        })
        .collect();
    runtime.set_pod_containers(ns, name, uid, containers);
}

#[cfg(test)]
mod tests {
    use super::super::runtime::RandomIds;
    use super::*;
    use std::collections::BTreeMap;

    fn running(id: &str) -> ContainerRuntime {
        ContainerRuntime {
            image: "docker.io/library/nginx:latest".into(),
            state: RunState::Running {
                container_id: format!("containerd://{id}"),
                image_id: "img".into(),
                started_at: Timestamp::UNIX_EPOCH,
            },
            restart_count: 0,
            last: None,
        }
    }

    #[tokio::test]
    async fn a_stopped_container_comes_back_with_a_new_id() {
        let runtime = FakeRuntime::new("containerd");
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u",
                "annotations": {NO_RESTART_ANNOTATION: "c"}},
            "spec": {"containers": []}
        }))
        .unwrap();
        let rt = PodRuntime {
            pod_ip: String::new(),
            host_ip: String::new(),
            start_time: Timestamp::UNIX_EPOCH,
            init: BTreeMap::new(),
            containers: [
                ("a".to_string(), running("a1")),
                ("b".to_string(), running("b1")),
                ("c".to_string(), running("c1")),
            ]
            .into(),
        };
        register(&pod, &rt, Some(&runtime));
        // Nothing stopped: unchanged.
        let now = Timestamp::from_second(100).unwrap();
        assert_eq!(after_stops(&pod, rt.clone(), Some(&runtime), now, &mut RandomIds), rt);
        runtime.mark_stopped_for_test("a1");
        runtime.mark_stopped_for_test("c1");
        let next = after_stops(&pod, rt.clone(), Some(&runtime), now, &mut RandomIds);
        let a = &next.containers["a"];
        assert_eq!(a.restart_count, 1);
        assert!(
            matches!(&a.state, RunState::Running { container_id, started_at, .. } if container_id != "containerd://a1" && *started_at == now)
        );
        assert_eq!(a.last.as_ref().unwrap().container_id, "containerd://a1");
        assert_eq!(next.containers["b"], rt.containers["b"]);
        assert_eq!(next.containers["c"], rt.containers["c"], "kept down by the annotation");
    }

    #[tokio::test]
    async fn a_stopped_container_of_a_never_pod_stays_terminated() {
        let runtime = FakeRuntime::new("containerd");
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "main"}, {"name": "side"}]}
        }))
        .unwrap();
        let rt = PodRuntime {
            pod_ip: String::new(),
            host_ip: String::new(),
            start_time: Timestamp::UNIX_EPOCH,
            init: BTreeMap::new(),
            containers: [("main".to_string(), running("m1")), ("side".to_string(), running("s1"))].into(),
        };
        register(&pod, &rt, Some(&runtime));
        let now = Timestamp::from_second(100).unwrap();
        runtime.mark_stopped_for_test("s1");
        let next = after_stops(&pod, rt.clone(), Some(&runtime), now, &mut RandomIds);
        assert_eq!(next, rt, "not restarted under restartPolicy Never");
        let status_of = |main_done: bool| {
            let state = |name: &str, id: &str, done: bool| {
                let mut v = serde_json::json!({"name": name, "ready": !done, "restartCount": 0, "image": "x", "imageID": "",
                    "state": {"running": {"startedAt": "1970-01-01T00:00:00Z"}}});
                if done {
                    v["state"] = serde_json::json!({"terminated": {"exitCode": 0, "containerID": id}});
                }
                v
            };
            let s: PodStatus = serde_json::from_value(serde_json::json!({"phase": "Running",
                "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [state("main", "containerd://m1", main_done), state("side", "containerd://s1", false)]}))
            .unwrap();
            s
        };
        // The main container still runs: the sidecar is terminated (the CRI's exit code), the
        // pod not finished.
        let mut status = status_of(false);
        report_stopped(&pod, &next, Some(&runtime), &mut status, now);
        let side = &status.container_statuses.as_ref().unwrap()[1];
        let t = side.state.as_ref().unwrap().terminated.as_ref().unwrap();
        assert_eq!((t.exit_code, t.container_id.as_deref(), side.ready), (0, Some("containerd://s1"), false));
        assert_eq!(status.phase.as_deref(), Some("Running"));
        assert_eq!(status.conditions.as_ref().unwrap()[0].status, "False");
        // Every container terminated with 0: Succeeded.
        let mut status = status_of(true);
        report_stopped(&pod, &next, Some(&runtime), &mut status, now);
        assert_eq!(status.phase.as_deref(), Some("Succeeded"));
        // A non-zero exit code from the runtime fails the pod.
        let runtime2 = FakeRuntime::new("containerd");
        register(&pod, &rt, Some(&runtime2));
        runtime2.set_stop_exit_code("side", 137);
        runtime2.mark_stopped_for_test("s1");
        assert_eq!(runtime2.stop_exit("s1"), Some((0, 0)), "marked, not stopped through the RPC");
        // Under Always the stopped container restarts instead and nothing is reported.
        let mut always = pod.clone();
        always.spec.as_mut().unwrap().restart_policy = Some("Always".into());
        let restarted = after_stops(&always, rt.clone(), Some(&runtime), now, &mut RandomIds);
        assert_eq!(restarted.containers["side"].restart_count, 1);
        let mut status = status_of(false);
        report_stopped(&always, &restarted, Some(&runtime), &mut status, now);
        assert!(status.container_statuses.as_ref().unwrap()[1].state.as_ref().unwrap().running.is_some());
    }
}
