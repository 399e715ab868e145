//! SidecarTerminator (issue 30 item 3, gate `SidecarTerminator`; kruise
//! `pkg/controller/sidecarterminator`): decides what to do with a job pod whose main containers
//! have finished while sidecars still run, as kruise's `doReconcile` does, step by step:
//! 1. only an "interesting" pod (`isInterestingPod`): not deleted, not Pending, `restartPolicy`
//!    Never (every main container terminated) or OnFailure (every main container exited 0), with
//!    at least one sidecar not terminated yet;
//! 2. sidecars (`getSidecarContainerNames`): on a virtual-kubelet node (label
//!    `type=virtual-kubelet`) those with `KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE` are
//!    updated in place to that image (`executeInPlaceUpdateAction`); elsewhere those with
//!    `KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT=true` are stopped through one
//!    ContainerRecreateRequest (`executeKillContainerAction`: name `sidecar-termination-<pod uid>`,
//!    controller reference to the pod, `forceRecreate: true`, `failurePolicy: Ignore`, no labels
//!    and no TTL of its own; created only when it does not exist yet);
//! 3. sidecars that also have `KRUISE_TERMINATE_SIDECAR_IGNORE_EXIT_CODE=true` wait until the
//!    other sidecars are done; then the pod's status is patched (`markJobPodTerminated`: condition
//!    `SidecarTerminated`, phase Succeeded when every main container exited 0, else Failed) and
//!    they are stopped through the request.
//!
//! The controller (`controller::sidecarterminator`) reads the pod, its node and whether the
//! request exists, and sends the plan's writes in order. kruise builds a `v1beta1` request; this
//! build serves ContainerRecreateRequest as `v1alpha1` only, whose fields are the same.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::apis::containerrecreaterequest::{
    ContainerRecreateRequest, ContainerRecreateRequestContainer, ContainerRecreateRequestSpec,
    ContainerRecreateRequestStrategy, FAILURE_POLICY_IGNORE,
};

/// Env: the container is a sidecar to stop when the main containers finish.
pub const TERMINATE_SIDECAR_ENV: &str = "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT";
/// Env: on a virtual-kubelet node, the image to update the sidecar to (one that exits at once).
pub const TERMINATE_SIDECAR_WITH_IMAGE_ENV: &str = "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE";
/// Env: the sidecar's exit code does not decide the pod's phase.
pub const IGNORE_EXIT_CODE_ENV: &str = "KRUISE_TERMINATE_SIDECAR_IGNORE_EXIT_CODE";
/// Node label key and value of a virtual-kubelet node (kruise `util.VirtualKubeletLabelKey`).
pub const VIRTUAL_KUBELET_LABEL: (&str, &str) = ("type", "virtual-kubelet");
/// The pod condition kruise's status patch adds.
pub const SIDECAR_TERMINATED: &str = "SidecarTerminated";
/// Its message.
pub const TERMINATED_MESSAGE: &str = "Terminated by Sidecar Terminator";
/// The Event reason.
pub const EVENT_REASON: &str = "SidecarTerminator";

/// One write of a round, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Set these containers' images (index in `spec.containers`, name, new image).
    InPlaceUpdate(Vec<(usize, String, String)>),
    /// Create the request stopping these containers, unless it exists.
    StopContainers(Vec<String>),
    /// Patch the pod's status: condition [`SIDECAR_TERMINATED`] and this phase.
    MarkTerminated(&'static str),
}

fn env_value<'a>(c: &'a Container, name: &str) -> Option<&'a str> {
    c.env.iter().flatten().find(|e| e.name == name).map(|e| e.value.as_deref().unwrap_or_default())
}

fn env_true(c: &Container, name: &str) -> bool {
    c.env
        .iter()
        .flatten()
        .any(|e| e.name == name && e.value.as_deref().unwrap_or_default().eq_ignore_ascii_case("true"))
}

/// kruise `isNormalSidecar`.
fn is_normal_sidecar(c: &Container) -> bool {
    env_true(c, TERMINATE_SIDECAR_ENV)
}

