//! The kubelet's credential-provider plugins as kruise-daemon uses them (kruise `cmd/daemon`
//! `--plugin-config-file` / `--plugin-bin-dir`, `plugin.RegisterCredentialProviderPlugins`;
//! k8s.io/kubernetes `pkg/credentialprovider/plugin` `config.go` and `plugin.go`): the pure parts.
//!
//! - [`parse_config`]: a `CredentialProviderConfig` (kubelet.config.k8s.io v1alpha1, v1beta1 or
//!   v1; YAML or JSON) into providers; [`validate`] with the kubelet's field errors. A provider
//!   in service-account-token mode (`tokenAttributes`) is refused: the daemon pulls for no pod.
//! - [`Provider::matches`]: whether an image is one of its `matchImages` (`URLsMatchStr`).
//! - [`request`] / [`parse_response`]: the `CredentialProviderRequest` written to the plugin's
//!   stdin and its `CredentialProviderResponse`, checked as the kubelet checks it.
//! - [`Cache`]: responses kept per image, registry or globally (`cacheKeyType`) for
//!   `cacheDuration` (the provider's `defaultCacheDuration` when the response has none; 0: not
//!   kept), looked up image first, then registry, then global.
//! - [`credentials`]: a response's `auth` map as a keyring looked up for the image.
//!
//! The image is the repository the pull's keyring is asked about (`docker.io/library/nginx`), as
//! kruise passes it. What runs the plugin is [`crate::daemon::credential_provider`].

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;

use super::auth::{Credential, Keyring, urls_match};

/// The config file's API group.
pub const CONFIG_GROUP: &str = "kubelet.config.k8s.io";
const CONFIG_VERSIONS: [&str; 3] = ["v1alpha1", "v1beta1", "v1"];
/// The plugin API versions a provider may name (the kubelet's `apiVersions`).
pub const PLUGIN_API_VERSIONS: [&str; 3] = [
    "credentialprovider.kubelet.k8s.io/v1",
    "credentialprovider.kubelet.k8s.io/v1alpha1",
    "credentialprovider.kubelet.k8s.io/v1beta1",
];
/// The cache key of `cacheKeyType: Global`.
const GLOBAL_CACHE_KEY: &str = "<global>";

