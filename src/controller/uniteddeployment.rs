//! The UnitedDeployment controller (issue 34 item 3; kruise `pkg/controller/uniteddeployment`,
//! v1.9.0) as wiring, for the four template kinds: a watch on UnitedDeployments, the shared
//! informers of the subset kinds (CloneSets and Advanced StatefulSets, also their own
//! controllers'; apps/v1 StatefulSets and Deployments, watched only for this controller) — a
//! change queues `namespace/<ud name>` when the workload's controller is a UnitedDeployment — and
//! the shared pod informer for the subsets' pods (a Deployment's are those of its ReplicaSets: the
//! pods of the namespace its selector matches that a ReplicaSet controls). A round settles the
//! revision (kruise's `constructUnitedDeploymentRevisions`,
//! [`crate::core::uniteddeployment::history`] on the shared revision cache: history beyond the
//! limit deleted (uid preconditions), an equal revision reused, else one created — or taken from the cache when an equal one of that name is there,
//! where kruise's create would answer AlreadyExists — a name collision counted), hands the
//! workloads of every kind it controls and their pods to
//! [`crate::core::uniteddeployment::subsets::plan`] and sends the result: the reserved labels of
//! `reserveUnschedulablePods` (JSON patches pinned to the pod's uid), deletions (uid
//! preconditions), creations (generateName), updates (replace at the cached resourceVersion; a
//! conflict retries the round), an apps/v1 StatefulSet's stuck pods deleted, and the status (a
//! JSON patch pinned to the resourceVersion read). A subset whose workload was just created is
//! awaited until the cache shows it, so a lagging cache never creates a second one.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation, TestOperation};
use k8s_openapi::api::apps::v1::{ControllerRevision, Deployment, StatefulSet};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::informers::{Informer, Informers};
use super::{ReconcileError, Settings};
use crate::apis::CloneSet;
use crate::apis::statefulset::v1beta1::StatefulSet as AdvancedStatefulSet;
use crate::apis::uniteddeployment::{UnitedDeployment, UnitedDeploymentStatus};
use crate::core::history;
use crate::core::uniteddeployment::history as ud_history;
use crate::core::uniteddeployment::reservation::label_patch;
use crate::core::uniteddeployment::subsets::{
    Action, Existing, OWNER_API_VERSION, OWNER_KIND, owned_by, plan, workload_pods,
};
use crate::core::uniteddeployment::workload::{SubsetKind, Workload};
use crate::metrics::{ControllerWriteLabels, Metrics};

/// The controller's name in metrics.
pub const CONTROLLER: &str = "uniteddeployment";
const FIELD_MANAGER: &str = "kruise-manager";

/// Subsets whose workload was created and is not in the cache yet, and since when.
type Pending = (BTreeSet<String>, Instant);

struct Context {
    settings: Settings,
    client: Client,
    metrics: Metrics,
    uds: Informer<UnitedDeployment>,
    informers: Informers,
    pending: Mutex<HashMap<String, Pending>>,
}

impl Context {
    fn count(&self, write: &str) {
        let labels = ControllerWriteLabels { controller: CONTROLLER.into(), write: write.into() };
        self.metrics.controller_writes.get_or_create(&labels).inc();
    }

    fn synced(&self) -> bool {
        let i = &self.informers;
        self.uds.index().is_synced()
            && i.pods.index().is_synced()
            && i.revisions.index().is_synced()
            && i.clonesets.index().is_synced()
            && i.advanced_statefulsets.index().is_synced()
            && i.statefulsets.index().is_synced()
            && i.deployments.index().is_synced()
    }

    /// Whether the cache shows every workload created for `key`; drops what it shows.
    fn expectations_met(&self, key: &str, shown: &BTreeSet<String>) -> bool {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let Some((set, since)) = pending.get_mut(key) else { return true };
        set.retain(|s| !shown.contains(s));
        if set.is_empty() || since.elapsed() > self.settings.expectation_timeout {
            pending.remove(key);
            return true;
        }
        false
    }

