//! What a PodUnavailableBudget reads off a pod (kruise `pubcontrol.commonControl`, v1.9):
//! whether it counts as available ([`is_ready`], [`is_state_consistent`]), and what kind of
//! change an UPDATE is ([`is_unavailable_changed`], [`can_resize_in_place`]).
//!
//! Left out of `IsPodStateConsistent`: the SidecarSet check (`IsSidecarContainerUpdateCompleted`,
//! whether every injected sidecar runs its SidecarSet's current image). A pod in the middle of a
//! sidecar hot upgrade therefore counts as consistent here where kruise would count it as not yet
//! consistent — it is protected one step sooner, never later.

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};

use super::has_unavailable_label;
use crate::compat::image::parse_image;
use crate::compat::quantity::Quantity;
use crate::core::inplace::apply::Options;
use crate::core::inplace::qos::pod_qos_class;
use crate::core::inplace::refresh::update_completed;
use crate::core::pods;

/// `IsPodReady`: running, Ready, not being deleted (`util.IsRunningAndReady`), and without an
/// `unavailable-pod.kruise.io/` label.
pub fn is_ready(pod: &Pod) -> bool {
    pods::phase(pod) == "Running"
        && pods::is_ready(pod)
        && pod.metadata.deletion_timestamp.is_none()
        && !has_unavailable_label(pod.metadata.labels.as_ref())
}

/// `IsPodStateConsistent`: containers whose image is a digest run that digest; when some image is
/// not a digest, an in-place update recorded on the pod must be complete
/// (`DefaultCheckInPlaceUpdateCompleted`). `vertical_scaling` is gate InPlaceWorkloadVerticalScaling.
pub fn is_state_consistent(pod: &Pod, vertical_scaling: bool) -> bool {
    let containers = pod.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or(&[]);
    let mut all_digest = true;
    for c in containers {
        let image = c.image.as_deref().unwrap_or("");
        if !is_digest(image) {
            all_digest = false;
            continue;
        }
        let image_id = pods::container_status(pod, &c.name).map(|s| s.image_id.as_str());
        if !image_id.is_some_and(|id| same_image(image, id)) {
            return false;
        }
    }
    all_digest || update_completed(pod, Options { grace_period_seconds: 0, vertical_scaling }).is_ok()
}

/// `util.IsImageDigest`.
fn is_digest(image: &str) -> bool {
    parse_image(image).is_ok_and(|r| r.digest.is_some())
}

/// `util.IsContainerImageEqual`: two digests compare repository and digest; otherwise repository
/// and tag (`latest` when absent); what does not parse equals nothing.
fn same_image(a: &str, b: &str) -> bool {
    let (Ok(ra), Ok(rb)) = (parse_image(a), parse_image(b)) else { return false };
    if ra.digest.is_some() && rb.digest.is_some() {
        return ra.name == rb.name && ra.digest == rb.digest;
    }
    let tag = |r: &crate::compat::image::ImageRef| r.tag.clone().unwrap_or_else(|| "latest".into());
    ra.name == rb.name && tag(&ra) == tag(&rb)
}

/// `IsPodUnavailableChanged`: the spec changed, or an `unavailable-pod.kruise.io/` label appeared.
/// Labels, annotations and status alone never make a pod unavailable.
pub fn is_unavailable_changed(old: &Pod, new: &Pod) -> bool {
    old.spec != new.spec
        || (!has_unavailable_label(old.metadata.labels.as_ref()) && has_unavailable_label(new.metadata.labels.as_ref()))
}

/// `CanResizeInplace`: the change only resizes cpu or memory of the same containers, on a pod
/// that is not static, without changing its QoS class, for resources whose `resizePolicy` does
/// not ask for a restart; and no unavailable label appeared.
pub fn can_resize_in_place(old: &Pod, new: &Pod) -> bool {
    if !has_unavailable_label(old.metadata.labels.as_ref()) && has_unavailable_label(new.metadata.labels.as_ref()) {
        return false;
    }
    if without_resources(old.spec.as_ref()) != without_resources(new.spec.as_ref()) {
        return false;
    }
    if is_static(old) || is_static(new) {
        return false;
    }
    match (pod_qos_class(old.spec.as_ref()), pod_qos_class(new.spec.as_ref())) {
        (Ok(a), Ok(b)) if a == b => {}
        _ => return false,
    }
    resources_resizable(old, new)
}

/// The spec with every container's resources cleared (`podSpecWithoutResourcesHash`).
fn without_resources(spec: Option<&PodSpec>) -> Option<PodSpec> {
    let mut spec = spec.cloned()?;
    for c in &mut spec.containers {
        c.resources = None;
    }
    Some(spec)
}

