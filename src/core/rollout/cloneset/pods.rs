//! The pods and PVCs a CloneSet creates (spec §5.2; kruise's `newVersionedPods`,
//! `GetPersistentVolumeClaims`, `UpdateStorage`, `getOrGenAvailableIDs`):
//! - a pod is `<cloneset>-<instance id>`; its labels, annotations, finalizers and spec come from
//!   the revision's template; it gets the revision labels, `apps.kruise.io/cloneset-instance-id`,
//!   lifecycle `PreparingNormal` with its timestamp, the `InPlaceUpdateReady` readiness gate, a
//!   controller reference to the CloneSet, and one PVC volume per volumeClaimTemplate (replacing a
//!   template volume of the same name);
//! - a PVC is `<template>-<cloneset>-<id>`, labelled with the template labels, the selector's
//!   matchLabels and the instance id, owned by the CloneSet;
//! - instance ids of PVCs that no pod uses are reused first — that is how a recreated pod finds
//!   its volumes again — then new ids of 5 characters from `bcdfghjklmnpqrstvwxz2456789` are drawn
//!   from the round's seed (kruise: `rand.String(5)`), never one a pod or PVC already has.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, PodReadinessGate, PodSpec, PodTemplateSpec, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;

use super::revision::{owner_reference, write_revision_hash};
use crate::apis::cloneset::CloneSet;
use crate::apis::keys::IN_PLACE_UPDATE_READY;
use crate::core::history::ALPHANUMS;
use crate::core::lifecycle;
use crate::core::lifecycle::State;

/// Pod and PVC label with the instance id.
pub const INSTANCE_ID: &str = "apps.kruise.io/cloneset-instance-id";
/// Length of a generated instance id.
pub const INSTANCE_ID_LEN: usize = 5;

/// A pod's or PVC's instance id ("" when absent).
pub fn instance_id(labels: Option<&std::collections::BTreeMap<String, String>>) -> &str {
    labels.and_then(|l| l.get(INSTANCE_ID)).map(String::as_str).unwrap_or("")
}

/// A small deterministic generator (SplitMix64) so that a round's random ids come from a seed the
/// caller chooses: the controller passes fresh randomness, tests and `kruise plan` a fixed one.
#[derive(Clone, Debug)]
pub struct IdSource(u64);

