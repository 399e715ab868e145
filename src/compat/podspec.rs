//! Kubernetes pod validation, the part kruise's webhooks observably run (spec §2.1 item 5, §2.3
//! items 7 and 9): `ValidatePodTemplateSpec`, `ValidatePodSpec` and `ValidatePodCreate` of
//! `k8s.io/kubernetes/pkg/apis/core/validation` at v1.32.10, the version kruise vendors, with
//! Kubernetes' paths, texts and error order. The CloneSet validator runs it on the defaulted
//! template (with the volumeClaimTemplates as PVC volumes); the SidecarSet validator on a fake
//! pod built from the sidecars (`core::sidecar::podcheck`).
//!
//! Covered, in Kubernetes' order: template labels and annotations; volumes (name required, a
//! DNS-1123 label, unique; exactly one volume source; only volumes without errors can be mounted);
//! containers, then init containers (at least one container; name required, a DNS-1123 label,
//! unique across init and regular containers; image required; terminationMessagePolicy; ports:
//! name, number range, protocol, duplicate host ports; env names required; volumeMounts: name,
//! existing volume, mountPath required and unique, no clash with volumeDevices, subPath and
//! subPathExpr relative without `..` and not both; volumeDevices: name, existing PVC volume,
//! devicePath required, unique, without `..`, no clash with volumeMounts; imagePullPolicy;
//! `restartPolicy` only on init containers, where it must be Always; probes and lifecycle not on
//! plain init containers); hostPort = containerPort with hostNetwork; pod restartPolicy and
//! dnsPolicy; nodeSelector labels; for a pod (not a template) images without surrounding blanks.
//!
//! Not covered (the apiserver's own pod validation still applies when a controller creates the
//! pods): volume source contents, env var name syntax and valueFrom, resources, probes' handlers,
//! security contexts, affinity, tolerations, topology spread, DNS config, ephemeral containers,
//! mount propagation and the pod-specific annotations (seccomp, AppArmor, tolerations).
//! Kubernetes quirks kept: a subPath error is reported at `volumeMounts.subPath` (no index), init
//! containers' host ports are checked one container at a time (so clashes are at index 0).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Container, PersistentVolumeClaimVolumeSource, PodSpec, PodTemplateSpec, Volume};

use crate::compat::field::{FieldError, child, index};
use crate::compat::names::{is_dns1123_label, validate_annotations, validate_labels};

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

/// `ValidatePodTemplateSpec(template, path)` on a defaulted template; `claim_volumes` are the
/// volumeClaimTemplate names appended as PVC volumes.
pub fn validate_pod_template_spec(template: &PodTemplateSpec, claim_volumes: &[String], path: &str) -> Vec<FieldError> {
    let mut errs = validate_template_metadata(template, path);
    let spec = template.spec.clone().unwrap_or_default();
    errs.extend(validate_pod_spec(&spec, claim_volumes, &child(path, "spec")));
    errs
}

/// The spec part of `ValidatePodCreate` for a pod at `spec`: [`validate_pod_spec`], then the
/// checks Kubernetes makes only for pods (`validateContainersOnlyForPod`).
pub fn validate_pod_create_spec(spec: &PodSpec) -> Vec<FieldError> {
    let mut errs = validate_pod_spec(spec, &[], "spec");
    errs.extend(containers_only_for_pod(&spec.containers, "spec.containers"));
    errs.extend(containers_only_for_pod(spec.init_containers.as_deref().unwrap_or_default(), "spec.initContainers"));
    errs
}