/// kruise `isIgnoreExitCodeSidecar`.
fn is_ignore_exit_code_sidecar(c: &Container) -> bool {
    is_normal_sidecar(c) && env_true(c, IGNORE_EXIT_CODE_ENV)
}

/// kruise `isInplaceUpdateSidecar`.
fn is_in_place_update_sidecar(c: &Container) -> bool {
    env_value(c, TERMINATE_SIDECAR_WITH_IMAGE_ENV).is_some_and(|v| !v.is_empty())
}

fn is_sidecar(c: &Container) -> bool {
    is_normal_sidecar(c) || is_in_place_update_sidecar(c)
}

fn containers(pod: &Pod) -> &[Container] {
    pod.spec.as_ref().map_or(&[], |s| s.containers.as_slice())
}

/// kruise `groupMainSidecarContainers`: (main, sidecar) names.
pub fn group(pod: &Pod) -> (BTreeSet<String>, BTreeSet<String>) {
    let (sidecars, main): (Vec<&Container>, Vec<&Container>) = containers(pod).iter().partition(|c| is_sidecar(c));
    (main.into_iter().map(|c| c.name.clone()).collect(), sidecars.into_iter().map(|c| c.name.clone()).collect())
}

/// kruise `getSidecarContainerNames`: (normal, ignore-exit-code, in-place update) sidecars.
pub fn sidecar_names(pod: &Pod, virtual_kubelet: bool) -> (BTreeSet<String>, BTreeSet<String>, BTreeSet<String>) {
    let (mut normal, mut ignore, mut in_place) = (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    for c in containers(pod) {
        if virtual_kubelet && is_in_place_update_sidecar(c) {
            in_place.insert(c.name.clone());
        } else if !virtual_kubelet && is_ignore_exit_code_sidecar(c) {
            ignore.insert(c.name.clone());
        } else if !virtual_kubelet && is_normal_sidecar(c) {
            normal.insert(c.name.clone());
        }
    }
    (normal, ignore, in_place)
}

/// The terminated exit code of each container status, by name (`None`: not terminated).
fn exits(pod: &Pod) -> Vec<(&str, Option<i32>)> {
    let statuses = pod.status.as_ref().and_then(|s| s.container_statuses.as_ref());
    statuses
        .into_iter()
        .flatten()
        .map(|s| (s.name.as_str(), s.state.as_ref().and_then(|st| st.terminated.as_ref()).map(|t| t.exit_code)))
        .collect()
}

fn all_statuses_reported(pod: &Pod) -> bool {
    let reported = pod.status.as_ref().and_then(|s| s.container_statuses.as_ref()).map_or(0, Vec::len);
    containers(pod).len() == reported
}

/// kruise `containersCompleted`: every named container is terminated (and every container has a
/// status).
pub fn completed(pod: &Pod, names: &BTreeSet<String>) -> bool {
    all_statuses_reported(pod) && exits(pod).iter().all(|(n, code)| !names.contains(*n) || code.is_some())
}

/// kruise `containersSucceeded`: every named container exited 0.
pub fn succeeded(pod: &Pod, names: &BTreeSet<String>) -> bool {
    all_statuses_reported(pod) && exits(pod).iter().all(|(n, code)| !names.contains(*n) || *code == Some(0))
}

fn phase(pod: &Pod) -> &str {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or_default()
}

fn restart_policy(pod: &Pod) -> &str {
    pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref()).unwrap_or_default()
}

/// kruise `isInterestingPod`: whether the controller looks at the pod at all.
pub fn is_interesting(pod: &Pod) -> bool {
    let policy = restart_policy(pod);
    if pod.metadata.deletion_timestamp.is_some() || phase(pod) == "Pending" || policy == "Always" {
        return false;
    }
    let (main, sidecars) = group(pod);
    if sidecars.is_empty() || completed(pod, &sidecars) {
        return false;
    }
    match policy {
        "Never" => completed(pod, &main),
        "OnFailure" => succeeded(pod, &main),
        _ => false,
    }
}

