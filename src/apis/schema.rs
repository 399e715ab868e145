//! Hand-written schema fragments, so that the generated CRDs say what kruise's controller-gen
//! CRDs say (checked field by field against kruise v1.8's by `tests/crd_schemas.rs`):
//! - fields kruise marks `Schemaless` + `PreserveUnknownFields` (pod templates, volume claim
//!   templates, SidecarSet volumes, the workload templates of UnitedDeployment and AdvancedCronJob,
//!   subset patches): the apiserver keeps every field there, including fields of Kubernetes
//!   versions newer than ours, and neither types nor prunes them;
//! - Kubernetes types marked `+structType=atomic` (`LabelSelector`, `LocalObjectReference`,
//!   `NodeSelectorTerm`, `ObjectReference`):
//!   `x-kubernetes-map-type: atomic`, so server-side apply replaces a selector whole;
//! - `required` lists where kruise's Go fields have no `omitempty`;
//! - embedded objects (`EmbeddedResource`, a ResourceDistribution's resource);
//! - `enum`s of `+kubebuilder:validation:Enum` types, which the apiserver enforces before any
//!   webhook is called.

use k8s_openapi::api::core::v1::{LocalObjectReference, NodeSelectorTerm, ObjectReference, PreferredSchedulingTerm};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

/// A field whose content is neither validated nor pruned, nor even typed (kruise's
/// `Schemaless` fields).
pub fn preserve_unknown(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "x-kubernetes-preserve-unknown-fields": true
    })
}

/// An array of objects whose content is not validated nor pruned.
pub fn preserve_unknown_array(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "items": {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": true
        }
    })
}

/// Marks a schema `x-kubernetes-map-type: atomic` (a struct transform).
pub fn atomic(schema: &mut Schema) {
    schema.insert("x-kubernetes-map-type".into(), "atomic".into());
}

/// `metav1.LabelSelector` (atomic), also for `Option` fields.
pub fn label_selector(generator: &mut SchemaGenerator) -> Schema {
    let mut s = LabelSelector::json_schema(generator);
    atomic(&mut s);
    s
}

/// `[]corev1.LocalObjectReference` (atomic items, nothing required: `name` defaults to "").
pub fn local_object_references(generator: &mut SchemaGenerator) -> Schema {
    let mut item = LocalObjectReference::json_schema(generator);
    item.remove("required");
    atomic(&mut item);
    json_schema!({ "type": "array", "items": item })
}

/// Sets the `required` list of a struct's schema (a struct transform).
pub fn require(schema: &mut Schema, fields: &[&str]) {
    schema.insert("required".into(), fields.iter().map(|f| serde_json::Value::from(*f)).collect());
}

/// A whole Kubernetes object kept as sent (kruise's `runtime.RawExtension` marked
/// `EmbeddedResource` + `PreserveUnknownFields`): the apiserver requires its `apiVersion` and
/// `kind` and validates its `metadata`, and prunes nothing inside.
pub fn embedded_resource(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-embedded-resource": true,
        "x-kubernetes-preserve-unknown-fields": true
    })
}

/// An embedded `metav1.ObjectMeta` that controller-gen declares as a bare `type: object` (no
/// `generateEmbeddedObjectMeta`): the apiserver prunes every field under it, as it does for
/// kruise (AdvancedCronJob's `broadcastJobTemplate.metadata`).
pub fn bare_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "object" })
}

/// A string restricted to `values` (`+kubebuilder:validation:Enum`).
pub fn string_enum(values: &[&str]) -> Schema {
    json_schema!({ "type": "string", "enum": values })
}

/// `corev1.NodeSelectorTerm` (`+structType=atomic`), also for `Option` fields.
pub fn node_selector_term(generator: &mut SchemaGenerator) -> Schema {
    let mut s = NodeSelectorTerm::json_schema(generator);
    atomic(&mut s);
    s
}

/// `[]corev1.PreferredSchedulingTerm`, each `preference` an atomic `NodeSelectorTerm`.
pub fn preferred_scheduling_terms(generator: &mut SchemaGenerator) -> Schema {
    let mut item = PreferredSchedulingTerm::json_schema(generator);
    if let Some(preference) = item.get_mut("properties").and_then(|p| p.get_mut("preference")) {
        *preference = node_selector_term(generator).to_value();
    }
    json_schema!({ "type": "array", "items": item })
}

/// `[]corev1.ObjectReference` (atomic items, as `+structType=atomic` marks them).
pub fn object_references(generator: &mut SchemaGenerator) -> Schema {
    let mut item = ObjectReference::json_schema(generator);
    atomic(&mut item);
    json_schema!({ "type": "array", "items": item })
}
