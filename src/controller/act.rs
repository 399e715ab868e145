//! The act half of every workload reconciler (issue 26 item 5): the expectations gate before a
//! round is planned, the plan's writes sent as planned with their expectations recorded, the
//! planned status write, and the plan's Events. Nothing here decides what to write.
//!
//! - **Expectations** (spec §5.1 items 2 and 7): every pod and PVC a controller creates or
//!   deletes is remembered until the cache shows it, and every object it patches until the cache
//!   has the version the write returned; until then [`Actor::gate`] asks the runner to look again
//!   shortly instead of planning, so a stale or delayed cache can never double a pod or delete one
//!   too many. With `ForceDeleteTimeoutExpectationGate`, scale expectations past the expectation
//!   timeout are dropped (kruise's `cloneset_scale_expectation_leakage` counts them).
//! - **Writes** go in the plan's order ([`waves`]): actions on different pods side by side (at
//!   most `writes_in_flight`), one pod's writes in order and coalesced; the first failure ends
//!   the round (the runner backs off). A revision hash collision ends the round with the planned
//!   collision-count status write.
//! - **Events** are published on the workload as the plan names them.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ObjectReference, PersistentVolumeClaim, Pod};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::runtime::events::{Event as KubeEvent, EventType as KubeEventType, Recorder, Reporter};
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::ReconcileError;
use super::apply::{Applier, Outcome, Wave, waves};
use crate::core::expectations::{
    Expectations, FORCED_EXPECTATION_REQUEUE, OnLag, ScaleAction, cache_lag, on_lag, scale_name,
};
use crate::core::rollout::actions::{Action, Write, coalesce};
use crate::core::rollout::plan::{Event, EventType};
use crate::metrics::{ControllerWriteLabels, Metrics, WorkloadLabels};

/// How soon a workload whose cache is behind (expectations pending) is looked at again; the watch
/// event that settles them usually comes first.
pub const EXPECTATION_RECHECK: Duration = Duration::from_millis(500);

/// What the act half is configured with.
#[derive(Clone, Debug)]
pub struct ActSettings {
    /// Writes sent side by side (to different pods).
    pub writes_in_flight: usize,
    /// How long a created or deleted object may stay unseen before a warning.
    pub expectation_timeout: Duration,
    /// `ForceDeleteTimeoutExpectationGate`.
    pub force_expectation_timeout: bool,
}

/// One controller's act half: its expectations, Event recorder and write metrics.
pub struct Actor {
    controller: &'static str,
    client: Client,
    settings: ActSettings,
    expectations: Mutex<Expectations>,
    recorder: Recorder,
    metrics: Metrics,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A plan's writes, as the act half sends them.
pub struct PlannedWrites<'a> {
    /// The actions, in plan order.
    pub actions: &'a [Action],
    /// The status write, after the actions.
    pub status: Option<&'a Write>,
    /// The status write that records a revision hash collision, given the collision count to
    /// record.
    pub on_collision: &'a (dyn Fn(i32) -> Option<Write> + Sync),
}

impl Actor {
    /// The act half of `controller`; Events are reported as `kruise-manager` from `instance`.
    pub fn new(
        controller: &'static str,
        client: Client,
        settings: ActSettings,
        metrics: Metrics,
        instance: Option<String>,
    ) -> Self {
        let reporter = Reporter { controller: "kruise-manager".into(), instance };
        Actor {
            controller,
            recorder: Recorder::new(client.clone(), reporter),
            client,
            settings,
            expectations: Mutex::new(Expectations::default()),
            metrics,
        }
    }

    /// The client the writes go through.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Forgets what was expected of a workload that is gone.
    pub fn forget(&self, key: &str) {
        lock(&self.expectations).delete_scale(key);
    }

