//! Container image references: how an image string splits into a normalised name, tag and
//! digest, which `imagePullPolicy` Kubernetes defaults from it, and whether ImagePullJob accepts
//! it. Used by the container defaults of spec §1.3.1 (SidecarSet containers: "Always if tag is
//! `latest`/absent, else IfNotPresent") and §1.5 (initContainers), and by §2.5 rule 3 (ImagePullJob
//! "image not a valid reference").
//!
//! Reproduces `k8s.io/kubernetes/pkg/util/parsers.ParseImageName` over
//! `github.com/distribution/reference` v0.6.0 `ParseNormalizedNamed` (the grammar in regexp.go,
//! `splitDockerDomain`, `Parse`), with digests checked as `github.com/opencontainers/go-digest`
//! v1.0.0 does (sha256, sha384, sha512; lowercase hex of the right length), and
//! `SetDefaults_Container`'s pull-policy rule. Kruise's ImagePullJob validator instead goes through
//! the older `github.com/docker/distribution` v2.8 reference package, which knows no bracketed
//! IPv6 registry hosts and limits the whole name (domain included) to 255 characters; that
//! flavour is [`parse_image_legacy`] / [`is_valid_reference`].

use std::fmt;
use std::sync::LazyLock;

use regex::Regex;

/// Why an image reference was rejected, with the Go error texts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImageError {
    /// A bare 64-hex identifier (`ParseNormalizedNamed` refuses those).
    Identifier(String),
    /// The repository part before the first ':' is not lowercase.
    RemoteNotLowercase { remote: String, legacy: bool },
    /// `ErrNameContainsUppercase`.
    NameContainsUppercase,
    /// `ErrReferenceInvalidFormat`.
    InvalidFormat,
    /// `ErrNameTooLong`.
    NameTooLong,
    /// `ErrNameEmpty`.
    NameEmpty,
    /// go-digest `ErrDigestInvalidFormat`.
    DigestInvalidFormat,
    /// go-digest `ErrDigestInvalidLength`.
    DigestInvalidLength,
    /// go-digest `ErrDigestUnsupported`.
    DigestUnsupported,
}

impl fmt::Display for ImageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImageError::Identifier(s) => {
                write!(f, "invalid repository name ({s}), cannot specify 64-byte hexadecimal strings")
            }
            ImageError::RemoteNotLowercase { remote, legacy: false } => {
                write!(f, "invalid reference format: repository name ({remote}) must be lowercase")
            }
            ImageError::RemoteNotLowercase { legacy: true, .. } => {
                f.write_str("invalid reference format: repository name must be lowercase")
            }
            ImageError::NameContainsUppercase => f.write_str("repository name must be lowercase"),
            ImageError::InvalidFormat => f.write_str("invalid reference format"),
            ImageError::NameTooLong => {
                write!(f, "repository name must not be more than {NAME_TOTAL_LENGTH_MAX} characters")
            }
            ImageError::NameEmpty => f.write_str("repository name must have at least one component"),
            ImageError::DigestInvalidFormat => f.write_str("invalid checksum digest format"),
            ImageError::DigestInvalidLength => f.write_str("invalid checksum digest length"),
            ImageError::DigestUnsupported => f.write_str("unsupported digest algorithm"),
        }
    }
}

impl std::error::Error for ImageError {}

/// A parsed, normalised reference (`docker.io/library/nginx:1.25`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageRef {
    /// Registry host[:port], e.g. `docker.io`.
    pub domain: String,
    /// Repository path, e.g. `library/nginx`.
    pub path: String,
    /// `domain/path`, Go's `Named.Name()`.
    pub name: String,
    pub tag: Option<String>,
    /// `algorithm:hex`.
    pub digest: Option<String>,
}

