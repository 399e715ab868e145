//! The pod annotations injection reads and writes (spec §4.3 item 4, §4.6 item 5, §4.7):
//! `kruise.io/sidecarset-hash` and `kruise.io/sidecarset-hash-without-image` (JSON maps set name →
//! kruise's `SidecarSetUpgradeSpec`), `kruise.io/sidecarset-injected-list` and
//! `kruise.io/sidecarset-working-hotupgrade-container`.
//!
//! Values are parsed the way Go's `json.Unmarshal` parses them (the old `{"set":"hash"}` format
//! is accepted and converted; timestamps must be RFC 3339) and written the way `json.Marshal`
//! writes them (keys sorted, timestamps in UTC to the second, a zero time as `null`), so that an
//! annotation written by a Go kruise is re-written byte for byte.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};
use time::{Date, Month, PrimitiveDateTime, Time, UtcOffset};

use crate::compat::gojson;

/// One entry of the hash annotations (kruise `SidecarSetUpgradeSpec`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UpgradeSpec {
    /// `updateTimestamp`, already in Go's output form; `None` is the zero time (`null`).
    pub update_timestamp: Option<String>,
    /// `hash`.
    pub hash: String,
    /// `sidecarSetName`.
    pub sidecar_set_name: String,
    /// `sidecarList`; `None` is a nil slice (`null`).
    pub sidecar_list: Option<Vec<String>>,
    /// `controllerRevision` (omitted when empty).
    pub controller_revision: String,
}

impl UpgradeSpec {
    /// Equal but for the timestamp: re-injecting an unchanged set keeps the old timestamp, so a
    /// re-invocation of the webhook yields no patch.
    pub fn same_version(&self, other: &UpgradeSpec) -> bool {
        self.hash == other.hash
            && self.sidecar_set_name == other.sidecar_set_name
            && self.sidecar_list == other.sidecar_list
            && self.controller_revision == other.controller_revision
    }
}

/// A hash annotation: set name → entry.
pub type HashMap = BTreeMap<String, UpgradeSpec>;

/// Parses a hash annotation; `Err` carries the reason (the caller adds pod and key).
pub fn parse_hashes(text: &str) -> Result<HashMap, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let map = match value {
        Value::Null => return Ok(HashMap::new()),
        Value::Object(m) => m,
        other => return Err(format!("cannot unmarshal {} into a map", kind(&other))),
    };
    match parse_specs(&map) {
        Ok(specs) => Ok(specs),
        Err(first) => {
            // The old format: {"set": "hash"}.
            let mut out = HashMap::new();
            for (k, v) in &map {
                let hash = match v {
                    Value::String(s) => s.clone(),
                    Value::Null => String::new(),
                    _ => return Err(first),
                };
                out.insert(k.clone(), UpgradeSpec { hash, sidecar_set_name: k.clone(), ..Default::default() });
            }
            Ok(out)
        }
    }
}

fn parse_specs(map: &Map<String, Value>) -> Result<HashMap, String> {
    let mut out = HashMap::new();
    for (k, v) in map {
        let spec = match v {
            Value::Null => UpgradeSpec::default(),
            Value::Object(o) => parse_spec(o)?,
            other => return Err(format!("cannot unmarshal {} into SidecarSetUpgradeSpec", kind(other))),
        };
        out.insert(k.clone(), spec);
    }
    Ok(out)
}

/// Go matches JSON keys to struct fields exactly first, then case-insensitively.
fn field<'a>(o: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    o.get(name).or_else(|| o.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v))
}

fn string_field(o: &Map<String, Value>, name: &str) -> Result<String, String> {
    match field(o, name) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!("cannot unmarshal {} into field {name} of type string", kind(other))),
    }
}