/// One provider of the config.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Provider {
    /// The plugin's executable name in the plugin directory.
    pub name: String,
    /// Images it is asked about.
    pub match_images: Vec<String>,
    /// How long a response without `cacheDuration` is kept (`None`: not set, an error).
    pub default_cache_duration: Option<Duration>,
    /// A negative `defaultCacheDuration`, as written.
    pub bad_cache_duration: Option<String>,
    /// The plugin API version of its request and response.
    pub api_version: String,
    /// Arguments of the executable.
    pub args: Vec<String>,
    /// Environment added to the daemon's.
    pub env: Vec<(String, String)>,
    /// Whether `tokenAttributes` is set.
    pub token_attributes: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ConfigFile {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    providers: Vec<ProviderFile>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ProviderFile {
    #[serde(default)]
    name: String,
    #[serde(default)]
    match_images: Vec<String>,
    #[serde(default)]
    default_cache_duration: Option<String>,
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: Vec<EnvFile>,
    #[serde(default)]
    token_attributes: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EnvFile {
    #[serde(default)]
    name: String,
    #[serde(default)]
    value: String,
}

/// Go's `time.ParseDuration` as a non-negative `Duration` (`Err`: the text, for the field error).
fn go_duration(text: &str) -> Result<Duration, String> {
    let nanos = crate::compat::cron::parse_duration(text)?;
    u64::try_from(nanos).map(Duration::from_nanos).map_err(|_| "must be greater than or equal to 0".to_string())
}

/// The providers of one config file (kubelet `decode`): its kind and group checked, strictly (an
/// unknown field is an error, as the kubelet's strict decoding; `tokenAttributes` is known, and
/// refused by [`validate`]).
pub fn parse_config(data: &[u8]) -> Result<Vec<Provider>, String> {
    let file: ConfigFile = serde_yaml_ng::from_slice(data).map_err(|e| e.to_string())?;
    let (group, version) = file.api_version.split_once('/').unwrap_or(("", file.api_version.as_str()));
    if file.kind != "CredentialProviderConfig" {
        return Err(format!("failed to decode {:?} (wrong Kind)", file.kind));
    }
    if group != CONFIG_GROUP {
        return Err(format!("failed to decode CredentialProviderConfig, unexpected Group: {group}"));
    }
    if !CONFIG_VERSIONS.contains(&version) {
        return Err(format!("no kind \"CredentialProviderConfig\" is registered for version \"{}\"", file.api_version));
    }
    file.providers
        .into_iter()
        .map(|p| {
            let (default_cache_duration, bad_cache_duration) = match p.default_cache_duration.as_deref() {
                None => (None, None),
                Some(text) => match crate::compat::cron::parse_duration(text)? {
                    n if n < 0 => (None, Some(text.to_string())),
                    n => (Some(Duration::from_nanos(n.unsigned_abs())), None),
                },
            };
            Ok(Provider {
                name: p.name,
                match_images: p.match_images,
                default_cache_duration,
                bad_cache_duration,
                api_version: p.api_version,
                args: p.args,
                env: p.env.into_iter().map(|e| (e.name, e.value)).collect(),
                token_attributes: p.token_attributes.is_some(),
            })
        })
        .collect()
}

/// The providers of several files (a config directory's `.json`, `.yaml`, `.yml` files in name
/// order): a name given twice is refused.
pub fn merge(files: Vec<Vec<Provider>>) -> Result<Vec<Provider>, String> {
    let mut seen = std::collections::BTreeSet::new();
    let mut all = Vec::new();
    for p in files.into_iter().flatten() {
        if !seen.insert(p.name.clone()) {
            return Err(format!("duplicate provider name {:?} found in configuration file(s)", p.name));
        }
        all.push(p);
    }
    Ok(all)
}

/// `url.Parse("https://" + s)` failing (kubelet `ParseSchemelessURL`), as far as a match image
/// can make it fail: a space or control character, or a bad `%` escape.
fn schemeless_url_error(s: &str) -> Option<String> {
    let url = format!("https://{s}");
    if let Some(c) = s.chars().find(|c| c.is_control()) {
        return Some(format!("parse {url:?}: net/url: invalid control character in URL (at {c:?})"));
    }
    let host = s.split('/').next().unwrap_or("");
    if host.contains(' ') {
        return Some(format!("parse {url:?}: invalid character \" \" in host name"));
    }
    let bytes = s.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'%' {
            let hex = bytes.get(i + 1..i + 3).filter(|h| h.iter().all(u8::is_ascii_hexdigit));
            if hex.is_none() {
                let bad: String = s[i..].chars().take(3).collect();
                return Some(format!("parse {url:?}: invalid URL escape {bad:?}"));
            }
        }
    }
    None
}

/// kubelet `validateCredentialProviderConfig` (with service-account-token mode off): every
/// error, as `field.Error` prints it.
pub fn validate(providers: &[Provider]) -> Vec<String> {
    let mut errs = Vec::new();
    if providers.is_empty() {
        errs.push("providers: Required value: at least 1 item in plugins is required".to_string());
    }
    let mut seen = std::collections::BTreeSet::new();
    for p in providers {
        let name = &p.name;
        for (bad, why) in [
            (name.contains('/'), "provider name cannot contain '/'"),
            (name.contains(' '), "provider name cannot contain spaces"),
            (name == ".", "provider name cannot be '.'"),
            (name == "..", "provider name cannot be '..'"),
        ] {
            if bad {
                errs.push(format!("providers.name: Invalid value: {name:?}: {why}"));
            }
        }
        if !seen.insert(name.clone()) {
            errs.push(format!("providers.name: Duplicate value: {name:?}"));
        }
        if p.api_version.is_empty() {
            errs.push("providers.apiVersion: Required value".to_string());
        } else if !PLUGIN_API_VERSIONS.contains(&p.api_version.as_str()) {
            let valid: Vec<String> = PLUGIN_API_VERSIONS.iter().map(|v| format!("{v:?}")).collect();
            errs.push(format!(
                "providers.apiVersion: Unsupported value: {:?}: supported values: {}",
                p.api_version,
                valid.join(", ")
            ));
        }
        if p.match_images.is_empty() {
            errs.push("providers.matchImages: Required value: at least 1 item in matchImages is required".to_string());
        }
        for image in &p.match_images {
            if let Some(e) = schemeless_url_error(image) {
                errs.push(format!("providers.matchImages: Invalid value: {image:?}: match image is invalid: {e}"));
            }
        }
        match (&p.default_cache_duration, &p.bad_cache_duration) {
            (_, Some(text)) => errs.push(format!(
                "providers.defaultCacheDuration: Invalid value: {text:?}: must be greater than or equal to 0"
            )),
            (None, None) => errs.push("providers.defaultCacheDuration: Required value".to_string()),
            (Some(_), None) => {}
        }
        if p.token_attributes {
            errs.push(
                "providers.tokenAttributes: Forbidden: service account token mode is not supported by kruise daemon, which pulls for no pod"
                    .to_string(),
            );
        }
    }
    errs
}

impl Provider {
    /// kubelet `isImageAllowed`: whether one of `matchImages` matches `image`.
    pub fn matches(&self, image: &str) -> bool {
        self.match_images.iter().any(|glob| urls_match(glob, image))
    }
}

/// The request the plugin reads on stdin (the kubelet's encoding: kind, apiVersion, image).
pub fn request(api_version: &str, image: &str) -> Vec<u8> {
    let quote = |s: &str| serde_json::to_string(s).unwrap_or_default();
    format!(
        "{{\"kind\":\"CredentialProviderRequest\",\"apiVersion\":{},\"image\":{}}}\n",
        quote(api_version),
        quote(image)
    )
    .into_bytes()
}

/// Where a response is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheKeyType {
    Image,
    Registry,
    Global,
}

