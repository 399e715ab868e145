//! The pod-template rules of the workload validators (spec §2.1 items 3–5, §2.2): the workload
//! selector (required, valid, non-empty, matching the template labels) and the template itself,
//! which is Kubernetes' `ValidatePodTemplateSpec` ([`crate::compat::podspec`]) run on the
//! DEFAULTED template (§1.5), as kruise's `ConvertPodTemplateSpec` does, with the
//! volumeClaimTemplates added as PVC volumes so mounts may use them.

use k8s_openapi::api::core::v1::PodTemplateSpec;

use crate::compat::field::FieldError;
use crate::compat::selector::Selector;

/// `spec.selector` of a workload: required, valid and non-empty (`kind` names the workload in the
/// message, e.g. "empty selector is invalid for cloneset"), then matching the template labels.
/// Returns the errors and whether the selector converted (kruise skips the template checks when
/// it does not).
pub fn validate_workload_selector(
    selector: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
    template: &PodTemplateSpec,
    kind: &str,
) -> (Vec<FieldError>, bool) {
    let mut errs = Vec::new();
    match selector {
        None => errs.push(FieldError::required("spec.selector", "")),
        Some(sel) => {
            errs.extend(crate::compat::selector::validate_label_selector(sel, "spec.selector"));
            if crate::compat::selector::is_empty(sel) {
                let detail = format!("empty selector is invalid for {kind}");
                errs.push(FieldError::invalid("spec.selector", super::json(sel), &detail));
            }
        }
    }
    match Selector::from_optional(selector) {
        Err(_) => {
            errs.push(FieldError::invalid("spec.selector", super::json(&selector), ""));
            (errs, false)
        }
        Ok(sel) => {
            errs.extend(selector_matches_template(&sel, template));
            (errs, true)
        }
    }
}

