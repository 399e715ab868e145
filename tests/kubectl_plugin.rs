//! `kubectl kruise` end to end (issue 32 item 4): the REAL kubectl, with a PATH holding a
//! `kubectl-kruise` link to the built `kruise` binary (kubectl's plugin lookup, as `make install`
//! sets it up), on the test control plane with the CloneSet reconciler running in-process. The
//! rollout commands are judged by what the API server holds afterwards and by their exit codes
//! and output: `rollout status` follows a paused, then resumed rollout with progress lines (and
//! the planner's reason for the wait) and exits 0 when it completes; `undo` puts the previous
//! revision's template back and the pods follow; `pause`/`resume` set and clear `paused`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_cloneset_support;

use std::path::PathBuf;
use std::process::Stdio;

use e2e_cloneset_support::*;
use k8s_openapi::api::apps::v1::ControllerRevision;
use kube::api::{Api, ListParams};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

/// A PATH with `kubectl-kruise` first, and a HOME of its own for kubectl.
struct Plugin {
    dir: tempfile::TempDir,
    ns: String,
}

/// What one command did.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Plugin {
    fn new(ns: &str) -> Plugin {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("bin")).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_kruise"), dir.path().join("bin/kubectl-kruise")).unwrap();
        Plugin { dir, ns: ns.to_string() }
    }

    fn path(&self) -> String {
        let bin: PathBuf = self.dir.path().join("bin");
        format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default())
    }

    /// `kubectl kruise ARGS -n NS`, with KUBECONFIG set.
    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut c = tokio::process::Command::new("kubectl");
        c.arg("kruise")
            .args(args)
            .args(["-n", &self.ns])
            .env("PATH", self.path())
            .env("KUBECONFIG", cluster().kubeconfig())
            .env("HOME", self.dir.path())
            .kill_on_drop(true);
        c
    }

    async fn run(&self, args: &[&str]) -> Run {
        let out = tokio::time::timeout(DEADLINE, self.command(args).output())
            .await
            .expect("kubectl kruise finishes")
            .expect("kubectl runs (is it installed? .ci/run installs it)");
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Runs and expects exit 0; returns stdout.
    async fn ok(&self, args: &[&str]) -> String {
        let r = self.run(args).await;
        assert_eq!(r.code, 0, "kubectl kruise {args:?}:\nstdout: {}\nstderr: {}", r.stdout, r.stderr);
        r.stdout
    }
}

/// A process whose stdout lines are collected as they come.
struct Following {
    child: tokio::process::Child,
    lines: tokio::sync::mpsc::UnboundedReceiver<String>,
    seen: Vec<String>,
}

impl Following {
    fn start(mut command: tokio::process::Command) -> Following {
        let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("kubectl runs");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut reader = tokio::io::BufReader::new(stdout).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Following { child, lines, seen: Vec::new() }
    }

    /// Waits for a line containing `text`.
    async fn wait_for(&mut self, text: &str) -> String {
        let found = tokio::time::timeout(DEADLINE, async {
            while let Some(line) = self.lines.recv().await {
                self.seen.push(line.clone());
                if line.contains(text) {
                    return Some(line);
                }
            }
            None
        })
        .await;
        match found {
            Ok(Some(line)) => line,
            _ => panic!("no line with {text:?}; saw {:#?}", self.seen),
        }
    }

    /// Waits for the process to exit; its exit code, every stdout line, and stderr.
    async fn finish(mut self) -> (i32, Vec<String>, String) {
        let status = tokio::time::timeout(DEADLINE, self.child.wait()).await.expect("it exits").unwrap();
        let mut stderr = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            tokio::io::AsyncReadExt::read_to_string(&mut e, &mut stderr).await.unwrap();
        }
        while let Some(line) = self.lines.recv().await {
            self.seen.push(line);
        }
        (status.code().unwrap_or(-1), self.seen, stderr)
    }
}

fn template_image(t: &Scenario, name: &str) -> impl std::future::Future<Output = String> {
    let api: Api<kruise::apis::CloneSet> = Api::namespaced(t.client.clone(), t.ns());
    let name = name.to_string();
    async move {
        let cs = api.get(&name).await.unwrap();
        cs.spec.template.spec.unwrap().containers[0].image.clone().unwrap()
    }
}

async fn ready_at(t: &Scenario, replicas: i32) -> kruise::apis::CloneSetStatus {
    t.wait_status("web", "every pod updated and ready", |s| {
        s.replicas == replicas
            && s.ready_replicas == replicas
            && s.updated_replicas == replicas
            && s.updated_ready_replicas == replicas
            && s.current_revision == s.update_revision
    })
    .await
}

