//! Every fault of the proxy, as a `kube::Client` sees it.

use crate::common::{cluster, eventually};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kruise_testenv::{Share, WriteFault};
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use kube::runtime::watcher;
use serde_json::json;
use std::time::{Duration, Instant};

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}),
    )
    .unwrap()
}

fn api_code(r: Result<ConfigMap, kube::Error>) -> u16 {
    match r {
        Err(kube::Error::Api(s)) => s.code,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn latency_delays_every_request() {
    let c = cluster();
    let ns = c.namespace("faults-latency").await.unwrap();
    let proxy = c.fault_proxy().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(proxy.client().await.unwrap(), ns.name());
    api.list(&Default::default()).await.unwrap();
    proxy.set_latency(Duration::from_millis(300));
    let started = Instant::now();
    api.list(&Default::default()).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300), "{:?}", started.elapsed());
}

#[tokio::test]
async fn writes_fail_with_conflicts_throttling_and_server_errors() {
    let c = cluster();
    let ns = c.namespace("faults-writes").await.unwrap();
    let proxy = c.fault_proxy().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(proxy.client().await.unwrap(), ns.name());
    let direct: Api<ConfigMap> = Api::namespaced(c.client().await.unwrap(), ns.name());

    proxy.fail_writes(WriteFault::Conflict, Share::Next(1), &["configmaps"]);
    assert_eq!(api_code(api.create(&PostParams::default(), &cm("a")).await), 409);
    assert!(direct.get_opt("a").await.unwrap().is_none(), "an injected conflict never reaches the apiserver");
    api.create(&PostParams::default(), &cm("a")).await.unwrap();

    // kube's client retries 429 (after Retry-After) and 503 by itself: the write succeeds late.
    proxy.fail_writes(WriteFault::TooManyRequests { retry_after_seconds: 1 }, Share::Next(1), &[]);
    let started = Instant::now();
    api.create(&PostParams::default(), &cm("b")).await.unwrap();
    assert!(started.elapsed() >= Duration::from_secs(1), "retried after Retry-After: {:?}", started.elapsed());
    proxy.fail_writes(WriteFault::ServerError(503), Share::Next(2), &[]);
    api.create(&PostParams::default(), &cm("c")).await.unwrap();
    // A 500 is not retried.
    proxy.fail_writes(WriteFault::ServerError(500), Share::Next(1), &[]);
    assert_eq!(api_code(api.create(&PostParams::default(), &cm("d")).await), 500);
    // Rules scoped to a resource leave others alone.
    proxy.fail_writes(WriteFault::ServerError(500), Share::Probability(1.0), &["secrets"]);
    api.create(&PostParams::default(), &cm("d")).await.unwrap();

    let counts = proxy.counts();
    assert_eq!((counts.conflicts, counts.throttled, counts.server_errors), (1, 1, 3), "{counts:?}");
}

#[tokio::test]
async fn a_reset_after_a_committed_write_hides_its_success() {
    let c = cluster();
    let ns = c.namespace("faults-reset").await.unwrap();
    let proxy = c.fault_proxy().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(proxy.client().await.unwrap(), ns.name());
    proxy.reset_after_commit(1, &["configmaps"]);
    let err = api.create(&PostParams::default(), &cm("committed")).await;
    assert!(!matches!(err, Ok(_) | Err(kube::Error::Api(_))), "a transport error, not an answer: {err:?}");
    let direct: Api<ConfigMap> = Api::namespaced(c.client().await.unwrap(), ns.name());
    assert!(direct.get_opt("committed").await.unwrap().is_some(), "the write was committed");
    assert_eq!(api_code(api.create(&PostParams::default(), &cm("committed")).await), 409, "a retry finds it exists");
    assert_eq!(proxy.counts().resets, 1);
}

#[tokio::test]
async fn cut_watches_end_and_watchers_resume() {
    let c = cluster();
    let ns = c.namespace("faults-cut").await.unwrap();
    let proxy = c.fault_proxy().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(proxy.client().await.unwrap(), ns.name());

    // A raw watch ends when cut.
    let mut raw = api.watch(&WatchParams::default().timeout(290), "0").await.unwrap().boxed();
    tokio::time::sleep(Duration::from_millis(300)).await;
    proxy.cut_watches();
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(ev) = raw.try_next().await.ok().flatten() {
            if matches!(ev, WatchEvent::Error(_)) {
                break;
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the raw watch stream ended");

    // kube-runtime's watcher starts a new watch from its last resourceVersion and misses nothing.
    let direct: Api<ConfigMap> = Api::namespaced(c.client().await.unwrap(), ns.name());
    let watches_before = proxy.counts().watches;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let task = tokio::spawn(watcher(api.clone(), watcher::Config::default()).for_each(move |ev| {
        let _ = tx.send(ev);
        async {}
    }));
    eventually("the watcher's watch", Duration::from_secs(10), || async {
        (proxy.counts().watches > watches_before).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    proxy.cut_watches();
    direct.create(&PostParams::default(), &cm("after-cut")).await.unwrap();
    let seen = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(ev) = rx.recv().await {
            if let Ok(watcher::Event::Apply(o)) = ev
                && o.metadata.name.as_deref() == Some("after-cut")
            {
                return;
            }
        }
    })
    .await;
    task.abort();
    assert!(seen.is_ok(), "the watcher resumed after the cut and saw the object created meanwhile");
    let counts = proxy.counts();
    assert!(counts.cut_watches >= 2, "{counts:?}");
    assert!(counts.watches >= watches_before + 2, "a new watch after the cut: {counts:?}");
}

#[tokio::test]
async fn delayed_watch_events_leave_a_cache_stale() {
    let c = cluster();
    let ns = c.namespace("faults-delay").await.unwrap();
    let proxy = c.fault_proxy().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(proxy.client().await.unwrap(), ns.name());
    let direct: Api<ConfigMap> = Api::namespaced(c.client().await.unwrap(), ns.name());
    let delay = Duration::from_millis(1500);
    proxy.delay_watch_events(delay);
    let (store, writer) = kube::runtime::reflector::store();
    let reflector = kube::runtime::reflector(writer, watcher(api, watcher::Config::default()));
    let task = tokio::spawn(reflector.for_each(|_| async {}));
    store.wait_until_ready().await.unwrap();
    let created = Instant::now();
    direct.create(&PostParams::default(), &cm("late")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let has_late = || store.state().iter().any(|o| o.metadata.name.as_deref() == Some("late"));
    assert!(!has_late(), "the cache has not seen it yet");
    eventually("the delayed event", Duration::from_secs(20), || async { has_late().then_some(()) }).await;
    assert!(created.elapsed() >= delay, "seen after {:?}", created.elapsed());
    assert!(proxy.counts().delayed_events >= 1);
    task.abort();
}