/// `types.IsStaticPod`: the `kubernetes.io/config.source` annotation names a source other than
/// the apiserver.
fn is_static(pod: &Pod) -> bool {
    pods::annotations(pod).get("kubernetes.io/config.source").is_some_and(|s| s != "api")
}

/// `canInplaceUpdateResources`: the same containers, and each changed resource is cpu or memory
/// with a `NotRequired` (or no) resize policy.
fn resources_resizable(old: &Pod, new: &Pod) -> bool {
    let containers = |p: &Pod| p.spec.as_ref().map(|s| s.containers.clone()).unwrap_or_default();
    let (old_c, new_c) = (containers(old), containers(new));
    if old_c.len() != new_c.len() {
        return false;
    }
    for c in &new_c {
        let Some(o) = old_c.iter().find(|o| o.name == c.name) else { return false };
        for name in resource_names(o, c) {
            if !resource_changed(o, c, &name) {
                continue;
            }
            if name != "cpu" && name != "memory" {
                return false;
            }
            let policy = c.resize_policy.iter().flatten().find(|p| p.resource_name == name);
            if policy.is_some_and(|p| !p.restart_policy.is_empty() && p.restart_policy != "NotRequired") {
                return false;
            }
        }
    }
    true
}

fn resource_names(a: &Container, b: &Container) -> Vec<String> {
    let mut names: Vec<String> = [a, b]
        .iter()
        .filter_map(|c| c.resources.as_ref())
        .flat_map(|r| r.requests.iter().flatten().chain(r.limits.iter().flatten()).map(|(k, _)| k.clone()))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// `isContainerResourcesChanged`: the request or limit appeared, went, or changed value.
fn resource_changed(a: &Container, b: &Container, name: &str) -> bool {
    let get = |c: &Container, limits: bool| {
        let r = c.resources.as_ref()?;
        let list = if limits { r.limits.as_ref() } else { r.requests.as_ref() }?;
        list.get(name).map(|q| Quantity::parse(&q.0).map_err(|_| q.0.clone()))
    };
    [false, true].into_iter().any(|limits| match (get(a, limits), get(b, limits)) {
        (None, None) => false,
        (Some(Ok(x)), Some(Ok(y))) => x != y,
        (Some(Err(x)), Some(Err(y))) => x != y,
        _ => true,
    })
}

#[cfg(test)]
mod tests {
    use super::super::testkit::pod;
    use super::*;
    use serde_json::json;

    /// `IsPodReady` (kruise `TestPodUnavailableBudgetValidatePod` pod states).
    #[test]
    fn readiness() {
        assert!(is_ready(&pod(|_| {})));
        assert!(!is_ready(&pod(|v| v["status"]["phase"] = json!("Pending"))));
        assert!(!is_ready(&pod(|v| v["status"]["conditions"][0]["status"] = json!("False"))));
        assert!(!is_ready(&pod(|v| v["metadata"]["deletionTimestamp"] = json!("2021-01-01T00:00:00Z"))));
        assert!(!is_ready(&pod(|v| v["metadata"]["labels"]["unavailable-pod.kruise.io/x"] = json!("true"))));
    }

    /// `IsPodStateConsistent` rows of kruise's `pub_control_test.go` (digest images; the in-place
    /// update state).
    #[test]
    fn state_consistency() {
        assert!(is_state_consistent(&pod(|_| {}), false), "no in-place update recorded");
        let digest = "nginx@sha256:a9286defaba7b3a519d585ba0e37d0b2cbee74ebfe590960b0b1d6a5e97d1e1d";
        let other = "nginx@sha256:b9286defaba7b3a519d585ba0e37d0b2cbee74ebfe590960b0b1d6a5e97d1e1d";
        let with_digest = |id: &str| {
            let id = id.to_string();
            pod(move |v| {
                v["spec"]["containers"][0]["image"] = json!(digest);
                v["status"]["containerStatuses"][0]["imageID"] = json!(format!("docker.io/library/{id}"));
            })
        };
        assert!(is_state_consistent(&with_digest(digest), false), "runs its digest");
        assert!(!is_state_consistent(&with_digest(other), false), "runs another digest");
        // An in-place update of `main` whose container still reports the old imageID.
        let updating = pod(|v| {
            v["metadata"]["annotations"]["apps.kruise.io/inplace-update-state"] = json!(
                "{\"revision\":\"r2\",\"updateTimestamp\":\"2021-01-01T00:00:00Z\",\"lastContainerStatuses\":{\"main\":{\"imageID\":\"nginx@sha256:1\"}}}"
            );
            v["spec"]["containers"][0]["image"] = json!("nginx:v2");
        });
        assert!(!is_state_consistent(&updating, false));
        let updated = pod(|v| {
            v["metadata"]["annotations"]["apps.kruise.io/inplace-update-state"] = json!(
                "{\"revision\":\"r2\",\"updateTimestamp\":\"2021-01-01T00:00:00Z\",\"lastContainerStatuses\":{\"main\":{\"imageID\":\"nginx@sha256:1\"}}}"
            );
            v["spec"]["containers"][0]["image"] = json!("nginx:v2");
            v["status"]["containerStatuses"][0]["image"] = json!("nginx:v2");
            v["status"]["containerStatuses"][0]["imageID"] = json!("nginx@sha256:2");
        });
        assert!(is_state_consistent(&updated, false));
    }

    /// `IsPodUnavailableChanged` (kruise `TestIsPodUnavailableChanged`).
    #[test]
    fn unavailable_changes() {
        let old = pod(|_| {});
        let rows = [
            ("only labels changed", pod(|v| v["metadata"]["labels"]["version"] = json!("v2")), false),
            ("only annotations changed", pod(|v| v["metadata"]["annotations"]["a"] = json!("b")), false),
            ("only status changed", pod(|v| v["status"]["phase"] = json!("Pending")), false),
            ("image changed", pod(|v| v["spec"]["containers"][0]["image"] = json!("nginx:v2")), true),
            (
                "unavailable label added",
                pod(|v| v["metadata"]["labels"]["unavailable-pod.kruise.io/x"] = json!("1")),
                true,
            ),
        ];
        for (name, new, want) in rows {
            assert_eq!(is_unavailable_changed(&old, &new), want, "{name}");
        }
    }

    /// `CanResizeInplace` (kruise `TestCanResizeInplace` shapes).
    #[test]
    fn resize_in_place() {
        let sized = |cpu: &str, mem: &str, policy: Option<&str>| {
            let (cpu, mem, policy) = (cpu.to_string(), mem.to_string(), policy.map(str::to_string));
            pod(move |v| {
                v["spec"]["containers"][0]["resources"] =
                    json!({"requests": {"cpu": cpu, "memory": mem}, "limits": {"cpu": "4", "memory": "4Gi"}});
                if let Some(p) = policy {
                    v["spec"]["containers"][0]["resizePolicy"] = json!([{"resourceName": "cpu", "restartPolicy": p}]);
                }
            })
        };
        let old = sized("1", "1Gi", None);
        assert!(can_resize_in_place(&old, &sized("2", "1Gi", None)), "cpu request grows");
        assert!(can_resize_in_place(&old, &sized("1", "2Gi", None)), "memory request grows");
        assert!(can_resize_in_place(&old, &sized("1000m", "1Gi", None)), "same quantity spelled otherwise");
        let restart = sized("1", "1Gi", Some("RestartContainer"));
        assert!(!can_resize_in_place(&restart, &sized("2", "1Gi", Some("RestartContainer"))), "restart policy");
        assert!(can_resize_in_place(&restart, &sized("1", "2Gi", Some("RestartContainer"))), "memory has no policy");
        let free = sized("1", "1Gi", Some("NotRequired"));
        assert!(can_resize_in_place(&free, &sized("2", "1Gi", Some("NotRequired"))));
        assert!(!can_resize_in_place(&old, &sized("2", "1Gi", Some("NotRequired"))), "the policy itself changed");
        let image = pod(|v| {
            v["spec"]["containers"][0]["resources"] =
                json!({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "4", "memory": "4Gi"}});
            v["spec"]["containers"][0]["image"] = json!("nginx:v2");
        });
        assert!(!can_resize_in_place(&old, &image), "image changed too");
        let guaranteed = pod(|v| {
            v["spec"]["containers"][0]["resources"] =
                json!({"requests": {"cpu": "4", "memory": "4Gi"}, "limits": {"cpu": "4", "memory": "4Gi"}});
        });
        assert!(!can_resize_in_place(&old, &guaranteed), "QoS class changes");
        let ephemeral = pod(|v| {
            v["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": "1", "memory": "1Gi",
                "ephemeral-storage": "1Gi"}, "limits": {"cpu": "4", "memory": "4Gi"}});
        });
        assert!(!can_resize_in_place(&old, &ephemeral), "only cpu and memory resize");
        let static_pod = |p: Pod| {
            let mut p = p;
            p.metadata.annotations.get_or_insert_default().insert("kubernetes.io/config.source".into(), "file".into());
            p
        };
        assert!(!can_resize_in_place(&static_pod(old.clone()), &static_pod(sized("2", "1Gi", None))));
    }
}
