//! The one place where a plan's [`Write`]s become API calls, for every workload controller: a
//! write is sent exactly as the planner built it, and the outcome says what the API server did so
//! the reconciler can record expectations. Nothing here decides anything.
//!
//! - pinned patches go out as JSON patches whose first op replaces `metadata.resourceVersion`
//!   ([`Write::request_patch`]): an object that changed since it was observed answers 409 and the
//!   next round decides again; [`Pin::Latest`] follows this round's own previous write to the same
//!   object;
//! - deletes carry the observed uid and resourceVersion as preconditions; a 404 means the object
//!   is gone already;
//! - a ControllerRevision is created with the planner's data bytes, not a re-encoding, so its name
//!   (a hash of those bytes) stays right; AlreadyExists with the same data is that revision, with
//!   other data a hash collision (spec §5.8).
//!
//! [`Pin::Latest`]: crate::core::rollout::actions::Pin::Latest

use std::collections::HashMap;
use std::fmt::Debug;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::apis::imagepulljob::v1beta1::ImagePullJob as ImagePullJobV1beta1;
use crate::core::history;
use crate::core::rollout::actions::{Action, ActionKind, Write};

/// The field manager of the controllers' writes.
pub const FIELD_MANAGER: &str = "kruise-manager";

/// What the API server did with one write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The object was created, patched or deleted; `uid` and `resource_version` are those of the
    /// object the server returned (absent for deletions).
    Done { uid: Option<String>, resource_version: Option<String> },
    /// A PVC or revision that exists already with the intended content: nothing to do.
    Exists,
    /// The object was gone already (a delete or patch answered 404).
    Gone,
    /// A revision of that name holds other data: raise `status.collisionCount` to this.
    Collision { collision_count: i32 },
}

/// Why a write failed.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {source}")]
pub struct WriteError {
    /// The call, e.g. `create pod ns/web-abcde`.
    pub what: String,
    #[source]
    pub source: kube::Error,
}

impl WriteError {
    /// The API status code, when the server answered.
    pub fn code(&self) -> Option<u16> {
        match &self.source {
            kube::Error::Api(s) => Some(s.code),
            _ => None,
        }
    }

    /// A 409: the object changed since it was observed, or a precondition failed.
    pub fn is_conflict(&self) -> bool {
        self.code() == Some(409)
    }
}

fn api_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

fn already_exists(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.is_already_exists())
}

/// Sends the writes of one round in one namespace; `W` is the workload kind.
pub struct Applier<W> {
    client: Client,
    namespace: String,
    pods: Api<Pod>,
    pvcs: Api<PersistentVolumeClaim>,
    revisions: Api<ControllerRevision>,
    workloads: Api<W>,
    /// resourceVersions this round's writes returned, by `kind/name`.
    latest: HashMap<String, String>,
    /// Writes sent (for the benchmark's writes-per-pod figure and the reconcile log).
    pub sent: u64,
}

fn meta_of<K: Resource>(o: &K) -> Outcome {
    Outcome::Done { uid: o.meta().uid.clone(), resource_version: o.meta().resource_version.clone() }
}

