//! The in-place upgrade of one pod's sidecars and the `SidecarSetUpgradable` condition (spec §4.12
//! items 7 and 8; kruise `sidecarset_processor.go` `updatePodSidecarAndHash`,
//! `updatePodSidecarContainer`, `updatePodSidecarSetUpgradableCondition`, and
//! `sidecarcontrol` `UpgradeSidecarContainer`, `findContainerToHotUpgrade`,
//! `UpdatePodSidecarSetHash`, `UpdatePodAnnotationsInUpgrade`).
//!
//! Only images change: a cold sidecar gets the set's image; a hot-upgrade pair gets it on its idle
//! container (the one on the empty image, else the one not ready, else the non-working one),
//! which becomes the working one (working-container and version annotations). The set's hash
//! entry records the new hash and the latest revision, `patchPodMetadata` is applied again, and
//! `kruise.io/sidecarset-inplace-update-state` records the imageIDs the changed containers ran,
//! so the round can tell when the kubelet has restarted them. Native sidecars (init containers
//! with `restartPolicy: Always`) are upgraded the same way; other init containers never.
//!
//! A pod whose sidecars differ from the set's beyond images gets `SidecarSetUpgradable=False`
//! (reason `UpdateImmutableField`, message kruise's JSON map set → upgradable) once, and
//! [`why_not_upgradable`] says which container fields differ, for a per-pod Event (kruise #1272,
//! #928, #1942 asked for it).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

use super::pods::{self, SetView, Sidecar};
use super::{INPLACE_UPDATE_STATE, SIDECARSET_UPGRADABLE, version_alt_annotation, version_annotation};
use crate::apis::SidecarSet;
use crate::apis::keys::SIDECARSET_HASH;
use crate::compat::gojson;
use crate::core::inplace::state::{ContainerStatusRecord, InPlaceUpdateState, encode_state};
use crate::core::rollout::actions::{Pin, Write, pod_writes};
use crate::core::sidecar::annotations::{self, UpgradeSpec};
use crate::core::sidecar::inject::{InjectionInput, plan_injection};
use crate::core::sidecar::metadata::patch_pod_metadata;
use crate::core::sidecar::{WORKING_HOT_UPGRADE_CONTAINER, is_native_sidecar};

fn container_mut<'p>(pod: &'p mut Pod, name: &str) -> Option<&'p mut Container> {
    let spec = pod.spec.as_mut()?;
    if let Some(i) = spec.containers.iter().position(|c| c.name == name) {
        return spec.containers.get_mut(i);
    }
    spec.init_containers.iter_mut().flatten().find(|c| c.name == name && is_native_sidecar(c))
}

fn image_of<'p>(pod: &'p Pod, name: &str) -> &'p str {
    pods::container(pod, name).and_then(|c| c.image.as_deref()).unwrap_or("")
}

/// `findContainerToHotUpgrade`: `(to upgrade, the other)` of a hot-upgrade pair.
pub fn hot_upgrade_target(view: &SetView<'_>, pod: &Pod, sidecar: &Sidecar<'_>) -> (String, String) {
    let (one, two) = crate::core::sidecar::hot_upgrade_names(sidecar.name());
    let empty = sidecar.empty_image();
    if image_of(pod, &one) == empty {
        return (one, two);
    }
    if image_of(pod, &two) == empty {
        return (two, one);
    }
    let ready = |name: &str| {
        pods::status(pod, name).is_some_and(|s| s.ready)
            && pods::is_state_consistent(view, pod, Some(&BTreeSet::from([name.to_string()])))
    };
    match (ready(&one), ready(&two)) {
        (true, false) => (two, one),
        (false, true) => (one, two),
        _ => {
            let (working, idle) = pods::hot_containers(pod, sidecar.name());
            (idle, working)
        }
    }
}

