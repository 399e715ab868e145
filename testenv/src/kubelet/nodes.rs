//! The simulated nodes: Node objects with capacity, labels (hostname, zone) and addresses, their
//! Ready condition, and the Lease heartbeat the node-lifecycle controller watches. The
//! `node.kubernetes.io/not-ready` taint that admission puts on new nodes is lifted by the real
//! node-lifecycle controller once the node reports Ready. The pods of a node removed from the
//! cluster are collected as the pod garbage collector would ([`collect_orphans`]).

use crate::Error;
use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, Preconditions};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// The field manager of the kubelet's writes.
pub const FIELD_MANAGER: &str = "kruise-testenv-kubelet";

/// Zones the nodes are spread over (label `topology.kubernetes.io/zone`).
pub const ZONES: [&str; 3] = ["zone-a", "zone-b", "zone-c"];

const LEASE_SECONDS: i32 = 40;
const LEASE_RENEW: Duration = Duration::from_secs(10);
const STATUS_REPORT: Duration = Duration::from_secs(60);

/// One simulated node.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    /// `kruise-node-N`.
    pub name: String,
    /// Its InternalIP.
    pub ip: String,
    /// Its index (the third octet of its pod CIDR `10.244.N.0/24`).
    pub index: usize,
}

/// Creates (or takes over) `count` nodes and reports them Ready.
pub async fn register(client: &kube::Client, count: usize) -> Result<Vec<NodeInfo>, Error> {
    let api: Api<Node> = Api::all(client.clone());
    let mut nodes = Vec::with_capacity(count);
    for index in 0..count {
        let info = NodeInfo { name: format!("kruise-node-{index}"), ip: format!("198.19.0.{}", index + 1), index };
        let node = json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": info.name,
                "labels": {
                    "kubernetes.io/hostname": info.name,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    "topology.kubernetes.io/zone": ZONES[index % ZONES.len()],
                    "node.kubernetes.io/instance-type": "simulated",
                    "testenv.kruise.io/simulated": "true"
                }
            },
            "spec": {"podCIDR": format!("10.244.{index}.0/24"), "podCIDRs": [format!("10.244.{index}.0/24")]}
        });
        api.patch(&info.name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&node)).await?;
        report_status(&api, &info).await?;
        renew_lease(client, &info).await?;
        nodes.push(info);
    }
    Ok(nodes)
}

/// Creates node `name` (pod CIDR `10.244.<index>.0/24`, InternalIP `198.19.<index / 250>.<index %
/// 250 + 1>`) with the simulated nodes' labels plus `labels`, and `taints` (Node taint objects),
/// and reports it Ready; for a node added to a running cluster ([`super::Kubelet::add_node`]).
pub async fn register_extra(
    client: &kube::Client,
    name: &str,
    index: usize,
    labels: &std::collections::BTreeMap<String, String>,
    taints: &[serde_json::Value],
) -> Result<NodeInfo, Error> {
    let api: Api<Node> = Api::all(client.clone());
    let info = NodeInfo { name: name.to_string(), ip: format!("198.19.{}.{}", index / 250, index % 250 + 1), index };
    let mut all = json!({
        "kubernetes.io/hostname": info.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "topology.kubernetes.io/zone": ZONES[index % ZONES.len()],
        "node.kubernetes.io/instance-type": "simulated",
        "testenv.kruise.io/added": "true"
    });
    for (k, v) in labels {
        all[k.as_str()] = json!(v);
    }
    let node = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": info.name, "labels": all},
        "spec": {"podCIDR": format!("10.244.{index}.0/24"), "podCIDRs": [format!("10.244.{index}.0/24")],
                 "taints": taints}
    });
    api.patch(&info.name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&node)).await?;
    report_status(&api, &info).await?;
    renew_lease(client, &info).await?;
    Ok(info)
}

/// Renews every node's Lease every 10 s and re-reports their status every minute, forever.
pub async fn heartbeat(client: kube::Client, nodes: Arc<Vec<NodeInfo>>) {
    let api: Api<Node> = Api::all(client.clone());
    let mut tick = tokio::time::interval(LEASE_RENEW);
    let mut last_report = tokio::time::Instant::now();
    loop {
        tick.tick().await;
        let report = last_report.elapsed() >= STATUS_REPORT;
        for node in nodes.iter() {
            if let Err(e) = renew_lease(&client, node).await {
                tracing::warn!(node = %node.name, error = %e, "lease renewal failed");
            }
            if report && let Err(e) = report_status(&api, node).await {
                tracing::warn!(node = %node.name, error = %e, "node status report failed");
            }
        }
        if report {
            last_report = tokio::time::Instant::now();
        }
    }
}

