//! The NodeImage controller's round (kruise `nodeimage_controller.go` `Reconcile`,
//! `doUpdateNodeImage`, `updateNodeImageStatus`; `nodeimage_event_handler.go`):
//! - a Node without a NodeImage gets one once it has been Ready for the creation delay (30 s,
//!   `--nodeimage-creation-delay`), with the Node's labels (kruise creates it bare and copies the
//!   labels on the next round; we write both at once); virtual-kubelet Nodes (`type:
//!   virtual-kubelet`) get none;
//! - a NodeImage whose Node is gone or being deleted is deleted at once (kruise has no grace),
//!   unless it carries `apps.kruise.io/fake-nodeimage`; the controller confirms the Node is gone
//!   with the API before deleting (a lagging Node cache must never cost a NodeImage);
//! - labels follow the Node's;
//! - a tag is dropped when it has no `createdAt`, when every ImagePullJob owner is gone (missing,
//!   or a new job of that name with another uid; references of other kinds are kept), or when its
//!   `ttlSecondsAfterFinished` has passed since its pull (at the same version) completed; an
//!   image with no tag left is dropped; an old-style pull secret (no `mode: batch`) whose Secret
//!   is gone is dropped;
//! - the status marks a tag Failed when the daemon has not answered its version within 10 minutes
//!   of `createdAt` ("node has not responded for a long time"), or its pull is still running
//!   `activeDeadlineSeconds` + 10 minutes after `createdAt` ("pulling exceeds the
//!   activeDeadlineSeconds"), with a `PullImageFailed` Warning; counts are recomputed when the
//!   tag statuses change.

use std::collections::BTreeMap;

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, Patch, PatchOperation, ReplaceOperation};
use k8s_openapi::api::core::v1::{Node, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::Value;

use super::{PHASE_FAILED, PHASE_PULLING, PHASE_SUCCEEDED};
use crate::apis::nodeimage::v1beta1::NodeImage;
use crate::apis::nodeimage::{ImageTagStatus, NodeImageStatus};

/// kruise's `fakeLabelKey`: a NodeImage with no Node, kept (tests).
pub const FAKE_LABEL: &str = "apps.kruise.io/fake-nodeimage";
/// `VirtualKubeletLabelKey` / `VirtualKubeletLabelValue`.
pub const VIRTUAL_KUBELET_LABEL: (&str, &str) = ("type", "virtual-kubelet");
/// `--nodeimage-creation-delay` default.
pub const CREATION_DELAY: SignedDuration = SignedDuration::from_secs(30);
/// `responseTimeout`.
pub const RESPONSE_TIMEOUT: SignedDuration = SignedDuration::from_secs(600);
/// `minRequeueDuration`.
pub const MIN_REQUEUE: SignedDuration = SignedDuration::from_secs(3);

/// Whether a job `namespace/name` exists in the cache, and with which uid.
pub type JobUid<'a> = &'a dyn Fn(&str, &str) -> Option<String>;
/// Whether a Secret `namespace/name` exists (`None`: unknown, kept).
pub type SecretExists<'a> = &'a dyn Fn(&str, &str) -> Option<bool>;

/// A Warning to publish.
#[derive(Clone, Debug, PartialEq)]
pub struct Warning {
    /// On whom: the job owning the tag, or the NodeImage (`None`).
    pub on: Option<ObjectReference>,
    pub message: String,
}

/// What one round does.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Round {
    /// Create the NodeImage with these labels.
    pub create: Option<BTreeMap<String, String>>,
    /// Delete it (after the controller has confirmed its Node is gone).
    pub delete: bool,
    /// Patch its metadata and spec (pinned); why.
    pub update: Option<(Patch, Vec<String>)>,
    /// Replace its status (pinned).
    pub status: Option<(NodeImageStatus, Vec<Warning>)>,
    /// Look again after this long.
    pub requeue: Option<SignedDuration>,
}

fn is_ready_since(node: &Node) -> Option<Timestamp> {
    let c = node.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == "Ready")?;
    (c.status == "True").then(|| c.last_transition_time.as_ref().map_or(Timestamp::UNIX_EPOCH, |t| t.0))
}

