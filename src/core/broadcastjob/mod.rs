//! One BroadcastJob round, kruise's `ReconcileBroadcastJob.Reconcile`
//! (`pkg/controller/broadcastjob/broadcastjob_controller.go` and `broadcastjob_utils.go`, v1.8.4;
//! issue 33 item 3), as a pure plan. The steps, in kruise's order:
//! 1. a finished job (a Complete or Failed condition, `completionPolicy` not Never): delete it
//!    once `ttlSecondsAfterFinished` has passed since `completionTime`, else look again then;
//! 2. `startTime` (now, first round), phase `running` when unset;
//! 3. the job's pods (controller reference to the job, the job's two labels) by node
//!    ([`assigned_node`]); active / failed / succeeded as `filterPods` (an OnFailure pod restarted
//!    more than `failurePolicy.restartLimit` times counts as failed);
//! 4. the desired nodes ([`fitness::check`] on the existing pod, or a mock pod from the template):
//!    nodes without a pod yet, and pods that no longer fit (deleted while the job runs);
//! 5. a `failed` job stays as it is; `paused` → phase `paused`; unpaused → `running`;
//! 6. failed pods: `Pause` pauses the phase (kruise also sets `spec.paused`, on its copy only:
//!    a status update does not write the spec), `FailFast` fails the job, `Continue` goes on;
//!    past `activeDeadlineSeconds` (Always only) fails it too;
//! 7. a failed job: delete the active pods, condition Failed, `completionTime`; else delete the
//!    pods that no longer fit, create pods on at most `parallelism − active` new nodes (in node
//!    name order), and under `Always` complete the job once every desired node has a finished pod;
//! 8. the status, when it changed.
//!
//! Pods are kruise's `GetPodFromTemplate`: `generateName: <job>-`, the template's labels plus
//! `broadcastjob-name` / `broadcastjob-controller-uid`, its annotations and finalizers, the
//! controller reference (`apps.kruise.io/v1alpha1`, blockOwnerDeletion), bound to their node by
//! the `metadata.name` node affinity kruise writes (`--assign-bcj-pods-by-scheduler`, default on:
//! the scheduler binds them).

pub mod fitness;
#[cfg(test)]
mod props;

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    Affinity, Node, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use crate::apis::broadcastjob::{BroadcastJob, BroadcastJobStatus, JobCondition};
use crate::compat::intstr::k8s_value_from_int_or_percent;
use crate::core::defaults::broadcastjob::{DEFAULT_PARALLELISM, FAIL_FAST, NEVER, PAUSE};
use crate::core::rollout::plan::Event;
use crate::core::validation::broadcastjob::{CONTROLLER_UID_LABEL, JOB_NAME_LABEL};
use crate::core::validation::meta::name_is_dns_subdomain;

/// Phase `completed`.
pub const PHASE_COMPLETED: &str = "completed";
/// Phase `running`.
pub const PHASE_RUNNING: &str = "running";
/// Phase `paused`.
pub const PHASE_PAUSED: &str = "paused";
/// Phase `failed`.
pub const PHASE_FAILED: &str = "failed";
/// Condition `Complete`.
pub const JOB_COMPLETE: &str = "Complete";
/// Condition `Failed`.
pub const JOB_FAILED: &str = "Failed";
/// The owner reference's API version (kruise v1.8's `controllerKind`).
pub const API_VERSION: &str = "apps.kruise.io/v1alpha1";

/// What a round reads.
pub struct Input<'a> {
    pub job: &'a BroadcastJob,
    /// Pods that may belong to the job (those filed under its uid); the planner keeps the ones
    /// with its controller reference and labels.
    pub pods: &'a [Arc<Pod>],
    /// Every node.
    pub nodes: &'a [Arc<Node>],
    pub now: Timestamp,
}

/// A pod the round deletes (with its uid as a precondition).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodToDelete {
    pub name: String,
    pub uid: Option<String>,
    /// The node it was assigned to (the expectation's key).
    pub node: String,
}

/// A pod the round creates on a node.
#[derive(Clone, Debug, PartialEq)]
pub struct PodToCreate {
    pub node: String,
    pub pod: Pod,
}

