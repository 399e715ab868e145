//! Tables ported from kruise's `container_launch_priority_controller_test.go` (`TestReconcile`,
//! `TestFindNextPriorities`, `TestHandle`, `TestShouldEnqueue`) and
//! `container_launch_priority_test.go` (`TestGetKey`, `TestGeneratePriorityEnv`,
//! `TestGetContainerPriority`, `..._EdgeCases`, `TestIntegration_GenerateAndParse`), row by row,
//! plus what our round adds (the barrier created with its first key and its owner, inactive pods).

use super::*;
use k8s_openapi::api::core::v1::{ContainerStatus, PodSpec, PodStatus};

const POD: &str = "fake-pod";

/// A container with kruise's generated barrier env of `priority`, or none.
fn container(name: &str, priority: Option<i64>) -> Container {
    Container { name: name.into(), env: priority.map(|p| vec![barrier_env(p, POD)]), ..Default::default() }
}

fn pod(containers: Vec<Container>, ready: &[(&str, bool)]) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(POD.into()),
            namespace: Some("default".into()),
            uid: Some("uid-1".into()),
            ..Default::default()
        },
        spec: Some(PodSpec { containers, ..Default::default() }),
        status: Some(PodStatus {
            container_statuses: Some(
                ready
                    .iter()
                    .map(|(n, r)| ContainerStatus { name: (*n).into(), ready: *r, ..Default::default() })
                    .collect(),
            ),
            ..Default::default()
        }),
    }
}

/// kruise's six containers: a=3, b=5, c=0, d (none), e=-1, f=`f`.
fn six(f: i64) -> Vec<Container> {
    vec![
        container("a", Some(3)),
        container("b", Some(5)),
        container("c", Some(0)),
        container("d", None),
        container("e", Some(-1)),
        container("f", Some(f)),
    ]
}

fn barrier(priorities: &[i64]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta { name: Some(barrier_name(POD)), namespace: Some("default".into()), ..Default::default() },
        data: Some(priorities.iter().map(|p| (barrier_key(*p), "true".to_string())).collect()),
        ..Default::default()
    }
}

fn keys(b: &ConfigMap) -> BTreeSet<String> {
    b.data.iter().flatten().map(|(k, _)| k.clone()).collect()
}

/// Applies a plan as the API server would: the barrier created or patched, the pod annotated.
fn apply(p: &Plan, pod: &mut Pod, barrier: &mut Option<ConfigMap>) {
    if let Some(cm) = &p.create {
        assert!(barrier.is_none(), "created over an existing barrier");
        *barrier = Some(cm.clone());
    }
    if let Some(key) = &p.release {
        let b = barrier.as_mut().expect("a release patches an existing barrier");
        b.data.get_or_insert_with(BTreeMap::new).insert(key.clone(), "true".into());
        // The patch says the same.
        assert_eq!(release_patch(key), json!({"data": {key.as_str(): "true"}}));
    }
    if p.complete {
        let mut v = serde_json::to_value(&*pod).unwrap();
        json_patch::merge(&mut v, &completed_patch());
        *pod = serde_json::from_value(v).unwrap();
    }
}

#[test]
fn get_key() {
    for (p, want) in
        [(5, "p_5"), (-3, "p_-3"), (0, "p_0"), (2147483647, "p_2147483647"), (-2147483647, "p_-2147483647")]
    {
        assert_eq!(barrier_key(p), want);
    }
}

#[test]
fn generate_priority_env() {
    for (p, pod, name, key) in [
        (3, "test-pod", "test-pod-barrier", "p_3"),
        (-1, "my-app-deployment-abc123", "my-app-deployment-abc123-barrier", "p_-1"),
        (0, "zero-pod", "zero-pod-barrier", "p_0"),
        (1, "", "-barrier", "p_1"),
    ] {
        let env = barrier_env(p, pod);
        assert_eq!(
            serde_json::to_value(&env).unwrap(),
            json!({"name": "KRUISE_CONTAINER_BARRIER", "valueFrom": {"configMapKeyRef": {"name": name, "key": key}}}),
            "{pod}"
        );
    }
}

fn with_env(env: Value) -> Container {
    serde_json::from_value(json!({"name": "test-container", "env": env})).unwrap()
}

