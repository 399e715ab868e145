//! The BroadcastJob controller and webhooks end to end (issue 33 items 1, 3 and 4) on the real
//! control plane of `testenv/`: `kruise serve` with exactly the rights `deploy/rbac.yaml` gives
//! it and the generated `webhook-config/` registered, the scheduler binding the job's pods and
//! the simulated kubelet running their containers to the exit each pod's
//! `testenv.kruise.io/exit` annotation chooses. Asserted:
//! - a BroadcastJob runs one pod per node (each bound to its node, owned by the job, named
//!   `<job>-…`) to completion, ends `Complete` with `succeeded` = `desired` = the nodes, and is
//!   deleted after its `ttlSecondsAfterFinished`;
//! - a failing pod under `failurePolicy: FailFast` fails the job (phase `failed`, condition
//!   Failed);
//! - a node added to the running cluster gets a pod of a job under `completionPolicy: Never`
//!   (`desired` grows to 4), and none of a job under `Always` that already completed;
//! - invalid objects are denied by `vbroadcastjob.kb.io` with kruise's field errors, and the
//!   mutating webhook fills the defaults.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_common;

use std::collections::BTreeSet;
use std::time::Duration;

use e2e_common::{Kruise, cluster, eventually, install, manager_kubeconfig, root};
use k8s_openapi::api::core::v1::{Node, Pod};
use kruise::apis::broadcastjob::BroadcastJob;
use kube::api::{Api, ListParams, PostParams};
use serde_json::{Value, json};

fn job(name: &str, exit: &str, spec: Value) -> BroadcastJob {
    let mut j = json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "BroadcastJob",
        "metadata": {"name": name},
        "spec": {"template": {
            "metadata": {"annotations": {"testenv.kruise.io/exit": exit}, "labels": {"app": name}},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                "containers": [{"name": "work", "image": "busybox:1.36"}]}}}
    });
    if let (Some(s), Some(extra)) = (j["spec"].as_object_mut(), spec.as_object()) {
        for (k, v) in extra {
            s.insert(k.clone(), v.clone());
        }
    }
    serde_json::from_value(j).unwrap()
}

