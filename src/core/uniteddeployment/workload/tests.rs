//! The four adapters, ported from kruise's `adapter_test.go`, `adapter_util_test.go` and the
//! per-kind controller tests (`uniteddeployment_controller_{advancedstatefulset,statefulset,deployment}_test.go`,
//! v1.9.0) as tables over the planner.

use super::*;
use crate::core::uniteddeployment::subsets::{Action, Existing, plan};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{Value, json};
use std::collections::BTreeMap;

const KINDS: [(&str, SubsetKind); 4] = [
    ("statefulSetTemplate", SubsetKind::StatefulSet),
    ("advancedStatefulSetTemplate", SubsetKind::AdvancedStatefulSet),
    ("cloneSetTemplate", SubsetKind::CloneSet),
    ("deploymentTemplate", SubsetKind::Deployment),
];

fn ud_of(spec: Value) -> UnitedDeployment {
    let mut u = UnitedDeployment::new("web", serde_json::from_value(spec).unwrap());
    u.metadata.namespace = Some("ns".into());
    u.metadata.uid = Some("ud-uid".into());
    u
}

/// A UnitedDeployment of 10 over subset-a and subset-b (nodes `nodeA`, `nodeB`), with the
/// template `key` at `image` and the workload spec fields `extra`.
fn ud(key: &str, image: &str, extra: Value) -> UnitedDeployment {
    let mut spec = json!({
        "selector": {"matchLabels": {"name": "web"}},
        "template": {"metadata": {"labels": {"name": "web"}}, "spec": {"containers": [{"name": "container-a", "image": image}]}}});
    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
        spec[k] = v;
    }
    ud_of(json!({"replicas": 10, "selector": {"matchLabels": {"name": "web"}},
        "template": {key: {"metadata": {"labels": {"name": "web"}}, "spec": spec}},
        "updateStrategy": {"type": "Manual"},
        "topology": {"subsets": [
            {"name": "subset-a", "nodeSelectorTerm": {"matchExpressions": [{"key": "node-name", "operator": "In", "values": ["nodeA"]}]}},
            {"name": "subset-b", "nodeSelectorTerm": {"matchExpressions": [{"key": "node-name", "operator": "In", "values": ["nodeB"]}]}}]}}))
}

fn now() -> Time {
    Time(k8s_openapi::jiff::Timestamp::from_second(1_700_000_000).unwrap())
}

fn pod(name: &str, revision: Option<&str>, ready: bool) -> Pod {
    let mut labels = serde_json::Map::new();
    if let Some(r) = revision {
        labels.insert(REVISION_LABEL.into(), json!(r));
    }
    serde_json::from_value(
        json!({"metadata": {"name": name, "namespace": "ns", "uid": format!("{name}-uid"), "labels": labels},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]}}),
    )
    .unwrap()
}

/// The workload of `subset` as the API would hold it after its controller caught up: named,
/// its status counting `pods`.
fn existing(u: &UnitedDeployment, subset: &str, revision: &str, replicas: i32, pods: Vec<Pod>) -> Existing {
    let mut w = desired(u, subset, revision, replicas, 0, None).unwrap();
    let ready = pods.iter().filter(|p| pods::is_ready(p)).count() as i32;
    let n = pods.len() as i32;
    let name = format!("web-{subset}-x");
    match &mut w {
        Workload::CloneSet(s) => {
            s.status = Some(crate::apis::CloneSetStatus { replicas: n, ready_replicas: ready, ..Default::default() })
        }
        Workload::AdvancedStatefulSet(s) => {
            s.status = Some(crate::apis::statefulset::v1beta1::StatefulSetStatus {
                replicas: n,
                ready_replicas: ready,
                ..Default::default()
            })
        }
        Workload::StatefulSet(s) => {
            s.status = Some(k8s_openapi::api::apps::v1::StatefulSetStatus {
                replicas: n,
                ready_replicas: Some(ready),
                ..Default::default()
            })
        }
        Workload::Deployment(s) => {
            s.status = Some(k8s_openapi::api::apps::v1::DeploymentStatus {
                replicas: Some(n),
                ready_replicas: Some(ready),
                ..Default::default()
            })
        }
    }
    w.meta_mut().name = Some(name.clone());
    w.meta_mut().uid = Some(format!("{name}-uid"));
    Existing { workload: w, pods: pods.into_iter().map(std::sync::Arc::new).collect() }
}

