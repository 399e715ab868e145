//! Pull secrets copied for kruise-daemon (kruise `imagepulljob_controller.go`
//! `syncJobPullSecrets`, `classifyPullSecretsForJob`, `releaseImagePullJobSecrets`,
//! `claimImagePullJobSecrets`, `generateSyncedSecret`; `imagepulljob_utils.go`). kruise-daemon
//! reads Secrets only in `kruise-daemon-config`, so a running job's `pullSecrets` are copied
//! there as `<name>-<6 hex>` with the annotations linking them back:
//! `imagepulljobs.kruise.io/source-key` (`namespace/name` of the source),
//! `imagepulljobs.kruise.io/references` (the jobs using the copy, `ns/name` sorted and joined by
//! `,`), `imagepulljobs.kruise.io/mode: batch` (the copy goes with the NodeImage image entry). A copy
//! is shared by every job of the same source; a job that completes, is deleted, or no longer
//! lists the source leaves the references, and the copy is deleted with its last reference. A job
//! in `kruise-daemon-config` itself uses its secrets as they are.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::apis::imagepulljob::v1beta1::ImagePullJob;
use crate::apis::nodeimage::v1beta1::ReferenceObject;

/// `KRUISE_DAEMON_CONFIG_NS` default.
pub const DAEMON_CONFIG_NAMESPACE: &str = "kruise-daemon-config";
/// `SecretAnnotationSourceSecretKey`.
pub const SOURCE_KEY: &str = "imagepulljobs.kruise.io/source-key";
/// `SecretAnnotationReferenceJobs`.
pub const REFERENCES: &str = "imagepulljobs.kruise.io/references";
/// `SecretAnnotationMode`.
pub const MODE: &str = "imagepulljobs.kruise.io/mode";
/// `ReferenceObjectModeBatch`.
pub const MODE_BATCH: &str = "batch";

/// `namespace/name`.
pub type Key = (String, String);

/// `ParseReferenceObject` of `namespace/name` (no `/`: a name alone).
pub fn parse_key(s: &str) -> Key {
    match s.split_once('/') {
        Some((ns, name)) => (ns.to_string(), name.to_string()),
        None => (String::new(), s.to_string()),
    }
}

fn annotation<'a>(s: &'a Secret, key: &str) -> &'a str {
    s.metadata.annotations.as_ref().and_then(|a| a.get(key)).map_or("", String::as_str)
}

/// `getReferencingJobsFromSecret`.
pub fn referencing_jobs(s: &Secret) -> BTreeSet<Key> {
    annotation(s, REFERENCES).split(',').filter(|r| !r.is_empty()).map(parse_key).collect()
}

/// `getSourceSecret`.
pub fn source_of(s: &Secret) -> Key {
    parse_key(annotation(s, SOURCE_KEY))
}

/// The references annotation value for `jobs`.
pub fn references_value(jobs: &BTreeSet<Key>) -> String {
    jobs.iter().map(|(ns, n)| format!("{ns}/{n}")).collect::<Vec<_>>().join(",")
}

/// `jobAsReferenceObject`.
pub fn job_key(job: &ImagePullJob) -> Key {
    (job.metadata.namespace.clone().unwrap_or_default(), job.metadata.name.clone().unwrap_or_default())
}

/// A write to `kruise-daemon-config`.
#[derive(Clone, Debug, PartialEq)]
pub enum SecretWrite {
    Create(Secret),
    /// An update of the whole Secret at its resourceVersion.
    Update(Secret),
    Delete {
        name: String,
        uid: Option<String>,
        resource_version: Option<String>,
    },
}

/// Whether the job still wants its secrets (running: not deleted, not completed).
pub fn running(job: &ImagePullJob) -> bool {
    job.metadata.deletion_timestamp.is_none() && job.status.as_ref().and_then(|s| s.completion_time.as_ref()).is_none()
}

/// `classifyPullSecretsForJob` over the Secrets of `kruise-daemon-config`: the copy each wanted
/// source uses (`None`: none yet), and the copies to release.
pub fn classify(job: &ImagePullJob, synced: &[Secret]) -> (BTreeMap<Key, Option<Secret>>, Vec<Secret>) {
    let me = job_key(job);
    let mut sorted: Vec<&Secret> = synced.iter().collect();
    // Several copies of one source may exist (before kruise 1.9): the first by name wins.
    sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let ns = job.metadata.namespace.clone().unwrap_or_default();
    let mut desired: BTreeMap<Key, Option<Secret>> = BTreeMap::new();
    if running(job) {
        for name in &job.spec.fields.pull_secrets {
            desired.insert((ns.clone(), name.clone()), None);
        }
    }
    let mut released = Vec::new();
    for s in sorted {
        if s.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let refs = referencing_jobs(s);
        if !running(job) {
            if refs.contains(&me) {
                released.push(s.clone());
            }
            continue;
        }
        let source = source_of(s);
        if let Some(slot) = desired.get_mut(&source) {
            if slot.is_none() || refs.contains(&me) {
                *slot = Some(s.clone());
            }
            continue;
        }
        if refs.contains(&me) {
            released.push(s.clone());
        }
    }
    (desired, released)
}

