//! `kruise daemon`'s pull loop over a real unix socket: the runtime is `kruise_cri`'s FakeRuntime
//! (a CRI v1 image service scripted per image) found by discovery, the NodeImage is served by the
//! fake API of tests/daemon_support. Three tags end Succeeded with the runtime's image id, Failed
//! with its not-found message, and Failed naming the authentication failure; pulls at once never
//! exceed `--max-concurrent-pulls`; a socket where nothing answers leaves the daemon running with
//! every endpoint tried named in the tags and in `/readyz`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod daemon_support;

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use daemon_support::FakeApi;
use kruise::daemon::admin::{Health, Metrics};
use kruise::daemon::cri::{CriRuntime, Where};
use kruise::daemon::puller::{self, Settings};
use kruise::daemon::runtime::ImageRuntime;
use kruise_cri::fake::{Behaviour, FakeRuntime, image_id};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const NODE: &str = "node-cri";

fn tag_status<'a>(status: &'a Value, image: &str, tag: &str) -> &'a Value {
    status["imageStatuses"][image]["tags"]
        .as_array()
        .and_then(|t| t.iter().find(|s| s["tag"] == tag))
        .unwrap_or(&Value::Null)
}

async fn runtime_on_socket(fake: &FakeRuntime) -> (tempfile::TempDir, Arc<CriRuntime>) {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("containerd.sock");
    fake.serve(&socket).await.unwrap();
    let at = Where { explicit: Some(format!("unix://{}", socket.display())), kubelet_config: None };
    let runtime = Arc::new(CriRuntime::discover(&at).await);
    (dir, runtime)
}

fn start(
    api: &FakeApi,
    runtime: Arc<CriRuntime>,
    max: Option<usize>,
    health: Arc<Health>,
) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let stop = CancellationToken::new();
    let settings = Settings {
        node: NODE.into(),
        max_concurrent_pulls: max,
        status_write_interval: Duration::from_secs(1),
        events: true,
        credential_plugins: None,
    };
    (stop.clone(), tokio::spawn(puller::run(api.client(), runtime, settings, health, Metrics::new(), stop)))
}

#[tokio::test]
async fn three_tags_over_the_cri_socket() {
    let fake = FakeRuntime::new("containerd");
    fake.script("127.0.0.1:5000/app:1", Behaviour::Succeed { delay: Duration::from_millis(200) });
    fake.script("127.0.0.1:5000/app:missing", Behaviour::NotFound);
    fake.script(
        "127.0.0.1:5000/private:1",
        Behaviour::RequireAuth { username: "robot".into(), password: "right".into(), delay: Duration::ZERO },
    );
    let (_dir, runtime) = runtime_on_socket(&fake).await;
    assert!(runtime.describe().unwrap().starts_with("containerd "), "{:?}", runtime.describe());

    let api = FakeApi::new(NODE);
    let cfg = json!({"auths": {"127.0.0.1:5000": {"username": "robot", "password": "wrong"}}}).to_string();
    api.add_secret(
        "kruise-daemon-config",
        "creds",
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
            "metadata": {"namespace": "kruise-daemon-config", "name": "creds"},
            "data": {".dockerconfigjson": base64::engine::general_purpose::STANDARD.encode(cfg)}}),
    );
    let once = json!({"backoffLimit": 0});
    api.put_node_image(json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "NodeImage", "metadata": {"name": NODE},
        "spec": {"images": {
            "127.0.0.1:5000/app": {"tags": [{"tag": "1", "version": 1}, {"tag": "missing", "version": 1, "pullPolicy": once}]},
            "127.0.0.1:5000/private": {"pullSecrets": [{"namespace": "kruise-daemon-config", "name": "creds"}],
                "tags": [{"tag": "1", "version": 1, "pullPolicy": once}]},
        }}}));
    let (stop, task) = start(&api, runtime, Some(2), Health::new());
    let status = api.until("three tags done", |s| s["succeeded"] == 1 && s["failed"] == 2).await;

    let ok = tag_status(&status, "127.0.0.1:5000/app", "1");
    assert_eq!(ok["phase"], "Succeeded");
    assert_eq!(ok["imageID"], format!("127.0.0.1:5000/app@{}", image_id("127.0.0.1:5000/app:1")));
    let missing = tag_status(&status, "127.0.0.1:5000/app", "missing")["message"].as_str().unwrap().to_string();
    assert!(
        missing.starts_with(
            "Failed to pull image reference \"127.0.0.1:5000/app:missing\": rpc error: code = Unknown desc = "
        ) && missing.ends_with("not found"),
        "{missing}"
    );
    let auth = tag_status(&status, "127.0.0.1:5000/private", "1")["message"].as_str().unwrap().to_string();
    assert!(auth.starts_with("authentication failed for 127.0.0.1:5000: rpc error: code = Unknown desc = "), "{auth}");
    assert!(fake.max_concurrent_pulls() <= 2);
    assert!(fake.image("127.0.0.1:5000/app:1").is_some(), "the runtime has the image");
    stop.cancel();
    task.await.unwrap();
}

#[tokio::test]
async fn max_concurrent_pulls_over_the_cri_socket() {
    let fake = FakeRuntime::new("containerd");
    let mut images = serde_json::Map::new();
    for i in 0..5 {
        let image = format!("127.0.0.1:5000/app{i}");
        fake.script(&format!("{image}:1"), Behaviour::Succeed { delay: Duration::from_millis(300) });
        images.insert(image, json!({"tags": [{"tag": "1", "version": 1}]}));
    }
    let (_dir, runtime) = runtime_on_socket(&fake).await;
    let api = FakeApi::new(NODE);
    api.put_node_image(json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "NodeImage", "metadata": {"name": NODE},
        "spec": {"images": images}}));
    let (stop, task) = start(&api, runtime, Some(2), Health::new());
    api.until("five pulled", |s| s["succeeded"] == 5).await;
    assert_eq!(fake.max_concurrent_pulls(), 2, "two at once, never more");
    assert_eq!(fake.pulls().len(), 5);
    stop.cancel();
    task.await.unwrap();
}

#[tokio::test]
async fn nothing_answering_disables_pulls_and_names_every_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let missing = format!("unix://{}", dir.path().join("nothing.sock").display());
    let runtime =
        Arc::new(CriRuntime::discover(&Where { explicit: Some(missing.clone()), kubelet_config: None }).await);
    let health = Health::new();
    health.set_runtime(runtime.describe());
    health.set_synced(true);
    let (ready, body) = health.readyz();
    assert!(!ready && body.contains(&missing), "{body}");

    let api = FakeApi::new(NODE);
    api.put_node_image(json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "NodeImage", "metadata": {"name": NODE},
        "spec": {"images": {"nginx": {"tags": [{"tag": "1.25", "version": 1}]}}}}));
    let (stop, task) = start(&api, runtime, None, health);
    let status = api.until("failed", |s| s["failed"] == 1).await;
    let message = tag_status(&status, "nginx", "1.25")["message"].as_str().unwrap().to_string();
    assert!(message.contains(&missing) && message.contains("pulls disabled"), "{message}");
    assert!(!task.is_finished());
    stop.cancel();
    task.await.unwrap();
}
