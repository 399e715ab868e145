//! kruise `pod_probe_marker_controller_test.go` rows (`TestSyncPodProbeMarker` test1–test8,
//! the port conversion rows), on the pure merge/remove functions, plus pod matching.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::apis::podprobemarker::{PodProbeMarkerSpec, ProbeMarkerPolicy};
use k8s_openapi::api::core::v1::{
    ContainerPort, ExecAction, HTTPGetAction, PodCondition, PodSpec, PodStatus, Probe, TCPSocketAction,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn exec(script: &str) -> Probe {
    Probe {
        exec: Some(ExecAction { command: Some(vec!["/bin/sh".into(), "-c".into(), script.into()]) }),
        ..Probe::default()
    }
}

fn marker_with(probe_name: &str, probe: Probe) -> PodProbeMarker {
    let mut ppm = PodProbeMarker::new(
        "ppm-1",
        PodProbeMarkerSpec {
            selector: Some(LabelSelector { match_labels: Some(map(&[("app", "test")])), ..LabelSelector::default() }),
            probes: vec![PodContainerProbe {
                name: probe_name.into(),
                container_name: "main".into(),
                probe,
                pod_condition_type: "game.kruise.io/healthy".into(),
                marker_policy: vec![ProbeMarkerPolicy {
                    state: "Succeeded".into(),
                    labels: map(&[("server-healthy", "true")]),
                    ..ProbeMarkerPolicy::default()
                }],
            }],
        },
    );
    ppm.metadata.namespace = Some(String::new());
    ppm
}

fn demo_marker() -> PodProbeMarker {
    marker_with("healthy", exec("/healthy.sh"))
}

fn cprobe(name: &str, container: &str, script: &str) -> ContainerProbe {
    ContainerProbe { name: name.into(), container_name: container.into(), probe: exec(script) }
}

fn pod(name: &str, node: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(String::new()),
            uid: Some(format!("{name}-uid")),
            labels: Some(map(&[("app", "test")])),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec { node_name: Some(node.into()), ..PodSpec::default() }),
        status: Some(PodStatus {
            conditions: Some(vec![PodCondition {
                type_: "Initialized".into(),
                status: "True".into(),
                ..PodCondition::default()
            }]),
            ..PodStatus::default()
        }),
    }
}

fn entry(name: &str, probes: Vec<ContainerProbe>) -> PodProbe {
    PodProbe { name: name.into(), uid: format!("{name}-uid"), probes, ..PodProbe::default() }
}

fn spec(entries: Vec<PodProbe>) -> NodePodProbeSpec {
    NodePodProbeSpec { pod_probes: entries }
}

#[test]
fn kruise_test1_merge() {
    let p = pod("pod-1", "node-1");
    let before = spec(vec![entry("pod-1", vec![cprobe("ppm-2#idle", "main", "/idle.sh")])]);
    let after = merge_into_node(&before, &demo_marker(), &[&p]);
    assert_eq!(
        after,
        spec(vec![entry(
            "pod-1",
            vec![cprobe("ppm-2#idle", "main", "/idle.sh"), cprobe("ppm-1#healthy", "main", "/healthy.sh")]
        )])
    );
}

#[test]
fn kruise_test2_pod_without_node_is_not_probed() {
    let mut p = pod("pod-2", "");
    p.spec = Some(PodSpec::default());
    let nodes = |_: &str| Some(false);
    assert!(matching_pods(&demo_marker(), [&p], nodes).is_empty());
}

#[test]
fn kruise_test3_and_test4_remove() {
    let both = spec(vec![entry(
        "pod-1",
        vec![cprobe("ppm-2#idle", "main", "/idle.sh"), cprobe("ppm-1#healthy", "main", "/healthy.sh")],
    )]);
    assert_eq!(
        remove_from_node(&both, "", "ppm-1"),
        spec(vec![entry("pod-1", vec![cprobe("ppm-2#idle", "main", "/idle.sh")])])
    );
    let only = spec(vec![entry("pod-1", vec![cprobe("ppm-1#healthy", "main", "/healthy.sh")])]);
    assert_eq!(remove_from_node(&only, "", "ppm-1"), NodePodProbeSpec::default());
    // Another namespace's entries are kept whole.
    let mut other = only.clone();
    other.pod_probes[0].namespace = "elsewhere".into();
    assert_eq!(remove_from_node(&other, "", "ppm-1"), other);
    let npps = [("node-1", &both), ("node-2", &other)];
    assert_eq!(nodes_with_marker(npps, "", "ppm-1"), BTreeSet::from(["node-1".to_string()]));
}

#[test]
fn kruise_test5_new_pod_entry() {
    let p = pod("pod-1", "node-1");
    let after = merge_into_node(&NodePodProbeSpec::default(), &demo_marker(), &[&p]);
    assert_eq!(after, spec(vec![entry("pod-1", vec![cprobe("ppm-1#healthy", "main", "/healthy.sh")])]));
    // Merging again changes nothing.
    assert_eq!(merge_into_node(&after, &demo_marker(), &[&p]), after);
}

