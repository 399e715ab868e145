//! The generated part of the Helm chart under `deploy/chart/`: `Chart.yaml` (the crate's version)
//! and, as templates, the CRDs and webhook configurations `kruise manifests` writes for the
//! kustomize base, with the chart's values spliced in. One source for both installs; the
//! hand-written templates are held to `deploy/`'s files by `tests/chart.rs`, which renders the
//! chart with its defaults and compares it with `kubectl kustomize deploy/` object by object.
//!
//! Values as OpenKruise's chart (openkruise/charts, kruise 1.8) names them: `crds.managed`,
//! `installation.namespace`, `webhookConfiguration.timeoutSeconds`, `externalCerts.annotations`
//! (plus cert-manager's CA injection with our `certManager.enabled`), the `PodWebhook` gate in
//! `featureGates`, and `webhookConfiguration.failurePolicy.pods` of its charts up to 1.5. CRDs carry
//! `helm.sh/resource-policy: keep`, so `helm uninstall` never deletes them nor the objects they
//! hold (openkruise/charts#20).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{ManifestError, yaml};

/// Where the chart lives, relative to the repository root.
pub const CHART_DIR: &str = "deploy/chart";

const NAMESPACE: &str = "{{ .Values.installation.namespace }}";
const TIMEOUT: &str = "{{ .Values.webhookConfiguration.timeoutSeconds }}";
/// Inserted under `metadata.annotations` (indented four spaces): `externalCerts.annotations`, and
/// cert-manager's CA injection with `certManager.enabled` (deploy/chart/templates/_helpers.tpl).
const EXTERNAL_ANNOTATIONS: &str =
    "    {{- with include \"kruise.caAnnotations\" . }}\n    {{- . | nindent 4 }}\n    {{- end }}\n";

/// `Chart.yaml`, the CRD templates and the webhook configuration templates.
pub(super) fn render(
    crds: &[(&str, Value)],
    mutating: Value,
    validating: Value,
) -> Result<Vec<(PathBuf, String)>, ManifestError> {
    let dir = Path::new(CHART_DIR);
    let mut files = vec![(dir.join("Chart.yaml"), chart_yaml()?)];
    for (name, crd) in crds {
        files.push((dir.join("templates/crds").join(name), crd_template(name, crd.clone())?));
    }
    files.push((
        dir.join("templates/webhook-config/mutating-webhook-configuration.yaml"),
        webhook_template("mutating", mutating)?,
    ));
    files.push((
        dir.join("templates/webhook-config/validating-webhook-configuration.yaml"),
        webhook_template("validating", validating)?,
    ));
    Ok(files)
}

fn chart_yaml() -> Result<String, ManifestError> {
    let version = env!("CARGO_PKG_VERSION");
    let chart = serde_json::json!({
        "apiVersion": "v2",
        "name": "kruise",
        "description": env!("CARGO_PKG_DESCRIPTION"),
        "type": "application",
        "version": version,
        "appVersion": version,
        "keywords": ["openkruise", "kruise", "cloneset", "sidecarset", "statefulset", "webhook"],
        "sources": ["https://github.com/openkruise/kruise"],
    });
    yaml("Chart.yaml", &chart)
}

/// A CRD, installed while `crds.managed`, kept on uninstall, its conversion Service in the
/// release's namespace. Only a CRD converting through our webhook gets the CA injection
/// annotations: the others have no `caBundle` to fill in.
fn crd_template(name: &str, mut crd: Value) -> Result<String, ManifestError> {
    crd["metadata"]["annotations"] = serde_json::json!({"helm.sh/resource-policy": "keep"});
    let mut converted = false;
    if let Some(service) = crd.pointer_mut("/spec/conversion/webhook/clientConfig/service") {
        service["namespace"] = NAMESPACE.into();
        converted = true;
    }
    let body = splice(name, crd)?;
    let keep = "    helm.sh/resource-policy: keep\n";
    let body = if converted { insert_after(name, &body, keep, EXTERNAL_ANNOTATIONS)? } else { body };
    Ok(format!("{{{{- if .Values.crds.managed }}}}\n{body}{{{{- end }}}}\n"))
}

/// A webhook configuration: the Service's namespace, `timeoutSeconds` and, for the pod webhooks,
/// `failurePolicy.pods` from the values; `externalCerts.annotations` (and cert-manager's) on its metadata.
fn webhook_template(what: &str, mut config: Value) -> Result<String, ManifestError> {
    for webhook in config["webhooks"].as_array_mut().into_iter().flatten() {
        webhook["clientConfig"]["service"]["namespace"] = NAMESPACE.into();
        webhook["timeoutSeconds"] = TIMEOUT.into();
        let pods = webhook["rules"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|r| r["resources"].as_array().into_iter().flatten().any(|x| x == "pods"));
        if pods {
            let default = webhook["failurePolicy"].as_str().unwrap_or("Fail").to_string();
            webhook["failurePolicy"] =
                format!("{{{{ dig \"failurePolicy\" \"pods\" \"{default}\" .Values.webhookConfiguration }}}}").into();
        }
    }
    let body = without_pod_webhooks_if_gated(&splice(what, config)?);
    let annotations = "  {{- with include \"kruise.caAnnotations\" . }}\n  annotations:\n    \
                       {{- . | nindent 4 }}\n  {{- end }}\n";
    insert_after(what, &body, "metadata:\n", annotations)
}

