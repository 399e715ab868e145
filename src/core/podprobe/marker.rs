//! What a PodProbeMarker asks of each node's NodePodProbe (kruise `pkg/controller/podprobemarker`,
//! `syncPodProbeMarker`, issue 30 item 4): the pods it probes (its namespace, its selector,
//! active, `Initialized` True, on a node that exists and is not a virtual-kubelet node), its
//! probes merged into each node's `spec.podProbes` under `<marker>#<probe>` names with named
//! tcp/http ports resolved against the container (a probe whose port cannot be resolved is
//! skipped for that pod), and, when the marker is deleted, its probes taken out of the NodePodProbes
//! again (the `kruise.io/node-pod-probe-cleanup` finalizer holds the deletion until then).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::apis::nodepodprobe::{ContainerProbe, NodePodProbeSpec, PodProbe};
use crate::apis::podprobemarker::{PodContainerProbe, PodProbeMarker};
use crate::compat::selector;
use crate::core::pods;

/// The finalizer on a PodProbeMarker (kruise `PodProbeMarkerFinalizer`).
pub const FINALIZER: &str = "kruise.io/node-pod-probe-cleanup";
/// Node label of virtual-kubelet (serverless) nodes (kruise `VirtualKubeletLabelKey`).
pub const VIRTUAL_KUBELET_LABEL: &str = "type";
/// Its value (kruise `VirtualKubeletLabelValue`).
pub const VIRTUAL_KUBELET_VALUE: &str = "virtual-kubelet";

/// The name of a marker's probe in a NodePodProbe (`<marker>#<probe>`).
pub fn probe_key(marker: &str, probe: &str) -> String {
    format!("{marker}#{probe}")
}

/// The node a pod runs on ("" when unscheduled).
pub fn node_of(pod: &Pod) -> &str {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or("")
}

/// kruise `getMatchingPods` (normal pods only): the pods of the marker's namespace its selector
/// matches that are active, `Initialized` True and on a node `node_kind` knows (`Some(true)` for
/// a virtual-kubelet node, which kruise probes on the serverless path, not here; `None` for a node
/// that does not exist). A marker whose selector does not parse matches nothing.
pub fn matching_pods<'a>(
    ppm: &PodProbeMarker,
    pods: impl IntoIterator<Item = &'a Pod>,
    node_kind: impl Fn(&str) -> Option<bool>,
) -> Vec<&'a Pod> {
    let Some(sel) = ppm.spec.selector.as_ref() else { return Vec::new() };
    let ns = ppm.metadata.namespace.as_deref().unwrap_or("");
    pods.into_iter()
        .filter(|p| p.metadata.namespace.as_deref().unwrap_or("") == ns)
        .filter(|p| selector::matches(sel, pods::labels(p)).unwrap_or(false))
        .filter(|p| pods::is_active(p))
        .filter(|p| pods::condition(p, "Initialized").is_some_and(|c| c.status == "True"))
        .filter(|p| !node_of(p).is_empty() && node_kind(node_of(p)) == Some(false))
        .collect()
}

/// A node is a virtual-kubelet node.
pub fn is_virtual_kubelet(labels: Option<&BTreeMap<String, String>>) -> bool {
    labels.and_then(|l| l.get(VIRTUAL_KUBELET_LABEL)).is_some_and(|v| v == VIRTUAL_KUBELET_VALUE)
}

/// The matching pods grouped by node.
pub fn group_by_node<'a>(pods: &[&'a Pod]) -> BTreeMap<String, Vec<&'a Pod>> {
    let mut out: BTreeMap<String, Vec<&'a Pod>> = BTreeMap::new();
    for p in pods {
        out.entry(node_of(p).to_string()).or_default().push(p);
    }
    out
}

fn container<'a>(pod: &'a Pod, name: &str) -> Option<&'a Container> {
    pod.spec.as_ref()?.containers.iter().find(|c| c.name == name)
}

/// kruise `util.ExtractPort`: a port number, a named port of the container, or a number
/// written as a string; 1..=65535.
pub fn extract_port(port: &IntOrString, c: &Container) -> Result<i32, String> {
    let n = match port {
        IntOrString::Int(n) => *n,
        IntOrString::String(name) => {
            match c.ports.iter().flatten().find(|p| p.name.as_deref() == Some(name.as_str())) {
                Some(p) => p.container_port,
                None => name.parse::<i32>().map_err(|e| format!("strconv.Atoi: parsing {name:?}: {e}"))?,
            }
        }
    };
    if n > 0 && n < 65536 { Ok(n) } else { Err(format!("invalid port number: {n}")) }
}

