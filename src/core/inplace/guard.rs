//! The InPlaceOnly webhook guard (spec §3.6, with the project's decision §11.2): decides whether an
//! UPDATE of a CloneSet or Advanced StatefulSet whose new strategy is InPlaceOnly changes anything
//! in `spec.template.spec` other than container images. The two template specs are JSON-diffed with
//! kruise's algorithm ([`crate::compat::jsondiff`]) and every op must be a `replace` whose path matches the
//! ANCHORED pattern `^/containers/[0-9]+/image$`. Kruise's Advanced StatefulSet used the unanchored
//! regex, which also let `/containers/0/imagePullPolicy` and `/initContainers/0/image` through;
//! §11.2 anchors it for both workloads. Template metadata is not compared (label and annotation
//! changes are always allowed), resources changes are rejected even with vertical scaling on, and
//! VCTs are not looked at. The caller passes DEFAULTED, normalised specs (spec §10.4 / §11.8) so a
//! dropped default does not show up as a spurious `remove`; this module only brings both to Go's
//! encoder shape ([`crate::compat::goshape`]), so the op reported is the one kruise would report.

use crate::compat::goshape::go_shape_pod_spec;
use crate::compat::jsondiff::{OpKind, PatchOp, create_patch};
use serde_json::Value;

/// `Ok(())` when `new_template_spec` differs from `old_template_spec` only in container images;
/// otherwise the first op (in [`create_patch`] order) that is not an image `replace`, for the deny
/// message (`… but found <op> <path>`).
pub fn check_in_place_only(old_template_spec: &Value, new_template_spec: &Value) -> Result<(), PatchOp> {
    let (mut old, mut new) = (old_template_spec.clone(), new_template_spec.clone());
    go_shape_pod_spec(&mut old);
    go_shape_pod_spec(&mut new);
    match create_patch(&old, &new)
        .into_iter()
        .find(|op| !(op.op == OpKind::Replace && is_container_image_path(&op.path)))
    {
        Some(op) => Err(op),
        None => Ok(()),
    }
}

