//! `resourcesPolicy` (spec §4.10, kruise v1.9 `pkg/webhook/pod/mutating/sidecarset_resources.go`
//! and `pkg/util/calculator`): a sidecar's resources computed at pod creation from the resources
//! of the pod containers whose names match `targetContainersNameRegex` (plain containers and
//! native sidecars, never a container a matched SidecarSet defines), aggregated by `sum` or `max`
//! (one target without a limit makes the aggregated limit unlimited, and an unlimited limit is not
//! set), then passed through the `resourcesExpr` expressions: numbers, quantities (`500m`,
//! `1Gi`), percentages (`50%` is 0.5), `+ - * /`, parentheses, unary minus, `max(a, b)`,
//! `min(a, b)` and the variable `cpu` or `memory`. kruise's calculator rules are kept: a number
//! meeting a quantity counts as that many whole units, two quantities cannot be multiplied nor a
//! quantity divide, a negative result is an error, and a bare-number result is cores for cpu
//! (milli precision) and bytes for memory.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;

use crate::apis::sidecarset::{ResourceExprs, ResourcesPolicy};
use crate::compat::quantity::{Format, Quantity};

/// A calculator value.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    /// A plain number (`0.5`, `50%`).
    Num(f64),
    /// A quantity (`500m`, `1Gi`).
    Qty(Quantity),
}

impl Val {
    /// kruise's `Value.String()`: the quantity, or the number as `%g`.
    fn shown(&self) -> String {
        match self {
            Val::Qty(q) => q.canonical(),
            Val::Num(n) => go_g(*n),
        }
    }
}

/// Go's `%g` of a float64 (shortest digits; an exponent below -4 or from 21 on).
fn go_g(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    if !f.is_finite() {
        return if f.is_nan() {
            "NaN".into()
        } else if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..21).contains(&exp) {
        format!("{f}")
    } else {
        format!("{mantissa}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
    }
}

fn to_quantity(v: &Val) -> Quantity {
    match v {
        Val::Qty(q) => q.clone(),
        Val::Num(n) => Quantity::from_milli((n * 1000.0) as i64, Format::DecimalSI),
    }
}

fn scaled(q: &Quantity, factor: f64, divide: bool) -> Quantity {
    let milli = q.milli_value().unwrap_or(0) as f64;
    let mut out = q.clone();
    out.set_milli((if divide { milli / factor } else { milli * factor }) as i64);
    out
}

/// One token of an expression.
#[derive(Clone, Debug, PartialEq)]
enum Token {
    Number(String),
    Quantity(String),
    Ident(String),
    Punct(char),
    End,
}

/// kruise's hand-written lexer (`lexer.go`), with its 1-based column after each token.
struct Lexer<'a> {
    text: &'a [u8],
    pos: usize,
}

impl Lexer<'_> {
    fn peek(&self) -> u8 {
        self.text.get(self.pos).copied().unwrap_or(0)
    }

    fn next_token(&mut self) -> Token {
        while self.peek() != 0 && self.peek().is_ascii_whitespace() {
            self.pos += 1;
        }
        let c = self.peek();
        if c == 0 {
            return Token::End;
        }
        if c == b'.' || c.is_ascii_digit() {
            let num = self.read_number();
            return if is_quantity(&num) { Token::Quantity(num) } else { Token::Number(num) };
        }
        if c.is_ascii_alphabetic() {
            let start = self.pos;
            while self.peek().is_ascii_alphanumeric() || self.peek() == b'_' {
                self.pos += 1;
            }
            return Token::Ident(String::from_utf8_lossy(&self.text[start..self.pos]).into_owned());
        }
        // Any other character is a token of its own (the parser rejects the unknown ones).
        let ch = std::str::from_utf8(&self.text[self.pos..]).ok().and_then(|s| s.chars().next()).unwrap_or('?');
        self.pos += ch.len_utf8();
        Token::Punct(ch)
    }

    fn read_number(&mut self) -> String {
        let start = self.pos;
        let (mut dot, mut e, mut percent, mut want_exp_digit) = (false, false, false, false);
        loop {
            let c = self.peek();
            if c.is_ascii_digit() {
                want_exp_digit = false;
            } else if c == b'.' {
                if dot || e || percent {
                    break;
                }
                dot = true;
            } else if c == b'e' || c == b'E' {
                if e || percent {
                    break;
                }
                e = true;
                want_exp_digit = true;
            } else if c == b'+' || c == b'-' {
                if !want_exp_digit {
                    break;
                }
                want_exp_digit = false;
            } else if c == b'%' {
                if percent {
                    break;
                }
                percent = true;
            } else if c.is_ascii_alphabetic() {
                if !want_exp_digit {
                    while self.peek().is_ascii_alphabetic() {
                        self.pos += 1;
                    }
                }
                break;
            } else {
                break;
            }
            self.pos += 1;
        }
        String::from_utf8_lossy(&self.text[start..self.pos]).into_owned()
    }
}

