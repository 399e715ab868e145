//! The indexed store behind both cluster views (the files of `--standalone` and the live
//! watches): objects by kind, SidecarSets by the namespaces they are scoped to and the
//! cluster-wide ones by a label their selector requires (issue 16), so that a pod CREATE reads
//! only its candidates. Objects enter as JSON and are decoded as Go decodes them (null is the zero
//! value, `compat::decode`); one that does not decode is reported to the caller and not held.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use serde_json::Value;

use super::ClusterView;
use crate::apis::SidecarSet;
use crate::apis::podunavailablebudget::PodUnavailableBudget;
use crate::apis::workloadspread::WorkloadSpread;
use crate::compat::decode::{Error as DecodeError, from_value};
use crate::core::conversion::{V1ALPHA1, V1BETA1};

/// The kinds a view holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ViewKind {
    /// `v1 Namespace`.
    Namespace,
    /// `v1 Pod` (files only: the live view fetches pods on demand).
    Pod,
    /// `apps.kruise.io/v1alpha1 SidecarSet`.
    SidecarSet,
    /// `v1 ConfigMap`.
    ConfigMap,
    /// `apps/v1 ControllerRevision`.
    ControllerRevision,
    /// `policy.kruise.io/v1alpha1 PodUnavailableBudget`.
    PodUnavailableBudget,
    /// `apps.kruise.io/v1alpha1 WorkloadSpread`.
    WorkloadSpread,
}

impl ViewKind {
    /// The kind of an `apiVersion`/`kind` pair, when a view holds it.
    pub fn of(api_version: &str, kind: &str) -> Option<Self> {
        Some(match (api_version, kind) {
            ("v1", "Namespace") => ViewKind::Namespace,
            ("v1", "Pod") => ViewKind::Pod,
            ("apps.kruise.io/v1alpha1" | "apps.kruise.io/v1beta1", "SidecarSet") => ViewKind::SidecarSet,
            ("v1", "ConfigMap") => ViewKind::ConfigMap,
            ("apps/v1", "ControllerRevision") => ViewKind::ControllerRevision,
            ("policy.kruise.io/v1alpha1" | "policy.kruise.io/v1beta1", "PodUnavailableBudget") => {
                ViewKind::PodUnavailableBudget
            }
            ("apps.kruise.io/v1alpha1", "WorkloadSpread") => ViewKind::WorkloadSpread,
            _ => return None,
        })
    }

    /// The `kind` string.
    pub fn name(self) -> &'static str {
        match self {
            ViewKind::Namespace => "Namespace",
            ViewKind::Pod => "Pod",
            ViewKind::SidecarSet => "SidecarSet",
            ViewKind::ConfigMap => "ConfigMap",
            ViewKind::ControllerRevision => "ControllerRevision",
            ViewKind::PodUnavailableBudget => "PodUnavailableBudget",
            ViewKind::WorkloadSpread => "WorkloadSpread",
        }
    }
}

/// Objects loaded from files or watches, indexed for the lookups of [`ClusterView`].
#[derive(Debug, Default, Clone)]
pub struct Snapshot {
    namespaces: HashMap<String, Arc<Namespace>>,
    pods: HashMap<(String, String), Arc<Pod>>,
    sidecarsets: Vec<Arc<SidecarSet>>,
    revisions: HashMap<String, Vec<Arc<ControllerRevision>>>,
    /// SidecarSets by the namespaces they are scoped to (`core::sidecar::scope`).
    sidecarsets_by_namespace: HashMap<String, Vec<Arc<SidecarSet>>>,
    /// SidecarSets that can match pods of any namespace.
    cluster_sidecarsets: Vec<Arc<SidecarSet>>,
    /// `cluster_sidecarsets` by one `matchLabels` pair their valid selector requires (positions
    /// into the list); the others (no `matchLabels`, or a selector that does not compile) are
    /// in `cluster_unindexed`. Rebuilt on every insert.
    cluster_by_label: HashMap<String, HashMap<String, Vec<usize>>>,
    cluster_unindexed: Vec<usize>,
    config_maps: HashMap<(String, String), Arc<ConfigMap>>,
    /// PodUnavailableBudgets by namespace, then name.
    budgets: HashMap<String, BTreeMap<String, Arc<PodUnavailableBudget>>>,
    /// WorkloadSpreads by namespace, then name (the pod webhook's only lookup of them).
    workload_spreads: HashMap<String, BTreeMap<String, Arc<WorkloadSpread>>>,
}

