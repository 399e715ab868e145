//! Hand-written schema fragments for fields kruise marks `Schemaless` + `PreserveUnknownFields`
//! (pod templates, volume claim templates, sidecar containers): the apiserver keeps every field
//! there, including fields of Kubernetes versions newer than ours.

use schemars::{Schema, SchemaGenerator, json_schema};

/// An object whose content is not validated nor pruned.
pub fn preserve_unknown_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
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
