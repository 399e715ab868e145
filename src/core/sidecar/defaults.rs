//! The SidecarSet mutating webhook `msidecarset.kb.io` (spec §1.3.1, §4.11): kruise's
//! `SetDefaultsSidecarSet` followed by `SetHashSidecarSet`.
//!
//! Container defaults are Kubernetes' `SetDefaults_Container` — `imagePullPolicy` follows the
//! image tag (`Always` for `:latest` or no tag, else `IfNotPresent`), unlike workload templates
//! where kruise forces `Always` — plus ports, env and transferEnv field refs, resource
//! quantities, liveness/readiness probes and lifecycle HTTP handlers. Kruise does not default
//! `startupProbe` here; neither do we.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::{AFTER_APP_CONTAINER, BEFORE_APP_CONTAINER, COLD_UPGRADE, SHARE_DISABLED, hash};
use crate::apis::SidecarSet;
use crate::apis::keys::{SIDECARSET_HASH, SIDECARSET_HASH_WITHOUT_IMAGE};
use crate::apis::sidecarset::{SidecarContainer, SidecarSetSpec};
use crate::compat::image;
use crate::core::defaults::QuantityError;
use crate::core::defaults::pod::{
    default_field_ref, default_http_get, default_probe, default_volumes, normalize_resource_list,
};

/// `revisionHistoryLimit` default.
pub const DEFAULT_REVISION_HISTORY_LIMIT: i32 = 10;

/// Defaults the spec and (re)computes both hash annotations, as kruise does on every CREATE
/// and UPDATE. Fails only on an unparsable resource quantity (Go cannot decode the object).
pub fn default_sidecarset(set: &mut SidecarSet) -> Result<(), QuantityError> {
    default_spec(&mut set.spec)?;
    set_hash_annotations(set);
    Ok(())
}

/// `SetDefaultsSidecarSet`.
pub fn default_spec(spec: &mut SidecarSetSpec) -> Result<(), QuantityError> {
    let strategy = &mut spec.update_strategy;
    if strategy.type_.is_empty() {
        strategy.type_ = "RollingUpdate".into();
    }
    strategy.max_unavailable.get_or_insert(IntOrString::Int(1));
    strategy.partition.get_or_insert(IntOrString::Int(0));
    for (i, c) in spec.init_containers.iter_mut().enumerate() {
        default_sidecar_container(c, AFTER_APP_CONTAINER, &format!("spec.initContainers[{i}]"))?;
    }
    for (i, c) in spec.containers.iter_mut().enumerate() {
        default_sidecar_container(c, BEFORE_APP_CONTAINER, &format!("spec.containers[{i}]"))?;
    }
    default_volumes(&mut spec.volumes);
    spec.revision_history_limit.get_or_insert(DEFAULT_REVISION_HISTORY_LIMIT);
    for patch in &mut spec.patch_pod_metadata {
        if patch.patch_policy.is_empty() {
            patch.patch_policy = "Retain".into();
        }
    }
    if let Some(revision) = spec.injection_strategy.revision.as_mut()
        && revision.policy.is_empty()
    {
        revision.policy = "Always".into();
    }
    Ok(())
}

/// `SetHashSidecarSet`: both hash annotations from the (defaulted) spec.
pub fn set_hash_annotations(set: &mut SidecarSet) {
    let (with_image, without_image) = hash::hashes(&set.spec);
    let annotations = set.metadata.annotations.get_or_insert_with(Default::default);
    annotations.insert(SIDECARSET_HASH.to_string(), with_image);
    annotations.insert(SIDECARSET_HASH_WITHOUT_IMAGE.to_string(), without_image);
}