fn parse_spec(o: &Map<String, Value>) -> Result<UpgradeSpec, String> {
    let update_timestamp = match field(o, "updateTimestamp") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => go_time_utc(s)?,
        Some(other) => return Err(format!("cannot unmarshal {} into a time", kind(other))),
    };
    let sidecar_list = match field(o, "sidecarList") {
        None | Some(Value::Null) => None,
        Some(Value::Array(a)) => Some(
            a.iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.clone()),
                    Value::Null => Ok(String::new()),
                    other => Err(format!("cannot unmarshal {} into sidecarList", kind(other))),
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(other) => Err(format!("cannot unmarshal {} into sidecarList", kind(other)))?,
    };
    Ok(UpgradeSpec {
        update_timestamp,
        hash: string_field(o, "hash")?,
        sidecar_set_name: string_field(o, "sidecarSetName")?,
        sidecar_list,
        controller_revision: string_field(o, "controllerRevision")?,
    })
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Writes a hash annotation as Go's `json.Marshal(map[string]SidecarSetUpgradeSpec)`.
pub fn write_hashes(map: &HashMap) -> String {
    // An entry is about 200 bytes: growing from one byte copied it seven times.
    let mut out = String::with_capacity(256 * map.len().max(1));
    out.push('{');
    for (i, (k, v)) in map.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        gojson::string(k, &mut out);
        out.push_str(":{\"updateTimestamp\":");
        match &v.update_timestamp {
            Some(t) => gojson::string(t, &mut out),
            None => out.push_str("null"),
        }
        out.push_str(",\"hash\":");
        gojson::string(&v.hash, &mut out);
        out.push_str(",\"sidecarSetName\":");
        gojson::string(&v.sidecar_set_name, &mut out);
        out.push_str(",\"sidecarList\":");
        match &v.sidecar_list {
            Some(list) => {
                out.push('[');
                for (j, s) in list.iter().enumerate() {
                    if j > 0 {
                        out.push(',');
                    }
                    gojson::string(s, &mut out);
                }
                out.push(']');
            }
            None => out.push_str("null"),
        }
        if !v.controller_revision.is_empty() {
            out.push_str(",\"controllerRevision\":");
            gojson::string(&v.controller_revision, &mut out);
        }
        out.push('}');
    }
    out.push('}');
    out
}

/// Parses an RFC 3339 time as Go's `time.Parse(time.RFC3339, s)` and returns what
/// `metav1.Time.MarshalJSON` writes back: UTC, second precision, `None` for the zero time.
pub fn go_time_utc(s: &str) -> Result<Option<String>, String> {
    let bad = || format!("parsing time {}: cannot parse as RFC 3339", gojson_quote(s));
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return Err(bad());
    }
    let num = |r: std::ops::Range<usize>| -> Result<i32, String> {
        let part = s.get(r).ok_or_else(bad)?;
        if !part.bytes().all(|c| c.is_ascii_digit()) {
            return Err(bad());
        }
        part.parse::<i32>().map_err(|_| bad())
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut rest = &s[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(bad());
        }
        rest = &frac[digits..];
    }
    let offset_seconds = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6 && (rest.starts_with('+') || rest.starts_with('-')) && &rest[3..4] == ":" => {
            let h = rest[1..3].parse::<i32>().map_err(|_| bad())?;
            let m = rest[4..6].parse::<i32>().map_err(|_| bad())?;
            if h > 23 || m > 59 {
                return Err(bad());
            }
            let secs = h * 3600 + m * 60;
            if rest.starts_with('-') { -secs } else { secs }
        }
        _ => return Err(bad()),
    };
    let month = u8::try_from(month).ok().and_then(|m| Month::try_from(m).ok()).ok_or_else(bad)?;
    let date = Date::from_calendar_date(year, month, u8::try_from(day).map_err(|_| bad())?).map_err(|_| bad())?;
    let clock = Time::from_hms(
        u8::try_from(hour).map_err(|_| bad())?,
        u8::try_from(minute).map_err(|_| bad())?,
        u8::try_from(second).map_err(|_| bad())?,
    )
    .map_err(|_| bad())?;
    let offset = UtcOffset::from_whole_seconds(offset_seconds).map_err(|_| bad())?;
    let utc = PrimitiveDateTime::new(date, clock).assume_offset(offset).to_offset(UtcOffset::UTC);
    if utc.year() == 1 && utc.ordinal() == 1 && utc.hour() == 0 && utc.minute() == 0 && utc.second() == 0 {
        return Ok(None);
    }
    Ok(Some(format_utc(utc.year(), u8::from(utc.month()), utc.day(), utc.hour(), utc.minute(), utc.second())))
}

