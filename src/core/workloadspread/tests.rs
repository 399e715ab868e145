//! kruise v1.9.0 `pkg/util/workloadspread/workloadspread_test.go` rows: `TestWorkloadSpreadMutatingPod`
//! (the create, delete and eviction rows whose decision is ours: the owner lookup rows need the
//! cluster), `TestWorkloadSpreadCreatePodWithoutFullName`, `TestPatchMetadata`,
//! `TestPatchContainerResource`, `TestFilterReference`, `TestGetParentNameAndOrdinal`,
//! `TestInitializedSubsetStatuses` (the number rows), `TestGetPodVersion`, `TestIsReferenceEqual`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::*;

fn now() -> Time {
    Time(Timestamp::from_second(1_700_000_000).unwrap())
}

fn pod_demo() -> Pod {
    serde_json::from_value(json!({"metadata": {"name": "test-pod-1", "namespace": "default", "annotations": {},
        "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cloneset-test",
            "controller": true, "uid": "a03eb001-27eb-4713-b634-7c46f6861758", "blockOwnerDeletion": true}]},
        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.15.1"}]}}))
    .unwrap()
}

fn subset_status(missing: i32) -> Value {
    json!({"name": "subset-a", "missingReplicas": missing, "replicas": 0})
}

/// kruise's `workloadSpreadDemo` with subset-a's status at `missing`.
fn ws_demo(missing: i32) -> WorkloadSpread {
    crate::compat::decode::from_value(&json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
        "metadata": {"name": "test-ws", "namespace": "default"},
        "spec": {"targetRef": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cloneset-test"},
            "subsets": [{"name": "subset-a",
                "requiredNodeSelectorTerm": {
                    "matchExpressions": [
                        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["ack"]},
                        {"key": "sigma.ali/resource-pool", "operator": "In", "values": ["lark"]}],
                    "matchFields": [{"key": "metadata.name", "operator": "In",
                        "values": ["i-8vbhlh6rte2w5d1k2sgn", "i-8vbhlh6rte2vnxlq8ztc"]}]},
                "preferredNodeSelectorTerms": [{"weight": 5, "preference": {"matchExpressions": [
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["cn-zhangjiakou-a"]}]}}],
                "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}],
                "patch": {"metadata": {"labels": {"subset": "subset-a"}, "annotations": {"subset": "subset-a"}}},
                "maxReplicas": 5}]},
        "status": {"observedGeneration": 10, "subsetStatuses": [subset_status(missing)],
            "versionedSubsetStatuses": {"versionIgnored": [subset_status(missing)]}}}))
    .unwrap()
}

/// The pod kruise expects after subset-a was injected.
fn injected_pod_a() -> Value {
    // `apiVersion` and `kind` come with k8s-openapi's encoding of the patched pod.
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "test-pod-1", "namespace": "default",
            "labels": {"subset": "subset-a"},
            "annotations": {"subset": "subset-a", MATCHED_ANNOTATION: "{\"name\":\"test-ws\",\"subset\":\"subset-a\"}"},
            "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cloneset-test",
                "controller": true, "uid": "a03eb001-27eb-4713-b634-7c46f6861758", "blockOwnerDeletion": true}]},
        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.15.1"}],
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}],
            "affinity": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
                    "matchExpressions": [
                        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["ack"]},
                        {"key": "sigma.ali/resource-pool", "operator": "In", "values": ["lark"]}],
                    "matchFields": [{"key": "metadata.name", "operator": "In",
                        "values": ["i-8vbhlh6rte2w5d1k2sgn", "i-8vbhlh6rte2vnxlq8ztc"]}]}]},
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "preference": {"matchExpressions": [
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["cn-zhangjiakou-a"]}]}}]}}}})
}

