//! Deletion protection of workloads (spec §2.1 item 22, §2.2 DELETE; kruise
//! `deletionprotection.ValidateWorkloadDeletion`): with gate ResourcesDeletionProtection on, a
//! CloneSet or Advanced StatefulSet labelled `policy.kruise.io/delete-protection=Always` cannot be
//! deleted, and one labelled `=Cascading` cannot be deleted while it still wants replicas. An
//! object already being deleted is let through. The handler answers a refusal with 403 (§11.1).

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
}
