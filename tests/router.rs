//! The router's HTTP rules, in-process through `router().oneshot()` (issue 2, ADMISSION.md):
//! JSON only (415), bodies up to 7 MiB (413 above), a body that is not an AdmissionReview gets 400
//! with a JSON `Status`, a v1beta1 review is answered in v1beta1, a routed path whose handler does
//! not exist yet and an unknown path get 404, and the v1.8 spellings of the paths are served.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::app::App;
use common::*;

#[tokio::test]
async fn negative_http_cases() {
    let app = App::new();
    let path = "/mutate-apps-kruise-io-cloneset";
    let good = review_body(example_review("cloneset-create.json"), "admission.k8s.io/v1");

    let r = app.post_as(path, Some("text/plain"), good.clone()).await;
    assert_eq!(r.status, 415);
    assert_eq!(r.json()["kind"], "Status");
    let r = app.post_as(path, None, good.clone()).await;
    assert_eq!(r.status, 415);

    let r = app.post_as(path, Some("application/json"), vec![]).await;
    assert_eq!(r.status, 400);
    assert!(r.json()["message"].as_str().unwrap().contains("not valid JSON"));

    let r = app.post_as(path, Some("application/json"), good[..good.len() / 2].to_vec()).await;
    assert_eq!(r.status, 400, "truncated JSON");

    let r = app
        .post_as(
            path,
            Some("application/json; charset=utf-8"),
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#.to_vec(),
        )
        .await;
    assert_eq!(r.status, 400);
    assert!(r.json()["message"].as_str().unwrap().contains("no request"));

    let r = app.post_as(path, Some("application/json"), br#"{"apiVersion":"v1","kind":"Pod"}"#.to_vec()).await;
    assert_eq!(r.status, 400);

    // 7 MiB + 1: refused before the handler.
    let big = vec![b' '; 7 * 1024 * 1024 + 1];
    let r = app.post_as(path, Some("application/json"), big).await;
    assert_eq!(r.status, 413);
    // Exactly 7 MiB is read (and fails as JSON, not as size).
    let mut padded = good.clone();
    padded.resize(7 * 1024 * 1024, b' ');
    let r = app.post_as(path, Some("application/json"), padded).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));

    // A body that stops arriving (the request-read timeout, a reset) is not "too large": it was
    // answered 413 "larger than 7340032 bytes" until the hostile-client test sent 7 MiB bodies
    // slower than the request-read timeout.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        vec![Ok(good[..10].to_vec()), Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "request read timeout"))];
    let request = hyper::Request::post(path)
        .header("content-type", "application/json")
        .body(axum::body::Body::from_stream(futures::stream::iter(chunks)))
        .unwrap();
    let r = app.request(request).await;
    assert_eq!(r.status, 400, "{}", String::from_utf8_lossy(&r.body));
    let message = r.json()["message"].as_str().unwrap().to_string();
    assert!(message.contains("could not be read") && message.contains("request read timeout"), "{message}");
    // Without a Content-Length, a body over the limit is still cut at 7 MiB + 1 and answered 413.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = (0..8).map(|_| Ok(vec![b' '; 1024 * 1024])).collect();
    let request = hyper::Request::post(path)
        .header("content-type", "application/json")
        .body(axum::body::Body::from_stream(futures::stream::iter(chunks)))
        .unwrap();
    assert_eq!(app.request(request).await.status, 413);

    // v1beta1 reviews are answered in v1beta1.
    let r = app
        .post_as(
            path,
            Some("application/json"),
            review_body(example_review("cloneset-create.json"), "admission.k8s.io/v1beta1"),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["apiVersion"], "admission.k8s.io/v1beta1");

    // A path no webhook serves answers 404, never a fake allowed.
    let r = app.post_as("/no-such-webhook", Some("application/json"), good.clone()).await;
    assert_eq!(r.status, 404);
    // The v1.8 spelling of the path is served too.
    let r = app.post_as("/mutate-apps-kruise-io-v1alpha1-cloneset", Some("application/json"), good).await;
    assert_eq!(r.status, 200);
}
