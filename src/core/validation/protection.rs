//! Deletion protection (spec §2.1 item 22, §2.2 DELETE, §8.2; kruise
//! `pkg/webhook/util/deletionprotection`): with gate ResourcesDeletionProtection on, an object
//! labelled `policy.kruise.io/delete-protection=Always` cannot be deleted, and one labelled
//! `=Cascading` cannot be deleted while something still depends on it: a workload (CloneSet,
//! Advanced StatefulSet, apps/v1 Deployment, ReplicaSet, StatefulSet) that still wants replicas
//! (`ValidateWorkloadDeletion`), a Namespace with active pods or Bound claims
//! (`ValidateNamespaceDeletion`), a CRD with custom resources not being deleted
//! (`ValidateCRDDeletion`, which also needs gate DeletionProtectionForCRDCascadingGate). Services
//! and Ingresses know only `Always` (`ValidateServiceDeletion`, `ValidateIngressDeletion`). An
//! object already being deleted is let through. Handlers answer a refusal with 403 (§11.1); the
//! objects a Cascading check reads are listed by the caller ([`needs_listing`] says when).

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::apis::keys::{DELETE_PROTECTION, DELETE_PROTECTION_ALWAYS, DELETE_PROTECTION_CASCADING};
use crate::core::features::{FeatureGates, Gate};

