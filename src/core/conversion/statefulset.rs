//! Advanced StatefulSet v1alpha1 <-> v1beta1 conversion (typed for admission, JSON for `/convert`), as kruise's `ConvertTo`/`ConvertFrom`
//! (spec §0, §1.2.3): v1alpha1 is the v1beta1 shape minus the fields it lacks, so a round trip
//! through v1beta1 is lossless for every v1alpha1 field.

use serde_json::{Map, Value};

use crate::apis::statefulset::{v1alpha1, v1beta1};

/// The `spec` fields of v1alpha1 (every one is also v1beta1's, at the same place).
const V1ALPHA1_SPEC: [&str; 8] = [
    "replicas",
    "selector",
    "template",
    "volumeClaimTemplates",
    "serviceName",
    "podManagementPolicy",
    "updateStrategy",
    "revisionHistoryLimit",
];
/// The `status` fields of v1alpha1.
const V1ALPHA1_STATUS: [&str; 11] = [
    "observedGeneration",
    "replicas",
    "readyReplicas",
    "availableReplicas",
    "currentReplicas",
    "updatedReplicas",
    "currentRevision",
    "updateRevision",
    "collisionCount",
    "conditions",
    "labelSelector",
];

/// v1beta1 -> v1alpha1 on the JSON object (for `/convert`): the spec and status fields v1alpha1
/// lacks are dropped, as kruise's `ConvertFrom` drops them; everything else is kept verbatim
/// (v1alpha1 -> v1beta1 changes nothing but `apiVersion`).
pub fn json_to_v1alpha1(obj: &mut Map<String, Value>) {
    for (key, keep) in [("spec", &V1ALPHA1_SPEC[..]), ("status", &V1ALPHA1_STATUS[..])] {
        if let Some(Value::Object(m)) = obj.get_mut(key) {
            m.retain(|k, _| keep.contains(&k.as_str()));
        }
    }
}

/// v1alpha1 -> v1beta1 (the fields v1alpha1 lacks stay unset).
pub fn statefulset_to_v1beta1(src: &v1alpha1::StatefulSet) -> v1beta1::StatefulSet {
    let s = &src.spec;
    let mut dst = v1beta1::StatefulSet::new(
        "",
        v1beta1::StatefulSetSpec {
            replicas: s.replicas,
            selector: s.selector.clone(),
            template: s.template.clone(),
            volume_claim_templates: s.volume_claim_templates.clone(),
            service_name: s.service_name.clone(),
            pod_management_policy: s.pod_management_policy.clone(),
            update_strategy: s.update_strategy.clone(),
            revision_history_limit: s.revision_history_limit,
            ..Default::default()
        },
    );
    dst.metadata = src.metadata.clone();
    dst.status = src.status.as_ref().map(|st| v1beta1::StatefulSetStatus {
        observed_generation: st.observed_generation,
        replicas: st.replicas,
        ready_replicas: st.ready_replicas,
        available_replicas: st.available_replicas,
        current_replicas: st.current_replicas,
        updated_replicas: st.updated_replicas,
        current_revision: st.current_revision.clone(),
        update_revision: st.update_revision.clone(),
        collision_count: st.collision_count,
        conditions: st.conditions.clone(),
        label_selector: st.label_selector.clone(),
        ..Default::default()
    });
    dst
}

/// v1beta1 -> v1alpha1 (fields v1alpha1 lacks are dropped, as kruise does).
pub fn statefulset_to_v1alpha1(src: &v1beta1::StatefulSet) -> v1alpha1::StatefulSet {
    let s = &src.spec;
    let mut dst = v1alpha1::StatefulSet::new(
        "",
        v1alpha1::StatefulSetSpec {
            replicas: s.replicas,
            selector: s.selector.clone(),
            template: s.template.clone(),
            volume_claim_templates: s.volume_claim_templates.clone(),
            service_name: s.service_name.clone(),
            pod_management_policy: s.pod_management_policy.clone(),
            update_strategy: s.update_strategy.clone(),
            revision_history_limit: s.revision_history_limit,
        },
    );
    dst.metadata = src.metadata.clone();
    dst.status = src.status.as_ref().map(|st| v1alpha1::StatefulSetStatus {
        observed_generation: st.observed_generation,
        replicas: st.replicas,
        ready_replicas: st.ready_replicas,
        available_replicas: st.available_replicas,
        current_replicas: st.current_replicas,
        updated_replicas: st.updated_replicas,
        current_revision: st.current_revision.clone(),
        update_revision: st.update_revision.clone(),
        collision_count: st.collision_count,
        conditions: st.conditions.clone(),
        label_selector: st.label_selector.clone(),
    });
    dst
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trip_is_lossless_for_v1alpha1_fields() {
        let src: v1alpha1::StatefulSet = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "StatefulSet",
            "metadata": {"name": "s", "namespace": "ns", "labels": {"a": "b"}},
            "spec": {
                "replicas": 3, "serviceName": "svc", "podManagementPolicy": "Parallel",
                "selector": {"matchLabels": {"app": "x"}},
                "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 1, "maxUnavailable": "50%",
                    "podUpdatePolicy": "InPlaceIfPossible", "paused": true, "minReadySeconds": 5,
                    "unorderedUpdate": {"priorityStrategy": {"orderPriority": [{"orderedKey": "k"}]}}}},
                "revisionHistoryLimit": 4
            },
            "status": {"replicas": 2, "readyReplicas": 1, "currentRevision": "r1", "labelSelector": "app=x"}
        }))
        .unwrap();
        let beta = statefulset_to_v1beta1(&src);
        assert_eq!(beta.spec.service_name, "svc");
        assert_eq!(beta.status.as_ref().unwrap().ready_replicas, 1);
        let back = statefulset_to_v1alpha1(&beta);
        assert_eq!(back, src);
    }

    /// The JSON conversion drops what the typed one drops, and nothing else.
    #[test]
    fn json_conversion_agrees_with_typed() {
        let beta = json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "metadata": {"name": "s"},
            "spec": {"replicas": 2, "serviceName": "svc", "reserveOrdinals": [1], "lifecycle": {"preDelete": {"finalizersHandler": ["x"]}},
                "template": {"spec": {"containers": [], "future": 1}},
                "updateStrategy": {"rollingUpdate": {"partition": 1, "minReadySeconds": 3}}},
            "status": {"replicas": 2, "availableReplicas": 1, "volumeClaims": []}});
        let converted = crate::core::conversion::convert(0, &beta, crate::core::conversion::V1ALPHA1).unwrap();
        let typed: v1beta1::StatefulSet = serde_json::from_value(beta).unwrap();
        let want = serde_json::to_value(statefulset_to_v1alpha1(&typed)).unwrap();
        assert_eq!(converted["spec"]["template"]["spec"]["future"], 1, "kept verbatim");
        let strip = |mut v: serde_json::Value| {
            v["spec"]["template"] = json!(null);
            v["spec"].clone()
        };
        assert_eq!(converted["status"], json!({"replicas": 2, "availableReplicas": 1}));
        assert_eq!(strip(converted), strip(want));
    }
}