/// `isQuantity`: a number followed by one of the units kruise accepts.
fn is_quantity(s: &str) -> bool {
    let end = s.find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))).unwrap_or(0);
    end > 0 && ["m", "k", "M", "G", "T", "P", "Ki", "Mi", "Gi", "Ti", "Pi"].contains(&&s[end..])
}

/// `parseNumber`; a spelling Go cannot parse is 0, as kruise's grammar ignores the error.
fn parse_number(s: &str) -> f64 {
    match s.strip_suffix('%') {
        Some(n) => n.parse::<f64>().map_or(0.0, |n| n / 100.0),
        None => s.parse().unwrap_or(0.0),
    }
}

/// A recursive-descent reading of kruise's yacc grammar, evaluating as it goes.
struct Parser<'a, 'v> {
    lexer: Lexer<'a>,
    token: Token,
    vars: &'v [(&'v str, Val)],
}

impl Parser<'_, '_> {
    fn advance(&mut self) {
        self.token = self.lexer.next_token();
    }

    fn syntax_error(&self) -> String {
        format!("parse error: syntax error at line 1, col {}", self.lexer.pos + 1)
    }

    fn expr(&mut self) -> Result<Val, String> {
        let mut left = self.term()?;
        while let Token::Punct(op @ ('+' | '-')) = self.token {
            self.advance();
            let right = self.term()?;
            left = if op == '+' { add(&left, &right) } else { sub(&left, &right) };
        }
        Ok(left)
    }

    fn term(&mut self) -> Result<Val, String> {
        let mut left = self.factor()?;
        while let Token::Punct(op @ ('*' | '/')) = self.token {
            self.advance();
            let right = self.factor()?;
            left = if op == '*' { mul(&left, &right)? } else { div(&left, &right)? };
        }
        Ok(left)
    }

    fn factor(&mut self) -> Result<Val, String> {
        match std::mem::replace(&mut self.token, Token::End) {
            Token::Number(n) => {
                self.advance();
                Ok(Val::Num(parse_number(&n)))
            }
            Token::Quantity(q) => {
                self.advance();
                Quantity::parse(&q).map(Val::Qty).map_err(|e| e.to_string())
            }
            Token::Punct('(') => {
                self.advance();
                let v = self.expr()?;
                self.expect(')')?;
                Ok(v)
            }
            Token::Punct('-') => {
                self.advance();
                Ok(match self.factor()? {
                    Val::Num(n) => Val::Num(-n),
                    Val::Qty(mut q) => {
                        q.neg();
                        Val::Qty(q)
                    }
                })
            }
            Token::Ident(name) => {
                self.advance();
                if self.token == Token::Punct('(') {
                    self.advance();
                    let mut args = vec![self.expr()?];
                    if self.token == Token::Punct(',') {
                        self.advance();
                        args.push(self.expr()?);
                    }
                    self.expect(')')?;
                    return call(&name, &args);
                }
                let lower = name.to_lowercase();
                self.vars
                    .iter()
                    .find(|(n, _)| *n == lower)
                    .map(|(_, v)| v.clone())
                    .ok_or_else(|| format!("undefined variable: {lower}"))
            }
            other => {
                self.token = other;
                Err(self.syntax_error())
            }
        }
    }

    fn expect(&mut self, c: char) -> Result<(), String> {
        if self.token == Token::Punct(c) {
            self.advance();
            Ok(())
        } else {
            Err(self.syntax_error())
        }
    }
}

fn add(a: &Val, b: &Val) -> Val {
    match (a, b) {
        (Val::Num(x), Val::Num(y)) => Val::Num(x + y),
        _ => {
            let mut q = to_quantity(a);
            q.add(&to_quantity(b));
            Val::Qty(q)
        }
    }
}