    fn expect(&self, key: &str, subset: String) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        pending.entry(key.to_string()).or_insert_with(|| (BTreeSet::new(), Instant::now())).0.insert(subset);
    }
}

/// `namespace/<ud name>` of an object whose controller is a UnitedDeployment.
fn owner_keys(meta: &ObjectMeta) -> Vec<String> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .filter(|r| r.api_version == OWNER_API_VERSION && r.kind == OWNER_KIND)
        .map(|r| vec![format!("{}/{}", meta.namespace.as_deref().unwrap_or(""), r.name)])
        .unwrap_or_default()
}

/// Registers the controller on `informers` (pods and the four subset kinds) and starts its own
/// UnitedDeployment watch and its runner. Start the informers after this.
pub fn start(
    informers: &Informers,
    client: &Client,
    settings: &Settings,
    metrics: &Metrics,
    token: &CancellationToken,
) -> Vec<JoinHandle<()>> {
    let runner = super::runner_for(CONTROLLER, settings, metrics);
    let uds = super::workload_informer::<UnitedDeployment>("UnitedDeployment", &runner);
    // The shared watch of each subset kind; a change queues the owning UnitedDeployment.
    let queue = runner.queue().clone();
    let trigger = move |meta: &ObjectMeta| owner_keys(meta).into_iter().for_each(|k| queue.add(k));
    let t = trigger.clone();
    informers.clonesets.on_change(move |c| t(c.meta()));
    let t = trigger.clone();
    informers.advanced_statefulsets.on_change(move |c| t(c.meta()));
    let t = trigger.clone();
    informers.statefulsets.on_change(move |c| t(c.meta()));
    informers.deployments.on_change(move |c| trigger(c.meta()));
    let ctx = Arc::new(Context {
        settings: settings.clone(),
        client: client.clone(),
        metrics: metrics.clone(),
        uds: uds.clone(),
        informers: informers.clone(),
        pending: Mutex::default(),
    });
    tracing::info!(controller = CONTROLLER, "starting");
    let reconcile = move |key: String| {
        let ctx = Arc::clone(&ctx);
        async move { reconcile(&ctx, &key).await }
    };
    let ns = settings.namespace.as_deref();
    vec![
        tokio::spawn(runner.run(reconcile, token.clone())),
        uds.start(super::informers::scoped(client, ns), metrics.clone(), token.clone()),
    ]
}

fn ptr(tokens: &[&str]) -> PointerBuf {
    PointerBuf::from_tokens(tokens.iter().copied())
}

/// Writes `status` pinned to the resourceVersion of `ud` (a conflict retries the round).
async fn write_status(
    ctx: &Context,
    ud: &UnitedDeployment,
    status: &UnitedDeploymentStatus,
) -> Result<(), ReconcileError> {
    let ns = ud.metadata.namespace.clone().unwrap_or_default();
    let name = ud.metadata.name.clone().unwrap_or_default();
    ctx.count("patchStatus");
    let patch = json_patch::Patch(vec![
        PatchOperation::Test(TestOperation {
            path: ptr(&["metadata", "resourceVersion"]),
            value: Value::from(ud.metadata.resource_version.clone().unwrap_or_default()),
        }),
        PatchOperation::Add(AddOperation {
            path: ptr(&["status"]),
            value: serde_json::to_value(status).unwrap_or(Value::Null),
        }),
    ]);
    let pp = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
    Api::<UnitedDeployment>::namespaced(ctx.client.clone(), &ns)
        .patch_status(&name, &pp, &Patch::Json::<()>(patch))
        .await
        .map_err(ReconcileError::api_err(format!("patch status of uniteddeployment {ns}/{name}")))?;
    Ok(())
}

