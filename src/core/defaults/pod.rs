//! Pod-template defaults applied by the CloneSet and Advanced StatefulSet mutating webhooks
//! (spec §1.5, kruise `apis/apps/defaults/pod.go`), which are Kubernetes' own `SetDefaults_*`
//! functions except that regular containers get `imagePullPolicy: Always` whatever the tag
//! (kruise does this so that in-place image updates always pull).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, EphemeralContainer, HTTPGetAction, Lifecycle, ObjectFieldSelector, PersistentVolumeClaim,
    PodSecurityContext, PodSpec, PodTemplateSpec, Probe, ResourceRequirements, Volume,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::compat::image;
use crate::compat::quantity;
use crate::core::features::{FeatureGates, Gate};

/// Default `terminationGracePeriodSeconds`.
pub const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS: i64 = 30;
/// Default volume file mode (0644).
pub const DEFAULT_MODE: i32 = 420;

/// A template that cannot be defaulted because a quantity does not parse (Go fails to decode it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{path}: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' (got {value:?})"
)]
pub struct QuantityError {
    /// JSON path of the bad quantity.
    pub path: String,
    /// The value sent.
    pub value: String,
}

/// Template defaults are injected on CREATE, and on UPDATE only when the template changed, never
/// with gate `TemplateNoDefaults` (spec §1.1.3 item 3). `old_template_equal` is `None` on CREATE.
pub fn should_inject_template_defaults(old_template_equal: Option<bool>, gates: &FeatureGates) -> bool {
    if gates.enabled(Gate::TemplateNoDefaults) {
        return false;
    }
    match old_template_equal {
        None => true,
        Some(equal) => !equal,
    }
}

/// The template defaults of a CloneSet or Advanced StatefulSet (`spec.template.spec`,
/// `spec.volumeClaimTemplates[i]`), applied when [`should_inject_template_defaults`].
pub fn default_workload_templates(
    template: &mut PodTemplateSpec,
    claims: &mut [PersistentVolumeClaim],
    gates: &FeatureGates,
) -> Result<(), QuantityError> {
    if let Some(pod_spec) = template.spec.as_mut() {
        default_pod_spec(pod_spec, gates, "spec.template.spec")?;
    }
    for (i, vct) in claims.iter_mut().enumerate() {
        default_volume_claim_template(vct, &format!("spec.volumeClaimTemplates[{i}]"))?;
    }
    Ok(())
}

/// Applies kruise's `SetDefaultPodSpec` to a pod template spec. `path` names the spec in errors.
pub fn default_pod_spec(spec: &mut PodSpec, gates: &FeatureGates, path: &str) -> Result<(), QuantityError> {
    if spec.dns_policy.as_deref().unwrap_or("").is_empty() {
        spec.dns_policy = Some("ClusterFirst".into());
    }
    if spec.restart_policy.as_deref().unwrap_or("").is_empty() {
        spec.restart_policy = Some("Always".into());
    }
    if gates.enabled(Gate::DefaultHostNetworkHostPortsInPodTemplates) && spec.host_network == Some(true) {
        default_host_network_ports(&mut spec.containers);
        if let Some(init) = spec.init_containers.as_mut() {
            default_host_network_ports(init);
        }
    }
    if spec.security_context.is_none() {
        spec.security_context = Some(PodSecurityContext::default());
    }
    if spec.termination_grace_period_seconds.is_none() {
        spec.termination_grace_period_seconds = Some(DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS);
    }
    if spec.scheduler_name.as_deref().unwrap_or("").is_empty() {
        spec.scheduler_name = Some("default-scheduler".into());
    }
    if let Some(volumes) = spec.volumes.as_mut() {
        default_volumes(volumes);
    }
    for (i, c) in spec.init_containers.iter_mut().flatten().enumerate() {
        default_container(c, false, &format!("{path}.initContainers[{i}]"))?;
    }
    for (i, c) in spec.containers.iter_mut().enumerate() {
        default_container(c, true, &format!("{path}.containers[{i}]"))?;
    }
    for (i, c) in spec.ephemeral_containers.iter_mut().flatten().enumerate() {
        default_ephemeral_container(c, &format!("{path}.ephemeralContainers[{i}]"))?;
    }
    if let Some(overhead) = spec.overhead.as_mut() {
        normalize_resource_list(overhead, &format!("{path}.overhead"))?;
    }
    Ok(())
}

