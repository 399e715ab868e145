//! The one-pass pod patch (`podpatch::patch`, what `/mutate-pod` answers) equals the two-step
//! form it replaced, `diff(raw, &target(raw, mutated, replaced))`, operation for operation, over
//! generated request pods and mutations: pod-shaped objects whose named lists share, lack, repeat
//! or rename elements, with nulls, scalars where objects are expected and fields only one side has.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;

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
}
