//! The Advanced DaemonSet's revision hash: kruise's `snapshot` names a revision
//! `<ds>-<kubecontroller.ComputeHash(&ds.Spec.Template, collisionCount)>` and labels its pods
//! `controller-revision-hash: <hash>`. This is the one place the hash is computed.

use crate::core::history::{fnv1a_32, safe_encode};

/// The hash of a pod template (and the collision count), as the revision name suffix and the
/// pods' `controller-revision-hash` label: kruise's, byte for byte ([`crate::compat::spew`],
/// checked against Go). A template spew cannot reproduce (a quantity beyond int64 at nano scale,
/// a set `creationTimestamp`) falls back to FNV-32a over its JSON: a set taken over from Go
/// kruise with such a template rolls its pods once.
pub fn template_hash(template: &serde_json::Value, collision_count: Option<i32>) -> String {
    crate::compat::spew::compute_hash(template, collision_count).unwrap_or_else(|_| {
        let mut bytes = serde_json::to_vec(template).unwrap_or_default();
        if let Some(c) = collision_count {
            bytes.extend_from_slice(&(c as u32).to_le_bytes());
        }
        safe_encode(&fnv1a_32(&bytes).to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_hash_is_stable_and_changes_with_the_template_and_the_collision_count() {
        let t = json!({"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "m", "image": "x:1"}]}});
        let h = template_hash(&t, None);
        assert_eq!(h, template_hash(&t, None));
        assert!(!h.is_empty() && h.bytes().all(|b| crate::core::history::ALPHANUMS.contains(&b)), "{h}");
        assert_ne!(h, template_hash(&t, Some(1)));
        let mut t2 = t.clone();
        t2["spec"]["containers"][0]["image"] = json!("x:2");
        assert_ne!(h, template_hash(&t2, None));
    }

    /// kruise's hash, as Go computes it (the `minimal` fixture of `compat/spew_fixtures.json`).
    #[test]
    fn the_hash_is_kruises() {
        let t = json!({"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [{"name": "agent", "image": "nginx:1.25"}]}});
        assert_eq!(template_hash(&t, None), "5b4fd6568c");
        assert_eq!(template_hash(&t, Some(3)), "d7b664db4");
    }
}