/// Defaults of one volume claim template (`SetDefaults_PersistentVolumeClaim` plus quantities).
pub fn default_volume_claim_template(pvc: &mut PersistentVolumeClaim, path: &str) -> Result<(), QuantityError> {
    let status = pvc.status.get_or_insert_with(Default::default);
    if status.phase.as_deref().unwrap_or("").is_empty() {
        status.phase = Some("Pending".into());
    }
    if let Some(capacity) = status.capacity.as_mut() {
        normalize_resource_list(capacity, &format!("{path}.status.capacity"))?;
    }
    if let Some(resources) = pvc.spec.as_mut().and_then(|s| s.resources.as_mut()) {
        if let Some(limits) = resources.limits.as_mut() {
            normalize_resource_list(limits, &format!("{path}.spec.resources.limits"))?;
        }
        if let Some(requests) = resources.requests.as_mut() {
            normalize_resource_list(requests, &format!("{path}.spec.resources.requests"))?;
        }
    }
    Ok(())
}

/// Rounds every quantity up to milli precision and writes it in canonical form, as Go's
/// `SetDefaults_ResourceList` followed by JSON serialisation does.
pub fn normalize_resource_list(list: &mut BTreeMap<String, Quantity>, path: &str) -> Result<(), QuantityError> {
    for (name, q) in list.iter_mut() {
        let normalized = quantity::normalize(&q.0)
            .map_err(|_| QuantityError { path: format!("{path}.{name}"), value: q.0.clone() })?;
        q.0 = normalized;
    }
    Ok(())
}

fn default_host_network_ports(containers: &mut [Container]) {
    for port in containers.iter_mut().flat_map(|c| c.ports.iter_mut().flatten()) {
        if port.host_port.unwrap_or(0) == 0 {
            port.host_port = Some(port.container_port);
        }
    }
}

fn default_container(c: &mut Container, regular: bool, path: &str) -> Result<(), QuantityError> {
    if c.image_pull_policy.as_deref().unwrap_or("").is_empty() {
        let policy = if regular { "Always" } else { image::default_pull_policy(c.image.as_deref().unwrap_or("")) };
        c.image_pull_policy = Some(policy.into());
    }
    if c.termination_message_path.as_deref().unwrap_or("").is_empty() {
        c.termination_message_path = Some("/dev/termination-log".into());
    }
    if c.termination_message_policy.as_deref().unwrap_or("").is_empty() {
        c.termination_message_policy = Some("File".into());
    }
    default_common(
        Common {
            ports: c.ports.as_mut().map(|p| p.iter_mut().map(|p| &mut p.protocol).collect()).unwrap_or_default(),
            env: c.env.as_mut().map(|e| e.iter_mut().filter_map(field_ref_of).collect()).unwrap_or_default(),
            resources: c.resources.as_mut(),
            probes: [c.liveness_probe.as_mut(), c.readiness_probe.as_mut(), c.startup_probe.as_mut()],
            lifecycle: c.lifecycle.as_mut(),
        },
        path,
    )
}

fn default_ephemeral_container(c: &mut EphemeralContainer, path: &str) -> Result<(), QuantityError> {
    default_common(
        Common {
            ports: c.ports.as_mut().map(|p| p.iter_mut().map(|p| &mut p.protocol).collect()).unwrap_or_default(),
            env: c.env.as_mut().map(|e| e.iter_mut().filter_map(field_ref_of).collect()).unwrap_or_default(),
            resources: c.resources.as_mut(),
            probes: [c.liveness_probe.as_mut(), c.readiness_probe.as_mut(), c.startup_probe.as_mut()],
            lifecycle: c.lifecycle.as_mut(),
        },
        path,
    )
}

fn field_ref_of(env: &mut k8s_openapi::api::core::v1::EnvVar) -> Option<&mut ObjectFieldSelector> {
    env.value_from.as_mut().and_then(|v| v.field_ref.as_mut())
}

/// The parts of a container that every container kind defaults the same way.
struct Common<'a> {
    ports: Vec<&'a mut Option<String>>,
    env: Vec<&'a mut ObjectFieldSelector>,
    resources: Option<&'a mut ResourceRequirements>,
    probes: [Option<&'a mut Probe>; 3],
    lifecycle: Option<&'a mut Lifecycle>,
}