fn pods_at(prefix: &str, revision: &str, n: i32) -> Vec<Pod> {
    (0..n).map(|i| pod(&format!("{prefix}-{i}"), Some(revision), true)).collect()
}

fn json_of(w: &Workload) -> Value {
    match w {
        Workload::CloneSet(s) => serde_json::to_value(s),
        Workload::AdvancedStatefulSet(s) => serde_json::to_value(s),
        Workload::StatefulSet(s) => serde_json::to_value(s),
        Workload::Deployment(s) => serde_json::to_value(s),
    }
    .unwrap()
}

/// kruise `TestApplySubsetTemplate`, every adapter: namespace, labels, annotations (the subset
/// patch recorded) and the patch applied to the pod template.
#[test]
fn apply_subset_template_for_every_kind() {
    for (key, kind) in KINDS {
        let u = ud_of(json!({
            "selector": {"matchLabels": {"selector-key": "selector-value"}},
            "template": {key: {"metadata": {"labels": {"custom-label-1": "custom-value-1"},
                "annotations": {"annotation-key": "annotation-value"}}, "spec": {}}},
            "topology": {"subsets": [{"name": "subset-a",
                "patch": {"metadata": {"annotations": {"patched-key": "patched-value"}}}}]}}));
        assert_eq!(SubsetKind::of(&u), Some(kind));
        let w = desired(&u, "subset-a", "abcd", 2, 4, None).unwrap();
        assert_eq!(w.kind(), kind);
        let v = json_of(&w);
        assert_eq!(v["metadata"]["namespace"], "ns", "{key}");
        for (k, want) in [
            ("custom-label-1", "custom-value-1"),
            ("selector-key", "selector-value"),
            (SUBSET_NAME_LABEL, "subset-a"),
            (REVISION_LABEL, "abcd"),
        ] {
            assert_eq!(v["metadata"]["labels"][k], want, "{key}: label {k}");
        }
        assert_eq!(v["metadata"]["annotations"]["annotation-key"], "annotation-value", "{key}");
        assert_eq!(
            v["metadata"]["annotations"][SUBSET_PATCH_ANNOTATION],
            r#"{"metadata":{"annotations":{"patched-key":"patched-value"}}}"#,
            "{key}"
        );
        assert_eq!(v["spec"]["template"]["metadata"]["annotations"]["patched-key"], "patched-value", "{key}");
        assert_eq!(v["metadata"]["generateName"], "web-subset-a-", "{key}");
        assert_eq!(v["metadata"]["ownerReferences"][0]["kind"], "UnitedDeployment", "{key}");
        assert_eq!(v["metadata"]["ownerReferences"][0]["controller"], true, "{key}");
        assert_eq!(v["spec"]["replicas"], 2, "{key}");
        assert_eq!(
            v["spec"]["selector"],
            json!({"matchLabels": {"selector-key": "selector-value", SUBSET_NAME_LABEL: "subset-a"}}),
            "{key}"
        );
        assert_eq!(v["spec"]["template"]["metadata"]["labels"][SUBSET_NAME_LABEL], "subset-a", "{key}");
        assert_eq!(v["spec"]["template"]["metadata"]["labels"][REVISION_LABEL], "abcd", "{key}");
        // The partition, where the kind has one.
        let partition = match kind {
            SubsetKind::CloneSet => v["spec"]["updateStrategy"]["partition"].clone(),
            SubsetKind::AdvancedStatefulSet | SubsetKind::StatefulSet => {
                v["spec"]["updateStrategy"]["rollingUpdate"]["partition"].clone()
            }
            SubsetKind::Deployment => json!(v["spec"].to_string().contains("partition")),
        };
        let want = if kind == SubsetKind::Deployment { json!(false) } else { json!(4) };
        assert_eq!(partition, want, "{key}");
        assert_eq!(w.spec_partition(&[] as &[Pod]), if kind == SubsetKind::Deployment { 0 } else { 4 }, "{key}");
        assert_eq!(w.has_partition(), kind != SubsetKind::Deployment);
    }
}

