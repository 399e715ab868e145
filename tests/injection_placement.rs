//! Sidecar placement and hot upgrade through `/mutate-pod` (spec §4.6, §4.7), and the standalone
//! example of `examples/`, checked like `injection.rs`: patch applied and compared, re-invocation
//! without a patch.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::cases::*;
use common::sidecar::*;
use common::*;
use kruise::webhook::Context;
use serde_json::{Value, json};

#[test]
fn placement_4_6() {
    let base = pod(
        json!({"app": "web"}),
        json!([{"name": "a", "image": "a:1"}, {"name": "same", "image": "old:1", "command": ["x"]}, {"name": "z", "image": "z:1"}]),
    );
    let set = |name: &str, containers: Value| {
        sidecarset(name, json!({"selector": {"matchLabels": {"app": "web"}}, "containers": containers}))
    };
    let objects = vec![
        set(
            "s1",
            json!([{"name": "b2", "image": "b:1"}, {"name": "after1", "image": "x:1", "podInjectPolicy": "AfterAppContainer"}]),
        ),
        set("s2", json!([{"name": "b1", "image": "b:1"}, {"name": "same", "image": "new:1"}])),
    ];
    let i = |n: &str, img: &str| injected(n, img, json!([is_injected()]));
    let want = |sorted: bool| {
        let base = base.clone();
        move |ctx: &Context| {
            Want::Pod(with(&base, |p| {
                let before =
                    if sorted { vec![i("b1", "b:1"), i("b2", "b:1")] } else { vec![i("b2", "b:1"), i("b1", "b:1")] };
                let mut cs = before;
                cs.extend([
                    json!({"name": "a", "image": "a:1"}),
                    i("same", "new:1"),
                    json!({"name": "z", "image": "z:1"}),
                    i("after1", "x:1"),
                ]);
                p["spec"]["containers"] = Value::Array(cs);
                add_annotations(
                    p,
                    bookkeeping(ctx, &[("s1", &["after1", "b2"], None), ("s2", &["b1", "same"], None)], "s1,s2"),
                );
            }))
        }
    };
    let mut sorted = case("EnableSortSidecarContainerByName", objects.clone(), base.clone(), want(true));
    sorted.gates = "EnableSortSidecarContainerByName=true";
    run_cases(vec![
        case(
            "Before prepended in injection order, After appended, same name replaced in place",
            objects,
            base.clone(),
            want(false),
        ),
        sorted,
    ]);
}

#[test]
fn hot_upgrade_4_7() {
    let web = pod(json!({"app": "web"}), json!([app()]));
    let set = sidecarset(
        "hot",
        json!({"selector": {"matchLabels": {"app": "web"}}, "containers": [{"name": "mesh", "image": "mesh:1",
        "upgradeStrategy": {"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "empty:1"}}]}),
    );
    let version = |c: &str| {
        json!([is_injected(),
        {"name": "SIDECARSET_VERSION", "valueFrom": {"fieldRef": {"fieldPath": format!("metadata.annotations['version.sidecarset.kruise.io/{c}']")}}},
        {"name": "SIDECARSET_VERSION_ALT", "valueFrom": {"fieldRef": {"fieldPath": format!("metadata.annotations['versionalt.sidecarset.kruise.io/{c}']")}}}])
    };
    let want = {
        let web = web.clone();
        move |ctx: &Context| {
            Want::Pod(with(&web, |p| {
                p["spec"]["containers"] = json!([
                    injected("mesh-1", "mesh:1", version("mesh-1")),
                    with(&injected("mesh-2", "empty:1", version("mesh-2")), |c| c["imagePullPolicy"] =
                        json!("IfNotPresent")),
                    app()
                ]);
                add_annotations(p, bookkeeping(ctx, &[("hot", &["mesh"], None)], "hot"));
                add_annotations(
                    p,
                    json!({
                    "version.sidecarset.kruise.io/mesh-1": "1", "versionalt.sidecarset.kruise.io/mesh-1": "0",
                    "version.sidecarset.kruise.io/mesh-2": "0", "versionalt.sidecarset.kruise.io/mesh-2": "1",
                    "kruise.io/sidecarset-working-hotupgrade-container": "{\"envoy\":\"envoy-2\",\"mesh\":\"mesh-1\"}"}),
                );
            }))
        }
    };
    let native = sidecarset(
        "native-hot",
        json!({"selector": {"matchLabels": {"app": "web"}}, "updateStrategy": {"type": "NotUpdate"},
        "initContainers": [{"name": "nh", "image": "nh:1", "restartPolicy": "Always",
                            "upgradeStrategy": {"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "empty:1"}}]}),
    );
    let native_want = {
        let web = web.clone();
        move |ctx: &Context| {
            Want::Pod(with(&web, |p| {
                let always = |c: Value| with(&c, |c| c["restartPolicy"] = json!("Always"));
                p["spec"]["initContainers"] = json!([
                    always(injected("nh-1", "nh:1", version("nh-1"))),
                    always(with(&injected("nh-2", "empty:1", version("nh-2")), |c| c["imagePullPolicy"] =
                        json!("IfNotPresent")))
                ]);
                add_annotations(p, bookkeeping(ctx, &[("native-hot", &["nh"], None)], "native-hot"));
                add_annotations(
                    p,
                    json!({
                    "version.sidecarset.kruise.io/nh-1": "1", "versionalt.sidecarset.kruise.io/nh-1": "0",
                    "version.sidecarset.kruise.io/nh-2": "0", "versionalt.sidecarset.kruise.io/nh-2": "1",
                    "kruise.io/sidecarset-working-hotupgrade-container": "{\"nh\":\"nh-1\"}"}),
                );
            }))
        }
    };
    run_cases(vec![case(
        "a native sidecar with HotUpgrade is a pair of init containers",
        vec![native],
        web.clone(),
        native_want,
    )]);
    run_cases(vec![case(
        "two containers, version env and annotations, working map merged",
        vec![set],
        with(&web, |p| {
            add_annotations(p, json!({"kruise.io/sidecarset-working-hotupgrade-container": "{\"envoy\":\"envoy-2\"}"}))
        }),
        want,
    )]);
}

/// The example pod review of `examples/` through the handler with a view of `examples/`.
#[test]
fn standalone_example() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let (view, problems) = kruise::cluster::files::FileView::load(&dir).unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    let ctx = Context::with_gates(Default::default(), std::sync::Arc::new(view));
    let review: Value = serde_json::from_slice(&std::fs::read(dir.join("reviews/pod-create.json")).unwrap()).unwrap();
    let verdict = run_body(&ctx, kruise::webhook::Handler::MutatePod, &review);
    assert!(verdict.allowed, "{}", verdict.message);
    let pod = apply(&review["request"]["object"], verdict.patch.as_ref());
    let names: Vec<&str> =
        pod["spec"]["containers"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["log-agent", "web"]);
    assert_eq!(pod["metadata"]["annotations"]["kruise.io/sidecarset-injected-list"], "sample");
}
