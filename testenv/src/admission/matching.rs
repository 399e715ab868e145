//! Which registered webhooks a request reaches, decided as kube-apiserver's `rules.Matcher` and
//! namespace/object matchers do: rules (operations, apiGroups, apiVersions, resources with `*` and
//! `resource/subresource` forms, scope), `matchPolicy: Equivalent` across the served versions of the
//! same resource, `namespaceSelector` (the namespace's labels, or the object's own labels for
//! Namespace requests) and `objectSelector` (new or old object's labels).

use crate::selectors::Selector;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// One `rules[]` entry.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Rule {
    /// `operations`.
    pub operations: Vec<String>,
    /// `apiGroups`.
    pub groups: Vec<String>,
    /// `apiVersions`.
    pub versions: Vec<String>,
    /// `resources`.
    pub resources: Vec<String>,
    /// `scope` (`*`, `Cluster`, `Namespaced`).
    pub scope: String,
}

/// One webhook of a Mutating/ValidatingWebhookConfiguration, with defaults applied.
#[derive(Debug, Clone)]
pub struct Webhook {
    /// The configuration object's name (ordering key).
    pub config: String,
    /// `name`.
    pub name: String,
    /// From a MutatingWebhookConfiguration.
    pub mutating: bool,
    /// `clientConfig`.
    pub client_config: Value,
    /// `rules`.
    pub rules: Vec<Rule>,
    /// `failurePolicy: Fail` (the default).
    pub fail_closed: bool,
    /// `matchPolicy: Exact`.
    pub exact: bool,
    /// `namespaceSelector` (invalid selectors are an error at call time).
    pub namespace_selector: Result<Selector, String>,
    /// `objectSelector`.
    pub object_selector: Result<Selector, String>,
    /// `sideEffects` is `None` or `NoneOnDryRun`.
    pub dry_run_safe: bool,
    /// `timeoutSeconds` (default 10).
    pub timeout: Duration,
    /// `admissionReviewVersions`.
    pub review_versions: Vec<String>,
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// Reads the webhooks of one configuration object.
pub fn parse_configuration(cfg: &Value, mutating: bool) -> Vec<Webhook> {
    let config = crate::meta::name(cfg).to_string();
    let Some(hooks) = cfg.get("webhooks").and_then(Value::as_array) else {
        return vec![];
    };
    hooks
        .iter()
        .map(|h| {
            let rules = h
                .get("rules")
                .and_then(Value::as_array)
                .map(|rs| {
                    rs.iter()
                        .map(|r| Rule {
                            operations: strings(r.get("operations")),
                            groups: strings(r.get("apiGroups")),
                            versions: strings(r.get("apiVersions")),
                            resources: strings(r.get("resources")),
                            scope: r.get("scope").and_then(Value::as_str).unwrap_or("*").to_string(),
                        })
                        .collect()
                })
                .unwrap_or_default();
            let selector = |key: &str| match h.get(key) {
                None | Some(Value::Null) => Ok(Selector::default()),
                Some(s) => Selector::from_label_selector(s),
            };
            Webhook {
                config: config.clone(),
                name: h.get("name").and_then(Value::as_str).unwrap_or("").to_string(),
                mutating,
                client_config: h.get("clientConfig").cloned().unwrap_or(Value::Null),
                rules,
                fail_closed: h.get("failurePolicy").and_then(Value::as_str) != Some("Ignore"),
                exact: h.get("matchPolicy").and_then(Value::as_str) == Some("Exact"),
                namespace_selector: selector("namespaceSelector"),
                object_selector: selector("objectSelector"),
                dry_run_safe: matches!(
                    h.get("sideEffects").and_then(Value::as_str),
                    Some("None") | Some("NoneOnDryRun")
                ),
                timeout: Duration::from_secs(
                    h.get("timeoutSeconds").and_then(Value::as_u64).unwrap_or(10).clamp(1, 30),
                ),
                review_versions: strings(h.get("admissionReviewVersions")),
            }
        })
        .collect()
}

/// What a rule is compared against.
#[derive(Debug, Clone, Copy)]
pub struct RequestShape<'a> {
    /// CREATE/UPDATE/DELETE/CONNECT.
    pub operation: &'a str,
    /// API group.
    pub group: &'a str,
    /// API version.
    pub version: &'a str,
    /// Plural resource.
    pub resource: &'a str,
    /// Subresource or "".
    pub subresource: &'a str,
    /// The request's namespace ("" for cluster-scoped; the name for Namespace objects).
    pub namespace: &'a str,
}

fn any_or(list: &[String], want: &str) -> bool {
    list.iter().any(|x| x == "*" || x == want)
}

/// `rules.Matcher.Matches`.
pub fn rule_matches(rule: &Rule, req: &RequestShape<'_>) -> bool {
    let is_namespace = req.group.is_empty() && req.resource == "namespaces";
    let scope_ok = match rule.scope.as_str() {
        "Namespaced" => !is_namespace && !req.namespace.is_empty(),
        "Cluster" => is_namespace || req.namespace.is_empty(),
        _ => true,
    };
    let resource_ok = rule.resources.iter().any(|r| {
        let (res, sub) = r.split_once('/').unwrap_or((r.as_str(), ""));
        (res == "*" || res == req.resource) && (sub == "*" || sub == req.subresource)
    });
    any_or(&rule.operations, req.operation)
        && any_or(&rule.groups, req.group)
        && any_or(&rule.versions, req.version)
        && resource_ok
        && scope_ok
}

