//! `kruise daemon`'s pull loop end to end in-process: the NodeImage served by a fake API server
//! (list + streaming watch with the node's field selector, a status subresource pinned to
//! resourceVersions, Secrets, Events) and pulls answered by an in-memory runtime scripted per
//! image. What a node's NodeImage status says after the daemon ran, how often it was written,
//! and how many pulls ran at once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod daemon_support;

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use daemon_support::{Behaviour, FakeApi, MemRuntime};
use kruise::daemon::admin::{Health, Metrics};
use kruise::daemon::credential_provider::{CredentialPlugins, register};
use kruise::daemon::puller::{self, Settings};
use kruise::daemon::runtime::{ImageRuntime, NoRuntime};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const NODE: &str = "node-a";

fn start<R: ImageRuntime>(
    api: &FakeApi,
    runtime: R,
    max: Option<usize>,
) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    start_with(api, runtime, max, None)
}

fn start_with<R: ImageRuntime>(
    api: &FakeApi,
    runtime: R,
    max: Option<usize>,
    credential_plugins: Option<Arc<CredentialPlugins>>,
) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let stop = CancellationToken::new();
    let settings = Settings {
        node: NODE.into(),
        max_concurrent_pulls: max,
        status_write_interval: Duration::from_secs(1),
        events: true,
        credential_plugins,
    };
    let task = tokio::spawn(puller::run(
        api.client(),
        Arc::new(runtime),
        settings,
        Health::new(),
        Metrics::new(),
        stop.clone(),
    ));
    (stop, task)
}

fn node_image(images: Value) -> Value {
    json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "NodeImage", "metadata": {"name": NODE}, "spec": {"images": images}})
}

fn tag_status<'a>(status: &'a Value, image: &str, tag: &str) -> &'a Value {
    status["imageStatuses"][image]["tags"]
        .as_array()
        .and_then(|t| t.iter().find(|s| s["tag"] == tag))
        .unwrap_or(&Value::Null)
}

fn finished(status: &Value) -> bool {
    status["desired"].as_i64().is_some_and(|d| d > 0)
        && status["succeeded"].as_i64().unwrap_or(0) + status["failed"].as_i64().unwrap_or(0)
            == status["desired"].as_i64().unwrap()
}

fn docker_config(registry: &str, user: &str, password: &str) -> Value {
    let cfg = json!({"auths": {registry: {"username": user, "password": password}}}).to_string();
    json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"namespace": "kruise-daemon-config", "name": "creds"},
        "data": {".dockerconfigjson": base64::engine::general_purpose::STANDARD.encode(cfg)}})
}