/// `Err(message)` when the deletion must be refused.
pub fn check_workload_deletion(meta: &ObjectMeta, replicas: Option<i32>, gates: &FeatureGates) -> Result<(), String> {
    if !gates.enabled(Gate::ResourcesDeletionProtection) || meta.deletion_timestamp.is_some() {
        return Ok(());
    }
    let value = meta.labels.as_ref().and_then(|l| l.get(DELETE_PROTECTION)).map(String::as_str);
    match value {
        Some(DELETE_PROTECTION_ALWAYS) => {
            Err(format!("forbidden by ResourcesProtectionDeletion for {DELETE_PROTECTION}={DELETE_PROTECTION_ALWAYS}"))
        }
        Some(DELETE_PROTECTION_CASCADING) => match replicas {
            Some(n) if n > 0 => Err(format!(
                "forbidden by ResourcesProtectionDeletion for {DELETE_PROTECTION}={DELETE_PROTECTION_CASCADING} and \
                 replicas {n}>0"
            )),
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

/// The protection label of an object the checks apply to: `None` when the gate is off or the
/// object is already being deleted.
fn protection<'a>(meta: &'a ObjectMeta, gates: &FeatureGates) -> Option<&'a str> {
    if !gates.enabled(Gate::ResourcesDeletionProtection) || meta.deletion_timestamp.is_some() {
        return None;
    }
    meta.labels.as_ref().and_then(|l| l.get(DELETE_PROTECTION)).map(String::as_str)
}

fn always() -> String {
    format!("forbidden by ResourcesProtectionDeletion for {DELETE_PROTECTION}={DELETE_PROTECTION_ALWAYS}")
}

/// Service and Ingress deletion (kruise `ValidateServiceDeletion`, `ValidateIngressDeletion`):
/// only `Always` protects them.
pub fn check_always_only(meta: &ObjectMeta, gates: &FeatureGates) -> Result<(), String> {
    match protection(meta, gates) {
        Some(DELETE_PROTECTION_ALWAYS) => Err(always()),
        _ => Ok(()),
    }
}

/// Whether deciding on this Namespace or CRD deletion reads other objects: the gate is on, it is
/// not being deleted, it is labelled `Cascading` (and, for a CRD, gate
/// DeletionProtectionForCRDCascadingGate is on, else the answer needs no listing).
pub fn needs_listing(meta: &ObjectMeta, gates: &FeatureGates, crd: bool) -> bool {
    protection(meta, gates) == Some(DELETE_PROTECTION_CASCADING)
        && (!crd || gates.enabled(Gate::DeletionProtectionForCRDCascadingGate))
}

/// What a Namespace's Cascading check reads: its pods and its claims, or why they could not be
/// listed.
#[derive(Debug, Clone)]
pub struct NamespaceContents {
    /// Every pod of the namespace.
    pub pods: Result<Vec<Pod>, String>,
    /// Every PersistentVolumeClaim of the namespace.
    pub claims: Result<Vec<PersistentVolumeClaim>, String>,
}

/// Kubernetes' `controller.IsPodActive`: not Succeeded, not Failed, not being deleted.
pub fn is_pod_active(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    phase != Some("Succeeded") && phase != Some("Failed") && pod.metadata.deletion_timestamp.is_none()
}

/// Namespace deletion (kruise `ValidateNamespaceDeletion`): `Always` refuses; `Cascading` refuses
/// while a pod is active, then while a claim not being deleted is Bound. `contents` is read only
/// for `Cascading`; a listing that failed refuses, as kruise does.
pub fn check_namespace_deletion(
    meta: &ObjectMeta,
    gates: &FeatureGates,
    contents: impl FnOnce() -> NamespaceContents,
) -> Result<(), String> {
    match protection(meta, gates) {
        Some(DELETE_PROTECTION_ALWAYS) => Err(always()),
        Some(DELETE_PROTECTION_CASCADING) => {
            let contents = contents();
            let pods = contents
                .pods
                .map_err(|e| format!("forbidden by ResourcesProtectionDeletion for list pods error: {e}"))?;
            let active = pods.iter().filter(|p| is_pod_active(p)).count();
            if active > 0 {
                return Err(format!(
                    "forbidden by ResourcesProtectionDeletion for {DELETE_PROTECTION}={DELETE_PROTECTION_CASCADING} and \
                     active pods {active}>0"
                ));
            }
            let claims = contents
                .claims
                .map_err(|e| format!("forbidden by ResourcesProtectionDeletion for list pvc error: {e}"))?;
            let bound = claims
                .iter()
                .filter(|c| {
                    c.metadata.deletion_timestamp.is_none()
                        && c.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound")
                })
                .count();
            if bound > 0 {
                return Err(format!(
                    "forbidden by ResourcesProtectionDeletion for {DELETE_PROTECTION}={DELETE_PROTECTION_CASCADING} and \
                     \"Bound\" status pvc {bound}>0"
                ));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The custom resources a CRD serves, as kruise lists them: the storage version's group, version
/// and list kind (`gvk` prints as Go's `schema.GroupVersionKind`), and the plural the API uses.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CustomResources {
    /// `spec.group`.
    pub group: String,
    /// The storage version (empty when none is marked).
    pub version: String,
    /// `spec.names.listKind`.
    pub list_kind: String,
    /// `spec.names.plural`.
    pub plural: String,
}

impl std::fmt::Display for CustomResources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}, Kind={}", self.group, self.version, self.list_kind)
    }
}

/// CRD deletion (kruise `ValidateCRDDeletion`): `Always` refuses; `Cascading` refuses unless gate
/// DeletionProtectionForCRDCascadingGate is on, then while a custom resource of `resources` is
/// not being deleted. `list` (their metadata) is read only then; a listing that failed refuses.
pub fn check_crd_deletion(
    meta: &ObjectMeta,
    gates: &FeatureGates,
    resources: &CustomResources,
    list: impl FnOnce() -> Result<Vec<ObjectMeta>, String>,
) -> Result<(), String> {
    match protection(meta, gates) {
        Some(DELETE_PROTECTION_ALWAYS) => Err(always()),
        Some(DELETE_PROTECTION_CASCADING) => {
            if !gates.enabled(Gate::DeletionProtectionForCRDCascadingGate) {
                return Err(format!(
                    "feature-gate {} is not enabled",
                    Gate::DeletionProtectionForCRDCascadingGate.name()
                ));
            }
            let items = list().map_err(|e| format!("failed to list CRs of {resources}: {e}"))?;
            let active = items.iter().filter(|m| m.deletion_timestamp.is_none()).count();
            if active > 0 {
                return Err(format!(
                    "forbidden by ResourcesProtectionDeletion for {DELETE_PROTECTION}={DELETE_PROTECTION_CASCADING} and \
                     active CRs {active}>0"
                ));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deletion_table() {
        let on = FeatureGates::default().with(Gate::ResourcesDeletionProtection, true);
        let off = FeatureGates::default();
        let meta = |label: Option<&str>, deleting: bool| -> ObjectMeta {
            let mut m = json!({"name": "w", "namespace": "ns"});
            if let Some(l) = label {
                m["labels"] = json!({ DELETE_PROTECTION: l });
            }
            if deleting {
                m["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
            }
            serde_json::from_value(m).unwrap()
        };
        let always = "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Always";
        let cascading = "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading and replicas 3>0";
        type Case<'a> = (&'a FeatureGates, Option<&'a str>, bool, Option<i32>, Result<(), &'a str>);
        #[rustfmt::skip]
        let cases: Vec<Case> = vec![
            (&on, None, false, Some(3), Ok(())),
            (&on, Some("Always"), false, Some(0), Err(always)),
            (&off, Some("Always"), false, Some(3), Ok(())),
            (&on, Some("Always"), true, Some(3), Ok(())),
            (&on, Some("Cascading"), false, Some(3), Err(cascading)),
            (&on, Some("Cascading"), false, Some(0), Ok(())),
            (&on, Some("Cascading"), false, None, Ok(())),
            (&on, Some("Sometimes"), false, Some(3), Ok(())),
        ];
        for (gates, label, deleting, replicas, want) in cases {
            let got = check_workload_deletion(&meta(label, deleting), replicas, gates);
            assert_eq!(got, want.map_err(String::from), "{label:?} deleting={deleting} replicas={replicas:?}");
        }
    }

    fn labelled(label: Option<&str>, deleting: bool) -> ObjectMeta {
        let mut m = json!({"name": "x"});
        if let Some(l) = label {
            m["labels"] = json!({ DELETE_PROTECTION: l });
        }
        if deleting {
            m["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
        }
        serde_json::from_value(m).unwrap()
    }

    #[test]
    fn service_and_ingress_know_only_always() {
        let on = FeatureGates::default().with(Gate::ResourcesDeletionProtection, true);
        let off = FeatureGates::default();
        let always = "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Always";
        type Case<'a> = (&'a FeatureGates, Option<&'a str>, bool, Result<(), &'a str>);
        #[rustfmt::skip]
        let cases: Vec<Case> = vec![
            (&on, Some("Always"), false, Err(always)),
            (&on, Some("Always"), true, Ok(())),
            (&off, Some("Always"), false, Ok(())),
            (&on, Some("Cascading"), false, Ok(())),
            (&on, None, false, Ok(())),
        ];
        for (gates, label, deleting, want) in cases {
            let got = check_always_only(&labelled(label, deleting), gates);
            assert_eq!(got, want.map_err(String::from), "{label:?} deleting={deleting}");
        }
    }

    fn pod(phase: &str, deleting: bool) -> Pod {
        let mut p = json!({"metadata": {"name": "p"}, "status": {"phase": phase}});
        if deleting {
            p["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
        }
        serde_json::from_value(p).unwrap()
    }

    fn claim(phase: &str, deleting: bool) -> PersistentVolumeClaim {
        let mut c = json!({"metadata": {"name": "c"}, "status": {"phase": phase}});
        if deleting {
            c["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
        }
        serde_json::from_value(c).unwrap()
    }

    #[test]
    fn namespace_table() {
        let on = FeatureGates::default().with(Gate::ResourcesDeletionProtection, true);
        let off = FeatureGates::default();
        let always = "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Always";
        let pods2 = "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading and active pods 2>0";
        let pvc1 = "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading and \"Bound\" status pvc 1>0";
        let pods_err = "forbidden by ResourcesProtectionDeletion for list pods error: boom";
        let pvc_err = "forbidden by ResourcesProtectionDeletion for list pvc error: boom";
        let some_pods = || {
            Ok(vec![
                pod("Running", false),
                pod("Pending", false),
                pod("Succeeded", false),
                pod("Failed", false),
                pod("Running", true),
            ])
        };
        let done_pods = || Ok(vec![pod("Succeeded", false), pod("Failed", false), pod("Running", true)]);
        let claims = || Ok(vec![claim("Bound", false), claim("Bound", true), claim("Pending", false)]);
        let free = || Ok(vec![claim("Pending", false), claim("Lost", false), claim("Bound", true)]);
        type Pods = Result<Vec<Pod>, String>;
        type Claims = Result<Vec<PersistentVolumeClaim>, String>;
        type Case<'a> = (&'a FeatureGates, Option<&'a str>, bool, Pods, Claims, Result<(), &'a str>);
        #[rustfmt::skip]
        let cases: Vec<Case> = vec![
            (&on, None, false, some_pods(), claims(), Ok(())),
            (&on, Some("Always"), false, Ok(vec![]), Ok(vec![]), Err(always)),
            (&on, Some("Always"), true, Ok(vec![]), Ok(vec![]), Ok(())),
            (&off, Some("Always"), false, Ok(vec![]), Ok(vec![]), Ok(())),
            (&on, Some("Cascading"), false, some_pods(), claims(), Err(pods2)),
            (&on, Some("Cascading"), false, done_pods(), claims(), Err(pvc1)),
            (&on, Some("Cascading"), false, done_pods(), free(), Ok(())),
            (&on, Some("Cascading"), false, Err("boom".into()), claims(), Err(pods_err)),
            (&on, Some("Cascading"), false, some_pods(), Err("boom".into()), Err(pods2)),
            (&on, Some("Cascading"), false, Ok(vec![]), Err("boom".into()), Err(pvc_err)),
            (&on, Some("Cascading"), true, some_pods(), claims(), Ok(())),
            (&off, Some("Cascading"), false, some_pods(), claims(), Ok(())),
        ];
        for (gates, label, deleting, pods, claims, want) in cases {
            let meta = labelled(label, deleting);
            assert_eq!(
                needs_listing(&meta, gates, false),
                label == Some("Cascading") && !deleting && gates.enabled(Gate::ResourcesDeletionProtection)
            );
            let got = check_namespace_deletion(&meta, gates, || NamespaceContents { pods, claims });
            assert_eq!(got, want.map_err(String::from), "{label:?} deleting={deleting}");
        }
    }

    #[test]
    fn crd_table() {
        let on = FeatureGates::default().with(Gate::ResourcesDeletionProtection, true);
        let cascading_on = on.clone().with(Gate::DeletionProtectionForCRDCascadingGate, true);
        let resources = CustomResources {
            group: "example.com".into(),
            version: "v1".into(),
            list_kind: "FooList".into(),
            plural: "foos".into(),
        };
        let always = "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Always";
        let gate = "feature-gate DeletionProtectionForCRDCascadingGate is not enabled";
        let active = "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading and active CRs 1>0";
        let failed = "failed to list CRs of example.com/v1, Kind=FooList: boom";
        let crs = || Ok(vec![labelled(None, false), labelled(None, true)]);
        type Case<'a> = (&'a FeatureGates, Option<&'a str>, bool, Result<Vec<ObjectMeta>, String>, Result<(), &'a str>);
        #[rustfmt::skip]
        let cases: Vec<Case> = vec![
            (&on, Some("Always"), false, crs(), Err(always)),
            (&on, Some("Always"), true, crs(), Ok(())),
            (&on, Some("Cascading"), false, crs(), Err(gate)),
            (&cascading_on, Some("Cascading"), false, crs(), Err(active)),
            (&cascading_on, Some("Cascading"), false, Ok(vec![labelled(None, true)]), Ok(())),
            (&cascading_on, Some("Cascading"), false, Err("boom".into()), Err(failed)),
            (&cascading_on, None, false, crs(), Ok(())),
        ];
        for (gates, label, deleting, list, want) in cases {
            let got = check_crd_deletion(&labelled(label, deleting), gates, &resources, || list);
            assert_eq!(got, want.map_err(String::from), "{label:?} deleting={deleting}");
        }
        assert!(!needs_listing(&labelled(Some("Cascading"), false), &on, true));
        assert!(needs_listing(&labelled(Some("Cascading"), false), &cascading_on, true));
    }
}
