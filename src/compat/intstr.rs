//! Number helpers of the workload validators (spec §2.0 "Number helpers"): the three ways kruise
//! and Kubernetes turn an `IntOrString` into a number, which differ and are all observable.
//! - [`kruise_scaled_value`] — kruise `util.GetScaledValueFromIntOrPercent`: a string must end
//!   with `%`, the number part is a FLOAT ("12.5%" is fine, "-10%" is negative), ints are taken
//!   as they are (negative allowed). CloneSet partition/maxUnavailable/maxSurge use it.
//! - [`k8s_scaled_value`] — Kubernetes `intstr.GetScaledValueFromIntOrPercent`: the number part
//!   must be an INTEGER ("12.5%" is an error).
//! - [`k8s_value_from_int_or_percent`] — the deprecated `intstr.GetValueFromIntOrPercent` that
//!   Advanced StatefulSet's maxUnavailable rule calls: every `%` is stripped and any string is a
//!   percentage ("5" is 5%).
//!
//! Plus `ValidatePositiveIntOrPercent`, `IsNotMoreThan100Percent`, `ValidateNonnegativeField` and
//! kruise's `CalculatePartitionReplicas`. Error texts are Go's, including `strconv`'s.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;

use crate::compat::field::{FieldError, go_quote};
use crate::compat::names::regex_error;

/// `IsNegativeErrorMsg`.
pub const IS_NEGATIVE_ERROR_MSG: &str = "must be greater than or equal to 0";
const PERCENT_FMT: &str = "[0-9]+%";
const PERCENT_ERR_MSG: &str = "a valid percent string must be a numeric string followed by an ending '%'";

/// `IntOrString.String()`: the integer in decimal, or the string as is.
pub fn go_string(v: &IntOrString) -> String {
    match v {
        IntOrString::Int(i) => i.to_string(),
        IntOrString::String(s) => s.clone(),
    }
}

/// `(*IntOrString).String()` on a possibly nil pointer: `"<nil>"` for nil.
pub fn go_string_opt(v: Option<&IntOrString>) -> String {
    v.map_or_else(|| "<nil>".to_string(), go_string)
}

/// The value an error message shows for an `IntOrString`: the int bare, the string quoted, `null`
/// when unset (Go would print the struct with `%#v`; this is the decision of `compat::field`).
pub fn to_value(v: Option<&IntOrString>) -> Value {
    match v {
        None => Value::Null,
        Some(IntOrString::Int(i)) => Value::from(*i),
        Some(IntOrString::String(s)) => Value::from(s.as_str()),
    }
}

/// `strconv.Atoi` on a 64-bit platform, with its error texts.
pub fn go_atoi(s: &str) -> Result<i64, String> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("strconv.Atoi: parsing {}: invalid syntax", go_quote(s)));
    }
    s.parse::<i64>().map_err(|_| format!("strconv.Atoi: parsing {}: value out of range", go_quote(s)))
}

/// `strconv.ParseFloat(s, 64)` for decimal input, with its error texts. (Go also accepts hex
/// floats such as `0x1p3`; nobody writes those in a partition.)
pub fn go_parse_float(s: &str) -> Result<f64, String> {
    let invalid = || format!("strconv.ParseFloat: parsing {}: invalid syntax", go_quote(s));
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let special = matches!(body.to_ascii_lowercase().as_str(), "inf" | "infinity" | "nan");
    let plausible = special || (!body.is_empty() && body.bytes().all(|b| b.is_ascii_digit() || b"eE.+-".contains(&b)));
    if !plausible {
        return Err(invalid());
    }
    let v: f64 = s.parse().map_err(|_| invalid())?;
    if v.is_infinite() && !special {
        return Err(format!("strconv.ParseFloat: parsing {}: value out of range", go_quote(s)));
    }
    Ok(v)
}

/// Go's `int(f)` on amd64: NaN, infinities and out-of-range values become `math.MinInt64`.
fn go_float_to_int(f: f64) -> i64 {
    // [-2^63, 2^63): `i64::MAX as f64` rounds up to 2^63, which is out of range.
    if (i64::MIN as f64..i64::MAX as f64).contains(&f) { f as i64 } else { i64::MIN }
}

