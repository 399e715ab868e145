//! The writer against a fake API: a conflict is read again and retried, the owner walk goes
//! ReplicaSet → Deployment, a deletion is recorded once, a spread deleted meanwhile lets the pod
//! through unplaced.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::jiff::Timestamp;
use serde_json::json;

use super::*;

/// A fake API: one WorkloadSpread, a resourceVersion checked on every write, `conflicts`
/// conflicts forced before the first write lands, one ReplicaSet owned by Deployment `web`.
struct Fake {
    ws: Mutex<Option<WorkloadSpread>>,
    conflicts: AtomicUsize,
    writes: AtomicUsize,
    owner_reads: AtomicUsize,
}

impl Fake {
    fn new(ws: WorkloadSpread, conflicts: usize) -> Arc<Self> {
        Arc::new(Self {
            ws: Mutex::new(Some(ws)),
            conflicts: AtomicUsize::new(conflicts),
            writes: AtomicUsize::new(0),
            owner_reads: AtomicUsize::new(0),
        })
    }
    fn current(&self) -> WorkloadSpread {
        self.ws.lock().unwrap().clone().unwrap()
    }
    /// Someone else wrote the object (its resourceVersion moves on).
    fn bump(&self) {
        let mut guard = self.ws.lock().unwrap();
        let ws = guard.as_mut().unwrap();
        let rv: u64 = ws.metadata.resource_version.as_deref().unwrap().parse().unwrap();
        ws.metadata.resource_version = Some((rv + 1).to_string());
    }
}

impl SpreadStore for Fake {
    fn get<'a>(&'a self, _: &'a str, _: &'a str) -> StoreFuture<'a, Result<Option<WorkloadSpread>, String>> {
        Box::pin(async move { Ok(self.ws.lock().unwrap().clone()) })
    }
    fn replace_status<'a>(&'a self, ws: &'a WorkloadSpread) -> StoreFuture<'a, Result<WorkloadSpread, WriteError>> {
        Box::pin(async move {
            if self.conflicts.load(Ordering::SeqCst) > 0 {
                self.conflicts.fetch_sub(1, Ordering::SeqCst);
                self.bump();
                return Err(WriteError::Conflict("the object has been modified".into()));
            }
            let mut guard = self.ws.lock().unwrap();
            let Some(stored) = guard.as_mut() else { return Err(WriteError::NotFound) };
            if stored.metadata.resource_version != ws.metadata.resource_version {
                return Err(WriteError::Conflict("stale".into()));
            }
            let rv: u64 = stored.metadata.resource_version.as_deref().unwrap().parse().unwrap();
            stored.status = ws.status.clone();
            stored.metadata.resource_version = Some((rv + 1).to_string());
            self.writes.fetch_add(1, Ordering::SeqCst);
            Ok(stored.clone())
        })
    }
    fn controller_of<'a>(
        &'a self,
        _: &'a str,
        owner: &'a OwnerReference,
    ) -> StoreFuture<'a, Result<Option<OwnerReference>, Option<String>>> {
        Box::pin(async move {
            self.owner_reads.fetch_add(1, Ordering::SeqCst);
            match (owner.kind.as_str(), owner.name.as_str()) {
                ("ReplicaSet", "web-abc") => Ok(Some(reference("apps/v1", "Deployment", "web"))),
                ("ReplicaSet", _) => Err(None),
                _ => Ok(None),
            }
        })
    }
    fn workload_replicas<'a>(&'a self, _: &'a WorkloadSpread) -> StoreFuture<'a, Result<i32, String>> {
        Box::pin(async { Ok(10) })
    }
}

fn reference(api_version: &str, kind: &str, name: &str) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: name.into(),
        uid: "u".into(),
        controller: Some(true),
        ..Default::default()
    }
}

fn now() -> Time {
    Time(Timestamp::from_second(1_700_000_000).unwrap())
}

/// A spread over Deployment `web`: zone-a at most 2, zone-b the rest.
fn spread() -> WorkloadSpread {
    crate::compat::decode::from_value(&json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
        "metadata": {"name": "ws", "namespace": "default", "resourceVersion": "7"},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "subsets": [
                {"name": "zone-a", "maxReplicas": 2,
                 "requiredNodeSelectorTerm": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}},
                {"name": "zone-b"}]}}))
    .unwrap()
}

