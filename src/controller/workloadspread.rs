//! The WorkloadSpread controller (issue 34 item 3; kruise v1.9.0
//! `pkg/controller/workloadspread`) as wiring around [`crate::core::workloadspread::status::plan`]:
//! WorkloadSpreads come from the webhook's view (no second watch), pods from the shared pod
//! informer (a pod change queues the spread its `apps.kruise.io/matched-workloadspread`
//! annotation names); the spreads that exist when the controller starts (a new term of
//! leadership) are queued from one metadata list.
//!
//! A round reads the target workload (its replicas; for a Deployment its ReplicaSets, which own
//! the pods, and the newest one's `pod-template-hash` as the latest version; for a CloneSet the
//! short hash of `status.updateRevision`), takes the namespace's pods those workloads control
//! and the target filter selects, and acts on the plan in kruise's order:
//! 1. pods of the target without this spread's annotation are adopted by their node (the shared
//!    node informer): a strategic merge patch of the annotation and the subset patch's metadata;
//! 2. the deletion costs (a merge patch of one annotation);
//! 3. the status, replaced at the resourceVersion the view holds (a conflict retries the round
//!    on a fresher copy);
//! 4. with the Adaptive strategy, the pods that failed to schedule for too long are deleted (the
//!    status just written marks their subset unschedulable), each with its uid as precondition.
//!
//! The plan's Events, and kruise's `PatchPodDeletionCostFailed` and `DeletePodFailed` when those
//! writes fail, are recorded on the WorkloadSpread. It comes back when the next creating/deleting
//! record expires, a pending pod would time out or a subset would recover, at most after the
//! resync.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, Preconditions,
};
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::act::Actor;
use super::index::{meta_key, namespace_key};
use super::informers::Informers;
use super::queue::WorkQueue;
use super::{ReconcileError, Settings};
use crate::apis::workloadspread::WorkloadSpread;
use crate::cluster::ClusterView;
use crate::cluster::snapshot::ViewKind;
use crate::core::features::Gate;
use crate::core::rollout::plan::Event;
use crate::core::workloadspread::status::plan;
use crate::core::workloadspread::{
    DELETION_COST_ANNOTATION, Injected, MATCHED_ANNOTATION, VERSION_IGNORED, selects_pod,
};
use crate::metrics::{ControllerWriteLabels, Metrics};

/// The controller's name in metrics.
pub const CONTROLLER: &str = "workloadspread";
const FIELD_MANAGER: &str = "kruise-manager";

struct Context {
    settings: Settings,
    client: Client,
    metrics: Metrics,
    view: Arc<dyn ClusterView>,
    informers: Informers,
    /// The Event recorder (kruise's `recorder`).
    actor: Actor,
}

impl Context {
    fn count(&self, write: &str) {
        let labels = ControllerWriteLabels { controller: CONTROLLER.into(), write: write.into() };
        self.metrics.controller_writes.get_or_create(&labels).inc();
    }
}

/// Registers the controller on `informers` (pods) and on the view (WorkloadSpreads) and starts
/// its runner; nothing without the `WorkloadSpread` gate.
pub fn start(
    informers: &Informers,
    view: Arc<dyn ClusterView>,
    client: &Client,
    settings: &Settings,
    metrics: &Metrics,
    token: &CancellationToken,
) -> Vec<JoinHandle<()>> {
    if !settings.gates.enabled(Gate::WorkloadSpread) {
        return Vec::new();
    }
    let runner = super::runner_for(CONTROLLER, settings, metrics);
    let queue = runner.queue().clone();
    informers.pods.on_change(move |c| {
        if let Some(key) = spread_of_pod(c.meta()) {
            queue.add(key);
        }
    });
    view.on_change(Box::new(view_trigger(runner.queue().clone(), settings.namespace.clone())));
    let ctx = Arc::new(Context {
        settings: settings.clone(),
        client: client.clone(),
        metrics: metrics.clone(),
        view,
        informers: informers.clone(),
        actor: super::actor_for(CONTROLLER, client, settings, metrics),
    });
    tracing::info!(controller = CONTROLLER, "starting");
    let reconcile = move |key: String| {
        let ctx = Arc::clone(&ctx);
        async move { reconcile(&ctx, &key).await }
    };
    let existing = super::queue_existing::<WorkloadSpread>(CONTROLLER, client, settings, runner.queue(), token);
    vec![tokio::spawn(existing), tokio::spawn(runner.run(reconcile, token.clone()))]
}