/// The two StatefulSet kinds write a partition only under RollingUpdate (or no strategy); the
/// apps/v1 one also writes the strategy type, the Advanced one leaves it as the template has it.
#[test]
fn statefulsets_take_the_partition_only_when_rolling() {
    let rolling = ud("statefulSetTemplate", "nginx:1.0", json!({}));
    let Workload::StatefulSet(s) = desired(&rolling, "subset-a", "r", 5, 3, None).unwrap() else { panic!() };
    let strategy = s.spec.unwrap().update_strategy.unwrap();
    assert_eq!(strategy.type_.as_deref(), Some("RollingUpdate"));
    assert_eq!(strategy.rolling_update.unwrap().partition, Some(3));

    let asts = ud("advancedStatefulSetTemplate", "nginx:1.0", json!({}));
    let Workload::AdvancedStatefulSet(s) = desired(&asts, "subset-a", "r", 5, 3, None).unwrap() else { panic!() };
    assert_eq!(s.spec.update_strategy.type_, "", "left as the template has it");
    assert_eq!(s.spec.update_strategy.rolling_update.unwrap().partition, Some(3));

    for key in ["statefulSetTemplate", "advancedStatefulSetTemplate"] {
        let on_delete = ud(key, "nginx:1.0", json!({"updateStrategy": {"type": "OnDelete"}}));
        let w = desired(&on_delete, "subset-a", "r", 5, 3, None).unwrap();
        let v = json_of(&w);
        assert_eq!(v["spec"]["updateStrategy"], json!({"type": "OnDelete"}), "{key}");
    }
}

/// kruise `TestGetCurrentPartitionForStrategyOnDelete`: an OnDelete StatefulSet's partition is
/// the number of its pods not at its revision (both StatefulSet kinds).
#[test]
fn on_delete_partition_counts_pods_not_at_the_revision() {
    let rows: [(&[i32], &[&str], i32); 7] = [
        (&[0, 1, 2], &["v1", "v2", "v2"], 1),
        (&[0, 1, 2], &["v1", "v1", "v2"], 2),
        (&[0, 1, 2, 3], &["v2", "v1", "v2", "v2"], 1),
        (&[1, 2, 3], &["v1", "v2", "v2"], 1),
        (&[0, 1, 3], &["v2", "v1", "v2"], 1),
        (&[0, 1, 2], &["v1", "v1", "v1"], 3),
        (&[0, 1, 2, 4], &["v1", "", "v2", "v3"], 3),
    ];
    for key in ["statefulSetTemplate", "advancedStatefulSetTemplate"] {
        let u = ud(key, "nginx:1.0", json!({"updateStrategy": {"type": "OnDelete"}}));
        let w = desired(&u, "subset-a", "v2", 3, 0, None).unwrap();
        for (ordinals, revisions, want) in rows {
            let pods: Vec<Pod> = ordinals
                .iter()
                .zip(revisions)
                .map(|(o, r)| pod(&format!("pod-{o}"), Some(*r).filter(|r| !r.is_empty()), true))
                .collect();
            assert_eq!(w.spec_partition(&pods), want, "{key} {ordinals:?} {revisions:?}");
        }
    }
}

