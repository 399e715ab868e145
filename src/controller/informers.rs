//! The leader's shared informers (issue 26 item 6): one watch per kind — pods, PVCs,
//! ControllerRevisions and nodes — for every controller and leader task, each feeding one
//! [`Index`] and fanning every change out to the handlers the controllers registered, as
//! linkerd2's `IndexList` fans one watch out to several indexes. Adding a controller adds a
//! handler, never a watch: memory and API load stay one cache per kind (kruise's manager shares one
//! informer per kind through controller-runtime; its users still hit OOMs from copies of pod lists).
//!
//! Each object is decoded on its own ([`DeserializeGuard`], as stackable's operators do): one that
//! does not decode is skipped, logged and counted (`kruise_informer_decode_failures_total{kind}`),
//! and the watch goes on. What happens to its last good version depends on the kind:
//! [`Invalid::KeepLast`] for objects owned by workloads (a pod that vanished from the index would
//! be created again; a stale one only earns 409s), [`Invalid::Drop`] for workloads themselves (a
//! CloneSet that no longer decodes is not reconciled on its old spec).
//!
//! A watch restart for a known, harmless reason (410 Gone: "too old resource version", after which
//! the watcher lists again) is logged at debug, other watch errors at warn
//! ([`crate::cluster::watch_errors`]).

