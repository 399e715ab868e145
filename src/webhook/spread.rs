//! WorkloadSpread's pod hooks with their status writes (kruise v1.9 `pkg/util/workloadspread`
//! `HandlePodCreation`, `HandlePodDeletion`, `acquireSuitableSubset`; issue 34): on a pod CREATE
//! the WorkloadSpread whose target owns the pod is found and a subset chosen for it, the pod
//! recorded in that subset's `creatingPods`; on a pod DELETE or eviction the pod is recorded in
//! the `deletingPods` of the subset its `apps.kruise.io/matched-workloadspread` annotation names.
//!
//! The decisions are `core::workloadspread`'s; this module does the I/O around them as
//! [`super::budget`] does for PodUnavailableBudgets: an optimistic-concurrency replace of the
//! WorkloadSpread's status, each attempt under the WorkloadSpread's lock in this process (kruise's
//! `GlobalKeyedMutex`), the first attempt from the newest of the view's copy and the copy this
//! process last wrote (kruise's `GlobalCache`), a conflict read again from the API server, up to
//! [`ATTEMPTS`] attempts (`retry.DefaultBackoff`). Only what the view cannot answer is read from
//! the API server: the ReplicaSet between a pod and its Deployment (kruise's `isReferenceEqual`
//! walks owners the same way) and the workload's replicas for a percentage `maxReplicas`.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use kube::api::{Api, ApiResource, DynamicObject, PostParams};

use super::budget::{StoreFuture, WriteError};
use crate::apis::workloadspread::WorkloadSpread;
use crate::core::workloadspread::{
    Injected, Operation, controller_of, has_percent_subset, is_workload_reference, owner_matches, selects_pod,
    statefulset_subset, update_subset_for_pod,
};

/// Attempts of one review (`retry.DefaultBackoff.Steps`).
pub const ATTEMPTS: usize = 4;
/// Pause after a conflict (`retry.DefaultBackoff.Duration`).
pub const RETRY_DELAY: Duration = Duration::from_millis(10);
/// How deep owners are walked (pod → ReplicaSet → Deployment is two).
const OWNER_DEPTH: usize = 4;

/// Where WorkloadSpreads and the workloads between pods and them are read, and the status written
/// (the API server; a fake in tests).
pub trait SpreadStore: Send + Sync {
    /// The WorkloadSpread now (`None` when it does not exist).
    fn get<'a>(&'a self, namespace: &'a str, name: &'a str) -> StoreFuture<'a, Result<Option<WorkloadSpread>, String>>;
    /// Replaces the status of `ws` at its resourceVersion; the object as written.
    fn replace_status<'a>(&'a self, ws: &'a WorkloadSpread) -> StoreFuture<'a, Result<WorkloadSpread, WriteError>>;
    /// The controller of the object `owner` names in `namespace` (`Ok(None)`: it has none;
    /// `Err(None)`: the object does not exist; `Err(Some(message))`: it cannot be read).
    fn controller_of<'a>(
        &'a self,
        namespace: &'a str,
        owner: &'a OwnerReference,
    ) -> StoreFuture<'a, Result<Option<OwnerReference>, Option<String>>>;
    /// The replicas of the workload `ws` targets (0 when it does not exist).
    fn workload_replicas<'a>(&'a self, ws: &'a WorkloadSpread) -> StoreFuture<'a, Result<i32, String>>;
}

/// A pod CREATE some WorkloadSpread of its namespace may take (decided by `/mutate-pod`'s pure half).
#[derive(Clone, Debug)]
pub struct CreateCheck {
    /// The pod, namespace filled.
    pub pod: Pod,
    /// The WorkloadSpreads of the pod's namespace (the view's copies, in name order).
    pub candidates: Vec<Arc<WorkloadSpread>>,
}

/// A pod DELETE or eviction of a pod placed by a WorkloadSpread.
#[derive(Clone, Debug)]
pub struct DeleteCheck {
    /// The pod.
    pub pod: Pod,
    /// What its annotation says.
    pub injected: Injected,
    /// Delete or eviction.
    pub op: Operation,
    /// The WorkloadSpread as the view holds it (`None`: the view has none of that name).
    pub ws: Option<Arc<WorkloadSpread>>,
}

/// Where the pod goes: the WorkloadSpread (the copy to inject from), the subset, the uid made
/// for a pod without a name.
#[derive(Clone, Debug)]
pub struct Placement {
    /// The matched WorkloadSpread.
    pub ws: Arc<WorkloadSpread>,
    /// The subset chosen.
    pub subset: String,
    /// The uid recorded for a nameless pod ("" otherwise).
    pub generated_uid: String,
}

/// A WorkloadSpread's `(namespace, name)`.
use super::written::Written;

/// The WorkloadSpread writer of one process.
pub struct Spreads {
    store: Arc<dyn SpreadStore>,
    written: Written<WorkloadSpread>,
    retry_delay: Duration,
}