fn raw_paused(v: &Value) -> Value {
    v["spec"]["updateStrategy"].get("paused").cloned().unwrap_or(Value::Null)
}

async fn raw(t: &Scenario) -> Value {
    let api: Api<kube::core::DynamicObject> =
        Api::namespaced_with(t.client.clone(), t.ns(), &kube::core::ApiResource::erase::<kruise::apis::CloneSet>(&()));
    serde_json::to_value(api.get("web").await.unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollout_status_follows_a_paused_then_resumed_rollout_and_exits_0_when_complete() {
    let t = Scenario::start("kk-status").await;
    let k = Plugin::new(t.ns());
    t.create("web", spec(3, "nginx:1.25", json!({"type": "ReCreate"}))).await;
    let st = ready_at(&t, 3).await;

    let out = k.ok(&["rollout", "status", "cloneset/web", "--watch=false"]).await;
    assert_eq!(out, format!("CloneSet rolling update complete 3 pods at revision {}...\n", st.update_revision));

    // pause sets updateStrategy.paused; a second pause is kubectl's error, exit 1.
    assert_eq!(k.ok(&["rollout", "pause", "cloneset/web"]).await, "cloneset.apps.kruise.io/web paused\n");
    assert_eq!(raw_paused(&raw(&t).await), json!(true));
    let again = k.run(&["rollout", "pause", "cloneset", "web"]).await;
    assert_eq!((again.code, again.stderr.as_str()), (1, "error: clonesets.apps.kruise.io \"web\" is already paused\n"));

    // A new template while paused: status waits, and says why (the planner's reason).
    t.patch_spec("web", json!({"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}})).await;
    let mut status = Following::start(k.command(&["rollout", "status", "cloneset/web", "--timeout=5m"]));
    status.wait_for("Waiting for CloneSet \"web\" rollout to finish: 0 out of 3 new pods have been updated").await;
    let why = status.wait_for("waiting: ").await;
    assert!(why.contains("the update is paused (updateStrategy.paused)"), "{why}");

    // While paused it cannot complete: --timeout ends the wait with kubectl's error.
    let timed = k.run(&["rollout", "status", "cloneset/web", "--timeout=2s"]).await;
    assert_eq!((timed.code, timed.stderr.as_str()), (1, "error: timed out waiting for the condition\n"));
    assert!(timed.stdout.starts_with("Waiting for CloneSet"), "{}", timed.stdout);

    // resume clears it; the rollout runs and status exits 0 on its last line.
    assert_eq!(k.ok(&["rollout", "resume", "cloneset/web"]).await, "cloneset.apps.kruise.io/web resumed\n");
    assert_eq!(raw_paused(&raw(&t).await), Value::Null);
    let (code, lines, stderr) = status.finish().await;
    assert_eq!(code, 0, "{lines:#?}\n{stderr}");
    let st = ready_at(&t, 3).await;
    assert_eq!(
        lines.last().map(String::as_str),
        Some(format!("CloneSet rolling update complete 3 pods at revision {}...", st.update_revision).as_str()),
        "{lines:#?}"
    );
    let progress = lines.iter().filter(|l| l.starts_with("Waiting for")).count();
    assert!(progress >= 2, "progress lines while it ran: {lines:#?}");
    for p in t.pods().await {
        assert_eq!(p.spec.unwrap().containers[0].image.as_deref(), Some("nginx:1.26"));
    }
    let again = k.run(&["rollout", "resume", "cloneset/web"]).await;
    assert_eq!((again.code, again.stderr.as_str()), (1, "error: clonesets.apps.kruise.io \"web\" is not paused\n"));

    // Missing objects and kinds we do not handle: kubectl's errors, exit 1.
    let missing = k.run(&["rollout", "status", "cloneset/nope"]).await;
    assert_eq!(
        (missing.code, missing.stderr.as_str()),
        (1, "Error from server (NotFound): clonesets.apps.kruise.io \"nope\" not found\n")
    );
    // apps/v1 kinds are kubectl's own rollouts: the plugin runs `kubectl rollout` for them.
    let sts = k.run(&["rollout", "status", "statefulset/web"]).await;
    assert_eq!(sts.code, 1);
    assert!(sts.stderr.contains("statefulsets.apps \"web\" not found"), "{}", sts.stderr);
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> = Api::namespaced(t.client.clone(), t.ns());
    let deployment = serde_json::from_value(json!({"metadata": {"name": "native"}, "spec": {
        "selector": {"matchLabels": {"app": "native"}},
        "template": {"metadata": {"labels": {"app": "native"}},
            "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}}}}))
    .unwrap();
    deployments.create(&kube::api::PostParams::default(), &deployment).await.unwrap();
    assert_eq!(k.ok(&["rollout", "pause", "deployment/native"]).await, "deployment.apps/native paused\n");
    let paused = deployments.get("native").await.unwrap().spec.unwrap().paused;
    assert_eq!(paused, Some(true), "kubectl's own pause");
    let again = k.run(&["rollout", "pause", "deployment/native"]).await;
    assert_eq!(again.code, 1, "kubectl's exit code");
    assert!(again.stderr.contains("already paused"), "{}", again.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_rolls_back_to_the_previous_revision_and_history_lists_them() {
    let t = Scenario::start("kk-undo").await;
    let k = Plugin::new(t.ns());
    t.create("web", spec(2, "nginx:1.25", json!({"type": "ReCreate"}))).await;
    let first = ready_at(&t, 2).await.update_revision;
    t.patch_spec(
        "web",
        json!({"template": {
        "metadata": {"labels": {"app": "web", "track": "new"}},
        "spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}}),
    )
    .await;
    let second = t
        .wait_status("web", "the second revision rolled out", |s| {
            s.update_revision != first
                && s.updated_ready_replicas == 2
                && s.replicas == 2
                && s.current_revision == s.update_revision
        })
        .await
        .update_revision;

    let history = k.ok(&["rollout", "history", "cloneset/web"]).await;
    assert_eq!(history, "cloneset.apps.kruise.io/web \nREVISION  CHANGE-CAUSE\n1         <none>\n2         <none>\n\n");
    let one = k.ok(&["rollout", "history", "cloneset/web", "--revision=1"]).await;
    assert!(one.starts_with("cloneset.apps.kruise.io/web with revision #1\nPod Template:\n"), "{one}");
    assert!(one.contains("    Image:\tnginx:1.25\n") && !one.contains("track=new"), "{one}");

    // undo: the template is revision 1's again (the label added since is gone, not merged).
    assert_eq!(k.ok(&["rollout", "undo", "cloneset/web"]).await, "cloneset.apps.kruise.io/web rolled back\n");
    assert_eq!(template_image(&t, "web").await, "nginx:1.25");
    let labels = raw(&t).await["spec"]["template"]["metadata"]["labels"].clone();
    assert_eq!(labels, json!({"app": "web"}));
    let out = k.ok(&["rollout", "status", "cloneset/web", "--timeout=5m"]).await;
    assert!(out.ends_with(&format!("CloneSet rolling update complete 2 pods at revision {first}...\n")), "{out}");
    let st = ready_at(&t, 2).await;
    assert_eq!(st.update_revision, first, "the controller went back to the first revision, not a new one");
    assert_ne!(st.update_revision, second);
    for p in t.pods().await {
        assert_eq!(label(&p, "controller-revision-hash"), first);
        assert_eq!(p.spec.unwrap().containers[0].image.as_deref(), Some("nginx:1.25"));
    }

    // Undo to the revision the template already has: skipped, exit 0. A missing one: exit 1.
    let revisions: Api<ControllerRevision> = Api::namespaced(t.client.clone(), t.ns());
    let current = revisions.get(&first).await.unwrap().revision;
    let skip = k.ok(&["rollout", "undo", "cloneset/web", &format!("--to-revision={current}")]).await;
    assert_eq!(
        skip,
        format!("cloneset.apps.kruise.io/web skipped rollback (current template already matches revision {current})\n")
    );
    let missing = k.run(&["rollout", "undo", "cloneset/web", "--to-revision=99"]).await;
    assert_eq!(
        (missing.code, missing.stderr.as_str()),
        (1, "error: unable to find specified revision 99 in history\n")
    );
    assert_eq!(revisions.list(&ListParams::default()).await.unwrap().items.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_scaledown_and_plan_through_kubectl() {
    let t = Scenario::start("kk-restart").await;
    let k = Plugin::new(t.ns());
    t.create("web", spec(3, "nginx:1.25", json!({"type": "InPlaceIfPossible"}))).await;
    let before = ready_at(&t, 3).await.update_revision;
    let uids: Vec<String> = t.pods().await.iter().map(|p| p.metadata.uid.clone().unwrap()).collect();

    // restart: kruise-tools' RESTARTED_AT env in every container, a new revision, and every pod
    // replaced even under InPlaceIfPossible (an env change cannot be made in place).
    assert_eq!(k.ok(&["rollout", "restart", "cloneset/web"]).await, "cloneset.apps.kruise.io/web restarted\n");
    let env = raw(&t).await["spec"]["template"]["spec"]["containers"][0]["env"].clone();
    let at = env.as_array().unwrap().iter().find(|e| e["name"] == "RESTARTED_AT").unwrap()["value"].clone();
    assert!(at.as_str().is_some_and(|s| s.ends_with('Z') && s.len() == 20), "{env}");
    let out = k.ok(&["rollout", "status", "cloneset/web", "--timeout=5m"]).await;
    let after = ready_at(&t, 3).await.update_revision;
    assert_ne!(after, before);
    assert!(out.ends_with(&format!("CloneSet rolling update complete 3 pods at revision {after}...\n")), "{out}");
    for p in t.pods().await {
        assert!(!uids.contains(p.metadata.uid.as_ref().unwrap()), "{:?} was restarted", p.metadata.name);
        let env = p.spec.as_ref().unwrap().containers[0].env.clone().unwrap_or_default();
        assert!(env.iter().any(|e| e.name == "RESTARTED_AT" && e.value.as_deref() == at.as_str()), "{env:?}");
    }

    // scaledown: exactly the named pod goes, replicas 2, and it is not replaced.
    let pods = t.pods().await;
    let victim = pods[1].metadata.name.clone().unwrap();
    let out = k.ok(&["scaledown", "cloneset/web", "--pods", &victim]).await;
    assert_eq!(
        out,
        format!("# web delete pods [{victim}] successfully\ncloneset.apps.kruise.io/web selective pod deletion\n")
    );
    let v = raw(&t).await;
    assert_eq!(
        (v["spec"]["replicas"].clone(), v["spec"]["scaleStrategy"]["podsToDelete"].clone()),
        (json!(2), json!([victim]))
    );
    let left = t
        .eventually("the named pod gone, two left", |pods| {
            let names: Vec<String> = pods.iter().filter_map(|p| p.metadata.name.clone()).collect();
            (names.len() == 2 && !names.contains(&victim)).then_some(names)
        })
        .await;
    let expected: Vec<String> = pods.iter().filter_map(|p| p.metadata.name.clone()).filter(|n| *n != victim).collect();
    assert_eq!(left, expected);
    let stranger = k.run(&["scaledown", "cloneset/web", "--pods", "someone-else"]).await;
    assert_eq!(stranger.code, 1);
    assert!(stranger.stderr.contains("not live pods of CloneSet \"web\""), "{}", stranger.stderr);

    // plan: `kruise plan` through the plugin, in the namespace -n names.
    let plan: Value = serde_json::from_str(&k.ok(&["plan", "cloneset", "web", "-o", "json"]).await).unwrap();
    assert_eq!(plan["cloneSet"], format!("{}/web", t.ns()));
    // --kubeconfig as a flag instead of the environment.
    let flag = format!("--kubeconfig={}", cluster().kubeconfig().display());
    let mut c = k.command(&["rollout", "status", "cloneset/web", "--watch=false", &flag]);
    c.env_remove("KUBECONFIG");
    let out = c.output().await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("CloneSet rolling update complete 2 pods at revision {after}...\n")
    );
    // --context picks a kubeconfig context; an unknown one is an error.
    let current = kube::config::Kubeconfig::read_from(cluster().kubeconfig()).unwrap().current_context.unwrap();
    k.ok(&["rollout", "status", "cloneset/web", "--watch=false", "--context", &current]).await;
    let wrong = k.run(&["rollout", "status", "cloneset/web", "--context", "no-such-context"]).await;
    assert_eq!(wrong.code, 1);
    assert!(wrong.stderr.starts_with("error: ") && wrong.stderr.contains("no-such-context"), "{}", wrong.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_advanced_statefulset_pauses_resumes_rolls_out_and_rolls_back() {
    use kruise::apis::statefulset::v1beta1::StatefulSet;
    let t = Scenario::start("kk-asts").await;
    let k = Plugin::new(t.ns());
    let api: Api<StatefulSet> = Api::namespaced(t.client.clone(), t.ns());
    let set: StatefulSet = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "serviceName": "web", "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}},
            "podManagementPolicy": "Parallel",
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
                "podUpdatePolicy": "ReCreate", "partition": 0, "maxUnavailable": 1}},
            "revisionHistoryLimit": 10}
    }))
    .unwrap();
    api.create(&kube::api::PostParams::default(), &set).await.unwrap();
    let done = |revision: Option<String>| {
        let api = api.clone();
        async move {
            poll("the set rolled out", || async {
                let s = api.get("web").await.ok()?.status?;
                (s.ready_replicas == 2
                    && s.updated_ready_replicas == 2
                    && s.current_revision == s.update_revision
                    && revision.as_ref().is_none_or(|r| *r != s.update_revision))
                .then_some(s.update_revision)
            })
            .await
        }
    };
    let first = done(None).await;
    let out = k.ok(&["rollout", "status", "asts/web", "--watch=false"]).await;
    assert_eq!(out, format!("Advanced StatefulSet rolling update complete 2 pods at revision {first}...\n"));

    assert_eq!(k.ok(&["rollout", "pause", "asts/web"]).await, "statefulset.apps.kruise.io/web paused\n");
    let paused = |s: &StatefulSet| s.spec.update_strategy.rolling_update.as_ref().is_some_and(|r| r.paused);
    assert!(paused(&api.get("web").await.unwrap()));
    api.patch(
        "web",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(
            json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}}}),
        ),
    )
    .await
    .unwrap();
    let mut status =
        Following::start(k.command(&["rollout", "status", "statefulset.apps.kruise.io/web", "--timeout=5m"]));
    status
        .wait_for("Waiting for Advanced StatefulSet \"web\" rollout to finish: 0 out of 2 new pods have been updated")
        .await;
    // The planner says why it waits.
    status.wait_for("  waiting: the rolling update is paused (rollingUpdate.paused)").await;
    assert_eq!(k.ok(&["rollout", "resume", "asts/web"]).await, "statefulset.apps.kruise.io/web resumed\n");
    assert!(!paused(&api.get("web").await.unwrap()));
    let (code, lines, stderr) = status.finish().await;
    assert_eq!(code, 0, "{lines:#?}\n{stderr}");
    let second = done(Some(first.clone())).await;
    assert_eq!(
        lines.last().map(String::as_str),
        Some(format!("Advanced StatefulSet rolling update complete 2 pods at revision {second}...").as_str())
    );

    let history = k.ok(&["rollout", "history", "asts/web"]).await;
    assert_eq!(
        history,
        "statefulset.apps.kruise.io/web \nREVISION  CHANGE-CAUSE\n1         <none>\n2         <none>\n\n"
    );
    assert_eq!(k.ok(&["rollout", "undo", "asts/web"]).await, "statefulset.apps.kruise.io/web rolled back\n");
    k.ok(&["rollout", "status", "asts/web", "--timeout=5m"]).await;
    let back = done(Some(second)).await;
    assert_eq!(back, first, "back at the first revision");
    for p in t.pods().await {
        assert_eq!(p.spec.unwrap().containers[0].image.as_deref(), Some("nginx:1.25"));
    }
    // `kruise plan statefulset` through the plugin reads the set from the cluster: nothing to do.
    let plan: serde_json::Value =
        serde_json::from_str(&k.ok(&["plan", "statefulset", "web", "-o", "json"]).await).unwrap();
    assert_eq!(plan["statefulSet"], format!("{}/web", t.ns()));
    assert_eq!(
        (plan["currentRevision"].as_str(), plan["updateRevision"].as_str()),
        (Some(first.as_str()), Some(first.as_str()))
    );
    assert_eq!(plan["actions"], json!([]), "{plan:#}");
    // scaledown is CloneSet-only, as in kruise-tools.
    let r = k.run(&["scaledown", "asts/web", "--pods", "web-0"]).await;
    assert_eq!((r.code, r.stderr.as_str()), (1, "error: currently only supported CloneSet selective pods deletion\n"));
}

/// Issue 28 item 10: `kubectl kruise plan sidecarset NAME` reads the set (through v1beta1, its
/// storage version), the pods of its scope, the namespaces and its revisions in the manager
/// namespace from the cluster. Two pods were injected with busybox:1.36 (by the injection code, as
/// the webhook leaves them; bound to a node that does not exist, their status written as Running
/// and Ready), the set is now at busybox:1.37 with maxUnavailable 1: one pod is next, the other
/// waits for maxUnavailable, and the set's first revision is to be created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_sidecarset_through_kubectl_reads_the_cluster() {
    use k8s_openapi::api::core::v1::Pod;
    use kruise::core::sidecar::inject::{InjectionInput, plan_injection};
    use kube::api::{Patch, PatchParams, PostParams};
    crds().await;
    let c = cluster();
    let client = c.client().await.unwrap();
    let ns = c.namespace("kk-sidecar").await.unwrap();
    let ns = ns.name().to_string();
    let k = Plugin::new(&ns);
    let name = format!("logs-{ns}");
    let set = |image: &str| {
        let mut set: kruise::apis::SidecarSet = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "namespace": ns,
                "containers": [{"name": "log-agent", "image": image}],
                "updateStrategy": {"type": "RollingUpdate", "maxUnavailable": 1}}
        }))
        .unwrap();
        kruise::core::sidecar::defaults::default_sidecarset(&mut set).unwrap();
        set
    };
    let old = std::sync::Arc::new(set("busybox:1.36"));
    let ns_labels = [("kubernetes.io/metadata.name".to_string(), ns.clone())].into();
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    for p in ["web-0", "web-1"] {
        let mut pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": p, "namespace": ns, "labels": {"app": "web"}},
            "spec": {"nodeName": "absent-node", "containers": [{"name": "app", "image": "nginx:1.25"}]}
        }))
        .unwrap();
        let no_revisions = Vec::new;
        let input = InjectionInput {
            namespace_labels: &ns_labels,
            revisions: &no_revisions,
            draw: 0.0,
            now: "2024-05-01T00:00:00Z",
            sort_by_name: false,
        };
        plan_injection(&pod, std::slice::from_ref(&old), &input).unwrap().apply(&mut pod);
        assert!(
            pod.metadata.annotations.as_ref().is_some_and(|a| a.contains_key("kruise.io/sidecarset-injected-list"))
        );
        pods.create(&PostParams::default(), &pod).await.unwrap();
        let statuses: Vec<Value> = pod
            .spec
            .as_ref()
            .unwrap()
            .containers
            .iter()
            .map(|c| {
                json!({"name": c.name, "image": c.image, "imageID": "docker.io/x@sha256:00", "ready": true,
                   "restartCount": 0, "state": {"running": {}}})
            })
            .collect();
        let status = json!({"status": {"phase": "Running", "containerStatuses": statuses,
            "conditions": [{"type": "Ready", "status": "True"}]}});
        pods.patch_status(p, &PatchParams::default(), &Patch::Merge(status)).await.unwrap();
    }
    let new = serde_json::to_value(set("busybox:1.37")).unwrap();
    let new = kruise::core::conversion::convert(0, &new, kruise::core::conversion::V1BETA1).unwrap();
    let sets: Api<kruise::apis::sidecarset::v1beta1::SidecarSet> = Api::all(client.clone());
    sets.create(&PostParams::default(), &serde_json::from_value(new).unwrap()).await.unwrap();

    let plan: Value = serde_json::from_str(&k.ok(&["plan", "sidecarset", &name, "-o", "json"]).await).unwrap();
    assert_eq!(plan["sidecarSet"], name.as_str());
    assert_eq!(plan["status"]["matchedPods"], 2, "{plan:#}");
    assert_eq!(plan["revisionWrites"][0]["action"], "createRevision", "{plan:#}");
    let states: Vec<&str> = plan["pods"].as_array().unwrap().iter().map(|p| p["state"].as_str().unwrap()).collect();
    let mut sorted = states.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, ["upgradeNext", "waiting"], "{plan:#}");
    let waiting = plan["pods"].as_array().unwrap().iter().find(|p| p["state"] == "waiting").unwrap();
    assert!(waiting["reason"].as_str().unwrap().starts_with("maxUnavailable 1"), "{plan:#}");
    let next = plan["pods"].as_array().unwrap().iter().find(|p| p["state"] == "upgradeNext").unwrap();
    assert_eq!(next["images"], json!({"log-agent": "busybox:1.37"}));
    let _ = sets.delete(&name, &Default::default()).await;
}

