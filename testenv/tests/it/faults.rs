//! Fault injection as a client sees it: injected conflicts on writes, 5xx answers, added latency,
//! scoping to resources, and clearing.

use crate::common::*;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kruise_testenv::{FaultConfig, TestEnv};
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_faults_reach_clients() {
    let env = TestEnv::start().await.unwrap();
    let client = env.client().unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let secrets: Api<Secret> = Api::default_namespaced(client.clone());
    let cm = |n: &str| -> ConfigMap { serde_json::from_value(json!({"metadata": {"name": n}})).unwrap() };
    let secret: Secret = serde_json::from_value(json!({"metadata": {"name": "s"}})).unwrap();

    env.faults().seed(1);
    env.faults().set(FaultConfig {
        conflict_rate: 1.0,
        resources: ["configmaps".to_string()].into(),
        ..Default::default()
    });
    let e = api_error(cms.create(&PostParams::default(), &cm("a")).await.unwrap_err());
    assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"));
    cms.list(&ListParams::default()).await.unwrap();
    secrets.create(&PostParams::default(), &secret).await.unwrap();
    assert_eq!(env.faults().counts().conflicts, 1);

    // (kube-rs retries 503s on its own, so a plain 500 shows the injection directly.)
    env.faults().set_server_errors(1.0, 500);
    let e = api_error(cms.list(&ListParams::default()).await.unwrap_err());
    assert_eq!(e.code, 500);
    assert_eq!(env.faults().counts().server_errors, 1);

    env.faults().clear();
    env.faults().set_latency(Duration::from_millis(20));
    cms.create(&PostParams::default(), &cm("b")).await.unwrap();
    env.faults().set_latency(Duration::ZERO);

    // Half the writes conflict: a retrying writer still gets through, and some were injected.
    env.faults().set(FaultConfig { conflict_rate: 0.5, ..Default::default() });
    for i in 0..10 {
        let mut attempts = 0;
        loop {
            attempts += 1;
            match cms.create(&PostParams::default(), &cm(&format!("r{i}"))).await {
                Ok(_) => break,
                Err(e) => assert_eq!(api_error(e).code, 409),
            }
            assert!(attempts < 200);
        }
    }
    assert!(env.faults().counts().conflicts > 1);
    env.faults().clear();
    assert_eq!(cms.list(&ListParams::default()).await.unwrap().items.len(), 11);
}
