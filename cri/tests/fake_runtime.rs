//! The CRI client against FakeRuntime over a real unix socket: every scripted behaviour, the
//! errors classified as the daemon needs them, concurrency counting and the pull hook.

// Test helpers outside #[test] fns unwrap too: a setup failure should fail the test loudly.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kruise_cri::fake::{Behaviour, FakeRuntime, image_id};
use kruise_cri::{CriClient, CriError, v1};

const T: Duration = Duration::from_secs(5);

async fn serve(name: &str) -> (FakeRuntime, CriClient, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let rt = FakeRuntime::new(name);
    let socket = dir.path().join("cri.sock");
    rt.serve(&socket).await.unwrap();
    let client = CriClient::connect(socket.to_str().unwrap(), T).await.unwrap();
    (rt, client, dir)
}

#[tokio::test]
async fn version_and_default_pull() {
    let (rt, client, _dir) = serve("containerd").await;
    let v = client.version().await.unwrap();
    assert_eq!((v.runtime_name.as_str(), v.runtime_api_version.as_str()), ("containerd", "v1"));

    assert_eq!(client.image_status("nginx:1.25").await.unwrap(), None);
    let id = client.pull_image("nginx:1.25", None, None).await.unwrap();
    assert_eq!(id, image_id("docker.io/library/nginx:1.25"));
    let status = client.image_status("nginx:1.25").await.unwrap().unwrap();
    assert_eq!(status.id, id);
    assert_eq!(status.repo_tags, ["docker.io/library/nginx:1.25"]);
    // By id too, as kubelet asks.
    assert_eq!(client.image_status(&id).await.unwrap().unwrap().id, id);

    client.pull_image("busybox", None, None).await.unwrap();
    let listed: Vec<String> = client.list_images().await.unwrap().into_iter().flat_map(|i| i.repo_tags).collect();
    assert_eq!(listed, ["docker.io/library/busybox:latest", "docker.io/library/nginx:1.25"]);
    assert_eq!(rt.images().len(), 2);
    assert_eq!(rt.pulls(), ["nginx:1.25", "busybox"]);
}

#[tokio::test]
async fn scripted_failures_are_classified() {
    let (rt, client, _dir) = serve("containerd").await;
    rt.script("127.0.0.1:5000/app:missing", Behaviour::NotFound);
    rt.script(
        "127.0.0.1:5000/app:broken",
        Behaviour::Fail { message: "failed to extract layer: no space left on device".into() },
    );
    rt.script(
        "127.0.0.1:5000/private:1",
        Behaviour::RequireAuth { username: "u".into(), password: "p".into(), delay: Duration::ZERO },
    );

    let e = client.pull_image("127.0.0.1:5000/app:missing", None, None).await.unwrap_err();
    assert!(e.is_not_found() && !e.is_auth_failure(), "{e}");
    assert!(e.to_string().ends_with("127.0.0.1:5000/app:missing: not found"));

    let e = client.pull_image("127.0.0.1:5000/app:broken", None, None).await.unwrap_err();
    assert!(!e.is_not_found() && !e.is_auth_failure(), "{e}");
    assert!(
        matches!(&e, CriError::Status { code: tonic::Code::Unknown, message } if message == "failed to extract layer: no space left on device")
    );

    for auth in [None, Some(v1::AuthConfig { username: "u".into(), password: "wrong".into(), ..Default::default() })] {
        let e = client.pull_image("127.0.0.1:5000/private:1", auth, None).await.unwrap_err();
        assert!(e.is_auth_failure() && !e.is_not_found(), "{e}");
    }
    let good = v1::AuthConfig { username: "u".into(), password: "p".into(), ..Default::default() };
    let id = client.pull_image("127.0.0.1:5000/private:1", Some(good), None).await.unwrap();
    assert_eq!(id, image_id("127.0.0.1:5000/private:1"));
    assert_eq!(rt.images().len(), 1, "failed pulls store nothing");
}

