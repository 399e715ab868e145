//! The injection decision (spec §4.3–§4.7) on typed pods and SidecarSets stored as the view
//! holds them (defaulted, with hashes): which containers go where, what each sidecar is built
//! with, and that planning an injected pod again changes nothing. The handler's side (decoding,
//! the patch, 500 on errors) is in `tests/injection*.rs`.

use serde_json::{Value, json};

use super::*;
use crate::core::sidecar::defaults::default_sidecarset;

const NOW: &str = "2024-01-01T00:00:00Z";

type Sets = Vec<Arc<SidecarSet>>;

fn set(name: &str, spec: Value) -> Arc<SidecarSet> {
    let mut s: SidecarSet = serde_json::from_value(
        json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet", "metadata": {"name": name}, "spec": spec}),
    )
    .unwrap();
    default_sidecarset(&mut s).unwrap();
    Arc::new(s)
}

/// A set selecting `app=web` with these containers.
fn web_set(name: &str, containers: Value) -> Arc<SidecarSet> {
    set(name, json!({"selector": {"matchLabels": {"app": "web"}}, "containers": containers}))
}

fn pod(spec: Value) -> Pod {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "labels": {"app": "web"}}, "spec": spec}))
    .unwrap()
}

fn plan(pod: &Pod, sets: &[Arc<SidecarSet>], sort_by_name: bool) -> Result<InjectionPlan, InjectionError> {
    let labels = BTreeMap::from([("kubernetes.io/metadata.name".to_string(), "default".to_string())]);
    let revisions = Vec::new;
    let input = InjectionInput { namespace_labels: &labels, revisions: &revisions, draw: 0.5, now: NOW, sort_by_name };
    plan_injection(pod, sets, &input)
}

/// The pod after the plan, and a check that planning it again changes nothing.
fn injected(pod: &Pod, sets: &[Arc<SidecarSet>], sort_by_name: bool) -> Pod {
    let p = plan(pod, sets, sort_by_name).unwrap();
    let mut out = pod.clone();
    p.apply(&mut out);
    let mut again = out.clone();
    plan(&out, sets, sort_by_name).unwrap().apply(&mut again);
    assert_eq!(again, out, "re-planning an injected pod changes it");
    out
}

fn names(containers: &[Container]) -> Vec<&str> {
    containers.iter().map(|c| c.name.as_str()).collect()
}

#[test]
fn where_containers_go() {
    let app = json!([{"name": "a", "image": "a:1"}, {"name": "same", "image": "old:1"}, {"name": "z", "image": "z:1"}]);
    let sets = || {
        vec![
            web_set(
                "s1",
                json!([{"name": "b2", "image": "b:1"}, {"name": "after", "image": "x:1", "podInjectPolicy": "AfterAppContainer"}]),
            ),
            web_set("s2", json!([{"name": "b1", "image": "b:1"}, {"name": "same", "image": "new:1"}])),
        ]
    };
    #[rustfmt::skip]
    let cases: Vec<(&str, Sets, bool, Vec<&str>)> = vec![
        ("no set", vec![], false, vec!["a", "same", "z"]),
        ("a set that does not select the pod",
         vec![set("other", json!({"selector": {"matchLabels": {"app": "db"}}, "containers": [{"name": "s", "image": "s:1"}]}))],
         false, vec!["a", "same", "z"]),
        ("Before prepended in injection order, After appended, same name replaced in place",
         sets(), false, vec!["b2", "b1", "a", "same", "z", "after"]),
        ("EnableSortSidecarContainerByName", sets(), true, vec!["b1", "b2", "a", "same", "z", "after"]),
        ("a set of another namespace",
         vec![set("ns", json!({"namespace": "other", "selector": {"matchLabels": {"app": "web"}}, "containers": [{"name": "s", "image": "s:1"}]}))],
         false, vec!["a", "same", "z"]),
    ];
    for (name, sets, sorted, want) in cases {
        let out = injected(&pod(json!({"containers": app})), &sets, sorted);
        assert_eq!(names(&out.spec.unwrap().containers), want, "{name}");
    }
    let out = injected(&pod(json!({"containers": app})), &sets(), false);
    let same = out.spec.unwrap().containers.into_iter().find(|c| c.name == "same").unwrap();
    assert_eq!(same.image.as_deref(), Some("new:1"), "the sidecar replaces the same-named container");
}

