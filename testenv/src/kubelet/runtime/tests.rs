use super::*;
use serde_json::json;

struct Counter(u32);

impl Ids for Counter {
    fn container_id(&mut self) -> String {
        self.0 += 1;
        format!("containerd://{:064}", self.0)
    }
}

fn pod(v: serde_json::Value) -> Pod {
    serde_json::from_value(v).unwrap_or_default()
}

fn web(image: &str) -> Pod {
    pod(json!({
        "metadata": {"name": "web-0", "namespace": "ns", "generation": 1},
        "spec": {"nodeName": "n", "containers": [{"name": "app", "image": image}, {"name": "log", "image": "busybox"}]}
    }))
}

fn settings(delay_ms: u64) -> RuntimeSettings {
    RuntimeSettings { ready_delay: Duration::from_millis(delay_ms), pull_failures: vec!["does-not-exist".into()] }
}

fn empty(now: Timestamp) -> PodRuntime {
    PodRuntime {
        pod_ip: "10.244.0.2".into(),
        host_ip: "198.19.0.1".into(),
        start_time: now,
        init: BTreeMap::new(),
        containers: BTreeMap::new(),
    }
}

fn at(s: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + s).unwrap_or_default()
}

fn cond<'a>(s: &'a PodStatus, t: &str) -> &'a PodCondition {
    s.conditions.iter().flatten().find(|c| c.type_ == t).unwrap_or_else(|| unreachable!("no condition {t}"))
}

#[test]
fn images_as_containerd_reports_them() {
    for (image, want) in [
        ("nginx", "docker.io/library/nginx:latest"),
        ("nginx:1.25", "docker.io/library/nginx:1.25"),
        ("library/nginx:1.25", "docker.io/library/nginx:1.25"),
        ("openkruise/kruise-manager:v1.8.0", "docker.io/openkruise/kruise-manager:v1.8.0"),
        ("registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.10"),
        ("localhost/app", "localhost/app:latest"),
        ("localhost:5000/app", "localhost:5000/app:latest"),
        ("nginx@sha256:abcd", "docker.io/library/nginx@sha256:abcd"),
    ] {
        assert_eq!(normalize_image(image), want, "{image}");
    }
    assert!(image_id("docker.io/library/nginx:1.25").starts_with("docker.io/library/nginx@sha256:"));
    assert_ne!(image_id("docker.io/library/nginx:1.25"), image_id("docker.io/library/nginx:1.26"));
    assert_eq!(image_id("docker.io/library/nginx@sha256:abcd"), "docker.io/library/nginx@sha256:abcd");
    assert_eq!(image_id("localhost:5000/app:latest").split('@').next(), Some("localhost:5000/app"));
}

#[test]
fn a_new_pod_runs_then_turns_ready_after_the_delay() {
    let mut ids = Counter(0);
    let p = web("nginx:1.25");
    let rt = advance(&p, empty(at(0)), &settings(2000), &ConfigMapKeys::new(), at(0), &mut ids);
    let (status, wake) = render(&p, &rt, &settings(2000), at(0));
    assert_eq!(status.phase.as_deref(), Some("Running"));
    let app = &status.container_statuses.as_ref().unwrap_or_else(|| unreachable!())[0];
    assert_eq!(app.image, "docker.io/library/nginx:1.25");
    assert!(app.image_id.starts_with("docker.io/library/nginx@sha256:"));
    assert_eq!(app.container_id.as_deref(), Some(format!("containerd://{:064}", 1).as_str()));
    assert_eq!((app.ready, app.started, app.restart_count), (false, Some(true), 0));
    assert_eq!(cond(&status, "Ready").status, "False");
    assert_eq!(cond(&status, "Ready").message.as_deref(), Some("containers with unready status: [app log]"));
    assert_eq!(wake, Some(at(2)));

    let (status, wake) = render(&p, &rt, &settings(2000), at(2));
    assert_eq!(cond(&status, "ContainersReady").status, "True");
    assert_eq!(cond(&status, "Ready").status, "True");
    assert_eq!(cond(&status, "Ready").observed_generation, Some(1));
    assert_eq!(wake, None);
    assert_eq!(
        advance(&p, rt.clone(), &settings(2000), &ConfigMapKeys::new(), at(5), &mut ids),
        rt,
        "nothing changes by itself"
    );
}

