//! A kube-runtime reflector stays in sync with the harness across dropped watch streams (resumed
//! from the last resourceVersion), across compaction (410 Gone, then a relist) and while every
//! watch stream is cut short after a fixed lifetime.

use crate::common::*;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kruise_testenv::TestEnv;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, reflector, watcher};
// Every watcher event (including InitDone, which publishes a relist) is polled, so the cache is
// checked after each one.
use serde_json::json;
use std::collections::BTreeMap;
use std::time::Duration;

fn cm(name: &str, value: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"v": value}})).unwrap()
}

fn contents(reader: &reflector::Store<ConfigMap>) -> BTreeMap<String, String> {
    reader
        .state()
        .iter()
        .map(|c| {
            (c.metadata.name.clone().unwrap(), c.data.as_ref().and_then(|d| d.get("v").cloned()).unwrap_or_default())
        })
        .collect()
}

fn expected(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reflector_survives_dropped_watches_and_compaction() {
    let env = TestEnv::builder().bookmark_interval(Duration::from_millis(200)).start().await.unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(env.client().unwrap());
    for i in 0..3 {
        api.create(&PostParams::default(), &cm(&format!("cm-{i}"), "0")).await.unwrap();
    }
    let (reader, writer) = reflector::store();
    let mut stream = reflector(writer, watcher(api.clone(), watcher::Config::default())).default_backoff().boxed();

    // Drives the reflector (it only advances while polled) until its cache equals `want`.
    macro_rules! sync_to {
        ($want:expr) => {{
            let want = $want;
            let mut relisted = false;
            let converged = tokio::time::timeout(WAIT, async {
                while contents(&reader) != want {
                    match stream.next().await.expect("watcher stream ended") {
                        Ok(ev) => relisted |= matches!(ev, watcher::Event::Init),
                        // The watcher reports a 410 once, then relists.
                        Err(watcher::Error::WatchError(s)) if s.code == 410 => {}
                        Err(e) => panic!("watcher error: {e}"),
                    }
                }
            })
            .await;
            assert!(converged.is_ok(), "reflector did not converge: have {:?}, want {:?}", contents(&reader), want);
            relisted
        }};
    }
    // Keeps polling (the watcher only opens its watch when polled) until a watch stream is open.
    macro_rules! watch_open {
        () => {{
            tokio::select! {
                ev = stream.next() => panic!("unexpected watcher event {ev:?}"),
                opened = env.wait_for_watches(1, WAIT) => assert!(opened, "no watch was opened"),
            }
        }};
    }
    sync_to!(expected(&[("cm-0", "0"), ("cm-1", "0"), ("cm-2", "0")]));
    watch_open!();

    // Dropped stream: the watcher resumes from its last resourceVersion and misses nothing.
    env.faults().drop_watches();
    assert!(env.wait_for_open_watches(|n| n == 0, WAIT).await);
    api.create(&PostParams::default(), &cm("cm-3", "0")).await.unwrap();
    api.delete("cm-0", &DeleteParams::default()).await.unwrap();
    api.patch("cm-1", &PatchParams::default(), &Patch::Merge(json!({"data": {"v": "1"}}))).await.unwrap();
    let relisted = sync_to!(expected(&[("cm-1", "1"), ("cm-2", "0"), ("cm-3", "0")]));
    assert!(!relisted, "a dropped watch resumes from its resourceVersion without relisting");
    assert!(env.faults().counts().dropped_watches >= 1);

    // Dropped stream and compacted history: the resumed watch gets 410 and the watcher relists.
    // (The watcher is not polled meanwhile, so it cannot re-watch before the compaction.)
    watch_open!();
    env.faults().drop_watches();
    assert!(env.wait_for_open_watches(|n| n == 0, WAIT).await);
    api.delete("cm-2", &DeleteParams::default()).await.unwrap();
    api.patch("cm-3", &PatchParams::default(), &Patch::Merge(json!({"data": {"v": "3"}}))).await.unwrap();
    api.create(&PostParams::default(), &cm("cm-4", "4")).await.unwrap();
    env.compact_history();
    let relisted = sync_to!(expected(&[("cm-1", "1"), ("cm-3", "3"), ("cm-4", "4")]));
    assert!(relisted, "410 Gone makes the watcher relist");

    // Streams that keep ending: still in sync.
    env.faults().set_watch_lifetime(Some(Duration::from_millis(150)));
    for i in 5..10 {
        api.create(&PostParams::default(), &cm(&format!("cm-{i}"), "x")).await.unwrap();
    }
    api.delete("cm-1", &DeleteParams::default()).await.unwrap();
    let mut want = expected(&[("cm-3", "3"), ("cm-4", "4")]);
    for i in 5..10 {
        want.insert(format!("cm-{i}"), "x".into());
    }
    sync_to!(want);
}