/// Issue 33 item 5: the Advanced DaemonSet through the plugin (`ads/NAME`, `daemon NAME`,
/// `daemonset.apps.kruise.io/NAME`), its controller running in-process scoped to the test's
/// namespace, its pods bound by the real scheduler and run by the simulated kubelet of the
/// cluster's nodes: status says kubectl's DaemonSet lines, pause holds an image change (and
/// status says the planner's reason), resume lets it roll out in place, history lists two
/// revisions, undo goes back to the first (same pods, in place), restart sets `RESTARTED_AT`
/// and the pods are recreated with it, and `plan daemonset` reads the set, its pods and the nodes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_advanced_daemonset_pauses_resumes_rolls_out_rolls_back_and_restarts() {
    use k8s_openapi::api::core::v1::{Node, Pod};
    use kruise::apis::daemonset::v1beta1::DaemonSet;
    let t = Scenario::start("kk-ads").await;
    let k = Plugin::new(t.ns());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let settings = kruise::controller::Settings { namespace: Some(t.ns().to_string()), ..Default::default() };
    let controller = tokio::spawn(kruise::controller::daemonset::run_alone(
        t.client.clone(),
        settings,
        kruise::metrics::Metrics::default(),
        async move {
            let _ = stopped.await;
        },
    ));
    let nodes = Api::<Node>::all(t.client.clone()).list(&ListParams::default()).await.unwrap().items.len() as i32;
    assert!(nodes > 0);
    let api: Api<DaemonSet> = Api::namespaced(t.client.clone(), t.ns());
    let pods: Api<Pod> = Api::namespaced(t.client.clone(), t.ns());
    // As the mutating webhook leaves it.
    let set: DaemonSet = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "DaemonSet", "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
            "template": {"metadata": {"labels": {"app": "agent"}},
                "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}],
                         "readinessGates": [{"conditionType": "InPlaceUpdateReady"}]}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
                "rollingUpdateType": "InPlaceIfPossible", "maxUnavailable": 1, "maxSurge": 0, "partition": 0}},
            "revisionHistoryLimit": 10, "burstReplicas": 250, "scaleStrategy": {}}
    }))
    .unwrap();
    api.create(&kube::api::PostParams::default(), &set).await.unwrap();
    let done = |revision: Option<String>| {
        let (api, pods) = (api.clone(), pods.clone());
        async move {
            poll("the daemon set rolled out", || async {
                let ds = api.get("agent").await.ok()?;
                let s = ds.status?;
                let live = pods.list(&ListParams::default()).await.ok()?.items;
                let live = live.iter().filter(|p| p.metadata.deletion_timestamp.is_none()).count() as i32;
                (s.observed_generation == ds.metadata.generation.unwrap_or(0)
                    && s.desired_number_scheduled == nodes
                    && s.updated_number_scheduled == nodes
                    && s.number_available == nodes
                    && live == nodes
                    && revision.as_ref().is_none_or(|r| *r != s.update_revision))
                .then_some(s.update_revision)
            })
            .await
        }
    };
    let first = done(None).await;
    let out = k.ok(&["rollout", "status", "ads/agent", "--watch=false"]).await;
    assert_eq!(out, "daemon set \"agent\" successfully rolled out\n");
    let uids = || {
        let pods = pods.clone();
        async move {
            let mut u: Vec<String> = pods
                .list(&ListParams::default())
                .await
                .unwrap()
                .items
                .into_iter()
                .filter_map(|p| p.metadata.uid)
                .collect();
            u.sort();
            u
        }
    };
    let before = uids().await;

    assert_eq!(k.ok(&["rollout", "pause", "ads/agent"]).await, "daemonset.apps.kruise.io/agent paused\n");
    let paused = |d: &DaemonSet| d.spec.update_strategy.rolling_update.as_ref().and_then(|r| r.paused) == Some(true);
    assert!(paused(&api.get("agent").await.unwrap()));
    let again = k.run(&["rollout", "pause", "daemon", "agent"]).await;
    assert_eq!(
        (again.code, again.stderr.as_str()),
        (1, "error: daemonsets.apps.kruise.io \"agent\" is already paused\n")
    );
    api.patch(
        "agent",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(
            json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "busybox:1.37"}]}}}}),
        ),
    )
    .await
    .unwrap();
    let mut status =
        Following::start(k.command(&["rollout", "status", "daemonset.apps.kruise.io/agent", "--timeout=5m"]));
    status
        .wait_for(&format!(
            "Waiting for daemon set \"agent\" rollout to finish: 0 out of {nodes} new pods have been updated"
        ))
        .await;
    status.wait_for("  waiting: the rolling update is paused").await;
    assert_eq!(k.ok(&["rollout", "resume", "ads/agent"]).await, "daemonset.apps.kruise.io/agent resumed\n");
    assert!(!paused(&api.get("agent").await.unwrap()));
    let (code, lines, stderr) = status.finish().await;
    assert_eq!(code, 0, "{lines:#?}\n{stderr}");
    assert_eq!(lines.last().map(String::as_str), Some("daemon set \"agent\" successfully rolled out"), "{lines:#?}");
    let second = done(Some(first.clone())).await;
    assert_eq!(uids().await, before, "updated in place");

    let history = k.ok(&["rollout", "history", "ads/agent"]).await;
    assert_eq!(
        history,
        "daemonset.apps.kruise.io/agent \nREVISION  CHANGE-CAUSE\n1         <none>\n2         <none>\n\n"
    );
    let one = k.ok(&["rollout", "history", "ads/agent", "--revision=1"]).await;
    assert!(one.contains("    Image:\tbusybox:1.36\n"), "{one}");
    assert_eq!(k.ok(&["rollout", "undo", "ads/agent"]).await, "daemonset.apps.kruise.io/agent rolled back\n");
    k.ok(&["rollout", "status", "ads/agent", "--timeout=5m"]).await;
    let back = done(Some(second)).await;
    assert_eq!(back, first, "back at the first revision");
    assert_eq!(uids().await, before, "rolled back in place");
    for p in pods.list(&ListParams::default()).await.unwrap().items {
        assert_eq!(p.spec.unwrap().containers[0].image.as_deref(), Some("busybox:1.36"));
    }

    // `kruise plan daemonset` through the plugin: the set at rest, nothing to do.
    let plan: Value = serde_json::from_str(&k.ok(&["plan", "daemonset", "agent", "-o", "json"]).await).unwrap();
    assert_eq!(plan["daemonSet"], format!("{}/agent", t.ns()));
    assert_eq!(plan["updateRevision"], first.as_str());
    assert_eq!(plan["actions"], json!([]), "{plan:#}");
    assert_eq!(plan["errors"], json!([]), "{plan:#}");

    // restart: RESTARTED_AT in the template; an env change is no in-place update, so every pod is
    // recreated, and status follows it to the end.
    assert_eq!(k.ok(&["rollout", "restart", "ads/agent"]).await, "daemonset.apps.kruise.io/agent restarted\n");
    let env = api.get("agent").await.unwrap().spec.template.spec.unwrap().containers[0].env.clone().unwrap();
    assert_eq!(env.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["RESTARTED_AT"]);
    k.ok(&["rollout", "status", "ads/agent", "--timeout=5m"]).await;
    done(Some(first)).await;
    let after = uids().await;
    assert!(after.iter().all(|u| !before.contains(u)), "recreated: {before:?} -> {after:?}");

    // Plain `daemonset` is apps/v1's: kubectl's own rollout answers.
    let native = k.run(&["rollout", "status", "daemonset/agent"]).await;
    assert_eq!(native.code, 1);
    assert!(native.stderr.contains("daemonsets.apps \"agent\" not found"), "{}", native.stderr);
    let _ = stop.send(());
    tokio::time::timeout(DEADLINE, controller).await.expect("the controller stops").unwrap();
}

