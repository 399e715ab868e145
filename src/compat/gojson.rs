//! What Go's `encoding/json` writes for the values kruise hashes or stores as pod annotations
//! (spec §1.3.2, §11.5): byte-identical output is what makes our hashes equal kruise's.
//!
//! k8s-openapi serialises a `Container` in its own (alphabetical) field order and with
//! `Option` semantics; Go writes struct fields in declaration order and applies `omitempty` per
//! field (a non-pointer struct such as `resources` is always written, `stdin: false` never is,
//! `grpc.service` is `null` when unset). [`sidecar_container`] re-encodes the JSON of a
//! [`SidecarContainer`] through tables of the Go structs of `k8s.io/api` v0.32 — the version
//! kruise vendors — so fields that Kubernetes added later (`restartPolicyRules`, `stopSignal`,
//! `fileKeyRef`…) are dropped exactly as Go's decoder drops them.
//!
//! [`value`] writes any JSON value as Go writes an `interface{}` (map keys sorted, numbers as
//! float64), and [`string`] is Go's string escaping (`<`, `>`, `&`, U+2028 and U+2029 escaped).

use std::fmt::Write;

use serde_json::{Map, Value};

use crate::apis::sidecarset::SidecarContainer;
use crate::compat::quantity::Quantity;

/// How a Go type is encoded.
#[derive(Clone, Copy, Debug)]
enum Go {
    Str,
    Int,
    Bool,
    /// `resource.Quantity`: a struct with `MarshalJSON`, canonical text, `"0"` when unset.
    Quantity,
    /// `intstr.IntOrString`: a struct with `MarshalJSON`, `0` when unset.
    IntOrStr,
    /// `map[string]resource.Quantity`, keys sorted.
    QuantityMap,
    Struct(&'static [Field]),
    List(&'static Go),
}

/// One struct field: its JSON name (empty for an embedded struct), whether it is a pointer and
/// whether its tag says `omitempty`.
#[derive(Clone, Copy, Debug)]
struct Field {
    name: &'static str,
    ty: Go,
    pointer: bool,
    omitempty: bool,
}

const fn f(name: &'static str, ty: Go) -> Field {
    Field { name, ty, pointer: false, omitempty: false }
}
const fn o(name: &'static str, ty: Go) -> Field {
    Field { name, ty, pointer: false, omitempty: true }
}
const fn p(name: &'static str, ty: Go) -> Field {
    Field { name, ty, pointer: true, omitempty: true }
}
const fn inline(fields: &'static [Field]) -> Field {
    Field { name: "", ty: Go::Struct(fields), pointer: false, omitempty: false }
}

const STRS: Go = Go::List(&Go::Str);

const PORT: &[Field] = &[
    o("name", Go::Str),
    o("hostPort", Go::Int),
    f("containerPort", Go::Int),
    o("protocol", Go::Str),
    o("hostIP", Go::Str),
];
const LOCAL_REF: &[Field] = &[o("name", Go::Str)];
const OPTIONAL_REF: &[Field] = &[inline(LOCAL_REF), p("optional", Go::Bool)];
const ENV_FROM: &[Field] =
    &[o("prefix", Go::Str), p("configMapRef", Go::Struct(OPTIONAL_REF)), p("secretRef", Go::Struct(OPTIONAL_REF))];
const FIELD_REF: &[Field] = &[o("apiVersion", Go::Str), f("fieldPath", Go::Str)];
const RESOURCE_FIELD_REF: &[Field] = &[o("containerName", Go::Str), f("resource", Go::Str), o("divisor", Go::Quantity)];
const KEY_REF: &[Field] = &[inline(LOCAL_REF), f("key", Go::Str), p("optional", Go::Bool)];
const ENV_SOURCE: &[Field] = &[
    p("fieldRef", Go::Struct(FIELD_REF)),
    p("resourceFieldRef", Go::Struct(RESOURCE_FIELD_REF)),
    p("configMapKeyRef", Go::Struct(KEY_REF)),
    p("secretKeyRef", Go::Struct(KEY_REF)),
];
const ENV_VAR: &[Field] = &[f("name", Go::Str), o("value", Go::Str), p("valueFrom", Go::Struct(ENV_SOURCE))];
const CLAIM: &[Field] = &[f("name", Go::Str), o("request", Go::Str)];
const RESOURCES: &[Field] =
    &[o("limits", Go::QuantityMap), o("requests", Go::QuantityMap), o("claims", Go::List(&Go::Struct(CLAIM)))];
const RESIZE: &[Field] = &[f("resourceName", Go::Str), f("restartPolicy", Go::Str)];
const MOUNT: &[Field] = &[
    f("name", Go::Str),
    o("readOnly", Go::Bool),
    p("recursiveReadOnly", Go::Str),
    f("mountPath", Go::Str),
    o("subPath", Go::Str),
    p("mountPropagation", Go::Str),
    o("subPathExpr", Go::Str),
];
const DEVICE: &[Field] = &[f("name", Go::Str), f("devicePath", Go::Str)];
const EXEC: &[Field] = &[o("command", STRS)];
const HEADER: &[Field] = &[f("name", Go::Str), f("value", Go::Str)];
const HTTP_GET: &[Field] = &[
    o("path", Go::Str),
    f("port", Go::IntOrStr),
    o("host", Go::Str),
    o("scheme", Go::Str),
    o("httpHeaders", Go::List(&Go::Struct(HEADER))),
];
const TCP_SOCKET: &[Field] = &[f("port", Go::IntOrStr), o("host", Go::Str)];
/// `GRPCAction.Service` is a pointer WITHOUT omitempty: `"service":null` when unset.
const GRPC: &[Field] = &[f("port", Go::Int), Field { name: "service", ty: Go::Str, pointer: true, omitempty: false }];
const PROBE_HANDLER: &[Field] = &[
    p("exec", Go::Struct(EXEC)),
    p("httpGet", Go::Struct(HTTP_GET)),
    p("tcpSocket", Go::Struct(TCP_SOCKET)),
    p("grpc", Go::Struct(GRPC)),
];
const PROBE: &[Field] = &[
    inline(PROBE_HANDLER),
    o("initialDelaySeconds", Go::Int),
    o("timeoutSeconds", Go::Int),
    o("periodSeconds", Go::Int),
    o("successThreshold", Go::Int),
    o("failureThreshold", Go::Int),
    p("terminationGracePeriodSeconds", Go::Int),
];
const SLEEP: &[Field] = &[f("seconds", Go::Int)];
const LIFECYCLE_HANDLER: &[Field] = &[
    p("exec", Go::Struct(EXEC)),
    p("httpGet", Go::Struct(HTTP_GET)),
    p("tcpSocket", Go::Struct(TCP_SOCKET)),
    p("sleep", Go::Struct(SLEEP)),
];
const LIFECYCLE: &[Field] =
    &[p("postStart", Go::Struct(LIFECYCLE_HANDLER)), p("preStop", Go::Struct(LIFECYCLE_HANDLER))];
const CAPABILITIES: &[Field] = &[o("add", STRS), o("drop", STRS)];
const SELINUX: &[Field] = &[o("user", Go::Str), o("role", Go::Str), o("type", Go::Str), o("level", Go::Str)];
const WINDOWS: &[Field] = &[
    p("gmsaCredentialSpecName", Go::Str),
    p("gmsaCredentialSpec", Go::Str),
    p("runAsUserName", Go::Str),
    p("hostProcess", Go::Bool),
];
const PROFILE: &[Field] = &[f("type", Go::Str), p("localhostProfile", Go::Str)];
const SECURITY_CONTEXT: &[Field] = &[
    p("capabilities", Go::Struct(CAPABILITIES)),
    p("privileged", Go::Bool),
    p("seLinuxOptions", Go::Struct(SELINUX)),
    p("windowsOptions", Go::Struct(WINDOWS)),
    p("runAsUser", Go::Int),
    p("runAsGroup", Go::Int),
    p("runAsNonRoot", Go::Bool),
    p("readOnlyRootFilesystem", Go::Bool),
    p("allowPrivilegeEscalation", Go::Bool),
    p("procMount", Go::Str),
    p("seccompProfile", Go::Struct(PROFILE)),
    p("appArmorProfile", Go::Struct(PROFILE)),
];
/// `core/v1.Container` of k8s.io/api v0.32.
const CONTAINER: &[Field] = &[
    f("name", Go::Str),
    o("image", Go::Str),
    o("command", STRS),
    o("args", STRS),
    o("workingDir", Go::Str),
    o("ports", Go::List(&Go::Struct(PORT))),
    o("envFrom", Go::List(&Go::Struct(ENV_FROM))),
    o("env", Go::List(&Go::Struct(ENV_VAR))),
    o("resources", Go::Struct(RESOURCES)),
    o("resizePolicy", Go::List(&Go::Struct(RESIZE))),
    p("restartPolicy", Go::Str),
    o("volumeMounts", Go::List(&Go::Struct(MOUNT))),
    o("volumeDevices", Go::List(&Go::Struct(DEVICE))),
    p("livenessProbe", Go::Struct(PROBE)),
    p("readinessProbe", Go::Struct(PROBE)),
    p("startupProbe", Go::Struct(PROBE)),
    p("lifecycle", Go::Struct(LIFECYCLE)),
    o("terminationMessagePath", Go::Str),
    o("terminationMessagePolicy", Go::Str),
    o("imagePullPolicy", Go::Str),
    p("securityContext", Go::Struct(SECURITY_CONTEXT)),
    o("stdin", Go::Bool),
    o("stdinOnce", Go::Bool),
    o("tty", Go::Bool),
];
const UPGRADE_STRATEGY: &[Field] = &[o("upgradeType", Go::Str), o("hotUpgradeEmptyImage", Go::Str)];
const SHARE_POLICY: &[Field] = &[o("type", Go::Str)];
const SOURCE_NAME_FROM: &[Field] = &[p("fieldRef", Go::Struct(FIELD_REF))];
const TRANSFER_ENV: &[Field] = &[
    o("sourceContainerName", Go::Str),
    p("sourceContainerNameFrom", Go::Struct(SOURCE_NAME_FROM)),
    o("envName", Go::Str),
    o("envNames", STRS),
];
const EXPRS: &[Field] = &[o("cpu", Go::Str), o("memory", Go::Str)];
const RESOURCES_EXPR: &[Field] = &[p("limits", Go::Struct(EXPRS)), p("requests", Go::Struct(EXPRS))];
const RESOURCES_POLICY: &[Field] = &[
    f("targetContainersMode", Go::Str),
    o("targetContainersNameRegex", Go::Str),
    f("resourcesExpr", Go::Struct(RESOURCES_EXPR)),
];
/// kruise `v1alpha1.SidecarContainer`: the container inline, then the sidecar settings.
const SIDECAR_CONTAINER: &[Field] = &[
    inline(CONTAINER),
    o("podInjectPolicy", Go::Str),
    o("upgradeStrategy", Go::Struct(UPGRADE_STRATEGY)),
    o("shareVolumePolicy", Go::Struct(SHARE_POLICY)),
    p("shareVolumeDevicePolicy", Go::Struct(SHARE_POLICY)),
    o("transferEnv", Go::List(&Go::Struct(TRANSFER_ENV))),
    p("resourcesPolicy", Go::Struct(RESOURCES_POLICY)),
];

/// Go's `json.Marshal` of a kruise `SidecarContainer`.
pub fn sidecar_container(c: &SidecarContainer, out: &mut String) {
    let v = serde_json::to_value(c).unwrap_or(Value::Null);
    write_struct(SIDECAR_CONTAINER, v.as_object(), out);
}

/// Go's `json.Marshal` of a `[]SidecarContainer`: `null` when empty (a nil slice).
pub fn sidecar_containers(list: &[SidecarContainer], out: &mut String) {
    if list.is_empty() {
        out.push_str("null");
        return;
    }
    out.push('[');
    for (i, c) in list.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        sidecar_container(c, out);
    }
    out.push(']');
}

fn write_struct(fields: &[Field], obj: Option<&Map<String, Value>>, out: &mut String) {
    out.push('{');
    let mut first = true;
    write_fields(fields, obj, out, &mut first);
    out.push('}');
}

fn write_fields(fields: &[Field], obj: Option<&Map<String, Value>>, out: &mut String, first: &mut bool) {
    for field in fields {
        if field.name.is_empty() {
            if let Go::Struct(inner) = field.ty {
                write_fields(inner, obj, out, first);
            }
            continue;
        }
        let v = obj.and_then(|m| m.get(field.name)).filter(|v| !v.is_null());
        let mut item = String::new();
        let written = if field.pointer {
            match v {
                Some(v) => {
                    write_typed(field.ty, Some(v), &mut item);
                    true
                }
                None if field.omitempty => false,
                None => {
                    item.push_str("null");
                    true
                }
            }
        } else {
            write_plain(field, v, &mut item)
        };
        if written {
            if !*first {
                out.push(',');
            }
            *first = false;
            string(field.name, out);
            out.push(':');
            out.push_str(&item);
        }
    }
}

/// A non-pointer field; returns false when `omitempty` drops it.
fn write_plain(field: &Field, v: Option<&Value>, out: &mut String) -> bool {
    let empty = match (field.ty, v) {
        // Structs (including Quantity and IntOrString) are never "empty" for omitempty.
        (Go::Struct(_) | Go::Quantity | Go::IntOrStr, _) => false,
        (_, None) => true,
        (Go::Str, Some(Value::String(s))) => s.is_empty(),
        (Go::Int, Some(n)) => n.as_i64() == Some(0) || n.as_f64() == Some(0.0),
        (Go::Bool, Some(b)) => b.as_bool() != Some(true),
        (Go::List(_), Some(Value::Array(a))) => a.is_empty(),
        (Go::QuantityMap, Some(Value::Object(m))) => m.is_empty(),
        _ => false,
    };
    if empty && field.omitempty {
        return false;
    }
    match (field.ty, v) {
        (Go::Str, None) => out.push_str("\"\""),
        (Go::Int, None) => out.push('0'),
        (Go::Bool, None) => out.push_str("false"),
        (Go::List(_) | Go::QuantityMap, None) => out.push_str("null"),
        (ty, v) => write_typed(ty, v, out),
    }
    true
}

fn write_typed(ty: Go, v: Option<&Value>, out: &mut String) {
    match ty {
        Go::Struct(fields) => write_struct(fields, v.and_then(Value::as_object), out),
        Go::Quantity => match v {
            Some(Value::String(s)) => quantity(s, out),
            Some(other) => value(other, out),
            None => out.push_str("\"0\""),
        },
        Go::IntOrStr => match v {
            Some(v) => value(v, out),
            None => out.push('0'),
        },
        Go::QuantityMap => match v {
            Some(Value::Object(m)) => sorted_object(m, out, |v, out| match v {
                Value::String(s) => quantity(s, out),
                other => value(other, out),
            }),
            Some(other) => value(other, out),
            None => out.push_str("null"),
        },
        Go::List(item) => match v {
            Some(Value::Array(a)) => {
                out.push('[');
                for (i, e) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_typed(*item, Some(e), out);
                }
                out.push(']');
            }
            Some(other) => value(other, out),
            None => out.push_str("null"),
        },
        Go::Str | Go::Int | Go::Bool => match v {
            Some(v) => value(v, out),
            None => out.push_str("null"),
        },
    }
}

