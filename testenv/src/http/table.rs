//! `meta.k8s.io/v1 Table` answers for clients that ask for them (`kubectl get` without `-o`):
//! NAME and AGE for every kind, READY/STATUS/RESTARTS for pods, and a CRD's
//! additionalPrinterColumns (simple dotted JSON paths).

use crate::meta;
use crate::resources::ResourceDef;
use serde_json::{Value, json};

/// The `Accept` header asks for a Table.
pub fn wanted(accept: &str) -> bool {
    accept.split(',').next().is_some_and(|first| first.contains("as=Table"))
}

fn column(name: &str, type_: &str, format: &str) -> Value {
    json!({"name": name, "type": type_, "format": format, "description": "", "priority": 0})
}

fn pod_cells(pod: &Value) -> Vec<Value> {
    let statuses = pod.pointer("/status/containerStatuses").and_then(Value::as_array).cloned().unwrap_or_default();
    let total = pod.pointer("/spec/containers").and_then(Value::as_array).map_or(0, Vec::len);
    let ready = statuses.iter().filter(|s| s.get("ready").and_then(Value::as_bool) == Some(true)).count();
    let restarts: i64 = statuses.iter().filter_map(|s| s.get("restartCount").and_then(Value::as_i64)).sum();
    let phase = if meta::is_deleting(pod) {
        "Terminating".to_string()
    } else {
        pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or("Pending").to_string()
    };
    vec![json!(format!("{ready}/{total}")), json!(phase), json!(restarts)]
}

/// Converts one object or a list into a Table.
pub fn to_table(doc: &Value, def: &ResourceDef) -> Value {
    let is_pod = def.group.is_empty() && def.resource == "pods";
    let mut columns = vec![column("Name", "string", "name")];
    if is_pod {
        columns.extend([
            column("Ready", "string", ""),
            column("Status", "string", ""),
            column("Restarts", "integer", ""),
        ]);
    }
    for c in &def.printer_columns {
        if c.type_ != "date" {
            columns.push(column(&c.name, &c.type_, ""));
        }
    }
    columns.push(column("Age", "string", ""));
    let items: Vec<Value> = match doc.get("items").and_then(Value::as_array) {
        Some(items) => items.clone(),
        None => vec![doc.clone()],
    };
    let rows: Vec<Value> = items
        .iter()
        .map(|obj| {
            let mut cells = vec![json!(meta::name(obj))];
            if is_pod {
                cells.extend(pod_cells(obj));
            }
            for c in def.printer_columns.iter().filter(|c| c.type_ != "date") {
                cells.push(meta::dotted(obj, &c.json_path).cloned().unwrap_or(json!("<none>")));
            }
            cells.push(json!(meta::age(meta::meta_str(obj, "creationTimestamp"))));
            json!({"cells": cells, "object": obj})
        })
        .collect();
    let rv = doc.pointer("/metadata/resourceVersion").cloned().unwrap_or(json!(""));
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": rv},
        "columnDefinitions": columns,
        "rows": rows,
    })
}
