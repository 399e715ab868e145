//! ControllerRevision history shared by every workload that keeps one (CloneSet, Advanced
//! StatefulSet, SidecarSet): how a revision is named and hashed, when two revisions are the same,
//! how they are ordered, and which old ones are deleted (spec §5.8, §5.1 items 6 and 12; decision
//! §11.6). This is Kubernetes' `pkg/controller/history` as kruise uses it:
//! - the hash is FNV-1 (32-bit, not 1a) over the revision's data bytes, followed by the decimal
//!   collision count when one is given, printed in decimal and "safe-encoded" character by
//!   character into `bcdfghjklmnpqrstvwxz2456789`;
//! - the name is `<parent>-<hash>` (the parent name cut to 223 characters);
//! - two revisions are equal when their data bytes are equal.
//!
//! Data bytes are what Go's encoder wrote. The apiserver gives `data` back as JSON, which we hold
//! as a decoded value; [`data_bytes`] re-encodes it the way Go does (sorted keys, HTML-safe
//! escaping), so a revision written by kruise and one written here compare and hash the same.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use serde_json::Value;

use crate::compat::gojson;

/// Label holding the hash on every ControllerRevision.
pub const CONTROLLER_REVISION_HASH_LABEL: &str = "controller.kubernetes.io/hash";

/// The characters Kubernetes' `rand.String` and `rand.SafeEncodeString` use.
pub const ALPHANUMS: &[u8; 27] = b"bcdfghjklmnpqrstvwxz2456789";

/// FNV-1, 32 bit (`hash/fnv.New32`).
pub fn fnv1_32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |h, b| h.wrapping_mul(0x0100_0193) ^ u32::from(*b))
}

/// FNV-1a, 32 bit (`hash/fnv.New32a`).
pub fn fnv1a_32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |h, b| (h ^ u32::from(*b)).wrapping_mul(0x0100_0193))
}

/// `rand.SafeEncodeString`: every character mapped to `ALPHANUMS[c mod 27]`.
pub fn safe_encode(s: &str) -> String {
    s.chars().map(|c| char::from(ALPHANUMS[(c as usize) % ALPHANUMS.len()])).collect()
}

/// `history.HashControllerRevision` over data bytes.
pub fn hash_revision(data: &str, collision_count: Option<i32>) -> String {
    let mut bytes = data.as_bytes().to_vec();
    if let Some(c) = collision_count {
        bytes.extend_from_slice(c.to_string().as_bytes());
    }
    safe_encode(&fnv1_32(&bytes).to_string())
}

/// `history.ControllerRevisionName`.
pub fn revision_name(parent: &str, hash: &str) -> String {
    let prefix: String = parent.chars().take(223).collect();
    format!("{prefix}-{hash}")
}

/// A revision's data as the bytes Go wrote (empty when it has none).
pub fn data_bytes(revision: &ControllerRevision) -> String {
    match &revision.data {
        Some(RawExtension(v)) if !v.is_null() => gojson::to_string(v),
        _ => String::new(),
    }
}

/// `history.EqualRevision`: the same data bytes. (The hash labels kruise also compares are
/// safe-encoded text, which never parses as the integer Go looks for, so they never decide.)
pub fn equal_revision(a: &ControllerRevision, b: &ControllerRevision) -> bool {
    data_bytes(a) == data_bytes(b)
}

/// The parts of the parent a revision needs.
#[derive(Clone, Debug)]
pub struct Parent<'a> {
    /// Parent name (the revision name prefix).
    pub name: &'a str,
    /// Parent namespace (the revision's namespace).
    pub namespace: Option<&'a str>,
    /// Controller reference to the parent.
    pub owner: OwnerReference,
}

/// A revision to create: the object and its data exactly as the bytes to send.
#[derive(Clone, Debug, PartialEq)]
pub struct NewRevision {
    /// The ControllerRevision (its `data` holds [`Self::data`] decoded).
    pub revision: ControllerRevision,
    /// The data bytes the name was hashed over; send these, not a re-encoding of the value, so
    /// that a Go controller reading the revision back sees the same bytes.
    pub data: String,
}

/// `history.NewControllerRevision`: labels are the template labels plus the hash label, the
/// owner is the parent, the name is hashed over `data` and `collision_count`.
pub fn new_controller_revision(
    parent: &Parent<'_>,
    template_labels: &BTreeMap<String, String>,
    data: String,
    revision: i64,
    collision_count: Option<i32>,
) -> NewRevision {
    let hash = hash_revision(&data, collision_count);
    let mut labels = template_labels.clone();
    labels.insert(CONTROLLER_REVISION_HASH_LABEL.to_string(), hash.clone());
    let value: Value = serde_json::from_str(&data).unwrap_or(Value::Null);
    let revision = ControllerRevision {
        metadata: ObjectMeta {
            name: Some(revision_name(parent.name, &hash)),
            namespace: parent.namespace.map(str::to_string),
            labels: Some(labels),
            owner_references: Some(vec![parent.owner.clone()]),
            ..Default::default()
        },
        data: Some(RawExtension(value)),
        revision,
    };
    NewRevision { revision, data }
}