/// One tag pulls, one does not exist, one needs credentials the secret gets wrong: Succeeded with
/// the image id, Failed with the runtime's message, Failed naming the authentication failure
/// and the registry. Statuses are written at most once a second, only the node's NodeImage is
/// listed and watched.
#[tokio::test]
async fn three_tags_end_succeeded_not_found_and_auth_failed() {
    let api = FakeApi::new(NODE);
    let runtime = MemRuntime::default();
    runtime.script("registry.example.com/app:1", Behaviour::Succeed { delay: Duration::from_millis(300) });
    runtime.script("registry.example.com/app:missing", Behaviour::NotFound);
    runtime.script(
        "private.example.com/secret-app:1",
        Behaviour::RequireAuth { username: "robot".into(), password: "right".into() },
    );
    api.add_secret("kruise-daemon-config", "creds", docker_config("private.example.com", "robot", "wrong"));
    let retry_once = json!({"backoffLimit": 1, "timeoutSeconds": 30});
    api.put_node_image(node_image(json!({
        "registry.example.com/app": {"tags": [
            {"tag": "1", "version": 1},
            {"tag": "missing", "version": 1, "pullPolicy": retry_once},
        ]},
        "private.example.com/secret-app": {
            "pullSecrets": [{"namespace": "kruise-daemon-config", "name": "creds"}],
            "tags": [{"tag": "1", "version": 3, "pullPolicy": retry_once,
                "ownerReferences": [{"apiVersion": "apps.kruise.io/v1beta1", "kind": "ImagePullJob", "namespace": "default", "name": "warm", "uid": "job-uid"}]}],
        },
    })));
    let (stop, task) = start(&api, runtime.clone(), None);

    let status = api.until("every tag finished", finished).await;
    assert_eq!(
        (status["desired"].as_i64(), status["succeeded"].as_i64(), status["failed"].as_i64()),
        (Some(3), Some(1), Some(2))
    );
    assert_eq!((status["pulling"].as_i64(), status["waiting"].as_i64()), (Some(0), Some(0)));

    let ok = tag_status(&status, "registry.example.com/app", "1");
    assert_eq!(ok["phase"], "Succeeded");
    assert_eq!(ok["progress"], 100);
    assert_eq!(ok["version"], 1);
    assert_eq!(ok["imageID"], format!("registry.example.com/app@{}", MemRuntime::id_of("registry.example.com/app:1")));
    assert!(ok["startTime"].is_string() && ok["completionTime"].is_string(), "{ok}");
    assert!(ok.get("message").is_none(), "{ok}");

    let missing = tag_status(&status, "registry.example.com/app", "missing");
    assert_eq!(missing["phase"], "Failed");
    let message = missing["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "Failed to pull image reference \"registry.example.com/app:missing\": rpc error: code = NotFound"
        ),
        "{message}"
    );
    assert!(missing["completionTime"].is_string());

    let auth = tag_status(&status, "private.example.com/secret-app", "1");
    assert_eq!((auth["phase"].as_str(), auth["version"].as_i64()), (Some("Failed"), Some(3)));
    let message = auth["message"].as_str().unwrap();
    assert!(message.starts_with("authentication failed for private.example.com: "), "{message}");
    assert!(message.contains("401 Unauthorized"), "{message}");

    // The secret's credentials were used (twice: backoffLimit 1), the public image anonymously.
    let pulls = runtime.pulls();
    let private: Vec<_> = pulls.iter().filter(|(i, _)| i.starts_with("private")).collect();
    assert_eq!(private.len(), 2, "{pulls:?}");
    assert!(private.iter().all(|(_, user)| user.as_deref() == Some("robot")), "{pulls:?}");
    assert!(pulls.iter().filter(|(i, _)| i.starts_with("registry")).all(|(_, u)| u.is_none()));
    assert_eq!(pulls.iter().filter(|(i, _)| i.ends_with(":missing")).count(), 2, "retried once");

    // Let the loop settle, then: no write storm, writes spaced by the interval, one node watched.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    {
        let s = api.state.lock().unwrap();
        let writes = &s.status_writes;
        assert!(writes.len() <= 6, "{} status writes", writes.len());
        for pair in writes.windows(2) {
            let gap = pair[1].0.duration_since(pair[0].0);
            assert!(gap >= Duration::from_millis(950), "two status writes {gap:?} apart");
        }
        assert!(s.unselected.is_empty(), "NodeImages listed or watched without the field selector: {:?}", s.unselected);
        let reasons: Vec<&str> = s.events.iter().map(|(r, _)| r.as_str()).collect();
        assert!(reasons.contains(&"PullImageSucceed"), "{reasons:?}");
        // Failed: on the NodeImage for each failed tag, and on the job owning the auth one.
        assert_eq!(reasons.iter().filter(|r| **r == "PullImageFailed").count(), 3, "{reasons:?}");
    }
    stop.cancel();
    task.await.unwrap();
}

