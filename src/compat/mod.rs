//! Go and apimachinery behaviour we must match byte for byte: the primitives the decisions of
//! [`crate::core`] are built from. Nothing here decides anything about kruise's workloads; each
//! file reproduces a Go package (or the part of one kruise observably depends on), quirks
//! included, and says which version it follows. Pure: no I/O, no kube client, no HTTP.
//!
//! | file | mirrors |
//! | --- | --- |
//! | [`quantity`] | `k8s.io/apimachinery/pkg/api/resource` (`Quantity`, `RoundUp`, `String()`) |
//! | [`field`] | `k8s.io/apimachinery/pkg/util/validation/field` and `pkg/util/errors.NewAggregate` |
//! | [`selector`] | `k8s.io/apimachinery/pkg/labels`, `pkg/apis/meta/v1` label-selector helpers and validation; kruise `pkg/util/selector.go` |
//! | [`names`] | `k8s.io/apimachinery/pkg/util/validation` (DNS-1123, qualified names, label values), `pkg/apis/meta/v1/validation`, `pkg/api/validation/objectmeta.go` |
//! | [`podspec`] | `k8s.io/kubernetes/pkg/apis/core/validation` v1.32 (`ValidatePodTemplateSpec`, `ValidatePodSpec`, `ValidatePodCreate`: the covered part) |
//! | [`image`] | `k8s.io/kubernetes/pkg/util/parsers` over `github.com/distribution/reference` (and the older `docker/distribution` reference for ImagePullJob) |
//! | [`intstr`] | `k8s.io/apimachinery/pkg/util/intstr`, kruise `pkg/util` int-or-percent helpers, Go `strconv` error texts |
//! | [`normalize`] | `encoding/json` `omitempty` on pod templates and `apimachinery/pkg/api/equality.Semantic.DeepEqual` |
//! | [`goshape`] | the JSON shape `encoding/json` gives `k8s.io/api` pod templates (struct fields never omitted) |
//! | [`gojson`] | `encoding/json` output of `k8s.io/api` v0.32 containers and of `interface{}` values (the hash input) |
//! | [`jsondiff`] | `github.com/appscode/jsonpatch` v1.0.1 `CreatePatch` (kruise's JSON diff) |
//! | [`metapatch`] | `k8s.io/apimachinery/pkg/util/strategicpatch.CreateTwoWayMergePatch` on `ObjectMeta` |
//! | [`patch`] | controller-runtime's `admission.PatchResponseFromRaw` (RFC 6902 patch from the raw request to the mutated object), except that fields our types do not know are kept (spec §11.7) |

pub mod field;
pub mod gojson;
pub mod goshape;
pub mod image;
pub mod intstr;
pub mod jsondiff;
pub mod metapatch;
pub mod names;
pub mod normalize;
pub mod patch;
pub mod podspec;
pub mod quantity;
pub mod selector;