    /// The expectations gate: `Some(delay)` when the cache has not shown this controller's own
    /// writes for the workload `key` (uid `uid`, observed at `resource_version`) yet, and the
    /// round must not be planned.
    pub fn gate(
        &self,
        key: &str,
        uid: &str,
        resource_version: &str,
        pods: &[&Pod],
        pvcs: &[&PersistentVolumeClaim],
    ) -> Option<Duration> {
        let lag = cache_lag(&mut lock(&self.expectations), key, uid, resource_version, pods, pvcs, Timestamp::now())?;
        let waited = Duration::try_from(lag.waited).unwrap_or_default();
        let timeout = SignedDuration::try_from(self.settings.expectation_timeout).unwrap_or(SignedDuration::MAX);
        let decision = on_lag(&lag, timeout, self.settings.force_expectation_timeout);
        if decision != OnLag::Wait && lag.scale {
            let (namespace, name) = key.split_once('/').unwrap_or(("", key));
            let labels = WorkloadLabels { namespace: namespace.into(), name: name.into() };
            self.metrics.scale_expectation_leakage.get_or_create(&labels).inc();
        }
        match decision {
            OnLag::Wait => tracing::debug!(?waited, "waiting for the cache to show {}", lag.waiting_for),
            OnLag::Overdue => tracing::warn!(
                ?waited,
                "the cache has not shown {} for longer than the expectation timeout",
                lag.waiting_for
            ),
            OnLag::ForgetScale => {
                tracing::warn!(
                    ?waited,
                    "the cache has not shown {} for longer than the expectation timeout: \
                     ForceDeleteTimeoutExpectationGate drops the scale expectations",
                    lag.waiting_for
                );
                lock(&self.expectations).delete_scale(key);
                return Some(Duration::try_from(FORCED_EXPECTATION_REQUEUE).unwrap_or(EXPECTATION_RECHECK));
            }
        }
        Some(EXPECTATION_RECHECK)
    }

    /// Sends a plan's writes for the workload `key` in namespace `namespace` (empty for a
    /// cluster-scoped workload); `Some(delay)` when the round ended early (a revision hash
    /// collision was recorded) and the workload must be looked at again after `delay`.
    pub async fn apply<W>(
        &self,
        key: &str,
        namespace: &str,
        workloads: kube::Api<W>,
        planned: PlannedWrites<'_>,
    ) -> Result<Option<Duration>, ReconcileError>
    where
        W: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
    {
        let mut applier = Applier::new(self.client.clone(), namespace, workloads.clone());
        for wave in waves(planned.actions) {
            match wave {
                Wave::Alone(action) => {
                    log_action(action);
                    for write in &action.writes {
                        if let Outcome::Collision { collision_count } = self.write(key, &mut applier, write).await? {
                            tracing::info!(collision_count, "revision hash collision: raising status.collisionCount");
                            if let Some(w) = (planned.on_collision)(collision_count) {
                                self.write(key, &mut applier, &w).await?;
                            }
                            return Ok(Some(Duration::ZERO));
                        }
                    }
                }
                Wave::Together(groups) => {
                    // Each pod's actions in order on an applier of its own; pods side by side.
                    // Every write is pinned or preconditioned, so a failure of one pod harms no
                    // other; the wave ends before its error is returned.
                    let sends: Vec<_> = groups
                        .into_iter()
                        .map(|group| {
                            let workloads = workloads.clone();
                            async move {
                                let mut own = Applier::new(self.client.clone(), namespace, workloads);
                                group.iter().for_each(|action| log_action(action));
                                for write in coalesce(group.iter().flat_map(|action| &action.writes)) {
                                    self.write(key, &mut own, &write).await?;
                                }
                                Ok::<(), ReconcileError>(())
                            }
                        })
                        .collect();
                    let results: Vec<Result<(), ReconcileError>> = futures::stream::iter(sends)
                        .buffer_unordered(self.settings.writes_in_flight.max(1))
                        .collect()
                        .await;
                    if let Some(Err(e)) = results.into_iter().find(Result::is_err) {
                        return Err(e);
                    }
                }
            }
        }
        if let Some(status) = planned.status {
            self.write(key, &mut applier, status).await?;
        }
        Ok(None)
    }