/// `--max-concurrent-pulls 2` over six tags of three images: never more than two pulls at once
/// (and two do run together), the others Waiting meanwhile; all succeed.
#[tokio::test]
async fn max_concurrent_pulls_bounds_pulls_across_images() {
    let api = FakeApi::new(NODE);
    let runtime = MemRuntime::default();
    let mut images = serde_json::Map::new();
    for image in ["a.example.com/one", "a.example.com/two", "a.example.com/three"] {
        for tag in ["1", "2"] {
            runtime.script(&format!("{image}:{tag}"), Behaviour::Succeed { delay: Duration::from_millis(400) });
        }
        images.insert(image.into(), json!({"tags": [{"tag": "1", "version": 1}, {"tag": "2", "version": 1}]}));
    }
    api.put_node_image(node_image(Value::Object(images)));
    let (stop, task) = start(&api, runtime.clone(), Some(2));
    let status = api.until("all six succeeded", |s| s["succeeded"] == 6).await;
    assert_eq!(status["desired"], 6);
    assert_eq!(runtime.max_concurrent_pulls(), 2);
    let writes = api.state.lock().unwrap().status_writes.clone();
    assert!(writes.iter().any(|(_, s)| s["waiting"].as_i64() > Some(0)), "some tags were reported Waiting");
    assert!(writes.iter().all(|(_, s)| s["pulling"].as_i64() <= Some(2)), "never more than two Pulling");
    stop.cancel();
    task.await.unwrap();
}

/// A tag's version bump pulls it again and the status answers the new version; a tag removed
/// from the spec leaves the status; a daemon restarted on a finished NodeImage pulls nothing.
#[tokio::test]
async fn version_changes_pull_again_and_restarts_do_not() {
    let api = FakeApi::new(NODE);
    let runtime = MemRuntime::default();
    api.put_node_image(node_image(
        json!({"app.example.com/web": {"tags": [{"tag": "1", "version": 1}, {"tag": "2", "version": 1}]}}),
    ));
    let (stop, task) = start(&api, runtime.clone(), None);
    api.until("both pulled", |s| s["succeeded"] == 2).await;
    assert_eq!(runtime.pulls().len(), 2);

    let mut ni = api.node_image();
    ni["spec"]["images"]["app.example.com/web"]["tags"] = json!([{"tag": "1", "version": 2}]);
    api.put_node_image(ni);
    let status = api
        .until("tag 1 at version 2", |s| {
            tag_status(s, "app.example.com/web", "1")["version"] == 2 && s["succeeded"] == 1
        })
        .await;
    assert_eq!(status["desired"], 1);
    assert_eq!(status["imageStatuses"]["app.example.com/web"]["tags"].as_array().unwrap().len(), 1, "tag 2 is gone");
    assert_eq!(runtime.pulls().len(), 3, "tag 1 pulled again");
    stop.cancel();
    task.await.unwrap();

    // Restarted: the object says tag 1 at version 2 is done.
    let (stop, task) = start(&api, runtime.clone(), None);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(runtime.pulls().len(), 3, "nothing pulled again");
    stop.cancel();
    task.await.unwrap();
}

/// No runtime answered on the node: the daemon runs on, every tag Failed at once naming the
/// endpoints tried, without retries.
#[tokio::test]
async fn without_a_runtime_tags_fail_naming_every_endpoint_tried() {
    let api = FakeApi::new(NODE);
    api.put_node_image(node_image(json!({"nginx": {"tags": [{"tag": "1.25", "version": 1}]}})));
    let tried = "unix:///run/containerd/containerd.sock (connect: No such file or directory), unix:///var/run/crio/crio.sock (connect: No such file or directory)";
    let (stop, task) = start(&api, NoRuntime { tried: tried.into() }, None);
    let status = api.until("failed", |s| s["failed"] == 1).await;
    let message = tag_status(&status, "nginx", "1.25")["message"].as_str().unwrap().to_string();
    assert!(message.contains("containerd.sock") && message.contains("crio.sock"), "{message}");
    assert!(!task.is_finished(), "the daemon keeps running");
    stop.cancel();
    task.await.unwrap();
}

