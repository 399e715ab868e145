//! The one-pass patches equal the two-step forms they replaced, operation for operation, over
//! generated request objects and mutations:
//! - the pod patch (`podpatch::patch`) equals `diff(raw, &target(raw, mutated, replaced))` over
//!   pod-shaped objects whose named lists share, lack, repeat or rename elements, with nulls,
//!   scalars where objects are expected and fields only one side has; and the patch
//!   `/mutate-pod` answers, `podpatch::pod_patch` over the typed spec, equals `patch` over the
//!   serialised spec, over generated typed specs and request pods (their own serialisation
//!   perturbed, or pod-shaped values);
//! - the workload patch (`compat::patch`: `Overlay::patch` and `overlay_patch_typed`, what the
//!   CloneSet and Advanced StatefulSet defaults answer) equals `json_patch::diff(raw,
//!   &overlay(raw, typed))` over any values, over typed pod specs, and over the example CloneSet
//!   and Advanced StatefulSet defaulted against their own request JSON perturbed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;

use json_patch::Patch;
use k8s_openapi::api::core::v1::{Container, EmptyDirVolumeSource, EnvVar, PodSpec, Volume};
use kruise::apis::CloneSet;
use kruise::apis::statefulset::v1beta1::StatefulSet;
use kruise::compat::patch::{Overlay, SpecOf, overlay, overlay_patch_typed};
use kruise::core::defaults::cloneset::default_cloneset;
use kruise::core::defaults::statefulset::default_statefulset;
use kruise::core::features::FeatureGates;
use kruise::core::sidecar::podpatch;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Small JSON values: scalars, and objects/arrays drawn from few keys so that both sides collide.
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (0i64..3).prop_map(Value::from),
        prop::sample::select(vec!["a", "b", "", "x/y~z"]).prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(prop::sample::select(vec!["k", "l", "name", "m/n"]), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
        ]
    })
}

/// A list element: usually a named object (names repeat across and within lists).
fn element() -> impl Strategy<Value = Value> {
    prop_oneof![
        8 => (prop::sample::select(vec!["c0", "c1", "c2", "c3"]), prop::collection::btree_map(
            prop::sample::select(vec!["image", "env", "k"]), value(), 0..3))
            .prop_map(|(name, fields)| {
                let mut m: Map<String, Value> = fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
                m.insert("name".into(), json!(name));
                Value::Object(m)
            }),
        1 => value(),
    ]
}

fn list() -> impl Strategy<Value = Value> {
    prop_oneof![8 => prop::collection::vec(element(), 0..5).prop_map(Value::Array), 1 => value()]
}

/// A pod-shaped object: metadata, a spec with the three named lists and other fields.
fn pod() -> impl Strategy<Value = Value> {
    (
        value(),
        prop::collection::btree_map(
            prop::sample::select(vec!["containers", "initContainers", "volumes", "other", "k"]),
            list(),
            0..5,
        ),
        prop::bool::weighted(0.9),
        value(),
    )
        .prop_map(|(metadata, spec, has_spec, extra)| {
            let mut pod = Map::new();
            pod.insert("metadata".into(), metadata);
            if has_spec {
                pod.insert("spec".into(), Value::Object(spec.into_iter().map(|(k, v)| (k.to_string(), v)).collect()));
            }
            pod.insert("status".into(), extra);
            Value::Object(pod)
        })
}

fn container() -> impl Strategy<Value = Container> {
    (
        prop::sample::select(vec!["c0", "c1", "c2", "c3"]),
        prop::option::of(prop::sample::select(vec!["a:1", "a:2"])),
        prop::collection::vec((prop::sample::select(vec!["A", "B"]), prop::option::of(Just("1"))), 0..3),
        prop::option::of(prop::sample::select(vec!["Always", "IfNotPresent"])),
    )
        .prop_map(|(name, image, env, policy)| Container {
            name: name.into(),
            image: image.map(str::to_string),
            env: (!env.is_empty()).then(|| {
                env.into_iter()
                    .map(|(n, v)| EnvVar { name: n.into(), value: v.map(str::to_string), ..Default::default() })
                    .collect()
            }),
            image_pull_policy: policy.map(str::to_string),
            ..Default::default()
        })
}

fn volume() -> impl Strategy<Value = Volume> {
    (prop::sample::select(vec!["v0", "v1", "c0"]), any::<bool>()).prop_map(|(name, empty_dir)| Volume {
        name: name.into(),
        empty_dir: empty_dir.then(EmptyDirVolumeSource::default),
        ..Default::default()
    })
}

