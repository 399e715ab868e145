//! The revision data of a UnitedDeployment, kruise's `getUnitedDeploymentPatch` (`revision.go`,
//! v1.9.0): `{"spec":{"template":{…,"$patch":"replace"}}}` of the Go encoding of `spec.template`,
//! re-encoded through a map (keys sorted, numbers float64, HTML-safe escaping).
//!
//! Exact for every template kind: `spec.template` is encoded through tables of the Go structs
//! kruise v1.9.0 decodes it into — its `SubsetTemplate` and the four `…TemplateSpec`s, apps/v1
//! `StatefulSetSpec` and `DeploymentSpec` of k8s.io/api v0.32.10, kruise's v1beta1
//! `StatefulSetSpec` and v1alpha1 `CloneSetSpec` with their strategy structs, and, through
//! [`crate::compat::gotypes`], the pod template, label selector and volume claim templates. So
//! what Go writes for zero values is written here too: `metadata: {"creationTimestamp": null}`,
//! `selector: null`, the always-present struct fields (`updateStrategy`, `strategy`,
//! `scaleStrategy`, `volumeClaimUpdateStrategy` as `{}`), apps/v1 StatefulSet's non-omitempty
//! `serviceName: ""`, the pod template's Go shape; fields Go does not know are dropped. One
//! known difference: an apps/v1 StatefulSet or Deployment template with an explicit, empty
//! `selector: {}` (Go writes `{}`, we `null`; k8s-openapi cannot tell it from unset), and, as
//! for every workload's claim templates, a volume claim template that spells out its
//! `apiVersion`/`kind` (Go keeps them, we drop them). Checked
//! byte for byte, with the revision names, against Go (`go_fixtures.json`, computed by
//! `tools/gofixtures`, `go run . uniteddeployment`). kruise labels the revision with the
//! StatefulSet or Deployment template's labels, none for a CloneSet template.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::apis::uniteddeployment::UnitedDeployment;
use crate::compat::gojson::{self, Field, Go, f, np, o, p};
use crate::compat::gotypes::{LABEL_SELECTOR, OBJECT_META, PERSISTENT_VOLUME_CLAIM, POD_TEMPLATE_SPEC, STRS};
use crate::core::history::{self, NewRevision, Parent};
use crate::core::revision::{go_value, through_float64};
use crate::core::uniteddeployment::subsets::owner_reference;

const INT_OR_STRS: Go = Go::List(&Go::IntOrStr);
const PVCS: Go = Go::List(&Go::Struct(PERSISTENT_VOLUME_CLAIM));

// kruise apis/apps/pub (lifecycle.go, inplace_update.go, update_priority.go).
const LIFECYCLE_HOOK: &[Field] =
    &[o("labelsHandler", Go::StrMap), o("finalizersHandler", STRS), o("markPodNotReady", Go::Bool)];
const LIFECYCLE: &[Field] = &[
    p("preDelete", Go::Struct(LIFECYCLE_HOOK)),
    p("inPlaceUpdate", Go::Struct(LIFECYCLE_HOOK)),
    p("preNormal", Go::Struct(LIFECYCLE_HOOK)),
];
const IN_PLACE_UPDATE_STRATEGY: &[Field] = &[o("gracePeriodSeconds", Go::Int)];
const UPDATE_PRIORITY_ORDER_TERM: &[Field] = &[f("orderedKey", Go::Str)];
const UPDATE_PRIORITY_WEIGHT_TERM: &[Field] = &[f("weight", Go::Int), f("matchSelector", Go::Struct(LABEL_SELECTOR))];
const UPDATE_PRIORITY_STRATEGY: &[Field] = &[
    o("orderPriority", Go::List(&Go::Struct(UPDATE_PRIORITY_ORDER_TERM))),
    o("weightPriority", Go::List(&Go::Struct(UPDATE_PRIORITY_WEIGHT_TERM))),
];

