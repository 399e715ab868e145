//! Label and field selectors: the string syntax of `?labelSelector=` / `?fieldSelector=` and the
//! structured `metav1.LabelSelector` (matchLabels + matchExpressions) used by webhook
//! namespaceSelector/objectSelector and scale subresources.

use crate::meta;
use serde_json::Value;
use std::collections::BTreeMap;

/// One requirement on a label (or field) value.
#[derive(Debug, Clone, PartialEq)]
pub enum Requirement {
    /// `key=value` / `key in (a,b)`.
    In(String, Vec<String>),
    /// `key!=value` / `key notin (a,b)`: also true when the key is absent.
    NotIn(String, Vec<String>),
    /// `key`.
    Exists(String),
    /// `!key`.
    DoesNotExist(String),
}

impl Requirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Requirement::In(k, vs) => labels.get(k).is_some_and(|v| vs.contains(v)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|v| !vs.contains(v)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::DoesNotExist(k) => !labels.contains_key(k),
        }
    }
}

/// A conjunction of requirements; empty matches everything.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Selector(pub Vec<Requirement>);

impl Selector {
    /// Matches a label set.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| r.matches(labels))
    }

    /// Selects everything.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Parses the string syntax (`a=b,c!=d,e in (f,g),!h`).
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut reqs = Vec::new();
        for term in split_top_level(s) {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            reqs.push(parse_term(term)?);
        }
        Ok(Selector(reqs))
    }

    /// Builds a selector from a `metav1.LabelSelector` JSON value; `null` selects everything.
    pub fn from_label_selector(sel: &Value) -> Result<Self, String> {
        let mut reqs = Vec::new();
        if let Some(ml) = sel.get("matchLabels").and_then(Value::as_object) {
            for (k, v) in ml {
                reqs.push(Requirement::In(k.clone(), vec![v.as_str().unwrap_or("").to_string()]));
            }
        }
        if let Some(exprs) = sel.get("matchExpressions").and_then(Value::as_array) {
            for e in exprs {
                let key = e.get("key").and_then(Value::as_str).unwrap_or("").to_string();
                let values: Vec<String> = e
                    .get("values")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
                    .unwrap_or_default();
                let req = match e.get("operator").and_then(Value::as_str) {
                    Some("In") => Requirement::In(key, values),
                    Some("NotIn") => Requirement::NotIn(key, values),
                    Some("Exists") => Requirement::Exists(key),
                    Some("DoesNotExist") => Requirement::DoesNotExist(key),
                    other => return Err(format!("unsupported selector operator {other:?}")),
                };
                reqs.push(req);
            }
        }
        Ok(Selector(reqs))
    }

    /// Renders the string syntax (for `Scale.status.selector`).
    pub fn to_query(&self) -> String {
        self.0
            .iter()
            .map(|r| match r {
                Requirement::In(k, vs) if vs.len() == 1 => format!("{k}={}", vs[0]),
                Requirement::In(k, vs) => format!("{k} in ({})", vs.join(",")),
                Requirement::NotIn(k, vs) if vs.len() == 1 => format!("{k}!={}", vs[0]),
                Requirement::NotIn(k, vs) => format!("{k} notin ({})", vs.join(",")),
                Requirement::Exists(k) => k.clone(),
                Requirement::DoesNotExist(k) => format!("!{k}"),
            })
            .collect::<Vec<_>>()
            .join(",")
    }
}

fn split_top_level(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn parse_set(s: &str) -> Result<Vec<String>, String> {
    let inner = s
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| format!("expected a parenthesised set, got {s:?}"))?;
    Ok(inner.split(',').map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect())
}

fn parse_term(term: &str) -> Result<Requirement, String> {
    if let Some(key) = term.strip_prefix('!') {
        return Ok(Requirement::DoesNotExist(key.trim().to_string()));
    }
    if let Some(idx) = term.find(" notin ") {
        return Ok(Requirement::NotIn(term[..idx].trim().to_string(), parse_set(&term[idx + 7..])?));
    }
    if let Some(idx) = term.find(" in ") {
        return Ok(Requirement::In(term[..idx].trim().to_string(), parse_set(&term[idx + 4..])?));
    }
    if let Some((k, v)) = term.split_once("!=") {
        return Ok(Requirement::NotIn(k.trim().to_string(), vec![v.trim().to_string()]));
    }
    if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
        return Ok(Requirement::In(k.trim().to_string(), vec![v.trim().to_string()]));
    }
    if term.contains(['(', ')', ' ']) {
        return Err(format!("unable to parse requirement {term:?}"));
    }
    Ok(Requirement::Exists(term.to_string()))
}

/// A field selector: `metadata.name=x,spec.nodeName!=,status.phase=Running`. Any dotted path is
/// accepted; a missing field compares as "".
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    /// Parses the string syntax (`=`, `==`, `!=`).
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut out = Vec::new();
        for term in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (path, eq, value) = if let Some((k, v)) = term.split_once("!=") {
                (k, false, v)
            } else if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                (k, true, v)
            } else {
                return Err(format!("invalid field selector term {term:?}"));
            };
            out.push((path.trim().to_string(), eq, value.trim().to_string()));
        }
        Ok(FieldSelector(out))
    }

    /// Matches an object.
    pub fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|(path, eq, want)| {
            let have = match meta::dotted(obj, path) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            (have == *want) == *eq
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn string_syntax() {
        let s = Selector::parse("app=web,tier in (a, b),!canary,env!=prod,team").unwrap();
        assert_eq!(s.0.len(), 5);
        assert!(s.matches(&labels(&[("app", "web"), ("tier", "b"), ("team", "x")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "c"), ("team", "x")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "a"), ("team", "x"), ("canary", "")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "a")])));
        assert!(Selector::parse("").unwrap().matches(&labels(&[])));
        assert!(Selector::parse("a notin (x)").unwrap().matches(&labels(&[])));
    }

    #[test]
    fn structured() {
        let s = Selector::from_label_selector(&json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}]
        }))
        .unwrap();
        assert!(s.matches(&labels(&[("app", "web"), ("kubernetes.io/metadata.name", "default")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("kubernetes.io/metadata.name", "kube-system")])));
        assert_eq!(s.to_query(), "app=web,kubernetes.io/metadata.name!=kube-system");
        assert!(Selector::from_label_selector(&Value::Null).unwrap().is_empty());
    }

    #[test]
    fn fields() {
        let pod = json!({"metadata": {"name": "p", "namespace": "d"}, "spec": {"nodeName": "n1"}});
        assert!(FieldSelector::parse("metadata.name=p,spec.nodeName=n1").unwrap().matches(&pod));
        assert!(FieldSelector::parse("spec.nodeName!=").unwrap().matches(&pod));
        assert!(!FieldSelector::parse("metadata.namespace==x").unwrap().matches(&pod));
        assert!(FieldSelector::parse("status.phase=").unwrap().matches(&pod));
    }
}