/// Typed pod specs: the three named lists and a few other fields, maps among them.
fn spec() -> impl Strategy<Value = PodSpec> {
    (
        prop::collection::vec(container(), 0..4),
        prop::option::of(prop::collection::vec(container(), 0..3)),
        prop::option::of(prop::collection::vec(volume(), 0..3)),
        prop::option::of(prop::collection::btree_map(
            prop::sample::select(vec!["a", "b/c", "~d"]).prop_map(str::to_string),
            prop::sample::select(vec!["x", "y"]).prop_map(str::to_string),
            0..3,
        )),
        prop::option::of(prop::sample::select(vec!["h1", "h2"]).prop_map(str::to_string)),
        prop::option::of(0i64..3),
    )
        .prop_map(|(containers, init_containers, volumes, node_selector, hostname, grace)| PodSpec {
            containers,
            init_containers,
            volumes,
            node_selector,
            hostname,
            termination_grace_period_seconds: grace,
            ..Default::default()
        })
}

/// A request pod: a typed spec's serialisation with values replaced, removed or added here and
/// there (so that the walk meets equal, different and missing values alike), or any pod-shaped
/// value.
fn request_pod() -> impl Strategy<Value = Value> {
    let perturbed = (spec(), prop::collection::vec((0usize..64, prop::option::of(value())), 0..4), value()).prop_map(
        |(spec, edits, metadata)| {
            let mut spec = serde_json::to_value(spec).unwrap();
            for (at, replacement) in edits {
                perturb(&mut spec, at, replacement);
            }
            json!({"metadata": metadata, "spec": spec})
        },
    );
    prop_oneof![3 => perturbed, 1 => pod()]
}

/// Replaces (or, with `None`, removes) the `at`-th node of `v` in depth-first order, counting
/// object members and list elements.
fn perturb(v: &mut Value, at: usize, replacement: Option<Value>) {
    fn walk(v: &mut Value, at: &mut usize, replacement: &mut Option<Option<Value>>) {
        let children: Vec<String> = match v {
            Value::Object(m) => m.keys().cloned().collect(),
            Value::Array(a) => (0..a.len()).map(|i| i.to_string()).collect(),
            _ => return,
        };
        for key in children {
            if replacement.is_none() {
                return;
            }
            if *at == 0 {
                let r = replacement.take().unwrap();
                match (v, r) {
                    (Value::Object(m), Some(r)) => drop(m.insert(key, r)),
                    (Value::Object(m), None) => drop(m.remove(&key)),
                    (Value::Array(a), Some(r)) => a[key.parse::<usize>().unwrap()] = r,
                    (Value::Array(a), None) => drop(a.remove(key.parse::<usize>().unwrap())),
                    _ => {}
                }
                return;
            }
            *at -= 1;
            let child = match v {
                Value::Object(m) => m.get_mut(&key),
                Value::Array(a) => a.get_mut(key.parse::<usize>().unwrap()),
                _ => None,
            };
            if let Some(child) = child {
                walk(child, at, replacement);
            }
        }
    }
    walk(v, &mut { at }, &mut Some(replacement));
}

