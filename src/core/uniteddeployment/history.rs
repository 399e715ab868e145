//! Which revision a UnitedDeployment round writes and which it calls current: kruise's
//! `constructUnitedDeploymentRevisions` and `controlledHistories` (`revision.go`, v1.9.0) on the
//! revisions of its namespace as a cache holds them, without the writes (the controller sends
//! them, `kruise plan` shows them).
//!
//! - The revisions considered are those the UnitedDeployment controls that match its selector
//!   (kruise lists by the selector): a CloneSet template's revisions carry no label of it, so for
//!   those none is ever considered — each round makes the template's revision again (an equal one
//!   of that name already there is used: kruise's create answers AlreadyExists and it compares the
//!   data), numbered 1, and the current revision is always the update revision.
//! - History beyond `revisionHistoryLimit` (default 10) goes first, oldest first, except the
//!   status's current and update revisions; as kruise's `cleanExpiredRevision`, the revisions
//!   considered afterwards are the newest `limit` even when a live one older than them was kept.
//! - The newest considered revision equal to the template's is used; an older equal one is
//!   renumbered newest; otherwise the template's revision is made, its name counting the collision
//!   count up while a revision of that name holds other data.

use k8s_openapi::api::apps::v1::ControllerRevision;

use super::revision::new_revision;
use super::subsets::owned_by;
use crate::apis::uniteddeployment::UnitedDeployment;
use crate::compat::selector::Selector;
use crate::core::history;

/// kruise `controlledHistories` over the revisions of the namespace: those `ud` controls that its
/// selector matches (an invalid selector, which validation refuses, matches any), oldest first.
pub fn controlled<'a>(
    ud: &UnitedDeployment,
    in_namespace: impl IntoIterator<Item = &'a ControllerRevision>,
) -> Vec<ControllerRevision> {
    let uid = ud.metadata.uid.as_deref().unwrap_or("");
    let selector = Selector::from_validated(ud.spec.selector.as_ref()).ok();
    let no_labels = Default::default();
    let mut out: Vec<ControllerRevision> = in_namespace
        .into_iter()
        .filter(|r| {
            let labels = r.metadata.labels.as_ref().unwrap_or(&no_labels);
            owned_by(&r.metadata, uid) && selector.as_ref().is_none_or(|s| s.matches(labels))
        })
        .cloned()
        .collect();
    history::sort_revisions(&mut out);
    out
}

/// The default `revisionHistoryLimit`.
pub const DEFAULT_HISTORY_LIMIT: i32 = 10;

/// kruise `cleanExpiredRevision` over the `controlled` revisions (oldest first): the revisions to
/// delete, and those the round considers afterwards.
pub fn expire(
    ud: &UnitedDeployment,
    controlled: Vec<ControllerRevision>,
) -> (Vec<ControllerRevision>, Vec<ControllerRevision>) {
    let limit = ud.spec.revision_history_limit.unwrap_or(DEFAULT_HISTORY_LIMIT);
    let exceed = i64::try_from(controlled.len()).unwrap_or(i64::MAX).saturating_sub(i64::from(limit));
    if exceed <= 0 {
        return (Vec::new(), controlled);
    }
    let status = ud.status.clone().unwrap_or_default();
    let updated = status.update_status.as_ref().map(|u| u.updated_revision.as_str());
    let live = |name: &str| name == status.current_revision || Some(name) == updated;
    // A negative limit (validation refuses it) expires everything but the live revisions.
    let exceed = usize::try_from(exceed).unwrap_or(usize::MAX).min(controlled.len());
    let expired =
        controlled[..exceed].iter().filter(|r| !live(r.metadata.name.as_deref().unwrap_or(""))).cloned().collect();
    (expired, controlled[exceed..].to_vec())
}

/// What the round does about the update revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// The newest considered revision is the template's: used as it is.
    Newest(String),
    /// An older considered revision is the template's: renumbered `revision` (kruise updates
    /// its `.revision`).
    Renumber { name: String, revision: i64 },
    /// None is: the template's revision numbered `revision` is made (see [`to_create`]).
    Create { revision: i64 },
}