async fn report_status(api: &Api<Node>, node: &NodeInfo) -> Result<(), Error> {
    let now = now_string();
    let capacity = json!({"cpu": "32", "memory": "128Gi", "pods": "1000", "ephemeral-storage": "500Gi"});
    let condition = |type_: &str, status: &str, reason: &str, message: &str| {
        json!({"type": type_, "status": status, "reason": reason, "message": message,
               "lastHeartbeatTime": now, "lastTransitionTime": now})
    };
    let status = json!({
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "phase": "Running",
            "addresses": [{"type": "InternalIP", "address": node.ip}, {"type": "Hostname", "address": node.name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": format!("{:032x}", node.index + 1),
                "systemUUID": format!("{:032x}", node.index + 1),
                "bootID": format!("{:032x}", node.index + 1),
                "kernelVersion": "6.1.0",
                "osImage": "kruise-testenv simulated node",
                "containerRuntimeVersion": "containerd://2.1.0",
                "kubeletVersion": "v1.36.3",
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": "amd64"
            },
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ]
        }
    });
    api.patch_status(&node.name, &PatchParams::default(), &Patch::Strategic(&status)).await?;
    Ok(())
}

async fn renew_lease(client: &kube::Client, node: &NodeInfo) -> Result<(), Error> {
    let api: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let lease = json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": node.name},
        "spec": {
            "holderIdentity": node.name,
            "leaseDurationSeconds": LEASE_SECONDS,
            "renewTime": micro_now()
        }
    });
    api.patch(&node.name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&lease)).await?;
    Ok(())
}

/// Waits until every node has lost the `not-ready` taint (the node-lifecycle controller saw it
/// Ready), so the scheduler places pods on it.
pub async fn wait_schedulable(client: &kube::Client, nodes: &[NodeInfo], timeout: Duration) -> Result<(), Error> {
    let api: Api<Node> = Api::all(client.clone());
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let mut pending = Vec::new();
        for n in nodes {
            let node = api.get(&n.name).await?;
            let tainted = node
                .spec
                .and_then(|s| s.taints)
                .unwrap_or_default()
                .iter()
                .any(|t| t.key.starts_with("node.kubernetes.io/"));
            if tainted {
                pending.push(n.name.clone());
            }
        }
        if pending.is_empty() {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            return Err(Error::Timeout(format!("nodes {pending:?} to lose their node.kubernetes.io taints")));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// What the pod garbage collector does to the pods bound to node `name` once the node no longer
/// exists (`gcOrphaned`): each pod not yet terminal is marked `Failed` with a `DisruptionTarget`
/// condition (reason `DeletionByPodGC`), then deleted with grace period 0 (its uid as
/// precondition). The test control plane runs no pod garbage collector — benchmarks bind pods to
/// a node that does not exist on purpose — so a test that removes a node
/// ([`super::AddedNode::remove`]) calls this where a real cluster's collector acts (40 s to a
/// minute after the node goes). Does nothing while the node exists; returns how many pods it
/// deleted.
pub async fn collect_orphans(client: &kube::Client, name: &str) -> Result<usize, Error> {
    if Api::<Node>::all(client.clone()).get_opt(name).await?.is_some() {
        return Ok(0);
    }
    let all: Api<Pod> = Api::all(client.clone());
    let bound = all.list(&ListParams::default().fields(&format!("spec.nodeName={name}"))).await?;
    let mut deleted = 0;
    for pod in bound.items {
        let (Some(ns), Some(pod_name)) = (pod.metadata.namespace.as_deref(), pod.metadata.name.as_deref()) else {
            continue;
        };
        let api: Api<Pod> = Api::namespaced(client.clone(), ns);
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("");
        if phase != "Succeeded" && phase != "Failed" {
            let status = json!({"status": {"phase": "Failed", "conditions": [{
                "type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
                "message": "PodGC: node no longer exists", "lastTransitionTime": now_string()}]}});
            match api.patch_status(pod_name, &PatchParams::default(), &Patch::Strategic(&status)).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => continue,
                Err(e) => return Err(e.into()),
            }
        }
        let dp = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions { uid: pod.metadata.uid.clone(), resource_version: None }),
            ..Default::default()
        };
        match api.delete(pod_name, &dp).await {
            Ok(_) => deleted += 1,
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(deleted)
}

fn now_string() -> String {
    Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn micro_now() -> String {
    Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}
