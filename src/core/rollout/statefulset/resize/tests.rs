//! kruise's `pkg/util/pvc/pvc_compare_utils_test.go` row by row (`TestCompareWithCheckFn`,
//! `TestIsPVCCompatibleAndReady`, `TestIsPatchPVCCompleted`), then the claim side of
//! `statefulset_resize_pvc.go` (`TryPatchPVC`, `updatePVCStatus`) on a set of ours.

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::api::storage::v1::StorageClass;
use serde_json::{Value, json};

use super::*;
use crate::core::rollout::statefulset::fixtures;

fn claim(class: Option<&str>, modes: &[&str], request: &str, limit: Option<&str>) -> PersistentVolumeClaim {
    let mut spec = json!({"accessModes": modes, "resources": {"requests": {"storage": request}}});
    if let Some(c) = class {
        spec["storageClassName"] = json!(c);
    }
    if let Some(l) = limit {
        spec["resources"]["limits"] = json!({"storage": l});
    }
    serde_json::from_value(json!({"metadata": {}, "spec": spec})).unwrap()
}

#[test]
fn compare_with_check_fn() {
    let std = Some("standard");
    let rwo = ["ReadWriteOnce"];
    // (name, claim, template, matched, resize only)
    let rows = [
        (
            "Matching claim and template",
            claim(std, &rwo, "1Gi", Some("2Gi")),
            claim(std, &rwo, "1Gi", Some("2Gi")),
            true,
            false,
        ),
        (
            "Different storage class",
            claim(std, &rwo, "1Gi", Some("2Gi")),
            claim(Some("gold"), &rwo, "1Gi", Some("2Gi")),
            false,
            false,
        ),
        (
            "Different access modes",
            claim(std, &rwo, "1Gi", Some("2Gi")),
            claim(std, &["ReadOnlyMany"], "1Gi", Some("2Gi")),
            false,
            false,
        ),
        (
            "Different access modes2",
            claim(std, &["ReadWriteOnce", "ReadWriteOncePod"], "1Gi", Some("2Gi")),
            claim(std, &["ReadOnlyMany"], "1Gi", Some("2Gi")),
            false,
            false,
        ),
        (
            "Claim requests less storage than template",
            claim(std, &rwo, "500Mi", Some("2Gi")),
            claim(std, &rwo, "1Gi", Some("2Gi")),
            false,
            true,
        ),
        (
            "Claim requests more storage than template",
            claim(std, &rwo, "5Gi", Some("5Gi")),
            claim(std, &rwo, "1Gi", Some("2Gi")),
            true,
            false,
        ),
    ];
    for (name, c, t, matched, resize_only) in rows {
        assert_eq!(compare(&c, &t), (matched, resize_only), "{name}");
    }
}

fn with_capacity(mut c: PersistentVolumeClaim, capacity: &str) -> PersistentVolumeClaim {
    c.status = Some(serde_json::from_value(json!({"capacity": {"storage": capacity}})).unwrap());
    c
}

#[test]
fn is_pvc_compatible_and_ready() {
    // (name, capacity, request, template request, compatible, ready)
    let rows = [
        ("PVC is compatible and ready", "1Gi", "1Gi", "1Gi", true, true),
        ("PVC is compatible but not ready", "512Mi", "1Gi", "1Gi", true, false),
        ("PVC is compatible but not ready2", "512Mi", "2Gi", "1Gi", true, false),
        ("PVC is compatible but not ready3", "1Gi", "4Gi", "1Gi", true, false),
        ("PVC is not compatible", "512Mi", "2Gi", "3Gi", false, false),
    ];
    for (name, cap, request, template, compatible, ready) in rows {
        let c = with_capacity(claim(None, &[], request, None), cap);
        let t = claim(None, &[], template, None);
        assert_eq!(compatible_and_ready(&c, &t), (compatible, ready), "{name}");
    }
}

#[test]
fn is_patch_pvc_completed() {
    let pending = |t: &str, s: &str| json!([{"type": t, "status": s}]);
    // (name, compatible, ready, conditions, completed)
    let rows = [
        ("Compatible and ready", true, true, Value::Null, true),
        ("Compatible but not ready(pending=true)", true, false, pending("FileSystemResizePending", "True"), true),
        ("Compatible but not ready(pending=false)", true, false, pending("FileSystemResizePending", "False"), false),
        ("Compatible but not ready(resizing=true)", true, false, pending("Resizing", "True"), false),
        ("Not compatible", false, true, Value::Null, false),
    ];
    let template = claim(None, &[], "1Gi", None);
    for (name, compatible, ready, conditions, completed) in rows {
        let request = if compatible { "1Gi" } else { "2Mi" };
        let mut c = with_capacity(claim(None, &[], request, None), if ready { request } else { "1Mi" });
        if !conditions.is_null() {
            c.status.as_mut().unwrap().conditions = Some(serde_json::from_value(conditions).unwrap());
        }
        assert_eq!(patch_completed(&c, &template), completed, "{name}");
    }
}

/// A missing storage entry is zero, as Go's `ResourceList.Storage()` makes it.
#[test]
fn a_missing_request_is_zero() {
    let none: PersistentVolumeClaim = serde_json::from_value(json!({"spec": {}})).unwrap();
    let one = claim(None, &[], "1Gi", None);
    assert!(needs_expand(&none, &one));
    assert!(!needs_expand(&one, &none));
    assert_eq!(compatible_and_ready(&none, &none), (true, true));
}

