//! Dynamic admission as kube-apiserver runs it: on CREATE/UPDATE/DELETE (and CONNECT-less
//! subresources such as `pods/eviction`), the registered MutatingWebhookConfigurations are called
//! one after another (configurations ordered by name) with their JSON patches applied, then the
//! ValidatingWebhookConfigurations in parallel. Denials become the `Status` kube-apiserver returns
//! (`admission webhook "<name>" denied the request: <message>`, the webhook's code, at least 400),
//! call failures follow `failurePolicy`, a patch that does not apply is a 500 whatever the policy,
//! warnings are collected for `Warning` headers, and dry-run requests only reach webhooks declaring
//! `sideEffects: None|NoneOnDryRun`. Webhook configurations themselves are never sent to webhooks.
//! `reinvocationPolicy` and `matchConditions` are not implemented.

pub mod call;
pub mod matching;

use crate::cluster::{Cluster, Ctx};
use crate::errors::ApiError;
use crate::meta;
use matching::{RequestShape, Webhook};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// A Service port a webhook's `clientConfig.service` can name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServiceRef {
    /// Service namespace.
    pub namespace: String,
    /// Service name.
    pub name: String,
    /// Service port (443 when the webhook does not say).
    pub port: u16,
}

impl ServiceRef {
    /// Builds a reference.
    pub fn new(namespace: &str, name: &str, port: u16) -> Self {
        Self { namespace: namespace.into(), name: name.into(), port }
    }
}

/// Resolves webhook services to loopback addresses (what cluster DNS and kube-proxy do).
#[derive(Debug, Default)]
pub struct ServiceMap(Mutex<HashMap<ServiceRef, SocketAddr>>);

impl ServiceMap {
    /// Routes `service` to `addr`.
    pub fn insert(&self, service: ServiceRef, addr: SocketAddr) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).insert(service, addr);
    }

    /// Removes a route (calls then fail like an unreachable service).
    pub fn remove(&self, service: &ServiceRef) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).remove(service);
    }

    /// The address for `service`.
    pub fn resolve(&self, service: &ServiceRef) -> Option<SocketAddr> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).get(service).copied()
    }
}

/// What one webhook call came to.
#[derive(Debug, Clone, PartialEq)]
pub enum CallOutcome {
    /// Allowed; `patched` when a JSON patch was applied.
    Allowed {
        /// A patch was applied.
        patched: bool,
    },
    /// Denied with this code and (client-visible) message.
    Denied {
        /// HTTP code returned to the client.
        code: u16,
        /// The message returned to the client.
        message: String,
    },
    /// The call failed; `ignored` when `failurePolicy: Ignore` let the request through.
    Failed {
        /// What went wrong.
        error: String,
        /// The failure was ignored.
        ignored: bool,
    },
}

/// A record of one webhook call, for assertions in tests.
#[derive(Debug, Clone, PartialEq)]
pub struct AdmissionRecord {
    /// The webhook's name.
    pub webhook: String,
    /// A mutating webhook.
    pub mutating: bool,
    /// CREATE, UPDATE, DELETE.
    pub operation: String,
    /// `group/version/resource` as sent to the webhook.
    pub resource: String,
    /// Subresource or "".
    pub subresource: String,
    /// Namespace of the request.
    pub namespace: String,
    /// Name of the object ("" for generateName creates).
    pub name: String,
    /// The request was a dry run.
    pub dry_run: bool,
    /// The result.
    pub outcome: CallOutcome,
}

/// Admission state: service routing, TLS client configurations and the call log.
#[derive(Default)]
pub struct Admission {
    /// Service references to loopback addresses.
    pub services: ServiceMap,
    pub(crate) tls_configs: Mutex<HashMap<Vec<u8>, Arc<rustls::ClientConfig>>>,
    log: Mutex<Vec<AdmissionRecord>>,
}

impl Admission {
    /// Every webhook call made so far.
    pub fn log(&self) -> Vec<AdmissionRecord> {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn record(&self, rec: AdmissionRecord) {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).push(rec);
    }
}

