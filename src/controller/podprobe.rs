//! The manager's PodProbeMarker and NodePodProbe controllers (issue 30 item 4; kruise
//! `pkg/controller/podprobemarker` and `pkg/controller/nodepodprobe`) as wiring, gate
//! `PodProbeMarkerGate`. Two runners on a PodProbeMarker watch, a NodePodProbe watch and the
//! shared pod and node informers:
//!
//! - markers (`namespace/name`): [`crate::core::podprobe::marker`] — the
//!   `kruise.io/node-pod-probe-cleanup` finalizer, the marker's probes merged into the
//!   NodePodProbe of each node its pods run on, `status.matchedPods`; on deletion the probes taken
//!   out of every NodePodProbe that has them, then the finalizer removed;
//! - nodes (node name): [`crate::core::podprobe::node`] — the NodePodProbe created with its node
//!   and deleted with it (the node's absence confirmed by a read first), entries of pods gone
//!   dropped, and each probe result written to its pod: labels/annotations by a merge patch of
//!   only the marked keys, the condition by a strategic merge of `pods/status` (conditions merge
//!   by type; kruise does one status update of the whole pod).
//!
//! Spec writes carry the resourceVersion read, so a concurrent writer (the other runner, the
//! daemon's status) makes them conflict and retry on a fresh view, never lose an entry.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use serde_json::{Map, Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::index::{meta_key, namespace_key, namespace_of, no_keys};
use super::informers::{Change, Informer, Informers, Invalid, scoped};
use super::{ReconcileError, Settings};
use crate::apis::nodepodprobe::{NodePodProbe, NodePodProbeSpec};
use crate::apis::podprobemarker::PodProbeMarker;
use crate::compat::selector;
use crate::core::podprobe::marker::{
    FINALIZER, group_by_node, is_virtual_kubelet, matching_pods, merge_into_node, node_of, nodes_with_marker,
    remove_from_node,
};
use crate::core::podprobe::node::{NodeAction, apply_marks, node_action, pod_marks, prune_spec};
use crate::core::pods;
use crate::metrics::{ControllerWriteLabels, Metrics};

/// The marker controller's name in metrics.
pub const MARKER_CONTROLLER: &str = "podprobemarker";
/// The NodePodProbe controller's name in metrics.
pub const NODE_CONTROLLER: &str = "nodepodprobe";
const FIELD_MANAGER: &str = "kruise-manager";

struct Context {
    client: Client,
    settings: Settings,
    informers: Informers,
    markers: Informer<PodProbeMarker>,
    npps: Informer<NodePodProbe>,
    metrics: Metrics,
}

impl Context {
    fn count(&self, controller: &str, write: &str) {
        let labels = ControllerWriteLabels { controller: controller.into(), write: write.into() };
        self.metrics.controller_writes.get_or_create(&labels).inc();
    }

    fn synced(&self) -> bool {
        self.markers.index().is_synced()
            && self.npps.index().is_synced()
            && self.informers.pods.index().is_synced()
            && self.informers.nodes.index().is_synced()
    }
}

