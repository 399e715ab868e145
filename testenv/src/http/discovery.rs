//! Discovery documents (`/api`, `/apis`, `/apis/<group>`, group-version resource lists, `/version`)
//! generated from the resource catalogue, in the legacy (unaggregated) form kubectl and kube-rs
//! fall back to when the server does not answer with aggregated discovery.

use crate::resources::{Registry, ResourceDef};
use serde_json::{Value, json};
use std::net::SocketAddr;

const VERBS: &[&str] = &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

/// `GET /version`.
pub fn version() -> Value {
    json!({
        "major": "1", "minor": "35", "gitVersion": "v1.35.0-kruise-testenv",
        "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z", "goVersion": "go1.24", "compiler": "gc",
        "platform": "linux/amd64",
    })
}

/// `GET /api`.
pub fn core_versions(addr: SocketAddr) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": addr.to_string()}],
    })
}

fn group_doc(name: &str, versions: &[String]) -> Value {
    let gv = |v: &String| json!({"groupVersion": format!("{name}/{v}"), "version": v});
    json!({
        "name": name,
        "versions": versions.iter().map(gv).collect::<Vec<_>>(),
        "preferredVersion": versions.first().map(gv).unwrap_or(Value::Null),
    })
}

/// `GET /apis`.
pub fn group_list(reg: &Registry) -> Value {
    let groups: Vec<Value> = reg.groups().iter().map(|(g, vs)| group_doc(g, vs)).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `GET /apis/<group>`.
pub fn group(reg: &Registry, name: &str) -> Option<Value> {
    let groups = reg.groups();
    let (_, versions) = groups.iter().find(|(g, _)| g == name)?;
    let mut doc = group_doc(name, versions);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

fn resource_entries(def: &ResourceDef) -> Vec<Value> {
    let mut out = vec![json!({
        "name": def.resource,
        "singularName": def.singular,
        "namespaced": def.namespaced,
        "kind": def.kind,
        "verbs": VERBS,
        "shortNames": def.short_names,
        "categories": def.categories,
    })];
    let sub = |name: &str, kind: &str, group: Option<(&str, &str)>, verbs: &[&str]| {
        let mut e = json!({
            "name": format!("{}/{name}", def.resource),
            "singularName": "",
            "namespaced": def.namespaced,
            "kind": kind,
            "verbs": verbs,
        });
        if let Some((g, v)) = group {
            e["group"] = json!(g);
            e["version"] = json!(v);
        }
        e
    };
    if def.status {
        out.push(sub("status", &def.kind, None, &["get", "patch", "update"]));
    }
    if def.scale.is_some() {
        out.push(sub("scale", "Scale", Some(("autoscaling", "v1")), &["get", "patch", "update"]));
    }
    for extra in def.extra_subresources() {
        match *extra {
            "eviction" => out.push(sub("eviction", "Eviction", Some(("policy", "v1")), &["create"])),
            "binding" => out.push(sub("binding", "Binding", None, &["create"])),
            _ => {}
        }
    }
    out
}

/// `GET /api/v1` or `GET /apis/<group>/<version>`.
pub fn resource_list(reg: &Registry, group: &str, version: &str) -> Option<Value> {
    let resources: Vec<Value> =
        reg.all().filter(|d| d.group == group && d.serves(version)).flat_map(|d| resource_entries(d)).collect();
    if resources.is_empty() {
        return None;
    }
    let gv = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}))
}
