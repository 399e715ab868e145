//! Invariants of a UnitedDeployment round under `reserveUnschedulablePods`, over random subsets
//! and pods (issue 34): proptest builds a CloneSet UnitedDeployment of two or three subsets
//! (`maxReplicas` or not), each subset's workload with pods in random states (pending and
//! unschedulable for a random time, running ready since a random time, running not ready; at the
//! update revision or an older one; reserved label `true`, `false` or missing), random subset
//! `Schedulable` conditions and a random update start. Then it plans rounds at one instant and
//! applies the label writes to the pods as JSON patches, exactly as the controller sends them.
//! Every round checks:
//!
//! 1. the round deletes nothing (no pod, no workload): reserved pods are kept;
//! 2. the label writes come first, name each pod at most once, carry its uid, apply, and change
//!    the label (or add a missing one);
//! 3. the status counts: `replicas + reservedPods` is the workloads' replicas, the subsets'
//!    reserved pods add up to `reservedPods` and none has more than its pods, and a subset with
//!    reserved pods is `Schedulable=False`;
//! 4. the labels settle: by the third round at the same instant there is nothing left to write
//!    (the second may still let go of pods first marked only because their subset was marked —
//!    kruise does the same);
//! 5. the status selector leaves reserved pods out.
//!
//! 64 cases in `cargo test` (PROPTEST_CASES=N for a longer run).

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::apis::uniteddeployment::UnitedDeployment;
use crate::core::uniteddeployment::subsets::{Action, Existing, Plan, plan};
use crate::core::uniteddeployment::workload::{Workload, desired};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// One pod's state: 0 pending and unschedulable, 1 running ready, 2 running not ready; its age
/// (creation, or the Ready transition) in seconds; at the update revision; its label (0 none,
/// 1 "false", 2 "true").
type PodCase = (u8, i64, bool, u8);

#[derive(Clone, Debug)]
struct SubsetCase {
    max: Option<i32>,
    pods: Vec<PodCase>,
    /// 0 no condition, 1 True, 2 False.
    schedulable: u8,
}

#[derive(Clone, Debug)]
struct Case {
    replicas: i32,
    subsets: Vec<SubsetCase>,
    update_age: i64,
}

fn case() -> impl Strategy<Value = Case> {
    let pod = (0u8..3, 0i64..60, any::<bool>(), 0u8..3);
    let subset = (proptest::option::of(0i32..5), prop::collection::vec(pod, 0..5), 0u8..3)
        .prop_map(|(max, pods, schedulable)| SubsetCase { max, pods, schedulable });
    (1i32..9, prop::collection::vec(subset, 2..4), 0i64..40).prop_map(|(replicas, subsets, update_age)| Case {
        replicas,
        subsets,
        update_age,
    })
}

fn now() -> Timestamp {
    Timestamp::from_second(1_700_000_000).unwrap()
}

fn ago(secs: i64) -> Time {
    Time(now() - SignedDuration::from_secs(secs))
}

fn united_deployment(c: &Case) -> UnitedDeployment {
    let subsets: Vec<Value> = c
        .subsets
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut v = json!({"name": format!("s{i}")});
            if let Some(m) = s.max {
                v["maxReplicas"] = json!(m);
            }
            v
        })
        .collect();
    let spec = json!({"replicas": c.replicas, "selector": {"matchLabels": {"app": "web"}},
        "template": {"cloneSetTemplate": {"metadata": {"labels": {"app": "web"}}, "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "main", "image": "nginx:1"}]}}}}},
        "topology": {"subsets": subsets, "scheduleStrategy": {"type": "Adaptive", "adaptive": {
            "rescheduleCriticalSeconds": 10, "unschedulableDuration": 30, "reserveUnschedulablePods": true}}}});
    let mut u = UnitedDeployment::new("web", serde_json::from_value(spec).unwrap());
    u.metadata.namespace = Some("ns".into());
    u.metadata.uid = Some("ud-uid".into());
    let statuses: Vec<Value> = c
        .subsets
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut v = json!({"name": format!("s{i}")});
            if s.schedulable > 0 {
                let status = if s.schedulable == 1 { "True" } else { "False" };
                v["conditions"] = json!([{"type": "Schedulable", "status": status, "reason": "reschedule",
                    "lastTransitionTime": ago(100)}]);
            }
            v
        })
        .collect();
    u.status = Some(
        serde_json::from_value(json!({"currentRevision": "r1", "subsetStatuses": statuses, "conditions": [
            {"type": "UnitedDeploymentUpdated", "status": "False", "lastTransitionTime": ago(c.update_age)}]}))
        .unwrap(),
    );
    u
}

