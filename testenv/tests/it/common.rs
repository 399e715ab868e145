use kruise_testenv::TestCluster;
pub use kruise_testenv::eventually;
use std::path::PathBuf;

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

/// Applies deploy/'s CRDs once per test binary.
pub async fn crds() {
    static DONE: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    DONE.get_or_init(|| async {
        cluster().apply_path(repo().join("deploy/crds")).await.unwrap();
    })
    .await;
}