fn phase(j: &BroadcastJob) -> String {
    j.status.as_ref().map(|s| s.phase.clone()).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broadcast_jobs_run_one_pod_per_node_to_completion() {
    let c = cluster();
    let ns = c.namespace("e2e-bcj").await.unwrap();
    let certs = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = manager_kubeconfig(dir.path()).await;
    let log = std::env::var("KRUISE_E2E_LOG").unwrap_or_else(|_| "warn".into());
    let made = std::process::Command::new(env!("CARGO_BIN_EXE_kruise"))
        .args(["certs", "--out"])
        .arg(certs.path())
        .status()
        .unwrap();
    assert!(made.success());
    let kruise = Kruise::spawn(certs.path(), &kubeconfig, &["--namespace", ns.name()], &log);
    install(&[&kruise]).await;
    let ca = std::fs::read(certs.path().join("ca.crt")).unwrap();
    let client = c.client().await.unwrap();
    kruise_testenv::register_webhooks(&client, &root().join("webhook-config"), &ca).await.unwrap();
    let nodes: BTreeSet<String> = Api::<Node>::all(client.clone())
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    let node_count = i32::try_from(nodes.len()).unwrap();
    assert!(node_count >= 2, "{nodes:?}");
    let jobs: Api<BroadcastJob> = Api::namespaced(client.clone(), ns.name());
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());

    // 1. Invalid objects are denied with kruise's field errors (the webhook may take a moment
    // to be reachable after registration: retried until it answers).
    let mut always = job("bad-restart", "0", json!({}));
    always.spec.template.spec.as_mut().unwrap().restart_policy = Some("Always".into());
    let denied = eventually("the validating webhook to deny", Duration::from_secs(60), || {
        let (jobs, always) = (jobs.clone(), always.clone());
        async move {
            match jobs.create(&PostParams::default(), &always).await {
                Err(kube::Error::Api(e)) if e.message.contains("denied the request") => Some(e.message),
                Err(_) => None,
                Ok(_) => panic!("a BroadcastJob with restartPolicy Always was admitted"),
            }
        }
    })
    .await;
    assert!(denied.contains("admission webhook \"vbroadcastjob.kb.io\" denied the request"), "{denied}");
    assert!(
        denied.contains(
            "spec.template.spec.restartPolicy: Invalid value: \"Always\": pod restartPolicy can only be Never or OnFailure"
        ),
        "{denied}"
    );
    let never_ttl = job("bad-ttl", "0", json!({"completionPolicy": {"type": "Never", "ttlSecondsAfterFinished": 5}}));
    let e = jobs.create(&PostParams::default(), &never_ttl).await.unwrap_err().to_string();
    assert!(e.contains("ttlSecondsAfterFinished can just work with Always CompletionPolicyType"), "{e}");
    let mut labelled = job("bad-labels", "0", json!({}));
    labelled
        .spec
        .template
        .metadata
        .as_mut()
        .unwrap()
        .labels
        .as_mut()
        .unwrap()
        .insert("broadcastjob-name".into(), "x".into());
    let e = jobs.create(&PostParams::default(), &labelled).await.unwrap_err().to_string();
    assert!(e.contains("are not allowed to preset in pod labels"), "{e}");

    // 2. One pod per node, each exiting 0 after half a second: Complete, then deleted after its TTL.
    let ok = job(
        "warm",
        "0@500",
        json!({"parallelism": 2, "completionPolicy": {"type": "Always", "ttlSecondsAfterFinished": 5}}),
    );
    let created = jobs.create(&PostParams::default(), &ok).await.unwrap();
    // The mutating webhook's defaults.
    assert_eq!(created.spec.failure_policy.type_, "FailFast");
    let uid = created.metadata.uid.clone().unwrap();
    let done = eventually("the job to complete", Duration::from_secs(120), || async {
        let j = jobs.get("warm").await.ok()?;
        (phase(&j) == "completed").then_some(j)
    })
    .await;
    let s = done.status.clone().unwrap();
    assert_eq!((s.desired, s.succeeded, s.failed, s.active), (node_count, node_count, 0, 0), "{s:?}");
    let cond = s.conditions.last().unwrap();
    assert_eq!((cond.type_.as_str(), cond.status.as_str()), ("Complete", "True"));
    assert!(s.start_time.is_some() && s.completion_time.is_some());
    let owned: Vec<Pod> =
        pods.list(&ListParams::default().labels(&format!("broadcastjob-controller-uid={uid}"))).await.unwrap().items;
    let on: BTreeSet<String> = owned.iter().filter_map(|p| p.spec.as_ref()?.node_name.clone()).collect();
    assert_eq!(on, nodes, "one pod on every node");
    assert_eq!(owned.len(), nodes.len(), "no second pod on a node");
    for p in &owned {
        assert!(p.metadata.name.as_deref().unwrap().starts_with("warm-"), "{:?}", p.metadata.name);
        assert_eq!(p.status.as_ref().unwrap().phase.as_deref(), Some("Succeeded"));
        let r = &p.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!((r.kind.as_str(), r.uid.as_str(), r.controller), ("BroadcastJob", uid.as_str(), Some(true)));
    }
    eventually("the job deleted after its TTL", Duration::from_secs(120), || async {
        matches!(jobs.get_opt("warm").await, Ok(None)).then_some(())
    })
    .await;

    // 3. FailFast: pods exiting 1 under restartPolicy Never fail the job.
    let failing = job("fails", "1@200", json!({"failurePolicy": {"type": "FailFast"}}));
    jobs.create(&PostParams::default(), &failing).await.unwrap();
    let failed = eventually("the job to fail", Duration::from_secs(120), || async {
        let j = jobs.get("fails").await.ok()?;
        (phase(&j) == "failed").then_some(j)
    })
    .await;
    let s = failed.status.unwrap();
    assert!(s.failed >= 1, "{s:?}");
    assert_eq!(s.active, 0, "{s:?}");
    let cond = s.conditions.last().unwrap();
    assert_eq!((cond.type_.as_str(), cond.status.as_str()), ("Failed", "True"), "{s:?}");
    assert_eq!(cond.message, "failure policy is FailurePolicyTypeFailFast and failed pod is found");

    // 4. New nodes: a job under `completionPolicy: Never` picks up a node added to the running
    // cluster (`desired` 4), a job under `Always` that already completed does not (kruise's
    // Reconcile returns early for a finished job). Both tolerate the added node's taint, which
    // keeps everything else off it.
    let taint_key = "e2e-bcj.kruise.io/added";
    let tolerate = json!([{"key": taint_key, "operator": "Exists", "effect": "NoSchedule"}]);
    let mut keep = job("keep", "0@200", json!({"completionPolicy": {"type": "Never"}}));
    let mut once = job("once", "0@200", json!({"completionPolicy": {"type": "Always"}}));
    for j in [&mut keep, &mut once] {
        j.spec.template.spec.as_mut().unwrap().tolerations = Some(serde_json::from_value(tolerate.clone()).unwrap());
    }
    jobs.create(&PostParams::default(), &keep).await.unwrap();
    jobs.create(&PostParams::default(), &once).await.unwrap();
    let counts = |j: &BroadcastJob| j.status.as_ref().map(|s| (s.desired, s.succeeded, s.active, s.failed));
    eventually("keep: every node's pod succeeded", Duration::from_secs(120), || async {
        let j = jobs.get("keep").await.ok()?;
        (counts(&j) == Some((node_count, node_count, 0, 0)) && phase(&j) == "running").then_some(())
    })
    .await;
    eventually("once: completed", Duration::from_secs(120), || async {
        let j = jobs.get("once").await.ok()?;
        (phase(&j) == "completed").then_some(())
    })
    .await;
    let taint = json!({"key": taint_key, "value": ns.name(), "effect": "NoSchedule"});
    let added = kruise_testenv::Kubelet::add_node(
        client.clone(),
        ADDED_NODE,
        101,
        &std::collections::BTreeMap::new(),
        &[taint],
        None,
    )
    .await
    .unwrap();
    let job_pods = |name: &'static str| {
        let pods = pods.clone();
        async move { pods.list(&ListParams::default().labels(&format!("app={name}"))).await.unwrap().items }
    };
    let grown = eventually("keep: a pod on the added node, desired 4", Duration::from_secs(180), || async {
        let j = jobs.get("keep").await.ok()?;
        let want = Some((node_count + 1, node_count + 1, 0, 0));
        (counts(&j) == want && phase(&j) == "running").then_some(j)
    })
    .await;
    assert!(grown.status.unwrap().conditions.is_empty(), "a Never job never finishes");
    let kept = job_pods("keep").await;
    let on: Vec<String> = kept.iter().filter_map(|p| p.spec.as_ref()?.node_name.clone()).collect();
    assert_eq!(on.iter().filter(|n| *n == ADDED_NODE).count(), 1, "{on:?}");
    assert_eq!(on.len(), nodes.len() + 1, "one pod per node: {on:?}");
    // The node's arrival queued every job; `keep` has run a pod there since, so `once` was
    // reconciled with the node in view too.
    let done = jobs.get("once").await.unwrap();
    assert_eq!(phase(&done), "completed");
    assert_eq!(counts(&done), Some((node_count, node_count, 0, 0)), "{:?}", done.status);
    let finished = job_pods("once").await;
    assert_eq!(finished.len(), nodes.len(), "no pod for the completed job on the added node");
    assert!(finished.iter().all(|p| p.spec.as_ref().unwrap().node_name.as_deref() != Some(ADDED_NODE)));
    added.remove().await.unwrap();
    kruise_testenv::kubelet::nodes::collect_orphans(&client, ADDED_NODE).await.unwrap();
    jobs.delete("keep", &Default::default()).await.unwrap();
    jobs.delete("once", &Default::default()).await.unwrap();
    drop(kruise);
}

/// The node scenario 4 adds to the running cluster.
const ADDED_NODE: &str = "kruise-node-added-bcj";
