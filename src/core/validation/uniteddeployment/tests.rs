//! kruise's `uniteddeployment_validation_test.go` (v1.9.0) row by row — success cases valid,
//! error cases failing only at the fields kruise's test allows — plus the exact messages.

use super::*;
use crate::compat::field::aggregate;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Value, json};

fn pod_template() -> Value {
    json!({"metadata": {"labels": {"a": "b"}}, "spec": {"restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
        "containers": [{"name": "abc", "image": "image", "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File"}]}})
}

/// A pod template without labels (kruise's error rows).
fn unlabelled_template() -> Value {
    json!({"metadata": {}, "spec": {"restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
        "containers": [{"name": "abc", "image": "image", "imagePullPolicy": "IfNotPresent"}]}})
}

fn labelled(kind: &str) -> Value {
    json!({kind: {"metadata": {"labels": {"a": "b"}}, "spec": {"template": pod_template()}}})
}

/// A UnitedDeployment `abc` in `default` with `setTestDefault` (revisionHistoryLimit 10).
fn ud(spec: Value) -> UnitedDeployment {
    let mut spec = spec;
    spec["revisionHistoryLimit"] = json!(10);
    let mut u = UnitedDeployment::new("abc", serde_json::from_value(spec).unwrap());
    u.metadata.namespace = Some("default".into());
    u
}

fn base(template: Value, subsets: Value) -> Value {
    json!({"replicas": 10, "selector": {"matchLabels": {"a": "b"}}, "template": template, "topology": {"subsets": subsets}})
}

fn gates() -> FeatureGates {
    FeatureGates::default()
}

/// kruise `TestValidateUnitedDeployment`, success cases.
#[test]
fn kruise_success_cases() {
    let sts = labelled("statefulSetTemplate");
    let mut no_replicas =
        base(sts.clone(), json!([{"name": "subset1", "replicas": 1}, {"name": "subset2", "replicas": 1}]));
    no_replicas.as_object_mut().unwrap().remove("replicas");
    let mut no_topology = base(sts.clone(), json!([]));
    no_topology.as_object_mut().unwrap().remove("topology");
    let mut deployment = base(labelled("deploymentTemplate"), json!([]));
    deployment.as_object_mut().unwrap().remove("topology");
    let cases = [
        no_replicas,
        no_topology,
        base(sts.clone(), json!([{"name": "subset"}])),
        base(sts.clone(), json!([{"name": "subset1", "replicas": 1}, {"name": "subset2"}])),
        base(sts.clone(), json!([{"name": "subset1", "replicas": 1}, {"name": "subset2", "replicas": "90%"}])),
        base(sts, json!([{"name": "subset1", "replicas": "71%"}, {"name": "subset2", "replicas": "29%"}])),
        deployment,
    ];
    for (i, c) in cases.into_iter().enumerate() {
        let errs = validate(&ud(c), &gates());
        assert!(errs.is_empty(), "success case {i}: {}", aggregate(&errs));
    }
}

/// The fields kruise's error-case test accepts.
fn allowed(path: &str) -> bool {
    path.starts_with("spec.template")
        || [
            "spec.selector",
            "spec.topology.subsets",
            "spec.topology.subsets[0]",
            "spec.topology.subsets[0].name",
            "spec.topology.subsets[0].replicas",
            "spec.topology.scheduleStrategy",
            "spec.updateStrategy.partitions",
            "spec.topology.subsets[0].nodeSelectorTerm.matchExpressions[0].values",
        ]
        .contains(&path)
}

