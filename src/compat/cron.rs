//! `github.com/robfig/cron/v3` v3.0.1 (the version kruise v1.8.4 vendors): the schedule parser
//! (`parser.go`: `ParseStandard`, `NewParser(...).Parse`, descriptors `@yearly` … `@hourly` and
//! `@every <duration>`, the `TZ=` / `CRON_TZ=` prefixes) and `Next` of `SpecSchedule`
//! (`spec.go`) and `ConstantDelaySchedule` (`constantdelay.go`), with Go's error texts, plus the
//! pieces of Go's `time` package they lean on: `time.ParseDuration`, `time.LoadLocation` and
//! `time.Date`'s choice of offset around daylight-saving transitions (the `Next` of a schedule in
//! New York or São Paulo depends on it).
//!
//! Quirks kept on purpose, because kruise's admission and schedule follow them: `*-5` is `*`;
//! an empty list (`,`) matches nothing (so `Next` finds no time); a schedule without time zone
//! runs in the zone of the time it is asked about (Go's `time.Local` case: the manager's clock
//! is UTC, as in kruise's image). One divergence: a `TZ=` prefix with nothing after it makes Go
//! panic (slice bounds); here it is an error.
//!
//! Time zones come from jiff's database (the system's zoneinfo first, then the copy bundled in
//! the binary, as kruise embeds `time/tzdata`); names are matched case-sensitively, as Go's file
//! lookup does.

use std::fmt::Write as _;

use k8s_openapi::jiff::tz::TimeZone;
use k8s_openapi::jiff::{Timestamp, Zoned};

use super::intstr::go_atoi;

/// Parser options (`cron.ParseOption`).
pub mod options {
    /// Seconds field, default 0.
    pub const SECOND: u32 = 1;
    /// Optional seconds field, default 0.
    pub const SECOND_OPTIONAL: u32 = 1 << 1;
    /// Minutes field, default 0.
    pub const MINUTE: u32 = 1 << 2;
    /// Hours field, default 0.
    pub const HOUR: u32 = 1 << 3;
    /// Day of month field, default `*`.
    pub const DOM: u32 = 1 << 4;
    /// Month field, default `*`.
    pub const MONTH: u32 = 1 << 5;
    /// Day of week field, default `*`.
    pub const DOW: u32 = 1 << 6;
    /// Optional day of week field, default `*`.
    pub const DOW_OPTIONAL: u32 = 1 << 7;
    /// Descriptors such as `@monthly`.
    pub const DESCRIPTOR: u32 = 1 << 8;
}
use options::*;

const PLACES: [u32; 6] = [SECOND, MINUTE, HOUR, DOM, MONTH, DOW];
const DEFAULTS: [&str; 6] = ["0", "0", "0", "*", "*", "*"];

/// The top bit, set when a field was given as `*` (or `?`).
pub const STAR_BIT: u64 = 1 << 63;

/// The range of one field, with its names (`cron.bounds`).
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// Smallest value.
    pub min: u64,
    /// Largest value.
    pub max: u64,
    /// Lower-case names and their values.
    pub names: &'static [(&'static str, u64)],
}

/// Seconds, 0–59.
pub const SECONDS: Bounds = Bounds { min: 0, max: 59, names: &[] };
/// Minutes, 0–59.
pub const MINUTES: Bounds = Bounds { min: 0, max: 59, names: &[] };
/// Hours, 0–23.
pub const HOURS: Bounds = Bounds { min: 0, max: 23, names: &[] };
/// Days of month, 1–31.
pub const DAYS_OF_MONTH: Bounds = Bounds { min: 1, max: 31, names: &[] };
/// Months, 1–12 or `jan`–`dec`.
pub const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("may", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ],
};
/// Days of week, 0–6 (Sunday is 0) or `sun`–`sat`.
pub const DAYS_OF_WEEK: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &[("sun", 0), ("mon", 1), ("tue", 2), ("wed", 3), ("thu", 4), ("fri", 5), ("sat", 6)],
};