impl Snapshot {
    /// Adds (or replaces) one object given as JSON; returns `Ok(false)` for kinds the view does
    /// not hold.
    pub fn insert(&mut self, object: Value) -> Result<bool, DecodeError> {
        let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
        let kind = object.get("kind").and_then(Value::as_str).unwrap_or_default();
        let Some(kind) = ViewKind::of(api_version, kind) else { return Ok(false) };
        self.insert_as(kind, object, true)?;
        Ok(true)
    }

    /// Adds (or replaces) one object of `kind`; `index` rebuilds the SidecarSet label index.
    fn insert_as(&mut self, kind: ViewKind, object: Value, index: bool) -> Result<(), DecodeError> {
        match kind {
            ViewKind::Namespace => {
                let ns: Namespace = from_value(&object)?;
                let name = ns.metadata.name.clone().unwrap_or_default();
                self.namespaces.insert(name, Arc::new(ns));
            }
            ViewKind::Pod => {
                let pod: Pod = from_value(&object)?;
                self.pods.insert(key(&pod.metadata), Arc::new(pod));
            }
            ViewKind::SidecarSet => {
                // Held on the v1alpha1 model the decisions use; a v1beta1 object (the storage
                // version, as the live view reads it) is converted here, not by the apiserver.
                let set: SidecarSet = if object.get("apiVersion").and_then(Value::as_str) == Some(V1BETA1) {
                    let mut object = object;
                    if let Value::Object(map) = &mut object {
                        crate::core::conversion::sidecarset::to_v1alpha1(map);
                        map.insert("apiVersion".into(), Value::from(V1ALPHA1));
                    }
                    from_value(&object)?
                } else {
                    from_value(&object)?
                };
                self.insert_sidecarset(set, index);
            }
            ViewKind::ConfigMap => {
                let cm: ConfigMap = from_value(&object)?;
                self.config_maps.insert(key(&cm.metadata), Arc::new(cm));
            }
            ViewKind::ControllerRevision => {
                let cr: ControllerRevision = from_value(&object)?;
                let (ns, _) = key(&cr.metadata);
                let list = self.revisions.entry(ns).or_default();
                list.retain(|c| c.metadata.name != cr.metadata.name);
                list.push(Arc::new(cr));
            }
            ViewKind::PodUnavailableBudget => {
                // Held on the v1alpha1 model too; a v1beta1 object (the opt-in CRD's storage
                // version) is converted here, keeping the `ignoredPodSelector` v1alpha1 lacks.
                let b: PodUnavailableBudget = if object.get("apiVersion").and_then(Value::as_str)
                    == Some(crate::core::conversion::POLICY_V1BETA1)
                {
                    let mut object = object;
                    let ignored = object.pointer("/spec/ignoredPodSelector").cloned();
                    if let Value::Object(map) = &mut object {
                        crate::core::conversion::podunavailablebudget::to_v1alpha1(map);
                        map.insert("apiVersion".into(), Value::from(crate::core::conversion::POLICY_V1ALPHA1));
                    }
                    let mut b: PodUnavailableBudget = from_value(&object)?;
                    if let Some(ignored) = ignored.filter(|v| !v.is_null()) {
                        b.spec.ignored_pod_selector = Some(from_value(&ignored)?);
                    }
                    b
                } else {
                    from_value(&object)?
                };
                let (ns, name) = key(&b.metadata);
                self.budgets.entry(ns).or_default().insert(name, Arc::new(b));
            }
            ViewKind::WorkloadSpread => {
                let ws: WorkloadSpread = from_value(&object)?;
                let (ns, name) = key(&ws.metadata);
                self.workload_spreads.entry(ns).or_default().insert(name, Arc::new(ws));
            }
        }
        Ok(())
    }