/// Registers both controllers on the shared pod and node informers, starts their own watches
/// and runners. Start the shared informers after this.
pub fn start(
    informers: &Informers,
    client: &Client,
    settings: &Settings,
    metrics: &Metrics,
    token: &CancellationToken,
) -> Vec<JoinHandle<()>> {
    let marker_runner = super::runner_for(MARKER_CONTROLLER, settings, metrics);
    let node_runner = super::runner_for(NODE_CONTROLLER, settings, metrics);
    let markers: Informer<PodProbeMarker> =
        Informer::new("PodProbeMarker", namespace_of::<PodProbeMarker>, Invalid::Drop);
    let npps: Informer<NodePodProbe> = Informer::new("NodePodProbe", no_keys::<NodePodProbe>, Invalid::Drop);

    let mq = marker_runner.queue().clone();
    markers.on_change(move |c| mq.add(meta_key(c.meta())));

    // A pod change queues the markers selecting it and its node's NodePodProbe (a deleted pod:
    // the NodePodProbes holding its uid).
    let (mq, nq) = (marker_runner.queue().clone(), node_runner.queue().clone());
    let (marker_index, npp_index) = (markers.index().clone(), npps.index().clone());
    informers.pods.on_change(move |c: Change<'_, Pod>| {
        let meta = c.meta();
        let ns = meta.namespace.as_deref().unwrap_or("");
        let labels = meta.labels.clone().unwrap_or_default();
        for m in marker_index.get(ns) {
            if m.spec.selector.as_ref().is_some_and(|s| selector::matches(s, &labels).unwrap_or(false)) {
                mq.add(meta_key(&m.metadata));
            }
        }
        match c {
            Change::Applied(p) if !node_of(p).is_empty() => nq.add(node_of(p).to_string()),
            _ => {
                let uid = meta.uid.as_deref().unwrap_or("");
                for n in npp_index.all() {
                    if n.spec.pod_probes.iter().any(|pp| pp.uid == uid) {
                        nq.add(n.metadata.name.clone().unwrap_or_default());
                    }
                }
            }
        }
    });
    let nq = node_runner.queue().clone();
    informers.nodes.on_change(move |c: Change<'_, Node>| nq.add(c.meta().name.clone().unwrap_or_default()));
    // A NodePodProbe change queues its node; a new (empty) one queues every marker, whose pods
    // on that node it can now hold.
    let (mq, nq) = (marker_runner.queue().clone(), node_runner.queue().clone());
    let marker_index = markers.index().clone();
    npps.on_change(move |c: Change<'_, NodePodProbe>| {
        nq.add(c.meta().name.clone().unwrap_or_default());
        if let Change::Applied(n) = c
            && n.spec.pod_probes.is_empty()
        {
            for m in marker_index.all() {
                mq.add(meta_key(&m.metadata));
            }
        }
    });

    let ctx = Arc::new(Context {
        client: client.clone(),
        settings: settings.clone(),
        informers: informers.clone(),
        markers: markers.clone(),
        npps: npps.clone(),
        metrics: metrics.clone(),
    });
    tracing::info!(controller = MARKER_CONTROLLER, "starting");
    let c = Arc::clone(&ctx);
    let reconcile_marker = move |key: String| {
        let ctx = Arc::clone(&c);
        async move { reconcile_marker(&ctx, &key).await }
    };
    let reconcile_node = move |key: String| {
        let ctx = Arc::clone(&ctx);
        async move { reconcile_node(&ctx, &key).await }
    };
    vec![
        markers.start(scoped(client, settings.namespace.as_deref()), metrics.clone(), token.clone()),
        npps.start(Api::all(client.clone()), metrics.clone(), token.clone()),
        tokio::spawn(marker_runner.run(reconcile_marker, token.clone())),
        tokio::spawn(node_runner.run(reconcile_node, token.clone())),
    ]
}

/// The index key of a cluster-scoped object (`/name`).
fn cluster_key(name: &str) -> String {
    format!("/{name}")
}

fn has_finalizer(ppm: &PodProbeMarker) -> bool {
    ppm.metadata.finalizers.iter().flatten().any(|f| f == FINALIZER)
}

