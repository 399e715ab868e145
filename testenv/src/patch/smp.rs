//! Strategic merge patch, the patch kubectl sends for built-in kinds: maps merge recursively,
//! `null` deletes, and the keyed lists of the core types (containers, volumes, env, ports,
//! conditions, volumeMounts, ownerReferences, …) merge element-wise by their merge key instead of
//! being replaced. The `$patch` (replace/delete/merge), `$retainKeys`, `$setElementOrder/<list>` and
//! `$deleteFromPrimitiveList/<list>` directives are honoured. The strategy is chosen by field name,
//! which is how the Kubernetes types declare it for every field this harness needs.

use serde_json::{Map, Value};

/// How a list field merges.
#[derive(Debug, Clone, Copy, PartialEq)]
enum ListStrategy {
    /// Merge maps element-wise by this key.
    Keyed(&'static str),
    /// Union of primitive values (`finalizers`).
    PrimitiveMerge,
    /// Replace the whole list.
    Replace,
}

fn list_strategy(field: &str, elements: &[&Value]) -> ListStrategy {
    match field {
        "containers" | "initContainers" | "ephemeralContainers" | "volumes" | "env" | "imagePullSecrets" => {
            ListStrategy::Keyed("name")
        }
        "volumeMounts" => ListStrategy::Keyed("mountPath"),
        "volumeDevices" => ListStrategy::Keyed("devicePath"),
        "conditions" => ListStrategy::Keyed("type"),
        "ownerReferences" => ListStrategy::Keyed("uid"),
        "hostAliases" | "podIPs" | "hostIPs" => ListStrategy::Keyed("ip"),
        "topologySpreadConstraints" => ListStrategy::Keyed("topologyKey"),
        "ports" => {
            if elements.iter().any(|e| e.get("containerPort").is_some()) {
                ListStrategy::Keyed("containerPort")
            } else {
                ListStrategy::Keyed("port")
            }
        }
        "finalizers" => ListStrategy::PrimitiveMerge,
        _ => ListStrategy::Replace,
    }
}

const PATCH: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ORDER: &str = "$setElementOrder/";
const DELETE_PRIMITIVE: &str = "$deleteFromPrimitiveList/";

/// Applies a strategic merge patch to `original`.
pub fn apply(original: &Value, patch: &Value) -> Result<Value, String> {
    match (original, patch) {
        (Value::Object(o), Value::Object(p)) => Ok(merge_map(o, p)?.map(Value::Object).unwrap_or(Value::Null)),
        (_, Value::Object(p)) => Ok(merge_map(&Map::new(), p)?.map(Value::Object).unwrap_or(Value::Null)),
        _ => Err("strategic merge patch must be a JSON object".into()),
    }
}

/// Merges a patch map into an original map; `None` means the map is deleted (`$patch: delete`).
fn merge_map(orig: &Map<String, Value>, patch: &Map<String, Value>) -> Result<Option<Map<String, Value>>, String> {
    match patch.get(PATCH).and_then(Value::as_str) {
        Some("delete") => return Ok(None),
        Some("replace") => {
            let mut out = patch.clone();
            out.remove(PATCH);
            return Ok(Some(strip_directives(out)));
        }
        Some("merge") | None => {}
        Some(other) => return Err(format!("unknown patch type {other:?} in $patch directive")),
    }
    let mut out = orig.clone();
    if let Some(keys) = patch.get(RETAIN_KEYS) {
        let keep: Vec<&str> =
            keys.as_array().ok_or("$retainKeys must be a list")?.iter().filter_map(Value::as_str).collect();
        out.retain(|k, _| keep.contains(&k.as_str()));
    }
    for (key, pval) in patch {
        if key == PATCH || key == RETAIN_KEYS || key.starts_with(SET_ORDER) {
            continue;
        }
        if let Some(field) = key.strip_prefix(DELETE_PRIMITIVE) {
            let remove = pval.as_array().ok_or("$deleteFromPrimitiveList needs a list")?;
            if let Some(Value::Array(list)) = out.get_mut(field) {
                list.retain(|v| !remove.contains(v));
            }
            continue;
        }
        if pval.is_null() {
            out.remove(key);
            continue;
        }
        let merged = match (out.get(key), pval) {
            (Some(Value::Object(o)), Value::Object(p)) => merge_map(o, p)?.map(Value::Object),
            (None, Value::Object(p)) => merge_map(&Map::new(), p)?.map(Value::Object),
            (Some(Value::Array(o)), Value::Array(p)) => Some(Value::Array(merge_list(key, o, p)?)),
            (None, Value::Array(p)) => Some(Value::Array(merge_list(key, &[], p)?)),
            (_, p) => Some(p.clone()),
        };
        match merged {
            Some(v) => {
                out.insert(key.clone(), v);
            }
            None => {
                out.remove(key);
            }
        }
    }
    for (key, order) in patch {
        if let Some(field) = key.strip_prefix(SET_ORDER)
            && let (Some(Value::Array(list)), Some(order)) = (out.get_mut(field), order.as_array())
        {
            reorder(field, list, order);
        }
    }
    Ok(Some(out))
}

fn strip_directives(mut map: Map<String, Value>) -> Map<String, Value> {
    map.retain(|k, _| !k.starts_with('$'));
    for v in map.values_mut() {
        if let Value::Object(m) = v {
            *m = strip_directives(std::mem::take(m));
        }
    }
    map
}

fn merge_list(field: &str, orig: &[Value], patch: &[Value]) -> Result<Vec<Value>, String> {
    // `{"$patch": "replace"}` as a list element: the rest of the patch list replaces the list.
    if patch.iter().any(|e| e.get(PATCH).and_then(Value::as_str) == Some("replace")) {
        return Ok(patch.iter().filter(|e| e.get(PATCH).is_none()).cloned().collect());
    }
    let all: Vec<&Value> = orig.iter().chain(patch.iter()).collect();
    match list_strategy(field, &all) {
        ListStrategy::Replace => Ok(patch
            .iter()
            .filter(|e| e.get(PATCH).is_none())
            .map(|e| match e {
                Value::Object(m) => Value::Object(strip_directives(m.clone())),
                other => other.clone(),
            })
            .collect()),
        ListStrategy::PrimitiveMerge => {
            let mut out = orig.to_vec();
            for v in patch {
                if !out.contains(v) {
                    out.push(v.clone());
                }
            }
            Ok(out)
        }
        ListStrategy::Keyed(merge_key) => {
            let mut out = orig.to_vec();
            for pe in patch {
                let Some(pmap) = pe.as_object() else {
                    return Err(format!("{field}: keyed list elements must be objects"));
                };
                let Some(kval) = pmap.get(merge_key) else {
                    return Err(format!("{field}: element is missing merge key {merge_key:?}"));
                };
                let pos = out.iter().position(|e| e.get(merge_key) == Some(kval));
                if pmap.get(PATCH).and_then(Value::as_str) == Some("delete") {
                    if let Some(i) = pos {
                        out.remove(i);
                    }
                    continue;
                }
                match pos {
                    Some(i) => {
                        let base = out[i].as_object().cloned().unwrap_or_default();
                        match merge_map(&base, pmap)? {
                            Some(m) => out[i] = Value::Object(m),
                            None => {
                                out.remove(i);
                            }
                        }
                    }
                    None => {
                        if let Some(m) = merge_map(&Map::new(), pmap)? {
                            out.push(Value::Object(m));
                        }
                    }
                }
            }
            Ok(out)
        }
    }
}

fn reorder(field: &str, list: &mut [Value], order: &[Value]) {
    let all: Vec<&Value> = list.iter().chain(order.iter()).collect();
    let position = |v: &Value| -> usize {
        match list_strategy(field, &all) {
            ListStrategy::Keyed(k) => order.iter().position(|o| o.get(k).is_some() && o.get(k) == v.get(k)),
            _ => order.iter().position(|o| o == v),
        }
        .unwrap_or(usize::MAX)
    };
    let mut indexed: Vec<(usize, Value)> = list.iter().map(|v| (position(v), v.clone())).collect();
    indexed.sort_by_key(|(p, _)| *p);
    for (slot, (_, v)) in list.iter_mut().zip(indexed) {
        *slot = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Value {
        json!({
            "metadata": {"name": "p", "labels": {"a": "1", "b": "2"}, "finalizers": ["x"]},
            "spec": {
                "containers": [
                    {"name": "main", "image": "nginx:1", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                     "ports": [{"containerPort": 80, "name": "http"}]},
                    {"name": "side", "image": "envoy:1"}
                ],
                "volumes": [{"name": "v1", "emptyDir": {}}],
                "tolerations": [{"key": "a"}]
            },
            "status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "X", "status": "True"}]}
        })
    }

    #[test]
    fn keyed_lists_merge_by_key() {
        let patch = json!({
            "metadata": {"labels": {"a": null, "c": "3"}, "finalizers": ["y"]},
            "spec": {
                "containers": [{"name": "main", "image": "nginx:2", "env": [{"name": "B", "$patch": "delete"}, {"name": "C", "value": "3"}]}],
                "tolerations": [{"key": "b"}]
            },
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}
        });
        let out = apply(&pod(), &patch).unwrap();
        assert_eq!(out["metadata"]["labels"], json!({"b": "2", "c": "3"}));
        assert_eq!(out["metadata"]["finalizers"], json!(["x", "y"]));
        let c = &out["spec"]["containers"];
        assert_eq!(c.as_array().unwrap().len(), 2);
        assert_eq!(c[0]["image"], "nginx:2");
        assert_eq!(c[0]["env"], json!([{"name": "A", "value": "1"}, {"name": "C", "value": "3"}]));
        assert_eq!(c[0]["ports"][0]["name"], "http");
        assert_eq!(c[1]["image"], "envoy:1");
        assert_eq!(out["spec"]["tolerations"], json!([{"key": "b"}]));
        assert_eq!(out["status"]["conditions"][0]["status"], "True");
        assert_eq!(out["status"]["conditions"][1]["type"], "X");
    }

    #[test]
    fn directives() {
        let patch = json!({
            "metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]},
            "spec": {
                "$setElementOrder/containers": [{"name": "side"}, {"name": "main"}],
                "containers": [{"name": "main", "image": "nginx:3"}],
                "volumes": [{"name": "v2", "configMap": {"name": "c"}}, {"$patch": "replace"}]
            },
            "status": {"$patch": "replace", "phase": "Running"}
        });
        let out = apply(&pod(), &patch).unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!([]));
        assert_eq!(out["spec"]["containers"][0]["name"], "side");
        assert_eq!(out["spec"]["containers"][1]["image"], "nginx:3");
        assert_eq!(out["spec"]["volumes"], json!([{"name": "v2", "configMap": {"name": "c"}}]));
        assert_eq!(out["status"], json!({"phase": "Running"}));
    }

    #[test]
    fn retain_keys_and_delete_map() {
        let orig =
            json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}, "x": {"y": 1}}});
        let patch =
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}, "x": {"$patch": "delete"}}});
        let out = apply(&orig, &patch).unwrap();
        assert_eq!(out, json!({"spec": {"strategy": {"type": "Recreate"}}}));
    }

    #[test]
    fn service_ports_key_on_port() {
        let orig = json!({"spec": {"ports": [{"port": 80, "name": "a"}, {"port": 443, "name": "b"}]}});
        let out = apply(&orig, &json!({"spec": {"ports": [{"port": 443, "targetPort": 8443}]}})).unwrap();
        assert_eq!(out["spec"]["ports"][1], json!({"port": 443, "name": "b", "targetPort": 8443}));
    }

    #[test]
    fn keyed_element_without_key_is_an_error() {
        assert!(apply(&pod(), &json!({"spec": {"containers": [{"image": "x"}]}})).is_err());
    }
}
