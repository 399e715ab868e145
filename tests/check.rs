//! `kruise check` end to end: the built binary on fixture directories, its exit codes, and its
//! text, JSON and JUnit outputs parsed back.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/check")
}

fn kruise(args: &[&str], dir: Option<&Path>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kruise"));
    cmd.args(args);
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    cmd.output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

#[test]
fn clean_set_is_admitted_and_unhandled_kinds_are_reported_as_skipped() {
    let dir = fixtures().join("clean");
    let out = kruise(&["check", "-f", dir.to_str().unwrap()], None);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("CloneSet default/web (CREATE): mutated"), "{text}");
    assert!(text.contains("StatefulSet data/db (CREATE): mutated"), "{text}");
    assert!(text.contains("ConfigMap default/settings (CREATE): skipped"), "{text}");
    assert!(text.contains("3 objects: 2 admitted (2 mutated), 0 denied, 1 skipped, 0 errors"), "{text}");
}

/// A report that cannot be written is a failure of the run (exit 3), not a panic; a reader that
/// closes the pipe early (`| head`) is not.
#[test]
fn a_report_that_cannot_be_written_exits_3_and_a_closed_pipe_is_no_panic() {
    let dir = fixtures().join("clean");
    let full = std::fs::File::create("/dev/full").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kruise"))
        .args(["check", "-f", dir.to_str().unwrap(), "-o", "json"])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("error: cannot write the report"), "{out:?}");

    let mut child = Command::new(env!("CARGO_BIN_EXE_kruise"))
        .args(["check", "-f", dir.to_str().unwrap(), "-o", "json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
}

#[test]
fn json_report_and_mutated_objects() {
    let dir = fixtures().join("clean");
    let out_dir = tempfile::tempdir().unwrap();
    let out = kruise(
        &["check", "-f", dir.to_str().unwrap(), "-o", "json", "--mutated-out", out_dir.path().to_str().unwrap()],
        None,
    );
    assert_eq!(out.status.code(), Some(0));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let results = report["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    let web = &results[0];
    assert_eq!(web["object"]["name"], "web");
    assert_eq!(web["operation"], "CREATE");
    assert_eq!(web["allowed"], true);
    assert_eq!(web["result"], "mutated");
    assert_eq!(web["code"], 200);
    assert!(web["line"].as_u64().unwrap() >= 1);
    // The patch turns the input into the mutated object written out.
    let mut input: Value = serde_yaml_ng::from_str(
        std::fs::read_to_string(dir.join("workloads.yaml")).unwrap().split("---").next().unwrap(),
    )
    .unwrap();
    input["metadata"]["namespace"] = "default".into();
    let patch: json_patch::Patch = serde_json::from_value(web["patch"].clone()).unwrap();
    json_patch::patch(&mut input, &patch).unwrap();
    let written: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(out_dir.path().join("cloneset-default-web.yaml")).unwrap())
            .unwrap();
    assert_eq!(input, written);
    assert_eq!(written["spec"]["updateStrategy"]["maxUnavailable"], "20%");
    assert_eq!(results[2]["result"], "skipped");
}

#[test]
fn junit_report_has_a_suite_per_file() {
    let dir = fixtures().join("clean");
    let out = kruise(&["check", "-f", dir.to_str().unwrap(), "-o", "junit"], None);
    assert_eq!(out.status.code(), Some(0));
    let xml = stdout(&out);
    assert!(xml.starts_with("<?xml"));
    assert_eq!(xml.matches("<testsuite ").count(), 1);
    assert!(xml.contains("tests=\"3\" failures=\"0\" errors=\"0\" skipped=\"1\""), "{xml}");
    assert_eq!(xml.matches("<testcase ").count(), 3);
    assert!(xml.contains("<skipped message="));
}

#[test]
fn unreadable_yaml_exits_2_naming_file_and_line() {
    let dir = fixtures().join("bad-yaml");
    let out = kruise(&["check", "-f", dir.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("broken.yaml:"), "{err}");
    let line: usize =
        err.split("broken.yaml:").nth(1).unwrap().split(':').next().unwrap().trim().parse().expect("a line number");
    assert!((9..=11).contains(&line), "line {line} in {err}");
    let out = kruise(&["check", "-f", "/nonexistent/path.yaml"], None);
    assert_eq!(out.status.code(), Some(2));
    let out = kruise(&["check"], None);
    assert_eq!(out.status.code(), Some(2), "usage error");
}

#[test]
fn stdin_and_undecodable_objects_are_denied() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kruise"))
        .args(["check", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            b"apiVersion: apps.kruise.io/v1alpha1\nkind: CloneSet\nmetadata: {name: x}\nspec: {replicas: \"three\"}\n",
        )
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.contains("-:1: CloneSet default/x (CREATE): denied: admission webhook \"mcloneset.kb.io\" denied the request: cannot decode CloneSet"), "{text}");
}

/// A temporary git repository with an empty `deploy/` folder.
fn git_repo() -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    let d = repo.path();
    git(d, &["init", "-q"]);
    git(d, &["config", "user.email", "ci@example.com"]);
    git(d, &["config", "user.name", "ci"]);
    std::fs::create_dir(d.join("deploy")).unwrap();
    repo
}