// k8s.io/api v0.32.10 apps/v1 (types.go).
const ROLLING_UPDATE_STATEFUL_SET_STRATEGY: &[Field] = &[p("partition", Go::Int), p("maxUnavailable", Go::IntOrStr)];
const STATEFUL_SET_UPDATE_STRATEGY: &[Field] =
    &[o("type", Go::Str), p("rollingUpdate", Go::Struct(ROLLING_UPDATE_STATEFUL_SET_STRATEGY))];
const PVC_RETENTION_POLICY: &[Field] = &[o("whenDeleted", Go::Str), o("whenScaled", Go::Str)];
const STATEFUL_SET_ORDINALS: &[Field] = &[f("start", Go::Int)];
const STATEFUL_SET_SPEC: &[Field] = &[
    p("replicas", Go::Int),
    np("selector", Go::Struct(LABEL_SELECTOR)),
    f("template", Go::Struct(POD_TEMPLATE_SPEC)),
    o("volumeClaimTemplates", PVCS),
    f("serviceName", Go::Str),
    o("podManagementPolicy", Go::Str),
    o("updateStrategy", Go::Struct(STATEFUL_SET_UPDATE_STRATEGY)),
    p("revisionHistoryLimit", Go::Int),
    o("minReadySeconds", Go::Int),
    p("persistentVolumeClaimRetentionPolicy", Go::Struct(PVC_RETENTION_POLICY)),
    p("ordinals", Go::Struct(STATEFUL_SET_ORDINALS)),
];
const ROLLING_UPDATE_DEPLOYMENT: &[Field] = &[p("maxUnavailable", Go::IntOrStr), p("maxSurge", Go::IntOrStr)];
const DEPLOYMENT_STRATEGY: &[Field] = &[o("type", Go::Str), p("rollingUpdate", Go::Struct(ROLLING_UPDATE_DEPLOYMENT))];
const DEPLOYMENT_SPEC: &[Field] = &[
    p("replicas", Go::Int),
    np("selector", Go::Struct(LABEL_SELECTOR)),
    f("template", Go::Struct(POD_TEMPLATE_SPEC)),
    o("strategy", Go::Struct(DEPLOYMENT_STRATEGY)),
    o("minReadySeconds", Go::Int),
    p("revisionHistoryLimit", Go::Int),
    o("paused", Go::Bool),
    p("progressDeadlineSeconds", Go::Int),
];

// kruise apis/apps/v1beta1 (statefulset_types.go).
const UNORDERED_UPDATE_STRATEGY: &[Field] = &[p("priorityStrategy", Go::Struct(UPDATE_PRIORITY_STRATEGY))];
const ASTS_ROLLING_UPDATE: &[Field] = &[
    p("partition", Go::Int),
    p("maxUnavailable", Go::IntOrStr),
    o("podUpdatePolicy", Go::Str),
    o("paused", Go::Bool),
    p("unorderedUpdate", Go::Struct(UNORDERED_UPDATE_STRATEGY)),
    p("inPlaceUpdateStrategy", Go::Struct(IN_PLACE_UPDATE_STRATEGY)),
    p("minReadySeconds", Go::Int),
];
const ASTS_UPDATE_STRATEGY: &[Field] = &[o("type", Go::Str), p("rollingUpdate", Go::Struct(ASTS_ROLLING_UPDATE))];
const VOLUME_CLAIM_UPDATE_STRATEGY: &[Field] = &[o("type", Go::Str)];
const ASTS_SCALE_STRATEGY: &[Field] = &[p("maxUnavailable", Go::IntOrStr)];
const ASTS_SPEC: &[Field] = &[
    p("replicas", Go::Int),
    np("selector", Go::Struct(LABEL_SELECTOR)),
    f("template", Go::Struct(POD_TEMPLATE_SPEC)),
    o("volumeClaimTemplates", PVCS),
    o("volumeClaimUpdateStrategy", Go::Struct(VOLUME_CLAIM_UPDATE_STRATEGY)),
    o("serviceName", Go::Str),
    o("podManagementPolicy", Go::Str),
    o("updateStrategy", Go::Struct(ASTS_UPDATE_STRATEGY)),
    p("revisionHistoryLimit", Go::Int),
    o("reserveOrdinals", INT_OR_STRS),
    p("lifecycle", Go::Struct(LIFECYCLE)),
    p("scaleStrategy", Go::Struct(ASTS_SCALE_STRATEGY)),
    p("persistentVolumeClaimRetentionPolicy", Go::Struct(PVC_RETENTION_POLICY)),
    p("ordinals", Go::Struct(STATEFUL_SET_ORDINALS)),
];

