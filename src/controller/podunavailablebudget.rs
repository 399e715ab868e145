//! The PodUnavailableBudget controller (kruise v1.9 `pkg/controller/podunavailablebudget`) as
//! wiring: the admission view's budget watch (one watch per kind: the webhook already keeps every
//! budget for `/validate-pod`) and the shared pod informer feed the runner's queue (a pod is
//! queued under the budget it names in `kruise.io/related-pub`, or else the budget of its
//! namespace that covers it); a reconcile resolves the budget's workload through the API
//! (kruise's controller finder: the targetRef's CloneSet, Advanced StatefulSet, Deployment — with
//! its ReplicaSets —, StatefulSet or ReplicaSet, or the controllers of the pods a selector
//! matches), names the budget on covered pods that do not yet name it, and writes the status
//! `core::budget::status::plan_status` plans, only when it changed, at the budget's
//! resourceVersion (a conflict reads it again and plans again, as kruise's retry does). It looks
//! again when a disrupted or unavailable record expires, or at the resync. Events as kruise's:
//! `NoPods` and `CalculateExpectedPodCountFailed` on the budget, `NotDeleted` on a pod recorded
//! disrupted that outlived its deletion timeout.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::act::Actor;
use super::index::{meta_key, namespace_key};
use super::informers::{Change, Informers};
use super::queue::WorkQueue;
use super::runner::Runner;
use super::{ReconcileError, Settings};
use crate::apis::podunavailablebudget::PodUnavailableBudget;
use crate::cluster::ClusterView;
use crate::cluster::snapshot::ViewKind;
use crate::core::budget::status::plan_status;
use crate::core::budget::targets::{Targets, Workload, for_selector, for_target, pods_to_annotate};
use crate::core::budget::{RELATED_PUB, RELATED_PUB_STABLE, pub_for_pod};
use crate::core::features::Gate;
use crate::core::rollout::plan::{Event, EventType};
use crate::metrics::Metrics;

/// The controller's name in metrics.
pub const CONTROLLER: &str = "podunavailablebudget";

/// Status writes of one reconcile before it gives up to the runner's backoff (kruise's
/// `ConflictRetry.Steps`).
const WRITE_ATTEMPTS: usize = 4;

struct Context {
    settings: Settings,
    view: Arc<dyn ClusterView>,
    informers: Informers,
    client: Client,
    actor: Actor,
    runner: Arc<Runner>,
}

/// Registers the controller on `informers` and on the admission `view` and starts its runner (it
/// stops when `token` is cancelled); nothing when both PUB gates are off. Start the informers
/// after.
pub fn start(
    informers: &Informers,
    view: Arc<dyn ClusterView>,
    client: &Client,
    settings: &Settings,
    metrics: &Metrics,
    token: &CancellationToken,
) -> Vec<JoinHandle<()>> {
    let gates = &settings.gates;
    if !gates.enabled(Gate::PodUnavailableBudgetDeleteGate) && !gates.enabled(Gate::PodUnavailableBudgetUpdateGate) {
        return Vec::new();
    }
    let ns = settings.namespace.as_deref();
    let runner = super::runner_for(CONTROLLER, settings, metrics);
    let (queue, weak) = (runner.queue().clone(), Arc::downgrade(&view));
    informers.pods.on_change(move |c| {
        if let Some(key) = weak.upgrade().and_then(|view| budget_of_change(view.as_ref(), c)) {
            queue.add(key);
        }
    });
    view.on_change(Box::new(view_trigger(runner.queue().clone(), settings.namespace.clone())));
    let ctx = Arc::new(Context {
        settings: settings.clone(),
        view,
        informers: informers.clone(),
        client: client.clone(),
        actor: super::actor_for(CONTROLLER, client, settings, metrics),
        runner: Arc::clone(&runner),
    });
    tracing::info!(controller = CONTROLLER, namespace = ns.unwrap_or("(all)"), "starting");
    let reconcile = move |key: String| {
        let ctx = Arc::clone(&ctx);
        async move { reconcile(&ctx, &key).await }
    };
    let existing = super::queue_existing::<PodUnavailableBudget>(CONTROLLER, client, settings, runner.queue(), token);
    vec![tokio::spawn(existing), tokio::spawn(runner.run(reconcile, token.clone()))]
}

