//! Kubernetes resource quantities: parsing, rounding up to milli precision and the exact string
//! Go serialises. This is the "quantity normalisation" of spec §1.1.3, §1.2.3 and §1.5: kruise's
//! pod-template defaulting calls `SetDefaults_ResourceList` (every quantity gets `RoundUp(-3)`),
//! and JSON re-serialisation then prints `Quantity.String()`. Reproduces
//! `k8s.io/apimachinery/pkg/api/resource` (quantity.go, amount.go, math.go, suffix.go; v0.32, which
//! is unchanged at v0.35) with an exact decimal representation instead of int64/inf.Dec.
//!
//! Quirks kept on purpose, because they decide whether a mutating patch is emitted:
//! - Go remembers the input text when it already looks canonical (int64 fast path: scale a
//!   multiple of 3, no trailing "000", no leading zero; binary: mantissa not a multiple of 8) and
//!   prints that text back verbatim, so "+1" stays "+1", "05" stays "05", "1.500" stays "1.500".
//!   `RoundUp(-3)` keeps it when the parsed scale is already ≥ -3.
//! - DecimalSI values whose canonical exponent exceeds 18 print with no suffix at all
//!   ("1000E" -> "1"), because Go's suffix lookup fails silently.
//! - Parsing rounds away from zero to nano precision; BinarySI values are capped at 2^63-1 and
//!   fall back to DecimalSI between -1 and 1 (exclusive, non-zero).

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

/// Which of the three notations a quantity prints in (Go's `resource.Format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    DecimalExponent,
    BinarySI,
    DecimalSI,
}

/// Go's three parse errors, with their exact texts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuantityError {
    FormatWrong,
    Numeric,
    Suffix,
}

impl fmt::Display for QuantityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            QuantityError::FormatWrong => {
                "quantities must match the regular expression \
                 '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
            }
            QuantityError::Numeric => "unable to parse numeric part of quantity",
            QuantityError::Suffix => "unable to parse quantity's suffix",
        })
    }
}

impl std::error::Error for QuantityError {}

/// An exact quantity: `(-1)^negative × digits × 10^exp`.
#[derive(Clone, Debug)]
pub struct Quantity {
    negative: bool,
    /// Decimal digits of the magnitude, most significant first, no leading zeros; empty = 0.
    digits: Vec<u8>,
    exp: i64,
    format: Format,
    /// Go's `q.s`: the input text, reused when it was already canonical.
    cached: Option<String>,
    /// Go's `int64Amount.scale` when the int64 fast path was taken (decides whether `RoundUp`
    /// keeps `cached`); `None` for the `inf.Dec` path.
    int_scale: Option<i32>,
}

const MAX_INT64: &str = "9223372036854775807";

/// Parses, rounds up to milli precision and prints a quantity the way Kubernetes' defaulting
/// plus JSON re-encoding does. Surrounding whitespace is trimmed first, as
/// `Quantity.UnmarshalJSON` does before parsing.
pub fn normalize(s: &str) -> Result<String, QuantityError> {
    let mut q = Quantity::parse(s.trim())?;
    q.round_up_milli();
    Ok(q.canonical())
}