/// Where a schedule runs.
#[derive(Clone, Debug)]
pub enum Location {
    /// Go's `time.Local`: in the zone of the time `Next` is given.
    Local,
    /// A named (or UTC) zone.
    Zone(TimeZone),
}

impl PartialEq for Location {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Location::Local, Location::Local) => true,
            (Location::Zone(a), Location::Zone(b)) => a.iana_name() == b.iana_name() && a == b,
            _ => false,
        }
    }
}

/// A crontab schedule as bit sets (`cron.SpecSchedule`).
#[derive(Clone, Debug, PartialEq)]
pub struct SpecSchedule {
    pub second: u64,
    pub minute: u64,
    pub hour: u64,
    pub dom: u64,
    pub month: u64,
    pub dow: u64,
    pub location: Location,
}

/// A parsed schedule (`cron.Schedule`).
#[derive(Clone, Debug, PartialEq)]
pub enum Schedule {
    /// A crontab spec or a named descriptor.
    Spec(SpecSchedule),
    /// `@every <duration>` (`cron.ConstantDelaySchedule`), the delay in whole seconds.
    Every { delay_seconds: i64 },
}

/// A configured parser (`cron.Parser`).
#[derive(Clone, Copy, Debug)]
pub struct Parser {
    options: u32,
}

/// The parser of `cron.ParseStandard`: five fields and descriptors.
pub const STANDARD: Parser = Parser { options: MINUTE | HOUR | DOM | MONTH | DOW | DESCRIPTOR };

/// `cron.ParseStandard(spec)`.
pub fn parse_standard(spec: &str) -> Result<Schedule, String> {
    STANDARD.parse(spec)
}

impl Parser {
    /// `cron.NewParser(options)`. (Go panics on two optionals; here `parse` reports it.)
    pub const fn new(options: u32) -> Parser {
        Parser { options }
    }

    /// `Parser.Parse(spec)`.
    pub fn parse(&self, spec: &str) -> Result<Schedule, String> {
        if spec.is_empty() {
            return Err("empty spec string".into());
        }
        let mut spec = spec;
        let mut loc = Location::Local;
        if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
            let eq = spec.find('=').unwrap_or(0);
            let Some(space) = spec.find(' ') else {
                return Err(format!("provided bad location {}: no schedule after it", &spec[eq + 1..]));
            };
            let name = &spec[eq + 1..space];
            loc = load_location(name).map_err(|e| format!("provided bad location {name}: {e}"))?;
            spec = spec[space..].trim();
        }
        if spec.starts_with('@') {
            if self.options & DESCRIPTOR == 0 {
                return Err(format!("parser does not accept descriptors: {spec}"));
            }
            return parse_descriptor(spec, loc);
        }
        let fields: Vec<&str> = spec.split_whitespace().collect();
        let fields = normalize_fields(&fields, self.options)?;
        Ok(Schedule::Spec(SpecSchedule {
            second: get_field(&fields[0], SECONDS)?,
            minute: get_field(&fields[1], MINUTES)?,
            hour: get_field(&fields[2], HOURS)?,
            dom: get_field(&fields[3], DAYS_OF_MONTH)?,
            month: get_field(&fields[4], MONTHS)?,
            dow: get_field(&fields[5], DAYS_OF_WEEK)?,
            location: loc,
        }))
    }
}

/// Go's `fmt` `%s` of a `[]string`: `[a b c]`.
fn go_list(fields: &[&str]) -> String {
    format!("[{}]", fields.join(" "))
}

