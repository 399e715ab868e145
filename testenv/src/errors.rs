//! API errors as kube-apiserver reports them: every failed request answers with a `meta/v1 Status`
//! carrying the HTTP code, a machine-readable `reason` and the message wording clients (kubectl,
//! kube-rs, controller-runtime) and humans recognise, e.g. `pods "x" not found`.

use serde_json::{Value, json};

/// A failed API request: the HTTP status code and the `Status` body sent to the client.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// The `meta/v1 Status` object, with `code`, `reason` and `message` filled in.
    pub status: Value,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message(), self.code)
    }
}

impl std::error::Error for ApiError {}

/// `pods` for the core group, `clonesets.apps.kruise.io` otherwise: how kube-apiserver names a
/// resource in its messages.
pub fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() { resource.to_string() } else { format!("{resource}.{group}") }
}

impl ApiError {
    /// An error with the given code, reason and message and no details.
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        Self::with_details(code, reason, message, None)
    }

    /// An error carrying `details` (name, group, kind, causes).
    pub fn with_details(code: u16, reason: &str, message: impl Into<String>, details: Option<Value>) -> Self {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message.into(),
            "reason": reason,
            "code": code,
        });
        if let (Some(d), Some(obj)) = (details, status.as_object_mut()) {
            obj.insert("details".into(), d);
        }
        Self { code, status }
    }

    /// Wraps a `Status` returned by someone else (a webhook), keeping its reason and details.
    pub fn from_status(code: u16, mut status: Value) -> Self {
        if let Some(obj) = status.as_object_mut() {
            obj.insert("kind".into(), json!("Status"));
            obj.insert("apiVersion".into(), json!("v1"));
            obj.entry("metadata").or_insert_with(|| json!({}));
            obj.insert("status".into(), json!("Failure"));
            obj.insert("code".into(), json!(code));
        }
        Self { code, status }
    }

    /// The `message` of the status.
    pub fn message(&self) -> &str {
        self.status.get("message").and_then(Value::as_str).unwrap_or("")
    }

    /// The `reason` of the status.
    pub fn reason(&self) -> &str {
        self.status.get("reason").and_then(Value::as_str).unwrap_or("")
    }

    fn details(group: &str, resource: &str, name: &str) -> Value {
        json!({ "name": name, "group": group, "kind": resource })
    }

    /// 404 `<resource> "<name>" not found`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        Self::with_details(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(group, resource)),
            Some(Self::details(group, resource, name)),
        )
    }

    /// 409 `<resource> "<name>" already exists`.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        Self::with_details(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(group, resource)),
            Some(Self::details(group, resource, name)),
        )
    }

    /// 409 Conflict on a stale resourceVersion, worded like kube-apiserver.
    pub fn conflict(group: &str, resource: &str, name: &str) -> Self {
        Self::conflict_because(
            group,
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 409 Conflict with a specific cause.
    pub fn conflict_because(group: &str, resource: &str, name: &str, why: &str) -> Self {
        Self::with_details(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {} \"{name}\": {why}", qualified(group, resource)),
            Some(Self::details(group, resource, name)),
        )
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 422 Invalid: `<Kind> "<name>" is invalid: <field>: <detail>`.
    pub fn invalid(group: &str, kind: &str, name: &str, field: &str, detail: &str) -> Self {
        Self::with_details(
            422,
            "Invalid",
            format!("{kind} \"{name}\" is invalid: {field}: {detail}"),
            Some(json!({
                "name": name, "group": group, "kind": kind,
                "causes": [{ "reason": "FieldValueInvalid", "message": detail, "field": field }],
            })),
        )
    }

    /// 403 Forbidden.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message)
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    /// 415 UnsupportedMediaType.
    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self::new(415, "UnsupportedMediaType", message)
    }

    /// 410 Expired: the watch or list resourceVersion is older than the retained history.
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 500 `Internal error occurred: <message>`.
    pub fn internal(message: impl std::fmt::Display) -> Self {
        Self::new(500, "InternalError", format!("Internal error occurred: {message}"))
    }

    /// 404 for a path that names no served resource.
    pub fn no_route(path: &str) -> Self {
        Self::new(404, "NotFound", format!("the server could not find the requested resource ({path})"))
    }
}

/// The library's error for everything that is not an API answer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Binding the listener failed.
    #[error("binding the API server listener: {0}")]
    Bind(#[source] std::io::Error),
    /// Building a kube client for the server failed.
    #[error("building a kube client: {0}")]
    Client(#[source] kube::Error),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A YAML document did not parse.
    #[error("parsing YAML: {0}")]
    Yaml(#[source] serde_yaml_ng::Error),
    /// A manifest is not a Kubernetes object the server serves.
    #[error("manifest: {0}")]
    Manifest(String),
    /// The API refused a request the library made on the caller's behalf.
    #[error("API request failed: {0}")]
    Api(#[source] ApiError),
}
