//! Real-world manifest shapes (issue 14), each a regression test with fixtures written for this
//! project (`tests/fixtures/check/real-world/` and `mixed/`): explicit nulls, YAML 1.1 as kubectl
//! reads it, kruise's feature-gate names, the two stray mutations, decode errors as field errors,
//! and `kruise check` output a CI can trust (exact lines, unreadable files, duplicates, unchecked
//! kinds, names, JSON summary, stable JUnit names). Handlers are driven in-process through
//! `webhook::handle`; `kruise check` as the built binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use kruise::cluster::EmptyView;
use kruise::core::features::FeatureGates;
use kruise::webhook::paths::Handler;
use kruise::webhook::review::{Verdict, decode};
use kruise::webhook::{Context, handle};
use serde_json::{Value, json};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/check")
}

fn review(group: &str, version: &str, resource: &str, kind: &str, object: &Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "uid-1",
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": resource},
            "namespace": "default", "operation": "CREATE", "userInfo": {},
            "object": object,
        }
    }))
    .unwrap()
}

/// Mutating then validating handler, as the apiserver calls them: the verdicts and the admitted
/// object (each patch applied to the request object).
fn admit(handlers: &[Handler], group: &str, version: &str, resource: &str, object: &Value) -> (Vec<Verdict>, Value) {
    let ctx = Context::with_gates(FeatureGates::default(), Arc::new(EmptyView));
    let kind = object["kind"].as_str().unwrap();
    let mut current = object.clone();
    let mut verdicts = Vec::new();
    for h in handlers {
        let r = decode(&review(group, version, resource, kind, &current)).unwrap();
        let v = handle(&ctx, *h, &r).expect("implemented");
        if let Some(p) = &v.patch {
            json_patch::patch(&mut current, p).expect("the patch applies to the request object");
        }
        verdicts.push(v);
    }
    (verdicts, current)
}

fn yaml(text: &str) -> Value {
    kruise::compat::yaml::documents(text).remove(0).unwrap().value
}

#[test]
fn explicit_nulls_are_zero_values_in_every_webhook() {
    let cloneset = yaml(
        "apiVersion: apps.kruise.io/v1alpha1\nkind: CloneSet\nmetadata: {name: c, namespace: default}\nspec:\n  \
         selector: {matchLabels: {app: c}}\n  scaleStrategy: null\n  volumeClaimTemplates: null\n  lifecycle: ~\n  \
         updateStrategy:\n#   type: InPlaceIfPossible\n  template:\n    metadata: {labels: {app: c}}\n    spec:\n      \
         containers: [{name: c, image: nginx, resources: null, env: null}]\n",
    );
    assert_eq!(cloneset["spec"]["updateStrategy"], Value::Null, "the commented-out body is a null");
    let (v, admitted) = admit(
        &[Handler::MutateCloneSet, Handler::ValidateCloneSet],
        "apps.kruise.io",
        "v1alpha1",
        "clonesets",
        &cloneset,
    );
    assert!(v.iter().all(|v| v.allowed), "{v:?}");
    assert_eq!(admitted["spec"]["updateStrategy"]["type"], "ReCreate");
    assert_eq!(admitted["spec"]["updateStrategy"]["maxUnavailable"], "20%");

    let sts = json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet",
        "metadata": {"name": "s", "namespace": "default"},
        "spec": {"serviceName": "s", "selector": {"matchLabels": {"app": "s"}}, "reserveOrdinals": null,
            "updateStrategy": null, "volumeClaimTemplates": null, "lifecycle": null,
            "template": {"metadata": {"labels": {"app": "s"}}, "spec": {"containers": [{"name": "s", "image": "x"}]}}}});
    let (v, admitted) = admit(
        &[Handler::MutateStatefulSet, Handler::ValidateStatefulSet],
        "apps.kruise.io",
        "v1beta1",
        "statefulsets",
        &sts,
    );
    assert!(v.iter().all(|v| v.allowed), "{v:?}");
    assert_eq!(admitted["spec"]["updateStrategy"]["type"], "RollingUpdate");

    let set = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet", "metadata": {"name": "test-sidecarset"},
        "spec": {"selector": {"matchLabels": {"app": "s"}}, "injectionStrategy": null, "updateStrategy": null,
            "containers": [{"name": "side", "image": "busybox", "podInjectPolicy": null, "shareVolumePolicy": null}]}});
    let (v, admitted) = admit(
        &[Handler::MutateSidecarSet, Handler::ValidateSidecarSet],
        "apps.kruise.io",
        "v1alpha1",
        "sidecarsets",
        &set,
    );
    assert!(v.iter().all(|v| v.allowed), "{v:?}");
    assert_eq!(admitted["spec"]["containers"][0]["podInjectPolicy"], "BeforeAppContainer");

    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": null},
        "spec": {"containers": [{"name": "c", "image": "nginx", "resources": null, "ports": null}]}});
    let (v, _) = admit(&[Handler::MutatePod], "", "v1", "pods", &pod);
    assert!(v[0].allowed, "{v:?}");
}

