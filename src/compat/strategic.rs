//! `k8s.io/apimachinery/pkg/util/strategicpatch.StrategicMergePatch(original, patch, &v1.Pod{})`
//! on JSON, the part WorkloadSpread's subset `patch` uses (kruise `pkg/util/workloadspread`
//! applies it to every pod it places in a subset, and its validating webhook to the workload's
//! template): maps merge key by key, `null` deletes, lists with a `patchMergeKey` in the Pod's
//! struct tags (containers by `name`, ports by `containerPort`, volume mounts by `mountPath`,
//! ...) merge element by element, the Pod's `patchStrategy:"merge"` primitive list
//! (`metadata.finalizers`) is a union, and every other list is replaced. The `$patch: replace`
//! and `$patch: delete` directives are honoured on maps and merged list elements; the other
//! `$`-directives (`$setElementOrder`, `$retainKeys`, `$deleteFromPrimitiveList`) are dropped,
//! which keeps the original order and fields (what they would mostly keep too).

use serde_json::{Map, Value};

/// The merge key of the list at `path` (keys from the pod root, `[]` for any list element);
/// `Some("")` for a primitive list merged as a set.
fn merge_key(path: &[&str]) -> Option<&'static str> {
    let containers = |p: &str| matches!(p, "containers" | "initContainers" | "ephemeralContainers");
    match path {
        ["metadata", "finalizers"] => Some(""),
        ["metadata", "ownerReferences"] => Some("uid"),
        ["spec", c] if containers(c) => Some("name"),
        ["spec", "volumes" | "imagePullSecrets" | "resourceClaims" | "schedulingGates"] => Some("name"),
        ["spec", "hostAliases"] => Some("ip"),
        ["spec", "topologySpreadConstraints"] => Some("topologyKey"),
        ["spec", c, "[]", "env"] if containers(c) => Some("name"),
        ["spec", c, "[]", "ports"] if containers(c) => Some("containerPort"),
        ["spec", c, "[]", "volumeMounts"] if containers(c) => Some("mountPath"),
        ["spec", c, "[]", "volumeDevices"] if containers(c) => Some("devicePath"),
        _ => None,
    }
}

/// Applies `patch` to the pod JSON `original`; an error (Go's wording where it has one) when
/// the patch is not a JSON object.
pub fn apply_pod_patch(original: &Value, patch: &Value) -> Result<Value, String> {
    let Value::Object(p) = patch else {
        return Err("unable to find api field in struct Pod for the json field \"patch\"".into());
    };
    let mut out = original.clone();
    if !out.is_object() {
        out = Value::Object(Map::new());
    }
    let mut path = Vec::new();
    merge_map(&mut out, p, &mut path);
    Ok(out)
}

fn directive(m: &Map<String, Value>) -> Option<&str> {
    m.get("$patch").and_then(Value::as_str)
}

/// The patch value without its directives, for a field the original does not have.
fn clean(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            Value::Object(m.iter().filter(|(k, _)| !k.starts_with('$')).map(|(k, v)| (k.clone(), clean(v))).collect())
        }
        Value::Array(a) => Value::Array(
            a.iter().filter(|e| e.as_object().is_none_or(|m| directive(m) != Some("delete"))).map(clean).collect(),
        ),
        other => other.clone(),
    }
}

fn merge_map<'a>(target: &mut Value, patch: &'a Map<String, Value>, path: &mut Vec<&'a str>) {
    match directive(patch) {
        Some("replace") => {
            *target = clean(&Value::Object(patch.clone()));
            return;
        }
        Some("delete") => {
            *target = Value::Object(Map::new());
            return;
        }
        _ => {}
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(t) = target else { return };
    for (k, v) in patch {
        if k.starts_with('$') {
            continue;
        }
        if v.is_null() {
            t.remove(k);
            continue;
        }
        path.push(k.as_str());
        match (t.get_mut(k), v) {
            (Some(existing @ Value::Object(_)), Value::Object(pm)) => merge_map(existing, pm, path),
            (Some(Value::Array(existing)), Value::Array(pl)) => {
                if let Some(key) = merge_key(path) {
                    merge_list(existing, pl, key, path);
                } else {
                    t.insert(k.clone(), clean(v));
                }
            }
            _ => {
                t.insert(k.clone(), clean(v));
            }
        }
        path.pop();
    }
}

fn merge_list<'a>(target: &mut Vec<Value>, patch: &'a [Value], key: &str, path: &mut Vec<&'a str>) {
    if key.is_empty() {
        for v in patch {
            if !target.contains(v) {
                target.push(v.clone());
            }
        }
        return;
    }
    for element in patch {
        let Value::Object(pm) = element else {
            target.push(element.clone());
            continue;
        };
        let id = pm.get(key);
        let found = id.and_then(|id| target.iter().position(|e| e.get(key) == Some(id)));
        match (found, directive(pm)) {
            (Some(i), Some("delete")) => {
                target.remove(i);
            }
            (None, Some("delete")) => {}
            (Some(i), _) => {
                path.push("[]");
                merge_map(&mut target[i], pm, path);
                path.pop();
            }
            (None, _) => target.push(clean(element)),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn merges_maps_and_keyed_lists() {
        let pod = json!({"metadata": {"labels": {"app": "a"}, "annotations": {"x": "1"}, "finalizers": ["f1"]},
            "spec": {"containers": [
                {"name": "main", "image": "nginx", "env": [{"name": "A", "value": "1"}], "resources": {"limits": {"cpu": "1"}}},
                {"name": "side", "image": "busybox"}],
                "tolerations": [{"key": "a", "operator": "Exists"}]}});
        let patch = json!({"metadata": {"labels": {"subset": "a"}, "annotations": {"x": null}, "finalizers": ["f2", "f1"]},
            "spec": {"containers": [
                {"name": "main", "env": [{"name": "B", "value": "2"}], "resources": {"limits": {"memory": "1Gi"}}},
                {"name": "new", "image": "redis"},
                {"name": "side", "$patch": "delete"}],
                "tolerations": [{"key": "b", "operator": "Exists"}]}});
        let out = apply_pod_patch(&pod, &patch).unwrap();
        assert_eq!(
            out,
            json!({"metadata": {"labels": {"app": "a", "subset": "a"}, "annotations": {}, "finalizers": ["f1", "f2"]},
                "spec": {"containers": [
                    {"name": "main", "image": "nginx", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                        "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}},
                    {"name": "new", "image": "redis"}],
                    "tolerations": [{"key": "b", "operator": "Exists"}]}})
        );
    }

    #[test]
    fn replace_directive_and_missing_fields() {
        let pod = json!({"spec": {"nodeSelector": {"a": "1", "b": "2"}}});
        let patch =
            json!({"metadata": {"annotations": {"k": "v"}}, "spec": {"nodeSelector": {"$patch": "replace", "c": "3"}}});
        let out = apply_pod_patch(&pod, &patch).unwrap();
        assert_eq!(out, json!({"metadata": {"annotations": {"k": "v"}}, "spec": {"nodeSelector": {"c": "3"}}}));
        assert!(apply_pod_patch(&pod, &json!([1])).is_err());
    }
}
