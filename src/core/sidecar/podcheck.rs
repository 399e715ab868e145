//! The pod checks a SidecarSet's containers and volumes must pass (spec §2.3 items 7 and 9).
//! Kruise builds a fake Pod (namespace `default`, name `test`, dnsPolicy ClusterFirst,
//! restartPolicy Always, serviceAccountName default, terminationGracePeriodSeconds 30, the sidecar
//! init containers, containers and volumes, plus a dummy `test`/`busybox` container when the set
//! has no containers) and runs Kubernetes' `ValidatePodCreate` on it
//! ([`crate::compat::podspec::validate_pod_create_spec`], the same port the workload validators
//! use); paths are therefore the fake pod's (`spec.containers[0].image`). The fake pod fixes every
//! other field of the spec to a valid value, so only the sidecars' own mistakes are reported.

use k8s_openapi::api::core::v1::{Container, PodSpec, Volume};

use crate::compat::field::FieldError;
use crate::compat::podspec::validate_pod_create_spec;

/// Validates the fake pod built from the sidecars.
pub fn validate_fake_pod(init: &[Container], containers: &[Container], volumes: &[Volume]) -> Vec<FieldError> {
    let containers = if containers.is_empty() {
        vec![Container {
            name: "test".into(),
            image: Some("busybox".into()),
            image_pull_policy: Some("IfNotPresent".into()),
            termination_message_policy: Some("File".into()),
            ..Default::default()
        }]
    } else {
        containers.to_vec()
    };
    let spec = PodSpec {
        dns_policy: Some("ClusterFirst".into()),
        restart_policy: Some("Always".into()),
        init_containers: (!init.is_empty()).then(|| init.to_vec()),
        containers,
        volumes: (!volumes.is_empty()).then(|| volumes.to_vec()),
        service_account_name: Some("default".into()),
        termination_grace_period_seconds: Some(30),
        ..Default::default()
    };
    validate_pod_create_spec(&spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::field::aggregate;
    use serde_json::{Value, json};

    fn check(init: Value, containers: Value, volumes: Value) -> String {
        let init: Vec<Container> = serde_json::from_value(init).unwrap();
        let containers: Vec<Container> = serde_json::from_value(containers).unwrap();
        let volumes: Vec<Volume> = serde_json::from_value(volumes).unwrap();
        aggregate(&validate_fake_pod(&init, &containers, &volumes))
    }

    fn ok(name: &str) -> Value {
        json!({"name": name, "image": "x:1", "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File"})
    }

    #[test]
    fn valid_sidecars_pass() {
        let mut c = ok("side");
        c["volumeMounts"] = json!([{"name": "v", "mountPath": "/v"}]);
        assert_eq!(check(json!([ok("init")]), json!([c]), json!([{"name": "v", "emptyDir": {}}])), "");
        assert_eq!(check(json!([ok("only-init")]), json!([]), json!([])), "", "dummy container added");
    }

    #[test]
    fn each_rule() {
        let with = |patch: Value| {
            let mut c = ok("side");
            for (k, v) in patch.as_object().unwrap() {
                c[k] = v.clone();
            }
            c
        };
        let cases = [
            (json!([]), json!([with(json!({"name": ""}))]), json!([]), "spec.containers[0].name: Required value"),
            (
                json!([]),
                json!([with(json!({"name": "Bad_Name"}))]),
                json!([]),
                "spec.containers[0].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label",
            ),
            (json!([]), json!([ok("a"), ok("a")]), json!([]), "spec.containers[1].name: Duplicate value: \"a\""),
            (json!([ok("a")]), json!([ok("a")]), json!([]), "spec.initContainers[0].name: Duplicate value: \"a\""),
            (json!([ok("test")]), json!([]), json!([]), "spec.initContainers[0].name: Duplicate value: \"test\""),
            (json!([]), json!([with(json!({"image": ""}))]), json!([]), "spec.containers[0].image: Required value"),
            (
                json!([]),
                json!([with(json!({"imagePullPolicy": "Sometimes"}))]),
                json!([]),
                "spec.containers[0].imagePullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"",
            ),
            (
                json!([]),
                json!([with(json!({"terminationMessagePolicy": "X"}))]),
                json!([]),
                // Kubernetes v1.32 `validateContainerCommon`: NotSupported (older releases said
                // "Invalid value: ...: must be 'File' or 'FallbackToLogsOnError'").
                "spec.containers[0].terminationMessagePolicy: Unsupported value: \"X\": supported values: \"File\", \"FallbackToLogsOnError\"",
            ),
            (
                json!([]),
                json!([with(json!({"volumeMounts": [{"name": "missing", "mountPath": "/m"}]}))]),
                json!([]),
                "spec.containers[0].volumeMounts[0].name: Not found: \"missing\"",
            ),
            (
                json!([]),
                json!([with(
                    json!({"volumeMounts": [{"name": "v", "mountPath": "/m"}, {"name": "v", "mountPath": "/m"}]})
                )]),
                json!([{"name": "v", "emptyDir": {}}]),
                "spec.containers[0].volumeMounts[1].mountPath: Invalid value: \"/m\": must be unique",
            ),
            (
                json!([]),
                json!([with(json!({"volumeDevices": [{"name": "nope", "devicePath": "/d"}]}))]),
                json!([]),
                "spec.containers[0].volumeDevices[0].name: Not found: \"nope\"",
            ),
            (
                json!([]),
                json!([with(json!({"ports": [{"containerPort": 0, "protocol": "TCP"}]}))]),
                json!([]),
                // `validateContainerPorts`: 0 is an unset port.
                "spec.containers[0].ports[0].containerPort: Required value",
            ),
            (
                json!([]),
                json!([with(json!({"ports": [{"containerPort": 65536, "protocol": "TCP"}]}))]),
                json!([]),
                "spec.containers[0].ports[0].containerPort: Invalid value: 65536: must be between 1 and 65535, inclusive",
            ),
            (
                json!([]),
                json!([with(json!({"restartPolicy": "Always"}))]),
                json!([]),
                "spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers",
            ),
            (
                json!([with(json!({"restartPolicy": "OnFailure"}))]),
                json!([]),
                json!([]),
                "spec.initContainers[0].restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\"",
            ),
            (
                json!([with(json!({"readinessProbe": {"exec": {"command": ["x"]}}}))]),
                json!([]),
                json!([]),
                "spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
            ),
            (
                json!([]),
                json!([ok("a")]),
                json!([{"name": "v"}]),
                "spec.volumes[0]: Required value: must specify a volume type",
            ),
            (
                json!([]),
                json!([ok("a")]),
                json!([{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}]),
                "spec.volumes[1].name: Duplicate value: \"v\"",
            ),
        ];
        for (init, containers, volumes, want) in cases {
            let got = check(init.clone(), containers.clone(), volumes);
            assert!(got.contains(want), "{containers} {init}: got {got}, want {want}");
        }
        let mut native = ok("n");
        native["restartPolicy"] = json!("Always");
        native["readinessProbe"] = json!({"exec": {"command": ["x"]}});
        assert_eq!(check(json!([native]), json!([]), json!([])), "");
    }
}