/// A quantity as Go re-encodes it after decoding: canonical form (text kept when unparsable).
fn quantity(s: &str, out: &mut String) {
    match Quantity::parse(s.trim()) {
        Ok(q) => string(&q.canonical(), out),
        Err(_) => string(s, out),
    }
}

/// Go's `json.Marshal` of an `interface{}` holding decoded JSON: objects with sorted keys,
/// numbers as float64.
pub fn value(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if n.is_i64() || n.is_u64() {
                out.push_str(&n.to_string());
            } else {
                out.push_str(&go_float(n.as_f64().unwrap_or(0.0)));
            }
        }
        Value::String(s) => string(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, e) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                value(e, out);
            }
            out.push(']');
        }
        Value::Object(m) => sorted_object(m, out, value),
    }
}

/// A JSON object with its keys sorted, as Go encodes maps; `write` encodes each value.
fn sorted_object(m: &serde_json::Map<String, Value>, out: &mut String, write: impl Fn(&Value, &mut String)) {
    out.push('{');
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    for (i, k) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        string(k, out);
        out.push(':');
        write(&m[k], out);
    }
    out.push('}');
}

/// [`value`] into a new string.
pub fn to_string(v: &Value) -> String {
    let mut out = String::new();
    value(v, &mut out);
    out
}