/// kruise `TestValidateUnitedDeployment`, error cases, each with the message we expect.
#[test]
fn kruise_error_cases() {
    let sts = labelled("statefulSetTemplate");
    let no_label_sts = json!({"statefulSetTemplate": {"spec": {"template": unlabelled_template()}}});
    let no_label_dep = json!({"deploymentTemplate": {"spec": {"template": unlabelled_template()}}});
    let mut percent_without_replicas =
        base(sts.clone(), json!([{"name": "subset1", "replicas": "90%"}, {"name": "subset2", "replicas": 1}]));
    percent_without_replicas.as_object_mut().unwrap().remove("replicas");
    let mut partition =
        base(sts.clone(), json!([{"name": "subset1", "replicas": "71%"}, {"name": "subset2", "replicas": "90%"}]));
    partition["updateStrategy"] = json!({"manualUpdate": {"partitions": {"notExist": 1}}});
    let sts_and_asts = json!({
        "statefulSetTemplate": {"metadata": {"labels": {"a": "b"}}, "spec": {"template": pod_template()}},
        "advancedStatefulSetTemplate": {"metadata": {"labels": {"a": "b"}}, "spec": {"template": pod_template()}}});
    let mut triple = sts_and_asts.clone();
    triple["deploymentTemplate"] = json!({"metadata": {"labels": {"a": "b"}}, "spec": {"template": pod_template()}});
    let sts_and_dep = json!({
        "statefulSetTemplate": {"metadata": {"labels": {"a": "b"}}, "spec": {"template": pod_template()}},
        "deploymentTemplate": {"metadata": {"labels": {"a": "b"}}, "spec": {"template": pod_template()}}});
    let labelled_pods = json!({"metadata": {"labels": {"a": "b"}}, "spec": {"restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
        "containers": [{"name": "abc", "image": "image", "imagePullPolicy": "IfNotPresent"}]}});
    let mut adaptive = base(
        json!({"deploymentTemplate": {"spec": {"template": labelled_pods.clone()}}}),
        json!([{"name": "subset-1", "replicas": 1}]),
    );
    adaptive["topology"]["scheduleStrategy"] = json!({"type": "Adaptive"});
    let mut reserved = base(
        json!({"statefulSetTemplate": {"spec": {"template": labelled_pods}}}),
        json!([{"name": "subset-1", "replicas": 1}]),
    );
    reserved["topology"]["scheduleStrategy"] =
        json!({"type": "Adaptive", "adaptive": {"reserveUnschedulablePods": true}});
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "no pod template label",
            base(no_label_sts, json!([])),
            "spec.template.statefulSetTemplate.metadata.labels: Invalid value: null: `selector` does not match template `labels`",
        ),
        (
            "deployment no pod template label",
            base(no_label_dep, json!([])),
            "spec.template.deploymentTemplate.spec.template.metadata.labels: Invalid value: null: `selector` does not match template `labels`",
        ),
        (
            "no subset template",
            base(json!({}), json!([])),
            "spec.template: Required value: should provide one of statefulSetTemplate, advancedStatefulSetTemplate, cloneSetTemplate, or deploymentTemplate",
        ),
        ("no subset name", base(sts.clone(), json!([{}])), "spec.topology.subsets[0].name: Required value"),
        (
            "invalid subset nodeSelectorTerm",
            base(
                sts.clone(),
                json!([{"name": "subset", "nodeSelectorTerm": {"matchExpressions": [{"key": "key", "operator": "Exists", "values": ["unexpected"]}]}}]),
            ),
            "spec.topology.subsets[0].nodeSelectorTerm.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        ),
        (
            "subset replicas is not enough",
            base(sts.clone(), json!([{"name": "subset1", "replicas": 1}])),
            "spec.topology.subsets: Invalid value: 1: if replicas of all subsets are provided, the sum of indicated subset replicas 1 should equal UnitedDeployment replicas 10",
        ),
        (
            "subset replicas is too small",
            base(sts.clone(), json!([{"name": "subset1", "replicas": 1}, {"name": "subset2", "replicas": "71%"}])),
            "the sum of indicated subset replicas 8 should equal UnitedDeployment replicas 10",
        ),
        (
            "subset replicas is too much",
            base(sts.clone(), json!([{"name": "subset1", "replicas": "71%"}, {"name": "subset2", "replicas": "90%"}])),
            "spec.topology.subsets: Invalid value: 16: sum of indicated subset replicas 16 should not be greater than UnitedDeployment replicas 10",
        ),
        (
            "deployment subset replicas is too much",
            base(
                labelled("deploymentTemplate"),
                json!([{"name": "subset1", "replicas": "71%"}, {"name": "subset2", "replicas": "90%"}]),
            ),
            "sum of indicated subset replicas 16 should not be greater than UnitedDeployment replicas 10",
        ),
        (
            "subset replicas type is percent when spec replicas not set",
            percent_without_replicas,
            "spec.topology.subsets[0].replicas: Invalid value: \"90%\": subsetReplicas (90%) should not be string when unitedDeployment replicas is empty",
        ),
        (
            "partition not exist",
            partition,
            "spec.updateStrategy.partitions: Invalid value: {\"notExist\":1}: subset notExist does not exist",
        ),
        (
            "duplicated templates",
            base(sts_and_asts, json!([])),
            "should provide only one of statefulSetTemplate, advancedStatefulSetTemplate, cloneSetTemplate, or deploymentTemplate",
        ),
        ("triple duplicated templates", base(triple, json!([])), "should provide only one of"),
        ("deployment duplicated templates", base(sts_and_dep, json!([])), "should provide only one of"),
        (
            "deployment no pod template termination policy",
            base(
                json!({"deploymentTemplate": {"spec": {"template": {"metadata": {"labels": {"a": "b"}}, "spec": {"restartPolicy": "Always",
                "dnsPolicy": "ClusterFirst", "containers": [{"name": "abc", "image": "image", "imagePullPolicy": "IfNotPresent"}]}}}}}),
                json!([]),
            ),
            "spec.template.deploymentTemplate.metadata.labels: Invalid value: null: `selector` does not match template `labels`",
        ),
        (
            "use specific allocator in adaptive mode",
            adaptive,
            "spec.topology.subsets[0].replicas: Forbidden: specify replicas use minReplicas/maxReplicas to enable adaptive strategy",
        ),
        (
            "use stateful workloads with reserved rescheduling enabled",
            reserved,
            "only stateless workloads (Deployment and CloneSet) are supported by reserved rescheduling",
        ),
    ];
    for (name, spec, message) in cases {
        let errs = validate(&ud(spec), &gates());
        assert!(!errs.is_empty(), "expected failure for {name}");
        for e in &errs {
            assert!(allowed(&e.path), "{name}: missing prefix for: {e}");
        }
        let all = aggregate(&errs);
        assert!(all.contains(message), "{name}: {all}");
    }
}