impl Quantity {
    /// Go's `ParseQuantity` (no whitespace allowed).
    pub fn parse(s: &str) -> Result<Quantity, QuantityError> {
        if s.is_empty() {
            return Err(QuantityError::FormatWrong);
        }
        if s == "0" {
            return Ok(Quantity::zero(Format::DecimalSI, Some("0".into()), Some(0)));
        }
        let scan = scan(s.as_bytes())?;
        let (base, exponent, format) = interpret_suffix(scan.suffix)?;

        let num_len = scan.num.len() as i32;
        let denom_len = scan.denom.len() as i32;
        let shifted: Vec<u8> = scan.num.iter().chain(scan.denom).map(|b| b - b'0').collect();
        // Go's fast path: the value fits an int64 at a scale no finer than nano.
        let (precision, scale) = match format {
            Format::DecimalExponent | Format::DecimalSI => (18 - num_len - denom_len, exponent.wrapping_sub(denom_len)),
            Format::BinarySI if denom_len == 0 => (15 - num_len - exponent * 3 / 10 - 1, 0),
            Format::BinarySI => (-1, 0),
        };
        let mut magnitude = shifted.clone();
        trim_leading(&mut magnitude);
        let mut int_path = precision >= 0 && scale >= -9;
        if int_path && base == 2 {
            let shifted_value = to_i128(&magnitude).and_then(|v| v.checked_mul(1i128 << exponent));
            int_path = shifted_value.is_some_and(|v| v <= i64::MAX as i128);
        }
        if !int_path && !scan.value_has_digit {
            return Err(QuantityError::Numeric);
        }

        let mut format = format;
        let exp = if base == 2 {
            for _ in 0..exponent / 10 {
                mul_small(&mut magnitude, 1024);
            }
            -(denom_len as i64)
        } else if int_path {
            scale as i64
        } else {
            // inf.Dec: scale(value text) + (-exponent), both int32 in Go.
            -(denom_len.wrapping_add(exponent.wrapping_neg()) as i64)
        };
        let mut q = Quantity {
            negative: !scan.positive,
            digits: magnitude,
            exp,
            format,
            cached: None,
            int_scale: int_path.then_some(scale),
        };
        if int_path {
            let canonical_text = if base == 2 {
                // Go: exponent%10 == 0 && value&7 != 0, on the mantissa before shifting.
                let tail: Vec<u8> = shifted.iter().rev().take(3).rev().copied().collect();
                to_i128(&tail).is_some_and(|v| v % 8 != 0)
            } else {
                let ends_000 = shifted.len() >= 3 && shifted.iter().rev().take(3).all(|&d| d == 0);
                scale % 3 == 0 && !ends_000 && shifted.first() != Some(&0)
            };
            if canonical_text {
                q.cached = Some(s.to_string());
            }
        } else {
            if !q.is_zero() {
                q.round_away(-9);
            }
            if format == Format::BinarySI {
                let max = Quantity::from_digits(MAX_INT64, 0);
                if cmp_magnitude(&q, &max) == Ordering::Greater {
                    q.digits = max.digits;
                    q.exp = 0;
                }
                if !q.is_zero() && cmp_magnitude(&q, &Quantity::from_digits("1", 0)).is_lt() {
                    format = Format::DecimalSI;
                }
            }
            q.format = format;
        }
        q.normalise_zero();
        Ok(q)
    }

    fn zero(format: Format, cached: Option<String>, int_scale: Option<i32>) -> Quantity {
        Quantity { negative: false, digits: Vec::new(), exp: 0, format, cached, int_scale }
    }

    fn from_digits(text: &str, exp: i64) -> Quantity {
        let mut digits: Vec<u8> = text.bytes().map(|b| b - b'0').collect();
        trim_leading(&mut digits);
        Quantity { negative: false, digits, exp, format: Format::DecimalSI, cached: None, int_scale: None }
    }

    fn normalise_zero(&mut self) {
        if self.is_zero() {
            self.negative = false;
        }
    }

    pub fn format(&self) -> Format {
        self.format
    }

    /// Go's `int64Amount` after `ParseQuantity` (`i.value`, `i.scale`) when the int64 fast path
    /// was taken; `None` on the `inf.Dec` path. With [`Quantity::cached_text`] (`s`) and the
    /// format, what spew prints of a parsed quantity (`compat::spew`).
    pub fn go_int64_amount(&self) -> Option<(i128, i32)> {
        let scale = self.int_scale?;
        let magnitude = to_i128(&self.digits)?;
        Some((if self.negative { -magnitude } else { magnitude }, scale))
    }

    /// Go's `q.s`: the input text when it was kept as canonical.
    pub fn cached_text(&self) -> Option<&str> {
        self.cached.as_deref()
    }

    pub fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    /// -1, 0 or 1.
    pub fn sign(&self) -> i32 {
        match (self.is_zero(), self.negative) {
            (true, _) => 0,
            (false, true) => -1,
            (false, false) => 1,
        }
    }

    /// Go's `RoundUp(scale)`: round away from zero to `10^scale` precision; returns whether the
    /// value was already exact. Keeps the remembered input text when Go would.
    pub fn round_up(&mut self, scale: i32) -> bool {
        if let Some(s) = self.int_scale {
            if s >= scale {
                return true;
            }
            self.int_scale = Some(scale);
        }
        self.cached = None;
        self.round_away(scale as i64)
    }

    /// `RoundUp(-3)`, what `SetDefaults_ResourceList` does to every quantity.
    pub fn round_up_milli(&mut self) -> bool {
        self.round_up(-3)
    }