// kruise apis/apps/v1alpha1 (cloneset_types.go, scatter_strategy.go).
const CLONE_SET_SCALE_STRATEGY: &[Field] =
    &[o("podsToDelete", STRS), p("maxUnavailable", Go::IntOrStr), o("disablePVCReuse", Go::Bool)];
const UPDATE_SCATTER_TERM: &[Field] = &[f("key", Go::Str), f("value", Go::Str)];
const CLONE_SET_UPDATE_STRATEGY: &[Field] = &[
    o("type", Go::Str),
    p("partition", Go::IntOrStr),
    p("maxUnavailable", Go::IntOrStr),
    p("maxSurge", Go::IntOrStr),
    o("paused", Go::Bool),
    p("priorityStrategy", Go::Struct(UPDATE_PRIORITY_STRATEGY)),
    o("scatterStrategy", Go::List(&Go::Struct(UPDATE_SCATTER_TERM))),
    p("inPlaceUpdateStrategy", Go::Struct(IN_PLACE_UPDATE_STRATEGY)),
];
const CLONE_SET_SPEC: &[Field] = &[
    p("replicas", Go::Int),
    np("selector", Go::Struct(LABEL_SELECTOR)),
    f("template", Go::Struct(POD_TEMPLATE_SPEC)),
    o("volumeClaimTemplates", PVCS),
    o("scaleStrategy", Go::Struct(CLONE_SET_SCALE_STRATEGY)),
    o("updateStrategy", Go::Struct(CLONE_SET_UPDATE_STRATEGY)),
    p("revisionHistoryLimit", Go::Int),
    o("minReadySeconds", Go::Int),
    p("lifecycle", Go::Struct(LIFECYCLE)),
    p("progressDeadlineSeconds", Go::Int),
];

// kruise apis/apps/v1alpha1 (uniteddeployment_types.go): each template embeds `ObjectMeta` as
// `json:"metadata,omitempty"` (a struct: always written) and its spec as `json:"spec"`.
const STATEFUL_SET_TEMPLATE: &[Field] =
    &[o("metadata", Go::Struct(OBJECT_META)), f("spec", Go::Struct(STATEFUL_SET_SPEC))];
const ASTS_TEMPLATE: &[Field] = &[o("metadata", Go::Struct(OBJECT_META)), f("spec", Go::Struct(ASTS_SPEC))];
const CLONE_SET_TEMPLATE: &[Field] = &[o("metadata", Go::Struct(OBJECT_META)), f("spec", Go::Struct(CLONE_SET_SPEC))];
const DEPLOYMENT_TEMPLATE: &[Field] = &[o("metadata", Go::Struct(OBJECT_META)), f("spec", Go::Struct(DEPLOYMENT_SPEC))];
const SUBSET_TEMPLATE: &[Field] = &[
    p("statefulSetTemplate", Go::Struct(STATEFUL_SET_TEMPLATE)),
    p("advancedStatefulSetTemplate", Go::Struct(ASTS_TEMPLATE)),
    p("cloneSetTemplate", Go::Struct(CLONE_SET_TEMPLATE)),
    p("deploymentTemplate", Go::Struct(DEPLOYMENT_TEMPLATE)),
];

