//! AdmissionReview in and out (spec §2.0, ADMISSION.md): decode the envelope with kube-core's
//! types while keeping `object`/`oldObject` as the raw JSON the apiserver sent (patches are
//! computed against it), and encode a [`Verdict`] in the request's own API version with the
//! request's uid.

use base64::Engine;
use base64::engine::Simd;
use base64::engine::general_purpose::PAD;
use json_patch::Patch;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionReview};
use serde_json::Value;

use crate::compat::field::{FieldError, aggregate};

/// AdmissionReview versions the apiserver may send.
pub const ADMISSION_V1: &str = "admission.k8s.io/v1";
/// The deprecated version still sent by old apiservers.
pub const ADMISSION_V1BETA1: &str = "admission.k8s.io/v1beta1";

/// A decoded review request.
#[derive(Debug, Clone)]
pub struct Review {
    /// The envelope: uid, kind, resource, operation, user... (`object`/`old_object` are `None`).
    pub request: AdmissionRequest<DynamicObject>,
    /// The raw `request.object` (`None` when absent or null).
    pub object: Option<Value>,
    /// The raw `request.oldObject` (`None` when absent or null).
    pub old_object: Option<Value>,
}

/// Why a body is not an AdmissionReview we can answer: each becomes an HTTP 400.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// The body is not JSON.
    #[error("request body is not valid JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// The body is JSON but not an AdmissionReview object.
    #[error("request body is not an AdmissionReview: {0}")]
    NotAdmissionReview(String),
    /// No `request` field.
    #[error("AdmissionReview has no request")]
    MissingRequest,
    /// The request envelope is malformed.
    #[error("invalid AdmissionReview request: {0}")]
    InvalidRequest(#[source] serde_json::Error),
}

/// Decodes an AdmissionReview body: in one pass into the envelope's types with the objects as
/// raw JSON ([`Wire`]); a body that pass does not take (anything malformed, or of another kind)
/// goes through [`decode_checked`], whose errors are the answers.
pub fn decode(body: &[u8]) -> Result<Review, DecodeError> {
    // A body checked as UTF-8 once is parsed without serde_json checking every string again
    // (about 4% of a pod review); both readers parse valid UTF-8 alike.
    let wire = match std::str::from_utf8(body) {
        Ok(text) => serde_json::from_str::<Wire>(text),
        Err(_) => serde_json::from_slice::<Wire>(body),
    };
    match wire {
        Ok(Wire { api_version, kind, request: Some(r), response: _ })
            if kind == "AdmissionReview" && (api_version == ADMISSION_V1 || api_version == ADMISSION_V1BETA1) =>
        {
            let request = AdmissionRequest {
                types: kube::core::TypeMeta { api_version, kind },
                uid: r.uid,
                kind: r.kind,
                resource: r.resource,
                sub_resource: r.sub_resource,
                request_kind: r.request_kind,
                request_resource: r.request_resource,
                request_sub_resource: r.request_sub_resource,
                name: r.name,
                namespace: r.namespace,
                operation: r.operation,
                user_info: r.user_info,
                object: None,
                old_object: None,
                dry_run: r.dry_run,
                options: r.options,
            };
            Ok(Review { request, object: r.object, old_object: r.old_object })
        }
        _ => decode_checked(body),
    }
}

/// The AdmissionReview as [`decode`] reads it in one pass: kube-core's `AdmissionReview` field
/// for field (the same field types, so the same values are accepted), except that the objects
/// stay raw JSON. kube-core's type would decode them as `DynamicObject`s and flattens its
/// `TypeMeta`, which buffers the whole envelope once more; [`decode_checked`] therefore went
/// through a `Value` of the whole body and decoded the envelope from it (issue 16).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire {
    api_version: String,
    kind: String,
    request: Option<WireRequest>,
    /// Decoded (and dropped) so that a malformed `response` is refused as kube-core refuses it.
    #[serde(default)]
    #[allow(dead_code)]
    response: Option<kube::core::admission::AdmissionResponse>,
}

