//! Typed builders of the objects tests and benches send: each starts from the smallest valid
//! manifest a user would write (no defaults) and changes one thing per call, e.g.
//! `CloneSetBuilder::new("web").replicas(3).container(container("main", "nginx:1.27"))` (the
//! workload methods come from [`WorkloadBuilder`]).
//! `build()` gives the typed object, `json()` the manifest as the apiserver would send it.
//! (Tests that probe raw JSON — unknown fields, odd keys, wrong types — keep writing JSON.)

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, EmptyDirVolumeSource, EnvVar, Pod, PodReadinessGate, PodSpec, PodTemplateSpec, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kruise::apis::sidecarset::{ShareVolumePolicy, SidecarContainer, TransferEnvVar};
use kruise::apis::statefulset::{v1alpha1, v1beta1};
use kruise::apis::{CloneSet, SidecarSet};
use kruise::core::conversion::statefulset_to_v1alpha1;
use serde_json::Value;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta { name: Some(name.into()), namespace: namespace.map(str::to_string), ..Default::default() }
}

fn to_json<T: serde::Serialize>(object: &T) -> Value {
    serde_json::to_value(object).expect("serialisable")
}

/// A container with a name and an image, nothing else.
pub fn container(name: &str, image: &str) -> Container {
    Container { name: name.into(), image: Some(image.into()), ..Default::default() }
}

/// Builder methods on a container.
pub trait ContainerExt: Sized {
    /// Appends `name=value` to `env`.
    fn env(self, name: &str, value: &str) -> Self;
    /// Sets `resources.requests[resource]`.
    fn request(self, resource: &str, quantity: &str) -> Self;
    /// Appends a volume mount.
    fn mount(self, volume: &str, path: &str) -> Self;
}

impl ContainerExt for Container {
    fn env(mut self, name: &str, value: &str) -> Self {
        self.env.get_or_insert_with(Vec::new).push(EnvVar {
            name: name.into(),
            value: Some(value.into()),
            ..Default::default()
        });
        self
    }

    fn request(mut self, resource: &str, quantity: &str) -> Self {
        let resources = self.resources.get_or_insert_with(Default::default);
        resources.requests.get_or_insert_with(BTreeMap::new).insert(resource.into(), Quantity(quantity.into()));
        self
    }

    fn mount(mut self, volume: &str, path: &str) -> Self {
        self.volume_mounts.get_or_insert_with(Vec::new).push(VolumeMount {
            name: volume.into(),
            mount_path: path.into(),
            ..Default::default()
        });
        self
    }
}

/// What CloneSets and Advanced StatefulSets share: metadata, replicas, the selector and the pod
/// template.
pub struct Workload {
    metadata: ObjectMeta,
    replicas: Option<i32>,
    labels: BTreeMap<String, String>,
    containers: Vec<Container>,
    readiness_gates: Vec<String>,
}

impl Workload {
    fn new(name: &str) -> Self {
        Workload {
            metadata: meta(name, Some("default")),
            replicas: None,
            labels: labels(&[("app", name)]),
            containers: Vec::new(),
            readiness_gates: Vec::new(),
        }
    }

    fn selector(&self) -> Option<LabelSelector> {
        Some(LabelSelector { match_labels: Some(self.labels.clone()), ..Default::default() })
    }

    /// The template: the labels, the containers (`main`/`nginx:1.27` when none) and the gates.
    fn template(&self) -> PodTemplateSpec {
        let containers =
            if self.containers.is_empty() { vec![container("main", "nginx:1.27")] } else { self.containers.clone() };
        let gates: Vec<PodReadinessGate> =
            self.readiness_gates.iter().map(|c| PodReadinessGate { condition_type: c.clone() }).collect();
        PodTemplateSpec {
            metadata: Some(ObjectMeta { labels: Some(self.labels.clone()), ..Default::default() }),
            spec: Some(PodSpec {
                containers,
                readiness_gates: (!gates.is_empty()).then_some(gates),
                ..Default::default()
            }),
        }
    }
}

/// The builder methods of every workload: in namespace `default`, selecting and labelling its
/// pods `app=<name>`.
pub trait WorkloadBuilder: Sized {
    fn workload(&mut self) -> &mut Workload;

    fn namespace(mut self, namespace: &str) -> Self {
        self.workload().metadata.namespace = Some(namespace.into());
        self
    }

    fn uid(mut self, uid: &str) -> Self {
        self.workload().metadata.uid = Some(uid.into());
        self
    }

    fn replicas(mut self, replicas: i32) -> Self {
        self.workload().replicas = Some(replicas);
        self
    }

    /// Appends a container to the template.
    fn container(mut self, container: Container) -> Self {
        self.workload().containers.push(container);
        self
    }

    /// Adds a readiness gate to the template (e.g. `InPlaceUpdateReady`).
    fn readiness_gate(mut self, condition: &str) -> Self {
        self.workload().readiness_gates.push(condition.into());
        self
    }
}

/// A CloneSet `apps.kruise.io/v1alpha1`.
pub struct CloneSetBuilder {
    workload: Workload,
    update_strategy: String,
}

impl WorkloadBuilder for CloneSetBuilder {
    fn workload(&mut self) -> &mut Workload {
        &mut self.workload
    }
}

