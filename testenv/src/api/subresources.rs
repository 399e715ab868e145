//! The subresources that are not plain status writes: `scale` (an `autoscaling/v1 Scale` view of
//! the replica paths a resource declares), `pods/eviction` (admitted as a CREATE of a
//! `policy/v1 Eviction`, then deletes the pod; disruption budgets are not checked) and
//! `pods/binding` (what the scheduler posts to assign a node).

use super::{DeleteOptions, Target, attributes, delete, guaranteed, options, prepare, present, to_storage};
use crate::admission;
use crate::cluster::{Cluster, Ctx};
use crate::errors::ApiError;
use crate::meta;
use crate::selectors::Selector;
use crate::store::StoreError;
use serde_json::{Value, json};

fn scale_view(obj: &Value, t: &Target) -> Result<Value, ApiError> {
    let Some(paths) = &t.def.scale else {
        return Err(ApiError::no_route(&format!("{}/scale", t.def.resource)));
    };
    let replicas = |path: &str| meta::dotted(obj, path).and_then(Value::as_i64).unwrap_or(0);
    let selector = match &paths.label_selector {
        None => String::new(),
        Some(path) => match meta::dotted(obj, path) {
            Some(Value::String(s)) => s.clone(),
            Some(structured @ Value::Object(_)) => {
                Selector::from_label_selector(structured).map(|s| s.to_query()).unwrap_or_default()
            }
            _ => String::new(),
        },
    };
    let mut metadata = json!({
        "name": meta::name(obj),
        "uid": meta::uid(obj),
        "resourceVersion": meta::meta_str(obj, "resourceVersion"),
        "creationTimestamp": meta::meta_str(obj, "creationTimestamp"),
    });
    if t.def.namespaced {
        metadata["namespace"] = json!(meta::namespace(obj));
    }
    let mut status = json!({"replicas": replicas(&paths.status_replicas)});
    if !selector.is_empty() {
        status["selector"] = json!(selector);
    }
    Ok(json!({
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": metadata,
        "spec": {"replicas": replicas(&paths.spec_replicas)},
        "status": status,
    }))
}

/// GET .../scale.
pub fn get_scale(cluster: &Cluster, t: &Target) -> Result<Value, ApiError> {
    let obj = cluster.store.get(&t.key()).ok_or_else(|| t.not_found())?;
    scale_view(&obj, t)
}

/// PUT/PATCH .../scale: `compute` maps the current Scale to the desired one.
pub async fn write_scale<F>(cluster: &Cluster, ctx: &mut Ctx, t: &Target, compute: F) -> Result<Value, ApiError>
where
    F: Fn(&Value) -> Result<Value, ApiError>,
{
    let Some(paths) = t.def.scale.clone() else {
        return Err(ApiError::no_route(&format!("{}/scale", t.def.resource)));
    };
    let key = t.key();
    for _ in 0..guaranteed::ATTEMPTS {
        let stored = cluster.store.get(&key).ok_or_else(|| t.not_found())?;
        let current = present(&stored, &t.def, &t.version);
        let old_scale = scale_view(&current, t)?;
        let new_scale = compute(&old_scale)?;
        let wanted_rv = meta::meta_str(&new_scale, "resourceVersion");
        let pinned = !wanted_rv.is_empty();
        if pinned && wanted_rv != meta::meta_str(&current, "resourceVersion") {
            return Err(t.conflict());
        }
        let opts = options("UpdateOptions", ctx.dry_run, json!({}));
        let mut attrs = attributes(t, "UPDATE", &t.name, Some(new_scale), Some(old_scale), opts);
        admission::mutate(cluster, ctx, &mut attrs).await?;
        let new_scale = attrs.object.clone().unwrap_or(Value::Null);
        let replicas = new_scale
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .ok_or_else(|| ApiError::bad_request("Scale.spec.replicas is required"))?;
        if replicas < 0 {
            return Err(ApiError::invalid(
                "autoscaling",
                "Scale",
                &t.name,
                "spec.replicas",
                &format!("Invalid value: {replicas}: must be greater than or equal to 0"),
            ));
        }
        admission::validate(cluster, ctx, &attrs).await?;
        let mut new = current.clone();
        meta::set_dotted(&mut new, &paths.spec_replicas, json!(replicas));
        prepare::bump_generation(&current, &mut new);
        if ctx.dry_run || new == current {
            return scale_view(&new, t);
        }
        match cluster.store.update(&key, to_storage(new, &t.def), meta::resource_version(&stored)) {
            Ok(obj) => return scale_view(&obj, t),
            Err(StoreError::Conflict) if !pinned => continue,
            Err(StoreError::Conflict) => return Err(t.conflict()),
            Err(_) => return Err(t.not_found()),
        }
    }
    Err(t.conflict())
}