fn sub(a: &Val, b: &Val) -> Val {
    match (a, b) {
        (Val::Num(x), Val::Num(y)) => Val::Num(x - y),
        _ => {
            let mut q = to_quantity(a);
            let mut neg = to_quantity(b);
            neg.neg();
            q.add(&neg);
            Val::Qty(q)
        }
    }
}

fn mul(a: &Val, b: &Val) -> Result<Val, String> {
    Ok(match (a, b) {
        (Val::Qty(_), Val::Qty(_)) => return Err("multiplication of two quantities".into()),
        (Val::Qty(q), Val::Num(n)) | (Val::Num(n), Val::Qty(q)) => Val::Qty(scaled(q, *n, false)),
        (Val::Num(x), Val::Num(y)) => Val::Num(x * y),
    })
}

fn div(a: &Val, b: &Val) -> Result<Val, String> {
    let Val::Num(n) = b else { return Err("division by quantity".into()) };
    if *n == 0.0 {
        return Err("division by zero".into());
    }
    Ok(match a {
        Val::Qty(q) => Val::Qty(scaled(q, *n, true)),
        Val::Num(x) => Val::Num(x / n),
    })
}

fn call(name: &str, args: &[Val]) -> Result<Val, String> {
    let lower = name.to_lowercase();
    let take_left = match lower.as_str() {
        "max" | "min" if args.len() != 2 => {
            return Err(format!("{lower} function requires exactly 2 arguments, got {}", args.len()));
        }
        "max" => |o: std::cmp::Ordering| o.is_ge(),
        "min" => |o: std::cmp::Ordering| o.is_le(),
        _ => return Err(format!("unknown function: {name}")),
    };
    let (a, b) = (&args[0], &args[1]);
    Ok(match (a, b) {
        (Val::Num(x), Val::Num(y)) => {
            if take_left(x.partial_cmp(y).unwrap_or(std::cmp::Ordering::Equal)) {
                a.clone()
            } else {
                b.clone()
            }
        }
        _ => {
            let (qa, qb) = (to_quantity(a), to_quantity(b));
            Val::Qty(if take_left(qa.cmp(&qb)) { qa } else { qb })
        }
    })
}

/// Evaluates an expression with the given variables (`calculator.Parse`).
pub fn evaluate(expr: &str, vars: &[(&str, Val)]) -> Result<Val, String> {
    let mut p = Parser { lexer: Lexer { text: expr.as_bytes(), pos: 0 }, token: Token::End, vars };
    p.advance();
    let v = p.expr()?;
    if p.token != Token::End {
        return Err(p.syntax_error());
    }
    let negative = match &v {
        Val::Qty(q) => q.sign() < 0,
        Val::Num(n) => *n < 0.0,
    };
    if negative {
        return Err(format!("calculation result is negative: {}", v.shown()));
    }
    Ok(v)
}

/// The SidecarSet validator's check of one expression (`validateResourceExpression`): it must
/// evaluate with its variable set to the number 1.
pub fn check_expression(expr: &str, variable: &str) -> Result<(), String> {
    if expr.is_empty() {
        return Ok(());
    }
    evaluate(expr, &[(variable, Val::Num(1.0))]).map(|_| ()).map_err(|e| format!("invalid expression: {e}"))
}

/// Why a policy cannot be applied to a pod (the pod CREATE fails with 500, as in kruise).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The regex does not compile.
    #[error("failed to get target containers: invalid regex pattern {pattern:?}: {message}")]
    Regex {
        /// The pattern.
        pattern: String,
        /// The compiler's message.
        message: String,
    },
    /// No container of the pod matches.
    #[error("no containers match the regex pattern {0:?}")]
    NoTarget(String),
    /// An expression fails.
    #[error("failed to evaluate {what} expression: {message}")]
    Expression {
        /// "CPU limits", "memory requests"...
        what: &'static str,
        /// The calculator's message.
        message: String,
    },
}