/// The pod after the upgrade (`updatePodSidecarContainer`, `UpdatePodSidecarSetHash`,
/// `PatchPodMetadata`, `UpdatePodAnnotationsInUpgrade`); `latest` is this round's latest revision.
pub fn upgraded_pod(view: &SetView<'_>, pod: &Pod, latest: &str, now: Timestamp) -> Result<Pod, String> {
    let mut out = pod.clone();
    let set_rv = view.set.metadata.resource_version.clone().unwrap_or_default();
    let mut changed = Vec::new();
    for s in &view.sidecars {
        if s.hot() {
            let (target, other) = hot_upgrade_target(view, pod, s);
            if s.image() == image_of(pod, &other) || pods::container(pod, &target).is_none() {
                continue;
            }
            if let Some(c) = container_mut(&mut out, &target) {
                c.image = Some(s.image().to_string());
            }
            let a = out.metadata.annotations.get_or_insert_with(Default::default);
            let mut working = annotations::parse_working(a.get(WORKING_HOT_UPGRADE_CONTAINER).map(String::as_str));
            working.insert(s.name().to_string(), target.clone());
            a.insert(WORKING_HOT_UPGRADE_CONTAINER.into(), annotations::write_string_map(&working));
            let other_version = a.get(&version_annotation(&other)).cloned().unwrap_or_default();
            a.insert(version_annotation(&target), set_rv.clone());
            a.insert(version_alt_annotation(&target), other_version);
            a.insert(version_alt_annotation(&other), set_rv.clone());
            changed.push(target);
        } else {
            let Some(c) = container_mut(&mut out, s.name()) else { continue };
            if c.image.as_deref().unwrap_or("") == s.image() {
                continue;
            }
            c.image = Some(s.image().to_string());
            changed.push(s.name().to_string());
        }
    }
    let a = out.metadata.annotations.get_or_insert_with(Default::default);
    // An unparsable annotation starts again from the set's entry (kruise does the same).
    let mut hashes = a.get(SIDECARSET_HASH).and_then(|t| annotations::parse_hashes(t).ok()).unwrap_or_default();
    hashes.insert(
        view.name.to_string(),
        UpgradeSpec {
            update_timestamp: Some(crate::core::pods::rfc3339(now)),
            hash: view.hash.to_string(),
            sidecar_set_name: view.name.to_string(),
            sidecar_list: Some(view.sidecar_list()),
            controller_revision: latest.to_string(),
        },
    );
    a.insert(SIDECARSET_HASH.into(), annotations::write_hashes(&hashes));
    patch_pod_metadata(a, &view.set.spec.patch_pod_metadata).map_err(|e| e.to_string())?;
    record_update_state(view, &mut out, pod, &changed, now);
    Ok(out)
}

/// `UpdatePodAnnotationsInUpgrade`: the imageIDs `observed` ran in the changed containers, under
/// the set's entry (created with the set's hash and `now` when absent).
pub fn record_update_state(view: &SetView<'_>, out: &mut Pod, observed: &Pod, changed: &[String], now: Timestamp) {
    let mut states = match pods::update_states(observed) {
        Some(Ok(s)) => s,
        _ => BTreeMap::new(),
    };
    let state = states.entry(view.name.to_string()).or_insert_with(|| InPlaceUpdateState {
        revision: view.hash.to_string(),
        update_timestamp: Some(Time(crate::core::pods::whole_seconds(now))),
        ..Default::default()
    });
    let last = state.last_container_statuses.get_or_insert_with(BTreeMap::new);
    for name in changed {
        let image_id = pods::status(observed, name).map(|s| s.image_id.clone()).unwrap_or_default();
        last.insert(name.clone(), ContainerStatusRecord { image_id });
    }
    let mut text = String::from("{");
    for (i, (k, v)) in states.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        gojson::string(k, &mut text);
        text.push(':');
        text.push_str(&encode_state(v));
    }
    text.push('}');
    out.metadata.annotations.get_or_insert_with(Default::default).insert(INPLACE_UPDATE_STATE.into(), text);
}

/// `updatePodSidecarSetUpgradableCondition`: the condition after recording `upgradable` for the
/// set, `None` when it would not change (no write storms).
pub fn upgradable_condition(pod: &Pod, set: &str, upgradable: bool, now: Timestamp) -> Option<PodCondition> {
    let old = crate::core::pods::condition(pod, SIDECARSET_UPGRADABLE);
    let mut kv: serde_json::Map<String, Value> = old
        .and_then(|c| c.message.as_deref())
        .filter(|m| !m.is_empty())
        // kruise fails the round on an unparsable message; starting afresh lets the rollout go on.
        .and_then(|m| serde_json::from_str(m).ok())
        .unwrap_or_default();
    kv.insert(set.to_string(), Value::Bool(upgradable));
    let all = kv.values().all(|v| v != &Value::Bool(false));
    let (status, reason) = if all { ("True", "AllSidecarsetUpgradable") } else { ("False", "UpdateImmutableField") };
    let message = gojson::to_string(&Value::Object(kv));
    let mut condition = old.cloned().unwrap_or_else(|| PodCondition { type_: SIDECARSET_UPGRADABLE.into(), ..Default::default() });
    let same_status = old.is_some_and(|o| o.status == status);
    let unchanged = same_status
        && old.is_some_and(|o| o.reason.as_deref() == Some(reason) && o.message.as_deref() == Some(message.as_str()));
    if unchanged {
        return None;
    }
    if !same_status {
        condition.last_transition_time = Some(Time(crate::core::pods::whole_seconds(now)));
    }
    condition.status = status.into();
    condition.reason = Some(reason.into());
    condition.message = Some(message);
    Some(condition)
}

