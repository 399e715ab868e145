//! SidecarTerminator end to end (issue 30 item 3 "done means": a Job pod with a sidecar
//! completes) on the real control plane of `testenv/` (its job controller and scheduler run):
//! `kruise serve --feature-gates SidecarTerminator=true` with the rights of `deploy/rbac.yaml`,
//! one `kruise daemon` per simulated node talking to its node's CRI socket. A Job's pod has a
//! main container that exits 0 after a few seconds (the testenv exit annotation) and a sidecar
//! with `KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT=true` that runs forever. Asserted: the manager
//! creates kruise's request `sidecar-termination-<pod uid>` (controller reference to the pod,
//! `forceRecreate`, `failurePolicy: Ignore`, the webhook's pod-uid label), the daemon stops the
//! sidecar through CRI, the kubelet (restartPolicy Never) reports it terminated instead of
//! restarting it, the pod — the same uid — ends `Succeeded` and the Job `Complete`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_common;

use std::time::Duration;

use e2e_common::{cluster, eventually as poll, start_daemons};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kruise::apis::containerrecreaterequest::ContainerRecreateRequest;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

fn terminated_exit(pod: &Pod, name: &str) -> Option<i32> {
    let s = pod.status.as_ref()?.container_statuses.as_ref()?.iter().find(|c| c.name == name)?;
    Some(s.state.as_ref()?.terminated.as_ref()?.exit_code)
}

fn container_id(pod: &Pod, name: &str) -> Option<String> {
    let s = pod.status.as_ref()?.container_statuses.as_ref()?.iter().find(|c| c.name == name)?;
    s.container_id.clone().filter(|id| !id.is_empty())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_pod_with_a_sidecar_completes() {
    let env = start_daemons("SidecarTerminator=true", true).await;
    let c = cluster();
    let client = env.client.clone();

    let ns = c.namespace("e2e-sidecarterminator").await.unwrap();
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns.name());
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let crrs: Api<ContainerRecreateRequest> = Api::namespaced(client.clone(), ns.name());

    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": "with-sidecar"},
        "spec": {"backoffLimit": 0, "template": {
            "metadata": {"annotations": {"testenv.kruise.io/exit": "main=0@3000"}},
            "spec": {"restartPolicy": "Never", "containers": [
                {"name": "main", "image": "busybox:1.36"},
                {"name": "sidecar", "image": "nginx:1.25",
                    "env": [{"name": "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT", "value": "true"}]}
            ]}
        }}
    }))
    .unwrap();
    jobs.create(&PostParams::default(), &job).await.unwrap();

    // The pod runs both containers; note the sidecar's container id and the pod's uid.
    let (pod, sidecar_id) = poll("the job's pod running its sidecar", Duration::from_secs(180), || async {
        let list = pods.list(&ListParams::default().labels("job-name=with-sidecar")).await.ok()?;
        let pod = list.items.into_iter().next()?;
        let id = container_id(&pod, "sidecar")?;
        Some((pod, id))
    })
    .await;
    let name = pod.metadata.name.clone().unwrap();
    let uid = pod.metadata.uid.clone().unwrap();
    let node = pod.spec.as_ref().unwrap().node_name.clone().unwrap();

    // The Job completes.
    poll("the job to complete", Duration::from_secs(300), || async {
        let j = jobs.get("with-sidecar").await.ok()?;
        let done = j.status.as_ref()?.conditions.iter().flatten().any(|c| c.type_ == "Complete" && c.status == "True");
        done.then_some(())
    })
    .await;
    let j = jobs.get("with-sidecar").await.unwrap();
    assert_eq!(j.status.as_ref().unwrap().succeeded, Some(1), "{:?}", j.status);

    // The same pod, Succeeded: main exited 0, the sidecar was stopped (not restarted).
    let after = pods.get(&name).await.unwrap();
    assert_eq!(after.metadata.uid.as_deref(), Some(uid.as_str()), "the pod is the same");
    assert_eq!(after.status.as_ref().unwrap().phase.as_deref(), Some("Succeeded"));
    assert_eq!(terminated_exit(&after, "main"), Some(0));
    assert_eq!(terminated_exit(&after, "sidecar"), Some(0));
    let sidecar =
        after.status.as_ref().unwrap().container_statuses.as_ref().unwrap().iter().find(|s| s.name == "sidecar");
    assert_eq!(sidecar.unwrap().restart_count, 0, "the sidecar is not restarted");
    let bare = sidecar_id.split_once("://").map_or(sidecar_id.as_str(), |(_, b)| b).to_string();
    let runtime = c.cri(&node).expect("the node's runtime");
    assert!(runtime.stops().contains(&bare), "the sidecar was stopped through CRI: {:?}", runtime.stops());

    // kruise's request, as createCRR builds it (and the webhook completes it).
    let crr = crrs.get(&format!("sidecar-termination-{uid}")).await.unwrap();
    let owner = &crr.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!((owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()), ("Pod", name.as_str(), uid.as_str()));
    assert_eq!(owner.controller, Some(true));
    assert_eq!(crr.spec.pod_name, name);
    let containers: Vec<&str> = crr.spec.containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(containers, vec!["sidecar"]);
    let strategy = crr.spec.strategy.clone().unwrap();
    assert!(strategy.force_recreate);
    assert_eq!(strategy.failure_policy, "Ignore");
    assert_eq!(crr.metadata.labels.as_ref().unwrap()["crr.apps.kruise.io/pod-uid"], uid);
    assert_eq!(crr.metadata.labels.as_ref().unwrap()["crr.apps.kruise.io/node-name"], node);
}
