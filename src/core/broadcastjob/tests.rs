//! kruise's `broadcastjob_controller_test.go` (v1.8.4) ported row by row on the pure plan, plus
//! the rows kruise's suite leaves to its e2e tests (TTL, completion, Never, restartLimit).

use super::*;
use serde_json::json;

fn at(s: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + s).unwrap()
}

/// kruise `createJob`.
fn job(name: &str, parallelism: serde_json::Value) -> BroadcastJob {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "BroadcastJob",
        "metadata": {"name": name, "namespace": "default", "uid": "12345"},
        "spec": {"parallelism": parallelism, "completionPolicy": {},
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}
    }))
    .unwrap()
}

/// kruise `createNode`: allocatable pods 10.
fn node(name: &str) -> Arc<Node> {
    Arc::new(
        serde_json::from_value(json!({"metadata": {"name": name}, "status": {"allocatable": {"pods": "10"}}})).unwrap(),
    )
}

/// kruise `createPod`.
fn pod(j: &BroadcastJob, name: &str, node: &str, phase: &str) -> Arc<Pod> {
    let mut p: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
            "labels": job_labels(j), "ownerReferences": [owner_reference(j)]},
        "spec": {"nodeName": node, "containers": []},
        "status": {"phase": phase}
    }))
    .unwrap();
    if phase.is_empty() {
        p.status = None;
    }
    Arc::new(p)
}

fn run(j: &BroadcastJob, pods: &[Arc<Pod>], nodes: &[Arc<Node>], now: Timestamp) -> Plan {
    plan(&Input { job: j, pods, nodes, now })
}

fn status(p: &Plan) -> &BroadcastJobStatus {
    p.status.as_ref().expect("a status write")
}

fn nodes(names: &[&str]) -> Vec<Arc<Node>> {
    names.iter().map(|n| node(n)).collect()
}

