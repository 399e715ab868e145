//! The operations of a JSON patch being written: paths kept as one `String` that grows and
//! shrinks as a walk descends (RFC 6901 escaping on the way in), turned into `json_patch`
//! pointers only when an operation is recorded. Shared by the one-pass diffs of
//! [`super`] and of the pod patch (`core::sidecar::podpatch`).

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, Patch, PatchOperation, RemoveOperation, ReplaceOperation};
use serde_json::Value;

/// The operations of a patch being written.
#[derive(Default)]
pub(crate) struct Ops {
    pub(crate) ops: Vec<PatchOperation>,
    /// A path that is not a JSON pointer (cannot happen: every token is escaped).
    pub(crate) invalid: bool,
    /// A typed value a walk could not take: its caller builds the value instead.
    pub(crate) failed: bool,
}

impl Ops {
    fn pointer(&mut self, path: &str) -> PointerBuf {
        PointerBuf::parse(path.to_string()).unwrap_or_else(|_| {
            self.invalid = true;
            PointerBuf::new()
        })
    }

    pub(crate) fn add(&mut self, path: &str, value: Value) {
        let path = self.pointer(path);
        self.ops.push(PatchOperation::Add(AddOperation { path, value }));
    }

    pub(crate) fn replace(&mut self, path: &str, value: Value) {
        let path = self.pointer(path);
        self.ops.push(PatchOperation::Replace(ReplaceOperation { path, value }));
    }

    pub(crate) fn remove(&mut self, path: &str) {
        let path = self.pointer(path);
        self.ops.push(PatchOperation::Remove(RemoveOperation { path }));
    }

    /// The patch; `None` when there is no operation.
    pub(crate) fn finish(self) -> Option<Patch> {
        (!self.ops.is_empty() && !self.invalid).then_some(Patch(self.ops))
    }
}

/// Appends `/token` with RFC 6901 escaping (`~` → `~0`, `/` → `~1`).
pub(crate) fn push_token(path: &mut String, token: &str) {
    path.push('/');
    if !token.bytes().any(|b| b == b'~' || b == b'/') {
        return path.push_str(token);
    }
    for c in token.chars() {
        match c {
            '~' => path.push_str("~0"),
            '/' => path.push_str("~1"),
            c => path.push(c),
        }
    }
}

/// Appends `/i`.
pub(crate) fn push_index(path: &mut String, i: usize) {
    use std::fmt::Write as _;
    let _ = write!(path, "/{i}");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Paths written token by token are the pointers `jsonptr` builds from the same tokens.
    #[test]
    fn paths_are_jsonptr_pointers() {
        let tokens = ["metadata", "a/b~c", "~", "/", "", "0", "ü/~1"];
        let mut path = String::new();
        let mut pointer = PointerBuf::new();
        for t in tokens {
            push_token(&mut path, t);
            pointer.push_back(t);
            let mut ops = Ops::default();
            ops.remove(&path);
            let got = ops.finish().unwrap();
            assert_eq!(got.0[0], PatchOperation::Remove(RemoveOperation { path: pointer.clone() }), "{path}");
        }
        push_index(&mut path, 12);
        pointer.push_back(12usize);
        assert_eq!(PointerBuf::parse(path).unwrap(), pointer);
    }
}