/// kruise `getUnitedDeploymentPatch`: the data bytes of the UnitedDeployment's next revision.
pub fn revision_data(ud: &UnitedDeployment) -> String {
    let mut raw = serde_json::to_value(&ud.spec.template).unwrap_or_else(|_| json!({}));
    // k8s-openapi's apps/v1 specs hold `selector` as a plain `LabelSelector`: unset reads back
    // as `{}`. Go's `*LabelSelector` is nil when the template has none (what UnitedDeployment
    // templates carry; the UnitedDeployment's own selector is the one used), so an empty one is
    // taken as unset. An explicit `selector: {}` is the one template Go encodes differently.
    for kind in ["statefulSetTemplate", "deploymentTemplate"] {
        if let Some(spec) = raw.get_mut(kind).and_then(|t| t.get_mut("spec")).and_then(Value::as_object_mut)
            && spec.get("selector").is_some_and(is_empty_selector)
        {
            spec.remove("selector");
        }
    }
    // k8s-openapi writes `apiVersion`/`kind` on every PersistentVolumeClaim; Go's are
    // `omitempty` and unset in templates (as `serialize_claim_templates` does for our own specs).
    if let Some(Value::Array(claims)) = raw
        .get_mut("statefulSetTemplate")
        .and_then(|t| t.get_mut("spec"))
        .and_then(|s| s.get_mut("volumeClaimTemplates"))
    {
        for claim in claims.iter_mut().filter_map(Value::as_object_mut) {
            claim.remove("apiVersion");
            claim.remove("kind");
        }
    }
    let mut template = go_value(SUBSET_TEMPLATE, &raw);
    through_float64(&mut template);
    if let Value::Object(m) = &mut template {
        m.insert("$patch".into(), json!("replace"));
    }
    gojson::to_string(&json!({"spec": {"template": template}}))
}

/// A label selector with no requirement (`{}`, or empty `matchLabels`/`matchExpressions`).
fn is_empty_selector(v: &Value) -> bool {
    v.as_object().is_some_and(|m| m.values().all(|x| x.is_null() || x == &json!({}) || x == &json!([])))
}

/// kruise `newRevision`: the ControllerRevision of `ud`'s template numbered `revision`, named by
/// `history.HashControllerRevision` over [`revision_data`] and `collision_count` (kruise always
/// passes one: `status.collisionCount`, else 0).
pub fn new_revision(ud: &UnitedDeployment, revision: i64, collision_count: i32) -> NewRevision {
    let name = ud.metadata.name.clone().unwrap_or_default();
    let ns = ud.metadata.namespace.clone().unwrap_or_default();
    let parent = Parent { name: &name, namespace: Some(&ns), owner: owner_reference(ud) };
    history::new_controller_revision(&parent, &revision_labels(ud), revision_data(ud), revision, Some(collision_count))
}

