//! Pod template validation of the CloneSet validator (spec §2.1 item 5): the subset of
//! Kubernetes' `ValidatePodTemplateSpec` (`pkg/apis/core/validation`, v1.32 as vendored by kruise)
//! that a workload template can get wrong, with Kubernetes' paths and texts. The caller passes a
//! template that has already been DEFAULTED (§1.5), as kruise's `ConvertPodTemplateSpec` does, and
//! the names of its volumeClaimTemplates, which kruise adds as PVC volumes so mounts may use them.
//!
//! Covered, in Kubernetes' order: template labels and annotations; volumes (name required, a
//! DNS-1123 label, unique; exactly one volume source); containers (at least one; name required, a
//! DNS-1123 label, unique across init and regular containers; image required;
//! terminationMessagePolicy; ports: name, number range, protocol, duplicate host ports; env names
//! required; volumeMounts name, existing volume, mountPath required and unique; imagePullPolicy;
//! `restartPolicy` only on init containers, where it must be Always; probes and lifecycle not on
//! plain init containers); hostPort = containerPort with hostNetwork; pod restartPolicy and
//! dnsPolicy; nodeSelector labels.
//!
//! Not covered (the apiserver's own pod validation still applies when the controller creates the
//! pods): volume source contents, env var name syntax and valueFrom, resources, probes' handlers,
//! security contexts, affinity, tolerations, topology spread, DNS config, ephemeral containers and
//! the pod-specific annotations (seccomp, AppArmor, tolerations annotation).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec, Volume};

use crate::compat::field::{FieldError, child, index};
use crate::compat::names::{is_dns1123_label, validate_annotations, validate_labels};
use crate::compat::selector::Selector;

/// Volume sources in the order Kubernetes' `validateVolumeSource` checks them (JSON names).
const VOLUME_SOURCES: &[&str] = &[
    "hostPath",
    "emptyDir",
    "gitRepo",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "flocker",
    "persistentVolumeClaim",
    "rbd",
    "cinder",
    "cephfs",
    "downwardAPI",
    "fc",
    "flexVolume",
    "configMap",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "projected",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];

/// Labels and annotations of a template (`<path>.labels`, `<path>.annotations`: Kubernetes' core
/// template inlines the metadata, so the paths have no `metadata`).
pub fn validate_template_metadata(template: &PodTemplateSpec, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(meta) = &template.metadata {
        if let Some(labels) = &meta.labels {
            errs.extend(validate_labels(labels, &child(path, "labels")));
        }
        if let Some(annotations) = &meta.annotations {
            errs.extend(validate_annotations(annotations, &child(path, "annotations")));
        }
    }
    errs
}

/// `spec.selector` of a workload: required, valid and non-empty (`kind` names the workload in the
/// message, e.g. "empty selector is invalid for cloneset"), then matching the template labels.
/// Returns the errors and whether the selector converted (kruise skips the template checks when
/// it does not).
pub fn validate_workload_selector(
    selector: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
    template: &PodTemplateSpec,
    kind: &str,
) -> (Vec<FieldError>, bool) {
    let mut errs = Vec::new();
    match selector {
        None => errs.push(FieldError::required("spec.selector", "")),
        Some(sel) => {
            errs.extend(crate::compat::selector::validate_label_selector(sel, "spec.selector"));
            if crate::compat::selector::is_empty(sel) {
                let detail = format!("empty selector is invalid for {kind}");
                errs.push(FieldError::invalid("spec.selector", super::json(sel), &detail));
            }
        }
    }
    match Selector::from_optional(selector) {
        Err(_) => {
            errs.push(FieldError::invalid("spec.selector", super::json(&selector), ""));
            (errs, false)
        }
        Ok(sel) => {
            errs.extend(selector_matches_template(&sel, template));
            (errs, true)
        }
    }
}

/// A non-empty selector must match the template labels (`spec.template.metadata.labels`, as
/// kruise and Kubernetes' StatefulSet validation report it). A nil selector selects nothing, so
/// it never matches, as in Go.
pub fn selector_matches_template(sel: &Selector, template: &PodTemplateSpec) -> Vec<FieldError> {
    let labels = template.metadata.as_ref().and_then(|m| m.labels.clone());
    if !sel.is_empty() && !sel.matches(&labels.clone().unwrap_or_default()) {
        let value = labels.map_or(serde_json::Value::Null, |l| serde_json::to_value(l).unwrap_or_default());
        return vec![FieldError::invalid(
            "spec.template.metadata.labels",
            value,
            "`selector` does not match template `labels`",
        )];
    }
    Vec::new()
}