/// `releaseImagePullJobSecrets` for one copy: delete it with its last reference, else drop the
/// job from its references (an update at its resourceVersion, so a reference added meanwhile is
/// not lost).
pub fn release(job: &ImagePullJob, s: &Secret) -> SecretWrite {
    let mut refs = referencing_jobs(s);
    refs.remove(&job_key(job));
    if refs.is_empty() {
        return SecretWrite::Delete {
            name: s.metadata.name.clone().unwrap_or_default(),
            uid: s.metadata.uid.clone(),
            resource_version: s.metadata.resource_version.clone(),
        };
    }
    let mut clone = s.clone();
    clone.metadata.annotations.get_or_insert_default().insert(REFERENCES.into(), references_value(&refs));
    SecretWrite::Update(clone)
}

/// `claimImagePullJobSecrets` for one source: the reference the NodeImages get, and the write
/// (a new copy named `<source>-<suffix>`, or the copy's data and references brought up to date;
/// none when they are).
pub fn claim(
    job: &ImagePullJob,
    source: &Secret,
    copy: Option<&Secret>,
    suffix: &str,
) -> (ReferenceObject, Option<SecretWrite>) {
    let me = job_key(job);
    let Some(copy) = copy else {
        let new = synced_copy(source, &me, suffix);
        let r = ReferenceObject {
            namespace: DAEMON_CONFIG_NAMESPACE.into(),
            name: new.metadata.name.clone().unwrap_or_default(),
            mode: MODE_BATCH.into(),
        };
        return (r, Some(SecretWrite::Create(new)));
    };
    let r = ReferenceObject {
        namespace: copy.metadata.namespace.clone().unwrap_or_default(),
        name: copy.metadata.name.clone().unwrap_or_default(),
        mode: annotation(copy, MODE).to_string(),
    };
    let mut clone = copy.clone();
    clone.data = source.data.clone();
    clone.string_data = source.string_data.clone();
    let mut refs = referencing_jobs(copy);
    refs.insert(me);
    clone.metadata.annotations.get_or_insert_default().insert(REFERENCES.into(), references_value(&refs));
    if clone.data == copy.data
        && clone.string_data == copy.string_data
        && clone.metadata.annotations == copy.metadata.annotations
    {
        return (r, None);
    }
    (r, Some(SecretWrite::Update(clone)))
}