/// The resources of a sidecar under `policy`, for `pod` (before injection); `sidecar_names`
/// are the containers of every matched SidecarSet, which are never targets.
pub fn sidecar_resources(
    policy: &ResourcesPolicy,
    pod: &Pod,
    sidecar_names: &std::collections::BTreeSet<String>,
) -> Result<ResourceRequirements, PolicyError> {
    let pattern = &policy.target_containers_name_regex;
    let re = regex::Regex::new(pattern)
        .map_err(|e| PolicyError::Regex { pattern: pattern.clone(), message: e.to_string() })?;
    let spec = pod.spec.as_ref();
    let natives = spec
        .and_then(|s| s.init_containers.as_ref())
        .into_iter()
        .flatten()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"));
    let plain = spec.map(|s| s.containers.as_slice()).unwrap_or_default();
    let targets: Vec<&Container> =
        natives.chain(plain).filter(|c| !sidecar_names.contains(&c.name) && re.is_match(&c.name)).collect();
    if targets.is_empty() {
        return Err(PolicyError::NoTarget(pattern.clone()));
    }
    let (limits, requests) = aggregate(&targets, &policy.target_containers_mode);
    let mut out = ResourceRequirements::default();
    let expr = &policy.resources_expr;
    if let Some(e) = &expr.limits {
        let l = evaluate_all(e, &limits, true)?;
        out.limits = (!l.is_empty()).then_some(l);
    }
    if let Some(e) = &expr.requests {
        let r = evaluate_all(e, &requests, false)?;
        out.requests = (!r.is_empty()).then_some(r);
    }
    Ok(out)
}

type Aggregated = BTreeMap<&'static str, Quantity>;

fn evaluate_all(
    exprs: &ResourceExprs,
    aggregated: &Aggregated,
    limits: bool,
) -> Result<BTreeMap<String, K8sQuantity>, PolicyError> {
    let mut out = BTreeMap::new();
    for (resource, text, what) in [
        ("cpu", &exprs.cpu, if limits { "CPU limits" } else { "CPU requests" }),
        ("memory", &exprs.memory, if limits { "memory limits" } else { "memory requests" }),
    ] {
        if text.is_empty() {
            continue;
        }
        let value = match aggregated.get(resource) {
            Some(q) => q.clone(),
            // An unlimited aggregated limit leaves the sidecar's limit unset.
            None if limits => continue,
            None => Quantity::from_int(0, Format::DecimalSI),
        };
        let q = evaluate_resource(text, value).map_err(|message| PolicyError::Expression {
            what,
            message: format!("failed to parse expression {text:?}: {message}"),
        })?;
        out.insert(resource.to_string(), K8sQuantity(q.canonical()));
    }
    Ok(out)
}

/// `evaluateResourceExpression`: the variable is `memory` when the expression names it, else `cpu`.
fn evaluate_resource(expr: &str, aggregated: Quantity) -> Result<Quantity, String> {
    let memory = regex::Regex::new(r"\bmemory\b").map(|re| re.is_match(expr)).unwrap_or(false);
    let var = if memory { "memory" } else { "cpu" };
    Ok(match evaluate(expr, &[(var, Val::Qty(aggregated))])? {
        Val::Qty(q) => q,
        Val::Num(n) if var == "cpu" => Quantity::from_milli((n * 1000.0) as i64, Format::DecimalSI),
        Val::Num(n) => Quantity::from_int(n as i64, Format::DecimalSI),
    })
}

