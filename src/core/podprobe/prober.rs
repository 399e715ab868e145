//! The daemon's probe decisions (kruise `pkg/daemon/podprobe`, issue 30 item 4): which probe
//! workers a NodePodProbe asks for, when a probe's result is published (success/failure
//! thresholds, the container id reset to Unknown, a non-running container Failed, the initial
//! delay), when a published result is written again (state or message changed, or 600 s since;
//! kruise `resultManager.set`), and the NodePodProbe status built from the results
//! (`syncUpdateNodePodProbeStatus`: states of probes no longer in the spec dropped, each result
//! set with its probe time, the transition time moved only when the state changes).
//!
//! One deliberate difference: results are kept per probe, not per container id as kruise's
//! result cache is keyed (two probes of one container overwrote each other there).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Probe;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use crate::apis::nodepodprobe::{ContainerProbeState, NodePodProbe, NodePodProbeStatus, PodProbeStatus};
use crate::core::validation::podprobemarker::{PROBE_FAILED, PROBE_SUCCEEDED, PROBE_UNKNOWN};

/// kruise `maxProbeMessageLength`.
pub const MAX_MESSAGE_LEN: usize = 1024;
/// kruise `maxSyncProbeTime`: an unchanged result is written again after this long.
pub const MAX_SYNC_PROBE_TIME: SignedDuration = SignedDuration::from_secs(600);

/// One probe of one pod on this node (kruise `probeKey`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProbeKey {
    /// Pod namespace.
    pub namespace: String,
    /// Pod name.
    pub pod: String,
    /// Pod uid.
    pub uid: String,
    /// Pod IP.
    pub ip: String,
    /// Container probed.
    pub container: String,
    /// `<marker>#<probe>`.
    pub probe: String,
}

/// The probe workers a NodePodProbe asks for, with their probe specs.
pub fn wanted_workers(npp: &NodePodProbe) -> BTreeMap<ProbeKey, Probe> {
    let mut out = BTreeMap::new();
    for pp in &npp.spec.pod_probes {
        for p in &pp.probes {
            let key = ProbeKey {
                namespace: pp.namespace.clone(),
                pod: pp.name.clone(),
                uid: pp.uid.clone(),
                ip: pp.ip.clone(),
                container: p.container_name.clone(),
                probe: p.name.clone(),
            };
            out.insert(key, p.probe.clone());
        }
    }
    out
}

/// The period between probes (kruise: `periodSeconds`, at least 1 s).
pub fn period(probe: &Probe) -> std::time::Duration {
    std::time::Duration::from_secs(u64::try_from(probe.period_seconds.unwrap_or(0).max(1)).unwrap_or(1))
}

/// The timeout of one probe (`timeoutSeconds`, at least 1 s).
pub fn timeout_seconds(probe: &Probe) -> i64 {
    i64::from(probe.timeout_seconds.unwrap_or(0).max(1))
}

/// The container a worker probes, as the runtime shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Container {
    /// Runtime id.
    pub id: String,
    /// Running.
    pub running: bool,
    /// When it started.
    pub started_at: Timestamp,
}

/// What a worker publishes in a round before probing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Before {
    /// No container of that name: nothing to do this round.
    NoContainer,
    /// Publish these results (container changed: Unknown; not running: Failed), then probe
    /// when `probe` is true (false: the initial delay has not passed).
    Go {
        /// Results to publish first, in order.
        publish: Vec<(String, String)>,
        /// Whether to run the probe.
        probe: bool,
    },
}

/// One worker's memory (kruise `worker`: containerID, lastResult, resultRun).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Worker {
    /// The container id last seen.
    pub container_id: String,
    /// The last probe result.
    pub last_result: String,
    /// How many times in a row it came.
    pub result_run: i32,
}

impl Worker {
    /// kruise `doProbe` up to the probe: the container check and the initial delay
    /// (`initialDelaySeconds`, at least 1 s, from the container's start).
    pub fn before_probe(&mut self, name: &str, container: Option<&Container>, probe: &Probe, now: Timestamp) -> Before {
        let Some(c) = container else { return Before::NoContainer };
        let mut publish = Vec::new();
        if self.container_id != c.id {
            self.container_id = c.id.clone();
            publish.push((PROBE_UNKNOWN.to_string(), String::new()));
        }
        if !c.running {
            publish.push((PROBE_FAILED.to_string(), non_running_message(name)));
        }
        let delay = i64::from(probe.initial_delay_seconds.unwrap_or(0).max(1));
        let since = now.duration_since(c.started_at).as_secs();
        Before::Go { publish, probe: since >= delay }
    }

