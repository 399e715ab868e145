//! The end of a hot upgrade (spec §4.7, §4.12 item 5; kruise `sidecarset_hotupgrade.go`
//! `flipPodSidecarContainerDo`, `isPodSidecarInHotUpgrading`, `isHotUpgradingReady`): once the
//! newly upgraded container of a hot-upgrade pair runs what the spec says and the pod's other
//! containers are ready, the idle one (the old version) is reset to `hotUpgradeEmptyImage`, its
//! version annotation and the working container's alt-version annotation go back to "0", and
//! the in-place update state records the imageID it ran.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;

use super::pods::{self, SetView};
use super::upgrade::record_update_state;
use super::{version_alt_annotation, version_annotation};

/// `isSidecarSetHasHotUpgradeContainer`.
pub fn has_hot_upgrade(view: &SetView<'_>) -> bool {
    view.sidecars.iter().any(|s| s.hot())
}

/// `isPodSidecarInHotUpgrading`: some idle container does not run the empty image yet.
pub fn in_hot_upgrading(view: &SetView<'_>, pod: &Pod) -> bool {
    view.sidecars.iter().filter(|s| s.hot()).any(|s| {
        let (_, idle) = pods::hot_containers(pod, s.name());
        pods::container(pod, &idle).and_then(|c| c.image.as_deref()).unwrap_or("") != s.empty_image()
    })
}

/// `isHotUpgradingReady`: the pod is running and ready, or every container but the idle ones is.
pub fn hot_upgrading_ready(view: &SetView<'_>, pod: &Pod) -> bool {
    if pods::is_running_and_ready(pod) {
        return true;
    }
    let idle: BTreeSet<String> =
        view.sidecars.iter().filter(|s| s.hot()).map(|s| pods::hot_containers(pod, s.name()).1).collect();
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .filter(|cs| !idle.contains(&cs.name))
        .all(|cs| cs.ready)
}

/// Whether the pod's hot-upgrade pairs are ready to be flipped: in hot upgrade, every sidecar but
/// the idle containers consistent, and ready (`UpdateSidecarSet`'s hot-upgrade step).
pub fn ready_to_flip(view: &SetView<'_>, pod: &Pod) -> bool {
    if !in_hot_upgrading(view, pod) {
        return false;
    }
    let mut names = view.names_in_pod.clone();
    for s in view.sidecars.iter().filter(|s| s.hot()) {
        names.remove(&pods::hot_containers(pod, s.name()).1);
    }
    // kruise: an empty set means "every sidecar container".
    let names = (!names.is_empty()).then_some(&names);
    pods::is_state_consistent(view, pod, names) && hot_upgrading_ready(view, pod)
}

/// `flipPodSidecarContainerDo`: the pod with its idle containers reset to the empty image, and the
/// names of the containers reset.
pub fn flipped(view: &SetView<'_>, pod: &Pod, now: Timestamp) -> (Pod, Vec<String>) {
    let mut out = pod.clone();
    let mut changed = Vec::new();
    for s in view.sidecars.iter().filter(|s| s.hot()) {
        let (working, idle) = pods::hot_containers(pod, s.name());
        let spec = out.spec.get_or_insert_with(Default::default);
        let Some(c) = spec
            .containers
            .iter_mut()
            .chain(spec.init_containers.iter_mut().flatten())
            .find(|c| c.name == idle)
        else {
            continue;
        };
        if c.image.as_deref().unwrap_or("") == s.empty_image() {
            continue;
        }
        c.image = Some(s.empty_image().to_string());
        let a = out.metadata.annotations.get_or_insert_with(Default::default);
        a.insert(version_annotation(&idle), "0".into());
        a.insert(version_alt_annotation(&working), "0".into());
        changed.push(idle);
    }
    record_update_state(view, &mut out, pod, &changed, now);
    (out, changed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::rollout::sidecarset::testkit::*;
    use crate::core::rollout::sidecarset::upgrade::upgraded_pod;
    use crate::core::sidecar::WORKING_HOT_UPGRADE_CONTAINER;

    fn image(p: &Pod, name: &str) -> String {
        pods::container(p, name).unwrap().image.clone().unwrap()
    }

    /// kruise `sidecarset_hotupgrade_test.go` `TestUpdateHotUpgradeSidecar` and
    /// `TestFlipHotUpgradingContainers`: upgrade the idle container, switch the working one, then
    /// reset the old one to the empty image.
    #[test]
    fn hot_upgrade_cycle() {
        let v1 = hot_set("sidecar:1", "empty:1");
        let mut v2 = hot_set("sidecar:2", "empty:1");
        v2.metadata.resource_version = Some("2".into());
        let view = SetView::new(&v2);
        let pod = run(injected_pod("p", &v1, &[]));
        assert!(!in_hot_upgrading(&view, &pod));
        assert_eq!(pods::hot_containers(&pod, "hot-sidecar").0, "hot-sidecar-1");

        let up = upgraded_pod(&view, &pod, "rev", at(100)).unwrap();
        assert_eq!(image(&up, "hot-sidecar-2"), "sidecar:2");
        assert_eq!(image(&up, "hot-sidecar-1"), "sidecar:1");
        let a = up.metadata.annotations.as_ref().unwrap();
        assert_eq!(a[WORKING_HOT_UPGRADE_CONTAINER], r#"{"hot-sidecar":"hot-sidecar-2"}"#);
        assert_eq!(a[&version_annotation("hot-sidecar-2")], "2");
        assert_eq!(a[&version_alt_annotation("hot-sidecar-2")], "1");
        assert_eq!(a[&version_alt_annotation("hot-sidecar-1")], "2");

        // Not consistent yet: the kubelet still runs the empty image in `-2`.
        let up_view = SetView::new(&v2);
        assert!(in_hot_upgrading(&up_view, &up));
        assert!(!ready_to_flip(&up_view, &up));
        let running = run(up);
        assert!(ready_to_flip(&up_view, &running));
        let (flip, changed) = flipped(&up_view, &running, at(200));
        assert_eq!(changed, vec!["hot-sidecar-1".to_string()]);
        assert_eq!(image(&flip, "hot-sidecar-1"), "empty:1");
        let a = flip.metadata.annotations.as_ref().unwrap();
        assert_eq!(a[&version_annotation("hot-sidecar-1")], "0");
        assert_eq!(a[&version_alt_annotation("hot-sidecar-2")], "0");
        assert!(!in_hot_upgrading(&up_view, &flip));
        // Flipping again changes nothing.
        assert!(flipped(&up_view, &flip, at(300)).1.is_empty());
    }

    /// `isHotUpgradingReady`: a not-ready pod is still ready to flip when only idle containers
    /// are not ready.
    #[test]
    fn idle_containers_do_not_count_for_readiness() {
        let set = hot_set("sidecar:1", "empty:1");
        let view = SetView::new(&set);
        let mut pod = run(injected_pod("p", &set, &[]));
        set_ready(&mut pod, false);
        assert!(hot_upgrading_ready(&view, &pod));
        let img = image(&pod, "hot-sidecar-2");
        set_status(&mut pod, "hot-sidecar-2", &img, &format!("sha-{img}"), false);
        assert!(hot_upgrading_ready(&view, &pod));
        let img = image(&pod, "nginx");
        set_status(&mut pod, "nginx", &img, &format!("sha-{img}"), false);
        assert!(!hot_upgrading_ready(&view, &pod));
    }
}
