//! What a workload planner asks for, in the form a thin reconciler applies without deciding
//! anything: each [`Action`] says what it is for (its kind, pod, target revision and reason,
//! which `kruise plan` prints) and carries the API [`Write`]s that do it, in order.
//!
//! Safety rules the writes carry so that a stale view can never do damage (spec §5.1, GUIDE "a
//! reconciler never deletes a pod or a PVC it is not sure about"):
//! - every patch is pinned to a resourceVersion ([`Pin`]); the reconciler sends it as the first
//!   op (`replace /metadata/resourceVersion`), so the apiserver answers 409 Conflict when the
//!   object changed since it was observed, and the next round decides again;
//! - every delete carries the uid and resourceVersion it was decided on, as delete preconditions;
//! - patches are RFC 6902 diffs of the object as observed and as intended, so applying one to
//!   the observed object gives exactly the intended one (tests apply them).

use json_patch::jsonptr::PointerBuf;
use json_patch::{Patch, PatchOperation, ReplaceOperation};
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// Which resourceVersion a patch must find.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Pin {
    /// The version the planner observed.
    Observed(String),
    /// The version this reconcile round's previous write to the same object returned (the
    /// observed one when there was none): for a second write that follows the first, e.g. the
    /// pod update that follows the `InPlaceUpdateReady=False` status write.
    Latest,
}

/// One API call.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase", tag = "write")]
pub enum Write {
    /// Create a PVC; AlreadyExists means it is there already (reused) and is not an error.
    CreatePvc { pvc: Box<PersistentVolumeClaim> },
    /// Create a pod.
    CreatePod { pod: Box<Pod> },
    /// Delete a pod with uid and resourceVersion preconditions.
    DeletePod { name: String, uid: Option<String>, resource_version: Option<String> },
    /// Delete a PVC with uid and resourceVersion preconditions.
    DeletePvc { name: String, uid: Option<String>, resource_version: Option<String> },
    /// JSON-patch a pod (metadata and spec).
    PatchPod { name: String, pin: Pin, patch: Patch },
    /// JSON-patch a pod's `status` subresource.
    PatchPodStatus { name: String, pin: Pin, patch: Patch },
    /// JSON-patch a pod's `resize` subresource (container cpu/memory, Kubernetes ≥ 1.33).
    PatchPodResize { name: String, pin: Pin, patch: Patch },
    /// JSON-patch a PVC (ownerReferences).
    PatchPvc { name: String, pin: Pin, patch: Patch },
    /// Create a ControllerRevision. Send [`Write::CreateRevision::data`] as the `data` bytes. On
    /// AlreadyExists with different data (a hash collision with a revision the planner did not
    /// see) the reconciler writes `status.collisionCount = collision_count + 1` and requeues;
    /// with equal data it is the revision and nothing is wrong.
    CreateRevision { revision: Box<ControllerRevision>, data: String, collision_count: i32 },
    /// JSON-patch a ControllerRevision (`.revision` bump on rollback, annotations).
    PatchRevision { name: String, pin: Pin, patch: Patch },
    /// Delete a ControllerRevision with preconditions.
    DeleteRevision { name: String, uid: Option<String>, resource_version: Option<String> },
    /// JSON-patch the workload's spec (e.g. `scaleStrategy.podsToDelete`).
    PatchWorkload { name: String, pin: Pin, patch: Patch },
    /// JSON-patch the workload's `status` subresource (the round's status, planned as a diff by
    /// [`super::plan::status_write`]).
    PatchWorkloadStatus { name: String, pin: Pin, patch: Patch },
    /// Create an ImagePullJob (image pre-download, spec §7.3); AlreadyExists means it is there
    /// (a previous round or a Go kruise created it) and is not an error.
    CreateImagePullJob { job: Box<crate::apis::imagepulljob::ImagePullJob> },
    /// Delete an ImagePullJob with a uid precondition (the rollout completed, spec §7.2).
    DeleteImagePullJob { name: String, uid: Option<String> },
}

