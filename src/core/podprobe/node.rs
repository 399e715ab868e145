//! What a NodePodProbe's results do (kruise `pkg/controller/nodepodprobe`, `syncNodePodProbe`,
//! issue 30 item 4): one NodePodProbe per node, created with the node and deleted with it; pod
//! entries whose pod is gone, finished, being deleted or replaced (another uid) dropped from the
//! spec; and each probe result written to its pod — the marker's `podConditionType` as a condition
//! (True for Succeeded, False otherwise, with the probe times and message; replaced only when its
//! status or message changed, kruise `SetPodConditionIfMsgChanged`) and the labels and
//! annotations of the `markerPolicy` of the state reached, those of the opposite state removed.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Pod, PodCondition};

use crate::apis::nodepodprobe::{NodePodProbeSpec, PodProbeStatus};
use crate::apis::podprobemarker::PodProbeMarker;
use crate::core::pods;
use crate::core::validation::podprobemarker::PROBE_SUCCEEDED;

/// What to do with a node's NodePodProbe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeAction {
    /// Nothing: the node and its NodePodProbe both exist, or neither does.
    Keep,
    /// The node exists, its NodePodProbe does not.
    Create,
    /// The NodePodProbe exists, its node is gone or being deleted.
    Delete,
}

/// kruise's create/delete decision for a node name: `node` is `Some(deleting)` when the node
/// exists.
pub fn node_action(npp_exists: bool, node: Option<bool>) -> NodeAction {
    match (npp_exists, node) {
        (false, Some(false)) => NodeAction::Create,
        (true, None | Some(true)) => NodeAction::Delete,
        _ => NodeAction::Keep,
    }
}

/// kruise `syncPodFromNodePodProbe`: the spec without the entries whose pod (looked up by
/// namespace/name) is missing, inactive or has another uid.
pub fn prune_spec<'a>(spec: &NodePodProbeSpec, pod: impl Fn(&str, &str) -> Option<&'a Pod>) -> NodePodProbeSpec {
    let live = |ns: &str, name: &str, uid: &str| {
        pod(ns, name).is_some_and(|p| pods::is_active(p) && p.metadata.uid.as_deref() == Some(uid))
    };
    NodePodProbeSpec {
        pod_probes: spec.pod_probes.iter().filter(|pp| live(&pp.namespace, &pp.name, &pp.uid)).cloned().collect(),
    }
}

/// What the results of one pod change on it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodMarks {
    /// Conditions to set (kruise `SetPodConditionIfMsgChanged`).
    pub conditions: Vec<PodCondition>,
    /// Labels to set (`Some`) or remove (`None`).
    pub labels: BTreeMap<String, Option<String>>,
    /// Annotations to set (`Some`) or remove (`None`).
    pub annotations: BTreeMap<String, Option<String>>,
}

impl PodMarks {
    /// Nothing to write.
    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty() && self.labels.is_empty() && self.annotations.is_empty()
    }
}

/// kruise `updatePodProbeStatus` (the decision): the conditions and marks of a pod's probe
/// results. `marker` looks a PodProbeMarker up by name in the pod's namespace (`None` when it
/// is gone or being deleted: its results are ignored). A condition type written by an earlier
/// result of the same round is not written again (kruise logs the conflict).
pub fn pod_marks<'a>(status: &PodProbeStatus, marker: impl Fn(&str) -> Option<&'a PodProbeMarker>) -> PodMarks {
    let mut out = PodMarks::default();
    let mut seen_conditions = BTreeSet::new();
    for state in &status.probe_states {
        if state.state.is_empty() {
            continue;
        }
        // `<marker>#<probe>`; a name without '#' names no probe (kruise would index out of range).
        let Some((ppm_name, probe_name)) = state.name.split_once('#') else { continue };
        let probe_name = probe_name.split('#').next().unwrap_or("");
        let Some(ppm) = marker(ppm_name) else { continue };
        let (policy, condition_type) = ppm
            .spec
            .probes
            .iter()
            .find(|p| p.name == probe_name)
            .map(|p| (p.marker_policy.as_slice(), p.pod_condition_type.as_str()))
            .unwrap_or((&[], ""));
        if !condition_type.is_empty() && seen_conditions.insert(condition_type.to_string()) {
            out.conditions.push(PodCondition {
                type_: condition_type.to_string(),
                status: if state.state == PROBE_SUCCEEDED { "True" } else { "False" }.to_string(),
                last_probe_time: state.last_probe_time.clone(),
                last_transition_time: state.last_transition_time.clone(),
                message: (!state.message.is_empty()).then(|| state.message.clone()),
                ..PodCondition::default()
            });
        }
        let matched = policy.iter().rev().find(|p| p.state == state.state);
        let opposite = policy.iter().rev().find(|p| p.state != state.state);
        if let Some(o) = opposite {
            for k in o.labels.keys() {
                out.labels.insert(k.clone(), None);
            }
            for k in o.annotations.keys() {
                out.annotations.insert(k.clone(), None);
            }
        }
        if let Some(m) = matched {
            for (k, v) in &m.labels {
                out.labels.insert(k.clone(), Some(v.clone()));
            }
            for (k, v) in &m.annotations {
                out.annotations.insert(k.clone(), Some(v.clone()));
            }
        }
    }
    out
}

/// The pod after the marks, or `None` when nothing changes (kruise compares conditions, labels
/// and annotations before writing).
pub fn apply_marks(pod: &Pod, marks: &PodMarks) -> Option<Pod> {
    let mut out = pod.clone();
    for c in &marks.conditions {
        set_condition_if_msg_changed(&mut out, c.clone());
    }
    let labels = out.metadata.labels.get_or_insert_with(BTreeMap::new);
    apply_map(labels, &marks.labels);
    let annotations = out.metadata.annotations.get_or_insert_with(BTreeMap::new);
    apply_map(annotations, &marks.annotations);
    let same = |a: &Option<BTreeMap<String, String>>, b: &Option<BTreeMap<String, String>>| {
        a.as_ref().filter(|m| !m.is_empty()) == b.as_ref().filter(|m| !m.is_empty())
    };
    let conditions = |p: &Pod| p.status.as_ref().and_then(|s| s.conditions.clone()).unwrap_or_default();
    let unchanged = conditions(pod) == conditions(&out)
        && same(&pod.metadata.labels, &out.metadata.labels)
        && same(&pod.metadata.annotations, &out.metadata.annotations);
    (!unchanged).then_some(out)
}

fn apply_map(map: &mut BTreeMap<String, String>, marks: &BTreeMap<String, Option<String>>) {
    for (k, v) in marks {
        match v {
            Some(v) => {
                map.insert(k.clone(), v.clone());
            }
            None => {
                map.remove(k);
            }
        }
    }
}

/// kruise `util.SetPodConditionIfMsgChanged`: replaced when the status or message differs,
/// appended when absent.
pub fn set_condition_if_msg_changed(pod: &mut Pod, condition: PodCondition) {
    let conditions = pod.status.get_or_insert_with(Default::default).conditions.get_or_insert_with(Vec::new);
    match conditions.iter_mut().find(|c| c.type_ == condition.type_) {
        Some(c) => {
            if c.status != condition.status || c.message != condition.message {
                *c = condition;
            }
        }
        None => conditions.push(condition),
    }
}

#[cfg(test)]
#[path = "node_tests.rs"]
mod tests;