/// The admission attributes of one request.
#[derive(Debug, Clone)]
pub struct Attributes {
    /// CREATE, UPDATE, DELETE.
    pub operation: &'static str,
    /// Resource group.
    pub group: String,
    /// Version of the request.
    pub version: String,
    /// Plural resource.
    pub resource: String,
    /// Subresource or "".
    pub subresource: String,
    /// Every served version of the resource (for matchPolicy Equivalent).
    pub served_versions: Vec<String>,
    /// (group, version, kind) of the object sent.
    pub kind: (String, String, String),
    /// Namespace of the request ("" for cluster-scoped; for Namespace objects their name).
    pub namespace: String,
    /// Object name ("" for generateName creates).
    pub name: String,
    /// The new object.
    pub object: Option<Value>,
    /// The existing object.
    pub old_object: Option<Value>,
    /// Create/Update/DeleteOptions.
    pub options: Value,
}

impl Attributes {
    fn shape(&self) -> RequestShape<'_> {
        RequestShape {
            operation: self.operation,
            group: &self.group,
            version: &self.version,
            resource: &self.resource,
            subresource: &self.subresource,
            namespace: &self.namespace,
        }
    }

    fn exempt(&self) -> bool {
        self.group == "admissionregistration.k8s.io"
    }
}

fn load_webhooks(cluster: &Cluster, mutating: bool) -> Vec<Webhook> {
    let resource = if mutating { "mutatingwebhookconfigurations" } else { "validatingwebhookconfigurations" };
    let (configs, _) = cluster.store.list("admissionregistration.k8s.io", resource, None);
    // The store lists by name, which is the order kube-apiserver calls configurations in.
    configs.iter().flat_map(|c| matching::parse_configuration(c, mutating)).collect()
}

/// Labels the namespaceSelector is evaluated against, `None` for cluster-scoped requests.
fn namespace_labels(cluster: &Cluster, attrs: &Attributes) -> Option<BTreeMap<String, String>> {
    if attrs.group.is_empty() && attrs.resource == "namespaces" && attrs.subresource.is_empty() {
        return attrs.object.as_ref().or(attrs.old_object.as_ref()).map(meta::labels);
    }
    if attrs.namespace.is_empty() {
        return None;
    }
    Some(cluster.namespace(&attrs.namespace).map(|ns| meta::labels(&ns)).unwrap_or_default())
}

/// The request as the webhook sees it (converted to `version` for equivalent matches).
fn review(attrs: &Attributes, version: &str, ctx: &Ctx, uid: &str) -> Value {
    let convert = |obj: &Value| -> Value {
        let mut o = obj.clone();
        let gv = crate::api::group_version(&attrs.group, version);
        if attrs.kind.0 == attrs.group && version != attrs.version {
            meta::set_field(&mut o, "apiVersion", json!(gv));
        }
        o
    };
    let kind_version = if attrs.kind.0 == attrs.group { version } else { &attrs.kind.1 };
    let mut req = json!({
        "uid": uid,
        "kind": {"group": attrs.kind.0, "version": kind_version, "kind": attrs.kind.2},
        "resource": {"group": attrs.group, "version": version, "resource": attrs.resource},
        "requestKind": {"group": attrs.kind.0, "version": attrs.kind.1, "kind": attrs.kind.2},
        "requestResource": {"group": attrs.group, "version": attrs.version, "resource": attrs.resource},
        "operation": attrs.operation,
        "userInfo": {"username": ctx.user.username, "groups": ctx.user.groups},
        "dryRun": ctx.dry_run,
        "options": attrs.options,
    });
    if let Some(map) = req.as_object_mut() {
        let mut put = |k: &str, v: Value| {
            map.insert(k.to_string(), v);
        };
        if !attrs.subresource.is_empty() {
            put("subResource", json!(attrs.subresource));
            put("requestSubResource", json!(attrs.subresource));
        }
        if !attrs.name.is_empty() {
            put("name", json!(attrs.name));
        }
        if !attrs.namespace.is_empty() {
            put("namespace", json!(attrs.namespace));
        }
        if let Some(o) = &attrs.object {
            put("object", convert(o));
        }
        if let Some(o) = &attrs.old_object {
            put("oldObject", convert(o));
        }
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req})
}

