//! Invariants of the BroadcastJob planner over random jobs and clusters (issue 33 "property tests
//! on the shared test kit"): proptest builds nodes (some with a NoSchedule taint the template does
//! not tolerate), a job (`parallelism`, `failurePolicy` Continue / FailFast, `completionPolicy`
//! Always) and which pods fail, then runs rounds on a small fake API (the round's deletions and
//! creations applied exactly as planned — a deletion must name a pod of the job that exists; the
//! scheduler binds each created pod to the node its affinity names; a kubelet runs each pod, then
//! ends it with the chosen exit). Every round checks:
//! 1. never more active pods than `parallelism`;
//! 2. never two pods of the job on one node, and none on a node it does not fit;
//! 3. a finished job creates nothing.
//!
//! At the end (a job with no fitting node waits, as kruise's `isJobComplete` has it): without failures the job is Complete with one succeeded pod per fitting node;
//! under FailFast a failure fails it; under Continue it completes with every fitting node tried.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use proptest::prelude::*;
use serde_json::json;

use super::*;

fn at(s: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + s).unwrap_or(Timestamp::UNIX_EPOCH)
}

#[derive(Clone, Debug)]
struct Case {
    /// Per node: tainted or not.
    tainted: Vec<bool>,
    parallelism: i32,
    fail_fast: bool,
    /// Per node: whether its pod fails.
    fails: Vec<bool>,
}

fn cases() -> impl Strategy<Value = Case> {
    (1usize..9)
        .prop_flat_map(|n| {
            (
                proptest::collection::vec(proptest::bool::weighted(0.2), n),
                1i32..5,
                any::<bool>(),
                proptest::collection::vec(proptest::bool::weighted(0.2), n),
            )
        })
        .prop_map(|(tainted, parallelism, fail_fast, fails)| Case { tainted, parallelism, fail_fast, fails })
}

struct World {
    job: BroadcastJob,
    pods: Vec<Arc<Pod>>,
    nodes: Vec<Arc<Node>>,
    now: i64,
    created: usize,
}

fn world(c: &Case) -> World {
    let job: BroadcastJob = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "BroadcastJob",
        "metadata": {"name": "warm", "namespace": "default", "uid": "uid-job"},
        "spec": {"parallelism": c.parallelism, "completionPolicy": {"type": "Always"},
            "failurePolicy": {"type": if c.fail_fast { FAIL_FAST } else { "Continue" }},
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}
    }))
    .unwrap_or_default();
    let nodes = c
        .tainted
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let taints = if *t { json!([{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]) } else { json!([]) };
            Arc::new(
                serde_json::from_value(json!({"metadata": {"name": format!("node-{i}")},
                    "spec": {"taints": taints}, "status": {"allocatable": {"pods": "10"}}}))
                .unwrap_or_default(),
            )
        })
        .collect();
    World { job, pods: Vec::new(), nodes, now: 0, created: 0 }
}

fn phase(p: &Pod) -> &str {
    p.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("")
}

fn node_index(node: &str) -> usize {
    node.strip_prefix("node-").and_then(|i| i.parse().ok()).unwrap_or(usize::MAX)
}

impl World {
    /// One round: plan, apply, check, kubelet. Returns whether the job is finished.
    fn round(&mut self, c: &Case) -> bool {
        let finished_before = is_finished(&self.job);
        let p = plan(&Input { job: &self.job, pods: &self.pods, nodes: &self.nodes, now: at(self.now) });
        if finished_before {
            assert!(p.create.is_empty() && p.delete.is_empty(), "a finished job acts: {p:?}");
        }
        for d in &p.delete {
            let before = self.pods.len();
            self.pods.retain(|x| !(x.metadata.name.as_deref() == Some(&d.name) && x.metadata.uid == d.uid));
            assert_eq!(self.pods.len(), before - 1, "deleted a pod that is not there: {d:?}");
        }
        for create in &p.create {
            let mut pod = create.pod.clone();
            self.created += 1;
            pod.metadata.name = Some(format!("warm-{}", self.created));
            pod.metadata.uid = Some(format!("uid-{}", self.created));
            // The scheduler binds it where its affinity says.
            let node = assigned_node(&pod);
            assert_eq!(node, create.node);
            pod.spec.get_or_insert_with(Default::default).node_name = Some(node);
            self.pods.push(Arc::new(pod));
        }
        if let Some(st) = p.status {
            self.job.status = Some(st);
        }
        // 1. parallelism.
        let active = self.pods.iter().filter(|p| !matches!(phase(p), "Succeeded" | "Failed")).count();
        assert!(active <= c.parallelism as usize, "{active} active pods, parallelism {}", c.parallelism);
        // 2. one pod per node, only on fitting nodes.
        let mut seen = BTreeSet::new();
        for pod in &self.pods {
            let node = assigned_node(pod);
            assert!(seen.insert(node.clone()), "two pods on {node}");
            assert!(!c.tainted[node_index(&node)], "a pod on tainted {node}");
        }
        // The kubelet: a new pod runs; a running one ends as chosen.
        for pod in &mut self.pods {
            let next = match phase(pod) {
                "" | "Pending" => "Running",
                "Running" if c.fails[node_index(&assigned_node(pod))] => "Failed",
                "Running" => "Succeeded",
                _ => continue,
            };
            Arc::make_mut(pod).status.get_or_insert_with(Default::default).phase = Some(next.into());
        }
        self.now += 1;
        finished_before
    }

    fn conditions(&self) -> BTreeMap<String, String> {
        let st = self.job.status.clone().unwrap_or_default();
        st.conditions.iter().map(|c| (c.type_.clone(), c.status.clone())).collect()
    }
}

fn run(c: &Case) {
    let mut w = world(c);
    let fitting: Vec<usize> = (0..c.tainted.len()).filter(|i| !c.tainted[*i]).collect();
    if fitting.is_empty() {
        // kruise's `isJobComplete`: no desired node, the job waits (for a node to fit).
        for _ in 0..5 {
            assert!(!w.round(c), "finished without a node to run on");
        }
        assert!(w.pods.is_empty());
        return;
    }
    let mut rounds = 0;
    while !w.round(c) {
        rounds += 1;
        assert!(rounds < 200, "not finished after 200 rounds: {:?}", w.job.status);
    }
    let failing = fitting.iter().any(|i| c.fails[*i]);
    let conditions = w.conditions();
    let st = w.job.status.clone().unwrap_or_default();
    if failing && c.fail_fast {
        assert_eq!(conditions.get(JOB_FAILED).map(String::as_str), Some("True"), "{st:?}");
        assert_eq!(st.phase, PHASE_FAILED);
    } else {
        assert_eq!(conditions.get(JOB_COMPLETE).map(String::as_str), Some("True"), "{st:?}");
        assert_eq!(st.phase, PHASE_COMPLETED);
        let tried: BTreeSet<usize> = w.pods.iter().map(|p| node_index(&assigned_node(p))).collect();
        assert_eq!(tried, fitting.iter().copied().collect(), "every fitting node ran the pod once");
        let succeeded = fitting.iter().filter(|i| !c.fails[**i]).count();
        assert_eq!(st.succeeded as usize, succeeded, "{st:?}");
        assert_eq!(st.desired as usize, fitting.len());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn broadcast_jobs_keep_parallelism_and_one_pod_per_node(c in cases()) {
        run(&c);
    }
}
