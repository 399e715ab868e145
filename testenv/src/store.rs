//! In-memory storage with etcd's contract as kube-apiserver sees it: one cluster-wide,
//! monotonically increasing resourceVersion, compare-and-swap writes, and an event log from which
//! watches resume at any retained resourceVersion (older ones are `410 Gone`). Objects are JSON
//! values keyed by group/resource/namespace/name; what an object means is decided above this layer.

use crate::meta;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::broadcast;

/// Identifies a stored object.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjKey {
    /// API group.
    pub group: String,
    /// Plural resource.
    pub resource: String,
    /// Namespace, "" for cluster-scoped objects.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl ObjKey {
    /// Builds a key.
    pub fn new(group: &str, resource: &str, namespace: &str, name: &str) -> Self {
        Self { group: group.into(), resource: resource.into(), namespace: namespace.into(), name: name.into() }
    }
}

/// Watch event types as they appear on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// ADDED
    Added,
    /// MODIFIED
    Modified,
    /// DELETED
    Deleted,
}

impl EventType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change to the store.
#[derive(Debug, Clone)]
pub struct Event {
    /// The resourceVersion the change was written at.
    pub rv: u64,
    /// What happened.
    pub type_: EventType,
    /// Which object.
    pub key: ObjKey,
    /// The object after the change (for deletions, the last state with the deletion's version).
    pub object: Arc<Value>,
    /// The object before the change, for MODIFIED.
    pub old: Option<Arc<Value>>,
}

/// Why a write did not happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreError {
    /// No such object.
    NotFound,
    /// An object with that key exists.
    AlreadyExists,
    /// The stored resourceVersion differs from the expected one.
    Conflict,
}

/// Where a watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchFrom {
    /// Synthetic ADDED events for every current object, then changes.
    Snapshot,
    /// Every change after this resourceVersion.
    After(u64),
}

/// A started watch: events to replay first, then the live feed.
pub struct WatchStart {
    /// Events to send before the live ones.
    pub initial: Vec<Arc<Event>>,
    /// Live events (all resources; the caller filters).
    pub rx: broadcast::Receiver<Arc<Event>>,
    /// The store's resourceVersion when the watch started.
    pub rv: u64,
}

type Bucket = BTreeMap<(String, String), Arc<Value>>;

struct Inner {
    rv: u64,
    objects: HashMap<(String, String), Bucket>,
    uids: HashMap<String, ObjKey>,
    log: VecDeque<Arc<Event>>,
    oldest_resumable: u64,
    history_limit: usize,
}

/// The store.
pub struct Store {
    inner: Mutex<Inner>,
    tx: broadcast::Sender<Arc<Event>>,
}