/// kruise `convertTcpSocketProbeCheckPort` and `convertHttpGetProbeCheckPort`: a named port is
/// replaced by the container's number; an error when the container or the port is missing.
pub fn convert_probe_port(probe: &PodContainerProbe, pod: &Pod) -> Result<PodContainerProbe, String> {
    let mut out = probe.clone();
    let ns = pod.metadata.namespace.as_deref().unwrap_or("");
    let name = pod.metadata.name.as_deref().unwrap_or("");
    let ports: Vec<&mut IntOrString> =
        [out.probe.tcp_socket.as_mut().map(|t| &mut t.port), out.probe.http_get.as_mut().map(|h| &mut h.port)]
            .into_iter()
            .flatten()
            .collect();
    for port in ports {
        if matches!(port, IntOrString::Int(_)) {
            continue;
        }
        let c = container(pod, &probe.container_name)
            .ok_or_else(|| format!("Failed to get container by name: {} in pod: {ns}/{name}", probe.container_name))?;
        let n = extract_port(port, c)
            .map_err(|_| format!("Failed to extract port for container: {} in pod: {ns}/{name}", c.name))?;
        *port = IntOrString::Int(n);
    }
    Ok(out)
}

/// kruise `updateNodePodProbes`: the node's spec with the marker's probes of `pods` merged in —
/// an existing entry of a pod (same name, namespace and uid) gets its IP filled when empty and
/// each probe replaced or appended; a new pod gets an entry at the end.
pub fn merge_into_node(spec: &NodePodProbeSpec, ppm: &PodProbeMarker, pods: &[&Pod]) -> NodePodProbeSpec {
    let mut out = spec.clone();
    let marker = ppm.metadata.name.as_deref().unwrap_or("");
    for pod in pods {
        let name = pod.metadata.name.as_deref().unwrap_or("");
        let ns = pod.metadata.namespace.as_deref().unwrap_or("");
        let uid = pod.metadata.uid.as_deref().unwrap_or("");
        let ip = pod.status.as_ref().and_then(|s| s.pod_ip.clone()).unwrap_or_default();
        let converted: Vec<PodContainerProbe> =
            ppm.spec.probes.iter().filter_map(|p| convert_probe_port(p, pod).ok()).collect();
        match out.pod_probes.iter_mut().find(|pp| pp.name == name && pp.namespace == ns && pp.uid == uid) {
            Some(entry) => {
                if entry.ip.is_empty() && !ppm.spec.probes.is_empty() {
                    entry.ip = ip;
                }
                for probe in &converted {
                    set_container_probe(entry, probe, marker);
                }
            }
            None => out.pod_probes.push(PodProbe {
                name: name.into(),
                namespace: ns.into(),
                uid: uid.into(),
                ip,
                probes: converted.iter().map(|p| container_probe(p, marker)).collect(),
            }),
        }
    }
    out
}

fn container_probe(probe: &PodContainerProbe, marker: &str) -> ContainerProbe {
    ContainerProbe {
        name: probe_key(marker, &probe.name),
        container_name: probe.container_name.clone(),
        probe: probe.probe.clone(),
    }
}

/// kruise `setPodContainerProbes`.
fn set_container_probe(entry: &mut PodProbe, probe: &PodContainerProbe, marker: &str) {
    let new = container_probe(probe, marker);
    match entry.probes.iter_mut().find(|p| p.name == new.name) {
        Some(existing) => *existing = new,
        None => entry.probes.push(new),
    }
}

/// kruise `removePodProbeFromNodePodProbe`: the node's spec without the marker's probes (entries
/// of its namespace whose probe names contain `<marker>#`, as kruise matches them); a pod entry
/// left without probes goes.
pub fn remove_from_node(spec: &NodePodProbeSpec, ppm_namespace: &str, ppm_name: &str) -> NodePodProbeSpec {
    let needle = format!("{ppm_name}#");
    let mut out = NodePodProbeSpec::default();
    for pp in &spec.pod_probes {
        if pp.namespace != ppm_namespace {
            out.pod_probes.push(pp.clone());
            continue;
        }
        let kept: Vec<ContainerProbe> = pp.probes.iter().filter(|p| !p.name.contains(&needle)).cloned().collect();
        if !kept.is_empty() {
            out.pod_probes.push(PodProbe { probes: kept, ..pp.clone() });
        }
    }
    out
}

/// The nodes whose NodePodProbe holds a probe of the marker (the cleanup of a deleted marker
/// visits them all, not only the nodes of the pods it matches now).
pub fn nodes_with_marker<'a>(
    npps: impl IntoIterator<Item = (&'a str, &'a NodePodProbeSpec)>,
    ppm_namespace: &str,
    ppm_name: &str,
) -> BTreeSet<String> {
    npps.into_iter()
        .filter(|(_, spec)| remove_from_node(spec, ppm_namespace, ppm_name) != **spec)
        .map(|(n, _)| n.to_string())
        .collect()
}

#[cfg(test)]
#[path = "marker_tests.rs"]
mod tests;