/// `uuid.NewUUID()`-shaped random text (only unique, never parsed).
fn new_uid() -> String {
    let hex = |n: usize| (0..n).map(|_| char::from_digit(fastrand::u32(0..16), 16).unwrap_or('0')).collect::<String>();
    format!("{}-{}-{}-{}-{}", hex(8), hex(4), hex(4), hex(4), hex(12))
}

impl Spreads {
    /// A writer over `store`.
    pub fn new(store: Arc<dyn SpreadStore>) -> Self {
        Self::with_retry_delay(store, RETRY_DELAY)
    }

    /// A writer pausing `retry_delay` after a conflict (tests).
    pub fn with_retry_delay(store: Arc<dyn SpreadStore>, retry_delay: Duration) -> Self {
        Self { store, written: Written::default(), retry_delay }
    }

    /// `isReferenceEqual`: the target is the pod's owner, or (walking up through the owner's
    /// own controller) an owner of it.
    async fn owns(&self, ws: &WorkloadSpread, namespace: &str, owner: &OwnerReference) -> Result<bool, Option<String>> {
        let Some(target) = ws.spec.target_ref.as_ref() else { return Ok(false) };
        let mut owner = owner.clone();
        for _ in 0..OWNER_DEPTH {
            if owner_matches(target, &owner) {
                return Ok(true);
            }
            if !is_workload_reference(&owner) {
                return Ok(false);
            }
            match self.store.controller_of(namespace, &owner).await? {
                Some(next) => owner = next,
                None => return Ok(false),
            }
        }
        Ok(false)
    }

    /// `HandlePodCreation`: the placement of the pod (`None`: no WorkloadSpread takes it, or no
    /// subset has room), its record written; `Err` with the message the review fails with.
    pub async fn place(&self, check: &CreateCheck, now: &Time) -> Result<Option<Placement>, String> {
        let pod = &check.pod;
        let Some(owner) = controller_of(pod) else { return Ok(None) };
        if !is_workload_reference(owner) {
            return Ok(None);
        }
        let namespace = pod.metadata.namespace.clone().unwrap_or_else(|| "default".into());
        let no_labels = std::collections::BTreeMap::new();
        let labels = pod.metadata.labels.as_ref().unwrap_or(&no_labels);
        let mut matched = None;
        for ws in &check.candidates {
            if ws.spec.target_ref.is_none() || ws.metadata.deletion_timestamp.is_some() {
                continue;
            }
            match self.owns(ws, &namespace, owner).await {
                Ok(true) => {}
                Ok(false) => continue,
                // kruise skips the pod when an owner is gone, and the spread when it cannot be read.
                Err(None) => return Ok(None),
                Err(Some(message)) => {
                    tracing::debug!(%message, "cannot read the owner of a pod for a WorkloadSpread");
                    continue;
                }
            }
            if selects_pod(ws.spec.target_filter.as_ref(), labels).unwrap_or(false) {
                matched = Some(Arc::clone(ws));
                break;
            }
        }
        let Some(ws) = matched else { return Ok(None) };
        let placed = |subset: Option<String>, generated_uid: String| {
            subset.map(|subset| Placement { ws: Arc::clone(&ws), subset, generated_uid })
        };
        if let [only] = ws.spec.subsets.as_slice()
            && only.max_replicas.is_none()
        {
            return Ok(placed(Some(only.name.clone()), String::new()));
        }
        if ws.spec.target_ref.as_ref().is_some_and(|t| t.kind == "StatefulSet") {
            return Ok(placed(statefulset_subset(&ws, crate::core::pods::name(pod)), String::new()));
        }
        let update = self.write(&ws, pod, None, Operation::Create, now).await?;
        Ok(update.and_then(|(subset, uid)| placed(subset, uid)))
    }

    /// `HandlePodDeletion`: the pod recorded in `deletingPods`; `Err` with the message the
    /// review fails with.
    pub async fn release(&self, check: &DeleteCheck, now: &Time) -> Result<(), String> {
        let Some(ws) = &check.ws else { return Ok(()) };
        if let [only] = ws.spec.subsets.as_slice()
            && only.max_replicas.is_none()
        {
            return Ok(());
        }
        if ws.spec.target_ref.as_ref().is_some_and(|t| t.kind == "StatefulSet") {
            return Ok(());
        }
        self.write(ws, &check.pod, Some(&check.injected), check.op, now).await.map(|_| ())
    }