fn keyed(key: &str) -> Value {
    json!({"name": "KRUISE_CONTAINER_BARRIER", "valueFrom": {"configMapKeyRef": {"key": key}}})
}

/// `TestGetContainerPriority` and `TestGetContainerPriority_EdgeCases`.
#[test]
fn get_container_priority() {
    let rows: [(&str, Container, Option<i64>); 11] = [
        ("valid priority env", with_env(json!([keyed("p_5")])), Some(5)),
        ("negative priority", with_env(json!([keyed("p_-3")])), Some(-3)),
        ("zero priority", with_env(json!([keyed("p_0")])), Some(0)),
        ("no priority env", with_env(json!([{"name": "OTHER_ENV", "value": "some-value"}])), None),
        ("no env vars", Container { name: "test-container".into(), ..Default::default() }, None),
        (
            "multiple env vars including priority",
            with_env(
                json!([{"name": "FIRST_ENV", "value": "value1"}, keyed("p_10"), {"name": "LAST_ENV", "value": "value2"}]),
            ),
            Some(10),
        ),
        // Edge cases. kruise panics on the next one (slicing "p" at 2); we read 0.
        ("invalid key format (too short)", with_env(json!([keyed("p")])), Some(0)),
        ("invalid key format (wrong prefix)", with_env(json!([keyed("x_5")])), Some(5)),
        ("non-numeric priority", with_env(json!([keyed("p_abc")])), Some(0)),
        ("very large priority", with_env(json!([keyed("p_2147483647")])), Some(2147483647)),
        // kruise panics (nil ValueFrom); we see no priority.
        (
            "env var but no ValueFrom",
            with_env(json!([{"name": "KRUISE_CONTAINER_BARRIER", "value": "direct-value"}])),
            None,
        ),
    ];
    for (name, c, want) in rows {
        assert_eq!(container_priority(&c), want, "{name}");
    }
    // strconv.Atoi: a sign is allowed, overflow clamps.
    assert_eq!(container_priority(&with_env(json!([keyed("p_+7")]))), Some(7));
    assert_eq!(container_priority(&with_env(json!([keyed("p_99999999999999999999")]))), Some(i64::MAX));
    assert_eq!(container_priority(&with_env(json!([keyed("p_-99999999999999999999")]))), Some(i64::MIN));
    assert_eq!(container_priority(&with_env(json!([keyed("p_-")]))), Some(0));
    assert_eq!(container_priority(&with_env(json!([keyed("p_ 1")]))), Some(0));
}

#[test]
fn generate_and_parse_round_trip() {
    for (p, pod) in
        [(42, "test-pod"), (-15, "negative-pod"), (0, "zero-pod"), (2147483647, "max-pod"), (-2147483647, "min-pod")]
    {
        let env = barrier_env(p, pod);
        let c = Container { name: "test-container".into(), env: Some(vec![env.clone()]), ..Default::default() };
        assert_eq!(container_priority(&c), Some(p));
        let r = env.value_from.unwrap().config_map_key_ref.unwrap();
        assert_eq!((r.name, r.key), (format!("{pod}-barrier"), barrier_key(p)));
    }
}

/// `TestReconcile`: pod0 (one container, p_100) and pod1 (p_100 and p_1000), both with an empty
/// barrier: pod0 gets p_100 (and, its only priority, completes), pod1 gets p_1000 first.
#[test]
fn reconcile() {
    let mut p0 = pod(vec![with_env(json!([keyed("p_100")]))], &[("testContainer1", false)]);
    p0.spec.as_mut().unwrap().containers[0].name = "testContainer1".into();
    let empty = barrier(&[]);
    let plan0 = plan(&p0, Some(&empty));
    assert_eq!(plan0, Plan { release: Some("p_100".into()), complete: true, ..Plan::default() });

    let mut c2 = with_env(json!([keyed("p_1000")]));
    c2.name = "testContainer2".into();
    let mut c1 = with_env(json!([keyed("p_100")]));
    c1.name = "testContainer1".into();
    let p1 = pod(vec![c1, c2], &[("testContainer2", false), ("testContainer1", false)]);
    assert_eq!(plan(&p1, Some(&empty)), Plan { release: Some("p_1000".into()), ..Plan::default() });
}