    /// One write with its expectations: creations and deletions are expected before the call (and
    /// forgotten when it fails), patched objects' returned versions after it.
    async fn write<W>(&self, key: &str, applier: &mut Applier<W>, write: &Write) -> Result<Outcome, ReconcileError>
    where
        W: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
    {
        let scale = match write {
            Write::CreatePod { pod } => Some((ScaleAction::Create, scale_name("pod", &pod.name_any()))),
            Write::CreatePvc { pvc } => Some((ScaleAction::Create, scale_name("pvc", &pvc.name_any()))),
            Write::DeletePod { name, .. } => Some((ScaleAction::Delete, scale_name("pod", name))),
            Write::DeletePvc { name, .. } => Some((ScaleAction::Delete, scale_name("pvc", name))),
            _ => None,
        };
        if let Some((a, n)) = &scale {
            lock(&self.expectations).expect_scale(key, *a, n);
        }
        let outcome = applier.apply(write).await;
        let labels = ControllerWriteLabels { controller: self.controller.into(), write: write.kind().into() };
        self.metrics.controller_writes.get_or_create(&labels).inc();
        let mut exp = lock(&self.expectations);
        match (&outcome, &scale) {
            // Nothing will show up (or go away) in the cache for a failed call, nor for a PVC that
            // was there already.
            (Err(_), Some((a, n))) | (Ok(Outcome::Exists), Some((a, n))) => exp.observe_scale(key, *a, n),
            _ => {}
        }
        match (&outcome, write) {
            (
                Ok(Outcome::Done { uid: Some(uid), resource_version: Some(rv) }),
                Write::PatchPod { .. }
                | Write::PatchPodStatus { .. }
                | Write::PatchPodResize { .. }
                | Write::PatchWorkload { .. }
                | Write::PatchWorkloadStatus { .. },
            ) => exp.expect_version(uid, rv),
            (Ok(Outcome::Done { uid: Some(uid), .. }), Write::DeletePod { .. }) => exp.delete_version(uid),
            _ => {}
        }
        Ok(outcome?)
    }

    /// Publishes the plan's Events on the workload.
    pub async fn publish(&self, reference: &ObjectReference, events: &[Event]) {
        for e in events {
            let event = KubeEvent {
                type_: match e.type_ {
                    EventType::Normal => KubeEventType::Normal,
                    EventType::Warning => KubeEventType::Warning,
                },
                reason: e.reason.into(),
                note: Some(e.message.clone()),
                action: e.reason.into(),
                secondary: None,
            };
            if let Err(err) = self.recorder.publish(&event, reference).await {
                tracing::debug!("cannot record Event {}: {err}", e.reason);
            }
        }
    }
}

