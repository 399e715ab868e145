//! Properties of sidecar injection over generated pods and SidecarSets (issue 4 "Done means"):
//! the patch always applies to the request pod, applying it gives the pod the injection plan
//! describes, the result passes the pod checks (unique container names, every mount and device
//! names a pod volume), and a second invocation returns no patch — both for the pure decision
//! (`plan_injection` + `podpatch`) and through the `/mutate-pod` handler, where container launch
//! priority (the `Ordered` annotation, priorities declared by apps and sidecars) takes part.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use common::sidecar::*;
use common::*;
use k8s_openapi::api::core::v1::Pod;
use kruise::apis::SidecarSet;
use kruise::core::sidecar::inject::{InjectionInput, plan_injection};
use kruise::core::sidecar::podpatch;
use proptest::prelude::*;
use serde_json::{Value, json};

#[derive(Debug, Clone)]
struct AppShape {
    envs: Vec<u8>,
    mounts: Vec<(u8, bool)>,
    device: bool,
}

#[derive(Debug, Clone)]
struct PodShape {
    label: u8,
    apps: Vec<AppShape>,
    init: u8,
    secrets: Vec<u8>,
    merge_annotation: bool,
    /// Container launch priority: 0 none, 1 the `Ordered` annotation, 2 priorities declared on
    /// the app containers (issue 13: sidecars must keep their barrier on a re-invocation).
    launch: u8,
    /// No name, only `generateName` (launch priority then names the pod).
    generate_name: bool,
}

#[derive(Debug, Clone)]
struct SideShape {
    before: bool,
    hot: bool,
    share: bool,
    share_devices: bool,
    mounts: Vec<u8>,
    transfer: Vec<(u8, u8)>,
    own_env: Vec<u8>,
    /// A declared `KRUISE_CONTAINER_PRIORITY`.
    priority: Option<u8>,
}

#[derive(Debug, Clone)]
struct SetShape {
    selector: u8,
    scope: u8,
    paused: bool,
    containers: Vec<SideShape>,
    init: Vec<(bool, bool)>,
    volumes: u8,
    secrets: Vec<u8>,
    patch: u8,
}

fn app_shape() -> impl Strategy<Value = AppShape> {
    (prop::collection::vec(0u8..4, 0..3), prop::collection::vec((0u8..3, any::<bool>()), 0..3), any::<bool>())
        .prop_map(|(envs, mounts, device)| AppShape { envs, mounts, device })
}

fn pod_shape() -> impl Strategy<Value = PodShape> {
    (
        0u8..2,
        prop::collection::vec(app_shape(), 1..4),
        0u8..3,
        prop::collection::vec(0u8..3, 0..3),
        any::<bool>(),
        0u8..3,
        prop::bool::weighted(0.2),
    )
        .prop_map(|(label, apps, init, secrets, merge_annotation, launch, generate_name)| PodShape {
            label,
            apps,
            init,
            secrets,
            merge_annotation,
            launch,
            generate_name,
        })
}

fn side_shape() -> impl Strategy<Value = SideShape> {
    (
        any::<bool>(),
        prop::bool::weighted(0.25),
        any::<bool>(),
        any::<bool>(),
        prop::collection::vec(0u8..3, 0..3),
        prop::collection::vec((0u8..3, 0u8..4), 0..3),
        prop::collection::vec(0u8..4, 0..2),
        prop::option::weighted(0.3, 0u8..3),
    )
        .prop_map(|(before, hot, share, share_devices, mounts, transfer, own_env, priority)| SideShape {
            before,
            hot,
            share,
            share_devices,
            mounts,
            transfer,
            own_env,
            priority,
        })
}

fn set_shape() -> impl Strategy<Value = SetShape> {
    (
        0u8..4,
        0u8..4,
        prop::bool::weighted(0.1),
        prop::collection::vec(side_shape(), 0..3),
        prop::collection::vec((any::<bool>(), prop::bool::weighted(0.3)), 0..3),
        0u8..3,
        prop::collection::vec(0u8..4, 0..2),
        0u8..4,
    )
        .prop_map(|(selector, scope, paused, containers, init, volumes, secrets, patch)| SetShape {
            selector,
            scope,
            paused,
            containers,
            init,
            volumes,
            secrets,
            patch,
        })
}

fn env_name(i: u8) -> String {
    format!("E{i}")
}

