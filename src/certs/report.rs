//! Each replica's report of what it serves, where the leader reads it (spec §8.4 improved: a CA
//! rotation ends only when every live replica serves a leaf of the new CA). One Lease per replica
//! in the manager namespace, `<secret>-<identity>`, labelled `certs.kruise.io/replica-of:
//! <secret>`, holding the replica's identity, its renewal time and TTL, and the fingerprint of the
//! CA that signed the leaf it serves (annotation `certs.kruise.io/serving-ca`). Replicas renew
//! theirs every poll and delete it on shutdown; the leader deletes reports that have not been
//! renewed for ten TTLs ([`crate::core::certs::report_is_stale`]).

use std::collections::BTreeMap;
use std::time::SystemTime;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use serde_json::json;

use super::Settings;
use crate::core::certs::{ReplicaReport, report_is_live, report_is_stale};

/// The label naming the Secret a report is about.
pub const REPLICA_OF: &str = "certs.kruise.io/replica-of";
/// The annotation holding the fingerprint of the serving leaf's CA.
pub const SERVING_CA: &str = "certs.kruise.io/serving-ca";
/// The field manager of the reports.
pub const FIELD_MANAGER: &str = "kruise-webhook-certs-replica";

/// The report's Lease name: `<secret>-<identity>` made a DNS subdomain (lower case, other
/// characters turned into `-`, at most 253 characters).
pub fn lease_name(settings: &Settings) -> String {
    let raw = format!("{}-{}", settings.secret, settings.identity).to_lowercase();
    let mut name: String =
        raw.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '-' }).collect();
    name.truncate(253);
    name.trim_matches(|c: char| !c.is_ascii_alphanumeric()).to_string()
}

fn api(client: &kube::Client, settings: &Settings) -> Api<Lease> {
    Api::namespaced(client.clone(), &settings.namespace)
}

/// Writes (creates or renews) this replica's report.
pub async fn report(
    client: &kube::Client,
    settings: &Settings,
    serving_ca: Option<&str>,
    now: SystemTime,
) -> Result<(), kube::Error> {
    // MicroTime's own encoding (microseconds: the apiserver refuses nanoseconds).
    let renew = jiff::Timestamp::try_from(now)
        .ok()
        .and_then(|t| serde_json::to_value(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(t)).ok())
        .unwrap_or_default();
    let mut annotations = BTreeMap::new();
    // An empty value says "serves nothing yet" (apply would not remove a key left out).
    annotations.insert(SERVING_CA, serving_ca.unwrap_or_default());
    let lease = json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": lease_name(settings),
            "namespace": settings.namespace,
            "labels": {REPLICA_OF: settings.secret},
            "annotations": annotations,
        },
        "spec": {
            "holderIdentity": settings.identity,
            "leaseDurationSeconds": settings.report_ttl.as_secs().max(1),
            "renewTime": renew,
        }
    });
    let params = PatchParams::apply(FIELD_MANAGER).force();
    api(client, settings).patch(&lease_name(settings), &params, &Patch::Apply(lease)).await?;
    Ok(())
}

/// Deletes this replica's report (on shutdown: a replica that is gone holds nothing back).
pub async fn withdraw(client: &kube::Client, settings: &Settings) -> Result<(), kube::Error> {
    match api(client, settings).delete(&lease_name(settings), &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Every replica's report, and the names of reports so old they should be deleted.
pub async fn read(
    client: &kube::Client,
    settings: &Settings,
    now: SystemTime,
) -> Result<(Vec<ReplicaReport>, Vec<String>), kube::Error> {
    let selector = format!("{REPLICA_OF}={}", settings.secret);
    let leases = api(client, settings).list(&ListParams::default().labels(&selector)).await?;
    let mut reports = Vec::new();
    let mut stale = Vec::new();
    for lease in leases.items {
        let name = lease.metadata.name.clone().unwrap_or_default();
        let spec = lease.spec.unwrap_or_default();
        let ttl = std::time::Duration::from_secs(spec.lease_duration_seconds.unwrap_or(0).max(0) as u64);
        let renewed = spec.renew_time.map(|t| SystemTime::from(t.0)).unwrap_or(SystemTime::UNIX_EPOCH);
        if report_is_stale(renewed, ttl, now) {
            stale.push(name.clone());
        }
        let serving_ca =
            lease.metadata.annotations.as_ref().and_then(|a| a.get(SERVING_CA)).filter(|v| !v.is_empty()).cloned();
        reports.push(ReplicaReport {
            identity: spec.holder_identity.unwrap_or(name),
            serving_ca,
            live: report_is_live(renewed, ttl, now),
        });
    }
    Ok((reports, stale))
}

/// Deletes the reports named (stale ones).
pub async fn remove(client: &kube::Client, settings: &Settings, names: &[String]) -> Result<(), kube::Error> {
    for name in names {
        match api(client, settings).delete(name, &DeleteParams::default()).await {
            Ok(_) => tracing::info!(report = %name, "deleted the certificate report of a replica that is gone"),
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_names_are_dns_subdomains() {
        let addr: std::net::SocketAddr = ([127, 0, 0, 1], 9876).into();
        let name = |identity: &str| lease_name(&Settings::new("kruise-system", identity, addr));
        assert_eq!(name("kruise-manager-7d9f-abcde"), "kruise-webhook-certs-kruise-manager-7d9f-abcde");
        assert_eq!(name("Host_1:UUID"), "kruise-webhook-certs-host-1-uuid");
        assert_eq!(name("__"), "kruise-webhook-certs");
        assert_eq!(name(&"x".repeat(400)).len(), 253);
    }
}