fn subset(name: &str, values: &[&str]) -> Value {
    json!({"name": name, "nodeSelectorTerm": {"matchExpressions": [{"key": "domain", "operator": "In", "values": values}]}})
}

fn update_ud(template: Value, subsets: Value) -> UnitedDeployment {
    let mut u = ud(base(template, subsets));
    u.metadata = Default::default();
    u
}

/// kruise `TestValidateUnitedDeploymentUpdate` (kruise passes the old object as the new one; so
/// do we).
#[test]
fn kruise_update_cases() {
    let sts = labelled("statefulSetTemplate");
    let dep = labelled("deploymentTemplate");
    let success = [
        (
            update_ud(sts.clone(), json!([subset("subset-a", &["a"])])),
            update_ud(sts.clone(), json!([subset("subset-a", &["a"]), subset("subset-b", &["b"])])),
        ),
        (
            update_ud(sts.clone(), json!([subset("subset-a", &["a"]), subset("subset-b", &["b"])])),
            update_ud(sts.clone(), json!([subset("subset-a", &["a"])])),
        ),
        (
            update_ud(dep.clone(), json!([subset("subset-a", &["a"])])),
            update_ud(dep, json!([subset("subset-a", &["a"]), subset("subset-b", &["b"])])),
        ),
    ];
    for (i, (old, new)) in success.iter().enumerate() {
        let errs = validate_update_rules(old, new);
        assert!(errs.is_empty(), "success case {i}: {}", aggregate(&errs));
    }
    let old = update_ud(sts.clone(), json!([subset("subset-a", &["a", "b"])]));
    let new = update_ud(sts, json!([subset("subset-a", &["a"]), subset("subset-b", &["b"])]));
    let errs = validate_update_rules(&old, &new);
    assert_eq!(
        aggregate(&errs),
        "spec.topology.subsets[0].nodeSelectorTerm: Forbidden: may not be changed in an update"
    );
    // The same in the order the webhook calls it.
    let errs = validate_update_rules(&new, &old);
    assert_eq!(
        aggregate(&errs),
        "spec.topology.subsets[0].nodeSelectorTerm: Forbidden: may not be changed in an update"
    );
}

