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

    let equal: Vec<usize> =
        sorted.iter().enumerate().filter(|(_, r)| history::data_bytes(r) == candidate.data).map(|(i, _)| i).collect();
    let last_index = sorted.len().wrapping_sub(1);
    // The kept list after this round, oldest first, as names with the object when observed.
    let mut kept: Vec<(String, Option<&ControllerRevision>)> =
        sorted.iter().map(|r| (name_of(r).to_string(), Some(*r))).collect();
    // `updateCustomVersionLabel` (v1alpha1: the set's label): an existing latest revision gets
    // the set's custom version, in the same patch as a bump.
    let want = set.metadata.labels.as_ref().and_then(|l| l.get(CUSTOM_VERSION_LABEL)).filter(|v| !v.is_empty());
    let label = |r: &mut ControllerRevision| {
        if let Some(want) = want {
            r.metadata.labels.get_or_insert_with(Default::default).insert(CUSTOM_VERSION_LABEL.into(), want.clone());
        }
    };
    let latest = match equal.last() {
        Some(&i) if i == last_index => {
            let old = sorted[i];
            let mut labelled = old.clone();
            label(&mut labelled);
            if labelled.metadata.labels != old.metadata.labels {
                writes.push(Write::PatchRevision {
                    name: name_of(old).to_string(),
                    pin: Pin::Observed(old.metadata.resource_version.clone().unwrap_or_default()),
                    patch: object_patch(old, &labelled),
                });
            }
            name_of(old).to_string()
        }
        Some(&i) => {
            let old = sorted[i];
            let mut bumped = old.clone();
            bumped.revision = next;
            label(&mut bumped);
            writes.push(Write::PatchRevision {
                name: name_of(old).to_string(),
                pin: Pin::Observed(old.metadata.resource_version.clone().unwrap_or_default()),
                patch: object_patch(old, &bumped),
            });
            let moved = kept.remove(i);
            kept.push(moved);
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
            writes.push(Write::CreateRevision {
                revision: Box::new(candidate.revision),
                data: candidate.data,
                collision_count,
            });
            kept.push((name.clone(), None));
            name
        }
    };

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

    /// Golden bytes from Go: kruise v1.8.4's `getPatch` (its `SidecarSetSpec`/`SidecarContainer`
    /// tags, `encoding/json` of the object, decoded to a map, five fields copied, marshalled
    /// again) run with Go and k8s.io/api on this spec as our webhook stores it.
    #[test]
    fn data_matches_go_golden() {
        let set = sidecar_set(json!({
            "containers": [
                {"name": "log-agent", "image": "agent:1<&>", "command": ["a", "b"], "args": ["--x=1"],
                 "env": [{"name": "E", "value": "v"}, {"name": "F", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                 "ports": [{"containerPort": 8080, "name": "http"}],
                 "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}},
                 "volumeMounts": [{"name": "logs", "mountPath": "/var/log", "readOnly": true}],
                 "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 5},
                 "securityContext": {"runAsUser": 1000, "privileged": false},
                 "podInjectPolicy": "AfterAppContainer",
                 "shareVolumePolicy": {"type": "enabled"},
                 "transferEnv": [{"sourceContainerName": "app", "envName": "TZ"}]},
                {"name": "hot", "image": "h:1", "upgradeStrategy": {"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "empty:1"}}
            ],
            "initContainers": [{"name": "init", "image": "i:1", "command": ["sh"]}],
            "volumes": [{"name": "logs", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "c", "defaultMode": 420}},
                        {"name": "hp", "hostPath": {"path": "/x", "type": "Directory"}}],
            "imagePullSecrets": [{"name": "reg"}],
            "patchPodMetadata": [{"annotations": {"a/b": "{\"x\":1}"}, "patchPolicy": "MergePatchJson"}],
        }));
        let go = r#"{"spec":{"$patch":"replace","containers":[{"args":["--x=1"],"command":["a","b"],"env":[{"name":"E","value":"v"},{"name":"F","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.name"}}}],"image":"agent:1\u003c\u0026\u003e","imagePullPolicy":"IfNotPresent","name":"log-agent","podInjectPolicy":"AfterAppContainer","ports":[{"containerPort":8080,"name":"http","protocol":"TCP"}],"readinessProbe":{"failureThreshold":3,"httpGet":{"path":"/ready","port":8080,"scheme":"HTTP"},"periodSeconds":5,"successThreshold":1,"timeoutSeconds":1},"resources":{"limits":{"cpu":"100m","memory":"64Mi"}},"securityContext":{"privileged":false,"runAsUser":1000},"shareVolumePolicy":{"type":"enabled"},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","transferEnv":[{"envName":"TZ","sourceContainerName":"app"}],"upgradeStrategy":{"upgradeType":"ColdUpgrade"},"volumeMounts":[{"mountPath":"/var/log","name":"logs","readOnly":true}]},{"image":"h:1","imagePullPolicy":"IfNotPresent","name":"hot","podInjectPolicy":"BeforeAppContainer","resources":{},"shareVolumePolicy":{"type":"disabled"},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","upgradeStrategy":{"hotUpgradeEmptyImage":"empty:1","upgradeType":"HotUpgrade"}}],"imagePullSecrets":[{"name":"reg"}],"initContainers":[{"command":["sh"],"image":"i:1","imagePullPolicy":"IfNotPresent","name":"init","podInjectPolicy":"AfterAppContainer","resources":{},"shareVolumePolicy":{"type":"disabled"},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","upgradeStrategy":{"upgradeType":"ColdUpgrade"}}],"patchPodMetadata":[{"annotations":{"a/b":"{\"x\":1}"},"patchPolicy":"MergePatchJson"}],"volumes":[{"emptyDir":{},"name":"logs"},{"configMap":{"defaultMode":420,"name":"c"},"name":"cfg"},{"hostPath":{"path":"/x","type":"Directory"},"name":"hp"}]}}"#;
        assert_eq!(revision_data(&set), go);
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

    /// A rollback of a set carrying a custom version: one patch bumps and labels the revision
    /// (two patches pinned to the same observed version would conflict).
    #[test]
    fn rollback_bumps_and_labels_in_one_patch() {
        let v1 = with_image("a:1");
        let v2 = with_image("a:2");
        let (r1, r2) = (stored(&v1, 1, "11"), stored(&v2, 2, "12"));
        let mut back = v1.clone();
        back.metadata.labels = Some([(CUSTOM_VERSION_LABEL.to_string(), "v1".to_string())].into());
        let reg = register(&back, &[&r1, &r2], "kruise-system", &BTreeSet::new());
        let [Write::PatchRevision { patch, .. }] = &reg.writes[..] else { panic!("{:?}", reg.writes) };
        let mut v = serde_json::to_value(&r1).unwrap();
        json_patch::patch(&mut v, patch).unwrap();
        assert_eq!(
            (v["revision"].as_i64(), v["metadata"]["labels"][CUSTOM_VERSION_LABEL].as_str()),
            (Some(3), Some("v1"))
        );
        // Already labelled and newest: nothing.
        let mut labelled = r1.clone();
        labelled.metadata.labels.as_mut().unwrap().insert(CUSTOM_VERSION_LABEL.into(), "v1".into());
        labelled.revision = 3;
        assert!(register(&back, &[&labelled, &r2], "kruise-system", &BTreeSet::new()).writes.is_empty());
    }

    /// kruise `TestTruncateHistory`, every row: 15 revisions, limit 10, 100 pods naming
    /// `sidecar-(i mod used + 1)`.
    #[test]
    fn kruise_truncate_history() {
        let mut set = with_image("a:1");
        set.metadata.name = Some("sidecar".into());
        let name = |i: usize| format!("sidecar-{i}");
        let revs: Vec<ControllerRevision> = (1..=15)
            .map(|i| {
                let mut r = ControllerRevision::default();
                r.metadata.name = Some(name(i));
                r.metadata.uid = Some(format!("u{i}"));
                r.metadata.resource_version = Some(format!("{i}"));
                r.revision = i as i64;
                r
            })
            .collect();
        let refs: Vec<&ControllerRevision> = revs.iter().collect();
        let kept: Vec<(String, Option<&ControllerRevision>)> =
            refs.iter().map(|r| (name_of(r).to_string(), Some(*r))).collect();
        let run = |used: usize| {
            let pod_names: Vec<String> = (0..100).map(|i| name(i % used + 1)).collect();
            let pod_revs: BTreeSet<&str> = pod_names.iter().map(String::as_str).collect();
            truncate(&set, &kept, &refs, &pod_revs)
        };
        for used in 1..=9 {
            assert_eq!(run(used).1, None, "used {used}");
        }
        for (used, actual) in [(10, 11), (11, 12), (14, 15), (15, 15), (20, 15)] {
            assert_eq!(
                run(used).1.as_deref(),
                Some(
                    format!(
                        "failed to limit the number of stored revisions, limited: 10, actual: {actual}, name: sidecar"
                    )
                    .as_str()
                ),
                "used {used}"
            );
        }
        let deleted: BTreeSet<String> = run(8)
            .0
            .into_iter()
            .map(|w| match w {
                Write::DeleteRevision { name, .. } => name,
                other => panic!("{other:?}"),
            })
            .collect();
        let left: Vec<String> = (1..=15).map(name).filter(|n| !deleted.contains(n)).collect();
        let mut want: Vec<String> = (1..=8).map(name).collect();
        want.extend([name(14), name(15)]);
        assert_eq!(left, want);
    }

    /// kruise `TestGetActiveRevisions`: create (1), update (2, five times the same), rollback (3,
    /// five times), then 100 image changes keep `revisionHistoryLimit` revisions. Writes applied
    /// to the fake API.
    #[test]
    fn kruise_get_active_revisions() {
        let mut set = with_image("a:1");
        set.spec.revision_history_limit = Some(10);
        let mut api = crate::core::rollout::testkit::FakeCluster::default();
        let register_on = |api: &mut crate::core::rollout::testkit::FakeCluster, s: &SidecarSet| -> i64 {
            let refs: Vec<&ControllerRevision> = api.revisions.iter().collect();
            let reg = register(s, &refs, "kruise-system", &BTreeSet::new());
            let mut target = s.clone();
            let mut latest = std::collections::BTreeMap::new();
            for w in &reg.writes {
                api.apply_write(&mut target, w, &mut latest).unwrap();
            }
            api.revisions.iter().find(|r| name_of(r) == reg.latest).unwrap().revision
        };
        assert_eq!(register_on(&mut api, &set), 1);
        let mut changed = set.clone();
        changed.spec.init_containers = vec![serde_json::from_value(json!({"name": "emptyInitC"})).unwrap()];
        changed.spec.volumes = vec![serde_json::from_value(json!({"name": "emptyVolume"})).unwrap()];
        changed.spec.image_pull_secrets = vec![serde_json::from_value(json!({"name": "emptySecret"})).unwrap()];
        for _ in 0..5 {
            assert_eq!(register_on(&mut api, &changed), 2);
            let data: serde_json::Value =
                serde_json::from_str(&history::data_bytes(api.revisions.last().unwrap())).unwrap();
            for k in ["volumes", "containers", "initContainers", "imagePullSecrets"] {
                assert!(!data["spec"][k].is_null(), "{k}");
            }
        }
        for _ in 0..5 {
            assert_eq!(register_on(&mut api, &set), 3);
        }
        for i in 0..100 {
            set.spec.containers[0].container.image = Some(format!("{i}"));
            register_on(&mut api, &set);
        }
        assert_eq!(api.revisions.len(), 10);
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