#[test]
fn volume_claim_templates_get_only_their_phase() {
    let vct = json!({"metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
    let cloneset = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "c"}}, "volumeClaimTemplates": [vct],
            "template": {"metadata": {"labels": {"app": "c"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}});
    let (v, admitted) = admit(&[Handler::MutateCloneSet], "apps.kruise.io", "v1alpha1", "clonesets", &cloneset);
    let ops = serde_json::to_value(v[0].patch.as_ref().unwrap()).unwrap();
    assert!(!ops.to_string().contains("PersistentVolumeClaim"), "{ops}");
    let mut want = vct.clone();
    want["status"] = json!({"phase": "Pending"});
    assert_eq!(admitted["spec"]["volumeClaimTemplates"][0], want, "spec §1.1.3: only status.phase");
    // A template that carries apiVersion and kind keeps them.
    let mut with_type = cloneset.clone();
    with_type["spec"]["volumeClaimTemplates"][0]["apiVersion"] = json!("v1");
    with_type["spec"]["volumeClaimTemplates"][0]["kind"] = json!("PersistentVolumeClaim");
    let (_, admitted) = admit(&[Handler::MutateCloneSet], "apps.kruise.io", "v1alpha1", "clonesets", &with_type);
    assert_eq!(admitted["spec"]["volumeClaimTemplates"][0]["kind"], "PersistentVolumeClaim");
}

#[test]
fn a_pod_without_metadata_is_allowed_without_a_patch() {
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    let (v, admitted) = admit(&[Handler::MutatePod], "", "v1", "pods", &pod);
    assert!(v[0].allowed);
    assert_eq!(v[0].patch, None, "kruise: allowed, no patch");
    assert_eq!(admitted, pod);
}

#[test]
fn decode_errors_are_field_errors_and_missing_metadata_is_validations_business() {
    let cloneset = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "metadata": {"name": "c"},
        "spec": {"replicas": "ten"}});
    let (v, _) = admit(&[Handler::MutateCloneSet], "apps.kruise.io", "v1alpha1", "clonesets", &cloneset);
    assert_eq!((v[0].allowed, v[0].code), (false, 400));
    assert_eq!(v[0].message, "cannot decode CloneSet: spec.replicas: Invalid value: \"ten\": must be an integer");
    let no_metadata = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "spec": {"selector": {"matchLabels": {"app": "c"}},
            "template": {"metadata": {"labels": {"app": "c"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}});
    let (v, _) = admit(
        &[Handler::MutateCloneSet, Handler::ValidateCloneSet],
        "apps.kruise.io",
        "v1alpha1",
        "clonesets",
        &no_metadata,
    );
    assert!(v[0].allowed, "the mutating webhook defaults it: {v:?}");
    assert!(!v[1].allowed);
    assert!(
        v[1].message.contains("metadata.name: Required value: name or generateName is required"),
        "{}",
        v[1].message
    );
}

fn kruise(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kruise")).args(args).output().unwrap()
}

fn json_report(args: &[&str]) -> (Option<i32>, Value) {
    let out = kruise(&[args, &["-o", "json"]].concat());
    (out.status.code(), serde_json::from_slice(&out.stdout).unwrap())
}

fn result<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["object"]["name"] == name)
        .unwrap_or_else(|| panic!("{name}"))
}

#[test]
fn check_reports_the_line_each_object_starts_on() {
    let file = fixtures().join("real-world/lines.yaml");
    let (code, report) = json_report(&["check", "-f", file.to_str().unwrap()]);
    assert_eq!(code, Some(0));
    let lines: Vec<(String, u64)> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["object"]["name"].as_str().unwrap().to_string(), r["line"].as_u64().unwrap()))
        .collect();
    let want = [("web", 5), ("web-config", 28), ("first", 39), ("second", 44)];
    assert_eq!(lines, want.map(|(n, l)| (n.to_string(), l)).to_vec());
    let text = std::fs::read_to_string(&file).unwrap();
    for (name, line) in want {
        let at = text.lines().nth(line as usize - 1).unwrap();
        assert!(at.contains("apiVersion") || at.contains("- apiVersion"), "{name}: line {line} is {at:?}");
    }
}

