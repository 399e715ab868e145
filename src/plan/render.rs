//! How `kruise plan` prints a plan: text (one line per action, then why the rollout waits) or
//! JSON, one object per CloneSet with exactly the keys issue 11 specifies: `cloneSet`,
//! `currentRevision`, `updateRevision`, `diff` (every field of kruise's `expectationDiffs`) and
//! `actions` (`action`, `pod` when there is one, `revision`, `reason`, `images` on updateInPlace);
//! one object per Advanced StatefulSet (issue 27 item 7): `statefulSet`, `currentRevision`,
//! `updateRevision`, `actions` as for CloneSets, and `waiting` and `errors` (sentences: what the
//! rollout waits for, what stops it); one object per SidecarSet (issue 28 item 10): `sidecarSet`,
//! `latestRevision`, `status` (what the round computes) and `statusWrite` (whether it is
//! written), `revisionWrites` and `actions` (pod actions, each with its `namespace`), `pods` (every
//! injected pod: `pod`, `state`, `reason`, `images` when upgraded next, `marked` when this round
//! marks it not upgradable), `waiting`, and the Events on the set and on pods. With pre-download
//! planned (spec §7), CloneSet and StatefulSet objects gain `preDownload`: `reason`, `jobs` (the
//! ImagePullJobs as they would be created), `actions` and `errors`. One object per Advanced
//! DaemonSet (issue 33 item 5): `daemonSet`, `updateRevision` (the update revision's hash), `nodes`
//! (how many the input held), `status` (the status the round computes), `statusWrite`, `actions`
//! as for CloneSets, `waiting`, `errors` and `events`.

use std::fmt::Write;

use serde_json::{Map, Value, json};

use super::sidecarset::{PlannedSidecarSet, PodState};
use super::{Planned, PlannedDaemonSet, PlannedSet};
use crate::core::predownload::Round;
use crate::core::rollout::actions::{Action, ActionKind};
use crate::core::rollout::cloneset::plan::RevisionSource;