impl<W> Applier<W>
where
    W: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug,
{
    /// An applier for one round of the workloads of `workloads` (namespaced, or cluster-scoped
    /// as a SidecarSet is), writing pods, PVCs and revisions in `namespace` (the manager
    /// namespace's revisions for a cluster-scoped workload).
    pub fn new(client: Client, namespace: &str, workloads: Api<W>) -> Self {
        Applier {
            pods: Api::namespaced(client.clone(), namespace),
            pvcs: Api::namespaced(client.clone(), namespace),
            revisions: Api::namespaced(client.clone(), namespace),
            workloads,
            client,
            namespace: namespace.to_string(),
            latest: HashMap::new(),
            sent: 0,
        }
    }

    fn what(&self, verb: &str, kind: &str, name: &str) -> String {
        format!("{verb} {kind} {}/{name}", self.namespace)
    }

    /// The resourceVersion a [`crate::core::rollout::actions::Pin::Latest`] patch of `kind/name` must find.
    fn latest_for(&self, kind: &str, name: &str) -> &str {
        self.latest.get(&format!("{kind}/{name}")).map(String::as_str).unwrap_or("")
    }

    fn remember<K: Resource>(&mut self, kind: &str, name: &str, o: &K) {
        if let Some(rv) = &o.meta().resource_version {
            self.latest.insert(format!("{kind}/{name}"), rv.clone());
        }
    }

    /// Sends one write.
    pub async fn apply(&mut self, write: &Write) -> Result<Outcome, WriteError> {
        self.sent += 1;
        let pp = PostParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
        let patch_params = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
        match write {
            Write::CreatePod { pod } => {
                let name = pod.metadata.name.clone().unwrap_or_default();
                let what = self.what("create", "pod", &name);
                let created = self.pods.create(&pp, pod).await.map_err(|source| WriteError { what, source })?;
                self.remember("pod", &name, &created);
                Ok(meta_of(&created))
            }
            Write::CreatePvc { pvc } => {
                let name = pvc.metadata.name.clone().unwrap_or_default();
                match self.pvcs.create(&pp, pvc).await {
                    Ok(created) => Ok(meta_of(&created)),
                    // A PVC kept from an earlier pod of this instance id: it is reused.
                    Err(e) if already_exists(&e) => Ok(Outcome::Exists),
                    Err(source) => Err(WriteError { what: self.what("create", "pvc", &name), source }),
                }
            }
            Write::DeletePod { name, uid, resource_version } => {
                let what = self.what("delete", "pod", name);
                delete(&self.pods, name, uid, resource_version).await.map_err(|source| WriteError { what, source })
            }
            Write::DeletePvc { name, uid, resource_version } => {
                let what = self.what("delete", "pvc", name);
                delete(&self.pvcs, name, uid, resource_version).await.map_err(|source| WriteError { what, source })
            }
            Write::DeleteRevision { name, uid, resource_version } => {
                let what = self.what("delete", "controllerrevision", name);
                delete(&self.revisions, name, uid, resource_version).await.map_err(|source| WriteError { what, source })
            }
            Write::PatchPod { name, .. } | Write::PatchPodStatus { name, .. } | Write::PatchPodResize { name, .. } => {
                let subresource = match write {
                    Write::PatchPodStatus { .. } => Some("status"),
                    Write::PatchPodResize { .. } => Some("resize"),
                    _ => None,
                };
                let patch = Patch::Json::<()>(write.request_patch(self.latest_for("pod", name)).unwrap_or_default());
                let what = self.what(
                    &format!("patch{}", subresource.map(|s| format!(" {s} of")).unwrap_or_default()),
                    "pod",
                    name,
                );
                let result = match subresource {
                    Some(s) => self.pods.patch_subresource(s, name, &patch_params, &patch).await,
                    None => self.pods.patch(name, &patch_params, &patch).await,
                };
                let patched = result.map_err(|source| WriteError { what, source })?;
                self.remember("pod", name, &patched);
                Ok(meta_of(&patched))
            }
            Write::PatchPvc { name, .. } => {
                let patch = Patch::Json::<()>(write.request_patch(self.latest_for("pvc", name)).unwrap_or_default());
                let what = self.what("patch", "pvc", name);
                let patched =
                    self.pvcs.patch(name, &patch_params, &patch).await.map_err(|source| WriteError { what, source })?;
                self.remember("pvc", name, &patched);
                Ok(meta_of(&patched))
            }
            Write::PatchRevision { name, .. } => {
                let patch = Patch::Json::<()>(
                    write.request_patch(self.latest_for("controllerrevision", name)).unwrap_or_default(),
                );
                let what = self.what("patch", "controllerrevision", name);
                let patched = self
                    .revisions
                    .patch(name, &patch_params, &patch)
                    .await
                    .map_err(|source| WriteError { what, source })?;
                self.remember("controllerrevision", name, &patched);
                Ok(meta_of(&patched))
            }
            Write::PatchWorkload { name, .. } | Write::PatchWorkloadStatus { name, .. } => {
                let patch =
                    Patch::Json::<()>(write.request_patch(self.latest_for("workload", name)).unwrap_or_default());
                let status = matches!(write, Write::PatchWorkloadStatus { .. });
                let what = self.what(if status { "patch status of" } else { "patch" }, W::kind(&()).as_ref(), name);
                let result = if status {
                    self.workloads.patch_status(name, &patch_params, &patch).await
                } else {
                    self.workloads.patch(name, &patch_params, &patch).await
                };
                let patched = result.map_err(|source| WriteError { what, source })?;
                self.remember("workload", name, &patched);
                Ok(meta_of(&patched))
            }
            Write::CreateRevision { revision, data, collision_count } => {
                self.create_revision(revision, data, *collision_count).await
            }
            // ImagePullJobs are written at v1beta1, their storage version, as kruise v1.9 writes
            // them: no conversion webhook is needed on the way (both versions have one shape).
            Write::CreateImagePullJob { job } => {
                let name = job.metadata.name.clone().unwrap_or_default();
                let what = self.what("create", "imagepulljob", &name);
                let body = super::predownload::to_v1beta1(job)
                    .map_err(|e| WriteError { what: what.clone(), source: kube::Error::SerdeError(e) })?;
                let jobs: Api<ImagePullJobV1beta1> = Api::namespaced(self.client.clone(), &self.namespace);
                match jobs.create(&pp, &body).await {
                    Ok(created) => Ok(meta_of(&created)),
                    Err(e) if already_exists(&e) => Ok(Outcome::Exists),
                    Err(source) => Err(WriteError { what, source }),
                }
            }
            Write::DeleteImagePullJob { name, uid } => {
                let jobs: Api<ImagePullJobV1beta1> = Api::namespaced(self.client.clone(), &self.namespace);
                let what = self.what("delete", "imagepulljob", name);
                delete(&jobs, name, uid, &None).await.map_err(|source| WriteError { what, source })
            }
        }
    }

    /// Creates a revision with `data` as its exact bytes.
    async fn create_revision(
        &mut self,
        revision: &ControllerRevision,
        data: &str,
        collision_count: i32,
    ) -> Result<Outcome, WriteError> {
        let name = revision.metadata.name.clone().unwrap_or_default();
        let what = self.what("create", "controllerrevision", &name);
        let body = revision_body(revision, data)
            .map_err(|e| WriteError { what: what.clone(), source: kube::Error::SerdeError(e) })?;
        let pp = PostParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
        let request = kube::core::Request::new(self.revisions.resource_url())
            .create(&pp, body)
            .map_err(|e| WriteError { what: what.clone(), source: kube::Error::BuildRequest(e) })?;
        match self.client.request::<ControllerRevision>(request).await {
            Ok(created) => Ok(meta_of(&created)),
            Err(e) if already_exists(&e) => {
                let existing =
                    self.revisions.get(&name).await.map_err(|source| WriteError { what: what.clone(), source })?;
                let mut intended = revision.clone();
                intended.data =
                    serde_json::from_str(data).ok().map(k8s_openapi::apimachinery::pkg::runtime::RawExtension);
                if history::equal_revision(&existing, &intended) {
                    Ok(Outcome::Exists)
                } else {
                    Ok(Outcome::Collision { collision_count: collision_count.saturating_add(1) })
                }
            }
            Err(source) => Err(WriteError { what, source }),
        }
    }
}

