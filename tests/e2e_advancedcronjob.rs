//! AdvancedCronJob end to end (issue 33 items 1 and 4) on the real control plane of `testenv/`
//! (with its job controller): `kruise serve` with deploy/'s RBAC and the generated
//! `webhook-config/`. Asserted, as a user would see it:
//! - an invalid schedule is denied by `vadvancedcronjob.kb.io` with kruise's message;
//! - an AdvancedCronJob on `@every 10s` with `concurrencyPolicy: Forbid` creates a Job named
//!   `<acj>-<unix seconds of the run>` with the template's labels, the `scheduled-at`
//!   annotation and the AdvancedCronJob as controller, and lists it in `status.active`;
//! - while that Job runs (the simulated kubelet runs containers forever) no second Job comes,
//!   however many ticks pass (ticks are witnessed by a second AdvancedCronJob with `Allow`);
//! - switched to `Replace`, the running Job is replaced by the next run's;
//! - `paused: true` stops the runs.
//!
//! Its own test binary: it registers webhooks with its own CA.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_common;

use std::collections::BTreeSet;
use std::time::Duration;

use e2e_common::{Kruise, cluster, install, manager_kubeconfig, root};
use k8s_openapi::api::batch::v1::Job;
use kruise::apis::advancedcronjob::AdvancedCronJob;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(120);

async fn poll<T, F, Fut>(what: &str, timeout: Duration, check: F) -> T
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

fn cron_job(name: &str, schedule: &str, policy: &str) -> AdvancedCronJob {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "AdvancedCronJob",
        "metadata": {"name": name},
        "spec": {"schedule": schedule, "concurrencyPolicy": policy,
            "template": {"jobTemplate": {
                "metadata": {"labels": {"run-of": name}},
                "spec": {"template": {"spec": {"restartPolicy": "Never",
                    "containers": [{"name": "work", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}}}}}}
    }))
    .unwrap()
}

/// The names of the Jobs whose controller is the AdvancedCronJob `owner` (not being deleted).
async fn runs(jobs: &Api<Job>, owner: &str) -> BTreeSet<String> {
    let list = jobs.list(&ListParams::default()).await.unwrap().items;
    list.into_iter()
        .filter(|j| j.metadata.deletion_timestamp.is_none())
        .filter(|j| {
            j.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|r| r.controller == Some(true) && r.kind == "AdvancedCronJob" && r.name == owner)
        })
        .filter_map(|j| j.metadata.name)
        .collect()
}

