//! Kubernetes name, label and annotation validation with Kubernetes' exact message texts (spec
//! §2.1 rule 1 and rule 5 "template labels & annotations valid", §2.2/§2.3 metadata rules).
//! Reproduces `k8s.io/apimachinery/pkg/util/validation/validation.go` (`IsDNS1123Label`,
//! `IsDNS1123Subdomain`, `IsDNS1035Label`, `IsQualifiedName`, `IsValidLabelValue`),
//! `pkg/apis/meta/v1/validation` (`ValidateLabels`, `ValidateLabelName`) and
//! `pkg/api/validation/objectmeta.go` (`ValidateAnnotations`) at v0.32, the version kruise
//! vendors. (From v0.34 the qualified-name fallback message says "a valid label key" instead of
//! "a qualified name"; the other texts are unchanged.)
//!
//! The patterns are matched by hand (they are tiny character-class grammars) so nothing here can
//! fail to compile or panic. Go walks maps in random order; we walk them sorted by key, so the
//! error order is deterministic.

use std::collections::BTreeMap;

use crate::compat::field::FieldError;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric \
     characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case \
     alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric \
     characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and \
     must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric \
     characters, '-', '_' or '.', and must start and end with an alphanumeric character";

pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
pub const DNS1035_LABEL_MAX_LENGTH: usize = 63;
pub const QUALIFIED_NAME_MAX_LENGTH: usize = 63;
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;
/// `TotalAnnotationSizeLimitB`: 256 KiB over all keys and values.
pub const TOTAL_ANNOTATION_SIZE_LIMIT_B: usize = 256 * 1024;

/// Go's `MaxLenError`.
pub fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} characters")
}

/// Go's `RegexError`, including its double space before "or" when there are several examples.
pub fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push('\'');
        out.push_str(example);
        out.push_str("', ");
    }
    out.push_str("regex used for validation is '");
    out.push_str(fmt);
    out.push_str("')");
    out
}

/// Go's `EmptyError`.
pub fn empty_error() -> String {
    "must be non-empty".to_string()
}

/// Non-empty, every byte allowed, first and last byte in `edge`.
fn matches_class(s: &str, allowed: fn(u8) -> bool, first: fn(u8) -> bool, last: fn(u8) -> bool) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(&f), Some(&l)) => first(f) && last(l) && b.iter().all(|&c| allowed(c)),
        _ => false,
    }
}

fn lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

fn lower_alnum_dash(c: u8) -> bool {
    lower_alnum(c) || c == b'-'
}

fn is_dns1123_label_text(s: &str) -> bool {
    matches_class(s, lower_alnum_dash, lower_alnum, lower_alnum)
}

fn is_dns1123_subdomain_text(s: &str) -> bool {
    s.split('.').all(is_dns1123_label_text)
}

fn is_qualified_name_text(s: &str) -> bool {
    let ext = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.');
    matches_class(s, ext, |c| c.is_ascii_alphanumeric(), |c| c.is_ascii_alphanumeric())
}

/// `IsDNS1123Label`: an RFC 1123 label (container names, ...).
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !is_dns1123_label_text(value) {
        if is_dns1123_subdomain_text(value) {
            // A valid subdomain but not a label: since length was already checked, it is dots.
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(DNS1123_LABEL_ERR, DNS1123_LABEL_FMT, &["my-name", "123-abc"]));
        }
    }
    errs
}

/// `IsDNS1123Subdomain`: an RFC 1123 subdomain (object names, label-key prefixes, ...).
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !is_dns1123_subdomain_text(value) {
        errs.push(regex_error(DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, &["example.com"]));
    }
    errs
}

/// `IsDNS1035Label`: an RFC 1035 label (service names, port names).
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1035_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1035_LABEL_MAX_LENGTH));
    }
    if !matches_class(value, lower_alnum_dash, |c| c.is_ascii_lowercase(), lower_alnum) {
        errs.push(regex_error(DNS1035_LABEL_ERR, DNS1035_LABEL_FMT, &["my-name", "abc-123"]));
    }
    errs
}