    /// Forgets one object (a watch's delete event).
    pub fn remove(&mut self, kind: ViewKind, namespace: &str, name: &str) {
        let k = (namespace.to_string(), name.to_string());
        match kind {
            ViewKind::Namespace => {
                self.namespaces.remove(name);
            }
            ViewKind::Pod => {
                self.pods.remove(&k);
            }
            ViewKind::ConfigMap => {
                self.config_maps.remove(&k);
            }
            ViewKind::ControllerRevision => {
                if let Some(list) = self.revisions.get_mut(namespace) {
                    list.retain(|c| c.metadata.name.as_deref() != Some(name));
                }
            }
            ViewKind::SidecarSet => {
                self.forget_sidecarset(name);
                self.index_cluster_sidecarsets();
            }
            ViewKind::PodUnavailableBudget => {
                if let Some(list) = self.budgets.get_mut(namespace) {
                    list.remove(name);
                }
            }
            ViewKind::WorkloadSpread => {
                if let Some(list) = self.workload_spreads.get_mut(namespace) {
                    list.remove(name);
                }
            }
        }
    }

    /// Replaces every object of `kind` with `objects` (a watch's initial list or relist). Objects
    /// that do not decode are skipped and returned with their names and errors.
    pub fn replace_kind(&mut self, kind: ViewKind, objects: Vec<Value>) -> Vec<(String, DecodeError)> {
        match kind {
            ViewKind::Namespace => self.namespaces.clear(),
            ViewKind::Pod => self.pods.clear(),
            ViewKind::ConfigMap => self.config_maps.clear(),
            ViewKind::ControllerRevision => self.revisions.clear(),
            ViewKind::PodUnavailableBudget => self.budgets.clear(),
            ViewKind::WorkloadSpread => self.workload_spreads.clear(),
            ViewKind::SidecarSet => {
                self.sidecarsets.clear();
                self.cluster_sidecarsets.clear();
                self.sidecarsets_by_namespace.clear();
            }
        }
        let mut failed = Vec::new();
        for object in objects {
            let name = object_name(&object);
            if let Err(e) = self.insert_as(kind, object, false) {
                failed.push((name, e));
            }
        }
        if kind == ViewKind::SidecarSet {
            self.index_cluster_sidecarsets();
        }
        failed
    }

    /// Number of objects of `kind` held.
    pub fn count(&self, kind: ViewKind) -> usize {
        match kind {
            ViewKind::Namespace => self.namespaces.len(),
            ViewKind::Pod => self.pods.len(),
            ViewKind::SidecarSet => self.sidecarsets.len(),
            ViewKind::ConfigMap => self.config_maps.len(),
            ViewKind::ControllerRevision => self.revisions.values().map(Vec::len).sum(),
            ViewKind::PodUnavailableBudget => self.budgets.values().map(BTreeMap::len).sum(),
            ViewKind::WorkloadSpread => self.workload_spreads.values().map(BTreeMap::len).sum(),
        }
    }

