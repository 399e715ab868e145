//! The live cluster view (issue 10 item 2): one watch per kind (SidecarSets, Namespaces and
//! PodUnavailableBudgets and WorkloadSpreads of the whole cluster; ControllerRevisions and the `kruise-configuration` ConfigMap of the manager
//! namespace) keeps a [`Snapshot`] current, so a pod CREATE reads memory and never waits on the
//! network. Watches list and watch untyped objects and decode each one on its own: an object that
//! does not decode is skipped, logged and counted (`kruise_cluster_view_decode_failures`), and the
//! watch goes on. A relist replaces a kind's objects at once, so readers never see it half-listed.
//! Pods are not watched: the one handler that reads pods (`podsToDelete` of a CloneSet) fetches
//! them on demand through [`PodSource`]. SidecarSets are watched at their storage version,
//! v1beta1, and converted to the v1alpha1 model in-process (issue 15): readiness waits for this
//! view, so it must not depend on our own `/convert`. Objects written before the storage version
//! changed (every SidecarSet of kruise ≤ 1.8) are still stored as v1alpha1, and a v1beta1 list
//! of them needs `/convert`: when a list fails, the next one asks for the other version, so a
//! cluster whose SidecarSets are all stored as either version lists without us. (A cluster with
//! both still needs a ready replica to serve `/convert`.)

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::watcher::{self, Event};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::snapshot::{Snapshot, ViewKind};
use super::{ClusterView, ListFuture, ListSource, PodSource, PodsFuture, ViewHandler};
use crate::apis::podunavailablebudget::{self, PodUnavailableBudget};
use crate::apis::{SidecarSet, sidecarset};
use crate::metrics::{KindLabels, Metrics};

/// Name of kruise's configuration ConfigMap in the manager namespace.
pub const CONFIGURATION_NAME: &str = "kruise-configuration";

/// How long fetching the pods of one review may take.
pub const POD_FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// The kinds the live view watches.
pub const WATCHED: [ViewKind; 6] = [
    ViewKind::Namespace,
    ViewKind::SidecarSet,
    ViewKind::ControllerRevision,
    ViewKind::ConfigMap,
    ViewKind::PodUnavailableBudget,
    ViewKind::WorkloadSpread,
];

/// The cluster as the watches last saw it.
pub struct LiveView {
    client: kube::Client,
    namespace: String,
    store: RwLock<Snapshot>,
    synced: Mutex<BTreeSet<ViewKind>>,
    metrics: Metrics,
    handlers: RwLock<Vec<ViewHandler>>,
}

impl std::fmt::Debug for LiveView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveView").field("namespace", &self.namespace).finish_non_exhaustive()
    }
}

impl LiveView {
    /// A view (empty until [`LiveView::start`]) of the cluster behind `client`, with `namespace` the
    /// manager namespace.
    pub fn new(client: kube::Client, namespace: &str, metrics: Metrics) -> Arc<Self> {
        Arc::new(Self {
            client,
            namespace: namespace.to_string(),
            store: RwLock::new(Snapshot::default()),
            synced: Mutex::new(BTreeSet::new()),
            metrics,
            handlers: RwLock::new(Vec::new()),
        })
    }

    /// Starts one watch per kind; they stop when `token` is cancelled.
    pub fn start(self: &Arc<Self>, token: &CancellationToken) -> Vec<tokio::task::JoinHandle<()>> {
        WATCHED.into_iter().map(|kind| tokio::spawn(Arc::clone(self).watch_versions(kind, token.clone()))).collect()
    }

    /// `Ok` once every kind has been listed; otherwise which kinds have not.
    pub fn synced(&self) -> Result<(), String> {
        let synced = self.synced.lock().map(|s| s.clone()).unwrap_or_default();
        let missing: Vec<&str> = WATCHED.iter().filter(|k| !synced.contains(k)).map(|k| k.name()).collect();
        if missing.is_empty() { Ok(()) } else { Err(format!("waiting for the first list of {}", missing.join(", "))) }
    }

    /// Objects of `kind` held now.
    pub fn count(&self, kind: ViewKind) -> usize {
        self.read().count(kind)
    }

