//! The admission property (issue 13 item 1): whatever the body, a handler neither panics nor
//! hangs; its answer is a well-formed AdmissionReview in the request's version with the
//! request's uid; a mutating answer's patch applies to the request object (`json_patch`), a
//! validating answer has none; and sending the patched object again gives no patch (the
//! `reinvocationPolicy: IfNeeded` contract, ADMISSION.md).

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use kruise::webhook::paths::{Handler, Kind, WEBHOOKS};
use kruise::webhook::review::{self, Review};
use kruise::webhook::{Context, handle};
use serde_json::Value;

/// The handlers that exist (every one is fuzzed).
pub const HANDLERS: [Handler; 7] = [
    Handler::MutatePod,
    Handler::MutateSidecarSet,
    Handler::ValidateSidecarSet,
    Handler::MutateCloneSet,
    Handler::MutateStatefulSet,
    Handler::ValidateCloneSet,
    Handler::ValidateStatefulSet,
];

/// Whether `handler` serves a mutating webhook.
pub fn is_mutating(handler: Handler) -> bool {
    WEBHOOKS.iter().any(|w| w.handler == handler && w.kind == Kind::Mutating)
}

/// What a checked answer held.
#[derive(Debug)]
pub struct Answer {
    pub allowed: bool,
    pub code: i64,
    /// `status.message` of a refusal.
    pub message: String,
    /// The request object with the patch applied, when there was a patch.
    pub patched: Option<Value>,
}

/// Checks the property for one review body and handler; returns `None` when the body is not an
/// AdmissionReview (the server answers 400; `decode` must then say why, without panicking).
pub fn check_body(ctx: &Context, handler: Handler, body: &[u8]) -> Option<Answer> {
    let review = match review::decode(body) {
        Ok(r) => r,
        Err(e) => {
            assert!(!e.to_string().is_empty(), "a decode error says why");
            return None;
        }
    };
    Some(check_review(ctx, handler, &review, body))
}

/// Checks the answer to a decoded review, then the re-invocation with the patched object.
pub fn check_review(ctx: &Context, handler: Handler, review: &Review, body: &[u8]) -> Answer {
    let answer = answer_once(ctx, handler, review);
    if let Some(patched) = &answer.patched {
        let again = resend(body, review, patched);
        let review2 = review::decode(&again).unwrap_or_else(|e| panic!("the patched review does not decode: {e}"));
        let second = answer_once(ctx, handler, &review2);
        assert!(
            second.allowed,
            "{handler:?}: the patched object is refused on re-invocation (code {}: {})\nrequest object {}\nfirst patch gave {}",
            second.code,
            second.message,
            compact(review.object.as_ref().unwrap_or(&Value::Null)),
            compact(patched)
        );
        assert!(
            second.patched.is_none(),
            "{handler:?}: re-invocation patched again\nrequest object {}\npatched {}\nbecame {}",
            compact(review.object.as_ref().unwrap_or(&Value::Null)),
            compact(patched),
            compact(second.patched.as_ref().unwrap_or(&Value::Null))
        );
    }
    answer
}

/// One call: the verdict, encoded as the server encodes it, checked field by field.
fn answer_once(ctx: &Context, handler: Handler, review: &Review) -> Answer {
    let verdict = handle(ctx, handler, review).unwrap_or_else(|| panic!("{handler:?} is implemented"));
    let bytes = review::encode(&review.request, &verdict);
    let out: Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("the answer is not JSON: {e}"));
    let req = &review.request;
    assert_eq!(out["apiVersion"], req.types.api_version.as_str(), "answered in the request's version");
    assert_eq!(out["kind"], "AdmissionReview");
    let resp = &out["response"];
    assert_eq!(resp["uid"], req.uid.as_str(), "the answer carries the request's uid");
    let allowed = resp["allowed"].as_bool().unwrap_or_else(|| panic!("allowed is a bool: {out}"));
    assert_eq!(allowed, verdict.allowed);
    let code = resp["status"]["code"].as_i64().unwrap_or(0);
    if allowed {
        assert_eq!(code, 200, "an admitted review has status.code 200: {out}");
    } else {
        assert!((400..600).contains(&code), "a refusal carries a 4xx/5xx status.code: {out}");
        assert!(resp["status"]["message"].as_str().is_some_and(|m| !m.is_empty()), "a refusal says why: {out}");
        assert!(resp.get("patch").is_none(), "a refusal carries no patch: {out}");
    }
    for w in resp["warnings"].as_array().into_iter().flatten() {
        let w = w.as_str().unwrap_or_else(|| panic!("a warning is a string: {out}"));
        assert!(w.chars().count() <= 120, "warnings are at most 120 characters: {w:?}");
    }
    assert_eq!(resp.get("patch").is_some(), resp.get("patchType").is_some(), "patch and patchType go together: {out}");
    let patched = resp.get("patch").map(|p| {
        assert!(is_mutating(handler), "{handler:?} validates and must not patch: {out}");
        assert_eq!(resp["patchType"], "JSONPatch");
        let bytes = BASE64.decode(p.as_str().unwrap_or_default()).unwrap_or_else(|e| panic!("patch is base64: {e}"));
        let patch: json_patch::Patch =
            serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("patch is an RFC 6902 patch: {e}"));
        assert!(!patch.0.is_empty(), "an empty patch is sent as no patch");
        let mut object = review.object.clone().unwrap_or_else(|| panic!("a patch without a request object"));
        json_patch::patch(&mut object, &patch).unwrap_or_else(|e| {
            panic!(
                "the patch does not apply to the request object: {e}\nobject {}\npatch {}",
                compact(review.object.as_ref().unwrap_or(&Value::Null)),
                String::from_utf8_lossy(&bytes)
            )
        });
        object
    });
    let message = resp["status"]["message"].as_str().unwrap_or_default().to_string();
    Answer { allowed, code, message, patched }
}

/// The review body with `request.object` replaced by `object`. A body `decode` takes need not
/// be a JSON `Value`: a field the envelope does not have is skipped unread, and with it invalid
/// UTF-8 or a lone surrogate escape in its strings (Go's encoding/json takes both too, as
/// U+FFFD). Such a body is re-sent as the apiserver's next call would be: built from what was
/// decoded.
fn resend(body: &[u8], review: &Review, object: &Value) -> Vec<u8> {
    let mut out: Value = serde_json::from_slice(body).unwrap_or_else(|_| {
        let mut request =
            serde_json::to_value(&review.request).unwrap_or_else(|e| panic!("a decoded request encodes: {e}"));
        request["oldObject"] = review.old_object.clone().unwrap_or(Value::Null);
        serde_json::json!({"apiVersion": review.request.types.api_version, "kind": "AdmissionReview", "request": request})
    });
    out["request"]["object"] = object.clone();
    serde_json::to_vec(&out).unwrap_or_default()
}

fn compact(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 4000 { format!("{}…", &s[..s.floor_char_boundary(4000)]) } else { s }
}