#[test]
fn readiness_gates_hold_ready_until_their_condition_is_true() {
    let mut p = web("nginx");
    let spec = p.spec.as_mut().unwrap_or_else(|| unreachable!());
    spec.readiness_gates =
        Some(vec![k8s_openapi::api::core::v1::PodReadinessGate { condition_type: "InPlaceUpdateReady".into() }]);
    let rt = advance(&p, empty(at(0)), &settings(0), &ConfigMapKeys::new(), at(0), &mut Counter(0));
    let (status, _) = render(&p, &rt, &settings(0), at(0));
    assert_eq!(cond(&status, "ContainersReady").status, "True");
    let ready = cond(&status, "Ready");
    assert_eq!((ready.status.as_str(), ready.reason.as_deref()), ("False", Some("ReadinessGatesNotReady")));
    assert_eq!(
        ready.message.as_deref(),
        Some("corresponding condition of pod readiness gate \"InPlaceUpdateReady\" does not exist.")
    );
    for (gate, want) in [("False", "False"), ("True", "True")] {
        p.status = Some(PodStatus {
            conditions: Some(vec![PodCondition {
                type_: "InPlaceUpdateReady".into(),
                status: gate.into(),
                ..Default::default()
            }]),
            ..Default::default()
        });
        let (status, _) = render(&p, &rt, &settings(0), at(1));
        assert_eq!(cond(&status, "Ready").status, want, "gate {gate}");
        assert_eq!(cond(&status, "InPlaceUpdateReady").status, gate, "a controller's condition is kept");
    }
}

#[test]
fn an_image_change_restarts_only_that_container() {
    let mut ids = Counter(0);
    let before = web("nginx:1.25");
    let rt = advance(&before, empty(at(0)), &settings(1000), &ConfigMapKeys::new(), at(0), &mut ids);
    let (old, _) = render(&before, &rt, &settings(1000), at(10));
    let after = web("nginx:1.26");
    let rt2 = advance(&after, rt.clone(), &settings(1000), &ConfigMapKeys::new(), at(20), &mut ids);
    let (status, wake) = render(&after, &rt2, &settings(1000), at(20));
    let (o, n) = (
        &old.container_statuses.as_ref().unwrap_or_else(|| unreachable!())[..],
        &status.container_statuses.as_ref().unwrap_or_else(|| unreachable!())[..],
    );
    assert_eq!(n[0].image, "docker.io/library/nginx:1.26");
    assert_ne!(n[0].image_id, o[0].image_id);
    assert_ne!(n[0].container_id, o[0].container_id);
    assert_eq!(n[0].restart_count, 1);
    assert!(!n[0].ready, "a NotReady window after the restart");
    let last = n[0].last_state.as_ref().and_then(|s| s.terminated.as_ref()).unwrap_or_else(|| unreachable!());
    assert_eq!(last.container_id, o[0].container_id);
    assert_eq!(n[1], o[1], "the other container is untouched");
    assert_eq!(cond(&status, "Ready").status, "False");
    assert_eq!(wake, Some(at(21)));
    let (status, _) = render(&after, &rt2, &settings(1000), at(21));
    assert_eq!(cond(&status, "Ready").status, "True");
}

#[test]
fn failing_pulls_wait_and_back_off_and_recover_when_the_image_is_fixed() {
    let mut ids = Counter(0);
    let bad = web("registry.example/does-not-exist:1");
    let rt = advance(&bad, empty(at(0)), &settings(0), &ConfigMapKeys::new(), at(0), &mut ids);
    let (status, wake) = render(&bad, &rt, &settings(0), at(0));
    let app = &status.container_statuses.as_ref().unwrap_or_else(|| unreachable!())[0];
    let waiting = app.state.as_ref().and_then(|s| s.waiting.as_ref()).unwrap_or_else(|| unreachable!());
    assert_eq!(waiting.reason.as_deref(), Some("ErrImagePull"));
    assert_eq!(wake, Some(at(1)));
    let (status, _) = render(&bad, &rt, &settings(0), at(1));
    let app = &status.container_statuses.as_ref().unwrap_or_else(|| unreachable!())[0];
    let waiting = app.state.as_ref().and_then(|s| s.waiting.as_ref()).unwrap_or_else(|| unreachable!());
    assert_eq!(waiting.reason.as_deref(), Some("ImagePullBackOff"));
    assert_eq!(status.phase.as_deref(), Some("Running"), "the other container runs");
    assert_eq!(cond(&status, "Ready").status, "False");

    let good = web("nginx");
    let rt2 = advance(&good, rt, &settings(0), &ConfigMapKeys::new(), at(5), &mut ids);
    let (status, _) = render(&good, &rt2, &settings(0), at(5));
    assert_eq!(cond(&status, "Ready").status, "True");
    assert_eq!(status.container_statuses.as_ref().unwrap_or_else(|| unreachable!())[0].restart_count, 0);
}