impl Write {
    /// The kind of write, for metrics (`kruise_controller_api_writes_total{write}`).
    pub fn kind(&self) -> &'static str {
        match self {
            Write::CreatePvc { .. } => "create_pvc",
            Write::CreatePod { .. } => "create_pod",
            Write::DeletePod { .. } => "delete_pod",
            Write::DeletePvc { .. } => "delete_pvc",
            Write::PatchPod { .. } => "patch_pod",
            Write::PatchPodStatus { .. } => "patch_pod_status",
            Write::PatchPodResize { .. } => "patch_pod_resize",
            Write::PatchPvc { .. } => "patch_pvc",
            Write::CreateRevision { .. } => "create_revision",
            Write::PatchRevision { .. } => "patch_revision",
            Write::DeleteRevision { .. } => "delete_revision",
            Write::PatchWorkload { .. } => "patch_workload",
            Write::PatchWorkloadStatus { .. } => "workload_status",
            Write::CreateImagePullJob { .. } => "create_image_pull_job",
            Write::DeleteImagePullJob { .. } => "delete_image_pull_job",
        }
    }

    fn status(name: String, pin: Pin, patch: Patch) -> Write {
        Write::PatchPodStatus { name, pin, patch }
    }

    fn resize(name: String, pin: Pin, patch: Patch) -> Write {
        Write::PatchPodResize { name, pin, patch }
    }

    fn pod(name: String, pin: Pin, patch: Patch) -> Write {
        Write::PatchPod { name, pin, patch }
    }

    /// The patch to send: for pinned writes, `replace /metadata/resourceVersion` first, so a
    /// changed object is a 409 Conflict rather than an overwrite.
    pub fn request_patch(&self, latest_resource_version: &str) -> Option<Patch> {
        let (pin, patch) = match self {
            Write::PatchPod { pin, patch, .. }
            | Write::PatchPodStatus { pin, patch, .. }
            | Write::PatchPodResize { pin, patch, .. }
            | Write::PatchPvc { pin, patch, .. }
            | Write::PatchRevision { pin, patch, .. }
            | Write::PatchWorkload { pin, patch, .. }
            | Write::PatchWorkloadStatus { pin, patch, .. } => (pin, patch),
            _ => return None,
        };
        let rv = match pin {
            Pin::Observed(rv) => rv.as_str(),
            Pin::Latest => latest_resource_version,
        };
        let mut ops = vec![PatchOperation::Replace(ReplaceOperation {
            path: PointerBuf::from_tokens(["metadata", "resourceVersion"]),
            value: Value::String(rv.to_string()),
        })];
        ops.extend(patch.0.iter().cloned());
        Some(Patch(ops))
    }
}

/// What an action is for (the `action` of `kruise plan -o json`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ActionKind {
    /// Create a pod (and its PVCs).
    Create,
    /// Delete a pod (and its PVCs).
    Delete,
    /// Update a pod in place to the target revision.
    UpdateInPlace,
    /// Recreate a pod at the target revision: the CloneSet marks it `apps.kruise.io/specified-delete`
    /// so its scale step replaces it; the Advanced StatefulSet deletes it and its next round
    /// creates it again.
    Recreate,
    /// Move a pod to another lifecycle state.
    SetLifecycle,
    /// Set `InPlaceUpdateReady=True` on a pod whose in-place update completed (or never started).
    MarkInPlaceUpdateReady,
    /// Apply an in-place update whose grace period ended (or drop a stale one).
    FinishGracePeriod,
    /// Update the next, lower-priority batch of containers of an in-place update.
    UpdateNextBatch,
    /// Add the missing `pod-template-hash` label.
    FixTemplateHashLabel,
    /// Release an owned pod that no longer matches the selector.
    ReleasePod,
    /// Create the update revision.
    CreateRevision,
    /// Make an older revision the newest again (rollback) or refresh its annotations.
    UpdateRevision,
    /// Delete a revision beyond `revisionHistoryLimit`.
    DeleteRevision,
    /// Remove names of pods that do not exist from `scaleStrategy.podsToDelete`.
    TrimPodsToDelete,
    /// Adopt an orphan pod (add the workload's controller reference).
    AdoptPod,
    /// Put back a StatefulSet pod's identity, storage or claim references (`UpdateStatefulPod`).
    RestoreIdentity,
    /// Create a pod's missing PVCs or give its PVCs the owner references the retention policy
    /// asks for.
    UpdateClaims,
    /// Hand a PVC of a finished pod to that pod, or delete an orphaned PVC (PVC reuse disabled).
    CleanupPvc,
    /// Expand a pod's PVCs to their template's size before the pod is updated.
    ResizeClaims,
    /// Mark a pod whose SidecarSet sidecars cannot be upgraded in place
    /// (`SidecarSetUpgradable=False`).
    MarkNotUpgradable,
    /// Reset the idle container of a hot-upgrade sidecar pair to the empty image.
    ResetHotUpgrade,
    /// Create the ImagePullJob pre-pulling a container's new image (spec §7.3).
    CreateImagePullJob,
    /// Label the update revision `pre-predownload-created` or `image-predownload-ignored`.
    MarkPreDownload,
    /// Delete an ImagePullJob of the workload once its rollout completed (spec §7.2).
    DeleteImagePullJob,
}

