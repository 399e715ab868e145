//! Which credentials a pull of an image tries, from the image's pull secrets: the kubelet's
//! docker keyring (`k8s.io/kubernetes/pkg/credentialprovider`: `BasicDockerKeyring.Add/Lookup`,
//! `URLsMatch`, `isDefaultRegistryMatch`; `credentialprovider/secrets.MakeDockerKeyring`), which
//! kruise's `secret.ConvertToRegistryAuths` runs over the secrets kruise synced into
//! `kruise-daemon-config`.
//!
//! - A secret counts when its type and key agree: `kubernetes.io/dockerconfigjson` with
//!   `.dockerconfigjson` (`{"auths": {...}}`), or `kubernetes.io/dockercfg` with `.dockercfg`;
//!   an entry's `auth` (base64 `user:password`) wins over `username`/`password`.
//! - A key is normalised as the kubelet does (scheme dropped, `/v1/` and `/v2/` paths are the
//!   bare host), and matches an image when the ports agree, the host has as many dot-separated
//!   parts, each part matches as a glob (`*.example.com`), and the key's path is a prefix of the
//!   image's path. Keys are tried most specific first (reverse-sorted).
//! - Nothing matched, and the image is on Docker Hub: the `index.docker.io` entry, if any.
//!
//! The caller tries each credential in order and pulls anonymously only when none matched (kruise
//! `pullImageV1`). The kubelet's credential-provider plugins (the "default keyring") add theirs
//! after these ([`super::credential_provider`]).

use std::collections::BTreeMap;

use base64::Engine as _;
use k8s_openapi::api::core::v1::Secret;
use serde::Deserialize;

/// A credential for one registry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credential {
    /// User name.
    pub username: String,
    /// Password or token.
    pub password: String,
}

/// The kubelet's `BasicDockerKeyring`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Keyring {
    /// Normalised key -> credentials (in the order they were added).
    creds: BTreeMap<String, Vec<Credential>>,
}

#[derive(Deserialize)]
struct ConfigJson {
    #[serde(default)]
    auths: BTreeMap<String, Entry>,
}

#[derive(Deserialize)]
struct Entry {
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    auth: String,
}

const DOCKER_CONFIG_JSON: (&str, &str) = ("kubernetes.io/dockerconfigjson", ".dockerconfigjson");
const DOCKER_CFG: (&str, &str) = ("kubernetes.io/dockercfg", ".dockercfg");
const DEFAULT_REGISTRY_HOST: &str = "index.docker.io";

impl Keyring {
    /// The keyring of `secrets` (kubelet `MakeDockerKeyring`): an unparsable docker config fails
    /// the whole keyring, as there (the error names the secret).
    pub fn from_secrets(secrets: &[Secret]) -> Result<Keyring, String> {
        let mut keyring = Keyring::default();
        for secret in secrets {
            let name = format!(
                "{}/{}",
                secret.metadata.namespace.as_deref().unwrap_or(""),
                secret.metadata.name.as_deref().unwrap_or("")
            );
            let type_ = secret.type_.as_deref().unwrap_or("");
            let data = |key: &str| secret.data.as_ref().and_then(|d| d.get(key)).map(|b| b.0.as_slice());
            let entries = match (data(DOCKER_CONFIG_JSON.1), data(DOCKER_CFG.1)) {
                (Some(bytes), _) if type_ == DOCKER_CONFIG_JSON.0 && !bytes.is_empty() => {
                    serde_json::from_slice::<ConfigJson>(bytes).map(|c| c.auths)
                }
                (_, Some(bytes)) if type_ == DOCKER_CFG.0 && !bytes.is_empty() => serde_json::from_slice(bytes),
                _ => continue,
            }
            .map_err(|e| format!("pull secret {name}: {e}"))?;
            for (location, entry) in entries {
                let credential = entry.credential().map_err(|e| format!("pull secret {name}: {e}"))?;
                keyring.add(&location, credential);
            }
        }
        Ok(keyring)
    }

    /// Adds a credential for `location` (a registry host, optionally with a path and a scheme).
    pub fn add(&mut self, location: &str, credential: Credential) {
        let rest = location.strip_prefix("https://").or_else(|| location.strip_prefix("http://")).unwrap_or(location);
        let (host, path) = split_host_path(rest);
        let effective = match path {
            p if p.starts_with("/v2/") || p.starts_with("/v1/") => &p[3..],
            p => p,
        };
        let key =
            if effective.is_empty() || effective == "/" { host.to_string() } else { format!("{host}{effective}") };
        self.creds.entry(key).or_default().push(credential);
    }