impl CloneSetBuilder {
    pub fn new(name: &str) -> Self {
        CloneSetBuilder { workload: Workload::new(name), update_strategy: String::new() }
    }

    /// `spec.updateStrategy.type`.
    pub fn update_strategy(mut self, type_: &str) -> Self {
        self.update_strategy = type_.into();
        self
    }

    pub fn build(self) -> CloneSet {
        let w = &self.workload;
        let mut object = CloneSet::new(w.metadata.name.as_deref().unwrap_or_default(), Default::default());
        object.metadata = w.metadata.clone();
        object.spec.replicas = w.replicas;
        object.spec.selector = w.selector();
        object.spec.template = w.template();
        object.spec.update_strategy.type_ = self.update_strategy;
        object
    }

    pub fn json(self) -> Value {
        to_json(&self.build())
    }
}

/// An Advanced StatefulSet (built as v1beta1; `json_v1alpha1` converts), `serviceName: <name>`.
pub struct StatefulSetBuilder {
    workload: Workload,
}

impl WorkloadBuilder for StatefulSetBuilder {
    fn workload(&mut self) -> &mut Workload {
        &mut self.workload
    }
}

impl StatefulSetBuilder {
    pub fn new(name: &str) -> Self {
        StatefulSetBuilder { workload: Workload::new(name) }
    }

    pub fn build(self) -> v1beta1::StatefulSet {
        let w = &self.workload;
        let name = w.metadata.name.as_deref().unwrap_or_default();
        let mut object = v1beta1::StatefulSet::new(name, Default::default());
        object.metadata = w.metadata.clone();
        object.spec.service_name = name.into();
        object.spec.replicas = w.replicas;
        object.spec.selector = w.selector();
        object.spec.template = w.template();
        object
    }

    pub fn build_v1alpha1(self) -> v1alpha1::StatefulSet {
        statefulset_to_v1alpha1(&self.build())
    }

    pub fn json(self) -> Value {
        to_json(&self.build())
    }

    pub fn json_v1alpha1(self) -> Value {
        to_json(&self.build_v1alpha1())
    }

    /// The manifest at `version` (`v1beta1` or `v1alpha1`).
    pub fn json_at(self, version: &str) -> Value {
        if version == "v1alpha1" { self.json_v1alpha1() } else { self.json() }
    }
}

/// A SidecarSet `apps.kruise.io/v1alpha1` (cluster-scoped) selecting pods `app=<app>`.
pub struct SidecarSetBuilder {
    object: SidecarSet,
}

impl SidecarSetBuilder {
    pub fn new(name: &str) -> Self {
        SidecarSetBuilder { object: SidecarSet::new(name, Default::default()) }
    }

    /// `spec.selector.matchLabels`.
    pub fn selector(mut self, pairs: &[(&str, &str)]) -> Self {
        self.object.spec.selector = Some(LabelSelector { match_labels: Some(labels(pairs)), ..Default::default() });
        self
    }

    /// `spec.namespace`: only pods of this namespace.
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.object.spec.namespace = namespace.into();
        self
    }

    /// Appends a sidecar container.
    pub fn container(mut self, container: Container) -> Self {
        self.object.spec.containers.push(SidecarContainer { container, ..Default::default() });
        self
    }

    /// The last sidecar shares the app containers' volume mounts.
    pub fn share_volumes(mut self) -> Self {
        if let Some(c) = self.object.spec.containers.last_mut() {
            c.share_volume_policy = ShareVolumePolicy { type_: "enabled".into() };
        }
        self
    }

    /// The last sidecar copies env `name` from app container `source`.
    pub fn transfer_env(mut self, source: &str, name: &str) -> Self {
        if let Some(c) = self.object.spec.containers.last_mut() {
            c.transfer_env.push(TransferEnvVar {
                source_container_name: source.into(),
                env_name: name.into(),
                ..Default::default()
            });
        }
        self
    }

    pub fn build(self) -> SidecarSet {
        self.object
    }

    pub fn json(self) -> Value {
        to_json(&self.build())
    }
}

/// A Pod in namespace `default`.
pub struct PodBuilder {
    metadata: ObjectMeta,
    spec: PodSpec,
}

impl PodBuilder {
    pub fn new(name: &str) -> Self {
        PodBuilder { metadata: meta(name, Some("default")), spec: PodSpec::default() }
    }

    pub fn namespace(mut self, namespace: &str) -> Self {
        self.metadata.namespace = Some(namespace.into());
        self
    }

    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.metadata.labels.get_or_insert_with(BTreeMap::new).insert(key.into(), value.into());
        self
    }

    pub fn container(mut self, container: Container) -> Self {
        self.spec.containers.push(container);
        self
    }

    /// Adds an `emptyDir` volume.
    pub fn empty_dir(mut self, name: &str) -> Self {
        let volume =
            Volume { name: name.into(), empty_dir: Some(EmptyDirVolumeSource::default()), ..Default::default() };
        self.spec.volumes.get_or_insert_with(Vec::new).push(volume);
        self
    }

    pub fn build(self) -> Pod {
        Pod { metadata: self.metadata, spec: Some(self.spec), ..Default::default() }
    }

    pub fn json(self) -> Value {
        to_json(&self.build())
    }
}