/// kruise `constructUnitedDeploymentRevisions`' choice over the `controlled` revisions (oldest
/// first) for a status `collision_count`.
pub fn step(ud: &UnitedDeployment, controlled: &[ControllerRevision], collision_count: i32) -> Step {
    let next = history::next_revision(controlled);
    let template = new_revision(ud, next, collision_count);
    let equal = history::find_equal_revisions(controlled, &template.revision);
    match equal.last() {
        Some(&i) if i + 1 == controlled.len() => Step::Newest(controlled[i].metadata.name.clone().unwrap_or_default()),
        Some(&i) => Step::Renumber { name: controlled[i].metadata.name.clone().unwrap_or_default(), revision: next },
        None => Step::Create { revision: next },
    }
}

/// The revision [`Step::Create`] makes as far as `in_namespace` (a cache, or the input of `kruise
/// plan`) tells: the template's revision numbered `revision`, its collision count raised past
/// every revision of the namespace of its name with other data; and whether one of that name with
/// equal data is there already (then it is used, nothing is written).
pub fn to_create<'a>(
    ud: &UnitedDeployment,
    revision: i64,
    collision_count: i32,
    in_namespace: impl IntoIterator<Item = &'a ControllerRevision> + Clone,
) -> (ControllerRevision, i32, bool) {
    let mut collision = collision_count;
    loop {
        let candidate = new_revision(ud, revision, collision).revision;
        let name = candidate.metadata.name.as_deref();
        let same_name = in_namespace.clone().into_iter().find(|r| r.metadata.name.as_deref() == name);
        match same_name {
            Some(r) if history::data_bytes(r) != history::data_bytes(&candidate) => {
                collision = collision.wrapping_add(1);
            }
            Some(_) => return (candidate, collision, true),
            None => return (candidate, collision, false),
        }
    }
}