/// `aggregateResources`: sums or maxima of the targets' cpu and memory; a limit is set only when
/// every target has it, a request only when it is not zero (sum) or some target has it (max).
fn aggregate(targets: &[&Container], mode: &str) -> (Aggregated, Aggregated) {
    let (mut limits, mut requests) = (Aggregated::new(), Aggregated::new());
    let get = |c: &Container, limits: bool, name: &str| -> Option<Quantity> {
        let r = c.resources.as_ref()?;
        let list = if limits { r.limits.as_ref()? } else { r.requests.as_ref()? };
        Quantity::parse(list.get(name)?.0.trim()).ok()
    };
    for name in ["cpu", "memory"] {
        let limit_values: Vec<Option<Quantity>> = targets.iter().map(|c| get(c, true, name)).collect();
        let request_values: Vec<Quantity> = targets.iter().filter_map(|c| get(c, false, name)).collect();
        let all_limited = limit_values.iter().all(Option::is_some);
        let limit_values: Vec<Quantity> = limit_values.into_iter().flatten().collect();
        match mode {
            "sum" => {
                let sum = |values: &[Quantity]| {
                    let mut total = Quantity::from_int(0, Format::DecimalSI);
                    values.iter().for_each(|q| total.add(q));
                    total
                };
                if all_limited {
                    limits.insert(name, sum(&limit_values));
                }
                let total = sum(&request_values);
                if !total.is_zero() {
                    requests.insert(name, total);
                }
            }
            "max" => {
                let max = |values: &[Quantity]| {
                    values.iter().fold(None::<Quantity>, |m, q| match m {
                        Some(m) if q.cmp(&m).is_le() => Some(m),
                        _ => Some(q.clone()),
                    })
                };
                if all_limited && let Some(m) = max(&limit_values) {
                    limits.insert(name, m);
                }
                if let Some(m) = max(&request_values) {
                    requests.insert(name, m);
                }
            }
            _ => {}
        }
    }
    (limits, requests)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn qty(s: &str) -> Val {
        Val::Qty(Quantity::parse(s).unwrap())
    }

    fn run(expr: &str, vars: &[(&str, Val)]) -> Result<String, String> {
        evaluate(expr, vars).map(|v| v.shown())
    }

    /// kruise's `calculator_test.go` tables, row by row.
    #[test]
    fn calculator_tables_of_kruise() {
        let basic = [
            ("2 + 3", Some("5")),
            ("10 - 4", Some("6")),
            ("3 * 4", Some("12")),
            ("15 / 3", Some("5")),
            ("(2 + 3) * 4", Some("20")),
            ("5..5", None),
            ("5%%", None),
            ("50%", Some("0.5")),
            ("100% * 2", Some("2")),
            ("max(10, 20)", Some("20")),
            ("min(10, 20)", Some("10")),
            ("1e2", Some("100")),
            ("1E2", Some("100")),
            ("min(max(max(max(0.5,0.5*0.5),0.5-1.0),0.5-1.0),3.0)", Some("0.5")),
            ("10 / 0", None),
            ("unknown(1, 2)", None),
            ("40m + 20m", Some("60m")),
            ("100Mi - 50Mi", Some("50Mi")),
            ("2 * 40m", Some("80m")),
            ("100m / 2", Some("50m")),
            ("100m", Some("100m")),
            ("max(40m, 20)", Some("20")),
            ("min(40m, 20m)", Some("20m")),
            ("min(max(max(max(500m,0.5*0.5),0.5-1.0),0.5-1.0),3.0)", Some("500m")),
            ("40m * 2m", None),
            ("2 / 40m", None),
            ("-10", None),
            ("-100m", None),
            ("10 - 20", None),
            ("50m - 100m", None),
            ("20 - 10", Some("10")),
            ("10 - 10", Some("0")),
        ];
        for (expr, want) in basic {
            assert_eq!(run(expr, &[]).ok().as_deref(), want, "{expr}");
        }
        let with_vars = [
            ("cpu", "100m", "100m"),
            ("cpu * 2", "50m", "100m"),
            ("max(cpu, 200m)", "100m", "200m"),
            ("min(max(max(max(0.5,0.5*cpu),cpu-1.0),cpu-1.0),3.0)", "0.5", "500m"),
            ("max(0.25, cpu)", "100m", "250m"),
            ("max(cpu, 0.75)", "500m", "750m"),
            ("min(0.8, cpu)", "1.0", "800m"),
            ("min(cpu, 1.5)", "2.0", "1500m"),
            ("max(min(2*cpu,-cpu+3.0),2*cpu-3.0)", "1.5", "1500m"),
            ("max(min(2*cpu,3.0-cpu),2*cpu-3.0)", "1.5", "1500m"),
            ("max(cpu * 50%, 50m)", "200m", "100m"),
        ];
        for (expr, cpu, want) in with_vars {
            assert_eq!(run(expr, &[("cpu", qty(cpu))]).as_deref(), Ok(want), "{expr}");
        }
        assert_eq!(run("memory + 100Mi", &[("memory", qty("200Mi"))]).as_deref(), Ok("300Mi"));
        assert_eq!(run("0.5 * memory + max(0, memory-2Gi)", &[("memory", qty("8Gi"))]).as_deref(), Ok("10Gi"));
        assert_eq!(run("undefined_var", &[]), Err("undefined variable: undefined_var".into()));
    }

    #[test]
    fn error_messages() {
        assert_eq!(run("10 / 0", &[]), Err("division by zero".into()));
        assert_eq!(run("2 / 40m", &[]), Err("division by quantity".into()));
        assert_eq!(run("40m * 2m", &[]), Err("multiplication of two quantities".into()));
        assert_eq!(run("unknown(1, 2)", &[]), Err("unknown function: unknown".into()));
        assert_eq!(run("max(1)", &[]), Err("max function requires exactly 2 arguments, got 1".into()));
        assert_eq!(run("10 - 20", &[]), Err("calculation result is negative: -10".into()));
        assert_eq!(run("1 2", &[]), Err("parse error: syntax error at line 1, col 4".into()));
        assert_eq!(run("(1", &[]), Err("parse error: syntax error at line 1, col 3".into()));
        assert_eq!(
            check_expression("cpu*", "cpu"),
            Err("invalid expression: parse error: syntax error at line 1, col 5".into())
        );
        assert_eq!(
            check_expression("cpu - 2", "cpu"),
            Err("invalid expression: calculation result is negative: -1".into())
        );
        assert_eq!(check_expression("memory * 2", "cpu"), Err("invalid expression: undefined variable: memory".into()));
        assert_eq!(check_expression("max(cpu*50%, 100m)", "cpu"), Ok(()));
    }

    fn pod(containers: serde_json::Value, init: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"spec": {"containers": containers, "initContainers": init}})).unwrap()
    }

    fn policy(mode: &str, regex: &str, exprs: serde_json::Value) -> ResourcesPolicy {
        serde_json::from_value(json!({"targetContainersMode": mode, "targetContainersNameRegex": regex,
            "resourcesExpr": exprs}))
        .unwrap()
    }

    #[test]
    fn sum_and_max_over_the_targets() {
        let p = pod(
            json!([
                {"name": "app-1", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "512Mi"}}},
                {"name": "app-2", "resources": {"limits": {"cpu": "2", "memory": "2Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}},
                {"name": "other", "resources": {"limits": {"cpu": "8"}}},
                {"name": "side", "resources": {"limits": {"cpu": "8"}}}
            ]),
            json!([{"name": "app-native", "restartPolicy": "Always", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}},
                   {"name": "app-init", "resources": {"limits": {"cpu": "16"}}}]),
        );
        let sidecars = ["side".to_string()].into_iter().collect();
        let exprs = json!({"limits": {"cpu": "cpu * 50%", "memory": "memory / 2"}, "requests": {"cpu": "max(cpu * 10%, 50m)", "memory": "memory"}});
        let sum = sidecar_resources(&policy("sum", "^app", exprs.clone()), &p, &sidecars).unwrap();
        let show = |l: &Option<BTreeMap<String, K8sQuantity>>| -> Vec<(String, String)> {
            l.iter().flatten().map(|(k, v)| (k.clone(), v.0.clone())).collect()
        };
        // Limits: cpu 1+2+1 = 4 → 2; memory 1Gi+2Gi+1Gi = 4Gi → 2Gi. Requests: the native sidecar
        // has none (treated as 0): cpu 1.5 → 150m; memory 1.5Gi.
        assert_eq!(show(&sum.limits), [("cpu".into(), "2".into()), ("memory".into(), "2Gi".into())]);
        assert_eq!(show(&sum.requests), [("cpu".into(), "150m".into()), ("memory".into(), "1536Mi".into())]);
        let max = sidecar_resources(&policy("max", "^app", exprs), &p, &sidecars).unwrap();
        assert_eq!(show(&max.limits), [("cpu".into(), "1".into()), ("memory".into(), "1Gi".into())]);
        assert_eq!(show(&max.requests), [("cpu".into(), "100m".into()), ("memory".into(), "1Gi".into())]);
        // A target without a limit makes the aggregated limit unlimited: not set.
        let unlimited =
            sidecar_resources(&policy("sum", ".*", json!({"limits": {"memory": "memory"}})), &p, &sidecars).unwrap();
        assert_eq!(unlimited.limits, None, "`other` has no memory limit");
        // The sidecars of matched sets are never targets.
        let e =
            sidecar_resources(&policy("sum", "^side$", json!({"limits": {"cpu": "cpu"}})), &p, &sidecars).unwrap_err();
        assert_eq!(e.to_string(), "no containers match the regex pattern \"^side$\"");
        let e = sidecar_resources(&policy("sum", "^app", json!({"limits": {"cpu": "cpu - 100"}})), &p, &sidecars)
            .unwrap_err();
        assert!(e.to_string().starts_with("failed to evaluate CPU limits expression: "), "{e}");
    }
}