/// What a round does.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// Delete the job (its TTL passed).
    pub delete_job: bool,
    /// Pods to delete, before any creation.
    pub delete: Vec<PodToDelete>,
    /// Pods to create, in node name order.
    pub create: Vec<PodToCreate>,
    /// The new status, when it changed.
    pub status: Option<BroadcastJobStatus>,
    /// Events on the job.
    pub events: Vec<Event>,
    /// Look again after this long.
    pub requeue: Option<SignedDuration>,
}

/// `IsJobFinished`: a true Complete or Failed condition, never under `completionPolicy: Never`.
pub fn is_finished(job: &BroadcastJob) -> bool {
    if job.spec.completion_policy.type_ == NEVER {
        return false;
    }
    job.status.as_ref().is_some_and(|s| {
        s.conditions.iter().any(|c| (c.type_ == JOB_COMPLETE || c.type_ == JOB_FAILED) && c.status == "True")
    })
}

/// The labels of the job's pods (`labelsAsMap`).
pub fn job_labels(job: &BroadcastJob) -> BTreeMap<String, String> {
    BTreeMap::from([
        (JOB_NAME_LABEL.to_string(), job.metadata.name.clone().unwrap_or_default()),
        (CONTROLLER_UID_LABEL.to_string(), job.metadata.uid.clone().unwrap_or_default()),
    ])
}

/// `getAssignedNode`: `spec.nodeName`, else the single `metadata.name In [node]` field
/// requirement of the required node affinity; "" when neither.
pub fn assigned_node(pod: &Pod) -> String {
    let Some(spec) = pod.spec.as_ref() else { return String::new() };
    if let Some(n) = spec.node_name.as_deref().filter(|n| !n.is_empty()) {
        return n.to_string();
    }
    let terms = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| na.required_during_scheduling_ignored_during_execution.as_ref())
        .map(|s| s.node_selector_terms.as_slice())
        .unwrap_or(&[]);
    for t in terms {
        for r in t.match_fields.iter().flatten() {
            let values = r.values.as_deref().unwrap_or(&[]);
            if r.key == "metadata.name" && r.operator == "In" && values.len() == 1 {
                return values[0].clone();
            }
        }
    }
    String::new()
}

/// Whether `pod` belongs to `job`: its controller reference is the job (kind and uid) and it
/// carries the job's labels (kruise lists by the labels, then keeps the controlled pods).
pub fn owns(job: &BroadcastJob, pod: &Pod) -> bool {
    let uid = job.metadata.uid.as_deref().unwrap_or("");
    let controlled = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|r| r.controller == Some(true) && r.kind == "BroadcastJob" && r.uid == uid);
    let labels = pod.metadata.labels.as_ref();
    let labelled = job_labels(job).iter().all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v));
    controlled && labelled && pod.metadata.namespace == job.metadata.namespace
}

fn phase(pod: &Pod) -> &str {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("")
}

/// `isPodFailed`: an OnFailure pod whose containers restarted more than `restart_limit` times.
fn restarted_too_often(restart_limit: i32, pod: &Pod) -> bool {
    if pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref()) != Some("OnFailure") {
        return false;
    }
    let status = pod.status.as_ref();
    let restarts: i32 = status
        .into_iter()
        .flat_map(|s| s.init_container_statuses.iter().flatten().chain(s.container_statuses.iter().flatten()))
        .map(|c| c.restart_count)
        .sum();
    restarts > restart_limit
}

/// `filterPods`: (active, failed, succeeded).
fn filter_pods<'p>(restart_limit: i32, pods: &[&'p Pod]) -> (Vec<&'p Pod>, Vec<&'p Pod>, Vec<&'p Pod>) {
    let (mut active, mut failed, mut succeeded) = (Vec::new(), Vec::new(), Vec::new());
    for p in pods {
        match phase(p) {
            "Succeeded" => succeeded.push(*p),
            "Failed" => failed.push(*p),
            _ if p.metadata.deletion_timestamp.is_none() => {
                if restarted_too_often(restart_limit, p) {
                    failed.push(*p);
                } else {
                    active.push(*p);
                }
            }
            _ => {}
        }
    }
    (active, failed, succeeded)
}