/// The whole CREATE hook on the pod: subset, status, injection (kruise's `mutatingPod`).
fn create(ws: &mut WorkloadSpread, pod: &mut Pod) -> SubsetUpdate {
    let update = update_subset_for_pod(ws, pod, None, Operation::Create, &now(), 0, || "uid-1".into());
    if let Some(subset) = &update.subset {
        let ws = ws.clone();
        inject(&ws, pod, subset, &update.generated_uid).unwrap();
    }
    update
}

fn versioned(ws: &WorkloadSpread) -> &WorkloadSpreadSubsetStatus {
    &ws.status.as_ref().unwrap().versioned_subset_statuses[VERSION_IGNORED][0]
}

#[test]
fn create_matched_missing_5() {
    let (mut ws, mut pod) = (ws_demo(5), pod_demo());
    let u = create(&mut ws, &mut pod);
    assert!(u.changed);
    assert_eq!(serde_json::to_value(&pod).unwrap(), injected_pod_a());
    let s = versioned(&ws);
    assert_eq!(s.missing_replicas, 4);
    assert_eq!(s.creating_pods.keys().collect::<Vec<_>>(), ["test-pod-1"]);
}

#[test]
fn create_subset_a_full_goes_to_unlimited_subset_b() {
    let mut ws = ws_demo(0);
    let mut v = serde_json::to_value(&ws).unwrap();
    v["spec"]["subsets"].as_array_mut().unwrap().push(json!({"name": "subset-b", "requiredNodeSelectorTerm":
        {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["cn-zhangjiakou-b"]}]}}));
    v["status"]["versionedSubsetStatuses"]["versionIgnored"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "subset-b", "missingReplicas": -1, "replicas": 0}));
    ws = crate::compat::decode::from_value(&v).unwrap();
    let before = ws.status.clone();
    let mut pod = pod_demo();
    let u = create(&mut ws, &mut pod);
    assert!(!u.changed, "an unlimited subset is not counted");
    assert_eq!(ws.status, before);
    let annotations = pod.metadata.annotations.as_ref().unwrap();
    assert_eq!(annotations[MATCHED_ANNOTATION], "{\"name\":\"test-ws\",\"subset\":\"subset-b\"}");
    let affinity = serde_json::to_value(&pod.spec.as_ref().unwrap().affinity).unwrap();
    assert_eq!(
        affinity,
        json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["cn-zhangjiakou-b"]}]}]}}})
    );
}

#[test]
fn create_no_room_leaves_pod_and_status() {
    let (mut ws, mut pod) = (ws_demo(0), pod_demo());
    let before = ws.status.clone();
    let u = create(&mut ws, &mut pod);
    assert_eq!(u, SubsetUpdate::default());
    assert_eq!(ws.status, before);
    assert_eq!(pod, pod_demo());
}

#[test]
fn create_unlimited_injects_without_counting() {
    let (mut ws, mut pod) = (ws_demo(-1), pod_demo());
    let before = ws.status.clone();
    let u = create(&mut ws, &mut pod);
    assert!(!u.changed);
    assert_eq!(ws.status, before);
    assert_eq!(serde_json::to_value(&pod).unwrap(), injected_pod_a());
}

#[test]
fn create_already_recorded_is_not_counted_twice() {
    let mut ws = ws_demo(4);
    ws.status.as_mut().unwrap().versioned_subset_statuses.get_mut(VERSION_IGNORED).unwrap()[0]
        .creating_pods
        .insert("test-pod-1".into(), now());
    let before = ws.status.clone();
    let mut pod = pod_demo();
    let u = create(&mut ws, &mut pod);
    assert!(!u.changed);
    assert_eq!(ws.status, before);
    assert_eq!(serde_json::to_value(&pod).unwrap(), injected_pod_a());
}