/// kruise `constructUnitedDeploymentRevisions` ([`crate::core::uniteddeployment::history`] on the
/// revision cache, its writes sent here): the update revision's name, the current revision's, and
/// the collision count.
async fn settle_revision(
    ctx: &Context,
    ud: &UnitedDeployment,
) -> Result<(String, String, Option<i32>), ReconcileError> {
    let ns = ud.metadata.namespace.clone().unwrap_or_default();
    let api: Api<ControllerRevision> = Api::namespaced(ctx.client.clone(), &ns);
    let cached = ctx.informers.revisions.index().get(&ns);
    let in_namespace = || cached.iter().map(|r| &**r);
    let (expired, controlled) = ud_history::expire(ud, ud_history::controlled(ud, in_namespace()));
    for r in &expired {
        let name = r.metadata.name.as_deref().unwrap_or("");
        ctx.count("deleteRevision");
        delete_one::<ControllerRevision>(&ctx.client, &ns, name, r.metadata.uid.as_deref().unwrap_or(""))
            .await
            .map_err(ReconcileError::api_err(format!("delete the expired revision {ns}/{name}")))?;
    }
    let status = ud.status.clone().unwrap_or_default();
    let mut collision = status.collision_count;
    let update = match ud_history::step(ud, &controlled, collision.unwrap_or(0)) {
        ud_history::Step::Newest(name) => name,
        ud_history::Step::Renumber { name, revision } => {
            ctx.count("updateRevision");
            let patch = serde_json::json!({"revision": revision});
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(ReconcileError::api_err(format!("update revision {ns}/{name}")))?;
            name
        }
        ud_history::Step::Create { revision } => loop {
            let (candidate, counted, exists) =
                ud_history::to_create(ud, revision, collision.unwrap_or(0), in_namespace());
            if counted != collision.unwrap_or(0) {
                collision = Some(counted);
            }
            let rev_name = candidate.metadata.name.clone().unwrap_or_default();
            // An equal revision of that name in the cache: kruise's create would answer
            // AlreadyExists and use it; used here without the write.
            if exists {
                break rev_name;
            }
            ctx.count("createRevision");
            let pp = PostParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
            match api.create(&pp, &candidate).await {
                Ok(_) => break rev_name,
                // The cache is behind: the API's own copy decides.
                Err(kube::Error::Api(e)) if e.code == 409 => {
                    let existing = api
                        .get(&rev_name)
                        .await
                        .map_err(ReconcileError::api_err(format!("get revision {ns}/{rev_name}")))?;
                    if history::data_bytes(&existing) == history::data_bytes(&candidate) {
                        break rev_name;
                    }
                    collision = Some(collision.unwrap_or(0) + 1);
                }
                Err(e) => return Err(ReconcileError::api_err(format!("create revision {ns}/{rev_name}"))(e)),
            }
        },
    };
    let current = ud_history::current(&controlled, &status.current_revision, &update);
    Ok((update, current, collision))
}

async fn reconcile(ctx: &Context, key: &str) -> Result<Option<Duration>, ReconcileError> {
    if !ctx.synced() {
        return Ok(Some(super::act::EXPECTATION_RECHECK));
    }
    let Some(ud) = ctx.uds.index().get_object(key) else {
        ctx.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
        return Ok(None);
    };
    if ud.metadata.deletion_timestamp.is_some() {
        return Ok(None);
    }
    let now = Time(Timestamp::now());
    let uid = ud.metadata.uid.clone().unwrap_or_default();
    let ns = ud.metadata.namespace.clone().unwrap_or_default();
    let existing = ctx.owned_workloads(&ns, &uid);
    let kind = SubsetKind::of(&ud);
    let shown: BTreeSet<String> = existing
        .iter()
        .filter(|e| Some(e.workload.kind()) == kind)
        .filter_map(|e| e.workload.subset().map(str::to_string))
        .collect();
    if !ctx.expectations_met(key, &shown) {
        return Ok(Some(super::act::EXPECTATION_RECHECK));
    }
    let (revision, current, collision) = settle_revision(ctx, &ud).await?;
    let p = match plan(&ud, &existing, &revision, &current, now.clone()) {
        Ok(p) => p,
        Err(e) => {
            // kruise's "Specified subset replicas is ineffective": nothing is written.
            tracing::warn!(uniteddeployment = key, error = e.as_str(), "cannot plan the subsets");
            return Ok(Some(ctx.settings.resync));
        }
    };
    for action in &p.actions {
        act(ctx, key, &ns, action).await?;
    }
    let mut status = p.status;
    status.collision_count = collision;
    if ud.status.as_ref() != Some(&status) {
        write_status(ctx, &ud, &status).await?;
    }
    Ok(Some(super::next_round(p.requeue_after, ctx.settings.resync)))
}