fn scale(value: f64, total: i64, round_up: bool) -> i64 {
    let v = value * total as f64 / 100.0;
    go_float_to_int(if round_up { v.ceil() } else { v.floor() })
}

/// kruise `util.GetScaledValueFromIntOrPercent`.
pub fn kruise_scaled_value(v: Option<&IntOrString>, total: i64, round_up: bool) -> Result<i64, String> {
    match v {
        None => Err("nil value for IntOrString".into()),
        Some(IntOrString::Int(i)) => Ok(i64::from(*i)),
        Some(IntOrString::String(s)) => {
            let number = s.strip_suffix('%').ok_or("invalid type: string is not a percentage")?;
            Ok(scale(go_parse_float(number)?, total, round_up))
        }
    }
}

/// Kubernetes `intstr.GetScaledValueFromIntOrPercent` (`getIntOrPercentValueSafely`).
pub fn k8s_scaled_value(v: Option<&IntOrString>, total: i64, round_up: bool) -> Result<i64, String> {
    match v {
        None => Err("nil value for IntOrString".into()),
        Some(IntOrString::Int(i)) => Ok(i64::from(*i)),
        Some(IntOrString::String(s)) => {
            let Some(number) = s.strip_suffix('%') else {
                return Err("invalid value for IntOrString: invalid type: string is not a percentage".into());
            };
            let n = go_atoi(number)
                .map_err(|e| format!("invalid value for IntOrString: invalid value {}: {e}", go_quote(s)))?;
            Ok(scale(n as f64, total, round_up))
        }
    }
}

/// Kubernetes' deprecated `intstr.GetValueFromIntOrPercent` (`getIntOrPercentValue`): every `%`
/// is removed and any string counts as a percentage.
pub fn k8s_value_from_int_or_percent(v: Option<&IntOrString>, total: i64, round_up: bool) -> Result<i64, String> {
    match v {
        None => Err("nil value for IntOrString".into()),
        Some(IntOrString::Int(i)) => Ok(i64::from(*i)),
        Some(IntOrString::String(s)) => {
            let n = go_atoi(&s.replace('%', ""))
                .map_err(|e| format!("invalid value for IntOrString: invalid value {}: {e}", go_quote(s)))?;
            Ok(scale(n as f64, total, round_up))
        }
    }
}

/// `IsValidPercent`: `^[0-9]+%$`.
pub fn is_valid_percent(s: &str) -> Vec<String> {
    let ok = s.strip_suffix('%').is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    if ok { Vec::new() } else { vec![regex_error(PERCENT_ERR_MSG, PERCENT_FMT, &["1%", "93%"])] }
}

/// `ValidateNonnegativeField`.
pub fn validate_nonnegative(value: i64, path: &str) -> Vec<FieldError> {
    if value < 0 { vec![FieldError::invalid(path, value, IS_NEGATIVE_ERROR_MSG)] } else { Vec::new() }
}

/// apps `ValidatePositiveIntOrPercent`: a percent string matching `^[0-9]+%$`, or an int ≥ 0.
pub fn validate_positive_int_or_percent(v: &IntOrString, path: &str) -> Vec<FieldError> {
    match v {
        IntOrString::String(s) => {
            is_valid_percent(s).into_iter().map(|msg| FieldError::invalid(path, to_value(Some(v)), msg)).collect()
        }
        IntOrString::Int(i) => validate_nonnegative(i64::from(*i), path),
    }
}

/// apps `IsNotMoreThan100Percent`: a valid percent string above 100% is an error; anything else
/// (ints included) passes.
pub fn is_not_more_than_100_percent(v: &IntOrString, path: &str) -> Vec<FieldError> {
    let IntOrString::String(s) = v else { return Vec::new() };
    if !is_valid_percent(s).is_empty() {
        return Vec::new();
    }
    match go_atoi(s.trim_end_matches('%')) {
        Ok(n) if n > 100 => vec![FieldError::invalid(path, to_value(Some(v)), "must not be greater than 100%")],
        _ => Vec::new(),
    }
}

