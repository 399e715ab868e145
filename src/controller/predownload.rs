//! The act half of image pre-download (spec §7) shared by the CloneSet and Advanced StatefulSet
//! controllers: whether it is enabled at all (spec §7.1 — the gates, then one discovery, the
//! first time a round needs it, for the ImagePullJob kind; kruise's `DiscoverGVK` at start), the
//! ImagePullJobs of a namespace when a completed rollout needs them listed, and the plan's writes
//! sent one by one with the `CreatedImagePullJob` / `FailedCreateImagePullJob` Events. A failed
//! write is logged and the next one is sent, as kruise goes on; none fails the round. With the
//! gates off a controller holds no [`PreDownload`] and makes none of these calls.
//!
//! Jobs are read and written at `apps.kruise.io/v1beta1`, the CRD's storage version, as kruise
//! v1.9 writes them (v1.8 wrote v1alpha1): no conversion webhook is on the path, so a manager
//! whose `/convert` is not reachable yet still pre-downloads. The planner works on the v1alpha1
//! model; the two versions have one shape.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{Api, ListParams};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::OnceCell;

use super::act::Actor;
use super::apply::{Applier, Outcome};
use crate::apis::imagepulljob::ImagePullJob;
use crate::apis::imagepulljob::v1beta1::ImagePullJob as ImagePullJobV1beta1;
use crate::compat::selector::to_selector_string;
use crate::core::features::FeatureGates;
use crate::core::predownload::writes::{created_message, failed_message};
use crate::core::predownload::{EVENT_CREATED, EVENT_FAILED, Round, gates_enabled};
use crate::core::rollout::actions::{Action, Write};
use crate::core::rollout::plan::Event;

/// The v1beta1 form of a job (the two versions have one shape: only `apiVersion` differs).
pub fn to_v1beta1(job: &ImagePullJob) -> Result<ImagePullJobV1beta1, serde_json::Error> {
    let mut v = serde_json::to_value(job)?;
    v["apiVersion"] = "apps.kruise.io/v1beta1".into();
    serde_json::from_value(v)
}

/// The v1alpha1 form of a v1beta1 job.
pub fn from_v1beta1(job: &ImagePullJobV1beta1) -> Result<ImagePullJob, serde_json::Error> {
    let mut v = serde_json::to_value(job)?;
    v["apiVersion"] = "apps.kruise.io/v1alpha1".into();
    serde_json::from_value(v)
}

/// Pre-download for one controller, held only when its gates are on.
pub struct PreDownload {
    client: Client,
    /// Whether apps.kruise.io/v1beta1 serves `imagepulljobs` (asked once).
    served: OnceCell<bool>,
    /// Workload uid -> the completed revision whose listing found none of its jobs left: a
    /// settled workload is not listed again every round (kruise lists every reconcile). An
    /// entry outlives its workload: one pair of short strings per workload ever settled.
    settled: Mutex<HashMap<String, String>>,
}

impl PreDownload {
    /// `Some` when the gates are on (spec §7.1).
    pub fn for_gates(client: &Client, gates: &FeatureGates) -> Option<Self> {
        gates_enabled(gates).then(|| PreDownload {
            client: client.clone(),
            served: OnceCell::new(),
            settled: Mutex::default(),
        })
    }

    /// `Some` when the Advanced DaemonSet's gates are on (`KruiseDaemon`,
    /// `PreDownloadImageForDaemonSetUpdate`).
    pub fn for_daemonset_gates(client: &Client, gates: &FeatureGates) -> Option<Self> {
        crate::core::rollout::daemonset::predownload::gates_enabled(gates).then(|| PreDownload {
            client: client.clone(),
            served: OnceCell::new(),
            settled: Mutex::default(),
        })
    }