/// The current revision kruise names: the status's when it is among the considered revisions,
/// else the update revision.
pub fn current(controlled: &[ControllerRevision], status_current: &str, update: &str) -> String {
    controlled
        .iter()
        .filter_map(|r| r.metadata.name.as_deref())
        .find(|n| *n == status_current)
        .unwrap_or(update)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ud(template: serde_json::Value) -> UnitedDeployment {
        let mut u = UnitedDeployment::new(
            "web",
            serde_json::from_value(json!({"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                "template": template, "topology": {"subsets": [{"name": "a"}]}}))
            .unwrap(),
        );
        u.metadata.namespace = Some("ns".into());
        u.metadata.uid = Some("ud-uid".into());
        u
    }

    fn sts(image: &str) -> serde_json::Value {
        json!({"statefulSetTemplate": {"metadata": {"labels": {"app": "web"}}, "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": image}]}}}}})
    }

    fn cloneset(image: &str) -> serde_json::Value {
        json!({"cloneSetTemplate": {"metadata": {"labels": {"app": "web"}}, "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": image}]}}}}})
    }

    #[test]
    fn a_statefulset_template_reuses_renumbers_and_creates() {
        let v1 = ud(sts("nginx:1"));
        let r1 = new_revision(&v1, 1, 0).revision;
        let v2 = ud(sts("nginx:2"));
        let r2 = new_revision(&v2, 2, 0).revision;
        let all = [r1.clone(), r2.clone()];
        let listed = controlled(&v1, &all);
        assert_eq!(listed.len(), 2, "labelled with the template's labels, so the selector matches");
        // Back at v1: the older equal revision is renumbered 3.
        assert_eq!(step(&v1, &listed, 0), Step::Renumber { name: r1.metadata.name.clone().unwrap(), revision: 3 });
        assert_eq!(step(&v2, &listed, 0), Step::Newest(r2.metadata.name.clone().unwrap()));
        let v3 = ud(sts("nginx:3"));
        assert_eq!(step(&v3, &listed, 0), Step::Create { revision: 3 });
        let (made, collision, exists) = to_create(&v3, 3, 0, &all);
        assert_eq!((made.revision, collision, exists), (3, 0, false));
        // The status's current revision when it is considered, else the update revision.
        let (n1, n2) = (r1.metadata.name.clone().unwrap(), r2.metadata.name.clone().unwrap());
        assert_eq!(current(&listed, &n1, &n2), n1);
        assert_eq!(current(&listed, "gone", &n2), n2);
    }

    #[test]
    fn a_cloneset_templates_revisions_are_never_considered() {
        let v1 = ud(cloneset("nginx:1"));
        let r1 = new_revision(&v1, 1, 0).revision;
        assert!(controlled(&v1, [&r1]).is_empty(), "no label of the selector on it");
        assert_eq!(step(&v1, &[], 0), Step::Create { revision: 1 });
        // The equal revision of that name is there: used, nothing written.
        let (made, collision, exists) = to_create(&v1, 1, 0, [&r1]);
        assert_eq!((made.metadata.name, collision, exists), (r1.metadata.name.clone(), 0, true));
        // The current revision is then always the update revision.
        let name = r1.metadata.name.clone().unwrap();
        assert_eq!(current(&[], &name, "other"), "other");
    }

    #[test]
    fn a_name_taken_by_other_data_counts_a_collision() {
        let v1 = ud(cloneset("nginx:1"));
        let mut squatter = new_revision(&v1, 1, 0).revision;
        squatter.data = Some(k8s_openapi::apimachinery::pkg::runtime::RawExtension(json!({"other": true})));
        let (made, collision, exists) = to_create(&v1, 1, 0, [&squatter]);
        assert_eq!((collision, exists), (1, false));
        assert_ne!(made.metadata.name, squatter.metadata.name);
        assert_eq!(made.metadata.name, new_revision(&v1, 1, 1).revision.metadata.name);
    }

    /// kruise's `cleanExpiredRevision`: 4 revisions over a limit of 2 expire the 2 oldest but the
    /// live ones (the current one here), and the newest 2 are considered, the kept one not.
    #[test]
    fn history_beyond_the_limit_expires_but_the_live_revisions() {
        let mut v = ud(sts("nginx:1"));
        v.spec.revision_history_limit = Some(2);
        let revisions: Vec<ControllerRevision> =
            (1..=4).map(|i| new_revision(&ud(sts(&format!("nginx:{i}"))), i, 0).revision).collect();
        let names: Vec<String> = revisions.iter().map(|r| r.metadata.name.clone().unwrap()).collect();
        v.status = Some(serde_json::from_value(json!({"currentRevision": names[0]})).unwrap());
        let (expired, kept) = expire(&v, revisions.clone());
        let name_of =
            |rs: &[ControllerRevision]| rs.iter().map(|r| r.metadata.name.clone().unwrap()).collect::<Vec<_>>();
        assert_eq!(name_of(&expired), [names[1].clone()]);
        assert_eq!(name_of(&kept), [names[2].clone(), names[3].clone()]);
        // The update revision of the status is live too; within the limit nothing expires.
        v.status = Some(
            serde_json::from_value(json!({"currentRevision": names[0], "updateStatus": {"updatedRevision": names[1]}}))
                .unwrap(),
        );
        assert!(expire(&v, revisions.clone()).0.is_empty());
        v.spec.revision_history_limit = None;
        assert_eq!(expire(&v, revisions.clone()), (Vec::new(), revisions.clone()));
        // A negative limit expires every revision but the live ones.
        v.spec.revision_history_limit = Some(-1);
        v.status = None;
        let (expired, kept) = expire(&v, revisions.clone());
        assert_eq!((expired.len(), kept.len()), (4, 0));
    }

    #[test]
    fn revisions_of_others_are_not_considered() {
        let v1 = ud(sts("nginx:1"));
        let mut other = new_revision(&v1, 1, 0).revision;
        other.metadata.owner_references.as_mut().unwrap()[0].uid = "someone-else".into();
        assert!(controlled(&v1, [&other]).is_empty());
    }
}
