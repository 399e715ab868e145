//! `kruise plan` for UnitedDeployments (issue 34): what the UnitedDeployment controller's next
//! round does, from manifests such as `kubectl get uniteddeployment,clonesets,pods,controllerrevisions
//! -o yaml` (add `statefulsets.apps.kruise.io`, `statefulsets.apps` or `deployments` for those
//! subset kinds, and `replicasets` are not needed: a Deployment's pods are found by its selector).
//!
//! The round is the controller's ([`crate::core::uniteddeployment::subsets::plan`]) on the subset
//! workloads the UnitedDeployment controls (every kind), their pods, and the revision kruise would
//! use ([`crate::core::uniteddeployment::history`] over the input's ControllerRevisions — the
//! revision to create is named, and one of that name with equal data in the input is used). It
//! shows the update revision, the replicas each subset gets, the writes (workloads created,
//! rewritten or deleted, stuck pods deleted, reserved labels written), the status and whether it
//! changes, and when the round asks to be looked at again. A status whose update revision differs
//! from the one computed here while its generation is observed gets a note: after a switch from
//! Go kruise that would mean a revision hashed differently (every subset rewritten).

use std::fmt::Write;

use k8s_openapi::api::apps::v1::{ControllerRevision, Deployment, StatefulSet as AppsStatefulSet};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use crate::apis::cloneset::CloneSet;
use crate::apis::statefulset::v1beta1::StatefulSet as AdvancedStatefulSet;
use crate::apis::uniteddeployment::{UnitedDeployment, UnitedDeploymentStatus};
use crate::core::uniteddeployment::history::{self, Step};
use crate::core::uniteddeployment::subsets::{Action, Existing, Plan, owned_by, plan, workload_pods};
use crate::core::uniteddeployment::workload::Workload;

/// The objects of the input a UnitedDeployment's round reads.
pub struct Input<'a> {
    pub clonesets: &'a [CloneSet],
    pub advanced_statefulsets: &'a [AdvancedStatefulSet],
    pub statefulsets: &'a [AppsStatefulSet],
    pub deployments: &'a [Deployment],
    pub pods: &'a [Pod],
    pub revisions: &'a [ControllerRevision],
}

/// One UnitedDeployment's round.
#[derive(Debug)]
pub struct PlannedUnitedDeployment {
    /// `namespace/name`.
    pub name: String,
    /// The update revision's name.
    pub update_revision: String,
    /// `create` or `renumber` when the round writes the revision first.
    pub revision_write: Option<&'static str>,
    /// Revisions beyond `revisionHistoryLimit` the round deletes first.
    pub expired_revisions: Vec<String>,
    /// The current revision kruise names.
    pub current_revision: String,
    /// The round, or why it makes none (kruise's "Specified subset replicas is ineffective").
    pub plan: Result<Plan, String>,
    /// The status the round computes differs from the input's.
    pub status_write: bool,
    /// Notes on the input.
    pub notes: Vec<String>,
}

fn namespace(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> &str {
    meta.namespace.as_deref().unwrap_or("default")
}

/// The subset workloads of every kind `ud` controls, oldest first, each with its pods.
fn existing(ud: &UnitedDeployment, input: &Input<'_>) -> Vec<Existing> {
    let ns = namespace(&ud.metadata);
    let uid = ud.metadata.uid.as_deref().unwrap_or("");
    let mine = |meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        namespace(meta) == ns && owned_by(meta, uid)
    };
    let mut workloads: Vec<Workload> = Vec::new();
    workloads.extend(input.clonesets.iter().filter(|w| mine(&w.metadata)).cloned().map(Workload::CloneSet));
    workloads.extend(
        input.advanced_statefulsets.iter().filter(|w| mine(&w.metadata)).cloned().map(Workload::AdvancedStatefulSet),
    );
    workloads.extend(input.statefulsets.iter().filter(|w| mine(&w.metadata)).cloned().map(Workload::StatefulSet));
    workloads.extend(input.deployments.iter().filter(|w| mine(&w.metadata)).cloned().map(Workload::Deployment));
    workloads.sort_by(Workload::oldest_first);
    let in_ns: Vec<std::sync::Arc<Pod>> =
        input.pods.iter().filter(|p| namespace(&p.metadata) == ns).cloned().map(std::sync::Arc::new).collect();
    workloads.into_iter().map(|w| Existing { pods: workload_pods(&w, &in_ns), workload: w }).collect()
}