/// `IsQualifiedName`: a label or annotation key, `[prefix/]name` where the prefix is a DNS
/// subdomain and the name at most 63 characters.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push(format!("prefix part {}", empty_error()));
            } else {
                errs.extend(is_dns1123_subdomain(prefix).into_iter().map(|m| format!("prefix part {m}")));
            }
            *name
        }
        _ => {
            let examples = ["MyName", "my.name", "123-abc"];
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. \
                 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, &examples)
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push(format!("name part {}", empty_error()));
    } else if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errs.push(format!("name part {}", max_len_error(QUALIFIED_NAME_MAX_LENGTH)));
    }
    if !is_qualified_name_text(name) {
        let examples = ["MyName", "my.name", "123-abc"];
        errs.push(format!("name part {}", regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, &examples)));
    }
    errs
}

/// `IsValidLabelValue`: empty, or a qualified-name-like string of at most 63 characters.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !value.is_empty() && !is_qualified_name_text(value) {
        errs.push(regex_error(LABEL_VALUE_ERR, LABEL_VALUE_FMT, &["MyValue", "my_value", "12345"]));
    }
    errs
}

/// `ValidateLabelName`: one `Invalid` error at `path` per message about the key.
pub fn validate_label_name(key: &str, path: &str) -> Vec<FieldError> {
    is_qualified_name(key).into_iter().map(|msg| FieldError::invalid(path, key, msg)).collect()
}

/// `ValidateLabels`: keys must be qualified names and values valid label values; every error is
/// reported at `path` itself (Go does not add the key to the path).
pub fn validate_labels(labels: &BTreeMap<String, String>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (k, v) in labels {
        errs.extend(validate_label_name(k, path));
        errs.extend(is_valid_label_value(v).into_iter().map(|msg| FieldError::invalid(path, v.as_str(), msg)));
    }
    errs
}