/// kruise `filterUncompletedSidecars`, in the pod's container order.
fn uncompleted(pod: &Pod, sidecars: &BTreeSet<String>) -> Vec<String> {
    let done: BTreeSet<&str> = exits(pod).into_iter().filter(|(_, c)| c.is_some()).map(|(n, _)| n).collect();
    containers(pod)
        .iter()
        .map(|c| c.name.clone())
        .filter(|n| sidecars.contains(n) && !done.contains(n.as_str()))
        .collect()
}

/// Whether the node runs virtual-kubelet (kruise `isVirtualKubelet`).
pub fn is_virtual_kubelet(labels: Option<&std::collections::BTreeMap<String, String>>) -> bool {
    labels.and_then(|l| l.get(VIRTUAL_KUBELET_LABEL.0)).is_some_and(|v| v == VIRTUAL_KUBELET_LABEL.1)
}

/// kruise `doReconcile`: the writes for `pod` on a virtual-kubelet node or not; `request_exists`:
/// the request [`request_name`] exists already (kruise then waits for it).
pub fn plan(pod: &Pod, virtual_kubelet: bool, request_exists: bool) -> Vec<Action> {
    let mut actions = Vec::new();
    if !is_interesting(pod) {
        return actions;
    }
    let (normal, ignore, in_place) = sidecar_names(pod, virtual_kubelet);
    // executeInPlaceUpdateAction
    let pending = uncompleted(pod, &in_place);
    let updates: Vec<(usize, String, String)> = containers(pod)
        .iter()
        .enumerate()
        .filter(|(_, c)| pending.contains(&c.name))
        .filter_map(|(i, c)| {
            let image = env_value(c, TERMINATE_SIDECAR_WITH_IMAGE_ENV).unwrap_or_default();
            (c.image.as_deref() != Some(image)).then(|| (i, c.name.clone(), image.to_string()))
        })
        .collect();
    if !updates.is_empty() {
        actions.push(Action::InPlaceUpdate(updates));
    }
    // executeKillContainerAction for the normal sidecars.
    let stop = uncompleted(pod, &normal);
    let mut requested = request_exists;
    if !stop.is_empty() && !requested {
        actions.push(Action::StopContainers(stop));
        requested = true;
    }
    if ignore.is_empty() || !completed(pod, &normal) || !completed(pod, &in_place) {
        return actions;
    }
    // markJobPodTerminated, then the sidecars whose exit code is ignored.
    if !matches!(phase(pod), "Failed" | "Succeeded") {
        let (main, _) = group(pod);
        actions.push(Action::MarkTerminated(if succeeded(pod, &main) { "Succeeded" } else { "Failed" }));
    }
    let stop = uncompleted(pod, &ignore);
    if !stop.is_empty() && !requested {
        actions.push(Action::StopContainers(stop));
    }
    actions
}

/// kruise `getCRRName`.
pub fn request_name(pod: &Pod) -> String {
    format!("sidecar-termination-{}", pod.metadata.uid.as_deref().unwrap_or_default())
}

