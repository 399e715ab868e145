//! POST: creating an object as kube-apiserver does: type and namespace checks, mutating
//! admission, name generation and system fields, validating admission, then an atomic insert
//! (409 AlreadyExists on a taken name). Dry runs stop before the insert.

use super::{Target, after_write, attributes, check_body, check_namespace, options, prepare, present, to_storage};
use crate::admission;
use crate::cluster::{Cluster, Ctx};
use crate::errors::ApiError;
use crate::meta;
use crate::store::{ObjKey, StoreError};
use serde_json::{Value, json};

/// Creates `body` in the target's collection.
pub async fn create(cluster: &Cluster, ctx: &mut Ctx, t: &Target, body: Value) -> Result<Value, ApiError> {
    let def = t.def.clone();
    let mut obj = check_body(body, t)?;
    if def.namespaced {
        let ns = meta::namespace(&obj);
        if !ns.is_empty() && ns != t.namespace {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        meta::set_meta(&mut obj, "namespace", json!(t.namespace));
        check_namespace(cluster, &t.namespace)?;
    } else {
        meta::set_meta(&mut obj, "namespace", Value::Null);
    }
    if meta::name(&obj).is_empty() && meta::meta_str(&obj, "generateName").is_empty() {
        return Err(ApiError::invalid(
            &def.group,
            &def.kind,
            "",
            "metadata.name",
            "Required value: name or generateName is required",
        ));
    }
    prepare::clear_system_fields(&mut obj);
    let name = meta::name(&obj).to_string();
    let opts = options("CreateOptions", ctx.dry_run, json!({}));
    let mut attrs = attributes(t, "CREATE", &name, Some(obj), None, opts);
    admission::mutate(cluster, ctx, &mut attrs).await?;
    let mut obj = attrs.object.take().unwrap_or(Value::Null);
    if !obj.is_object() {
        return Err(ApiError::internal("mutating admission produced a non-object"));
    }
    meta::set_meta(&mut obj, "namespace", if def.namespaced { json!(t.namespace) } else { Value::Null });
    prepare::finish_create(&mut obj, &def);
    attrs.object = Some(obj.clone());
    admission::validate(cluster, ctx, &attrs).await?;
    if ctx.dry_run {
        return Ok(present(&obj, &def, &t.version));
    }
    let key = ObjKey::new(&def.group, &def.resource, &t.namespace, meta::name(&obj));
    let stored = cluster.store.create(&key, to_storage(obj, &def)).map_err(|e| match e {
        StoreError::AlreadyExists => ApiError::already_exists(&def.group, &def.resource, &key.name),
        other => ApiError::internal(format!("{other:?}")),
    })?;
    after_write(cluster, &def);
    Ok(present(&stored, &def, &t.version))
}