/// kube-core's `AdmissionRequest` with raw objects (see [`Wire`]).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireRequest {
    uid: String,
    kind: kube::core::GroupVersionKind,
    resource: kube::core::GroupVersionResource,
    #[serde(default)]
    sub_resource: Option<String>,
    #[serde(default)]
    request_kind: Option<kube::core::GroupVersionKind>,
    #[serde(default)]
    request_resource: Option<kube::core::GroupVersionResource>,
    #[serde(default)]
    request_sub_resource: Option<String>,
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: Option<String>,
    operation: kube::core::admission::Operation,
    user_info: k8s_openapi::api::authentication::v1::UserInfo,
    /// `null` reads as absent.
    object: Option<Value>,
    old_object: Option<Value>,
    #[serde(default)]
    dry_run: bool,
    #[serde(default)]
    options: Option<k8s_openapi::apimachinery::pkg::runtime::RawExtension>,
}

/// Decodes an AdmissionReview body step by step, each step with its own error: JSON, an
/// AdmissionReview of a version we answer, a request, a valid envelope.
fn decode_checked(body: &[u8]) -> Result<Review, DecodeError> {
    let mut value: Value = serde_json::from_slice(body).map_err(DecodeError::NotJson)?;
    let Value::Object(map) = &mut value else {
        return Err(DecodeError::NotAdmissionReview("the body is not a JSON object".into()));
    };
    let kind = map.get("kind").and_then(Value::as_str).unwrap_or_default();
    let api_version = map.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    if kind != "AdmissionReview" || (api_version != ADMISSION_V1 && api_version != ADMISSION_V1BETA1) {
        return Err(DecodeError::NotAdmissionReview(format!(
            "expected kind AdmissionReview and apiVersion {ADMISSION_V1} or {ADMISSION_V1BETA1}, got kind {kind:?} apiVersion {api_version:?}"
        )));
    }
    let Some(Value::Object(request)) = map.get_mut("request") else {
        return Err(DecodeError::MissingRequest);
    };
    let object = take_object(request, "object");
    let old_object = take_object(request, "oldObject");
    let review: AdmissionReview<DynamicObject> = serde_json::from_value(value).map_err(DecodeError::InvalidRequest)?;
    let request: AdmissionRequest<DynamicObject> = review.try_into().map_err(|_| DecodeError::MissingRequest)?;
    Ok(Review { request, object, old_object })
}

fn take_object(request: &mut serde_json::Map<String, Value>, key: &str) -> Option<Value> {
    match request.remove(key) {
        None | Some(Value::Null) => None,
        Some(v) => Some(v),
    }
}

/// What a handler decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// Admitted or not.
    pub allowed: bool,
    /// `status.code`: 200 when allowed.
    pub code: u16,
    /// `status.reason` (kruise's "Denied" answers carry `Forbidden`; "Errored" ones carry none).
    pub reason: String,
    /// `status.message`.
    pub message: String,
    /// RFC 6902 patch (mutating handlers only).
    pub patch: Option<Patch>,
    /// Warnings shown by kubectl, each at most 120 characters.
    pub warnings: Vec<String>,
}

impl Verdict {
    /// Admitted, unchanged.
    pub fn allow() -> Self {
        Verdict {
            allowed: true,
            code: 200,
            reason: String::new(),
            message: String::new(),
            patch: None,
            warnings: vec![],
        }
    }

    /// Admitted with a patch (or unchanged when `patch` is `None`).
    pub fn patched(patch: Option<Patch>) -> Self {
        Verdict { patch, ..Verdict::allow() }
    }

    /// Refused with a code and no reason (controller-runtime `Errored`): 400 undecodable object,
    /// 422 invalid object, 403 policy.
    pub fn errored(code: u16, message: impl Into<String>) -> Self {
        Verdict { allowed: false, code, reason: String::new(), message: message.into(), patch: None, warnings: vec![] }
    }

    /// The answer of a validating handler: allowed when there are no field errors, else 422 with
    /// them aggregated in Kubernetes' format.
    pub fn validated(errors: &[FieldError]) -> Self {
        if errors.is_empty() { Verdict::allow() } else { Verdict::errored(422, aggregate(errors)) }
    }

    /// Refused by policy (controller-runtime `Denied`): 403 Forbidden.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Verdict { reason: "Forbidden".into(), ..Verdict::errored(403, message) }
    }

    /// Adds a warning.
    #[must_use]
    pub fn warn(mut self, warning: impl Into<String>) -> Self {
        self.warnings.push(warning.into());
        self
    }

    /// Adds the warning, if any.
    #[must_use]
    pub fn with_warning(self, warning: Option<String>) -> Self {
        match warning {
            Some(w) => self.warn(w),
            None => self,
        }
    }

    /// Whether a patch is returned.
    pub fn is_patched(&self) -> bool {
        self.patch.is_some()
    }
}

