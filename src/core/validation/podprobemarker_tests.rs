//! kruise `probe_validating_test.go`, row by row: `TestValidatingPodProbeMarker`,
//! `TestValidateHandler`, `TestValidatePortNumOrName`, `TestValidateTCPSocketAction`,
//! `TestValidateHTTPGetAction`; plus the rendered messages and the selector immutability.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::apis::podprobemarker::{PodContainerProbe, PodProbeMarkerSpec};
use crate::compat::field::aggregate;
use k8s_openapi::api::core::v1::HTTPHeader;
use std::collections::BTreeMap;

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn exec_probe(cmd: &[&str]) -> Probe {
    Probe { exec: Some(ExecAction { command: Some(cmd.iter().map(|s| s.to_string()).collect()) }), ..Probe::default() }
}

fn demo() -> PodProbeMarker {
    let mut ppm = PodProbeMarker::new(
        "ppm-test",
        PodProbeMarkerSpec {
            selector: Some(LabelSelector { match_labels: Some(map(&[("app", "test")])), ..LabelSelector::default() }),
            probes: vec![PodContainerProbe {
                name: "healthy".into(),
                container_name: "main".into(),
                probe: exec_probe(&["/bin/sh", "-c", "/healthy.sh"]),
                pod_condition_type: "game.kruise.io/healthy".into(),
                marker_policy: vec![
                    ProbeMarkerPolicy {
                        state: PROBE_SUCCEEDED.into(),
                        annotations: map(&[("controller.kubernetes.io/pod-deletion-cost", "10")]),
                        labels: map(&[("server-healthy", "true")]),
                    },
                    ProbeMarkerPolicy {
                        state: PROBE_FAILED.into(),
                        annotations: map(&[("controller.kubernetes.io/pod-deletion-cost", "-10")]),
                        labels: map(&[("server-healthy", "false")]),
                    },
                ],
            }],
        },
    );
    ppm.metadata.namespace = Some("default".into());
    ppm
}

fn http(path: &str, port: IntOrString, scheme: &str) -> HTTPGetAction {
    HTTPGetAction {
        path: Some(path.into()),
        port,
        scheme: (!scheme.is_empty()).then(|| scheme.to_string()),
        ..HTTPGetAction::default()
    }
}