async fn reconcile_marker(ctx: &Context, key: &str) -> Result<Option<Duration>, ReconcileError> {
    if !ctx.synced() {
        return Ok(Some(super::act::EXPECTATION_RECHECK));
    }
    let Some(ppm) = ctx.markers.index().get_object(key) else { return Ok(None) };
    let ns = ppm.metadata.namespace.clone().unwrap_or_default();
    let name = ppm.metadata.name.clone().unwrap_or_default();
    let api: Api<PodProbeMarker> = Api::namespaced(ctx.client.clone(), &ns);
    let pp = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
    let rv = ppm.metadata.resource_version.clone().unwrap_or_default();
    let what = |w: &str| format!("{w} podprobemarker {ns}/{name}");

    if ppm.metadata.deletion_timestamp.is_some() {
        if !has_finalizer(&ppm) {
            return Ok(None);
        }
        let all = ctx.npps.index().all();
        let specs = all.iter().map(|n| (n.metadata.name.as_deref().unwrap_or(""), &n.spec));
        for node in nodes_with_marker(specs, &ns, &name) {
            if let Some(npp) = ctx.npps.index().get_object(&cluster_key(&node)) {
                let new = remove_from_node(&npp.spec, &ns, &name);
                write_npp_spec(ctx, MARKER_CONTROLLER, &npp, &new).await?;
            }
        }
        let kept: Vec<&String> = ppm.metadata.finalizers.iter().flatten().filter(|f| *f != FINALIZER).collect();
        let patch = json!({"metadata": {"resourceVersion": rv, "finalizers": kept}});
        ctx.count(MARKER_CONTROLLER, "patch");
        api.patch(&name, &pp, &Patch::Merge(&patch)).await.map_err(ReconcileError::api_err(what("patch")))?;
        tracing::info!(marker = %key, "probes removed from the NodePodProbes, finalizer removed");
        return Ok(None);
    }
    if !has_finalizer(&ppm) {
        let mut finalizers = ppm.metadata.finalizers.clone().unwrap_or_default();
        finalizers.push(FINALIZER.into());
        let patch = json!({"metadata": {"resourceVersion": rv, "finalizers": finalizers}});
        ctx.count(MARKER_CONTROLLER, "patch");
        api.patch(&name, &pp, &Patch::Merge(&patch)).await.map_err(ReconcileError::api_err(what("patch")))?;
        // The next round sees the marker with its finalizer.
        return Ok(None);
    }

    let pods = ctx.informers.pods.index().get(&namespace_key(&ns));
    let nodes = ctx.informers.nodes.index();
    let node_kind =
        |n: &str| nodes.get_object(&cluster_key(n)).map(|node| is_virtual_kubelet(node.metadata.labels.as_ref()));
    let matched = matching_pods(&ppm, pods.iter().map(|p| p.as_ref()), node_kind);
    for (node, on_node) in group_by_node(&matched) {
        // kruise: no NodePodProbe yet, nothing to do (it is created with the node).
        let Some(npp) = ctx.npps.index().get_object(&cluster_key(&node)) else { continue };
        let new = merge_into_node(&npp.spec, &ppm, &on_node);
        if new != npp.spec {
            write_npp_spec(ctx, MARKER_CONTROLLER, &npp, &new).await?;
        }
    }
    let generation = ppm.metadata.generation.unwrap_or(0);
    let count = i64::try_from(matched.len()).unwrap_or(i64::MAX);
    let status = ppm.status.clone().unwrap_or_default();
    if status.observed_generation != generation || status.matched_pods != count {
        let patch = json!({"status": {"observedGeneration": generation, "matchedPods": count}});
        ctx.count(MARKER_CONTROLLER, "patchStatus");
        api.patch_status(&name, &pp, &Patch::Merge(&patch))
            .await
            .map_err(ReconcileError::api_err(what("patch status")))?;
    }
    Ok(Some(ctx.settings.resync))
}

/// Replaces a NodePodProbe's `spec.podProbes`, pinned to the resourceVersion read.
async fn write_npp_spec(
    ctx: &Context,
    controller: &str,
    npp: &NodePodProbe,
    spec: &NodePodProbeSpec,
) -> Result<(), ReconcileError> {
    let name = npp.metadata.name.clone().unwrap_or_default();
    let api: Api<NodePodProbe> = Api::all(ctx.client.clone());
    let pp = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
    let patch = json!({"metadata": {"resourceVersion": npp.metadata.resource_version},
        "spec": {"podProbes": spec.pod_probes}});
    ctx.count(controller, "patchNodePodProbe");
    api.patch(&name, &pp, &Patch::Merge(&patch))
        .await
        .map_err(ReconcileError::api_err(format!("patch nodepodprobe {name}")))?;
    Ok(())
}

