//! Container launch priority, the controller half (kruise's `pkg/controller/containerlaunchpriority`
//! and `pkg/util/containerlaunchpriority`; the webhook half, which gives every container of an
//! ordered pod the env `KRUISE_CONTAINER_BARRIER` reading key `p_<priority>` of the ConfigMap
//! `<pod>-barrier`, is [`crate::core::pod_mutation`], spec §4.1 (4)). The kubelet does not start a
//! container whose env reads a missing ConfigMap key, so the containers wait until this decision
//! writes their key. It decides, for one pod and its barrier ConfigMap (if any):
//!
//! - `findNextPriorities`: the priorities of the containers that are not ready yet, lowest first;
//! - `handle` (kruise's exact rule): the highest of them is released (`p_<n>: "true"`) when its key
//!   is missing, so one priority starts at a time, the next only once every container of the
//!   higher priorities is **ready** (kruise reads `containerStatuses[].ready`, not `started`); once
//!   the lowest is released the pod is marked `apps.kruise.io/container-launch-priority-completed`
//!   and is never looked at again;
//! - `shouldEnqueue`: whether a pod change needs a round at all.
//!
//! Three choices differ from kruise on purpose. The barrier is created with its first key in one
//! write (kruise creates it empty, requeues, then patches the key in: same end state). A pod that
//! is no longer active (being deleted, Succeeded, Failed) gets nothing (kruise would still release
//! keys for containers the kubelet is stopping). And a barrier owned by another pod of the same
//! name — the one an Advanced StatefulSet pod replaced, which the garbage collector has not
//! removed yet — is deleted rather than read: kruise reads its keys as released, so the new pod
//! starts every container at once and is marked completed, and once the collector removes the
//! barrier any container restart waits in `CreateContainerConfigError` for good. The ConfigMap has kruise's name and an
//! ownerReference to the pod (apiVersion `v1`, kind `Pod`, name, uid; neither `controller` nor
//! `blockOwnerDeletion`, as kruise), so the garbage collector removes it with the pod.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{ConfigMap, ConfigMapKeySelector, Container, EnvVar, EnvVarSource, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde_json::{Value, json};

use crate::core::pod_mutation::BARRIER_ENV;
use crate::core::pods;

/// The pod annotation kruise sets once every priority is in the barrier.
pub const COMPLETED_ANNOTATION: &str = "apps.kruise.io/container-launch-priority-completed";

/// The barrier ConfigMap of the pod named `pod_name` (`<pod>-barrier`).
pub fn barrier_name(pod_name: &str) -> String {
    format!("{pod_name}-barrier")
}

/// `GetKey`: the barrier key of a priority (`p_<n>`).
pub fn barrier_key(priority: i64) -> String {
    format!("p_{priority}")
}

/// `GeneratePriorityEnv`: the env that holds a container of pod `pod_name` until its priority's
/// key is in the barrier.
pub fn barrier_env(priority: i64, pod_name: &str) -> EnvVar {
    EnvVar {
        name: BARRIER_ENV.into(),
        value_from: Some(EnvVarSource {
            config_map_key_ref: Some(ConfigMapKeySelector {
                name: barrier_name(pod_name),
                key: barrier_key(priority),
                optional: None,
            }),
            ..Default::default()
        }),
        value: None,
    }
}

/// `GetContainerPriority`: the number after the first two characters of the barrier env's key
/// (the prefix is not checked: `x_5` is 5), `None` for a container without the env. Go's
/// `strconv.Atoi` error is ignored there, so a key that is not a number is priority 0, and one out
/// of range is clamped; where kruise panics (a key shorter than two characters, the env without a
/// `configMapKeyRef`) this is 0 and `None`.
pub fn container_priority(c: &Container) -> Option<i64> {
    let env = c.env.as_ref()?.iter().find(|e| e.name == BARRIER_ENV)?;
    let key = env.value_from.as_ref().and_then(|v| v.config_map_key_ref.as_ref()).map(|r| r.key.as_str())?;
    Some(key.get(2..).map_or(0, go_atoi))
}

/// Go's `strconv.Atoi` with its error ignored: a sign and decimal digits, 0 on a syntax error, the
/// nearest 64-bit bound on overflow.
fn go_atoi(s: &str) -> i64 {
    if let Ok(n) = s.parse::<i64>() {
        return n;
    }
    let (negative, digits) = match (s.strip_prefix('-'), s.strip_prefix('+')) {
        (Some(d), _) => (true, d),
        (None, Some(d)) => (false, d),
        (None, None) => (false, s),
    };
    match (digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()), negative) {
        (true, _) => 0,
        (false, true) => i64::MIN,
        (false, false) => i64::MAX,
    }
}

/// `findNextPriorities`: the priorities of the pod's containers that carry the barrier env and are
/// not ready, ascending (duplicates kept, as kruise's).
pub fn next_priorities(pod: &Pod) -> Vec<i64> {
    let ready: BTreeSet<&str> = pod
        .status
        .iter()
        .flat_map(|s| s.container_statuses.iter().flatten())
        .filter(|s| s.ready)
        .map(|s| s.name.as_str())
        .collect();
    let mut out: Vec<i64> = pod
        .spec
        .iter()
        .flat_map(|s| s.containers.iter())
        .filter(|c| !ready.contains(c.name.as_str()))
        .filter_map(container_priority)
        .collect();
    out.sort_unstable();
    out
}