/// `TestWorkloadSpreadCreatePodWithoutFullName`: the pod is recorded by a generated uid, which
/// the annotation carries.
#[test]
fn create_without_full_name() {
    let (mut ws, mut pod) = (ws_demo(5), pod_demo());
    pod.metadata.name = None;
    pod.metadata.generate_name = Some("test-pod-".into());
    let u = create(&mut ws, &mut pod);
    assert_eq!(u.generated_uid, "uid-1");
    assert!(versioned(&ws).creating_pods.contains_key("uid-1"));
    assert_eq!(
        pod.metadata.annotations.as_ref().unwrap()[MATCHED_ANNOTATION],
        "{\"name\":\"test-ws\",\"subset\":\"subset-a\",\"uid\":\"uid-1\"}"
    );
}

fn delete(ws: &mut WorkloadSpread, annotation: Option<&str>, op: Operation) -> SubsetUpdate {
    let injected = annotation.and_then(Injected::parse);
    update_subset_for_pod(ws, &pod_demo(), injected.as_ref(), op, &now(), 0, || unreachable!())
}

#[test]
fn delete_and_eviction_release_a_replica() {
    for op in [Operation::Delete, Operation::Eviction] {
        let mut ws = ws_demo(0);
        let u = delete(&mut ws, Some("{\"name\":\"test-ws\",\"subset\":\"subset-a\"}"), op);
        assert!(u.changed, "{op:?}");
        let s = versioned(&ws);
        assert_eq!(s.missing_replicas, 1);
        assert_eq!(s.deleting_pods.keys().collect::<Vec<_>>(), ["test-pod-1"]);
    }
}

#[test]
fn delete_rows_that_change_nothing() {
    // An annotation naming another subset (Go matches field names case-insensitively).
    let mut ws = ws_demo(0);
    let before = ws.status.clone();
    assert!(!delete(&mut ws, Some("{\"Name\":\"test-ws\",\"Subset\":\"subset-b\"}"), Operation::Delete).changed);
    assert_eq!(ws.status, before);
    // Already deleting.
    let mut ws = ws_demo(1);
    ws.status.as_mut().unwrap().versioned_subset_statuses.get_mut(VERSION_IGNORED).unwrap()[0]
        .deleting_pods
        .insert("test-pod-1".into(), now());
    let before = ws.status.clone();
    assert!(!delete(&mut ws, Some("{\"name\":\"test-ws\",\"subset\":\"subset-a\"}"), Operation::Delete).changed);
    assert_eq!(ws.status, before);
    // An unlimited subset.
    let mut ws = ws_demo(-1);
    let before = ws.status.clone();
    assert!(!delete(&mut ws, Some("{\"name\":\"test-ws\",\"subset\":\"subset-a\"}"), Operation::Delete).changed);
    assert_eq!(ws.status, before);
    assert_eq!(Injected::parse("not json"), None);
}

#[test]
fn versioned_statuses_are_initialised_from_max_replicas() {
    let mut ws = ws_demo(5);
    ws.status = None;
    let u = create(&mut ws, &mut pod_demo());
    assert!(u.changed);
    assert_eq!(versioned(&ws).missing_replicas, 4, "maxReplicas 5, one created");
}

/// `TestInitializedSubsetStatuses`: absolute numbers, percentages of the replicas (rounded up).
#[test]
fn initialized_subset_statuses() {
    let spread = |subsets: Value| -> WorkloadSpread {
        crate::compat::decode::from_value(&json!({"metadata": {"name": "w"}, "spec": {"subsets": subsets}})).unwrap()
    };
    let missing = |ws: &WorkloadSpread, replicas| {
        initial_subset_statuses(ws, replicas).iter().map(|s| s.missing_replicas).collect::<Vec<_>>()
    };
    let abs = spread(json!([{"name": "a", "maxReplicas": 1}, {"name": "b", "maxReplicas": 2}, {"name": "c"}]));
    assert_eq!(missing(&abs, 5), [1, 2, -1]);
    assert!(!has_percent_subset(&abs));
    let pct = spread(json!([{"name": "a", "maxReplicas": "20%"}, {"name": "b", "maxReplicas": "30%"}, {"name": "c"}]));
    assert!(has_percent_subset(&pct));
    assert_eq!(missing(&pct, 5), [1, 2, -1]);
    assert_eq!(missing(&pct, 0), [0, 0, -1], "workload not found: 0 replicas");
}