/// Whether a Node is a virtual-kubelet one (kruise's handlers skip them).
pub fn is_virtual(node: &Node) -> bool {
    node.metadata.labels.as_ref().and_then(|l| l.get(VIRTUAL_KUBELET_LABEL.0)).map(String::as_str)
        == Some(VIRTUAL_KUBELET_LABEL.1)
}

/// The round for the NodeImage `name`, from the cached Node and NodeImage.
pub fn plan(
    node: Option<&Node>,
    ni: Option<&NodeImage>,
    jobs: JobUid<'_>,
    secrets: SecretExists<'_>,
    now: Timestamp,
    creation_delay: SignedDuration,
) -> Round {
    let node = node.filter(|n| n.metadata.deletion_timestamp.is_none());
    let Some(ni) = ni else {
        let Some(node) = node.filter(|n| !is_virtual(n)) else { return Round::default() };
        let Some(ready) = is_ready_since(node) else { return Round::default() };
        let delay = creation_delay - now.duration_since(ready);
        if delay > SignedDuration::ZERO {
            return Round { requeue: Some(delay), ..Round::default() };
        }
        return Round { create: Some(node.metadata.labels.clone().unwrap_or_default()), ..Round::default() };
    };
    if ni.metadata.deletion_timestamp.is_some() {
        return Round::default();
    }
    if node.is_none() {
        let fake = ni.metadata.labels.as_ref().is_some_and(|l| l.contains_key(FAKE_LABEL));
        if !fake {
            return Round { delete: true, ..Round::default() };
        }
    }
    let mut wait = Wait::default();
    let (update, messages) = update_spec(ni, node, jobs, secrets, now, &mut wait);
    if let Some(patch) = update {
        return Round { update: Some((patch, messages)), ..Round::default() };
    }
    let status = update_status(ni, now, &mut wait);
    let requeue = wait.0.map(|d| if d < MIN_REQUEUE { MIN_REQUEUE } else { d });
    Round { status, requeue, ..Round::default() }
}

/// The shortest wait asked for (`requeueduration.Duration`).
#[derive(Default)]
struct Wait(Option<SignedDuration>);

impl Wait {
    fn update(&mut self, d: SignedDuration) {
        if d > SignedDuration::ZERO && self.0.is_none_or(|w| d < w) {
            self.0 = Some(d);
        }
    }
}

fn ptr(tokens: &[&str]) -> PointerBuf {
    PointerBuf::from_tokens(tokens.iter().copied())
}