/// The manager writes the status too (kruise's NodeImage controller fails a tag the daemon has
/// not answered in time): a tag the object says is complete at its version is adopted (message
/// and all) and its worker stopped, and the daemon's next writes keep it.
#[tokio::test]
async fn a_tag_the_manager_failed_is_adopted() {
    let api = FakeApi::new(NODE);
    let runtime = MemRuntime::default();
    runtime.script("slow.example.com/big:1", Behaviour::Succeed { delay: Duration::from_secs(30) });
    api.put_node_image(node_image(json!({"slow.example.com/big": {"tags": [{"tag": "1", "version": 1}]}})));
    let (stop, task) = start(&api, runtime.clone(), None);
    api.until("pulling", |s| s["pulling"] == 1).await;
    let mut ni = api.node_image();
    ni["status"]["imageStatuses"]["slow.example.com/big"]["tags"] = json!([{"tag": "1", "phase": "Failed", "version": 1,
        "completionTime": "2026-01-01T00:00:00Z", "message": "node has not responded for a long time"}]);
    api.put_node_image(ni);
    let status = api.until("failed counted", |s| s["failed"] == 1 && s["pulling"] == 0).await;
    assert_eq!(tag_status(&status, "slow.example.com/big", "1")["message"], "node has not responded for a long time");
    stop.cancel();
    task.await.unwrap();
}

/// A pull slower than its tag's `timeoutSeconds` fails as kruise says ("is canceled"); with
/// `activeDeadlineSeconds` the attempt is cut to the deadline and the tag fails with kruise's
/// deadline message instead of retrying.
#[tokio::test]
async fn timeouts_and_the_active_deadline() {
    let api = FakeApi::new(NODE);
    let runtime = MemRuntime::default();
    runtime.script("slow.example.com/a:1", Behaviour::Succeed { delay: Duration::from_secs(30) });
    runtime.script("slow.example.com/b:1", Behaviour::Succeed { delay: Duration::from_secs(30) });
    api.put_node_image(node_image(json!({
        "slow.example.com/a": {"tags": [{"tag": "1", "version": 1, "pullPolicy": {"timeoutSeconds": 1, "backoffLimit": 0}}]},
        "slow.example.com/b": {"tags": [{"tag": "1", "version": 1, "pullPolicy": {"timeoutSeconds": 60, "activeDeadlineSeconds": 1}}]},
    })));
    let (stop, task) = start(&api, runtime.clone(), None);
    let status = api.until("both failed", |s| s["failed"] == 2).await;
    assert_eq!(
        tag_status(&status, "slow.example.com/a", "1")["message"],
        "pulling image slow.example.com/a:1 is canceled"
    );
    assert_eq!(tag_status(&status, "slow.example.com/b", "1")["message"], "pulling exceeds the activeDeadlineSeconds");
    let b_pulls = runtime.pulls().iter().filter(|(i, _)| i.starts_with("slow.example.com/b")).count();
    assert_eq!(b_pulls, 1, "one attempt, cut at the deadline; no retry past it");
    stop.cancel();
    task.await.unwrap();
}

const PLUGIN_API: &str = "credentialprovider.kubelet.k8s.io/v1";

/// A plugin directory and config (kruise-daemon's `--plugin-bin-dir`, `--plugin-config-file`):
/// `robot-plugin` answers for `plugin.example.com` (cached per registry for ten minutes) and
/// appends each request it reads to `calls`; `broken-plugin` matches `*.broken.example.com` and
/// fails.
fn plugin_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let calls = dir.path().join("calls");
    let response = json!({"kind": "CredentialProviderResponse", "apiVersion": PLUGIN_API, "cacheKeyType": "Registry",
        "cacheDuration": "10m", "auth": {"plugin.example.com": {"username": "robot", "password": "from-plugin"}}});
    let scripts = [
        (
            "robot-plugin",
            format!(
                "#!/bin/sh\nread -r request\necho \"$1 $PLUGIN_ENV $request\" >> '{}'\necho '{response}'\n",
                calls.display()
            ),
        ),
        ("broken-plugin", "#!/bin/sh\necho 'no credentials for this image' >&2\nexit 1\n".to_string()),
    ];
    for (name, text) in scripts {
        let path = bin.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let config = format!(
        "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n\
         - name: robot-plugin\n  matchImages: [plugin.example.com]\n  defaultCacheDuration: 1m\n  apiVersion: {PLUGIN_API}\n\
         \x20 args: [--from-args]\n  env: [{{name: PLUGIN_ENV, value: from-env}}]\n\
         - name: broken-plugin\n  matchImages: ['*.broken.example.com']\n  defaultCacheDuration: 1m\n  apiVersion: {PLUGIN_API}\n"
    );
    std::fs::write(dir.path().join("config.yaml"), config).unwrap();
    dir
}