#[test]
fn init_containers_complete_and_sidecars_keep_running() {
    let p = pod(json!({
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {
            "initContainers": [
                {"name": "setup", "image": "busybox"},
                {"name": "proxy", "image": "envoy", "restartPolicy": "Always"}
            ],
            "containers": [{"name": "app", "image": "nginx"}]
        }
    }));
    let rt = advance(&p, empty(at(0)), &settings(0), &ConfigMapKeys::new(), at(0), &mut Counter(0));
    let (status, _) = render(&p, &rt, &settings(0), at(0));
    let init = status.init_container_statuses.as_ref().unwrap_or_else(|| unreachable!());
    assert!(init[0].state.as_ref().and_then(|s| s.terminated.as_ref()).is_some());
    assert!(init[1].state.as_ref().and_then(|s| s.running.as_ref()).is_some());
    assert_eq!(cond(&status, "Initialized").status, "True");
    assert_eq!(cond(&status, "Ready").status, "True");

    let blocked = pod(json!({
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {
            "initContainers": [{"name": "setup", "image": "does-not-exist"}],
            "containers": [{"name": "app", "image": "nginx"}]
        }
    }));
    let rt = advance(&blocked, empty(at(0)), &settings(0), &ConfigMapKeys::new(), at(0), &mut Counter(0));
    let (status, _) = render(&blocked, &rt, &settings(0), at(0));
    assert_eq!(status.phase.as_deref(), Some("Pending"));
    assert_eq!(cond(&status, "Initialized").status, "False");
    let app = &status.container_statuses.as_ref().unwrap_or_else(|| unreachable!())[0];
    let waiting = app.state.as_ref().and_then(|s| s.waiting.as_ref()).unwrap_or_else(|| unreachable!());
    assert_eq!(waiting.reason.as_deref(), Some("PodInitializing"));
}

#[test]
fn rendering_is_stable_so_a_second_pass_writes_nothing() {
    let p = web("nginx");
    let rt = advance(&p, empty(at(0)), &settings(0), &ConfigMapKeys::new(), at(0), &mut Counter(0));
    let (first, _) = render(&p, &rt, &settings(0), at(0));
    let mut observed = p.clone();
    // What the apiserver hands back: the same status through JSON.
    let json = serde_json::to_value(&first).unwrap_or_default();
    observed.status = serde_json::from_value(json).ok();
    let (second, _) = render(&observed, &rt, &settings(0), at(30));
    assert!(same_kubelet_fields(&first, &second), "{first:?}\n{second:?}");
    assert!(same_kubelet_fields(observed.status.as_ref().unwrap_or_else(|| unreachable!()), &second));
}

fn waiting(status: &PodStatus, i: usize) -> (Option<String>, Option<String>) {
    let s = &status.container_statuses.as_ref().unwrap_or_else(|| unreachable!())[i];
    let w = s.state.as_ref().and_then(|s| s.waiting.as_ref());
    (w.and_then(|w| w.reason.clone()), w.and_then(|w| w.message.clone()))
}

fn keys(cms: &[(&str, &[&str])]) -> ConfigMapKeys {
    cms.iter().map(|(n, ks)| ((*n).to_string(), ks.iter().map(|k| (*k).to_string()).collect())).collect()
}

