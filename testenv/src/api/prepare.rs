//! What the apiserver's registry strategies do to an object before it is stored: clear or keep
//! the fields only the server sets (uid, creationTimestamp, resourceVersion, generation,
//! deletionTimestamp), separate status from the main resource, bump `generation` on spec changes
//! only, apply the few defaults controllers rely on (pod spec defaults, namespace name label and
//! finalizer, service clusterIP) and fill in a CustomResourceDefinition's status.

use crate::meta;
use crate::resources::ResourceDef;
use serde_json::{Map, Value, json};

const SYSTEM_FIELDS: &[&str] = &[
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "managedFields",
    "selfLink",
];

fn is(def: &ResourceDef, group: &str, resource: &str) -> bool {
    def.group == group && def.resource == resource
}

/// Clears what a client may not set on create.
pub fn clear_system_fields(obj: &mut Value) {
    if let Some(m) = meta::meta_mut(obj) {
        for f in SYSTEM_FIELDS {
            m.remove(*f);
        }
    }
}

/// Completes an object for storage on create.
pub fn finish_create(obj: &mut Value, def: &ResourceDef) {
    clear_system_fields(obj);
    if meta::name(obj).is_empty() {
        let prefix = meta::meta_str(obj, "generateName").to_string();
        meta::set_meta(obj, "name", json!(format!("{prefix}{}", meta::name_suffix())));
    }
    meta::set_meta(obj, "uid", json!(meta::new_uid()));
    meta::set_meta(obj, "creationTimestamp", json!(meta::now()));
    meta::set_meta(obj, "generation", json!(1));
    if def.status
        && !is(def, "", "nodes")
        && !is(def, "apiextensions.k8s.io", "customresourcedefinitions")
        && let Some(m) = obj.as_object_mut()
    {
        m.remove("status");
    }
    defaults(obj, def);
    if is(def, "", "pods") {
        obj["status"] = json!({"phase": "Pending", "qosClass": "BestEffort"});
    }
    if is(def, "", "namespaces") {
        obj["status"] = json!({"phase": "Active"});
    }
    if is(def, "", "services") {
        if obj.pointer("/spec/clusterIP").is_none() {
            meta::set_dotted(
                obj,
                "spec.clusterIP",
                json!(format!("10.96.{}.{}", fastrand::u8(..), fastrand::u8(1..255))),
            );
        }
        obj["status"] = json!({"loadBalancer": {}});
    }
    if is(def, "apiextensions.k8s.io", "customresourcedefinitions") {
        crd_status(obj);
    }
}

/// Builds the object to store for an update from the current object and the client's new one.
pub fn for_update(current: &Value, new: Value, def: &ResourceDef, subresource: &str) -> Value {
    let mut out = if subresource == "status" {
        let mut o = current.clone();
        set_or_remove(&mut o, "status", new.get("status").cloned());
        o
    } else {
        let mut o = new;
        if def.status {
            set_or_remove(&mut o, "status", current.get("status").cloned());
        }
        o
    };
    let cur_meta = current.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
    if let Some(m) = meta::meta_mut(&mut out) {
        for f in SYSTEM_FIELDS.iter().chain(&["name", "namespace"]) {
            match cur_meta.get(*f) {
                Some(v) => m.insert(f.to_string(), v.clone()),
                None => m.remove(*f),
            };
        }
    }
    defaults(&mut out, def);
    if is(def, "apiextensions.k8s.io", "customresourcedefinitions") {
        crd_status(&mut out);
    }
    out
}

fn set_or_remove(obj: &mut Value, key: &str, value: Option<Value>) {
    if let Some(m) = obj.as_object_mut() {
        match value {
            Some(v) => m.insert(key.to_string(), v),
            None => m.remove(key),
        };
    }
}

/// Everything but metadata and status: what `generation` tracks.
fn spec_part(obj: &Value) -> Map<String, Value> {
    let mut m = obj.as_object().cloned().unwrap_or_default();
    for k in ["metadata", "status", "apiVersion", "kind"] {
        m.remove(k);
    }
    m
}

/// Bumps `generation` when anything outside metadata and status changed.
pub fn bump_generation(current: &Value, new: &mut Value) {
    let gen_now = meta::generation(current);
    let next = if spec_part(current) != spec_part(new) { gen_now + 1 } else { gen_now };
    meta::set_meta(new, "generation", json!(next.max(1)));
}

/// Equal but for resourceVersion and managedFields: such an update writes nothing.
pub fn is_noop(current: &Value, new: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = meta::meta_mut(&mut v) {
            m.remove("resourceVersion");
            m.remove("managedFields");
        }
        v
    };
    strip(current) == strip(new)
}

