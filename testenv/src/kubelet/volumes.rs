//! The simulated volume provisioner: the default StorageClass [`STORAGE_CLASS`] names
//! [`PROVISIONER`]; for every claim the real PV binder hands to it (annotation
//! `volume.kubernetes.io/storage-provisioner`), a PersistentVolume of the requested size is
//! created, pre-bound to the claim, and the binder completes the binding. Released volumes of
//! this provisioner with reclaim policy Delete are deleted, as an external provisioner does.

use super::{PROVISIONER, STORAGE_CLASS, Shared};
use crate::Error;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use std::sync::Arc;

const PROVISIONER_ANNOTATION: &str = "volume.kubernetes.io/storage-provisioner";
const PROVISIONED_BY: &str = "pv.kubernetes.io/provisioned-by";

/// Creates the default StorageClass (Immediate binding, reclaim Delete).
pub async fn ensure_storage_class(client: &kube::Client) -> Result<(), Error> {
    let api: Api<k8s_openapi::api::storage::v1::StorageClass> = Api::all(client.clone());
    let class = json!({
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": STORAGE_CLASS,
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}
        },
        "provisioner": PROVISIONER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
        "allowVolumeExpansion": true
    });
    api.patch(STORAGE_CLASS, &PatchParams::apply(super::nodes::FIELD_MANAGER).force(), &Patch::Apply(&class)).await?;
    Ok(())
}

/// Provisions and deletes volumes forever.
pub(crate) async fn provision(client: kube::Client, shared: Arc<Shared>) {
    let claims = watcher(Api::<PersistentVolumeClaim>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .applied_objects();
    let volumes = watcher(Api::<PersistentVolume>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .applied_objects();
    let mut claims = std::pin::pin!(claims);
    let mut volumes = std::pin::pin!(volumes);
    loop {
        tokio::select! {
            c = claims.next() => match c {
                Some(Ok(claim)) => match provision_claim(&client, &claim).await {
                    Ok(true) => super::bump(&shared.counters.provisioned),
                    Ok(false) => {}
                    Err(e) => tracing::warn!(error = %e, "provisioning failed"),
                },
                Some(Err(e)) => tracing::debug!(error = %e, "claim watch"),
                None => return,
            },
            v = volumes.next() => match v {
                Some(Ok(pv)) => reclaim(&client, &pv).await,
                Some(Err(e)) => tracing::debug!(error = %e, "volume watch"),
                None => return,
            },
        }
    }
}

async fn provision_claim(client: &kube::Client, claim: &PersistentVolumeClaim) -> Result<bool, Error> {
    let ours = claim.metadata.annotations.as_ref().and_then(|a| a.get(PROVISIONER_ANNOTATION)).map(String::as_str)
        == Some(PROVISIONER);
    let spec = claim.spec.clone().unwrap_or_default();
    let pending = claim.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Bound");
    if !ours || !pending || spec.volume_name.is_some() || claim.metadata.deletion_timestamp.is_some() {
        return Ok(false);
    }
    let (Some(ns), Some(name), Some(uid)) =
        (claim.metadata.namespace.as_ref(), claim.metadata.name.as_ref(), claim.metadata.uid.as_ref())
    else {
        return Ok(false);
    };
    let size = spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .map(|q| q.0.clone())
        .unwrap_or_else(|| "1Gi".into());
    let pv_name = format!("pvc-{uid}");
    let pv: PersistentVolume = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": pv_name, "annotations": {PROVISIONED_BY: PROVISIONER}},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": spec.access_modes.clone().unwrap_or_else(|| vec!["ReadWriteOnce".into()]),
            "persistentVolumeReclaimPolicy": "Delete",
            "storageClassName": spec.storage_class_name.clone().unwrap_or_else(|| STORAGE_CLASS.into()),
            "volumeMode": spec.volume_mode.clone().unwrap_or_else(|| "Filesystem".into()),
            "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": ns, "name": name, "uid": uid},
            "hostPath": {"path": format!("/var/lib/kruise-testenv/{pv_name}")}
        }
    }))
    .map_err(|e| Error::Manifest { path: pv_name.clone(), detail: e.to_string() })?;
    match Api::<PersistentVolume>::all(client.clone()).create(&PostParams::default(), &pv).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
        Err(e) => Err(e.into()),
    }
}

async fn reclaim(client: &kube::Client, pv: &PersistentVolume) {
    let ours =
        pv.metadata.annotations.as_ref().and_then(|a| a.get(PROVISIONED_BY)).map(String::as_str) == Some(PROVISIONER);
    let released = pv.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Released");
    let delete = pv.spec.as_ref().and_then(|s| s.persistent_volume_reclaim_policy.as_deref()) == Some("Delete");
    if ours
        && released
        && delete
        && pv.metadata.deletion_timestamp.is_none()
        && let Some(name) = pv.metadata.name.as_ref()
    {
        let _ = Api::<PersistentVolume>::all(client.clone()).delete(name, &DeleteParams::default()).await;
    }
}
