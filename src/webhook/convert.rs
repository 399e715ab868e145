//! The CRD conversion webhook `/convert` (spec §8.2): the HTTP adapter around
//! [`crate::core::conversion::review::answer`], under the same transport rules as the admission
//! paths (JSON only, size limit); a body that is not a ConversionReview request gets 400 with a
//! JSON `Status`. Every kruise CRD with more than one version points its `conversion.webhook`
//! here (see `manifests.rs`).

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::http::{error, read_body};
use super::paths::CONVERT;
use crate::core::conversion::review::answer;

/// Answers one ConversionReview.
pub async fn serve(headers: HeaderMap, body: Body) -> Response {
    let bytes = match read_body(CONVERT, &headers, body).await {
        Ok(b) => b,
        Err(response) => return response,
    };
    let review = match answer(&bytes) {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(webhook = CONVERT, error = %e, "bad conversion request");
            return error(StatusCode::BAD_REQUEST, "BadRequest", &e.to_string());
        }
    };
    if let Some(r) = &review.response {
        tracing::info!(
            webhook = CONVERT,
            uid = %r.uid,
            objects = r.converted_objects.len(),
            failed = r.result.is_failure(),
            message = %r.result.message,
            "conversion review"
        );
    }
    match serde_json::to_vec(&review) {
        Ok(body) => ([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], body).into_response(),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, "InternalError", &format!("cannot encode review: {e}")),
    }
}