/// kruise `CalculatePartitionReplicas`: nil → 0; the kruise scaled value rounded UP over
/// replicas (nil replicas → 1); a percent other than exactly "100%" that reaches every replica
/// keeps one pod to update (when replicas > 1); then clamped to `[0, replicas]`.
pub fn calculate_partition_replicas(partition: Option<&IntOrString>, replicas: Option<i32>) -> Result<i64, String> {
    let Some(p) = partition else { return Ok(0) };
    let replicas = i64::from(replicas.unwrap_or(1));
    let mut value = kruise_scaled_value(Some(p), replicas, true)?;
    if replicas > 1 && value == replicas && matches!(p, IntOrString::String(s) if s != "100%") {
        value = replicas - 1;
    }
    Ok(value.min(replicas).max(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::field::aggregate;

    fn int(i: i32) -> IntOrString {
        IntOrString::Int(i)
    }

    type Expected = Result<i64, &'static str>;

    fn s(v: &str) -> IntOrString {
        IntOrString::String(v.into())
    }

    #[test]
    fn kruise_scaled_value_table() {
        #[rustfmt::skip]
        let cases: Vec<(Option<IntOrString>, i64, bool, Expected)> = vec![
            (None, 10, true, Err("nil value for IntOrString")),
            (Some(int(3)), 10, true, Ok(3)),
            (Some(int(-2)), 10, true, Ok(-2)),
            (Some(s("20%")), 10, true, Ok(2)),
            (Some(s("25%")), 10, true, Ok(3)),
            (Some(s("25%")), 10, false, Ok(2)),
            (Some(s("12.5%")), 8, true, Ok(1)),
            (Some(s("12.5%")), 7, false, Ok(0)),
            (Some(s("-10%")), 10, true, Ok(-1)),
            (Some(s("120%")), 5, true, Ok(6)),
            (Some(s("5")), 10, true, Err("invalid type: string is not a percentage")),
            (Some(s("")), 10, true, Err("invalid type: string is not a percentage")),
            (Some(s("abc%")), 10, true, Err("strconv.ParseFloat: parsing \"abc\": invalid syntax")),
            (Some(s("%")), 10, true, Err("strconv.ParseFloat: parsing \"\": invalid syntax")),
            (Some(s("1e400%")), 10, true, Err("strconv.ParseFloat: parsing \"1e400\": value out of range")),
            (Some(s("NaN%")), 10, true, Ok(i64::MIN)),
        ];
        for (v, total, up, want) in cases {
            let got = kruise_scaled_value(v.as_ref(), total, up);
            assert_eq!(got, want.map_err(String::from), "{v:?} of {total} (up={up})");
        }
    }

    #[test]
    fn k8s_scaled_value_table() {
        #[rustfmt::skip]
        let cases: Vec<(Option<IntOrString>, i64, Expected)> = vec![
            (None, 10, Err("nil value for IntOrString")),
            (Some(int(4)), 10, Ok(4)),
            (Some(s("25%")), 10, Ok(3)),
            (Some(s("0%")), 10, Ok(0)),
            (Some(s("12.5%")), 10, Err("invalid value for IntOrString: invalid value \"12.5%\": strconv.Atoi: parsing \"12.5\": invalid syntax")),
            (Some(s("5")), 10, Err("invalid value for IntOrString: invalid type: string is not a percentage")),
        ];
        for (v, total, want) in cases {
            assert_eq!(k8s_scaled_value(v.as_ref(), total, true), want.map_err(String::from), "{v:?}");
        }
    }

    #[test]
    fn legacy_value_from_int_or_percent_treats_every_string_as_percent() {
        #[rustfmt::skip]
        let cases: Vec<(IntOrString, i64, Expected)> = vec![
            (int(2), 1, Ok(2)),
            (s("50%"), 1, Ok(1)),
            (s("0%"), 1, Ok(0)),
            (s("5"), 1, Ok(1)),
            (s("%5%"), 100, Ok(5)),
            (s("x%"), 1, Err("invalid value for IntOrString: invalid value \"x%\": strconv.Atoi: parsing \"x\": invalid syntax")),
        ];
        for (v, total, want) in cases {
            assert_eq!(k8s_value_from_int_or_percent(Some(&v), total, true), want.map_err(String::from), "{v:?}");
        }
    }

    #[test]
    fn atoi_and_parse_float_errors() {
        assert_eq!(go_atoi("+12"), Ok(12));
        assert_eq!(go_atoi("-3"), Ok(-3));
        assert_eq!(go_atoi(""), Err("strconv.Atoi: parsing \"\": invalid syntax".into()));
        assert_eq!(go_atoi("1_0"), Err("strconv.Atoi: parsing \"1_0\": invalid syntax".into()));
        assert_eq!(
            go_atoi("99999999999999999999"),
            Err("strconv.Atoi: parsing \"99999999999999999999\": value out of range".into())
        );
        assert_eq!(go_parse_float("1."), Ok(1.0));
        assert_eq!(go_parse_float(".5"), Ok(0.5));
        assert_eq!(go_parse_float("-Inf"), Ok(f64::NEG_INFINITY));
        assert!(go_parse_float("1,5").is_err());
    }

    #[test]
    fn positive_int_or_percent_table() {
        let pct = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or \
                   '93%', regex used for validation is '[0-9]+%')";
        #[rustfmt::skip]
        let cases: Vec<(IntOrString, String)> = vec![
            (int(0), String::new()),
            (int(3), String::new()),
            (s("0%"), String::new()),
            (s("100%"), String::new()),
            (s("250%"), String::new()),
            (int(-1), "p: Invalid value: -1: must be greater than or equal to 0".into()),
            (s("5"), format!("p: Invalid value: \"5\": {pct}")),
            (s("-5%"), format!("p: Invalid value: \"-5%\": {pct}")),
            (s("1.5%"), format!("p: Invalid value: \"1.5%\": {pct}")),
        ];
        for (v, want) in cases {
            assert_eq!(aggregate(&validate_positive_int_or_percent(&v, "p")), want, "{v:?}");
        }
    }

    #[test]
    fn not_more_than_100_percent() {
        for (v, bad) in [(s("100%"), false), (s("101%"), true), (int(500), false), (s("x%"), false)] {
            let errs = is_not_more_than_100_percent(&v, "p");
            assert_eq!(!errs.is_empty(), bad, "{v:?}");
            if bad {
                assert_eq!(aggregate(&errs), "p: Invalid value: \"101%\": must not be greater than 100%");
            }
        }
    }

    #[test]
    fn partition_replicas_table() {
        #[rustfmt::skip]
        let cases: Vec<(Option<IntOrString>, Option<i32>, Expected)> = vec![
            (None, Some(5), Ok(0)),
            (Some(int(2)), Some(5), Ok(2)),
            (Some(int(9)), Some(5), Ok(5)),
            (Some(int(-1)), Some(5), Ok(0)),
            (Some(s("50%")), Some(5), Ok(3)),
            (Some(s("99%")), Some(5), Ok(4)),
            (Some(s("100%")), Some(5), Ok(5)),
            (Some(s("120%")), Some(5), Ok(5)),
            (Some(s("99%")), Some(1), Ok(1)),
            (Some(s("50%")), None, Ok(1)),
            (Some(s("1%")), Some(0), Ok(0)),
            (Some(s("5")), Some(5), Err("invalid type: string is not a percentage")),
        ];
        for (p, r, want) in cases {
            assert_eq!(calculate_partition_replicas(p.as_ref(), r), want.map_err(String::from), "{p:?} of {r:?}");
        }
    }

    #[test]
    fn strings_and_values() {
        assert_eq!(go_string(&int(3)), "3");
        assert_eq!(go_string_opt(None), "<nil>");
        assert_eq!(to_value(Some(&s("5%"))), Value::from("5%"));
        assert_eq!(to_value(None), Value::Null);
    }
}