    /// The retry loop of `acquireSuitableSubset`: the subset and generated uid decided on the
    /// copy that was written (`None`: the WorkloadSpread is gone).
    async fn write(
        &self,
        ws: &Arc<WorkloadSpread>,
        pod: &Pod,
        injected: Option<&Injected>,
        op: Operation,
        now: &Time,
    ) -> Result<Option<(Option<String>, String)>, String> {
        let namespace = ws.metadata.namespace.clone().unwrap_or_else(|| "default".into());
        let name = ws.metadata.name.clone().unwrap_or_default();
        let key = (namespace.clone(), name.clone());
        let lock = self.written.lock_of(&key);
        let replicas = if has_percent_subset(ws) { self.store.workload_replicas(ws).await? } else { 0 };
        let mut fresh: Option<Arc<WorkloadSpread>> = None;
        let mut last = String::new();
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(self.retry_delay * (1 << (attempt - 1))).await;
            }
            let _turn = lock.lock().await;
            let current = match fresh.take() {
                Some(w) => w,
                None => self.written.newest(&key, ws),
            };
            let mut next = (*current).clone();
            let update = update_subset_for_pod(&mut next, pod, injected, op, now, replicas, new_uid);
            if !update.changed {
                return Ok(Some((update.subset, update.generated_uid)));
            }
            match self.store.replace_status(&next).await {
                Ok(written) => {
                    self.written.remember(key, written);
                    return Ok(Some((update.subset, update.generated_uid)));
                }
                Err(WriteError::NotFound) => return Ok(None),
                Err(WriteError::Other(message)) => return Err(message),
                Err(WriteError::Conflict(message)) => {
                    tracing::debug!(workloadspread = %name, attempt, "WorkloadSpread status conflict; reading it again");
                    last = message;
                    match self.store.get(&namespace, &name).await {
                        Ok(Some(w)) => fresh = Some(Arc::new(w)),
                        Ok(None) => return Ok(None),
                        Err(message) => return Err(message),
                    }
                }
            }
        }
        Err(last)
    }
}

/// The API server as a [`SpreadStore`].
pub struct ApiStore {
    client: kube::Client,
}

impl ApiStore {
    /// WorkloadSpreads through `client`.
    pub fn new(client: kube::Client) -> Self {
        Self { client }
    }

    /// The object of `api_version`/`kind` called `name`, as JSON.
    async fn object(
        &self,
        namespace: &str,
        api_version: &str,
        kind: &str,
        name: &str,
    ) -> Result<Option<DynamicObject>, String> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let plural = match kind {
            "Deployment" => "deployments",
            "ReplicaSet" => "replicasets",
            "StatefulSet" => "statefulsets",
            "CloneSet" => "clonesets",
            "Job" => "jobs",
            other => return Err(format!("kind {other} is not a workload WorkloadSpread knows")),
        };
        let gvk = kube::api::GroupVersionKind::gvk(group, version, kind);
        let resource = ApiResource::from_gvk_with_plural(&gvk, plural);
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), namespace, &resource);
        api.get_opt(name).await.map_err(|e| e.to_string())
    }
}

impl SpreadStore for ApiStore {
    fn get<'a>(&'a self, namespace: &'a str, name: &'a str) -> StoreFuture<'a, Result<Option<WorkloadSpread>, String>> {
        Box::pin(async move {
            let api: Api<WorkloadSpread> = Api::namespaced(self.client.clone(), namespace);
            api.get_opt(name).await.map_err(|e| e.to_string())
        })
    }

    fn replace_status<'a>(&'a self, ws: &'a WorkloadSpread) -> StoreFuture<'a, Result<WorkloadSpread, WriteError>> {
        Box::pin(async move {
            let namespace = ws.metadata.namespace.as_deref().unwrap_or("default");
            let name = ws.metadata.name.as_deref().unwrap_or("");
            let api: Api<WorkloadSpread> = Api::namespaced(self.client.clone(), namespace);
            match api.replace_status(name, &PostParams::default(), ws).await {
                Ok(w) => Ok(w),
                Err(kube::Error::Api(e)) if e.code == 409 => Err(WriteError::Conflict(e.message)),
                Err(kube::Error::Api(e)) if e.code == 404 => Err(WriteError::NotFound),
                Err(e) => Err(WriteError::Other(e.to_string())),
            }
        })
    }

    fn controller_of<'a>(
        &'a self,
        namespace: &'a str,
        owner: &'a OwnerReference,
    ) -> StoreFuture<'a, Result<Option<OwnerReference>, Option<String>>> {
        Box::pin(async move {
            match self.object(namespace, &owner.api_version, &owner.kind, &owner.name).await {
                Ok(Some(o)) => Ok(o
                    .metadata
                    .owner_references
                    .as_ref()
                    .and_then(|refs| refs.iter().find(|r| r.controller == Some(true)).cloned())),
                Ok(None) => Err(None),
                Err(message) => Err(Some(message)),
            }
        })
    }

    fn workload_replicas<'a>(&'a self, ws: &'a WorkloadSpread) -> StoreFuture<'a, Result<i32, String>> {
        Box::pin(async move {
            let Some(target) = ws.spec.target_ref.as_ref() else { return Ok(0) };
            let namespace = ws.metadata.namespace.as_deref().unwrap_or("default");
            let Some(object) = self.object(namespace, &target.api_version, &target.kind, &target.name).await? else {
                return Ok(0);
            };
            let field = if target.kind == "Job" { "parallelism" } else { "replicas" };
            let replicas = object.data.pointer(&format!("/spec/{field}")).and_then(serde_json::Value::as_i64);
            Ok(replicas.map_or(1, |r| i32::try_from(r).unwrap_or(i32::MAX)))
        })
    }
}

#[cfg(test)]
mod tests;