/// `kubecontroller.IsPodActive`.
fn is_pod_active(pod: &Pod) -> bool {
    !matches!(phase(pod), "Succeeded" | "Failed") && pod.metadata.deletion_timestamp.is_none()
}

/// `NewMockPod`: the template bound to the node.
fn mock_pod(job: &BroadcastJob, template_labels: &BTreeMap<String, String>, node: &str) -> Pod {
    let mut spec = job.spec.template.spec.clone().unwrap_or_default();
    spec.node_name = Some(node.to_string());
    let mut meta = job.spec.template.metadata.clone().unwrap_or_default();
    meta.labels = Some(template_labels.clone());
    meta.namespace.clone_from(&job.metadata.namespace);
    Pod { metadata: meta, spec: Some(spec), status: None }
}

/// The template's labels with the job's (`addLabelToPodTemplate`).
fn template_labels(job: &BroadcastJob) -> BTreeMap<String, String> {
    let mut labels = job.spec.template.metadata.as_ref().and_then(|m| m.labels.clone()).unwrap_or_default();
    labels.extend(job_labels(job));
    labels
}

/// `daemonsetutil.ReplaceDaemonSetPodNodeNameNodeAffinity`: the required node affinity becomes
/// the single term `metadata.name In [node]`; the rest of the affinity is kept.
pub fn bind_to_node(affinity: Option<Affinity>, node: &str) -> Affinity {
    let term = NodeSelectorTerm {
        match_fields: Some(vec![NodeSelectorRequirement {
            key: "metadata.name".into(),
            operator: "In".into(),
            values: Some(vec![node.to_string()]),
        }]),
        match_expressions: None,
    };
    let mut affinity = affinity.unwrap_or_default();
    let na = affinity.node_affinity.get_or_insert_with(NodeAffinity::default);
    match na.required_during_scheduling_ignored_during_execution.as_mut() {
        Some(sel) => sel.node_selector_terms = vec![term],
        None => {
            na.required_during_scheduling_ignored_during_execution =
                Some(NodeSelector { node_selector_terms: vec![term] })
        }
    }
    affinity
}