#[test]
fn get_node_to_pod_map() {
    let bound = |name: &str, node: &str| -> Pod {
        serde_json::from_value(
            json!({"metadata": {"name": name}, "spec": {"containers": [], "affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}}}),
        )
        .unwrap()
    };
    let named =
        |node: &str| -> Pod { serde_json::from_value(json!({"spec": {"nodeName": node, "containers": []}})).unwrap() };
    assert_eq!(assigned_node(&named("n01")), "n01");
    assert_eq!(assigned_node(&bound("p02", "n02")), "n02");
    assert_eq!(assigned_node(&named("n03")), "n03");
    assert_eq!(assigned_node(&bound("p04", "n04")), "n04");
    assert_eq!(assigned_node(&Pod::default()), "");
}

/// kruise `TestReconcileJobCreatePodAbsolute`: 3 nodes, 1 running pod, parallelism 2: one pod
/// created; active 2, desired 3, startTime set, phase running.
#[test]
fn reconcile_job_create_pod_absolute() {
    let j = job("job1", json!(2));
    let pods = [pod(&j, "job1pod1node1", "node1", "Running")];
    let p = run(&j, &pods, &nodes(&["node1", "node2", "node3"]), at(0));
    assert_eq!(p.create.len(), 1);
    assert_eq!(p.create[0].node, "node2");
    let s = status(&p);
    assert_eq!((s.active, s.desired), (2, 3));
    assert_eq!(s.start_time, Some(Time(at(0))));
    assert_eq!(s.phase, PHASE_RUNNING);
    let labels = p.create[0].pod.metadata.labels.as_ref().unwrap();
    assert_eq!(labels[JOB_NAME_LABEL], "job1");
}

/// kruise `TestReconcileJobCreatePodPercentage`: 5 nodes, 40% → 2 pods active.
#[test]
fn reconcile_job_create_pod_percentage() {
    let j = job("job2", json!("40%"));
    let pods = [pod(&j, "jobpod1node1", "node1", "Running")];
    let p = run(&j, &pods, &nodes(&["node1", "node2", "node3", "node4", "node5"]), at(0));
    assert_eq!(p.create.len(), 1);
    let s = status(&p);
    assert_eq!((s.active, s.desired, s.phase.as_str()), (2, 5, PHASE_RUNNING));
}

/// kruise `TestPodsOnUnschedulableNodes`.
#[test]
fn pods_on_unschedulable_nodes() {
    let j = job("job3", json!(2));
    let mut cordoned = (*node("node1")).clone();
    cordoned.spec = Some(serde_json::from_value(json!({"unschedulable": true})).unwrap());
    let p = run(&j, &[], &[Arc::new(cordoned), node("node2")], at(0));
    assert_eq!(p.create.len(), 1);
    assert_eq!(p.create[0].node, "node2");
    let s = status(&p);
    assert_eq!((s.active, s.desired, s.phase.as_str()), (1, 1, PHASE_RUNNING));
}

/// kruise `TestReconcileJobMultipleBatches`: 20 nodes, parallelism 10 → 10 pods.
#[test]
fn reconcile_job_multiple_batches() {
    let j = job("job4", json!(10));
    let names: Vec<String> = (0..20).map(|i| format!("node{i}")).collect();
    let ns: Vec<Arc<Node>> = names.iter().map(|n| node(n)).collect();
    let p = run(&j, &[], &ns, at(0));
    assert_eq!(p.create.len(), 10);
    assert_eq!(status(&p).active, 10);
}

/// kruise `TestJobFailed`: FailFast with 2 succeeded and 1 failed pod.
#[test]
fn job_failed() {
    let mut j = job("job5", json!(10));
    j.spec.failure_policy.type_ = "FailFast".into();
    let pods = [
        pod(&j, "pod1node1", "node1", "Succeeded"),
        pod(&j, "pod2node2", "node2", "Succeeded"),
        pod(&j, "pod3node3", "node3", "Failed"),
    ];
    let p = run(&j, &pods, &nodes(&["node1", "node2", "node3"]), at(0));
    let s = status(&p);
    assert!(s.completion_time.is_some());
    assert_eq!(s.conditions.last().unwrap().type_, JOB_FAILED);
    assert_eq!((s.desired, s.succeeded, s.failed, s.active), (3, 2, 1, 0));
    assert_eq!(s.phase, PHASE_FAILED);
    assert!(p.create.is_empty() && p.delete.is_empty());
}

fn one_of_each(name: &str, policy: &str) -> (BroadcastJob, Vec<Arc<Pod>>) {
    let mut j = job(name, json!(10));
    j.spec.failure_policy.type_ = policy.into();
    let pods = vec![
        pod(&j, "pod1node1", "node1", "Succeeded"),
        pod(&j, "pod2node2", "node2", "Failed"),
        pod(&j, "pod3node3", "node3", "Running"),
    ];
    (j, pods)
}

/// kruise `TestJobFailurePolicyTypeContinue`.
#[test]
fn job_failure_policy_type_continue() {
    let (j, pods) = one_of_each("job6", "Continue");
    let p = run(&j, &pods, &nodes(&["node1", "node2", "node3"]), at(0));
    let s = status(&p);
    assert_eq!((s.desired, s.succeeded, s.failed, s.active), (3, 1, 1, 1));
    assert_eq!(s.phase, PHASE_RUNNING);
}

/// kruise `TestJobFailurePolicyTypeFailFast`: the running pod is deleted.
#[test]
fn job_failure_policy_type_fail_fast() {
    let (j, pods) = one_of_each("job7", "FailFast");
    let p = run(&j, &pods, &nodes(&["node1", "node2", "node3"]), at(0));
    let s = status(&p);
    assert_eq!((s.desired, s.succeeded, s.failed, s.active), (3, 1, 2, 0), "kruise counts the deleted pod failed");
    assert_eq!(s.phase, PHASE_FAILED);
    assert_eq!(p.delete.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(), ["pod3node3"]);
    assert_eq!(p.delete[0].uid.as_deref(), Some("uid-pod3node3"));
}

/// kruise `TestJobFailurePolicyPause`.
#[test]
fn job_failure_policy_pause() {
    let (j, pods) = one_of_each("job8", "Pause");
    let p = run(&j, &pods, &nodes(&["node1", "node2", "node3"]), at(0));
    let s = status(&p);
    assert_eq!(s.phase, PHASE_PAUSED);
    assert_eq!((s.desired, s.succeeded, s.failed, s.active), (3, 1, 1, 1));
    assert!(p.create.is_empty() && p.delete.is_empty());
}

/// kruise `TestJobSetPaused`: pods on nodes that do not exist stay; nothing is created.
#[test]
fn job_set_paused() {
    let mut j = job("job9", json!("50%"));
    j.spec.paused = true;
    let names: Vec<String> = (0..10).map(|i| format!("node-{i}")).collect();
    let ns: Vec<Arc<Node>> = names.iter().map(|n| node(n)).collect();
    let pods: Vec<Arc<Pod>> =
        (0..3).map(|i| pod(&j, &format!("pod{i}node{i}"), &format!("node{i}"), "Running")).collect();
    let p = run(&j, &pods, &ns, at(0));
    let s = status(&p);
    assert_eq!(s.phase, PHASE_PAUSED);
    assert_eq!((s.desired, s.succeeded, s.failed, s.active), (10, 0, 0, 3));
    assert!(p.create.is_empty() && p.delete.is_empty());
}

/// kruise `TestJobFailedAfterActiveDeadline`: deadline 0, both running pods deleted.
#[test]
fn job_failed_after_active_deadline() {
    let mut j = job("job10", json!(10));
    j.spec.completion_policy.active_deadline_seconds = Some(0);
    j.spec.failure_policy.type_ = "Continue".into();
    j.status = Some(BroadcastJobStatus { start_time: Some(Time(at(0))), ..Default::default() });
    let pods = [pod(&j, "job1pod1node1", "node1", "Running"), pod(&j, "job1pod2node2", "node2", "Running")];
    let p = run(&j, &pods, &nodes(&["node1", "node2"]), at(0));
    let s = status(&p);
    assert_eq!(s.conditions.last().unwrap().type_, JOB_FAILED);
    assert_eq!(s.conditions.last().unwrap().message, "Job default/job10 was active longer than specified deadline");
    assert_eq!((s.failed, s.active, s.phase.as_str()), (2, 0, PHASE_FAILED));
    assert_eq!(p.delete.len(), 2);
}

#[test]
fn completes_when_every_desired_node_has_a_finished_pod_then_is_deleted_after_its_ttl() {
    let mut j = job("done", json!(10));
    j.spec.completion_policy =
        serde_json::from_value(json!({"type": "Always", "ttlSecondsAfterFinished": 30})).unwrap();
    let ns = nodes(&["node1", "node2"]);
    let one = [pod(&j, "a", "node1", "Succeeded")];
    let p = run(&j, &one, &ns, at(0));
    assert_eq!(p.create.len(), 1, "node2 still needs its pod");
    assert_eq!(status(&p).phase, PHASE_RUNNING);
    let both = [pod(&j, "a", "node1", "Succeeded"), pod(&j, "b", "node2", "Succeeded")];
    let p = run(&j, &both, &ns, at(5));
    let s = status(&p).clone();
    assert_eq!((s.phase.as_str(), s.succeeded, s.desired, s.active), (PHASE_COMPLETED, 2, 2, 0));
    let c = s.conditions.last().unwrap();
    assert_eq!((c.type_.as_str(), c.status.as_str(), c.reason.as_str()), ("Complete", "True", "Complete"));
    assert_eq!(c.message, "Job completed, 2 pods succeeded, 0 pods failed");
    assert_eq!(s.completion_time, Some(Time(at(5))));
    assert_eq!(p.requeue, Some(SignedDuration::from_secs(31)));
    j.status = Some(s);
    let p = run(&j, &both, &ns, at(20));
    assert_eq!((p.delete_job, p.requeue, p.status.is_none()), (false, Some(SignedDuration::from_secs(15)), true));
    let p = run(&j, &both, &ns, at(35));
    assert!(p.delete_job);
}

#[test]
fn never_keeps_running_and_picks_up_new_nodes() {
    let mut j = job("keep", json!(10));
    j.spec.completion_policy.type_ = "Never".into();
    let pods = [pod(&j, "a", "node1", "Succeeded")];
    let p = run(&j, &pods, &nodes(&["node1"]), at(0));
    assert_eq!(status(&p).phase, PHASE_RUNNING, "never complete");
    assert!(status(&p).conditions.is_empty());
    let p = run(&j, &pods, &nodes(&["node1", "node2"]), at(60));
    assert_eq!(p.create.iter().map(|c| c.node.as_str()).collect::<Vec<_>>(), ["node2"]);
}

#[test]
fn restart_limit_counts_an_on_failure_pod_failed() {
    let mut j = job("restarts", json!(10));
    j.spec.failure_policy = serde_json::from_value(json!({"type": "FailFast", "restartLimit": 2})).unwrap();
    let mk = |restarts: i32| {
        let mut p = (*pod(&j, "a", "node1", "Running")).clone();
        p.spec.as_mut().unwrap().restart_policy = Some("OnFailure".into());
        p.status.as_mut().unwrap().container_statuses = Some(vec![
            serde_json::from_value(json!({"name": "c", "image": "i", "imageID": "", "ready": false,
                "restartCount": restarts}))
            .unwrap(),
        ]);
        Arc::new(p)
    };
    let p = run(&j, &[mk(2)], &nodes(&["node1"]), at(0));
    assert_eq!(status(&p).phase, PHASE_RUNNING);
    let p = run(&j, &[mk(3)], &nodes(&["node1"]), at(0));
    assert_eq!(status(&p).phase, PHASE_FAILED);
    assert_eq!(status(&p).failed, 1);
}

#[test]
fn a_pod_that_no_longer_fits_is_deleted_and_a_labelled_node_gets_one() {
    let mut j = job("sel", json!(10));
    j.spec.template.spec.as_mut().unwrap().node_selector = Some(BTreeMap::from([("role".into(), "edge".into())]));
    let edge: Node = serde_json::from_value(
        json!({"metadata": {"name": "edge1", "labels": {"role": "edge"}}, "status": {"allocatable": {"pods": "10"}}}),
    )
    .unwrap();
    // The existing pod on node1 carries the selector; node1 lost its label.
    let mut old = (*pod(&j, "old", "node1", "Running")).clone();
    old.spec.as_mut().unwrap().node_selector = Some(BTreeMap::from([("role".into(), "edge".into())]));
    let p = run(&j, &[Arc::new(old)], &[Arc::new(edge), node("node1")], at(0));
    assert_eq!(p.delete.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(), ["old"]);
    assert_eq!(p.create.iter().map(|c| c.node.as_str()).collect::<Vec<_>>(), ["edge1"]);
    assert_eq!(status(&p).desired, 1);
}

#[test]
fn created_pods_are_kruises() {
    let mut j = job("warm", json!(10));
    j.spec.template.metadata =
        Some(serde_json::from_value(json!({"labels": {"app": "w"}, "annotations": {"a": "b"}})).unwrap());
    let pod = new_pod(&j, "node7");
    assert_eq!(pod.metadata.generate_name.as_deref(), Some("warm-"));
    assert_eq!(pod.metadata.namespace.as_deref(), Some("default"));
    let labels = pod.metadata.labels.clone().unwrap();
    assert_eq!(labels["app"], "w");
    assert_eq!(labels[CONTROLLER_UID_LABEL], "12345");
    assert_eq!(pod.metadata.annotations.clone().unwrap()["a"], "b");
    let owner = &pod.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.api_version.as_str(), owner.kind.as_str(), owner.controller, owner.block_owner_deletion),
        ("apps.kruise.io/v1alpha1", "BroadcastJob", Some(true), Some(true))
    );
    assert_eq!(assigned_node(&pod), "node7");
    assert_eq!(pod.spec.as_ref().unwrap().node_name, None, "the scheduler binds it");
    assert!(owns(&j, &pod) || pod.metadata.uid.is_none());
    // An upper-case job name is no valid pod name prefix: kruise falls back to the bare name.
    let mut upper = j.clone();
    upper.metadata.name = Some("Warm".into());
    assert_eq!(new_pod(&upper, "n").metadata.generate_name.as_deref(), Some("Warm"));
}

#[test]
fn bind_to_node_keeps_the_rest_of_the_affinity() {
    let a: Affinity = serde_json::from_value(json!({"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["a"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {}}]},
        "podAntiAffinity": {}}))
    .unwrap();
    let b = serde_json::to_value(bind_to_node(Some(a), "n1")).unwrap();
    assert_eq!(
        b,
        json!({"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {}}]},
            "podAntiAffinity": {}})
    );
}

#[test]
fn foreign_pods_are_ignored_and_unchanged_status_is_not_written() {
    let j = job("mine", json!(10));
    let mut other = job("other", json!(10));
    other.metadata.uid = Some("999".into());
    let stranger = pod(&other, "x", "node1", "Running");
    let p = run(&j, &[stranger], &nodes(&["node1"]), at(0));
    assert_eq!(p.create.len(), 1);
    let mut j2 = j.clone();
    j2.status = p.status.clone();
    let mine = pod(&j, "m", "node1", "Running");
    let p = run(&j2, &[mine], &nodes(&["node1"]), at(1));
    assert!(p.create.is_empty());
    assert_eq!(p.status, None, "same counts, same phase: no write");
}