/// Go's float64 encoding: shortest representation, `e` notation outside [1e-6, 1e21).
fn go_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let s = format!("{f:e}");
        // Rust writes `1e21` / `1e-7`; Go writes `1e+21` / `1e-07` cleaned to `1e-7`.
        match s.split_once('e') {
            Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e}"),
            _ => s,
        }
    } else {
        format!("{f}")
    }
}

/// Go's string encoding with HTML escaping (the `json.Marshal` default).
pub fn string(s: &str, out: &mut String) {
    out.push('"');
    // Most strings (names, hashes, images) need no escaping: copy them whole. 0xE2 starts
    // U+2028/U+2029 (and other characters, which take the slow path harmlessly).
    if s.bytes().all(|b| b >= 0x20 && !matches!(b, b'"' | b'\\' | b'<' | b'>' | b'&' | 0xE2)) {
        out.push_str(s);
        out.push('"');
        return;
    }
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn encode(v: Value) -> String {
        let c: SidecarContainer = serde_json::from_value(v).unwrap();
        let mut out = String::new();
        sidecar_container(&c, &mut out);
        out
    }

    #[test]
    fn container_fields_in_go_order_with_omitempty() {
        let cases = [
            (json!({"name": "a"}), r#"{"name":"a","resources":{},"upgradeStrategy":{},"shareVolumePolicy":{}}"#),
            (
                json!({"name": "a", "image": "x", "stdin": false, "tty": true, "resources": {"limits": {"memory": "1Gi", "cpu": "0.5"}}}),
                r#"{"name":"a","image":"x","resources":{"limits":{"cpu":"500m","memory":"1Gi"}},"tty":true,"upgradeStrategy":{},"shareVolumePolicy":{}}"#,
            ),
            (
                json!({"name": "a", "readinessProbe": {"grpc": {"port": 1}, "initialDelaySeconds": 0, "periodSeconds": 5}}),
                r#"{"name":"a","resources":{},"readinessProbe":{"grpc":{"port":1,"service":null},"periodSeconds":5},"upgradeStrategy":{},"shareVolumePolicy":{}}"#,
            ),
            (
                json!({"name": "a", "env": [{"name": "E", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}]}),
                r#"{"name":"a","env":[{"name":"E","valueFrom":{"resourceFieldRef":{"resource":"limits.cpu","divisor":"0"}}}],"resources":{},"upgradeStrategy":{},"shareVolumePolicy":{}}"#,
            ),
            (
                json!({"name": "a", "securityContext": {"privileged": false}, "restartPolicy": "Always",
                       "restartPolicyRules": [{"action": "Restart"}], "volumeMounts": [{"name": "v", "mountPath": "/v", "readOnly": false}]}),
                r#"{"name":"a","resources":{},"restartPolicy":"Always","volumeMounts":[{"name":"v","mountPath":"/v"}],"securityContext":{"privileged":false},"upgradeStrategy":{},"shareVolumePolicy":{}}"#,
            ),
            (
                json!({"name": "a", "lifecycle": {"preStop": {"httpGet": {"port": "http"}}},
                       "transferEnv": [{"sourceContainerName": "main", "envNames": ["B", "A"]}],
                       "shareVolumeDevicePolicy": {"type": "enabled"}, "envFrom": [{"configMapRef": {"name": ""}}]}),
                r#"{"name":"a","envFrom":[{"configMapRef":{}}],"resources":{},"lifecycle":{"preStop":{"httpGet":{"port":"http"}}},"upgradeStrategy":{},"shareVolumePolicy":{},"shareVolumeDevicePolicy":{"type":"enabled"},"transferEnv":[{"sourceContainerName":"main","envNames":["B","A"]}]}"#,
            ),
        ];
        for (input, want) in cases {
            assert_eq!(encode(input.clone()), want, "{input}");
        }
    }

    #[test]
    fn strings_and_values_as_go() {
        let mut out = String::new();
        string("a<b>&\"\\\n\t\u{1}\u{2028}é", &mut out);
        assert_eq!(out, r#""a\u003cb\u003e\u0026\"\\\n\t\u0001\u2028é""#);
        assert_eq!(
            to_string(&json!({"b": [1, 1.5, 1e21, 1e-7, 2.0], "a": null, "c": true})),
            r#"{"a":null,"b":[1,1.5,1e+21,1e-7,2],"c":true}"#
        );
        let mut out = String::new();
        sidecar_containers(&[], &mut out);
        assert_eq!(out, "null");
    }
}