/// Each pod webhook (the items of the top-level `webhooks:` list that got the `failurePolicy.pods`
/// expression) rendered only while `featureGates` does not turn `PodWebhook` off, as OpenKruise's
/// chart does: with the gate off, pod admission no longer depends on kruise being up.
fn without_pod_webhooks_if_gated(text: &str) -> String {
    let mut items: Vec<String> = Vec::new();
    let mut head = String::new();
    for line in text.split_inclusive('\n') {
        if line.starts_with("- ") {
            items.push(line.to_string());
        } else if let Some(item) = items.last_mut() {
            item.push_str(line);
        } else {
            head.push_str(line);
        }
    }
    let mut out = head;
    for item in items {
        if item.contains("\"failurePolicy\" \"pods\"") {
            out.push_str("{{- if not (contains \"PodWebhook=false\" .Values.featureGates) }}\n");
            out.push_str(&item);
            out.push_str("{{- end }}\n");
        } else {
            out.push_str(&item);
        }
    }
    out
}

/// The YAML of `value` with each template expression, written as a string `{{ ... }}` (quoted by
/// the serialiser), turned into a bare expression, so `timeoutSeconds` renders as a number.
fn splice(what: &str, value: Value) -> Result<String, ManifestError> {
    let text = yaml(what, &value)?;
    if text.contains("{{") && !text.lines().filter(|l| l.contains("{{")).all(|l| l.contains("'{{ ")) {
        return Err(ManifestError::Render(what.into(), "a template expression the chart did not put there".into()));
    }
    Ok(text.replace("'{{ ", "{{ ").replace(" }}'", " }}"))
}

/// `text` with `insert` after the first line equal to `anchor` (which ends with a newline).
fn insert_after(what: &str, text: &str, anchor: &str, insert: &str) -> Result<String, ManifestError> {
    let at = text.find(anchor).filter(|&i| i == 0 || text.as_bytes()[i - 1] == b'\n').ok_or_else(|| {
        ManifestError::Render(what.into(), format!("no line {:?} to insert after", anchor.trim_end()))
    })?;
    let split = at + anchor.len();
    Ok(format!("{}{insert}{}", &text[..split], &text[split..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_are_bare_and_annotations_spliced() {
        let config = serde_json::json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "m"},
            "webhooks": [{
                "name": "mpod.kb.io",
                "clientConfig": {"service": {"name": "s", "namespace": "kruise-system"}},
                "failurePolicy": "Fail",
                "rules": [{"resources": ["pods"]}],
                "timeoutSeconds": 10
            }, {
                "name": "mcloneset.kb.io",
                "clientConfig": {"service": {"name": "s", "namespace": "kruise-system"}},
                "failurePolicy": "Fail",
                "rules": [{"resources": ["clonesets"]}],
                "timeoutSeconds": 10
            }]
        });
        let text = webhook_template("m", config).unwrap();
        assert!(text.contains("  timeoutSeconds: {{ .Values.webhookConfiguration.timeoutSeconds }}\n"), "{text}");
        assert!(text.contains("namespace: {{ .Values.installation.namespace }}\n"), "{text}");
        assert_eq!(
            text.matches("failurePolicy: {{ dig \"failurePolicy\" \"pods\" \"Fail\" .Values.webhookConfiguration }}")
                .count(),
            1,
            "{text}"
        );
        assert_eq!(text.matches("failurePolicy: Fail\n").count(), 1, "{text}");
        assert!(
            text.contains("metadata:\n  {{- with include \"kruise.caAnnotations\" . }}\n  annotations:\n"),
            "{text}"
        );
        assert!(!text.contains('\''), "{text}");
        let gated = "{{- if not (contains \"PodWebhook=false\" .Values.featureGates) }}\n- ";
        assert_eq!(text.matches(gated).count(), 1, "{text}");
        let pod = text.find(gated).unwrap();
        assert!(text[pod..].find("{{- end }}").unwrap() < text[pod..].find("mcloneset.kb.io").unwrap(), "{text}");
    }

    #[test]
    fn crds_are_kept_and_conditional() {
        let crd = serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "x.apps.kruise.io"},
            "spec": {"conversion": {"webhook": {"clientConfig": {"service": {"name": "c", "namespace": "kruise-system"}}}}}
        });
        let text = crd_template("x", crd).unwrap();
        assert!(text.starts_with("{{- if .Values.crds.managed }}\n# Generated"), "{text}");
        assert!(text.ends_with("{{- end }}\n"), "{text}");
        assert!(text.contains("    helm.sh/resource-policy: keep\n    {{- with include \"kruise.caAnnotations\" . }}"));
        assert!(text.contains("namespace: {{ .Values.installation.namespace }}\n"), "{text}");
    }

    #[test]
    fn a_stray_expression_is_an_error() {
        let value = serde_json::json!({"metadata": {"name": "x"}, "description": "use {{ this }} carefully"});
        assert!(splice("x", value).is_err());
    }
}