    /// The credentials for `image`, a repository without tag or digest as the kubelet passes it
    /// (`registry.example.com/app/web`, `docker.io/library/nginx`).
    pub fn lookup(&self, image: &str) -> Vec<Credential> {
        // Reverse-sorted keys: the more specific path first.
        let found: Vec<Credential> =
            self.creds.iter().rev().filter(|(k, _)| urls_match(k, image)).flat_map(|(_, c)| c.clone()).collect();
        if !found.is_empty() {
            return found;
        }
        if is_default_registry_match(image)
            && let Some(c) = self.creds.get(DEFAULT_REGISTRY_HOST)
        {
            return c.clone();
        }
        Vec::new()
    }
}

impl Entry {
    /// kubelet `DockerConfigEntry.UnmarshalJSON`: `auth` decodes to `user:password` and wins.
    fn credential(self) -> Result<Credential, String> {
        if self.auth.is_empty() {
            return Ok(Credential { username: self.username, password: self.password });
        }
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(self.auth.as_bytes())
            .map_err(|e| format!("illegal base64 data in auth: {e}"))?;
        let text = String::from_utf8_lossy(&decoded);
        match text.split_once(':') {
            Some((user, password)) => {
                Ok(Credential { username: user.into(), password: password.trim_matches('\0').into() })
            }
            None => Err("unable to parse auth field, must be formatted as base64(username:password)".into()),
        }
    }
}

/// `url.Parse("https://" + s)`'s host and path (the host ends at the first `/`).
fn split_host_path(s: &str) -> (&str, &str) {
    match s.find('/') {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    }
}

/// kubelet `URLsMatchStr(glob, target)`.
pub fn urls_match(glob: &str, target: &str) -> bool {
    let (glob_host, glob_path) = split_host_path(glob);
    let (target_host, target_path) = split_host_path(target);
    let split = |host: &str| -> (Vec<String>, String) {
        // net.SplitHostPort: a port only after the last ':' (no brackets handled here).
        match host.rsplit_once(':') {
            Some((h, port)) if !h.contains(':') => (h.split('.').map(str::to_string).collect(), port.to_string()),
            _ => (host.split('.').map(str::to_string).collect(), String::new()),
        }
    };
    let (glob_parts, glob_port) = split(glob_host);
    let (target_parts, target_port) = split(target_host);
    glob_port == target_port
        && glob_parts.len() == target_parts.len()
        && target_path.starts_with(glob_path)
        && glob_parts.iter().zip(&target_parts).all(|(g, t)| glob_match(g.as_bytes(), t.as_bytes()))
}

/// `filepath.Match` for `*` and `?` within one host label (character classes are not supported).
fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    match (pattern.first(), text.first()) {
        (None, None) => true,
        (Some(b'*'), _) => glob_match(&pattern[1..], text) || (!text.is_empty() && glob_match(pattern, &text[1..])),
        (Some(b'?'), Some(_)) => glob_match(&pattern[1..], &text[1..]),
        (Some(p), Some(t)) if p == t => glob_match(&pattern[1..], &text[1..]),
        _ => false,
    }
}

