//! What a status writer in the webhook remembers per object (the PodUnavailableBudget and
//! WorkloadSpread writers): one lock per object, so one process writes an object's status one
//! review at a time, and the copy it last wrote, so the next review starts from the newer of that
//! and the view's copy (kruise's `tryToGetTheLatest...` without a refresh).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use kube::Resource;

/// An object's key: namespace and name.
pub type Key = (String, String);

/// The per-object locks and last written copies of one writer.
pub struct Written<T> {
    locks: Mutex<HashMap<Key, Arc<tokio::sync::Mutex<()>>>>,
    copies: Mutex<HashMap<Key, Arc<T>>>,
}

impl<T> Default for Written<T> {
    fn default() -> Self {
        Self { locks: Mutex::new(HashMap::new()), copies: Mutex::new(HashMap::new()) }
    }
}

impl<T: Resource> Written<T> {
    /// The lock of `key` (created on first use).
    pub fn lock_of(&self, key: &Key) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(locks.entry(key.clone()).or_default())
    }

    /// The newer of the view's copy and the last copy written here, by resourceVersion.
    pub fn newest(&self, key: &Key, viewed: &Arc<T>) -> Arc<T> {
        let written = self.copies.lock().unwrap_or_else(PoisonError::into_inner).get(key).cloned();
        let version = |o: &T| o.meta().resource_version.as_deref().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        match written {
            Some(w) if version(&w) >= version(viewed) => w,
            _ => Arc::clone(viewed),
        }
    }

    /// Remembers `written` as the last copy of `key` written here.
    pub fn remember(&self, key: Key, written: T) {
        self.copies.lock().unwrap_or_else(PoisonError::into_inner).insert(key, Arc::new(written));
    }
}
