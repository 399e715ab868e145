//! Which resource an object is, for building the AdmissionReview the apiserver would send: the
//! kinds that appear in the webhook table's rules, with their group, plural resource and scope.

/// One kind the webhooks can intercept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KindInfo {
    /// API group ("" for core).
    pub group: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Plural resource name used in webhook rules.
    pub resource: &'static str,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
}

/// Every kind named by a rule of `webhook::paths::WEBHOOKS`.
pub const KINDS: &[KindInfo] = &[
    KindInfo { group: "", kind: "Pod", resource: "pods", namespaced: true },
    KindInfo { group: "", kind: "Namespace", resource: "namespaces", namespaced: false },
    KindInfo { group: "", kind: "Service", resource: "services", namespaced: true },
    KindInfo { group: "apps.kruise.io", kind: "CloneSet", resource: "clonesets", namespaced: true },
    KindInfo { group: "apps.kruise.io", kind: "StatefulSet", resource: "statefulsets", namespaced: true },
    KindInfo { group: "apps.kruise.io", kind: "SidecarSet", resource: "sidecarsets", namespaced: false },
    KindInfo { group: "apps.kruise.io", kind: "DaemonSet", resource: "daemonsets", namespaced: true },
    KindInfo { group: "apps.kruise.io", kind: "ImagePullJob", resource: "imagepulljobs", namespaced: true },
    KindInfo { group: "apps.kruise.io", kind: "ImageListPullJob", resource: "imagelistpulljobs", namespaced: true },
    KindInfo { group: "apps.kruise.io", kind: "NodeImage", resource: "nodeimages", namespaced: false },
    KindInfo { group: "apps.kruise.io", kind: "BroadcastJob", resource: "broadcastjobs", namespaced: true },
    KindInfo { group: "apps.kruise.io", kind: "AdvancedCronJob", resource: "advancedcronjobs", namespaced: true },
    KindInfo {
        group: "apps.kruise.io",
        kind: "ContainerRecreateRequest",
        resource: "containerrecreaterequests",
        namespaced: true,
    },
    KindInfo { group: "apps.kruise.io", kind: "WorkloadSpread", resource: "workloadspreads", namespaced: true },
    KindInfo {
        group: "policy.kruise.io",
        kind: "PodUnavailableBudget",
        resource: "podunavailablebudgets",
        namespaced: true,
    },
    KindInfo { group: "apps", kind: "Deployment", resource: "deployments", namespaced: true },
    KindInfo { group: "apps", kind: "ReplicaSet", resource: "replicasets", namespaced: true },
    KindInfo { group: "apps", kind: "StatefulSet", resource: "statefulsets", namespaced: true },
    KindInfo { group: "networking.k8s.io", kind: "Ingress", resource: "ingresses", namespaced: true },
    KindInfo {
        group: "apiextensions.k8s.io",
        kind: "CustomResourceDefinition",
        resource: "customresourcedefinitions",
        namespaced: false,
    },
    KindInfo { group: "apps.kruise.io", kind: "PodProbeMarker", resource: "podprobemarkers", namespaced: true },
    KindInfo { group: "apps.kruise.io", kind: "UnitedDeployment", resource: "uniteddeployments", namespaced: true },
];

/// Splits `apiVersion` into (group, version).
pub fn group_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

/// The kind of an object, when a webhook rule may name it.
pub fn lookup(group: &str, kind: &str) -> Option<&'static KindInfo> {
    KINDS.iter().find(|k| k.group == group && k.kind == kind)
}

/// The kind behind a rule's resource (subresources like `pods/eviction` have none).
pub fn by_resource(group: &str, resource: &str) -> Option<&'static KindInfo> {
    KINDS.iter().find(|k| k.group == group && k.resource == resource)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhook::paths::WEBHOOKS;

    /// Every kind a routed webhook intercepts can be checked offline: a new webhook whose resource
    /// is missing here fails this test.
    #[test]
    fn every_routed_resource_is_checkable() {
        for w in WEBHOOKS {
            for rule in w.rules {
                for group in rule.groups {
                    for resource in rule.resources.iter().filter(|r| !r.contains('/')) {
                        assert!(by_resource(group, resource).is_some(), "{} intercepts {group}/{resource}", w.name);
                    }
                }
            }
        }
    }

    #[test]
    fn group_versions() {
        assert_eq!(group_version("v1"), ("", "v1"));
        assert_eq!(group_version("apps.kruise.io/v1beta1"), ("apps.kruise.io", "v1beta1"));
        assert_eq!(lookup("apps", "StatefulSet").map(|k| k.resource), Some("statefulsets"));
    }
}
