//! Following an in-place update to its end (spec §3.4; kruise's `inplaceupdate.Refresh` and
//! `DefaultCheckInPlaceUpdateCompleted`), called for every pod on every sync:
//! 1. a pod in its grace period waits until `updateTimestamp + graceSeconds`, then gets the parked
//!    spec applied (or the parked spec is dropped if the pod moved to another revision meanwhile);
//! 2. an update is complete when no later batch is pending and the kubelet really runs the new
//!    containers — kruise-daemon's runtime hashes agree, or else every recorded container reports a
//!    new imageID (or already reports the new image); a later batch starts once the containers of
//!    the previous one are ready;
//! 3. a pod with the `InPlaceUpdateReady` readiness gate whose update is complete (or that never
//!    had one — every new pod) gets the condition `True`. Without this no CloneSet pod ever becomes
//!    Ready.
//!
//! The hashes kruise-daemon reports are recomputed here as kruise does: the kubelet's container
//! hash (FNV-1a over `{"image":…,"name":…}`, and the pre-1.31 one over the whole container) and
//! the env-from-metadata hash (FNV-1a over the `[{name, value}]` of env vars read from labels or
//! annotations, sorted by name), each taken over Go's `%#v` print of the JSON bytes.

use k8s_openapi::api::core::v1::{Container, EnvVar, Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::json;

use super::apply::{Options, patch_spec_to_pod};
use super::envref::split_subscripted_path;
use super::state::{self, InPlaceUpdateState, RuntimeContainerMetaSet};
use crate::apis::keys::IN_PLACE_UPDATE_READY;
use crate::compat::gojson;
use crate::compat::gotypes::{CONTAINER, ENV_VAR};
use crate::compat::quantity::Quantity;
use crate::core::history::fnv1a_32;
use crate::core::pods;

/// What refreshing a pod decided.
#[derive(Clone, Debug, PartialEq)]
pub enum Refresh {
    /// Nothing to do now.
    Nothing,
    /// The grace period runs: look again after this long.
    InGracePeriod(SignedDuration),
    /// The grace period ended: the parked spec is applied (or dropped, `applied: false`).
    FinishGrace { pod: Box<Pod>, applied: bool },
    /// The next batch of containers is updated.
    NextBatch { pod: Box<Pod>, containers: Vec<String> },
    /// The update is complete (or there was none): `InPlaceUpdateReady` becomes True.
    MarkReady { pod: Box<Pod> },
    /// The update is still running; why (for "why waiting").
    Updating(String),
}

/// `hashutil.DeepHashObject` of a byte slice: FNV-1a over spew's `%#v` print, `([]uint8)[1 2 3]`.
fn deep_hash_bytes(bytes: &[u8]) -> u64 {
    let printed: Vec<String> = bytes.iter().map(u8::to_string).collect();
    u64::from(fnv1a_32(format!("([]uint8)[{}]", printed.join(" ")).as_bytes()))
}

/// The kubelet's `HashContainer` since 1.31: only name and image.
pub fn plain_hash(c: &Container) -> u64 {
    let map = json!({"image": c.image.clone().unwrap_or_default(), "name": c.name});
    deep_hash_bytes(gojson::to_string(&map).as_bytes())
}

/// The kubelet's `HashContainer` before 1.31, which kruise still accepts: the whole container.
pub fn plain_hash_legacy(c: &Container) -> u64 {
    let mut out = String::new();
    gojson::go_struct(CONTAINER, &serde_json::to_value(c).unwrap_or_default(), &mut out);
    deep_hash_bytes(out.as_bytes())
}

/// kruise's `EnvFromMetadataHasher.GetExpectHash`: the env vars a container reads from the pod's
/// labels/annotations (literal values and `SIDECARSET_VERSION`/`_ALT` ignored), with their values
/// from `pod`, sorted by name.
pub fn env_from_metadata_hash(c: &Container, pod: &Pod) -> u64 {
    let mut envs: Vec<EnvVar> = Vec::new();
    for e in c.env.iter().flatten() {
        if e.value.as_deref().is_some_and(|v| !v.is_empty())
            || matches!(e.name.as_str(), "SIDECARSET_VERSION" | "SIDECARSET_VERSION_ALT")
        {
            continue;
        }
        let Some(path) = e.value_from.as_ref().and_then(|v| v.field_ref.as_ref()).map(|f| f.field_path.as_str()) else {
            continue;
        };
        let Some((path, key)) = split_subscripted_path(path) else { continue };
        let value = match path {
            "metadata.annotations" => pods::annotations(pod).get(key),
            "metadata.labels" => pods::labels(pod).get(key),
            _ => continue,
        };
        envs.push(EnvVar { name: e.name.clone(), value: Some(value.cloned().unwrap_or_default()), value_from: None });
    }
    hash_envs(envs)
}

/// kruise's `hashEnvs`: the env vars sorted by name (stable), Go's JSON of the list, hashed.
pub fn hash_envs(mut envs: Vec<EnvVar>) -> u64 {
    envs.sort_by(|a, b| a.name.cmp(&b.name));
    let json = if envs.is_empty() {
        "null".to_string()
    } else {
        let items: Vec<String> = envs
            .iter()
            .map(|e| {
                let mut out = String::new();
                gojson::go_struct(ENV_VAR, &serde_json::to_value(e).unwrap_or_default(), &mut out);
                out
            })
            .collect();
        format!("[{}]", items.join(","))
    };
    deep_hash_bytes(json.as_bytes())
}

enum HashKind {
    Plain,
    EnvFromMetadata,
}

/// `checkAllContainersHashConsistent`.
fn hashes_consistent(pod: &Pod, meta: &RuntimeContainerMetaSet, kind: HashKind) -> bool {
    let containers = pod.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or(&[]);
    containers.iter().all(|c| {
        let Some(status) = pods::container_status(pod, &c.name) else { return false };
        let Some(m) = meta.containers.iter().rev().find(|m| m.name == c.name) else { return false };
        if m.container_id != status.container_id.clone().unwrap_or_default() {
            return false;
        }
        match kind {
            HashKind::Plain => plain_hash(c) == m.hashes.plain_hash || plain_hash_legacy(c) == m.hashes.plain_hash,
            HashKind::EnvFromMetadata => env_from_metadata_hash(c, pod) == m.hashes.extracted_env_from_metadata_hash,
        }
    })
}

fn canonical(
    list: Option<&std::collections::BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
) -> Vec<(String, String)> {
    list.into_iter()
        .flatten()
        .map(|(k, q)| (k.clone(), Quantity::parse(q.0.trim()).map(|q| q.canonical()).unwrap_or_else(|_| q.0.clone())))
        .collect()
}

/// Vertical scaling: every container reports the resources its spec asks for.
fn resources_applied(pod: &Pod) -> Result<(), String> {
    let containers = pod.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or(&[]);
    let statuses = pod.status.as_ref().and_then(|s| s.container_statuses.as_deref()).unwrap_or(&[]);
    if statuses.len() != containers.len() {
        return Err("some container status is not reported".into());
    }
    for cs in statuses {
        let spec = containers.iter().find(|c| c.name == cs.name).and_then(|c| c.resources.as_ref());
        let (Some(spec), Some(got)) = (spec, cs.resources.as_ref()) else {
            return Err(format!("container {} resources not changed", cs.name));
        };
        if canonical(spec.limits.as_ref()) != canonical(got.limits.as_ref())
            || canonical(spec.requests.as_ref()) != canonical(got.requests.as_ref())
        {
            return Err(format!("container {} resources not changed", cs.name));
        }
    }
    Ok(())
}

/// `defaultCheckContainersInPlaceUpdateCompleted`: `Err` says what is still awaited.
pub fn containers_updated(pod: &Pod, st: &InPlaceUpdateState, opts: Options) -> Result<(), String> {
    let meta = state::read_runtime_meta(pod)?;
    if st.update_env_from_metadata {
        let Some(meta) = meta.as_ref() else {
            return Err("waiting for all containers hash consistent, but runtime-container-meta not found".into());
        };
        if !hashes_consistent(pod, meta, HashKind::EnvFromMetadata) {
            return Err("waiting for all containers hash consistent".into());
        }
    }
    if opts.vertical_scaling && st.update_resources {
        resources_applied(pod)?;
    }
    if let Some(meta) = meta.as_ref()
        && hashes_consistent(pod, meta, HashKind::Plain)
    {
        return Ok(());
    }
    let containers = pod.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or(&[]);
    let mut pending = st.last_container_statuses.clone().unwrap_or_default();
    for cs in pod.status.as_ref().and_then(|s| s.container_statuses.as_deref()).unwrap_or(&[]) {
        let Some(old) = pending.remove(&cs.name) else { continue };
        if old.image_id == cs.image_id {
            let spec_image = containers
                .iter()
                .find(|c| c.name == cs.name)
                .and_then(|c| c.image.clone())
                .map(|i| if i.split(':').count() <= 1 { format!("{i}:latest") } else { i })
                .unwrap_or_default();
            if spec_image != cs.image {
                return Err(format!("container {} imageID not changed", cs.name));
            }
        }
    }
    if !pending.is_empty() {
        let names: Vec<&String> = pending.keys().collect();
        return Err(format!("not found statuses of containers {names:?}"));
    }
    Ok(())
}

/// `DefaultCheckInPlaceUpdateCompleted`: no grace period, no later batch, containers updated.
pub fn update_completed(pod: &Pod, opts: Options) -> Result<(), String> {
    if state::grace_text(pod).is_some() {
        return Err("still in grace period of in-place update".into());
    }
    let Some(st) = state::read_state(pod) else { return Ok(()) };
    let st = st?;
    if st.has_next_batch() {
        return Err("existing containers to in-place update in next batches".into());
    }
    containers_updated(pod, &st, opts)
}

/// `doPreCheckBeforeNext`.
fn pre_check(pod: &Pod, st: &InPlaceUpdateState) -> Result<(), String> {
    for name in st.pre_check_before_next.iter().flat_map(|p| p.containers_required_ready.iter()) {
        match pods::container_status(pod, name) {
            None => return Err(format!("not found container {name} in pod status")),
            Some(cs) if !cs.ready => return Err(format!("waiting container {name} to be ready")),
            Some(_) => {}
        }
    }
    Ok(())
}

fn roundup_seconds(d: SignedDuration) -> SignedDuration {
    let secs = d.as_secs() + i64::from(d.subsec_nanos() > 0);
    SignedDuration::from_secs(secs)
}

/// kruise's `Refresh` for one pod. `same_revision(pod, revision)` is the workload's revision
/// comparison (CloneSet also accepts the short hash). `Err` for annotations that are not
/// kruise's JSON.
pub fn refresh(
    pod: &Pod,
    opts: Options,
    now: Timestamp,
    same_revision: impl Fn(&Pod, &str) -> bool,
) -> Result<Refresh, String> {
    if let Some(grace) = state::read_grace(pod) {
        let grace = grace?;
        let Some(st) = state::read_state(pod) else {
            return Err(format!(
                "pod has {} but {} not found",
                crate::apis::keys::IN_PLACE_UPDATE_GRACE,
                crate::apis::keys::IN_PLACE_UPDATE_STATE
            ));
        };
        // kruise ignores a state it cannot decode here.
        let Ok(mut st) = st else { return Ok(Refresh::Nothing) };
        if !same_revision(pod, &grace.revision) {
            let mut after = pod.clone();
            state::remove_grace(&mut after);
            return Ok(Refresh::FinishGrace { pod: Box::new(after), applied: false });
        }
        let started = st.update_timestamp.as_ref().map(|t| t.0).unwrap_or(Timestamp::UNIX_EPOCH);
        let grace_period = SignedDuration::from_secs(i64::from(grace.grace_seconds));
        let span = now.duration_since(started);
        if span < grace_period {
            return Ok(Refresh::InGracePeriod(roundup_seconds(grace_period - span)));
        }
        let spec = grace.update_spec()?;
        let mut after = patch_spec_to_pod(pod, &spec, &mut st, opts, now)?;
        state::remove_grace(&mut after);
        return Ok(Refresh::FinishGrace { pod: Box::new(after), applied: true });
    }

    if let Some(st) = state::read_state(pod) {
        let mut st = st?;
        if let Err(why) = containers_updated(pod, &st, opts) {
            return Ok(Refresh::Updating(why));
        }
        if st.has_next_batch() {
            if let Err(why) = pre_check(pod, &st) {
                return Ok(Refresh::Updating(why));
            }
            let spec = super::classify::UpdateSpec {
                container_images: st.next_container_images.clone(),
                container_ref_metadata: st.next_container_ref_metadata.clone(),
                container_resources: st.next_container_resources.clone(),
                update_env_from_metadata: st.update_env_from_metadata,
                meta_data_patch: None,
            };
            let after = patch_spec_to_pod(pod, &spec, &mut st, opts, now)?;
            let containers = st.container_batches_record.last().map(|b| b.containers.clone()).unwrap_or_default();
            return Ok(Refresh::NextBatch { pod: Box::new(after), containers });
        }
    }

    if !pods::has_readiness_gate(pod, IN_PLACE_UPDATE_READY) {
        return Ok(Refresh::Nothing);
    }
    let equal = pods::condition(pod, IN_PLACE_UPDATE_READY).is_some_and(|c| {
        c.status == "True"
            && c.reason.as_deref().unwrap_or("").is_empty()
            && c.message.as_deref().unwrap_or("").is_empty()
    });
    if equal {
        return Ok(Refresh::Nothing);
    }
    let mut after = pod.clone();
    let changed = pods::set_condition(
        &mut after,
        PodCondition {
            type_: IN_PLACE_UPDATE_READY.into(),
            status: "True".into(),
            last_transition_time: Some(Time(pods::whole_seconds(now))),
            ..Default::default()
        },
    );
    // kruise writes the status even when only reason/message differ (SetPodCondition then keeps
    // the old condition): a write that changes nothing, skipped here.
    Ok(if changed { Refresh::MarkReady { pod: Box::new(after) } } else { Refresh::Nothing })
}

#[cfg(test)]
mod tests;