fn defaults(obj: &mut Value, def: &ResourceDef) {
    if is(def, "", "namespaces") {
        let name = meta::name(obj).to_string();
        if let Some(m) = meta::meta_mut(obj) {
            let labels = m.entry("labels").or_insert_with(|| json!({}));
            if let Some(l) = labels.as_object_mut() {
                l.insert("kubernetes.io/metadata.name".into(), json!(name));
            }
        }
        if obj.pointer("/spec/finalizers").is_none() {
            meta::set_dotted(obj, "spec.finalizers", json!(["kubernetes"]));
        }
    }
    if is(def, "", "pods")
        && let Some(spec) = obj.get_mut("spec")
    {
        pod_spec_defaults(spec);
    }
}

/// The pod spec defaults kube-apiserver applies that controllers commonly compare against.
pub fn pod_spec_defaults(spec: &mut Value) {
    let Some(s) = spec.as_object_mut() else {
        return;
    };
    s.entry("restartPolicy").or_insert_with(|| json!("Always"));
    s.entry("terminationGracePeriodSeconds").or_insert_with(|| json!(30));
    s.entry("dnsPolicy").or_insert_with(|| json!("ClusterFirst"));
    s.entry("schedulerName").or_insert_with(|| json!("default-scheduler"));
    for list in ["initContainers", "containers"] {
        if let Some(Value::Array(cs)) = s.get_mut(list) {
            for c in cs.iter_mut().filter_map(Value::as_object_mut) {
                let image = c.get("image").and_then(Value::as_str).unwrap_or("");
                let last = image.rsplit('/').next().unwrap_or("");
                let latest = (!last.contains(':') && !image.contains('@')) || image.ends_with(":latest");
                let policy = if latest { "Always" } else { "IfNotPresent" };
                c.entry("imagePullPolicy").or_insert_with(|| json!(policy));
                c.entry("terminationMessagePath").or_insert_with(|| json!("/dev/termination-log"));
                c.entry("terminationMessagePolicy").or_insert_with(|| json!("File"));
            }
        }
    }
}

/// A CRD is accepted and established as soon as it is stored.
fn crd_status(crd: &mut Value) {
    let names = crd.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let stored: Vec<Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter(|v| v.get("storage").and_then(Value::as_bool).unwrap_or(false))
                .filter_map(|v| v.get("name").cloned())
                .collect()
        })
        .unwrap_or_default();
    let previous = crd.pointer("/status/conditions").cloned();
    let now = meta::now();
    let conditions = previous.unwrap_or_else(|| {
        json!([
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
             "message": "no conflicts found", "lastTransitionTime": now},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted", "lastTransitionTime": now},
        ])
    });
    let mut stored_versions: Vec<Value> =
        crd.pointer("/status/storedVersions").and_then(Value::as_array).cloned().unwrap_or_default();
    for v in stored {
        if !stored_versions.contains(&v) {
            stored_versions.push(v);
        }
    }
    crd["status"] = json!({
        "acceptedNames": names,
        "conditions": conditions,
        "storedVersions": stored_versions,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Registry;

    #[test]
    fn status_separation() {
        let reg = Registry::default();
        let def = reg.by_group_resource("apps", "deployments").unwrap();
        let cur = json!({"metadata": {"name": "d", "uid": "u", "generation": 1, "resourceVersion": "5"},
                         "spec": {"replicas": 1}, "status": {"replicas": 1}});
        let main = for_update(
            &cur,
            json!({"metadata": {"name": "d", "uid": "x"}, "spec": {"replicas": 2}, "status": {"replicas": 9}}),
            &def,
            "",
        );
        assert_eq!(main["status"]["replicas"], 1);
        assert_eq!(main["spec"]["replicas"], 2);
        assert_eq!(main["metadata"]["uid"], "u");
        let status = for_update(
            &cur,
            json!({"metadata": {"name": "d", "labels": {"a": "b"}}, "spec": {"replicas": 7}, "status": {"replicas": 3}}),
            &def,
            "status",
        );
        assert_eq!(status["status"]["replicas"], 3);
        assert_eq!(status["spec"]["replicas"], 1);
        assert!(status["metadata"].get("labels").is_none());
        let mut bumped = main.clone();
        bump_generation(&cur, &mut bumped);
        assert_eq!(bumped["metadata"]["generation"], 2);
        let mut same = status.clone();
        bump_generation(&cur, &mut same);
        assert_eq!(same["metadata"]["generation"], 1);
    }

    #[test]
    fn pod_defaults() {
        let mut spec =
            json!({"containers": [{"name": "a", "image": "nginx"}, {"name": "b", "image": "reg:5000/app:1.2"}]});
        pod_spec_defaults(&mut spec);
        assert_eq!(spec["containers"][0]["imagePullPolicy"], "Always");
        assert_eq!(spec["containers"][1]["imagePullPolicy"], "IfNotPresent");
        assert_eq!(spec["terminationGracePeriodSeconds"], 30);
    }
}