/// One step of a plan.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Action {
    /// What it is for.
    pub kind: ActionKind,
    /// The pod it is about (absent for creations: the name is only chosen when applied).
    pub pod: Option<String>,
    /// The revision it moves the pod to (or the revision object it is about).
    pub revision: String,
    /// Why, in words for people.
    pub reason: String,
    /// For in-place updates: container name to new image.
    pub images: BTreeMap<String, String>,
    /// Slow-start batch of a creation (0, 1, 1, 2, 2, 2, 2, …): the reconciler applies one batch
    /// at a time and stops at the first failure.
    pub batch: Option<u32>,
    /// The calls that do it, in order.
    pub writes: Vec<Write>,
}

impl Action {
    /// An action with no images and no batch.
    pub fn new(kind: ActionKind, pod: Option<&str>, revision: &str, reason: String, writes: Vec<Write>) -> Action {
        Action {
            kind,
            pod: pod.map(str::to_string),
            revision: revision.to_string(),
            reason,
            images: BTreeMap::new(),
            batch: None,
            writes,
        }
    }
}

/// Revision writes as actions (`createRevision`, `updateRevision`, `deleteRevision`, each
/// naming its revision), for a plan that keeps its revision writes apart from its pod actions
/// (the SidecarSet's: its revisions live in the manager namespace). The SidecarSet controller
/// sends them, `kruise plan sidecarset` prints them.
pub fn revision_actions(writes: &[Write], reason: &str) -> Vec<Action> {
    writes
        .iter()
        .map(|w| {
            let (kind, name) = match w {
                Write::CreateRevision { revision, .. } => {
                    (ActionKind::CreateRevision, revision.metadata.name.clone().unwrap_or_default())
                }
                Write::DeleteRevision { name, .. } => (ActionKind::DeleteRevision, name.clone()),
                Write::PatchRevision { name, .. } => (ActionKind::UpdateRevision, name.clone()),
                _ => (ActionKind::UpdateRevision, String::new()),
            };
            Action::new(kind, None, &name, reason.to_string(), vec![w.clone()])
        })
        .collect()
}

/// The batch of creation `i` in Kubernetes' slow start (`DoItSlowly` with an initial batch of 1):
/// batches of 1, 2, 4, 8, … calls.
pub fn slow_start_batch(i: usize) -> u32 {
    // Batch k holds calls [2^k - 1, 2^(k+1) - 1).
    usize::BITS - (i + 1).leading_zeros() - 1
}

fn resource_version(pod: &Pod) -> Pin {
    Pin::Observed(pod.metadata.resource_version.clone().unwrap_or_default())
}

/// The writes that turn the observed pod into the intended one: the `status` change first (it
/// must land before a spec change, e.g. `InPlaceUpdateReady=False` before new images), then
/// container resources through the `resize` subresource (vertical scaling), then the rest of
/// metadata/spec; the first is pinned to the observed version, the others follow it.
pub fn pod_writes(observed: &Pod, intended: &Pod) -> Vec<Write> {
    writes_between(observed, intended, resource_version(observed))
}

fn is_resize_path(path: &str) -> bool {
    path.strip_prefix("/spec/containers/").and_then(|rest| rest.split_once('/')).is_some_and(|(index, tail)| {
        index.bytes().all(|b| b.is_ascii_digit()) && (tail == "resources" || tail.starts_with("resources/"))
    })
}

fn writes_between(from: &Pod, to: &Pod, first: Pin) -> Vec<Write> {
    let name = from.metadata.name.clone().unwrap_or_default();
    let ops = json_patch::diff(&to_value(from), &to_value(to)).0;
    let (status, rest): (Vec<_>, Vec<_>) = ops.into_iter().partition(|op| op.path().as_str().starts_with("/status"));
    let (resize, rest): (Vec<_>, Vec<_>) = rest.into_iter().partition(|op| is_resize_path(op.path().as_str()));
    let mut out = Vec::new();
    let mut pin = first;
    for (ops, make) in
        [(status, Write::status as fn(String, Pin, Patch) -> Write), (resize, Write::resize), (rest, Write::pod)]
    {
        if !ops.is_empty() {
            out.push(make(name.clone(), pin, Patch(ops)));
            pin = Pin::Latest;
        }
    }
    out
}

/// Whether a JSON-patch path names one kruise-owned label or annotation (a key in `kruise.io/`
/// or a subdomain of it, such as `lifecycle.apps.kruise.io/state`).
fn is_kruise_metadata(path: &str) -> bool {
    let key = path.strip_prefix("/metadata/labels/").or_else(|| path.strip_prefix("/metadata/annotations/"));
    key.and_then(|k| k.split_once("~1")).is_some_and(|(domain, name)| {
        !name.is_empty() && !name.contains('/') && (domain == "kruise.io" || domain.ends_with(".kruise.io"))
    })
}