#[test]
fn check_admits_nulls_and_reads_yaml_1_1_as_kubectl() {
    let dir = fixtures().join("real-world");
    let out_dir = tempfile::tempdir().unwrap();
    let args = ["check", "-f", dir.to_str().unwrap(), "--mutated-out", out_dir.path().to_str().unwrap()];
    let (code, report) = json_report(&args);
    assert_eq!(code, Some(1), "yaml11-bool is denied: {report:#}");
    for name in ["nulls", "nulls-db", "nulls-sidecar", "yaml11"] {
        assert_eq!(result(&report, name)["allowed"], true, "{name}: {:#}", result(&report, name));
    }
    let denied = result(&report, "yaml11-bool");
    assert_eq!(denied["code"], 400);
    assert!(
        denied["message"]
            .as_str()
            .unwrap()
            .ends_with("metadata.annotations[enabled]: Invalid value: true: must be a string"),
        "{denied}"
    );
    let written: Value = yaml(&std::fs::read_to_string(out_dir.path().join("cloneset-default-yaml11.yaml")).unwrap());
    let volumes = &written["spec"]["template"]["spec"]["volumes"];
    assert_eq!(volumes[0]["configMap"]["defaultMode"], 420, "0644");
    assert_eq!(volumes[1]["secret"]["defaultMode"], 384, "0o600");
    assert_eq!(written["spec"]["selector"]["matchLabels"], json!({"app": "yaml11", "tier": "front"}), "<<: *labels");
    assert_eq!(written["spec"]["template"]["metadata"]["labels"]["extra"], "yes");
}

#[test]
fn check_on_a_mixed_folder_reports_everything() {
    let dir = fixtures().join("mixed");
    let d = dir.to_str().unwrap();
    let (code, report) = json_report(&["check", "-f", d]);
    assert_eq!(code, Some(2), "an unreadable document: exit 2 at the end");
    // Every other object was checked.
    assert_eq!(result(&report, "app")["result"], "mutated");
    assert_eq!(result(&report, "fine-before")["result"], "skipped");
    let unreadable = report["unreadable"].as_array().unwrap();
    assert_eq!(unreadable.len(), 1);
    assert!(unreadable[0]["file"].as_str().unwrap().ends_with("broken.yaml"));
    assert_eq!(unreadable[0]["line"], 11);
    // The duplicate SidecarSets: both checked, the later warned with both places.
    let sets: Vec<&Value> =
        report["results"].as_array().unwrap().iter().filter(|r| r["object"]["name"] == "test-sidecarset").collect();
    assert_eq!(sets.len(), 2);
    let warning = sets[1]["warnings"][0].as_str().unwrap();
    assert!(warning.contains("sidecars-a.yaml:1") && warning.contains("sidecars-b.yaml:2"), "{warning}");
    // A v1beta1 CloneSet is checked (issue 15); an EphemeralJob (no webhook of this build
    // serves it; ImagePullJobs are checked since issue 29) is unchecked, with a warning and no
    // verdict.
    assert_eq!(result(&report, "next")["result"], "mutated");
    let r = result(&report, "prefetch");
    assert_eq!(r["result"], "unchecked", "{r}");
    assert!(r.get("allowed").is_none() && r.get("code").is_none(), "{r}");
    assert!(r["warnings"][0].as_str().unwrap().starts_with("unchecked: "), "{r}");
    // Skipped objects have no verdict either.
    assert!(result(&report, "fine-before").get("allowed").is_none());
    // generateName: admitted, and the validating webhook saw a name.
    let batch = report["results"].as_array().unwrap().iter().find(|r| r["object"]["generateName"] == "batch-").unwrap();
    assert_eq!(batch["result"], "mutated", "{batch}");
    assert_eq!(
        report["summary"],
        json!({"objects": 7, "admitted": 5, "mutated": 5, "denied": 0, "skipped": 1, "unchecked": 1, "errors": 0,
            "unreadable": 1, "warnings": 2})
    );

    let text = String::from_utf8(kruise(&["check", "-f", d]).stdout).unwrap();
    assert!(text.contains("CloneSet default/batch- (CREATE): mutated"), "{text}");
    assert!(text.contains("CloneSet default/next (CREATE): mutated"), "{text}");
    assert!(text.contains("broken.yaml:11: unreadable, not checked: "), "{text}");
    assert!(
        text.ends_with(
            "7 objects: 5 admitted (5 mutated), 0 denied, 1 skipped, 0 errors, 1 UNCHECKED, 1 unreadable inputs\n"
        ),
        "{text}"
    );

    let xml = String::from_utf8(kruise(&["check", "-f", d, "-o", "junit"]).stdout).unwrap();
    assert!(xml.contains("name=\"SidecarSet test-sidecarset (CREATE)\""), "{xml}");
    assert!(!xml.contains(") line "), "JUnit names carry no line: {xml}");
    assert!(xml.contains("<error message=\"unclosed bracket"), "{xml}");

    // Without the broken file, unchecked objects and duplicates are warnings: --warn-exit-code applies.
    let clean = tempfile::tempdir().unwrap();
    for f in ["app.yaml", "sidecars-a.yaml", "sidecars-b.yaml", "v1beta1.yaml"] {
        std::fs::copy(dir.join(f), clean.path().join(f)).unwrap();
    }
    let c = clean.path().to_str().unwrap();
    assert_eq!(kruise(&["check", "-f", c]).status.code(), Some(0));
    assert_eq!(kruise(&["check", "-f", c, "--warn-exit-code", "4"]).status.code(), Some(4));
}

