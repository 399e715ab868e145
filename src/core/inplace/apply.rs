//! Performing an in-place update on a pod, as pure decisions (spec §3.3; kruise's
//! `inplaceupdate.Update` and `defaultPatchUpdateSpecToPod`): given the observed pod and what the
//! classifier decided ([`UpdateSpec`]), return the intended pod. Shared by CloneSet and Advanced
//! StatefulSet; the caller says how revision labels are written and adds its own extras (the
//! lifecycle `Updating` state).
//!
//! [`begin`] is the first step: `InPlaceUpdateReady=False` (reason `StartInPlaceUpdate`) with the
//! `Ready` condition recomputed, the revision labels, the state annotation, and then either the
//! new images at once or, with a grace period, the whole spec parked in the grace annotation.
//! [`patch_spec_to_pod`] applies (one batch of) a spec: the metadata patch, then the containers of
//! the highest launch priority — plus every container sharing a changed label or annotation with
//! them — get their images, env-referenced metadata and (vertical scaling) resources; the rest wait
//! in `next*` for a later batch. [`crate::core::rollout::actions::pod_writes`] turns the intended
//! pod into the status write (first) and the pod writes.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Container, Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::classify::UpdateSpec;
use super::state::{self, ContainerBatch, ContainerStatusRecord, GraceSpec, InPlaceUpdateState, PreCheckBeforeNext};
use crate::apis::keys::{IN_PLACE_UPDATE_GRACE, IN_PLACE_UPDATE_READY};
use crate::compat::metapatch::apply_metadata_patch;
use crate::core::pods;

/// Env var that carries a container's launch priority (`p_<n>` in its configMapKeyRef key).
pub use crate::core::pod_mutation::BARRIER_ENV as CONTAINER_LAUNCH_BARRIER_ENV;

/// Options of one in-place update.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// `inPlaceUpdateStrategy.gracePeriodSeconds`.
    pub grace_period_seconds: i32,
    /// Gate InPlaceWorkloadVerticalScaling.
    pub vertical_scaling: bool,
}

pub use crate::core::launchpriority::container_priority;

/// `addMetadataSharedContainersToUpdate`: pull into the batch every container whose referenced
/// labels/annotations overlap those of a container already in it, transitively.
fn add_metadata_sharing_containers(
    batch: &mut BTreeSet<String>,
    ref_metadata: &BTreeMap<String, k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>,
) {
    let keys = |m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        let labels: BTreeSet<String> = m.labels.iter().flatten().map(|(k, _)| k.clone()).collect();
        let annotations: BTreeSet<String> = m.annotations.iter().flatten().map(|(k, _)| k.clone()).collect();
        (labels, annotations)
    };
    loop {
        let (mut labels, mut annotations) = (BTreeSet::new(), BTreeSet::new());
        for name in batch.iter() {
            if let Some(m) = ref_metadata.get(name) {
                let (l, a) = keys(m);
                labels.extend(l);
                annotations.extend(a);
            }
        }
        let joining: Vec<String> = ref_metadata
            .iter()
            .filter(|(name, _)| !batch.contains(*name))
            .filter(|(_, m)| {
                let (l, a) = keys(m);
                !l.is_disjoint(&labels) || !a.is_disjoint(&annotations)
            })
            .map(|(name, _)| name.clone())
            .collect();
        if joining.is_empty() {
            return;
        }
        batch.extend(joining);
    }
}

fn is_resizable(resource: &str) -> bool {
    matches!(resource, "cpu" | "memory")
}