/// The kubelet's credential-provider plugins give the credentials of the images they match,
/// with no pull secret: two images of one registry pull with the plugin's robot account and run
/// the plugin once (its answer is cached per registry), with the config's args and env and the
/// kubelet's request on stdin; an image whose plugin fails pulls anonymously and fails naming
/// the authentication failure.
#[tokio::test]
async fn credential_provider_plugins_give_credentials() {
    let dir = plugin_dir();
    let plugins = register(&dir.path().join("config.yaml"), &dir.path().join("bin")).unwrap();
    let api = FakeApi::new(NODE);
    let runtime = MemRuntime::default();
    let robot = Behaviour::RequireAuth { username: "robot".into(), password: "from-plugin".into() };
    runtime.script("plugin.example.com/team/app:1", robot.clone());
    runtime.script("plugin.example.com/team/other:1", robot.clone());
    runtime.script("x.broken.example.com/app:1", robot);
    let once = json!({"backoffLimit": 0, "timeoutSeconds": 30});
    api.put_node_image(node_image(json!({
        "plugin.example.com/team/app": {"tags": [{"tag": "1", "version": 1, "pullPolicy": once}]},
        "plugin.example.com/team/other": {"tags": [{"tag": "1", "version": 1, "pullPolicy": once}]},
        "x.broken.example.com/app": {"tags": [{"tag": "1", "version": 1, "pullPolicy": once}]},
    })));
    let (stop, task) = start_with(&api, runtime.clone(), None, Some(Arc::new(plugins)));
    let status = api.until("every tag finished", finished).await;
    for image in ["plugin.example.com/team/app", "plugin.example.com/team/other"] {
        assert_eq!(tag_status(&status, image, "1")["phase"], "Succeeded", "{image}: {status:#}");
    }
    let broken = tag_status(&status, "x.broken.example.com/app", "1");
    assert_eq!(broken["phase"], "Failed");
    let message = broken["message"].as_str().unwrap();
    assert!(message.starts_with("authentication failed for x.broken.example.com: "), "{message}");

    let pulls = runtime.pulls();
    for (image, user) in &pulls {
        let want = if image.starts_with("plugin.") { Some("robot") } else { None };
        assert_eq!(user.as_deref(), want, "{pulls:?}");
    }
    let calls = std::fs::read_to_string(dir.path().join("calls")).unwrap();
    let lines: Vec<&str> = calls.lines().collect();
    assert_eq!(lines.len(), 1, "the registry's answer is cached: {calls}");
    let (args, request) = lines[0].split_once(" {").unwrap();
    assert_eq!(args, "--from-args from-env");
    let request: Value = serde_json::from_str(&format!("{{{request}")).unwrap();
    assert_eq!(request["kind"], "CredentialProviderRequest");
    assert_eq!(request["apiVersion"], PLUGIN_API);
    assert!(request["image"].as_str().unwrap().starts_with("plugin.example.com/team/"), "{request}");
    stop.cancel();
    task.await.unwrap();
}

/// Registration refuses what the kubelet refuses, naming it: no plugin directory, a provider
/// without its executable, an invalid config.
#[test]
fn credential_provider_registration_errors() {
    let dir = plugin_dir();
    let config = dir.path().join("config.yaml");
    let e = register(&config, &dir.path().join("nowhere")).unwrap_err();
    assert!(e.starts_with("plugin binary directory ") && e.ends_with("nowhere did not exist"), "{e}");
    std::fs::remove_file(dir.path().join("bin/broken-plugin")).unwrap();
    let e = register(&config, &dir.path().join("bin")).unwrap_err();
    assert!(e.starts_with("plugin binary executable ") && e.ends_with("broken-plugin did not exist"), "{e}");
    std::fs::write(&config, "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders: []\n")
        .unwrap();
    let e = register(&config, &dir.path().join("bin")).unwrap_err();
    assert_eq!(
        e,
        "failed to validate credential provider config: [providers: Required value: at least 1 item in plugins is required]"
    );
}
