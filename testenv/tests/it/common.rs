use kruise_testenv::TestCluster;
use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub fn cluster() -> &'static TestCluster {
    match TestCluster::shared() {
        Ok(c) => c,
        Err(e) => panic!("the test cluster did not start: {e}"),
    }
}

/// The repository root (deploy/, webhook-config/).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Polls `check` every 50 ms until it returns `Some`, or panics with `what` after `timeout`.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out after {timeout:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Applies deploy/'s CRDs once per test binary.
pub async fn crds() {
    static DONE: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    DONE.get_or_init(|| async {
        cluster().apply_path(repo().join("deploy/crds")).await.unwrap();
    })
    .await;
}
