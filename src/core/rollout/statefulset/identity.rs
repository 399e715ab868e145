//! Pod identity and storage of an Advanced StatefulSet (spec §6.1), kruise's
//! `stateful_set_utils.go`: the ordinal a pod name carries (`getParentNameAndOrdinal`), the names
//! `<set>-<ordinal>` and `<claim>-<set>-<ordinal>`, whether a pod's network identity
//! (`identityMatches`: name, namespace, `statefulset.kubernetes.io/pod-name` label) and storage
//! (`storageMatches`: one PVC volume per claim template) are the set's, how they are put back
//! (`updateIdentity`, `updateStorage`), the claims a pod needs (`getPersistentVolumeClaims`), and
//! a new pod built from a revision's template (`newStatefulSetPod` + `setPodRevision`).
//!
//! Kept from Go on purpose: the ordinal is parsed from the name alone (`(.*)-([0-9]+)$`, 32-bit),
//! so `web-007` has ordinal 7 and `other-3` ordinal 3 whatever set owns it. Two deliberate
//! differences, both where Go's answer is not deterministic or not reachable: the claim volumes
//! `updateStorage` writes come in claim-template order (Go iterates a map), and a pod whose name
//! carries no ordinal is left as it is by [`update_identity`] (Go would rename it `<set>--1`; it
//! never calls it for such a pod).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, PodTemplateSpec, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::apis::statefulset::v1beta1::StatefulSet;
use crate::core::lifecycle;
use crate::core::pods;

/// Label naming the pod (`apps.StatefulSetPodNameLabel`).
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// Label holding the ordinal (`apps.PodIndexLabel`, gate `PodIndexLabel`, default on).
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";
/// Label naming the pod's revision (`apps.StatefulSetRevisionLabel`).
pub const REVISION_LABEL: &str = "controller-revision-hash";
/// apiVersion of the owner reference to the set.
pub const API_VERSION: &str = "apps.kruise.io/v1beta1";
/// Kind of the owner reference to the set.
pub const KIND: &str = "StatefulSet";

/// `getParentNameAndOrdinal` on a name: the parent and the ordinal, `None` for the parent when
/// the name does not end in `-<digits>`, `None` for the ordinal also when the digits do not fit
/// 32 bits (Go keeps the parent then).
pub fn parent_and_ordinal(name: &str) -> (Option<&str>, Option<i32>) {
    let Some((parent, digits)) = name.rsplit_once('-') else { return (None, None) };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return (None, None);
    }
    // Go's `.` does not match a newline and the match need not start at the beginning.
    let parent = parent.rsplit('\n').next().unwrap_or(parent);
    (Some(parent), digits.parse::<i32>().ok())
}

/// `getOrdinal` on a name.
pub fn ordinal(name: &str) -> Option<i32> {
    parent_and_ordinal(name).1
}

/// `getOrdinal`.
pub fn pod_ordinal(pod: &Pod) -> Option<i32> {
    ordinal(pods::name(pod))
}

/// `getParentName` ("" when the name carries none).
pub fn parent_name(pod: &Pod) -> &str {
    parent_and_ordinal(pods::name(pod)).0.unwrap_or("")
}

fn set_name(set: &StatefulSet) -> &str {
    set.metadata.name.as_deref().unwrap_or("")
}

fn set_namespace(set: &StatefulSet) -> &str {
    set.metadata.namespace.as_deref().unwrap_or("")
}

/// `getPodName`.
pub fn pod_name(set: &StatefulSet, ordinal: i64) -> String {
    format!("{}-{ordinal}", set_name(set))
}

/// `getPersistentVolumeClaimName`: `<claim template>-<set>-<ordinal>`.
pub fn claim_name(set: &StatefulSet, template: &PersistentVolumeClaim, ordinal: i64) -> String {
    format!("{}-{}-{ordinal}", template.metadata.name.as_deref().unwrap_or(""), set_name(set))
}

/// `isMemberOf`: the name's parent is the set.
pub fn is_member_of(set: &StatefulSet, pod: &Pod) -> bool {
    parent_name(pod) == set_name(set)
}