    fn read(&self) -> RwLockReadGuard<'_, Snapshot> {
        // A writer that panicked left a consistent snapshot (every write is one call).
        self.store.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Tells every handler that `metas` (of `kind`) changed; drops those that no longer listen.
    fn notify(&self, kind: ViewKind, metas: &[ObjectMeta]) {
        let mut handlers = self.handlers.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        handlers.retain(|h| metas.iter().all(|meta| h(kind, meta)));
    }

    fn write(&self, f: impl FnOnce(&mut Snapshot)) {
        let mut store = self.store.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut store);
    }

    /// Watches `kind`, at the next of its [`api_versions`] each time a list fails, until `token`
    /// is cancelled.
    async fn watch_versions(self: Arc<Self>, kind: ViewKind, token: CancellationToken) {
        let versions = api_versions(kind);
        // Lists failed since the last one that succeeded.
        let mut streak = 0usize;
        for attempt in 0usize.. {
            let api_version = versions[attempt % versions.len()];
            let (api, config) = self.watch_target(kind, api_version);
            let failed = Arc::clone(&self).watch(kind, api, config, api_version, versions.len() > 1, &token).await;
            let Some(ListFailed { error, listed }) = failed.filter(|_| !token.is_cancelled()) else { return };
            streak = if listed { 1 } else { streak + 1 };
            let next = versions[(attempt + 1) % versions.len()];
            // An optional version that is not served (PodUnavailableBudget v1beta1 without the
            // opt-in CRD) is the usual case, not a warning.
            let unserved = api_version == PUB_V1BETA1 && matches!(&error, kube::Error::Api(s) if s.code == 404);
            if unserved && streak == 1 {
                tracing::info!(kind = kind.name(), api_version, next, "version not served; listing the other");
            } else if loud(streak, versions.len()) && !unserved {
                tracing::warn!(
                    kind = kind.name(),
                    api_version,
                    next,
                    failures = streak,
                    %error,
                    "list failed; listing the other version"
                );
            } else {
                tracing::debug!(kind = kind.name(), api_version, next, failures = streak, %error, "list failed again");
            }
            tokio::select! {
                () = token.cancelled() => return,
                () = tokio::time::sleep(VERSION_RETRY) => {}
            }
        }
    }

    fn watch_target(&self, kind: ViewKind, api_version: &str) -> (Api<DynamicObject>, watcher::Config) {
        let client = self.client.clone();
        let ns = self.namespace.as_str();
        match kind {
            ViewKind::Namespace => {
                (Api::all_with(client, &ApiResource::erase::<Namespace>(&())), watcher::Config::default())
            }
            // At the storage version (v1beta1) first, converted in-process by the snapshot: a list
            // at v1alpha1 would go through our own /convert, which the apiserver reaches only on
            // ready endpoints, and readiness waits for this list (a deadlock on a fresh start).
            ViewKind::SidecarSet if api_version == SIDECARSET_V1ALPHA1 => {
                (Api::all_with(client, &ApiResource::erase::<SidecarSet>(&())), watcher::Config::default())
            }
            ViewKind::SidecarSet => (
                Api::all_with(client, &ApiResource::erase::<sidecarset::v1beta1::SidecarSet>(&())),
                watcher::Config::default(),
            ),
            ViewKind::ControllerRevision => (
                Api::namespaced_with(client, ns, &ApiResource::erase::<ControllerRevision>(&())),
                watcher::Config::default(),
            ),
            ViewKind::PodUnavailableBudget if api_version == PUB_V1BETA1 => (
                Api::all_with(client, &ApiResource::erase::<podunavailablebudget::v1beta1::PodUnavailableBudget>(&())),
                watcher::Config::default(),
            ),
            ViewKind::PodUnavailableBudget => {
                (Api::all_with(client, &ApiResource::erase::<PodUnavailableBudget>(&())), watcher::Config::default())
            }
            ViewKind::WorkloadSpread => (
                Api::all_with(client, &ApiResource::erase::<crate::apis::workloadspread::WorkloadSpread>(&())),
                watcher::Config::default(),
            ),
            ViewKind::ConfigMap | ViewKind::Pod => (
                Api::namespaced_with(client, ns, &ApiResource::erase::<ConfigMap>(&())),
                watcher::Config::default().fields(&format!("metadata.name={CONFIGURATION_NAME}")),
            ),
        }
    }

    /// Follows one watch of `kind` at `api_version`; the list error when it ended because a list
    /// failed and `switch_on_list_failure` asks to try another version.
    async fn watch(
        self: Arc<Self>,
        kind: ViewKind,
        api: Api<DynamicObject>,
        config: watcher::Config,
        api_version: &str,
        switch_on_list_failure: bool,
        token: &CancellationToken,
    ) -> Option<ListFailed> {
        let labels = KindLabels { kind: kind.name().to_string() };
        let mut listed = false;
        let stream = crate::cluster::watch_backoff::with_backoff(watcher::watcher(api, config))
            .take_until(token.clone().cancelled_owned());
        tokio::pin!(stream);
        let mut listing: Vec<Value> = Vec::new();
        let mut listed_meta: Vec<ObjectMeta> = Vec::new();
        while let Some(event) = stream.next().await {
            match event {
                Err(watcher::Error::InitialListFailed(error)) if switch_on_list_failure => {
                    return Some(ListFailed { error, listed });
                }
                Err(e) => super::watch_errors::log(kind.name(), &e),
                Ok(Event::Init) => {
                    listing.clear();
                    listed_meta.clear();
                }
                Ok(Event::InitApply(o)) => {
                    listed_meta.push(o.metadata.clone());
                    listing.push(json_of(kind, api_version, o));
                }
                Ok(Event::InitDone) => {
                    listed = true;
                    let objects = std::mem::take(&mut listing);
                    let mut failed = Vec::new();
                    self.write(|s| failed = s.replace_kind(kind, objects));
                    for (name, e) in &failed {
                        self.decode_failed(kind, &labels, name, e);
                    }
                    let count = self.count(kind);
                    self.metrics.view_objects.get_or_create(&labels).set(count as i64);
                    let first = self.synced.lock().map(|mut s| s.insert(kind)).unwrap_or(false);
                    if first {
                        tracing::info!(kind = kind.name(), objects = count, "cluster view listed");
                    }
                    self.notify(kind, &std::mem::take(&mut listed_meta));
                }
                Ok(Event::Apply(o)) => {
                    let (namespace, name) =
                        (o.metadata.namespace.clone().unwrap_or_default(), o.metadata.name.clone().unwrap_or_default());
                    let meta = o.metadata.clone();
                    let mut result = Ok(true);
                    self.write(|s| {
                        result = s.insert(json_of(kind, api_version, o));
                        if result.is_err() {
                            // What we can no longer read must not be acted on in its old form.
                            s.remove(kind, &namespace, &name);
                        }
                    });
                    if let Err(e) = result {
                        self.decode_failed(kind, &labels, &format!("{namespace}/{name}"), &e);
                    }
                    self.metrics.view_objects.get_or_create(&labels).set(self.count(kind) as i64);
                    self.notify(kind, std::slice::from_ref(&meta));
                }
                Ok(Event::Delete(o)) => {
                    let (namespace, name) =
                        (o.metadata.namespace.clone().unwrap_or_default(), o.metadata.name.clone().unwrap_or_default());
                    self.write(|s| s.remove(kind, &namespace, &name));
                    self.metrics.view_objects.get_or_create(&labels).set(self.count(kind) as i64);
                    self.notify(kind, std::slice::from_ref(&o.metadata));
                }
            }
        }
        None
    }

    fn decode_failed(&self, kind: ViewKind, labels: &KindLabels, name: &str, e: &crate::compat::decode::Error) {
        self.metrics.view_decode_failures.get_or_create(labels).inc();
        tracing::warn!(kind = kind.name(), object = name, error = %e, "cannot decode; the object is skipped");
    }
}

