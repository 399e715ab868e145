//! kruise `pkg/daemon/podprobe` tests: `TestUpdateNodePodProbeStatus` test1–test4 on
//! [`build_status`], `TestResultManagerSet` on [`replaces`], and the worker's thresholds,
//! container checks and initial delay (kruise `worker.doProbe`).

#![allow(clippy::unwrap_used)]

use super::*;
use crate::apis::nodepodprobe::{ContainerProbe, NodePodProbeSpec, PodProbe};
use k8s_openapi::api::core::v1::ExecAction;

fn exec_probe() -> Probe {
    Probe {
        exec: Some(ExecAction { command: Some(vec!["/bin/sh".into(), "-c".into(), "/healthy.sh".into()]) }),
        initial_delay_seconds: Some(100),
        ..Probe::default()
    }
}

fn pod_probe(name: &str, ip: &str, probes: &[&str]) -> PodProbe {
    PodProbe {
        name: name.into(),
        uid: format!("{name}-uid"),
        ip: ip.into(),
        probes: probes
            .iter()
            .map(|p| ContainerProbe { name: p.to_string(), container_name: "main".into(), probe: exec_probe() })
            .collect(),
        ..PodProbe::default()
    }
}

fn demo() -> NodePodProbe {
    NodePodProbe::new(
        "node-1",
        NodePodProbeSpec {
            pod_probes: vec![
                pod_probe("pod-0", "1.1.1.1", &["ppm-1#healthy"]),
                pod_probe("pod-1", "2.2.2.2", &["ppm-1#healthy"]),
                pod_probe("pod-2", "3.3.3.3", &["ppm-1#tcpCheck"]),
            ],
        },
    )
}

fn state(name: &str, state: &str) -> ContainerProbeState {
    ContainerProbeState { name: name.into(), state: state.into(), ..ContainerProbeState::default() }
}

fn pod_status(name: &str, states: Vec<ContainerProbeState>) -> PodProbeStatus {
    PodProbeStatus { name: name.into(), uid: format!("{name}-uid"), probe_states: states, ..PodProbeStatus::default() }
}

fn key(pod: &str, probe: &str) -> ProbeKey {
    ProbeKey {
        namespace: String::new(),
        pod: pod.into(),
        uid: format!("{pod}-uid"),
        ip: "2.2.2.2".into(),
        container: "main".into(),
        probe: probe.into(),
    }
}

fn t(s: i64) -> Timestamp {
    Timestamp::from_second(s).unwrap()
}

/// The status without times (kruise's rows compare states only).
fn states_of(s: &NodePodProbeStatus) -> Vec<(String, Vec<(String, String)>)> {
    s.pod_probe_statuses
        .iter()
        .map(|p| (p.name.clone(), p.probe_states.iter().map(|s| (s.name.clone(), s.state.clone())).collect()))
        .collect()
}

fn rows(rows: &[(&str, &[(&str, &str)])]) -> Vec<(String, Vec<(String, String)>)> {
    rows.iter()
        .map(|(p, s)| (p.to_string(), s.iter().map(|(n, st)| (n.to_string(), st.to_string())).collect()))
        .collect()
}

fn succeeded(at: i64) -> Published {
    Published { state: PROBE_SUCCEEDED.into(), message: String::new(), at: t(at) }
}

#[test]
fn kruise_update_status_test1_new_pod_entry() {
    let mut npp = demo();
    npp.status = Some(NodePodProbeStatus {
        pod_probe_statuses: vec![pod_status("pod-0", vec![state("ppm-1#healthy", "Succeeded")])],
    });
    let results = BTreeMap::from([(key("pod-1", "ppm-1#healthy"), succeeded(100))]);
    let s = build_status(&npp, &results, t(200));
    assert_eq!(
        states_of(&s),
        rows(&[("pod-0", &[("ppm-1#healthy", "Succeeded")]), ("pod-1", &[("ppm-1#healthy", "Succeeded")])])
    );
    let new = &s.pod_probe_statuses[1].probe_states[0];
    assert_eq!(new.last_probe_time, Some(Time(t(100))));
    assert_eq!(new.last_transition_time, Some(Time(t(200))));
}

#[test]
fn kruise_update_status_test2_and_test3_existing_entry() {
    let mut npp = demo();
    npp.spec.pod_probes[1].probes.push(ContainerProbe {
        name: "ppm-1#other".into(),
        container_name: "main".into(),
        probe: exec_probe(),
    });
    npp.status = Some(NodePodProbeStatus {
        pod_probe_statuses: vec![
            pod_status("pod-0", vec![state("ppm-1#healthy", "Succeeded")]),
            pod_status("pod-1", vec![state("ppm-1#other", "Failed"), state("ppm-1#healthy", "Failed")]),
        ],
    });
    let results = BTreeMap::from([(key("pod-1", "ppm-1#healthy"), succeeded(100))]);
    let s = build_status(&npp, &results, t(200));
    assert_eq!(
        states_of(&s),
        rows(&[
            ("pod-0", &[("ppm-1#healthy", "Succeeded")]),
            ("pod-1", &[("ppm-1#other", "Failed"), ("ppm-1#healthy", "Succeeded")])
        ])
    );
    assert_eq!(s.pod_probe_statuses[1].probe_states[1].last_transition_time, Some(Time(t(200))));
    // test3: the pod's entry holds another probe only: the result is appended.
    npp.status = Some(NodePodProbeStatus {
        pod_probe_statuses: vec![pod_status("pod-1", vec![state("ppm-1#other", "Failed")])],
    });
    let s = build_status(&npp, &results, t(200));
    assert_eq!(states_of(&s), rows(&[("pod-1", &[("ppm-1#other", "Failed"), ("ppm-1#healthy", "Succeeded")])]));
}