    /// Rounds the value away from zero so that `exp >= scale`; true when nothing was lost.
    fn round_away(&mut self, scale: i64) -> bool {
        if self.exp >= scale || self.is_zero() {
            return true;
        }
        let drop = scale - self.exp;
        let keep = self.digits.len() as i64 - drop;
        let exact;
        if keep <= 0 {
            exact = false;
            self.digits = vec![1];
        } else {
            let tail = self.digits.split_off(keep as usize);
            exact = tail.iter().all(|&d| d == 0);
            if !exact {
                add_one(&mut self.digits);
            }
        }
        self.exp = scale;
        exact
    }

    /// `ceil(|q| × 10^-scale)` with the sign of `q` (Go's `ScaledValue`, int64 fast-path rounding:
    /// away from zero); `None` when it does not fit an `i128`.
    pub fn scaled_value(&self, scale: i32) -> Option<i128> {
        let mut q = self.clone();
        q.round_away(scale as i64);
        let shift = q.exp - scale as i64;
        let mut v = to_i128(&q.digits)?;
        if v == 0 {
            // Zero at any exponent: the loop below ends only by overflowing, and a zero never
            // does; `0e2147483647` spun for 2^31 rounds (found by the quantity fuzz target).
            return Some(0);
        }
        for _ in 0..shift {
            v = v.checked_mul(10)?;
        }
        Some(if q.negative { -v } else { v })
    }

    /// `MilliValue()`: the value in thousandths, rounded away from zero.
    pub fn milli_value(&self) -> Option<i128> {
        self.scaled_value(-3)
    }

    /// `Value()`: the value rounded away from zero to an integer.
    pub fn value(&self) -> Option<i128> {
        self.scaled_value(0)
    }

    /// Go's `Quantity.String()` (what `MarshalJSON` emits).
    pub fn canonical(&self) -> String {
        if let Some(s) = &self.cached {
            return s.clone();
        }
        if self.is_zero() {
            return "0".into();
        }
        let sign = if self.negative { "-" } else { "" };
        let mut format = self.format;
        let mut integer = None;
        if format == Format::BinarySI {
            let small = cmp_magnitude(self, &Quantity::from_digits("1024", 0)).is_lt();
            let mut rounded = self.clone();
            if small || !rounded.round_away(0) {
                format = Format::DecimalSI;
            } else {
                integer = Some(rounded);
            }
        }
        if let Some(rounded) = integer {
            let mut n = rounded.digits;
            n.extend(std::iter::repeat_n(0, rounded.exp as usize));
            let mut times = 0;
            loop {
                let (q, rem) = divmod_small(&n, 1024);
                if rem != 0 || q.is_empty() {
                    break;
                }
                n = q;
                times += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"].get(times).unwrap_or(&"");
            return format!("{sign}{}{suffix}", digits_text(&n));
        }
        let mut digits = self.digits.clone();
        let mut exp = self.exp;
        while digits.last() == Some(&0) {
            digits.pop();
            exp += 1;
        }
        while exp.rem_euclid(3) != 0 {
            digits.push(0);
            exp -= 1;
        }
        let suffix = match format {
            Format::DecimalExponent if exp == 0 => String::new(),
            Format::DecimalExponent => format!("e{exp}"),
            _ => decimal_suffix(exp).to_string(),
        };
        format!("{sign}{}{suffix}", digits_text(&digits))
    }
}

/// Arithmetic of kruise's resource calculator (`pkg/util/calculator`, spec §4.10): Go's
/// `NewMilliQuantity`, `NewQuantity`, `Add`, `Neg` and `SetMilli`, exact (values far beyond any
/// real resource saturate at ±2^127).
impl Quantity {
    /// `resource.NewMilliQuantity(milli, format)`.
    pub fn from_milli(milli: i64, format: Format) -> Quantity {
        Quantity::from_scaled(i128::from(milli), -3, format)
    }

    /// `resource.NewQuantity(value, format)`.
    pub fn from_int(value: i64, format: Format) -> Quantity {
        Quantity::from_scaled(i128::from(value), 0, format)
    }

    fn from_scaled(v: i128, exp: i64, format: Format) -> Quantity {
        let mut q = Quantity::from_digits(&v.unsigned_abs().to_string(), exp);
        q.negative = v < 0;
        q.format = format;
        q.normalise_zero();
        q
    }

    /// The value as an integer at `10^exp` (exact when `exp` is at most the quantity's own).
    fn at_exp(&self, exp: i64) -> i128 {
        let mut v = if self.is_zero() { 0 } else { to_i128(&self.digits).unwrap_or(i128::MAX) };
        for _ in 0..(self.exp - exp).max(0) {
            v = v.saturating_mul(10);
        }
        if self.negative { -v } else { v }
    }

