//! The revision data of a UnitedDeployment, kruise's `getUnitedDeploymentPatch` (`revision.go`,
//! v1.9.0): `{"spec":{"template":{…,"$patch":"replace"}}}` of the Go encoding of `spec.template`,
//! re-encoded through a map (keys sorted, numbers float64). The CloneSet template is encoded as
//! Go encodes it (`metadata.creationTimestamp: null`, `selector: null` when unset, empty
//! `scaleStrategy`/`updateStrategy` objects, the pod template and volume claim templates through
//! their Go struct tables), so its revision names are kruise's for the fields those tables cover;
//! the other three templates are encoded as our types serialise them. kruise labels the revision
//! with the StatefulSet or Deployment template's labels, none for a CloneSet template.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde_json::{Value, json};

use crate::apis::uniteddeployment::UnitedDeployment;
use crate::compat::gojson;
use crate::compat::gotypes::{PERSISTENT_VOLUME_CLAIM, POD_TEMPLATE_SPEC};
use crate::core::revision::{go_value, through_float64};

/// kruise `getUnitedDeploymentPatch`: the data bytes of the UnitedDeployment's next revision.
pub fn revision_data(ud: &UnitedDeployment) -> String {
    let mut template = serde_json::to_value(&ud.spec.template).unwrap_or_else(|_| json!({}));
    if let Some(cs) = &ud.spec.template.clone_set_template {
        let mut spec = serde_json::to_value(&cs.spec).unwrap_or_else(|_| json!({}));
        if let Value::Object(m) = &mut spec {
            m.insert("selector".into(), serde_json::to_value(&cs.spec.selector).unwrap_or(Value::Null));
            m.insert("template".into(), go_value(POD_TEMPLATE_SPEC, &cs.spec.template));
            m.entry("scaleStrategy").or_insert_with(|| json!({}));
            m.entry("updateStrategy").or_insert_with(|| json!({}));
            if !cs.spec.volume_claim_templates.is_empty() {
                let claims: Vec<Value> =
                    cs.spec.volume_claim_templates.iter().map(|c| go_value(PERSISTENT_VOLUME_CLAIM, c)).collect();
                m.insert("volumeClaimTemplates".into(), Value::Array(claims));
            }
        }
        let meta = PodTemplateSpec { metadata: Some(cs.metadata.clone()), spec: None };
        let metadata = go_value(POD_TEMPLATE_SPEC, &meta).get("metadata").cloned().unwrap_or_else(|| json!({}));
        template["cloneSetTemplate"] = json!({"metadata": metadata, "spec": spec});
    }
    through_float64(&mut template);
    if let Value::Object(m) = &mut template {
        m.insert("$patch".into(), json!("replace"));
    }
    gojson::to_string(&json!({"spec": {"template": template}}))
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

    #[test]
    fn clone_set_template_is_go_shaped() {
        let ud = UnitedDeployment::new(
            "web",
            serde_json::from_value(json!({"template": {"cloneSetTemplate": {"metadata": {"labels": {"app": "web"}},
                "spec": {"template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}}}))
            .unwrap(),
        );
        let data: Value = serde_json::from_str(&revision_data(&ud)).unwrap();
        let t = &data["spec"]["template"];
        assert_eq!(t["$patch"], "replace");
        assert_eq!(t["cloneSetTemplate"]["metadata"], json!({"creationTimestamp": null, "labels": {"app": "web"}}));
        let spec = &t["cloneSetTemplate"]["spec"];
        assert_eq!(spec["selector"], Value::Null);
        assert_eq!((spec["scaleStrategy"].clone(), spec["updateStrategy"].clone()), (json!({}), json!({})));
        assert_eq!(spec["template"]["metadata"]["creationTimestamp"], Value::Null);
        assert_eq!(spec["template"]["spec"]["containers"][0]["resources"], json!({}));
        assert!(revision_labels(&ud).is_empty());
        // Keys sorted, as Go re-encodes a map.
        let text = revision_data(&ud);
        assert!(
            text.starts_with(r#"{"spec":{"template":{"$patch":"replace","cloneSetTemplate":{"metadata":"#),
            "{text}"
        );
    }
}