/// A non-empty selector must match the template labels (`spec.template.metadata.labels`, as
/// kruise and Kubernetes' StatefulSet validation report it). A nil selector selects nothing, so
/// it never matches, as in Go.
pub fn selector_matches_template(sel: &Selector, template: &PodTemplateSpec) -> Vec<FieldError> {
    let labels = template.metadata.as_ref().and_then(|m| m.labels.clone());
    if !sel.is_empty() && !sel.matches(&labels.clone().unwrap_or_default()) {
        let value = labels.map_or(serde_json::Value::Null, |l| serde_json::to_value(l).unwrap_or_default());
        return vec![FieldError::invalid(
            "spec.template.metadata.labels",
            value,
            "`selector` does not match template `labels`",
        )];
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::field::aggregate;
    use crate::compat::podspec::validate_pod_template_spec;
    use crate::core::defaults::pod::default_pod_spec;
    use crate::core::features::FeatureGates;
    use serde_json::{Value, json};

    /// A valid template, defaulted as the webhook sees it.
    fn base() -> Value {
        json!({
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [{"name": "main", "image": "nginx:1.25",
                                "ports": [{"name": "http", "containerPort": 80}],
                                "volumeMounts": [{"name": "conf", "mountPath": "/etc/conf"}]}],
                "initContainers": [{"name": "init", "image": "busybox"}],
                "volumes": [{"name": "conf", "configMap": {"name": "c"}}]
            }
        })
    }

    fn check(v: Value, claims: &[&str]) -> String {
        let mut t: PodTemplateSpec = serde_json::from_value(v).unwrap();
        let spec = t.spec.get_or_insert_with(Default::default);
        default_pod_spec(spec, &FeatureGates::default(), "spec.template.spec").unwrap();
        let claims: Vec<String> = claims.iter().map(|s| s.to_string()).collect();
        aggregate(&validate_pod_template_spec(&t, &claims, "spec.template"))
    }

    fn push(list: &mut Value, item: Value) {
        list.as_array_mut().unwrap().push(item);
    }

    fn with(edit: impl FnOnce(&mut Value)) -> Value {
        let mut v = base();
        edit(&mut v);
        v
    }

    #[test]
    fn template_table() {
        let label_err = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and \
                         must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used \
                         for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
        #[rustfmt::skip]
        let cases: Vec<(&str, Value, &[&str], String)> = vec![
            ("valid", base(), &[], String::new()),
            ("mount of a volumeClaimTemplate", with(|v| v["spec"]["containers"][0]["volumeMounts"] =
                json!([{"name": "data", "mountPath": "/data"}])), &["data"], String::new()),
            ("bad template label", with(|v| v["metadata"]["labels"]["x"] = json!("-bad")), &[],
             "spec.template.labels: Invalid value: \"-bad\": a valid label must be an empty string or consist of \
              alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. \
              'MyValue',  or 'my_value',  or '12345', regex used for validation is \
              '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".into()),
            ("bad template annotation", with(|v| v["metadata"]["annotations"] = json!({"a b": "x"})), &[],
             "spec.template.annotations: Invalid value: \"a b\": name part must consist of alphanumeric characters, \
              '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  \
              or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".into()),
            ("no containers", with(|v| v["spec"]["containers"] = json!([])), &[],
             "spec.template.spec.containers: Required value".into()),
            ("no spec at all", json!({"metadata": {"labels": {"app": "web"}}}), &[],
             "spec.template.spec.containers: Required value".into()),
            ("container name missing", with(|v| v["spec"]["containers"][0]["name"] = json!("")), &[],
             "spec.template.spec.containers[0].name: Required value".into()),
            ("container name not a label", with(|v| v["spec"]["containers"][0]["name"] = json!("Main")), &[],
             format!("spec.template.spec.containers[0].name: Invalid value: \"Main\": {label_err}")),
            ("duplicate container names", with(|v| push(&mut v["spec"]["containers"], json!({"name": "main", "image": "x"}))), &[],
             "spec.template.spec.containers[1].name: Duplicate value: \"main\"".into()),
            ("init container named like a container", with(|v| v["spec"]["initContainers"][0]["name"] = json!("main")), &[],
             "spec.template.spec.initContainers[0].name: Duplicate value: \"main\"".into()),
            ("image missing", with(|v| v["spec"]["containers"][0]["image"] = json!("")), &[],
             "spec.template.spec.containers[0].image: Required value".into()),
            ("mount of a missing volume", with(|v| v["spec"]["containers"][0]["volumeMounts"][0]["name"] = json!("nope")), &[],
             "spec.template.spec.containers[0].volumeMounts[0].name: Not found: \"nope\"".into()),
            ("mount of a volumeClaimTemplate that is not declared", with(|v| v["spec"]["containers"][0]["volumeMounts"] =
                json!([{"name": "data", "mountPath": "/data"}])), &[],
             "spec.template.spec.containers[0].volumeMounts[0].name: Not found: \"data\"".into()),
            ("mount path twice", with(|v| push(&mut v["spec"]["containers"][0]["volumeMounts"],
                json!({"name": "conf", "mountPath": "/etc/conf"}))), &[],
             "spec.template.spec.containers[0].volumeMounts[1].mountPath: Invalid value: \"/etc/conf\": must be unique".into()),
            ("duplicate volume names", with(|v| push(&mut v["spec"]["volumes"], json!({"name": "conf", "emptyDir": {}}))), &[],
             "spec.template.spec.volumes[1].name: Duplicate value: \"conf\"".into()),
            ("volume named like a volumeClaimTemplate", base(), &["conf"],
             "spec.template.spec.volumes[1].name: Duplicate value: \"conf\"".into()),
            ("two volume sources", with(|v| v["spec"]["volumes"][0]["emptyDir"] = json!({})), &[],
             "[spec.template.spec.volumes[0].configMap: Forbidden: may not specify more than 1 volume type, \
              spec.template.spec.containers[0].volumeMounts[0].name: Not found: \"conf\"]".into()),
            ("port out of range", with(|v| v["spec"]["containers"][0]["ports"][0]["containerPort"] = json!(70000)), &[],
             "spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive".into()),
            ("port zero", with(|v| v["spec"]["containers"][0]["ports"][0]["containerPort"] = json!(0)), &[],
             "spec.template.spec.containers[0].ports[0].containerPort: Required value".into()),
            ("host port out of range", with(|v| v["spec"]["containers"][0]["ports"][0]["hostPort"] = json!(-1)), &[],
             "spec.template.spec.containers[0].ports[0].hostPort: Invalid value: -1: must be between 1 and 65535, inclusive".into()),
            ("port name too long", with(|v| v["spec"]["containers"][0]["ports"][0]["name"] = json!("a-very-long-port-name")), &[],
             "spec.template.spec.containers[0].ports[0].name: Invalid value: \"a-very-long-port-name\": must be no more than 15 characters".into()),
            ("bad protocol", with(|v| v["spec"]["containers"][0]["ports"][0]["protocol"] = json!("ICMP")), &[],
             "spec.template.spec.containers[0].ports[0].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"".into()),
            ("host port used twice", with(|v| v["spec"]["containers"][0]["ports"] =
                json!([{"containerPort": 80, "hostPort": 8080}, {"containerPort": 81, "hostPort": 8080}])), &[],
             "spec.template.spec.containers[0].ports[1].hostPort: Duplicate value: \"TCP//8080\"".into()),
            ("hostNetwork with another hostPort", with(|v| {
                v["spec"]["hostNetwork"] = json!(true);
                v["spec"]["containers"][0]["ports"][0]["hostPort"] = json!(8080);
            }), &[], "spec.template.spec.containers[0].ports[0].hostPort: Invalid value: 8080: must match `containerPort` when `hostNetwork` is true".into()),
            ("bad restartPolicy", with(|v| v["spec"]["restartPolicy"] = json!("Sometimes")), &[],
             "spec.template.spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"".into()),
            ("bad dnsPolicy", with(|v| v["spec"]["dnsPolicy"] = json!("Google")), &[],
             "spec.template.spec.dnsPolicy: Unsupported value: \"Google\": supported values: \"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\"".into()),
            ("bad imagePullPolicy", with(|v| v["spec"]["containers"][0]["imagePullPolicy"] = json!("Sometimes")), &[],
             "spec.template.spec.containers[0].imagePullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"".into()),
            ("bad terminationMessagePolicy", with(|v| v["spec"]["containers"][0]["terminationMessagePolicy"] = json!("Log")), &[],
             "spec.template.spec.containers[0].terminationMessagePolicy: Unsupported value: \"Log\": supported values: \"File\", \"FallbackToLogsOnError\"".into()),
            ("env without a name", with(|v| v["spec"]["containers"][0]["env"] = json!([{"name": "", "value": "x"}])), &[],
             "spec.template.spec.containers[0].env[0].name: Required value".into()),
            ("restartPolicy on a regular container", with(|v| v["spec"]["containers"][0]["restartPolicy"] = json!("Always")), &[],
             "spec.template.spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers".into()),
            ("native sidecar init container", with(|v| {
                v["spec"]["initContainers"][0]["restartPolicy"] = json!("Always");
                v["spec"]["initContainers"][0]["readinessProbe"] = json!({"exec": {"command": ["true"]}});
            }), &[], String::new()),
            ("probe on a plain init container", with(|v| v["spec"]["initContainers"][0]["readinessProbe"] =
                json!({"exec": {"command": ["true"]}})), &[],
             "spec.template.spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always".into()),
            ("init container restartPolicy other than Always", with(|v| v["spec"]["initContainers"][0]["restartPolicy"] = json!("OnFailure")), &[],
             "spec.template.spec.initContainers[0].restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\"".into()),
            ("bad nodeSelector", with(|v| v["spec"]["nodeSelector"] = json!({"k": "-v"})), &[],
             "spec.template.spec.nodeSelector: Invalid value: \"-v\": a valid label must be an empty string or consist of \
              alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. \
              'MyValue',  or 'my_value',  or '12345', regex used for validation is \
              '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".into()),
            // Mounts and devices.
            ("device on a claim", with(|v| v["spec"]["containers"][0]["volumeDevices"] =
                json!([{"name": "data", "devicePath": "/dev/xvda"}])), &["data"], String::new()),
            ("device on a missing volume", with(|v| v["spec"]["containers"][0]["volumeDevices"] =
                json!([{"name": "nope", "devicePath": "/dev/xvda"}])), &[],
             "spec.template.spec.containers[0].volumeDevices[0].name: Not found: \"nope\"".into()),
            ("device on a configMap", with(|v| v["spec"]["containers"][0]["volumeDevices"] =
                json!([{"name": "conf", "devicePath": "/dev/xvda"}])), &[],
             "[spec.template.spec.containers[0].volumeMounts[0].name: Invalid value: \"conf\": must not already exist in volumeDevices, \
                      spec.template.spec.containers[0].volumeDevices[0].name: Invalid value: \"conf\": can only use volume source type of \
                      PersistentVolumeClaim or Ephemeral for block mode, \
                      spec.template.spec.containers[0].volumeDevices[0].name: Invalid value: \"conf\": must not already exist in volumeMounts]".into()),
            ("device path twice", with(|v| v["spec"]["containers"][0]["volumeDevices"] =
                json!([{"name": "a", "devicePath": "/dev/x"}, {"name": "b", "devicePath": "/dev/x"}])), &["a", "b"],
             "spec.template.spec.containers[0].volumeDevices[1].devicePath: Invalid value: \"/dev/x\": must be unique".into()),
            ("device path with backsteps", with(|v| v["spec"]["containers"][0]["volumeDevices"] =
                json!([{"name": "a", "devicePath": "/dev/../x"}])), &["a"],
             "spec.template.spec.containers[0].volumeDevices[0].devicePath: Invalid value: \"/dev/../x\": can not contain backsteps ('..')".into()),
            ("mount path used by a device", with(|v| v["spec"]["containers"][0]["volumeDevices"] =
                json!([{"name": "data", "devicePath": "/etc/conf"}])), &["data"],
             "[spec.template.spec.containers[0].volumeMounts[0].mountPath: Invalid value: \"/etc/conf\": must not already exist as a path in volumeDevices, \
                      spec.template.spec.containers[0].volumeDevices[0].devicePath: Invalid value: \"/etc/conf\": must not already exist as a path in volumeMounts]".into()),
            ("absolute subPath", with(|v| v["spec"]["containers"][0]["volumeMounts"][0]["subPath"] = json!("/x")), &[],
             "spec.template.spec.containers[0].volumeMounts.subPath: Invalid value: \"/x\": must be a relative path".into()),
            ("subPath with backsteps", with(|v| v["spec"]["containers"][0]["volumeMounts"][0]["subPath"] = json!("a/../b")), &[],
             "spec.template.spec.containers[0].volumeMounts.subPath: Invalid value: \"a/../b\": must not contain '..'".into()),
            ("a backslash is not a separator", with(|v| v["spec"]["containers"][0]["volumeMounts"][0]["subPath"] = json!("a\\..")), &[],
             String::new()),
            ("subPath and subPathExpr", with(|v| {
                v["spec"]["containers"][0]["volumeMounts"][0]["subPath"] = json!("a");
                v["spec"]["containers"][0]["volumeMounts"][0]["subPathExpr"] = json!("$(POD)");
            }), &[], "spec.template.spec.containers[0].volumeMounts[0].subPathExpr: Invalid value: \"$(POD)\": subPathExpr and subPath are mutually exclusive".into()),
            ("a volume with errors cannot be mounted", with(|v| v["spec"]["volumes"][0]["name"] = json!("Conf")), &[],
             "[spec.template.spec.volumes[0].name: Invalid value: \"Conf\": a lowercase RFC 1123 label must consist of \
                      lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. \
                      'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?'), \
                      spec.template.spec.containers[0].volumeMounts[0].name: Not found: \"conf\"]".into()),
        ];
        for (name, template, claims, want) in cases {
            assert_eq!(check(template, claims), want, "{name}");
        }
    }
}