fn build_pod(shape: &PodShape) -> Value {
    let containers: Vec<Value> = shape
        .apps
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let envs: BTreeSet<u8> = a.envs.iter().copied().collect();
            let mut env: Vec<Value> =
                envs.iter().map(|e| json!({"name": env_name(*e), "value": format!("app{i}-{e}")})).collect();
            if shape.launch == 2 {
                env.push(json!({"name": "KRUISE_CONTAINER_PRIORITY", "value": format!("{}", i % 2)}));
            }
            let mut paths = BTreeSet::new();
            let mounts: Vec<Value> = a
                .mounts
                .iter()
                .filter(|(v, _)| paths.insert(*v))
                .map(|(v, expr)| {
                    let mut m = json!({"name": format!("v{v}"), "mountPath": format!("/p{v}")});
                    if *expr {
                        m["subPathExpr"] = json!("$(E0)/$(E1)");
                    }
                    m
                })
                .collect();
            let mut c = json!({"name": format!("app-{i}"), "image": "app:1", "env": env, "volumeMounts": mounts});
            if a.device {
                c["volumeDevices"] = json!([{"name": "v2", "devicePath": format!("/dev/app{i}")}]);
            }
            c
        })
        .collect();
    let init: Vec<Value> = (0..shape.init).map(|i| json!({"name": format!("setup-{i}"), "image": "setup:1"})).collect();
    let secrets: Vec<Value> = shape.secrets.iter().map(|s| json!({"name": format!("secret-{s}")})).collect();
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "labels": {"app": if shape.label == 0 { "a" } else { "b" }}},
        "spec": {"containers": containers, "initContainers": init, "imagePullSecrets": secrets,
                 "volumes": [{"name": "v0", "emptyDir": {}}, {"name": "v1", "emptyDir": {}},
                             {"name": "v2", "persistentVolumeClaim": {"claimName": "c"}}]}});
    if shape.merge_annotation {
        pod["metadata"]["annotations"] = json!({"merge": "{\"pod\":1}"});
    }
    if shape.launch == 1 {
        let a = pod["metadata"].as_object_mut().unwrap().entry("annotations").or_insert_with(|| json!({}));
        a["apps.kruise.io/container-launch-priority"] = json!("Ordered");
    }
    if shape.generate_name {
        pod["metadata"].as_object_mut().unwrap().remove("name");
        pod["metadata"]["generateName"] = json!("p-");
    }
    pod
}

fn set_volume_name(set: usize, k: u8) -> String {
    if k == 0 { "v0".into() } else { format!("s{set}-v{k}") }
}

