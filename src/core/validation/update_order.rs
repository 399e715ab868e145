//! The order in which pods are updated (spec §1.0): `priorityStrategy` (weight XOR order terms)
//! and `scatterStrategy` (label key/values to spread updates over). kruise's `FieldsValidation`
//! methods return the FIRST problem only, and the callers report it as `Required` on the
//! strategy's path (spec §2.1 item 11, §2.2 item 11). Quirk kept: a weight of 0 is accepted
//! although the message says "1-100".

use crate::apis::common::{UpdatePriorityStrategy, UpdateScatterStrategy};
use crate::compat::field::FieldError;
use crate::compat::selector::{self, Selector};

/// `UpdatePriorityStrategy.FieldsValidation()`.
pub fn priority_problem(strategy: Option<&UpdatePriorityStrategy>) -> Option<String> {
    let strategy = strategy?;
    if !strategy.weight_priority.is_empty() && !strategy.order_priority.is_empty() {
        return Some("only one of weightPriority and orderPriority can be used".into());
    }
    for w in &strategy.weight_priority {
        if !(0..=100).contains(&w.weight) {
            return Some("weight must be valid number in the range 1-100".into());
        }
        if selector::is_empty(&w.match_selector) {
            return Some("selector can not be empty".into());
        }
        if let Err(e) = Selector::from_label_selector(&w.match_selector) {
            return Some(format!("invalid selector {e}"));
        }
    }
    if strategy.order_priority.iter().any(|o| o.ordered_key.is_empty()) {
        return Some("order key can not be empty".into());
    }
    None
}

/// `UpdateScatterStrategy.FieldsValidation()`.
pub fn scatter_problem(strategy: &UpdateScatterStrategy) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    for term in strategy {
        if term.key.is_empty() {
            return Some("key should not be empty".into());
        }
        if !seen.insert((term.key.as_str(), term.value.as_str())) {
            return Some(format!("duplicated key={} value={}", term.key, term.value));
        }
    }
    None
}

/// Priority strategy problem as the `Required` error kruise reports at `path`.
pub fn validate_priority(strategy: Option<&UpdatePriorityStrategy>, path: &str) -> Vec<FieldError> {
    priority_problem(strategy).map(|p| FieldError::required(path, p)).into_iter().collect()
}

/// Scatter strategy problem as the `Required` error kruise reports at `path`.
pub fn validate_scatter(strategy: &UpdateScatterStrategy, path: &str) -> Vec<FieldError> {
    scatter_problem(strategy).map(|p| FieldError::required(path, p)).into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn priority_table() {
        #[rustfmt::skip]
        let cases: Vec<(Value, Option<&str>)> = vec![
            (json!({}), None),
            (json!({"orderPriority": [{"orderedKey": "k"}]}), None),
            (json!({"weightPriority": [{"weight": 50, "matchSelector": {"matchLabels": {"a": "b"}}}]}), None),
            (json!({"weightPriority": [{"weight": 0, "matchSelector": {"matchLabels": {"a": "b"}}}]}), None),
            (json!({"weightPriority": [{"weight": 50, "matchSelector": {"matchLabels": {"a": "b"}}}],
                    "orderPriority": [{"orderedKey": "k"}]}),
             Some("only one of weightPriority and orderPriority can be used")),
            (json!({"weightPriority": [{"weight": 101, "matchSelector": {"matchLabels": {"a": "b"}}}]}),
             Some("weight must be valid number in the range 1-100")),
            (json!({"weightPriority": [{"weight": -1, "matchSelector": {"matchLabels": {"a": "b"}}}]}),
             Some("weight must be valid number in the range 1-100")),
            (json!({"weightPriority": [{"weight": 5, "matchSelector": {}}]}), Some("selector can not be empty")),
            (json!({"weightPriority": [{"weight": 5, "matchSelector": {"matchExpressions": [{"key": "a", "operator": "Bad"}]}}]}),
             Some("invalid selector \"Bad\" is not a valid label selector operator")),
            (json!({"orderPriority": [{"orderedKey": ""}]}), Some("order key can not be empty")),
        ];
        for (v, want) in cases {
            let s: UpdatePriorityStrategy = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(priority_problem(Some(&s)).as_deref(), want, "{v}");
        }
        assert_eq!(priority_problem(None), None);
        let s: UpdatePriorityStrategy = serde_json::from_value(json!({"orderPriority": [{"orderedKey": ""}]})).unwrap();
        assert_eq!(
            crate::compat::field::aggregate(&validate_priority(Some(&s), "spec.updateStrategy.priorityStrategy")),
            "spec.updateStrategy.priorityStrategy: Required value: order key can not be empty"
        );
    }

    #[test]
    fn scatter_table() {
        #[rustfmt::skip]
        let cases: Vec<(Value, Option<&str>)> = vec![
            (json!([]), None),
            (json!([{"key": "zone", "value": "a"}, {"key": "zone", "value": "b"}]), None),
            (json!([{"key": "", "value": "a"}]), Some("key should not be empty")),
            (json!([{"key": "zone", "value": "a"}, {"key": "zone", "value": "a"}]), Some("duplicated key=zone value=a")),
        ];
        for (v, want) in cases {
            let s: UpdateScatterStrategy = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(scatter_problem(&s).as_deref(), want, "{v}");
        }
    }
}