/// `namespace/name` of the WorkloadSpread a pod's annotation names.
fn spread_of_pod(meta: &ObjectMeta) -> Option<String> {
    let injected = Injected::parse(meta.annotations.as_ref()?.get(MATCHED_ANNOTATION)?)?;
    (!injected.name.is_empty()).then(|| format!("{}/{}", meta.namespace.as_deref().unwrap_or(""), injected.name))
}

/// A WorkloadSpread the view takes in (or lets go) queues itself; the handler lets go once the
/// runner stopped (leadership lost).
fn view_trigger(queue: WorkQueue, namespace: Option<String>) -> impl Fn(ViewKind, &ObjectMeta) -> bool + Send + Sync {
    move |kind, meta| {
        if queue.is_closed() {
            return false;
        }
        let in_scope = namespace.as_deref().is_none_or(|ns| meta.namespace.as_deref() == Some(ns));
        if kind == ViewKind::WorkloadSpread && in_scope {
            queue.add(meta_key(meta));
        }
        true
    }
}

/// The resource of a target kind.
fn resource_of(api_version: &str, kind: &str) -> Option<ApiResource> {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let plural = match kind {
        "Deployment" => "deployments",
        "ReplicaSet" => "replicasets",
        "StatefulSet" => "statefulsets",
        "CloneSet" => "clonesets",
        "Job" => "jobs",
        _ => return None,
    };
    Some(ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: api_version.into(),
        kind: kind.into(),
        plural: plural.into(),
    })
}

/// What a round knows of the target: the uids controlling its pods, its replicas, its latest
/// version.
struct Target {
    uids: Vec<String>,
    replicas: i32,
    latest_version: String,
}

/// `GetPodsForRef`'s half over the API, with `getWorkloadLatestVersion`.
async fn target(ctx: &Context, ws: &WorkloadSpread, namespace: &str) -> Result<Option<Target>, ReconcileError> {
    let Some(reference) = ws.spec.target_ref.as_ref() else { return Ok(None) };
    let Some(resource) = resource_of(&reference.api_version, &reference.kind) else { return Ok(None) };
    let api: Api<DynamicObject> = Api::namespaced_with(ctx.client.clone(), namespace, &resource);
    let what = || format!("get {} {namespace}/{}", reference.kind, reference.name);
    let Some(object) = api.get_opt(&reference.name).await.map_err(ReconcileError::api_err(what()))? else {
        return Ok(None);
    };
    let uid = object.metadata.uid.clone().unwrap_or_default();
    let field = if reference.kind == "Job" { "/spec/parallelism" } else { "/spec/replicas" };
    let replicas =
        object.data.pointer(field).and_then(Value::as_i64).map_or(1, |r| i32::try_from(r).unwrap_or(i32::MAX));
    let mut t = Target { uids: vec![uid.clone()], replicas, latest_version: VERSION_IGNORED.into() };
    match reference.kind.as_str() {
        "Deployment" => {
            let rs_resource = resource_of("apps/v1", "ReplicaSet").ok_or_else(|| ReconcileError::Api {
                what: "replicasets".into(),
                code: None,
                message: "no resource".into(),
            })?;
            let rs_api: Api<DynamicObject> = Api::namespaced_with(ctx.client.clone(), namespace, &rs_resource);
            let list = rs_api
                .list(&ListParams::default())
                .await
                .map_err(ReconcileError::api_err(format!("list replicasets of {namespace}/{}", reference.name)))?;
            let revision = |rs: &DynamicObject| {
                rs.metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get("deployment.kubernetes.io/revision"))
                    .and_then(|r| r.parse::<i64>().ok())
                    .unwrap_or(0)
            };
            let mut owned: Vec<&DynamicObject> = list
                .items
                .iter()
                .filter(|rs| rs.metadata.deletion_timestamp.is_none())
                .filter(|rs| {
                    rs.metadata.owner_references.iter().flatten().any(|r| r.controller == Some(true) && r.uid == uid)
                })
                .collect();
            owned.sort_by_key(|rs| revision(rs));
            t.uids = owned.iter().filter_map(|rs| rs.metadata.uid.clone()).collect();
            t.latest_version = owned
                .last()
                .and_then(|rs| rs.metadata.labels.as_ref()?.get("pod-template-hash").cloned())
                .unwrap_or_default();
        }
        "ReplicaSet" => {
            t.latest_version =
                object.metadata.labels.as_ref().and_then(|l| l.get("pod-template-hash").cloned()).unwrap_or_default();
        }
        _ => {}
    }
    Ok(Some(t))
}

