//! Which pods, PVCs and ControllerRevisions a workload plans with (spec §5.1 item 3, §6.1; kruise's
//! `getOwnedResource` / upstream `ClaimPods` as kruise's controllers use them), for the reconcilers
//! and `kruise plan` alike, borrowing the observed objects (nothing is cloned per round):
//! - pods whose controller reference is the workload; with `adopt_orphans` (StatefulSets adopt,
//!   CloneSets never do) also the pods without a controller that match its selector, listed
//!   apart so the planner can claim them;
//! - PVCs with an owner reference to the workload (any, not only the controller);
//! - revisions matching its selector that it or nobody controls.
//!
//! An owner reference names the workload by uid when both have one, else by kind and name (a
//! manifest without uids); any version of the workload's API group matches.

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::compat::selector::Selector;

/// The workload whose objects are sorted out.
#[derive(Clone, Copy, Debug)]
pub struct Owner<'a> {
    /// Its API group (`apps.kruise.io`).
    pub group: &'a str,
    /// Its kind (`CloneSet`).
    pub kind: &'a str,
    /// Its metadata (namespace, name, uid).
    pub meta: &'a ObjectMeta,
    /// Its selector (`None` when it cannot be used: nothing matches it).
    pub selector: Option<&'a Selector>,
    /// Whether pods without a controller that match the selector are adopted.
    pub adopt_orphans: bool,
}

/// What a workload plans with.
#[derive(Debug, Default)]
pub struct Owned<'a> {
    /// Pods whose controller reference is the workload.
    pub pods: Vec<&'a Pod>,
    /// Pods without a controller that match the selector (only with `adopt_orphans`).
    pub orphans: Vec<&'a Pod>,
    /// PVCs with an owner reference to the workload.
    pub pvcs: Vec<&'a PersistentVolumeClaim>,
    /// Revisions matching its selector that it or nobody controls.
    pub revisions: Vec<&'a ControllerRevision>,
}

fn namespace(meta: &ObjectMeta) -> &str {
    meta.namespace.as_deref().unwrap_or("default")
}

impl Owner<'_> {
    /// Whether an owner reference points at the workload.
    pub fn is_ref(&self, r: &OwnerReference) -> bool {
        if r.kind != self.kind || r.api_version.split_once('/').is_none_or(|(g, _)| g != self.group) {
            return false;
        }
        match (self.meta.uid.as_deref(), r.uid.as_str()) {
            (Some(uid), o) if !uid.is_empty() && !o.is_empty() => uid == o,
            _ => Some(r.name.as_str()) == self.meta.name.as_deref(),
        }
    }

    /// Whether the object has an owner reference to the workload.
    pub fn owns(&self, meta: &ObjectMeta) -> bool {
        meta.owner_references.iter().flatten().any(|r| self.is_ref(r))
    }

    /// Whether the object's controller reference is the workload.
    pub fn controls(&self, meta: &ObjectMeta) -> bool {
        controller_of(meta).is_some_and(|r| self.is_ref(r))
    }

    fn same_namespace(&self, meta: &ObjectMeta) -> bool {
        namespace(meta) == namespace(self.meta)
    }

    fn selects(&self, meta: &ObjectMeta) -> bool {
        let empty = Default::default();
        self.selector.is_some_and(|s| s.matches(meta.labels.as_ref().unwrap_or(&empty)))
    }

    /// Sorts out what the workload plans with from candidates (e.g. what an index files under its
    /// uid and namespace; objects of other namespaces are ignored).
    pub fn sort<'a>(
        &self,
        pods: impl IntoIterator<Item = &'a Pod>,
        pvcs: impl IntoIterator<Item = &'a PersistentVolumeClaim>,
        revisions: impl IntoIterator<Item = &'a ControllerRevision>,
    ) -> Owned<'a> {
        let mut out = Owned::default();
        for p in pods.into_iter().filter(|p| self.same_namespace(&p.metadata)) {
            if self.controls(&p.metadata) {
                out.pods.push(p);
            } else if self.adopt_orphans
                && controller_of(&p.metadata).is_none()
                && p.metadata.deletion_timestamp.is_none()
                && self.selects(&p.metadata)
            {
                out.orphans.push(p);
            }
        }
        out.pvcs = pvcs.into_iter().filter(|p| self.same_namespace(&p.metadata) && self.owns(&p.metadata)).collect();
        out.revisions = revisions
            .into_iter()
            .filter(|r| self.same_namespace(&r.metadata) && self.selects(&r.metadata))
            .filter(|r| controller_of(&r.metadata).is_none() || self.controls(&r.metadata))
            .collect();
        out
    }

    /// Pods of its namespace matching its selector that it does not own (`kruise plan` counts them).
    pub fn not_owned<'a>(&self, pods: impl IntoIterator<Item = &'a Pod>) -> usize {
        pods.into_iter()
            .filter(|p| self.same_namespace(&p.metadata) && !self.owns(&p.metadata) && self.selects(&p.metadata))
            .count()
    }
}