/// `webhookerrors.ToStatusErr`.
fn denial(name: &str, status: &Value) -> ApiError {
    let mut st = if status.is_object() { status.clone() } else { json!({}) };
    let code = st.get("code").and_then(Value::as_u64).unwrap_or(0);
    let code = u16::try_from(code).unwrap_or(400).max(400);
    let denied = format!("admission webhook \"{name}\" denied the request");
    let message = st.get("message").and_then(Value::as_str).unwrap_or("");
    let reason = st.get("reason").and_then(Value::as_str).unwrap_or("");
    let text = if !message.is_empty() {
        format!("{denied}: {message}")
    } else if !reason.is_empty() {
        format!("{denied}: {reason}")
    } else {
        format!("{denied} without explanation")
    };
    st["message"] = json!(text);
    ApiError::from_status(code, st)
}

enum Step {
    Skip,
    Call(String),
    Fail(ApiError),
}

/// Decides whether `hook` is called for `attrs`, and under which version.
fn select(cluster: &Cluster, hook: &Webhook, attrs: &Attributes, ctx: &Ctx) -> Step {
    let Some(version) = matching::matched_version(hook, &attrs.shape(), &attrs.served_versions) else {
        return Step::Skip;
    };
    let ns_sel = match &hook.namespace_selector {
        Ok(s) => s,
        Err(e) => return failure(hook, format!("invalid namespaceSelector: {e}")),
    };
    if !matching::namespace_selected(ns_sel, namespace_labels(cluster, attrs).as_ref()) {
        return Step::Skip;
    }
    let obj_sel = match &hook.object_selector {
        Ok(s) => s,
        Err(e) => return failure(hook, format!("invalid objectSelector: {e}")),
    };
    if !matching::object_selected(obj_sel, attrs.object.as_ref(), attrs.old_object.as_ref()) {
        return Step::Skip;
    }
    if ctx.dry_run && !hook.dry_run_safe {
        return Step::Fail(ApiError::bad_request(format!(
            "admission webhook \"{}\" does not support dry run",
            hook.name
        )));
    }
    if !hook.review_versions.iter().any(|v| v == "v1") {
        return failure(hook, "webhook does not accept v1 AdmissionReview".into());
    }
    Step::Call(version)
}

fn failure(hook: &Webhook, error: String) -> Step {
    if hook.fail_closed { Step::Fail(failed_calling(hook, &error)) } else { Step::Skip }
}

fn failed_calling(hook: &Webhook, error: &str) -> ApiError {
    ApiError::internal(format!("failed calling webhook \"{}\": {error}", hook.name))
}

async fn invoke(
    cluster: &Cluster,
    hook: &Webhook,
    attrs: &Attributes,
    version: &str,
    ctx: &Ctx,
) -> Result<call::Verdict, String> {
    let ep = call::resolve(&cluster.admission, &hook.client_config)?;
    let uid = meta::new_uid();
    let body = review(attrs, version, ctx, &uid);
    call::call(&cluster.admission, &ep, hook.timeout, &body, &uid).await
}

fn record(cluster: &Cluster, hook: &Webhook, attrs: &Attributes, version: &str, ctx: &Ctx, outcome: CallOutcome) {
    cluster.admission.record(AdmissionRecord {
        webhook: hook.name.clone(),
        mutating: hook.mutating,
        operation: attrs.operation.into(),
        resource: format!("{}/{}/{}", attrs.group, version, attrs.resource),
        subresource: attrs.subresource.clone(),
        namespace: attrs.namespace.clone(),
        name: attrs.name.clone(),
        dry_run: ctx.dry_run,
        outcome,
    });
}