fn set_with_data(request: &str, class: Option<&str>) -> StatefulSet {
    let mut set = fixtures::stateful_set_with_volumes(3, "foo", &["datadir"], &[]);
    let t = &mut set.spec.volume_claim_templates[0];
    t.spec = Some(
        serde_json::from_value(json!({"accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": request}}}))
        .unwrap(),
    );
    if let Some(c) = class {
        t.spec.as_mut().unwrap().storage_class_name = Some(c.into());
    }
    set.spec.volume_claim_update_strategy.type_ = ON_POD_ROLLING_UPDATE.into();
    set
}

fn existing(
    set: &StatefulSet,
    ordinal: i64,
    request: &str,
    capacity: &str,
    class: Option<&str>,
) -> PersistentVolumeClaim {
    let (_, mut c) = identity::persistent_volume_claims(set, ordinal).remove(0);
    let spec = c.spec.get_or_insert_with(Default::default);
    spec.resources = Some(serde_json::from_value(json!({"requests": {"storage": request}})).unwrap());
    spec.storage_class_name = class.map(str::to_string);
    with_capacity(c, capacity)
}

fn storage_class(name: &str, expand: Option<bool>) -> StorageClass {
    let mut v = json!({"metadata": {"name": name}, "provisioner": "csi.example.com"});
    if let Some(e) = expand {
        v["allowVolumeExpansion"] = json!(e);
    }
    serde_json::from_value(v).unwrap()
}

#[test]
fn try_patch_pvc() {
    let classes =
        [storage_class("fast", Some(true)), storage_class("fixed", Some(false)), storage_class("plain", None)];
    let class = |n: &str| classes.iter().find(|c| c.metadata.name.as_deref() == Some(n));
    /// (case, template class, claim class, claim request, want: Ok(writes) or Err(warn))
    type Row<'a> = (&'a str, Option<&'a str>, Option<&'a str>, &'a str, Result<usize, bool>);
    let rows: [Row<'_>; 7] = [
        ("already the template's size", None, Some("fast"), "2Gi", Ok(0)),
        ("larger than the template", None, Some("fast"), "3Gi", Ok(0)),
        ("expandable class", None, Some("fast"), "1Gi", Ok(1)),
        ("no class named: no check", None, None, "1Gi", Ok(1)),
        ("class refuses expansion", None, Some("fixed"), "1Gi", Err(false)),
        ("class silent on expansion", None, Some("plain"), "1Gi", Err(false)),
        ("another class than the template's", Some("fast"), Some("plain"), "1Gi", Err(true)),
    ];
    for (case, template_class, claim_class, request, want) in rows {
        let set = set_with_data("2Gi", template_class);
        let c = existing(&set, 1, request, request, claim_class);
        let pod = fixtures::stateful_set_pod(&set, 1);
        let got = pod_claims(&set, &pod, |n| (c.metadata.name.as_deref() == Some(n)).then_some(&c), class);
        match (got.refusal, want) {
            (None, Ok(n)) => {
                let writes = got.writes;
                assert_eq!(writes.len(), n, "{case}");
                for w in &writes {
                    assert_eq!(
                        w.spec.as_ref().unwrap().resources,
                        set.spec.volume_claim_templates[0].spec.as_ref().unwrap().resources,
                        "{case}"
                    );
                    assert_eq!(w.metadata.annotations.as_ref().unwrap()[OWNED_BY_ASTS], "foo", "{case}");
                    assert_eq!(
                        w.metadata.resource_version, c.metadata.resource_version,
                        "{case}: pinned to what was read"
                    );
                }
            }
            (Some(r), Err(warn)) => {
                assert_eq!(r.warn, warn, "{case}: {}", r.message);
                assert_eq!(r.claim, "datadir-foo-1");
                assert!(got.writes.is_empty(), "{case}");
            }
            (got, want) => panic!("{case}: got {got:?}, want {want:?}"),
        }
    }
    let set = set_with_data("2Gi", None);
    let pod = fixtures::stateful_set_pod(&set, 1);
    let got = pod_claims(&set, &pod, |_| None, class);
    let all_good = PodClaims { matched: true, ready: true, completed: true, writes: vec![], refusal: None };
    assert_eq!(got, all_good, "a missing claim is skipped");
}

#[test]
fn a_resized_claim_waits_for_its_capacity_or_the_kubelet() {
    let set = set_with_data("2Gi", None);
    let pod = fixtures::stateful_set_pod(&set, 0);
    let check = |c: &PersistentVolumeClaim| pod_claims(&set, &pod, |_| Some(c), |_| None);
    let small = existing(&set, 0, "1Gi", "1Gi", None);
    let got = check(&small);
    assert!(!got.matched && got.ready && !got.completed, "expanding: {got:?}");
    let resizing = existing(&set, 0, "2Gi", "1Gi", None);
    let got = check(&resizing);
    assert!(got.matched && !got.ready && !got.completed, "the CSI driver resizes: {got:?}");
    let mut pending = resizing.clone();
    pending.status.as_mut().unwrap().conditions =
        Some(serde_json::from_value(json!([{"type": "FileSystemResizePending", "status": "True"}])).unwrap());
    let got = check(&pending);
    assert!(got.matched && !got.ready && got.completed, "the kubelet finishes it: {got:?}");
    let mut terminating = small.clone();
    terminating.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
    assert!(check(&terminating).matched, "a terminating claim is skipped");
}