/// Plans every UnitedDeployment of `uds` (in namespace/name order) at `now`.
pub fn plan_uniteddeployments(
    uds: &mut [UnitedDeployment],
    input: &Input<'_>,
    now: Timestamp,
) -> Vec<PlannedUnitedDeployment> {
    uds.sort_by(|a, b| (namespace(&a.metadata), &a.metadata.name).cmp(&(namespace(&b.metadata), &b.metadata.name)));
    uds.iter()
        .map(|ud| {
            let ns = namespace(&ud.metadata);
            let in_ns: Vec<&ControllerRevision> =
                input.revisions.iter().filter(|r| namespace(&r.metadata) == ns).collect();
            let (expired, controlled) = history::expire(ud, history::controlled(ud, in_ns.iter().copied()));
            let expired: Vec<String> = expired.into_iter().filter_map(|r| r.metadata.name).collect();
            let status = ud.status.clone().unwrap_or_default();
            let collision = status.collision_count.unwrap_or(0);
            let (update, revision_write, counted) = match history::step(ud, &controlled, collision) {
                Step::Newest(name) => (name, None, collision),
                Step::Renumber { name, .. } => (name, Some("renumber"), collision),
                Step::Create { revision } => {
                    let (made, counted, exists) = history::to_create(ud, revision, collision, in_ns.iter().copied());
                    (made.metadata.name.unwrap_or_default(), (!exists).then_some("create"), counted)
                }
            };
            let current = history::current(&controlled, &status.current_revision, &update);
            let mut notes = Vec::new();
            let recorded = status.update_status.as_ref().map_or("", |u| u.updated_revision.as_str());
            let observed = ud.status.as_ref().is_some_and(|s| Some(s.observed_generation) == ud.metadata.generation);
            if observed && !recorded.is_empty() && recorded != update {
                notes.push(format!(
                    "the status names update revision {recorded} for this generation: a revision computed \
                     differently (after a switch from Go kruise, every subset would be rewritten)"
                ));
            }
            let subsets = existing(ud, input);
            let planned = plan(ud, &subsets, &update, &current, Time(now));
            let status_write = planned.as_ref().is_ok_and(|p| {
                let mut s: UnitedDeploymentStatus = p.status.clone();
                s.collision_count = if counted != collision { Some(counted) } else { status.collision_count };
                ud.status.as_ref() != Some(&s)
            });
            PlannedUnitedDeployment {
                name: format!("{ns}/{}", ud.metadata.name.as_deref().unwrap_or("")),
                update_revision: update,
                revision_write,
                expired_revisions: expired,
                current_revision: current,
                plan: planned,
                status_write,
                notes,
            }
        })
        .collect()
}

/// One write as JSON (`action`, `subset`, and what it names).
fn action_json(a: &Action) -> Value {
    match a {
        Action::Create { subset, workload } => json!({"action": "createSubset", "subset": subset,
            "kind": workload.kind().name(), "replicas": workload.spec_replicas()}),
        Action::Update { subset, name, workload } => json!({"action": "updateSubset", "subset": subset,
            "kind": workload.kind().name(), "name": name, "replicas": workload.spec_replicas(),
            "revision": workload.revision()}),
        Action::Delete { kind, name, reason, .. } => {
            json!({"action": "deleteSubset", "kind": kind.name(), "name": name, "reason": reason})
        }
        Action::DeletePod { subset, name, .. } => json!({"action": "deleteStuckPod", "subset": subset, "pod": name}),
        Action::LabelPod { subset, pod } => {
            json!({"action": "labelReservedPod", "subset": subset, "pod": pod.name, "reserved": pod.reserved})
        }
    }
}