/// `ValidateAnnotations`: keys are qualified names compared case-insensitively (checked in
/// lower case, reported as written), and keys plus values together stay within 256 KiB.
pub fn validate_annotations(annotations: &BTreeMap<String, String>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut total = 0usize;
    for (k, v) in annotations {
        errs.extend(
            is_qualified_name(&k.to_lowercase()).into_iter().map(|msg| FieldError::invalid(path, k.as_str(), msg)),
        );
        total += k.len() + v.len();
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_B {
        errs.push(FieldError::too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT_B as i64));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    const LABEL_REGEX_MSG: &str = "a lowercase RFC 1123 label must consist of lower case \
        alphanumeric characters or '-', and must start and end with an alphanumeric character \
        (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case \
        alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character \
        (e.g. 'example.com', regex used for validation is \
        '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    const QNAME_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', \
        and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or \
        '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric \
        characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. \
        'MyValue',  or 'my_value',  or '12345', regex used for validation is \
        '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    #[test]
    fn dns1123_label() {
        let long = "a".repeat(64);
        let long_dash = format!("{long}-");
        let cases: Vec<(&str, Vec<String>)> = vec![
            ("a", vec![]),
            ("ab-c", vec![]),
            ("a--b", vec![]),
            ("0", vec![]),
            ("123-abc", vec![]),
            (&long[..63], vec![]),
            ("", vec![LABEL_REGEX_MSG.into()]),
            ("A", vec![LABEL_REGEX_MSG.into()]),
            ("-a", vec![LABEL_REGEX_MSG.into()]),
            ("a-", vec![LABEL_REGEX_MSG.into()]),
            ("a_b", vec![LABEL_REGEX_MSG.into()]),
            ("a.b", vec!["must not contain dots".into()]),
            ("a..b", vec![LABEL_REGEX_MSG.into()]),
            ("ä", vec![LABEL_REGEX_MSG.into()]),
            (&long, vec!["must be no more than 63 characters".into()]),
            (&long_dash, vec!["must be no more than 63 characters".into(), LABEL_REGEX_MSG.into()]),
        ];
        for (input, want) in cases {
            assert_eq!(is_dns1123_label(input), want, "{input:?}");
        }
    }

    #[test]
    fn dns1123_subdomain() {
        let long = format!("{}.{}", "a".repeat(63), "b".repeat(190));
        let too_long = format!("{long}a");
        let cases: Vec<(&str, Vec<String>)> = vec![
            ("example.com", vec![]),
            ("a", vec![]),
            ("1.2.3.4", vec![]),
            ("a-b.c-d", vec![]),
            (&long[..253], vec![]),
            ("", vec![SUBDOMAIN_MSG.into()]),
            ("Example.com", vec![SUBDOMAIN_MSG.into()]),
            (".a", vec![SUBDOMAIN_MSG.into()]),
            ("a.", vec![SUBDOMAIN_MSG.into()]),
            ("a..b", vec![SUBDOMAIN_MSG.into()]),
            ("a_b.com", vec![SUBDOMAIN_MSG.into()]),
            (&too_long, vec!["must be no more than 253 characters".into()]),
        ];
        for (input, want) in cases {
            assert_eq!(is_dns1123_subdomain(input), want, "{input:?}");
        }
    }

    #[test]
    fn dns1035_label() {
        let msg = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', \
            start with an alphabetic character, and end with an alphanumeric character (e.g. \
            'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
        assert!(is_dns1035_label("my-name").is_empty());
        assert!(is_dns1035_label("a1").is_empty());
        assert_eq!(is_dns1035_label("1a"), vec![msg.to_string()]);
        assert_eq!(is_dns1035_label(""), vec![msg.to_string()]);
    }

    #[test]
    fn qualified_name() {
        let long = "a".repeat(64);
        let multi = "a qualified name must consist of alphanumeric characters, '-', '_' or '.', \
            and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  \
            or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') \
            with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')";
        let cases: Vec<(String, Vec<String>)> = vec![
            ("simple".into(), vec![]),
            ("now-with-dashes".into(), vec![]),
            ("1-starts-with-num".into(), vec![]),
            ("1234".into(), vec![]),
            ("simple/simple".into(), vec![]),
            ("now-with-dashes/simple".into(), vec![]),
            ("now-with-dashes/now-with-dashes".into(), vec![]),
            ("now.with.dots/simple".into(), vec![]),
            ("now-with.dashes-and.dots/simple".into(), vec![]),
            ("1-num.2-num/3-num".into(), vec![]),
            ("1234/5678".into(), vec![]),
            ("1.2.3.4/5678".into(), vec![]),
            ("Uppercase_Is_OK_123".into(), vec![]),
            ("example.com/Uppercase_Is_OK_123".into(), vec![]),
            ("requests.storage-foo".into(), vec![]),
            (format!("{}/{}", "a".repeat(253), &long[..63]), vec![]),
            ("nospecialchars%^=@".into(), vec![QNAME_MSG.into()]),
            ("cantendwithadash-".into(), vec![QNAME_MSG.into()]),
            ("-cantstartwithadash-".into(), vec![QNAME_MSG.into()]),
            ("only/one/slash".into(), vec![multi.into()]),
            ("Example.com/abc".into(), vec![format!("prefix part {SUBDOMAIN_MSG}")]),
            ("example_com/abc".into(), vec![format!("prefix part {SUBDOMAIN_MSG}")]),
            ("/simple".into(), vec!["prefix part must be non-empty".into()]),
            ("example.com/".into(), vec!["name part must be non-empty".into(), QNAME_MSG.into()]),
            ("".into(), vec!["name part must be non-empty".into(), QNAME_MSG.into()]),
            (long.clone(), vec!["name part must be no more than 63 characters".into()]),
            (format!("{}/a", "a".repeat(254)), vec!["prefix part must be no more than 253 characters".into()]),
        ];
        for (input, want) in cases {
            assert_eq!(is_qualified_name(&input), want, "{input:?}");
        }
    }

    #[test]
    fn label_value() {
        let long = "a".repeat(64);
        let cases: Vec<(&str, Vec<String>)> = vec![
            ("", vec![]),
            ("simple", vec![]),
            ("now-with-dashes", vec![]),
            ("1-starts-with-num", vec![]),
            ("end-with-num-1", vec![]),
            ("1234", vec![]),
            ("a", vec![]),
            ("Mixed_Case.and-1", vec![]),
            (&long[..63], vec![]),
            ("nospecialchars%^=@", vec![VALUE_MSG.into()]),
            ("Tama-nui-te-rā.is.Māori.sun", vec![VALUE_MSG.into()]),
            ("\\backslashes\\are\\bad", vec![VALUE_MSG.into()]),
            ("-starts-with-dash", vec![VALUE_MSG.into()]),
            ("ends-with-dash-", vec![VALUE_MSG.into()]),
            (".starts.with.dot", vec![VALUE_MSG.into()]),
            ("ends.with.dot.", vec![VALUE_MSG.into()]),
            ("a/b", vec![VALUE_MSG.into()]),
            (&long, vec!["must be no more than 63 characters".into()]),
        ];
        for (input, want) in cases {
            assert_eq!(is_valid_label_value(input), want, "{input:?}");
        }
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn labels_render_like_go() {
        let cases: Vec<(BTreeMap<String, String>, Vec<String>)> = vec![
            (map(&[("app", "nginx"), ("example.com/tier", "")]), vec![]),
            (map(&[("bad key", "v")]), vec![format!("metadata.labels: Invalid value: \"bad key\": {QNAME_MSG}")]),
            (
                map(&[("app", "-x"), ("a/b/c", "ok")]),
                vec![
                    "metadata.labels: Invalid value: \"a/b/c\": a qualified name must consist of \
                     alphanumeric characters, '-', '_' or '.', and must start and end with an \
                     alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex \
                     used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an \
                     optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
                        .to_string(),
                    format!("metadata.labels: Invalid value: \"-x\": {VALUE_MSG}"),
                ],
            ),
        ];
        for (labels, want) in cases {
            let got: Vec<String> =
                validate_labels(&labels, "metadata.labels").iter().map(ToString::to_string).collect();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn annotations_render_like_go() {
        let big = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT_B);
        let cases: Vec<(BTreeMap<String, String>, Vec<String>)> = vec![
            (map(&[("Example.COM/Some-Key", "any value at all, even / and spaces")]), vec![]),
            (map(&[("kruise.io/sidecarset-hash", "abc")]), vec![]),
            (map(&[("a", &big[..TOTAL_ANNOTATION_SIZE_LIMIT_B - 1])]), vec![]),
            (
                map(&[("a", &big)]),
                vec!["metadata.annotations: Too long: may not be more than 262144 bytes".to_string()],
            ),
            (map(&[("Bad Key", "")]), vec![format!("metadata.annotations: Invalid value: \"Bad Key\": {QNAME_MSG}")]),
            (
                map(&[("UPPER_/x", "")]),
                vec![format!("metadata.annotations: Invalid value: \"UPPER_/x\": prefix part {SUBDOMAIN_MSG}")],
            ),
        ];
        for (annotations, want) in cases {
            let got: Vec<String> =
                validate_annotations(&annotations, "metadata.annotations").iter().map(ToString::to_string).collect();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn regex_error_shapes() {
        assert_eq!(regex_error("m", "f", &[]), "m (regex used for validation is 'f')");
        assert_eq!(regex_error("m", "f", &["a"]), "m (e.g. 'a', regex used for validation is 'f')");
    }
}
