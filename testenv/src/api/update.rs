//! PUT and PATCH: the read-modify-write loop of kube-apiserver's `GuaranteedUpdate`. The new
//! object is computed from the current one (a replacement body or an applied patch), checked
//! against a resourceVersion precondition (409 on a stale one), reduced to what the subresource may
//! change (status writes touch only status, main writes never touch status), admitted (mutating,
//! then validating), given its new generation, and compare-and-swapped into the store. Unpinned
//! writes are retried on a concurrent change; no-op updates write nothing; an object being deleted
//! whose last finalizer is removed is deleted.

use super::{Target, after_write, attributes, check_body, create, options, prepare, present, to_storage};
use crate::admission;
use crate::cluster::{Cluster, Ctx};
use crate::errors::ApiError;
use crate::meta;
use crate::patch::{self, PatchKind};
use crate::store::StoreError;
use serde_json::{Value, json};

pub(super) const ATTEMPTS: usize = 16;

/// PUT: replaces the object (or its status, for the status subresource).
pub async fn update(cluster: &Cluster, ctx: &mut Ctx, t: &Target, body: Value) -> Result<Value, ApiError> {
    let body = check_body(body, t)?;
    let body_name = meta::name(&body);
    if !body_name.is_empty() && body_name != t.name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({})",
            t.name
        )));
    }
    let pinned = !meta::meta_str(&body, "resourceVersion").is_empty();
    if !pinned && t.def.custom {
        return Err(ApiError::invalid(
            &t.def.group,
            &t.def.kind,
            &t.name,
            "metadata.resourceVersion",
            "Invalid value: 0x0: must be specified for an update",
        ));
    }
    guaranteed_update(cluster, ctx, t, pinned, |_| Ok(body.clone())).await
}

/// PATCH: applies a patch to the current object (server-side apply creates a missing one).
pub async fn patch(
    cluster: &Cluster,
    ctx: &mut Ctx,
    t: &Target,
    kind: PatchKind,
    patch_body: Value,
) -> Result<Value, ApiError> {
    let custom = t.def.custom;
    let result =
        guaranteed_update(cluster, ctx, t, false, |current| patch::apply(kind, current, &patch_body, custom)).await;
    match result {
        Err(e)
            if e.code == 404
                && kind == PatchKind::Apply
                && t.subresource.is_empty()
                && cluster.store.get(&t.key()).is_none() =>
        {
            let mut obj = patch_body.clone();
            meta::set_meta(&mut obj, "name", json!(t.name));
            if t.def.namespaced {
                meta::set_meta(&mut obj, "namespace", json!(t.namespace));
            }
            create(cluster, ctx, t, obj).await
        }
        other => other,
    }
}

/// The shared update loop; `compute` maps the current object (in the request's version) to the
/// desired one. `pinned` writes carry the client's resourceVersion and are never retried.
pub(super) async fn guaranteed_update<F>(
    cluster: &Cluster,
    ctx: &mut Ctx,
    t: &Target,
    pinned: bool,
    compute: F,
) -> Result<Value, ApiError>
where
    F: Fn(&Value) -> Result<Value, ApiError>,
{
    let def = t.def.clone();
    let key = t.key();
    for _ in 0..ATTEMPTS {
        let stored = cluster.store.get(&key).ok_or_else(|| t.not_found())?;
        let current = present(&stored, &def, &t.version);
        let current_rv = meta::resource_version(&stored);
        let mut new = compute(&current)?;
        if !new.is_object() {
            return Err(ApiError::bad_request("the updated object must be a JSON object"));
        }
        new["apiVersion"] = json!(t.gv());
        new["kind"] = json!(def.kind);
        let new_name = meta::name(&new);
        if !new_name.is_empty() && new_name != t.name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({new_name}) does not match the name on the URL ({})",
                t.name
            )));
        }
        let wanted_rv = meta::meta_str(&new, "resourceVersion");
        if !wanted_rv.is_empty() && wanted_rv != meta::meta_str(&current, "resourceVersion") {
            return Err(t.conflict());
        }
        let new = prepare::for_update(&current, new, &def, &t.subresource);
        let opts = options("UpdateOptions", ctx.dry_run, json!({}));
        let mut attrs = attributes(t, "UPDATE", &t.name, Some(new), Some(current.clone()), opts);
        admission::mutate(cluster, ctx, &mut attrs).await?;
        let mutated = attrs.object.take().unwrap_or(Value::Null);
        if !mutated.is_object() {
            return Err(ApiError::internal("mutating admission produced a non-object"));
        }
        let mut new = prepare::for_update(&current, mutated, &def, &t.subresource);
        prepare::bump_generation(&current, &mut new);
        if meta::is_deleting(&current) {
            let before = meta::finalizers(&current);
            if let Some(added) = meta::finalizers(&new).iter().find(|f| !before.contains(f)) {
                return Err(ApiError::invalid(
                    &def.group,
                    &def.kind,
                    &t.name,
                    "metadata.finalizers",
                    &format!(
                        "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers [\"{added}\"]"
                    ),
                ));
            }
        }
        attrs.object = Some(new.clone());
        admission::validate(cluster, ctx, &attrs).await?;
        if prepare::is_noop(&current, &new) || ctx.dry_run {
            return Ok(new);
        }
        let finalized = meta::is_deleting(&new)
            && meta::finalizers(&new).is_empty()
            && new.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64).unwrap_or(0) == 0;
        let result = if finalized {
            cluster.store.delete(&key, Some(current_rv))
        } else {
            cluster.store.update(&key, to_storage(new, &def), current_rv)
        };
        match result {
            Ok(obj) => {
                after_write(cluster, &def);
                return Ok(present(&obj, &def, &t.version));
            }
            Err(StoreError::Conflict) if !pinned => continue,
            Err(StoreError::Conflict) => return Err(t.conflict()),
            Err(StoreError::NotFound) => return Err(t.not_found()),
            Err(StoreError::AlreadyExists) => return Err(ApiError::internal("unexpected AlreadyExists on update")),
        }
    }
    Err(t.conflict())
}