/// `^/containers/[0-9]+/image$`, written out so there is no regex to compile on the serving path.
pub fn is_container_image_path(path: &str) -> bool {
    path.strip_prefix("/containers/")
        .and_then(|rest| rest.strip_suffix("/image"))
        .is_some_and(|index| !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A defaulted-looking template spec with two containers and one init container.
    fn base() -> Value {
        json!({
            "containers": [
                {"name": "main", "image": "nginx:1.25", "imagePullPolicy": "Always", "resources": {},
                 "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                 "env": [{"name": "MODE", "value": "prod"}]},
                {"name": "side", "image": "busybox:1.36", "imagePullPolicy": "Always", "resources": {},
                 "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}
            ],
            "initContainers": [
                {"name": "init", "image": "alpine:3", "imagePullPolicy": "Always", "resources": {},
                 "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}
            ],
            "restartPolicy": "Always",
            "dnsPolicy": "ClusterFirst",
            "terminationGracePeriodSeconds": 30
        })
    }

    fn with(edit: impl FnOnce(&mut Value)) -> Value {
        let mut v = base();
        edit(&mut v);
        v
    }

    #[test]
    fn guard_table() {
        // (name, new spec, expected first offending "<op> <path>" or None when allowed)
        let cases: Vec<(&str, Value, Option<&str>)> = vec![
            ("no change", base(), None),
            ("one image", with(|v| v["containers"][0]["image"] = json!("nginx:1.26")), None),
            (
                "both images",
                with(|v| {
                    v["containers"][0]["image"] = json!("nginx:1.26");
                    v["containers"][1]["image"] = json!("busybox:1.37");
                }),
                None,
            ),
            (
                "env value",
                with(|v| v["containers"][0]["env"][0]["value"] = json!("dev")),
                Some("replace /containers/0/env/0/value"),
            ),
            (
                "env added",
                with(|v| v["containers"][1]["env"] = json!([{"name": "X", "value": "1"}])),
                Some("add /containers/1/env"),
            ),
            (
                "env removed (kubectl merge patch dropped it)",
                with(|v| {
                    if let Some(c) = v["containers"][0].as_object_mut() {
                        c.remove("env");
                    }
                }),
                Some("remove /containers/0/env"),
            ),
            (
                "imagePullPolicy",
                with(|v| v["containers"][0]["imagePullPolicy"] = json!("IfNotPresent")),
                Some("replace /containers/0/imagePullPolicy"),
            ),
            (
                "init container image",
                with(|v| v["initContainers"][0]["image"] = json!("alpine:4")),
                Some("replace /initContainers/0/image"),
            ),
            (
                "container added at the end",
                with(|v| {
                    if let Some(cs) = v["containers"].as_array_mut() {
                        cs.push(json!({"name": "extra", "image": "x", "resources": {}}));
                    }
                }),
                Some("add /containers/2"),
            ),
            (
                "container added at the front",
                with(|v| {
                    if let Some(cs) = v["containers"].as_array_mut() {
                        cs.insert(0, json!({"name": "extra", "image": "x", "resources": {}}));
                    }
                }),
                Some("add /containers/2"),
            ),
            (
                "container removed",
                with(|v| {
                    if let Some(cs) = v["containers"].as_array_mut() {
                        cs.pop();
                    }
                }),
                Some("remove /containers/1"),
            ),
            (
                "resources added",
                with(|v| v["containers"][0]["resources"] = json!({"limits": {"cpu": "1"}})),
                Some("add /containers/0/resources/limits"),
            ),
            (
                "image and then env: the env op is reported",
                with(|v| {
                    v["containers"][0]["image"] = json!("nginx:1.26");
                    v["containers"][1]["env"] = json!([]);
                }),
                Some("add /containers/1/env"),
            ),
            ("pod-level field", with(|v| v["dnsPolicy"] = json!("Default")), Some("replace /dnsPolicy")),
            (
                "image removed",
                with(|v| {
                    if let Some(c) = v["containers"][0].as_object_mut() {
                        c.remove("image");
                    }
                }),
                Some("remove /containers/0/image"),
            ),
        ];
        for (name, new, want) in cases {
            let got = check_in_place_only(&base(), &new).err().map(|op| op.to_string());
            assert_eq!(got.as_deref(), want, "{name}");
        }
    }

    #[test]
    fn resources_change_between_two_resourced_specs_is_denied() {
        let old = with(|v| v["containers"][0]["resources"] = json!({"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}));
        let new = with(|v| v["containers"][0]["resources"] = json!({"limits": {"cpu": "2"}, "requests": {"cpu": "1"}}));
        let err = check_in_place_only(&old, &new).err();
        assert_eq!(
            err.map(|op| (op.to_string(), op.value)),
            Some(("replace /containers/0/resources/limits/cpu".to_owned(), Some(json!("2"))))
        );
    }

    #[test]
    fn containers_without_resources_are_diffed_like_go() {
        // Without the Go shape these flat containers would take the edit-distance route and report
        // `add /containers/0`; kruise always sees `resources: {}` and reports the appended tail.
        let old = json!({"containers": [{"name": "a", "image": "x"}]});
        let new = json!({"containers": [{"name": "z", "image": "y"}, {"name": "a", "image": "x"}]});
        let err = check_in_place_only(&old, &new).err().map(|op| op.to_string());
        assert_eq!(err.as_deref(), Some("add /containers/1"));
        let new = json!({"containers": [{"name": "a", "image": "x2"}]});
        assert_eq!(check_in_place_only(&old, &new), Ok(()));
    }

    #[test]
    fn anchored_image_path() {
        let cases = [
            ("/containers/0/image", true),
            ("/containers/12/image", true),
            ("/containers/0/imagePullPolicy", false),
            ("/initContainers/0/image", false),
            ("/containers//image", false),
            ("/containers/a/image", false),
            ("/containers/0/image/x", false),
            ("/spec/containers/0/image", false),
            ("/ephemeralContainers/0/image", false),
        ];
        for (path, want) in cases {
            assert_eq!(is_container_image_path(path), want, "{path}");
        }
    }
}