impl fmt::Display for ImageRef {
    /// Go's `reference.String()`: `name[:tag][@digest]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

/// `RepositoryNameTotalLengthMax`.
pub const NAME_TOTAL_LENGTH_MAX: usize = 255;
const DEFAULT_DOMAIN: &str = "docker.io";
const LEGACY_DEFAULT_DOMAIN: &str = "index.docker.io";
const OFFICIAL_REPO_PREFIX: &str = "library/";

/// `ParseNormalizedNamed` as Kubernetes uses it (distribution/reference v0.6.0).
pub fn parse_image(image: &str) -> Result<ImageRef, ImageError> {
    parse_normalized(image, Flavour::Modern)
}

/// `ParseNormalizedNamed` of docker/distribution v2.8, what kruise's `NormalizeImageRef` runs.
pub fn parse_image_legacy(image: &str) -> Result<ImageRef, ImageError> {
    parse_normalized(image, Flavour::Legacy)
}

/// ImagePullJob's image check (`daemonutil.NormalizeImageRef(image)` succeeds). The webhook
/// reports a failure as `invalid image <image>: <parse_image_legacy error>`.
pub fn is_valid_reference(image: &str) -> bool {
    parse_image_legacy(image).is_ok()
}

/// `SetDefaults_Container`'s pull policy for an empty `imagePullPolicy`: "Always" when the tag
/// is `latest` or there is neither tag nor digest, else "IfNotPresent". An unparsable image
/// yields "IfNotPresent" because Go ignores the error and sees an empty tag.
pub fn default_pull_policy(image: &str) -> &'static str {
    let tag = match parse_image(image) {
        Err(_) => String::new(),
        Ok(r) => match (r.tag, r.digest) {
            (Some(tag), _) => tag,
            (None, Some(_)) => String::new(),
            (None, None) => "latest".to_string(),
        },
    };
    if tag == "latest" { "Always" } else { "IfNotPresent" }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Flavour {
    Modern,
    Legacy,
}

struct Grammar {
    reference: Regex,
    anchored_name: Regex,
    identifier: Regex,
}

fn optional(s: &str) -> String {
    format!("(?:{s})?")
}

fn any_times(s: &str) -> String {
    format!("(?:{s})*")
}

/// The regexp.go grammar, built the same way Go builds it. Go's `\w` is ASCII-only, so it is
/// spelled out; `[[:xdigit:]]` is ASCII in both engines. Both engines pick captures leftmost-first.
fn grammar(flavour: Flavour) -> Result<Grammar, regex::Error> {
    let alphanumeric = "[a-z0-9]+";
    let separator = match flavour {
        Flavour::Modern => "(?:[._]|__|[-]+)",
        Flavour::Legacy => "(?:[._]|__|[-]*)",
    };
    let domain_component = "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
    let domain_name = format!("{domain_component}{}", any_times(&format!(r"\.{domain_component}")));
    let host = match flavour {
        Flavour::Modern => format!(r"(?:{domain_name}|\[(?:[a-fA-F0-9:]+)\])"),
        Flavour::Legacy => domain_name,
    };
    let domain_and_port = format!("{host}(?::[0-9]+)?");
    let tag = r"[0-9A-Za-z_][0-9A-Za-z_.-]{0,127}";
    let digest = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][[:xdigit:]]{32,}";
    let path_component = format!("{alphanumeric}{}", any_times(&format!("{separator}{alphanumeric}")));
    let remote_name = format!("{path_component}{}", any_times(&format!("/{path_component}")));
    let name = format!("{}{remote_name}", optional(&format!("{domain_and_port}/")));
    let reference = format!("^({name}){}{}$", optional(&format!(":({tag})")), optional(&format!("@({digest})")));
    let anchored_name = format!("^{}({remote_name})$", optional(&format!("({domain_and_port})/")));
    Ok(Grammar {
        reference: Regex::new(&reference)?,
        anchored_name: Regex::new(&anchored_name)?,
        identifier: Regex::new("^([a-f0-9]{64})$")?,
    })
}

static MODERN: LazyLock<Option<Grammar>> = LazyLock::new(|| grammar(Flavour::Modern).ok());
static LEGACY: LazyLock<Option<Grammar>> = LazyLock::new(|| grammar(Flavour::Legacy).ok());