#[test]
fn patch_metadata_and_container_resources() {
    let pod = json!({"metadata": {"name": "test-pod-1"}, "spec": {"containers": [
        {"name": "nginx", "image": "nginx:1.15.1"}, {"name": "sidecar", "image": "nginx:1.15.1"}]}});
    let out = apply_pod_patch(
        &pod,
        &json!({"metadata": {"labels": {"subset": "subset-a"}, "annotations": {"subset": "subset-a"}}}),
    )
    .unwrap();
    assert_eq!(
        (out["metadata"]["labels"]["subset"].as_str(), out["metadata"]["annotations"]["subset"].as_str()),
        (Some("subset-a"), Some("subset-a"))
    );
    let out = apply_pod_patch(
        &pod,
        &json!({"spec": {"containers": [{"name": "sidecar", "resources": {"limits": {"cpu": "2", "memory": "8000Mi"}}}]}}),
    )
    .unwrap();
    assert_eq!(out["spec"]["containers"][0]["name"], "nginx");
    assert_eq!(out["spec"]["containers"][1]["resources"]["limits"], json!({"cpu": "2", "memory": "8000Mi"}));
}

/// A patch changing `priorityClassName` clears `priority`; one that does not keeps it.
#[test]
fn priority_class_patch_clears_priority() {
    let mut ws = ws_demo(5);
    ws.spec.subsets[0].patch = Some(json!({"spec": {"priorityClassName": "high"}}));
    let mut pod = pod_demo();
    pod.spec.as_mut().unwrap().priority = Some(10);
    inject(&ws, &mut pod, "subset-a", "").unwrap();
    let spec = pod.spec.as_ref().unwrap();
    assert_eq!((spec.priority_class_name.as_deref(), spec.priority), (Some("high"), None));
    let mut again = pod.clone();
    again.spec.as_mut().unwrap().priority = Some(1000);
    inject(&ws, &mut again, "subset-a", "").unwrap();
    assert_eq!(again.spec.as_ref().unwrap().priority, Some(1000));
    assert!(!inject(&ws, &mut pod, "nope", "").unwrap());
}

/// The required term is added to every term the pod already has.
#[test]
fn required_term_joins_existing_terms() {
    let ws = ws_demo(5);
    let mut pod = pod_demo();
    pod.spec.as_mut().unwrap().affinity = Some(
        serde_json::from_value(json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}]}}}))
        .unwrap(),
    );
    inject(&ws, &mut pod, "subset-a", "").unwrap();
    let terms = serde_json::to_value(&pod.spec.as_ref().unwrap().affinity).unwrap()["nodeAffinity"]
        ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        .clone();
    assert_eq!(terms.as_array().unwrap().len(), 2);
    assert_eq!(terms[0]["matchExpressions"].as_array().unwrap().len(), 3);
    assert_eq!(terms[0]["matchFields"].as_array().unwrap().len(), 1);
    assert_eq!(terms[1]["matchExpressions"].as_array().unwrap().len(), 2);
    assert_eq!(terms[1]["matchFields"].as_array().unwrap().len(), 2);
}

