//! A SidecarSet's ControllerRevisions (spec §4.12 item 2; kruise `sidecarcontrol/history_control.go`
//! `NewRevision`/`getPatch`, `sidecarset_processor.go` `registerLatestRevision`,
//! `updateCustomVersionLabel`, `truncateHistory`, `filterActiveRevisions`).
//!
//! Revisions live in the manager namespace, are named `<set>-<hash>` and hold
//! `{"spec":{"$patch":"replace","containers":…,"imagePullSecrets":…,"initContainers":…,
//! "patchPodMetadata":…,"volumes":…}}` exactly as Go writes it: each field as `encoding/json` writes
//! the kruise struct (so `omitempty` and always-written structs match), then the whole re-marshalled
//! from a `map[string]interface{}` (keys sorted, absent fields `null`). Pods injected by a Go
//! kruise name these revisions in their hash annotation (`controllerRevision`) and the webhook
//! reads them back for `injectionStrategy.revision` (`core::sidecar::matching::history_version`),
//! so names and bytes must be kruise's.

use std::collections::BTreeSet;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use serde_json::{Map, Value};

use crate::apis::SidecarSet;
use crate::compat::gojson;
use crate::compat::gotypes::{LOCAL_OBJECT_REFERENCE, VOLUME};
use crate::core::history::{self, NewRevision, Parent};
use crate::core::rollout::actions::{Pin, Write, object_patch};
use crate::core::sidecar::{CUSTOM_VERSION_LABEL, SIDECARSET_NAME_LABEL};

/// Default `revisionHistoryLimit`.
pub const DEFAULT_HISTORY_LIMIT: i32 = 10;

fn go_list<T: serde::Serialize>(items: &[T], each: impl Fn(&T, &mut String)) -> Value {
    if items.is_empty() {
        return Value::Null;
    }
    let mut out = String::from("[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        each(item, &mut out);
    }
    out.push(']');
    serde_json::from_str(&out).unwrap_or(Value::Null)
}

fn go_struct_of<T: serde::Serialize>(fields: &[crate::compat::gojson::Field], v: &T, out: &mut String) {
    gojson::go_struct(fields, &serde_json::to_value(v).unwrap_or(Value::Null), out);
}

/// The revision data bytes (`getPatch`).
pub fn revision_data(set: &SidecarSet) -> String {
    let spec = &set.spec;
    let mut s = Map::new();
    s.insert("$patch".into(), Value::String("replace".into()));
    s.insert("volumes".into(), go_list(&spec.volumes, |v, out| go_struct_of(VOLUME, v, out)));
    s.insert("containers".into(), go_list(&spec.containers, gojson::sidecar_container));
    s.insert("initContainers".into(), go_list(&spec.init_containers, gojson::sidecar_container));
    s.insert(
        "imagePullSecrets".into(),
        go_list(&spec.image_pull_secrets, |v, out| go_struct_of(LOCAL_OBJECT_REFERENCE, v, out)),
    );
    // kruise `SidecarSetPatchPodMetadata`: both fields `omitempty`, as our type serialises.
    s.insert(
        "patchPodMetadata".into(),
        if spec.patch_pod_metadata.is_empty() {
            Value::Null
        } else {
            serde_json::to_value(&spec.patch_pod_metadata).unwrap_or(Value::Null)
        },
    );
    let mut root = Map::new();
    root.insert("spec".into(), Value::Object(s));
    gojson::to_string(&Value::Object(root))
}