fn success(code: u16) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code})
}

/// POST pods/{name}/eviction.
pub async fn evict(cluster: &Cluster, ctx: &mut Ctx, t: &Target, body: Value) -> Result<Value, ApiError> {
    if !body.is_object() {
        return Err(ApiError::bad_request("the request body must be a JSON object"));
    }
    let pod_target = Target { subresource: String::new(), ..t.clone() };
    cluster.store.get(&pod_target.key()).ok_or_else(|| pod_target.not_found())?;
    let opts = options("CreateOptions", ctx.dry_run, json!({}));
    let mut attrs = attributes(t, "CREATE", &t.name, Some(body), None, opts);
    admission::mutate(cluster, ctx, &mut attrs).await?;
    admission::validate(cluster, ctx, &attrs).await?;
    let delete_opts =
        attrs.object.as_ref().and_then(|e| e.get("deleteOptions")).map(DeleteOptions::from_json).unwrap_or_default();
    delete(cluster, ctx, &pod_target, &delete_opts, false).await?;
    Ok(success(201))
}

/// POST pods/{name}/binding: assigns the pod to `target.name`.
pub async fn bind(cluster: &Cluster, ctx: &mut Ctx, t: &Target, body: Value) -> Result<Value, ApiError> {
    if !body.is_object() {
        return Err(ApiError::bad_request("the request body must be a JSON object"));
    }
    let node = body.pointer("/target/name").and_then(Value::as_str).unwrap_or("").to_string();
    if node.is_empty() {
        return Err(ApiError::bad_request("binding target.name is required"));
    }
    let opts = options("CreateOptions", ctx.dry_run, json!({}));
    let mut attrs = attributes(t, "CREATE", &t.name, Some(body), None, opts);
    admission::mutate(cluster, ctx, &mut attrs).await?;
    admission::validate(cluster, ctx, &attrs).await?;
    let pod_target = Target { subresource: String::new(), ..t.clone() };
    let key = pod_target.key();
    for _ in 0..guaranteed::ATTEMPTS {
        let stored = cluster.store.get(&key).ok_or_else(|| pod_target.not_found())?;
        let assigned = stored.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("");
        if !assigned.is_empty() {
            return Err(ApiError::conflict_because(
                "",
                "pods",
                &t.name,
                &format!("pod {} is already assigned to node \"{assigned}\"", t.name),
            ));
        }
        if meta::is_deleting(&stored) {
            return Err(ApiError::conflict_because("", "pods", &t.name, "pod is being deleted"));
        }
        let mut new = (*stored).clone();
        meta::set_dotted(&mut new, "spec.nodeName", json!(node));
        let conditions = new.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
        let mut conditions: Vec<Value> =
            conditions.into_iter().filter(|c| c.get("type") != Some(&json!("PodScheduled"))).collect();
        conditions.push(json!({"type": "PodScheduled", "status": "True", "lastTransitionTime": meta::now()}));
        meta::set_dotted(&mut new, "status.conditions", json!(conditions));
        if ctx.dry_run {
            return Ok(success(201));
        }
        match cluster.store.update(&key, new, meta::resource_version(&stored)) {
            Ok(_) => return Ok(success(201)),
            Err(StoreError::Conflict) => continue,
            Err(_) => return Err(pod_target.not_found()),
        }
    }
    Err(pod_target.conflict())
}