/// `TestFilterReference` and `TestIsReferenceEqual` (the direct rows).
#[test]
fn references() {
    let owner = |api: &str, kind: &str, name: &str| OwnerReference {
        api_version: api.into(),
        kind: kind.into(),
        name: name.into(),
        uid: "u".into(),
        controller: Some(true),
        ..Default::default()
    };
    assert!(is_workload_reference(&owner("apps.kruise.io/v1alpha1", "CloneSet", "c")));
    assert!(is_workload_reference(&owner("apps/v1", "ReplicaSet", "r")));
    assert!(is_workload_reference(&owner("apps.kruise.io/v1beta1", "StatefulSet", "s")));
    assert!(!is_workload_reference(&owner("apps/v1", "DaemonSet", "d")));
    let target = |api: &str, kind: &str, name: &str| TargetReference {
        api_version: api.into(),
        kind: kind.into(),
        name: name.into(),
    };
    let rows = [
        (target("apps/v1", "Deployment", "w"), owner("apps/v1", "Deployment", "w"), true),
        (target("apps.kruise.io/v1alpha1", "CloneSet", "w"), owner("apps.kruise.io/v1beta1", "CloneSet", "w"), true),
        (target("apps.kruise.io/v1alpha1", "Deployment", "w"), owner("apps/v1", "Deployment", "w"), false),
        (target("apps/v1", "Deployment", "w"), owner("apps/v1", "Deployment", "x"), false),
        (target("a/b/c", "Deployment", "w"), owner("apps/v1", "Deployment", "w"), false),
        (target("apps/v1", "Deployment", "w"), owner("a/b/c", "Deployment", "w"), false),
    ];
    for (t, o, want) in rows {
        assert_eq!(owner_matches(&t, &o), want, "{t:?} {o:?}");
    }
}

#[test]
fn ordinals_and_statefulset_subsets() {
    for i in 0..500 {
        assert_eq!(ordinal(&format!("sample-{i}")), i);
    }
    assert_eq!(ordinal("sample"), -1);
    let ws: WorkloadSpread = crate::compat::decode::from_value(&json!({"metadata": {"name": "w"},
        "spec": {"subsets": [{"name": "a", "maxReplicas": 2}, {"name": "b", "maxReplicas": 2}, {"name": "c"}]},
        "status": {"subsetStatuses": [{"name": "b", "replicas": 0, "missingReplicas": 0,
            "conditions": [{"type": "Schedulable", "status": "False"}]}]}}))
    .unwrap();
    let got: Vec<Option<String>> = (0..5).map(|i| statefulset_subset(&ws, &format!("s-{i}"))).collect();
    let want = |s: &str| Some(s.to_string());
    // b is unschedulable: 0-1 in a, the rest in c.
    assert_eq!(got, [want("a"), want("a"), want("c"), want("c"), want("c")]);
}

/// `TestGetPodVersion`.
#[test]
fn pod_versions() {
    let pod = |kind: &str, labels: Value| -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p", "labels": labels,
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": kind, "name": "o", "uid": "u", "controller": true}]}}))
        .unwrap()
    };
    assert_eq!(pod_version(&pod("ReplicaSet", json!({"controller-revision-hash": "5474f59575"}))), "5474f59575");
    assert_eq!(
        pod_version(&pod("ReplicaSet", json!({"controller-revision-hash": "workload-xyz-5474f59575"}))),
        "5474f59575"
    );
    assert_eq!(pod_version(&pod("ReplicaSet", json!({"pod-template-hash": "5474f59575"}))), "5474f59575");
    assert_eq!(
        pod_version(&pod(
            "ReplicaSet",
            json!({"pod-template-hash": "5474f59575", "controller-revision-hash": "workload-xyz-575"})
        )),
        "5474f59575"
    );
    assert_eq!(pod_version(&pod("CloneSet", json!({"pod-template-hash": "5474f59575"}))), VERSION_IGNORED);
}

#[test]
fn target_filter() {
    let labels: BTreeMap<String, String> = [("app".to_string(), "web".to_string())].into();
    assert_eq!(selects_pod(None, &labels), Ok(true));
    let filter = |sel: Value| -> TargetFilter { serde_json::from_value(json!({"selector": sel})).unwrap() };
    assert_eq!(selects_pod(Some(&filter(json!({"matchLabels": {"app": "web"}}))), &labels), Ok(true));
    assert_eq!(selects_pod(Some(&filter(json!({"matchLabels": {"app": "api"}}))), &labels), Ok(false));
    assert_eq!(selects_pod(Some(&TargetFilter::default()), &labels), Ok(false), "no selector selects nothing");
}