/// `ValidatePodTemplateSpec(template, path)` on a defaulted template; `claim_volumes` are the
/// volumeClaimTemplate names appended as PVC volumes.
pub fn validate_pod_template_spec(template: &PodTemplateSpec, claim_volumes: &[String], path: &str) -> Vec<FieldError> {
    let mut errs = validate_template_metadata(template, path);
    let spec = template.spec.clone().unwrap_or_default();
    errs.extend(validate_pod_spec(&spec, claim_volumes, &child(path, "spec")));
    errs
}

fn validate_pod_spec(spec: &PodSpec, claim_volumes: &[String], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let volumes = validate_volumes(
        spec.volumes.as_deref().unwrap_or_default(),
        claim_volumes,
        &child(path, "volumes"),
        &mut errs,
    );
    errs.extend(validate_containers(&spec.containers, &volumes, &child(path, "containers")));
    let init = spec.init_containers.as_deref().unwrap_or_default();
    errs.extend(validate_init_containers(init, &spec.containers, &volumes, &child(path, "initContainers")));
    if spec.host_network == Some(true) {
        errs.extend(host_network_ports(&spec.containers, &child(path, "containers")));
    }
    errs.extend(one_of(
        spec.restart_policy.as_deref().unwrap_or(""),
        &["Always", "OnFailure", "Never"],
        &child(path, "restartPolicy"),
    ));
    errs.extend(one_of(
        spec.dns_policy.as_deref().unwrap_or(""),
        &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        &child(path, "dnsPolicy"),
    ));
    if let Some(node_selector) = &spec.node_selector {
        errs.extend(validate_labels(node_selector, &child(path, "nodeSelector")));
    }
    errs
}

/// Required when empty, NotSupported when not one of `valid`.
fn one_of(value: &str, valid: &[&str], path: &str) -> Vec<FieldError> {
    if value.is_empty() {
        vec![FieldError::required(path, "")]
    } else if !valid.contains(&value) {
        vec![FieldError::not_supported(path, value, valid)]
    } else {
        Vec::new()
    }
}

/// `ValidateVolumes`: returns the names of the volumes without errors (what mounts may refer to).
fn validate_volumes(
    volumes: &[Volume],
    claim_volumes: &[String],
    path: &str,
    errs: &mut Vec<FieldError>,
) -> BTreeSet<String> {
    let claims: Vec<Volume> = claim_volumes
        .iter()
        .map(|name| Volume {
            name: name.clone(),
            persistent_volume_claim: Some(k8s_openapi::api::core::v1::PersistentVolumeClaimVolumeSource {
                claim_name: name.clone(),
                read_only: None,
            }),
            ..Default::default()
        })
        .collect();
    let mut names = BTreeSet::new();
    for (i, vol) in volumes.iter().chain(claims.iter()).enumerate() {
        let idx = index(path, i);
        let name_path = child(&idx, "name");
        let mut el = volume_source_count(vol, &idx);
        if vol.name.is_empty() {
            el.push(FieldError::required(&name_path, ""));
        } else {
            el.extend(
                is_dns1123_label(&vol.name).into_iter().map(|m| FieldError::invalid(&name_path, vol.name.as_str(), m)),
            );
        }
        if names.contains(&vol.name) {
            el.push(FieldError::duplicate(&name_path, vol.name.as_str()));
        }
        if el.is_empty() {
            names.insert(vol.name.clone());
        } else {
            errs.extend(el);
        }
    }
    names
}

/// Exactly one volume source: none → Required, a second one → Forbidden at its name.
fn volume_source_count(vol: &Volume, path: &str) -> Vec<FieldError> {
    let json = serde_json::to_value(vol).unwrap_or_default();
    let set: Vec<&str> =
        VOLUME_SOURCES.iter().copied().filter(|s| json.get(*s).is_some_and(|v| !v.is_null())).collect();
    match set.as_slice() {
        [] => vec![FieldError::required(path, "must specify a volume type")],
        [_] => Vec::new(),
        [_, rest @ ..] => rest
            .iter()
            .map(|s| FieldError::forbidden(&child(path, s), "may not specify more than 1 volume type"))
            .collect(),
    }
}