#[test]
fn kruise_test7_changed_probe_is_replaced() {
    let p = pod("pod-1", "node-1");
    let before = spec(vec![entry(
        "pod-1",
        vec![cprobe("ppm-2#idle", "log", "/idle.sh"), cprobe("ppm-1#healthy", "main", "/home/admin/healthy.sh")],
    )]);
    let after = merge_into_node(&before, &demo_marker(), &[&p]);
    assert_eq!(
        after,
        spec(vec![entry(
            "pod-1",
            vec![cprobe("ppm-2#idle", "log", "/idle.sh"), cprobe("ppm-1#healthy", "main", "/healthy.sh")]
        )])
    );
}

fn with_container(mut p: Pod, name: &str, port_name: &str, port: i32) -> Pod {
    p.spec.as_mut().unwrap().containers = vec![Container {
        name: name.into(),
        ports: Some(vec![ContainerPort {
            name: Some(port_name.into()),
            container_port: port,
            ..ContainerPort::default()
        }]),
        ..Container::default()
    }];
    p
}

fn tcp_marker() -> PodProbeMarker {
    marker_with(
        "tcpCheckHealthy",
        Probe {
            tcp_socket: Some(TCPSocketAction { port: IntOrString::String("main-port".into()), ..Default::default() }),
            ..Probe::default()
        },
    )
}

fn http_marker() -> PodProbeMarker {
    marker_with(
        "httpCheckHealthy",
        Probe {
            http_get: Some(HTTPGetAction {
                path: Some("/index.html".into()),
                port: IntOrString::String("main-port".into()),
                scheme: Some("HTTP".into()),
                ..Default::default()
            }),
            ..Probe::default()
        },
    )
}

#[test]
fn kruise_test8_and_test9_unconvertible_port_skips_the_probe() {
    for ppm in [tcp_marker(), http_marker()] {
        let p = with_container(pod("pod-1", "node-1"), "main-v2", "main-port", 9090);
        let before = spec(vec![entry("pod-1", vec![cprobe("ppm-2#idle", "main", "/idle.sh")])]);
        assert_eq!(merge_into_node(&before, &ppm, &[&p]), before);
        // A new pod gets an entry without probes.
        let fresh = merge_into_node(&NodePodProbeSpec::default(), &ppm, &[&p]);
        assert_eq!(fresh, spec(vec![entry("pod-1", vec![])]));
    }
}

#[test]
fn kruise_convert_ports() {
    let p = with_container(pod("pod-1", "node-1"), "main", "main-port", 9090);
    let tcp = convert_probe_port(&tcp_marker().spec.probes[0], &p).unwrap();
    assert_eq!(tcp.probe.tcp_socket.unwrap().port, IntOrString::Int(9090));
    let http = convert_probe_port(&http_marker().spec.probes[0], &p).unwrap();
    assert_eq!(http.probe.http_get.unwrap().port, IntOrString::Int(9090));
    // An int port is kept, whatever the container.
    let mut int_probe = tcp_marker().spec.probes[0].clone();
    int_probe.probe.tcp_socket.as_mut().unwrap().port = IntOrString::Int(80);
    assert_eq!(convert_probe_port(&int_probe, &pod("pod-1", "n")).unwrap(), int_probe);
    // No such container.
    let other = with_container(pod("pod-1", "node-1"), "main-v2", "main-port", 9090);
    assert_eq!(
        convert_probe_port(&tcp_marker().spec.probes[0], &other).unwrap_err(),
        "Failed to get container by name: main in pod: /pod-1"
    );
    // No such port name.
    let unnamed = with_container(pod("pod-1", "node-1"), "main", "other-port", 9090);
    assert_eq!(
        convert_probe_port(&http_marker().spec.probes[0], &unnamed).unwrap_err(),
        "Failed to extract port for container: main in pod: /pod-1"
    );
    // A number written as a string is a port too.
    let mut numeric = tcp_marker().spec.probes[0].clone();
    numeric.probe.tcp_socket.as_mut().unwrap().port = IntOrString::String("8080".into());
    assert_eq!(convert_probe_port(&numeric, &unnamed).unwrap().probe.tcp_socket.unwrap().port, IntOrString::Int(8080));
}

#[test]
fn matching_pods_follow_kruise() {
    let ppm = demo_marker();
    let ok = pod("ok", "node-1");
    let mut other_app = pod("other", "node-1");
    other_app.metadata.labels = Some(map(&[("app", "other")]));
    let mut not_init = pod("init", "node-1");
    not_init.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].status = "False".into();
    let mut finished = pod("done", "node-1");
    finished.status.as_mut().unwrap().phase = Some("Succeeded".into());
    let virtual_node = pod("vk", "vk-node");
    let no_node = pod("gone", "missing-node");
    let mut other_ns = pod("ns", "node-1");
    other_ns.metadata.namespace = Some("elsewhere".into());
    let all = [&ok, &other_app, &not_init, &finished, &virtual_node, &no_node, &other_ns];
    let nodes = |n: &str| match n {
        "node-1" => Some(false),
        "vk-node" => Some(true),
        _ => None,
    };
    let got: Vec<&str> = matching_pods(&ppm, all, nodes).iter().map(|p| pods::name(p)).collect();
    assert_eq!(got, ["ok"]);
    assert!(is_virtual_kubelet(Some(&map(&[("type", "virtual-kubelet")]))));
    assert!(!is_virtual_kubelet(None));
}