/// `doUpdateNodeImage`: the pinned patch of labels and spec, when anything changes.
fn update_spec(
    ni: &NodeImage,
    node: Option<&Node>,
    jobs: JobUid<'_>,
    secrets: SecretExists<'_>,
    now: Timestamp,
    wait: &mut Wait,
) -> (Option<Patch>, Vec<String>) {
    let mut messages = Vec::new();
    let mut labels_changed = None;
    if let Some(node) = node
        && node.metadata.labels.clone().unwrap_or_default() != ni.metadata.labels.clone().unwrap_or_default()
    {
        messages.push("node labels changed".to_string());
        labels_changed = Some(node.metadata.labels.clone().unwrap_or_default());
    }
    let statuses = ni.status.as_ref().map(|s| &s.image_statuses);
    let mut images = BTreeMap::new();
    let mut modified = false;
    for (name, spec) in &ni.spec.images {
        let mut spec = spec.clone();
        let mut tags = Vec::new();
        for mut t in std::mem::take(&mut spec.tags) {
            let full = format!("{name}:{}", t.tag);
            let Some(created) = t.created_at.clone() else {
                modified = true;
                messages.push(format!("image {full} has no createAt field"));
                continue;
            };
            let _ = created;
            let before = t.owner_references.len();
            t.owner_references.retain(|r| {
                let is_job = r.kind.as_deref() == Some("ImagePullJob")
                    && r.api_version.as_deref().is_some_and(|v| v.starts_with("apps.kruise.io/"));
                if !is_job {
                    return true;
                }
                let ns = r.namespace.as_deref().unwrap_or("");
                let n = r.name.as_deref().unwrap_or("");
                jobs(ns, n).is_some_and(|uid| Some(uid.as_str()) == r.uid.as_deref())
            });
            if t.owner_references.len() != before {
                modified = true;
                if t.owner_references.is_empty() {
                    messages.push(format!("image {full} owners is cleared"));
                    continue;
                }
                messages.push(format!("image {full} owners changed"));
            }
            if let Some(ttl) = t.pull_policy.as_ref().and_then(|p| p.ttl_seconds_after_finished) {
                let done = statuses
                    .and_then(|s| s.get(name))
                    .and_then(|s| s.tags.iter().find(|s| s.tag == t.tag && s.version == t.version))
                    .and_then(|s| s.completion_time.clone());
                if let Some(done) = done {
                    let left = SignedDuration::from_secs(i64::from(ttl)) - now.duration_since(done.0);
                    if left <= SignedDuration::ZERO {
                        modified = true;
                        messages.push(format!("image {full} has exceeded TTL ({ttl})s"));
                        continue;
                    }
                    wait.update(left);
                }
            }
            tags.push(t);
        }
        let before = spec.pull_secrets.len();
        spec.pull_secrets.retain(|r| r.mode == "batch" || secrets(&r.namespace, &r.name) != Some(false));
        modified |= spec.pull_secrets.len() != before;
        if tags.is_empty() {
            modified = true;
            messages.push(format!("no longer has {name} image spec"));
        } else {
            tags.sort_by(|a, b| a.tag.cmp(&b.tag));
            spec.tags = tags;
            images.insert(name.clone(), spec);
        }
    }
    if labels_changed.is_none() && !modified {
        return (None, messages);
    }
    let rv = ni.metadata.resource_version.clone().unwrap_or_default();
    let mut ops = vec![PatchOperation::Replace(ReplaceOperation {
        path: ptr(&["metadata", "resourceVersion"]),
        value: Value::String(rv),
    })];
    if let Some(labels) = labels_changed {
        ops.push(PatchOperation::Add(AddOperation {
            path: ptr(&["metadata", "labels"]),
            value: serde_json::to_value(labels).unwrap_or(Value::Null),
        }));
    }
    if modified {
        ops.push(PatchOperation::Add(AddOperation {
            path: ptr(&["spec", "images"]),
            value: serde_json::to_value(images).unwrap_or(Value::Null),
        }));
    }
    (Some(Patch(ops)), messages)
}

