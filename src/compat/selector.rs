//! Label selectors: whether a selector matches a label set, whether it is valid, and how it is
//! printed (spec §2.1 rules 3–4 "selector must be valid, non-empty and match the template
//! labels", §5.7 / §6.6 `status.labelSelector`, and the selector checks of §2.2–§2.6).
//! Reproduces `metav1.LabelSelectorAsSelector` and `metav1.FormatLabelSelector`
//! (apimachinery `pkg/apis/meta/v1/helpers.go`), `labels.NewRequirement`, `Requirement.Matches`
//! and `Selector.String()` (`pkg/labels/selector.go`), `metav1validation.ValidateLabelSelector`
//! (`pkg/apis/meta/v1/validation`), and kruise's `util.ValidatedLabelSelectorAsSelector`
//! (`pkg/util/selector.go`), which kruise uses to fill `status.labelSelector`.
//!
//! An empty selector matches everything, as in Go; callers that must reject empty selectors
//! check [`is_empty`] themselves. Go walks `matchLabels` in random map order; we walk it sorted,
//! which only matters for which error is reported first when several keys are invalid.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::Value;

use crate::compat::field::{self, FieldError};
use crate::compat::names::{is_qualified_name, is_valid_label_value, validate_label_name, validate_labels};

/// Why a `LabelSelector` could not be turned into a selector.
#[derive(Clone, Debug, PartialEq)]
pub enum SelectorError {
    /// An operator other than In, NotIn, Exists, DoesNotExist.
    InvalidOperator(String),
    /// `labels.NewRequirement` rejected a key, a value or the number of values.
    InvalidRequirement(Vec<FieldError>),
}

impl fmt::Display for SelectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SelectorError::InvalidOperator(op) => {
                write!(f, "{} is not a valid label selector operator", field::go_quote(op))
            }
            SelectorError::InvalidRequirement(errs) => f.write_str(&field::aggregate(errs)),
        }
    }
}

impl std::error::Error for SelectorError {}

/// The operators a `LabelSelector` can express (`Equals` comes from `matchLabels`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operator {
    Equals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

impl Operator {
    fn from_label_selector(op: &str) -> Result<Operator, SelectorError> {
        match op {
            "In" => Ok(Operator::In),
            "NotIn" => Ok(Operator::NotIn),
            "Exists" => Ok(Operator::Exists),
            "DoesNotExist" => Ok(Operator::DoesNotExist),
            other => Err(SelectorError::InvalidOperator(other.to_string())),
        }
    }
}

/// One `labels.Requirement`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    pub key: String,
    pub operator: Operator,
    pub values: Vec<String>,
}

impl Requirement {
    /// `labels.NewRequirement`: the key must be a qualified name, the number of values must
    /// suit the operator and every value must be a valid label value.
    pub fn new(key: &str, operator: Operator, values: Vec<String>) -> Result<Requirement, SelectorError> {
        let mut errs = Vec::new();
        let key_msgs = is_qualified_name(key);
        if !key_msgs.is_empty() {
            errs.push(FieldError::invalid("key", key, key_msgs.join("; ")));
        }
        // Go renders a nil slice as `null` (apimachinery >= v0.34; v0.32 printed `[]string(nil)`).
        let shown = || {
            if values.is_empty() { Value::Null } else { Value::from(values.clone()) }
        };
        match operator {
            Operator::In | Operator::NotIn if values.is_empty() => errs.push(FieldError::invalid(
                "values",
                shown(),
                "for 'in', 'notin' operators, values set can't be empty",
            )),
            Operator::Equals if values.len() != 1 => {
                errs.push(FieldError::invalid("values", shown(), "exact-match compatibility requires one single value"))
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => errs.push(FieldError::invalid(
                "values",
                shown(),
                "values set must be empty for exists and does not exist",
            )),
            _ => {}
        }
        for (i, v) in values.iter().enumerate() {
            let msgs = is_valid_label_value(v);
            if !msgs.is_empty() {
                let path = field::key(&field::index("values", i), key);
                errs.push(FieldError::invalid(&path, v.as_str(), msgs.join("; ")));
            }
        }
        if errs.is_empty() {
            Ok(Requirement { key: key.to_string(), operator, values })
        } else {
            Err(SelectorError::InvalidRequirement(errs))
        }
    }

    /// `Requirement.Matches`.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            Operator::Equals | Operator::In => value.is_some_and(|v| self.values.contains(v)),
            Operator::NotIn => value.is_none_or(|v| !self.values.contains(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
        }
    }
}

impl fmt::Display for Requirement {
    /// `Requirement.String()`: `k=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`; several values
    /// are printed sorted (duplicates kept).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut values = self.values.clone();
        values.sort();
        let values = values.join(",");
        match self.operator {
            Operator::Equals => write!(f, "{}={}", self.key, values),
            Operator::In => write!(f, "{} in ({})", self.key, values),
            Operator::NotIn => write!(f, "{} notin ({})", self.key, values),
            Operator::Exists => write!(f, "{}", self.key),
            Operator::DoesNotExist => write!(f, "!{}", self.key),
        }
    }
}