/// kruise `Test` (validateSubsetReplicas with min/max).
#[test]
fn kruise_min_max_replicas() {
    type Row = (&'static str, i32, [i32; 5], [i32; 5], bool);
    let rows: &[Row] = &[
        ("sum_all_min_replicas == replicas", 10, [2, 2, 2, 2, 2], [5, 5, 5, 5, -1], false),
        ("sum_all_min_replicas < replicas", 14, [2, 2, 2, 2, 2], [5, 5, 5, 5, -1], false),
        ("sum_all_min_replicas > replicas", 5, [2, 2, 2, 2, 2], [5, 5, 5, 5, -1], false),
        ("min_replicas > max_replicas", 5, [2, 2, 2, 6, 2], [5, 5, 5, 5, -1], true),
        ("all_max_replicas != nil", 5, [2, 2, 2, 2, 2], [5, 5, 5, 5, 5], true),
    ];
    for (name, replicas, mins, maxs, error) in rows {
        let subsets: Vec<Subset> = mins
            .iter()
            .zip(maxs)
            .enumerate()
            .map(|(i, (min, max))| Subset {
                name: format!("subset-{i}"),
                min_replicas: Some(IntOrString::Int(*min)),
                max_replicas: (*max != -1).then_some(IntOrString::Int(*max)),
                ..Default::default()
            })
            .collect();
        let errs = validate_subset_replicas(Some(*replicas), &subsets, "subset");
        assert_eq!(!errs.is_empty(), *error, "{name}: {}", aggregate(&errs));
    }
    let subsets = vec![
        Subset {
            name: "a".into(),
            min_replicas: Some(IntOrString::Int(6)),
            max_replicas: Some(IntOrString::Int(5)),
            ..Default::default()
        },
        Subset { name: "b".into(), ..Default::default() },
    ];
    assert_eq!(
        aggregate(&validate_subset_replicas(Some(5), &subsets, "subset")),
        "subset[0].minReplicas: Invalid value: 5: subset[0].minReplicas must be more than or equal to maxReplicas"
    );
    let mixed = vec![
        Subset { name: "a".into(), replicas: Some(IntOrString::Int(1)), ..Default::default() },
        Subset { name: "b".into(), max_replicas: Some(IntOrString::Int(1)), ..Default::default() },
    ];
    assert!(aggregate(&validate_subset_replicas(Some(5), &mixed, "subset")).contains(
        "subset.Replicas and subset.MinReplicas/subset.MaxReplicas are mutually exclusive in a UnitedDeployment"
    ));
    let capacity = vec![Subset { name: "a".into(), min_replicas: Some(IntOrString::Int(1)), ..Default::default() }];
    assert_eq!(
        aggregate(&validate_subset_replicas(None, &capacity, "subset")),
        "subset: Invalid value: -1: spec.replicas must be not empty if you set subset.minReplicas/maxReplicas"
    );
}

#[test]
fn subset_names_and_selector() {
    let sts = labelled("statefulSetTemplate");
    let errs = validate(&ud(base(sts.clone(), json!([{"name": "a"}, {"name": "a"}, {"name": "B_"}]))), &gates());
    let all = aggregate(&errs);
    assert!(all.contains("spec.topology.subsets[1].name: Invalid value: \"a\": duplicated subset name a"), "{all}");
    assert!(
        all.contains(
            "spec.topology.subsets[2].name: Invalid value: \"B_\": invalid subset name a lowercase RFC 1123 label"
        ),
        "{all}"
    );
    let mut s = base(sts.clone(), json!([]));
    s["selector"] = json!({});
    assert!(
        aggregate(&validate(&ud(s), &gates()))
            .contains("spec.selector: Invalid value: {}: empty selector is invalid for statefulset")
    );
    let mut s = base(sts, json!([]));
    s.as_object_mut().unwrap().remove("selector");
    let all = aggregate(&validate(&ud(s), &gates()));
    assert!(all.contains("spec.selector: Required value"), "{all}");
}

#[test]
fn template_rules() {
    let mut sts = labelled("statefulSetTemplate");
    sts["statefulSetTemplate"]["spec"]["replicas"] = json!(3);
    sts["statefulSetTemplate"]["spec"]["updateStrategy"] =
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 1}});
    let all = aggregate(&validate(&ud(base(sts, json!([]))), &gates()));
    assert!(all.contains("spec.template.statefulSetTemplate.spec.replicas: Invalid value: 3: replicas in statefulSetTemplate will not be used"), "{all}");
    assert!(all.contains("spec.template.statefulSetTemplate.spec.updateStrategy.rollingUpdate.partition: Invalid value: 1: partition in statefulSetTemplate will not be used"), "{all}");
    let mut dep = labelled("deploymentTemplate");
    dep["deploymentTemplate"]["spec"]["template"]["spec"]["restartPolicy"] = json!("Never");
    let all = aggregate(&validate(&ud(base(dep, json!([]))), &gates()));
    assert!(all.contains("spec.template.deploymentTemplate.spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\""), "{all}");
    // The CloneSet template is only counted, as in kruise.
    let cs = json!({"cloneSetTemplate": {"metadata": {"labels": {"x": "y"}}, "spec": {"template": {}}}});
    assert!(validate(&ud(base(cs, json!([]))), &gates()).is_empty());
}