/// The JSON of one UnitedDeployment's round: `unitedDeployment`, `updateRevision`,
/// `revisionWrite`, `expiredRevisions`, `currentRevision`, `subsetReplicas`, `actions`, `status`, `statusWrite`,
/// `requeueAfterSeconds`, `errors` and `notes`.
pub fn json(p: &PlannedUnitedDeployment) -> Value {
    let (replicas, actions, status, requeue, errors) = match &p.plan {
        Ok(plan) => (
            json!(plan.next_replicas),
            plan.actions.iter().map(action_json).collect::<Vec<_>>(),
            serde_json::to_value(&plan.status).unwrap_or(Value::Null),
            plan.requeue_after.map(|d| d.as_secs()),
            Vec::new(),
        ),
        Err(e) => (json!({}), Vec::new(), Value::Null, None, vec![e.clone()]),
    };
    json!({
        "unitedDeployment": p.name,
        "updateRevision": p.update_revision,
        "revisionWrite": p.revision_write,
        "expiredRevisions": p.expired_revisions,
        "currentRevision": p.current_revision,
        "subsetReplicas": replicas,
        "actions": actions,
        "status": status,
        "statusWrite": p.status_write,
        "requeueAfterSeconds": requeue,
        "errors": errors,
        "notes": p.notes,
    })
}

/// The text of one UnitedDeployment's round.
pub fn text(p: &PlannedUnitedDeployment) -> String {
    let mut out = String::new();
    let made = match p.revision_write {
        Some("create") => " (created this round)",
        Some(_) => " (renumbered newest this round)",
        None => "",
    };
    let _ = writeln!(
        out,
        "UnitedDeployment {}: update revision {}{made}, current revision {}",
        p.name, p.update_revision, p.current_revision
    );
    for name in &p.expired_revisions {
        let _ = writeln!(out, "  delete the revision {name} (beyond revisionHistoryLimit)");
    }
    let plan = match &p.plan {
        Ok(plan) => plan,
        Err(e) => {
            let _ = writeln!(out, "  error: {e}; nothing is written");
            notes_text(&mut out, &p.notes);
            return out;
        }
    };
    let replicas: Vec<String> = plan.next_replicas.iter().map(|(s, n)| format!("{s} {n}")).collect();
    let _ = writeln!(out, "  subsets: {}", replicas.join(", "));
    for a in &plan.actions {
        let line = match a {
            Action::Create { subset, workload } => format!(
                "create a {} for subset {subset} ({} replicas)",
                workload.kind().name(),
                workload.spec_replicas()
            ),
            Action::Update { subset, name, workload } => format!(
                "update the {} {name} of subset {subset} ({} replicas, revision {})",
                workload.kind().name(),
                workload.spec_replicas(),
                workload.revision()
            ),
            Action::Delete { kind, name, reason, .. } => format!("delete the {} {name} ({reason})", kind.name()),
            Action::DeletePod { subset, name, .. } => format!("delete the stuck pod {name} of subset {subset}"),
            Action::LabelPod { subset, pod } => {
                format!("label pod {} of subset {subset} reserved={}", pod.name, pod.reserved)
            }
        };
        let _ = writeln!(out, "  {line}");
    }
    let s = &plan.status;
    let reserved = if s.reserved_pods > 0 { format!(" ({} reserved)", s.reserved_pods) } else { String::new() };
    let written = if p.status_write { "written" } else { "unchanged" };
    let _ = writeln!(
        out,
        "  status: {} replicas{reserved}, {} ready, {} updated ({} ready); {written}",
        s.replicas, s.ready_replicas, s.updated_replicas, s.updated_ready_replicas
    );
    if let Some(d) = plan.requeue_after {
        let _ = writeln!(out, "  looked at again in {}s (adaptive scheduling)", d.as_secs());
    }
    notes_text(&mut out, &p.notes);
    if plan.actions.is_empty() && p.revision_write.is_none() && p.expired_revisions.is_empty() && !p.status_write {
        let _ = writeln!(out, "  nothing to do");
    }
    out
}

fn notes_text(out: &mut String, notes: &[String]) {
    for n in notes {
        let _ = writeln!(out, "  note: {n}");
    }
}