/// A plugin's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    pub cache_key_type: CacheKeyType,
    /// `None`: the provider's default.
    pub cache_duration: Option<Duration>,
    /// Match key (as a docker config's) -> credential.
    pub auth: BTreeMap<String, Credential>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResponseFile {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    cache_key_type: String,
    #[serde(default)]
    cache_duration: Option<String>,
    #[serde(default)]
    auth: BTreeMap<String, AuthFile>,
}

#[derive(Deserialize)]
struct AuthFile {
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
}

/// kubelet `ExecPlugin`'s checks of stdout and `provide`'s of `cacheKeyType`. A body that does
/// not decode is reported without its text (it may hold credentials).
pub fn parse_response(stdout: &[u8], api_version: &str) -> Result<Response, String> {
    let value: Value = serde_json::from_slice(stdout).map_err(|e| format!("error reading GVK from response: {e}"))?;
    let actual = value.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if actual != api_version {
        return Err(format!(
            "apiVersion from credential plugin response did not match expected apiVersion:{api_version}, actual apiVersion:{actual}"
        ));
    }
    let file: ResponseFile = serde_json::from_value(value)
        .map_err(|_| "error decoding credential provider plugin response from stdout".to_string())?;
    debug_assert_eq!(file.api_version, api_version);
    if file.kind != "CredentialProviderResponse" {
        return Err(format!("failed to decode CredentialProviderResponse, unexpected Kind: {:?}", file.kind));
    }
    let cache_key_type = match file.cache_key_type.as_str() {
        "Image" => CacheKeyType::Image,
        "Registry" => CacheKeyType::Registry,
        "Global" => CacheKeyType::Global,
        other => return Err(format!("credential provider plugin did not return a valid cacheKeyType: {other}")),
    };
    let cache_duration = match file.cache_duration.as_deref() {
        None => None,
        Some(text) => Some(go_duration(text).map_err(|e| format!("invalid cacheDuration {text:?}: {e}"))?),
    };
    let auth =
        file.auth.into_iter().map(|(k, a)| (k, Credential { username: a.username, password: a.password })).collect();
    Ok(Response { cache_key_type, cache_duration, auth })
}

/// kubelet `parseRegistry`: the image up to its first `/`.
fn registry(image: &str) -> &str {
    image.split('/').next().unwrap_or(image)
}

/// The credentials of a response's `auth` for `image` (the kubelet adds the provider's docker
/// config to a keyring and looks the image up in it).
pub fn credentials(auth: &BTreeMap<String, Credential>, image: &str) -> Vec<Credential> {
    let mut keyring = Keyring::default();
    for (key, c) in auth {
        keyring.add(key, c.clone());
    }
    keyring.lookup(image)
}