fn default_sidecar_container(sc: &mut SidecarContainer, policy: &str, path: &str) -> Result<(), QuantityError> {
    if sc.pod_inject_policy.is_empty() {
        sc.pod_inject_policy = policy.into();
    }
    if sc.upgrade_strategy.upgrade_type.is_empty() {
        sc.upgrade_strategy.upgrade_type = COLD_UPGRADE.into();
    }
    if sc.share_volume_policy.type_.is_empty() {
        sc.share_volume_policy.type_ = SHARE_DISABLED.into();
    }
    for t in &mut sc.transfer_env {
        if let Some(field_ref) = t.source_container_name_from.as_mut().and_then(|s| s.field_ref.as_mut()) {
            default_field_ref(field_ref);
        }
    }
    let c = &mut sc.container;
    if c.image_pull_policy.as_deref().unwrap_or("").is_empty() {
        c.image_pull_policy = Some(image::default_pull_policy(c.image.as_deref().unwrap_or("")).into());
    }
    if c.termination_message_path.as_deref().unwrap_or("").is_empty() {
        c.termination_message_path = Some("/dev/termination-log".into());
    }
    if c.termination_message_policy.as_deref().unwrap_or("").is_empty() {
        c.termination_message_policy = Some("File".into());
    }
    for port in c.ports.iter_mut().flatten() {
        if port.protocol.as_deref().unwrap_or("").is_empty() {
            port.protocol = Some("TCP".into());
        }
    }
    for env in c.env.iter_mut().flatten() {
        if let Some(field_ref) = env.value_from.as_mut().and_then(|v| v.field_ref.as_mut()) {
            default_field_ref(field_ref);
        }
    }
    if let Some(resources) = c.resources.as_mut() {
        if let Some(limits) = resources.limits.as_mut() {
            normalize_resource_list(limits, &format!("{path}.resources.limits"))?;
        }
        if let Some(requests) = resources.requests.as_mut() {
            normalize_resource_list(requests, &format!("{path}.resources.requests"))?;
        }
    }
    for probe in [c.liveness_probe.as_mut(), c.readiness_probe.as_mut()].into_iter().flatten() {
        default_probe(probe);
    }
    if let Some(lifecycle) = c.lifecycle.as_mut() {
        for handler in [lifecycle.post_start.as_mut(), lifecycle.pre_stop.as_mut()].into_iter().flatten() {
            if let Some(get) = handler.http_get.as_mut() {
                default_http_get(get);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn defaulted(spec: Value) -> Value {
        let mut set: SidecarSet = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet", "metadata": {"name": "s"}, "spec": spec
        }))
        .unwrap();
        default_sidecarset(&mut set).unwrap();
        serde_json::to_value(&set.spec).unwrap()
    }

    #[test]
    fn spec_defaults() {
        let spec = defaulted(json!({
            "selector": {"matchLabels": {"a": "b"}},
            "containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}],
                "env": [{"name": "E", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                "resources": {"requests": {"cpu": "0.0001"}},
                "livenessProbe": {"httpGet": {"port": 80}}, "startupProbe": {"exec": {"command": ["x"]}},
                "lifecycle": {"preStop": {"httpGet": {"port": 80}}},
                "transferEnv": [{"sourceContainerNameFrom": {"fieldRef": {"fieldPath": "metadata.labels['c']"}}, "envName": "X"}]}],
            "initContainers": [{"name": "i", "image": "busybox:1.36"}],
            "volumes": [{"name": "v"}, {"name": "s", "secret": {"secretName": "x"}}],
            "patchPodMetadata": [{"annotations": {"k": "v"}}],
            "injectionStrategy": {"revision": {"revisionName": "r"}}
        }));
        let c = &spec["containers"][0];
        assert_eq!(c["imagePullPolicy"], "Always", "untagged image");
        assert_eq!(c["podInjectPolicy"], "BeforeAppContainer");
        assert_eq!(c["upgradeStrategy"], json!({"upgradeType": "ColdUpgrade"}));
        assert_eq!(c["shareVolumePolicy"], json!({"type": "disabled"}));
        assert_eq!(c["terminationMessagePath"], "/dev/termination-log");
        assert_eq!(c["terminationMessagePolicy"], "File");
        assert_eq!(c["ports"][0]["protocol"], "TCP");
        assert_eq!(c["env"][0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
        assert_eq!(c["transferEnv"][0]["sourceContainerNameFrom"]["fieldRef"]["apiVersion"], "v1");
        assert_eq!(c["resources"]["requests"]["cpu"], "1m");
        assert_eq!(c["livenessProbe"]["timeoutSeconds"], 1);
        assert_eq!(c["livenessProbe"]["httpGet"]["scheme"], "HTTP");
        assert_eq!(c["startupProbe"].get("timeoutSeconds"), None, "kruise leaves startupProbe alone");
        assert_eq!(c["lifecycle"]["preStop"]["httpGet"]["path"], "/");
        let i = &spec["initContainers"][0];
        assert_eq!(i["imagePullPolicy"], "IfNotPresent");
        assert_eq!(i["podInjectPolicy"], "AfterAppContainer");
        assert_eq!(spec["volumes"][0]["emptyDir"], json!({}));
        assert_eq!(spec["volumes"][1]["secret"]["defaultMode"], 420);
        assert_eq!(spec["updateStrategy"], json!({"type": "RollingUpdate", "partition": 0, "maxUnavailable": 1}));
        assert_eq!(spec["revisionHistoryLimit"], 10);
        assert_eq!(spec["patchPodMetadata"][0]["patchPolicy"], "Retain");
        assert_eq!(spec["injectionStrategy"]["revision"]["policy"], "Always");
    }

    #[test]
    fn defaults_are_idempotent_and_keep_set_values() {
        let once = defaulted(json!({"containers": [{"name": "c", "image": "x:1", "imagePullPolicy": "Never",
            "podInjectPolicy": "AfterAppContainer"}], "updateStrategy": {"type": "NotUpdate", "partition": "10%"}}));
        assert_eq!(once["containers"][0]["imagePullPolicy"], "Never");
        assert_eq!(once["containers"][0]["podInjectPolicy"], "AfterAppContainer");
        assert_eq!(once["updateStrategy"]["type"], "NotUpdate");
        assert_eq!(once["updateStrategy"]["partition"], "10%");
        assert_eq!(defaulted(once.clone()), once);
    }

    #[test]
    fn bad_quantity_is_an_error() {
        let mut set: SidecarSet = serde_json::from_value(json!({"apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "SidecarSet", "metadata": {"name": "s"},
            "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "lots"}}}]}}))
        .unwrap();
        let err = default_sidecarset(&mut set).unwrap_err();
        assert_eq!(err.path, "spec.containers[0].resources.limits.cpu");
    }
}