    /// Whether the ImagePullJob kind is served; asked of the API server once, with kruise's
    /// `DiscoverGVK` retries ([`super::discovery`]): a kind not listed disables pre-download
    /// until a restart (spec §7.1; every round then returns before any other call), an API
    /// server that never answered counts as serving it.
    pub async fn served(&self) -> bool {
        *self
            .served
            .get_or_init(|| async {
                let found = super::discovery::served(&self.client, "apps.kruise.io/v1beta1", &["ImagePullJob"]).await;
                if !found {
                    tracing::warn!("ImagePullJob is not served: image pre-download is disabled");
                }
                found
            })
            .await
    }

    /// Whether the workload `uid`, complete at `revision`, was found without jobs already.
    pub fn is_settled(&self, uid: &str, revision: &str) -> bool {
        self.settled.lock().map(|m| m.get(uid).is_some_and(|r| r == revision)).unwrap_or(false)
    }

    /// Records that the workload `uid`, complete at `revision`, has no jobs left.
    pub fn mark_settled(&self, uid: &str, revision: &str) {
        if let Ok(mut m) = self.settled.lock() {
            m.insert(uid.to_string(), revision.to_string());
        }
    }

    /// The ImagePullJobs of `namespace` carrying the workload's selector labels (the jobs copy
    /// the template's labels, which the selector matches, so the owner's jobs are all among them).
    pub async fn jobs(
        &self,
        namespace: &str,
        selector: Option<&LabelSelector>,
    ) -> Result<Vec<ImagePullJob>, kube::Error> {
        let api: Api<ImagePullJobV1beta1> = Api::namespaced(self.client.clone(), namespace);
        let mut lp = ListParams::default();
        if let Some(s) = selector.and_then(|s| to_selector_string(s).ok()).filter(|s| !s.is_empty()) {
            lp = lp.labels(&s);
        }
        let items = api.list(&lp).await?.items;
        items.iter().map(from_v1beta1).collect::<Result<_, _>>().map_err(kube::Error::SerdeError)
    }

    /// Sends `actions`' writes in order, each on its own; records the creation Events on
    /// `reference`.
    /// One round of a workload: lists its namespace's jobs when the rollout is complete (and the
    /// workload was not found settled at that revision), plans with `plan_round` and sends the
    /// writes.
    #[allow(clippy::too_many_arguments)]
    pub async fn round<W>(
        &self,
        actor: &Actor,
        workloads: Api<W>,
        workload: &W,
        selector: Option<&LabelSelector>,
        current: &str,
        update: &str,
        plan_round: impl FnOnce(&[&ImagePullJob]) -> Round,
    ) where
        W: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug,
    {
        self.round_when(actor, workloads, workload, selector, current == update, update, plan_round).await;
    }

    /// [`Self::round`] for a kind that decides itself whether its rollout to `update` is
    /// `complete` (the Advanced DaemonSet reads its status).
    #[allow(clippy::too_many_arguments)]
    pub async fn round_when<W>(
        &self,
        actor: &Actor,
        workloads: Api<W>,
        workload: &W,
        selector: Option<&LabelSelector>,
        complete: bool,
        update: &str,
        plan_round: impl FnOnce(&[&ImagePullJob]) -> Round,
    ) where
        W: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug,
    {
        if !self.served().await {
            return;
        }
        let meta = workload.meta();
        let (uid, ns) = (meta.uid.clone().unwrap_or_default(), meta.namespace.clone().unwrap_or_default());
        if complete && self.is_settled(&uid, update) {
            return;
        }
        let listed = if complete {
            match self.jobs(&ns, selector).await {
                Ok(jobs) => jobs,
                Err(e) => {
                    tracing::warn!("cannot list the ImagePullJobs of {ns}: {e}");
                    return;
                }
            }
        } else {
            Vec::new()
        };
        let jobs: Vec<&ImagePullJob> = listed.iter().collect();
        let round = plan_round(&jobs);
        for e in &round.plan.errors {
            tracing::warn!("pre-download: {e}");
        }
        tracing::debug!(reason = %round.plan.reason, actions = round.actions.len(), "pre-download");
        if complete && round.actions.is_empty() {
            self.mark_settled(&uid, update);
        }
        self.apply(actor, &ns, workloads, &workload.object_ref(&()), &round.actions).await;
    }

