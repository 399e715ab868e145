//! Object metadata rules of the workload validators (spec §2.1 items 1 and 18, §2.2 items 1 and
//! 16): apimachinery's `ValidateObjectMeta` and `ValidateObjectMetaUpdate`, for the fields a
//! validating webhook can actually get wrong. Name (or generateName), namespace, labels and
//! annotations on CREATE; on UPDATE the immutable identity fields plus labels and annotations.
//! Left to the apiserver, which checks them itself before any webhook sees the object:
//! ownerReferences, finalizer names, managedFields, and the update rules on resourceVersion and
//! generation (the apiserver fills both before calling validating webhooks).

use super::json;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

use crate::compat::field::{FieldError, child};
use crate::compat::names::{is_dns1123_label, is_dns1123_subdomain, validate_annotations, validate_labels};

/// `apimachineryvalidation.FieldImmutableErrorMsg`.
pub const FIELD_IMMUTABLE: &str = "field is immutable";

/// `NameIsDNSSubdomain(name, prefix)`: with `prefix` a trailing dash is allowed (generateName).
pub fn name_is_dns_subdomain(name: &str, prefix: bool) -> Vec<String> {
    if prefix && name.len() > 1 && name.ends_with('-') {
        let masked = format!("{}a", &name[..name.len() - 1]);
        return is_dns1123_subdomain(&masked);
    }
    is_dns1123_subdomain(name)
}

/// `ValidateObjectMeta(meta, requiresNamespace, NameIsDNSSubdomain, path)`. Both CloneSet and
/// Advanced StatefulSet names are DNS-1123 subdomains (kruise vendors Kubernetes 1.32, where
/// `ValidateStatefulSetName` is still the subdomain rule).
pub fn validate_object_meta(meta: &ObjectMeta, requires_namespace: bool, path: &str) -> Vec<FieldError> {
    validate_object_meta_with(meta, requires_namespace, name_is_dns_subdomain, path)
}

/// `ValidateObjectMeta(meta, requiresNamespace, nameFn, path)` with a kind's own name rule
/// (`nameFn(name, prefix)` returns the messages).
pub fn validate_object_meta_with(
    meta: &ObjectMeta,
    requires_namespace: bool,
    name_fn: fn(&str, bool) -> Vec<String>,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let generate_name = meta.generate_name.as_deref().unwrap_or("");
    if !generate_name.is_empty() {
        let p = child(path, "generateName");
        errs.extend(name_fn(generate_name, true).into_iter().map(|m| FieldError::invalid(&p, generate_name, m)));
    }
    let name = meta.name.as_deref().unwrap_or("");
    let name_path = child(path, "name");
    if name.is_empty() {
        errs.push(FieldError::required(&name_path, "name or generateName is required"));
    } else {
        errs.extend(name_fn(name, false).into_iter().map(|m| FieldError::invalid(&name_path, name, m)));
    }
    if requires_namespace {
        let namespace = meta.namespace.as_deref().unwrap_or("");
        let ns_path = child(path, "namespace");
        if namespace.is_empty() {
            errs.push(FieldError::required(&ns_path, ""));
        } else {
            errs.extend(is_dns1123_label(namespace).into_iter().map(|m| FieldError::invalid(&ns_path, namespace, m)));
        }
    }
    errs.extend(labels_and_annotations(meta, path));
    errs
}

/// `ValidateObjectMetaUpdate`: name, namespace, uid, creationTimestamp, deletionTimestamp and
/// deletionGracePeriodSeconds may not change; the new labels and annotations must be valid.
pub fn validate_object_meta_update(new: &ObjectMeta, old: &ObjectMeta, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let text = |v: &Option<String>| Value::from(v.clone().unwrap_or_default());
    let immutable: [(&str, Value, Value); 6] = [
        ("name", text(&new.name), text(&old.name)),
        ("namespace", text(&new.namespace), text(&old.namespace)),
        ("uid", text(&new.uid), text(&old.uid)),
        ("creationTimestamp", json(&new.creation_timestamp), json(&old.creation_timestamp)),
        ("deletionTimestamp", json(&new.deletion_timestamp), json(&old.deletion_timestamp)),
        (
            "deletionGracePeriodSeconds",
            json(&new.deletion_grace_period_seconds),
            json(&old.deletion_grace_period_seconds),
        ),
    ];
    for (field, new_value, old_value) in immutable {
        if new_value != old_value {
            errs.push(FieldError::invalid(&child(path, field), new_value, FIELD_IMMUTABLE));
        }
    }
    errs.extend(labels_and_annotations(new, path));
    errs
}

fn labels_and_annotations(meta: &ObjectMeta, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(labels) = &meta.labels {
        errs.extend(validate_labels(labels, &child(path, "labels")));
    }
    if let Some(annotations) = &meta.annotations {
        errs.extend(validate_annotations(annotations, &child(path, "annotations")));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::field::aggregate;
    use serde_json::json;

    fn meta(v: Value) -> ObjectMeta {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn create_table() {
        let subdomain = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or \
                         '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used \
                         for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
        #[rustfmt::skip]
        let cases: Vec<(Value, String)> = vec![
            (json!({"name": "web", "namespace": "default"}), String::new()),
            (json!({"name": "web.v2", "namespace": "default"}), String::new()),
            (json!({"name": "web", "generateName": "web-", "namespace": "ns"}), String::new()),
            (json!({"namespace": "default"}), "metadata.name: Required value: name or generateName is required".into()),
            (json!({"name": "Web", "namespace": "default"}), format!("metadata.name: Invalid value: \"Web\": {subdomain}")),
            (json!({"name": "web"}), "metadata.namespace: Required value".into()),
            (json!({"name": "web", "namespace": "default", "labels": {"a": "-x"}}),
             "metadata.labels: Invalid value: \"-x\": a valid label must be an empty string or consist of alphanumeric \
              characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or \
              'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".into()),
        ];
        for (m, want) in cases {
            assert_eq!(aggregate(&validate_object_meta(&meta(m.clone()), true, "metadata")), want, "{m}");
        }
    }

    #[test]
    fn update_table() {
        let old = json!({"name": "web", "namespace": "ns", "uid": "u1", "creationTimestamp": "2024-01-01T00:00:00Z"});
        #[rustfmt::skip]
        let cases: Vec<(Value, &str)> = vec![
            (old.clone(), ""),
            (json!({"name": "web", "namespace": "ns", "uid": "u1", "creationTimestamp": "2024-01-01T00:00:00Z",
                    "labels": {"new": "label"}}), ""),
            (json!({"name": "web2", "namespace": "ns", "uid": "u1", "creationTimestamp": "2024-01-01T00:00:00Z"}),
             "metadata.name: Invalid value: \"web2\": field is immutable"),
            (json!({"name": "web", "namespace": "ns", "uid": "u2", "creationTimestamp": "2024-01-01T00:00:00Z"}),
             "metadata.uid: Invalid value: \"u2\": field is immutable"),
            (json!({"name": "web", "namespace": "ns", "uid": "u1", "creationTimestamp": "2025-01-01T00:00:00Z"}),
             "metadata.creationTimestamp: Invalid value: \"2025-01-01T00:00:00Z\": field is immutable"),
        ];
        for (new, want) in cases {
            let errs = validate_object_meta_update(&meta(new.clone()), &meta(old.clone()), "metadata");
            assert_eq!(aggregate(&errs), want, "{new}");
        }
    }

    #[test]
    fn generate_name_may_end_with_a_dash() {
        assert!(name_is_dns_subdomain("web-", true).is_empty());
        assert!(!name_is_dns_subdomain("web-", false).is_empty());
    }
}
