//! DELETE as kube-apiserver does it: preconditions (uid, resourceVersion), DELETE admission with
//! the old object, graceful deletion of scheduled pods (deletionTimestamp = now + grace period;
//! the kubelet removes them), finalizers (`orphan`/`foregroundDeletion` added for those propagation
//! policies, the object kept with a deletionTimestamp until they are gone), namespaces that
//! terminate while their content is removed, and CRDs taking their custom resources with them.

use super::{ListOptions, Target, after_write, attributes, list, options, present, selected, to_storage};
use crate::admission;
use crate::cluster::{Cluster, Ctx};
use crate::errors::ApiError;
use crate::meta;
use crate::store::{ObjKey, StoreError};
use serde_json::{Value, json};

/// `DeleteOptions` that matter here.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeleteOptions {
    /// `gracePeriodSeconds`.
    pub grace_period: Option<i64>,
    /// `propagationPolicy` (`Orphan`, `Background`, `Foreground`).
    pub propagation: Option<String>,
    /// `preconditions.uid`.
    pub precondition_uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub precondition_rv: Option<String>,
}

impl DeleteOptions {
    /// Reads a DeleteOptions body (missing fields stay unset).
    pub fn from_json(v: &Value) -> Self {
        let orphan = v.get("orphanDependents").and_then(Value::as_bool);
        Self {
            grace_period: v.get("gracePeriodSeconds").and_then(Value::as_i64),
            propagation: v
                .get("propagationPolicy")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| orphan.map(|o| if o { "Orphan" } else { "Background" }.to_string())),
            precondition_uid: v.pointer("/preconditions/uid").and_then(Value::as_str).map(str::to_string),
            precondition_rv: v.pointer("/preconditions/resourceVersion").and_then(Value::as_str).map(str::to_string),
        }
    }

    fn to_json(&self, dry_run: bool) -> Value {
        let mut extra = json!({});
        if let Some(g) = self.grace_period {
            extra["gracePeriodSeconds"] = json!(g);
        }
        if let Some(p) = &self.propagation {
            extra["propagationPolicy"] = json!(p);
        }
        options("DeleteOptions", dry_run, extra)
    }
}

fn grace_for(def_is_pod: bool, obj: &Value, opts: &DeleteOptions) -> i64 {
    if !def_is_pod {
        return 0;
    }
    let scheduled = obj.pointer("/spec/nodeName").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
    let phase = obj.pointer("/status/phase").and_then(Value::as_str).unwrap_or("");
    if !scheduled || phase == "Succeeded" || phase == "Failed" {
        return 0;
    }
    opts.grace_period
        .or_else(|| obj.pointer("/spec/terminationGracePeriodSeconds").and_then(Value::as_i64))
        .unwrap_or(30)
        .max(0)
}