/// `identityMatches`: name `<set>-<ordinal>`, the set's namespace, and the pod-name label.
pub fn identity_matches(set: &StatefulSet, pod: &Pod) -> bool {
    let name = pods::name(pod);
    let (parent, ordinal) = parent_and_ordinal(name);
    let (Some(parent), Some(ordinal)) = (parent, ordinal) else { return false };
    ordinal >= 0
        && parent == set_name(set)
        && name == pod_name(set, i64::from(ordinal))
        && pod.metadata.namespace.as_deref().unwrap_or("") == set_namespace(set)
        && pods::label(pod, POD_NAME_LABEL) == Some(name)
}

fn pod_volumes(pod: &Pod) -> &[Volume] {
    pod.spec.as_ref().map_or(&[], |s| s.volumes.as_deref().unwrap_or(&[]))
}

/// `storageMatches`: every claim template has a same-named pod volume pointing at the pod's claim.
pub fn storage_matches(set: &StatefulSet, pod: &Pod) -> bool {
    let Some(ordinal) = pod_ordinal(pod) else { return false };
    let volumes = pod_volumes(pod);
    set.spec.volume_claim_templates.iter().all(|claim| {
        // Go indexes the volumes by name in a map: the last one of a name wins.
        let volume = volumes.iter().rev().find(|v| Some(&v.name) == claim.metadata.name.as_ref());
        volume
            .and_then(|v| v.persistent_volume_claim.as_ref())
            .is_some_and(|source| source.claim_name == claim_name(set, claim, i64::from(ordinal)))
    })
}

/// `getPersistentVolumeClaims`: for each claim template (in template order), its name and the
/// claim the pod of `ordinal` uses: named for the pod, in the set's namespace, labelled with the
/// template's labels plus the selector's `matchLabels`.
pub fn persistent_volume_claims(set: &StatefulSet, ordinal: i64) -> Vec<(String, PersistentVolumeClaim)> {
    let selector_labels = set.spec.selector.as_ref().and_then(|s| s.match_labels.clone());
    set.spec
        .volume_claim_templates
        .iter()
        .map(|template| {
            let mut claim = template.clone();
            claim.metadata.name = Some(claim_name(set, template, ordinal));
            claim.metadata.namespace = set.metadata.namespace.clone();
            claim.metadata.labels = match claim.metadata.labels.take() {
                Some(mut labels) => {
                    labels.extend(selector_labels.clone().unwrap_or_default());
                    Some(labels)
                }
                None => selector_labels.clone(),
            };
            (template.metadata.name.clone().unwrap_or_default(), claim)
        })
        .collect()
}

/// `updateStorage`: one volume per claim template pointing at the pod's claim, then the pod's
/// other volumes (a pod volume named like a claim template is replaced).
pub fn update_storage(set: &StatefulSet, pod: &mut Pod) {
    let Some(ordinal) = pod_ordinal(pod) else { return };
    let claims = persistent_volume_claims(set, i64::from(ordinal));
    let mut volumes: Vec<Volume> = claims
        .iter()
        .map(|(name, claim)| Volume {
            name: name.clone(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim.metadata.name.clone().unwrap_or_default(),
                read_only: None,
            }),
            ..Default::default()
        })
        .collect();
    // Go builds a map of the templates: a duplicated template name gives one volume.
    let mut seen = std::collections::BTreeSet::new();
    volumes.retain(|v| seen.insert(v.name.clone()));
    let spec = pod.spec.get_or_insert_with(Default::default);
    for v in spec.volumes.take().unwrap_or_default() {
        if !claims.iter().any(|(name, _)| *name == v.name) {
            volumes.push(v);
        }
    }
    spec.volumes = (!volumes.is_empty()).then_some(volumes);
}