/// The standard alphabet with padding, as Go encodes `[]byte`, on the CPU's vector instructions
/// when it has them (AVX2, NEON; a third of the scalar engine's instructions for a pod's patch).
static PATCH_BASE64: std::sync::LazyLock<Simd> = std::sync::LazyLock::new(|| Simd::standard(PAD));

/// The response review as JSON bytes: same apiVersion and uid as the request, the patch
/// base64-encoded as Go encodes `[]byte`. Written directly, in the byte order kube-core's
/// `AdmissionReview` takes once passed through a `serde_json::Value` (keys sorted, empty fields
/// omitted): the answers stay what they were, without building a `Value` tree per review. The
/// unit tests below hold the kube-core construction as the reference.
pub fn encode(request: &AdmissionRequest<DynamicObject>, verdict: &Verdict) -> Vec<u8> {
    // Sized for a typical injection patch: growing from serde_json's default copied it 5 times.
    let to_json = |patch: &Patch| {
        let mut json = Vec::with_capacity(4096);
        serde_json::to_writer(&mut json, patch).map(|()| json)
    };
    let patch = match verdict.patch.as_ref().map(to_json) {
        None => None,
        Some(Ok(bytes)) => Some(bytes),
        // Serialising a json_patch::Patch cannot fail; if it ever did, refusing is the only
        // answer that does not silently drop the mutation.
        Some(Err(e)) => {
            let refused = Verdict {
                reason: "InternalError".into(),
                ..Verdict::errored(500, format!("internal error encoding patch: {e}"))
            };
            return encode(request, &Verdict { warnings: verdict.warnings.clone(), ..refused });
        }
    };
    let mut out = Vec::with_capacity(192 + patch.as_ref().map_or(0, |p| p.len() * 4 / 3 + 4) + verdict.message.len());
    out.extend_from_slice(b"{\"apiVersion\":");
    write_str(&mut out, &request.types.api_version);
    out.extend_from_slice(b",\"kind\":");
    write_str(&mut out, &request.types.kind);
    out.extend_from_slice(if verdict.allowed {
        b",\"response\":{\"allowed\":true"
    } else {
        b",\"response\":{\"allowed\":false"
    });
    if let Some(patch) = patch {
        out.extend_from_slice(b",\"patch\":\"");
        let start = out.len();
        out.resize(start + patch.len().div_ceil(3) * 4, 0);
        let written = PATCH_BASE64.encode_slice(&patch, &mut out[start..]).unwrap_or(0);
        out.truncate(start + written);
        out.extend_from_slice(b"\",\"patchType\":\"JSONPatch\"");
    }
    out.extend_from_slice(b",\"status\":{");
    if verdict.code != 0 {
        out.extend_from_slice(b"\"code\":");
        out.extend_from_slice(verdict.code.to_string().as_bytes());
        out.push(b',');
    }
    if verdict.allowed {
        out.extend_from_slice(b"\"status\":\"Success\"}");
    } else {
        for (key, value) in [("message", &verdict.message), ("reason", &verdict.reason)] {
            if !value.is_empty() {
                out.push(b'"');
                out.extend_from_slice(key.as_bytes());
                out.extend_from_slice(b"\":");
                write_str(&mut out, value);
                out.push(b',');
            }
        }
        out.extend_from_slice(b"\"status\":\"Failure\"}");
    }
    out.extend_from_slice(b",\"uid\":");
    write_str(&mut out, &request.uid);
    if !verdict.warnings.is_empty() {
        out.extend_from_slice(b",\"warnings\":[");
        for (i, w) in verdict.warnings.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_str(&mut out, w);
        }
        out.push(b']');
    }
    out.extend_from_slice(b"}}");
    out
}