/// The JSON name of an action kind.
pub fn kind_name(kind: ActionKind) -> String {
    serde_json::to_value(kind).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

fn action_json(a: &Action) -> Value {
    let mut m = Map::new();
    m.insert("action".into(), json!(kind_name(a.kind)));
    if let Some(p) = &a.pod {
        m.insert("pod".into(), json!(p));
    }
    m.insert("revision".into(), json!(a.revision));
    m.insert("reason".into(), json!(a.reason));
    if a.kind == ActionKind::UpdateInPlace {
        m.insert("images".into(), json!(a.images));
    }
    Value::Object(m)
}

/// `preDownload`: why, the jobs the round would create (whole objects, as they would be sent),
/// and its actions.
fn predownload_json(r: &Round) -> Value {
    json!({
        "reason": r.plan.reason,
        "jobs": r.plan.create,
        "actions": r.actions.iter().map(action_json).collect::<Vec<_>>(),
        "errors": r.plan.errors,
    })
}

/// The pre-download lines of a text plan.
fn predownload_text(out: &mut String, r: Option<&Round>) {
    let Some(r) = r else { return };
    let _ = writeln!(out, "  pre-download: {}", r.plan.reason);
    for job in &r.plan.create {
        let spec = &job.spec;
        let parallelism = spec.parallelism.as_ref().map(crate::compat::intstr::go_string).unwrap_or_default();
        let timeout = spec.pull_policy.as_ref().and_then(|p| p.timeout_seconds).unwrap_or_default();
        let _ = writeln!(
            out,
            "    ImagePullJob {}: image {}, parallelism {parallelism}, timeout {timeout}s",
            job.metadata.name.as_deref().unwrap_or(""),
            spec.image
        );
    }
    for a in r.actions.iter().filter(|a| a.kind != ActionKind::CreateImagePullJob) {
        let _ = writeln!(out, "    {} {}: {}", kind_name(a.kind), a.revision, a.reason);
    }
    for e in &r.plan.errors {
        let _ = writeln!(out, "    error: {e}");
    }
}

/// Adds `preDownload` to a plan's JSON object when pre-download was planned.
fn with_predownload(mut v: Value, r: Option<&Round>) -> Value {
    if let (Some(r), Value::Object(m)) = (r, &mut v) {
        m.insert("preDownload".into(), predownload_json(r));
    }
    v
}

/// The JSON object of one CloneSet's plan.
pub fn json(p: &Planned) -> Value {
    let v = json!({
        "cloneSet": p.plan.cloneset,
        "currentRevision": p.plan.current_revision,
        "updateRevision": p.plan.update_revision,
        "diff": p.plan.diff,
        "actions": p.plan.actions.iter().map(action_json).collect::<Vec<_>>(),
    });
    with_predownload(v, p.predownload.as_ref())
}

/// The JSON object of one Advanced StatefulSet's plan.
pub fn statefulset_json(p: &PlannedSet) -> Value {
    let v = json!({
        "statefulSet": p.plan.statefulset,
        "currentRevision": p.plan.current_revision,
        "updateRevision": p.plan.update_revision,
        "actions": p.plan.actions.iter().map(action_json).collect::<Vec<_>>(),
        "waiting": p.plan.waiting,
        "errors": p.plan.errors,
    });
    with_predownload(v, p.predownload.as_ref())
}

/// The JSON object of one Advanced DaemonSet's plan.
pub fn daemonset_json(p: &PlannedDaemonSet) -> Value {
    let plan = &p.plan;
    let v = json!({
        "daemonSet": plan.daemonset,
        "updateRevision": plan.hash,
        "nodes": p.nodes,
        "status": plan.status,
        "statusWrite": plan.status_write.is_some(),
        "actions": plan.actions.iter().map(action_json).collect::<Vec<_>>(),
        "waiting": plan.waiting,
        "errors": plan.errors,
        "events": plan.events,
    });
    with_predownload(v, p.predownload.as_ref())
}

/// The text of one Advanced DaemonSet's plan.
pub fn daemonset_text(p: &PlannedDaemonSet) -> String {
    let plan = &p.plan;
    let mut out = String::new();
    let revision = if plan.hash.is_empty() { "-" } else { plan.hash.as_str() };
    let _ = writeln!(out, "DaemonSet {}: update revision {revision}, {} nodes in the input", plan.daemonset, p.nodes);
    let st = &plan.status;
    let _ = writeln!(
        out,
        "  nodes: {} desired ({} scheduled, {} misscheduled, {} ready, {} available, {} updated)",
        st.desired_number_scheduled,
        st.current_number_scheduled,
        st.number_misscheduled,
        st.number_ready,
        st.number_available,
        st.updated_number_scheduled
    );
    actions_text(&mut out, &plan.actions, &plan.waiting, &plan.errors);
    predownload_text(&mut out, p.predownload.as_ref());
    for e in &plan.events {
        let _ = writeln!(out, "  event: {:?} {}: {}", e.type_, e.reason, e.message);
    }
    if p.not_owned > 0 {
        let _ = writeln!(
            out,
            "  note: {} pods match the selector but another controller owns them (the set adopts only orphans)",
            p.not_owned
        );
    }
    if p.predownload.as_ref().is_none_or(|r| r.actions.is_empty()) {
        nothing_to_do(&mut out, &plan.actions, &plan.waiting, &plan.errors);
    }
    out
}

/// The text of one Advanced StatefulSet's plan.
pub fn statefulset_text(p: &PlannedSet) -> String {
    let plan = &p.plan;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "StatefulSet {}: current revision {}, update revision {}",
        plan.statefulset, plan.current_revision, plan.update_revision
    );
    let st = &plan.status;
    let _ = writeln!(
        out,
        "  pods: {} ({} ready, {} available, {} current, {} updated, {} updated ready)",
        st.replicas,
        st.ready_replicas,
        st.available_replicas,
        st.current_replicas,
        st.updated_replicas,
        st.updated_ready_replicas
    );
    actions_text(&mut out, &plan.actions, &plan.waiting, &plan.errors);
    predownload_text(&mut out, p.predownload.as_ref());
    if p.not_owned > 0 {
        let _ = writeln!(
            out,
            "  note: {} pods match the selector but another controller owns them (the set adopts only orphans)",
            p.not_owned
        );
    }
    if p.predownload.as_ref().is_none_or(|r| r.actions.is_empty()) {
        nothing_to_do(&mut out, &plan.actions, &plan.waiting, &plan.errors);
    }
    out
}

/// Action lines, then why the rollout waits and what stops it.
fn actions_text(out: &mut String, actions: &[Action], waiting: &[String], errors: &[String]) {
    let width = actions.iter().map(|a| kind_name(a.kind).len()).max().unwrap_or(0);
    for a in actions {
        let (subject, target) = match (&a.pod, a.batch) {
            (Some(pod), _) if !a.revision.is_empty() => (pod.clone(), format!(" -> {}", a.revision)),
            (Some(pod), _) => (pod.clone(), String::new()),
            (None, Some(b)) => (format!("new pod (batch {b})"), format!(" -> {}", a.revision)),
            (None, None) => (if a.revision.is_empty() { "-".to_string() } else { a.revision.clone() }, String::new()),
        };
        let _ = writeln!(out, "  {:width$}  {subject}{target}: {}", kind_name(a.kind), a.reason);
    }
    for w in waiting {
        let _ = writeln!(out, "  waiting: {w}");
    }
    for e in errors {
        let _ = writeln!(out, "  error: {e}");
    }
}

/// "nothing to do" when a plan has no action, no wait and no error.
fn nothing_to_do(out: &mut String, actions: &[Action], waiting: &[String], errors: &[String]) {
    if actions.is_empty() && waiting.is_empty() && errors.is_empty() {
        let _ = writeln!(out, "  nothing to do");
    }
}

