//! A reflector-fed index: the objects of one kind as the watch last showed them, grouped by a key
//! (the uid of each owner for pods and PVCs, the namespace for ControllerRevisions), so a
//! reconcile reads what one workload owns without scanning the whole cache.
//!
//! It follows the watcher's protocol as kube's own `Store` does: after `Init` the `InitApply`
//! objects are buffered and replace the contents atomically at `InitDone` (a re-list never shows a
//! half-filled view), and [`Index::is_synced`] stays false until the first listing is complete —
//! a controller that planned on an empty, unsynced index would create every pod again.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use kube::Resource;
use kube::runtime::watcher::Event;

/// The keys an object is filed under.
pub type KeysOf<K> = fn(&K) -> Vec<String>;

struct Inner<K> {
    /// `namespace/name` → object.
    objects: HashMap<String, Arc<K>>,
    /// key → names filed under it.
    by_key: HashMap<String, BTreeSet<String>>,
    /// The listing in progress (between `Init` and `InitDone`).
    buffer: Option<HashMap<String, Arc<K>>>,
    synced: bool,
}

/// The index of one kind; clones share it.
pub struct Index<K> {
    inner: Arc<RwLock<Inner<K>>>,
    keys: KeysOf<K>,
}

impl<K> Clone for Index<K> {
    fn clone(&self) -> Self {
        Index { inner: Arc::clone(&self.inner), keys: self.keys }
    }
}

fn object_key<K: Resource>(o: &K) -> String {
    meta_key(o.meta())
}

/// The `namespace/name` key objects are stored under (`/name` for cluster-scoped ones).
pub fn meta_key(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    format!("{}/{}", meta.namespace.as_deref().unwrap_or(""), meta.name.as_deref().unwrap_or(""))
}

/// The uids of an object's owner references (kruise indexes pods and PVCs by every owner).
pub fn owner_uids<K: Resource>(o: &K) -> Vec<String> {
    o.meta().owner_references.iter().flatten().map(|r| r.uid.clone()).collect()
}

/// The object's namespace.
pub fn namespace_of<K: Resource>(o: &K) -> Vec<String> {
    vec![o.meta().namespace.clone().unwrap_or_default()]
}

/// The key a pod's node files it under in [`pod_keys`].
pub fn node_key(node: &str) -> String {
    format!("node/{node}")
}

/// The key an object's namespace files it under in [`pod_keys`] and [`claim_keys`].
pub fn namespace_key(namespace: &str) -> String {
    format!("namespace/{namespace}")
}

/// A PVC's keys: the uid of each owner, and [`namespace_key`] of its namespace (Advanced
/// StatefulSet claims have no owner unless a retention policy asks for one).
pub fn claim_keys(p: &k8s_openapi::api::core::v1::PersistentVolumeClaim) -> Vec<String> {
    let mut keys = owner_uids(p);
    keys.push(namespace_key(p.metadata.namespace.as_deref().unwrap_or("")));
    keys
}

/// The key a pod is filed under for each SidecarSet its `kruise.io/sidecarset-injected-list`
/// names (spec §4.12 item 1: a SidecarSet manages only the pods it was injected into, so a
/// reconcile reads its own pods, not every pod its scope can reach).
pub fn sidecarset_key(name: &str) -> String {
    format!("sidecarset/{name}")
}