#[test]
fn update_rules() {
    let sts = labelled("statefulSetTemplate");
    let old = update_ud(sts.clone(), json!([]));
    let mut changed = sts.clone();
    changed["statefulSetTemplate"]["spec"]["serviceName"] = json!("svc");
    let new = update_ud(changed, json!([]));
    assert_eq!(
        aggregate(&validate_update_rules(&new, &old)),
        "spec.template.statefulSetTemplate.spec: Forbidden: updates to statefulsetTemplate spec for fields other than 'template', and 'updateStrategy' are forbidden"
    );
    let mut image = sts;
    image["statefulSetTemplate"]["spec"]["template"]["spec"]["containers"][0]["image"] = json!("image:2");
    assert!(validate_update_rules(&update_ud(image, json!([])), &old).is_empty());
    let tol = |op: &str| json!([{"name": "a", "tolerations": [{"key": "k", "operator": op}]}]);
    let old = update_ud(labelled("cloneSetTemplate"), tol("Exists"));
    let new = update_ud(labelled("cloneSetTemplate"), tol("Equal"));
    assert_eq!(
        aggregate(&validate_update_rules(&new, &old)),
        "spec.topology.subsets[0].tolerations: Forbidden: may not be changed in an update"
    );
}

#[test]
fn node_selector_terms_and_tolerations() {
    let term: NodeSelectorTerm = serde_json::from_value(json!({
        "matchExpressions": [{"key": "k", "operator": "In"}, {"key": "k", "operator": "Gt", "values": ["1", "2"]},
                             {"key": "k", "operator": "Near"}],
        "matchFields": [{"key": "spec.nodeName", "operator": "In", "values": ["n1"]},
                        {"key": "metadata.name", "operator": "In", "values": ["N_1"]}]}))
    .unwrap();
    let all = aggregate(&validate_node_selector_term(&term, "t"));
    for want in [
        "t.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
        "t.matchExpressions[1].values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
        "t.matchExpressions[2].operator: Invalid value: \"Near\": not a valid selector operator",
        "t.matchFields[0].key: Invalid value: \"spec.nodeName\": not a valid field selector key",
        "t.matchFields[1].values[0]: Invalid value: \"N_1\": a lowercase RFC 1123 subdomain",
    ] {
        assert!(all.contains(want), "{want} in {all}");
    }
    let tolerations: Vec<Toleration> = serde_json::from_value(json!([
        {"operator": "Equal", "value": "v"},
        {"key": "k", "operator": "Exists", "value": "v"},
        {"key": "k", "operator": "Maybe"},
        {"key": "k", "effect": "NoSchedule", "tolerationSeconds": 5},
        {"key": "k", "effect": "Sometimes"},
    ]))
    .unwrap();
    let all = aggregate(&validate_tolerations(&tolerations, "t"));
    for want in [
        "t[0].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
        "t[1].operator: Invalid value: {\"key\":\"k\",\"operator\":\"Exists\",\"value\":\"v\"}: value must be empty when `operator` is 'Exists'",
        "t[2].operator: Unsupported value: \"Maybe\": supported values: \"Equal\", \"Exists\"",
        "t[3].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set",
        "t[4].effect: Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
    ] {
        assert!(all.contains(want), "{want} in {all}");
    }
}
