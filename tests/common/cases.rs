//! The table runner of the injection tests: send a pod to `/mutate-pod` in the row's request
//! shape, apply the patch, compare with the expected pod, and send the result again expecting no
//! patch.

use kruise::webhook::request::ReviewRequest;
use kruise::webhook::{Context, Handler};
use kube::core::admission::Operation;
use serde_json::{Value, json};

use super::sidecar::*;
use super::{apply, context, run};

pub enum Want {
    /// The mutated pod.
    Pod(Value),
    /// Allowed without a patch.
    Same,
    /// Refused with this code and a message containing the text.
    Code(u16, &'static str),
}

/// How the pod reaches the handler.
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    /// A pod CREATE (the only operation `mpod.kb.io` is registered for).
    Create,
    /// A CREATE of a pod subresource (e.g. `status`).
    CreateSubresource(&'static str),
    /// An UPDATE whose old object is the pod itself.
    Update,
}

pub struct Case {
    pub name: &'static str,
    pub objects: Vec<Value>,
    pub gates: &'static str,
    pub namespace: &'static str,
    pub shape: Shape,
    pub pod: Value,
    pub want: Box<dyn Fn(&Context) -> Want>,
}

pub fn case(name: &'static str, objects: Vec<Value>, pod: Value, want: impl Fn(&Context) -> Want + 'static) -> Case {
    Case { name, objects, gates: "", namespace: "default", shape: Shape::Create, pod, want: Box::new(want) }
}

impl Case {
    /// The same row sent in another request shape.
    pub fn shape(mut self, shape: Shape) -> Self {
        self.shape = shape;
        self
    }

    /// The same row with feature gates (`Name=bool,...`).
    pub fn gates(mut self, gates: &'static str) -> Self {
        self.gates = gates;
        self
    }

    /// The review this row sends for `pod`.
    fn review(&self, pod: &Value) -> ReviewRequest {
        let create = pod_create(self.namespace, pod);
        match self.shape {
            Shape::Create => create,
            Shape::CreateSubresource(sub) => create.sub_resource(sub),
            Shape::Update => ReviewRequest::new(Operation::Update, "", "v1", "Pod", "pods")
                .namespace(self.namespace)
                .object(pod.clone())
                .old_object(pod.clone()),
        }
    }
}

pub fn run_cases(cases: Vec<Case>) {
    for c in cases {
        let ctx = context(&c.objects, c.gates);
        let verdict = run(&ctx, Handler::MutatePod, &c.review(&c.pod));
        match (c.want)(&ctx) {
            Want::Code(code, text) => {
                assert!(!verdict.allowed, "{}: expected a refusal", c.name);
                assert_eq!(verdict.code, code, "{}: {}", c.name, verdict.message);
                assert!(verdict.message.contains(text), "{}: {:?} lacks {text:?}", c.name, verdict.message);
            }
            Want::Same => {
                assert!(verdict.allowed, "{}: {}", c.name, verdict.message);
                assert!(verdict.patch.is_none(), "{}: unexpected patch {:?}", c.name, verdict.patch);
            }
            Want::Pod(want) => {
                assert!(verdict.allowed, "{}: {}", c.name, verdict.message);
                let mutated = apply(&c.pod, verdict.patch.as_ref());
                let mut shown = mutated.clone();
                normalize_timestamps(&mut shown);
                assert_eq!(
                    shown,
                    want,
                    "{}:\n got {}\nwant {}",
                    c.name,
                    serde_json::to_string_pretty(&shown).unwrap(),
                    serde_json::to_string_pretty(&want).unwrap()
                );
                let again = run(&ctx, Handler::MutatePod, &c.review(&mutated));
                assert!(again.allowed && again.patch.is_none(), "{}: re-invocation patched {:?}", c.name, again.patch);
            }
        }
    }
}

pub fn pod(labels: Value, containers: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "test-pod", "namespace": "default", "labels": labels},
           "spec": {"containers": containers}})
}

pub fn app() -> Value {
    json!({"name": "nginx", "image": "nginx:1.15.1"})
}

pub fn simple_set(name: &str, selector: Value) -> Value {
    sidecarset(name, json!({"selector": selector, "containers": [{"name": format!("{name}-c"), "image": "side:1"}]}))
}

/// The annotations injection writes for sets injecting `lists` (set, sidecar list), with revisions.
pub fn bookkeeping(ctx: &Context, sets: &[(&str, &[&str], Option<&str>)], injected_list: &str) -> Value {
    let entries = |without: bool| -> String {
        hash_map(
            &sets
                .iter()
                .map(|(s, list, rev)| {
                    let (h, hw) = stored_hashes(ctx, s);
                    if without { hash_entry(s, &hw, list, None) } else { hash_entry(s, &h, list, *rev) }
                })
                .collect::<Vec<_>>(),
        )
    };
    json!({"kruise.io/sidecarset-hash": entries(false), "kruise.io/sidecarset-hash-without-image": entries(true),
           "kruise.io/sidecarset-injected-list": injected_list})
}

pub fn add_annotations(pod: &mut Value, annotations: Value) {
    let meta = pod["metadata"].as_object_mut().unwrap();
    let a = meta.entry("annotations").or_insert_with(|| json!({}));
    for (k, v) in annotations.as_object().unwrap() {
        a[k] = v.clone();
    }
}