    /// Go's `Add`: exact; a zero receiver takes the other's format.
    pub fn add(&mut self, other: &Quantity) {
        if self.is_zero() {
            self.format = other.format;
        }
        let exp = match (self.is_zero(), other.is_zero()) {
            (true, true) => 0,
            (true, false) => other.exp,
            (false, true) => self.exp,
            (false, false) => self.exp.min(other.exp),
        };
        let sum = self.at_exp(exp).saturating_add(other.at_exp(exp));
        *self = Quantity::from_scaled(sum, exp, self.format);
    }

    /// Go's `Neg`.
    pub fn neg(&mut self) {
        self.cached = None;
        if !self.is_zero() {
            self.negative = !self.negative;
        }
    }

    /// Go's `SetMilli`: the value becomes `milli / 1000`, the format stays.
    pub fn set_milli(&mut self, milli: i64) {
        *self = Quantity::from_scaled(i128::from(milli), -3, self.format);
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical())
    }
}

impl FromStr for Quantity {
    type Err = QuantityError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Quantity::parse(s)
    }
}

/// Equality and order are by value, like Go's `Cmp`/`Equal` ("1k" == "1000" == "1e3").
impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        match self.sign().cmp(&other.sign()) {
            Ordering::Equal if self.negative => cmp_magnitude(other, self),
            Ordering::Equal => cmp_magnitude(self, other),
            unequal => unequal,
        }
    }
}

/// Compares |a| and |b| without expanding exponents.
fn cmp_magnitude(a: &Quantity, b: &Quantity) -> Ordering {
    let (da, ea) = stripped(a);
    let (db, eb) = stripped(b);
    match (da.is_empty(), db.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Less,
        (false, true) => return Ordering::Greater,
        _ => {}
    }
    let top_a = da.len() as i64 + ea;
    let top_b = db.len() as i64 + eb;
    top_a.cmp(&top_b).then_with(|| {
        let n = da.len().max(db.len());
        let pad = |d: &[u8], i: usize| d.get(i).copied().unwrap_or(0);
        (0..n).map(|i| pad(da, i).cmp(&pad(db, i))).find(|o| o.is_ne()).unwrap_or(Ordering::Equal)
    })
}

fn stripped(q: &Quantity) -> (&[u8], i64) {
    let zeros = q.digits.iter().rev().take_while(|&&d| d == 0).count();
    (&q.digits[..q.digits.len() - zeros], q.exp + zeros as i64)
}

fn decimal_suffix(exp: i64) -> &'static str {
    match exp {
        -9 => "n",
        -6 => "u",
        -3 => "m",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        18 => "E",
        _ => "", // includes Go's silent lookup failure above 18
    }
}

fn digits_text(d: &[u8]) -> String {
    if d.is_empty() {
        return "0".into();
    }
    d.iter().map(|&x| char::from(b'0' + x)).collect()
}

fn trim_leading(d: &mut Vec<u8>) {
    let zeros = d.iter().take_while(|&&x| x == 0).count();
    d.drain(..zeros);
}

fn to_i128(d: &[u8]) -> Option<i128> {
    d.iter().try_fold(0i128, |acc, &x| acc.checked_mul(10)?.checked_add(x as i128))
}

fn mul_small(d: &mut Vec<u8>, m: u32) {
    let mut carry = 0u32;
    for x in d.iter_mut().rev() {
        let v = *x as u32 * m + carry;
        *x = (v % 10) as u8;
        carry = v / 10;
    }
    while carry > 0 {
        d.insert(0, (carry % 10) as u8);
        carry /= 10;
    }
    trim_leading(d);
}

fn divmod_small(d: &[u8], m: u32) -> (Vec<u8>, u32) {
    let mut q = Vec::with_capacity(d.len());
    let mut rem = 0u32;
    for &x in d {
        let cur = rem * 10 + x as u32;
        q.push((cur / m) as u8);
        rem = cur % m;
    }
    trim_leading(&mut q);
    (q, rem)
}

fn add_one(d: &mut Vec<u8>) {
    for x in d.iter_mut().rev() {
        if *x == 9 {
            *x = 0;
        } else {
            *x += 1;
            return;
        }
    }
    d.insert(0, 1);
}