fn validate_containers(containers: &[Container], volumes: &BTreeSet<String>, path: &str) -> Vec<FieldError> {
    if containers.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let mut errs = Vec::new();
    let mut names = BTreeSet::new();
    for (i, c) in containers.iter().enumerate() {
        let p = index(path, i);
        errs.extend(container_common(c, volumes, &p));
        if !names.insert(c.name.as_str()) {
            errs.push(FieldError::duplicate(&child(&p, "name"), c.name.as_str()));
        }
        if c.restart_policy.is_some() {
            errs.push(FieldError::forbidden(&child(&p, "restartPolicy"), "may not be set for non-init containers"));
        }
    }
    errs.extend(host_port_conflicts(containers, path));
    errs
}

fn validate_init_containers(
    init: &[Container],
    regular: &[Container],
    volumes: &BTreeSet<String>,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut names: BTreeSet<&str> = regular.iter().map(|c| c.name.as_str()).collect();
    for (i, c) in init.iter().enumerate() {
        let p = index(path, i);
        errs.extend(container_common(c, volumes, &p));
        let mut restartable = false;
        if let Some(policy) = &c.restart_policy {
            if policy == "Always" {
                restartable = true;
            } else {
                errs.push(FieldError::not_supported(&child(&p, "restartPolicy"), policy.as_str(), &["Always"]));
            }
        }
        if names.contains(c.name.as_str()) {
            errs.push(FieldError::duplicate(&child(&p, "name"), c.name.as_str()));
        } else if !c.name.is_empty() {
            names.insert(c.name.as_str());
        }
        // Checked one container at a time, so Go reports every clash at index 0 (kept).
        errs.extend(host_port_conflicts(std::slice::from_ref(c), path));
        if !restartable {
            let msg = "may not be set for init containers without restartPolicy=Always";
            let set = [
                ("lifecycle", c.lifecycle.is_some()),
                ("livenessProbe", c.liveness_probe.is_some()),
                ("readinessProbe", c.readiness_probe.is_some()),
                ("startupProbe", c.startup_probe.is_some()),
            ];
            errs.extend(set.iter().filter(|(_, on)| *on).map(|(f, _)| FieldError::forbidden(&child(&p, f), msg)));
        }
    }
    errs
}

/// `validateContainerCommon` (the covered part).
fn container_common(c: &Container, volumes: &BTreeSet<String>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name_path = child(path, "name");
    if c.name.is_empty() {
        errs.push(FieldError::required(&name_path, ""));
    } else {
        errs.extend(is_dns1123_label(&c.name).into_iter().map(|m| FieldError::invalid(&name_path, c.name.as_str(), m)));
    }
    if c.image.as_deref().unwrap_or("").is_empty() {
        errs.push(FieldError::required(&child(path, "image"), ""));
    }
    errs.extend(one_of(
        c.termination_message_policy.as_deref().unwrap_or(""),
        &["File", "FallbackToLogsOnError"],
        &child(path, "terminationMessagePolicy"),
    ));
    errs.extend(container_ports(c, &child(path, "ports")));
    for (i, env) in c.env.iter().flatten().enumerate() {
        if env.name.is_empty() {
            errs.push(FieldError::required(&child(&index(&child(path, "env"), i), "name"), ""));
        }
    }
    errs.extend(volume_mounts(c, volumes, &child(path, "volumeMounts")));
    errs.extend(one_of(
        c.image_pull_policy.as_deref().unwrap_or(""),
        &["Always", "IfNotPresent", "Never"],
        &child(path, "imagePullPolicy"),
    ));
    errs
}

/// `IsValidPortNum` message.
const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";

fn port_name_problems(name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if name.len() > 15 {
        errs.push("must be no more than 15 characters".to_string());
    }
    if !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string());
    }
    if !name.bytes().any(|b| b.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".to_string());
    }
    if name.contains("--") {
        errs.push("must not contain consecutive hyphens".to_string());
    }
    if name.starts_with('-') || name.ends_with('-') {
        errs.push("must not begin or end with a hyphen".to_string());
    }
    errs
}