/// The controller reference of an object.
pub fn controller_of(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references.iter().flatten().find(|r| r.controller == Some(true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(name: &str, labels: serde_json::Value, owners: serde_json::Value) -> serde_json::Value {
        json!({"name": name, "namespace": "ns", "labels": labels, "ownerReferences": owners})
    }

    fn owner_ref(kind: &str, name: &str, uid: &str, controller: bool) -> serde_json::Value {
        json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": kind, "name": name, "uid": uid, "controller": controller})
    }

    #[test]
    fn sorts_pods_pvcs_and_revisions_and_adopts_only_when_asked() {
        let set_meta: ObjectMeta =
            serde_json::from_value(json!({"name": "web", "namespace": "ns", "uid": "u1"})).unwrap();
        let selector =
            Selector::from_validated(Some(&serde_json::from_value(json!({"matchLabels": {"app": "web"}})).unwrap()))
                .unwrap();
        let web = json!({"app": "web"});
        let pod = |m: serde_json::Value| -> Pod { serde_json::from_value(json!({"metadata": m})).unwrap() };
        let pods = [
            pod(meta("owned", web.clone(), json!([owner_ref("CloneSet", "web", "u1", true)]))),
            pod(meta("other-uid", web.clone(), json!([owner_ref("CloneSet", "web", "u2", true)]))),
            pod(meta("orphan", web.clone(), json!([]))),
            pod(meta("orphan-other-labels", json!({"app": "db"}), json!([]))),
            pod(meta("not-controller", web.clone(), json!([owner_ref("CloneSet", "web", "u1", false)]))),
        ];
        let pvc: PersistentVolumeClaim = serde_json::from_value(
            json!({"metadata": meta("data-web-0", json!({}), json!([owner_ref("CloneSet", "web", "u1", false)]))}),
        )
        .unwrap();
        let revs: Vec<ControllerRevision> = [
            meta("web-1", web.clone(), json!([owner_ref("CloneSet", "web", "u1", true)])),
            meta("web-2", web.clone(), json!([])),
            meta("theirs", web.clone(), json!([owner_ref("CloneSet", "x", "u9", true)])),
            meta("db-1", json!({"app": "db"}), json!([])),
        ]
        .into_iter()
        .map(|m| serde_json::from_value(json!({"metadata": m, "revision": 1})).unwrap())
        .collect();
        let names = |v: &[&Pod]| v.iter().map(|p| p.metadata.name.clone().unwrap()).collect::<Vec<_>>();
        let mut owner = Owner {
            group: "apps.kruise.io",
            kind: "CloneSet",
            meta: &set_meta,
            selector: Some(&selector),
            adopt_orphans: false,
        };
        let o = owner.sort(&pods, [&pvc], &revs);
        assert_eq!(names(&o.pods), ["owned"]);
        assert!(o.orphans.is_empty(), "CloneSets never adopt");
        assert_eq!(o.pvcs.len(), 1);
        let rev_names: Vec<_> = o.revisions.iter().map(|r| r.metadata.name.clone().unwrap()).collect();
        assert_eq!(rev_names, ["web-1", "web-2"]);
        assert_eq!(owner.not_owned(&pods), 2, "the other uid's pod and the orphan");
        owner.adopt_orphans = true;
        assert_eq!(names(&owner.sort(&pods, [], []).orphans), ["orphan", "not-controller"], "no controller: an orphan");
        owner.kind = "StatefulSet";
        assert!(owner.sort(&pods, [&pvc], []).pods.is_empty(), "another kind is not the owner");
    }
}
