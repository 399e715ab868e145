//! Tables for the pre-download round (spec §7.2, §7.3). kruise has no unit tests for
//! `createImagePullJobsForInPlaceUpdate` or `utilfunction`; the rows follow the spec's rules one
//! by one, and the e2e case of kruise's `test/e2e/apps/v1alpha1/cloneset.go` ("pre-download for
//! new image") is the first row.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Container, EnvVar, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::json;

use super::*;
use crate::apis::keys::IMAGE_PREDOWNLOAD_PARALLELISM;
use crate::core::history::CONTROLLER_REVISION_HASH_LABEL;
use crate::core::inplace::classify;

fn template(containers: &[(&str, &str)], env: bool) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some([("app".to_string(), "web".to_string())].into()),
            ..Default::default()
        }),
        spec: Some(PodSpec {
            containers: containers
                .iter()
                .map(|(n, i)| Container {
                    name: n.to_string(),
                    image: Some(i.to_string()),
                    env: env.then(|| vec![EnvVar { name: "E".into(), value: Some("x".into()), ..Default::default() }]),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
    }
}

fn revision(name: &str, t: &PodTemplateSpec, labels: &[(&str, &str)]) -> ControllerRevision {
    let mut data = serde_json::to_value(t).unwrap_or_default();
    if let Some(m) = data.as_object_mut() {
        m.insert("$patch".into(), json!("replace"));
    }
    let mut all: BTreeMap<String, String> = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    all.insert(CONTROLLER_REVISION_HASH_LABEL.into(), name.rsplit('-').next().unwrap_or("").into());
    ControllerRevision {
        metadata: ObjectMeta { name: Some(name.into()), labels: Some(all), ..Default::default() },
        data: Some(RawExtension(json!({"spec": {"template": data}}))),
        revision: 1,
    }
}

fn owner() -> Owner {
    Owner {
        api_version: "apps.kruise.io/v1alpha1",
        kind: "CloneSet",
        name: "web".into(),
        namespace: "ns".into(),
        uid: "uid-1".into(),
    }
}

fn cloneset_strategy(type_: &str, partition: Option<IntOrString>, max: Option<IntOrString>) -> Strategy {
    Strategy::CloneSet { type_: type_.into(), partition, max_unavailable: max, gates: classify::Gates::default() }
}

fn sts_strategy(type_: &str, rolling: Option<(Option<i32>, Option<IntOrString>, &str)>) -> Strategy {
    Strategy::StatefulSet {
        type_: type_.into(),
        rolling: rolling.map(|(p, m, policy)| (p, m, policy.to_string())),
        gates: classify::Gates::default(),
    }
}

/// One row: how the workload and revisions differ from the base case, and what the round does.
struct Row {
    name: &'static str,
    replicas: i32,
    annotations: &'static [(&'static str, &'static str)],
    strategy: Strategy,
    updated_ready: i32,
    status_update_revision: &'static str,
    new_containers: &'static [(&'static str, &'static str)],
    new_env: bool,
    update_labels: &'static [(&'static str, &'static str)],
    same_revision: bool,
    /// (job name, image, parallelism) of the jobs created.
    jobs: &'static [(&'static str, &'static str, i32)],
    label: Option<&'static str>,
    delete: bool,
    error: bool,
}

fn base(name: &'static str) -> Row {
    Row {
        name,
        replicas: 5,
        annotations: &[],
        strategy: cloneset_strategy("InPlaceIfPossible", Some(IntOrString::Int(3)), None),
        updated_ready: 0,
        status_update_revision: "web-new",
        new_containers: &[("main", "nginx:2")],
        new_env: false,
        update_labels: &[],
        same_revision: false,
        jobs: &[("web-new-main", "nginx:2", 1)],
        label: Some(CREATED),
        delete: false,
        error: false,
    }
}

const NONE: &[(&str, &str, i32)] = &[];
const MIN_READY: &str = "apps.kruise.io/image-predownload-min-updated-ready-pods";

#[test]
fn rounds() {
    let int = IntOrString::Int;
    let s = |v: &str| IntOrString::String(v.into());
    let rows = vec![
        Row {
            annotations: &[(IMAGE_PREDOWNLOAD_PARALLELISM, "2")],
            strategy: cloneset_strategy("InPlaceIfPossible", Some(int(1)), None),
            jobs: &[("web-new-main", "nginx:2", 2)],
            ..base("kruise e2e: 5 replicas, InPlaceIfPossible, partition 1, parallelism 2")
        },
        base("partition 3 of 5, no annotations: one job, parallelism 1"),
        Row { same_revision: true, jobs: NONE, label: None, delete: true, ..base("rollout complete: delete") },
        Row {
            annotations: &[(MIN_READY, "2")],
            updated_ready: 1,
            jobs: NONE,
            label: None,
            ..base("canary 2, 1 updated ready: wait")
        },
        Row { annotations: &[(MIN_READY, "2")], updated_ready: 2, ..base("canary 2, 2 updated ready: create") },
        Row {
            annotations: &[(MIN_READY, "2")],
            updated_ready: 5,
            status_update_revision: "web-older",
            jobs: NONE,
            label: None,
            ..base("canary 2, the status counts another revision: 0 ready")
        },
        Row {
            annotations: &[(MIN_READY, "50%")],
            updated_ready: 2,
            jobs: NONE,
            label: None,
            ..base("canary 50% of 5 rounds up to 3: 2 is not enough")
        },
        Row { annotations: &[(MIN_READY, "50%")], updated_ready: 3, ..base("canary 50% of 5, 3 ready") },
        Row { annotations: &[(MIN_READY, "abc")], error: true, ..base("canary unparsable: 0, with an error") },
        Row { annotations: &[(MIN_READY, "12.5%")], error: true, ..base("canary 12.5%: not an integer percent, 0") },
        Row { annotations: &[(MIN_READY, "0")], ..base("canary 0") },
        Row {
            update_labels: &[(CREATED, "true")],
            jobs: NONE,
            label: None,
            ..base("revision already labelled created")
        },
        Row {
            update_labels: &[(IGNORED, "true")],
            jobs: NONE,
            label: None,
            ..base("revision already labelled ignored")
        },
        Row { update_labels: &[(CREATED, "false")], jobs: NONE, label: None, ..base("any value of the label counts") },
        Row {
            strategy: cloneset_strategy("ReCreate", Some(int(3)), None),
            jobs: NONE,
            label: Some(IGNORED),
            ..base("CloneSet ReCreate: ignored")
        },
        Row { strategy: cloneset_strategy("InPlaceOnly", Some(int(3)), None), ..base("CloneSet InPlaceOnly: created") },
        Row { replicas: 3, jobs: NONE, label: Some(IGNORED), ..base("3 replicas: ignored") },
        Row { replicas: 4, ..base("4 replicas: created") },
        Row {
            strategy: cloneset_strategy("InPlaceIfPossible", None, Some(s("100%"))),
            jobs: NONE,
            label: Some(IGNORED),
            ..base("partition 0, maxUnavailable 100%: one batch, ignored")
        },
        Row {
            strategy: cloneset_strategy("InPlaceIfPossible", None, Some(int(5))),
            jobs: NONE,
            label: Some(IGNORED),
            ..base("partition 0, maxUnavailable 5 of 5: ignored")
        },
        Row {
            strategy: cloneset_strategy("InPlaceIfPossible", None, Some(int(4))),
            ..base("partition 0, maxUnavailable 4 of 5: created")
        },
        Row {
            strategy: cloneset_strategy("InPlaceIfPossible", None, None),
            ..base("partition 0, default maxUnavailable 20%: created")
        },
        Row {
            strategy: cloneset_strategy("InPlaceIfPossible", Some(s("100%")), Some(s("100%"))),
            ..base("partition 100% with maxUnavailable 100%: not one batch")
        },
        Row {
            strategy: cloneset_strategy("InPlaceIfPossible", Some(s("abc")), None),
            jobs: NONE,
            label: None,
            error: true,
            ..base("partition unusable: error, nothing labelled")
        },
        Row { new_env: true, jobs: NONE, label: Some(IGNORED), ..base("env changed too: not in place, ignored") },
        Row {
            new_containers: &[("main", "nginx:1")],
            jobs: NONE,
            label: Some(CREATED),
            ..base("no image changed (metadata only): labelled created, no jobs")
        },
        Row {
            strategy: sts_strategy("RollingUpdate", Some((Some(3), Some(int(1)), "InPlaceIfPossible"))),
            ..base("ASTS InPlaceIfPossible partition 3: created")
        },
        Row {
            strategy: sts_strategy("OnDelete", Some((None, None, "InPlaceIfPossible"))),
            jobs: NONE,
            label: Some(IGNORED),
            ..base("ASTS OnDelete: ignored")
        },
        Row {
            strategy: sts_strategy("RollingUpdate", None),
            jobs: NONE,
            label: Some(IGNORED),
            ..base("ASTS without rollingUpdate: ignored")
        },
        Row {
            strategy: sts_strategy("RollingUpdate", Some((Some(3), None, "ReCreate"))),
            jobs: NONE,
            label: Some(IGNORED),
            ..base("ASTS podUpdatePolicy ReCreate: ignored")
        },
        Row {
            strategy: sts_strategy("RollingUpdate", Some((Some(0), Some(int(5)), "InPlaceIfPossible"))),
            jobs: NONE,
            label: Some(IGNORED),
            ..base("ASTS partition 0 maxUnavailable 5 of 5: ignored")
        },
        Row {
            strategy: sts_strategy("RollingUpdate", Some((None, None, "InPlaceIfPossible"))),
            ..base("ASTS partition 0, maxUnavailable default \"1\" (1% of 5 = 0): created")
        },
        Row {
            strategy: sts_strategy("RollingUpdate", Some((Some(0), Some(int(1)), "InPlaceIfPossible"))),
            replicas: 3,
            jobs: NONE,
            label: Some(IGNORED),
            ..base("ASTS 3 replicas: ignored")
        },
    ];
    for row in rows {
        let old_t = template(&[("main", "nginx:1")], false);
        let new_t = template(row.new_containers, row.new_env);
        let current = revision("web-old", &old_t, &[]);
        let update = if row.same_revision { current.clone() } else { revision("web-new", &new_t, row.update_labels) };
        let annotations = row.annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let selector =
            LabelSelector { match_labels: Some([("app".to_string(), "web".to_string())].into()), ..Default::default() };
        let w = Workload {
            owner: owner(),
            annotations,
            replicas: row.replicas,
            selector: Some(&selector),
            template: &new_t,
            updated_ready_replicas: row.updated_ready,
            status_update_revision: row.status_update_revision,
            strategy: row.strategy.clone(),
        };
        let p = plan(&w, &current, &update);
        let got: Vec<(String, String, Option<IntOrString>)> = p
            .create
            .iter()
            .map(|j| (j.metadata.name.clone().unwrap_or_default(), j.spec.image.clone(), j.spec.parallelism.clone()))
            .collect();
        let want: Vec<(String, String, Option<IntOrString>)> =
            row.jobs.iter().map(|(n, i, p)| (n.to_string(), i.to_string(), Some(IntOrString::Int(*p)))).collect();
        assert_eq!(got, want, "{}: {}", row.name, p.reason);
        assert_eq!(p.label_revision.as_ref().map(|(_, k)| *k), row.label, "{}: {}", row.name, p.reason);
        if let Some((name, _)) = &p.label_revision {
            assert_eq!(name, "web-new", "{}", row.name);
        }
        assert_eq!(p.delete_owned, row.delete, "{}", row.name);
        assert_eq!(!p.errors.is_empty(), row.error, "{}: {:?}", row.name, p.errors);
    }
}

/// Two changed containers and a new one: one job each, in container-name order.
#[test]
fn one_job_per_changed_container() {
    let old_t = template(&[("main", "nginx:1"), ("side", "busybox:1"), ("same", "redis:7")], false);
    let new_t =
        template(&[("main", "nginx:2"), ("side", "busybox:2"), ("same", "redis:7"), ("extra", "envoy:1")], false);
    let (current, update) = (revision("web-old", &old_t, &[]), revision("web-new", &new_t, &[]));
    let w = Workload {
        owner: owner(),
        annotations: BTreeMap::new(),
        replicas: 5,
        selector: None,
        template: &new_t,
        updated_ready_replicas: 0,
        status_update_revision: "",
        strategy: cloneset_strategy("InPlaceIfPossible", Some(IntOrString::Int(3)), None),
    };
    // Adding a container cannot be done in place: the revision is ignored.
    assert_eq!(plan(&w, &current, &update).label_revision.map(|(_, k)| k), Some(IGNORED));
    let new_t = template(&[("main", "nginx:2"), ("side", "busybox:2"), ("same", "redis:7")], false);
    let update = revision("web-new", &new_t, &[]);
    let w = Workload { template: &new_t, ..w };
    let names: Vec<String> =
        plan(&w, &current, &update).create.iter().filter_map(|j| j.metadata.name.clone()).collect();
    assert_eq!(names, ["web-new-main", "web-new-side"]);
}

/// `DeleteJobsForWorkload`: only jobs whose controller reference is the workload.
#[test]
fn jobs_to_delete_rows() {
    let job = |name: &str, refs: Vec<OwnerReference>| {
        let mut j = ImagePullJob::new(name, Default::default());
        j.metadata.owner_references = Some(refs);
        j
    };
    let r = |uid: &str, controller: Option<bool>| OwnerReference { uid: uid.into(), controller, ..Default::default() };
    let jobs = [
        job("mine", vec![r("uid-1", Some(true))]),
        job("not-controller", vec![r("uid-1", None)]),
        job("other", vec![r("uid-2", Some(true))]),
        job("mine-second-ref", vec![r("uid-9", Some(false)), r("uid-1", Some(true))]),
        job("none", vec![]),
    ];
    let refs: Vec<&ImagePullJob> = jobs.iter().collect();
    let names: Vec<&str> = jobs_to_delete(&refs, "uid-1").iter().filter_map(|j| j.metadata.name.as_deref()).collect();
    assert_eq!(names, ["mine", "mine-second-ref"]);
}

#[test]
fn enablement() {
    use crate::core::features::FeatureGates;
    let on = FeatureGates::default().with(Gate::PreDownloadImageForInPlaceUpdate, true);
    assert!(enabled(&on, true));
    assert!(!enabled(&on, false), "ImagePullJob not served");
    assert!(!enabled(&FeatureGates::default(), true), "gate off by default");
    let no_daemon = on.clone().with(Gate::KruiseDaemon, false);
    assert!(!enabled(&no_daemon, true), "KruiseDaemon off forces it off");
}

#[test]
fn threshold_rows() {
    for (value, replicas, want, err) in [
        (None, 5, 0, false),
        (Some("2"), 5, 2, false),
        (Some("50%"), 5, 3, false),
        (Some("100%"), 5, 5, false),
        (Some("10%"), 5, 1, false),
        (Some("abc"), 5, 0, true),
        (Some("12.5%"), 5, 0, true),
        (Some("-1"), 5, -1, false),
    ] {
        let a: BTreeMap<String, String> = value.map(|v| (MIN_READY.to_string(), v.to_string())).into_iter().collect();
        let (n, e) = threshold(&a, replicas);
        assert_eq!((n, e.is_some()), (want, err), "{value:?}");
    }
}