#[tokio::test]
async fn concurrent_pulls_are_counted_and_delays_honoured() {
    let (rt, client, _dir) = serve("containerd").await;
    for i in 0..3 {
        rt.script(&format!("img{i}"), Behaviour::Succeed { delay: Duration::from_millis(300) });
    }
    let start = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..3 {
        let c = client.clone();
        tasks.push(tokio::spawn(async move { c.pull_image(&format!("img{i}"), None, None).await }));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    assert!(start.elapsed() >= Duration::from_millis(300));
    assert_eq!(rt.max_concurrent_pulls(), 3);
    assert_eq!(rt.pulls_in_flight(), 0);

    // One at a time afterwards does not raise the maximum, and nothing stays counted in flight.
    client.pull_image("img0", None, None).await.unwrap();
    assert_eq!(rt.max_concurrent_pulls(), 3);
    rt.reset_max_concurrent_pulls();
    assert_eq!(rt.max_concurrent_pulls(), 0);

    // While a pull runs, it is counted in flight.
    let c = client.clone();
    let slow = tokio::spawn(async move { c.pull_image("img1", None, None).await });
    let deadline = Instant::now() + Duration::from_secs(5);
    while rt.pulls_in_flight() == 0 {
        assert!(Instant::now() < deadline, "the pull never started");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(rt.max_concurrent_pulls(), 1);
    slow.await.unwrap().unwrap();
    assert_eq!(rt.pulls_in_flight(), 0);
}

#[tokio::test]
async fn a_hung_up_pull_leaves_the_in_flight_count() {
    let (rt, client, _dir) = serve("containerd").await;
    rt.script("slow", Behaviour::Succeed { delay: Duration::from_secs(30) });
    let c = client.clone();
    let _ = tokio::time::timeout(Duration::from_millis(200), c.pull_image("slow", None, None)).await;
    // The abandoned pull is dropped server-side; a new pull then runs alone.
    tokio::time::sleep(Duration::from_millis(200)).await;
    rt.script("slow", Behaviour::default());
    let before = rt.max_concurrent_pulls();
    client.pull_image("fast", None, None).await.unwrap();
    assert_eq!(before, 1);
    assert_eq!(rt.max_concurrent_pulls(), 1);
}

#[tokio::test]
async fn pull_hook_sees_each_pulled_image() {
    let (rt, client, _dir) = serve("containerd").await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    rt.on_pull(move |image| s.lock().unwrap().push((image.repo_tags.clone(), image.size)));
    client.pull_image("a:1", None, None).await.unwrap();
    client.pull_image("a:1", None, None).await.unwrap();
    rt.script("b:1", Behaviour::NotFound);
    let _ = client.pull_image("b:1", None, None).await;
    let preloaded = rt.ensure_image("c:1");
    let seen = seen.lock().unwrap().clone();
    let tags: Vec<&str> = seen.iter().map(|(t, _)| t[0].as_str()).collect();
    assert_eq!(tags, ["docker.io/library/a:1", "docker.io/library/a:1", "docker.io/library/c:1"]);
    assert_eq!(seen[2].1, preloaded.size);
}

#[tokio::test]
async fn remove_fs_info_and_unimplemented_runtime_methods() {
    let (rt, client, dir) = serve("containerd").await;
    client.pull_image("a:1", None, None).await.unwrap();
    client.pull_image("b:1", None, None).await.unwrap();

    // The generated clients, on the same socket, for the calls CriClient does not wrap.
    let channel = {
        let path = dir.path().join("cri.sock");
        tonic::transport::Endpoint::from_static("http://x")
            .connect_with_connector(tower::service_fn(move |_| {
                let path = path.clone();
                async move {
                    Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(tokio::net::UnixStream::connect(path).await?))
                }
            }))
            .await
            .unwrap()
    };
    let mut images = v1::image_service_client::ImageServiceClient::new(channel.clone());
    let fs = images.image_fs_info(v1::ImageFsInfoRequest {}).await.unwrap().into_inner();
    let used: u64 = rt.images().iter().map(|i| i.size).sum();
    assert_eq!(fs.image_filesystems[0].used_bytes.unwrap().value, used);
    assert_eq!(fs.image_filesystems[0].inodes_used.unwrap().value, 2);

    images
        .remove_image(v1::RemoveImageRequest {
            image: Some(v1::ImageSpec { image: image_id("a:1"), ..Default::default() }),
        })
        .await
        .unwrap();
    let left: Vec<String> = rt.images().into_iter().map(|i| i.id).collect();
    assert_eq!(left, [image_id("b:1")]);
    let filtered = images
        .list_images(v1::ListImagesRequest {
            filter: Some(v1::ImageFilter { image: Some(v1::ImageSpec { image: "b:1".into(), ..Default::default() }) }),
        })
        .await
        .unwrap()
        .into_inner()
        .images;
    assert_eq!(filtered.len(), 1);

    let mut runtime = v1::runtime_service_client::RuntimeServiceClient::new(channel);
    let e = runtime.list_pod_sandbox(v1::ListPodSandboxRequest { filter: None }).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::Unimplemented);
}

#[tokio::test]
async fn a_runtime_without_cri_v1_says_so() {
    let (rt, client, _dir) = serve("old").await;
    rt.set_serves_v1(false);
    match client.version().await {
        Err(CriError::Unimplemented { endpoint, message }) => {
            assert_eq!(endpoint, client.endpoint());
            assert!(message.contains("runtime.v1.RuntimeService"));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(client.pull_image("a", None, None).await, Err(CriError::Unimplemented { .. })));
}