/// A compiled selector (`labels.Selector`): the requirements ANDed, sorted by key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector {
    requirements: Vec<Requirement>,
    /// `labels.Nothing()`, what a nil `*LabelSelector` becomes.
    nothing: bool,
}

impl Selector {
    pub fn everything() -> Selector {
        Selector { requirements: Vec::new(), nothing: false }
    }

    pub fn nothing() -> Selector {
        Selector { requirements: Vec::new(), nothing: true }
    }

    /// `metav1.LabelSelectorAsSelector` for a present selector: every requirement validated.
    pub fn from_label_selector(sel: &LabelSelector) -> Result<Selector, SelectorError> {
        build(sel, true)
    }

    /// `LabelSelectorAsSelector` with Go's nil handling: `None` selects nothing.
    pub fn from_optional(sel: Option<&LabelSelector>) -> Result<Selector, SelectorError> {
        sel.map_or_else(|| Ok(Selector::nothing()), Selector::from_label_selector)
    }

    /// kruise's `util.ValidatedLabelSelectorAsSelector`: keys and values are not validated (the
    /// webhook did), `None` selects nothing, an empty selector everything; only an unknown
    /// operator is an error.
    pub fn from_validated(sel: Option<&LabelSelector>) -> Result<Selector, SelectorError> {
        sel.map_or_else(|| Ok(Selector::nothing()), |s| build(s, false))
    }

    /// Go's `Selector.Empty()`: true for "everything", false for "nothing".
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(labels))
    }
}

impl fmt::Display for Selector {
    /// `Selector.String()`: requirements joined by ",", "" for everything and nothing.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.requirements.iter().map(ToString::to_string).collect();
        f.write_str(&parts.join(","))
    }
}

fn build(sel: &LabelSelector, validate: bool) -> Result<Selector, SelectorError> {
    let mut requirements = Vec::new();
    let make = |key: &str, op, values: Vec<String>| {
        if validate {
            Requirement::new(key, op, values)
        } else {
            Ok(Requirement { key: key.to_string(), operator: op, values })
        }
    };
    for (k, v) in sel.match_labels.iter().flatten() {
        requirements.push(make(k, Operator::Equals, vec![v.clone()])?);
    }
    for expr in sel.match_expressions.iter().flatten() {
        let op = Operator::from_label_selector(&expr.operator)?;
        requirements.push(make(&expr.key, op, expr.values.clone().unwrap_or_default())?);
    }
    // Go's sort.Sort(ByKey) on these short lists is an insertion sort, i.e. stable.
    requirements.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(Selector { requirements, nothing: false })
}

/// No `matchLabels` and no `matchExpressions` (Go: `len(MatchLabels)+len(MatchExpressions) == 0`).
pub fn is_empty(sel: &LabelSelector) -> bool {
    sel.match_labels.as_ref().is_none_or(BTreeMap::is_empty) && sel.match_expressions.as_ref().is_none_or(Vec::is_empty)
}

