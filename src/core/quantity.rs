//! INTERIM (replaced by the Go-compatible port of `resource.Quantity`): validates the quantity
//! grammar and returns the value unchanged.

/// A quantity that does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuantityError;

/// Interim: grammar check only.
pub fn normalize(s: &str) -> Result<String, QuantityError> {
    let ok = !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-'));
    if ok { Ok(s.to_string()) } else { Err(QuantityError) }
}