fn parse_normalized(s: &str, flavour: Flavour) -> Result<ImageRef, ImageError> {
    let grammar = match flavour {
        Flavour::Modern => MODERN.as_ref(),
        Flavour::Legacy => LEGACY.as_ref(),
    };
    // The patterns are constants covered by the tests; should they ever fail to compile, every
    // reference is reported malformed rather than panicking on the serving path.
    let g = grammar.ok_or(ImageError::InvalidFormat)?;
    if g.identifier.is_match(s) {
        return Err(ImageError::Identifier(s.to_string()));
    }
    let (domain, remainder) = split_docker_domain(s);
    let remote = remainder.split(':').next().unwrap_or_default();
    if remote.to_lowercase() != remote {
        return Err(ImageError::RemoteNotLowercase { remote: remote.to_string(), legacy: flavour == Flavour::Legacy });
    }
    parse_reference(g, &format!("{domain}/{remainder}"), flavour)
}

/// `splitDockerDomain`: decide whether the first path element is a registry.
fn split_docker_domain(name: &str) -> (String, String) {
    let (domain, mut remainder) = match name.split_once('/') {
        None => {
            return (DEFAULT_DOMAIN.to_string(), format!("{OFFICIAL_REPO_PREFIX}{name}"));
        }
        Some(("localhost", rest)) => ("localhost".to_string(), rest.to_string()),
        Some((LEGACY_DEFAULT_DOMAIN, rest)) => (DEFAULT_DOMAIN.to_string(), rest.to_string()),
        Some((first, rest)) if first.contains(['.', ':']) || first.to_lowercase() != first => {
            (first.to_string(), rest.to_string())
        }
        Some(_) => (DEFAULT_DOMAIN.to_string(), name.to_string()),
    };
    if domain == DEFAULT_DOMAIN && !remainder.contains('/') {
        remainder = format!("{OFFICIAL_REPO_PREFIX}{remainder}");
    }
    (domain, remainder)
}

/// `reference.Parse`.
fn parse_reference(g: &Grammar, s: &str, flavour: Flavour) -> Result<ImageRef, ImageError> {
    if s.is_empty() {
        return Err(ImageError::NameEmpty);
    }
    let Some(caps) = g.reference.captures(s) else {
        let lower = s.to_lowercase();
        if lower != s && g.reference.is_match(&lower) {
            return Err(ImageError::NameContainsUppercase);
        }
        return Err(ImageError::InvalidFormat);
    };
    let name = caps.get(1).map_or("", |m| m.as_str());
    let (domain, path) = match g.anchored_name.captures(name) {
        Some(n) => (n.get(1).map_or("", |m| m.as_str()), n.get(2).map_or(name, |m| m.as_str())),
        None => ("", name),
    };
    let checked_len = match flavour {
        Flavour::Modern => path.len(),
        Flavour::Legacy => name.len(),
    };
    if checked_len > NAME_TOTAL_LENGTH_MAX {
        return Err(ImageError::NameTooLong);
    }
    let tag = caps.get(2).map(|m| m.as_str().to_string());
    let digest = match caps.get(3) {
        Some(m) => Some(validate_digest(m.as_str())?),
        None => None,
    };
    if name.is_empty() {
        return Err(ImageError::NameEmpty);
    }
    Ok(ImageRef { domain: domain.to_string(), path: path.to_string(), name: name.to_string(), tag, digest })
}

