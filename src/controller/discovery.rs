//! Whether the API server serves some kinds (kruise `pkg/util/discovery` `DiscoverGVK`, which
//! kruise's controllers call at start and skip themselves when it says no): the group version's
//! resource list is read, retried on any failure with kruise's backoff (4 tries, 0.5 s × 5ⁿ);
//! a kind missing after the tries means not served; an API server that never answered means
//! served (kruise: "might be caused by abnormal apiserver or etcd, ignore it").
//!
//! Used for the image controllers (NodeImage, ImagePullJob, ImageListPullJob; they share their
//! watches, so all three kinds or none) and for image pre-download (spec §7.1: the ImagePullJob
//! kind served).

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList;
use kube::Client;

/// kruise's `backOff`: Steps 4, Duration 500 ms, Factor 5 (its 10% jitter left out).
pub const BACKOFF: [Duration; 3] =
    [Duration::from_millis(500), Duration::from_millis(2500), Duration::from_millis(12500)];

/// What one look at the resource list found.
#[derive(Debug, PartialEq)]
pub enum Found {
    /// Every kind is listed.
    All,
    /// These kinds are not.
    Missing(Vec<String>),
    /// The list could not be read.
    Failed(String),
}

/// One look: which of `kinds` the list lacks.
pub fn look(list: Result<&APIResourceList, &kube::Error>, kinds: &[&str]) -> Found {
    match list {
        Err(e) => Found::Failed(e.to_string()),
        Ok(list) => {
            let missing: Vec<String> = kinds
                .iter()
                .filter(|k| !list.resources.iter().any(|r| r.kind == **k && !r.name.contains('/')))
                .map(|k| k.to_string())
                .collect();
            if missing.is_empty() { Found::All } else { Found::Missing(missing) }
        }
    }
}

/// Whether `group_version` (`apps.kruise.io/v1beta1`) serves every one of `kinds`, with
/// kruise's retries.
pub async fn served(client: &Client, group_version: &str, kinds: &[&str]) -> bool {
    served_with(client, group_version, kinds, &BACKOFF).await
}

/// [`served`] with the pauses between tries given (tests).
pub async fn served_with(client: &Client, group_version: &str, kinds: &[&str], backoff: &[Duration]) -> bool {
    let mut last = Found::All;
    for attempt in 0..=backoff.len() {
        if attempt > 0 {
            tokio::time::sleep(backoff[attempt - 1]).await;
        }
        let list = client.list_api_group_resources(group_version).await;
        last = look(list.as_ref(), kinds);
        if last == Found::All {
            return true;
        }
    }
    match last {
        Found::Missing(kinds) => {
            tracing::warn!(?kinds, group_version, "not served: the controllers of these kinds are not started");
            false
        }
        Found::Failed(e) => {
            tracing::error!(group_version, "cannot discover ({e}); assuming the kinds are served");
            true
        }
        Found::All => true,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use http_body_util::Full;
    use serde_json::json;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A fake API server answering the group's resource list with `kinds` (or `code` when not
    /// 200), counting the requests.
    fn fake(kinds: &'static [&'static str], code: u16, calls: Arc<AtomicUsize>) -> Client {
        let svc = tower::service_fn(move |_req: axum::http::Request<kube::client::Body>| {
            let calls = Arc::clone(&calls);
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                let resources: Vec<_> = kinds
                    .iter()
                    .map(|k| {
                        json!({"name": format!("{}s", k.to_lowercase()), "singularName": "", "namespaced": true,
                        "kind": k, "verbs": ["get"]})
                    })
                    .collect();
                let body = if code == 200 {
                    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps.kruise.io/v1beta1",
                        "resources": resources})
                } else {
                    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "message": "down"})
                };
                let response = axum::http::Response::builder()
                    .status(code)
                    .header("content-type", "application/json")
                    .body(Full::new(Bytes::from(body.to_string())))
                    .unwrap();
                Ok::<_, std::convert::Infallible>(response)
            }
        });
        Client::new(svc, "default")
    }

    const KINDS: [&str; 3] = ["NodeImage", "ImagePullJob", "ImageListPullJob"];
    const NO_WAIT: [Duration; 3] = [Duration::ZERO; 3];

    #[tokio::test]
    async fn every_kind_listed_is_served_at_the_first_look() {
        let calls = Arc::new(AtomicUsize::new(0));
        let c = fake(&["StatefulSet", "NodeImage", "ImagePullJob", "ImageListPullJob"], 200, Arc::clone(&calls));
        assert!(served_with(&c, "apps.kruise.io/v1beta1", &KINDS, &NO_WAIT).await);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_missing_kind_after_every_try_is_not_served() {
        let calls = Arc::new(AtomicUsize::new(0));
        let c = fake(&["StatefulSet", "NodeImage"], 200, Arc::clone(&calls));
        assert!(!served_with(&c, "apps.kruise.io/v1beta1", &KINDS, &NO_WAIT).await);
        assert!(!served_with(&c, "apps.kruise.io/v1beta1", &["ImagePullJob"], &NO_WAIT).await);
        assert_eq!(calls.load(Ordering::SeqCst), 8, "four tries each, as kruise's backoff");
    }

    #[tokio::test]
    async fn an_api_server_that_never_answers_counts_as_served() {
        let calls = Arc::new(AtomicUsize::new(0));
        let c = fake(&[], 503, Arc::clone(&calls));
        assert!(served_with(&c, "apps.kruise.io/v1beta1", &KINDS, &NO_WAIT).await);
        assert_eq!(calls.load(Ordering::SeqCst), 4);
    }

    #[test]
    fn look_rows() {
        let list: APIResourceList = serde_json::from_value(json!({"groupVersion": "g/v", "resources": [
            {"name": "imagepulljobs", "singularName": "", "namespaced": true, "kind": "ImagePullJob", "verbs": []},
            {"name": "nodeimages/status", "singularName": "", "namespaced": false, "kind": "NodeImage", "verbs": []}]}))
        .unwrap();
        assert_eq!(look(Ok(&list), &["ImagePullJob"]), Found::All);
        assert_eq!(look(Ok(&list), &["NodeImage"]), Found::Missing(vec!["NodeImage".into()]), "a subresource only");
        assert_eq!(look(Ok(&list), &[]), Found::All);
    }
}