#[test]
fn find_next_priorities() {
    let rows = [
        (pod(six(4), &[("a", false), ("b", true)]), vec![-1, 0, 3, 4]),
        (pod(six(3), &[("a", false), ("b", true), ("f", true)]), vec![-1, 0, 3]),
    ];
    for (i, (p, want)) in rows.into_iter().enumerate() {
        assert_eq!(next_priorities(&p), want, "#{i}");
    }
}

/// `TestHandle`: the barrier's keys and the completed mark after one round and after a second
/// (kruise runs `handle` twice per row: the round is idempotent).
#[test]
fn handle() {
    /// (container readiness, keys before, keys after, completed after).
    type Row<'a> = (Vec<(&'a str, bool)>, &'a [i64], &'a [i64], bool);
    let rows: [Row; 4] = [
        (vec![], &[], &[5], false),
        (vec![("a", false), ("b", true), ("f", true)], &[5, 3], &[5, 3], false),
        (vec![("a", true), ("b", true), ("f", true)], &[5, 3], &[5, 3, 0], false),
        (vec![("a", true), ("b", true), ("c", true), ("f", true)], &[5, 3, 0], &[5, 3, 0, -1], true),
    ];
    for (i, (ready, existed, want, want_completed)) in rows.into_iter().enumerate() {
        let mut p = pod(six(3), &ready);
        let mut b = Some(barrier(existed));
        for round in 0..2 {
            let plan = plan(&p, b.as_ref());
            apply(&plan, &mut p, &mut b);
            let want: BTreeSet<String> = want.iter().map(|p| barrier_key(*p)).collect();
            assert_eq!(keys(b.as_ref().unwrap()), want, "#{i} round {round}");
            assert_eq!(completed(&p), want_completed, "#{i} round {round}");
        }
    }
}

/// `TestShouldEnqueue`; the watch filter ([`wants_launch`]) passes every row kruise enqueues.
#[test]
fn should_enqueue() {
    let all_but_c = [("a", true), ("b", true), ("f", true)];
    let all = [("a", true), ("b", true), ("c", true), ("f", true)];
    let mut done = pod(six(3), &[("a", true), ("b", true), ("c", true), ("3", true), ("f", false)]);
    done.metadata.annotations = Some(BTreeMap::from([(COMPLETED_ANNOTATION.to_string(), "true".to_string())]));
    let rows: [(Pod, &[i64], bool); 8] = [
        (pod(six(3), &[]), &[], true),
        (pod(six(3), &[]), &[5], false),
        (pod(six(3), &[("a", false), ("b", true), ("f", true)]), &[5, 3], false),
        (pod(six(3), &all_but_c), &[5, 3], true),
        (pod(six(3), &all_but_c), &[5, 3, 0], false),
        (pod(six(3), &all), &[5, 3, 0], true),
        (pod(six(3), &all), &[5, 3, 0, -1], false),
        (done, &[5, 3, 0, -1], false),
    ];
    for (i, (p, existed, want)) in rows.into_iter().enumerate() {
        assert_eq!(needs_release(&p, Some(&barrier(existed))), want, "#{i}");
        if want {
            assert!(wants_launch(&p), "#{i}: the filter lets it through");
        }
        // A barrier that cannot be read: enqueue whatever the filter passes.
        assert_eq!(needs_release(&p, None), wants_launch(&p), "#{i}");
    }
    // The filter alone: completed, ContainersReady, or no priority left are not queued.
    let mut ready = pod(six(3), &[]);
    ready.status.as_mut().unwrap().conditions = Some(vec![k8s_openapi::api::core::v1::PodCondition {
        type_: "ContainersReady".into(),
        status: "True".into(),
        ..Default::default()
    }]);
    assert!(!wants_launch(&ready));
    assert!(!wants_launch(&pod(vec![container("x", None), container("y", None)], &[])));
    assert!(wants_launch(&pod(six(3), &[])));
}