/// The request kruise's `executeKillContainerAction` creates to stop `names` of `pod`.
pub fn request(pod: &Pod, names: &[String]) -> ContainerRecreateRequest {
    let owner = OwnerReference {
        api_version: "v1".into(),
        kind: "Pod".into(),
        name: pod.metadata.name.clone().unwrap_or_default(),
        uid: pod.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    ContainerRecreateRequest {
        metadata: ObjectMeta {
            name: Some(request_name(pod)),
            namespace: pod.metadata.namespace.clone(),
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        spec: ContainerRecreateRequestSpec {
            pod_name: pod.metadata.name.clone().unwrap_or_default(),
            containers: names
                .iter()
                .map(|n| ContainerRecreateRequestContainer { name: n.clone(), ..Default::default() })
                .collect(),
            strategy: Some(ContainerRecreateRequestStrategy {
                force_recreate: true,
                failure_policy: FAILURE_POLICY_IGNORE.into(),
                ..Default::default()
            }),
            ..Default::default()
        },
        status: None,
    }
}

/// The Event message of a stop (kruise prints the Go set).
pub fn stop_message(names: &[String]) -> String {
    format!("Kruise SidecarTerminator is trying to terminate sidecar [{}] using crr", names.join(" "))
}

/// The Event message of an in-place update.
pub fn in_place_message(names: &[String]) -> String {
    format!("Kruise SidecarTerminator is trying to terminate sidecar [{}] using in-place update", names.join(" "))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const EXIT_QUICKLY: &str = "exit-quickly:latest";

    fn main_c(name: &str) -> Value {
        json!({"name": name, "image": "main-container:latest"})
    }

    /// kruise `sidecarContainerFactory`.
    fn sidecar_c(name: &str, strategy: &str) -> Value {
        json!({"name": name, "image": "sidecar-container-images", "env": [
            {"name": TERMINATE_SIDECAR_ENV, "value": strategy},
            {"name": TERMINATE_SIDECAR_WITH_IMAGE_ENV, "value": EXIT_QUICKLY}]})
    }

    fn succeeded_s(name: &str) -> Value {
        json!({"name": name, "state": {"terminated": {"exitCode": 0}}})
    }
    fn failed_s(name: &str) -> Value {
        json!({"name": name, "state": {"terminated": {"exitCode": 137}}})
    }
    fn uncompleted_s(name: &str) -> Value {
        json!({"name": name, "state": {}})
    }
    fn running_s(name: &str) -> Value {
        json!({"name": name, "state": {"running": {"startedAt": "2023-01-01T00:00:00Z"}}})
    }

    /// kruise's `podDemo` with these containers, statuses, restart policy and phase.
    fn pod(containers: Vec<Value>, statuses: Vec<Value>, policy: &str, phase: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"namespace": "test-sidecar-terminator", "uid": "87076677", "name": "job-generate-rand-str"},
            "spec": {"nodeName": "normal-node", "restartPolicy": policy, "containers": containers},
            "status": {"phase": phase, "containerStatuses": statuses}
        }))
        .unwrap()
    }

    fn demo(main: Value, sidecar: Value, policy: &str, phase: &str) -> Pod {
        pod(vec![main_c("main"), sidecar_c("sidecar", "true")], vec![main, sidecar], policy, phase)
    }

    fn four(statuses: [Value; 4]) -> Pod {
        pod(
            vec![main_c("main-1"), main_c("main-2"), sidecar_c("sidecar-1", "true"), sidecar_c("sidecar-2", "true")],
            statuses.to_vec(),
            "OnFailure",
            "Running",
        )
    }

    fn five(statuses: [Value; 5]) -> Pod {
        let mut third = sidecar_c("sidecar-3", "true");
        third["env"].as_array_mut().unwrap().push(json!({"name": IGNORE_EXIT_CODE_ENV, "value": "true"}));
        pod(
            vec![
                main_c("main-1"),
                main_c("main-2"),
                sidecar_c("sidecar-1", "true"),
                sidecar_c("sidecar-2", "true"),
                third,
            ],
            statuses.to_vec(),
            "OnFailure",
            "Running",
        )
    }

    /// Applies a plan as kruise's fake client would see it: the request's containers (sorted, as
    /// the Go test sorts them) and the phase after the status patch.
    fn run(pod: &Pod, vk: bool) -> (Option<Vec<String>>, String, usize) {
        let mut crr = None;
        let mut phase = pod.status.as_ref().unwrap().phase.clone().unwrap_or_default();
        let mut images = 0;
        for a in plan(pod, vk, false) {
            match a {
                Action::StopContainers(names) => {
                    assert!(crr.is_none(), "one request");
                    let r = request(pod, &names);
                    let mut names: Vec<String> = r.spec.containers.iter().map(|c| c.name.clone()).collect();
                    names.sort();
                    crr = Some(names);
                }
                Action::MarkTerminated(p) => phase = p.to_string(),
                Action::InPlaceUpdate(u) => images += u.iter().filter(|(_, _, i)| i == EXIT_QUICKLY).count(),
            }
        }
        (crr, phase, images)
    }

    fn names(n: &[&str]) -> Option<Vec<String>> {
        Some(n.iter().map(|s| s.to_string()).collect())
    }

    /// kruise `TestKruiseDaemonStrategy`, row by row: the request created and the pod's phase.
    #[test]
    fn kruise_daemon_strategy() {
        let rows: Vec<(&str, Pod, Option<Vec<String>>, &str)> = vec![
            (
                "Never, main containers have not been completed",
                demo(uncompleted_s("main"), running_s("sidecar"), "Never", "Running"),
                None,
                "Running",
            ),
            (
                "Never, main containers failed and sidecar running",
                demo(failed_s("main"), running_s("sidecar"), "Never", "Running"),
                names(&["sidecar"]),
                "Running",
            ),
            (
                "Never, main containers failed and sidecar failed",
                demo(failed_s("main"), failed_s("sidecar"), "Never", "Failed"),
                None,
                "Failed",
            ),
            (
                "Never, main containers succeeded and sidecar running",
                demo(succeeded_s("main"), running_s("sidecar"), "Never", "Running"),
                names(&["sidecar"]),
                "Running",
            ),
            (
                "OnFailure, main containers have not been completed and sidecar running",
                demo(uncompleted_s("main"), running_s("sidecar"), "OnFailure", "Running"),
                None,
                "Running",
            ),
            (
                "OnFailure, main containers failed and sidecar succeeded",
                demo(failed_s("main"), succeeded_s("sidecar"), "OnFailure", "Running"),
                None,
                "Running",
            ),
            (
                "OnFailure, main containers succeeded and sidecar succeeded",
                demo(succeeded_s("main"), succeeded_s("sidecar"), "OnFailure", "Succeeded"),
                None,
                "Succeeded",
            ),
            (
                "OnFailure, 2 succeeded main containers, 2 sidecars uncompleted",
                four([
                    succeeded_s("main-1"),
                    succeeded_s("main-2"),
                    uncompleted_s("sidecar-1"),
                    uncompleted_s("sidecar-2"),
                ]),
                names(&["sidecar-1", "sidecar-2"]),
                "Running",
            ),
            (
                "OnFailure, 2 succeeded main containers, 2 sidecars running",
                four([succeeded_s("main-1"), succeeded_s("main-2"), running_s("sidecar-1"), running_s("sidecar-2")]),
                names(&["sidecar-1", "sidecar-2"]),
                "Running",
            ),
            (
                "OnFailure, 2 succeeded main containers, 2 sidecars but 1 completed",
                four([
                    succeeded_s("main-1"),
                    succeeded_s("main-2"),
                    succeeded_s("sidecar-1"),
                    uncompleted_s("sidecar-2"),
                ]),
                names(&["sidecar-2"]),
                "Running",
            ),
            (
                "OnFailure, 2 main containers but 1 uncompleted, 2 sidecars but 1 completed",
                four([
                    succeeded_s("main-1"),
                    uncompleted_s("main-2"),
                    succeeded_s("sidecar-1"),
                    uncompleted_s("sidecar-2"),
                ]),
                None,
                "Running",
            ),
            (
                "OnFailure, 2 succeeded main containers, 3 sidecars uncompleted",
                five([
                    succeeded_s("main-1"),
                    succeeded_s("main-2"),
                    uncompleted_s("sidecar-1"),
                    uncompleted_s("sidecar-2"),
                    uncompleted_s("sidecar-3"),
                ]),
                names(&["sidecar-1", "sidecar-2"]),
                "Running",
            ),
            (
                "OnFailure, 2 succeeded main containers, 2 sidecars completed, 1 uncompleted",
                five([
                    succeeded_s("main-1"),
                    succeeded_s("main-2"),
                    succeeded_s("sidecar-1"),
                    succeeded_s("sidecar-2"),
                    uncompleted_s("sidecar-3"),
                ]),
                names(&["sidecar-3"]),
                "Succeeded",
            ),
        ];
        for (name, pod, want_crr, want_phase) in rows {
            let (crr, phase, images) = run(&pod, false);
            assert_eq!((crr, phase.as_str(), images), (want_crr, want_phase, 0), "{name}");
        }
    }

    /// kruise `TestInPlaceUpdateStrategy`: how many sidecars get the exit-quickly image; never a
    /// request.
    #[test]
    fn in_place_update_strategy() {
        let vk = |mut p: Pod| {
            p.spec.as_mut().unwrap().node_name = Some("vk-node".into());
            p
        };
        let only_image = {
            let mut p = demo(failed_s("main"), uncompleted_s("sidecar"), "Never", "Running");
            p.spec.as_mut().unwrap().containers[1].env =
                serde_json::from_value(json!([{"name": TERMINATE_SIDECAR_WITH_IMAGE_ENV, "value": EXIT_QUICKLY}]))
                    .unwrap();
            p
        };
        let rows: Vec<(&str, Pod, bool, usize)> = vec![
            (
                "Never, main containers have not been completed",
                vk(demo(uncompleted_s("main"), uncompleted_s("sidecar"), "Never", "Running")),
                true,
                0,
            ),
            ("Never, main containers failed, Strategy=InPlaceUpdateOnly", vk(only_image), true, 1),
            (
                "Never, main containers succeeded",
                vk(demo(succeeded_s("main"), uncompleted_s("sidecar"), "Never", "Running")),
                true,
                1,
            ),
            (
                "OnFailure, main containers have not been completed",
                vk(demo(uncompleted_s("main"), uncompleted_s("sidecar"), "OnFailure", "Running")),
                true,
                0,
            ),
            (
                "OnFailure, main containers failed",
                vk(demo(failed_s("main"), uncompleted_s("sidecar"), "OnFailure", "Running")),
                true,
                0,
            ),
            (
                "OnFailure, main containers succeeded",
                vk(demo(succeeded_s("main"), uncompleted_s("sidecar"), "OnFailure", "Running")),
                true,
                1,
            ),
            (
                "OnFailure, 2 succeeded main containers, 2 sidecars",
                vk(four([
                    succeeded_s("main-1"),
                    succeeded_s("main-2"),
                    uncompleted_s("sidecar-1"),
                    uncompleted_s("sidecar-2"),
                ])),
                true,
                2,
            ),
            (
                "OnFailure, 2 succeeded main containers, 2 sidecars but 1 completed",
                vk(four([
                    succeeded_s("main-1"),
                    succeeded_s("main-2"),
                    succeeded_s("sidecar-1"),
                    uncompleted_s("sidecar-2"),
                ])),
                true,
                1,
            ),
            (
                // kruise's row leaves this pod on the normal node.
                "OnFailure, 2 main containers but 1 uncompleted, 2 sidecars but 1 completed",
                four([
                    succeeded_s("main-1"),
                    uncompleted_s("main-2"),
                    succeeded_s("sidecar-1"),
                    uncompleted_s("sidecar-2"),
                ]),
                false,
                0,
            ),
        ];
        for (name, pod, vk, want) in rows {
            let (crr, _, images) = run(&pod, vk);
            assert_eq!((crr, images), (None, want), "{name}");
        }
    }

    fn env(pairs: &[(&str, &str)]) -> Value {
        json!(pairs.iter().map(|(n, v)| json!({"name": n, "value": v})).collect::<Vec<_>>())
    }

    /// kruise `TestInterestingPod`.
    #[test]
    fn interesting_pods() {
        let p = pod(
            vec![
                json!({"name": "main"}),
                json!({"name": "normal-sidecar1", "env": env(&[(TERMINATE_SIDECAR_ENV, "true")])}),
            ],
            vec![json!({"name": "main", "state": {"terminated": {"exitCode": 127}}}), running_s("normal-sidecar1")],
            "Never",
            "Running",
        );
        assert!(is_interesting(&p), "test1");
        let p = pod(
            vec![
                json!({"name": "main"}),
                json!({"name": "normal-sidecar1", "env": env(&[(TERMINATE_SIDECAR_ENV, "true")])}),
                json!({"name": "ignore-sidecar1", "env": env(&[(TERMINATE_SIDECAR_ENV, "true"), (IGNORE_EXIT_CODE_ENV, "true")])}),
            ],
            vec![succeeded_s("main"), succeeded_s("normal-sidecar1"), running_s("ignore-sidecar1")],
            "OnFailure",
            "",
        );
        assert!(is_interesting(&p), "test2");
        let p = pod(
            vec![
                json!({"name": "main"}),
                json!({"name": "normal-sidecar1", "env": env(&[(TERMINATE_SIDECAR_ENV, "true")])}),
                json!({"name": "inplace-update-sidecar1", "env": env(&[(TERMINATE_SIDECAR_WITH_IMAGE_ENV, "inplace-update/image")])}),
            ],
            vec![succeeded_s("main"), succeeded_s("normal-sidecar1"), running_s("inplace-update-sidecar1")],
            "OnFailure",
            "",
        );
        assert!(is_interesting(&p), "test3");
        // Not interesting: Always, Pending, deleted, or no sidecar.
        let mut p = demo(succeeded_s("main"), running_s("sidecar"), "Always", "Running");
        assert!(!is_interesting(&p), "Always");
        p.spec.as_mut().unwrap().restart_policy = Some("Never".into());
        assert!(is_interesting(&p));
        p.status.as_mut().unwrap().phase = Some("Pending".into());
        assert!(!is_interesting(&p), "Pending");
        let p = pod(
            vec![main_c("main"), main_c("other")],
            vec![succeeded_s("main"), running_s("other")],
            "Never",
            "Running",
        );
        assert!(!is_interesting(&p), "no sidecar");
    }

    /// kruise `TestGetSidecarContainerNames`.
    #[test]
    fn sidecar_container_names() {
        let p = pod(
            vec![
                json!({"name": "main"}),
                json!({"name": "normal-sidecar1", "env": env(&[(TERMINATE_SIDECAR_ENV, "true"), (TERMINATE_SIDECAR_WITH_IMAGE_ENV, "true")])}),
                json!({"name": "ignore-sidecar1", "env": env(&[(TERMINATE_SIDECAR_ENV, "true"), (IGNORE_EXIT_CODE_ENV, "true")])}),
            ],
            vec![],
            "Never",
            "Running",
        );
        let set = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        assert_eq!(sidecar_names(&p, false), (set(&["normal-sidecar1"]), set(&["ignore-sidecar1"]), set(&[])));
        let mut p = p;
        p.spec.as_mut().unwrap().containers[1].name = "vk-sidecar1".into();
        assert_eq!(sidecar_names(&p, true), (set(&[]), set(&[]), set(&["vk-sidecar1"])));
    }

    /// The request is kruise's `crrDemo`: name, owner, podName, containers, strategy; nothing else.
    #[test]
    fn request_is_kruise_create_crr() {
        let p = demo(succeeded_s("main"), running_s("sidecar"), "Never", "Running");
        let r = request(&p, &["sidecar".to_string()]);
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(
            v,
            json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "ContainerRecreateRequest",
                "metadata": {"name": "sidecar-termination-87076677", "namespace": "test-sidecar-terminator",
                    "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "job-generate-rand-str",
                        "uid": "87076677", "controller": true, "blockOwnerDeletion": true}]},
                "spec": {"podName": "job-generate-rand-str", "containers": [{"name": "sidecar"}],
                    "strategy": {"failurePolicy": "Ignore", "forceRecreate": true}}})
        );
        // An existing request is waited for, not created again.
        assert_eq!(plan(&p, false, true), vec![]);
        assert!(is_virtual_kubelet(Some(&[("type".to_string(), "virtual-kubelet".to_string())].into())));
        assert!(!is_virtual_kubelet(None));
    }
}
