//! Advanced StatefulSet v1alpha1 <-> v1beta1 conversion, as kruise's `ConvertTo`/`ConvertFrom`
//! (spec §0, §1.2.3): v1alpha1 is the v1beta1 shape minus the fields it lacks, so a round trip
//! through v1beta1 is lossless for every v1alpha1 field.

use crate::apis::statefulset::{v1alpha1, v1beta1};

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
}