/// A JSON string as serde_json escapes it.
fn write_str(out: &mut Vec<u8>, s: &str) {
    // Writing into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// The response review as a JSON value (for tests and tools; the server sends [`encode`]).
pub fn respond(request: &AdmissionRequest<DynamicObject>, verdict: Verdict) -> Value {
    serde_json::from_slice(&encode(request, &verdict)).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::STANDARD as BASE64;
    use kube::core::Status;
    use kube::core::admission::AdmissionResponse;
    use serde_json::json;

    /// The response as kube-core builds it, passed through a `Value` with the patch as base64:
    /// what [`encode`] must write byte for byte.
    fn reference(request: &AdmissionRequest<DynamicObject>, verdict: Verdict) -> Vec<u8> {
        let mut response = AdmissionResponse::from(request);
        response.allowed = verdict.allowed;
        response.result = if verdict.allowed {
            Status::success().with_code(verdict.code)
        } else {
            Status::failure(&verdict.message, &verdict.reason).with_code(verdict.code)
        };
        if !verdict.warnings.is_empty() {
            response.warnings = Some(verdict.warnings);
        }
        if let Some(patch) = verdict.patch {
            response = response.with_patch(patch).unwrap();
        }
        let review = response.into_review();
        let mut value = serde_json::to_value(&review).unwrap();
        if let Some(patch) = review.response.as_ref().and_then(|r| r.patch.as_ref()) {
            value["response"]["patch"] = Value::String(BASE64.encode(patch));
        }
        serde_json::to_vec(&value).unwrap()
    }

    #[test]
    fn encoding_is_byte_for_byte_the_kube_core_response() {
        let patch: Patch = serde_json::from_value(json!([
            {"op": "add", "path": "/metadata/annotations/a~1b", "value": {"z": 1, "a": ["\u{2028}", "\"q\""]}},
            {"op": "remove", "path": "/spec/x"}, {"op": "replace", "path": "/y", "value": null}]))
        .unwrap();
        let verdicts = [
            Verdict::allow(),
            Verdict::patched(Some(patch.clone())),
            Verdict::patched(None),
            Verdict::errored(400, "cannot decode Pod: invalid type: \"x\" <\n>"),
            Verdict::errored(422, "[a: Invalid value, b]").warn("w1").warn("\u{e9}t\u{e9} \\ \"2\""),
            Verdict::forbidden("no"),
            Verdict { code: 0, ..Verdict::errored(0, "") },
            Verdict { message: "ignored when allowed".into(), ..Verdict::allow().warn("w") },
            Verdict { allowed: false, ..Verdict::patched(Some(patch)) },
        ];
        for api_version in [ADMISSION_V1, ADMISSION_V1BETA1] {
            let r = decode(&body(api_version)).unwrap();
            let mut request = r.request.clone();
            request.uid = "u-\"1\"/\u{263a}".into();
            for v in &verdicts {
                let want = String::from_utf8(reference(&request, v.clone())).unwrap();
                let got = String::from_utf8(encode(&request, v)).unwrap();
                assert_eq!(got, want, "{v:?}");
            }
        }
    }

    /// The vector engine writes what the scalar one writes, for every length around its blocks.
    #[test]
    fn patch_base64_is_the_standard_encoding() {
        let mut bytes = Vec::new();
        for n in 0..600u32 {
            let mut out = vec![0; bytes.len().div_ceil(3) * 4];
            let written = PATCH_BASE64.encode_slice(&bytes, &mut out).unwrap();
            assert_eq!(&out[..written], BASE64.encode(&bytes).as_bytes(), "{n} bytes");
            bytes.push((n.wrapping_mul(2_654_435_761) >> 13) as u8);
        }
    }

    fn body(api_version: &str) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "apiVersion": api_version, "kind": "AdmissionReview",
            "request": {
                "uid": "u-1",
                "kind": {"group": "apps.kruise.io", "version": "v1alpha1", "kind": "CloneSet"},
                "resource": {"group": "apps.kruise.io", "version": "v1alpha1", "resource": "clonesets"},
                "namespace": "ns", "name": "c", "operation": "CREATE", "userInfo": {"username": "me"},
                "object": {"metadata": {"name": "c", "creationTimestamp": null}, "x": 1},
                "oldObject": null
            }
        }))
        .unwrap()
    }

    #[test]
    fn decodes_both_versions_and_keeps_raw_objects() {
        for v in [ADMISSION_V1, ADMISSION_V1BETA1] {
            let r = decode(&body(v)).unwrap();
            assert_eq!(r.request.uid, "u-1");
            assert_eq!(r.object, Some(json!({"metadata": {"name": "c", "creationTimestamp": null}, "x": 1})));
            assert_eq!(r.old_object, None);
            let out = respond(&r.request, Verdict::allow());
            assert_eq!(out["apiVersion"], v);
            assert_eq!(out["kind"], "AdmissionReview");
            assert_eq!(out["response"]["uid"], "u-1");
            assert_eq!(out["response"]["allowed"], true);
            assert_eq!(out["response"]["status"]["code"], 200);
        }
    }

    /// The one-pass decode reads every review exactly as the step-by-step decode does.
    #[test]
    fn one_pass_decode_is_the_checked_decode() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/reviews");
        let mut bodies: Vec<Vec<u8>> =
            std::fs::read_dir(dir).unwrap().map(|e| std::fs::read(e.unwrap().path()).unwrap()).collect();
        bodies.extend([ADMISSION_V1, ADMISSION_V1BETA1].map(body));
        let mut v: Value = serde_json::from_slice(&body(ADMISSION_V1)).unwrap();
        v["request"]["oldObject"] = json!({"metadata": {"name": "old"}});
        v["request"]["dryRun"] = json!(true);
        v["request"]["namespace"] = Value::Null;
        v["request"]["subResource"] = json!("status");
        v["request"]["options"] = json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"});
        v["request"]["userInfo"] = json!({"username": "u", "groups": ["g"], "extra": {"k": ["v"]}});
        v["request"]["unknownField"] = json!(1);
        v["response"] = Value::Null;
        v["extra"] = json!({"x": 1});
        bodies.push(serde_json::to_vec(&v).unwrap());
        v["request"]["object"] = Value::Null;
        bodies.push(serde_json::to_vec(&v).unwrap());
        for b in &bodies {
            let fast = format!("{:?}", decode(b).unwrap());
            let checked = format!("{:?}", decode_checked(b).unwrap());
            assert_eq!(fast, checked, "{}", String::from_utf8_lossy(b));
        }
    }

    #[test]
    fn rejects_what_is_not_a_review() {
        let cases: &[(&[u8], &str)] = &[
            (b"", "not valid JSON"),
            (b"{\"kind\":", "not valid JSON"),
            (b"{\"kind\":\"\xff\"}", "not valid JSON"),
            (b"[]", "not an AdmissionReview"),
            (b"{\"kind\":\"Pod\",\"apiVersion\":\"v1\"}", "not an AdmissionReview"),
            (b"{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\"}", "no request"),
            (
                b"{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\",\"request\":{\"uid\":1}}",
                "invalid",
            ),
            (
                b"{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\",\"request\":null}",
                "no request",
            ),
            (b"{\"kind\":\"AdmissionReview\",\"apiVersion\":\"v2\",\"request\":{}}", "not an AdmissionReview"),
            (b"{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\",\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},\"operation\":\"CREATE\",\"userInfo\":{}},\"response\":{\"allowed\":\"yes\"}}", "invalid"),
        ];
        for (input, want) in cases {
            let err = decode(input).unwrap_err().to_string();
            assert!(err.contains(want), "{err} should contain {want}");
        }
    }

    #[test]
    fn denial_and_patch_encoding() {
        let r = decode(&body(ADMISSION_V1)).unwrap();
        let out = respond(&r.request, Verdict::errored(422, "bad").warn("w"));
        assert_eq!(out["response"]["allowed"], false);
        assert_eq!(out["response"]["status"]["code"], 422);
        assert_eq!(out["response"]["status"]["message"], "bad");
        assert_eq!(out["response"]["warnings"], json!(["w"]));
        let out = respond(&r.request, Verdict::forbidden("no"));
        assert_eq!(out["response"]["status"]["reason"], "Forbidden");
        assert_eq!(out["response"]["status"]["code"], 403);

        let patch: Patch = serde_json::from_value(json!([{"op": "add", "path": "/y", "value": 2}])).unwrap();
        let out = respond(&r.request, Verdict::patched(Some(patch.clone())));
        assert_eq!(out["response"]["patchType"], "JSONPatch");
        let bytes = BASE64.decode(out["response"]["patch"].as_str().unwrap()).unwrap();
        assert_eq!(serde_json::from_slice::<Patch>(&bytes).unwrap(), patch);
    }
}