/// kubelet `isDefaultRegistryMatch`: whether `image` is pulled from Docker Hub.
pub fn is_default_registry_match(image: &str) -> bool {
    let mut parts = image.splitn(2, '/');
    let first = parts.next().unwrap_or("");
    if first.is_empty() {
        return false;
    }
    match parts.next() {
        None => true,
        Some(_) if first == "docker.io" || first == "index.docker.io" => true,
        Some(_) => !first.contains(['.', ':']),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;

    fn secret(type_: &str, key: &str, data: &str) -> Secret {
        Secret {
            type_: Some(type_.into()),
            data: Some([(key.to_string(), ByteString(data.as_bytes().to_vec()))].into()),
            ..Default::default()
        }
    }

    fn config_json(data: &str) -> Secret {
        secret("kubernetes.io/dockerconfigjson", ".dockerconfigjson", data)
    }

    /// kruise `TestMatchRegistryAuths` (pkg/daemon/criruntime/imageruntime/helpers_test.go), the
    /// rows with secrets; the image as `parsers.ParseImageName` passes it (normalised repository).
    #[test]
    fn kruise_match_registry_auths() {
        let entry = r#"{"username":"echoserver","password":"test","auth":"ZWNob3NlcnZlcjp0ZXN0"}"#;
        let rows = [
            ("test1", "registry.private.com/app/echoserver", "registry.private.com", 1),
            ("test2", "registry.private.com/app/echoserver", "registry.private.com/app", 1),
            ("test3 (digest)", "registry.private.com/app/echoserver", "registry.private.com", 1),
            ("test4", "docker.io/library/nginx", "docker.io/library/nginx", 1),
            ("test5", "registry.private.com/app/echoserver", "registry.private.com/nginx", 0),
        ];
        for (name, image, key, want) in rows {
            let s = config_json(&format!(r#"{{"auths":{{"{key}":{entry}}}}}"#));
            let creds = Keyring::from_secrets(&[s]).unwrap().lookup(image);
            assert_eq!(creds.len(), want, "{name}");
            if want == 1 {
                assert_eq!(creds[0], Credential { username: "echoserver".into(), password: "test".into() }, "{name}");
            }
        }
    }

    /// kruise `TestConvertToRegistryAuths` (pkg/util/secret/parse_test.go): a docker.io entry is
    /// found for the repository `docker.io`; no secrets, no credentials.
    #[test]
    fn kruise_convert_to_registry_auths() {
        let s = config_json(r#"{"auths":{"docker.io":{"username":"testuser","password":"testpass"}}}"#);
        let creds = Keyring::from_secrets(&[s]).unwrap().lookup("docker.io");
        assert_eq!(creds, [Credential { username: "testuser".into(), password: "testpass".into() }]);
        assert!(Keyring::from_secrets(&[]).unwrap().lookup("docker.io").is_empty());
    }

    /// The kubelet keyring's matching rules (credentialprovider `URLsMatch`,
    /// `isDefaultRegistryMatch`, the `/v1/` key of Docker Hub).
    #[test]
    fn keyring_matching() {
        let rows = [
            // (key in the secret, image repository, matches)
            ("*.docker.io", "blah.docker.io/app", true),
            ("*.docker.io", "not.right.io/app", false),
            ("*.example.com", "example.com/app", false),
            ("registry.example.com:5000", "registry.example.com:5000/app", true),
            ("registry.example.com:5000", "registry.example.com/app", false),
            ("registry.example.com", "registry.example.com:5000/app", false),
            ("https://registry.example.com/v2/", "registry.example.com/app", true),
            ("http://registry.example.com", "registry.example.com/team/app", true),
            ("registry.example.com/team", "registry.example.com/team/app", true),
            ("registry.example.com/team", "registry.example.com/other/app", false),
            ("reg?stry.example.com", "registry.example.com/app", true),
            // Docker Hub's classic key serves every Hub image.
            ("https://index.docker.io/v1/", "docker.io/library/nginx", true),
            ("https://index.docker.io/v1/", "nginx", true),
            ("https://index.docker.io/v1/", "registry.example.com/app", false),
        ];
        for (key, image, want) in rows {
            let mut k = Keyring::default();
            k.add(key, Credential { username: "u".into(), password: "p".into() });
            assert_eq!(!k.lookup(image).is_empty(), want, "{key} for {image}");
        }
        for (image, hub) in [
            ("library/ubuntu", true),
            ("ubuntu", true),
            ("docker.io/x/y", true),
            ("localhost:5000/x", false),
            ("a.b/x", false),
            ("", false),
        ] {
            assert_eq!(is_default_registry_match(image), hub, "{image}");
        }
    }

    #[test]
    fn more_specific_keys_first_and_secret_types_checked() {
        let s = config_json(
            r#"{"auths":{"registry.example.com":{"username":"host","password":"1"},
                "registry.example.com/team":{"username":"team","password":"2"}}}"#,
        );
        let users: Vec<String> = Keyring::from_secrets(&[s])
            .unwrap()
            .lookup("registry.example.com/team/app")
            .into_iter()
            .map(|c| c.username)
            .collect();
        assert_eq!(users, ["team", "host"]);
        // The legacy .dockercfg format (no "auths" wrapper).
        let cfg = secret("kubernetes.io/dockercfg", ".dockercfg", r#"{"registry.example.com":{"auth":"dTpw"}}"#);
        assert_eq!(
            Keyring::from_secrets(&[cfg]).unwrap().lookup("registry.example.com/app"),
            [Credential { username: "u".into(), password: "p".into() }]
        );
        // Type and key must agree: an Opaque secret with the key is ignored.
        let opaque = secret("Opaque", ".dockerconfigjson", r#"{"auths":{"registry.example.com":{"username":"x"}}}"#);
        assert!(Keyring::from_secrets(&[opaque]).unwrap().lookup("registry.example.com/app").is_empty());
        // Broken JSON or auth fails, naming the secret.
        let mut broken = config_json("{not json");
        broken.metadata.namespace = Some("kruise-daemon-config".into());
        broken.metadata.name = Some("creds".into());
        assert!(Keyring::from_secrets(&[broken]).unwrap_err().contains("kruise-daemon-config/creds"));
        let bad_auth = config_json(r#"{"auths":{"r.io":{"auth":"bm9jb2xvbg=="}}}"#);
        assert!(Keyring::from_secrets(&[bad_auth]).unwrap_err().contains("base64(username:password)"));
    }
}