/// A budget the view takes in (or lets go) queues itself, within the controller's namespace; the
/// handler lets go once the runner stopped (leadership lost).
fn view_trigger(queue: WorkQueue, namespace: Option<String>) -> impl Fn(ViewKind, &ObjectMeta) -> bool + Send + Sync {
    move |kind, meta| {
        if queue.is_closed() {
            return false;
        }
        let in_scope = namespace.as_deref().is_none_or(|ns| meta.namespace.as_deref() == Some(ns));
        if kind == ViewKind::PodUnavailableBudget && in_scope {
            queue.add(meta_key(meta));
        }
        true
    }
}

/// The budget `key` (`namespace/name`) as the view holds it.
fn budget_of_key(view: &dyn ClusterView, key: &str) -> Option<Arc<PodUnavailableBudget>> {
    let (ns, name) = key.split_once('/')?;
    view.pod_unavailable_budgets(ns).into_iter().find(|b| b.metadata.name.as_deref() == Some(name))
}

/// The key of the budget a pod change concerns: the one it names, or the one covering it.
fn budget_of_change(view: &dyn ClusterView, change: Change<'_, Pod>) -> Option<String> {
    let meta = change.meta();
    let ns = meta.namespace.clone().unwrap_or_default();
    let named = [RELATED_PUB_STABLE, RELATED_PUB]
        .iter()
        .find_map(|key| meta.annotations.as_ref().and_then(|a| a.get(*key)).filter(|n| !n.is_empty()));
    if let Some(name) = named {
        return Some(format!("{ns}/{name}"));
    }
    let Change::Applied(pod) = change else { return None };
    let listed = view.pod_unavailable_budgets(&ns);
    if listed.is_empty() {
        return None;
    }
    let refs: Vec<&PodUnavailableBudget> = listed.iter().map(AsRef::as_ref).collect();
    pub_for_pod(pod, &refs).map(|b| meta_key(&b.metadata))
}

async fn reconcile(ctx: &Context, key: &str) -> Result<Option<Duration>, ReconcileError> {
    if !ctx.informers.pods.index().is_synced() {
        return Ok(Some(Duration::from_secs(1)));
    }
    // A budget the view has not listed yet is queued again when the view takes it in.
    let Some(budget) = budget_of_key(ctx.view.as_ref(), key) else {
        ctx.runner.forget(key);
        return Ok(None);
    };
    if budget.metadata.deletion_timestamp.is_some() {
        return Ok(None);
    }
    let ns = budget.metadata.namespace.clone().unwrap_or_default();
    let name = budget.metadata.name.clone().unwrap_or_default();
    let cached = ctx.informers.pods.index().get(&namespace_key(&ns));
    let namespace_pods: Vec<&Pod> = cached.iter().map(AsRef::as_ref).collect();
    let finder = Finder { client: &ctx.client, namespace: &ns };
    let targets = match &budget.spec.target_reference {
        Some(target) => {
            let (workload, uids) = finder.target(&target.api_version, &target.kind, &target.name).await?;
            for_target(&budget, workload.as_ref(), &uids, &namespace_pods)
        }
        None => {
            // First pass: which controllers the selected pods have; then resolve them.
            let mut owners: Vec<OwnerReference> = Vec::new();
            for_selector(&budget, &namespace_pods, |_, owner| {
                owners.push(owner.clone());
                None
            });
            let mut resolved: HashMap<String, Option<Workload>> = HashMap::new();
            for owner in &owners {
                resolved.insert(owner.uid.clone(), finder.of_pod(owner).await?);
            }
            for_selector(&budget, &namespace_pods, |_, owner| resolved.get(&owner.uid).cloned().flatten())
        }
    };
    if targets.pods.is_empty() {
        let no_pods = Event { type_: EventType::Normal, reason: "NoPods", message: "No matching pods found".into() };
        ctx.actor.publish(&budget_reference(&budget), &[no_pods]).await;
    } else {
        annotate(ctx, &ns, &name, &targets).await?;
    }
    write_status(ctx, &budget, &targets).await
}

