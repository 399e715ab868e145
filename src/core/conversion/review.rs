//! The `/convert` answer (spec §8.2, apiextensions.k8s.io/v1 `ConversionReview`): every object
//! of the request converted to `desiredAPIVersion`, in order, under the request's uid; a
//! `Failure` result naming the object when one cannot be converted (an unknown kind or
//! version); an error (the HTTP adapter answers 400) for a body that is not a ConversionReview
//! request at all. Pure: bytes in, a review out.

use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use kube::core::response::Status;
use serde_json::Value;

use super::convert;

/// The envelope versions the apiserver may send (the CRDs ask for v1).
pub const REVIEW_VERSIONS: [&str; 2] = ["apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1"];

/// Why a body is not a ConversionReview request (each is an HTTP 400).
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// Not JSON.
    #[error("request body is not valid JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// JSON, but not a ConversionReview of a known envelope version.
    #[error("request body is not a ConversionReview: {0}")]
    NotConversionReview(String),
    /// No `request`.
    #[error("ConversionReview has no request")]
    MissingRequest,
    /// The request does not have the fields of one (uid, desiredAPIVersion, objects).
    #[error("invalid ConversionReview request: {0}")]
    InvalidRequest(#[source] serde_json::Error),
}

/// Answers a ConversionReview body.
pub fn answer(body: &[u8]) -> Result<ConversionReview, ReviewError> {
    let value: Value = serde_json::from_slice(body).map_err(ReviewError::NotJson)?;
    let Value::Object(map) = &value else {
        return Err(ReviewError::NotConversionReview("the body is not a JSON object".into()));
    };
    let text = |k: &str| map.get(k).and_then(Value::as_str).unwrap_or_default();
    if text("kind") != "ConversionReview" || !REVIEW_VERSIONS.contains(&text("apiVersion")) {
        return Err(ReviewError::NotConversionReview(format!(
            "expected kind ConversionReview and apiVersion {}, got kind {:?} apiVersion {:?}",
            REVIEW_VERSIONS.join(" or "),
            text("kind"),
            text("apiVersion")
        )));
    }
    if map.get("request").is_none_or(Value::is_null) {
        return Err(ReviewError::MissingRequest);
    }
    let review: ConversionReview = serde_json::from_value(value).map_err(ReviewError::InvalidRequest)?;
    let request = ConversionRequest::from_review(review).map_err(|_| ReviewError::MissingRequest)?;
    let desired = request.desired_api_version.clone();
    let converted: Result<Vec<Value>, _> =
        request.objects.iter().enumerate().map(|(i, o)| convert(i, o, &desired)).collect();
    let response = ConversionResponse::for_request(request);
    Ok(match converted {
        Ok(objects) => response.success(objects),
        Err(e) => response.failure(Status::failure(&e.to_string(), "ConversionFailed")),
    }
    .into_review())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn review(desired: &str, objects: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": "u-1", "desiredAPIVersion": desired, "objects": objects}}))
        .unwrap()
    }

    fn cs(version: &str, name: &str) -> Value {
        json!({"apiVersion": version, "kind": "CloneSet", "metadata": {"name": name},
               "spec": {"updateStrategy": {"type": "InPlaceOnly"}}})
    }

    fn answered(body: &[u8]) -> Value {
        serde_json::to_value(answer(body).unwrap()).unwrap()
    }

    #[test]
    fn converts_every_object_in_order_under_the_uid() {
        let out = answered(&review(
            "apps.kruise.io/v1beta1",
            json!([cs("apps.kruise.io/v1alpha1", "a"), cs("apps.kruise.io/v1beta1", "b"),
                   {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "StatefulSet", "metadata": {"name": "c"}}]),
        ));
        assert_eq!(out["apiVersion"], "apiextensions.k8s.io/v1");
        assert_eq!(out["kind"], "ConversionReview");
        let r = &out["response"];
        assert_eq!(r["uid"], "u-1");
        assert_eq!(r["result"]["status"], "Success");
        let objects = r["convertedObjects"].as_array().unwrap();
        let names: Vec<_> = objects.iter().map(|o| o["metadata"]["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert!(objects.iter().all(|o| o["apiVersion"] == "apps.kruise.io/v1beta1"));
        assert_eq!(objects[0]["spec"]["updateStrategy"]["rollingUpdate"]["podUpdatePolicy"], "InPlaceOnly");
        assert_eq!(objects[1], cs("apps.kruise.io/v1beta1", "b"), "already at the desired version: unchanged");
    }

    #[test]
    fn unknown_kinds_and_versions_fail_with_a_message() {
        let rows = [
            (
                "apps.kruise.io/v1beta1",
                json!([{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "BroadcastJob"}]),
                "object 0: kind \"BroadcastJob\" of \"apps.kruise.io/v1alpha1\" has no conversion",
            ),
            (
                "apps.kruise.io/v2",
                json!([cs("apps.kruise.io/v1alpha1", "a")]),
                "object 0: cannot convert CloneSet from \"apps.kruise.io/v1alpha1\" to \"apps.kruise.io/v2\"",
            ),
            (
                "apps.kruise.io/v1beta1",
                json!([cs("apps.kruise.io/v1alpha1", "a"), cs("apps/v1", "b")]),
                "object 1: cannot convert CloneSet from \"apps/v1\"",
            ),
            ("apps.kruise.io/v1beta1", json!([42]), "object 0 is not a JSON object"),
        ];
        for (desired, objects, message) in rows {
            let out = answered(&review(desired, objects));
            let r = &out["response"];
            assert_eq!(r["uid"], "u-1");
            assert_eq!(r["result"]["status"], "Failure", "{message}");
            assert!(r["result"]["message"].as_str().unwrap().starts_with(message), "{}", r["result"]["message"]);
            assert_eq!(r["convertedObjects"], json!([]));
        }
    }

    #[test]
    fn malformed_bodies_are_errors() {
        let rows: [(&[u8], &str); 6] = [
            (b"{", "request body is not valid JSON"),
            (b"[]", "request body is not a ConversionReview: the body is not a JSON object"),
            (br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{}}"#, "not a ConversionReview"),
            (br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}"#, "ConversionReview has no request"),
            (br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u"}}"#,
             "invalid ConversionReview request: missing field `desiredAPIVersion`"),
            (br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u","desiredAPIVersion":"x","objects":{}}}"#,
             "invalid ConversionReview request"),
        ];
        for (body, want) in rows {
            let err = answer(body).unwrap_err().to_string();
            assert!(err.contains(want), "{err}");
        }
    }
}