/// `updateIdentity`: the name `<set>-<ordinal>`, the set's namespace, the pod-name label and,
/// with gate `PodIndexLabel`, the pod-index label.
pub fn update_identity(set: &StatefulSet, pod: &mut Pod, pod_index_label: bool) {
    let Some(ordinal) = pod_ordinal(pod) else { return };
    let name = pod_name(set, i64::from(ordinal));
    pod.metadata.name = Some(name.clone());
    pod.metadata.namespace = set.metadata.namespace.clone();
    let labels = pod.metadata.labels.get_or_insert_with(Default::default);
    labels.insert(POD_NAME_LABEL.into(), name);
    if pod_index_label {
        labels.insert(POD_INDEX_LABEL.into(), ordinal.to_string());
    }
}

/// `initIdentity`: [`update_identity`], and at creation only `hostname` = the pod name and
/// `subdomain` = `serviceName`.
pub fn init_identity(set: &StatefulSet, pod: &mut Pod, pod_index_label: bool) {
    update_identity(set, pod, pod_index_label);
    let name = pod.metadata.name.clone();
    let spec = pod.spec.get_or_insert_with(Default::default);
    spec.hostname = name.filter(|n| !n.is_empty());
    spec.subdomain = Some(set.spec.service_name.clone()).filter(|s| !s.is_empty());
}

/// The controller reference to the set (`metav1.NewControllerRef`).
pub fn controller_ref(set: &StatefulSet) -> OwnerReference {
    OwnerReference {
        api_version: API_VERSION.into(),
        kind: KIND.into(),
        name: set_name(set).to_string(),
        uid: set.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// `getPodsPrefix`: `<set>-`, or the bare name when that is too long for a pod name.
fn generate_name(set: &StatefulSet) -> String {
    let name = set_name(set);
    if name.len() < 253 { format!("{name}-") } else { name.to_string() }
}

fn non_empty(map: Option<&BTreeMap<String, String>>) -> Option<BTreeMap<String, String>> {
    map.filter(|m| !m.is_empty()).cloned()
}

/// `newStatefulSetPod` from `template` (the template of the revision the pod is created at)
/// followed by `setPodRevision`: `controller.GetPodFromTemplate` (template labels, annotations,
/// finalizers and spec, `generateName` `<set>-`, the controller reference), then the identity
/// ([`init_identity`]) and storage ([`update_storage`]) of `ordinal`, and the revision label.
pub fn new_pod(
    set: &StatefulSet,
    template: &PodTemplateSpec,
    ordinal: i64,
    revision: &str,
    pod_index_label: bool,
) -> Pod {
    let meta = template.metadata.as_ref();
    let mut pod = Pod {
        metadata: ObjectMeta {
            name: Some(pod_name(set, ordinal)),
            generate_name: Some(generate_name(set)),
            labels: non_empty(meta.and_then(|m| m.labels.as_ref())),
            annotations: non_empty(meta.and_then(|m| m.annotations.as_ref())),
            finalizers: meta.and_then(|m| m.finalizers.clone()).filter(|f| !f.is_empty()),
            owner_references: Some(vec![controller_ref(set)]),
            ..Default::default()
        },
        spec: Some(template.spec.clone().unwrap_or_default()),
        status: None,
    };
    init_identity(set, &mut pod, pod_index_label);
    update_storage(set, &mut pod);
    pod.metadata.labels.get_or_insert_with(Default::default).insert(REVISION_LABEL.into(), revision.to_string());
    pod
}

/// `getPodRevision`: the pod's `controller-revision-hash` label ("" when none).
pub fn pod_revision(pod: &Pod) -> &str {
    pods::label(pod, REVISION_LABEL).unwrap_or("")
}

/// The lifecycle state a new pod is created in (`processReplica`): `PreparingNormal` when a
/// `preNormal` hook is configured and the pod does not already carry all of it, else `Normal`.
pub fn creation_lifecycle_state(set: &StatefulSet, pod: &Pod) -> &'static str {
    let hook = set.spec.lifecycle.as_ref().and_then(|l| l.pre_normal.as_ref());
    match hook {
        Some(h) if !lifecycle::is_all_hooked(Some(h), pod) => lifecycle::PREPARING_NORMAL,
        _ => lifecycle::NORMAL,
    }
}

#[cfg(test)]
mod tests;