fn container_ports(c: &Container, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut names = BTreeSet::new();
    for (i, port) in c.ports.iter().flatten().enumerate() {
        let p = index(path, i);
        if let Some(name) = port.name.as_deref().filter(|n| !n.is_empty()) {
            let problems = port_name_problems(name);
            if !problems.is_empty() {
                errs.extend(problems.into_iter().map(|m| FieldError::invalid(&child(&p, "name"), name, m)));
            } else if !names.insert(name) {
                errs.push(FieldError::duplicate(&child(&p, "name"), name));
            }
        }
        if port.container_port == 0 {
            errs.push(FieldError::required(&child(&p, "containerPort"), ""));
        } else if !(1..=65535).contains(&port.container_port) {
            errs.push(FieldError::invalid(&child(&p, "containerPort"), port.container_port, PORT_RANGE));
        }
        if let Some(host) = port.host_port.filter(|h| *h != 0)
            && !(1..=65535).contains(&host)
        {
            errs.push(FieldError::invalid(&child(&p, "hostPort"), host, PORT_RANGE));
        }
        errs.extend(one_of(port.protocol.as_deref().unwrap_or(""), &["SCTP", "TCP", "UDP"], &child(&p, "protocol")));
    }
    errs
}

/// `checkHostPortConflicts`: the same protocol/hostIP/hostPort twice.
fn host_port_conflicts(containers: &[Container], path: &str) -> Vec<FieldError> {
    let mut seen = BTreeSet::new();
    let mut errs = Vec::new();
    for (ci, c) in containers.iter().enumerate() {
        for (pi, port) in c.ports.iter().flatten().enumerate() {
            let Some(host) = port.host_port.filter(|h| *h != 0) else { continue };
            let key = format!(
                "{}/{}/{}",
                port.protocol.as_deref().unwrap_or(""),
                port.host_ip.as_deref().unwrap_or(""),
                host
            );
            if !seen.insert(key.clone()) {
                let p = child(&index(&child(&index(path, ci), "ports"), pi), "hostPort");
                errs.push(FieldError::duplicate(&p, key));
            }
        }
    }
    errs
}

/// `validatePodHostNetworkDeps` for a template (`ResourceIsPod` false): a set hostPort must equal
/// the containerPort.
fn host_network_ports(containers: &[Container], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (ci, c) in containers.iter().enumerate() {
        for (pi, port) in c.ports.iter().flatten().enumerate() {
            let host = port.host_port.unwrap_or(0);
            if host != 0 && host != port.container_port {
                let p = child(&index(&child(&index(path, ci), "ports"), pi), "hostPort");
                errs.push(FieldError::invalid(&p, host, "must match `containerPort` when `hostNetwork` is true"));
            }
        }
    }
    errs
}

