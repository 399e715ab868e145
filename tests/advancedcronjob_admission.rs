//! AdvancedCronJob admission through the router, in-process (issue 33 item 1; kruise v1.8.4
//! `pkg/webhook/advancedcronjob`): both path spellings, defaults applied by patch (spec and,
//! on CREATE or a changed template, the pod template) and then valid, schedule and template
//! errors as 422 field errors, and the update rule. The rule tables are in
//! `core::validation::advancedcronjob`, the schedule's in `compat::cron`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use common::app::App;
use common::{apply, response_patch};
use kruise::cluster::EmptyView;
use kruise::core::features::FeatureGates;
use kruise::webhook::request::ReviewRequest;
use kube::core::admission::Operation;
use serde_json::{Value, json};

const SPELLINGS: [[&str; 2]; 2] = [
    ["/mutate-apps-kruise-io-advancedcronjob", "/validate-apps-kruise-io-advancedcronjob"],
    ["/mutate-apps-kruise-io-v1alpha1-advancedcronjob", "/validate-apps-kruise-io-v1alpha1-advancedcronjob"],
];

fn app() -> App {
    App::with(FeatureGates::default(), Arc::new(EmptyView))
}

fn cron_job(schedule: &str) -> Value {
    json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "AdvancedCronJob",
        "metadata": {"name": "nightly", "namespace": "ns"},
        "spec": {"schedule": schedule, "template": {"jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.36"}]}}}}}}})
}

fn review(op: Operation, object: &Value, old: Option<&Value>) -> ReviewRequest {
    ReviewRequest::new(op, "apps.kruise.io", "v1alpha1", "AdvancedCronJob", "advancedcronjobs")
        .name("nightly")
        .namespace("ns")
        .objects(Some(object), old)
}

/// The object as the mutating webhook defaults it on CREATE.
async fn defaulted(app: &App, object: &Value) -> Value {
    let mutated = app.send(SPELLINGS[0][0], &review(Operation::Create, object, None)).await;
    apply(object, response_patch(&mutated).as_ref())
}

#[tokio::test]
async fn defaulted_then_valid_on_both_paths() {
    let app = app();
    for [mutate, validate] in SPELLINGS {
        let object = cron_job("CRON_TZ=Asia/Shanghai 0 2 * * *");
        let mutated = app.send(mutate, &review(Operation::Create, &object, None)).await;
        assert_eq!(mutated["allowed"], true, "{mutated}");
        let defaulted = apply(&object, response_patch(&mutated).as_ref());
        let spec = &defaulted["spec"];
        assert_eq!(
            (
                &spec["concurrencyPolicy"],
                &spec["paused"],
                &spec["successfulJobsHistoryLimit"],
                &spec["failedJobsHistoryLimit"]
            ),
            (&json!("Allow"), &json!(false), &json!(3), &json!(1))
        );
        let pod = &spec["template"]["jobTemplate"]["spec"]["template"]["spec"];
        assert_eq!(pod["dnsPolicy"], "ClusterFirst", "template defaults on CREATE: {pod}");
        assert_eq!(
            pod["containers"][0]["imagePullPolicy"], "Always",
            "kruise's SetDefaultPodSpec: Always for regular containers"
        );
        let validated = app.send(validate, &review(Operation::Create, &defaulted, None)).await;
        assert_eq!(validated["allowed"], true, "{validated}");
        // Mutating again changes nothing.
        let again = app.send(mutate, &review(Operation::Update, &defaulted, Some(&defaulted))).await;
        assert!(response_patch(&again).is_none(), "{again}");
    }
}

#[tokio::test]
async fn template_defaults_only_when_the_template_changed() {
    let app = app();
    let old = cron_job("@hourly");
    let mut new = old.clone();
    new["spec"]["schedule"] = json!("@daily");
    let mutated = app.send(SPELLINGS[0][0], &review(Operation::Update, &new, Some(&old))).await;
    let defaulted = apply(&new, response_patch(&mutated).as_ref());
    let pod = &defaulted["spec"]["template"]["jobTemplate"]["spec"]["template"]["spec"];
    assert!(pod.get("dnsPolicy").is_none(), "the template did not change: {pod}");
    assert_eq!(defaulted["spec"]["paused"], false);
}