#[test]
fn kruise_registered_feature_gate_names_are_accepted() {
    let file = fixtures().join("real-world/lines.yaml");
    let out = kruise(&[
        "check",
        "-f",
        file.to_str().unwrap(),
        "--feature-gates",
        "EnhancedLivenessProbe=true,ForceDeleteTimeoutExpectationGate=true",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let out = kruise(&["check", "-f", file.to_str().unwrap(), "--feature-gates", "NoSuchGate=true"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unrecognized feature gate: NoSuchGate"));
}

fn sidecarset_with_policy(expr: Value) -> Value {
    json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet", "metadata": {"name": "logging"},
        "spec": {"selector": {"matchLabels": {"app": "shop"}},
            "containers": [{"name": "log-agent", "image": "fluent-bit:3",
                "resourcesPolicy": {"targetContainersMode": "sum", "targetContainersNameRegex": "^shop",
                    "resourcesExpr": expr}}]}})
}

/// spec §4.10: the sidecar's resources are computed from the matched pod containers at injection,
/// and an expression that does not parse is refused by the SidecarSet validating webhook.
#[test]
fn resources_policy_is_validated_and_applied_at_injection() {
    let expr = json!({"limits": {"cpu": "max(cpu*50%, 50m)", "memory": "200Mi"},
                      "requests": {"cpu": "max(cpu*25%, 50m)", "memory": "memory / 4"}});
    let (v, set) = admit(
        &[Handler::MutateSidecarSet, Handler::ValidateSidecarSet],
        "apps.kruise.io",
        "v1alpha1",
        "sidecarsets",
        &sidecarset_with_policy(expr),
    );
    assert!(v.iter().all(|v| v.allowed), "{v:?}");
    let mut view = kruise::cluster::files::Snapshot::default();
    view.insert(set).unwrap();
    let ctx = Context::with_gates(FeatureGates::default(), Arc::new(view));
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "shop-0", "namespace": "default", "labels": {"app": "shop"}},
        "spec": {"containers": [
            {"name": "shop", "image": "shop:1", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "512Mi"}}},
            {"name": "shop-cache", "image": "redis:7", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "512Mi"}}},
            {"name": "metrics", "image": "exporter:1"}]}});
    let r = decode(&review("", "v1", "pods", "Pod", &pod)).unwrap();
    let verdict = handle(&ctx, Handler::MutatePod, &r).unwrap();
    let mut injected = pod.clone();
    json_patch::patch(&mut injected, verdict.patch.as_ref().unwrap()).unwrap();
    let sidecar = injected["spec"]["containers"].as_array().unwrap().iter().find(|c| c["name"] == "log-agent").unwrap();
    // Targets shop and shop-cache: limits cpu 2 → 1, memory 200Mi; requests cpu 1 → 250m, memory 1Gi / 4.
    assert_eq!(
        sidecar["resources"],
        json!({"limits": {"cpu": "1", "memory": "200Mi"}, "requests": {"cpu": "250m", "memory": "256Mi"}})
    );
    assert!(sidecar.get("resourcesPolicy").is_none(), "the policy is not a container field");

    // A pod without a matching container cannot be created (500, as kruise).
    let lonely = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default", "labels": {"app": "shop"}},
        "spec": {"containers": [{"name": "web", "image": "x"}]}});
    let r = decode(&review("", "v1", "pods", "Pod", &lonely)).unwrap();
    let verdict = handle(&ctx, Handler::MutatePod, &r).unwrap();
    assert_eq!((verdict.allowed, verdict.code), (false, 500));
    assert_eq!(verdict.message, "no containers match the regex pattern \"^shop\"");

    // Invalid expressions are refused with the field and kruise's calculator message.
    let (v, _) = admit(
        &[Handler::MutateSidecarSet, Handler::ValidateSidecarSet],
        "apps.kruise.io",
        "v1alpha1",
        "sidecarsets",
        &sidecarset_with_policy(json!({"limits": {"cpu": "cpu *"}, "requests": {"memory": "memory - 2"}})),
    );
    assert!(!v[1].allowed);
    assert!(v[1].message.contains("resourcesExpr.limits.cpu: Invalid value: \"cpu *\": invalid expression: parse error: syntax error at line 1, col 6"), "{}", v[1].message);
    assert!(v[1].message.contains("resourcesExpr.requests.memory: Invalid value: \"memory - 2\": invalid expression: calculation result is negative: -1"), "{}", v[1].message);
}