/// `isExistsInBarrier`: whether the key of `priority` is in the barrier (any value).
pub fn released(priority: i64, barrier: &ConfigMap) -> bool {
    barrier.data.as_ref().is_some_and(|d| d.contains_key(&barrier_key(priority)))
}

fn completed(pod: &Pod) -> bool {
    pods::annotations(pod).get(COMPLETED_ANNOTATION).map(String::as_str) == Some("true")
}

fn containers_ready(pod: &Pod) -> bool {
    pods::condition(pod, pods::CONTAINERS_READY).is_some_and(|c| c.status == "True")
}

/// The watch filter, read off the pod alone: `shouldEnqueue` up to its barrier read — not
/// completed, `ContainersReady` not True, some container not ready holds a priority — and the pod
/// active. Pods it passes are reconciled, where [`plan`] reads the barrier.
pub fn wants_launch(pod: &Pod) -> bool {
    pods::is_active(pod) && !completed(pod) && !containers_ready(pod) && !next_priorities(pod).is_empty()
}

/// `shouldEnqueue` in full: [`wants_launch`], and the highest waiting priority not yet released
/// (`None`: the barrier could not be read, which kruise counts as "enqueue").
pub fn needs_release(pod: &Pod, barrier: Option<&ConfigMap>) -> bool {
    if !wants_launch(pod) {
        return false;
    }
    let next = next_priorities(pod);
    match (barrier, next.last()) {
        (Some(b), Some(top)) => !released(*top, b),
        _ => true,
    }
}

/// What one round writes, in this order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// Delete the barrier of this uid first: it belongs to an earlier pod of the same name (the
    /// round ends there; the next creates the pod's own).
    pub replace: Option<String>,
    /// Create the barrier (it is missing), holding the first release already.
    pub create: Option<ConfigMap>,
    /// Add this key (`"true"`) to the existing barrier ([`release_patch`]).
    pub release: Option<String>,
    /// Then mark the pod completed ([`completed_patch`]).
    pub complete: bool,
}

impl Plan {
    /// Whether the round writes nothing.
    pub fn is_empty(&self) -> bool {
        self.replace.is_none() && self.create.is_none() && self.release.is_none() && !self.complete
    }
}

/// kruise's `Reconcile` + `handle` for `pod` and its barrier (`None`: not found): the key to
/// release, if any, and whether the pod is then completed.
pub fn plan(pod: &Pod, barrier: Option<&ConfigMap>) -> Plan {
    if !pods::is_active(pod) || completed(pod) {
        return Plan::default();
    }
    if let Some(b) = barrier.filter(|b| owned_by_another_pod(pod, b)) {
        return Plan { replace: Some(b.metadata.uid.clone().unwrap_or_default()), ..Plan::default() };
    }
    let next = next_priorities(pod);
    let is_released = |p: i64| barrier.is_some_and(|b| released(p, b));
    let (Some(&lowest), Some(&top)) = (next.first(), next.last()) else {
        // Nothing waits any more: only the mark is missing.
        return Plan { complete: true, ..Plan::default() };
    };
    if is_released(lowest) {
        return Plan { complete: true, ..Plan::default() };
    }
    let mut out = Plan::default();
    if !is_released(top) {
        let key = barrier_key(top);
        match barrier {
            Some(_) => out.release = Some(key),
            None => out.create = Some(new_barrier(pod, &key)),
        }
    }
    out.complete = top == lowest;
    out
}

/// Whether `barrier` is owned by a pod of this name other than `pod` (a barrier without a pod
/// owner, made by hand, is used as it is).
fn owned_by_another_pod(pod: &Pod, barrier: &ConfigMap) -> bool {
    let Some(uid) = pod.metadata.uid.as_deref() else { return false };
    let owners: Vec<_> = barrier
        .metadata
        .owner_references
        .iter()
        .flatten()
        .filter(|r| r.kind == "Pod" && r.api_version == "v1")
        .collect();
    !owners.is_empty() && owners.iter().all(|r| r.uid != uid)
}

/// The barrier of `pod` holding `key`, owned by the pod.
fn new_barrier(pod: &Pod, key: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(barrier_name(pods::name(pod))),
            namespace: pod.metadata.namespace.clone(),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Pod".into(),
                name: pods::name(pod).into(),
                uid: pod.metadata.uid.clone().unwrap_or_default(),
                ..Default::default()
            }]),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(key.to_string(), "true".to_string())])),
        ..Default::default()
    }
}

/// kruise's `addPriorityIntoBarrier` patch (a merge of one key: it needs no resourceVersion, two
/// writers adding keys never conflict).
pub fn release_patch(key: &str) -> Value {
    json!({"data": {key: "true"}})
}

/// kruise's `patchCompleted` patch of the pod.
pub fn completed_patch() -> Value {
    json!({"metadata": {"annotations": {COMPLETED_ANNOTATION: "true"}}})
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