/// kruise `TestPostUpdate` and `TestStsRollingUpdateDeleteStuckPod`: only a RollingUpdate apps/v1
/// StatefulSet deletes pods, those at or above the partition, not at the revision and not ready.
#[test]
fn stuck_pods_of_a_rolling_statefulset() {
    let pods = vec![
        pod("web-subset-a-x-0", Some("r1"), false), // below the partition
        pod("web-subset-a-x-1", Some("r1"), true),  // ready: it will be updated
        pod("web-subset-a-x-2", Some("r1"), false), // stuck
        pod("web-subset-a-x-3", Some("r2"), false), // at the revision
        pod("web-subset-a-x-4", None, false),       // no revision: stuck
        pod("not-an-ordinal", Some("r1"), false),   // ordinal -1
    ];
    let sts = ud("statefulSetTemplate", "nginx:1.0", json!({}));
    let w = desired(&sts, "subset-a", "r2", 5, 1, None).unwrap();
    let names: Vec<String> = stuck_pods(&w, &pods, "r2", 1).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["web-subset-a-x-2", "web-subset-a-x-4"]);
    let mut deleting = pods.clone();
    deleting[2].metadata.deletion_timestamp = Some(now());
    assert_eq!(stuck_pods(&w, &deleting, "r2", 1).len(), 1, "a pod being deleted is not deleted again");
    for (key, extra) in [
        ("statefulSetTemplate", json!({"updateStrategy": {"type": "OnDelete"}})),
        ("advancedStatefulSetTemplate", json!({})),
        ("cloneSetTemplate", json!({})),
        ("deploymentTemplate", json!({})),
    ] {
        let u = ud(key, "nginx:1.0", extra);
        let w = desired(&u, "subset-a", "r2", 5, 1, None).unwrap();
        assert!(stuck_pods(&w, &pods, "r2", 1).is_empty(), "{key}");
    }
}