impl Context {
    /// The workloads of every subset kind in `ns` controlled by the UnitedDeployment `uid`
    /// (oldest first), each with its pods.
    fn owned_workloads(&self, ns: &str, uid: &str) -> Vec<Existing> {
        fn owned<K>(informer: &Informer<K>, ns: &str, uid: &str, wrap: fn(K) -> Workload) -> Vec<Workload>
        where
            K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
        {
            informer
                .index()
                .get(ns)
                .into_iter()
                .filter(|w| owned_by(w.meta(), uid))
                .map(|w| wrap((*w).clone()))
                .collect()
        }
        let i = &self.informers;
        let mut workloads = owned(&i.clonesets, ns, uid, Workload::CloneSet);
        workloads.extend(owned(&i.advanced_statefulsets, ns, uid, Workload::AdvancedStatefulSet));
        workloads.extend(owned(&i.statefulsets, ns, uid, Workload::StatefulSet));
        workloads.extend(owned(&i.deployments, ns, uid, Workload::Deployment));
        workloads.sort_by(Workload::oldest_first);
        workloads.into_iter().map(|w| Existing { pods: self.pods_of(ns, &w), workload: w }).collect()
    }

    /// The pods of a subset workload ([`workload_pods`]), from the pod cache's namespace entry
    /// for a Deployment, its owner entry for the others.
    fn pods_of(&self, ns: &str, w: &Workload) -> Vec<Arc<Pod>> {
        let pods = self.informers.pods.index();
        let key = match w {
            Workload::Deployment(_) => super::index::namespace_key(ns),
            _ => w.meta().uid.clone().unwrap_or_default(),
        };
        workload_pods(w, &pods.get(&key))
    }
}

fn post_params() -> PostParams {
    PostParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() }
}

async fn create_one<K>(client: &Client, ns: &str, obj: &K) -> Result<(), kube::Error>
where
    K: Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + Serialize
        + DeserializeOwned
        + std::fmt::Debug,
{
    Api::<K>::namespaced(client.clone(), ns).create(&post_params(), obj).await.map(|_| ())
}

async fn replace_one<K>(client: &Client, ns: &str, name: &str, obj: &K) -> Result<(), kube::Error>
where
    K: Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + Serialize
        + DeserializeOwned
        + std::fmt::Debug,
{
    Api::<K>::namespaced(client.clone(), ns).replace(name, &post_params(), obj).await.map(|_| ())
}

/// Deletes `name` with a uid precondition (background propagation, as kruise); gone is done.
async fn delete_one<K>(client: &Client, ns: &str, name: &str, uid: &str) -> Result<(), kube::Error>
where
    K: Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let dp = DeleteParams {
        preconditions: Some(Preconditions { uid: Some(uid.to_string()), resource_version: None }),
        ..DeleteParams::background()
    };
    match Api::<K>::namespaced(client.clone(), ns).delete(name, &dp).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Sends one write of the plan.