/// One provider's kept responses (kubelet's expiration store).
#[derive(Debug, Default)]
pub struct Cache {
    entries: HashMap<String, (BTreeMap<String, Credential>, Instant)>,
}

impl Cache {
    /// The kept `auth` for `image` at `now`: its own entry, its registry's, then the global one.
    pub fn get(&mut self, image: &str, now: Instant) -> Option<BTreeMap<String, Credential>> {
        self.entries.retain(|_, (_, expires)| now <= *expires);
        [image, registry(image), GLOBAL_CACHE_KEY].into_iter().find_map(|k| self.entries.get(k).map(|(a, _)| a.clone()))
    }

    /// Keeps `response` for `image` as it says (a zero duration, or none with a zero default:
    /// not kept).
    pub fn put(&mut self, image: &str, response: &Response, default: Duration, now: Instant) {
        let ttl = response.cache_duration.unwrap_or(default);
        if ttl.is_zero() {
            return;
        }
        let key = match response.cache_key_type {
            CacheKeyType::Image => image,
            CacheKeyType::Registry => registry(image),
            CacheKeyType::Global => GLOBAL_CACHE_KEY,
        };
        self.entries.insert(key.to_string(), (response.auth.clone(), now + ttl));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1: &str = "credentialprovider.kubelet.k8s.io/v1";

    fn provider(name: &str, images: &[&str]) -> Provider {
        Provider {
            name: name.into(),
            match_images: images.iter().map(|s| s.to_string()).collect(),
            default_cache_duration: Some(Duration::from_secs(60)),
            api_version: V1.into(),
            ..Provider::default()
        }
    }

    #[test]
    fn parses_the_kubelet_config_and_kruise_test_fixture() {
        // kruise's pkg/daemon/criruntime/imageruntime/fake_plugin/plugin-config.yaml shape.
        let yaml = br#"
apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: fake-plugin
    matchImages:
      - "registry.plugin.com"
      - "registry.private.com"
    defaultCacheDuration: "12h"
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    args: ["--v=2"]
    env:
      - name: AWS_PROFILE
        value: temp
"#;
        let got = parse_config(yaml).unwrap();
        assert_eq!(
            got,
            [Provider {
                name: "fake-plugin".into(),
                match_images: vec!["registry.plugin.com".into(), "registry.private.com".into()],
                default_cache_duration: Some(Duration::from_secs(12 * 3600)),
                bad_cache_duration: None,
                api_version: V1.into(),
                args: vec!["--v=2".into()],
                env: vec![("AWS_PROFILE".into(), "temp".into())],
                token_attributes: false,
            }]
        );
        assert!(validate(&got).is_empty());
        // JSON is YAML too; v1alpha1 and v1beta1 configs are read as well.
        let json =
            br#"{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"CredentialProviderConfig","providers":[]}"#;
        assert_eq!(parse_config(json).unwrap(), []);
    }

    #[test]
    fn refuses_other_kinds_groups_and_versions() {
        let rows: [(&[u8], &str); 6] = [
            (b"apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n- name: a\n  unknownField: x\n", "unknown field `unknownField`"),
            (b"apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n- name: a\n  defaultCacheDuration: soon\n", "time: invalid duration \"soon\""),
            (b"apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\n", "failed to decode \"KubeletConfiguration\" (wrong Kind)"),
            (b"apiVersion: other.io/v1\nkind: CredentialProviderConfig\n", "failed to decode CredentialProviderConfig, unexpected Group: other.io"),
            (b"apiVersion: kubelet.config.k8s.io/v9\nkind: CredentialProviderConfig\n", "no kind \"CredentialProviderConfig\" is registered for version \"kubelet.config.k8s.io/v9\""),
            (b"providers: [", "did not find expected node content"),
        ];
        for (data, want) in rows {
            let e = parse_config(data).unwrap_err();
            assert!(e.contains(want), "{e}");
        }
    }

    /// kubelet `Test_validateCredentialProviderConfig` (config_test.go), the rows without
    /// service account tokens, one invalid field each.
    #[test]
    fn kubelet_validation_rows() {
        let ok = || provider("foobar", &["foobar.registry.io"]);
        let with = |f: &dyn Fn(&mut Provider)| {
            let mut p = ok();
            f(&mut p);
            vec![p]
        };
        let rows: Vec<(&str, Vec<Provider>, Vec<&str>)> = vec![
            (
                "no providers provided",
                vec![],
                vec!["providers: Required value: at least 1 item in plugins is required"],
            ),
            (
                "no matchImages provided",
                with(&|p| p.match_images.clear()),
                vec!["providers.matchImages: Required value: at least 1 item in matchImages is required"],
            ),
            (
                "no default cache duration provided",
                with(&|p| p.default_cache_duration = None),
                vec!["providers.defaultCacheDuration: Required value"],
            ),
            (
                "name contains '/'",
                with(&|p| p.name = "foo/../../../bar".into()),
                vec!["providers.name: Invalid value: \"foo/../../../bar\": provider name cannot contain '/'"],
            ),
            (
                "name is '.'",
                with(&|p| p.name = ".".into()),
                vec!["providers.name: Invalid value: \".\": provider name cannot be '.'"],
            ),
            (
                "name is '..'",
                with(&|p| p.name = "..".into()),
                vec!["providers.name: Invalid value: \"..\": provider name cannot be '..'"],
            ),
            (
                "name contains spaces",
                with(&|p| p.name = "foo bar".into()),
                vec!["providers.name: Invalid value: \"foo bar\": provider name cannot contain spaces"],
            ),
            ("no apiVersion", with(&|p| p.api_version.clear()), vec!["providers.apiVersion: Required value"]),
            (
                "invalid apiVersion",
                with(&|p| p.api_version = "credentialprovider.kubelet.k8s.io/v1alpha0".into()),
                vec![
                    "providers.apiVersion: Unsupported value: \"credentialprovider.kubelet.k8s.io/v1alpha0\": supported values: \"credentialprovider.kubelet.k8s.io/v1\", \"credentialprovider.kubelet.k8s.io/v1alpha1\", \"credentialprovider.kubelet.k8s.io/v1beta1\"",
                ],
            ),
            (
                "negative default cache duration",
                with(&|p| {
                    p.default_cache_duration = None;
                    p.bad_cache_duration = Some("-1m".into());
                }),
                vec!["providers.defaultCacheDuration: Invalid value: \"-1m\": must be greater than or equal to 0"],
            ),
            (
                "invalid match image",
                with(&|p| p.match_images = vec!["%invalid%".into()]),
                vec![
                    "providers.matchImages: Invalid value: \"%invalid%\": match image is invalid: parse \"https://%invalid%\": invalid URL escape \"%in\"",
                ],
            ),
            (
                "token attributes",
                with(&|p| p.token_attributes = true),
                vec![
                    "providers.tokenAttributes: Forbidden: service account token mode is not supported by kruise daemon, which pulls for no pod",
                ],
            ),
            ("duplicate names", vec![ok(), ok()], vec!["providers.name: Duplicate value: \"foobar\""]),
            ("valid config", vec![provider("foobar", &["foobar.registry.io", "*.registry.io:8080"])], vec![]),
        ];
        for (name, providers, want) in rows {
            assert_eq!(validate(&providers), want, "{name}");
        }
    }

    /// kubelet `Test_isImageAllowed` rows (plugin_test.go) and kruise's fixture registries.
    #[test]
    fn match_images() {
        let p = provider("p", &["*.registry.io", "registry.plugin.com", "gcr.io:8080/team"]);
        for (image, want) in [
            ("foo.registry.io/foo/bar", true),
            ("foo.bar.registry.io/foo", false),
            ("registry.io/foo", false),
            ("registry.plugin.com/test/echoserver", true),
            ("registry.private.com/test/echoserver", false),
            ("gcr.io:8080/team/app", true),
            ("gcr.io/team/app", false),
            ("gcr.io:8080/other/app", false),
        ] {
            assert_eq!(p.matches(image), want, "{image}");
        }
    }

    #[test]
    fn request_is_the_kubelets() {
        assert_eq!(
            String::from_utf8(request(V1, "registry.plugin.com/test/echoserver")).unwrap(),
            "{\"kind\":\"CredentialProviderRequest\",\"apiVersion\":\"credentialprovider.kubelet.k8s.io/v1\",\"image\":\"registry.plugin.com/test/echoserver\"}\n"
        );
    }

    #[test]
    fn responses() {
        let ok = br#"{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1","cacheKeyType":"Registry","cacheDuration":"5m","auth":{"registry.plugin.com":{"username":"u","password":"p"}}}"#;
        let r = parse_response(ok, V1).unwrap();
        assert_eq!(r.cache_key_type, CacheKeyType::Registry);
        assert_eq!(r.cache_duration, Some(Duration::from_secs(300)));
        assert_eq!(
            credentials(&r.auth, "registry.plugin.com/test/echoserver"),
            [Credential { username: "u".into(), password: "p".into() }]
        );
        assert!(credentials(&r.auth, "registry.other.com/test/echoserver").is_empty());
        let rows: [(&[u8], &str); 4] = [
            (
                br#"{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1beta1","cacheKeyType":"Image"}"#,
                "apiVersion from credential plugin response did not match expected apiVersion:credentialprovider.kubelet.k8s.io/v1, actual apiVersion:credentialprovider.kubelet.k8s.io/v1beta1",
            ),
            (
                br#"{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1","cacheKeyType":"Pod"}"#,
                "credential provider plugin did not return a valid cacheKeyType: Pod",
            ),
            (
                br#"{"kind":"Other","apiVersion":"credentialprovider.kubelet.k8s.io/v1","cacheKeyType":"Image"}"#,
                "failed to decode CredentialProviderResponse, unexpected Kind: \"Other\"",
            ),
            (
                br#"{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1","auth":{"r":{"username":"secret","password":7}}}"#,
                "error decoding credential provider plugin response from stdout",
            ),
        ];
        for (data, want) in rows {
            assert_eq!(parse_response(data, V1).unwrap_err(), want);
        }
        // The credentials of an undecodable body are not repeated in the error.
        assert!(!parse_response(rows[3].0, V1).unwrap_err().contains("secret"));
    }

    /// kubelet `Test_ProvideParallel`/`Test_ProvideCache` behaviour: image, registry and global
    /// keys, expiry, a zero duration kept nowhere.
    #[test]
    fn cache_keys_and_expiry() {
        let t0 = Instant::now();
        let auth: BTreeMap<String, Credential> =
            [("*.registry.io".to_string(), Credential { username: "u".into(), password: "p".into() })].into();
        let response = |t, d: Option<u64>| Response {
            cache_key_type: t,
            cache_duration: d.map(Duration::from_secs),
            auth: auth.clone(),
        };
        let mut c = Cache::default();
        c.put("a.registry.io/app", &response(CacheKeyType::Image, Some(10)), Duration::ZERO, t0);
        assert!(c.get("a.registry.io/app", t0).is_some());
        assert!(c.get("a.registry.io/other", t0).is_none());
        assert!(c.get("a.registry.io/app", t0 + Duration::from_secs(11)).is_none());

        let mut c = Cache::default();
        c.put("a.registry.io/app", &response(CacheKeyType::Registry, None), Duration::from_secs(10), t0);
        assert!(c.get("a.registry.io/other", t0 + Duration::from_secs(5)).is_some());
        assert!(c.get("b.registry.io/app", t0).is_none());

        let mut c = Cache::default();
        c.put("a.registry.io/app", &response(CacheKeyType::Global, Some(10)), Duration::ZERO, t0);
        assert!(c.get("b.registry.io/app", t0).is_some());

        let mut c = Cache::default();
        c.put("a.registry.io/app", &response(CacheKeyType::Image, Some(0)), Duration::from_secs(10), t0);
        c.put("b.registry.io/app", &response(CacheKeyType::Image, None), Duration::ZERO, t0);
        assert!(c.get("a.registry.io/app", t0).is_none() && c.get("b.registry.io/app", t0).is_none());
    }

    #[test]
    fn merged_files_refuse_a_name_twice() {
        let e = merge(vec![vec![provider("a", &["x.io"])], vec![provider("a", &["y.io"])]]).unwrap_err();
        assert_eq!(e, "duplicate provider name \"a\" found in configuration file(s)");
        assert_eq!(merge(vec![vec![provider("a", &["x.io"])], vec![provider("b", &["y.io"])]]).unwrap().len(), 2);
    }
}