fn budget_reference(budget: &PodUnavailableBudget) -> ObjectReference {
    ObjectReference {
        api_version: Some("policy.kruise.io/v1alpha1".into()),
        kind: Some("PodUnavailableBudget".into()),
        namespace: budget.metadata.namespace.clone(),
        name: budget.metadata.name.clone(),
        uid: budget.metadata.uid.clone(),
        resource_version: budget.metadata.resource_version.clone(),
        ..Default::default()
    }
}

fn pod_reference(namespace: &str, pod: &Pod) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: Some(namespace.into()),
        name: pod.metadata.name.clone(),
        uid: pod.metadata.uid.clone(),
        ..Default::default()
    }
}

/// Names the budget on the covered pods that name none (`patchRelatedPubAnnotationInPod`).
async fn annotate(ctx: &Context, ns: &str, name: &str, targets: &Targets<'_>) -> Result<(), ReconcileError> {
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), ns);
    let body = json!({"metadata": {"annotations": {RELATED_PUB: name}}});
    for pod in pods_to_annotate(targets) {
        let pod_name = crate::core::pods::name(pod);
        match api.patch(pod_name, &PatchParams::default(), &Patch::Strategic(&body)).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(ReconcileError::api(format!("annotate pod {ns}/{pod_name}"), &e)),
        }
    }
    Ok(())
}

/// Writes the planned status when it changed; on a conflict reads the budget and plans again.
async fn write_status(
    ctx: &Context,
    cached: &Arc<PodUnavailableBudget>,
    targets: &Targets<'_>,
) -> Result<Option<Duration>, ReconcileError> {
    let ns = cached.metadata.namespace.clone().unwrap_or_default();
    let name = cached.metadata.name.clone().unwrap_or_default();
    let api: Api<PodUnavailableBudget> = Api::namespaced(ctx.client.clone(), &ns);
    let vertical = ctx.settings.gates.enabled(Gate::InPlaceWorkloadVerticalScaling);
    let mut budget: PodUnavailableBudget = (**cached).clone();
    for _ in 0..WRITE_ATTEMPTS {
        let now = Timestamp::now();
        let plan = match plan_status(&budget, &targets.pods, targets.expected, now, vertical) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(budget = %format!("{ns}/{name}"), error = %e, "cannot compute the desired available pods");
                let failed = Event {
                    type_: EventType::Warning,
                    reason: "CalculateExpectedPodCountFailed",
                    message: format!("Failed to calculate the number of expected pods: {e}"),
                };
                ctx.actor.publish(&budget_reference(cached), &[failed]).await;
                return Ok(Some(ctx.settings.resync));
            }
        };
        for pod in targets.pods.iter().filter(|p| plan.not_deleted.iter().any(|n| n == crate::core::pods::name(p))) {
            tracing::warn!(budget = %format!("{ns}/{name}"), pod = crate::core::pods::name(pod), "pod was expected by the budget to be deleted but it wasn't");
            let not_deleted = Event {
                type_: EventType::Warning,
                reason: "NotDeleted",
                message: format!("Pod was expected by PUB {ns}/{name} to be deleted but it wasn't"),
            };
            ctx.actor.publish(&pod_reference(&ns, pod), &[not_deleted]).await;
        }
        let next = plan
            .recheck
            .and_then(|t| Duration::try_from(t.duration_since(now)).ok())
            .map_or(ctx.settings.resync, |d| d.min(ctx.settings.resync));
        if !plan.changed {
            return Ok(Some(next));
        }
        budget.status = Some(plan.status);
        match api.replace_status(&name, &PostParams::default(), &budget).await {
            Ok(_) => return Ok(Some(next)),
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(None),
            Err(kube::Error::Api(s)) if s.code == 409 => match api.get_opt(&name).await {
                Ok(Some(fresh)) => budget = fresh,
                Ok(None) => return Ok(None),
                Err(e) => return Err(ReconcileError::api(format!("read budget {ns}/{name}"), &e)),
            },
            Err(e) => return Err(ReconcileError::api(format!("write status of budget {ns}/{name}"), &e)),
        }
    }
    Err(ReconcileError::Api {
        what: format!("write status of budget {ns}/{name}"),
        code: Some(409),
        message: "conflicts on every attempt".into(),
    })
}