/// The WorkloadSpread as the object its Events are recorded on.
fn spread_reference(ws: &WorkloadSpread) -> ObjectReference {
    ObjectReference {
        api_version: Some("apps.kruise.io/v1alpha1".into()),
        kind: Some("WorkloadSpread".into()),
        namespace: ws.metadata.namespace.clone(),
        name: ws.metadata.name.clone(),
        uid: ws.metadata.uid.clone(),
        resource_version: ws.metadata.resource_version.clone(),
        ..Default::default()
    }
}

/// kruise's `PatchPodDeletionCostFailed` message, which formats the cost (a string) with `%d`:
/// Go prints `%!d(string=…)`, kept as kruise shows it.
fn cost_failed_message(ns: &str, ws: &str, cost: &str, pod: &str, subset: &str) -> String {
    format!(
        "WorkloadSpread {ns}/{ws} failed to patch deletion-cost annotation to %!d(string={cost}) for Pod {ns}/{pod} in subset {subset}"
    )
}

/// kruise's `DeletePodFailed` message for a pod it could not reschedule (its spelling kept).
fn delete_failed_message(ns: &str, pod: &str, subset: &str, ws: &str) -> String {
    format!("Failed to delete unschedulabe Pod {ns}/{pod} in Subset {subset} of WorkloadSpread {ns}/{ws}")
}