/// `normalizeFields`: the six fields, defaults filled in for those the options leave out.
pub fn normalize_fields(fields: &[&str], options: u32) -> Result<Vec<String>, String> {
    let mut options = options;
    let mut optionals = 0;
    if options & SECOND_OPTIONAL != 0 {
        options |= SECOND;
        optionals += 1;
    }
    if options & DOW_OPTIONAL != 0 {
        options |= DOW;
        optionals += 1;
    }
    if optionals > 1 {
        return Err("multiple optionals may not be configured".into());
    }
    let max = PLACES.iter().filter(|p| options & **p != 0).count();
    let min = max - optionals;
    let count = fields.len();
    if count < min || count > max {
        if min == max {
            return Err(format!("expected exactly {min} fields, found {count}: {}", go_list(fields)));
        }
        return Err(format!("expected {min} to {max} fields, found {count}: {}", go_list(fields)));
    }
    let mut fields: Vec<&str> = fields.to_vec();
    if min < max && fields.len() == min {
        if options & DOW_OPTIONAL != 0 {
            fields.push(DEFAULTS[5]);
        } else if options & SECOND_OPTIONAL != 0 {
            fields.insert(0, DEFAULTS[0]);
        } else {
            return Err("unknown optional field".into());
        }
    }
    let mut given = fields.into_iter();
    Ok(PLACES
        .iter()
        .zip(DEFAULTS)
        .map(
            |(place, default)| {
                if options & place != 0 { given.next().unwrap_or(default).to_string() } else { default.to_string() }
            },
        )
        .collect())
}

/// `getField`: a comma-separated list of ranges (empty items are skipped, as `strings.FieldsFunc`
/// does).
pub fn get_field(field: &str, r: Bounds) -> Result<u64, String> {
    let mut bits = 0;
    for expr in field.split(',').filter(|e| !e.is_empty()) {
        bits |= get_range(expr, r)?;
    }
    Ok(bits)
}