/// An env that reads a missing ConfigMap or key holds that container in
/// `CreateContainerConfigError` (the kubelet's messages) while the others start; it starts once the
/// key exists, and a running container is not touched when the key goes.
#[test]
fn a_missing_config_map_key_holds_its_container_until_the_key_exists() {
    let p = pod(json!({
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"nodeName": "n", "containers": [
            {"name": "first", "image": "nginx",
             "env": [{"name": "B", "valueFrom": {"configMapKeyRef": {"name": "p-barrier", "key": "p_0"}}}]},
            {"name": "second", "image": "nginx",
             "env": [{"name": "B", "valueFrom": {"configMapKeyRef": {"name": "p-barrier", "key": "p_-1"}}}]},
            {"name": "plain", "image": "nginx"},
            {"name": "optional", "image": "nginx",
             "env": [{"name": "O", "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "k", "optional": true}}}],
             "envFrom": [{"configMapRef": {"name": "nope", "optional": true}}]}
        ]}
    }));
    let mut ids = Counter(0);
    // No ConfigMap at all.
    let rt = advance(&p, empty(at(0)), &settings(0), &ConfigMapKeys::new(), at(0), &mut ids);
    let (status, _) = render(&p, &rt, &settings(0), at(0));
    let reason = Some("CreateContainerConfigError".to_string());
    assert_eq!(waiting(&status, 0), (reason.clone(), Some("configmap \"p-barrier\" not found".into())));
    assert_eq!(waiting(&status, 1).0, reason);
    assert_eq!(waiting(&status, 2).0, None, "a container without such an env starts");
    assert_eq!(waiting(&status, 3).0, None, "optional references do not hold a container");
    let first = &status.container_statuses.as_ref().unwrap_or_else(|| unreachable!())[0];
    assert_eq!((first.ready, first.started, first.image_id.as_str()), (false, Some(false), ""));
    assert_eq!(status.phase.as_deref(), Some("Running"));
    assert_eq!(cond(&status, "ContainersReady").status, "False");

    // The ConfigMap with the first key: the first starts, the second still waits, on the key.
    let cms = keys(&[("p-barrier", &["p_0"])]);
    let rt = advance(&p, rt, &settings(0), &cms, at(1), &mut ids);
    let (status, _) = render(&p, &rt, &settings(0), at(1));
    assert_eq!(waiting(&status, 0).0, None);
    assert!(matches!(rt.containers["first"].state, RunState::Running { started_at, .. } if started_at == at(1)));
    assert_eq!(waiting(&status, 1), (reason, Some("couldn't find key p_-1 in ConfigMap ns/p-barrier".into())));

    // Both keys: everything runs and the pod turns ready; restartCount stays 0.
    let cms = keys(&[("p-barrier", &["p_0", "p_-1"])]);
    let rt = advance(&p, rt, &settings(0), &cms, at(2), &mut ids);
    let (status, _) = render(&p, &rt, &settings(0), at(2));
    assert_eq!(cond(&status, "Ready").status, "True");
    assert!(matches!(rt.containers["second"].state, RunState::Running { started_at, .. } if started_at == at(2)));
    assert!(status.container_statuses.iter().flatten().all(|s| s.restart_count == 0));

    // The ConfigMap goes: running containers are not touched (the env was read at creation).
    let again = advance(&p, rt.clone(), &settings(0), &ConfigMapKeys::new(), at(3), &mut ids);
    assert_eq!(again, rt);
}

/// `envFrom` of a missing ConfigMap holds the container too, and an image change of a container
/// whose key is gone waits in `CreateContainerConfigError` (its old instance kept as lastState).
#[test]
fn env_from_a_missing_config_map_and_a_restart_without_the_key() {
    let p = pod(json!({
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"nodeName": "n", "containers": [
            {"name": "app", "image": "nginx:1", "envFrom": [{"configMapRef": {"name": "settings"}}]}]}
    }));
    let mut ids = Counter(0);
    let rt = advance(&p, empty(at(0)), &settings(0), &ConfigMapKeys::new(), at(0), &mut ids);
    let (status, _) = render(&p, &rt, &settings(0), at(0));
    assert_eq!(waiting(&status, 0).1.as_deref(), Some("configmap \"settings\" not found"));
    let cms = keys(&[("settings", &[])]);
    let rt = advance(&p, rt, &settings(0), &cms, at(1), &mut ids);
    assert!(matches!(rt.containers["app"].state, RunState::Running { .. }));
    let mut updated = p.clone();
    if let Some(spec) = updated.spec.as_mut() {
        spec.containers[0].image = Some("nginx:2".into());
    }
    let rt = advance(&updated, rt, &settings(0), &ConfigMapKeys::new(), at(2), &mut ids);
    assert!(matches!(rt.containers["app"].state, RunState::ConfigError { .. }));
    assert!(rt.containers["app"].last.is_some(), "the stopped instance is lastState");
    assert_eq!(rt.containers["app"].restart_count, 1, "counted when the old instance stopped");
    let rt = advance(&updated, rt, &settings(0), &cms, at(3), &mut ids);
    assert!(matches!(rt.containers["app"].state, RunState::Running { .. }));
    assert_eq!(rt.containers["app"].restart_count, 1);
}