#[test]
fn init_containers_are_merged_sorted_by_name() {
    let s = set(
        "s",
        json!({"selector": {"matchLabels": {"app": "web"}},
               "initContainers": [{"name": "init-2", "image": "i:1"}, {"name": "init-1", "image": "i:1"}]}),
    );
    let p =
        pod(json!({"initContainers": [{"name": "init-0", "image": "i"}], "containers": [{"name": "a", "image": "a"}]}));
    let out = injected(&p, &[s], false).spec.unwrap();
    assert_eq!(names(out.init_containers.as_deref().unwrap()), ["init-0", "init-1", "init-2"]);
    assert_eq!(names(&out.containers), ["a"]);
}

#[test]
fn how_a_sidecar_is_built() {
    let s = web_set(
        "s",
        json!([{"name": "side", "image": "side:1", "env": [{"name": "OWN", "value": "1"}],
                "volumeMounts": [{"name": "set-vol", "mountPath": "/logs"}, {"name": "logs", "mountPath": "/own-logs"}],
                "shareVolumePolicy": {"type": "enabled"},
                "transferEnv": [{"sourceContainerName": "app", "envName": "LEVEL"}]}]),
    );
    let s = {
        let mut s = (*s).clone();
        s.spec.volumes = serde_json::from_value(json!([{"name": "set-vol", "emptyDir": {}}, {"name": "logs", "hostPath": {"path": "/x"}}, {"name": "unused", "emptyDir": {}}])).unwrap();
        Arc::new(s)
    };
    let p = pod(json!({
        "containers": [{"name": "app", "image": "app:1",
                        "env": [{"name": "LEVEL", "value": "info"}, {"name": "POD", "value": "p"}],
                        "volumeMounts": [{"name": "logs", "mountPath": "/logs"}, {"name": "data", "mountPath": "/data", "subPathExpr": "$(POD)"}]}],
        "volumes": [{"name": "logs", "emptyDir": {}}, {"name": "data", "emptyDir": {}}]}));
    let out = injected(&p, &[s], false).spec.unwrap();
    let side = &out.containers[0];
    assert_eq!(side.name, "side");
    let env: Vec<(&str, &str)> =
        side.env.iter().flatten().map(|e| (e.name.as_str(), e.value.as_deref().unwrap_or(""))).collect();
    assert_eq!(
        env,
        [("OWN", "1"), ("IS_INJECTED", "true"), ("LEVEL", "info"), ("POD", "p")],
        "own env, the marker, transferEnv, then the env the shared subPathExprs read"
    );
    let mounts: Vec<(&str, &str)> =
        side.volume_mounts.iter().flatten().map(|m| (m.name.as_str(), m.mount_path.as_str())).collect();
    assert_eq!(
        mounts,
        [("set-vol", "/logs"), ("logs", "/own-logs"), ("data", "/data")],
        "own mounts, then the app mounts at paths the sidecar does not use"
    );
    let volumes: Vec<&str> = out.volumes.iter().flatten().map(|v| v.name.as_str()).collect();
    assert_eq!(volumes, ["logs", "data", "set-vol"], "pod volumes win; only the volumes the sidecar mounts are added");
    assert!(out.volumes.iter().flatten().find(|v| v.name == "logs").unwrap().empty_dir.is_some());
}