impl Store {
    /// An empty store keeping `history_limit` events for watch resumption.
    pub fn new(history_limit: usize) -> Self {
        let (tx, _) = broadcast::channel(65_536);
        Self {
            inner: Mutex::new(Inner {
                rv: 1,
                objects: HashMap::new(),
                uids: HashMap::new(),
                log: VecDeque::new(),
                oldest_resumable: 1,
                history_limit: history_limit.max(1),
            }),
            tx,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The current resourceVersion.
    pub fn current_rv(&self) -> u64 {
        self.lock().rv
    }

    /// A live feed of every change.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.tx.subscribe()
    }

    /// Reads one object.
    pub fn get(&self, key: &ObjKey) -> Option<Arc<Value>> {
        let inner = self.lock();
        inner
            .objects
            .get(&(key.group.clone(), key.resource.clone()))?
            .get(&(key.namespace.clone(), key.name.clone()))
            .cloned()
    }

    /// Lists a resource (in one namespace, or all), sorted by namespace and name, with the
    /// store's resourceVersion.
    pub fn list(&self, group: &str, resource: &str, ns: Option<&str>) -> (Vec<Arc<Value>>, u64) {
        let inner = self.lock();
        let items = inner
            .objects
            .get(&(group.to_string(), resource.to_string()))
            .map(|bucket| {
                bucket.iter().filter(|((n, _), _)| ns.is_none_or(|want| want == n)).map(|(_, v)| v.clone()).collect()
            })
            .unwrap_or_default();
        (items, inner.rv)
    }

    /// Every stored object.
    pub fn snapshot(&self) -> Vec<(ObjKey, Arc<Value>)> {
        let inner = self.lock();
        inner
            .objects
            .iter()
            .flat_map(|((g, r), bucket)| bucket.iter().map(move |((ns, n), v)| (ObjKey::new(g, r, ns, n), v.clone())))
            .collect()
    }

    /// Whether an object with this uid exists.
    pub fn uid_exists(&self, uid: &str) -> bool {
        self.lock().uids.contains_key(uid)
    }

    /// Stores a new object, assigning it the next resourceVersion.
    pub fn create(&self, key: &ObjKey, mut obj: Value) -> Result<Arc<Value>, StoreError> {
        let mut inner = self.lock();
        let gr = (key.group.clone(), key.resource.clone());
        let nn = (key.namespace.clone(), key.name.clone());
        if inner.objects.get(&gr).is_some_and(|b| b.contains_key(&nn)) {
            return Err(StoreError::AlreadyExists);
        }
        let rv = inner.rv + 1;
        inner.rv = rv;
        meta::set_meta(&mut obj, "resourceVersion", json!(rv.to_string()));
        let obj = Arc::new(obj);
        let uid = meta::uid(&obj).to_string();
        if !uid.is_empty() {
            inner.uids.insert(uid, key.clone());
        }
        inner.objects.entry(gr).or_default().insert(nn, obj.clone());
        self.record(
            &mut inner,
            Event { rv, type_: EventType::Added, key: key.clone(), object: obj.clone(), old: None },
        );
        Ok(obj)
    }

    /// Replaces an object if its stored resourceVersion is still `expected_rv`.
    pub fn update(&self, key: &ObjKey, mut obj: Value, expected_rv: u64) -> Result<Arc<Value>, StoreError> {
        let mut inner = self.lock();
        let gr = (key.group.clone(), key.resource.clone());
        let nn = (key.namespace.clone(), key.name.clone());
        let old = inner.objects.get(&gr).and_then(|b| b.get(&nn)).cloned().ok_or(StoreError::NotFound)?;
        if meta::resource_version(&old) != expected_rv {
            return Err(StoreError::Conflict);
        }
        let rv = inner.rv + 1;
        inner.rv = rv;
        meta::set_meta(&mut obj, "resourceVersion", json!(rv.to_string()));
        let obj = Arc::new(obj);
        inner.objects.entry(gr).or_default().insert(nn, obj.clone());
        self.record(
            &mut inner,
            Event { rv, type_: EventType::Modified, key: key.clone(), object: obj.clone(), old: Some(old) },
        );
        Ok(obj)
    }

    /// Removes an object if its stored resourceVersion is still `expected_rv` (any when `None`).
    /// Returns its last state, stamped with the deletion's resourceVersion.
    pub fn delete(&self, key: &ObjKey, expected_rv: Option<u64>) -> Result<Arc<Value>, StoreError> {
        let mut inner = self.lock();
        let gr = (key.group.clone(), key.resource.clone());
        let nn = (key.namespace.clone(), key.name.clone());
        let old = inner.objects.get(&gr).and_then(|b| b.get(&nn)).cloned().ok_or(StoreError::NotFound)?;
        if expected_rv.is_some_and(|rv| rv != meta::resource_version(&old)) {
            return Err(StoreError::Conflict);
        }
        if let Some(bucket) = inner.objects.get_mut(&gr) {
            bucket.remove(&nn);
        }
        inner.uids.remove(meta::uid(&old));
        let rv = inner.rv + 1;
        inner.rv = rv;
        let mut last = (*old).clone();
        meta::set_meta(&mut last, "resourceVersion", json!(rv.to_string()));
        let last = Arc::new(last);
        self.record(
            &mut inner,
            Event { rv, type_: EventType::Deleted, key: key.clone(), object: last.clone(), old: Some(old) },
        );
        Ok(last)
    }

    fn record(&self, inner: &mut Inner, event: Event) {
        let event = Arc::new(event);
        inner.log.push_back(event.clone());
        while inner.log.len() > inner.history_limit {
            if let Some(ev) = inner.log.pop_front() {
                inner.oldest_resumable = ev.rv;
            }
        }
        // No receivers is fine: nobody is watching.
        let _ = self.tx.send(event);
    }

    /// Forgets the event history: watches resuming from any earlier resourceVersion get 410.
    pub fn compact(&self) {
        let mut inner = self.lock();
        inner.log.clear();
        inner.oldest_resumable = inner.rv;
    }

    /// Starts a watch on a resource. `Err(oldest)` when `from` is older than the retained history.
    pub fn watch(&self, group: &str, resource: &str, from: WatchFrom) -> Result<WatchStart, u64> {
        let inner = self.lock();
        let rx = self.tx.subscribe();
        let initial = match from {
            WatchFrom::Snapshot => inner
                .objects
                .get(&(group.to_string(), resource.to_string()))
                .map(|bucket| {
                    bucket
                        .iter()
                        .map(|((ns, n), obj)| {
                            Arc::new(Event {
                                rv: meta::resource_version(obj),
                                type_: EventType::Added,
                                key: ObjKey::new(group, resource, ns, n),
                                object: obj.clone(),
                                old: None,
                            })
                        })
                        .collect()
                })
                .unwrap_or_default(),
            WatchFrom::After(rv) => {
                if rv < inner.oldest_resumable {
                    return Err(inner.oldest_resumable);
                }
                inner
                    .log
                    .iter()
                    .filter(|e| e.rv > rv && e.key.group == group && e.key.resource == resource)
                    .cloned()
                    .collect()
            }
        };
        Ok(WatchStart { initial, rx, rv: inner.rv })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(name: &str) -> Value {
        json!({"metadata": {"name": name, "uid": format!("uid-{name}")}})
    }

    #[test]
    fn cas_and_history() {
        let store = Store::new(2);
        let k = ObjKey::new("", "configmaps", "default", "a");
        let a = store.create(&k, obj("a")).unwrap();
        assert_eq!(store.create(&k, obj("a")), Err(StoreError::AlreadyExists));
        let rv = meta::resource_version(&a);
        assert!(store.uid_exists("uid-a"));
        assert_eq!(store.update(&k, obj("a"), rv + 5), Err(StoreError::Conflict));
        let a2 = store.update(&k, obj("a"), rv).unwrap();
        assert!(meta::resource_version(&a2) > rv);
        let w = store.watch("", "configmaps", WatchFrom::After(rv)).unwrap();
        assert_eq!(w.initial.len(), 1);
        store.delete(&k, None).unwrap();
        assert!(!store.uid_exists("uid-a"));
        // History of 2: the create at `rv` is gone, resuming before it is 410.
        assert!(store.watch("", "configmaps", WatchFrom::After(rv - 1)).is_err());
        store.compact();
        assert!(store.watch("", "configmaps", WatchFrom::After(rv)).is_err());
        assert!(store.watch("", "configmaps", WatchFrom::After(store.current_rv())).is_ok());
    }
}