    /// kruise `doProbe` after the probe: the result (Succeeded/Failed) is published once it came
    /// `successThreshold` / `failureThreshold` times in a row (at least 1).
    pub fn after_probe(&mut self, result: &str, probe: &Probe) -> bool {
        if self.last_result == result {
            self.result_run += 1;
        } else {
            self.last_result = result.to_string();
            self.result_run = 1;
        }
        let threshold = if result == PROBE_SUCCEEDED { probe.success_threshold } else { probe.failure_threshold };
        self.result_run >= threshold.unwrap_or(0).max(1)
    }
}

/// The message a non-running container publishes (kruise's wording).
pub fn non_running_message(container: &str) -> String {
    format!("Container({container}) is Non-running")
}

/// A probe's message cut to [`MAX_MESSAGE_LEN`] bytes (at a character boundary).
pub fn truncate_message(mut msg: String) -> String {
    if msg.len() > MAX_MESSAGE_LEN {
        let mut end = MAX_MESSAGE_LEN;
        while !msg.is_char_boundary(end) {
            end -= 1;
        }
        msg.truncate(end);
    }
    msg
}

/// One published result (kruise `Update`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Published {
    /// State.
    pub state: String,
    /// Message.
    pub message: String,
    /// When it was set.
    pub at: Timestamp,
}

/// kruise `resultManager.set`: whether a new result replaces the previous one (and a status
/// write is due) — new, another state or message, or the previous one 600 s old.
pub fn replaces(prev: Option<&Published>, state: &str, message: &str, now: Timestamp) -> bool {
    prev.is_none_or(|p| p.state != state || p.message != message || now.duration_since(p.at) >= MAX_SYNC_PROBE_TIME)
}

/// kruise `syncUpdateNodePodProbeStatus` + `updateNodePodProbeStatus`: the status with the
/// states of probes no longer in the spec dropped and every current result set.
pub fn build_status(npp: &NodePodProbe, results: &BTreeMap<ProbeKey, Published>, now: Timestamp) -> NodePodProbeStatus {
    let valid: BTreeSet<(String, String)> =
        npp.spec.pod_probes.iter().flat_map(|pp| pp.probes.iter().map(|p| (pp.uid.clone(), p.name.clone()))).collect();
    let mut status = NodePodProbeStatus::default();
    for ps in npp.status.iter().flat_map(|s| &s.pod_probe_statuses) {
        let states: Vec<ContainerProbeState> =
            ps.probe_states.iter().filter(|s| valid.contains(&(ps.uid.clone(), s.name.clone()))).cloned().collect();
        if !states.is_empty() {
            status.pod_probe_statuses.push(PodProbeStatus { probe_states: states, ..ps.clone() });
        }
    }
    for (key, result) in results {
        if !valid.contains(&(key.uid.clone(), key.probe.clone())) {
            continue;
        }
        let i = match status.pod_probe_statuses.iter().position(|s| s.uid == key.uid) {
            Some(i) => i,
            None => {
                status.pod_probe_statuses.push(PodProbeStatus {
                    namespace: key.namespace.clone(),
                    name: key.pod.clone(),
                    uid: key.uid.clone(),
                    probe_states: Vec::new(),
                });
                status.pod_probe_statuses.len() - 1
            }
        };
        let pod_status = &mut status.pod_probe_statuses[i];
        let probe_time = Some(Time(whole_seconds(result.at)));
        match pod_status.probe_states.iter_mut().find(|s| s.name == key.probe) {
            Some(s) => {
                if s.state != result.state {
                    s.last_transition_time = Some(Time(whole_seconds(now)));
                }
                s.state = result.state.clone();
                s.message = result.message.clone();
                s.last_probe_time = probe_time;
            }
            None => pod_status.probe_states.push(ContainerProbeState {
                name: key.probe.clone(),
                state: result.state.clone(),
                last_probe_time: probe_time,
                last_transition_time: Some(Time(whole_seconds(now))),
                message: result.message.clone(),
            }),
        }
    }
    status
}

/// A time as the API stores it (metav1.Time has second precision).
fn whole_seconds(t: Timestamp) -> Timestamp {
    Timestamp::from_second(t.as_second()).unwrap_or(t)
}

/// The state a probe outcome publishes: Succeeded, or Failed for anything else (kruise
/// `prober.probe`).
pub fn state_of(success: bool) -> &'static str {
    if success { PROBE_SUCCEEDED } else { PROBE_FAILED }
}

#[cfg(test)]
#[path = "prober_tests.rs"]
mod tests;