#[tokio::test]
async fn bad_schedules_and_templates_are_422_field_errors() {
    let app = app();
    let cases = [
        ("61 * * * *", "spec.schedule: Invalid value: \"61 * * * *\": end of range (61) above maximum (59): 61"),
        ("* * * *", "spec.schedule: Invalid value: \"* * * *\": expected exactly 5 fields, found 4: [* * * *]"),
        (
            "@every 1d",
            "spec.schedule: Invalid value: \"@every 1d\": failed to parse duration @every 1d: time: unknown unit \"d\" in duration \"1d\"",
        ),
    ];
    for (schedule, message) in cases {
        let object = defaulted(&app, &cron_job(schedule)).await;
        let r = app.send(SPELLINGS[1][1], &review(Operation::Create, &object, None)).await;
        assert_eq!((r["allowed"].clone(), r["status"]["code"].clone()), (json!(false), json!(422)), "{r}");
        assert_eq!(r["status"]["message"], message);
    }
    let mut none = cron_job("@hourly");
    none["spec"]["template"] = json!({});
    let r = app.send(SPELLINGS[0][1], &review(Operation::Create, &none, None)).await;
    assert_eq!(
        r["status"]["message"],
        "spec.template: Forbidden: spec must have one template, either JobTemplate or BroadcastJobTemplate should be provided"
    );
}

#[tokio::test]
async fn updates_only_to_the_schedule_fields() {
    let app = app();
    let old = defaulted(&app, &cron_job("@hourly")).await;
    let mut new = old.clone();
    new["spec"]["schedule"] = json!("*/5 * * * *");
    new["spec"]["paused"] = json!(true);
    new["spec"]["concurrencyPolicy"] = json!("Forbid");
    let r = app.send(SPELLINGS[0][1], &review(Operation::Update, &new, Some(&old))).await;
    assert_eq!(r["allowed"], true, "{r}");
    new["spec"]["template"]["jobTemplate"]["spec"]["backoffLimit"] = json!(2);
    let r = app.send(SPELLINGS[0][1], &review(Operation::Update, &new, Some(&old))).await;
    assert_eq!(r["status"]["code"], 422);
    let message = r["status"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("spec: Forbidden: updates to advancedcronjob spec for fields other than 'schedule'"),
        "{message}"
    );
}

/// A v1beta1 request (kruise HEAD serves AdvancedCronJob in v1alpha1 and v1beta1).
fn review_v1beta1(op: Operation, object: &Value, old: Option<&Value>) -> ReviewRequest {
    ReviewRequest::new(op, "apps.kruise.io", "v1beta1", "AdvancedCronJob", "advancedcronjobs")
        .name("warm")
        .namespace("ns")
        .objects(Some(object), old)
}

/// A v1beta1 AdvancedCronJob pulling `images` on a schedule (an ImageListPullJob template).
fn image_warmer(images: Value) -> Value {
    json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "AdvancedCronJob",
        "metadata": {"name": "warm", "namespace": "ns"},
        "spec": {"schedule": "0 */6 * * *", "template": {"imageListPullJobTemplate": {"spec": {
            "images": images, "selector": {"matchLabels": {"pool": "web"}}}}}}})
}

/// kruise HEAD: the v1beta1 ImageListPullJob template is defaulted (Always, 600 s, 3 retries,
/// IfNotPresent; concurrencyPolicy Replace) and then valid; the apiVersion stays v1beta1.
#[tokio::test]
async fn a_v1beta1_image_list_pull_job_template_is_defaulted_then_valid() {
    let app = app();
    for [mutate, validate] in SPELLINGS {
        let object = image_warmer(json!(["nginx:1.25", "busybox:1.36"]));
        let mutated = app.send(mutate, &review_v1beta1(Operation::Create, &object, None)).await;
        assert_eq!(mutated["allowed"], true, "{mutated}");
        let out = apply(&object, response_patch(&mutated).as_ref());
        assert_eq!(out["apiVersion"], "apps.kruise.io/v1beta1");
        let spec = &out["spec"];
        assert_eq!(
            (
                &spec["concurrencyPolicy"],
                &spec["paused"],
                &spec["successfulJobsHistoryLimit"],
                &spec["failedJobsHistoryLimit"]
            ),
            (&json!("Replace"), &json!(false), &json!(3), &json!(1))
        );
        assert_eq!(
            spec["template"]["imageListPullJobTemplate"]["spec"],
            json!({"images": ["nginx:1.25", "busybox:1.36"], "selector": {"matchLabels": {"pool": "web"}},
                   "completionPolicy": {"type": "Always"},
                   "pullPolicy": {"timeoutSeconds": 600, "backoffLimit": 3}, "imagePullPolicy": "IfNotPresent"})
        );
        let validated = app.send(validate, &review_v1beta1(Operation::Create, &out, None)).await;
        assert_eq!(validated["allowed"], true, "{validated}");
        let again = app.send(mutate, &review_v1beta1(Operation::Update, &out, Some(&out))).await;
        assert!(response_patch(&again).is_none(), "{again}");
    }
}