fn pod(name: &str, rs: &str) -> Pod {
    serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default",
        "labels": {"app": "web", "pod-template-hash": "abc"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": "r", "controller": true}]},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}))
    .unwrap()
}

fn check(fake: &Fake, name: &str, rs: &str) -> CreateCheck {
    CreateCheck { pod: pod(name, rs), candidates: vec![Arc::new(fake.current())] }
}

fn statuses(ws: &WorkloadSpread) -> Vec<(String, i32, Vec<String>, Vec<String>)> {
    ws.status.as_ref().unwrap().versioned_subset_statuses["abc"]
        .iter()
        .map(|s| {
            (
                s.name.clone(),
                s.missing_replicas,
                s.creating_pods.keys().cloned().collect(),
                s.deleting_pods.keys().cloned().collect(),
            )
        })
        .collect()
}

/// Pods of the Deployment's ReplicaSet fill zone-a up to 2, then go to zone-b; each zone-a pod
/// is recorded; zone-b (no limit) writes nothing.
#[tokio::test]
async fn fills_the_first_subset_then_the_rest() {
    let fake = Fake::new(spread(), 0);
    let spreads = Spreads::new(fake.clone());
    let mut placed = Vec::new();
    for i in 0..4 {
        // The view lags: every review starts from the copy before any write.
        let c = CreateCheck { pod: pod(&format!("p{i}"), "web-abc"), candidates: vec![Arc::new(spread())] };
        placed.push(spreads.place(&c, &now()).await.unwrap().unwrap().subset);
    }
    assert_eq!(placed, ["zone-a", "zone-a", "zone-b", "zone-b"]);
    assert_eq!(fake.writes.load(Ordering::SeqCst), 2);
    let ws = fake.current();
    assert_eq!(
        statuses(&ws),
        [("zone-a".into(), 0, vec!["p0".into(), "p1".into()], vec![]), ("zone-b".into(), -1, vec![], vec![])]
    );
}

/// A 409 is read again from the API and retried; the pod is recorded once.
#[tokio::test]
async fn conflicts_are_retried() {
    let fake = Fake::new(spread(), 2);
    let spreads = Spreads::with_retry_delay(fake.clone(), Duration::from_millis(1));
    let placement = spreads.place(&check(&fake, "p0", "web-abc"), &now()).await.unwrap().unwrap();
    assert_eq!(placement.subset, "zone-a");
    assert_eq!(fake.writes.load(Ordering::SeqCst), 1);
    assert_eq!(statuses(&fake.current())[0].1, 1);
}

/// More conflicts than attempts: the review fails with the API's message.
#[tokio::test]
async fn endless_conflicts_fail_the_review() {
    let fake = Fake::new(spread(), 100);
    let spreads = Spreads::with_retry_delay(fake.clone(), Duration::from_millis(1));
    let err = spreads.place(&check(&fake, "p0", "web-abc"), &now()).await.unwrap_err();
    assert!(err.contains("modified"), "{err}");
    assert_eq!(fake.writes.load(Ordering::SeqCst), 0);
}

/// A pod whose ReplicaSet belongs to another Deployment, or whose owner is gone, is not placed.
#[tokio::test]
async fn other_owners_are_not_placed() {
    let fake = Fake::new(spread(), 0);
    let spreads = Spreads::new(fake.clone());
    assert!(spreads.place(&check(&fake, "p0", "other-rs"), &now()).await.unwrap().is_none());
    let mut orphan = pod("p1", "web-abc");
    orphan.metadata.owner_references = None;
    let c = CreateCheck { pod: orphan, candidates: vec![Arc::new(fake.current())] };
    assert!(spreads.place(&c, &now()).await.unwrap().is_none());
    assert_eq!(fake.writes.load(Ordering::SeqCst), 0);
}

/// A delete of a placed pod releases its unit once (a second review finds it recorded); a
/// spread deleted meanwhile is no error.
#[tokio::test]
async fn deletion_is_recorded_once() {
    let fake = Fake::new(spread(), 0);
    let spreads = Spreads::new(fake.clone());
    spreads.place(&check(&fake, "p0", "web-abc"), &now()).await.unwrap();
    let mut placed = pod("p9", "web-abc");
    let injected = Injected { name: "ws".into(), subset: "zone-a".into(), uid: String::new() };
    placed.metadata.annotations =
        Some([(crate::core::workloadspread::MATCHED_ANNOTATION.to_string(), injected.to_annotation())].into());
    for _ in 0..2 {
        let c = DeleteCheck {
            pod: placed.clone(),
            injected: injected.clone(),
            op: Operation::Delete,
            ws: Some(Arc::new(fake.current())),
        };
        spreads.release(&c, &now()).await.unwrap();
    }
    assert_eq!(fake.writes.load(Ordering::SeqCst), 2);
    assert_eq!(statuses(&fake.current())[0], ("zone-a".into(), 2, vec!["p0".into()], vec!["p9".into()]));
    *fake.ws.lock().unwrap() = None;
    let c = DeleteCheck { pod: pod("p8", "web-abc"), injected, op: Operation::Eviction, ws: Some(Arc::new(spread())) };
    spreads.release(&c, &now()).await.unwrap();
}
