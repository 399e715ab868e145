//! Image pre-download on the leader (issue 29 items 2 and 3; spec §7.4): what the NodeImage,
//! ImagePullJob and ImageListPullJob controllers decide, as pure functions over the cache.
//!
//! - [`targets`]: which NodeImages a job pulls on (kruise `imagejob_reader.go`
//!   `GetNodeImagesForJob`), and which jobs a NodeImage or pod change concerns.
//! - [`status`]: a job's status from its NodeImages (`calculateStatus`), completion, deadline, TTL.
//! - [`sync`]: the tag entry a job wants in a NodeImage (`syncNodeImages`), each job owning its own
//!   owner reference, and which NodeImages get it this round under `parallelism`.
//! - [`plan`]: one ImagePullJob round: the NodeImage patches (each pinned to the resourceVersion it
//!   was computed from), the status, finalizer and TTL deletion.
//! - [`secrets`]: pull secrets copied into `kruise-daemon-config` (`syncJobPullSecrets`).
//! - [`nodeimage`]: the NodeImage controller: one per Node, labels copied, expired tags dropped.
//! - [`listjob`]: the ImageListPullJob controller: one ImagePullJob per image, status aggregated.
//!
//! This module holds the vocabulary they share: the image name/tag split, the owner reference a
//! job writes into a tag, the per-tag pull policy.

pub mod coalesce;
pub mod listjob;
pub mod nodeimage;
pub mod plan;
pub mod secrets;
pub mod status;
pub mod sync;
pub mod targets;

#[cfg(test)]
pub mod props;
#[cfg(test)]
pub mod testkit;

use k8s_openapi::api::core::v1::ObjectReference;

use crate::apis::imagepulljob::v1beta1::ImagePullJob;
use crate::apis::nodeimage::ImageTagPullPolicy;
use crate::compat::image::{ImageError, parse_image_legacy};

/// kruise's `defaults.ProtectionFinalizer`, added to a running job so its synced secrets are
/// cleaned up before it goes.
pub const PROTECTION_FINALIZER: &str = "apps.kruise.io/deletion-protection";
/// Nodes pulling at once when `spec.parallelism` is unset (`defaultParallelism`).
pub const DEFAULT_PARALLELISM: i32 = 1;
/// kruise's `--default-ttlseconds-for-always-nodeimage` default.
pub const DEFAULT_TTL_FOR_ALWAYS_NODEIMAGE: i32 = 300;
/// `defaultTTLSecondsForNever`: 24 h.
pub const DEFAULT_TTL_FOR_NEVER: i32 = 24 * 3600;
/// `defaultActiveDeadlineSecondsForNever`.
pub const DEFAULT_ACTIVE_DEADLINE_FOR_NEVER: i64 = 1800;
/// `completionPolicy.type` Never.
pub const NEVER: &str = "Never";
/// NodeImage tag phases as the daemon reports them.
pub const PHASE_SUCCEEDED: &str = "Succeeded";
pub const PHASE_FAILED: &str = "Failed";
pub const PHASE_PULLING: &str = "Pulling";

/// kruise's `NormalizeImageRefToNameTag`: the familiar name (`nginx`, `foo/bar`,
/// `reg.io/x/y`) and the tag (`latest` when none; the digest when the reference has one), by the
/// docker/distribution v2.8 grammar kruise parses with.
pub fn image_name_tag(image: &str) -> Result<(String, String), ImageError> {
    let r = parse_image_legacy(image)?;
    let name = if r.domain == "docker.io" {
        match r.path.strip_prefix("library/") {
            Some(rest) if !rest.contains('/') => rest.to_string(),
            _ => r.path.clone(),
        }
    } else {
        r.name.clone()
    };
    let tag = r.digest.or(r.tag).unwrap_or_else(|| "latest".to_string());
    Ok((name, tag))
}

/// The reference a job writes into a tag's `ownerReferences` (`getOwnerRef`: v1beta1, kind,
/// name, namespace, uid).
pub fn owner_ref(job: &ImagePullJob) -> ObjectReference {
    ObjectReference {
        api_version: Some("apps.kruise.io/v1beta1".into()),
        kind: Some("ImagePullJob".into()),
        name: job.metadata.name.clone(),
        namespace: job.metadata.namespace.clone(),
        uid: job.metadata.uid.clone(),
        ..Default::default()
    }
}

/// `util.ContainsObjectRef`: same apiVersion group, kind, namespace, name and uid.
pub fn same_ref(a: &ObjectReference, b: &ObjectReference) -> bool {
    a.uid == b.uid && a.name == b.name && a.namespace == b.namespace && a.kind == b.kind
}

/// A job's `completionPolicy.type` is Never.
pub fn is_never(job: &ImagePullJob) -> bool {
    job.spec.fields.completion_policy.type_ == NEVER
}

/// A number in `0..n` fixed by `seed` (kruise draws `rand.Int31n(n)`; a fixed draw per job and
/// node keeps a replayed round identical, so a repeated plan writes nothing new).
pub fn jitter(seed: &str, n: i32) -> i32 {
    let h = crate::core::history::fnv1a_32(seed.as_bytes());
    i32::try_from(h % u32::try_from(n.max(1)).unwrap_or(1)).unwrap_or(0)
}