/// What Go's `parseQuantityString` returns: sign, whether the numeric text holds a digit (what
/// `inf.Dec.SetString` needs), the numerator without leading zeros ("0" if none), the
/// fraction digits and the suffix.
struct Scan<'a> {
    positive: bool,
    value_has_digit: bool,
    num: &'a [u8],
    denom: &'a [u8],
    suffix: &'a [u8],
}

fn scan(s: &[u8]) -> Result<Scan<'_>, QuantityError> {
    const ZERO: &[u8] = b"0";
    let end = s.len();
    let mut pos = 0;
    let mut positive = true;
    match s.first() {
        Some(b'-') => {
            positive = false;
            pos = 1;
        }
        Some(b'+') => pos = 1,
        _ => {}
    }
    let sign_len = pos;
    while pos < end && s[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        return Ok(Scan { positive, value_has_digit: true, num: ZERO, denom: &[], suffix: &[] });
    }
    let start = pos;
    while pos < end && s[pos].is_ascii_digit() {
        pos += 1;
    }
    let num = if pos == start { ZERO } else { &s[start..pos] };
    let mut denom: &[u8] = &[];
    if pos < end && s[pos] == b'.' {
        pos += 1;
        let dstart = pos;
        while pos < end && s[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &s[dstart..pos];
    }
    let value_has_digit = s[sign_len..pos].iter().any(u8::is_ascii_digit);
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&s[pos]) {
        pos += 1;
    }
    if pos < end && (s[pos] == b'-' || s[pos] == b'+') {
        pos += 1;
    }
    while pos < end && s[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        return Err(QuantityError::FormatWrong);
    }
    Ok(Scan { positive, value_has_digit, num, denom, suffix: &s[suffix_start..] })
}