fn default_common(c: Common<'_>, path: &str) -> Result<(), QuantityError> {
    for protocol in c.ports {
        if protocol.as_deref().unwrap_or("").is_empty() {
            *protocol = Some("TCP".into());
        }
    }
    for field_ref in c.env {
        default_field_ref(field_ref);
    }
    if let Some(resources) = c.resources {
        if let Some(limits) = resources.limits.as_mut() {
            normalize_resource_list(limits, &format!("{path}.resources.limits"))?;
        }
        if let Some(requests) = resources.requests.as_mut() {
            normalize_resource_list(requests, &format!("{path}.resources.requests"))?;
        }
    }
    for probe in c.probes.into_iter().flatten() {
        default_probe(probe);
    }
    if let Some(lifecycle) = c.lifecycle {
        for handler in [lifecycle.post_start.as_mut(), lifecycle.pre_stop.as_mut()].into_iter().flatten() {
            if let Some(get) = handler.http_get.as_mut() {
                default_http_get(get);
            }
        }
    }
    Ok(())
}

pub(crate) fn default_field_ref(f: &mut ObjectFieldSelector) {
    if f.api_version.as_deref().unwrap_or("").is_empty() {
        f.api_version = Some("v1".into());
    }
}

pub(crate) fn default_probe(p: &mut Probe) {
    let zero_to = |v: &mut Option<i32>, d: i32| {
        if v.unwrap_or(0) == 0 {
            *v = Some(d);
        }
    };
    zero_to(&mut p.timeout_seconds, 1);
    zero_to(&mut p.period_seconds, 10);
    zero_to(&mut p.success_threshold, 1);
    zero_to(&mut p.failure_threshold, 3);
    if let Some(get) = p.http_get.as_mut() {
        default_http_get(get);
    }
}

pub(crate) fn default_http_get(get: &mut HTTPGetAction) {
    if get.path.as_deref().unwrap_or("").is_empty() {
        get.path = Some("/".into());
    }
    if get.scheme.as_deref().unwrap_or("").is_empty() {
        get.scheme = Some("HTTP".into());
    }
    // The port is required by validation; nothing to default. Keep the type referenced.
    let _: &IntOrString = &get.port;
}

/// Kubernetes' volume defaults (`SetDefaultPodVolumes`).
pub fn default_volumes(volumes: &mut [Volume]) {
    for v in volumes {
        if has_no_source(v) {
            v.empty_dir = Some(Default::default());
        }
        if let Some(host_path) = v.host_path.as_mut()
            && host_path.type_.is_none()
        {
            host_path.type_ = Some(String::new());
        }
        if let Some(secret) = v.secret.as_mut() {
            secret.default_mode.get_or_insert(DEFAULT_MODE);
        }
        if let Some(config_map) = v.config_map.as_mut() {
            config_map.default_mode.get_or_insert(DEFAULT_MODE);
        }
        if let Some(downward) = v.downward_api.as_mut() {
            downward.default_mode.get_or_insert(DEFAULT_MODE);
            for item in downward.items.iter_mut().flatten() {
                if let Some(f) = item.field_ref.as_mut() {
                    default_field_ref(f);
                }
            }
        }
        if let Some(projected) = v.projected.as_mut() {
            projected.default_mode.get_or_insert(DEFAULT_MODE);
            for source in projected.sources.iter_mut().flatten() {
                if let Some(downward) = source.downward_api.as_mut() {
                    for item in downward.items.iter_mut().flatten() {
                        if let Some(f) = item.field_ref.as_mut() {
                            default_field_ref(f);
                        }
                    }
                }
                if let Some(token) = source.service_account_token.as_mut() {
                    token.expiration_seconds.get_or_insert(3600);
                }
            }
        }
    }
}

/// `true` when no volume source is set (Go: `AllPtrFieldsNil(&obj.VolumeSource)`).
fn has_no_source(v: &Volume) -> bool {
    // Serialising is the only way to see every source field, including ones added to newer
    // Kubernetes versions: everything but `name` is a source.
    match serde_json::to_value(v) {
        Ok(serde_json::Value::Object(map)) => map.keys().all(|k| k == "name"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inject_rule() {
        let g = FeatureGates::default();
        assert!(should_inject_template_defaults(None, &g));
        assert!(should_inject_template_defaults(Some(false), &g));
        assert!(!should_inject_template_defaults(Some(true), &g));
        let g = g.with(Gate::TemplateNoDefaults, true);
        assert!(!should_inject_template_defaults(None, &g));
    }
}