/// `TestAstsSubsetProvision`, `TestStsSubsetProvision`, `TestDeploymentSubsetProvision`: the first
/// round creates one workload of the template's kind per subset, 5 and 5, each with its node
/// affinity.
#[test]
fn first_round_provisions_one_workload_per_subset_of_each_kind() {
    for (key, kind) in KINDS {
        let u = ud(key, "nginx:1.0", json!({}));
        let p = plan(&u, &[], "r1", "r1", now()).unwrap();
        let created: Vec<(&str, &Workload)> = p
            .actions
            .iter()
            .map(|a| match a {
                Action::Create { subset, workload } => (subset.as_str(), &**workload),
                other => panic!("{key}: {other:?}"),
            })
            .collect();
        assert_eq!(created.len(), 2, "{key}");
        for (subset, w) in created {
            assert_eq!(w.kind(), kind, "{key}");
            assert_eq!(w.spec_replicas(), 5, "{key}");
            let node = if subset == "subset-a" { "nodeA" } else { "nodeB" };
            let v = json_of(w);
            assert_eq!(
                v["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                    ["nodeSelectorTerms"],
                json!([{"matchExpressions": [{"key": "node-name", "operator": "In", "values": [node]}]}]),
                "{key}"
            );
        }
    }
}

/// `TestAstsRollingUpdatePartition`, `TestStsRollingUpdatePartition` and kruise's Deployment
/// test of the same steps: a new image with partitions subset-a 4, subset-b 3 rewrites both
/// workloads with the new image; the StatefulSets carry the partitions, the Deployments none;
/// the status reports the partitions for every kind.
#[test]
fn manual_partitions_per_kind() {
    for (key, kind) in KINDS {
        let u = ud(key, "nginx:1.0", json!({}));
        let sets = [
            existing(&u, "subset-a", "r1", 5, pods_at("web-subset-a-x", "r1", 5)),
            existing(&u, "subset-b", "r1", 5, pods_at("web-subset-b-x", "r1", 5)),
        ];
        let settled = plan(&u, &sets, "r1", "r1", now()).unwrap();
        assert!(settled.actions.is_empty(), "{key}: {:?}", settled.actions);

        let mut u2 = ud(key, "nginx:2.0", json!({}));
        u2.spec.update_strategy.manual_update = Some(crate::apis::uniteddeployment::ManualUpdate {
            partitions: [("subset-a".to_string(), 4), ("subset-b".to_string(), 3)].into(),
        });
        let p = plan(&u2, &sets, "r2", "r1", now()).unwrap();
        let mut updates = BTreeMap::new();
        for a in &p.actions {
            let Action::Update { subset, workload, .. } = a else { panic!("{key}: {a:?}") };
            let v = json_of(workload);
            assert_eq!(v["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:2.0", "{key}");
            assert_eq!(workload.revision(), "r2");
            let partition = match kind {
                SubsetKind::Deployment => None,
                _ => Some(workload.spec_partition(&[] as &[Pod])),
            };
            updates.insert(subset.clone(), partition);
        }
        let want = if kind == SubsetKind::Deployment {
            [("subset-a".to_string(), None), ("subset-b".to_string(), None)]
        } else {
            [("subset-a".to_string(), Some(4)), ("subset-b".to_string(), Some(3))]
        };
        assert_eq!(updates, want.into(), "{key}");
        assert_eq!(
            p.status.update_status.as_ref().unwrap().current_partitions,
            [("subset-a".to_string(), 4), ("subset-b".to_string(), 3)].into(),
            "{key}"
        );
        assert_eq!(p.status.current_revision, "r1", "{key}: nothing updated yet");
    }
}

/// A Deployment reads back no partition: once rewritten at the revision, a manual partition
/// does not make it stale round after round.
#[test]
fn a_deployment_is_not_rewritten_for_its_partition() {
    let mut u = ud("deploymentTemplate", "nginx:1.0", json!({}));
    u.spec.update_strategy.manual_update =
        Some(crate::apis::uniteddeployment::ManualUpdate { partitions: [("subset-a".to_string(), 2)].into() });
    let sets = [
        existing(&u, "subset-a", "r1", 5, pods_at("a", "r1", 5)),
        existing(&u, "subset-b", "r1", 5, pods_at("b", "r1", 5)),
    ];
    let p = plan(&u, &sets, "r1", "r1", now()).unwrap();
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(p.status.subset_statuses.iter().find(|s| s.name == "subset-a").unwrap().partition, 2);
}

/// `TestTemplateTypeSwitch`: a StatefulSet template replaced by an Advanced StatefulSet one —
/// the StatefulSets are deleted and Advanced StatefulSets created.
#[test]
fn switching_the_template_kind_replaces_the_workloads() {
    let old = ud("statefulSetTemplate", "nginx:1.0", json!({}));
    let sets = [
        existing(&old, "subset-a", "r1", 5, pods_at("a", "r1", 5)),
        existing(&old, "subset-b", "r1", 5, pods_at("b", "r1", 5)),
    ];
    let new = ud("advancedStatefulSetTemplate", "nginx:1.0", json!({}));
    let p = plan(&new, &sets, "r2", "r1", now()).unwrap();
    let mut deleted = Vec::new();
    let mut created = Vec::new();
    for a in &p.actions {
        match a {
            Action::Delete { kind, name, reason, .. } => deleted.push((*kind, name.as_str(), *reason)),
            Action::Create { workload, .. } => created.push(workload.kind()),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        deleted,
        [
            (SubsetKind::StatefulSet, "web-subset-a-x", "another kind of subset"),
            (SubsetKind::StatefulSet, "web-subset-b-x", "another kind of subset")
        ]
    );
    assert_eq!(created, [SubsetKind::AdvancedStatefulSet, SubsetKind::AdvancedStatefulSet]);
    assert!(p.status.conditions.iter().any(|c| c.type_ == "SubsetProvisioned" && c.status == "True"));
    // A workload of the template's kind is never applied over one of another kind.
    assert!(desired(&new, "subset-a", "r2", 5, 0, Some(&sets[0].workload)).unwrap_err().contains("is not a"));
}

/// `TestStsRollingUpdateDeleteStuckPod` through the round: the new revision rewrites the
/// StatefulSet and its not-ready old pods above the partition are deleted.
#[test]
fn the_round_deletes_a_statefulsets_stuck_pods() {
    let u = ud("statefulSetTemplate", "nginx:1.0", json!({}));
    let mut pods = pods_at("web-subset-a-x", "r1", 5);
    pods[4] = pod("web-subset-a-x-4", Some("r1"), false);
    let sets = [existing(&u, "subset-a", "r1", 5, pods), existing(&u, "subset-b", "r1", 5, pods_at("b", "r1", 5))];
    let u2 = ud("statefulSetTemplate", "nginx:2.0", json!({}));
    let p = plan(&u2, &sets, "r2", "r1", now()).unwrap();
    let deleted: Vec<&str> = p
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::DeletePod { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deleted, ["web-subset-a-x-4"]);
}

/// kruise `TestCalculateUpdatedReplicas` through the status: 5 pods at the revision (3 ready)
/// and 2 old ones.
#[test]
fn updated_replicas_are_counted_from_the_pods() {
    for (key, _) in KINDS {
        let u = ud(key, "nginx:1.0", json!({}));
        let mut pods: Vec<Pod> = (0..5).map(|i| pod(&format!("a-{i}"), Some("r2"), i < 3)).collect();
        pods.extend((5..7).map(|i| pod(&format!("a-{i}"), Some("r1"), true)));
        let sets = [existing(&u, "subset-a", "r2", 7, pods)];
        let p = plan(&u, &sets, "r2", "r1", now()).unwrap();
        assert_eq!((p.status.updated_replicas, p.status.updated_ready_replicas), (5, 3), "{key}");
        assert_eq!((p.status.replicas, p.status.ready_replicas), (7, 5), "{key}");
    }
}

#[test]
fn a_united_deployment_without_a_template_is_refused() {
    let u = ud_of(json!({"replicas": 1, "selector": {"matchLabels": {"a": "b"}}, "template": {},
        "topology": {"subsets": [{"name": "s"}]}}));
    assert_eq!(SubsetKind::of(&u), None);
    assert!(plan(&u, &[], "r", "r", now()).unwrap_err().contains("no subset template"));
    assert!(desired(&u, "s", "r", 1, 0, None).is_err());
}

/// The adapters' `SetMaxUnavailable` (reservation), per kind: the rolling update's value, and
/// the cases kept at the template's value because the workload would refuse it.
#[test]
fn max_unavailable_is_set_where_the_workload_takes_it() {
    fn read(w: &Workload) -> Value {
        let v = json_of(w);
        match w.kind() {
            SubsetKind::CloneSet => v["spec"]["updateStrategy"]["maxUnavailable"].clone(),
            SubsetKind::Deployment => v["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"].clone(),
            _ => v["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"].clone(),
        }
    }
    let asts_parallel = json!({"podManagementPolicy": "Parallel", "updateStrategy": {"type": "RollingUpdate"}});
    let asts_ordered = json!({"updateStrategy": {"type": "RollingUpdate"}});
    let on_delete = json!({"updateStrategy": {"type": "OnDelete"}});
    let recreate = json!({"strategy": {"type": "Recreate"}});
    // template key, extra spec, value, set?
    let rows: Vec<(&str, Value, i32, bool)> = vec![
        ("cloneSetTemplate", json!({}), 3, true),
        ("cloneSetTemplate", json!({}), 0, false),
        ("cloneSetTemplate", json!({}), -1, false),
        ("advancedStatefulSetTemplate", asts_parallel, 3, true),
        ("advancedStatefulSetTemplate", asts_ordered.clone(), 1, true),
        ("advancedStatefulSetTemplate", asts_ordered, 2, false),
        ("advancedStatefulSetTemplate", on_delete.clone(), 1, false),
        ("statefulSetTemplate", json!({}), 2, true),
        ("statefulSetTemplate", on_delete, 2, false),
        ("deploymentTemplate", json!({}), 2, true),
        ("deploymentTemplate", recreate, 2, false),
    ];
    for (key, extra, v, want) in rows {
        let u = ud(key, "nginx:1.0", extra.clone());
        let mut w = desired(&u, "subset-a", "r1", 4, 0, None).unwrap();
        let before = read(&w);
        assert_eq!(w.set_max_unavailable(v), want, "{key} {extra} {v}");
        if want {
            assert_eq!(read(&w), json!(v), "{key} {extra} {v}");
        } else {
            assert_eq!(read(&w), before, "{key} {extra} {v}: the template's value stays");
        }
    }
}