#[test]
fn kruise_update_status_test4_stale_states_dropped() {
    let mut npp = demo();
    npp.status = Some(NodePodProbeStatus {
        pod_probe_statuses: vec![
            pod_status("pod-1", vec![state("ppm-2#other", "Failed"), state("ppm-1#healthy", "Failed")]),
            pod_status("pod-2", vec![state("ppm-2#other", "Failed")]),
        ],
    });
    // A result of a probe the spec no longer has is not written either.
    let results = BTreeMap::from([(key("pod-9", "ppm-1#healthy"), succeeded(100))]);
    let s = build_status(&npp, &results, t(200));
    assert_eq!(states_of(&s), rows(&[("pod-1", &[("ppm-1#healthy", "Failed")])]));
}

#[test]
fn same_state_keeps_its_transition_time() {
    let mut npp = demo();
    let mut old = state("ppm-1#healthy", "Succeeded");
    old.last_transition_time = Some(Time(t(50)));
    npp.status = Some(NodePodProbeStatus { pod_probe_statuses: vec![pod_status("pod-1", vec![old])] });
    let results = BTreeMap::from([(key("pod-1", "ppm-1#healthy"), succeeded(100))]);
    let s = build_status(&npp, &results, t(200));
    let st = &s.pod_probe_statuses[0].probe_states[0];
    assert_eq!((st.last_transition_time.clone(), st.last_probe_time.clone()), (Some(Time(t(50))), Some(Time(t(100)))));
    // Built again from its own output: nothing changes.
    npp.status = Some(s.clone());
    assert_eq!(build_status(&npp, &results, t(300)), s);
}

#[test]
fn kruise_result_manager_set() {
    let prev = Published { state: PROBE_SUCCEEDED.into(), message: "ok".into(), at: t(1000) };
    // first probe
    assert!(replaces(None, PROBE_SUCCEEDED, "ok", t(1000)));
    // second probe, no changed
    assert!(!replaces(Some(&prev), PROBE_SUCCEEDED, "ok", t(1010)));
    // second probe, state changed
    assert!(replaces(Some(&prev), PROBE_FAILED, "ok", t(1010)));
    // second probe, msg changed
    assert!(replaces(Some(&prev), PROBE_SUCCEEDED, "other", t(1010)));
    // no change, but over ten minutes
    assert!(replaces(Some(&prev), PROBE_SUCCEEDED, "ok", t(1600)));
    assert!(!replaces(Some(&prev), PROBE_SUCCEEDED, "ok", t(1599)));
}

#[test]
fn worker_thresholds() {
    let probe = Probe { success_threshold: Some(2), failure_threshold: Some(3), ..Probe::default() };
    let mut w = Worker::default();
    assert!(!w.after_probe(PROBE_SUCCEEDED, &probe));
    assert!(w.after_probe(PROBE_SUCCEEDED, &probe));
    assert!(w.after_probe(PROBE_SUCCEEDED, &probe));
    assert!(!w.after_probe(PROBE_FAILED, &probe));
    assert!(!w.after_probe(PROBE_FAILED, &probe));
    assert!(w.after_probe(PROBE_FAILED, &probe));
    // Thresholds of 0 mean 1.
    let mut w = Worker::default();
    assert!(w.after_probe(PROBE_FAILED, &Probe::default()));
}

#[test]
fn worker_container_checks_and_initial_delay() {
    let probe = Probe { initial_delay_seconds: Some(5), ..Probe::default() };
    let mut w = Worker::default();
    assert_eq!(w.before_probe("main", None, &probe, t(100)), Before::NoContainer);
    let c = Container { id: "c1".into(), running: true, started_at: t(100) };
    assert_eq!(
        w.before_probe("main", Some(&c), &probe, t(102)),
        Before::Go { publish: vec![(PROBE_UNKNOWN.into(), String::new())], probe: false }
    );
    assert_eq!(w.before_probe("main", Some(&c), &probe, t(105)), Before::Go { publish: vec![], probe: true });
    let restarted = Container { id: "c2".into(), running: false, started_at: t(200) };
    assert_eq!(
        w.before_probe("main", Some(&restarted), &probe, t(300)),
        Before::Go {
            publish: vec![
                (PROBE_UNKNOWN.into(), String::new()),
                (PROBE_FAILED.into(), "Container(main) is Non-running".into())
            ],
            probe: true
        }
    );
    // The initial delay is at least 1 s.
    let mut w = Worker::default();
    let fresh = Container { id: "c3".into(), running: true, started_at: t(100) };
    assert!(matches!(w.before_probe("main", Some(&fresh), &Probe::default(), t(100)), Before::Go { probe: false, .. }));
}

#[test]
fn wanted_workers_and_timings() {
    let w = wanted_workers(&demo());
    assert_eq!(w.len(), 3);
    assert!(w.contains_key(&key("pod-1", "ppm-1#healthy")));
    assert_eq!(period(&Probe::default()), std::time::Duration::from_secs(1));
    assert_eq!(period(&Probe { period_seconds: Some(7), ..Probe::default() }), std::time::Duration::from_secs(7));
    assert_eq!(timeout_seconds(&Probe::default()), 1);
    assert_eq!(truncate_message("é".repeat(600)).len(), 1024);
    assert_eq!(state_of(true), "Succeeded");
}