/// `NewRevision`: labels = the set's labels + `kruise.io/sidecarset-name` (+ the hash label);
/// annotations = the set's; owned by the set; in the manager namespace.
pub fn new_revision(set: &SidecarSet, namespace: &str, number: i64, collision_count: i32) -> NewRevision {
    let name = set.metadata.name.as_deref().unwrap_or("");
    let owner = OwnerReference {
        api_version: "apps.kruise.io/v1alpha1".into(),
        kind: "SidecarSet".into(),
        name: name.to_string(),
        uid: set.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    let parent = Parent { name, namespace: Some(namespace), owner };
    let labels = set.metadata.labels.clone().unwrap_or_default();
    let mut new = history::new_controller_revision(&parent, &labels, revision_data(set), number, Some(collision_count));
    let meta = &mut new.revision.metadata;
    meta.labels.get_or_insert_with(Default::default).insert(SIDECARSET_NAME_LABEL.into(), name.to_string());
    meta.annotations = Some(set.metadata.annotations.clone().unwrap_or_default());
    new
}

/// What registering the latest revision decided.
#[derive(Debug, Default)]
pub struct Registered {
    /// The latest revision's name.
    pub latest: String,
    /// `status.collisionCount` after this round.
    pub collision_count: i32,
    /// Writes in the manager namespace: create or bump, custom-version label, truncation.
    pub writes: Vec<Write>,
    /// Why the history could not be cut to the limit (kruise logs this error).
    pub waiting: Option<String>,
}

fn sort_refs(revisions: &mut [&ControllerRevision]) {
    revisions.sort_by(|a, b| {
        a.revision
            .cmp(&b.revision)
            .then_with(|| {
                let (ta, tb) = (&a.metadata.creation_timestamp, &b.metadata.creation_timestamp);
                ta.as_ref().map(|t| t.0).cmp(&tb.as_ref().map(|t| t.0))
            })
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
}

fn name_of(r: &ControllerRevision) -> &str {
    r.metadata.name.as_deref().unwrap_or("")
}

fn custom_version(r: &ControllerRevision) -> Option<&str> {
    r.metadata.labels.as_ref()?.get(CUSTOM_VERSION_LABEL).map(String::as_str)
}

/// `registerLatestRevision` and `truncateHistory`. `revisions` are the set's revisions (labelled
/// with its name); `pod_revisions` the `controllerRevision` names the matched pods record.
pub fn register(
    set: &SidecarSet,
    revisions: &[&ControllerRevision],
    namespace: &str,
    pod_revisions: &BTreeSet<&str>,
) -> Registered {
    let uid = set.metadata.uid.as_deref();
    // `ListControllerRevisions`: revisions another object controls are not the set's.
    let mut sorted: Vec<&ControllerRevision> = revisions
        .iter()
        .copied()
        .filter(|r| match crate::core::rollout::ownership::controller_of(&r.metadata) {
            Some(owner) => Some(owner.uid.as_str()) == uid,
            None => true,
        })
        .collect();
    sort_refs(&mut sorted);
    let mut collision_count = set.status.as_ref().and_then(|s| s.collision_count).unwrap_or(0);
    let next = sorted.last().map_or(1, |r| r.revision + 1);
    let mut candidate = new_revision(set, namespace, next, collision_count);
    let mut writes = Vec::new();

    let equal: Vec<usize> = sorted
        .iter()
        .enumerate()
        .filter(|(_, r)| history::data_bytes(r) == candidate.data)
        .map(|(i, _)| i)
        .collect();
    let last_index = sorted.len().wrapping_sub(1);
    // The kept list after this round, oldest first, as names with the object when observed.
    let mut kept: Vec<(String, Option<&ControllerRevision>)> =
        sorted.iter().map(|r| (name_of(r).to_string(), Some(*r))).collect();
    let latest_labels;
    let latest = match equal.last() {
        Some(&i) if i == last_index => {
            latest_labels = sorted[i].metadata.labels.clone();
            name_of(sorted[i]).to_string()
        }
        Some(&i) => {
            let old = sorted[i];
            let mut bumped = old.clone();
            bumped.revision = next;
            writes.push(Write::PatchRevision {
                name: name_of(old).to_string(),
                pin: Pin::Observed(old.metadata.resource_version.clone().unwrap_or_default()),
                patch: object_patch(old, &bumped),
            });
            let moved = kept.remove(i);
            kept.push(moved);
            latest_labels = old.metadata.labels.clone();
            name_of(old).to_string()
        }
        None => {
            // A name another revision holds with other data: step the collision count, as
            // `CreateControllerRevision` does on AlreadyExists.
            let taken = |c: &NewRevision| {
                sorted.iter().any(|r| r.metadata.name == c.revision.metadata.name && history::data_bytes(r) != c.data)
            };
            while taken(&candidate) {
                collision_count += 1;
                candidate = new_revision(set, namespace, next, collision_count);
            }
            let name = candidate.revision.metadata.name.clone().unwrap_or_default();
            latest_labels = candidate.revision.metadata.labels.clone();
            writes.push(Write::CreateRevision {
                revision: Box::new(candidate.revision),
                data: candidate.data,
                collision_count,
            });
            kept.push((name.clone(), None));
            name
        }
    };

    // `updateCustomVersionLabel` (v1alpha1: the set's label).
    let want = set.metadata.labels.as_ref().and_then(|l| l.get(CUSTOM_VERSION_LABEL));
    if let Some(want) = want.filter(|v| !v.is_empty()) {
        let have = latest_labels.as_ref().and_then(|l| l.get(CUSTOM_VERSION_LABEL));
        let observed = sorted.iter().find(|r| name_of(r) == latest);
        if have != Some(want) {
            if let Some(observed) = observed {
                let mut labelled = (*observed).clone();
                labelled.metadata.labels.get_or_insert_with(Default::default).insert(CUSTOM_VERSION_LABEL.into(), want.clone());
                writes.push(Write::PatchRevision {
                    name: latest.clone(),
                    pin: Pin::Observed(observed.metadata.resource_version.clone().unwrap_or_default()),
                    patch: object_patch(*observed, &labelled),
                });
            }
        }
    }

    let (deletes, waiting) = truncate(set, &kept, &sorted, pod_revisions);
    writes.extend(deletes);
    Registered { latest, collision_count, writes, waiting }
}

/// `truncateHistory`: beyond `revisionHistoryLimit` (default 10, at least 1), delete the oldest
/// revisions, never the newest nor one still in use (`filterActiveRevisions`).
fn truncate(
    set: &SidecarSet,
    kept: &[(String, Option<&ControllerRevision>)],
    sorted: &[&ControllerRevision],
    pod_revisions: &BTreeSet<&str>,
) -> (Vec<Write>, Option<String>) {
    let limit = set.spec.revision_history_limit.map_or(DEFAULT_HISTORY_LIMIT, |l| l.max(1));
    let limit = usize::try_from(limit).unwrap_or(1);
    if kept.len() <= limit {
        return (Vec::new(), None);
    }
    let mut active: BTreeSet<String> = pod_revisions.iter().map(|s| s.to_string()).collect();
    if let Some(pinned) = &set.spec.injection_strategy.revision {
        if let Some(name) = &pinned.revision_name {
            active.insert(name.clone());
        }
        if let Some(version) = &pinned.custom_version {
            // The newest revision carrying the version (sorted is oldest first).
            if let Some(r) = sorted.iter().rev().find(|r| custom_version(r) == Some(version.as_str())) {
                active.insert(name_of(r).to_string());
            }
        }
    }
    let mut excess = kept.len() - limit;
    let mut writes = Vec::new();
    for (name, observed) in &kept[..kept.len() - 1] {
        if excess == 0 {
            break;
        }
        if active.contains(name) {
            continue;
        }
        let Some(r) = observed else { continue };
        writes.push(Write::DeleteRevision {
            name: name.clone(),
            uid: r.metadata.uid.clone(),
            resource_version: r.metadata.resource_version.clone(),
        });
        excess -= 1;
    }
    let waiting = (excess > 0).then(|| {
        format!(
            "failed to limit the number of stored revisions, limited: {limit}, actual: {}, name: {}",
            limit + excess,
            set.metadata.name.as_deref().unwrap_or("")
        )
    });
    (writes, waiting)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::rollout::sidecarset::testkit::*;
    use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
    use serde_json::json;

    fn stored(set: &SidecarSet, number: i64, rv: &str) -> ControllerRevision {
        let mut r = new_revision(set, "kruise-system", number, 0).revision;
        r.metadata.uid = Some(format!("uid-{number}"));
        r.metadata.resource_version = Some(rv.into());
        r
    }

    fn with_image(image: &str) -> SidecarSet {
        sidecar_set(json!({"containers": [{"name": "cold-sidecar", "image": image}]}))
    }

    /// The data is kruise's bytes: every field, `null` when absent, keys sorted, Go's container
    /// encoding (`resources: {}` always written, defaults kept as set).
    #[test]
    fn data_is_gos_bytes() {
        let set = sidecar_set(json!({
            "containers": [{"name": "c", "image": "a:1"}],
            "imagePullSecrets": [{"name": "s"}],
            "volumes": [{"name": "v", "emptyDir": {}}],
        }));
        let data = revision_data(&set);
        assert!(data.starts_with(r#"{"spec":{"$patch":"replace","containers":[{"image":"a:1","#), "{data}");
        assert!(data.contains(r#""imagePullSecrets":[{"name":"s"}],"initContainers":null,"patchPodMetadata":null,"volumes":[{"emptyDir":{},"name":"v"}]}}"#), "{data}");
        assert!(data.contains(r#""resources":{}"#), "{data}");
        // Re-reading the revision as the webhook does restores the same containers.
        let r = new_revision(&set, "kruise-system", 1, 0);
        let revs = vec![std::sync::Arc::new(r.revision.clone())];
        let pinned = crate::apis::sidecarset::SidecarSetInjectRevision {
            revision_name: r.revision.metadata.name.clone(),
            ..Default::default()
        };
        let back = crate::core::sidecar::matching::history_version(&set, &pinned, &revs).unwrap().unwrap();
        // (`resources: {}` comes back as an empty struct where the set had none: the same to Go.)
        assert_eq!(revision_data(&back), data);
        assert_eq!(crate::core::sidecar::hash::hashes(&back.spec), crate::core::sidecar::hash::hashes(&set.spec));
        assert_eq!(history::data_bytes(&r.revision), data, "the stored value re-encodes to the same bytes");
    }

    /// kruise `NewRevision`: name `<set>-<hash of data and collision count>`, labels, annotations,
    /// owner, namespace.
    #[test]
    fn new_revision_names_and_labels() {
        let mut set = with_image("a:1");
        set.metadata.labels = Some([(CUSTOM_VERSION_LABEL.to_string(), "v1".to_string())].into());
        let r = new_revision(&set, "kruise-system", 3, 0);
        let hash = history::hash_revision(&r.data, Some(0));
        assert_eq!(r.revision.metadata.name.as_deref(), Some(format!("test-sidecarset-{hash}").as_str()));
        assert_eq!(r.revision.metadata.namespace.as_deref(), Some("kruise-system"));
        assert_eq!(r.revision.revision, 3);
        let labels = r.revision.metadata.labels.as_ref().unwrap();
        assert_eq!(labels[SIDECARSET_NAME_LABEL], "test-sidecarset");
        assert_eq!(labels[CUSTOM_VERSION_LABEL], "v1");
        assert_eq!(labels[history::CONTROLLER_REVISION_HASH_LABEL], hash);
        assert_eq!(r.revision.metadata.annotations, set.metadata.annotations);
        let owner = &r.revision.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!((owner.kind.as_str(), owner.controller), ("SidecarSet", Some(true)));
        assert_ne!(new_revision(&set, "kruise-system", 3, 1).revision.metadata.name, r.revision.metadata.name);
    }

    /// kruise `sidecarset_processor_test.go` `TestRegisterLatestRevision`-style rows: reuse the
    /// newest, bump an older equal one, create otherwise.
    #[test]
    fn register_reuses_bumps_or_creates() {
        let v1 = with_image("a:1");
        let v2 = with_image("a:2");
        let r1 = stored(&v1, 1, "11");
        let r2 = stored(&v2, 2, "12");
        let none = BTreeSet::new();

        // Newest equal: nothing to write.
        let reg = register(&v2, &[&r1, &r2], "kruise-system", &none);
        assert_eq!(reg.latest, r2.metadata.name.clone().unwrap());
        assert!(reg.writes.is_empty(), "{:?}", reg.writes);

        // Older equal (rollback): bump its number.
        let reg = register(&v1, &[&r1, &r2], "kruise-system", &none);
        assert_eq!(reg.latest, r1.metadata.name.clone().unwrap());
        let [Write::PatchRevision { name, pin, patch }] = &reg.writes[..] else { panic!("{:?}", reg.writes) };
        assert_eq!((name, pin), (r1.metadata.name.as_ref().unwrap(), &Pin::Observed("11".into())));
        let mut v = serde_json::to_value(&r1).unwrap();
        json_patch::patch(&mut v, patch).unwrap();
        assert_eq!(v["revision"], 3);

        // New: create with the next number.
        let v3 = with_image("a:3");
        let reg = register(&v3, &[&r1, &r2], "kruise-system", &none);
        let [Write::CreateRevision { revision, data, collision_count: 0 }] = &reg.writes[..] else {
            panic!("{:?}", reg.writes)
        };
        assert_eq!(revision.revision, 3);
        assert_eq!(data, &revision_data(&v3));
        assert_eq!(reg.latest, revision.metadata.name.clone().unwrap());
    }

    /// A name taken by other data steps the collision count (`CreateControllerRevision`).
    #[test]
    fn collision_steps_the_count() {
        let v1 = with_image("a:1");
        let mut squatter = stored(&with_image("other"), 1, "5");
        squatter.metadata.name = new_revision(&v1, "kruise-system", 2, 0).revision.metadata.name;
        let reg = register(&v1, &[&squatter], "kruise-system", &BTreeSet::new());
        let [Write::CreateRevision { revision, collision_count: 1, .. }] = &reg.writes[..] else {
            panic!("{:?}", reg.writes)
        };
        assert_eq!(reg.collision_count, 1);
        assert_eq!(revision.metadata.name, new_revision(&v1, "kruise-system", 2, 1).revision.metadata.name);
    }

    /// kruise `TestTruncateHistory`-style rows: keep the limit, never the newest, never one a pod
    /// or `injectionStrategy.revision` still names.
    #[test]
    fn truncation_spares_the_newest_and_the_referenced() {
        let sets: Vec<SidecarSet> = (1..=5).map(|i| with_image(&format!("a:{i}"))).collect();
        let revs: Vec<ControllerRevision> =
            sets.iter().enumerate().map(|(i, s)| stored(s, i as i64 + 1, &format!("{i}"))).collect();
        let refs: Vec<&ControllerRevision> = revs.iter().collect();
        let name = |i: usize| revs[i].metadata.name.clone().unwrap();
        let deleted = |reg: &Registered| -> Vec<String> {
            reg.writes
                .iter()
                .filter_map(|w| match w {
                    Write::DeleteRevision { name, uid, resource_version } => {
                        assert!(uid.is_some() && resource_version.is_some());
                        Some(name.clone())
                    }
                    _ => None,
                })
                .collect()
        };
        let mut set = sets[4].clone();
        set.spec.revision_history_limit = Some(2);
        let reg = register(&set, &refs, "kruise-system", &BTreeSet::new());
        assert_eq!(deleted(&reg), vec![name(0), name(1), name(2)]);

        // A pod's revision and the pinned one survive.
        let n0 = name(0);
        let pod_revs = BTreeSet::from([n0.as_str()]);
        set.spec.injection_strategy.revision = Some(crate::apis::sidecarset::SidecarSetInjectRevision {
            revision_name: Some(name(1)),
            ..Default::default()
        });
        let reg = register(&set, &refs, "kruise-system", &pod_revs);
        assert_eq!(deleted(&reg), vec![name(2), name(3)]);
        assert!(reg.waiting.unwrap().contains("limited: 2, actual: 3"));

        // Limit 0 means 1; the newest is never deleted even when it is old data.
        set.spec.injection_strategy.revision = None;
        set.spec.revision_history_limit = Some(0);
        let reg = register(&set, &refs, "kruise-system", &BTreeSet::new());
        assert_eq!(deleted(&reg), vec![name(0), name(1), name(2), name(3)]);
        // Rolling back to revision 1 moves it last: it is kept, revision 5 is not.
        let reg = register(&sets[0].clone(), &refs, "kruise-system", &BTreeSet::new());
        assert!(deleted(&reg).is_empty(), "limit 10");
        let mut back = sets[0].clone();
        back.spec.revision_history_limit = Some(1);
        let reg = register(&back, &refs, "kruise-system", &BTreeSet::new());
        assert_eq!(deleted(&reg), vec![name(1), name(2), name(3), name(4)]);
    }

    /// The newest revision with the pinned custom version is active; the label is patched onto
    /// the latest revision when the set carries it.
    #[test]
    fn custom_version_pins_and_labels() {
        let sets: Vec<SidecarSet> = (1..=3).map(|i| with_image(&format!("a:{i}"))).collect();
        let mut revs: Vec<ControllerRevision> =
            sets.iter().enumerate().map(|(i, s)| stored(s, i as i64 + 1, &format!("{i}"))).collect();
        revs[0].metadata.labels.as_mut().unwrap().insert(CUSTOM_VERSION_LABEL.into(), "v".into());
        let refs: Vec<&ControllerRevision> = revs.iter().collect();
        let mut set = sets[2].clone();
        set.spec.revision_history_limit = Some(1);
        set.spec.injection_strategy.revision = Some(crate::apis::sidecarset::SidecarSetInjectRevision {
            custom_version: Some("v".into()),
            ..Default::default()
        });
        set.metadata.labels = Some([(CUSTOM_VERSION_LABEL.to_string(), "w".to_string())].into());
        let reg = register(&set, &refs, "kruise-system", &BTreeSet::new());
        let deleted: Vec<&str> = reg
            .writes
            .iter()
            .filter_map(|w| if let Write::DeleteRevision { name, .. } = w { Some(name.as_str()) } else { None })
            .collect();
        assert_eq!(deleted, vec![revs[1].metadata.name.as_deref().unwrap()]);
        let label = reg.writes.iter().find_map(|w| match w {
            Write::PatchRevision { name, patch, .. } => Some((name.clone(), patch.clone())),
            _ => None,
        });
        let (name, patch) = label.unwrap();
        assert_eq!(Some(name.as_str()), revs[2].metadata.name.as_deref());
        let mut v = serde_json::to_value(&revs[2]).unwrap();
        json_patch::patch(&mut v, &patch).unwrap();
        assert_eq!(v["metadata"]["labels"][CUSTOM_VERSION_LABEL], "w");
    }

    /// Revisions controlled by another object are not the set's.
    #[test]
    fn foreign_revisions_are_ignored() {
        let v1 = with_image("a:1");
        let mut foreign = stored(&v1, 7, "1");
        foreign.metadata.owner_references.as_mut().unwrap()[0].uid = "someone-else".into();
        foreign.data = Some(RawExtension(json!({"spec": {}})));
        let reg = register(&v1, &[&foreign], "kruise-system", &BTreeSet::new());
        assert!(matches!(&reg.writes[..], [Write::CreateRevision { revision, .. }] if revision.revision == 1));
    }
}