/// `ValidatePodSpec` (the covered part); `claim_volumes` are appended to the volumes as PVCs.
pub fn validate_pod_spec(spec: &PodSpec, claim_volumes: &[String], path: &str) -> Vec<FieldError> {
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

/// The volumes mounts and devices may name: volume name -> whether it is a PVC (or ephemeral).
type Volumes = BTreeMap<String, bool>;

/// `ValidateVolumes`: returns the volumes without errors (what mounts may refer to).
fn validate_volumes(volumes: &[Volume], claim_volumes: &[String], path: &str, errs: &mut Vec<FieldError>) -> Volumes {
    let claims: Vec<Volume> = claim_volumes
        .iter()
        .map(|name| Volume {
            name: name.clone(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: name.clone(),
                read_only: None,
            }),
            ..Default::default()
        })
        .collect();
    let mut names = Volumes::new();
    for (i, vol) in volumes.iter().chain(claims.iter()).enumerate() {
        let idx = index(path, i);
        let name_path = child(&idx, "name");
        let mut el = volume_source_count(vol, &idx);
        if vol.name.is_empty() {
            el.push(FieldError::required(&name_path, ""));
        } else {
            el.extend(dns_label(&vol.name, &name_path));
        }
        if names.contains_key(&vol.name) {
            el.push(FieldError::duplicate(&name_path, vol.name.as_str()));
        }
        if el.is_empty() {
            names.insert(vol.name.clone(), vol.persistent_volume_claim.is_some() || vol.ephemeral.is_some());
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

fn dns_label(value: &str, path: &str) -> Vec<FieldError> {
    is_dns1123_label(value).into_iter().map(|m| FieldError::invalid(path, value, m)).collect()
}

fn validate_containers(containers: &[Container], volumes: &Volumes, path: &str) -> Vec<FieldError> {
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
    volumes: &Volumes,
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
fn container_common(c: &Container, volumes: &Volumes, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name_path = child(path, "name");
    if c.name.is_empty() {
        errs.push(FieldError::required(&name_path, ""));
    } else {
        errs.extend(dns_label(&c.name, &name_path));
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
    errs.extend(volume_devices(c, volumes, &child(path, "volumeDevices")));
    errs.extend(one_of(
        c.image_pull_policy.as_deref().unwrap_or(""),
        &["Always", "IfNotPresent", "Never"],
        &child(path, "imagePullPolicy"),
    ));
    errs
}

/// `validateContainerOnlyForPod`: the image may not have leading or trailing white space.
fn containers_only_for_pod(containers: &[Container], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, c) in containers.iter().enumerate() {
        let image = c.image.as_deref().unwrap_or("");
        if image.len() != image.trim().len() {
            errs.push(FieldError::invalid(
                &child(&index(path, i), "image"),
                image,
                "must not have leading or trailing whitespace",
            ));
        }
    }
    errs
}

/// `IsValidPortNum` message.
pub(crate) const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";

/// `validation.IsValidPortName` (apimachinery).
pub(crate) fn port_name_problems(name: &str) -> Vec<String> {
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

/// `ValidateVolumeMounts` (without mount propagation and recursiveReadOnly).
fn volume_mounts(c: &Container, volumes: &Volumes, path: &str) -> Vec<FieldError> {
    let devices: BTreeMap<&str, &str> =
        c.volume_devices.iter().flatten().map(|d| (d.name.as_str(), d.device_path.as_str())).collect();
    let mut errs = Vec::new();
    let mut mount_points = BTreeSet::new();
    for (i, m) in c.volume_mounts.iter().flatten().enumerate() {
        let p = index(path, i);
        if m.name.is_empty() {
            errs.push(FieldError::required(&child(&p, "name"), ""));
        }
        if !volumes.contains_key(&m.name) {
            errs.push(FieldError::not_found(&child(&p, "name"), m.name.as_str()));
        }
        if m.mount_path.is_empty() {
            errs.push(FieldError::required(&child(&p, "mountPath"), ""));
        }
        if !mount_points.insert(m.mount_path.as_str()) {
            errs.push(FieldError::invalid(&child(&p, "mountPath"), m.mount_path.as_str(), "must be unique"));
        }
        if devices.contains_key(m.name.as_str()) {
            errs.push(FieldError::invalid(
                &child(&p, "name"),
                m.name.as_str(),
                "must not already exist in volumeDevices",
            ));
        }
        if devices.values().any(|d| *d == m.mount_path) {
            errs.push(FieldError::invalid(
                &child(&p, "mountPath"),
                m.mount_path.as_str(),
                "must not already exist as a path in volumeDevices",
            ));
        }
        let sub_path = m.sub_path.as_deref().unwrap_or("");
        let sub_path_expr = m.sub_path_expr.as_deref().unwrap_or("");
        if !sub_path.is_empty() {
            errs.extend(local_descending_path(sub_path, &child(path, "subPath")));
        }
        if !sub_path_expr.is_empty() {
            if !sub_path.is_empty() {
                errs.push(FieldError::invalid(
                    &child(&p, "subPathExpr"),
                    sub_path_expr,
                    "subPathExpr and subPath are mutually exclusive",
                ));
            }
            errs.extend(local_descending_path(sub_path_expr, &child(path, "subPathExpr")));
        }
    }
    errs
}

/// `ValidateVolumeDevices`.
fn volume_devices(c: &Container, volumes: &Volumes, path: &str) -> Vec<FieldError> {
    let mounts: BTreeMap<&str, &str> =
        c.volume_mounts.iter().flatten().map(|m| (m.name.as_str(), m.mount_path.as_str())).collect();
    let mut errs = Vec::new();
    let (mut device_paths, mut device_names) = (BTreeSet::new(), BTreeSet::new());
    for (i, d) in c.volume_devices.iter().flatten().enumerate() {
        let p = index(path, i);
        let (name, device_path) = (d.name.as_str(), d.device_path.as_str());
        if name.is_empty() {
            errs.push(FieldError::required(&child(&p, "name"), ""));
        }
        if device_names.contains(name) {
            errs.push(FieldError::invalid(&child(&p, "name"), name, "must be unique"));
        }
        match volumes.get(name) {
            Some(false) => errs.push(FieldError::invalid(
                &child(&p, "name"),
                name,
                "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode",
            )),
            Some(true) => {}
            None => errs.push(FieldError::not_found(&child(&p, "name"), name)),
        }
        if device_path.is_empty() {
            errs.push(FieldError::required(&child(&p, "devicePath"), ""));
        }
        if device_paths.contains(device_path) {
            errs.push(FieldError::invalid(&child(&p, "devicePath"), device_path, "must be unique"));
        }
        if !device_path.is_empty() && has_backsteps(device_path) {
            errs.push(FieldError::invalid(&child(&p, "devicePath"), device_path, "can not contain backsteps ('..')"));
        } else {
            device_paths.insert(device_path);
        }
        if mounts.contains_key(name) {
            errs.push(FieldError::invalid(&child(&p, "name"), name, "must not already exist in volumeMounts"));
        }
        if mounts.values().any(|m| *m == device_path) {
            errs.push(FieldError::invalid(
                &child(&p, "devicePath"),
                device_path,
                "must not already exist as a path in volumeMounts",
            ));
        }
        if !name.is_empty() {
            device_names.insert(name);
        }
    }
    errs
}

/// `validateLocalDescendingPath`: relative, without `..` elements.
fn local_descending_path(target: &str, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if target.starts_with('/') {
        errs.push(FieldError::invalid(path, target, "must be a relative path"));
    }
    if has_backsteps(target) {
        errs.push(FieldError::invalid(path, target, "must not contain '..'"));
    }
    errs
}

/// `validatePathNoBacksteps`: a `..` element between slashes (`filepath.ToSlash` is the
/// identity on Linux, so a backslash is an ordinary character).
fn has_backsteps(target: &str) -> bool {
    target.split('/').any(|part| part == "..")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::field::aggregate;
    use serde_json::json;

    /// The rules of the port are tabled where the CloneSet validator uses it, on defaulted
    /// templates (`core::validation::podtemplate`); here, what only a pod gets.
    #[test]
    fn pod_create_checks_image_blanks() {
        let c = |name: &str, image: &str| json!({"name": name, "image": image, "imagePullPolicy": "Always", "terminationMessagePolicy": "File"});
        let spec = json!({"containers": [c("main", " nginx")], "initContainers": [c("init", "busybox ")],
                          "restartPolicy": "Always", "dnsPolicy": "ClusterFirst"});
        let spec: PodSpec = serde_json::from_value(spec).unwrap();
        assert_eq!(
            aggregate(&validate_pod_create_spec(&spec)),
            "[spec.containers[0].image: Invalid value: \" nginx\": must not have leading or trailing whitespace, \
             spec.initContainers[0].image: Invalid value: \"busybox \": must not have leading or trailing whitespace]"
        );
        // A template is not a pod: the same images pass there.
        let template = PodTemplateSpec { metadata: None, spec: Some(spec) };
        assert_eq!(aggregate(&validate_pod_template_spec(&template, &[], "spec.template")), "");
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