fn volume_mounts(c: &Container, volumes: &BTreeSet<String>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut mount_points: BTreeMap<&str, ()> = BTreeMap::new();
    for (i, m) in c.volume_mounts.iter().flatten().enumerate() {
        let p = index(path, i);
        if m.name.is_empty() {
            errs.push(FieldError::required(&child(&p, "name"), ""));
        }
        if !volumes.contains(&m.name) {
            errs.push(FieldError::not_found(&child(&p, "name"), m.name.as_str()));
        }
        if m.mount_path.is_empty() {
            errs.push(FieldError::required(&child(&p, "mountPath"), ""));
        }
        if mount_points.insert(m.mount_path.as_str(), ()).is_some() {
            errs.push(FieldError::invalid(&child(&p, "mountPath"), m.mount_path.as_str(), "must be unique"));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::field::aggregate;
    use crate::core::defaults::pod::default_pod_spec;
    use crate::core::features::FeatureGates;
    use serde_json::{Value, json};

    /// A valid template, defaulted as the webhook sees it.
    fn base() -> Value {
        json!({
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [{"name": "main", "image": "nginx:1.25",
                                "ports": [{"name": "http", "containerPort": 80}],
                                "volumeMounts": [{"name": "conf", "mountPath": "/etc/conf"}]}],
                "initContainers": [{"name": "init", "image": "busybox"}],
                "volumes": [{"name": "conf", "configMap": {"name": "c"}}]
            }
        })
    }

    fn check(v: Value, claims: &[&str]) -> String {
        let mut t: PodTemplateSpec = serde_json::from_value(v).unwrap();
        let spec = t.spec.get_or_insert_with(Default::default);
        default_pod_spec(spec, &FeatureGates::default(), "spec.template.spec").unwrap();
        let claims: Vec<String> = claims.iter().map(|s| s.to_string()).collect();
        aggregate(&validate_pod_template_spec(&t, &claims, "spec.template"))
    }

    fn push(list: &mut Value, item: Value) {
        list.as_array_mut().unwrap().push(item);
    }

    fn with(edit: impl FnOnce(&mut Value)) -> Value {
        let mut v = base();
        edit(&mut v);
        v
    }

    #[test]
    fn template_table() {
        let label_err = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and \
                         must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used \
                         for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
        #[rustfmt::skip]
        let cases: Vec<(&str, Value, &[&str], String)> = vec![
            ("valid", base(), &[], String::new()),
            ("mount of a volumeClaimTemplate", with(|v| v["spec"]["containers"][0]["volumeMounts"] =
                json!([{"name": "data", "mountPath": "/data"}])), &["data"], String::new()),
            ("bad template label", with(|v| v["metadata"]["labels"]["x"] = json!("-bad")), &[],
             "spec.template.labels: Invalid value: \"-bad\": a valid label must be an empty string or consist of \
              alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. \
              'MyValue',  or 'my_value',  or '12345', regex used for validation is \
              '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".into()),
            ("bad template annotation", with(|v| v["metadata"]["annotations"] = json!({"a b": "x"})), &[],
             "spec.template.annotations: Invalid value: \"a b\": name part must consist of alphanumeric characters, \
              '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  \
              or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".into()),
            ("no containers", with(|v| v["spec"]["containers"] = json!([])), &[],
             "spec.template.spec.containers: Required value".into()),
            ("no spec at all", json!({"metadata": {"labels": {"app": "web"}}}), &[],
             "spec.template.spec.containers: Required value".into()),
            ("container name missing", with(|v| v["spec"]["containers"][0]["name"] = json!("")), &[],
             "spec.template.spec.containers[0].name: Required value".into()),
            ("container name not a label", with(|v| v["spec"]["containers"][0]["name"] = json!("Main")), &[],
             format!("spec.template.spec.containers[0].name: Invalid value: \"Main\": {label_err}")),
            ("duplicate container names", with(|v| push(&mut v["spec"]["containers"], json!({"name": "main", "image": "x"}))), &[],
             "spec.template.spec.containers[1].name: Duplicate value: \"main\"".into()),
            ("init container named like a container", with(|v| v["spec"]["initContainers"][0]["name"] = json!("main")), &[],
             "spec.template.spec.initContainers[0].name: Duplicate value: \"main\"".into()),
            ("image missing", with(|v| v["spec"]["containers"][0]["image"] = json!("")), &[],
             "spec.template.spec.containers[0].image: Required value".into()),
            ("mount of a missing volume", with(|v| v["spec"]["containers"][0]["volumeMounts"][0]["name"] = json!("nope")), &[],
             "spec.template.spec.containers[0].volumeMounts[0].name: Not found: \"nope\"".into()),
            ("mount of a volumeClaimTemplate that is not declared", with(|v| v["spec"]["containers"][0]["volumeMounts"] =
                json!([{"name": "data", "mountPath": "/data"}])), &[],
             "spec.template.spec.containers[0].volumeMounts[0].name: Not found: \"data\"".into()),
            ("mount path twice", with(|v| push(&mut v["spec"]["containers"][0]["volumeMounts"],
                json!({"name": "conf", "mountPath": "/etc/conf"}))), &[],
             "spec.template.spec.containers[0].volumeMounts[1].mountPath: Invalid value: \"/etc/conf\": must be unique".into()),
            ("duplicate volume names", with(|v| push(&mut v["spec"]["volumes"], json!({"name": "conf", "emptyDir": {}}))), &[],
             "spec.template.spec.volumes[1].name: Duplicate value: \"conf\"".into()),
            ("volume named like a volumeClaimTemplate", base(), &["conf"],
             "spec.template.spec.volumes[1].name: Duplicate value: \"conf\"".into()),
            ("two volume sources", with(|v| v["spec"]["volumes"][0]["emptyDir"] = json!({})), &[],
             "[spec.template.spec.volumes[0].configMap: Forbidden: may not specify more than 1 volume type, \
              spec.template.spec.containers[0].volumeMounts[0].name: Not found: \"conf\"]".into()),
            ("port out of range", with(|v| v["spec"]["containers"][0]["ports"][0]["containerPort"] = json!(70000)), &[],
             "spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive".into()),
            ("port zero", with(|v| v["spec"]["containers"][0]["ports"][0]["containerPort"] = json!(0)), &[],
             "spec.template.spec.containers[0].ports[0].containerPort: Required value".into()),
            ("host port out of range", with(|v| v["spec"]["containers"][0]["ports"][0]["hostPort"] = json!(-1)), &[],
             "spec.template.spec.containers[0].ports[0].hostPort: Invalid value: -1: must be between 1 and 65535, inclusive".into()),
            ("port name too long", with(|v| v["spec"]["containers"][0]["ports"][0]["name"] = json!("a-very-long-port-name")), &[],
             "spec.template.spec.containers[0].ports[0].name: Invalid value: \"a-very-long-port-name\": must be no more than 15 characters".into()),
            ("bad protocol", with(|v| v["spec"]["containers"][0]["ports"][0]["protocol"] = json!("ICMP")), &[],
             "spec.template.spec.containers[0].ports[0].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"".into()),
            ("host port used twice", with(|v| v["spec"]["containers"][0]["ports"] =
                json!([{"containerPort": 80, "hostPort": 8080}, {"containerPort": 81, "hostPort": 8080}])), &[],
             "spec.template.spec.containers[0].ports[1].hostPort: Duplicate value: \"TCP//8080\"".into()),
            ("hostNetwork with another hostPort", with(|v| {
                v["spec"]["hostNetwork"] = json!(true);
                v["spec"]["containers"][0]["ports"][0]["hostPort"] = json!(8080);
            }), &[], "spec.template.spec.containers[0].ports[0].hostPort: Invalid value: 8080: must match `containerPort` when `hostNetwork` is true".into()),
            ("bad restartPolicy", with(|v| v["spec"]["restartPolicy"] = json!("Sometimes")), &[],
             "spec.template.spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"".into()),
            ("bad dnsPolicy", with(|v| v["spec"]["dnsPolicy"] = json!("Google")), &[],
             "spec.template.spec.dnsPolicy: Unsupported value: \"Google\": supported values: \"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\"".into()),
            ("bad imagePullPolicy", with(|v| v["spec"]["containers"][0]["imagePullPolicy"] = json!("Sometimes")), &[],
             "spec.template.spec.containers[0].imagePullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"".into()),
            ("bad terminationMessagePolicy", with(|v| v["spec"]["containers"][0]["terminationMessagePolicy"] = json!("Log")), &[],
             "spec.template.spec.containers[0].terminationMessagePolicy: Unsupported value: \"Log\": supported values: \"File\", \"FallbackToLogsOnError\"".into()),
            ("env without a name", with(|v| v["spec"]["containers"][0]["env"] = json!([{"name": "", "value": "x"}])), &[],
             "spec.template.spec.containers[0].env[0].name: Required value".into()),
            ("restartPolicy on a regular container", with(|v| v["spec"]["containers"][0]["restartPolicy"] = json!("Always")), &[],
             "spec.template.spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers".into()),
            ("native sidecar init container", with(|v| {
                v["spec"]["initContainers"][0]["restartPolicy"] = json!("Always");
                v["spec"]["initContainers"][0]["readinessProbe"] = json!({"exec": {"command": ["true"]}});
            }), &[], String::new()),
            ("probe on a plain init container", with(|v| v["spec"]["initContainers"][0]["readinessProbe"] =
                json!({"exec": {"command": ["true"]}})), &[],
             "spec.template.spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always".into()),
            ("init container restartPolicy other than Always", with(|v| v["spec"]["initContainers"][0]["restartPolicy"] = json!("OnFailure")), &[],
             "spec.template.spec.initContainers[0].restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\"".into()),
            ("bad nodeSelector", with(|v| v["spec"]["nodeSelector"] = json!({"k": "-v"})), &[],
             "spec.template.spec.nodeSelector: Invalid value: \"-v\": a valid label must be an empty string or consist of \
              alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. \
              'MyValue',  or 'my_value',  or '12345', regex used for validation is \
              '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".into()),
        ];
        for (name, template, claims, want) in cases {
            assert_eq!(check(template, claims), want, "{name}");
        }
    }

    #[test]
    fn port_names() {
        assert!(port_name_problems("http").is_empty());
        assert!(port_name_problems("h2c-1").is_empty());
        assert_eq!(port_name_problems("8080"), vec!["must contain at least one letter (a-z)"]);
        assert_eq!(port_name_problems("a--b"), vec!["must not contain consecutive hyphens"]);
        assert_eq!(port_name_problems("-a"), vec!["must not begin or end with a hyphen"]);
        assert_eq!(port_name_problems("HTTP").len(), 2);
    }
}