/// The SidecarSets a pod's `kruise.io/sidecarset-injected-list` names.
pub fn injected_sets(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> impl Iterator<Item = &str> {
    let list = meta.annotations.as_ref().and_then(|a| a.get(crate::apis::keys::SIDECARSET_INJECTED_LIST));
    list.map(String::as_str).unwrap_or("").split(',').map(str::trim).filter(|n| !n.is_empty())
}

/// A pod's keys: the uid of each owner, [`namespace_key`] of its namespace (a StatefulSet adopts
/// orphans of its namespace), [`node_key`] of its node once it has one, and [`sidecarset_key`] of
/// each SidecarSet injected into it.
pub fn pod_keys(p: &k8s_openapi::api::core::v1::Pod) -> Vec<String> {
    let mut keys = owner_uids(p);
    keys.push(namespace_key(p.metadata.namespace.as_deref().unwrap_or("")));
    if let Some(node) = p.spec.as_ref().and_then(|s| s.node_name.as_deref()).filter(|n| !n.is_empty()) {
        keys.push(node_key(node));
    }
    keys.extend(injected_sets(&p.metadata).map(sidecarset_key));
    keys
}

/// No key: objects are only read all together ([`Index::all`]) or by name.
pub fn no_keys<K>(_: &K) -> Vec<String> {
    Vec::new()
}

impl<K: Resource + Clone> Index<K> {
    /// An empty, unsynced index filing objects under `keys`.
    pub fn new(keys: KeysOf<K>) -> Self {
        let inner = Inner { objects: HashMap::new(), by_key: HashMap::new(), buffer: None, synced: false };
        Index { inner: Arc::new(RwLock::new(inner)), keys }
    }

    fn read(&self) -> RwLockReadGuard<'_, Inner<K>> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner<K>> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies one watcher event.
    pub fn apply(&self, event: &Event<K>) {
        let shared = match event {
            Event::Apply(o) => Event::Apply(Arc::new(o.clone())),
            Event::Delete(o) => Event::Delete(Arc::new(o.clone())),
            Event::Init => Event::Init,
            Event::InitApply(o) => Event::InitApply(Arc::new(o.clone())),
            Event::InitDone => Event::InitDone,
        };
        self.apply_shared(&shared);
    }

    /// Applies one watcher event whose object is shared already (no copy is made).
    pub fn apply_shared(&self, event: &Event<Arc<K>>) {
        let keys = self.keys;
        let mut inner = self.write();
        match event {
            Event::Apply(o) => inner.upsert(keys, Arc::clone(o)),
            Event::Delete(o) => inner.remove(keys, &object_key(o.as_ref())),
            Event::Init => inner.buffer = Some(HashMap::new()),
            Event::InitApply(o) => {
                inner.buffer.get_or_insert_with(HashMap::new).insert(object_key(o.as_ref()), Arc::clone(o));
            }
            Event::InitDone => {
                let listed = inner.buffer.take().unwrap_or_default();
                inner.objects = HashMap::new();
                inner.by_key = HashMap::new();
                for o in listed.into_values() {
                    inner.upsert(keys, o);
                }
                inner.synced = true;
            }
        }
    }

    /// Takes the object stored under `namespace/name` out (an object that no longer decodes, when
    /// the caller must not plan on its last good version).
    pub fn remove(&self, key: &str) {
        let keys = self.keys;
        self.write().remove(keys, key);
    }

    /// During a listing (between `Init` and `InitDone`): carries the object stored under `key`
    /// into the listing, so an object the listing has but that no longer decodes keeps its last
    /// good version instead of vanishing from the index.
    pub fn keep_in_listing(&self, key: &str) {
        let mut inner = self.write();
        if let Some(old) = inner.objects.get(key).cloned() {
            inner.buffer.get_or_insert_with(HashMap::new).insert(key.to_string(), old);
        }
    }

    /// The object stored under `namespace/name`.
    pub fn get_object(&self, key: &str) -> Option<Arc<K>> {
        self.read().objects.get(key).cloned()
    }

    /// Every object, in no particular order.
    pub fn all(&self) -> Vec<Arc<K>> {
        self.read().objects.values().cloned().collect()
    }

    /// Whether the first listing is complete.
    pub fn is_synced(&self) -> bool {
        self.read().synced
    }

    /// The objects filed under `key`, in name order.
    pub fn get(&self, key: &str) -> Vec<Arc<K>> {
        let inner = self.read();
        inner
            .by_key
            .get(key)
            .map(|names| names.iter().filter_map(|n| inner.objects.get(n).cloned()).collect())
            .unwrap_or_default()
    }

    /// How many objects the index holds.
    pub fn len(&self) -> usize {
        self.read().objects.len()
    }

    /// Whether the index is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<K: Resource> Inner<K> {
    fn unfile(&mut self, keys: KeysOf<K>, name: &str, old: &K) {
        for k in keys(old) {
            if let Some(names) = self.by_key.get_mut(&k) {
                names.remove(name);
                if names.is_empty() {
                    self.by_key.remove(&k);
                }
            }
        }
    }

    fn upsert(&mut self, keys: KeysOf<K>, o: Arc<K>) {
        let name = object_key(o.as_ref());
        if let Some(old) = self.objects.remove(&name) {
            self.unfile(keys, &name, &old);
        }
        for k in keys(&o) {
            self.by_key.entry(k).or_default().insert(name.clone());
        }
        self.objects.insert(name, o);
    }

    fn remove(&mut self, keys: KeysOf<K>, name: &str) {
        if let Some(old) = self.objects.remove(name) {
            self.unfile(keys, name, &old);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;

    fn pod(name: &str, owner: &str, rv: &str) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv,
            "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cs",
            "uid": owner, "controller": true}]}}))
        .unwrap()
    }

    fn names(v: &[Arc<Pod>]) -> Vec<(String, String)> {
        v.iter().map(|p| (p.metadata.name.clone().unwrap(), p.metadata.resource_version.clone().unwrap())).collect()
    }

    #[test]
    fn files_by_owner_and_follows_updates_and_deletes() {
        let idx = Index::new(owner_uids::<Pod>);
        assert!(!idx.is_synced());
        idx.apply(&Event::Init);
        idx.apply(&Event::InitApply(pod("a", "u1", "1")));
        assert!(idx.get("u1").is_empty(), "a listing in progress is not visible");
        idx.apply(&Event::InitDone);
        assert!(idx.is_synced());
        assert_eq!(names(&idx.get("u1")), [("a".into(), "1".into())]);
        idx.apply(&Event::Apply(pod("b", "u1", "2")));
        idx.apply(&Event::Apply(pod("a", "u2", "3")));
        assert_eq!(names(&idx.get("u1")), [("b".into(), "2".into())], "a changed owner moves the pod");
        assert_eq!(names(&idx.get("u2")), [("a".into(), "3".into())]);
        idx.apply(&Event::Delete(pod("b", "u1", "4")));
        assert!(idx.get("u1").is_empty());
        assert_eq!(idx.len(), 1);
    }

    #[test]
    fn a_relist_replaces_everything_at_once() {
        let idx = Index::new(owner_uids::<Pod>);
        idx.apply(&Event::Init);
        idx.apply(&Event::InitApply(pod("a", "u1", "1")));
        idx.apply(&Event::InitApply(pod("b", "u1", "1")));
        idx.apply(&Event::InitDone);
        // The watch broke; the re-list no longer has `a` (deleted while the watch was down).
        idx.apply(&Event::Init);
        idx.apply(&Event::InitApply(pod("b", "u1", "5")));
        assert_eq!(names(&idx.get("u1")).len(), 2, "the old view stays until the listing is complete");
        idx.apply(&Event::InitDone);
        assert_eq!(names(&idx.get("u1")), [("b".into(), "5".into())]);
    }

    #[test]
    fn a_pod_is_filed_under_each_sidecarset_injected_into_it() {
        let mut p = pod("a", "u1", "1");
        p.metadata.annotations =
            Some([(crate::apis::keys::SIDECARSET_INJECTED_LIST.to_string(), "logs, mesh,".to_string())].into());
        assert_eq!(pod_keys(&p), ["u1", "namespace/ns", "sidecarset/logs", "sidecarset/mesh"]);
        let idx = Index::new(pod_keys);
        idx.apply(&Event::Init);
        idx.apply(&Event::InitApply(p.clone()));
        idx.apply(&Event::InitDone);
        assert_eq!(names(&idx.get(&sidecarset_key("mesh"))), [("a".into(), "1".into())]);
        // The injected list no longer names mesh: the pod leaves its key.
        p.metadata.annotations =
            Some([(crate::apis::keys::SIDECARSET_INJECTED_LIST.to_string(), "logs".to_string())].into());
        idx.apply(&Event::Apply(p));
        assert!(idx.get(&sidecarset_key("mesh")).is_empty());
        assert_eq!(idx.get(&sidecarset_key("logs")).len(), 1);
    }
}