/// One pod's writes of a round, in order, with every patch of kruise-owned labels and annotations
/// only that directly follows a `status` patch of the same pod folded into that status patch:
/// one write instead of two, and no window in which a kubelet status update between them turns
/// the second into a 409. The apiserver's pods/status endpoint keeps metadata changes (it resets
/// only spec, deletionTimestamp and ownerReferences: `podStatusStrategy.PrepareForUpdate`). Kruise
/// sends them apart (`InPlaceUpdateReady=True`, then the lifecycle state `Normal`), so it makes 4
/// writes per pod updated in place where this makes 3. Only kruise's own keys are folded: a write
/// of someone else's label through `pods/status` would pass by webhooks registered for `pods`.
pub fn coalesce<'a>(writes: impl IntoIterator<Item = &'a Write>) -> Vec<Write> {
    let mut out: Vec<Write> = Vec::new();
    for w in writes {
        if let (
            Some(Write::PatchPodStatus { name, patch, .. }),
            Write::PatchPod { name: next, pin: Pin::Latest, patch: metadata },
        ) = (out.last_mut(), w)
            && name == next
            && metadata.0.iter().all(|op| is_kruise_metadata(op.path().as_str()))
        {
            patch.0.extend(metadata.0.iter().cloned());
            continue;
        }
        out.push(w.clone());
    }
    out
}

/// Several changes to the same pods in one round: each change is diffed against the pod as the
/// previous change left it, and only a pod's first write is pinned to the observed version (the
/// rest follow the round's own writes), so changes compose instead of overwriting each other.
#[derive(Debug, Default)]
pub struct PodChanges {
    latest: BTreeMap<String, Pod>,
}

impl PodChanges {
    /// The pod as this round's earlier changes leave it.
    pub fn current<'a>(&'a self, observed: &'a Pod) -> &'a Pod {
        self.latest.get(observed.metadata.name.as_deref().unwrap_or("")).unwrap_or(observed)
    }

    /// The writes from the current state of `observed` to `intended`.
    pub fn change(&mut self, observed: &Pod, intended: Pod) -> Vec<Write> {
        let name = observed.metadata.name.clone().unwrap_or_default();
        let (from, first) = match self.latest.get(&name) {
            Some(p) => (p.clone(), Pin::Latest),
            None => (observed.clone(), resource_version(observed)),
        };
        let writes = writes_between(&from, &intended, first);
        if !writes.is_empty() {
            self.latest.insert(name, intended);
        }
        writes
    }
}

/// The patch that turns one object into another, as a pinned write built by `make`.
pub fn object_patch<T: Serialize>(observed: &T, intended: &T) -> Patch {
    json_patch::diff(&to_value(observed), &to_value(intended))
}