/// Waits until the witness (an `Allow` AdvancedCronJob on the same schedule) has made `more`
/// runs beyond the ones it has now: that many ticks have passed for every AdvancedCronJob.
async fn ticks(jobs: &Api<Job>, more: usize) {
    let start = runs(jobs, "witness").await.len();
    poll("the witness to run again", TIMEOUT, || async {
        (runs(jobs, "witness").await.len() >= start + more).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advanced_cron_jobs_schedule_jobs() {
    let c = cluster();
    let dir = tempfile::tempdir().unwrap();
    let certs = tempfile::tempdir().unwrap();
    let kubeconfig = manager_kubeconfig(dir.path()).await;
    let log = std::env::var("KRUISE_E2E_LOG").unwrap_or_else(|_| "warn".into());
    let made = std::process::Command::new(env!("CARGO_BIN_EXE_kruise"))
        .args(["certs", "--out"])
        .arg(certs.path())
        .status()
        .unwrap();
    assert!(made.success());
    let kruise = Kruise::spawn(certs.path(), &kubeconfig, &[], &log);
    install(&[&kruise]).await;
    let client = c.client().await.unwrap();
    let ca = std::fs::read(certs.path().join("ca.crt")).unwrap();
    kruise_testenv::register_webhooks(&client, &root().join("webhook-config"), &ca).await.unwrap();
    let ns = c.namespace("e2e-acj").await.unwrap();
    let acjs: Api<AdvancedCronJob> = Api::namespaced(client.clone(), ns.name());
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns.name());
    let pp = PostParams::default();

    // An invalid schedule is denied with kruise's message (retried while the webhook comes up).
    let denied = poll("the webhook to deny a bad schedule", TIMEOUT, || async {
        match acjs.create(&pp, &cron_job("bad", "61 * * * *", "Allow")).await {
            Err(kube::Error::Api(e)) if e.message.contains("vadvancedcronjob.kb.io") => Some(e),
            Ok(_) => panic!("a bad schedule was admitted"),
            Err(_) => None,
        }
    })
    .await;
    assert_eq!(denied.code, 422, "{denied:?}");
    assert!(
        denied
            .message
            .contains("spec.schedule: Invalid value: \"61 * * * *\": end of range (61) above maximum (59): 61"),
        "{}",
        denied.message
    );

    // A Forbid AdvancedCronJob makes its first run.
    let created = acjs.create(&pp, &cron_job("forbid", "@every 10s", "Forbid")).await.unwrap();
    assert_eq!(created.spec.paused, Some(false), "defaulted by madvancedcronjob.kb.io");
    assert_eq!(created.spec.successful_jobs_history_limit, Some(3));
    let first = poll("the first run", TIMEOUT, || async { runs(&jobs, "forbid").await.into_iter().next() }).await;
    let job = jobs.get(&first).await.unwrap();
    let scheduled = job.metadata.annotations.as_ref().unwrap()["apps.kruise.io/scheduled-at"].clone();
    let unix = scheduled.parse::<k8s_openapi::jiff::Timestamp>().unwrap().as_second();
    assert_eq!(first, format!("forbid-{unix}"));
    assert_eq!(job.metadata.labels.as_ref().unwrap()["run-of"], "forbid");
    let owner = &job.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (
            owner.api_version.as_str(),
            owner.kind.as_str(),
            owner.name.as_str(),
            owner.controller,
            owner.block_owner_deletion
        ),
        ("apps.kruise.io/v1alpha1", "AdvancedCronJob", "forbid", Some(true), Some(true))
    );
    assert_eq!(Some(&owner.uid), created.metadata.uid.as_ref());
    poll("status.active and lastScheduleTime", TIMEOUT, || async {
        let s = acjs.get("forbid").await.ok()?.status?;
        let listed =
            s.active.iter().any(|r| r.name.as_deref() == Some(first.as_str()) && r.kind.as_deref() == Some("Job"));
        (listed && s.type_ == "Job" && s.last_schedule_time.is_some_and(|t| t.0.as_second() == unix)).then_some(())
    })
    .await;

    // While it runs, Forbid skips the ticks.
    acjs.create(&pp, &cron_job("witness", "@every 10s", "Allow")).await.unwrap();
    ticks(&jobs, 2).await;
    assert_eq!(runs(&jobs, "forbid").await, BTreeSet::from([first.clone()]), "Forbid made a second run");

    // Replace: the running Job gives way to the next run's.
    let replace = json!({"spec": {"concurrencyPolicy": "Replace"}});
    acjs.patch("forbid", &PatchParams::default(), &Patch::Merge(&replace)).await.unwrap();
    let second = poll("the run to be replaced", TIMEOUT, || async {
        let now = runs(&jobs, "forbid").await;
        (!now.contains(&first) && now.len() == 1).then(|| now.into_iter().next().unwrap())
    })
    .await;
    assert!(second > first, "{second} follows {first}");

    // Paused: no more runs.
    let pause = json!({"spec": {"paused": true}});
    acjs.patch("forbid", &PatchParams::default(), &Patch::Merge(&pause)).await.unwrap();
    ticks(&jobs, 1).await;
    let at_pause = runs(&jobs, "forbid").await;
    ticks(&jobs, 2).await;
    assert_eq!(runs(&jobs, "forbid").await, at_pause, "a paused AdvancedCronJob ran");

    for name in ["forbid", "witness"] {
        acjs.delete(name, &Default::default()).await.unwrap();
    }
}