fn git(dir: &Path, args: &[&str]) {
    let st = Command::new("git").args(args).current_dir(dir).status().unwrap();
    assert!(st.success(), "git {args:?}");
}

#[test]
fn old_versions_from_git_turn_creates_into_updates_and_deletes() {
    let repo = git_repo();
    let d = repo.path();
    let workloads = std::fs::read_to_string(fixtures().join("clean/workloads.yaml")).unwrap();
    std::fs::write(d.join("deploy/app.yaml"), &workloads).unwrap();
    git(d, &["add", "."]);
    git(d, &["commit", "-qm", "base"]);
    // Change: the StatefulSet is removed, the CloneSet gets a new image.
    let web = workloads.split("---").next().unwrap().replace("nginx:1.27", "nginx:1.28");
    std::fs::write(d.join("deploy/app.yaml"), &web).unwrap();
    let out = kruise(&["check", "-f", "deploy", "--old", "git:HEAD"], Some(d));
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("CloneSet default/web (UPDATE)"), "{text}");
    assert!(text.contains("StatefulSet data/db (DELETE)"), "{text}");
    let out = kruise(&["check", "-f", "deploy", "--old", "git:no-such-rev"], Some(d));
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn denied_cloneset_exits_1_with_the_message() {
    let dir = fixtures().join("denied");
    let out = kruise(&["check", "-f", dir.to_str().unwrap(), "-o", "json"], None);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &report["results"][0];
    assert_eq!(r["allowed"], false);
    assert_eq!(r["code"], 422);
    let msg = r["message"].as_str().unwrap();
    assert!(msg.starts_with("admission webhook \"vcloneset.kb.io\" denied the request: "), "{msg}");
    assert!(msg.contains("`selector` does not match template `labels`"), "{msg}");
    let out = kruise(&["check", "-f", dir.to_str().unwrap(), "-o", "junit"], None);
    assert!(stdout(&out).contains("failures=\"1\""));
}

