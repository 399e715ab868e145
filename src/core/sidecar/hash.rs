//! The SidecarSet hash annotations (spec §1.3.2, decision §11.5): `kruise.io/sidecarset-hash`
//! over the containers (and the init containers when one of them is a native sidecar), and
//! `kruise.io/sidecarset-hash-without-image` over the same with every image blanked. Pods
//! record these hashes; the controller compares them for equality, so they must be
//! byte-identical to kruise's for pods injected by a Go kruise to keep matching after a
//! migration.
//!
//! H(x) = SHA-256 of Go's `json.Marshal(map[string]interface{}{"containers": …})` (map keys
//! sorted, containers in Go field order — see [`crate::compat::gojson`]), as lowercase hex, each hex
//! character then mapped through Kubernetes' `rand.SafeEncodeString`.

use sha2::{Digest, Sha256};

use super::is_native_sidecar;
use crate::apis::sidecarset::{SidecarContainer, SidecarSetSpec};
use crate::compat::gojson;

/// `rand.SafeEncodeString`'s alphabet: no vowels, no look-alike characters.
const SAFE_ALPHABET: &[u8; 27] = b"bcdfghjklmnpqrstvwxz2456789";

/// Kubernetes' `rand.SafeEncodeString`: each byte mapped to `alphabet[byte % 27]`.
pub fn safe_encode(s: &str) -> String {
    s.bytes().map(|b| SAFE_ALPHABET[usize::from(b) % SAFE_ALPHABET.len()] as char).collect()
}

/// The hashed text: `{"containers":[…]}`, plus `"initContainers":[…]` (all of them) when any
/// init container is a native sidecar.
pub fn encode(spec: &SidecarSetSpec, blank_images: bool) -> String {
    let blank = |list: &[SidecarContainer]| -> Vec<SidecarContainer> {
        list.iter()
            .cloned()
            .map(|mut c| {
                if blank_images {
                    c.container.image = None;
                }
                c
            })
            .collect()
    };
    let mut out = String::from("{\"containers\":");
    gojson::sidecar_containers(&blank(&spec.containers), &mut out);
    if spec.init_containers.iter().any(|c| is_native_sidecar(&c.container)) {
        out.push_str(",\"initContainers\":");
        gojson::sidecar_containers(&blank(&spec.init_containers), &mut out);
    }
    out.push('}');
    out
}

/// `SafeEncodeString(hex(sha256(text)))`.
pub fn hash_text(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let mut hex = String::with_capacity(64);
    for b in digest.iter() {
        hex.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        hex.push(char::from(b"0123456789abcdef"[usize::from(b & 0xf)]));
    }
    safe_encode(&hex)
}

/// `(kruise.io/sidecarset-hash, kruise.io/sidecarset-hash-without-image)` of a defaulted spec.
pub fn hashes(spec: &SidecarSetSpec) -> (String, String) {
    (hash_text(&encode(spec, false)), hash_text(&encode(spec, true)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::SidecarSet;
    use crate::core::sidecar::defaults::default_sidecarset;
    use serde_json::json;

    /// kruise `pkg/webhook/sidecarset/mutating/sidecarset_mutating_test.go` (spec §1.3.2).
    #[test]
    fn kruise_fixture() {
        let mut set: SidecarSet = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet",
            "metadata": {"name": "sidecarset-test", "resourceVersion": "123"},
            "spec": {
                "containers": [{"name": "dns-f", "image": "dns:1.0"}],
                "patchPodMetadata": [{"annotations": {"key1": "value1"}}],
                "injectionStrategy": {"revision": {"customVersion": "1"}}
            }
        }))
        .unwrap();
        default_sidecarset(&mut set).unwrap();
        assert_eq!(
            encode(&set.spec, false),
            r#"{"containers":[{"name":"dns-f","image":"dns:1.0","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent","podInjectPolicy":"BeforeAppContainer","upgradeStrategy":{"upgradeType":"ColdUpgrade"},"shareVolumePolicy":{"type":"disabled"}}]}"#
        );
        let (with, without) = hashes(&set.spec);
        assert_eq!(with, "6wbd76bd7984x24fb4f44fv9222cw9v9bcf85x766744wddd4zwx927zzz2zb684");
        assert_eq!(without, "82684vwf9d4cb4wz4vffx4ddfbb47ww4z4wwxdbwb8w2zbb7zvf4524cdd49bv94");
        let annotations = set.metadata.annotations.unwrap();
        assert_eq!(annotations[crate::apis::keys::SIDECARSET_HASH], with);
        assert_eq!(annotations[crate::apis::keys::SIDECARSET_HASH_WITHOUT_IMAGE], without);
    }

    /// kruise `pkg/control/sidecarcontrol/hash_test.go`: undefaulted sets, with and without a
    /// native-sidecar init container.
    #[test]
    fn kruise_hash_test_fixtures() {
        let c = json!([{"name": "container1", "image": "test-image"}]);
        let native = json!([{"name": "container1", "image": "test-image", "restartPolicy": "Always"}]);
        let cases = [
            (json!({"containers": c}), "w26c4x8fz245642fdv499b464248f974xddx4x55z5dw55bc6x66464fxz77dc78", None),
            (
                json!({"containers": c, "initContainers": c}),
                "w26c4x8fz245642fdv499b464248f974xddx4x55z5dw55bc6x66464fxz77dc78",
                Some("8wzddb4dvv9c6x8zdc77z4z75987424f457dfv6724ddw6zbdx467wz5x24fc759"),
            ),
            (
                json!({"containers": c, "initContainers": native}),
                "4xwx4d4844vd4v9x79wb4xbxf4xb29475cc4446v8cz2c2f2f5c5bw448vd42z8w",
                Some("5725fw8bwbx249bw57v5892c847dzf48bww9zb7c86xb95264fdz26654847b2c8"),
            ),
        ];
        for (spec, with_image, without_image) in cases {
            let spec: SidecarSetSpec = serde_json::from_value(spec).unwrap();
            let (h, hw) = hashes(&spec);
            assert_eq!(h, with_image, "{}", encode(&spec, false));
            if let Some(w) = without_image {
                assert_eq!(hw, w, "{}", encode(&spec, true));
            }
        }
    }

    #[test]
    fn init_containers_count_only_with_a_native_sidecar() {
        let spec = |init: serde_json::Value| -> SidecarSetSpec {
            serde_json::from_value(json!({"containers": [{"name": "a", "image": "a"}], "initContainers": init}))
                .unwrap()
        };
        let plain = spec(json!([{"name": "i", "image": "i"}]));
        assert!(!encode(&plain, false).contains("initContainers"));
        let native = spec(json!([{"name": "i", "image": "i", "restartPolicy": "Always"}, {"name": "j"}]));
        let text = encode(&native, true);
        assert!(text.contains(r#""initContainers":[{"name":"i","resources":{},"restartPolicy":"Always""#), "{text}");
        assert!(text.contains(r#"{"name":"j","resources":{}"#), "{text}");
        assert_ne!(hashes(&plain).0, hashes(&native).0);
        assert_eq!(safe_encode("09af"), "4fv4");
    }
}