/// No barrier yet: it is created with the first key and an ownerReference to the pod, exactly as
/// kruise's (apiVersion v1, kind Pod, name, uid, nothing else).
#[test]
fn a_missing_barrier_is_created_with_the_first_key_and_owned_by_the_pod() {
    let p = pod(six(3), &[]);
    let plan = plan(&p, None);
    let cm = plan.create.clone().unwrap();
    assert_eq!(
        serde_json::to_value(&cm).unwrap(),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fake-pod-barrier", "namespace": "default",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "fake-pod", "uid": "uid-1"}]},
            "data": {"p_5": "true"}})
    );
    assert_eq!((plan.release, plan.complete), (None, false));
    // One priority only: created and completed in one round.
    let single = pod(vec![container("a", Some(7)), container("b", None)], &[]);
    let plan = super::plan(&single, None);
    assert_eq!(plan.create.and_then(|c| c.data).unwrap(), BTreeMap::from([("p_7".into(), "true".into())]));
    assert!(plan.complete);
    // Nothing waits (every priority ready) and no barrier: only the mark, no ConfigMap.
    let started = pod(vec![container("a", Some(0)), container("b", Some(-1))], &[("a", true), ("b", true)]);
    assert_eq!(super::plan(&started, None), Plan { complete: true, ..Plan::default() });
}

/// The webhook's Ordered pod (priorities 0, -1, -2 in container order), driven round after round
/// as the kubelet readies what was released: one priority at a time, in order, then completed
/// and never planned again.
#[test]
fn an_ordered_pod_is_released_one_priority_at_a_time() {
    let mut p = pod(vec![container("c0", Some(0)), container("c1", Some(-1)), container("c2", Some(-2))], &[]);
    let mut b: Option<ConfigMap> = None;
    let mut released_order = Vec::new();
    for _ in 0..10 {
        let plan = plan(&p, b.as_ref());
        if plan.is_empty() {
            break;
        }
        let before = b.as_ref().map(keys).unwrap_or_default();
        apply(&plan, &mut p, &mut b);
        let after = b.as_ref().map(keys).unwrap_or_default();
        let new: Vec<String> = after.difference(&before).cloned().collect();
        assert!(new.len() <= 1, "one priority per round: {new:?}");
        released_order.extend(new);
        // Nothing more before the released containers are ready.
        assert!(super::plan(&p, b.as_ref()).is_empty() || completed(&p));
        // The kubelet starts and readies every container whose key is there.
        let statuses: Vec<(String, bool)> = p
            .spec
            .as_ref()
            .unwrap()
            .containers
            .iter()
            .map(|c| (c.name.clone(), container_priority(c).is_some_and(|x| after.contains(&barrier_key(x)))))
            .collect();
        p.status.as_mut().unwrap().container_statuses = Some(
            statuses.into_iter().map(|(name, ready)| ContainerStatus { name, ready, ..Default::default() }).collect(),
        );
    }
    assert_eq!(released_order, ["p_0", "p_-1", "p_-2"]);
    assert!(completed(&p));
    assert!(!wants_launch(&p));
}

#[test]
fn inactive_pods_get_nothing() {
    let mut deleting = pod(six(3), &[]);
    deleting.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
    let mut failed = pod(six(3), &[]);
    failed.status.as_mut().unwrap().phase = Some("Failed".into());
    for p in [deleting, failed] {
        assert!(!wants_launch(&p));
        assert!(plan(&p, None).is_empty());
        assert!(plan(&p, Some(&barrier(&[]))).is_empty());
    }
}

/// A barrier left by an earlier pod of the same name (its owner uid differs) is deleted, by uid,
/// before anything else; one owned by this pod, or by nothing, is used.
#[test]
fn a_barrier_of_an_earlier_pod_of_the_same_name_is_replaced() {
    let p = pod(six(3), &[]);
    let owned_by = |uid: Option<&str>| {
        let mut b = barrier(&[5, 3, 0, -1]);
        b.metadata.uid = Some("cm-uid".into());
        b.metadata.owner_references = uid.map(|u| {
            vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Pod".into(),
                name: POD.into(),
                uid: u.into(),
                ..Default::default()
            }]
        });
        b
    };
    assert_eq!(plan(&p, Some(&owned_by(Some("old-uid")))), Plan { replace: Some("cm-uid".into()), ..Plan::default() });
    assert_eq!(plan(&p, Some(&owned_by(Some("uid-1")))), Plan { complete: true, ..Plan::default() });
    assert_eq!(plan(&p, Some(&owned_by(None))), Plan { complete: true, ..Plan::default() });
}