fn to_value<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::pods::test_pods::pod;

    #[test]
    fn slow_start_batches_double() {
        let batches: Vec<u32> = (0..8).map(slow_start_batch).collect();
        assert_eq!(batches, [0, 1, 1, 2, 2, 2, 2, 3]);
    }

    #[test]
    fn pod_writes_split_status_first_and_apply() {
        let mut before = pod("web-abcde", &[("a", "b")]);
        before.metadata.resource_version = Some("7".into());
        let mut after = before.clone();
        after.metadata.labels.as_mut().unwrap().insert("apps.kruise.io/specified-delete".into(), "true".into());
        after.status.as_mut().unwrap().phase = Some("Running".into());
        let writes = pod_writes(&before, &after);
        assert_eq!(writes.len(), 2);
        assert!(matches!(&writes[0], Write::PatchPodStatus { pin: Pin::Observed(rv), .. } if rv == "7"));
        assert!(matches!(&writes[1], Write::PatchPod { pin: Pin::Latest, .. }));
        let mut doc = to_value(&before);
        for w in &writes {
            let patch = w.request_patch("7").unwrap();
            json_patch::patch(&mut doc, &patch).unwrap();
        }
        assert_eq!(doc, to_value(&after));
        assert!(pod_writes(&before, &before).is_empty());
    }

    #[test]
    fn changes_to_one_pod_compose() {
        let mut before = pod("p", &[]);
        before.metadata.resource_version = Some("3".into());
        before.metadata.annotations = None;
        let mut changes = PodChanges::default();
        let mut first = before.clone();
        first.metadata.annotations = Some([("a".to_string(), "1".to_string())].into());
        let w1 = changes.change(&before, first);
        let mut second = changes.current(&before).clone();
        second.metadata.annotations.as_mut().unwrap().insert("b".into(), "2".into());
        let w2 = changes.change(&before, second.clone());
        assert!(matches!(&w1[0], Write::PatchPod { pin: Pin::Observed(rv), .. } if rv == "3"));
        assert!(matches!(&w2[0], Write::PatchPod { pin: Pin::Latest, .. }));
        let mut doc = to_value(&before);
        for w in w1.iter().chain(&w2) {
            json_patch::patch(&mut doc, &w.request_patch("3").unwrap()).unwrap();
        }
        assert_eq!(doc, to_value(&second), "the second change keeps the first");
    }

    #[test]
    fn kruise_metadata_paths() {
        for (path, kruise) in [
            ("/metadata/labels/lifecycle.apps.kruise.io~1state", true),
            ("/metadata/annotations/apps.kruise.io~1inplace-update-state", true),
            ("/metadata/labels/kruise.io~1x", true),
            ("/metadata/labels/notkruise.io~1x", false),
            ("/metadata/labels/app", false),
            ("/metadata/labels", false),
            ("/metadata/labels/apps.kruise.io~1", false),
            ("/metadata/labels/apps.kruise.io~1a/b", false),
            ("/metadata/ownerReferences/0", false),
            ("/spec/containers/0/image", false),
        ] {
            assert_eq!(is_kruise_metadata(path), kruise, "{path}");
        }
    }

    #[test]
    fn kruise_labels_after_a_status_write_fold_into_it() {
        let mut before = pod("web-a", &[("lifecycle.apps.kruise.io/state", "Updating")]);
        before.metadata.resource_version = Some("5".into());
        let mut changes = PodChanges::default();
        // markInPlaceUpdateReady, then the lifecycle move Updating -> Normal, as the planner sends them.
        let mut ready = before.clone();
        ready.status.as_mut().unwrap().phase = Some("Running".into());
        let w1 = changes.change(&before, ready);
        let mut normal = changes.current(&before).clone();
        normal.metadata.labels.as_mut().unwrap().insert("lifecycle.apps.kruise.io/state".into(), "Normal".into());
        let w2 = changes.change(&before, normal.clone());
        let folded = coalesce(w1.iter().chain(&w2));
        assert_eq!(folded.len(), 1, "{folded:?}");
        assert!(matches!(&folded[0], Write::PatchPodStatus { pin: Pin::Observed(rv), .. } if rv == "5"));
        let mut doc = to_value(&before);
        json_patch::patch(&mut doc, &folded[0].request_patch("5").unwrap()).unwrap();
        assert_eq!(doc, to_value(&normal), "one write gives what the two gave");
    }

    #[test]
    fn other_writes_stay_apart() {
        let mut before = pod("web-a", &[("app", "web")]);
        before.metadata.resource_version = Some("5".into());
        let status = |p: &mut Pod| p.status.as_mut().unwrap().phase = Some("Running".into());
        type Edit = fn(&mut Pod);
        let cases: [(&str, Edit); 3] = [
            ("a foreign label", |p| {
                p.metadata.labels.as_mut().unwrap().insert("app".into(), "api".into());
            }),
            ("a spec change", |p| p.spec.as_mut().unwrap().active_deadline_seconds = Some(5)),
            ("a kruise label beside a spec change", |p| {
                p.metadata.labels.as_mut().unwrap().insert("apps.kruise.io/x".into(), "y".into());
                p.spec.as_mut().unwrap().active_deadline_seconds = Some(5);
            }),
        ];
        for (what, edit) in cases {
            let mut changes = PodChanges::default();
            let mut first = before.clone();
            status(&mut first);
            let w1 = changes.change(&before, first);
            let mut second = changes.current(&before).clone();
            edit(&mut second);
            let w2 = changes.change(&before, second);
            let all: Vec<Write> = w1.iter().chain(&w2).cloned().collect();
            assert_eq!(coalesce(&all), all, "{what}");
        }
        // A kruise label first, then status: the order is kept (nothing to fold into).
        let mut labelled = before.clone();
        labelled.metadata.labels.as_mut().unwrap().insert("apps.kruise.io/x".into(), "y".into());
        let w = pod_writes(&before, &labelled);
        let mut changes = PodChanges::default();
        let mut w_all = changes.change(&before, labelled);
        let mut then = changes.current(&before).clone();
        status(&mut then);
        w_all.extend(changes.change(&before, then));
        assert_eq!(w.len(), 1);
        assert_eq!(coalesce(&w_all), w_all);
    }
}
