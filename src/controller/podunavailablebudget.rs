//! The PodUnavailableBudget controller (kruise v1.9 `pkg/controller/podunavailablebudget`) as
//! wiring: a watch of the budgets and the shared pod informer feed the runner's queue (a pod is
//! queued under the budget it names in `kruise.io/related-pub`, or else the budget of its
//! namespace that covers it); a reconcile resolves the budget's workload through the API
//! (kruise's controller finder: the targetRef's CloneSet, Advanced StatefulSet, Deployment — with
//! its ReplicaSets —, StatefulSet or ReplicaSet, or the controllers of the pods a selector
//! matches), names the budget on covered pods that do not yet name it, and writes the status
//! `core::budget::status::plan_status` plans, only when it changed, at the budget's
//! resourceVersion (a conflict reads it again and plans again, as kruise's retry does). It looks
//! again when a disrupted or unavailable record expires, or at the resync.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::index::{meta_key, namespace_key};
use super::informers::{Change, Informer, Informers, scoped};
use super::runner::Runner;
use super::{ReconcileError, Settings};
use crate::apis::podunavailablebudget::PodUnavailableBudget;
use crate::core::budget::status::plan_status;
use crate::core::budget::targets::{Targets, Workload, for_selector, for_target, pods_to_annotate};
use crate::core::budget::{RELATED_PUB, pub_for_pod};
use crate::core::features::Gate;
use crate::metrics::Metrics;

/// The controller's name in metrics.
pub const CONTROLLER: &str = "podunavailablebudget";

/// Status writes of one reconcile before it gives up to the runner's backoff (kruise's
/// `ConflictRetry.Steps`).
const WRITE_ATTEMPTS: usize = 4;

struct Context {
    settings: Settings,
    budgets: Informer<PodUnavailableBudget>,
    informers: Informers,
    client: Client,
    runner: Arc<Runner>,
}

/// Registers the controller on `informers` and starts its budget watch and runner (both stop
/// when `token` is cancelled); nothing when both PUB gates are off. Start the informers after.
pub fn start(
    informers: &Informers,
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
    let budgets = super::workload_informer::<PodUnavailableBudget>("PodUnavailableBudget", &runner);
    let (queue, index) = (runner.queue().clone(), budgets.clone());
    informers.pods.on_change(move |c| {
        if let Some(key) = budget_of_change(&index, c) {
            queue.add(key);
        }
    });
    let ctx = Arc::new(Context {
        settings: settings.clone(),
        budgets: budgets.clone(),
        informers: informers.clone(),
        client: client.clone(),
        runner: Arc::clone(&runner),
    });
    tracing::info!(controller = CONTROLLER, namespace = ns.unwrap_or("(all)"), "starting");
    let watch = budgets.start(scoped(client, ns), metrics.clone(), token.clone());
    let reconcile = move |key: String| {
        let ctx = Arc::clone(&ctx);
        async move { reconcile(&ctx, &key).await }
    };
    vec![watch, tokio::spawn(runner.run(reconcile, token.clone()))]
}

/// The key of the budget a pod change concerns: the one it names, or the one covering it.
fn budget_of_change(budgets: &Informer<PodUnavailableBudget>, change: Change<'_, Pod>) -> Option<String> {
    let meta = change.meta();
    let ns = meta.namespace.clone().unwrap_or_default();
    let named = meta.annotations.as_ref().and_then(|a| a.get(RELATED_PUB)).filter(|n| !n.is_empty());
    if let Some(name) = named {
        return Some(format!("{ns}/{name}"));
    }
    let Change::Applied(pod) = change else { return None };
    let listed = budgets.index().get(&ns);
    if listed.is_empty() {
        return None;
    }
    let refs: Vec<&PodUnavailableBudget> = listed.iter().map(AsRef::as_ref).collect();
    pub_for_pod(pod, &refs).map(|b| meta_key(&b.metadata))
}

async fn reconcile(ctx: &Context, key: &str) -> Result<Option<Duration>, ReconcileError> {
    if !(ctx.budgets.index().is_synced() && ctx.informers.pods.index().is_synced()) {
        return Ok(Some(Duration::from_secs(1)));
    }
    let Some(budget) = ctx.budgets.index().get_object(key) else {
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
    annotate(ctx, &ns, &name, &targets).await?;
    write_status(ctx, &budget, &targets).await
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
            Err(e) => return Err(api_error(format!("annotate pod {ns}/{pod_name}"), &e)),
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
                return Ok(Some(ctx.settings.resync));
            }
        };
        for pod in &plan.not_deleted {
            tracing::warn!(budget = %format!("{ns}/{name}"), pod = %pod, "pod was expected by the budget to be deleted but it wasn't");
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
                Err(e) => return Err(api_error(format!("read budget {ns}/{name}"), &e)),
            },
            Err(e) => return Err(api_error(format!("write status of budget {ns}/{name}"), &e)),
        }
    }
    Err(ReconcileError::Api {
        what: format!("write status of budget {ns}/{name}"),
        code: Some(409),
        message: "conflicts on every attempt".into(),
    })
}

fn api_error(what: String, e: &kube::Error) -> ReconcileError {
    let code = match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    };
    ReconcileError::Api { what, code, message: e.to_string() }
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
            Err(e) => Err(api_error(format!("get {kind} {}/{name}", self.namespace), &e)),
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
        let list = api
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(|e| api_error(format!("list replicasets of deployment {}/{name}", self.namespace), &e))?;
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
    use kube::runtime::watcher::Event;

    /// Which budget a pod change queues: the one the pod names (also when it is deleted), else
    /// the budget of its namespace that selects it, else none.
    #[test]
    fn pod_changes_queue_their_budget() {
        let budgets = Informer::<PodUnavailableBudget>::new(
            "PodUnavailableBudget",
            super::super::index::namespace_of,
            super::super::informers::Invalid::Drop,
        );
        let budget: PodUnavailableBudget = serde_json::from_value(json!({
            "metadata": {"name": "web-pub", "namespace": "ns"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1}}))
        .unwrap();
        budgets.index().apply(&Event::InitDone);
        budgets.index().apply(&Event::Apply(budget));
        let pod = |labels: Value, annotations: Value| -> Pod {
            serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "ns", "labels": labels,
                "annotations": annotations}, "spec": {"containers": []}}))
            .unwrap()
        };
        let named = pod(json!({}), json!({RELATED_PUB: "other-pub"}));
        assert_eq!(budget_of_change(&budgets, Change::Applied(&named)), Some("ns/other-pub".into()));
        assert_eq!(budget_of_change(&budgets, Change::Deleted(&named.metadata)), Some("ns/other-pub".into()));
        let selected = pod(json!({"app": "web"}), json!({}));
        assert_eq!(budget_of_change(&budgets, Change::Applied(&selected)), Some("ns/web-pub".into()));
        assert_eq!(budget_of_change(&budgets, Change::Deleted(&selected.metadata)), None);
        let unrelated = pod(json!({"app": "db"}), json!({}));
        assert_eq!(budget_of_change(&budgets, Change::Applied(&unrelated)), None);
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