/// `generateSyncedSecret`: the source's data, labels and annotations, in `kruise-daemon-config`.
pub fn synced_copy(source: &Secret, job: &Key, suffix: &str) -> Secret {
    let mut annotations = source.metadata.annotations.clone().unwrap_or_default();
    annotations.insert(REFERENCES.into(), format!("{}/{}", job.0, job.1));
    annotations.insert(
        SOURCE_KEY.into(),
        format!(
            "{}/{}",
            source.metadata.namespace.as_deref().unwrap_or(""),
            source.metadata.name.as_deref().unwrap_or("")
        ),
    );
    annotations.insert(MODE.into(), MODE_BATCH.into());
    Secret {
        metadata: ObjectMeta {
            namespace: Some(DAEMON_CONFIG_NAMESPACE.into()),
            name: Some(format!("{}-{suffix}", source.metadata.name.as_deref().unwrap_or(""))),
            labels: source.metadata.labels.clone(),
            annotations: Some(annotations),
            ..Default::default()
        },
        data: source.data.clone(),
        string_data: source.string_data.clone(),
        type_: source.type_.clone(),
        immutable: source.immutable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::imagepulljob::ImagePullJobStatus;
    use crate::core::imagepulljob::testkit::{at, job};
    use k8s_openapi::ByteString;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use serde_json::json;

    fn secret(ns: &str, name: &str, ann: &[(&str, &str)], data: &str) -> Secret {
        Secret {
            metadata: ObjectMeta {
                namespace: Some(ns.into()),
                name: Some(name.into()),
                resource_version: Some("3".into()),
                annotations: Some(ann.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
                ..Default::default()
            },
            data: Some([(".dockerconfigjson".to_string(), ByteString(data.as_bytes().to_vec()))].into()),
            type_: Some("kubernetes.io/dockerconfigjson".into()),
            ..Default::default()
        }
    }

    /// kruise `TestGetReferencingJobsFromSecret`, `…WithEmptyAnnotation`, `TestGetSourceSecret`,
    /// `TestJobAsReferenceObject`.
    #[test]
    fn annotations_parse_as_kruise() {
        let s = secret("test-ns", "test-secret", &[(REFERENCES, "ns1/job1,ns2/job2,ns3/job3")], "");
        let want: BTreeSet<Key> = [("ns1", "job1"), ("ns2", "job2"), ("ns3", "job3")]
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(referencing_jobs(&s), want);
        assert!(referencing_jobs(&secret("n", "s", &[(REFERENCES, "")], "")).is_empty());
        let s = secret("test-ns", "test-secret", &[(SOURCE_KEY, "source-ns/source-name")], "");
        assert_eq!(source_of(&s), ("source-ns".into(), "source-name".into()));
        assert_eq!(job_key(&job("test-job", json!({}))), ("ns".into(), "test-job".into()));
    }

    #[test]
    fn a_running_job_shares_a_copy_creates_a_missing_one_and_releases_the_ones_it_dropped() {
        let j = job("j", json!({"image": "nginx", "pullSecrets": ["reg", "other"]}));
        let shared = secret(
            DAEMON_CONFIG_NAMESPACE,
            "reg-aaaaaa",
            &[(SOURCE_KEY, "ns/reg"), (REFERENCES, "ns/k"), (MODE, MODE_BATCH)],
            "v1",
        );
        let dropped =
            secret(DAEMON_CONFIG_NAMESPACE, "old-bbbbbb", &[(SOURCE_KEY, "ns/old"), (REFERENCES, "ns/j")], "v1");
        let (desired, released) = classify(&j, &[dropped.clone(), shared.clone()]);
        assert_eq!(desired.len(), 2);
        assert_eq!(
            desired[&("ns".into(), "reg".into())].as_ref().unwrap().metadata.name.as_deref(),
            Some("reg-aaaaaa")
        );
        assert!(desired[&("ns".into(), "other".into())].is_none());
        assert_eq!(released, std::slice::from_ref(&dropped));
        assert!(matches!(release(&j, &dropped), SecretWrite::Delete { .. }), "its last reference");

        // Claiming the shared copy: this job joins its references and the data follows the source.
        let source = secret("ns", "reg", &[], "v2");
        let (r, w) = claim(&j, &source, Some(&shared), "cccccc");
        assert_eq!((r.name.as_str(), r.mode.as_str()), ("reg-aaaaaa", "batch"));
        let Some(SecretWrite::Update(u)) = w else { panic!("{w:?}") };
        assert_eq!(u.metadata.annotations.as_ref().unwrap()[REFERENCES], "ns/j,ns/k");
        assert_eq!(u.data, source.data);
        // Up to date: no write.
        assert_eq!(claim(&j, &source, Some(&u), "x").1, None);
        // No copy yet: one is created.
        let (r, w) = claim(&j, &secret("ns", "other", &[], "z"), None, "dddddd");
        assert_eq!(
            (r.name.as_str(), r.namespace.as_str(), r.mode.as_str()),
            ("other-dddddd", DAEMON_CONFIG_NAMESPACE, "batch")
        );
        let Some(SecretWrite::Create(c)) = w else { panic!() };
        let a = c.metadata.annotations.unwrap();
        assert_eq!((a[SOURCE_KEY].as_str(), a[REFERENCES].as_str(), a[MODE].as_str()), ("ns/other", "ns/j", "batch"));
    }

    #[test]
    fn a_finished_job_releases_every_copy_it_references() {
        let mut j = job("j", json!({"image": "nginx", "pullSecrets": ["reg"]}));
        j.status = Some(ImagePullJobStatus { completion_time: Some(Time(at(1))), ..Default::default() });
        let shared =
            secret(DAEMON_CONFIG_NAMESPACE, "reg-a", &[(SOURCE_KEY, "ns/reg"), (REFERENCES, "ns/j,ns/k")], "v");
        let (desired, released) = classify(&j, std::slice::from_ref(&shared));
        assert!(desired.is_empty());
        let SecretWrite::Update(u) = release(&j, &released[0]) else { panic!() };
        assert_eq!(u.metadata.annotations.unwrap()[REFERENCES], "ns/k");
        assert_eq!(u.metadata.resource_version.as_deref(), Some("3"), "pinned to the version read");
    }
}