/// kruise HEAD's ImageListPullJob template checks as 422 field errors, and its update rule: the
/// template may change, a Job template may not.
#[tokio::test]
async fn v1beta1_image_list_pull_job_template_errors_and_updates() {
    let app = app();
    let validate = SPELLINGS[0][1];
    let mut allow = image_warmer(json!(["nginx:1.25"]));
    allow["spec"]["concurrencyPolicy"] = json!("Allow");
    let allow = defaulted_v1beta1(&app, &allow).await;
    let r = app.send(validate, &review_v1beta1(Operation::Create, &allow, None)).await;
    assert_eq!((r["allowed"].clone(), r["status"]["code"].clone()), (json!(false), json!(422)), "{r}");
    assert_eq!(
        r["status"]["message"],
        "spec.spec.concurrencyPolicy: Invalid value: \"Allow\": concurrencyPolicy should be Replace or Forbid, but current value is: Allow"
    );
    let dup = defaulted_v1beta1(&app, &image_warmer(json!(["nginx:1.25", "nginx:1.25"]))).await;
    let r = app.send(validate, &review_v1beta1(Operation::Create, &dup, None)).await;
    assert_eq!(
        r["status"]["message"],
        "spec.template.imageListPullJobTemplate.spec.images: Invalid value: [\"nginx:1.25\",\"nginx:1.25\"]: images cannot have duplicate values"
    );
    let mut none = image_warmer(json!([]));
    none["spec"]["template"] = json!({});
    let r = app.send(validate, &review_v1beta1(Operation::Create, &none, None)).await;
    assert_eq!(
        r["status"]["message"],
        "spec.template: Forbidden: spec must have one template, either JobTemplate or BroadcastJobTemplate or ImageListPullJobTemplate should be provided"
    );

    let old = defaulted_v1beta1(&app, &image_warmer(json!(["nginx:1.25"]))).await;
    let mut new = old.clone();
    new["spec"]["template"]["imageListPullJobTemplate"]["spec"]["images"] = json!(["nginx:1.26", "redis:7"]);
    new["spec"]["concurrencyPolicy"] = json!("Forbid");
    let r = app.send(validate, &review_v1beta1(Operation::Update, &new, Some(&old))).await;
    assert_eq!(r["allowed"], true, "{r}");
    // A v1beta1 Job template may not change, as in v1alpha1 (kruise HEAD's message).
    let mut job = cron_job("@hourly");
    job["apiVersion"] = json!("apps.kruise.io/v1beta1");
    let job = defaulted_v1beta1(&app, &job).await;
    let mut changed = job.clone();
    changed["spec"]["template"]["jobTemplate"]["spec"]["backoffLimit"] = json!(2);
    let r = app.send(validate, &review_v1beta1(Operation::Update, &changed, Some(&job))).await;
    assert_eq!(r["status"]["code"], 422, "{r}");
    let message = r["status"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "spec: Forbidden: updates to advancedcronjob spec for fields other than 'imageListPullJobTemplate'"
        ),
        "{message}"
    );
    // A version not served: 400.
    let r = app
        .send(
            validate,
            &ReviewRequest::new(Operation::Create, "apps.kruise.io", "v2", "AdvancedCronJob", "advancedcronjobs")
                .name("warm")
                .namespace("ns")
                .objects(Some(&job), None),
        )
        .await;
    assert_eq!(r["status"]["code"], 400, "{r}");
}

async fn defaulted_v1beta1(app: &App, object: &Value) -> Value {
    let mutated = app.send(SPELLINGS[0][0], &review_v1beta1(Operation::Create, object, None)).await;
    assert_eq!(mutated["allowed"], true, "{mutated}");
    apply(object, response_patch(&mutated).as_ref())
}