/// Runs the mutating webhooks serially; `attrs.object` ends up mutated.
pub async fn mutate(cluster: &Cluster, ctx: &mut Ctx, attrs: &mut Attributes) -> Result<(), ApiError> {
    if attrs.exempt() {
        return Ok(());
    }
    for hook in load_webhooks(cluster, true) {
        let version = match select(cluster, &hook, attrs, ctx) {
            Step::Skip => continue,
            Step::Fail(e) => return Err(e),
            Step::Call(v) => v,
        };
        let verdict = match invoke(cluster, &hook, attrs, &version, ctx).await {
            Ok(v) => v,
            Err(error) => {
                tracing::warn!(webhook = %hook.name, %error, "webhook call failed");
                record(
                    cluster,
                    &hook,
                    attrs,
                    &version,
                    ctx,
                    CallOutcome::Failed { error: error.clone(), ignored: !hook.fail_closed },
                );
                if hook.fail_closed {
                    return Err(failed_calling(&hook, &error));
                }
                continue;
            }
        };
        ctx.warnings.extend(verdict.warnings.iter().cloned());
        if !verdict.allowed {
            let err = denial(&hook.name, &verdict.status);
            record(
                cluster,
                &hook,
                attrs,
                &version,
                ctx,
                CallOutcome::Denied { code: err.code, message: err.message().into() },
            );
            return Err(err);
        }
        let mut patched = false;
        if let (Some(patch), Some(obj)) = (&verdict.patch, attrs.object.as_mut()) {
            let original_api_version = obj.get("apiVersion").cloned();
            let gv = crate::api::group_version(&attrs.group, &version);
            if attrs.kind.0 == attrs.group {
                meta::set_field(obj, "apiVersion", json!(gv));
            }
            if let Err(e) = json_patch::patch(obj, patch) {
                return Err(ApiError::internal(format!(
                    "JSON patch from webhook \"{}\" could not be applied: {e}",
                    hook.name
                )));
            }
            if let Some(v) = original_api_version {
                meta::set_field(obj, "apiVersion", v);
            }
            patched = !patch.0.is_empty();
        }
        record(cluster, &hook, attrs, &version, ctx, CallOutcome::Allowed { patched });
    }
    Ok(())
}

/// Runs the validating webhooks in parallel; the first denial or closed failure (in configuration
/// order) rejects the request.
pub async fn validate(cluster: &Cluster, ctx: &mut Ctx, attrs: &Attributes) -> Result<(), ApiError> {
    if attrs.exempt() {
        return Ok(());
    }
    let mut calls = Vec::new();
    for hook in load_webhooks(cluster, false) {
        match select(cluster, &hook, attrs, ctx) {
            Step::Skip => {}
            Step::Fail(e) => return Err(e),
            Step::Call(version) => calls.push((hook, version)),
        }
    }
    let shared: &Ctx = ctx;
    let results =
        futures::future::join_all(calls.iter().map(|(hook, version)| invoke(cluster, hook, attrs, version, shared)))
            .await;
    let mut first_error = None;
    let mut warnings = Vec::new();
    for ((hook, version), result) in calls.iter().zip(results) {
        let result = result.and_then(|v| match v.patch {
            Some(_) => Err("validating webhook may not return response.patch".to_string()),
            None => Ok(v),
        });
        let outcome = match result {
            Err(error) => {
                tracing::warn!(webhook = %hook.name, %error, "webhook call failed");
                if hook.fail_closed && first_error.is_none() {
                    first_error = Some(failed_calling(hook, &error));
                }
                CallOutcome::Failed { error, ignored: !hook.fail_closed }
            }
            Ok(v) => {
                warnings.extend(v.warnings.iter().cloned());
                if v.allowed {
                    CallOutcome::Allowed { patched: false }
                } else {
                    let err = denial(&hook.name, &v.status);
                    let outcome = CallOutcome::Denied { code: err.code, message: err.message().into() };
                    if first_error.is_none() {
                        first_error = Some(err);
                    }
                    outcome
                }
            }
        };
        record(cluster, hook, attrs, version, shared, outcome);
    }
    ctx.warnings.extend(warnings);
    match first_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denial_wording() {
        let e = denial("v.kruise.io", &json!({"code": 403, "message": "no"}));
        assert_eq!(e.code, 403);
        assert_eq!(e.message(), "admission webhook \"v.kruise.io\" denied the request: no");
        let e = denial("v", &json!({"code": 200}));
        assert_eq!(e.code, 400);
        assert_eq!(e.message(), "admission webhook \"v\" denied the request without explanation");
        let e = denial("v", &json!({"reason": "Because"}));
        assert_eq!(e.message(), "admission webhook \"v\" denied the request: Because");
    }
}
