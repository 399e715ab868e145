//! SidecarSets (spec §1.3, §2.3, §4): how a SidecarSet is defaulted and hashed, when it is
//! valid, which SidecarSets apply to a pod, and what injecting them changes in the pod.
//!
//! Everything here is pure: the pod webhook hands in the request pod, the candidate SidecarSets
//! of the pod's namespace and lookups into the cluster view, and gets a plan back.
//!
//! - [`hash`]: `kruise.io/sidecarset-hash` and `-without-image` (spec §1.3.2), over the Go
//!   `encoding/json` output of [`crate::compat::gojson`].
//! - [`defaults`]: the SidecarSet mutating webhook's defaults (spec §1.3.1, §4.11).
//! - [`validate`], [`podcheck`], [`conflict`]: the SidecarSet validating webhook (spec §2.3, §4.8,
//!   §4.9).
//! - [`matching`]: which SidecarSets apply to a pod and which version of each (spec §4.2).
//! - [`inject`]: what injection changes in the pod (spec §4.3–§4.7).
//! - [`annotations`]: the pod annotations injection reads and writes (spec §4.3 item 4, §4.6).
//! - [`metadata`]: `patchPodMetadata` (spec §4.3 item 1).
//! - [`podpatch`]: the JSON patch from the request pod to the injected pod.

pub mod annotations;
pub mod conflict;
pub mod defaults;
pub mod failopen;
pub mod hash;
pub mod inject;
pub mod matching;
pub mod metadata;
pub mod podcheck;
pub mod podpatch;
pub mod validate;

use k8s_openapi::api::core::v1::Container;

use crate::apis::SidecarSet;
use crate::apis::sidecarset::SidecarContainer;

/// ControllerRevision label naming the SidecarSet a revision belongs to.
pub const SIDECARSET_NAME_LABEL: &str = "kruise.io/sidecarset-name";
/// SidecarSet label (copied to its revisions) naming a user-chosen version.
pub const CUSTOM_VERSION_LABEL: &str = "apps.kruise.io/sidecarset-custom-version";
/// SidecarSet annotation marking a canary set (value "true").
pub const CANARY_ANNOTATION: &str = "apps.kruise.io/sidecarset-canary";
/// Annotation of a canary set naming the base set it replaces.
pub const BASE_ANNOTATION: &str = "apps.kruise.io/sidecarset-base";
/// Pod annotation: which container of each hot-upgrade pair is working.
pub const WORKING_HOT_UPGRADE_CONTAINER: &str = "kruise.io/sidecarset-working-hotupgrade-container";
/// Env var marking an injected container.
pub const INJECTED_ENV: &str = "IS_INJECTED";
/// Env var of a hot-upgrade container: its version annotation.
pub const VERSION_ENV: &str = "SIDECARSET_VERSION";
/// Env var of a hot-upgrade container: the version annotation of its twin.
pub const VERSION_ALT_ENV: &str = "SIDECARSET_VERSION_ALT";

/// `podInjectPolicy` values.
pub const BEFORE_APP_CONTAINER: &str = "BeforeAppContainer";
/// `podInjectPolicy`: after the pod's own containers.
pub const AFTER_APP_CONTAINER: &str = "AfterAppContainer";
/// `upgradeStrategy.upgradeType`: two containers, one idle.
pub const HOT_UPGRADE: &str = "HotUpgrade";
/// `upgradeStrategy.upgradeType` default.
pub const COLD_UPGRADE: &str = "ColdUpgrade";
/// `shareVolumePolicy.type`: share the app containers' mounts.
pub const SHARE_ENABLED: &str = "enabled";
/// `shareVolumePolicy.type` default.
pub const SHARE_DISABLED: &str = "disabled";

/// A native sidecar: an init container with `restartPolicy: Always` (Kubernetes ≥ 1.28).
pub fn is_native_sidecar(c: &Container) -> bool {
    c.restart_policy.as_deref() == Some("Always")
}

/// Whether a sidecar container is upgraded as a hot-upgrade pair.
pub fn is_hot_upgrade(c: &SidecarContainer) -> bool {
    c.upgrade_strategy.upgrade_type == HOT_UPGRADE
}