/// The SidecarSet versions the view lists, in the order it tries them.
const SIDECARSET_V1BETA1: &str = "apps.kruise.io/v1beta1";
const SIDECARSET_V1ALPHA1: &str = "apps.kruise.io/v1alpha1";
/// PodUnavailableBudget's optional version.
const PUB_V1BETA1: &str = crate::core::conversion::POLICY_V1BETA1;

/// How long after a failed list the other version is listed.
const VERSION_RETRY: Duration = Duration::from_secs(1);

/// After the first round of failed lists (one per version), a failure is logged as a warning
/// once in this many: a CRD that is not installed yet fails every [`VERSION_RETRY`], and a
/// warning a second drowns the log (a minute apart at the default retry).
const WARN_EVERY: usize = 60;

/// A list that failed, and whether this watch had listed before it failed (a new streak).
struct ListFailed {
    error: kube::Error,
    listed: bool,
}

/// Whether the `streak`-th failed list in a row is logged as a warning.
fn loud(streak: usize, versions: usize) -> bool {
    streak <= versions || streak.is_multiple_of(WARN_EVERY)
}

/// The `apiVersion`s a kind is listed at, the first one first and the next after a failed list.
fn api_versions(kind: ViewKind) -> &'static [&'static str] {
    match kind {
        ViewKind::SidecarSet => &[SIDECARSET_V1BETA1, SIDECARSET_V1ALPHA1],
        ViewKind::ControllerRevision => &["apps/v1"],
        // v1beta1 (kruise HEAD's, served by the opt-in CRD as its storage version: a list there
        // keeps `ignoredPodSelector`) first; v1alpha1 where it is not served.
        ViewKind::PodUnavailableBudget => &[PUB_V1BETA1, crate::core::conversion::POLICY_V1ALPHA1],
        ViewKind::Namespace | ViewKind::ConfigMap | ViewKind::Pod => &["v1"],
        ViewKind::WorkloadSpread => &["apps.kruise.io/v1alpha1"],
    }
}