/// `getRange`: `number | number "-" number [ "/" number ]`, `*` or `?`.
pub fn get_range(expr: &str, r: Bounds) -> Result<u64, String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single_digit = low_and_high.len() == 1;
    let (start, mut end, mut extra);
    if low_and_high[0] == "*" || low_and_high[0] == "?" {
        start = r.min;
        end = r.max;
        extra = STAR_BIT;
    } else {
        start = parse_int_or_name(low_and_high[0], r.names)?;
        end = match low_and_high.len() {
            1 => start,
            2 => parse_int_or_name(low_and_high[1], r.names)?,
            _ => return Err(format!("too many hyphens: {expr}")),
        };
        extra = 0;
    }
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = must_parse_int(range_and_step[1])?;
            // "N/step" means "N-max/step".
            if single_digit {
                end = r.max;
            }
            if step > 1 {
                extra = 0;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < r.min {
        return Err(format!("beginning of range ({start}) below minimum ({}): {expr}", r.min));
    }
    if end > r.max {
        return Err(format!("end of range ({end}) above maximum ({}): {expr}", r.max));
    }
    if start > end {
        return Err(format!("beginning of range ({start}) beyond end of range ({end}): {expr}"));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(get_bits(start, end, step) | extra)
}

fn parse_int_or_name(expr: &str, names: &[(&str, u64)]) -> Result<u64, String> {
    let lower = expr.to_lowercase();
    if let Some((_, v)) = names.iter().find(|(n, _)| *n == lower) {
        return Ok(*v);
    }
    must_parse_int(expr)
}

fn must_parse_int(expr: &str) -> Result<u64, String> {
    let num = go_atoi(expr).map_err(|e| format!("failed to parse int from {expr}: {e}"))?;
    if num < 0 {
        return Err(format!("negative number ({num}) not allowed: {expr}"));
    }
    Ok(num.unsigned_abs())
}

fn shl(v: u64, n: u64) -> u64 {
    u32::try_from(n).ok().and_then(|n| v.checked_shl(n)).unwrap_or(0)
}

/// `getBits`: the bits of `[min, max]` every `step`.
pub fn get_bits(min: u64, max: u64, step: u64) -> u64 {
    if step == 1 {
        return !shl(u64::MAX, max + 1) & shl(u64::MAX, min);
    }
    let mut bits = 0;
    let mut i = min;
    while i <= max {
        bits |= shl(1, i);
        i += step;
    }
    bits
}

/// `all`: every value of the bounds, plus the star bit.
pub fn all(r: Bounds) -> u64 {
    get_bits(r.min, r.max, 1) | STAR_BIT
}

fn parse_descriptor(descriptor: &str, loc: Location) -> Result<Schedule, String> {
    let at = |second, minute, hour, dom, month, dow| {
        Ok(Schedule::Spec(SpecSchedule { second, minute, hour, dom, month, dow, location: loc.clone() }))
    };
    let first = |b: Bounds| 1u64 << b.min;
    match descriptor {
        "@yearly" | "@annually" => {
            at(first(SECONDS), first(MINUTES), first(HOURS), first(DAYS_OF_MONTH), first(MONTHS), all(DAYS_OF_WEEK))
        }
        "@monthly" => {
            at(first(SECONDS), first(MINUTES), first(HOURS), first(DAYS_OF_MONTH), all(MONTHS), all(DAYS_OF_WEEK))
        }
        "@weekly" => {
            at(first(SECONDS), first(MINUTES), first(HOURS), all(DAYS_OF_MONTH), all(MONTHS), first(DAYS_OF_WEEK))
        }
        "@daily" | "@midnight" => {
            at(first(SECONDS), first(MINUTES), first(HOURS), all(DAYS_OF_MONTH), all(MONTHS), all(DAYS_OF_WEEK))
        }
        "@hourly" => at(first(SECONDS), first(MINUTES), all(HOURS), all(DAYS_OF_MONTH), all(MONTHS), all(DAYS_OF_WEEK)),
        _ => match descriptor.strip_prefix("@every ") {
            Some(d) => {
                let nanos = parse_duration(d).map_err(|e| format!("failed to parse duration {descriptor}: {e}"))?;
                Ok(every(nanos))
            }
            None => Err(format!("unrecognized descriptor: {descriptor}")),
        },
    }
}

/// `cron.Every(duration)`: at least a second, rounded down to whole seconds.
pub fn every(nanos: i64) -> Schedule {
    const SECOND_NS: i64 = 1_000_000_000;
    let nanos = nanos.max(SECOND_NS);
    Schedule::Every { delay_seconds: (nanos - nanos % SECOND_NS) / SECOND_NS }
}

/// `time.LoadLocation(name)` with Go's error texts: `""` and `UTC` are UTC, `Local` is
/// [`Location::Local`], other names are looked up case-sensitively.
pub fn load_location(name: &str) -> Result<Location, String> {
    if name.is_empty() || name == "UTC" {
        return Ok(Location::Zone(TimeZone::UTC));
    }
    if name == "Local" {
        return Ok(Location::Local);
    }
    if name.contains("..") || name.starts_with('/') || name.starts_with('\\') {
        return Err("time: invalid location name".into());
    }
    match k8s_openapi::jiff::tz::db().get(name) {
        Ok(tz) if tz.iana_name() == Some(name) => Ok(Location::Zone(tz)),
        _ => Err(format!("unknown time zone {name}")),
    }
}

/// The quoting of Go's `time` package errors: bytes outside printable ASCII as `\xNN`.
fn time_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for b in s.bytes() {
        if !(0x20..0x80).contains(&b) {
            let _ = write!(out, "\\x{b:02x}");
        } else {
            if b == b'"' || b == b'\\' {
                out.push('\\');
            }
            out.push(char::from(b));
        }
    }
    out.push('"');
    out
}