/// `X-1` and `X-2`, the two containers of hot-upgrade sidecar `X`.
pub fn hot_upgrade_names(name: &str) -> (String, String) {
    (format!("{name}-1"), format!("{name}-2"))
}

/// `(canary, base)`: a canary set names the base set it stands in for (kruise HEAD).
pub fn canary_base(set: &SidecarSet) -> Option<&str> {
    let annotations = set.metadata.annotations.as_ref()?;
    let base = annotations.get(BASE_ANNOTATION).map(String::as_str).unwrap_or("");
    (annotations.get(CANARY_ANNOTATION).map(String::as_str) == Some("true") && !base.is_empty()).then_some(base)
}

/// Where a SidecarSet can inject, for the namespace index of the cluster view (kruise's
/// `IndexSidecarSet`): the namespaces it names, or every namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Only pods of these namespaces can match.
    Namespaces(Vec<String>),
    /// Pods of any namespace can match.
    Cluster,
}

/// The index key(s) of a SidecarSet: `spec.namespace`, else a `kubernetes.io/metadata.name`
/// matchLabel, else the values of a `kubernetes.io/metadata.name In (...)` expression, else the
/// whole cluster. The index only narrows the candidates: matching still evaluates every rule.
pub fn scope(set: &SidecarSet) -> Scope {
    use crate::apis::keys::NAMESPACE_NAME_LABEL;
    if !set.spec.namespace.is_empty() {
        return Scope::Namespaces(vec![set.spec.namespace.clone()]);
    }
    if let Some(sel) = &set.spec.namespace_selector {
        if let Some(v) = sel.match_labels.as_ref().and_then(|m| m.get(NAMESPACE_NAME_LABEL)) {
            return Scope::Namespaces(vec![v.clone()]);
        }
        for expr in sel.match_expressions.iter().flatten() {
            if expr.key == NAMESPACE_NAME_LABEL && expr.operator == "In" {
                return Scope::Namespaces(expr.values.clone().unwrap_or_default());
            }
        }
    }
    Scope::Cluster
}

/// The namespace a pod is matched in: its own, or "default" when empty.
pub fn pod_namespace(ns: Option<&str>) -> &str {
    match ns {
        Some(ns) if !ns.is_empty() => ns,
        _ => "default",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set(spec: serde_json::Value) -> SidecarSet {
        serde_json::from_value(json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet",
            "metadata": {"name": "s"}, "spec": spec}))
        .unwrap()
    }

    #[test]
    fn scope_follows_kruise_index() {
        let cases = [
            (json!({}), Scope::Cluster),
            (json!({"namespace": "a"}), Scope::Namespaces(vec!["a".into()])),
            (
                json!({"namespace": "a", "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "b"}}}),
                Scope::Namespaces(vec!["a".into()]),
            ),
            (
                json!({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "b"}}}),
                Scope::Namespaces(vec!["b".into()]),
            ),
            (
                json!({"namespaceSelector": {"matchExpressions": [
                    {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["x", "y"]}]}}),
                Scope::Namespaces(vec!["x".into(), "y".into()]),
            ),
            (
                json!({"namespaceSelector": {"matchExpressions": [
                    {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["x"]}]}}),
                Scope::Cluster,
            ),
            (json!({"namespaceSelector": {"matchLabels": {"env": "prod"}}}), Scope::Cluster),
        ];
        for (spec, want) in cases {
            assert_eq!(scope(&set(spec.clone())), want, "{spec}");
        }
    }

    #[test]
    fn canary_needs_both_annotations() {
        let mut s = set(json!({}));
        assert_eq!(canary_base(&s), None);
        s.metadata.annotations = Some([(CANARY_ANNOTATION.to_string(), "true".to_string())].into());
        assert_eq!(canary_base(&s), None);
        s.metadata.annotations.as_mut().unwrap().insert(BASE_ANNOTATION.into(), "base".into());
        assert_eq!(canary_base(&s), Some("base"));
        assert_eq!(pod_namespace(None), "default");
        assert_eq!(pod_namespace(Some("")), "default");
        assert_eq!(pod_namespace(Some("x")), "x");
    }
}