async fn act(ctx: &Context, key: &str, ns: &str, action: &Action) -> Result<(), ReconcileError> {
    let client = &ctx.client;
    match action {
        Action::Delete { kind, name, uid, reason } => {
            ctx.count("deleteSubset");
            tracing::info!(
                uniteddeployment = key,
                kind = kind.name(),
                workload = name.as_str(),
                reason,
                "deleting a subset"
            );
            let sent = match kind {
                SubsetKind::CloneSet => delete_one::<CloneSet>(client, ns, name, uid).await,
                SubsetKind::AdvancedStatefulSet => delete_one::<AdvancedStatefulSet>(client, ns, name, uid).await,
                SubsetKind::StatefulSet => delete_one::<StatefulSet>(client, ns, name, uid).await,
                SubsetKind::Deployment => delete_one::<Deployment>(client, ns, name, uid).await,
            };
            sent.map_err(ReconcileError::api_err(format!("delete the {} {ns}/{name}", kind.name())))
        }
        Action::Create { subset, workload } => {
            ctx.count("createSubset");
            let sent = match &**workload {
                Workload::CloneSet(w) => create_one(client, ns, w).await,
                Workload::AdvancedStatefulSet(w) => create_one(client, ns, w).await,
                Workload::StatefulSet(w) => create_one(client, ns, w).await,
                Workload::Deployment(w) => create_one(client, ns, w).await,
            };
            let kind = workload.kind().name();
            sent.map_err(ReconcileError::api_err(format!("create the {kind} of subset {subset} of {key}")))?;
            tracing::info!(uniteddeployment = key, subset = subset.as_str(), kind, "created a subset");
            ctx.expect(key, subset.clone());
            Ok(())
        }
        Action::Update { subset, name, workload } => {
            ctx.count("updateSubset");
            let sent = match &**workload {
                Workload::CloneSet(w) => replace_one(client, ns, name, w).await,
                Workload::AdvancedStatefulSet(w) => replace_one(client, ns, name, w).await,
                Workload::StatefulSet(w) => replace_one(client, ns, name, w).await,
                Workload::Deployment(w) => replace_one(client, ns, name, w).await,
            };
            let kind = workload.kind().name();
            sent.map_err(ReconcileError::api_err(format!("update the {kind} {name} of subset {subset}")))
        }
        Action::LabelPod { subset, pod } => {
            ctx.count("labelReservedPod");
            let value = if pod.reserved { "true" } else { "false" };
            tracing::debug!(
                uniteddeployment = key,
                subset = subset.as_str(),
                pod = pod.name.as_str(),
                reserved = value,
                "labelling a pod"
            );
            let patch = label_patch(pod);
            let pp = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
            match Api::<Pod>::namespaced(client.clone(), ns).patch(&pod.name, &pp, &Patch::Json::<()>(patch)).await {
                Ok(_) => Ok(()),
                // Gone, or another pod by now under that name: nothing to label.
                Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
                Err(e) => Err(ReconcileError::api_err(format!("label the pod {ns}/{}", pod.name))(e)),
            }
        }
        Action::DeletePod { subset, name, uid } => {
            ctx.count("deleteStuckPod");
            tracing::info!(
                uniteddeployment = key,
                subset = subset.as_str(),
                pod = name.as_str(),
                "deleting a stuck pod"
            );
            delete_one::<Pod>(client, ns, name, uid)
                .await
                .map_err(ReconcileError::api_err(format!("delete the stuck pod {ns}/{name}")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    fn meta(api_version: &str, kind: &str, controller: bool) -> ObjectMeta {
        ObjectMeta {
            namespace: Some("ns".into()),
            owner_references: Some(vec![OwnerReference {
                api_version: api_version.into(),
                kind: kind.into(),
                name: "web".into(),
                uid: "u".into(),
                controller: Some(controller),
                block_owner_deletion: None,
            }]),
            ..Default::default()
        }
    }

    #[test]
    fn clonesets_are_filed_under_their_united_deployment() {
        assert_eq!(owner_keys(&meta(OWNER_API_VERSION, OWNER_KIND, true)), ["ns/web"]);
        assert!(owner_keys(&meta(OWNER_API_VERSION, OWNER_KIND, false)).is_empty());
        assert!(owner_keys(&meta(OWNER_API_VERSION, "CloneSet", true)).is_empty());
    }
}