/// `time.ParseDuration(s)` in nanoseconds, with Go's error texts.
pub fn parse_duration(orig: &str) -> Result<i64, String> {
    const LIMIT: u64 = 1 << 63;
    let invalid = || format!("time: invalid duration {}", time_quote(orig));
    let mut s = orig.as_bytes();
    let mut neg = false;
    if let Some(&c) = s.first()
        && (c == b'-' || c == b'+')
    {
        neg = c == b'-';
        s = &s[1..];
    }
    if s == b"0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut d: u64 = 0;
    while !s.is_empty() {
        if !(s[0] == b'.' || s[0].is_ascii_digit()) {
            return Err(invalid());
        }
        // [0-9]*
        let mut v: u64 = 0;
        let mut i = 0;
        while i < s.len() && s[i].is_ascii_digit() {
            if v > LIMIT / 10 {
                return Err(invalid());
            }
            v = v * 10 + u64::from(s[i] - b'0');
            if v > LIMIT {
                return Err(invalid());
            }
            i += 1;
        }
        let pre = i > 0;
        s = &s[i..];
        // (\.[0-9]*)?
        let mut post = false;
        let (mut f, mut scale) = (0u64, 1f64);
        if s.first() == Some(&b'.') {
            s = &s[1..];
            let mut i = 0;
            let mut overflow = false;
            while i < s.len() && s[i].is_ascii_digit() {
                if !overflow {
                    if f > (LIMIT - 1) / 10 {
                        overflow = true;
                    } else {
                        let y = f * 10 + u64::from(s[i] - b'0');
                        if y > LIMIT {
                            overflow = true;
                        } else {
                            f = y;
                            scale *= 10.0;
                        }
                    }
                }
                i += 1;
            }
            post = i > 0;
            s = &s[i..];
        }
        if !pre && !post {
            return Err(invalid());
        }
        // Unit.
        let i = s.iter().position(|c| *c == b'.' || c.is_ascii_digit()).unwrap_or(s.len());
        if i == 0 {
            return Err(format!("time: missing unit in duration {}", time_quote(orig)));
        }
        let unit_bytes = &s[..i];
        s = &s[i..];
        let unit_text = String::from_utf8_lossy(unit_bytes);
        let unit: u64 = match unit_bytes {
            b"ns" => 1,
            b"us" | b"\xc2\xb5s" | b"\xce\xbcs" => 1_000,
            b"ms" => 1_000_000,
            b"s" => 1_000_000_000,
            b"m" => 60_000_000_000,
            b"h" => 3_600_000_000_000,
            _ => {
                return Err(format!("time: unknown unit {} in duration {}", time_quote(&unit_text), time_quote(orig)));
            }
        };
        if v > LIMIT / unit {
            return Err(invalid());
        }
        v *= unit;
        if f > 0 {
            #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let frac = (f as f64 * (unit as f64 / scale)) as u64;
            v += frac;
            if v > LIMIT {
                return Err(invalid());
            }
        }
        d += v;
        if d > LIMIT {
            return Err(invalid());
        }
    }
    if neg {
        return Ok(0i64.wrapping_sub_unsigned(d));
    }
    i64::try_from(d).map_err(|_| invalid())
}

/// Wall-clock fields of an instant in a zone.
#[derive(Clone, Copy, Debug)]
struct Civil {
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
    weekday: i64,
}

fn offset_at(tz: &TimeZone, unix: i64) -> Option<i64> {
    Timestamp::from_second(unix).ok().map(|ts| i64::from(tz.to_offset(ts).seconds()))
}

fn civil(unix: i64, tz: &TimeZone) -> Option<Civil> {
    let local = unix + offset_at(tz, unix)?;
    let days = local.div_euclid(86_400);
    let secs = local.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    Some(Civil {
        year,
        month,
        day,
        hour: secs / 3600,
        minute: secs % 3600 / 60,
        second: secs % 60,
        weekday: (days + 4).rem_euclid(7),
    })
}

/// Days since 1970-01-01 of a proleptic Gregorian date (month 1–12).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `time.Date(year, month, day, hour, min, sec, 0, loc)` as unix seconds: out-of-range months
/// and days carry over, and a wall time in a transition takes the offset Go's lookup picks (the
/// offset in force at the wall time read as UTC, corrected once).
fn go_date(year: i64, month: i64, day: i64, hour: i64, minute: i64, second: i64, tz: &TimeZone) -> Option<i64> {
    let m0 = month - 1;
    let (y, m) = (year + m0.div_euclid(12), m0.rem_euclid(12) + 1);
    let wall = (days_from_civil(y, m, 1) + day - 1) * 86_400 + hour * 3600 + minute * 60 + second;
    let first = offset_at(tz, wall)?;
    if first == 0 {
        return Some(wall);
    }
    Some(wall - offset_at(tz, wall - first)?)
}

