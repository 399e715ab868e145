//! The Advanced DaemonSet's revision hash: kruise's `snapshot` names a revision
//! `<ds>-<kubecontroller.ComputeHash(&ds.Spec.Template, collisionCount)>` and labels its pods
//! `controller-revision-hash: <hash>`. This is the ONE place the hash is computed, so that the
//! byte-exact port can replace it alone.

use crate::core::history::{fnv1a_32, safe_encode};

/// The hash of a pod template (and the collision count), as the revision name suffix and the
/// pods' `controller-revision-hash` label.
// not kruise's: spew. kruise hashes Go's `spew` print of the typed `PodTemplateSpec` with FNV-32a
// (`hashutil.DeepHashObject`), then adds the collision count and `rand.SafeEncodeString`s the
// decimal; here FNV-32a runs over the template's JSON instead until spew is reproduced.
pub fn template_hash(template: &serde_json::Value, collision_count: Option<i32>) -> String {
    let mut bytes = serde_json::to_vec(template).unwrap_or_default();
    if let Some(c) = collision_count {
        // ComputeHash writes the count's little-endian uint32 bytes into the hasher.
        bytes.extend_from_slice(&(c as u32).to_le_bytes());
    }
    safe_encode(&fnv1a_32(&bytes).to_string())
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
}