proptest! {
    // 2000 cases in `make test`; `PROPTEST_CASES=N` for a longer one-off run.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(2000),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn one_pass_patch_equals_diff_of_target(
        raw in pod(),
        mutated in pod(),
        replaced in prop::collection::btree_set(prop::sample::select(vec!["c0", "c1", "c3"]), 0..3),
    ) {
        let replaced: BTreeSet<String> = replaced.into_iter().map(str::to_string).collect();
        let want = podpatch::diff(&raw, &podpatch::target(&raw, &mutated, &replaced));
        let got = podpatch::patch(&raw, &mutated, &replaced);
        prop_assert_eq!(
            serde_json::to_string(&got).unwrap(),
            serde_json::to_string(&want).unwrap(),
            "raw {} mutated {}", raw, mutated
        );
    }

    #[test]
    fn one_pass_patch_equals_diff_of_target_for_any_values(raw in value(), mutated in value()) {
        let replaced = BTreeSet::from(["c0".to_string()]);
        let want = podpatch::diff(&raw, &podpatch::target(&raw, &mutated, &replaced));
        prop_assert_eq!(
            serde_json::to_string(&podpatch::patch(&raw, &mutated, &replaced)).unwrap(),
            serde_json::to_string(&want).unwrap()
        );
    }

    #[test]
    fn typed_patch_equals_patch_of_the_serialised_spec(
        raw in request_pod(),
        spec in prop::option::weighted(0.95, spec()),
        annotations in prop::collection::btree_map(prop::sample::select(vec!["k", "a/b"]), prop::sample::select(vec!["1", "2"]), 0..3),
        name in prop::option::of(Just("p")),
        replaced in prop::collection::btree_set(prop::sample::select(vec!["c0", "c1", "c3"]), 0..3),
    ) {
        let replaced: BTreeSet<String> = replaced.into_iter().map(str::to_string).collect();
        let mut metadata = Map::new();
        if !annotations.is_empty() {
            metadata.insert("annotations".into(), json!(annotations));
        }
        if let Some(name) = name {
            metadata.insert("name".into(), json!(name));
        }
        let mut changed = Map::new();
        if !metadata.is_empty() {
            changed.insert("metadata".into(), Value::Object(metadata.clone()));
        }
        if let Some(spec) = &spec {
            changed.insert("spec".into(), serde_json::to_value(spec).unwrap());
        }
        let want = podpatch::patch(&raw, &Value::Object(changed), &replaced);
        let got = podpatch::pod_patch(&raw, metadata, spec.as_ref(), &replaced).unwrap();
        prop_assert_eq!(
            serde_json::to_string(&got).unwrap(),
            serde_json::to_string(&want).unwrap(),
            "raw {} spec {:?}", raw, spec
        );
    }

    #[test]
    fn overlay_patch_equals_json_patch_diff_of_the_overlay(raw in prop_oneof![value(), pod()], typed in prop_oneof![value(), pod()]) {
        prop_assert_eq!(text(&Overlay::new(&raw, &typed).patch()), text(&two_steps(&raw, &typed)), "raw {} typed {}", raw, typed);
    }

    #[test]
    fn typed_overlay_patch_equals_the_patch_of_the_serialised_spec(raw in request_pod(), spec in spec()) {
        let built = json!({"spec": serde_json::to_value(&spec).unwrap()});
        prop_assert_eq!(
            text(&overlay_patch_typed(&raw, &SpecOf(&spec)).unwrap()),
            text(&two_steps(&raw, &built)),
            "raw {} spec {:?}", raw, spec
        );
    }

    #[test]
    fn workload_defaults_patch_equals_the_patch_of_the_serialised_spec(
        edits in prop::collection::vec((0usize..200, prop::option::of(value())), 0..4),
        inject in any::<bool>(),
        statefulset in any::<bool>(),
    ) {
        let (raw, typed) = if statefulset {
            let mut raw = example("statefulset-create.json");
            let mut sts: StatefulSet = kruise::compat::decode::from_value(&raw).unwrap();
            default_statefulset(&mut sts.spec, inject, &FeatureGates::default()).unwrap();
            perturb_all(&mut raw, edits);
            (raw, serde_json::to_value(&sts.spec).unwrap())
        } else {
            let mut raw = example("cloneset-create.json");
            let mut cloneset: CloneSet = kruise::compat::decode::from_value(&raw).unwrap();
            default_cloneset(&mut cloneset.spec, inject, &FeatureGates::default()).unwrap();
            perturb_all(&mut raw, edits);
            (raw, serde_json::to_value(&cloneset.spec).unwrap())
        };
        let got = overlay_patch_typed(&raw, &SpecOf(&typed)).unwrap();
        let want = two_steps(&raw, &json!({"spec": typed}));
        prop_assert_eq!(text(&got), text(&want), "raw {}", raw);
    }
}

/// `json_patch::diff(raw, &overlay(raw, typed))`, `None` when empty: what the workload handlers
/// answered before the one-pass patch.
fn two_steps(raw: &Value, typed: &Value) -> Option<Patch> {
    let patch = json_patch::diff(raw, &overlay(raw, typed));
    (!patch.0.is_empty()).then_some(patch)
}

fn text(patch: &Option<Patch>) -> String {
    serde_json::to_string(patch).unwrap()
}

/// The `request.object` of an example review.
fn example(review: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/reviews").join(review);
    let review: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    review["request"]["object"].clone()
}

fn perturb_all(v: &mut Value, edits: Vec<(usize, Option<Value>)>) {
    for (at, replacement) in edits {
        perturb(v, at, replacement);
    }
}