/// `create ContainerRecreateRequest NAME --pod P --containers a,b` (and the short `crr`):
/// kruise-tools' request with its defaults, the named containers only (all of the pod's when none
/// is named), `--dry-run` creating nothing, and clear errors for a missing pod or container.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_container_recreate_request_through_kubectl() {
    use k8s_openapi::api::core::v1::Pod;
    use kruise::apis::containerrecreaterequest::ContainerRecreateRequest;
    let t = Scenario::start("kk-crr").await;
    let k = Plugin::new(t.ns());
    let pods: Api<Pod> = Api::namespaced(t.client.clone(), t.ns());
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "web"}, "spec": {"containers": [
        {"name": "a", "image": "nginx:1.25"}, {"name": "b", "image": "nginx:1.25"}, {"name": "c", "image": "busybox:1.36"}]}}))
    .unwrap();
    pods.create(&Default::default(), &pod).await.unwrap();
    let crrs: Api<ContainerRecreateRequest> = Api::namespaced(t.client.clone(), t.ns());

    let out = k.ok(&["create", "ContainerRecreateRequest", "two", "--pod", "web", "--containers", "a,b"]).await;
    assert_eq!(out, "containerrecreaterequest.apps.kruise.io/two created\n");
    let two = crrs.get("two").await.unwrap();
    assert_eq!(two.spec.pod_name, "web");
    let names: Vec<&str> = two.spec.containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    let strategy = two.spec.strategy.clone().unwrap();
    assert_eq!(
        (strategy.failure_policy.as_str(), strategy.unready_grace_period_seconds, strategy.min_started_seconds),
        ("Fail", Some(3), 3)
    );
    assert_eq!((two.spec.active_deadline_seconds, two.spec.ttl_seconds_after_finished), (Some(300), Some(1800)));

    // The short name; no container named: every container of the pod.
    let out = k.ok(&["create", "crr", "all", "-p", "web", "-u", "0"]).await;
    assert_eq!(out, "containerrecreaterequest.apps.kruise.io/all created\n");
    let all = crrs.get("all").await.unwrap();
    let names: Vec<&str> = all.spec.containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert_eq!(all.spec.strategy.unwrap().unready_grace_period_seconds, Some(0));

    // Dry runs create nothing.
    for (flag, suffix) in [("--dry-run=client", "(dry run)"), ("--dry-run=server", "(server dry run)")] {
        let out = k.ok(&["create", "crr", "dry", "--pod", "web", flag]).await;
        assert_eq!(out, format!("containerrecreaterequest.apps.kruise.io/dry created {suffix}\n"));
    }
    assert!(crrs.get_opt("dry").await.unwrap().is_none());

    // Errors: exit 1 with the reason.
    for (args, why) in [
        (vec!["create", "crr", "x", "--pod", "nope"], "error: pod nope in namespace"),
        (
            vec!["create", "crr", "x", "--pod", "web", "--containers", "a,zz"],
            "error: container zz not found in pod web",
        ),
        (vec!["create", "crr", "x"], "error: --pod is required"),
        (vec!["create", "crr", "two", "--pod", "web"], "error: failed to create crr:"),
    ] {
        let r = k.run(&args).await;
        assert_eq!(r.code, 1, "{args:?}: {}", r.stdout);
        assert!(r.stderr.contains(why), "{args:?}: {}", r.stderr);
    }
    assert!(crrs.get_opt("x").await.unwrap().is_none());
}
