//! Containers stopped through a node's CRI service (`StopContainer`, as kruise-daemon stops a
//! container for a ContainerRecreateRequest) are restarted by the kubelet, as the real kubelet's
//! pod worker restarts a container of a `restartPolicy: Always` pod that exited: a new container
//! id, restartCount + 1, the stopped instance in `lastState`, the image unchanged (issue 30 item 5).
//!
//! The pod annotation [`NO_RESTART_ANNOTATION`] (comma-separated container names) keeps the named
//! containers down once stopped: the runtime reports them exited and the pod status keeps the old
//! instance (a container that "does not come back", for deadline tests).
//!
//! The kubelet registers every running container of its pods in the node's runtime
//! ([`register`]) so `ListContainers` answers as containerd does, with the kubelet's labels.

use super::runtime::{ContainerRuntime, Finished, Ids, PodRuntime, RunState};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
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

/// `previous` with every container the runtime stopped restarted (unless kept down).
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
        if !runtime.was_stopped(bare(container_id)) || down.iter().any(|d| d == name) {
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

/// Registers the pod's running containers in its node's runtime.
pub fn register(pod: &Pod, rt: &PodRuntime, runtime: Option<&FakeRuntime>) {
    let Some(runtime) = runtime else { return };
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
}