impl Schedule {
    /// `Schedule.Next(t)`: the first activation strictly after `t`, in `t`'s zone; `None` where
    /// Go returns the zero time (nothing within five years).
    pub fn next(&self, t: &Zoned) -> Option<Zoned> {
        let ts = t.timestamp();
        // Go's seconds are floored; jiff's nanoseconds carry the sign of the seconds.
        let secs = ts.as_second() - i64::from(ts.subsec_nanosecond() < 0);
        match self {
            Schedule::Every { delay_seconds } => Timestamp::from_second(secs.checked_add(*delay_seconds)?)
                .ok()
                .map(|n| n.to_zoned(t.time_zone().clone())),
            Schedule::Spec(spec) => {
                let next = spec.next_second(secs + 1, t.time_zone())?;
                Timestamp::from_second(next).ok().map(|n| n.to_zoned(t.time_zone().clone()))
            }
        }
    }
}

impl SpecSchedule {
    fn bit(set: u64, v: i64) -> bool {
        shl(1, v.unsigned_abs()) & set != 0
    }

    fn day_matches(&self, c: &Civil) -> bool {
        let dom = Self::bit(self.dom, c.day);
        let dow = Self::bit(self.dow, c.weekday);
        if self.dom & STAR_BIT != 0 || self.dow & STAR_BIT != 0 { dom && dow } else { dom || dow }
    }

    /// `SpecSchedule.Next` from the upcoming second `start` (unix seconds).
    fn next_second(&self, start: i64, own: &TimeZone) -> Option<i64> {
        let loc = match &self.location {
            Location::Local => own,
            Location::Zone(tz) => tz,
        };
        let mut t = start;
        let mut added = false;
        let year_limit = civil(t, loc)?.year + 5;
        'wrap: loop {
            let mut c = civil(t, loc)?;
            if c.year > year_limit {
                return None;
            }
            while !Self::bit(self.month, c.month) {
                if !added {
                    added = true;
                    t = go_date(c.year, c.month, 1, 0, 0, 0, loc)?;
                    c = civil(t, loc)?;
                }
                t = go_date(c.year, c.month + 1, c.day, c.hour, c.minute, c.second, loc)?;
                c = civil(t, loc)?;
                if c.month == 1 {
                    continue 'wrap;
                }
            }
            while !self.day_matches(&c) {
                if !added {
                    added = true;
                    t = go_date(c.year, c.month, c.day, 0, 0, 0, loc)?;
                    c = civil(t, loc)?;
                }
                t = go_date(c.year, c.month, c.day + 1, c.hour, c.minute, c.second, loc)?;
                c = civil(t, loc)?;
                // Midnight may not exist (DST): back to the hour it became.
                if c.hour != 0 {
                    t += if c.hour > 12 { (24 - c.hour) * 3600 } else { -c.hour * 3600 };
                    c = civil(t, loc)?;
                }
                if c.day == 1 {
                    continue 'wrap;
                }
            }
            while !Self::bit(self.hour, c.hour) {
                if !added {
                    added = true;
                    t = go_date(c.year, c.month, c.day, c.hour, 0, 0, loc)?;
                }
                t += 3600;
                c = civil(t, loc)?;
                if c.hour == 0 {
                    continue 'wrap;
                }
            }
            while !Self::bit(self.minute, c.minute) {
                if !added {
                    added = true;
                    t -= t.rem_euclid(60);
                }
                t += 60;
                c = civil(t, loc)?;
                if c.minute == 0 {
                    continue 'wrap;
                }
            }
            while !Self::bit(self.second, c.second) {
                added = true;
                t += 1;
                c = civil(t, loc)?;
                if c.second == 0 {
                    continue 'wrap;
                }
            }
            return Some(t);
        }
    }
}

#[cfg(test)]
#[path = "cron_tests.rs"]
mod tests;