/// `LabelSelectorAsSelector(sel)` then `Matches(labels)`; an empty selector matches everything.
pub fn matches(sel: &LabelSelector, labels: &BTreeMap<String, String>) -> Result<bool, SelectorError> {
    Ok(Selector::from_label_selector(sel)?.matches(labels))
}

/// kruise's `ValidatedLabelSelectorAsSelector(sel).String()`, the value of
/// `status.labelSelector`: keys and values are not re-validated (the webhook did that), an empty
/// selector prints as "", and only an unknown operator is an error.
pub fn to_selector_string(sel: &LabelSelector) -> Result<String, SelectorError> {
    Ok(build(sel, false)?.to_string())
}

/// `metav1.FormatLabelSelector`: "<none>" for a nil or empty selector, "<error>" when it cannot
/// be converted.
pub fn format_label_selector(sel: Option<&LabelSelector>) -> String {
    match Selector::from_optional(sel) {
        Err(_) => "<error>".to_string(),
        Ok(s) if s.requirements.is_empty() => "<none>".to_string(),
        Ok(s) => s.to_string(),
    }
}

/// `metav1validation.LabelSelectorValidationOptions`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LabelSelectorValidationOptions {
    pub allow_invalid_label_value_in_selector: bool,
    pub allow_unknown_operator_in_requirement: bool,
}

/// `ValidateLabelSelector(sel, LabelSelectorValidationOptions{}, path)`.
pub fn validate_label_selector(sel: &LabelSelector, path: &str) -> Vec<FieldError> {
    validate_label_selector_with(sel, LabelSelectorValidationOptions::default(), path)
}

