//! Go and apimachinery behaviour reproduced exactly, kept apart from the decisions of `core`:
//! - [`yaml`]: manifest text as kubectl reads it (`sigs.k8s.io/yaml` over go-yaml v2, YAML 1.1);
//! - [`decode`]: JSON objects into our types as `encoding/json` decodes into Go structs (null is
//!   the zero value), decode errors as `field.Error`s.

pub mod decode;
pub mod yaml;