fn gojson_quote(s: &str) -> String {
    let mut out = String::new();
    gojson::string(s, &mut out);
    out
}

/// `2006-01-02T15:04:05Z`.
pub fn format_utc(year: i32, month: u8, day: u8, hour: u8, minute: u8, second: u8) -> String {
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z")
}

/// `kruise.io/sidecarset-working-hotupgrade-container`: sidecar name → working container; an
/// unparsable value counts as empty, as in kruise.
pub fn parse_working(text: Option<&str>) -> BTreeMap<String, String> {
    text.and_then(|t| serde_json::from_str::<BTreeMap<String, Option<String>>>(t).ok())
        .map(|m| m.into_iter().map(|(k, v)| (k, v.unwrap_or_default())).collect())
        .unwrap_or_default()
}

/// Writes a `map[string]string` as Go does.
pub fn write_string_map(map: &BTreeMap<String, String>) -> String {
    let value = Value::Object(map.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect());
    gojson::to_string(&value)
}

/// `kruise.io/sidecarset-injected-list`: the sorted union of the existing names and `names`.
pub fn injected_list(existing: Option<&str>, names: &BTreeSet<String>) -> String {
    let mut all: BTreeSet<String> = names.clone();
    if let Some(e) = existing.filter(|e| !e.is_empty()) {
        all.extend(e.split(',').map(str::to_string));
    }
    all.into_iter().collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_formats_and_writes_go_bytes() {
        let go = r#"{"a":{"updateTimestamp":"2024-05-01T10:00:00Z","hash":"h1","sidecarSetName":"a","sidecarList":["x","y"],"controllerRevision":"a-123"},"b":{"updateTimestamp":null,"hash":"h2","sidecarSetName":"b","sidecarList":null}}"#;
        let parsed = parse_hashes(go).unwrap();
        assert_eq!(parsed["a"].sidecar_list, Some(vec!["x".to_string(), "y".to_string()]));
        assert_eq!(write_hashes(&parsed), go);

        let old = parse_hashes(r#"{"s1":"abc"}"#).unwrap();
        assert_eq!(
            write_hashes(&old),
            r#"{"s1":{"updateTimestamp":null,"hash":"abc","sidecarSetName":"s1","sidecarList":null}}"#
        );
        assert!(parse_hashes("null").unwrap().is_empty());
        for bad in ["[1]", "{", r#"{"a":1}"#, r#"{"a":{"hash":1}}"#, r#"{"a":{"updateTimestamp":"yesterday"}}"#] {
            assert!(parse_hashes(bad).is_err(), "{bad}");
        }
        // Go matches field names case-insensitively.
        assert_eq!(parse_hashes(r#"{"a":{"Hash":"h"}}"#).unwrap()["a"].hash, "h");
    }

    #[test]
    fn times_are_normalised_like_metav1() {
        let cases = [
            ("2024-05-01T10:00:00Z", Some("2024-05-01T10:00:00Z")),
            ("2024-05-01T10:00:00.123456Z", Some("2024-05-01T10:00:00Z")),
            ("2024-05-01T01:30:00+02:00", Some("2024-04-30T23:30:00Z")),
            ("0001-01-01T00:00:00Z", None),
        ];
        for (input, want) in cases {
            assert_eq!(go_time_utc(input).unwrap().as_deref(), want, "{input}");
        }
        for bad in ["2024-13-01T00:00:00Z", "2024-05-01 10:00:00Z", "2024-05-01T10:00:00", "x"] {
            assert!(go_time_utc(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn lists_and_maps() {
        let names: BTreeSet<String> = ["b".to_string(), "a".to_string()].into();
        assert_eq!(injected_list(None, &names), "a,b");
        assert_eq!(injected_list(Some("c,a"), &names), "a,b,c");
        assert_eq!(injected_list(Some(""), &names), "a,b");
        let mut w = parse_working(Some(r#"{"x":"x-2"}"#));
        w.insert("m".into(), "m-1".into());
        assert_eq!(write_string_map(&w), r#"{"m":"m-1","x":"x-2"}"#);
        assert!(parse_working(Some("nope")).is_empty());
    }
}