async fn reconcile_node(ctx: &Context, name: &str) -> Result<Option<Duration>, ReconcileError> {
    if name.is_empty() {
        return Ok(None);
    }
    if !ctx.synced() {
        return Ok(Some(super::act::EXPECTATION_RECHECK));
    }
    let npp = ctx.npps.index().get_object(&cluster_key(name));
    let node =
        ctx.informers.nodes.index().get_object(&cluster_key(name)).map(|n| n.metadata.deletion_timestamp.is_some());
    let api: Api<NodePodProbe> = Api::all(ctx.client.clone());
    match node_action(npp.is_some(), node) {
        NodeAction::Create => {
            ctx.count(NODE_CONTROLLER, "create");
            match api.create(&PostParams::default(), &NodePodProbe::new(name, NodePodProbeSpec::default())).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 409 => {}
                Err(e) => return Err(ReconcileError::api(format!("create nodepodprobe {name}"), &e)),
            }
            return Ok(None);
        }
        NodeAction::Delete => {
            // The cache may lag behind a node just added: ask the API before deleting.
            let nodes: Api<Node> = Api::all(ctx.client.clone());
            let live = nodes.get_opt(name).await.map_err(ReconcileError::api_err(format!("get node {name}")))?;
            if live.is_some_and(|n| n.metadata.deletion_timestamp.is_none()) {
                return Ok(Some(super::act::EXPECTATION_RECHECK));
            }
            let uid = npp.as_ref().and_then(|n| n.metadata.uid.clone());
            let dp = DeleteParams {
                preconditions: Some(Preconditions { uid, resource_version: None }),
                ..Default::default()
            };
            ctx.count(NODE_CONTROLLER, "delete");
            match api.delete(name, &dp).await {
                Ok(_) => tracing::info!(node = %name, "node gone, NodePodProbe deleted"),
                Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
                Err(e) => return Err(ReconcileError::api(format!("delete nodepodprobe {name}"), &e)),
            }
            return Ok(None);
        }
        NodeAction::Keep => {}
    }
    let Some(npp) = npp else { return Ok(None) };
    let pods_index = ctx.informers.pods.index();
    let pods: BTreeMap<(String, String), Arc<Pod>> = npp
        .spec
        .pod_probes
        .iter()
        .filter_map(|pp| {
            let p = pods_index.get_object(&format!("{}/{}", pp.namespace, pp.name))?;
            Some(((pp.namespace.clone(), pp.name.clone()), p))
        })
        .collect();
    let lookup = |ns: &str, n: &str| pods.get(&(ns.to_string(), n.to_string())).map(|p| p.as_ref());
    let pruned = prune_spec(&npp.spec, lookup);
    if pruned != npp.spec {
        write_npp_spec(ctx, NODE_CONTROLLER, &npp, &pruned).await?;
    }
    for status in npp.status.iter().flat_map(|s| &s.pod_probe_statuses) {
        let Some(pod) = lookup(&status.namespace, &status.name)
            .filter(|p| pods::is_active(p) && p.metadata.uid.as_deref() == Some(status.uid.as_str()))
        else {
            continue;
        };
        // kruise reads the marker through the client: a missing or deleting one is skipped.
        let markers: BTreeMap<String, Arc<PodProbeMarker>> = ctx
            .markers
            .index()
            .get(&status.namespace)
            .into_iter()
            .filter(|m| m.metadata.deletion_timestamp.is_none())
            .map(|m| (m.metadata.name.clone().unwrap_or_default(), m))
            .collect();
        let marks = pod_marks(status, |m| markers.get(m).map(|a| a.as_ref()));
        if let Some(after) = apply_marks(pod, &marks) {
            write_pod(ctx, pod, &after, &marks).await?;
        }
    }
    Ok(Some(ctx.settings.resync))
}

/// Writes what [`apply_marks`] changed on a pod: the marked labels and annotations (merge
/// patch, `null` removes) and the changed conditions (`pods/status`, merged by type).
async fn write_pod(
    ctx: &Context,
    before: &Pod,
    after: &Pod,
    marks: &crate::core::podprobe::node::PodMarks,
) -> Result<(), ReconcileError> {
    let ns = before.metadata.namespace.clone().unwrap_or_default();
    let name = before.metadata.name.clone().unwrap_or_default();
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &ns);
    let pp = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
    let as_json = |m: &BTreeMap<String, Option<String>>| -> Value {
        Value::Object(
            m.iter().map(|(k, v)| (k.clone(), v.clone().map_or(Value::Null, Value::String))).collect::<Map<_, _>>(),
        )
    };
    let meta_changed = before.metadata.labels != after.metadata.labels
        || before.metadata.annotations.clone().unwrap_or_default()
            != after.metadata.annotations.clone().unwrap_or_default();
    if meta_changed {
        let patch = json!({"metadata": {"labels": as_json(&marks.labels), "annotations": as_json(&marks.annotations)}});
        ctx.count(NODE_CONTROLLER, "patchPod");
        match api.patch(&name, &pp, &Patch::Merge(&patch)).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => return Ok(()),
            Err(e) => return Err(ReconcileError::api(format!("patch pod {ns}/{name}"), &e)),
        }
    }
    let conditions = |p: &Pod| p.status.as_ref().and_then(|s| s.conditions.clone()).unwrap_or_default();
    let old = conditions(before);
    let changed: Vec<_> = conditions(after).into_iter().filter(|c| !old.contains(c)).collect();
    if !changed.is_empty() {
        let patch = json!({"status": {"conditions": changed}});
        ctx.count(NODE_CONTROLLER, "patchPodStatus");
        match api.patch_status(&name, &pp, &Patch::Strategic(&patch)).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => return Ok(()),
            Err(e) => return Err(ReconcileError::api(format!("patch status of pod {ns}/{name}"), &e)),
        }
    }
    Ok(())
}