/// The JSON of a watched object with its `apiVersion` and `kind` (list items carry neither).
fn json_of(kind: ViewKind, api_version: &str, object: DynamicObject) -> Value {
    let mut value = serde_json::to_value(&object).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        map.insert("apiVersion".into(), api_version.into());
        map.insert("kind".into(), kind.name().into());
    }
    value
}

impl ClusterView for LiveView {
    fn namespace(&self, name: &str) -> Option<Arc<Namespace>> {
        self.read().namespace(name)
    }
    fn pod(&self, _: &str, _: &str) -> Option<Arc<Pod>> {
        // Pods are fetched per review (`PodSource`), never watched.
        None
    }
    fn sidecarsets(&self) -> Vec<Arc<SidecarSet>> {
        self.read().sidecarsets()
    }
    fn sidecarset(&self, name: &str) -> Option<Arc<SidecarSet>> {
        self.read().sidecarset(name)
    }
    fn on_change(&self, handler: ViewHandler) {
        self.handlers.write().unwrap_or_else(std::sync::PoisonError::into_inner).push(handler);
    }
    fn controller_revisions(&self, namespace: &str) -> Vec<Arc<ControllerRevision>> {
        self.read().controller_revisions(namespace)
    }
    fn sidecarsets_for_namespace(&self, namespace: &str) -> Vec<Arc<SidecarSet>> {
        self.read().sidecarsets_for_namespace(namespace)
    }
    fn sidecarsets_for_pod(
        &self,
        namespace: &str,
        labels: &std::collections::BTreeMap<String, String>,
    ) -> Vec<Arc<SidecarSet>> {
        self.read().sidecarsets_for_pod(namespace, labels)
    }
    fn config_map(&self, namespace: &str, name: &str) -> Option<Arc<ConfigMap>> {
        self.read().config_map(namespace, name)
    }
    fn pod_unavailable_budgets(&self, namespace: &str) -> Vec<Arc<PodUnavailableBudget>> {
        self.read().pod_unavailable_budgets(namespace)
    }
    fn workload_spreads(&self, namespace: &str) -> Vec<Arc<crate::apis::workloadspread::WorkloadSpread>> {
        self.read().workload_spreads(namespace)
    }
}