#[test]
fn hot_upgrade_makes_a_pair() {
    let s = web_set(
        "hot",
        json!([{"name": "proxy", "image": "envoy:1", "upgradeStrategy": {"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "empty:1"}}]),
    );
    let out = injected(&pod(json!({"containers": [{"name": "a", "image": "a"}]})), &[s], false);
    let spec = out.spec.unwrap();
    assert_eq!(names(&spec.containers), ["proxy-1", "proxy-2", "a"]);
    assert_eq!(spec.containers[0].image.as_deref(), Some("envoy:1"));
    assert_eq!(spec.containers[1].image.as_deref(), Some("empty:1"));
    let a = out.metadata.annotations.unwrap();
    assert_eq!(a[WORKING_HOT_UPGRADE_CONTAINER], r#"{"proxy":"proxy-1"}"#);
    assert_eq!(
        (a["version.sidecarset.kruise.io/proxy-1"].as_str(), a["version.sidecarset.kruise.io/proxy-2"].as_str()),
        ("1", "0")
    );
}

#[test]
fn bookkeeping_and_errors() {
    let s = web_set("s", json!([{"name": "side", "image": "side:1"}]));
    let p = plan(&pod(json!({"containers": [{"name": "a", "image": "a"}]})), std::slice::from_ref(&s), false).unwrap();
    assert_eq!(p.matched, ["s"]);
    assert_eq!(p.injected_names(), BTreeSet::from(["side".to_string()]));
    assert_eq!(p.annotations[SIDECARSET_INJECTED_LIST], "s");
    let hashes: Value = serde_json::from_str(&p.annotations[SIDECARSET_HASH]).unwrap();
    assert_eq!(hashes["s"]["updateTimestamp"], NOW);
    assert_eq!(hashes["s"]["sidecarList"], json!(["side"]));
    assert!(plan(&pod(json!({"containers": []})), &[], false).unwrap().is_empty());

    let mut bad = pod(json!({"containers": [{"name": "a", "image": "a"}]}));
    bad.metadata.annotations = Some(BTreeMap::from([(SIDECARSET_HASH.to_string(), "{not json".to_string())]));
    let err = plan(&bad, &[s], false).unwrap_err().to_string();
    assert!(err.starts_with("pod(default/p) invalid annotations[kruise.io/sidecarset-hash] value {not json"), "{err}");
}

#[test]
fn subpath_refs() {
    assert_eq!(subpath_expr_refs("foo/$(ODD_NAME)/$(POD_NAME)"), vec!["ODD_NAME", "POD_NAME"]);
    assert_eq!(subpath_expr_refs("$($(A)$(9x)$(b.c-d)"), vec!["A", "b.c-d"]);
    assert!(subpath_expr_refs("$(").is_empty());
}

#[test]
fn subscripts() {
    assert_eq!(split_subscripted("metadata.labels['a']"), Some(("metadata.labels", "a")));
    assert_eq!(split_subscripted("metadata.name"), None);
    assert_eq!(split_subscripted("['a']"), None);
}

/// The env var a transferEnv reads is the one kruise's `container/env` map ends up holding: the
/// map is filled in pod order, so the last var of that name in the last container of that name
/// that has one.
#[test]
fn transfer_env_source_is_the_last_of_its_name() {
    let p = pod(json!({"containers": [
        {"name": "a", "image": "x", "env": [{"name": "X", "value": "1"}, {"name": "X", "value": "2"}]},
        {"name": "b", "image": "x", "env": [{"name": "X", "value": "3"}]},
        {"name": "a", "image": "x", "env": [{"name": "Y", "value": "4"}]},
        {"name": "c", "image": "x"},
    ]}));
    let context = PodContext::new(&p);
    for (container, name, want) in [
        ("a", "X", Some("2")),
        ("a", "Y", Some("4")),
        ("b", "X", Some("3")),
        ("b", "Y", None),
        ("c", "X", None),
        ("d", "X", None),
    ] {
        let got = context.env(container, name).and_then(|e| e.value.as_deref());
        assert_eq!(got, want, "{container}/{name}");
    }
}

/// A sidecar named like a pod container replaces it where it stands; with two pod containers
/// of that name it is the last one (kruise's name-to-index map keeps the last index).
#[test]
fn merge_replaces_the_last_same_named_container() {
    let c = |name: &str, image: &str| Container { name: name.into(), image: Some(image.into()), ..Default::default() };
    let origins = vec![c("app", "1"), c("log", "1"), c("app", "2")];
    let injected = vec![
        Injected { container: c("app", "sidecar"), before: true },
        Injected { container: c("new", "a"), before: true },
        Injected { container: c("tail", "a"), before: false },
        Injected { container: c("new", "b"), before: false },
    ];
    let merged = merge_containers(origins, injected);
    let got: Vec<(&str, &str)> =
        merged.iter().map(|c| (c.name.as_str(), c.image.as_deref().unwrap_or_default())).collect();
    assert_eq!(got, [("new", "b"), ("app", "1"), ("log", "1"), ("app", "sidecar"), ("tail", "a")]);
}
