//! The pod checks a SidecarSet's containers and volumes must pass (spec §2.3 items 7 and 9).
//! Kruise builds a fake Pod (namespace `default`, name `test`, the sidecar init containers,
//! containers and volumes, plus a dummy `test`/`busybox` container when the set has no
//! containers) and runs Kubernetes' `ValidatePodCreate` on it; paths are therefore the fake
//! pod's (`spec.containers[0].image`).
//!
//! This is the subset of `ValidatePodCreate` that a set of sidecars can violate: container names
//! (required, DNS-1123 label, unique across init containers and containers), image required,
//! `imagePullPolicy` and `terminationMessagePolicy` values, volume mounts and devices (they must
//! name a volume, have a unique absolute path, and not share a path), container ports, env var
//! names, `restartPolicy` (only `Always`, and only on init containers), probes and lifecycle on
//! init containers, and volume names and sources. Messages are Kubernetes' (v1.32). Rules about
//! the rest of a pod spec (scheduling, security, resources arithmetic) are not reproduced: the
//! fake pod fixes those fields to valid values.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Container, Volume};
use serde_json::Value;

use crate::compat::field::{FieldError, child, index};
use crate::compat::names::is_dns1123_label;

/// Validates the fake pod built from the sidecars.
pub fn validate_fake_pod(init: &[Container], containers: &[Container], volumes: &[Volume]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let volume_names = validate_volumes(volumes, "spec.volumes", &mut errs);
    let dummy;
    let containers = if containers.is_empty() {
        dummy = [Container {
            name: "test".into(),
            image: Some("busybox".into()),
            image_pull_policy: Some("IfNotPresent".into()),
            termination_message_policy: Some("File".into()),
            ..Default::default()
        }];
        &dummy[..]
    } else {
        containers
    };
    // validateInitContainers, then validateContainers, as ValidatePodSpec orders them.
    let mut all_names: BTreeSet<&str> = containers.iter().map(|c| c.name.as_str()).collect();
    let init_path = "spec.initContainers";
    let mut init_names = BTreeSet::new();
    for (i, c) in init.iter().enumerate() {
        let path = index(init_path, i);
        validate_container(c, &volume_names, &path, &mut init_names, &mut errs);
        if all_names.contains(c.name.as_str()) {
            errs.push(FieldError::duplicate(&child(&path, "name"), c.name.as_str()));
        }
        if !c.name.is_empty() {
            all_names.insert(c.name.as_str());
        }
        match c.restart_policy.as_deref() {
            None => {
                let forbidden = "may not be set for init containers without restartPolicy=Always";
                if c.lifecycle.is_some() {
                    errs.push(FieldError::forbidden(&child(&path, "lifecycle"), forbidden));
                }
                for (name, probe) in [
                    ("livenessProbe", &c.liveness_probe),
                    ("readinessProbe", &c.readiness_probe),
                    ("startupProbe", &c.startup_probe),
                ] {
                    if probe.is_some() {
                        errs.push(FieldError::forbidden(&child(&path, name), forbidden));
                    }
                }
            }
            Some("Always") => {}
            Some(other) => errs.push(FieldError::not_supported(&child(&path, "restartPolicy"), other, &["Always"])),
        }
    }
    let mut names = BTreeSet::new();
    for (i, c) in containers.iter().enumerate() {
        let path = index("spec.containers", i);
        validate_container(c, &volume_names, &path, &mut names, &mut errs);
        if c.restart_policy.is_some() {
            errs.push(FieldError::forbidden(&child(&path, "restartPolicy"), "may not be set for non-init containers"));
        }
    }
    errs
}