/// The controller reference of the job's pods (`metav1.NewControllerRef`).
pub fn owner_reference(job: &BroadcastJob) -> OwnerReference {
    OwnerReference {
        api_version: API_VERSION.into(),
        kind: "BroadcastJob".into(),
        name: job.metadata.name.clone().unwrap_or_default(),
        uid: job.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// `createPod`: `GetPodFromTemplate` (generateName `<job>-` when that is a valid pod name
/// prefix, else the job's name), bound to `node` by node affinity.
pub fn new_pod(job: &BroadcastJob, node: &str) -> Pod {
    let name = job.metadata.name.clone().unwrap_or_default();
    let prefix = format!("{name}-");
    let generate_name = if name_is_dns_subdomain(&prefix, true).is_empty() { prefix } else { name };
    let template_meta = job.spec.template.metadata.clone().unwrap_or_default();
    let mut spec = job.spec.template.spec.clone().unwrap_or_default();
    spec.affinity = Some(bind_to_node(spec.affinity.take(), node));
    Pod {
        metadata: ObjectMeta {
            generate_name: Some(generate_name),
            namespace: job.metadata.namespace.clone(),
            labels: Some(template_labels(job)),
            annotations: template_meta.annotations.filter(|a| !a.is_empty()),
            finalizers: template_meta.finalizers.filter(|f| !f.is_empty()),
            owner_references: Some(vec![owner_reference(job)]),
            ..Default::default()
        },
        spec: Some(spec),
        status: None,
    }
}

fn condition(type_: &str, message: String, now: Timestamp) -> JobCondition {
    JobCondition {
        type_: type_.into(),
        status: "True".into(),
        last_probe_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
        reason: type_.into(),
        message,
    }
}

fn secs(s: i64) -> SignedDuration {
    SignedDuration::from_secs(s)
}

/// One round.
pub fn plan(input: &Input<'_>) -> Plan {
    let Input { job, now, .. } = *input;
    let mut plan = Plan::default();
    let old = job.status.clone().unwrap_or_default();
    let policy = &job.spec.completion_policy;
    let always = policy.type_ != NEVER;
    // 1. Finished: the TTL.
    if is_finished(job) {
        if let (Some(ttl), Some(done)) = (policy.ttl_seconds_after_finished, old.completion_time.as_ref()) {
            let left = done.0.duration_since(Timestamp::UNIX_EPOCH) + secs(i64::from(ttl))
                - now.duration_since(Timestamp::UNIX_EPOCH);
            if left <= SignedDuration::ZERO {
                plan.delete_job = true;
            } else {
                plan.requeue = Some(left);
            }
        }
        return plan;
    }
    // 2. Start time and phase.
    let mut status = old.clone();
    let start = status.start_time.get_or_insert(Time(now)).0;
    if status.phase.is_empty() {
        status.phase = PHASE_RUNNING.into();
    }
    let deadline = policy.active_deadline_seconds.filter(|_| always);
    if let Some(d) = deadline {
        let left = start.duration_since(Timestamp::UNIX_EPOCH) + secs(d) - now.duration_since(Timestamp::UNIX_EPOCH);
        if left > SignedDuration::ZERO {
            plan.requeue = Some(left);
        }
    }
    // 3. The job's pods by node.
    let pods: Vec<&Pod> = input.pods.iter().map(AsRef::as_ref).filter(|p| owns(job, p)).collect();
    let mut by_node: BTreeMap<String, &Pod> = BTreeMap::new();
    for p in &pods {
        let node = assigned_node(p);
        if by_node.contains_key(&node) {
            plan.events.push(Event::warning(
                "DuplicatePodCreatedOnSameNode",
                format!("Duplicated pod {} found on same node {node}", p.metadata.name.as_deref().unwrap_or("")),
            ));
        }
        by_node.insert(node, p);
    }
    let restart_limit = job.spec.failure_policy.restart_limit;
    let (active_pods, failed_pods, succeeded_pods) = filter_pods(restart_limit, &pods);
    let mut active = len32(active_pods.len());
    let mut failed = len32(failed_pods.len());
    let succeeded = len32(succeeded_pods.len());
    // 4. Desired nodes (node name order).
    let labels = template_labels(job);
    let mut nodes: Vec<&Node> = input.nodes.iter().map(AsRef::as_ref).collect();
    nodes.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut desired_nodes: BTreeMap<String, Option<&Pod>> = BTreeMap::new();
    let mut rest: Vec<String> = Vec::new();
    let mut misfits: Vec<&Pod> = Vec::new();
    for node in nodes {
        let name = node.metadata.name.clone().unwrap_or_default();
        if let Some(pod) = by_node.get(&name) {
            if fitness::check(pod, node).is_err() && pod.metadata.deletion_timestamp.is_none() {
                misfits.push(pod);
                continue;
            }
            desired_nodes.insert(name, Some(*pod));
        } else if fitness::check(&mock_pod(job, &labels, &name), node).is_ok() {
            rest.push(name.clone());
            desired_nodes.insert(name, None);
        }
    }
    let desired = len32(desired_nodes.len());
    status.active = active;
    status.failed = failed;
    status.succeeded = succeeded;
    status.desired = desired;
    // 5. Failed, paused.
    if status.phase == PHASE_FAILED {
        return finish(plan, &old, status);
    }
    if job.spec.paused && (status.phase == PHASE_RUNNING || status.phase == PHASE_PAUSED) {
        status.phase = PHASE_PAUSED.into();
        return finish(plan, &old, status);
    }
    if !job.spec.paused && status.phase == PHASE_PAUSED {
        status.phase = PHASE_RUNNING.into();
        plan.events.push(Event::normal("Continue", "continue to process job".into()));
    }
    // 6. Failure policy and deadline.
    let mut job_failed: Option<(&'static str, String)> = None;
    if failed > 0 {
        match job.spec.failure_policy.type_.as_str() {
            PAUSE => {
                plan.events.push(Event::warning("Paused", "job is paused, due to failed pod".into()));
                status.phase = PHASE_PAUSED.into();
                return finish(plan, &old, status);
            }
            FAIL_FAST => {
                let message = "failure policy is FailurePolicyTypeFailFast and failed pod is found".to_string();
                plan.events.push(Event::warning(
                    "failed pod is found",
                    format!("{message}: {succeeded} pods succeeded, {failed} pods failed"),
                ));
                job_failed = Some(("failed pod is found", message));
            }
            _ => {}
        }
    }
    if job_failed.is_none()
        && let Some(d) = deadline
        && now.duration_since(start) >= secs(d)
    {
        let ns = job.metadata.namespace.as_deref().unwrap_or("");
        let name = job.metadata.name.as_deref().unwrap_or("");
        job_failed = Some(("DeadlineExceeded", format!("Job {ns}/{name} was active longer than specified deadline")));
    }
    // 7. Act.
    if let Some((reason, message)) = job_failed {
        for p in &active_pods {
            plan.delete.push(to_delete(p));
            failed += 1;
            active -= 1;
        }
        status.phase = PHASE_FAILED.into();
        plan.requeue = finish_job(&mut status, job, JOB_FAILED, message.clone(), now);
        plan.events
            .push(Event::warning(reason, format!("{message}: {succeeded} pods succeeded, {failed} pods failed")));
    } else {
        for p in &misfits {
            plan.delete.push(to_delete(p));
            failed += 1;
            active -= 1;
        }
        if job.metadata.deletion_timestamp.is_none() && !rest.is_empty() {
            let parallelism = k8s_value_from_int_or_percent(
                Some(job.spec.parallelism.as_ref().unwrap_or(&DEFAULT_PARALLELISM_INT)),
                i64::from(desired),
                true,
            );
            match parallelism {
                Ok(parallelism) => {
                    let parallelism = i32::try_from(parallelism).unwrap_or(i32::MAX);
                    if active > parallelism {
                        plan.events.push(Event::warning(
                            "TooManyActivePods",
                            "Number of active pods exceed parallelism limit".into(),
                        ));
                    } else if active < parallelism {
                        let diff = usize::try_from(parallelism - active).unwrap_or(0).min(rest.len());
                        for node in &rest[..diff] {
                            plan.create.push(PodToCreate { node: node.clone(), pod: new_pod(job, node) });
                            active += 1;
                        }
                    }
                }
                Err(e) => plan.events.push(Event::warning("InvalidParallelism", e)),
            }
        }
        let complete =
            always && !desired_nodes.is_empty() && desired_nodes.values().all(|p| p.is_some_and(|p| !is_pod_active(p)));
        if complete {
            let message = format!("Job completed, {succeeded} pods succeeded, {failed} pods failed");
            status.phase = PHASE_COMPLETED.into();
            plan.requeue = finish_job(&mut status, job, JOB_COMPLETE, message, now);
            let ns = job.metadata.namespace.as_deref().unwrap_or("");
            let name = job.metadata.name.as_deref().unwrap_or("");
            plan.events.push(Event::normal(
                "JobComplete",
                format!("Job {ns}/{name} is completed, {succeeded} pods succeeded, {failed} pods failed"),
            ));
        }
    }
    status.failed = failed;
    status.active = active;
    finish(plan, &old, status)
}

const DEFAULT_PARALLELISM_INT: k8s_openapi::apimachinery::pkg::util::intstr::IntOrString =
    k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(DEFAULT_PARALLELISM);

fn len32(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

fn to_delete(p: &Pod) -> PodToDelete {
    PodToDelete {
        name: p.metadata.name.clone().unwrap_or_default(),
        uid: p.metadata.uid.clone(),
        node: assigned_node(p),
    }
}

/// `finishJob`: the condition, `completionTime`, and a look again one second after the TTL.
fn finish_job(
    status: &mut BroadcastJobStatus,
    job: &BroadcastJob,
    type_: &str,
    message: String,
    now: Timestamp,
) -> Option<SignedDuration> {
    status.conditions.push(condition(type_, message, now));
    status.completion_time = Some(Time(now));
    job.spec.completion_policy.ttl_seconds_after_finished.map(|ttl| secs(i64::from(ttl) + 1))
}

fn finish(mut plan: Plan, old: &BroadcastJobStatus, status: BroadcastJobStatus) -> Plan {
    if *old != status {
        plan.status = Some(status);
    }
    plan
}

#[cfg(test)]
mod tests;