impl IdSource {
    /// From a seed.
    pub fn new(seed: u64) -> IdSource {
        IdSource(seed)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// `rand.String(n)`: 5 bits per character, values ≥ 27 skipped.
    pub fn string(&mut self, n: usize) -> String {
        let mut out = String::with_capacity(n);
        let mut bits = self.next_u64();
        let mut remaining = 12;
        while out.len() < n {
            if remaining == 0 {
                bits = self.next_u64();
                remaining = 12;
            }
            let idx = (bits & 0x1f) as usize;
            if idx < ALPHANUMS.len() {
                out.push(char::from(ALPHANUMS[idx]));
            }
            bits >>= 5;
            remaining -= 1;
        }
        out
    }
}

/// `getOrGenAvailableIDs`: `n` ids, reusing the ids of PVCs no pod has (in order), then new ones;
/// returned sorted, as kruise lists its set.
pub fn available_ids(n: usize, pods: &[&Pod], pvcs: &[&PersistentVolumeClaim], ids: &mut IdSource) -> Vec<String> {
    let mut existing: BTreeSet<String> = BTreeSet::new();
    let mut free: BTreeSet<String> = BTreeSet::new();
    for pvc in pvcs {
        let id = instance_id(pvc.metadata.labels.as_ref());
        if !id.is_empty() {
            existing.insert(id.to_string());
            free.insert(id.to_string());
        }
    }
    for pod in pods {
        let id = instance_id(pod.metadata.labels.as_ref());
        if !id.is_empty() {
            existing.insert(id.to_string());
            free.remove(id);
        }
    }
    let mut out = BTreeSet::new();
    let mut free = free.into_iter();
    while out.len() < n {
        let id = match free.next() {
            Some(id) => id,
            None => loop {
                let id = ids.string(INSTANCE_ID_LEN);
                if !existing.contains(&id) && !out.contains(&id) {
                    break id;
                }
            },
        };
        out.insert(id);
    }
    out.into_iter().collect()
}

/// `GetPersistentVolumeClaims`: the PVCs of a pod with this instance id, in template order.
pub fn claims(cs: &CloneSet, id: &str) -> Vec<PersistentVolumeClaim> {
    let cs_name = cs.metadata.name.as_deref().unwrap_or("");
    let match_labels = cs.spec.selector.as_ref().and_then(|s| s.match_labels.clone()).unwrap_or_default();
    cs.spec
        .volume_claim_templates
        .iter()
        .map(|t| {
            let mut claim = t.clone();
            let template_name = t.metadata.name.clone().unwrap_or_default();
            claim.metadata.name = Some(format!("{template_name}-{cs_name}-{id}"));
            claim.metadata.namespace = cs.metadata.namespace.clone();
            let labels = claim.metadata.labels.get_or_insert_with(Default::default);
            labels.extend(match_labels.clone());
            labels.insert(INSTANCE_ID.into(), id.to_string());
            claim.metadata.owner_references.get_or_insert_with(Vec::new).push(owner_reference(cs));
            claim
        })
        .collect()
}

/// One new pod of a revision: `template` is the revision's template.
pub fn new_pod(
    cs: &CloneSet,
    template: &PodTemplateSpec,
    revision: &str,
    id: &str,
    short_hash_gate: bool,
    now: Timestamp,
) -> Pod {
    let cs_name = cs.metadata.name.clone().unwrap_or_default();
    let meta = template.metadata.clone().unwrap_or_default();
    let mut pod = Pod {
        metadata: ObjectMeta {
            name: Some(format!("{cs_name}-{id}")),
            generate_name: Some(format!("{cs_name}-")),
            namespace: cs.metadata.namespace.clone(),
            labels: Some(meta.labels.unwrap_or_default()),
            annotations: meta.annotations,
            finalizers: meta.finalizers,
            owner_references: Some(vec![owner_reference(cs)]),
            ..Default::default()
        },
        spec: Some(template.spec.clone().unwrap_or_default()),
        status: None,
    };
    write_revision_hash(&mut pod, revision, short_hash_gate);
    pod.metadata.labels.get_or_insert_with(Default::default).insert(INSTANCE_ID.into(), id.to_string());
    let spec: &mut PodSpec = pod.spec.get_or_insert_with(Default::default);
    let gates = spec.readiness_gates.get_or_insert_with(Vec::new);
    if !gates.iter().any(|g| g.condition_type == IN_PLACE_UPDATE_READY) {
        gates.push(PodReadinessGate { condition_type: IN_PLACE_UPDATE_READY.into() });
    }
    let claims = claims(cs, id);
    if !claims.is_empty() {
        let template_volumes = spec.volumes.take().unwrap_or_default();
        let mut volumes: Vec<Volume> = cs
            .spec
            .volume_claim_templates
            .iter()
            .zip(&claims)
            .map(|(t, c)| Volume {
                name: t.metadata.name.clone().unwrap_or_default(),
                persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                    claim_name: c.metadata.name.clone().unwrap_or_default(),
                    read_only: None,
                }),
                ..Default::default()
            })
            .collect();
        let claimed: BTreeSet<String> = volumes.iter().map(|v| v.name.clone()).collect();
        volumes.extend(template_volumes.into_iter().filter(|v| !claimed.contains(&v.name)));
        spec.volumes = Some(volumes);
    }
    lifecycle::set_state(&mut pod, State::PreparingNormal, now);
    pod
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::cloneset::CloneSetSpec;
    use crate::core::pods::test_pods::at;
    use serde_json::json;

    fn cs() -> CloneSet {
        let spec: CloneSetSpec = serde_json::from_value(json!({
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}, "annotations": {"a": "b"}, "finalizers": ["f"]},
                         "spec": {"containers": [{"name": "c", "image": "nginx"}],
                                  "volumes": [{"name": "data", "emptyDir": {}}, {"name": "cache", "emptyDir": {}}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data", "labels": {"tier": "db"}}, "spec": {"accessModes": ["ReadWriteOnce"]}}]
        }))
        .unwrap();
        let mut c = CloneSet::new("web", spec);
        c.metadata.namespace = Some("ns".into());
        c.metadata.uid = Some("u1".into());
        c
    }

    #[test]
    fn new_pod_as_kruise_builds_it() {
        let cs = cs();
        let pod = new_pod(&cs, &cs.spec.template, "web-abc12", "x7k2p", false, at(0));
        assert_eq!(pod.metadata.name.as_deref(), Some("web-x7k2p"));
        assert_eq!(pod.metadata.generate_name.as_deref(), Some("web-"));
        let labels = pod.metadata.labels.clone().unwrap();
        assert_eq!(labels["controller-revision-hash"], "web-abc12");
        assert_eq!(labels["pod-template-hash"], "abc12");
        assert_eq!(labels[INSTANCE_ID], "x7k2p");
        assert_eq!(labels["lifecycle.apps.kruise.io/state"], "PreparingNormal");
        assert_eq!(pod.metadata.finalizers, Some(vec!["f".to_string()]));
        assert_eq!(pod.metadata.owner_references.as_ref().unwrap()[0].uid, "u1");
        let spec = pod.spec.unwrap();
        assert_eq!(spec.readiness_gates.unwrap()[0].condition_type, "InPlaceUpdateReady");
        let volumes: Vec<(String, Option<String>)> = spec
            .volumes
            .unwrap()
            .into_iter()
            .map(|v| (v.name, v.persistent_volume_claim.map(|p| p.claim_name)))
            .collect();
        assert_eq!(
            volumes,
            [("data".to_string(), Some("data-web-x7k2p".to_string())), ("cache".to_string(), None)],
            "the claim replaces the template volume of the same name"
        );
        let claim = &claims(&cs, "x7k2p")[0];
        assert_eq!(claim.metadata.name.as_deref(), Some("data-web-x7k2p"));
        let l = claim.metadata.labels.clone().unwrap();
        assert_eq!((l["tier"].as_str(), l["app"].as_str(), l[INSTANCE_ID].as_str()), ("db", "web", "x7k2p"));
    }

    fn labelled<T: Default>(id: &str, set: impl Fn(&mut T, ObjectMeta)) -> T {
        let mut t = T::default();
        set(
            &mut t,
            ObjectMeta { labels: Some([(INSTANCE_ID.to_string(), id.to_string())].into()), ..Default::default() },
        );
        t
    }

    /// kruise `TestGetOrGenAvailableIDs`: ids of PVCs without pods are reused, the rest generated
    /// fresh and distinct.
    #[test]
    fn kruise_get_or_gen_available_ids() {
        // kruise's row: pods a, b; PVCs b, c; two ids: c and a random one.
        let pods: Vec<Pod> = ["a", "b"].iter().map(|id| labelled(id, |p: &mut Pod, m| p.metadata = m)).collect();
        let pvcs: Vec<PersistentVolumeClaim> =
            ["b", "c"].iter().map(|id| labelled(id, |p: &mut PersistentVolumeClaim, m| p.metadata = m)).collect();
        let (pr, vr): (Vec<&Pod>, Vec<&PersistentVolumeClaim>) = (pods.iter().collect(), pvcs.iter().collect());
        let got = available_ids(2, &pr, &vr, &mut IdSource::new(0));
        assert_eq!(got.len(), 2);
        assert!(got.contains(&"c".to_string()));
        assert!(got.iter().any(|id| id.len() == INSTANCE_ID_LEN), "{got:?}");

        let pods: Vec<Pod> = ["a", "b"].iter().map(|id| labelled(id, |p: &mut Pod, m| p.metadata = m)).collect();
        let pvcs: Vec<PersistentVolumeClaim> =
            ["a", "c", "d"].iter().map(|id| labelled(id, |p: &mut PersistentVolumeClaim, m| p.metadata = m)).collect();
        let (pr, vr): (Vec<&Pod>, Vec<&PersistentVolumeClaim>) = (pods.iter().collect(), pvcs.iter().collect());
        let mut src = IdSource::new(7);
        let got = available_ids(5, &pr, &vr, &mut src);
        assert_eq!(got.len(), 5);
        assert!(got.contains(&"c".to_string()) && got.contains(&"d".to_string()));
        for id in &got {
            assert!(!["a", "b"].contains(&id.as_str()), "{id} is taken");
            assert!(
                id.len() == 1 || (id.len() == INSTANCE_ID_LEN && id.bytes().all(|b| ALPHANUMS.contains(&b))),
                "{id}"
            );
        }
        let mut sorted = got.clone();
        sorted.sort();
        assert_eq!(got, sorted);
        assert_eq!(available_ids(1, &pr, &vr, &mut IdSource::new(7)), ["c"]);
        // The same seed gives the same ids.
        assert_eq!(IdSource::new(1).string(5), IdSource::new(1).string(5));
        assert_ne!(IdSource::new(1).string(5), IdSource::new(2).string(5));
    }
}