/// `getImagePullPolicy`: the tag's pull policy for `job` (`seed` fixes kruise's random TTL spread).
pub fn tag_pull_policy(job: &ImagePullJob, seed: &str) -> ImageTagPullPolicy {
    let spec = &job.spec.fields;
    let pull = spec.pull_policy.as_ref();
    let mut p = ImageTagPullPolicy {
        backoff_limit: pull.and_then(|p| p.backoff_limit),
        timeout_seconds: pull.and_then(|p| p.timeout_seconds),
        ..Default::default()
    };
    if is_never(job) {
        // 24 h ± 10 min.
        p.ttl_seconds_after_finished = Some(DEFAULT_TTL_FOR_NEVER + jitter(seed, 1200) - 600);
        p.active_deadline_seconds = Some(active_deadline_for_never(job));
    } else {
        p.ttl_seconds_after_finished = Some(ttl_for_always(job, seed));
        p.active_deadline_seconds = spec.completion_policy.active_deadline_seconds;
    }
    p
}

/// `getTTLSecondsForAlways`: the job's TTL, else its deadline, else timeout × retries; plus the
/// default NodeImage TTL and up to 5 minutes of spread.
pub fn ttl_for_always(job: &ImagePullJob, seed: &str) -> i32 {
    let spec = &job.spec.fields;
    let base = if let Some(ttl) = spec.completion_policy.ttl_seconds_after_finished {
        ttl
    } else if let Some(d) = spec.completion_policy.active_deadline_seconds {
        i32::try_from(d).unwrap_or(i32::MAX)
    } else {
        let pull = spec.pull_policy.as_ref();
        let timeout = pull.and_then(|p| p.timeout_seconds).unwrap_or(600);
        let backoff = pull.and_then(|p| p.backoff_limit).unwrap_or(3);
        timeout.saturating_mul(backoff)
    };
    base.saturating_add(DEFAULT_TTL_FOR_ALWAYS_NODEIMAGE).saturating_add(jitter(seed, 300))
}

/// `getActiveDeadlineSecondsForNever`: 1800 s, or the pull timeout when longer.
pub fn active_deadline_for_never(job: &ImagePullJob) -> i64 {
    let timeout = job.spec.fields.pull_policy.as_ref().and_then(|p| p.timeout_seconds).map(i64::from);
    match timeout {
        Some(t) if t > DEFAULT_ACTIVE_DEADLINE_FOR_NEVER => t,
        _ => DEFAULT_ACTIVE_DEADLINE_FOR_NEVER,
    }
}

/// `spec.parallelism` as kruise reads it (`IntValue()`: a string that is not a number is 0).
pub fn parallelism(job: &ImagePullJob) -> i32 {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    match &job.spec.fields.parallelism {
        None => DEFAULT_PARALLELISM,
        Some(IntOrString::Int(n)) => *n,
        Some(IntOrString::String(s)) => s.parse().unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn job(spec: serde_json::Value) -> ImagePullJob {
        serde_json::from_value(json!({"metadata": {"name": "j", "namespace": "ns", "uid": "u"}, "spec": spec})).unwrap()
    }

    #[test]
    fn image_name_tag_as_kruise_normalizes() {
        for (image, name, tag) in [
            ("nginx", "nginx", "latest"),
            ("nginx:1.25", "nginx", "1.25"),
            ("docker.io/library/nginx:1", "nginx", "1"),
            ("foo/bar:v1", "foo/bar", "v1"),
            ("reg.io:5000/a/b:c", "reg.io:5000/a/b", "c"),
            (
                "busybox@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                "busybox",
                "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            ),
        ] {
            assert_eq!(image_name_tag(image).unwrap(), (name.to_string(), tag.to_string()), "{image}");
        }
        assert!(image_name_tag("UPPER:1").is_err());
    }

    /// kruise `TestGetActiveDeadlineSecondsForNever`, row by row.
    #[test]
    fn active_deadline_for_never_rows() {
        assert_eq!(active_deadline_for_never(&job(json!({}))), 1800, "not set timeout");
        assert_eq!(active_deadline_for_never(&job(json!({"pullPolicy": {"timeoutSeconds": 1799}}))), 1800);
        assert_eq!(active_deadline_for_never(&job(json!({"pullPolicy": {"timeoutSeconds": 7200}}))), 7200);
    }

    #[test]
    fn tag_pull_policy_by_completion_type() {
        let always = job(json!({"pullPolicy": {"timeoutSeconds": 10, "backoffLimit": 2}}));
        let p = tag_pull_policy(&always, "n1");
        assert_eq!((p.timeout_seconds, p.backoff_limit, p.active_deadline_seconds), (Some(10), Some(2), None));
        let ttl = p.ttl_seconds_after_finished.unwrap();
        assert!((20 + 300..20 + 600).contains(&ttl), "timeout×backoff + 300 + [0,300): {ttl}");
        assert_eq!(tag_pull_policy(&always, "n1"), p, "the same seed draws the same spread");
        let ttl = job(json!({"completionPolicy": {"ttlSecondsAfterFinished": 60, "activeDeadlineSeconds": 90}}));
        let p = tag_pull_policy(&ttl, "n1");
        assert!((360..660).contains(&p.ttl_seconds_after_finished.unwrap()));
        assert_eq!(p.active_deadline_seconds, Some(90));
        let never = job(json!({"completionPolicy": {"type": "Never"}}));
        let p = tag_pull_policy(&never, "n1");
        assert!(
            (DEFAULT_TTL_FOR_NEVER - 600..DEFAULT_TTL_FOR_NEVER + 600).contains(&p.ttl_seconds_after_finished.unwrap())
        );
        assert_eq!(p.active_deadline_seconds, Some(1800));
    }

    #[test]
    fn parallelism_reads_int_value() {
        assert_eq!(parallelism(&job(json!({}))), 1);
        assert_eq!(parallelism(&job(json!({"parallelism": 4}))), 4);
        assert_eq!(parallelism(&job(json!({"parallelism": "3"}))), 3);
        assert_eq!(parallelism(&job(json!({"parallelism": "50%"}))), 0);
    }
}