/// The text of one CloneSet's plan.
pub fn text(p: &Planned) -> String {
    let plan = &p.plan;
    let mut out = String::new();
    let source = match p.revision_source {
        RevisionSource::Status => "from status",
        RevisionSource::Compute => "computed from the template",
    };
    let _ = writeln!(
        out,
        "CloneSet {}: current revision {}, update revision {} ({source})",
        plan.cloneset, plan.current_revision, plan.update_revision
    );
    let st = &plan.status;
    let _ = writeln!(
        out,
        "  pods: {} ({} ready, {} available, {} updated, {} expected updated)",
        st.replicas, st.ready_replicas, st.available_replicas, st.updated_replicas, st.expected_updated_replicas
    );
    let d = serde_json::to_value(plan.diff).unwrap_or_default();
    let fields: Vec<String> = d.as_object().into_iter().flatten().map(|(k, v)| format!("{k}={v}")).collect();
    let _ = writeln!(out, "  diff: {}", fields.join(" "));
    actions_text(&mut out, &plan.actions, &plan.waiting, &plan.errors);
    predownload_text(&mut out, p.predownload.as_ref());
    if p.not_owned > 0 {
        let _ = writeln!(
            out,
            "  note: {} pods match the selector but are not owned by this CloneSet (the controller never adopts pods)",
            p.not_owned
        );
    }
    if p.predownload.as_ref().is_none_or(|r| r.actions.is_empty()) {
        nothing_to_do(&mut out, &plan.actions, &plan.waiting, &plan.errors);
    }
    out
}

/// The JSON object of one SidecarSet's plan.
pub fn sidecarset_json(p: &PlannedSidecarSet) -> Value {
    let plan = &p.plan;
    let actions: Vec<Value> = plan
        .pod_actions
        .iter()
        .flat_map(|(ns, list)| {
            list.iter().map(move |a| {
                let mut v = action_json(a);
                if let Value::Object(m) = &mut v {
                    m.insert("namespace".into(), json!(ns));
                }
                v
            })
        })
        .collect();
    let pod_events: Vec<Value> = plan
        .pod_events
        .iter()
        .map(|e| json!({"pod": format!("{}/{}", e.namespace, e.name), "type": e.event.type_, "reason": e.event.reason, "message": e.event.message}))
        .collect();
    json!({
        "sidecarSet": p.name,
        "latestRevision": plan.latest_revision,
        "status": plan.status,
        "statusWrite": plan.status_write.is_some(),
        "revisionWrites": p.revision_actions.iter().map(action_json).collect::<Vec<_>>(),
        "actions": actions,
        "pods": p.pods,
        "waiting": plan.waiting,
        "events": plan.events,
        "podEvents": pod_events,
    })
}

fn state_name(state: PodState) -> &'static str {
    match state {
        PodState::UpgradeNext => "upgrade",
        PodState::ResetHotUpgrade => "reset",
        PodState::Updated => "updated",
        PodState::Updating => "updating",
        PodState::Waiting => "waiting",
        PodState::NotUpgradable => "not upgradable",
        PodState::NotManaged => "not managed",
    }
}

/// The text of one SidecarSet's plan.
pub fn sidecarset_text(p: &PlannedSidecarSet) -> String {
    let plan = &p.plan;
    let st = &plan.status;
    let mut out = String::new();
    let _ = writeln!(out, "SidecarSet {}: latest revision {}", p.name, plan.latest_revision);
    let _ = writeln!(
        out,
        "  pods: {} matched ({} ready, {} updated, {} updated ready)",
        st.matched_pods, st.ready_pods, st.updated_pods, st.updated_ready_pods
    );
    let written = if plan.status_write.is_some() { "status write" } else { "status unchanged" };
    let _ = writeln!(
        out,
        "  {written}: observedGeneration {}, matchedPods {}, updatedPods {}, readyPods {}, updatedReadyPods {}, \
         latestRevision {}",
        st.observed_generation,
        st.matched_pods,
        st.updated_pods,
        st.ready_pods,
        st.updated_ready_pods,
        st.latest_revision
    );
    let width = p.revision_actions.iter().map(|a| kind_name(a.kind).len()).max().unwrap_or(0);
    for a in &p.revision_actions {
        let _ = writeln!(out, "  {:width$}  {}", kind_name(a.kind), a.revision);
    }
    let width = p.pods.iter().map(|l| state_name(l.state).len()).max().unwrap_or(0);
    for l in &p.pods {
        let mut detail = match l.state {
            PodState::UpgradeNext if !l.images.is_empty() => {
                let images: Vec<String> = l.images.iter().map(|(c, i)| format!("{c}={i}")).collect();
                format!("-> {}: images {}", plan.latest_revision, images.join(" "))
            }
            _ => l.reason.clone(),
        };
        if l.marked {
            detail.push_str(" (this round writes SidecarSetUpgradable=False)");
        }
        let _ = writeln!(out, "  {:width$}  {}: {detail}", state_name(l.state), l.pod);
    }
    for w in &plan.waiting {
        let _ = writeln!(out, "  waiting: {w}");
    }
    for e in &plan.events {
        let _ = writeln!(out, "  event: {:?} {}: {}", e.type_, e.reason, e.message);
    }
    let acts = plan.pod_actions.values().map(Vec::len).sum::<usize>();
    if acts == 0 && p.revision_actions.is_empty() && plan.status_write.is_none() && plan.waiting.is_empty() {
        let _ = writeln!(out, "  nothing to do");
    }
    out
}