/// `ValidateLabelSelector` with options.
pub fn validate_label_selector_with(
    sel: &LabelSelector,
    opts: LabelSelectorValidationOptions,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(labels) = &sel.match_labels {
        errs.extend(validate_labels(labels, &field::child(path, "matchLabels")));
    }
    let exprs_path = field::child(path, "matchExpressions");
    for (i, expr) in sel.match_expressions.iter().flatten().enumerate() {
        let p = field::index(&exprs_path, i);
        let values = expr.values.as_deref().unwrap_or_default();
        let values_path = field::child(&p, "values");
        match expr.operator.as_str() {
            "In" | "NotIn" if values.is_empty() => {
                errs.push(FieldError::required(&values_path, "must be specified when `operator` is 'In' or 'NotIn'"))
            }
            "Exists" | "DoesNotExist" if !values.is_empty() => errs.push(FieldError::forbidden(
                &values_path,
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other if !opts.allow_unknown_operator_in_requirement => {
                errs.push(FieldError::invalid(&field::child(&p, "operator"), other, "not a valid selector operator"))
            }
            _ => {}
        }
        errs.extend(validate_label_name(&expr.key, &field::child(&p, "key")));
        if !opts.allow_invalid_label_value_in_selector {
            for (j, v) in values.iter().enumerate() {
                let vp = field::index(&values_path, j);
                errs.extend(is_valid_label_value(v).into_iter().map(|m| FieldError::invalid(&vp, v.as_str(), m)));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn sel(labels: &[(&str, &str)], exprs: &[(&str, &str, &[&str])]) -> LabelSelector {
        LabelSelector {
            match_labels: (!labels.is_empty())
                .then(|| labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
            match_expressions: (!exprs.is_empty()).then(|| {
                exprs
                    .iter()
                    .map(|(k, op, vs)| LabelSelectorRequirement {
                        key: k.to_string(),
                        operator: op.to_string(),
                        values: (!vs.is_empty()).then(|| vs.iter().map(|v| v.to_string()).collect()),
                    })
                    .collect()
            }),
        }
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn matching() {
        let pod = labels(&[("app", "web"), ("tier", "fe"), ("env", "")]);
        let cases: Vec<(LabelSelector, bool)> = vec![
            (sel(&[], &[]), true),
            (LabelSelector { match_labels: Some(BTreeMap::new()), match_expressions: Some(vec![]) }, true),
            (sel(&[("app", "web")], &[]), true),
            (sel(&[("app", "web"), ("tier", "fe")], &[]), true),
            (sel(&[("app", "db")], &[]), false),
            (sel(&[("missing", "x")], &[]), false),
            (sel(&[("env", "")], &[]), true),
            (sel(&[], &[("app", "In", &["web", "api"])]), true),
            (sel(&[], &[("app", "In", &["api"])]), false),
            (sel(&[], &[("missing", "In", &["x"])]), false),
            (sel(&[], &[("app", "NotIn", &["api"])]), true),
            (sel(&[], &[("app", "NotIn", &["web"])]), false),
            (sel(&[], &[("missing", "NotIn", &["x"])]), true),
            (sel(&[], &[("app", "Exists", &[])]), true),
            (sel(&[], &[("missing", "Exists", &[])]), false),
            (sel(&[], &[("missing", "DoesNotExist", &[])]), true),
            (sel(&[], &[("app", "DoesNotExist", &[])]), false),
            (sel(&[("app", "web")], &[("tier", "In", &["fe"]), ("x", "DoesNotExist", &[])]), true),
            (sel(&[("app", "web")], &[("tier", "NotIn", &["fe"])]), false),
        ];
        for (s, want) in cases {
            assert_eq!(matches(&s, &pod), Ok(want), "{s:?}");
        }
    }

    #[test]
    fn conversion_errors_render_like_go() {
        let key_msg = "name part must consist of alphanumeric characters, '-', '_' or '.', and must \
            start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or \
            '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
        let value_msg = "a valid label must be an empty string or consist of alphanumeric characters, \
            '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  \
            or 'my_value',  or '12345', regex used for validation is \
            '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
        let cases: Vec<(LabelSelector, String)> = vec![
            (sel(&[], &[("a", "Gt", &["1"])]), "\"Gt\" is not a valid label selector operator".into()),
            (sel(&[], &[("a", "", &[])]), "\"\" is not a valid label selector operator".into()),
            (
                sel(&[], &[("a", "In", &[])]),
                "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty".into(),
            ),
            (
                sel(&[], &[("a", "Exists", &["x", "y"])]),
                "values: Invalid value: [\"x\",\"y\"]: values set must be empty for exists and does not exist".into(),
            ),
            (sel(&[("bad key", "v")], &[]), format!("key: Invalid value: \"bad key\": {key_msg}")),
            (sel(&[("app", "-v-")], &[]), format!("values[0][app]: Invalid value: \"-v-\": {value_msg}")),
            (
                sel(&[], &[("bad key", "NotIn", &["ok", "bad value"])]),
                format!(
                    "[key: Invalid value: \"bad key\": {key_msg}, values[1][bad key]: Invalid value: \
                     \"bad value\": {value_msg}]"
                ),
            ),
        ];
        for (s, want) in cases {
            let got = Selector::from_label_selector(&s).map(|x| x.to_string());
            assert_eq!(got.map_err(|e| e.to_string()), Err(want), "{s:?}");
        }
    }

    #[test]
    fn strings_like_go() {
        let cases: Vec<(LabelSelector, &str)> = vec![
            (sel(&[], &[]), ""),
            (sel(&[("app", "sample")], &[]), "app=sample"),
            (sel(&[("b", "2"), ("a", "1")], &[]), "a=1,b=2"),
            (sel(&[], &[("env", "In", &["prod", "dev"])]), "env in (dev,prod)"),
            (sel(&[], &[("env", "NotIn", &["b", "a", "b"])]), "env notin (a,b,b)"),
            (sel(&[], &[("gpu", "Exists", &[])]), "gpu"),
            (sel(&[], &[("gpu", "DoesNotExist", &[])]), "!gpu"),
            (
                sel(&[("z", "1"), ("app", "x")], &[("m", "Exists", &[]), ("app", "NotIn", &["y"])]),
                "app=x,app notin (y),m,z=1",
            ),
            (sel(&[], &[("k", "In", &["v"])]), "k in (v)"),
        ];
        for (s, want) in cases {
            assert_eq!(to_selector_string(&s).as_deref(), Ok(want), "{s:?}");
            let formatted = if want.is_empty() { "<none>" } else { want };
            assert_eq!(format_label_selector(Some(&s)), formatted);
        }
        // kruise's status string does not validate keys or values; FormatLabelSelector does.
        let odd = sel(&[("bad key", "v")], &[("k", "In", &[])]);
        assert_eq!(to_selector_string(&odd).as_deref(), Ok("bad key=v,k in ()"));
        assert_eq!(format_label_selector(Some(&odd)), "<error>");
        assert_eq!(format_label_selector(None), "<none>");
        assert_eq!(
            to_selector_string(&sel(&[], &[("k", "Gt", &["1"])])),
            Err(SelectorError::InvalidOperator("Gt".into()))
        );
    }

    #[test]
    fn emptiness_and_nothing() {
        assert!(is_empty(&sel(&[], &[])));
        assert!(is_empty(&LabelSelector { match_labels: Some(BTreeMap::new()), match_expressions: Some(vec![]) }));
        assert!(!is_empty(&sel(&[("a", "b")], &[])));
        assert!(!is_empty(&sel(&[], &[("a", "Exists", &[])])));
        let nothing = Selector::from_optional(None);
        assert_eq!(nothing.as_ref().map(Selector::is_empty), Ok(false));
        assert_eq!(nothing.map(|s| s.matches(&labels(&[]))), Ok(false));
        assert!(Selector::everything().is_empty());
        assert!(Selector::everything().matches(&labels(&[("a", "b")])));
    }

    #[test]
    fn validation_renders_like_go() {
        let value_msg = "a valid label must be an empty string or consist of alphanumeric characters, \
            '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  \
            or 'my_value',  or '12345', regex used for validation is \
            '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
        let cases: Vec<(LabelSelector, Vec<String>)> = vec![
            (sel(&[("app", "x")], &[("k", "In", &["a", "b"]), ("g", "Exists", &[])]), vec![]),
            (sel(&[], &[]), vec![]),
            (
                sel(&[], &[("k", "In", &[])]),
                vec![
                    "spec.selector.matchExpressions[0].values: Required value: must be specified when \
                      `operator` is 'In' or 'NotIn'"
                        .into(),
                ],
            ),
            (
                sel(&[], &[("k", "Exists", &["v"])]),
                vec![
                    "spec.selector.matchExpressions[0].values: Forbidden: may not be specified when \
                      `operator` is 'Exists' or 'DoesNotExist'"
                        .into(),
                ],
            ),
            (
                sel(&[], &[("ok", "In", &["a"]), ("k", "Gt", &["1"])]),
                vec![
                    "spec.selector.matchExpressions[1].operator: Invalid value: \"Gt\": not a valid \
                      selector operator"
                        .into(),
                ],
            ),
            (
                sel(&[("app", "a b")], &[("k", "NotIn", &["ok", "-no"])]),
                vec![
                    format!("spec.selector.matchLabels: Invalid value: \"a b\": {value_msg}"),
                    format!("spec.selector.matchExpressions[0].values[1]: Invalid value: \"-no\": {value_msg}"),
                ],
            ),
            (
                sel(&[], &[("a/b/c", "Exists", &[])]),
                vec![
                    "spec.selector.matchExpressions[0].key: Invalid value: \"a/b/c\": a qualified name \
                      must consist of alphanumeric characters, '-', '_' or '.', and must start and end \
                      with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', \
                      regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with \
                      an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
                        .into(),
                ],
            ),
        ];
        for (s, want) in cases {
            let got: Vec<String> =
                validate_label_selector(&s, "spec.selector").iter().map(ToString::to_string).collect();
            assert_eq!(got, want, "{s:?}");
        }
        let lenient = LabelSelectorValidationOptions {
            allow_invalid_label_value_in_selector: true,
            allow_unknown_operator_in_requirement: true,
        };
        let s = sel(&[], &[("k", "Gt", &["-no"])]);
        assert!(validate_label_selector_with(&s, lenient, "p").is_empty());
    }
}
