//! Admission through real HTTPS webhooks, as kube-apiserver runs it: mutation before validation,
//! the AdmissionReview contents, denials with the webhook's code and kube-apiserver's wording,
//! warnings as `Warning` headers, selectors, failure policies, timeouts, CA verification, patches
//! that do not apply, dry run and side effects, matchPolicy Equivalent across CRD versions,
//! subresources (status, eviction) and the exemption of webhook configurations.

use crate::common::*;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kruise_testenv::{CallOutcome, TestEnv};
use kube::api::{Api, DeleteParams, EvictParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use std::time::Duration;

fn labels(obj: &Value) -> Value {
    obj.pointer("/metadata/labels").cloned().unwrap_or(json!({}))
}

/// The test webhook's behaviour, by path.
fn handler(path: &str, req: &Value) -> Value {
    let object = req.get("object").cloned().unwrap_or(Value::Null);
    match path {
        "/mutate-pods" => {
            let patch = if object.pointer("/metadata/labels").is_some() {
                json!([{"op": "add", "path": "/metadata/labels/injected", "value": "true"}])
            } else {
                json!([{"op": "add", "path": "/metadata/labels", "value": {"injected": "true"}}])
            };
            json!({"allowed": true, "patch": patch, "warnings": ["mutated by \"test\""]})
        }
        "/validate-pods" => {
            if labels(&object)["deny"] == "true" {
                json!({"allowed": false, "status": {"code": 403, "reason": "Forbidden", "message": "pods labelled deny are not allowed"}})
            } else if req["operation"] == "DELETE" && labels(&req["oldObject"])["protected"] == "true" {
                json!({"allowed": false, "status": {"code": 409, "message": "this pod is protected"}})
            } else {
                json!({"allowed": true})
            }
        }
        "/slow" => {
            std::thread::sleep(Duration::from_secs(3));
            json!({"allowed": true})
        }
        "/bad-patch" => json!({"allowed": true, "patch": [{"op": "remove", "path": "/spec/nonexistent"}]}),
        "/eviction" => json!({"allowed": false, "status": {"code": 403, "message": "evictions are blocked"}}),
        "/cloneset" => {
            json!({"allowed": true, "patch": [{"op": "add", "path": "/spec/updateStrategy", "value": {"type": "ReCreate"}}]})
        }
        _ => json!({"allowed": true}),
    }
}

async fn setup(configs: &[String]) -> (TestEnv, TestWebhook, kube::Client) {
    let env = env_with_crd().await;
    let wh = TestWebhook::start("webhooks", "admission", handler).await;
    env.set_service("webhooks", "admission", 443, wh.addr);
    for c in configs {
        env.register_webhooks(c, wh.ca_pem.as_bytes()).await.unwrap();
    }
    let client = env.client().unwrap();
    (env, wh, client)
}

fn pod(name: &str, labels: Value) -> Pod {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}})).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutation_denial_and_warnings() {
    let not_kube_system = json!({"namespaceSelector": {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}]}});
    let (env, wh, client) = setup(&[
        webhook_config(
            "MutatingWebhookConfiguration",
            "m",
            vec![hook(
                "mpod.testenv.io",
                "/mutate-pods",
                rule(&[""], &["v1"], &["pods"], &["CREATE"]),
                not_kube_system,
            )],
        ),
        webhook_config(
            "ValidatingWebhookConfiguration",
            "v",
            vec![hook(
                "vpod.testenv.io",
                "/validate-pods",
                rule(&[""], &["v1"], &["pods"], &["CREATE", "DELETE"]),
                json!({}),
            )],
        ),
    ])
    .await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());

    let a = pods.create(&PostParams::default(), &pod("a", json!({"app": "a"}))).await.unwrap();
    assert_eq!(a.metadata.labels.unwrap()["injected"], "true");
    let review = &wh.requests_on("/mutate-pods")[0];
    assert_eq!(review["operation"], "CREATE");
    assert_eq!(review["kind"], json!({"group": "", "version": "v1", "kind": "Pod"}));
    assert_eq!(review["resource"], json!({"group": "", "version": "v1", "resource": "pods"}));
    assert_eq!(review["requestResource"], review["resource"]);
    assert_eq!((review["namespace"].as_str(), review["name"].as_str()), (Some("default"), Some("a")));
    assert_eq!(review["userInfo"]["username"], "kubernetes-admin");
    assert_eq!(review["dryRun"], false);
    assert_eq!(review["options"]["kind"], "CreateOptions");
    assert!(review.get("oldObject").is_none() && review["uid"].as_str().is_some_and(|u| !u.is_empty()));
    let validated = &wh.requests_on("/validate-pods")[0];
    assert_eq!(labels(&validated["object"])["injected"], "true", "validation sees the mutated object");

    // The namespaceSelector exempts kube-system.
    let system: Api<Pod> = Api::namespaced(client.clone(), "kube-system");
    let s = system.create(&PostParams::default(), &pod("s", json!({}))).await.unwrap();
    assert!(!s.metadata.labels.unwrap_or_default().contains_key("injected"));

    // Denial: the webhook's code and kube-apiserver's wording.
    let e = api_error(pods.create(&PostParams::default(), &pod("d", json!({"deny": "true"}))).await.unwrap_err());
    assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        e.message,
        "admission webhook \"vpod.testenv.io\" denied the request: pods labelled deny are not allowed"
    );
    assert!(pods.get_opt("d").await.unwrap().is_none());

    // Warnings reach the client as Warning headers.
    let body = serde_json::to_vec(&pod("w", json!({}))).unwrap();
    let req = http::Request::post("/api/v1/namespaces/default/pods")
        .header("content-type", "application/json")
        .body(kube::client::Body::from(body))
        .unwrap();
    let resp = client.send(req).await.unwrap();
    assert_eq!(resp.status(), 201);
    let warnings: Vec<_> = resp.headers().get_all("warning").iter().map(|v| v.to_str().unwrap().to_string()).collect();
    assert_eq!(warnings, [r#"299 - "mutated by \"test\"""#]);

    // DELETE admission sees the old object only.
    pods.create(&PostParams::default(), &pod("p", json!({"protected": "true"}))).await.unwrap();
    let e = api_error(pods.delete("p", &DeleteParams::default()).await.unwrap_err());
    assert_eq!(e.code, 409);
    assert_eq!(e.message, "admission webhook \"vpod.testenv.io\" denied the request: this pod is protected");
    let del = wh.requests_on("/validate-pods").into_iter().find(|r| r["operation"] == "DELETE").unwrap();
    assert!(del.get("object").is_none() && del["oldObject"]["metadata"]["name"] == "p");
    assert_eq!(del["options"]["kind"], "DeleteOptions");

    // Dry run: admission runs with dryRun true, nothing is stored.
    let dry = pods.create(&PostParams { dry_run: true, ..Default::default() }, &pod("dry", json!({}))).await.unwrap();
    assert_eq!(dry.metadata.labels.unwrap()["injected"], "true");
    assert!(wh.requests_on("/validate-pods").iter().any(|r| r["name"] == "dry" && r["dryRun"] == true));
    assert!(pods.get_opt("dry").await.unwrap().is_none());
    assert!(
        env.admission_log()
            .iter()
            .any(|r| r.name == "dry" && r.dry_run && r.outcome == CallOutcome::Allowed { patched: true })
    );
}

fn case(name: &str) -> Value {
    json!({"objectSelector": {"matchLabels": {"case": name}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failure_policies_timeouts_and_tls() {
    let pods_create = || rule(&[""], &["v1"], &["pods"], &["CREATE"]);
    let with = |base: Value, extra: Value| {
        let mut b = base;
        b.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        b
    };
    let missing = json!({"clientConfig": {"service": {"namespace": "webhooks", "name": "missing", "path": "/"}}});
    let (env, _wh, client) = setup(&[webhook_config(
        "ValidatingWebhookConfiguration",
        "policies",
        vec![
            hook(
                "ignore.testenv.io",
                "/",
                pods_create(),
                with(case("ignore"), with(missing.clone(), json!({"failurePolicy": "Ignore"}))),
            ),
            hook("fail.testenv.io", "/", pods_create(), with(case("fail"), missing)),
            hook("slow.testenv.io", "/slow", pods_create(), with(case("slow"), json!({"timeoutSeconds": 1}))),
            hook("sideeffects.testenv.io", "/", pods_create(), with(case("dry"), json!({"sideEffects": "Unknown"}))),
        ],
    )])
    .await;
    let other_ca = certs("admission.webhooks.svc").ca_pem;
    let wrong_ca = webhook_config(
        "ValidatingWebhookConfiguration",
        "wrong-ca",
        vec![hook("tls.testenv.io", "/", pods_create(), case("tls"))],
    );
    env.register_webhooks(&wrong_ca, other_ca.as_bytes()).await.unwrap();
    let bad_patch = webhook_config(
        "MutatingWebhookConfiguration",
        "bad-patch",
        vec![hook(
            "patch.testenv.io",
            "/bad-patch",
            pods_create(),
            with(case("patch"), json!({"failurePolicy": "Ignore"})),
        )],
    );
    env.register_webhooks(&bad_patch, _wh.ca_pem.as_bytes()).await.unwrap();
    let pods: Api<Pod> = Api::default_namespaced(client);
    let create = |name: &'static str| {
        let pods = pods.clone();
        async move { pods.create(&PostParams::default(), &pod(name, json!({"case": name}))).await }
    };

    create("ignore").await.unwrap();
    let e = api_error(create("fail").await.unwrap_err());
    assert_eq!((e.code, e.reason.as_str()), (500, "InternalError"));
    assert!(
        e.message.starts_with("Internal error occurred: failed calling webhook \"fail.testenv.io\""),
        "{}",
        e.message
    );
    assert!(e.message.contains("missing"), "{}", e.message);

    let e = api_error(create("slow").await.unwrap_err());
    assert!(
        e.message.contains("https://admission.webhooks.svc:443/slow?timeout=1s")
            && e.message.contains("context deadline exceeded"),
        "{}",
        e.message
    );

    let e = api_error(create("tls").await.unwrap_err());
    assert!(
        e.message.contains("failed calling webhook \"tls.testenv.io\"") && e.message.contains("certificate"),
        "{}",
        e.message
    );

    let e = api_error(create("patch").await.unwrap_err());
    assert_eq!(e.code, 500, "a patch that does not apply fails the request whatever the failurePolicy");

    let e = api_error(
        pods.create(&PostParams { dry_run: true, ..Default::default() }, &pod("dry", json!({"case": "dry"})))
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 400);
    assert_eq!(e.message, "admission webhook \"sideeffects.testenv.io\" does not support dry run");
    create("dry").await.unwrap();

    let log = env.admission_log();
    assert!(log.iter().any(|r| r.webhook == "ignore.testenv.io" && matches!(r.outcome, CallOutcome::Failed { ignored: true, .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_subresources_and_exemptions() {
    let equivalent = rule(&["apps.kruise.io"], &["v1alpha1"], &["clonesets"], &["CREATE"]);
    let (env, wh, client) = setup(&[
        webhook_config(
            "MutatingWebhookConfiguration",
            "clonesets",
            vec![
                hook("equivalent.testenv.io", "/cloneset", equivalent.clone(), json!({})),
                hook("exact.testenv.io", "/exact", equivalent, json!({"matchPolicy": "Exact"})),
            ],
        ),
        webhook_config(
            "ValidatingWebhookConfiguration",
            "subresources",
            vec![
                hook("status.testenv.io", "/status", rule(&[""], &["v1"], &["pods/status"], &["UPDATE"]), json!({})),
                hook(
                    "eviction.testenv.io",
                    "/eviction",
                    rule(&[""], &["v1"], &["pods/eviction"], &["CREATE"]),
                    json!({}),
                ),
                hook("everything.testenv.io", "/everything", rule(&["*"], &["*"], &["*/*"], &["*"]), case("all")),
            ],
        ),
    ])
    .await;

    // A v1beta1 request reaches a webhook registered for v1alpha1, converted to v1alpha1.
    let beta = kube::api::Api::<kube::api::DynamicObject>::namespaced_with(
        client.clone(),
        "default",
        &cloneset_resource("v1beta1"),
    );
    let mut obj = cloneset("cs", 1);
    obj.types.as_mut().unwrap().api_version = "apps.kruise.io/v1beta1".into();
    let created = beta.create(&PostParams::default(), &obj).await.unwrap();
    assert_eq!(created.types.unwrap().api_version, "apps.kruise.io/v1beta1");
    assert_eq!(created.data["spec"]["updateStrategy"]["type"], "ReCreate");
    let review = &wh.requests_on("/cloneset")[0];
    assert_eq!(review["resource"]["version"], "v1alpha1");
    assert_eq!(review["requestResource"]["version"], "v1beta1");
    assert_eq!(review["kind"]["version"], "v1alpha1");
    assert_eq!(review["object"]["apiVersion"], "apps.kruise.io/v1alpha1");
    assert!(wh.requests_on("/exact").is_empty(), "matchPolicy Exact does not match another version");
    assert_eq!(
        clonesets(&client, "default").get("cs").await.unwrap().data["spec"]["updateStrategy"]["type"],
        "ReCreate"
    );

    // Subresources: pods/status and pods/eviction rules.
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    pods.create(&PostParams::default(), &pod("p", json!({}))).await.unwrap();
    pods.patch_status("p", &PatchParams::default(), &Patch::Merge(json!({"status": {"phase": "Running"}})))
        .await
        .unwrap();
    let status_review = &wh.requests_on("/status")[0];
    assert_eq!(
        (status_review["subResource"].as_str(), status_review["operation"].as_str()),
        (Some("status"), Some("UPDATE"))
    );
    assert_eq!(status_review["oldObject"]["status"]["phase"], "Pending");
    let e = api_error(pods.evict("p", &EvictParams::default()).await.unwrap_err());
    assert_eq!(e.code, 403);
    assert_eq!(e.message, "admission webhook \"eviction.testenv.io\" denied the request: evictions are blocked");
    let eviction = &wh.requests_on("/eviction")[0];
    assert_eq!(eviction["kind"], json!({"group": "policy", "version": "v1", "kind": "Eviction"}));
    assert!(pods.get_opt("p").await.unwrap().is_some());

    // Webhook configurations are never sent to webhooks, even to a catch-all one.
    let labelled = webhook_config("ValidatingWebhookConfiguration", "labelled", vec![]);
    let mut doc: Value = serde_yaml_ng::from_str(&labelled).unwrap();
    doc["metadata"]["labels"] = json!({"case": "all"});
    env.apply(doc).await.unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "c", "labels": {"case": "all"}}})).unwrap(),
    )
    .await
    .unwrap();
    let all = wh.requests_on("/everything");
    assert_eq!(all.len(), 1);
    assert_eq!(all[0]["resource"]["resource"], "configmaps");
}