/// The labels kruise gives the revision (`newRevision`'s `selectedLabels`).
pub fn revision_labels(ud: &UnitedDeployment) -> BTreeMap<String, String> {
    let t = &ud.spec.template;
    let meta = t
        .stateful_set_template
        .as_ref()
        .map(|s| &s.metadata)
        .or(t.advanced_stateful_set_template.as_ref().map(|s| &s.metadata))
        .or(t.deployment_template.as_ref().map(|s| &s.metadata));
    meta.and_then(|m| m.labels.clone()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row of `go_fixtures.json`: a `spec.template` and what kruise v1.9.0's code, run by Go
    /// (`tools/gofixtures`, `go run . uniteddeployment`), makes of it.
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Fixture {
        case: String,
        ud: String,
        collision_count: i32,
        template: Value,
        name: String,
        data: String,
    }

    /// Rows where our bytes are known to differ from Go's; still run, and the test fails if one
    /// of them starts to agree, so the list stays true. An apps/v1 template with an explicit
    /// `selector: {}`: k8s-openapi holds the selector as a plain `LabelSelector`, so `{}` and
    /// unset read back the same, and we write `null` (what Go writes for the usual, unset case).
    /// The same row for the Advanced StatefulSet template (our own type keeps the `Option`)
    /// agrees. And a claim template spelling out `apiVersion`/`kind`, which Go keeps and every
    /// claim-template encoder of ours drops (k8s-openapi always writes them, so they cannot be
    /// told from unset).
    const KNOWN_DIFFERENCES: &[&str] =
        &["statefulset explicit empty selector", "statefulset claim template with apiVersion and kind"];

    fn ud(name: &str, template: Value) -> UnitedDeployment {
        let mut ud = UnitedDeployment::new(name, serde_json::from_value(json!({"template": template})).unwrap());
        ud.metadata.namespace = Some("default".into());
        ud.metadata.uid = Some("uid-1".into());
        ud
    }

    #[test]
    fn data_and_names_match_go() {
        let fixtures: Vec<Fixture> = serde_json::from_str(include_str!("go_fixtures.json")).unwrap();
        assert_eq!(fixtures.len(), 13);
        let kinds = ["cloneSetTemplate", "statefulSetTemplate", "advancedStatefulSetTemplate", "deploymentTemplate"];
        for kind in kinds {
            assert!(fixtures.iter().any(|f| f.template.get(kind).is_some()), "no {kind} row");
        }
        let mut differing = Vec::new();
        for f in &fixtures {
            let ud = ud(&f.ud, f.template.clone());
            let data = revision_data(&ud);
            // The revision the controller creates (`new_revision`, as reconcile calls it).
            let rev = new_revision(&ud, 1, f.collision_count);
            let name = rev.revision.metadata.name.clone().unwrap_or_default();
            let agrees = data == f.data && rev.data == f.data && name == f.name;
            if KNOWN_DIFFERENCES.contains(&f.case.as_str()) {
                assert!(!agrees, "{}: listed as a known difference but agrees with Go now", f.case);
                differing.push(f.case.clone());
                continue;
            }
            assert_eq!(data, f.data, "{}: data", f.case);
            assert_eq!(rev.data, f.data, "{}: revision data", f.case);
            assert_eq!(name, f.name, "{}: name", f.case);
            // Read back from the apiserver as a value, the bytes are still Go's.
            assert_eq!(history::data_bytes(&rev.revision), f.data, "{}: stored data", f.case);
            assert_eq!(
                rev.revision.metadata.labels.as_ref().and_then(|l| l.get(history::CONTROLLER_REVISION_HASH_LABEL)),
                f.name.strip_prefix(&format!("{}-", f.ud)).map(str::to_string).as_ref(),
                "{}: hash label",
                f.case
            );
        }
        assert_eq!(differing.len(), KNOWN_DIFFERENCES.len());
    }

    #[test]
    fn template_labels_label_the_revision() {
        let t = json!({"containers": [{"name": "c", "image": "nginx"}]});
        let pod = json!({"metadata": {"labels": {"app": "web"}}, "spec": t});
        let sts = ud(
            "web",
            json!({"statefulSetTemplate": {"metadata": {"labels": {"team": "a"}}, "spec": {"template": pod}}}),
        );
        assert_eq!(revision_labels(&sts), BTreeMap::from([("team".to_string(), "a".to_string())]));
        let labels = new_revision(&sts, 3, 0).revision.metadata.labels.unwrap();
        assert_eq!(labels.get("team").map(String::as_str), Some("a"));
        let cs =
            ud("web", json!({"cloneSetTemplate": {"metadata": {"labels": {"team": "a"}}, "spec": {"template": pod}}}));
        assert!(revision_labels(&cs).is_empty());
        assert_eq!(new_revision(&cs, 3, 0).revision.revision, 3);
    }

    #[test]
    fn collision_count_changes_the_name_not_the_data() {
        let pod = json!({"spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        let d = ud("web", json!({"deploymentTemplate": {"spec": {"template": pod}}}));
        let (a, b) = (new_revision(&d, 1, 0), new_revision(&d, 1, 1));
        assert_eq!(a.data, b.data);
        assert_ne!(a.revision.metadata.name, b.revision.metadata.name);
        assert!(a.data.starts_with(r#"{"spec":{"template":{"$patch":"replace","deploymentTemplate":{"metadata":{"creationTimestamp":null},"spec":{"selector":null,"strategy":{}"#), "{}", a.data);
    }
}