/// The version under which the webhook sees the request: the request's own when a rule matches it
/// exactly, else (matchPolicy Equivalent) the first other served version of the same resource a
/// rule matches, else `None`.
pub fn matched_version(hook: &Webhook, req: &RequestShape<'_>, served: &[String]) -> Option<String> {
    if hook.rules.iter().any(|r| rule_matches(r, req)) {
        return Some(req.version.to_string());
    }
    if hook.exact {
        return None;
    }
    served
        .iter()
        .filter(|v| v.as_str() != req.version)
        .find(|v| {
            let alt = RequestShape { version: v, ..*req };
            hook.rules.iter().any(|r| rule_matches(r, &alt))
        })
        .cloned()
}

/// `objectSelector`: matches the new or the old object's labels.
pub fn object_selected(sel: &Selector, object: Option<&Value>, old: Option<&Value>) -> bool {
    sel.is_empty() || [object, old].into_iter().flatten().any(|o| sel.matches(&crate::meta::labels(o)))
}

/// `namespaceSelector`: `ns_labels` are the labels of the request's namespace (for Namespace
/// objects, their own), `None` for cluster-scoped requests which are never exempted.
pub fn namespace_selected(sel: &Selector, ns_labels: Option<&BTreeMap<String, String>>) -> bool {
    match ns_labels {
        None => true,
        Some(labels) => sel.is_empty() || sel.matches(labels),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shape<'a>(
        op: &'a str,
        group: &'a str,
        version: &'a str,
        res: &'a str,
        sub: &'a str,
        ns: &'a str,
    ) -> RequestShape<'a> {
        RequestShape { operation: op, group, version, resource: res, subresource: sub, namespace: ns }
    }

    fn rule(res: &[&str], scope: &str) -> Rule {
        Rule {
            operations: vec!["CREATE".into(), "UPDATE".into()],
            groups: vec!["".into(), "apps.kruise.io".into()],
            versions: vec!["*".into()],
            resources: res.iter().map(|s| s.to_string()).collect(),
            scope: scope.into(),
        }
    }

    #[test]
    fn resource_and_subresource_forms() {
        let pods = shape("CREATE", "", "v1", "pods", "", "default");
        let status = shape("UPDATE", "", "v1", "pods", "status", "default");
        let evict = shape("CREATE", "", "v1", "pods", "eviction", "default");
        assert!(rule_matches(&rule(&["pods"], "*"), &pods));
        assert!(!rule_matches(&rule(&["pods"], "*"), &status));
        assert!(rule_matches(&rule(&["pods/status"], "*"), &status));
        assert!(rule_matches(&rule(&["pods/*"], "*"), &pods));
        assert!(rule_matches(&rule(&["pods/*"], "*"), &evict));
        assert!(rule_matches(&rule(&["*"], "*"), &pods));
        assert!(!rule_matches(&rule(&["*"], "*"), &evict));
        assert!(rule_matches(&rule(&["*/eviction"], "*"), &evict));
        assert!(rule_matches(&rule(&["*/*"], "*"), &status));
        assert!(!rule_matches(&rule(&["pods"], "*"), &shape("DELETE", "", "v1", "pods", "", "default")));
        assert!(!rule_matches(&rule(&["pods"], "*"), &shape("CREATE", "apps", "v1", "pods", "", "default")));
    }

    #[test]
    fn scope() {
        let ns = shape("CREATE", "", "v1", "namespaces", "", "team-a");
        let pod = shape("CREATE", "", "v1", "pods", "", "team-a");
        let node = shape("CREATE", "", "v1", "nodes", "", "");
        assert!(rule_matches(&rule(&["*"], "Cluster"), &ns));
        assert!(!rule_matches(&rule(&["*"], "Namespaced"), &ns));
        assert!(rule_matches(&rule(&["*"], "Namespaced"), &pod));
        assert!(!rule_matches(&rule(&["*"], "Cluster"), &pod));
        assert!(rule_matches(&rule(&["*"], "Cluster"), &node));
    }

    #[test]
    fn equivalent_versions() {
        let cfg = json!({"metadata": {"name": "c"}, "webhooks": [{
            "name": "w", "clientConfig": {}, "rules": [{"operations": ["*"], "apiGroups": ["apps.kruise.io"],
            "apiVersions": ["v1alpha1"], "resources": ["clonesets"]}]}]});
        let mut hook = parse_configuration(&cfg, true).remove(0);
        assert!(hook.fail_closed && !hook.exact && !hook.dry_run_safe);
        assert_eq!(hook.timeout, Duration::from_secs(10));
        let served = vec!["v1alpha1".to_string(), "v1beta1".to_string()];
        let req = shape("CREATE", "apps.kruise.io", "v1beta1", "clonesets", "", "default");
        assert_eq!(matched_version(&hook, &req, &served).as_deref(), Some("v1alpha1"));
        hook.exact = true;
        assert_eq!(matched_version(&hook, &req, &served), None);
    }

    #[test]
    fn selectors() {
        let sel = Selector::from_label_selector(&json!({"matchLabels": {"team": "a"}})).unwrap();
        let a = json!({"metadata": {"labels": {"team": "a"}}});
        let b = json!({"metadata": {"labels": {"team": "b"}}});
        assert!(object_selected(&sel, Some(&b), Some(&a)));
        assert!(!object_selected(&sel, Some(&b), None));
        assert!(object_selected(&Selector::default(), None, None));
        assert!(namespace_selected(&sel, None));
        assert!(!namespace_selected(&sel, Some(&BTreeMap::new())));
    }
}
