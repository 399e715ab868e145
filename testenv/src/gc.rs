//! The controllers kube-controller-manager would run for object lifecycles: the garbage
//! collector (dependents whose owners are all gone are deleted in the background, dangling owner
//! references are dropped, `orphan` and `foregroundDeletion` finalizers are processed) and the
//! namespace controller (a terminating namespace's content is deleted, then the namespace). They
//! act through `api` as a service account, so admission sees their requests as a real cluster's
//! webhooks would.

use crate::api::{self, DeleteOptions, Target};
use crate::cluster::{Cluster, Ctx, User};
use crate::meta;
use crate::patch::PatchKind;
use crate::store::{Event, EventType, ObjKey};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Arc;
use tokio::sync::broadcast::error::TryRecvError;

fn relevant(ev: &Event) -> bool {
    ev.type_ == EventType::Deleted || meta::is_deleting(&ev.object) || !meta::owner_uids(&ev.object).is_empty()
}

/// Runs until the cluster shuts down.
pub async fn run(cluster: Arc<Cluster>) {
    let mut rx = cluster.store.subscribe();
    let mut shutdown = cluster.shutdown.clone();
    pass(&cluster).await;
    loop {
        tokio::select! {
            ev = rx.recv() => match ev {
                Ok(ev) if !relevant(&ev) => continue,
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            },
            _ = shutdown.changed() => return,
        }
        while let Ok(_) | Err(TryRecvError::Lagged(_)) = rx.try_recv() {}
        pass(&cluster).await;
    }
}

fn ctx() -> Ctx {
    Ctx::new(User::named(
        "system:serviceaccount:kube-system:generic-garbage-collector",
        &["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"],
    ))
}

fn target(cluster: &Cluster, key: &ObjKey) -> Option<Target> {
    let def = cluster.by_group_resource(&key.group, &key.resource)?;
    let version = def.storage_version().to_string();
    Some(Target::new(def, &version, &key.namespace, &key.name))
}

async fn delete(cluster: &Cluster, key: &ObjKey, uid: &str) {
    let Some(t) = target(cluster, key) else { return };
    let opts = DeleteOptions {
        propagation: Some("Background".into()),
        precondition_uid: Some(uid.to_string()),
        ..Default::default()
    };
    if let Err(e) = api::delete(cluster, &mut ctx(), &t, &opts, true).await
        && e.code != 404
        && e.code != 409
    {
        tracing::warn!(object = ?key, error = %e, "garbage collector could not delete");
    }
}

async fn merge_patch(cluster: &Cluster, key: &ObjKey, patch: Value) {
    let Some(t) = target(cluster, key) else { return };
    if let Err(e) = api::patch(cluster, &mut ctx(), &t, PatchKind::Merge, patch).await
        && e.code != 404
    {
        tracing::warn!(object = ?key, error = %e, "garbage collector could not patch");
    }
}

fn without_owner(obj: &Value, gone: &dyn Fn(&str) -> bool) -> Value {
    let refs: Vec<Value> = obj
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter(|r| !gone(r.get("uid").and_then(Value::as_str).unwrap_or(""))).cloned().collect())
        .unwrap_or_default();
    json!({"metadata": {"ownerReferences": refs, "resourceVersion": meta::meta_str(obj, "resourceVersion")}})
}

fn without_finalizer(obj: &Value, finalizer: &str) -> Value {
    let rest: Vec<String> = meta::finalizers(obj).into_iter().filter(|f| f != finalizer).collect();
    json!({"metadata": {"finalizers": rest, "resourceVersion": meta::meta_str(obj, "resourceVersion")}})
}

/// One sweep over every object; idempotent, so it simply runs again after further changes.
pub async fn pass(cluster: &Cluster) {
    let snapshot = cluster.store.snapshot();
    let uids: HashSet<&str> = snapshot.iter().map(|(_, o)| meta::uid(o)).collect();
    let dependents_of = |owner: &str| -> Vec<&(ObjKey, Arc<Value>)> {
        snapshot.iter().filter(|(_, o)| meta::owner_uids(o).iter().any(|u| u == owner)).collect()
    };
    for (key, obj) in &snapshot {
        if !meta::is_deleting(obj) {
            continue;
        }
        let finalizers = meta::finalizers(obj);
        let uid = meta::uid(obj);
        if finalizers.iter().any(|f| f == "orphan") {
            for (dkey, dep) in dependents_of(uid) {
                merge_patch(cluster, dkey, without_owner(dep, &|u| u == uid)).await;
            }
            merge_patch(cluster, key, without_finalizer(obj, "orphan")).await;
        } else if finalizers.iter().any(|f| f == "foregroundDeletion") {
            let deps = dependents_of(uid);
            if deps.is_empty() {
                merge_patch(cluster, key, without_finalizer(obj, "foregroundDeletion")).await;
            }
            for (dkey, dep) in deps {
                if !meta::is_deleting(dep) {
                    delete(cluster, dkey, meta::uid(dep)).await;
                }
            }
        }
        if key.group.is_empty() && key.resource == "namespaces" {
            let content: Vec<_> = snapshot.iter().filter(|(k, _)| k.namespace == key.name).collect();
            for (ckey, cobj) in &content {
                if !meta::is_deleting(cobj) {
                    delete(cluster, ckey, meta::uid(cobj)).await;
                }
            }
            if content.is_empty() && finalizers.is_empty() {
                // The namespace's own `spec.finalizers: [kubernetes]` is this controller's.
                let _ = cluster.store.delete(key, Some(meta::resource_version(obj)));
            }
        }
    }
    for (key, obj) in &snapshot {
        let owners = meta::owner_uids(obj);
        if owners.is_empty() {
            continue;
        }
        let gone = |u: &str| !uids.contains(u);
        let missing = owners.iter().filter(|u| gone(u)).count();
        if missing == 0 {
            continue;
        }
        if missing == owners.len() {
            if !meta::is_deleting(obj) {
                delete(cluster, key, meta::uid(obj)).await;
            }
        } else {
            merge_patch(cluster, key, without_owner(obj, &gone)).await;
        }
    }
}