fn build_set(i: usize, shape: &SetShape) -> Value {
    let selector = match shape.selector {
        0 => json!({"matchLabels": {"app": "a"}}),
        1 => json!({"matchLabels": {"app": "b"}}),
        2 => json!({"matchExpressions": [{"key": "app", "operator": "Exists"}]}),
        _ => json!({"matchLabels": {"tier": "x"}}),
    };
    let volumes: Vec<Value> =
        (0..shape.volumes).map(|k| json!({"name": set_volume_name(i, k), "emptyDir": {"medium": "Memory"}})).collect();
    let containers: Vec<Value> = shape
        .containers
        .iter()
        .enumerate()
        .map(|(j, s)| {
            let mut paths = BTreeSet::new();
            let mounts: Vec<Value> = s
                .mounts
                .iter()
                .filter(|k| **k < shape.volumes && paths.insert(**k))
                .map(|k| json!({"name": set_volume_name(i, *k), "mountPath": format!("/s{k}")}))
                .collect();
            let own: BTreeSet<u8> = s.own_env.iter().copied().collect();
            let mut env: Vec<Value> = own.iter().map(|e| json!({"name": env_name(*e), "value": "own"})).collect();
            if let Some(p) = s.priority {
                env.push(json!({"name": "KRUISE_CONTAINER_PRIORITY", "value": format!("{p}")}));
            }
            let transfer: Vec<Value> = s
                .transfer
                .iter()
                .map(|(c, e)| json!({"sourceContainerName": format!("app-{c}"), "envName": env_name(*e)}))
                .collect();
            let mut c = json!({"name": format!("s{i}-c{j}"), "image": format!("side{i}:1"), "env": env, "volumeMounts": mounts,
                "transferEnv": transfer, "podInjectPolicy": if s.before { "BeforeAppContainer" } else { "AfterAppContainer" },
                "shareVolumePolicy": {"type": if s.share { "enabled" } else { "disabled" }}});
            if s.share_devices {
                c["shareVolumeDevicePolicy"] = json!({"type": "enabled"});
            }
            if s.hot {
                c["upgradeStrategy"] = json!({"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "empty:1"});
            }
            c
        })
        .collect();
    let init: Vec<Value> = shape
        .init
        .iter()
        .enumerate()
        .map(|(k, (native, hot))| {
            let mut c = json!({"name": format!("s{i}-i{k}"), "image": "init:1"});
            if *native {
                c["restartPolicy"] = json!("Always");
                if *hot {
                    c["upgradeStrategy"] = json!({"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "empty:1"});
                }
            }
            c
        })
        .collect();
    let mut spec = json!({"selector": selector, "containers": containers, "initContainers": init, "volumes": volumes,
        "imagePullSecrets": shape.secrets.iter().map(|s| json!({"name": format!("secret-{s}")})).collect::<Vec<_>>(),
        "injectionStrategy": {"paused": shape.paused}});
    match shape.scope {
        1 => spec["namespace"] = json!("default"),
        2 => spec["namespace"] = json!("other"),
        3 => spec["namespaceSelector"] = json!({"matchLabels": {"kubernetes.io/metadata.name": "default"}}),
        _ => {}
    }
    match shape.patch {
        1 => spec["patchPodMetadata"] = json!([{"annotations": {format!("set-{i}"): "r"}, "patchPolicy": "Retain"}]),
        2 => {
            spec["patchPodMetadata"] = json!([{"annotations": {"shared": format!("{i}")}, "patchPolicy": "Overwrite"}])
        }
        3 => {
            spec["patchPodMetadata"] =
                json!([{"annotations": {"merge": format!("{{\"s{i}\":1}}")}, "patchPolicy": "MergePatchJson"}])
        }
        _ => {}
    }
    sidecarset(&format!("set-{i}"), spec)
}

/// One injection through the pure decision: the plan applied to the typed pod, and the patch
/// from the raw pod.
fn inject(raw: &Value, sets: &[Arc<SidecarSet>], now: &str) -> (Pod, Option<json_patch::Patch>) {
    let pod: Pod = serde_json::from_value(raw.clone()).unwrap();
    let labels = BTreeMap::from([("kubernetes.io/metadata.name".to_string(), "default".to_string())]);
    let revisions = Vec::new;
    let input =
        InjectionInput { namespace_labels: &labels, revisions: &revisions, draw: 0.5, now, sort_by_name: false };
    let plan = plan_injection(&pod, sets, &input).unwrap();
    let mut mutated = pod.clone();
    let replaced = plan.injected_names();
    plan.apply(&mut mutated);
    let target = podpatch::target(raw, &serde_json::to_value(&mutated).unwrap(), &replaced);
    (mutated, podpatch::diff(raw, &target))
}

fn check_pod_spec(pod: &Value) -> Result<(), String> {
    let spec = &pod["spec"];
    let volumes: BTreeSet<&str> =
        spec["volumes"].as_array().into_iter().flatten().filter_map(|v| v["name"].as_str()).collect();
    let mut names = BTreeSet::new();
    for list in ["initContainers", "containers"] {
        for c in spec[list].as_array().into_iter().flatten() {
            let name = c["name"].as_str().unwrap_or("");
            if !names.insert(name.to_string()) {
                return Err(format!("duplicate container {name}"));
            }
            for m in c["volumeMounts"]
                .as_array()
                .into_iter()
                .flatten()
                .chain(c["volumeDevices"].as_array().into_iter().flatten())
            {
                let v = m["name"].as_str().unwrap_or("");
                if !volumes.contains(v) {
                    return Err(format!("{name} uses missing volume {v}"));
                }
            }
        }
    }
    Ok(())
}

proptest! {
    // 160 cases in `make test`; `PROPTEST_CASES=N` for a longer one-off run.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(160),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn injection_properties(pod_shape in pod_shape(), set_shapes in prop::collection::vec(set_shape(), 0..4)) {
        let raw = build_pod(&pod_shape);
        let objects: Vec<Value> = set_shapes.iter().enumerate().map(|(i, s)| build_set(i, s)).collect();
        let ctx = context(&objects, "");
        let sets = ctx.cluster.sidecarsets_for_namespace("default");

        // The pure decision.
        let (mutated, patch) = inject(&raw, &sets, "2024-01-01T00:00:00Z");
        let mut applied = raw.clone();
        if let Some(p) = &patch {
            json_patch::patch(&mut applied, p).map_err(|e| TestCaseError::fail(format!("patch does not apply: {e}")))?;
        }
        let applied_pod: Pod = serde_json::from_value(applied.clone()).unwrap();
        prop_assert_eq!(&applied_pod, &mutated, "applying the patch gives the planned pod");
        prop_assert!(check_pod_spec(&applied).is_ok(), "{:?}", check_pod_spec(&applied));
        let (_, again) = inject(&applied, &sets, "2030-06-01T12:00:00Z");
        prop_assert!(again.is_none(), "second invocation patched: {:?}", again);

        // The handler.
        let verdict = mutate_pod(&ctx, "default", &raw);
        prop_assert!(verdict.allowed, "{}", verdict.message);
        let through_handler = apply(&raw, verdict.patch.as_ref());
        prop_assert!(check_pod_spec(&through_handler).is_ok(), "{:?}", check_pod_spec(&through_handler));
        let second = mutate_pod(&ctx, "default", &through_handler);
        prop_assert!(second.allowed && second.patch.is_none(), "handler re-invocation patched: {:?}", second.patch);
    }
}