/// kruise's controller finder over the API: workloads read when a budget is reconciled.
struct Finder<'a> {
    client: &'a Client,
    namespace: &'a str,
}

/// The resource of a workload kind at `api_version` (the group's usual version when the
/// reference names only a group).
fn resource_of(api_version: &str, kind: &str) -> Option<ApiResource> {
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None if api_version == "apps" => ("apps", "v1"),
        None if api_version == "apps.kruise.io" => {
            ("apps.kruise.io", if kind == "StatefulSet" { "v1beta1" } else { "v1alpha1" })
        }
        None => ("", api_version),
    };
    let plural = match (group, kind) {
        ("apps", "Deployment") => "deployments",
        ("apps", "ReplicaSet") => "replicasets",
        ("apps", "StatefulSet") | ("apps.kruise.io", "StatefulSet") => "statefulsets",
        ("apps.kruise.io", "CloneSet") => "clonesets",
        _ => return None,
    };
    Some(ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: format!("{group}/{version}"),
        kind: kind.into(),
        plural: plural.into(),
    })
}

/// What a workload's JSON says about its scale.
fn workload_of_json(o: &Value) -> Workload {
    Workload {
        uid: o.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("").into(),
        // Defaulted to 1 by the apiserver; absent only in a hand-made object.
        replicas: o.pointer("/spec/replicas").and_then(Value::as_i64).and_then(|n| i32::try_from(n).ok()).unwrap_or(1),
        deleting: o.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null()),
    }
}

