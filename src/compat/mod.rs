//! Go and apimachinery behaviour reproduced exactly, kept apart from the decisions of `core`:
//! - [`yaml`]: manifest text as kubectl reads it (`sigs.k8s.io/yaml` over go-yaml v2, YAML 1.1).

pub mod yaml;