    /// Holds a SidecarSet as the apiserver stores it, i.e. after the SidecarSet mutating
    /// webhook: defaulted, with its hash annotations (kept when the file already has them, so a
    /// set exported from a cluster keeps the hashes its pods record). Indexed by scope.
    fn insert_sidecarset(&mut self, mut set: SidecarSet, index: bool) {
        use crate::core::sidecar::{Scope, defaults, scope};
        if defaults::default_spec(&mut set.spec).is_ok() {
            let has_hash =
                set.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(crate::apis::keys::SIDECARSET_HASH));
            if !has_hash {
                defaults::set_hash_annotations(&mut set);
            }
        }
        if let Some(name) = set.metadata.name.clone() {
            self.forget_sidecarset(&name);
        }
        let set = Arc::new(set);
        match scope(&set) {
            Scope::Cluster => self.cluster_sidecarsets.push(Arc::clone(&set)),
            Scope::Namespaces(namespaces) => {
                for ns in namespaces {
                    let list = self.sidecarsets_by_namespace.entry(ns).or_default();
                    if !list.iter().any(|s| Arc::ptr_eq(s, &set)) {
                        list.push(Arc::clone(&set));
                    }
                }
            }
        }
        self.sidecarsets.push(set);
        if index {
            self.index_cluster_sidecarsets();
        }
    }

    /// Removes a SidecarSet from every list (the label index is rebuilt by the caller).
    fn forget_sidecarset(&mut self, name: &str) {
        let other = |s: &Arc<SidecarSet>| s.metadata.name.as_deref() != Some(name);
        self.sidecarsets.retain(other);
        self.cluster_sidecarsets.retain(other);
        self.sidecarsets_by_namespace.retain(|_, list| {
            list.retain(other);
            !list.is_empty()
        });
    }

    /// Rebuilds the label index of the cluster-wide SidecarSets.
    fn index_cluster_sidecarsets(&mut self) {
        self.cluster_by_label.clear();
        self.cluster_unindexed.clear();
        for (i, set) in self.cluster_sidecarsets.iter().enumerate() {
            match required_label(set) {
                Some((k, v)) => self.cluster_by_label.entry(k).or_default().entry(v).or_default().push(i),
                None => self.cluster_unindexed.push(i),
            }
        }
    }

    /// Number of objects held.
    pub fn len(&self) -> usize {
        self.namespaces.len()
            + self.pods.len()
            + self.sidecarsets.len()
            + self.revisions.values().map(Vec::len).sum::<usize>()
            + self.config_maps.len()
            + self.count(ViewKind::PodUnavailableBudget)
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl ClusterView for Snapshot {
    fn namespace(&self, name: &str) -> Option<Arc<Namespace>> {
        self.namespaces.get(name).cloned()
    }
    fn pod(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        self.pods.get(&(namespace.to_string(), name.to_string())).cloned()
    }
    fn sidecarsets(&self) -> Vec<Arc<SidecarSet>> {
        self.sidecarsets.clone()
    }
    fn sidecarset(&self, name: &str) -> Option<Arc<SidecarSet>> {
        self.sidecarsets.iter().find(|s| s.metadata.name.as_deref() == Some(name)).cloned()
    }
    fn controller_revisions(&self, namespace: &str) -> Vec<Arc<ControllerRevision>> {
        self.revisions.get(namespace).cloned().unwrap_or_default()
    }
    fn sidecarsets_for_namespace(&self, namespace: &str) -> Vec<Arc<SidecarSet>> {
        let scoped = self.sidecarsets_by_namespace.get(namespace).map(Vec::as_slice).unwrap_or_default();
        scoped.iter().chain(&self.cluster_sidecarsets).cloned().collect()
    }
    fn sidecarsets_for_pod(&self, namespace: &str, labels: &BTreeMap<String, String>) -> Vec<Arc<SidecarSet>> {
        let scoped = self.sidecarsets_by_namespace.get(namespace).map(Vec::as_slice).unwrap_or_default();
        let mut cluster: Vec<usize> = self.cluster_unindexed.clone();
        for (k, v) in labels {
            if let Some(hits) = self.cluster_by_label.get(k.as_str()).and_then(|by_value| by_value.get(v.as_str())) {
                cluster.extend(hits);
            }
        }
        cluster.sort_unstable();
        scoped.iter().cloned().chain(cluster.into_iter().map(|i| Arc::clone(&self.cluster_sidecarsets[i]))).collect()
    }
    fn config_map(&self, namespace: &str, name: &str) -> Option<Arc<ConfigMap>> {
        self.config_maps.get(&(namespace.to_string(), name.to_string())).cloned()
    }
    fn pods_in_namespace(&self, namespace: &str) -> Vec<Arc<Pod>> {
        let mut pods: Vec<(&(String, String), &Arc<Pod>)> =
            self.pods.iter().filter(|((ns, _), _)| ns == namespace).collect();
        pods.sort_by(|a, b| a.0.cmp(b.0));
        pods.into_iter().map(|(_, p)| Arc::clone(p)).collect()
    }
    fn pod_unavailable_budgets(&self, namespace: &str) -> Vec<Arc<PodUnavailableBudget>> {
        self.budgets.get(namespace).map(|m| m.values().cloned().collect()).unwrap_or_default()
    }
    fn workload_spreads(&self, namespace: &str) -> Vec<Arc<WorkloadSpread>> {
        self.workload_spreads.get(namespace).map(|m| m.values().cloned().collect()).unwrap_or_default()
    }
}

/// The `(namespace, name)` key of a namespaced object (`default` when the manifest names none).
fn key(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> (String, String) {
    (meta.namespace.clone().unwrap_or_else(|| "default".into()), meta.name.clone().unwrap_or_default())
}

/// `namespace/name` of a JSON object, for error reports.
fn object_name(object: &Value) -> String {
    let meta = object.get("metadata");
    let field = |f: &str| meta.and_then(|m| m.get(f)).and_then(Value::as_str).unwrap_or_default().to_string();
    match field("namespace") {
        ns if ns.is_empty() => field("name"),
        ns => format!("{ns}/{}", field("name")),
    }
}

/// A `matchLabels` pair a SidecarSet's pod selector requires, when the selector is valid (a set
/// whose selector does not compile must still be matched, to fail the pod as kruise does).
fn required_label(set: &SidecarSet) -> Option<(String, String)> {
    let selector = set.spec.selector.as_ref()?;
    crate::compat::selector::Selector::from_validated(Some(selector)).ok()?;
    let (k, v) = selector.match_labels.as_ref()?.iter().next()?;
    Some((k.clone(), v.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A v1beta1 PodUnavailableBudget (the opt-in CRD's storage version) is held on the v1alpha1
    /// model: its fields as the annotations, and `ignoredPodSelector` in memory.
    #[test]
    fn v1beta1_budgets_keep_what_v1alpha1_cannot_spell() {
        let mut s = Snapshot::default();
        let inserted = s.insert(json!({"apiVersion": "policy.kruise.io/v1beta1", "kind": "PodUnavailableBudget",
            "metadata": {"name": "b", "namespace": "ns"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1, "protectOperations": ["EVICT"],
                     "protectTotalReplicas": 3, "ignoredPodSelector": {"matchLabels": {"skip": "yes"}}}}));
        assert_eq!(inserted, Ok(true));
        let held = s.pod_unavailable_budgets("ns");
        let b = held.first().expect("held");
        let annotations = b.metadata.annotations.clone().unwrap_or_default();
        assert_eq!(annotations.get("kruise.io/pub-protect-operations").map(String::as_str), Some("EVICT"));
        assert_eq!(annotations.get("pub.kruise.io/protect-total-replicas").map(String::as_str), Some("3"));
        let ignored = b.spec.ignored_pod_selector.as_ref().and_then(|s| s.match_labels.clone()).unwrap_or_default();
        assert_eq!(ignored.get("skip").map(String::as_str), Some("yes"));
    }

    /// A v1beta1 SidecarSet (as the live view reads it, at the storage version) is held on the
    /// v1alpha1 model: its namespace selector on the name label scopes it to that namespace.
    #[test]
    fn v1beta1_sidecarsets_are_held_as_v1alpha1() {
        let mut snap = Snapshot::default();
        let set = json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet", "metadata": {"name": "s"},
            "spec": {"selector": {"matchLabels": {"app": "a"}}, "customVersion": "v3",
                     "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "team"}},
                     "containers": [{"name": "c", "image": "busybox"}]}});
        assert!(snap.insert(set).unwrap());
        let held = snap.sidecarsets();
        assert_eq!(held.len(), 1);
        assert_eq!(held[0].spec.namespace, "team");
        assert_eq!(held[0].metadata.labels.as_ref().unwrap()["apps.kruise.io/sidecarset-custom-version"], "v3");
        assert_eq!(snap.sidecarsets_for_namespace("team").len(), 1);
        assert!(snap.sidecarsets_for_namespace("other").is_empty());
        let bad = json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet", "metadata": {"name": "b"},
            "spec": {"containers": "oops"}});
        assert!(snap.insert(bad).is_err(), "an undecodable v1beta1 object is an error, as a v1alpha1 one");
    }
}