impl Finder<'_> {
    async fn get(&self, api_version: &str, kind: &str, name: &str) -> Result<Option<Value>, ReconcileError> {
        let Some(resource) = resource_of(api_version, kind) else { return Ok(None) };
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), self.namespace, &resource);
        match api.get_opt(name).await {
            Ok(o) => Ok(o.map(|o| serde_json::to_value(o).unwrap_or(Value::Null))),
            Err(e) => Err(ReconcileError::api(format!("get {kind} {}/{name}", self.namespace), &e)),
        }
    }

    /// `GetPodsForRef`'s workload and the uids controlling its pods.
    async fn target(
        &self,
        api_version: &str,
        kind: &str,
        name: &str,
    ) -> Result<(Option<Workload>, Vec<String>), ReconcileError> {
        let Some(o) = self.get(api_version, kind, name).await? else { return Ok((None, Vec::new())) };
        let workload = workload_of_json(&o);
        if kind != "Deployment" {
            let uid = workload.uid.clone();
            return Ok((Some(workload), vec![uid]));
        }
        let resource = resource_of("apps/v1", "ReplicaSet").ok_or_else(|| ReconcileError::Api {
            what: "replicasets".into(),
            code: None,
            message: "no resource".into(),
        })?;
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), self.namespace, &resource);
        let selector = o.pointer("/spec/selector").cloned().unwrap_or(Value::Null);
        let selector = serde_json::from_value(selector)
            .ok()
            .and_then(|s| crate::compat::selector::to_selector_string(&s).ok())
            .unwrap_or_default();
        let list = api.list(&ListParams::default().labels(&selector)).await.map_err(|e| {
            ReconcileError::api(format!("list replicasets of deployment {}/{name}", self.namespace), &e)
        })?;
        let mut uids: Vec<String> = list
            .items
            .iter()
            .filter(|rs| rs.metadata.deletion_timestamp.is_none())
            .filter(|rs| {
                rs.metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|r| r.controller == Some(true) && r.uid == workload.uid)
            })
            .filter_map(|rs| rs.metadata.uid.clone())
            .collect();
        if uids.is_empty() {
            uids.push(workload.uid.clone());
        }
        Ok((Some(workload), uids))
    }

    /// `GetScaleAndSelectorForRef` of a pod's controller: a ReplicaSet controlled by a
    /// Deployment stands for the Deployment.
    async fn of_pod(&self, owner: &OwnerReference) -> Result<Option<Workload>, ReconcileError> {
        let Some(o) = self.get(&owner.api_version, &owner.kind, &owner.name).await? else { return Ok(None) };
        if o.pointer("/metadata/uid").and_then(Value::as_str) != Some(owner.uid.as_str()) {
            return Ok(None);
        }
        if owner.kind == "ReplicaSet" {
            let deployment = o.pointer("/metadata/ownerReferences").and_then(Value::as_array).and_then(|refs| {
                refs.iter().find(|r| {
                    r.get("controller").and_then(Value::as_bool) == Some(true)
                        && r.get("kind").and_then(Value::as_str) == Some("Deployment")
                })
            });
            if let Some(name) = deployment.and_then(|d| d.get("name")).and_then(Value::as_str) {
                return Ok(self.get("apps/v1", "Deployment", name).await?.map(|d| workload_of_json(&d)));
            }
        }
        Ok(Some(workload_of_json(&o)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::snapshot::Snapshot;

    /// Which budget a pod change queues: the one the pod names (also when it is deleted), else
    /// the budget of its namespace that selects it, else none.
    #[test]
    fn pod_changes_queue_their_budget() {
        let mut budgets = Snapshot::default();
        budgets
            .insert(json!({"apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
                "metadata": {"name": "web-pub", "namespace": "ns"},
                "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1}}))
            .unwrap();
        let budgets = &budgets;
        assert_eq!(budget_of_key(budgets, "ns/web-pub").and_then(|b| b.metadata.name.clone()), Some("web-pub".into()));
        assert!(budget_of_key(budgets, "other/web-pub").is_none());
        let pod = |labels: Value, annotations: Value| -> Pod {
            serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "ns", "labels": labels,
                "annotations": annotations}, "spec": {"containers": []}}))
            .unwrap()
        };
        let named = pod(json!({}), json!({RELATED_PUB: "other-pub"}));
        assert_eq!(budget_of_change(budgets, Change::Applied(&named)), Some("ns/other-pub".into()));
        assert_eq!(budget_of_change(budgets, Change::Deleted(&named.metadata)), Some("ns/other-pub".into()));
        let selected = pod(json!({"app": "web"}), json!({}));
        assert_eq!(budget_of_change(budgets, Change::Applied(&selected)), Some("ns/web-pub".into()));
        assert_eq!(budget_of_change(budgets, Change::Deleted(&selected.metadata)), None);
        let unrelated = pod(json!({"app": "db"}), json!({}));
        assert_eq!(budget_of_change(budgets, Change::Applied(&unrelated)), None);
    }

    /// The view's budget changes queue the budget, only within the controller's namespace; the
    /// handler lets go once the queue closed.
    #[tokio::test]
    async fn view_changes_queue_budgets_in_scope() {
        let metrics = crate::metrics::Metrics::new();
        let queue = WorkQueue::new("t", metrics);
        let meta = |ns: &str| ObjectMeta { name: Some("b".into()), namespace: Some(ns.into()), ..Default::default() };
        let trigger = view_trigger(queue.clone(), Some("ns".into()));
        assert!(trigger(ViewKind::PodUnavailableBudget, &meta("ns")));
        assert!(trigger(ViewKind::PodUnavailableBudget, &meta("other")));
        assert!(trigger(ViewKind::SidecarSet, &meta("ns")));
        assert_eq!(queue.next().await.as_deref(), Some("ns/b"));
        queue.done("ns/b");
        let more = tokio::time::timeout(std::time::Duration::from_millis(50), queue.next()).await;
        assert!(more.is_err(), "only the budget in scope is queued: {more:?}");
        queue.close();
        assert!(!trigger(ViewKind::PodUnavailableBudget, &meta("ns")));
    }

    #[test]
    fn workload_resources() {
        let r = resource_of("apps.kruise.io/v1alpha1", "CloneSet").expect("CloneSet");
        assert_eq!((r.plural.as_str(), r.api_version.as_str()), ("clonesets", "apps.kruise.io/v1alpha1"));
        let r = resource_of("apps.kruise.io/v1beta1", "StatefulSet").expect("ASTS");
        assert_eq!(r.plural, "statefulsets");
        assert_eq!(resource_of("apps", "Deployment").expect("Deployment").api_version, "apps/v1");
        assert!(resource_of("v1", "Pod").is_none());
        let w = workload_of_json(&json!({"metadata": {"uid": "u"}, "spec": {"replicas": 3}}));
        assert_eq!(w, Workload { uid: "u".into(), replicas: 3, deleting: false });
    }
}