fn log_action(action: &Action) {
    tracing::debug!(action = ?action.kind, pod = action.pod.as_deref().unwrap_or(""), revision = %action.revision, "{}", action.reason);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::SidecarSet;
    use crate::core::rollout::actions::{ActionKind, Pin};
    use bytes::Bytes;
    use http_body_util::{BodyExt, Full};
    use json_patch::jsonptr::PointerBuf;
    use json_patch::{Patch, PatchOperation, ReplaceOperation};
    use serde_json::{Value, json};
    use std::sync::Arc;

    type Seen = Arc<Mutex<Vec<(String, String, Value)>>>;

    /// A fake API server: records every request (method, path, JSON body) and answers with the
    /// object a real one would return.
    fn fake_api(seen: Seen) -> Client {
        let svc = tower::service_fn(move |req: axum::http::Request<kube::client::Body>| {
            let seen = Arc::clone(&seen);
            async move {
                let (parts, body) = req.into_parts();
                let bytes = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                let path = parts.uri.path().to_string();
                seen.lock().unwrap().push((parts.method.to_string(), path.clone(), body.clone()));
                let answer = if path.ends_with("/status") {
                    json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet",
                        "metadata": {"name": "logs", "uid": "u1", "resourceVersion": "8"}, "spec": {}})
                } else if path.ends_with("/pods") {
                    let mut pod = body.clone();
                    pod["metadata"]["uid"] = json!("pod-uid");
                    pod["metadata"]["resourceVersion"] = json!("9");
                    pod
                } else {
                    body.clone()
                };
                let response = axum::http::Response::builder()
                    .status(if parts.method == axum::http::Method::POST { 201 } else { 200 })
                    .header("content-type", "application/json")
                    .body(Full::new(Bytes::from(answer.to_string())))
                    .unwrap();
                Ok::<_, std::convert::Infallible>(response)
            }
        });
        Client::new(svc, "default")
    }

    #[tokio::test]
    async fn a_cluster_scoped_workload_gets_its_writes_status_and_events_and_the_gate_waits_for_them() {
        let seen: Seen = Arc::default();
        let client = fake_api(Arc::clone(&seen));
        let settings = ActSettings {
            writes_in_flight: 1,
            expectation_timeout: Duration::from_secs(300),
            force_expectation_timeout: false,
        };
        let metrics = Metrics::new();
        let actor = Actor::new("sidecarset", client.clone(), settings, metrics.clone(), Some("replica-a".into()));
        let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "logs-a", "namespace": "apps"}})).unwrap();
        let create = Action::new(
            ActionKind::Create,
            None,
            "logs-1",
            "test".into(),
            vec![Write::CreatePod { pod: Box::new(pod.clone()) }],
        );
        let status = Write::PatchWorkloadStatus {
            name: "logs".into(),
            pin: Pin::Observed("7".into()),
            patch: Patch(vec![PatchOperation::Replace(ReplaceOperation {
                path: PointerBuf::from_tokens(["status", "matchedPods"]),
                value: json!(3),
            })]),
        };
        let planned =
            PlannedWrites { actions: std::slice::from_ref(&create), status: Some(&status), on_collision: &|_| None };
        let again = actor.apply::<SidecarSet>("/logs", "apps", kube::Api::all(client.clone()), planned).await.unwrap();
        assert_eq!(again, None);
        {
            let seen = seen.lock().unwrap();
            assert_eq!((seen[0].0.as_str(), seen[0].1.as_str()), ("POST", "/api/v1/namespaces/apps/pods"));
            let (method, path, body) = &seen[1];
            assert_eq!(
                (method.as_str(), path.as_str()),
                ("PATCH", "/apis/apps.kruise.io/v1alpha1/sidecarsets/logs/status"),
                "a cluster-scoped parent's status has no namespace in its path"
            );
            assert_eq!(body[0], json!({"op": "replace", "path": "/metadata/resourceVersion", "value": "7"}), "pinned");
            assert_eq!(body[1]["path"], "/status/matchedPods");
        }
        // The gate holds the next round until the cache shows the new pod and the status write.
        assert!(actor.gate("/logs", "u1", "8", &[], &[]).is_some(), "the created pod is not cached yet");
        let mut cached = pod.clone();
        cached.metadata.uid = Some("pod-uid".into());
        cached.metadata.resource_version = Some("9".into());
        assert!(actor.gate("/logs", "u1", "7", &[&cached], &[]).is_some(), "the workload's status write is not cached");
        assert_eq!(actor.gate("/logs", "u1", "8", &[&cached], &[]), None);
        let writes = metrics.encode();
        for line in [
            "kruise_controller_api_writes_total{controller=\"sidecarset\",write=\"create_pod\"} 1",
            "kruise_controller_api_writes_total{controller=\"sidecarset\",write=\"workload_status\"} 1",
        ] {
            assert!(writes.lines().any(|l| l == line), "{line} not in\n{writes}");
        }

        // Events go to the events API with kruise's reason and type.
        let reference = ObjectReference {
            api_version: Some("apps.kruise.io/v1alpha1".into()),
            kind: Some("SidecarSet".into()),
            name: Some("logs".into()),
            uid: Some("u1".into()),
            ..Default::default()
        };
        actor.publish(&reference, &[Event::warning("UpdateImmutableField", "sidecar env changed".into())]).await;
        let seen = seen.lock().unwrap();
        let (method, path, body) = seen.last().unwrap();
        assert_eq!((method.as_str(), path.as_str()), ("POST", "/apis/events.k8s.io/v1/namespaces/default/events"));
        assert_eq!((body["reason"].as_str(), body["type"].as_str()), (Some("UpdateImmutableField"), Some("Warning")));
        assert_eq!(body["note"], "sidecar env changed");
        assert_eq!(body["regarding"]["name"], "logs");
    }
}