/// Names, uniqueness and exactly one source per volume; returns the volume names.
fn validate_volumes(volumes: &[Volume], path: &str, errs: &mut Vec<FieldError>) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (i, v) in volumes.iter().enumerate() {
        let p = index(path, i);
        let name_path = child(&p, "name");
        if v.name.is_empty() {
            errs.push(FieldError::required(&name_path, ""));
        } else {
            errs.extend(dns_label(&v.name, &name_path));
        }
        if names.contains(&v.name) {
            errs.push(FieldError::duplicate(&name_path, v.name.as_str()));
        } else {
            names.insert(v.name.clone());
        }
        let sources = match serde_json::to_value(v) {
            Ok(Value::Object(m)) => m.keys().filter(|k| *k != "name").count(),
            _ => 1,
        };
        if sources == 0 {
            errs.push(FieldError::required(&p, "must specify a volume type"));
        } else if sources > 1 {
            errs.push(FieldError::forbidden(&p, "may not specify more than 1 volume type"));
        }
    }
    names
}

fn dns_label(value: &str, path: &str) -> Vec<FieldError> {
    is_dns1123_label(value).into_iter().map(|m| FieldError::invalid(path, value, m)).collect()
}

fn validate_container(
    c: &Container,
    volumes: &BTreeSet<String>,
    path: &str,
    names: &mut BTreeSet<String>,
    errs: &mut Vec<FieldError>,
) {
    let name_path = child(path, "name");
    if c.name.is_empty() {
        errs.push(FieldError::required(&name_path, ""));
    } else {
        errs.extend(dns_label(&c.name, &name_path));
    }
    if !names.insert(c.name.clone()) {
        errs.push(FieldError::duplicate(&name_path, c.name.as_str()));
    }
    if c.image.as_deref().unwrap_or("").is_empty() {
        errs.push(FieldError::required(&child(path, "image"), ""));
    }
    match c.termination_message_policy.as_deref().unwrap_or("") {
        "File" | "FallbackToLogsOnError" => {}
        "" => errs.push(FieldError::required(
            &child(path, "terminationMessagePolicy"),
            "must be 'File' or 'FallbackToLogsOnError'",
        )),
        other => errs.push(FieldError::invalid(
            &child(path, "terminationMessagePolicy"),
            other,
            "must be 'File' or 'FallbackToLogsOnError'",
        )),
    }
    validate_ports(c, &child(path, "ports"), errs);
    for (i, e) in c.env.iter().flatten().enumerate() {
        let p = child(&index(&child(path, "env"), i), "name");
        if e.name.is_empty() {
            errs.push(FieldError::required(&p, ""));
        }
    }
    let mounts_path = child(path, "volumeMounts");
    let mut mount_paths = BTreeSet::new();
    let device_paths: BTreeSet<&str> = c.volume_devices.iter().flatten().map(|d| d.device_path.as_str()).collect();
    for (i, m) in c.volume_mounts.iter().flatten().enumerate() {
        let p = index(&mounts_path, i);
        if m.name.is_empty() {
            errs.push(FieldError::required(&child(&p, "name"), ""));
        } else if !volumes.contains(&m.name) {
            errs.push(FieldError::not_found(&child(&p, "name"), m.name.as_str()));
        }
        let mp = child(&p, "mountPath");
        if m.mount_path.is_empty() {
            errs.push(FieldError::required(&mp, ""));
        }
        if !mount_paths.insert(m.mount_path.as_str()) {
            errs.push(FieldError::invalid(&mp, m.mount_path.as_str(), "must be unique"));
        }
        if device_paths.contains(m.mount_path.as_str()) {
            errs.push(FieldError::invalid(
                &mp,
                m.mount_path.as_str(),
                "must not already exist as a path in volumeDevices",
            ));
        }
        if m.sub_path.as_deref().is_some_and(|s| !s.is_empty())
            && m.sub_path_expr.as_deref().is_some_and(|s| !s.is_empty())
        {
            errs.push(FieldError::invalid(
                &child(&p, "subPathExpr"),
                m.sub_path_expr.as_deref().unwrap_or(""),
                "subPathExpr and subPath are mutually exclusive",
            ));
        }
        if let Some(sub) = m.sub_path.as_deref().filter(|s| !s.is_empty()) {
            validate_descending_path(sub, &child(&p, "subPath"), errs);
        }
    }
    let devices_path = child(path, "volumeDevices");
    let mut seen_devices = BTreeSet::new();
    for (i, d) in c.volume_devices.iter().flatten().enumerate() {
        let p = index(&devices_path, i);
        if d.name.is_empty() {
            errs.push(FieldError::required(&child(&p, "name"), ""));
        } else if !volumes.contains(&d.name) {
            errs.push(FieldError::not_found(&child(&p, "name"), d.name.as_str()));
        }
        let dp = child(&p, "devicePath");
        if d.device_path.is_empty() {
            errs.push(FieldError::required(&dp, ""));
        }
        if !seen_devices.insert(d.device_path.as_str()) {
            errs.push(FieldError::invalid(&dp, d.device_path.as_str(), "must be unique"));
        }
    }
    match c.image_pull_policy.as_deref().unwrap_or("") {
        "Always" | "IfNotPresent" | "Never" => {}
        "" => errs.push(FieldError::required(&child(path, "imagePullPolicy"), "")),
        other => errs.push(FieldError::not_supported(
            &child(path, "imagePullPolicy"),
            other,
            &["Always", "IfNotPresent", "Never"],
        )),
    }
}