fn pod_of(subset: usize, i: usize, p: &PodCase) -> Pod {
    let &(state, age, current, label) = p;
    let mut labels = json!({"app": "web", "apps.kruise.io/subset-name": format!("s{subset}"),
        "apps.kruise.io/controller-revision-hash": if current { "r2" } else { "r1" }});
    if label > 0 {
        labels[RESERVED_POD_LABEL] = json!(if label == 2 { "true" } else { "false" });
    }
    let status = match state {
        0 => {
            json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]})
        }
        1 => {
            json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": ago(age)}]})
        }
        _ => {
            json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": ago(age)}]})
        }
    };
    serde_json::from_value(json!({
        "metadata": {"name": format!("s{subset}-{i}"), "uid": format!("uid-s{subset}-{i}"),
            "creationTimestamp": ago(age), "labels": labels},
        "spec": {"containers": [], "nodeName": if state == 0 { "" } else { "n1" }},
        "status": status
    }))
    .unwrap()
}

fn world(c: &Case, u: &UnitedDeployment) -> Vec<Existing> {
    c.subsets
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let n = s.pods.len() as i32;
            let name = format!("s{i}");
            let Workload::CloneSet(mut set) = desired(u, &name, "r2", n, 0, None).unwrap() else { unreachable!() };
            set.metadata.name = Some(format!("web-{name}-x"));
            set.metadata.uid = Some(format!("set-{i}"));
            let ready = s.pods.iter().filter(|p| p.0 == 1).count() as i32;
            set.status = Some(crate::apis::CloneSetStatus { replicas: n, ready_replicas: ready, ..Default::default() });
            let pods = s.pods.iter().enumerate().map(|(j, p)| std::sync::Arc::new(pod_of(i, j, p))).collect();
            Existing { workload: Workload::CloneSet(set), pods }
        })
        .collect()
}

/// Checks one round (items 1–3 and 5) and applies its label writes; answers how many there were.
fn round(u: &mut UnitedDeployment, existing: &mut [Existing]) -> Result<usize, TestCaseError> {
    let p: Plan = plan(u, existing, "r2", "r1", Time(now())).map_err(TestCaseError::fail)?;
    let labels = p.actions.iter().take_while(|a| matches!(a, Action::LabelPod { .. })).count();
    let mut seen = BTreeSet::new();
    for a in &p.actions[labels..] {
        prop_assert!(
            matches!(a, Action::Update { .. } | Action::Create { .. }),
            "only label writes, then workload updates: {a:?}"
        );
    }
    for a in &p.actions[..labels] {
        let Action::LabelPod { subset, pod } = a else { unreachable!() };
        prop_assert!(seen.insert(pod.uid.clone()), "{} labelled twice", pod.name);
        let e = existing.iter_mut().find(|e| e.workload.subset() == Some(subset.as_str())).unwrap();
        let target = e.pods.iter_mut().find(|x| x.metadata.name.as_deref() == Some(pod.name.as_str())).unwrap();
        let value = if pod.reserved { "true" } else { "false" };
        prop_assert_ne!(
            crate::core::pods::label(target, RESERVED_POD_LABEL),
            Some(value),
            "a write that changes nothing"
        );
        let mut doc = serde_json::to_value(&**target).unwrap();
        json_patch::patch(&mut doc, &label_patch(pod)).map_err(|e| TestCaseError::fail(format!("{e}")))?;
        *target = std::sync::Arc::new(serde_json::from_value(doc).unwrap());
        prop_assert_eq!(crate::core::pods::label(target, RESERVED_POD_LABEL), Some(value));
    }
    let s = &p.status;
    let workload_replicas: i32 = existing.iter().map(|e| e.workload.status_replicas()).sum();
    prop_assert_eq!(s.replicas + s.reserved_pods, workload_replicas);
    let by_subset: BTreeMap<&str, i32> = s.subset_statuses.iter().map(|x| (x.name.as_str(), x.reserved_pods)).collect();
    prop_assert_eq!(by_subset.values().sum::<i32>(), s.reserved_pods);
    for e in existing.iter() {
        let name = e.workload.subset().unwrap();
        let reserved = by_subset.get(name).copied().unwrap_or(0);
        prop_assert!(reserved as usize <= e.pods.len());
        if reserved > 0 {
            let st = s.subset_statuses.iter().find(|x| x.name == name).unwrap();
            let cond = st.conditions.iter().find(|c| c.type_ == "Schedulable").unwrap();
            prop_assert_eq!(cond.status.as_str(), "False", "{} has reserved pods", name);
        }
    }
    prop_assert!(s.label_selector.ends_with(EXTRA_STATUS_SELECTOR), "{}", s.label_selector);
    u.status = Some(p.status);
    Ok(labels)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_reservation_round_keeps_pods_and_its_labels_settle(c in case()) {
        let mut u = united_deployment(&c);
        let mut existing = world(&c, &u);
        round(&mut u, &mut existing)?;
        round(&mut u, &mut existing)?;
        let third = round(&mut u, &mut existing)?;
        prop_assert_eq!(third, 0, "labels still changing on the third round at one instant");
    }
}