/// `defaultPatchUpdateSpecToPod`: apply one batch of `spec` to `pod`, updating `state`, and write
/// the state annotation. `Err` when the metadata patch cannot be applied.
pub fn patch_spec_to_pod(
    pod: &Pod,
    spec: &UpdateSpec,
    state: &mut InPlaceUpdateState,
    opts: Options,
    now: Timestamp,
) -> Result<Pod, String> {
    state.next_container_images.clear();
    state.next_container_ref_metadata.clear();
    state.next_container_resources.clear();

    let mut pod = pod.clone();
    if let Some(patch) = &spec.meta_data_patch {
        pod.metadata = apply_metadata_patch(&pod.metadata, patch).map_err(|e| e.to_string())?;
    }
    pod.metadata.labels.get_or_insert_with(Default::default);
    pod.metadata.annotations.get_or_insert_with(Default::default);

    // The batch: every changed container without a launch priority, and those with the highest.
    let containers: Vec<Container> = pod.spec.as_ref().map(|s| s.containers.clone()).unwrap_or_default();
    let mut batch = BTreeSet::new();
    let mut highest: Option<(i64, Vec<String>)> = None;
    for c in &containers {
        let changed = spec.container_images.contains_key(&c.name)
            || spec.container_ref_metadata.contains_key(&c.name)
            || spec.container_resources.contains_key(&c.name);
        if !changed {
            continue;
        }
        match (container_priority(c), &mut highest) {
            (None, _) => {
                batch.insert(c.name.clone());
            }
            (Some(p), None) => highest = Some((p, vec![c.name.clone()])),
            (Some(p), Some((h, names))) if p > *h => {
                *h = p;
                *names = vec![c.name.clone()];
            }
            (Some(p), Some((h, names))) if p == *h => names.push(c.name.clone()),
            _ => {}
        }
    }
    batch.extend(highest.map(|(_, names)| names).unwrap_or_default());
    add_metadata_sharing_containers(&mut batch, &spec.container_ref_metadata);

    let mut image_changed = BTreeSet::new();
    if let Some(ps) = pod.spec.as_mut() {
        for c in ps.containers.iter_mut() {
            let Some(image) = spec.container_images.get(&c.name) else { continue };
            if batch.contains(&c.name) {
                c.image = Some(image.clone());
                image_changed.insert(c.name.clone());
            } else {
                state.next_container_images.insert(c.name.clone(), image.clone());
            }
        }
    }
    let statuses = pod.status.as_ref().and_then(|s| s.container_statuses.clone()).unwrap_or_default();
    for cs in statuses.iter().filter(|cs| image_changed.contains(&cs.name)) {
        state
            .last_container_statuses
            .get_or_insert_with(Default::default)
            .entry(cs.name.clone())
            .or_insert_with(|| ContainerStatusRecord { image_id: cs.image_id.clone() });
    }

    if opts.vertical_scaling
        && let Some(ps) = pod.spec.as_mut()
    {
        {
            for c in ps.containers.iter_mut() {
                let Some(new) = spec.container_resources.get(&c.name) else { continue };
                if !batch.contains(&c.name) {
                    state.next_container_resources.insert(c.name.clone(), new.clone());
                    continue;
                }
                let res = c.resources.get_or_insert_with(Default::default);
                for (list, into) in [(&new.limits, &mut res.limits), (&new.requests, &mut res.requests)] {
                    for (k, q) in list.iter().flatten().filter(|(k, _)| is_resizable(k)) {
                        into.get_or_insert_with(Default::default).insert(k.clone(), q.clone());
                    }
                }
            }
        }
    }

    for (name, meta) in &spec.container_ref_metadata {
        if batch.contains(name) {
            let labels = pod.metadata.labels.get_or_insert_with(Default::default);
            for (k, v) in meta.labels.iter().flatten() {
                labels.insert(k.clone(), v.clone());
            }
            let annotations = pod.metadata.annotations.get_or_insert_with(Default::default);
            for (k, v) in meta.annotations.iter().flatten() {
                annotations.insert(k.clone(), v.clone());
            }
        } else {
            state.next_container_ref_metadata.insert(name.clone(), meta.clone());
        }
    }

    let batch: Vec<String> = batch.into_iter().collect();
    state.pre_check_before_next =
        state.has_next_batch().then(|| PreCheckBeforeNext { containers_required_ready: batch.clone() });
    state
        .container_batches_record
        .push(ContainerBatch { timestamp: Some(Time(pods::whole_seconds(now))), containers: batch });
    state::write_state(&mut pod, state);
    Ok(pod)
}

/// `defaultCheckPodNeedsBeUnready`: pods with the `InPlaceUpdateReady` gate are taken out of
/// traffic first, except (vertical scaling) for a resources-only update that no container's
/// `resizePolicy` says needs a restart.
pub fn needs_unready(pod: &Pod, spec: &UpdateSpec, opts: Options) -> bool {
    let gated = pods::has_readiness_gate(pod, IN_PLACE_UPDATE_READY);
    if !opts.vertical_scaling || !spec.vertical_update_only() {
        return gated;
    }
    let containers = pod.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or(&[]);
    let restart = containers.iter().any(|c| {
        let Some(new) = spec.container_resources.get(&c.name) else { return false };
        let touches = |r: &str| {
            new.limits.as_ref().is_some_and(|l| l.contains_key(r))
                || new.requests.as_ref().is_some_and(|l| l.contains_key(r))
        };
        c.resize_policy.iter().flatten().any(|p| p.restart_policy == "RestartContainer" && touches(&p.resource_name))
    });
    restart && gated
}

/// The pod after the first step of an in-place update to `revision` (kruise's `Update`):
/// `write_revision` writes the caller's revision labels and `extra` its extra changes (lifecycle).
pub fn begin(
    pod: &Pod,
    spec: &UpdateSpec,
    revision: &str,
    opts: Options,
    now: Timestamp,
    write_revision: impl Fn(&mut Pod),
    extra: impl Fn(&mut Pod),
) -> Result<Pod, String> {
    let now = pods::whole_seconds(now);
    let mut pod = pod.clone();
    if needs_unready(&pod, spec, opts) {
        pods::set_condition(
            &mut pod,
            PodCondition {
                type_: IN_PLACE_UPDATE_READY.into(),
                status: "False".into(),
                reason: Some("StartInPlaceUpdate".into()),
                last_transition_time: Some(Time(now)),
                ..Default::default()
            },
        );
        pods::recompute_ready(&mut pod, now);
    }
    write_revision(&mut pod);
    pod.metadata.annotations.get_or_insert_with(Default::default);
    extra(&mut pod);
    let mut st = InPlaceUpdateState {
        revision: revision.to_string(),
        update_timestamp: Some(Time(now)),
        update_env_from_metadata: spec.update_env_from_metadata,
        update_images: !spec.container_images.is_empty(),
        update_resources: !spec.container_resources.is_empty(),
        ..Default::default()
    };
    state::write_state(&mut pod, &st);
    if opts.grace_period_seconds <= 0 {
        let mut pod = patch_spec_to_pod(&pod, spec, &mut st, opts, now)?;
        state::remove_grace(&mut pod);
        Ok(pod)
    } else {
        let grace = GraceSpec::new(spec, revision, opts.grace_period_seconds);
        pod.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(IN_PLACE_UPDATE_GRACE.into(), state::encode_grace(&grace));
        Ok(pod)
    }
}

#[cfg(test)]
mod tests;