/// go-digest v1.0.0 `Digest.Validate`.
fn validate_digest(d: &str) -> Result<String, ImageError> {
    let Some((algorithm, encoded)) = d.split_once(':').filter(|(a, e)| !a.is_empty() && !e.is_empty()) else {
        return Err(ImageError::DigestInvalidFormat);
    };
    let hex_len = match algorithm {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => {
            // DigestRegexpAnchored: `[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+`
            let alg_ok = algorithm
                .split(['.', '+', '_', '-'])
                .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
            let enc_ok = encoded.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'=' | b'_' | b'-'));
            return Err(if alg_ok && enc_ok { ImageError::DigestUnsupported } else { ImageError::DigestInvalidFormat });
        }
    };
    if encoded.len() != hex_len {
        return Err(ImageError::DigestInvalidLength);
    }
    if !encoded.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return Err(ImageError::DigestInvalidFormat);
    }
    Ok(d.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// input, domain, path, tag, digest
    type Expected<'a> = (&'a str, &'a str, &'a str, Option<&'a str>, Option<&'a str>);

    const SHA: &str = "sha256:7cc4b5aefd1d0cadf8d97d4350462ba51c694ebca145b08d7d41b41acc8db5aa";

    #[test]
    fn grammar_compiles() {
        assert!(MODERN.is_some());
        assert!(LEGACY.is_some());
    }

    #[test]
    fn normalises_like_parse_normalized_named() {
        let sha_ref = format!("busybox@{SHA}");
        let both = format!("gcr.io/x/y:v1@{SHA}");
        let cases: Vec<Expected> = vec![
            ("nginx", "docker.io", "library/nginx", None, None),
            ("nginx:1.25", "docker.io", "library/nginx", Some("1.25"), None),
            ("nginx:latest", "docker.io", "library/nginx", Some("latest"), None),
            ("library/nginx", "docker.io", "library/nginx", None, None),
            ("docker.io/nginx", "docker.io", "library/nginx", None, None),
            ("index.docker.io/nginx", "docker.io", "library/nginx", None, None),
            ("index.docker.io/docker/docker", "docker.io", "docker/docker", None, None),
            ("fooo/bar", "docker.io", "fooo/bar", None, None),
            ("library/foo/bar", "docker.io", "library/foo/bar", None, None),
            ("localhost/fooo", "localhost", "fooo", None, None),
            ("localhost:5000/foo/bar:tag", "localhost:5000", "foo/bar", Some("tag"), None),
            ("LOCALDOMAIN/fooo/bar", "LOCALDOMAIN", "fooo/bar", None, None),
            ("Foo/bar", "Foo", "bar", None, None),
            ("127.0.0.1:8000/private/moonbase", "127.0.0.1:8000", "private/moonbase", None, None),
            ("example.com:8000/privatebasee", "example.com:8000", "privatebasee", None, None),
            ("192.168.0.1", "docker.io", "library/192.168.0.1", None, None),
            ("192.168.0.1:80", "docker.io", "library/192.168.0.1", Some("80"), None),
            ("[fc00::1]:5000/docker/docker", "[fc00::1]:5000", "docker/docker", None, None),
            ("ubuntu-12.04-base", "docker.io", "library/ubuntu-12.04-base", None, None),
            ("docker---rules/dock__er", "docker.io", "docker---rules/dock__er", None, None),
            ("registry.k8s.io/pause:3.9", "registry.k8s.io", "pause", Some("3.9"), None),
            ("nginx:Tag_1.x-Y", "docker.io", "library/nginx", Some("Tag_1.x-Y"), None),
            (&sha_ref, "docker.io", "library/busybox", None, Some(SHA)),
            (&both, "gcr.io", "x/y", Some("v1"), Some(SHA)),
        ];
        for (input, domain, path, tag, digest) in cases {
            let r = parse_image(input).map_err(|e| e.to_string());
            let want = ImageRef {
                domain: domain.into(),
                path: path.into(),
                name: format!("{domain}/{path}"),
                tag: tag.map(Into::into),
                digest: digest.map(Into::into),
            };
            assert_eq!(r, Ok(want), "{input}");
        }
        assert_eq!(parse_image(&both).map(|r| r.to_string()), Ok(format!("gcr.io/x/y:v1@{SHA}")));
    }

    #[test]
    fn rejects_like_go() {
        let hex = "1a3f5e7d9c1b3a5f7e9d1c3b5a7f9e1d3c5b7a9f1e3d5d7c9b1a3f5e7d9c1b3a";
        let long_ns = format!("{}/docker", "a".repeat(256));
        let upper_digest = format!("busybox@{}", SHA.to_uppercase().replace("SHA256", "sha256"));
        let short = "busybox@sha256:7cc4b5aefd1d0cadf8d97d4350462ba5";
        let md5 = "busybox@md5:7cc4b5aefd1d0cadf8d97d4350462ba5";
        let cases: Vec<(&str, String)> = vec![
            ("", "invalid reference format".into()),
            (hex, format!("invalid repository name ({hex}), cannot specify 64-byte hexadecimal strings")),
            ("docker/Docker", "invalid reference format: repository name (docker/Docker) must be lowercase".into()),
            ("Nginx:1", "invalid reference format: repository name (library/Nginx) must be lowercase".into()),
            ("https://github.com/docker/docker", "invalid reference format".into()),
            ("-docker", "invalid reference format".into()),
            ("docker///docker", "invalid reference format".into()),
            (
                "docker.io/docker/Docker",
                "invalid reference format: repository name (docker/Docker) must be lowercase".into(),
            ),
            ("[fc00::1]", "invalid reference format".into()),
            ("[fc00::1]:5000", "invalid reference format".into()),
            ("fc00::1:5000/debian", "invalid reference format".into()),
            ("[fe80::1%eth0]:5000/debian", "invalid reference format".into()),
            ("docker-/docker", "invalid reference format".into()),
            ("____/____", "invalid reference format".into()),
            ("dock..er/docker", "invalid reference format".into()),
            ("docker/", "invalid reference format".into()),
            ("nginx:", "invalid reference format".into()),
            ("nginx:-tag", "invalid reference format".into()),
            ("nginx: 1", "invalid reference format".into()),
            ("nginx:ta g", "invalid reference format".into()),
            ("nginx:täg", "invalid reference format".into()),
            (&long_ns, "repository name must not be more than 255 characters".into()),
            ("EXAMPLE.com/Foo/bar:1", "invalid reference format: repository name (Foo/bar) must be lowercase".into()),
            (&upper_digest, "invalid checksum digest format".into()),
            (short, "invalid checksum digest length".into()),
            (md5, "unsupported digest algorithm".into()),
            (
                "busybox@SHA256:7cc4b5aefd1d0cadf8d97d4350462ba5",
                "invalid reference format: repository name (library/busybox@SHA256) must be lowercase".into(),
            ),
        ];
        for (input, want) in cases {
            assert_eq!(parse_image(input).map_err(|e| e.to_string()), Err(want), "{input:?}");
        }
    }

    #[test]
    fn legacy_flavour_for_image_pull_job() {
        let long_total = format!("registry.example.com/{}", "a".repeat(240));
        let cases: Vec<(&str, bool)> = vec![
            ("nginx", true),
            ("nginx:1.25", true),
            ("busybox:latest@sha256:7cc4b5aefd1d0cadf8d97d4350462ba51c694ebca145b08d7d41b41acc8db5aa", true),
            ("localhost:5000/a/b", true),
            ("[fc00::1]:5000/docker", false),
            (&long_total, false),
            ("Nginx", false),
            ("", false),
            ("nginx:", false),
        ];
        for (input, want) in cases {
            assert_eq!(is_valid_reference(input), want, "{input:?}");
        }
        assert!(parse_image(&long_total).is_ok(), "the modern flavour only limits the path");
        assert_eq!(
            parse_image_legacy("Nginx").map_err(|e| e.to_string()),
            Err("invalid reference format: repository name must be lowercase".into())
        );
    }

    #[test]
    fn pull_policy_defaults() {
        let digest_only = format!("nginx@{SHA}");
        let latest_digest = format!("nginx:latest@{SHA}");
        let tag_digest = format!("nginx:1.25@{SHA}");
        let cases: Vec<(&str, &str)> = vec![
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("registry.k8s.io/pause", "Always"),
            ("localhost:5000/app:latest", "Always"),
            ("nginx:1.25", "IfNotPresent"),
            ("nginx:Latest", "IfNotPresent"),
            ("localhost:5000/app", "Always"),
            (&digest_only, "IfNotPresent"),
            (&latest_digest, "Always"),
            (&tag_digest, "IfNotPresent"),
            ("", "IfNotPresent"),
            ("Invalid/Image:latest", "IfNotPresent"),
            ("not a valid image", "IfNotPresent"),
            ("nginx:latest:latest", "IfNotPresent"),
            ("dns:1.0", "IfNotPresent"),
        ];
        for (image, want) in cases {
            assert_eq!(default_pull_policy(image), want, "{image:?}");
        }
    }
}