impl PodSource for LiveView {
    fn fetch<'a>(&'a self, namespace: &'a str, names: &'a [String]) -> PodsFuture<'a> {
        Box::pin(async move {
            let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
            let gets = futures::future::join_all(names.iter().map(|name| {
                let api = api.clone();
                async move { api.get_opt(name).await.map_err(|e| format!("find pod {name} failed: {e}")) }
            }));
            match tokio::time::timeout(POD_FETCH_TIMEOUT, gets).await {
                Err(_) => {
                    Err(format!("find pods of namespace {namespace} failed: no answer within {POD_FETCH_TIMEOUT:?}"))
                }
                Ok(results) => {
                    let mut pods = Vec::new();
                    for r in results {
                        if let Some(pod) = r? {
                            pods.push(Arc::new(pod));
                        }
                    }
                    Ok(pods)
                }
            }
        })
    }
}

/// Lists with `list` within [`POD_FETCH_TIMEOUT`]; `what` names the objects in an error.
async fn list_within<T>(
    what: String,
    list: impl std::future::Future<Output = Result<Vec<T>, kube::Error>>,
) -> Result<Vec<T>, String> {
    match tokio::time::timeout(POD_FETCH_TIMEOUT, list).await {
        Err(_) => Err(format!("list {what}: no answer within {POD_FETCH_TIMEOUT:?}")),
        Ok(Err(e)) => Err(e.to_string()),
        Ok(Ok(items)) => Ok(items),
    }
}

impl ListSource for LiveView {
    fn pods<'a>(&'a self, namespace: &'a str) -> ListFuture<'a, Pod> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        Box::pin(async move {
            let list = async move { api.list(&Default::default()).await.map(|l| l.items) };
            list_within(format!("pods of namespace {namespace}"), list).await
        })
    }

    fn claims<'a>(&'a self, namespace: &'a str) -> ListFuture<'a, k8s_openapi::api::core::v1::PersistentVolumeClaim> {
        let api: Api<k8s_openapi::api::core::v1::PersistentVolumeClaim> =
            Api::namespaced(self.client.clone(), namespace);
        Box::pin(async move {
            let list = async move { api.list(&Default::default()).await.map(|l| l.items) };
            list_within(format!("persistentvolumeclaims of namespace {namespace}"), list).await
        })
    }

    fn custom_resources<'a>(
        &'a self,
        group: &'a str,
        version: &'a str,
        plural: &'a str,
    ) -> ListFuture<'a, k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta> {
        let api_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
        let resource = ApiResource {
            group: group.to_string(),
            version: version.to_string(),
            api_version,
            kind: String::new(),
            plural: plural.to_string(),
        };
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource);
        Box::pin(async move {
            let list = async move {
                api.list_metadata(&Default::default()).await.map(|l| l.items.into_iter().map(|o| o.metadata).collect())
            };
            list_within(format!("{plural}.{group}"), list).await
        })
    }

    fn namespaced_json<'a>(
        &'a self,
        resource: &'a super::NamespacedResource,
        namespace: &'a str,
        name: Option<&'a str>,
    ) -> ListFuture<'a, Value> {
        let (group, version, plural) = (resource.group, resource.version, resource.plural);
        let api_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
        let r = ApiResource {
            group: group.into(),
            version: version.into(),
            api_version,
            kind: String::new(),
            plural: plural.into(),
        };
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), namespace, &r);
        Box::pin(async move {
            let list = async move {
                let objects = match name {
                    Some(name) => api.get_opt(name).await?.into_iter().collect(),
                    None => api.list(&Default::default()).await?.items,
                };
                Ok(objects.into_iter().map(|o| serde_json::to_value(o).unwrap_or(Value::Null)).collect())
            };
            list_within(format!("{plural}.{group} of namespace {namespace}"), list).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_list_failures_warn_once_a_minute() {
        // (streak, versions, warned)
        let rows = [
            (1, 2, true),
            (2, 2, true),
            (3, 2, false),
            (59, 2, false),
            (WARN_EVERY, 2, true),
            (WARN_EVERY + 1, 2, false),
            (2 * WARN_EVERY, 2, true),
            (1, 1, true),
            (2, 1, false),
        ];
        for (streak, versions, want) in rows {
            assert_eq!(loud(streak, versions), want, "streak {streak} over {versions} versions");
        }
    }
}