use std::fmt::Debug;
use std::sync::{Arc, RwLock};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{ControllerRevision, Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;
use kube::core::DeserializeGuard;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::index::{Index, KeysOf, claim_keys, meta_key, namespace_of, no_keys, pod_keys};
use crate::apis::CloneSet;
use crate::apis::statefulset::v1beta1::StatefulSet as AdvancedStatefulSet;
use crate::core::features::{FeatureGates, Gate};
use crate::metrics::{KindLabels, Metrics};

/// A change an informer reports to its handlers.
#[derive(Debug)]
pub enum Change<'a, K> {
    /// The object was created or changed (or listed).
    Applied(&'a K),
    /// The object was deleted, or (with [`Invalid::Drop`]) stopped decoding.
    Deleted(&'a ObjectMeta),
}

impl<K> Clone for Change<'_, K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for Change<'_, K> {}

impl<K: Resource> Change<'_, K> {
    /// The object's metadata.
    pub fn meta(&self) -> &ObjectMeta {
        match self {
            Change::Applied(o) => o.meta(),
            Change::Deleted(m) => m,
        }
    }
}

/// What a handler is: called in the watch task for every change; it must only note work
/// (enqueue a key), never wait.
pub type Handler<K> = Arc<dyn Fn(Change<'_, K>) + Send + Sync>;

/// What becomes of an object's last good version when its new version does not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invalid {
    /// Keep it (objects owned by workloads).
    KeepLast,
    /// Drop it and report it deleted (workloads: nothing is planned on an old spec).
    Drop,
}

/// One kind's watch, index and handlers; clones share them.
pub struct Informer<K> {
    kind: &'static str,
    index: Index<K>,
    handlers: Arc<RwLock<Vec<Handler<K>>>>,
    invalid: Invalid,
}

impl<K> Clone for Informer<K> {
    fn clone(&self) -> Self {
        Informer {
            kind: self.kind,
            index: self.index.clone(),
            handlers: Arc::clone(&self.handlers),
            invalid: self.invalid,
        }
    }
}

impl<K> Informer<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    /// An informer of `kind` filing objects under `keys`.
    pub fn new(kind: &'static str, keys: KeysOf<K>, invalid: Invalid) -> Self {
        Informer { kind, index: Index::new(keys), handlers: Arc::default(), invalid }
    }

    /// The index the watch keeps.
    pub fn index(&self) -> &Index<K> {
        &self.index
    }

    /// The kind's name (in metrics and logs).
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// Whether any handler is registered (a workload kind is watched only when some controller
    /// reads it).
    pub fn has_handlers(&self) -> bool {
        !self.handlers.read().unwrap_or_else(|e| e.into_inner()).is_empty()
    }

    /// Registers a handler (before [`Informer::start`]; later ones miss the first listing).
    pub fn on_change(&self, handler: impl Fn(Change<'_, K>) + Send + Sync + 'static) {
        self.handlers.write().unwrap_or_else(|e| e.into_inner()).push(Arc::new(handler));
    }

    fn notify(&self, change: Change<'_, K>) {
        let handlers = self.handlers.read().unwrap_or_else(|e| e.into_inner()).clone();
        for h in &handlers {
            h(change);
        }
    }

    /// Applies one watch event (objects decoded or not) to the index and the handlers.
    pub fn handle(&self, event: Event<DeserializeGuard<K>>, metrics: &Metrics) {
        let labels = KindLabels { kind: self.kind.into() };
        let invalid = |meta: &ObjectMeta, error: &str| {
            metrics.informer_decode_failures.get_or_create(&labels).inc();
            tracing::warn!(kind = self.kind, object = %meta_key(meta), "skipped: it does not decode: {error}");
        };
        match event {
            Event::Init => self.index.apply_shared(&Event::Init),
            Event::InitDone => {
                self.index.apply_shared(&Event::InitDone);
                let n = i64::try_from(self.index.len()).unwrap_or(i64::MAX);
                metrics.informer_objects.get_or_create(&labels).set(n);
            }
            Event::InitApply(DeserializeGuard(Ok(o))) => {
                let o = Arc::new(o);
                self.index.apply_shared(&Event::InitApply(Arc::clone(&o)));
                self.notify(Change::Applied(o.as_ref()));
            }
            Event::InitApply(DeserializeGuard(Err(e))) => {
                invalid(&e.metadata, &e.error);
                if self.invalid == Invalid::KeepLast {
                    self.index.keep_in_listing(&meta_key(&e.metadata));
                }
            }
            Event::Apply(DeserializeGuard(Ok(o))) => {
                let o = Arc::new(o);
                self.index.apply_shared(&Event::Apply(Arc::clone(&o)));
                self.notify(Change::Applied(o.as_ref()));
            }
            Event::Apply(DeserializeGuard(Err(e))) => {
                invalid(&e.metadata, &e.error);
                if self.invalid == Invalid::Drop {
                    self.index.remove(&meta_key(&e.metadata));
                    self.notify(Change::Deleted(&e.metadata));
                }
            }
            Event::Delete(guard) => {
                let meta = guard.meta().clone();
                self.index.remove(&meta_key(&meta));
                self.notify(Change::Deleted(&meta));
            }
        }
        if self.index.is_synced() {
            let n = i64::try_from(self.index.len()).unwrap_or(i64::MAX);
            metrics.informer_objects.get_or_create(&labels).set(n);
        }
    }

    /// Runs the watch of `api` until `token` is cancelled.
    pub fn start(&self, api: Api<DeserializeGuard<K>>, metrics: Metrics, token: CancellationToken) -> JoinHandle<()> {
        let me = self.clone();
        tokio::spawn(async move {
            let labels = KindLabels { kind: me.kind.into() };
            metrics.informer_watches.get_or_create(&labels).inc();
            let stream = crate::cluster::watch_backoff::with_backoff(watcher::watcher(api, watcher::Config::default()))
                .modify(|o| o.meta_mut().managed_fields = None)
                .take_until(token.cancelled_owned());
            tokio::pin!(stream);
            while let Some(event) = stream.next().await {
                match event {
                    Ok(event) => me.handle(event, &metrics),
                    Err(e) => crate::cluster::watch_errors::log(me.kind, &e),
                }
            }
            metrics.informer_watches.get_or_create(&labels).dec();
        })
    }
}

/// An `Api` of `K` in `namespace`, or of every namespace.
pub fn scoped<K>(client: &Client, namespace: Option<&str>) -> Api<DeserializeGuard<K>>
where
    K: Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>,
    DeserializeGuard<K>: Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// The shared informers of the kinds every workload controller reads.
#[derive(Clone)]
pub struct Informers {
    /// Pods, by owner uid, namespace and node ([`pod_keys`]).
    pub pods: Informer<Pod>,
    /// PVCs, by owner uid and namespace ([`claim_keys`]).
    pub pvcs: Informer<PersistentVolumeClaim>,
    /// ControllerRevisions, by namespace.
    pub revisions: Informer<ControllerRevision>,
    /// Nodes.
    pub nodes: Informer<Node>,
    /// StorageClasses, watched only when claims are resized (gate
    /// `StatefulSetAutoResizePVCGate`, as kruise adds its informer only then: a deployment whose
    /// role cannot read them still runs every other controller).
    pub storage_classes: Option<Informer<StorageClass>>,
    /// CloneSets, by namespace ([`Invalid::Drop`]): the CloneSet controller's workloads and the
    /// UnitedDeployment controller's subsets, one watch for both. Watched only when a controller
    /// registered a handler.
    pub clonesets: Informer<CloneSet>,
    /// Advanced StatefulSets, by namespace ([`Invalid::Drop`]): the Advanced StatefulSet
    /// controller's workloads and the UnitedDeployment controller's subsets. Watched only when a
    /// controller registered a handler.
    pub advanced_statefulsets: Informer<AdvancedStatefulSet>,
    /// apps/v1 StatefulSets and Deployments, by namespace ([`Invalid::Drop`]): UnitedDeployment
    /// subsets. Watched only when a controller registered a handler.
    pub statefulsets: Informer<StatefulSet>,
    /// See [`Informers::statefulsets`].
    pub deployments: Informer<Deployment>,
}

impl Default for Informers {
    fn default() -> Self {
        Informers {
            pods: Informer::new("Pod", pod_keys, Invalid::KeepLast),
            pvcs: Informer::new("PersistentVolumeClaim", claim_keys, Invalid::KeepLast),
            revisions: Informer::new("ControllerRevision", namespace_of::<ControllerRevision>, Invalid::KeepLast),
            nodes: Informer::new("Node", no_keys::<Node>, Invalid::KeepLast),
            storage_classes: None,
            clonesets: Informer::new("CloneSet", namespace_of::<CloneSet>, Invalid::Drop),
            // "StatefulSet" is the Advanced StatefulSet's kind label (as before it was shared); the
            // apps/v1 kinds carry their group.
            advanced_statefulsets: Informer::new("StatefulSet", namespace_of::<AdvancedStatefulSet>, Invalid::Drop),
            statefulsets: Informer::new("StatefulSet.apps", namespace_of::<StatefulSet>, Invalid::Drop),
            deployments: Informer::new("Deployment.apps", namespace_of::<Deployment>, Invalid::Drop),
        }
    }
}

impl Informers {
    /// The informers the controllers of `gates` read: the four kinds, and StorageClasses when
    /// `StatefulSetAutoResizePVCGate` is on.
    pub fn for_gates(gates: &FeatureGates) -> Informers {
        let storage_classes = gates
            .enabled(Gate::StatefulSetAutoResizePVCGate)
            .then(|| Informer::new("StorageClass", no_keys::<StorageClass>, Invalid::KeepLast));
        Informers { storage_classes, ..Informers::default() }
    }

    /// Starts the watches (pods, PVCs and revisions in `namespace`, or everywhere; nodes and
    /// StorageClasses always cluster-wide; the workload kinds in `namespace` when a controller
    /// reads them). Register handlers first.
    pub fn start(
        &self,
        client: &Client,
        namespace: Option<&str>,
        metrics: &Metrics,
        token: &CancellationToken,
    ) -> Vec<JoinHandle<()>> {
        let mut tasks = vec![
            self.pods.start(scoped(client, namespace), metrics.clone(), token.clone()),
            self.pvcs.start(scoped(client, namespace), metrics.clone(), token.clone()),
            self.revisions.start(scoped(client, namespace), metrics.clone(), token.clone()),
            self.nodes.start(Api::all(client.clone()), metrics.clone(), token.clone()),
        ];
        if let Some(classes) = &self.storage_classes {
            tasks.push(classes.start(Api::all(client.clone()), metrics.clone(), token.clone()));
        }
        if self.clonesets.has_handlers() {
            tasks.push(self.clonesets.start(scoped(client, namespace), metrics.clone(), token.clone()));
        }
        if self.advanced_statefulsets.has_handlers() {
            tasks.push(self.advanced_statefulsets.start(scoped(client, namespace), metrics.clone(), token.clone()));
        }
        if self.statefulsets.has_handlers() {
            tasks.push(self.statefulsets.start(scoped(client, namespace), metrics.clone(), token.clone()));
        }
        if self.deployments.has_handlers() {
            tasks.push(self.deployments.start(scoped(client, namespace), metrics.clone(), token.clone()));
        }
        tasks
    }

    /// Whether every kind has been listed once.
    pub fn synced(&self) -> bool {
        self.pods.index().is_synced()
            && self.pvcs.index().is_synced()
            && self.revisions.index().is_synced()
            && self.nodes.index().is_synced()
            && self.storage_classes.as_ref().is_none_or(|c| c.index().is_synced())
            && (!self.clonesets.has_handlers() || self.clonesets.index().is_synced())
            && (!self.advanced_statefulsets.has_handlers() || self.advanced_statefulsets.index().is_synced())
            && (!self.statefulsets.has_handlers() || self.statefulsets.index().is_synced())
            && (!self.deployments.has_handlers() || self.deployments.index().is_synced())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::error_boundary::InvalidObject;
    use serde_json::json;
    use std::sync::Mutex;

    fn pod(name: &str, owner: &str, image: &str) -> DeserializeGuard<Pod> {
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
            "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cs",
            "uid": owner, "controller": true}]},
            "spec": {"containers": [{"name": "c", "image": image}]}}))
        .unwrap()
    }

    fn broken(name: &str) -> DeserializeGuard<Pod> {
        let g: DeserializeGuard<Pod> = serde_json::from_value(
            json!({"metadata": {"name": name, "namespace": "ns"}, "spec": {"containers": "not-a-list"}}),
        )
        .unwrap();
        assert!(g.0.is_err());
        g
    }

    fn image(p: &Pod) -> String {
        p.spec.as_ref().unwrap().containers[0].image.clone().unwrap()
    }

    #[test]
    fn one_watch_feeds_the_index_and_every_handler_and_skips_what_does_not_decode() {
        let metrics = Metrics::new();
        let informer = Informer::<Pod>::new("Pod", pod_keys, Invalid::KeepLast);
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        for tag in ["a", "b"] {
            let seen = Arc::clone(&seen);
            informer.on_change(move |c| {
                let what = match c {
                    Change::Applied(p) => format!("{tag}:apply:{}", p.metadata.name.as_deref().unwrap_or("")),
                    Change::Deleted(m) => format!("{tag}:delete:{}", m.name.as_deref().unwrap_or("")),
                };
                seen.lock().unwrap().push(what);
            });
        }
        informer.handle(Event::Init, &metrics);
        informer.handle(Event::InitApply(pod("p1", "u1", "v1")), &metrics);
        informer.handle(Event::InitApply(broken("bad")), &metrics);
        informer.handle(Event::InitDone, &metrics);
        assert!(informer.index().is_synced());
        assert_eq!(informer.index().get("u1").len(), 1);
        assert_eq!(informer.index().len(), 1, "the undecodable pod is skipped");
        // A pod that stops decoding keeps its last good version (KeepLast).
        let mut bad_p1 = broken("p1");
        if let Err(InvalidObject { metadata, .. }) = &mut bad_p1.0 {
            metadata.namespace = Some("ns".into());
        }
        informer.handle(Event::Apply(bad_p1.clone()), &metrics);
        assert_eq!(image(&informer.index().get_object("ns/p1").unwrap()), "v1");
        // ... also through a relist.
        informer.handle(Event::Init, &metrics);
        informer.handle(Event::InitApply(bad_p1), &metrics);
        informer.handle(Event::InitDone, &metrics);
        assert_eq!(image(&informer.index().get_object("ns/p1").unwrap()), "v1");
        informer.handle(Event::Apply(pod("p1", "u1", "v2")), &metrics);
        assert_eq!(image(&informer.index().get_object("ns/p1").unwrap()), "v2");
        informer.handle(Event::Delete(pod("p1", "u1", "v2")), &metrics);
        assert!(informer.index().get("u1").is_empty());
        assert_eq!(
            *seen.lock().unwrap(),
            ["a:apply:p1", "b:apply:p1", "a:apply:p1", "b:apply:p1", "a:delete:p1", "b:delete:p1"]
        );
        let text = metrics.encode();
        assert!(text.contains("kruise_informer_decode_failures_total{kind=\"Pod\"} 3"), "{text}");
    }

    #[test]
    fn a_workload_that_stops_decoding_is_dropped_and_reported_deleted() {
        let metrics = Metrics::new();
        let informer = Informer::<Pod>::new("Pod", namespace_of::<Pod>, Invalid::Drop);
        let deleted: Arc<Mutex<Vec<String>>> = Arc::default();
        let d = Arc::clone(&deleted);
        informer.on_change(move |c| {
            if let Change::Deleted(m) = c {
                d.lock().unwrap().push(meta_key(m));
            }
        });
        informer.handle(Event::Init, &metrics);
        informer.handle(Event::InitApply(pod("p1", "u1", "v1")), &metrics);
        informer.handle(Event::InitDone, &metrics);
        let mut bad = broken("p1");
        if let Err(InvalidObject { metadata, .. }) = &mut bad.0 {
            metadata.namespace = Some("ns".into());
        }
        informer.handle(Event::Apply(bad), &metrics);
        assert!(informer.index().get_object("ns/p1").is_none());
        assert_eq!(*deleted.lock().unwrap(), ["ns/p1"]);
    }
}