    /// Sends `actions`' writes in order, each on its own; records the creation Events on
    /// `reference`.
    pub async fn apply<W>(
        &self,
        actor: &Actor,
        namespace: &str,
        workloads: Api<W>,
        reference: &ObjectReference,
        actions: &[Action],
    ) where
        W: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug,
    {
        if actions.is_empty() {
            return;
        }
        let mut applier = Applier::new(self.client.clone(), namespace, workloads);
        let mut events = Vec::new();
        for write in actions.iter().flat_map(|a| &a.writes) {
            let result = applier.apply(write).await;
            match (write, result) {
                (Write::CreateImagePullJob { job }, Ok(Outcome::Done { .. })) => {
                    let name = job.metadata.name.clone().unwrap_or_default();
                    events.push(Event::normal(EVENT_CREATED, created_message(&name, &job.spec.image)));
                }
                (Write::CreateImagePullJob { job }, Err(e)) => {
                    let name = job.metadata.name.clone().unwrap_or_default();
                    tracing::warn!("{e}");
                    events.push(Event::normal(EVENT_FAILED, failed_message(&name, &e.source.to_string())));
                }
                (_, Err(e)) => tracing::warn!("pre-download: {e}"),
                (_, Ok(_)) => {}
            }
        }
        actor.publish(reference, &events).await;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::apis::cloneset::CloneSet;
    use crate::core::features::Gate;
    use bytes::Bytes;
    use http_body_util::Full;
    use serde_json::json;
    use std::sync::Arc;

    /// A fake API server that records every request and lists apps.kruise.io/v1beta1 without
    /// ImagePullJob (its CRD is not installed).
    fn fake(seen: Arc<Mutex<Vec<String>>>) -> Client {
        let svc = tower::service_fn(move |req: axum::http::Request<kube::client::Body>| {
            let seen = Arc::clone(&seen);
            async move {
                seen.lock().unwrap().push(format!("{} {}", req.method(), req.uri().path()));
                let body = json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps.kruise.io/v1beta1",
                    "resources": [{"name": "statefulsets", "singularName": "", "namespaced": true,
                        "kind": "StatefulSet", "verbs": ["get"]}]});
                let response = axum::http::Response::builder()
                    .status(200)
                    .header("content-type", "application/json")
                    .body(Full::new(Bytes::from(body.to_string())))
                    .unwrap();
                Ok::<_, std::convert::Infallible>(response)
            }
        });
        Client::new(svc, "default")
    }

    /// Spec §7.1: without the ImagePullJob CRD a round with the gates on returns after the
    /// discovery (asked once per process), planning and writing nothing.
    #[tokio::test(start_paused = true)]
    async fn without_the_image_pull_job_kind_a_round_skips_cleanly() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let client = fake(Arc::clone(&seen));
        let gates = FeatureGates::default().with(Gate::PreDownloadImageForInPlaceUpdate, true);
        let pd = PreDownload::for_gates(&client, &gates).unwrap();
        let settings = super::super::Settings::default();
        let actor = super::super::actor_for("cloneset", &client, &settings, &crate::metrics::Metrics::default());
        let cs: CloneSet = serde_json::from_value(json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": "web", "namespace": "ns", "uid": "u"},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}}}}))
        .unwrap();
        let api: Api<CloneSet> = Api::namespaced(client.clone(), "ns");
        for (current, update) in [("r1", "r2"), ("r2", "r2")] {
            let mut planned = false;
            pd.round(&actor, api.clone(), &cs, None, current, update, |_| {
                planned = true;
                Round::default()
            })
            .await;
            assert!(!planned, "nothing planned for {current} -> {update}");
        }
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 4, "kruise's four discovery tries, once: {seen:?}");
        assert!(seen.iter().all(|r| r == "GET /apis/apps.kruise.io/v1beta1"), "{seen:?}");
    }
}