fn validate_ports(c: &Container, path: &str, errs: &mut Vec<FieldError>) {
    let mut names = BTreeSet::new();
    for (i, port) in c.ports.iter().flatten().enumerate() {
        let p = index(path, i);
        if let Some(name) = port.name.as_deref().filter(|n| !n.is_empty())
            && !names.insert(name)
        {
            errs.push(FieldError::duplicate(&child(&p, "name"), name));
        }
        if !(1..=65535).contains(&port.container_port) {
            errs.push(FieldError::invalid(
                &child(&p, "containerPort"),
                port.container_port,
                "must be between 1 and 65535, inclusive",
            ));
        }
        if let Some(host) = port.host_port.filter(|h| *h != 0)
            && !(1..=65535).contains(&host)
        {
            errs.push(FieldError::invalid(&child(&p, "hostPort"), host, "must be between 1 and 65535, inclusive"));
        }
        match port.protocol.as_deref().unwrap_or("") {
            "TCP" | "UDP" | "SCTP" => {}
            "" => errs.push(FieldError::required(&child(&p, "protocol"), "")),
            other => errs.push(FieldError::not_supported(&child(&p, "protocol"), other, &["SCTP", "TCP", "UDP"])),
        }
    }
}

/// `validateLocalDescendingPath`: relative, without `..` elements.
fn validate_descending_path(target: &str, path: &str, errs: &mut Vec<FieldError>) {
    if target.starts_with('/') {
        errs.push(FieldError::invalid(path, target, "must be a relative path"));
    }
    if target.split(['/', '\\']).any(|part| part == "..") {
        errs.push(FieldError::invalid(path, target, "must not contain '..'"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::field::aggregate;
    use serde_json::json;

    fn check(init: Value, containers: Value, volumes: Value) -> String {
        let init: Vec<Container> = serde_json::from_value(init).unwrap();
        let containers: Vec<Container> = serde_json::from_value(containers).unwrap();
        let volumes: Vec<Volume> = serde_json::from_value(volumes).unwrap();
        aggregate(&validate_fake_pod(&init, &containers, &volumes))
    }

    fn ok(name: &str) -> Value {
        json!({"name": name, "image": "x:1", "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File"})
    }

    #[test]
    fn valid_sidecars_pass() {
        let mut c = ok("side");
        c["volumeMounts"] = json!([{"name": "v", "mountPath": "/v"}]);
        assert_eq!(check(json!([ok("init")]), json!([c]), json!([{"name": "v", "emptyDir": {}}])), "");
        assert_eq!(check(json!([ok("only-init")]), json!([]), json!([])), "", "dummy container added");
    }

    #[test]
    fn each_rule() {
        let with = |patch: Value| {
            let mut c = ok("side");
            for (k, v) in patch.as_object().unwrap() {
                c[k] = v.clone();
            }
            c
        };
        let cases = [
            (json!([]), json!([with(json!({"name": ""}))]), json!([]), "spec.containers[0].name: Required value"),
            (
                json!([]),
                json!([with(json!({"name": "Bad_Name"}))]),
                json!([]),
                "spec.containers[0].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label",
            ),
            (json!([]), json!([ok("a"), ok("a")]), json!([]), "spec.containers[1].name: Duplicate value: \"a\""),
            (json!([ok("a")]), json!([ok("a")]), json!([]), "spec.initContainers[0].name: Duplicate value: \"a\""),
            (json!([ok("test")]), json!([]), json!([]), "spec.initContainers[0].name: Duplicate value: \"test\""),
            (json!([]), json!([with(json!({"image": ""}))]), json!([]), "spec.containers[0].image: Required value"),
            (
                json!([]),
                json!([with(json!({"imagePullPolicy": "Sometimes"}))]),
                json!([]),
                "spec.containers[0].imagePullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"",
            ),
            (
                json!([]),
                json!([with(json!({"terminationMessagePolicy": "X"}))]),
                json!([]),
                "spec.containers[0].terminationMessagePolicy: Invalid value: \"X\": must be 'File' or 'FallbackToLogsOnError'",
            ),
            (
                json!([]),
                json!([with(json!({"volumeMounts": [{"name": "missing", "mountPath": "/m"}]}))]),
                json!([]),
                "spec.containers[0].volumeMounts[0].name: Not found: \"missing\"",
            ),
            (
                json!([]),
                json!([with(
                    json!({"volumeMounts": [{"name": "v", "mountPath": "/m"}, {"name": "v", "mountPath": "/m"}]})
                )]),
                json!([{"name": "v", "emptyDir": {}}]),
                "spec.containers[0].volumeMounts[1].mountPath: Invalid value: \"/m\": must be unique",
            ),
            (
                json!([]),
                json!([with(json!({"volumeDevices": [{"name": "nope", "devicePath": "/d"}]}))]),
                json!([]),
                "spec.containers[0].volumeDevices[0].name: Not found: \"nope\"",
            ),
            (
                json!([]),
                json!([with(json!({"ports": [{"containerPort": 0, "protocol": "TCP"}]}))]),
                json!([]),
                "spec.containers[0].ports[0].containerPort: Invalid value: 0: must be between 1 and 65535, inclusive",
            ),
            (
                json!([]),
                json!([with(json!({"restartPolicy": "Always"}))]),
                json!([]),
                "spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers",
            ),
            (
                json!([with(json!({"restartPolicy": "OnFailure"}))]),
                json!([]),
                json!([]),
                "spec.initContainers[0].restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\"",
            ),
            (
                json!([with(json!({"readinessProbe": {"exec": {"command": ["x"]}}}))]),
                json!([]),
                json!([]),
                "spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
            ),
            (
                json!([]),
                json!([ok("a")]),
                json!([{"name": "v"}]),
                "spec.volumes[0]: Required value: must specify a volume type",
            ),
            (
                json!([]),
                json!([ok("a")]),
                json!([{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}]),
                "spec.volumes[1].name: Duplicate value: \"v\"",
            ),
        ];
        for (init, containers, volumes, want) in cases {
            let got = check(init.clone(), containers.clone(), volumes);
            assert!(got.contains(want), "{containers} {init}: got {got}, want {want}");
        }
        let mut native = ok("n");
        native["restartPolicy"] = json!("Always");
        native["readinessProbe"] = json!({"exec": {"command": ["x"]}});
        assert_eq!(check(json!([native]), json!([]), json!([])), "");
    }
}