/// `history.SortControllerRevisions`: by `.revision`, then older creation first, then name.
pub fn sort_revisions(revisions: &mut [ControllerRevision]) {
    revisions.sort_by(|a, b| {
        a.revision
            .cmp(&b.revision)
            .then_with(|| {
                let (ta, tb) = (&a.metadata.creation_timestamp, &b.metadata.creation_timestamp);
                match (ta, tb) {
                    (Some(x), Some(y)) => x.0.cmp(&y.0),
                    (None, Some(_)) => std::cmp::Ordering::Less,
                    (Some(_), None) => std::cmp::Ordering::Greater,
                    (None, None) => std::cmp::Ordering::Equal,
                }
            })
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
}

/// The next `.revision` number after sorted revisions (1 for none).
pub fn next_revision(sorted: &[ControllerRevision]) -> i64 {
    sorted.last().map_or(1, |r| r.revision + 1)
}

/// `history.FindEqualRevisions`: indexes of the revisions equal to `needle`, in order.
pub fn find_equal_revisions(revisions: &[ControllerRevision], needle: &ControllerRevision) -> Vec<usize> {
    let bytes = data_bytes(needle);
    revisions.iter().enumerate().filter(|(_, r)| data_bytes(r) == bytes).map(|(i, _)| i).collect()
}

/// Which revisions history truncation deletes: among the sorted revisions that are not `live`,
/// the oldest ones beyond `limit` (kruise's `truncateHistory`, default limit 10).
pub fn revisions_to_truncate(
    sorted: &[ControllerRevision],
    live: impl Fn(&ControllerRevision) -> bool,
    limit: i32,
) -> Vec<&ControllerRevision> {
    let history: Vec<&ControllerRevision> = sorted.iter().filter(|r| !live(r)).collect();
    let limit = usize::try_from(limit).unwrap_or(0);
    let excess = history.len().saturating_sub(limit);
    history.into_iter().take(excess).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    #[test]
    fn fnv_matches_go() {
        // Values of Go's hash/fnv for "", "a" and "foobar".
        assert_eq!(fnv1_32(b""), 0x811c9dc5);
        assert_eq!(fnv1_32(b"a"), 0x050c5d7e);
        assert_eq!(fnv1_32(b"foobar"), 0x31f0b262);
        assert_eq!(fnv1a_32(b"a"), 0xe40c292c);
        assert_eq!(fnv1a_32(b"foobar"), 0xbf9cf968);
    }

    #[test]
    fn safe_encode_maps_each_digit() {
        // '0' is 48, 48 mod 27 = 21 -> '4'; '9' is 57 -> 3 -> 'g'.
        assert_eq!(safe_encode("0123456789"), "456789bcdf");
        assert_eq!(safe_encode(""), "");
    }

    #[test]
    fn names_cut_the_parent_at_223() {
        assert_eq!(revision_name("web", "abc"), "web-abc");
        let long = "x".repeat(300);
        assert_eq!(revision_name(&long, "h").len(), 225);
    }

    fn rev(name: &str, revision: i64, created: Option<i64>, data: Value) -> ControllerRevision {
        ControllerRevision {
            metadata: ObjectMeta {
                name: Some(name.into()),
                creation_timestamp: created.map(|s| Time(k8s_openapi::jiff::Timestamp::from_second(s).unwrap())),
                ..Default::default()
            },
            data: Some(RawExtension(data)),
            revision,
        }
    }

    #[test]
    fn sort_by_revision_then_age_then_name() {
        let mut revs = vec![
            rev("c", 2, Some(10), Value::Null),
            rev("b", 1, Some(20), Value::Null),
            rev("a", 1, Some(20), Value::Null),
            rev("d", 1, Some(5), Value::Null),
            rev("e", 1, None, Value::Null),
        ];
        sort_revisions(&mut revs);
        let names: Vec<_> = revs.iter().map(|r| r.metadata.name.clone().unwrap()).collect();
        assert_eq!(names, ["e", "d", "a", "b", "c"]);
        assert_eq!(next_revision(&revs), 3);
        assert_eq!(next_revision(&[]), 1);
    }

    #[test]
    fn equality_is_on_go_bytes() {
        let a = rev("a", 1, None, serde_json::json!({"spec": {"b": 1, "a": "x<y"}}));
        let b = rev("b", 2, None, serde_json::json!({"spec": {"a": "x<y", "b": 1}}));
        let c = rev("c", 3, None, serde_json::json!({"spec": {"a": "x<y", "b": 2}}));
        assert!(equal_revision(&a, &b));
        assert!(!equal_revision(&a, &c));
        assert_eq!(data_bytes(&a), r#"{"spec":{"a":"x\u003cy","b":1}}"#);
        assert_eq!(find_equal_revisions(&[a.clone(), c, b], &a), vec![0, 2]);
    }

    #[test]
    fn truncation_keeps_the_newest_non_live() {
        let revs: Vec<_> = (1..=6).map(|i| rev(&format!("r{i}"), i, None, Value::Null)).collect();
        let live = |r: &ControllerRevision| matches!(r.metadata.name.as_deref(), Some("r2" | "r6"));
        let names = |v: Vec<&ControllerRevision>| -> Vec<String> {
            v.into_iter().map(|r| r.metadata.name.clone().unwrap()).collect()
        };
        assert_eq!(names(revisions_to_truncate(&revs, live, 2)), ["r1", "r3"]);
        assert_eq!(names(revisions_to_truncate(&revs, live, 10)), Vec::<String>::new());
        assert_eq!(names(revisions_to_truncate(&revs, live, 0)), ["r1", "r3", "r4", "r5"]);
    }
}