async fn reconcile(ctx: &Context, key: &str) -> Result<Option<Duration>, ReconcileError> {
    if !ctx.informers.pods.index().is_synced() || !ctx.informers.nodes.index().is_synced() {
        return Ok(Some(Duration::from_secs(1)));
    }
    let Some((ns, name)) = key.split_once('/') else { return Ok(None) };
    let Some(ws) = ctx.view.workload_spreads(ns).into_iter().find(|w| w.metadata.name.as_deref() == Some(name)) else {
        return Ok(None);
    };
    if ws.metadata.deletion_timestamp.is_some() {
        return Ok(None);
    }
    // A target that does not exist (yet) has no pods and no replicas (kruise's controller finder).
    let target = target(ctx, &ws, ns).await?.unwrap_or_else(|| Target {
        uids: Vec::new(),
        replicas: 0,
        latest_version: VERSION_IGNORED.into(),
    });
    let cached = ctx.informers.pods.index().get(&namespace_key(ns));
    let mut pods: Vec<&Pod> = cached
        .iter()
        .map(AsRef::as_ref)
        .filter(|p| crate::core::workloadspread::controller_of(p).is_some_and(|o| target.uids.contains(&o.uid)))
        .filter(|p| {
            let no_labels = Default::default();
            selects_pod(ws.spec.target_filter.as_ref(), p.metadata.labels.as_ref().unwrap_or(&no_labels))
                .unwrap_or(false)
        })
        .collect();
    // Adoption takes room in pod order: the same order every round.
    pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let now = Time(Timestamp::now());
    let nodes = ctx.informers.nodes.index();
    let node = |name: &str| -> Option<Arc<Node>> { nodes.get_object(&format!("/{name}")) };
    let p = plan(&ws, &pods, target.replicas, &target.latest_version, &now, &node);
    let reference = spread_reference(&ws);
    ctx.actor.publish(&reference, &p.events).await;

    let pod_api: Api<Pod> = Api::namespaced(ctx.client.clone(), ns);
    let pp = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
    for adoption in &p.adoptions {
        ctx.count("patchPodAdoption");
        tracing::info!(
            workloadspread = key,
            pod = adoption.pod.as_str(),
            subset = adoption.subset.as_str(),
            "adopting a pod created before the WorkloadSpread"
        );
        match pod_api.patch(&adoption.pod, &pp, &Patch::Strategic(&adoption.patch)).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => {
                return Err(ReconcileError::api(
                    format!("patch the WorkloadSpread annotation of pod {ns}/{}", adoption.pod),
                    &e,
                ));
            }
        }
    }
    for c in &p.costs {
        ctx.count("patchPodDeletionCost");
        let patch = serde_json::json!({"metadata": {"annotations": {DELETION_COST_ANNOTATION: c.cost}}});
        match pod_api.patch(&c.pod, &pp, &Patch::Merge(&patch)).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => {
                let message = cost_failed_message(ns, name, &c.cost, &c.pod, &c.subset);
                ctx.actor.publish(&reference, &[Event::warning("PatchPodDeletionCostFailed", message)]).await;
                return Err(ReconcileError::api(format!("patch deletion cost of pod {ns}/{}", c.pod), &e));
            }
        }
    }
    if let Some(status) = p.status
        && ws.status.as_ref() != Some(&status)
    {
        ctx.count("updateStatus");
        let mut next = (*ws).clone();
        next.status = Some(status);
        Api::<WorkloadSpread>::namespaced(ctx.client.clone(), ns)
            .replace_status(
                name,
                &PostParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() },
                &next,
            )
            .await
            .map_err(ReconcileError::api_err(format!("update status of workloadspread {key}")))?;
    }
    for r in &p.reschedule {
        ctx.count("deleteUnschedulablePod");
        let dp = DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(r.uid.clone()).filter(|u| !u.is_empty()),
                resource_version: None,
            }),
            ..Default::default()
        };
        match pod_api.delete(&r.pod, &dp).await {
            Ok(_) => tracing::info!(
                workloadspread = key,
                pod = r.pod.as_str(),
                subset = r.subset.as_str(),
                "deleted a pod that could not be scheduled"
            ),
            // Gone already, or replaced by a pod of the same name.
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
            Err(e) => {
                let message = delete_failed_message(ns, &r.pod, &r.subset, name);
                ctx.actor.publish(&reference, &[Event::warning("DeletePodFailed", message)]).await;
                return Err(ReconcileError::api(format!("delete unschedulable pod {ns}/{}", r.pod), &e));
            }
        }
    }
    Ok(Some(p.requeue.map_or(ctx.settings.resync, |d| d.min(ctx.settings.resync))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_queue_the_spread_they_name() {
        let meta = |annotation: Option<&str>| ObjectMeta {
            namespace: Some("ns".into()),
            annotations: annotation.map(|a| [(MATCHED_ANNOTATION.to_string(), a.to_string())].into()),
            ..Default::default()
        };
        assert_eq!(spread_of_pod(&meta(Some(r#"{"name":"ws","subset":"a"}"#))), Some("ns/ws".into()));
        assert_eq!(spread_of_pod(&meta(Some(r#"{"Name":"ws","Subset":"a"}"#))), Some("ns/ws".into()));
        assert_eq!(spread_of_pod(&meta(Some("not json"))), None);
        assert_eq!(spread_of_pod(&meta(None)), None);
    }

    #[test]
    fn event_messages_are_kruises() {
        assert_eq!(
            cost_failed_message("ns", "ws", "200", "p", "zone-a"),
            "WorkloadSpread ns/ws failed to patch deletion-cost annotation to %!d(string=200) for Pod ns/p in subset zone-a"
        );
        assert_eq!(
            delete_failed_message("ns", "p", "zone-a", "ws"),
            "Failed to delete unschedulabe Pod ns/p in Subset zone-a of WorkloadSpread ns/ws"
        );
        let ws: WorkloadSpread = crate::compat::decode::from_value(
            &serde_json::json!({"metadata": {"name": "ws", "namespace": "ns", "uid": "u"}, "spec": {"subsets": []}}),
        )
        .unwrap();
        let r = spread_reference(&ws);
        assert_eq!(
            (r.kind.as_deref(), r.name.as_deref(), r.uid.as_deref()),
            (Some("WorkloadSpread"), Some("ws"), Some("u"))
        );
    }

    #[test]
    fn target_kinds_have_resources() {
        assert_eq!(resource_of("apps/v1", "Deployment").map(|r| r.plural), Some("deployments".into()));
        assert_eq!(resource_of("batch/v1", "Job").map(|r| r.plural), Some("jobs".into()));
        assert_eq!(
            resource_of("apps.kruise.io/v1beta1", "StatefulSet").map(|r| r.api_version),
            Some("apps.kruise.io/v1beta1".into())
        );
        assert!(resource_of("v1", "Pod").is_none());
    }
}