/// `updateNodeImageStatus`: the new status when a tag's status changes.
fn update_status(ni: &NodeImage, now: Timestamp, wait: &mut Wait) -> Option<(NodeImageStatus, Vec<Warning>)> {
    let old = ni.status.clone().unwrap_or_default();
    let mut status = old.clone();
    let mut warnings = Vec::new();
    let mut spec_full = std::collections::BTreeSet::new();
    let node = ni.metadata.name.clone().unwrap_or_default();
    for (name, spec) in &ni.spec.images {
        let mut image_status = status.image_statuses.get(name).cloned().unwrap_or_default();
        for t in &spec.tags {
            let full = format!("{name}:{}", t.tag);
            spec_full.insert(full.clone());
            let Some(created) = &t.created_at else { continue };
            let since = now.duration_since(created.0);
            let idx = image_status.tags.iter().position(|s| s.tag == t.tag);
            let mut failed = false;
            let answered = idx.is_some_and(|i| image_status.tags[i].version == t.version);
            let i = if answered {
                idx.unwrap_or_default()
            } else {
                let left = RESPONSE_TIMEOUT - since;
                if left > SignedDuration::ZERO {
                    wait.update(left);
                    continue;
                }
                let failed_status = ImageTagStatus {
                    tag: t.tag.clone(),
                    phase: PHASE_FAILED.into(),
                    completion_time: Some(Time(now)),
                    version: t.version,
                    message: "node has not responded for a long time".into(),
                    ..Default::default()
                };
                failed = true;
                match idx {
                    Some(i) => {
                        let s = &mut image_status.tags[i];
                        s.phase = PHASE_FAILED.into();
                        s.completion_time = Some(Time(now));
                        s.version = t.version;
                        s.message = failed_status.message;
                        i
                    }
                    None => {
                        image_status.tags.push(failed_status);
                        image_status.tags.len() - 1
                    }
                }
            };
            let s = &mut image_status.tags[i];
            if s.completion_time.is_none()
                && let Some(deadline) = t.pull_policy.as_ref().and_then(|p| p.active_deadline_seconds)
            {
                let left = SignedDuration::from_secs(deadline) + RESPONSE_TIMEOUT - since;
                if left > SignedDuration::ZERO {
                    wait.update(left);
                    continue;
                }
                s.phase = PHASE_FAILED.into();
                s.completion_time = Some(Time(now));
                s.version = t.version;
                s.message = "pulling exceeds the activeDeadlineSeconds".into();
                failed = true;
            }
            if failed {
                let message = format!("Failed to pull image {full} on node {node} for {}", s.message);
                for owner in &t.owner_references {
                    warnings.push(Warning { on: Some(owner.clone()), message: message.clone() });
                }
                warnings.push(Warning { on: None, message });
            }
        }
        if !image_status.tags.is_empty() {
            image_status.tags.sort_by(|a, b| a.tag.cmp(&b.tag));
            status.image_statuses.insert(name.clone(), image_status);
        }
    }
    if status.image_statuses == old.image_statuses {
        return None;
    }
    let (mut succeeded, mut failed, mut pulling) = (0, 0, 0);
    let mut kept = BTreeMap::new();
    for (name, mut st) in std::mem::take(&mut status.image_statuses) {
        if !ni.spec.images.contains_key(&name) {
            continue;
        }
        st.tags.retain(|t| spec_full.contains(&format!("{name}:{}", t.tag)));
        for t in &st.tags {
            match t.phase.as_str() {
                PHASE_SUCCEEDED => succeeded += 1,
                PHASE_PULLING => pulling += 1,
                PHASE_FAILED => failed += 1,
                _ => {}
            }
        }
        if !st.tags.is_empty() {
            kept.insert(name, st);
        }
    }
    status.image_statuses = kept;
    status.desired = i32::try_from(spec_full.len()).unwrap_or(i32::MAX);
    status.pulling = pulling;
    status.succeeded = succeeded;
    status.failed = failed;
    Some((status, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::imagepulljob::testkit::{at, node, node_image, tagged};

    fn no_jobs(_: &str, _: &str) -> Option<String> {
        None
    }
    fn job_j(ns: &str, name: &str) -> Option<String> {
        (ns == "ns" && name == "j").then(|| "uid-j".to_string())
    }
    fn unknown(_: &str, _: &str) -> Option<bool> {
        None
    }

    fn apply(ni: &NodeImage, p: &Patch) -> NodeImage {
        let mut doc = serde_json::to_value(ni).unwrap();
        json_patch::patch(&mut doc, p).unwrap();
        serde_json::from_value(doc).unwrap()
    }

    #[test]
    fn create_and_delete_rows() {
        let ready = node("n1", &[("zone", "a")], Some(0));
        // Ready for 10 s: wait 20 s more.
        let r = plan(Some(&ready), None, &no_jobs, &unknown, at(10), CREATION_DELAY);
        assert_eq!((r.create.clone(), r.requeue), (None, Some(SignedDuration::from_secs(20))));
        let r = plan(Some(&ready), None, &no_jobs, &unknown, at(30), CREATION_DELAY);
        assert_eq!(r.create.unwrap()["zone"], "a", "created with the Node's labels");
        let not_ready = node("n1", &[], None);
        assert_eq!(plan(Some(&not_ready), None, &no_jobs, &unknown, at(99), CREATION_DELAY), Round::default());
        let vk = node("vk", &[("type", "virtual-kubelet")], Some(0));
        assert_eq!(plan(Some(&vk), None, &no_jobs, &unknown, at(99), CREATION_DELAY), Round::default());
        let ni = node_image("n1", &[("zone", "a")]);
        assert!(plan(None, Some(&ni), &no_jobs, &unknown, at(1), CREATION_DELAY).delete, "Node gone");
        let mut deleting = ready.clone();
        deleting.metadata.deletion_timestamp = Some(Time(at(1)));
        assert!(plan(Some(&deleting), Some(&ni), &no_jobs, &unknown, at(1), CREATION_DELAY).delete);
        let fake = node_image("f", &[(FAKE_LABEL, "true")]);
        assert!(!plan(None, Some(&fake), &no_jobs, &unknown, at(1), CREATION_DELAY).delete, "fake NodeImages stay");
        assert!(!plan(Some(&ready), Some(&ni), &no_jobs, &unknown, at(1), CREATION_DELAY).delete);
        assert_eq!(plan(None, None, &no_jobs, &unknown, at(1), CREATION_DELAY), Round::default());
    }

    #[test]
    fn labels_follow_the_node() {
        let n = node("n1", &[("zone", "b")], Some(0));
        let ni = node_image("n1", &[("zone", "a")]);
        let r = plan(Some(&n), Some(&ni), &no_jobs, &unknown, at(100), CREATION_DELAY);
        let (p, why) = r.update.unwrap();
        assert_eq!(why, ["node labels changed"]);
        assert_eq!(apply(&ni, &p).metadata.labels.unwrap()["zone"], "b");
    }

    #[test]
    fn tags_of_gone_owners_expired_or_undated_are_dropped() {
        let n = node("n1", &[], Some(0));
        // j exists (uid-j); gone has no job; stale names j with another uid.
        let mut ni = tagged(node_image("n1", &[]), "nginx", "1", 0, &["uid-j", "uid-gone"], Some(("Succeeded", 0)));
        ni = tagged(ni, "nginx", "2", 0, &["uid-gone"], None);
        ni = tagged(ni, "busybox", "1", 0, &["uid-stale"], None);
        // A tag of another kind of owner is kept.
        ni = tagged(ni, "redis", "7", 0, &[], None);
        ni.spec.images.get_mut("redis").unwrap().tags[0].owner_references.push(ObjectReference {
            api_version: Some("apps/v1".into()),
            kind: Some("Deployment".into()),
            name: Some("d".into()),
            ..Default::default()
        });
        for t in &mut ni.spec.images.get_mut("busybox").unwrap().tags {
            t.owner_references[0].name = Some("j".into());
        }
        let jobs = |ns: &str, name: &str| job_j(ns, name).or_else(|| (name == "gone-but-other").then(String::new));
        let r = plan(Some(&n), Some(&ni), &jobs, &unknown, at(100), CREATION_DELAY);
        let after = apply(&ni, &r.update.unwrap().0);
        assert_eq!(after.spec.images.keys().collect::<Vec<_>>(), ["nginx", "redis"]);
        let tags = &after.spec.images["nginx"].tags;
        assert_eq!(tags.len(), 1);
        assert_eq!(tags[0].owner_references.iter().map(|r| r.uid.clone().unwrap()).collect::<Vec<_>>(), ["uid-j"]);

        // No createdAt: dropped.
        let mut undated = tagged(node_image("n1", &[]), "nginx", "1", 0, &["uid-j"], None);
        undated.spec.images.get_mut("nginx").unwrap().tags[0].created_at = None;
        let r = plan(Some(&n), Some(&undated), &job_j, &unknown, at(100), CREATION_DELAY);
        assert!(apply(&undated, &r.update.unwrap().0).spec.images.is_empty());

        // TTL after completion.
        let mut done = tagged(node_image("n1", &[]), "nginx", "1", 0, &["uid-j"], Some(("Succeeded", 0)));
        done.spec.images.get_mut("nginx").unwrap().tags[0].pull_policy =
            Some(crate::apis::nodeimage::ImageTagPullPolicy {
                ttl_seconds_after_finished: Some(60),
                ..Default::default()
            });
        done.status.as_mut().unwrap().image_statuses.get_mut("nginx").unwrap().tags[0].completion_time =
            Some(Time(at(10)));
        let r = plan(Some(&n), Some(&done), &job_j, &unknown, at(30), CREATION_DELAY);
        assert_eq!((r.update.is_none(), r.requeue), (true, Some(SignedDuration::from_secs(40))));
        let r = plan(Some(&n), Some(&done), &job_j, &unknown, at(70), CREATION_DELAY);
        assert!(apply(&done, &r.update.unwrap().0).spec.images.is_empty());
    }

    #[test]
    fn old_style_secrets_whose_secret_is_gone_are_dropped() {
        use crate::apis::nodeimage::v1beta1::ReferenceObject;
        let n = node("n1", &[], Some(0));
        let mut ni = tagged(node_image("n1", &[]), "nginx", "1", 0, &["uid-j"], None);
        let r = |name: &str, mode: &str| ReferenceObject {
            namespace: "kruise-daemon-config".into(),
            name: name.into(),
            mode: mode.into(),
        };
        ni.spec.images.get_mut("nginx").unwrap().pull_secrets =
            vec![r("old-gone", ""), r("old-here", ""), r("new", "batch"), r("unknown", "")];
        let secrets = |_: &str, name: &str| match name {
            "old-gone" => Some(false),
            "old-here" => Some(true),
            _ => None,
        };
        let p = plan(Some(&n), Some(&ni), &job_j, &secrets, at(1), CREATION_DELAY).update.unwrap().0;
        let names: Vec<_> = apply(&ni, &p).spec.images["nginx"].pull_secrets.iter().map(|s| s.name.clone()).collect();
        assert_eq!(names, ["old-here", "new", "unknown"]);
    }

    #[test]
    fn unanswered_and_overdue_tags_fail() {
        let n = node("n1", &[], Some(0));
        // Created at 0, never answered.
        let ni = tagged(node_image("n1", &[]), "nginx", "1", 2, &["uid-j"], None);
        let r = plan(Some(&n), Some(&ni), &job_j, &unknown, at(100), CREATION_DELAY);
        assert_eq!((r.status.is_none(), r.requeue), (true, Some(SignedDuration::from_secs(500))));
        let r = plan(Some(&n), Some(&ni), &job_j, &unknown, at(600), CREATION_DELAY);
        let (st, warnings) = r.status.unwrap();
        let t = &st.image_statuses["nginx"].tags[0];
        assert_eq!(
            (t.phase.as_str(), t.version, t.message.as_str()),
            ("Failed", 2, "node has not responded for a long time")
        );
        assert_eq!((st.desired, st.failed, st.pulling), (1, 1, 0));
        assert_eq!(warnings.len(), 2, "on the owner and on the NodeImage");
        assert_eq!(
            warnings[0].message,
            "Failed to pull image nginx:1 on node n1 for node has not responded for a long time"
        );

        // Pulling past deadline + response timeout.
        let mut ni = tagged(node_image("n1", &[]), "nginx", "1", 0, &["uid-j"], Some(("Pulling", 0)));
        ni.spec.images.get_mut("nginx").unwrap().tags[0].pull_policy =
            Some(crate::apis::nodeimage::ImageTagPullPolicy {
                active_deadline_seconds: Some(100),
                ..Default::default()
            });
        let r = plan(Some(&n), Some(&ni), &job_j, &unknown, at(650), CREATION_DELAY);
        assert_eq!((r.status.is_none(), r.requeue), (true, Some(SignedDuration::from_secs(50))));
        let (st, _) = plan(Some(&n), Some(&ni), &job_j, &unknown, at(700), CREATION_DELAY).status.unwrap();
        assert_eq!(st.image_statuses["nginx"].tags[0].message, "pulling exceeds the activeDeadlineSeconds");
        // A settled NodeImage: nothing to do.
        let ok = tagged(node_image("n1", &[]), "nginx", "1", 0, &["uid-j"], Some(("Succeeded", 0)));
        assert_eq!(plan(Some(&n), Some(&ok), &job_j, &unknown, at(10_000), CREATION_DELAY), Round::default());
    }
}