/// How a plan's actions are sent.
#[derive(Debug, PartialEq)]
pub enum Wave<'a> {
    /// One action by itself, in plan order (revisions, the workload's own spec).
    Alone(&'a Action),
    /// Actions on different pods sent side by side; each list is one pod's actions in plan order
    /// (a pod's writes compose: each is pinned to the version the previous one returned).
    Together(Vec<Vec<&'a Action>>),
}

/// The object an action is about, when it can be sent alongside actions on other objects.
fn parallel_key(action: &Action) -> Option<String> {
    match action.kind {
        ActionKind::CreateRevision | ActionKind::UpdateRevision | ActionKind::DeleteRevision => None,
        ActionKind::TrimPodsToDelete => None,
        _ => {
            let named = action.writes.iter().find_map(|w| match w {
                Write::CreatePod { pod } => pod.metadata.name.clone(),
                Write::DeletePvc { name, .. } | Write::PatchPvc { name, .. } => Some(format!("pvc/{name}")),
                _ => None,
            });
            Some(action.pod.clone().or(named).unwrap_or_default())
        }
    }
}

/// The plan's actions as waves, in plan order: consecutive actions on pods (and their PVCs) form
/// one wave, grouped by pod, and a new slow-start batch of creations (1, 2, 4, … pods) starts a
/// new wave, so a failing batch stops the creations after it; every other action goes alone.
pub fn waves(actions: &[Action]) -> Vec<Wave<'_>> {
    fn flush<'a>(current: &mut Vec<(String, Vec<&'a Action>)>, out: &mut Vec<Wave<'a>>) {
        if !current.is_empty() {
            out.push(Wave::Together(std::mem::take(current).into_iter().map(|(_, a)| a).collect()));
        }
    }
    let mut out: Vec<Wave<'_>> = Vec::new();
    let mut current: Vec<(String, Vec<&Action>)> = Vec::new();
    let mut batch: Option<u32> = None;
    for action in actions {
        let Some(key) = parallel_key(action) else {
            flush(&mut current, &mut out);
            out.push(Wave::Alone(action));
            continue;
        };
        if action.batch != batch {
            flush(&mut current, &mut out);
            batch = action.batch;
        }
        match current.iter_mut().find(|(k, _)| *k == key) {
            Some((_, list)) => list.push(action),
            None => current.push((key, vec![action])),
        }
    }
    flush(&mut current, &mut out);
    out
}