fn with_condition(pod: &Pod, condition: PodCondition) -> Pod {
    let mut out = pod.clone();
    let conditions = out.status.get_or_insert_with(Default::default).conditions.get_or_insert_with(Vec::new);
    match conditions.iter_mut().find(|c| c.type_ == condition.type_) {
        Some(c) => *c = condition,
        None => conditions.push(condition),
    }
    out
}

/// The writes of an upgrade: the pod update pinned to the observed resourceVersion, then (when
/// it changes) `SidecarSetUpgradable=True` on the version that update returns.
pub fn upgrade_writes(observed: &Pod, upgraded: &Pod, set: &str, now: Timestamp) -> Vec<Write> {
    let mut writes = pod_writes(observed, upgraded);
    if let Some(c) = upgradable_condition(upgraded, set, true, now) {
        let marked = with_condition(upgraded, c);
        writes.extend(pod_writes(upgraded, &marked).into_iter().map(|w| match w {
            Write::PatchPodStatus { name, patch, .. } => Write::PatchPodStatus { name, pin: Pin::Latest, patch },
            other => other,
        }));
    }
    writes
}

/// The write marking a pod not upgradable, `None` when it already is.
pub fn not_upgradable_write(observed: &Pod, set: &str, now: Timestamp) -> Option<Write> {
    let c = upgradable_condition(observed, set, false, now)?;
    pod_writes(observed, &with_condition(observed, c)).into_iter().next()
}

/// The set as injection would inject it now into an existing pod (computed once per round):
/// the live version, whatever the injection strategy pins.
pub fn live_for_injection(set: &SidecarSet) -> Arc<SidecarSet> {
    let mut live = set.clone();
    live.spec.injection_strategy = Default::default();
    Arc::new(live)
}

/// Which fields of which sidecar containers differ between the pod and what injection would
/// give it now, images aside: the reason the pod cannot be upgraded in place.
pub fn why_not_upgradable(
    live: &Arc<SidecarSet>,
    pod: &Pod,
    namespace_labels: &BTreeMap<String, String>,
) -> String {
    let name = live.metadata.name.as_deref().unwrap_or("");
    let no_revisions = || Vec::new();
    let input = InjectionInput { namespace_labels, revisions: &no_revisions, draw: 0.0, now: "", sort_by_name: false };
    let plan = match plan_injection(pod, std::slice::from_ref(live), &input) {
        Ok(p) => p,
        Err(e) => return format!("SidecarSet {name}: the pod's sidecars cannot be rebuilt to compare them: {e}"),
    };
    let mut parts = Vec::new();
    for injected in plan.init_containers.iter().chain(&plan.containers) {
        let want = &injected.container;
        let Some(have) = pods::container(pod, &want.name).or_else(|| {
            pod.spec.as_ref()?.init_containers.as_ref()?.iter().find(|c| c.name == want.name)
        }) else {
            parts.push(format!("container {} is missing", want.name));
            continue;
        };
        let fields = differing_fields(have, want);
        if !fields.is_empty() {
            parts.push(format!("container {}: {} differ", want.name, fields.join(", ")));
        }
    }
    if parts.is_empty() {
        parts.push("the pod's sidecars were injected from a version whose containers differ beyond images".into());
    }
    format!(
        "SidecarSet {name} cannot upgrade this pod's sidecars in place (only image changes are applied to running pods): {}",
        parts.join("; ")
    )
}

/// Top-level container fields that differ, images aside.
pub fn differing_fields(have: &Container, want: &Container) -> Vec<String> {
    let strip = |c: &Container| -> serde_json::Map<String, Value> {
        let mut v = match serde_json::to_value(c) {
            Ok(Value::Object(m)) => m,
            _ => Default::default(),
        };
        v.remove("image");
        v
    };
    let (a, b) = (strip(have), strip(want));
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter().filter(|k| a.get(*k) != b.get(*k)).cloned().collect()
}

#[cfg(test)]
mod tests;