#[test]
fn in_place_only_env_change_is_caught_through_old() {
    let (old, new) = (fixtures().join("inplace-old"), fixtures().join("inplace-new"));
    let out = kruise(&["check", "-f", new.to_str().unwrap(), "--old", old.to_str().unwrap()], None);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("CloneSet prod/web (UPDATE): denied"), "{text}");
    assert!(text.contains("/containers/0/env/0/value"), "{text}");
    assert!(text.contains("InPlaceIfPossible"), "the message says how to proceed: {text}");
    // Without --old it is a valid CREATE.
    let out = kruise(&["check", "-f", new.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn in_place_only_violation_in_a_git_revision_comparison() {
    let repo = git_repo();
    let d = repo.path();
    std::fs::copy(fixtures().join("inplace-old/cloneset.yaml"), d.join("deploy/web.yaml")).unwrap();
    git(d, &["add", "."]);
    git(d, &["commit", "-qm", "base"]);
    std::fs::copy(fixtures().join("inplace-new/cloneset.yaml"), d.join("deploy/web.yaml")).unwrap();
    let out = kruise(&["check", "-f", "deploy/", "--old", "git:HEAD", "-o", "junit"], Some(d));
    assert_eq!(out.status.code(), Some(1));
    let xml = stdout(&out);
    assert!(xml.contains("failures=\"1\"") && xml.contains("/containers/0/env/0/value"), "{xml}");
}

#[test]
fn pod_is_previewed_with_a_sidecarset_of_the_same_input() {
    let dir = fixtures().join("sidecar");
    let out_dir = tempfile::tempdir().unwrap();
    let out = kruise(&["check", "-f", dir.to_str().unwrap(), "--mutated-out", out_dir.path().to_str().unwrap()], None);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("Pod prod/shop-0 (CREATE): mutated"), "{text}");
    assert!(text.contains("SidecarSet logging (CREATE): mutated"), "{text}");
    let pod: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(out_dir.path().join("pod-prod-shop-0.yaml")).unwrap())
            .unwrap();
    let names: Vec<&str> =
        pod["spec"]["containers"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["log-agent", "shop"]);
    assert_eq!(pod["metadata"]["annotations"]["kruise.io/sidecarset-injected-list"], "logging");
    // The hash recorded on the pod is the one the SidecarSet's own mutating webhook computed.
    let set: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(out_dir.path().join("sidecarset-logging.yaml")).unwrap())
            .unwrap();
    let set_hash = set["metadata"]["annotations"]["kruise.io/sidecarset-hash"].as_str().unwrap();
    let pod_hashes: Value =
        serde_json::from_str(pod["metadata"]["annotations"]["kruise.io/sidecarset-hash"].as_str().unwrap()).unwrap();
    assert_eq!(pod_hashes["logging"]["hash"], set_hash);
}

/// v1beta1 objects as OpenKruise's v1.9 manuals write them are checked (issue 15), not skipped:
/// CloneSets and SidecarSets admitted, an ImagePullJob admitted with the chart's
/// `ImagePullJobGate=true` (issue 29; refused without the gate, as the cluster would), and a bad
/// v1beta1 CloneSet denied with v1beta1 field names.
#[test]
fn v1beta1_documentation_objects_are_checked() {
    let docs = fixtures().join("v1beta1-docs");
    let out = kruise(&["check", "-f", docs.to_str().unwrap(), "--feature-gates", "ImagePullJobGate=true"], None);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&out.stderr));
    for name in ["default/sample ", "default/sample-data ", "default/sample-inplace ", "default/sample-ondelete "] {
        assert!(text.contains(&format!("CloneSet {name}(CREATE): mutated")), "{name}: {text}");
    }
    assert!(text.contains("SidecarSet test-sidecarset (CREATE): mutated"), "{text}");
    assert!(text.contains("SidecarSet scoped-sidecarset (CREATE): mutated"), "{text}");
    assert!(text.contains("ImagePullJob default/job-with-always (CREATE): mutated"), "{text}");
    assert!(text.contains("7 objects: 7 admitted (7 mutated), 0 denied, 0 skipped, 0 errors"), "{text}");
    let out = kruise(&["check", "-f", docs.join("imagepulljob.yaml").to_str().unwrap()], None);
    assert!(stdout(&out).contains("feature-gate ImagePullJobGate is not enabled"), "{}", stdout(&out));

    let out = kruise(&["check", "-f", fixtures().join("v1beta1-denied").to_str().unwrap()], None);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: \"1\": can not use maxSurge with podUpdatePolicy InPlaceOnly"),
        "{text}"
    );
    assert!(text.contains("imagePreDownloadParallelism does not support percentage value"), "{text}");
}