/// Deletes (or starts deleting) one object. Runs DELETE admission unless `admit` is false (the
/// eviction subresource admits the eviction instead).
pub async fn delete(
    cluster: &Cluster,
    ctx: &mut Ctx,
    t: &Target,
    opts: &DeleteOptions,
    admit: bool,
) -> Result<Value, ApiError> {
    let def = t.def.clone();
    let key = t.key();
    let is_pod = def.group.is_empty() && def.resource == "pods";
    let is_namespace = def.group.is_empty() && def.resource == "namespaces";
    if is_namespace && ["default", "kube-system", "kube-public"].contains(&t.name.as_str()) {
        return Err(ApiError::forbidden(format!(
            "namespaces \"{}\" is forbidden: this namespace may not be deleted",
            t.name
        )));
    }
    let mut admitted = !admit;
    for _ in 0..16 {
        let stored = cluster.store.get(&key).ok_or_else(|| t.not_found())?;
        let current = present(&stored, &def, &t.version);
        if let Some(uid) = &opts.precondition_uid
            && uid != meta::uid(&current)
        {
            return Err(ApiError::conflict_because(
                &def.group,
                &def.resource,
                &t.name,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    meta::uid(&current)
                ),
            ));
        }
        if let Some(rv) = &opts.precondition_rv
            && rv != meta::meta_str(&current, "resourceVersion")
        {
            return Err(ApiError::conflict_because(
                &def.group,
                &def.resource,
                &t.name,
                &format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                    meta::meta_str(&current, "resourceVersion")
                ),
            ));
        }
        if !admitted {
            let mut attrs = attributes(t, "DELETE", &t.name, None, Some(current.clone()), opts.to_json(ctx.dry_run));
            admission::mutate(cluster, ctx, &mut attrs).await?;
            admission::validate(cluster, ctx, &attrs).await?;
            admitted = true;
        }
        let grace = grace_for(is_pod, &current, opts);
        let mut finalizers = meta::finalizers(&current);
        let wanted = match opts.propagation.as_deref() {
            Some("Orphan") => Some("orphan"),
            Some("Foreground") => Some("foregroundDeletion"),
            _ => None,
        };
        if let Some(f) = wanted
            && !finalizers.iter().any(|x| x == f)
        {
            finalizers.push(f.to_string());
        }
        let already = meta::is_deleting(&current);
        let immediate = finalizers.is_empty() && grace == 0 && !is_namespace;
        let write = if immediate {
            if ctx.dry_run {
                return Ok(current);
            }
            if def.group == "apiextensions.k8s.io" && def.resource == "customresourcedefinitions" {
                remove_custom_resources(cluster, &current);
            }
            cluster.store.delete(&key, Some(meta::resource_version(&stored)))
        } else {
            let mut new = current.clone();
            if already {
                // A repeated delete can only shorten the grace period.
                let old_grace =
                    new.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64).unwrap_or(0);
                if grace < old_grace {
                    meta::set_meta(&mut new, "deletionGracePeriodSeconds", json!(grace));
                }
            } else {
                let at = jiff::Timestamp::now()
                    .checked_add(jiff::SignedDuration::from_secs(grace))
                    .unwrap_or_else(|_| jiff::Timestamp::now());
                meta::set_meta(&mut new, "deletionTimestamp", json!(meta::format_time(at)));
                meta::set_meta(&mut new, "deletionGracePeriodSeconds", json!(grace));
                meta::set_meta(&mut new, "generation", json!(meta::generation(&current) + 1));
                if is_namespace {
                    new["status"] = json!({"phase": "Terminating"});
                }
            }
            meta::set_finalizers(&mut new, &finalizers);
            if ctx.dry_run || new == current {
                return Ok(new);
            }
            let done = already
                && finalizers.is_empty()
                && !is_namespace
                && new.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64).unwrap_or(0) == 0;
            if done {
                cluster.store.delete(&key, Some(meta::resource_version(&stored)))
            } else {
                cluster.store.update(&key, to_storage(new, &def), meta::resource_version(&stored))
            }
        };
        match write {
            Ok(obj) => {
                after_write(cluster, &def);
                return Ok(present(&obj, &def, &t.version));
            }
            Err(StoreError::Conflict) => continue,
            Err(StoreError::NotFound) => return Err(t.not_found()),
            Err(StoreError::AlreadyExists) => return Err(ApiError::internal("unexpected AlreadyExists on delete")),
        }
    }
    Err(t.conflict())
}

/// A deleted CRD takes every object of its resource with it.
fn remove_custom_resources(cluster: &Cluster, crd: &Value) {
    let group = crd.pointer("/spec/group").and_then(Value::as_str).unwrap_or("");
    let plural = crd.pointer("/spec/names/plural").and_then(Value::as_str).unwrap_or("");
    let (items, _) = cluster.store.list(group, plural, None);
    for item in items {
        let key = ObjKey::new(group, plural, meta::namespace(&item), meta::name(&item));
        // Already gone is fine.
        let _ = cluster.store.delete(&key, None);
    }
}

/// DELETE on a collection: deletes every selected object, returning them as a list.
pub async fn delete_collection(
    cluster: &Cluster,
    ctx: &mut Ctx,
    t: &Target,
    selection: &ListOptions,
    opts: &DeleteOptions,
) -> Result<Value, ApiError> {
    let listed = list(cluster, t, &ListOptions { limit: 0, continue_token: String::new(), ..selection.clone() })?;
    let mut deleted = Vec::new();
    for item in listed.get("items").and_then(Value::as_array).cloned().unwrap_or_default() {
        if !selected(&item, &selection.labels, &selection.fields) {
            continue;
        }
        let target = Target::new(t.def.clone(), &t.version, meta::namespace(&item), meta::name(&item));
        match delete(cluster, ctx, &target, opts, true).await {
            Ok(obj) => deleted.push(obj),
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(json!({
        "apiVersion": t.gv(),
        "kind": format!("{}List", t.def.kind),
        "metadata": {"resourceVersion": cluster.store.current_rv().to_string()},
        "items": deleted,
    }))
}