#[test]
fn kruise_validating_pod_probe_marker() {
    type Case = (&'static str, fn(&mut PodProbeMarker), usize);
    let cases: Vec<Case> = vec![
        ("test1", |p| p.spec.selector = None, 1),
        ("test2", |p| p.spec.probes.clear(), 1),
        (
            "test3",
            |p| {
                p.spec.probes.push(PodContainerProbe {
                    name: "healthy".into(),
                    container_name: "other".into(),
                    ..PodContainerProbe::default()
                })
            },
            1,
        ),
        (
            "test4",
            |p| {
                p.spec.probes.push(PodContainerProbe {
                    name: "check".into(),
                    container_name: "other".into(),
                    probe: Probe {
                        http_get: Some(http("/index.html", IntOrString::Int(80), "HTTP")),
                        ..Probe::default()
                    },
                    pod_condition_type: "game.kruise.io/check".into(),
                    ..PodContainerProbe::default()
                })
            },
            0,
        ),
        (
            "test5",
            |p| {
                p.spec.probes.push(PodContainerProbe {
                    name: "check".into(),
                    container_name: "other".into(),
                    probe: Probe { exec: Some(ExecAction::default()), ..Probe::default() },
                    pod_condition_type: "game.kruise.io/check".into(),
                    ..PodContainerProbe::default()
                })
            },
            1,
        ),
        (
            "test6",
            |p| {
                p.spec.probes[0].marker_policy = vec![ProbeMarkerPolicy {
                    state: PROBE_UNKNOWN.into(),
                    annotations: map(&[("controller.kubernetes.io/pod-deletion-cost", "10")]),
                    labels: map(&[("server-healthy", "true")]),
                }]
            },
            1,
        ),
        (
            "test7",
            |p| {
                p.spec.probes[0].marker_policy = vec![ProbeMarkerPolicy {
                    state: PROBE_SUCCEEDED.into(),
                    annotations: map(&[("controller.kubernetes.io/pod-deletion-cost", "10")]),
                    labels: map(&[("server-/$healthy", "true")]),
                }]
            },
            2,
        ),
        ("test8", |p| p.spec.probes[0].name = "Initialized".into(), 1),
        ("test9", |p| p.spec.probes[0].pod_condition_type = "#5invalid".into(), 1),
        ("test10", |p| p.spec.probes[0].name = String::new(), 1),
        ("test11", |p| p.spec.probes[0].container_name = String::new(), 1),
    ];
    for (name, edit, want) in cases {
        let mut ppm = demo();
        edit(&mut ppm);
        let errs = validate(&ppm, None);
        assert_eq!(errs.len(), want, "{name}: {}", aggregate(&errs));
    }
}

#[test]
fn messages_are_kruises() {
    let mut ppm = demo();
    ppm.spec.selector = None;
    assert_eq!(
        aggregate(&validate(&ppm, None)),
        "spec.selector: Invalid value: null: empty Selector is not valid for PodProbeMarker."
    );
    let mut ppm = demo();
    ppm.spec.probes[0].name = "Ready".into();
    assert_eq!(aggregate(&validate(&ppm, None)), r#"spec.probes: Invalid value: "Ready": probe name can't be Ready"#);
    let mut ppm = demo();
    ppm.spec.probes[0].name = "a#b".into();
    assert_eq!(
        aggregate(&validate(&ppm, None)),
        r#"spec.probes: Invalid value: "a#b": probe name can't contains '#'."#
    );
    let mut ppm = demo();
    ppm.spec.probes[0].probe = Probe::default();
    assert_eq!(aggregate(&validate(&ppm, None)), "spec.probe: Required value: must specify a handler type");
    let mut ppm = demo();
    ppm.spec.probes[0].marker_policy[1].state = PROBE_SUCCEEDED.into();
    assert_eq!(
        aggregate(&validate(&ppm, None)),
        r#"spec.markerPolicy: Invalid value: "Succeeded": marker policy state must be unique."#
    );
    let mut ppm = demo();
    ppm.spec.probes[0].marker_policy[0].labels.clear();
    ppm.spec.probes[0].marker_policy[0].annotations.clear();
    assert_eq!(
        aggregate(&validate(&ppm, None)),
        "spec.markerPolicy: Required value: marker policy annotations or labels can't be both empty"
    );
    let mut ppm = demo();
    ppm.spec.selector = Some(LabelSelector::default());
    assert_eq!(
        aggregate(&validate(&ppm, None)),
        "spec.selector: Invalid value: {}: empty selector is not valid for podProbeMarker."
    );
}

#[test]
fn selector_is_immutable_on_update() {
    let old = demo();
    let mut new = demo();
    new.spec.probes[0].probe.period_seconds = Some(5);
    assert!(validate(&new, Some(&old)).is_empty());
    new.spec.selector =
        Some(LabelSelector { match_labels: Some(map(&[("app", "other")])), ..LabelSelector::default() });
    assert_eq!(
        aggregate(&validate(&new, Some(&old))),
        r#"selector: Invalid value: {"matchLabels":{"app":"other"}}: selector must be immutable"#
    );
}

#[test]
fn negative_timings_are_refused() {
    let mut ppm = demo();
    ppm.spec.probes[0].probe.timeout_seconds = Some(-1);
    assert_eq!(
        aggregate(&validate(&ppm, None)),
        "spec.probe.timeoutSeconds: Invalid value: -1: must be greater than or equal to 0"
    );
}

fn tcp(port: IntOrString) -> TCPSocketAction {
    TCPSocketAction { port, ..TCPSocketAction::default() }
}

#[test]
fn kruise_validate_handler() {
    let ok = [
        exec_probe(&["echo"]),
        Probe { tcp_socket: Some(tcp(IntOrString::Int(8000))), ..Probe::default() },
        Probe { tcp_socket: Some(tcp(IntOrString::String("container-port".into()))), ..Probe::default() },
    ];
    for p in &ok {
        assert!(validate_handler(p, "field").is_empty(), "{p:?}");
    }
    let bad_tcp = || Some(tcp(IntOrString::String("container-port-v2".into())));
    let bad_http = || {
        Some(HTTPGetAction {
            path: Some(String::new()),
            port: IntOrString::String(String::new()),
            ..Default::default()
        })
    };
    let empty_exec = || Some(ExecAction { command: Some(vec![]) });
    let errors = [
        Probe::default(),
        Probe { exec: empty_exec(), ..Probe::default() },
        Probe { tcp_socket: bad_tcp(), ..Probe::default() },
        Probe { tcp_socket: Some(tcp(IntOrString::Int(-1))), ..Probe::default() },
        Probe {
            http_get: Some(HTTPGetAction {
                path: Some(String::new()),
                port: IntOrString::Int(0),
                ..Default::default()
            }),
            ..Probe::default()
        },
        Probe {
            http_get: Some(HTTPGetAction {
                path: Some("/foo".into()),
                port: IntOrString::Int(65536),
                host: Some("host".into()),
                ..Default::default()
            }),
            ..Probe::default()
        },
        Probe { http_get: bad_http(), ..Probe::default() },
        Probe { exec: empty_exec(), tcp_socket: bad_tcp(), ..Probe::default() },
        Probe { exec: empty_exec(), http_get: bad_http(), ..Probe::default() },
        Probe { tcp_socket: bad_tcp(), http_get: bad_http(), ..Probe::default() },
        Probe { exec: empty_exec(), tcp_socket: bad_tcp(), http_get: bad_http(), ..Probe::default() },
    ];
    for p in &errors {
        assert!(!validate_handler(p, "field").is_empty(), "{p:?}");
    }
    // Two handlers: the second is forbidden.
    let two = Probe {
        exec: Some(ExecAction { command: Some(vec!["x".into()]) }),
        tcp_socket: Some(tcp(IntOrString::Int(80))),
        ..Probe::default()
    };
    assert_eq!(
        aggregate(&validate_handler(&two, "field")),
        "field.tcpSocket: Forbidden: may not specify more than 1 handler type"
    );
}

#[test]
fn kruise_validate_port_num_or_name() {
    for port in [IntOrString::Int(80), IntOrString::String("abc".into())] {
        assert!(validate_port_num_or_name(&port, "field").is_empty(), "{port:?}");
    }
    for port in
        [IntOrString::Int(-1), IntOrString::String(String::new()), IntOrString::String("aaaaabbbbbcccccd".into())]
    {
        assert!(!validate_port_num_or_name(&port, "field").is_empty(), "{port:?}");
    }
    // (kruise's fourth row, an IntOrString of an unknown type, cannot be built in Rust.)
}

#[test]
fn kruise_validate_tcp_socket_action() {
    for t in [tcp(IntOrString::Int(80)), tcp(IntOrString::String("abc".into()))] {
        assert!(validate_tcp_socket(&t, "field").is_empty(), "{t:?}");
    }
    let with_host = TCPSocketAction { host: Some("127.0.0.1".into()), ..tcp(IntOrString::Int(80)) };
    for t in [
        tcp(IntOrString::Int(-1)),
        tcp(IntOrString::String(String::new())),
        tcp(IntOrString::String("aaaaabbbbbcccccd".into())),
        with_host,
    ] {
        assert!(!validate_tcp_socket(&t, "field").is_empty(), "{t:?}");
    }
}

#[test]
fn kruise_validate_http_get_action() {
    let header = |name: &str| vec![HTTPHeader { name: name.into(), value: "value".into() }];
    let cases: Vec<(&str, HTTPGetAction, usize)> = vec![
        ("valid http get action", http("/healthz", IntOrString::Int(8080), "HTTP"), 0),
        ("missing path", http("", IntOrString::Int(8080), "HTTP"), 1),
        ("invalid port number", http("/healthz", IntOrString::Int(65536), "HTTP"), 1),
        ("invalid port name", http("/healthz", IntOrString::String("invalid-port-name-!@#".into()), "HTTP"), 2),
        ("unsupported scheme", http("/healthz", IntOrString::Int(8080), "FTP"), 1),
        (
            "invalid header name",
            HTTPGetAction {
                http_headers: Some(header("Invalid Header:Name")),
                ..http("/healthz", IntOrString::Int(8080), "HTTPS")
            },
            1,
        ),
        (
            "multiple errors",
            HTTPGetAction { http_headers: Some(header("Invalid:Header")), ..http("", IntOrString::Int(99999), "FTP") },
            4,
        ),
        (
            "invalid path",
            HTTPGetAction {
                http_headers: Some(header("Valid-Header")),
                ..http("path%notvalid", IntOrString::Int(8080), "HTTP")
            },
            1,
        ),
        (
            "invalid host field",
            HTTPGetAction { host: Some("127.0.0.1".into()), ..http("/healthz", IntOrString::Int(8080), "HTTP") },
            1,
        ),
    ];
    for (name, action, want) in cases {
        let errs = validate_http_get(&action, "test");
        assert_eq!(errs.len(), want, "{name}: {}", aggregate(&errs));
    }
}

#[test]
fn url_parse_like_go() {
    for ok in ["/healthz", "/a%20b", "/x?y=%zz", "*", "http://h/p", "a/b:c", "/p#frag"] {
        assert!(go_url_parses(ok), "{ok}");
    }
    for bad in ["path%notvalid", ":x", "a:b/c".replace('a', "1").as_str(), "/a\u{1}", "/p#%zz", "/%4"] {
        assert!(!go_url_parses(bad), "{bad}");
    }
}
