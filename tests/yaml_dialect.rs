//! kruise reads manifests as kubectl does (issue 14 item 2): every case of
//! `tests/fixtures/yaml/cases.json` is read by `compat::yaml::documents` and compared with what
//! kubectl's decoder made of it, recorded in `kubectl.json` by the Go program in
//! `tests/fixtures/yaml/oracle/` (`k8s.io/apimachinery`'s YAMLOrJSONDecoder over sigs.k8s.io/yaml
//! and go-yaml v2). kubectl stops at the first broken document while kruise reports each one, so
//! for a case kubectl refuses, kruise must refuse it too and agree on the documents before it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use kruise::compat::yaml::documents;
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
struct Case {
    name: String,
    input: String,
    documents: Vec<Value>,
    #[serde(default)]
    error: Option<String>,
}

fn cases() -> Vec<Case> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/yaml");
    let inputs: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).unwrap()).unwrap();
    let cases: Vec<Case> = serde_json::from_str(&std::fs::read_to_string(dir.join("kubectl.json")).unwrap()).unwrap();
    // The record is of the current inputs (regenerate it with the oracle after editing cases.json).
    assert_eq!(inputs.len(), cases.len(), "kubectl.json is stale");
    for (i, c) in inputs.iter().zip(&cases) {
        assert_eq!(i["input"].as_str(), Some(c.input.as_str()), "kubectl.json is stale at {}", c.name);
    }
    cases
}

#[test]
fn every_case_reads_as_kubectl_reads_it() {
    let cases = cases();
    assert!(cases.len() > 150);
    let mut failures = Vec::new();
    for c in &cases {
        let ours = documents(&c.input);
        let first_error = ours.iter().position(Result::is_err);
        let ok: Vec<&Value> = ours.iter().take(first_error.unwrap_or(ours.len())).flatten().map(|d| &d.value).collect();
        let want: Vec<&Value> = c.documents.iter().collect();
        let agrees = match &c.error {
            None => first_error.is_none() && ok == want,
            Some(_) => first_error.is_some() && ok.len() >= want.len() && ok[..want.len()] == want[..],
        };
        if !agrees {
            failures.push(format!(
                "{}: kubectl {:?} / {:?}; kruise {:?}",
                c.name,
                c.documents,
                c.error,
                ours.iter().map(|d| d.as_ref().map(|d| &d.value)).collect::<Vec<_>>()
            ));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases differ:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

/// Whole floats as integers: YAML cannot say `2.0` so that sigs.k8s.io/yaml keeps it (it writes
/// every whole float as an integer), so a JSON `2.0` reads back as `2`.
fn whole_floats_as_integers(v: &Value) -> Value {
    match v {
        Value::Number(n) if n.is_f64() => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Value::from(f as i64),
            _ => v.clone(),
        },
        Value::Array(a) => Value::Array(a.iter().map(whole_floats_as_integers).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), whole_floats_as_integers(v))).collect()),
        _ => v.clone(),
    }
}

/// What `kruise check --mutated-out` writes reads back, through kubectl's dialect, as the object it
/// wrote: every document of the cases, emitted and read again.
#[test]
fn emitted_yaml_reads_back_as_the_same_documents() {
    let mut n = 0;
    for c in cases() {
        for d in &c.documents {
            let text = kruise::compat::yaml::emit::to_yaml(d);
            let back = documents(&text);
            assert_eq!(back.len(), 1, "{}: {text}", c.name);
            let back = back[0].as_ref().map(|d| whole_floats_as_integers(&d.value));
            assert_eq!(back, Ok(whole_floats_as_integers(d)), "{}: {text}", c.name);
            n += 1;
        }
    }
    assert!(n > 100);
}