/// The JSON body of a revision whose `data` is exactly `data` (the rest serialized as usual).
fn revision_body(revision: &ControllerRevision, data: &str) -> Result<Vec<u8>, serde_json::Error> {
    let mut without = revision.clone();
    without.data = None;
    let mut body = serde_json::to_vec(&without)?;
    if data.is_empty() {
        return Ok(body);
    }
    // Check the bytes are one JSON value before splicing them in.
    serde_json::from_str::<serde::de::IgnoredAny>(data)?;
    if body.last() == Some(&b'}') {
        body.pop();
        body.extend_from_slice(b",\"data\":");
        body.extend_from_slice(data.as_bytes());
        body.push(b'}');
    }
    Ok(body)
}

async fn delete<K>(
    api: &Api<K>,
    name: &str,
    uid: &Option<String>,
    resource_version: &Option<String>,
) -> Result<Outcome, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let dp = DeleteParams {
        preconditions: Some(Preconditions { uid: uid.clone(), resource_version: resource_version.clone() }),
        ..Default::default()
    };
    match api.delete(name, &dp).await {
        Ok(_) => Ok(Outcome::Done { uid: uid.clone(), resource_version: None }),
        Err(e) if api_code(&e) == Some(404) => Ok(Outcome::Gone),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn revision_body_keeps_the_data_bytes() {
        let mut r = ControllerRevision { revision: 3, ..Default::default() };
        r.metadata.name = Some("web-5d8f9".into());
        r.data = Some(k8s_openapi::apimachinery::pkg::runtime::RawExtension(json!({"x": 1})));
        let data = r#"{"spec":{"template":{"$patch":"replace","z":1,"a":2}}}"#;
        let body = String::from_utf8(revision_body(&r, data).unwrap()).unwrap();
        assert!(body.ends_with(&format!(",\"data\":{data}}}")), "{body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["metadata"]["name"], "web-5d8f9");
        assert_eq!(v["revision"], 3);
        assert!(revision_body(&r, "{not json").is_err());
        let empty: Value = serde_json::from_slice(&revision_body(&r, "").unwrap()).unwrap();
        assert!(empty.get("data").is_none());
    }

    fn action(kind: ActionKind, pod: Option<&str>, batch: Option<u32>) -> Action {
        let mut a = Action::new(kind, pod, "rev", String::new(), vec![]);
        a.batch = batch;
        a
    }

    fn created(name: &str, batch: u32) -> Action {
        let mut pod = Pod::default();
        pod.metadata.name = Some(name.into());
        let mut a =
            Action::new(ActionKind::Create, None, "rev", String::new(), vec![Write::CreatePod { pod: Box::new(pod) }]);
        a.batch = Some(batch);
        a
    }

    fn shape(w: &[Wave<'_>]) -> Vec<String> {
        w.iter()
            .map(|w| match w {
                Wave::Alone(a) => format!("{:?}", a.kind),
                Wave::Together(groups) => groups
                    .iter()
                    .map(|g| {
                        let names: Vec<String> = g
                            .iter()
                            .map(|a| a.pod.clone().unwrap_or_else(|| parallel_key(a).unwrap_or_default()))
                            .collect();
                        names.join("+")
                    })
                    .collect::<Vec<_>>()
                    .join(" | "),
            })
            .collect()
    }

    #[test]
    fn waves_keep_order_per_pod_and_slow_start_batches() {
        let actions = vec![
            action(ActionKind::CreateRevision, None, None),
            created("web-a", 0),
            created("web-b", 1),
            created("web-c", 1),
            created("web-d", 2),
        ];
        assert_eq!(shape(&waves(&actions)), ["CreateRevision", "web-a", "web-b | web-c", "web-d"]);

        let actions = vec![
            action(ActionKind::SetLifecycle, Some("web-a"), None),
            action(ActionKind::UpdateInPlace, Some("web-b"), None),
            action(ActionKind::UpdateInPlace, Some("web-a"), None),
            action(ActionKind::TrimPodsToDelete, None, None),
            action(ActionKind::DeleteRevision, None, None),
        ];
        assert_eq!(
            shape(&waves(&actions)),
            ["web-a+web-a | web-b", "TrimPodsToDelete", "DeleteRevision"],
            "one pod's actions stay together and in order"
        );
        assert!(waves(&[]).is_empty());
    }
}