/// `quantitySuffixer.interpret`: (base, exponent, format).
fn interpret_suffix(suffix: &[u8]) -> Result<(u32, i32, Format), QuantityError> {
    let decimal = |e| Ok((10, e, Format::DecimalSI));
    let binary = |e| Ok((2, e, Format::BinarySI));
    match suffix {
        b"" => decimal(0),
        b"n" => decimal(-9),
        b"u" => decimal(-6),
        b"m" => decimal(-3),
        b"k" => decimal(3),
        b"M" => decimal(6),
        b"G" => decimal(9),
        b"T" => decimal(12),
        b"P" => decimal(15),
        b"E" => decimal(18),
        b"Ki" => binary(10),
        b"Mi" => binary(20),
        b"Gi" => binary(30),
        b"Ti" => binary(40),
        b"Pi" => binary(50),
        b"Ei" => binary(60),
        [b'e' | b'E', rest @ ..] if !rest.is_empty() => {
            let text = std::str::from_utf8(rest).map_err(|_| QuantityError::Suffix)?;
            // strconv.ParseInt(.., 10, 64) then int32(..), which wraps.
            let parsed: i64 = text.parse().map_err(|_| QuantityError::Suffix)?;
            Ok((10, parsed as i32, Format::DecimalExponent))
        }
        _ => Err(QuantityError::Suffix),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        match Quantity::parse(s) {
            Ok(q) => q,
            Err(e) => unreachable!("{s}: {e}"),
        }
    }

    /// Splits a compact table: rows separated by '|' or newlines, columns by whitespace.
    fn rows(table: &str) -> Vec<Vec<&str>> {
        table
            .split(['|', '\n'])
            .map(|row| row.split_whitespace().collect::<Vec<_>>())
            .filter(|cols| !cols.is_empty())
            .collect()
    }

    /// Go's TestQuantityParse table: `input canonical-value format` (S DecimalSI, B BinarySI,
    /// E DecimalExponent), plus the "-" and "+" variants the Go test derives from it.
    const PARSE_TABLE: &str = "
        0 0 S | 0n 0 S | 0u 0 S | 0m 0 S | 0Ki 0 B | 0k 0 S | 0Mi 0 B | 0M 0 S | 0Gi 0 B
        0G 0 S | 0Ti 0 B | 0T 0 S | 1 1 S | 1Ki 1Ki B | 8Ki 8Ki B | 7Mi 7Mi B | 6Gi 6Gi B
        5Ti 5Ti B | 4Pi 4Pi B | 3Ei 3Ei B | 10Ti 10Ti B | 100Ti 100Ti B | 5n 5n S | 4u 4u S
        3m 3m S | 9 9 S | 8k 8k S | 50k 50k S | 7M 7M S | 6G 6G S | 5T 5T S | 40T 40T S
        300T 300T S | 2P 2P S | 1E 1E S | 1E-3 1e-3 E | 1e3 1e3 E | 1E6 1e6 E | 1e9 1e9 E
        1E12 1e12 E | 1e15 1e15 E | 1E18 1e18 E | 1e14 100e12 E | 1e13 10e12 E
        100.035k 100035 S | 0.001 1m S | 0.0005k 500m S | 0.005 5m S | 0.05 50m S
        0.5 500m S | 0.00050k 500m S | 0.00500 5m S | 0.05000 50m S | 0.50000 500m S
        0.5e0 500e-3 E | 0.5e-1 50e-3 E | 0.5e-2 5e-3 E | 10.035M 10035k S | 1.2e3 1200 E
        1.3E+6 1300e3 E | 1.40e9 1400e6 E | 1.53E12 1530e9 E | 1.6e15 1600e12 E
        1.7E18 1700e15 E | 9.01 9010m S | 8.1k 8100 S | 7.123456M 7123456 S
        6.987654321G 6987654321 S | 5.444T 5444G S | 40.1T 40100G S | 300.2T 300200G S
        2.5P 2500T S | 1.01E 1010P S | 3.001n 4n S | 1.1E-9 2e-9 E | 0.0000000001 1n S
        0.0000000005 1n S | 0.00000000050 1n S | 0.5e-9 1e-9 E | 0.9n 1n S
        0.00000012345 124n S | 0.00000012354 124n S | 9Ei 9223372036854775807 B
        9223372036854775807Ki 9223372036854775807 B | 12E 12E S | 100.035Ki 102435840m B
        0.5Mi 512Ki B | 0.05Gi 53687091200m B | 0.025Ti 27487790694400m B
        0.000000000001Ki 2n S | .001 1m S | .0001k 100m S | 1. 1 S | 1.G 1G S";

    /// Zero at a huge exponent: `scaled_value` multiplied by 10 until it overflowed, which a
    /// zero never does (2^31 rounds; the quantity fuzz target,
    /// tests/data/fuzz/quantity/hang-huge-negative-exponent).
    #[test]
    fn zero_at_any_exponent_scales_at_once() {
        for s in [".e-905000500002", "0e2147483647", "0.0e999999999", "0E-2147483648"] {
            let q = Quantity::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
            assert!(q.is_zero(), "{s}");
            assert_eq!((q.milli_value(), q.value(), q.scaled_value(-9)), (Some(0), Some(0), Some(0)), "{s}");
        }
        // Non-zero values still overflow into None rather than loop.
        assert_eq!(Quantity::parse("1e2147483647").unwrap().value(), None);
    }

    #[test]
    fn parse_table_from_go() {
        for row in rows(PARSE_TABLE) {
            let [input, want, format] = row[..] else { unreachable!("{row:?}") };
            let format = match format {
                "S" => Format::DecimalSI,
                "B" => Format::BinarySI,
                _ => Format::DecimalExponent,
            };
            let got = q(input);
            assert_eq!(got.format(), format, "{input}");
            // Go's String() may reuse the input text; check the value through a fresh copy.
            let mut fresh = got.clone();
            fresh.cached = None;
            assert_eq!(fresh.canonical(), want, "{input}");
            assert_eq!(got, q(want), "{input} value");
            let neg = q(&format!("-{input}"));
            assert_eq!(neg.format(), format, "-{input}");
            assert_eq!(neg.sign(), -got.sign(), "-{input}");
            assert_eq!(q(&format!("+{input}")), got, "+{input}");
        }
    }

    /// `input String()`: Go's TestQuantityString (canonical text is kept on parse, alternates
    /// canonicalise) and TestQuantityParseEmit, then quirks read off ParseQuantity: text Go
    /// remembers verbatim, the missing suffix above E, and inputs that parse as zero.
    const STRING_TABLE: &str = "
        1Gi 1Gi | 1024Mi 1Gi | 300Mi 300Mi | 307200Ki 300Mi | 6Ki 6Ki | 1001Gi 1001Gi
        1025024Mi 1001Gi | 1Ti 1Ti | 1024Gi 1Ti | 5 5 | 5000m 5 | 500m 500m | 0.5 500m
        1G 1G | 1000M 1G | 0.001T 1G | 1m 1m | 1000u 1m | 80m 80m | 1080m 1080m | 1.08 1080m
        1080000000n 1080m | 300M 300M | 1T 1T | 1234567M 1234567M | 1234567m 1234567m
        3k 3k | 1025 1025 | 0 0 | 1e9 1e9 | .001e12 1e9 | 1e-3 1e-3 | 0.001e0 1e-3
        1e-9 1e-9 | 1000e-12 1e-9 | 80e-3 80e-3 | 300e6 300e6 | 1e12 1e12 | 1e3 1e3
        3e3 3e3 | 00 0 | 1n 1n | 80n 80n | 1080n 1080n | 1u 1u | 80u 80u | 1080u 1080u
        1Ki 1Ki | 1Mi 1Mi | .001Ki 1024m | .000001Ki 1024u | .000000001Ki 1024n
        .000000000001Ki 2n | -.001Ki -1024m | -1024Mi -1Gi | -9.01 -9010m | 1000 1k
        1.5Gi 1536Mi | 0.1Gi 107374182400m | 1.5 1500m | 1025Ki 1025Ki | 2048Ki 2Mi
        1536Ki 1536Ki | 1024Ki 1Mi | 1536 1536 | 1e100 10e99 | 1e-100 1e-9
        1000E 1 | 10000E 10
        +1 +1 | 05 05 | 1.500 1.500 | +1Ki +1Ki | 01Ki 01Ki | 1E3 1E3 | -1 -1
        -0 0 | + 0 | - 0 | . 0 | m 0 | Ki 0";

    #[test]
    fn string_table_from_go() {
        for row in rows(STRING_TABLE) {
            let [input, want] = row[..] else { unreachable!("{row:?}") };
            assert_eq!(q(input).canonical(), want, "{input}");
        }
    }

    /// Go's TestParseQuantity (values around the int64 limits): `input String()`; inputs that
    /// print unchanged are listed alone.
    const BIG_TABLE: &str = "
        -999999999999999999 | 999999999999999999 | -9999999999999999999 | 9999999999999999999
        -1E | 1E | -1000000000000000001 | 1000000000000000001 | -10E | 10E
        -10000000000000000001 | 10000000000000000001 | -9223372036854775809
        9223372036854775806 | -9223372036854775808 | 9223372036854775807
        -9223372036854775807 | 9223372036854775808
        999999999999999999.0 999999999999999999 | -999999999999999999.1 -999999999999999999100m
        -1000000000000000000 -1E | 1000000000000000000.0 1E | 1.0E 1E
        9999999999999999999000m 9999999999999999999
        -1.0000000000000000001E -1000000000000000000100m
        1000000000000000000.1 1000000000000000000100m
        1.000000000000000001E 1000000000000000001 | 10000000000000000000 10E | -10.0E -10E
        10000000000000000000000m 10E | 10.0000000000000000001E 10000000000000000000100m
        -10.000000000000000001E -10000000000000000001
        9223372036854775806000m 9223372036854775806
        -9223372036854775808.1 -9223372036854775808100m
        9223372036854775808.1 9223372036854775808100m";

    #[test]
    fn big_values_from_go() {
        for row in rows(BIG_TABLE) {
            let (input, want) = match row[..] {
                [same] => (same, same),
                [input, want] => (input, want),
                _ => unreachable!("{row:?}"),
            };
            assert_eq!(q(input).canonical(), want, "{input}");
        }
    }

    #[test]
    fn invalid_inputs() {
        use QuantityError::*;
        // Go's invalid list, then our own; whitespace-free inputs first.
        let words = [
            ("1.1.M 1+1.0M 0.1am aoeu Non-Numeric invalid 1Gié", FormatWrong),
            ("0.1mi .5i 1i -3.01i -3.01e- 1K 1e 1ee3 1Mi5 1e99999999999999999999", Suffix),
            (".e-10 Ei -.Pi", Numeric),
        ];
        let mut table: Vec<(&str, QuantityError)> =
            vec![("", FormatWrong), (" 1", FormatWrong), ("1 ", FormatWrong), ("1.5 Gi", FormatWrong)];
        for (inputs, err) in words {
            table.extend(inputs.split_whitespace().map(|i| (i, err)));
        }
        for (input, want) in table {
            assert_eq!(Quantity::parse(input).err(), Some(want), "{input:?}");
        }
        assert_eq!(
            FormatWrong.to_string(),
            "quantities must match the regular expression \
             '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        );
        assert_eq!(Numeric.to_string(), "unable to parse numeric part of quantity");
        assert_eq!(Suffix.to_string(), "unable to parse quantity's suffix");
    }

    /// `input scale String() exact`: Go's TestQuantityRoundUp (both signs), then RoundUp(-3)
    /// cases exercising the int64 / inf.Dec paths and the remembered text.
    const ROUND_UP_TABLE: &str = "
        9.01 -3 9010m true | 9.01 -2 9010m true | 9.01 -1 9100m false | 9.01 0 10 false
        9.01 1 10 false | 9.01 2 100 false | -9.01 -3 -9010m true | -9.01 -2 -9010m true
        -9.01 -1 -9100m false | -9.01 0 -10 false | -9.01 1 -10 false | -9.01 2 -100 false
        1n -3 1m false | 1500u -3 2m false | 1000u -3 1m true | 0.0001 -3 1m false
        -0.0001 -3 -1m false | 1.0001 -3 1001m false | 100.035Ki -3 102435840m true
        0.000000000001Ki -3 1m false | 1e-7 -3 1e-3 false | 0 -3 0 true
        1.234567Gi -3 1325606222431m false | 1.500 -3 1.500 true | 1500m -3 1500m true";

    #[test]
    fn round_up_table() {
        for row in rows(ROUND_UP_TABLE) {
            let [input, scale, want, exact] = row[..] else { unreachable!("{row:?}") };
            let mut v = q(input);
            let scale: i32 = scale.parse().unwrap_or_default();
            assert_eq!(v.round_up(scale), exact == "true", "{input} {scale}");
            assert_eq!(v.canonical(), want, "{input} {scale}");
        }
    }

    /// `input normalize(input)`: parse + RoundUp(-3) + String(), what defaulting does to every
    /// resource quantity.
    const NORMALIZE_TABLE: &str = "
        100m 100m | 0.5 500m | 1000m 1 | 1.5Gi 1536Mi | 1e3 1e3 | 1000 1k | 128Mi 128Mi
        134217728 134217728 | 1G 1G | 2000M 2G | 0.1 100m | 0.1Gi 107374182400m | 250u 1m
        1n 1m | 1.5001 1501m | 1.500 1.500 | 05 05 | +1 +1 | 1500u 2m | 0 0 | 0.0 0 | -1 -1
        -0.0001 -1m | 1Ki 1Ki | 1024 1024 | 4096Ki 4Mi";

    #[test]
    fn normalize_table() {
        for row in rows(NORMALIZE_TABLE) {
            let [input, want] = row[..] else { unreachable!("{row:?}") };
            assert_eq!(normalize(input).as_deref(), Ok(want), "{input}");
        }
        // Whitespace is trimmed as Quantity.UnmarshalJSON does, but not inside.
        assert_eq!(normalize("  2Gi \n").as_deref(), Ok("2Gi"));
        assert_eq!(normalize("1 Gi"), Err(QuantityError::FormatWrong));
        assert_eq!(normalize(""), Err(QuantityError::FormatWrong));
    }

    #[test]
    fn ordering_and_values() {
        let cmp: &[(&str, &str, Ordering)] = &[
            ("0", "0", Ordering::Equal),
            ("100m", "50m", Ordering::Greater),
            ("50m", "100m", Ordering::Less),
            ("10000T", "100Gi", Ordering::Greater),
            ("1k", "1000", Ordering::Equal),
            ("1e3", "1k", Ordering::Equal),
            ("1Ki", "1024", Ordering::Equal),
            ("-1", "1m", Ordering::Less),
            ("-2", "-1", Ordering::Less),
            ("1e100", "9Ei", Ordering::Greater),
            ("800m", "790m", Ordering::Greater),
            ("0.9", "1", Ordering::Less),
        ];
        for &(a, b, want) in cmp {
            assert_eq!(q(a).cmp(&q(b)), want, "{a} vs {b}");
        }
        let values: &[(&str, Option<i128>, Option<i128>)] = &[
            ("1", Some(1000), Some(1)),
            ("1.5", Some(1500), Some(2)),
            ("1n", Some(1), Some(1)),
            ("-1.5", Some(-1500), Some(-2)),
            ("1Gi", Some(1_073_741_824_000), Some(1_073_741_824)),
            ("1e100", None, None),
        ];
        for &(s, milli, value) in values {
            assert_eq!(q(s).milli_value(), milli, "{s}");
            assert_eq!(q(s).value(), value, "{s}");
        }
        let mut sorted = [q("1Gi"), q("1"), q("500m"), q("1G")];
        sorted.sort();
        let texts: Vec<String> = sorted.iter().map(Quantity::canonical).collect();
        assert_eq!(texts, ["500m", "1", "1G", "1Gi"]);
    }
}
