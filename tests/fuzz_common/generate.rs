//! Structure-aware inputs: pods, SidecarSets, CloneSets, Advanced StatefulSets, Namespaces and
//! AdmissionReview envelopes built as JSON from the fuzzer's bytes (`arbitrary::Unstructured`).
//!
//! Values are drawn mostly from small vocabularies that make objects meet each other (a pod
//! label a SidecarSet selects, a volume a sidecar mounts, an env var a `transferEnv` names, the
//! launch-priority annotation), and sometimes from the raw bytes (any string, any number, a
//! wrong JSON type, an unknown field): the handlers must answer both kinds. Running out of bytes
//! is not an error — every draw then returns its first choice, so every input builds an object.

use arbitrary::Unstructured;
use serde_json::{Map, Value, json};

use super::seeds::{IMAGES, QUANTITIES};

/// Draws from the fuzzer's bytes; never fails.
pub struct Gen<'a, 'b> {
    u: &'a mut Unstructured<'b>,
}

/// Strings that mean something somewhere in kruise or Kubernetes.
const WORDS: &[&str] = &[
    "",
    "a",
    "b",
    "app",
    "web",
    "default",
    "true",
    "false",
    "Always",
    "Never",
    "IfNotPresent",
    "Ordered",
    "enabled",
    "disabled",
    "HotUpgrade",
    "ColdUpgrade",
    "BeforeAppContainer",
    "AfterAppContainer",
    "Retain",
    "Overwrite",
    "MergePatchJson",
    "Partial",
    "NotUpdate",
    "RollingUpdate",
    "OnDelete",
    "ReCreate",
    "InPlaceIfPossible",
    "InPlaceOnly",
    "Parallel",
    "OrderedReady",
    "In",
    "NotIn",
    "Exists",
    "DoesNotExist",
    "50%",
    "0%",
    "100%",
    "150%",
    "-1",
    "1",
    "0",
    "a/b~c",
    "x/",
    "~0~1",
    "$(E0)",
    "{}",
    "{\"a\":1}",
    "{not json",
    "[1]",
    "null",
    "\u{2028}<&>\"\\",
    "kruise.io/sidecarset-hash",
    "kruise.io/sidecarset-injected-list",
    "apps.kruise.io/container-launch-priority",
    "KRUISE_CONTAINER_PRIORITY",
    "KRUISE_CONTAINER_BARRIER",
    "IS_INJECTED",
    "metadata.labels['app']",
    "metadata.annotations['a']",
    "metadata.name",
];

/// Names shared by containers, volumes, sets and env vars so that objects refer to each other.
const NAMES: &[&str] =
    &["a", "b", "app", "app-0", "s0-c0", "s0-c0-1", "s1-c0", "s0-i0", "v0", "v1", "logs", "E0", "E1", "nginx"];

impl<'a, 'b> Gen<'a, 'b> {
    pub fn new(u: &'a mut Unstructured<'b>) -> Self {
        Gen { u }
    }

    /// Whether the input is used up.
    pub fn is_empty(&self) -> bool {
        self.u.is_empty()
    }

    pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
        self.u.int_in_range(lo..=hi).unwrap_or(lo)
    }

    pub fn below(&mut self, n: usize) -> usize {
        if n <= 1 { 0 } else { self.u.int_in_range(0..=n - 1).unwrap_or(0) }
    }

    /// True with probability `percent`/100; false once the input is used up (`ratio` then
    /// answers true, which would never end the `noise` loop).
    pub fn chance(&mut self, percent: u8) -> bool {
        !self.u.is_empty() && self.u.ratio(percent.min(100), 100u8).unwrap_or(false)
    }

    pub fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.below(from.len())]
    }

    /// Up to `max` elements built by `f`.
    pub fn list(&mut self, max: usize, mut f: impl FnMut(&mut Self, usize) -> Value) -> Vec<Value> {
        let n = self.below(max + 1);
        (0..n).map(|i| f(self, i)).collect()
    }

    /// Any string of up to 24 bytes of the input.
    pub fn raw_string(&mut self) -> String {
        let n = self.below(25);
        let bytes = self.u.bytes(n.min(self.u.len())).unwrap_or(&[]);
        String::from_utf8_lossy(bytes).into_owned()
    }

    /// A word of the vocabulary, sometimes any string.
    pub fn word(&mut self) -> String {
        if self.chance(85) { self.pick(WORDS).to_string() } else { self.raw_string() }
    }

    /// A shared name, sometimes any string.
    pub fn name(&mut self) -> String {
        if self.chance(90) { self.pick(NAMES).to_string() } else { self.raw_string() }
    }

    pub fn quantity(&mut self) -> Value {
        match self.below(10) {
            0 => json!(self.int(-3, 5000)),
            1 => Value::String(self.raw_string()),
            _ => json!(self.pick(QUANTITIES)),
        }
    }

    pub fn image(&mut self) -> Value {
        if self.chance(90) { json!(self.pick(IMAGES)) } else { Value::String(self.raw_string()) }
    }

    /// An `IntOrString` as users write them.
    pub fn int_or_percent(&mut self) -> Value {
        match self.below(6) {
            0 => json!(self.int(-2, 12)),
            1 => json!(format!("{}%", self.int(-10, 200))),
            2 => json!(self.int(i64::MIN / 2, i64::MAX / 2)),
            3 => Value::String(self.word()),
            _ => json!(self.int(0, 3)),
        }
    }

    /// Any JSON value, at most `depth` levels deep.
    pub fn any(&mut self, depth: u8) -> Value {
        match self.below(if depth == 0 { 5 } else { 7 }) {
            0 => Value::Null,
            1 => json!(self.chance(50)),
            2 => json!(self.int(i64::MIN, i64::MAX)),
            3 => json!(self.u.arbitrary::<f64>().ok().filter(|f| f.is_finite()).unwrap_or(0.5)),
            4 => Value::String(self.word()),
            5 => Value::Array(self.list(3, |g, _| g.any(depth - 1))),
            _ => {
                let mut m = Map::new();
                for _ in 0..self.below(4) {
                    let k = self.word();
                    m.insert(k, self.any(depth - 1));
                }
                Value::Object(m)
            }
        }
    }

    /// A string → string map with vocabulary keys and values.
    pub fn string_map(&mut self, max: usize) -> Value {
        let mut m = Map::new();
        for _ in 0..self.below(max + 1) {
            let k = if self.chance(50) {
                self.pick(&["app", "tier", "a/b~c", "kubernetes.io/metadata.name"]).into()
            } else {
                self.word()
            };
            let v = if self.chance(60) { self.pick(&["a", "b", "web", "default", ""]).into() } else { self.word() };
            m.insert(k, Value::String(v));
        }
        Value::Object(m)
    }

    /// With probability `percent`, gives `obj` (an object) a field of the vocabulary or any
    /// name, holding any value: unknown fields and wrong types reach the decoders.
    pub fn noise(&mut self, obj: &mut Value, percent: u8) {
        while self.chance(percent) {
            let Value::Object(m) = obj else { return };
            let key = if self.chance(50) || m.is_empty() {
                self.word()
            } else {
                let keys: Vec<String> = m.keys().cloned().collect();
                keys[self.below(keys.len())].clone()
            };
            let v = self.any(2);
            m.insert(key, v);
        }
    }

    /// Replaces, removes or adds one value somewhere inside `v` (a random edit, for UPDATEs and
    /// for second versions of an object).
    pub fn edit(&mut self, v: &mut Value) {
        let mut pointers = Vec::new();
        collect_pointers(v, String::new(), &mut pointers);
        if pointers.is_empty() {
            return;
        }
        let target = pointers[self.below(pointers.len())].clone();
        let choice = self.below(4);
        let replacement = match choice {
            0 => self.any(2),
            1 => Value::String(self.word()),
            2 => json!(self.pick(IMAGES)),
            _ => Value::Null,
        };
        if choice == 3 {
            remove_pointer(v, &target);
        } else if let Some(slot) = v.pointer_mut(&target) {
            *slot = replacement;
        }
    }

    pub fn env_var(&mut self) -> Value {
        let name = match self.below(8) {
            0 => "KRUISE_CONTAINER_PRIORITY".to_string(),
            1 => "IS_INJECTED".to_string(),
            2 => "KRUISE_CONTAINER_BARRIER".to_string(),
            _ => self.pick(&["E0", "E1", "POD_NAME", "SIDECARSET_VERSION"]).to_string(),
        };
        let mut e = json!({"name": name});
        match self.below(5) {
            0 => {
                e["valueFrom"] =
                    json!({"fieldRef": {"fieldPath": self.pick(&["metadata.name", "metadata.labels['app']"])}})
            }
            1 => {
                e["valueFrom"] =
                    json!({"configMapKeyRef": {"name": "p-barrier", "key": self.pick(&["p_0", "p_-1", "p_"])}})
            }
            2 => e["value"] = json!(self.pick(&["true", "1", "-2", "10", "x", "", "99999999999999999999"])),
            _ => e["value"] = Value::String(self.word()),
        }
        e
    }

    pub fn container(&mut self, name: Option<String>) -> Value {
        let name = name.unwrap_or_else(|| self.name());
        let mut c = json!({"name": name});
        if self.chance(90) {
            c["image"] = self.image();
        }
        if self.chance(60) {
            c["env"] = Value::Array(self.list(4, |g, _| g.env_var()));
        }
        if self.chance(50) {
            c["volumeMounts"] = Value::Array(self.list(3, |g, _| {
                let mut m = json!({"name": g.name(), "mountPath": format!("/{}", g.pick(&["a", "b", "logs", "x/y"]))});
                if g.chance(30) {
                    m["subPathExpr"] = json!(g.pick(&["$(E0)/$(E1)", "$(POD_NAME)", "$(", "x"]));
                }
                if g.chance(20) {
                    m["readOnly"] = json!(true);
                }
                m
            }));
        }
        if self.chance(15) {
            c["volumeDevices"] = json!([{"name": self.name(), "devicePath": format!("/dev/{}", self.name())}]);
        }
        if self.chance(40) {
            let mut r = json!({});
            for key in ["requests", "limits"] {
                if self.chance(60) {
                    let mut m = Map::new();
                    for res in ["cpu", "memory", "ephemeral-storage"] {
                        if self.chance(50) {
                            m.insert(res.to_string(), self.quantity());
                        }
                    }
                    r[key] = Value::Object(m);
                }
            }
            c["resources"] = r;
        }
        if self.chance(20) {
            c["imagePullPolicy"] = json!(self.pick(&["Always", "IfNotPresent", "Never", "x"]));
        }
        if self.chance(15) {
            c["restartPolicy"] = json!(self.pick(&["Always", "Never", ""]));
        }
        if self.chance(15) {
            c["ports"] = json!([{"containerPort": self.int(-1, 70000), "protocol": self.pick(&["TCP", "UDP", "x"])}]);
        }
        if self.chance(10) {
            c["readinessProbe"] =
                json!({"httpGet": {"path": "/", "port": self.int_or_percent()}, "periodSeconds": self.int(-1, 30)});
        }
        if self.chance(10) {
            c["terminationMessagePath"] = json!("/dev/termination-log");
            c["terminationMessagePolicy"] = json!("File");
        }
        self.noise(&mut c, 10);
        c
    }

    pub fn volume(&mut self) -> Value {
        let name = self.name();
        let mut v = match self.below(4) {
            0 => json!({"name": name, "emptyDir": {}}),
            1 => json!({"name": name, "emptyDir": {"medium": "Memory", "sizeLimit": self.quantity()}}),
            2 => json!({"name": name, "persistentVolumeClaim": {"claimName": self.name()}}),
            _ => json!({"name": name, "configMap": {"name": self.name()}}),
        };
        self.noise(&mut v, 5);
        v
    }

    pub fn metadata(&mut self, name: &str) -> Value {
        let mut m = json!({});
        match self.below(6) {
            0 => m["generateName"] = json!(format!("{name}-")),
            1 => {}
            _ => m["name"] = json!(name),
        }
        match self.below(5) {
            0 => m["namespace"] = json!(""),
            1 => m["namespace"] = json!("other"),
            2 => {}
            _ => m["namespace"] = json!("default"),
        }
        if self.chance(80) {
            m["labels"] = self.string_map(3);
        }
        if self.chance(50) {
            let mut a = self.string_map(2);
            if self.chance(40) {
                a["apps.kruise.io/container-launch-priority"] = json!(self.pick(&["Ordered", "x"]));
            }
            if self.chance(10) {
                a[self.pick(&["kruise.io/sidecarset-hash", "kruise.io/sidecarset-hash-without-image"])] =
                    json!(self.pick(&[
                        "{}",
                        "{\"set-0\":\"abc\"}",
                        "{\"set-0\":{\"hash\":\"h\",\"updateTimestamp\":\"2024-01-01T00:00:00Z\"}}",
                        "{not json",
                    ]));
            }
            if self.chance(10) {
                a["kruise.io/sidecarset-injected-list"] = json!(self.pick(&["set-0", "set-1,set-0", ""]));
            }
            m["annotations"] = a;
        }
        if self.chance(20) {
            m["ownerReferences"] = json!([{"apiVersion": self.pick(&["apps.kruise.io/v1alpha1", "apps/v1", "apps.kruise.io/v1beta1"]),
                "kind": "CloneSet", "name": "c", "uid": "u", "controller": self.chance(80)}]);
        }
        if self.chance(5) {
            m["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
        }
        if self.chance(30) {
            m["creationTimestamp"] = Value::Null;
        }
        if self.chance(10) {
            m["finalizers"] = json!([self.word()]);
        }
        self.noise(&mut m, 5);
        m
    }

    pub fn pod_spec(&mut self) -> Value {
        let containers = self.list(4, |g, i| {
            let name = if g.chance(80) { Some(format!("app-{i}")) } else { None };
            g.container(name)
        });
        let mut spec = json!({"containers": containers});
        if self.chance(30) {
            spec["initContainers"] = Value::Array(self.list(2, |g, i| g.container(Some(format!("init-{i}")))));
        }
        if self.chance(60) {
            spec["volumes"] = Value::Array(self.list(4, |g, _| g.volume()));
        }
        if self.chance(20) {
            spec["imagePullSecrets"] = json!([{"name": self.name()}]);
        }
        if self.chance(15) {
            spec["readinessGates"] = json!([{"conditionType": self.pick(&["KruisePodReady", "x"])}]);
        }
        if self.chance(30) {
            spec["restartPolicy"] = json!(self.pick(&["Always", "OnFailure", "Never", "x"]));
        }
        if self.chance(10) {
            spec["hostNetwork"] = json!(true);
        }
        if self.chance(10) {
            spec["terminationGracePeriodSeconds"] = json!(self.int(-1, 100));
        }
        self.noise(&mut spec, 8);
        spec
    }

    pub fn pod(&mut self) -> Value {
        let mut pod =
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": self.metadata("p"), "spec": self.pod_spec()});
        if self.chance(15) {
            pod["status"] = json!({"phase": self.pick(&["Pending", "Running", "Succeeded", "Failed"])});
        }
        if self.chance(3) {
            pod["spec"] = self.any(2);
        }
        pod
    }

    pub fn selector(&mut self) -> Value {
        let mut s = json!({});
        if self.chance(70) {
            s["matchLabels"] = self.string_map(2);
        }
        if self.chance(40) {
            s["matchExpressions"] = Value::Array(self.list(2, |g, _| {
                let mut e = json!({"key": g.pick(&["app", "tier", "a/b~c", "x y"]),
                    "operator": g.pick(&["In", "NotIn", "Exists", "DoesNotExist", "Gt", ""])});
                if g.chance(70) {
                    e["values"] = Value::Array(g.list(2, |g, _| json!(g.pick(&["a", "b", "web", "", "a b"]))));
                }
                e
            }));
        }
        s
    }

    pub fn sidecar_container(&mut self, set: usize, j: usize, init: bool) -> Value {
        let name = if self.chance(85) { format!("s{set}-{}{j}", if init { "i" } else { "c" }) } else { self.name() };
        let mut c = self.container(Some(name));
        if self.chance(60) {
            c["podInjectPolicy"] = json!(self.pick(&["BeforeAppContainer", "AfterAppContainer", "x"]));
        }
        if self.chance(50) {
            c["shareVolumePolicy"] = json!({"type": self.pick(&["enabled", "disabled", "x"])});
        }
        if self.chance(20) {
            c["shareVolumeDevicePolicy"] = json!({"type": "enabled"});
        }
        if self.chance(40) {
            c["transferEnv"] = Value::Array(self.list(2, |g, _| {
                let mut t = json!({});
                if g.chance(70) {
                    t["sourceContainerName"] = json!(g.pick(&["app-0", "app-1", "x"]));
                } else {
                    t["sourceContainerNameFrom"] = json!({"fieldRef": {"fieldPath": g.pick(&["metadata.labels['app']", "metadata.annotations['a']", "metadata.name", "metadata.labels['"])}});
                }
                if g.chance(70) {
                    t["envName"] = json!(g.pick(&["E0", "E1", "POD_NAME"]));
                }
                if g.chance(30) {
                    t["envNames"] = json!([g.pick(&["E0", "E1"])]);
                }
                t
            }));
        }
        if self.chance(20) {
            c["upgradeStrategy"] = json!({"upgradeType": self.pick(&["HotUpgrade", "ColdUpgrade", ""]),
                "hotUpgradeEmptyImage": self.pick(&["empty:1", ""])});
        }
        if init && self.chance(50) {
            c["restartPolicy"] = json!("Always");
        }
        if self.chance(10) {
            c["resourcesPolicy"] = json!({"targetContainerMode": self.pick(&["sum", "max", "x"]),
                "targetContainersNameRegex": self.pick(&[".*", "app-.*", "("]),
                "resourceExpr": {"limits": {"cpu": self.pick(&["max(cpu*50%, 50m)", "cpu", "x"])}}});
        }
        c
    }

    pub fn sidecarset(&mut self, i: usize) -> Value {
        let mut spec = json!({"selector": self.selector()});
        spec["containers"] = Value::Array(self.list(3, |g, j| g.sidecar_container(i, j, false)));
        if self.chance(40) {
            spec["initContainers"] = Value::Array(self.list(2, |g, j| g.sidecar_container(i, j, true)));
        }
        if self.chance(60) {
            spec["volumes"] = Value::Array(self.list(3, |g, _| g.volume()));
        }
        match self.below(6) {
            0 => spec["namespace"] = json!(self.pick(&["default", "other"])),
            1 => spec["namespaceSelector"] = self.selector(),
            _ => {}
        }
        if self.chance(20) {
            spec["imagePullSecrets"] = json!([{"name": self.name()}]);
        }
        if self.chance(25) {
            let key =
                if self.chance(50) { format!("set-{i}/x") } else { self.pick(&["merge", "a", "a/b~c"]).to_string() };
            let value = match self.below(3) {
                0 => json!("r"),
                1 => json!(format!("{{\"s{i}\":1}}")),
                _ => Value::String(self.word()),
            };
            spec["patchPodMetadata"] = json!([{"annotations": {key: value},
                "patchPolicy": self.pick(&["Retain", "Overwrite", "MergePatchJson", "", "x"])}]);
        }
        if self.chance(20) {
            let mut s = json!({"paused": self.chance(30)});
            if self.chance(50) {
                s["revision"] = json!({"customVersion": self.pick(&["v1", "v2"]), "policy": self.pick(&["Always", "Partial", "x"])});
            }
            spec["injectionStrategy"] = s;
        }
        if self.chance(30) {
            let mut s = json!({"type": self.pick(&["RollingUpdate", "NotUpdate", "x"])});
            if self.chance(50) {
                s["partition"] = self.int_or_percent();
            }
            if self.chance(50) {
                s["maxUnavailable"] = self.int_or_percent();
            }
            if self.chance(20) {
                s["selector"] = self.selector();
            }
            if self.chance(20) {
                s["paused"] = json!(true);
            }
            spec["updateStrategy"] = s;
        }
        self.noise(&mut spec, 5);
        let mut meta = json!({"name": format!("set-{i}")});
        if self.chance(15) {
            meta["annotations"] = json!({"apps.kruise.io/sidecarset-canary": "true", "apps.kruise.io/sidecarset-base": self.pick(&["set-0", "set-1"])});
        }
        if self.chance(10) {
            meta["annotations"] =
                json!({"kruise.io/sidecarset-hash": "h", "kruise.io/sidecarset-hash-without-image": "w"});
        }
        let api = if self.chance(90) { "apps.kruise.io/v1alpha1" } else { "apps.kruise.io/v1beta1" };
        json!({"apiVersion": api, "kind": "SidecarSet", "metadata": meta, "spec": spec})
    }

    pub fn namespace(&mut self) -> Value {
        let name = self.pick(&["default", "other", "kruise-system"]);
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": self.string_map(2)}})
    }

    /// A pod template for the workloads.
    pub fn template(&mut self) -> Value {
        let mut meta = json!({});
        if self.chance(85) {
            meta["labels"] = if self.chance(70) { json!({"app": "web"}) } else { self.string_map(2) };
        }
        if self.chance(20) {
            meta["annotations"] = self.string_map(2);
        }
        let mut t = json!({"metadata": meta, "spec": self.pod_spec()});
        if self.chance(3) {
            t = self.any(2);
        }
        t
    }

    pub fn claim_templates(&mut self) -> Value {
        Value::Array(self.list(2, |g, _| {
            json!({"metadata": {"name": g.pick(&["data", "logs", ""])},
                   "spec": {"accessModes": [g.pick(&["ReadWriteOnce", "x"])], "resources": {"requests": {"storage": g.quantity()}}}})
        }))
    }

    pub fn cloneset(&mut self) -> Value {
        let mut spec = json!({"selector": if self.chance(80) { json!({"matchLabels": {"app": "web"}}) } else { self.selector() },
                              "template": self.template()});
        if self.chance(80) {
            spec["replicas"] = json!(self.int(-2, 12));
        }
        if self.chance(60) {
            let mut s = json!({});
            if self.chance(80) {
                s["type"] = json!(self.pick(&["ReCreate", "InPlaceIfPossible", "InPlaceOnly", "OnDelete", "x"]));
            }
            for key in ["partition", "maxUnavailable", "maxSurge"] {
                if self.chance(40) {
                    s[key] = self.int_or_percent();
                }
            }
            if self.chance(20) {
                s["paused"] = json!(self.chance(50));
            }
            if self.chance(15) {
                s["inPlaceUpdateStrategy"] = json!({"gracePeriodSeconds": self.int(-1, 30)});
            }
            if self.chance(15) {
                s["priorityStrategy"] =
                    json!({"weightPriority": [{"weight": self.int(-1, 200), "matchSelector": self.selector()}]});
            }
            if self.chance(15) {
                s["scatterStrategy"] = json!([{"key": self.pick(&["app", ""]), "value": self.pick(&["web", ""])}]);
            }
            spec["updateStrategy"] = s;
        }
        if self.chance(25) {
            let mut s = json!({});
            if self.chance(50) {
                s["podsToDelete"] = json!([self.pick(&["p", "q", ""])]);
            }
            if self.chance(50) {
                s["maxUnavailable"] = self.int_or_percent();
            }
            if self.chance(30) {
                s["disablePVCReuse"] = json!(true);
            }
            spec["scaleStrategy"] = s;
        }
        if self.chance(25) {
            spec["volumeClaimTemplates"] = self.claim_templates();
        }
        for key in ["revisionHistoryLimit", "minReadySeconds"] {
            if self.chance(20) {
                spec[key] = json!(self.int(-1, 20));
            }
        }
        if self.chance(10) {
            spec["lifecycle"] = json!({"preDelete": {"finalizersHandler": [self.word()]}, "inPlaceUpdate": {"labelsHandler": self.string_map(1)}});
        }
        self.noise(&mut spec, 5);
        let api = if self.chance(95) { "apps.kruise.io/v1alpha1".to_string() } else { self.word() };
        json!({"apiVersion": api, "kind": "CloneSet", "metadata": self.metadata("c"), "spec": spec})
    }

    /// A CloneSet at either served version: mostly v1alpha1 ([`Gen::cloneset`]), otherwise the
    /// same object converted to v1beta1 (`core::conversion::cloneset`) with v1beta1's own fields
    /// drawn over it: `rollingUpdate.podUpdatePolicy`, `enablePVCReuse`,
    /// `excludePreparingDelete`, the image pre-download parameters, and sometimes a v1alpha1
    /// field left where v1beta1 has none.
    pub fn cloneset_any_version(&mut self) -> Value {
        let mut c = self.cloneset();
        if self.chance(60) {
            return c;
        }
        if let Value::Object(map) = &mut c {
            kruise::core::conversion::cloneset::to_v1beta1(map);
        }
        c["apiVersion"] = json!("apps.kruise.io/v1beta1");
        let Some(spec) = c.get_mut("spec").filter(|s| s.is_object()) else { return c };
        if self.chance(30) {
            spec["updateStrategy"]["type"] = json!(self.pick(&["RollingUpdate", "OnDelete", "", "ReCreate", "x"]));
        }
        if spec["updateStrategy"].is_object() {
            let strategy = &mut spec["updateStrategy"];
            if self.chance(30) && !strategy["rollingUpdate"].is_object() {
                strategy["rollingUpdate"] = json!({});
            }
            let rolling = &mut strategy["rollingUpdate"];
            if rolling.is_object() {
                if self.chance(30) {
                    rolling["podUpdatePolicy"] =
                        json!(self.pick(&["ReCreate", "InPlaceIfPossible", "InPlaceOnly", "", "x"]));
                }
                if self.chance(20) {
                    let mut in_place = json!({"gracePeriodSeconds": self.int(-1, 30)});
                    if self.chance(60) {
                        in_place["imagePreDownloadParallelism"] = self.int_or_percent();
                    }
                    if self.chance(50) {
                        in_place["imagePreDownloadTimeoutSeconds"] = json!(self.int(-1, 700));
                    }
                    if self.chance(50) {
                        in_place["imagePreDownloadMinUpdatedReadyPods"] = json!(self.int(-1, 5));
                    }
                    rolling["inPlaceUpdateStrategy"] = in_place;
                }
            }
            if self.chance(5) {
                strategy["partition"] = self.int_or_percent();
            }
        }
        if self.chance(30) {
            if !spec["scaleStrategy"].is_object() {
                spec["scaleStrategy"] = json!({});
            }
            let scale = &mut spec["scaleStrategy"];
            match self.below(4) {
                0 => scale["enablePVCReuse"] = json!(self.chance(50)),
                1 => scale["excludePreparingDelete"] = json!(self.chance(50)),
                2 => scale["disablePVCReuse"] = json!(true),
                _ => scale["enablePVCReuse"] = self.any(1),
            }
        }
        c
    }

    /// A SidecarSet in v1beta1's shape: `set` converted (`core::conversion::sidecarset`: a
    /// namespace becomes a namespaceSelector, the custom-version label `customVersion`), with a
    /// `customVersion` drawn and sometimes v1alpha1's `namespace` left in.
    pub fn sidecarset_v1beta1(&mut self, mut set: Value) -> Value {
        if let Value::Object(map) = &mut set {
            kruise::core::conversion::sidecarset::to_v1beta1(map);
        }
        set["apiVersion"] = json!("apps.kruise.io/v1beta1");
        let Some(spec) = set.get_mut("spec").filter(|s| s.is_object()) else { return set };
        if self.chance(40) {
            spec["customVersion"] = json!(self.pick(&["v1", "v2", "", "x/y"]));
        }
        if self.chance(10) {
            spec["namespace"] = json!(self.pick(&["default", "other"]));
        }
        set
    }

    pub fn statefulset(&mut self) -> Value {
        let mut spec = json!({"selector": if self.chance(80) { json!({"matchLabels": {"app": "web"}}) } else { self.selector() },
                              "template": self.template(), "serviceName": "web"});
        if self.chance(80) {
            spec["replicas"] = json!(self.int(-2, 12));
        }
        if self.chance(60) {
            spec["podManagementPolicy"] = json!(self.pick(&["Parallel", "OrderedReady", "x"]));
        }
        if self.chance(60) {
            let mut r = json!({});
            for key in ["partition", "maxUnavailable"] {
                if self.chance(50) {
                    r[key] = self.int_or_percent();
                }
            }
            if self.chance(40) {
                r["podUpdatePolicy"] = json!(self.pick(&["ReCreate", "InPlaceIfPossible", "InPlaceOnly", "x"]));
            }
            if self.chance(20) {
                r["paused"] = json!(true);
            }
            if self.chance(15) {
                r["unorderedUpdate"] = json!({"priorityStrategy": {"weightPriority": [{"weight": self.int(-1, 200), "matchSelector": self.selector()}]}});
            }
            if self.chance(15) {
                r["minReadySeconds"] = json!(self.int(-1, 400));
            }
            spec["updateStrategy"] =
                json!({"type": self.pick(&["RollingUpdate", "OnDelete", "x"]), "rollingUpdate": r});
        }
        if self.chance(25) {
            spec["reserveOrdinals"] = Value::Array(self.list(3, |g, _| {
                if g.chance(60) { json!(g.int(-1, 20)) } else { json!(g.pick(&["3-5", "5-3", "x", "1-"])) }
            }));
        }
        if self.chance(15) {
            spec["ordinals"] = json!({"start": self.int(-1, 5)});
        }
        if self.chance(20) {
            spec["persistentVolumeClaimRetentionPolicy"] = json!({"whenDeleted": self.pick(&["Retain", "Delete", "x"]),
                "whenScaled": self.pick(&["Retain", "Delete", "x"])});
        }
        if self.chance(25) {
            spec["volumeClaimTemplates"] = self.claim_templates();
        }
        if self.chance(20) {
            spec["scaleStrategy"] = json!({"maxUnavailable": self.int_or_percent()});
        }
        if self.chance(15) {
            spec["revisionHistoryLimit"] = json!(self.int(-1, 20));
        }
        self.noise(&mut spec, 5);
        let api = match self.below(10) {
            0..=5 => "apps.kruise.io/v1beta1".to_string(),
            6..=8 => "apps.kruise.io/v1alpha1".to_string(),
            _ => self.word(),
        };
        json!({"apiVersion": api, "kind": "StatefulSet", "metadata": self.metadata("s"), "spec": spec})
    }

    /// An operation, mostly the ones the handler is registered for.
    pub fn operation(&mut self, usual: &[&'static str]) -> &'static str {
        if self.chance(90) { self.pick(usual) } else { self.pick(&["CREATE", "UPDATE", "DELETE", "CONNECT"]) }
    }

    /// An AdmissionReview envelope for `object`/`old` (either may be `None`).
    pub fn review(
        &mut self,
        resource: (&str, &str, &str, &str),
        op: &str,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Value {
        let (group, version, res, kind) = resource;
        let api = if self.chance(85) { "admission.k8s.io/v1" } else { "admission.k8s.io/v1beta1" };
        let uid = if self.chance(80) { "9a3c4e52-7d1b-4c3e-9f1a-2b6d8e0f1a23".to_string() } else { self.raw_string() };
        let namespace = self.pick(&["default", "other", ""]);
        let name = object.or(old).and_then(|o| o["metadata"]["name"].as_str()).unwrap_or("").to_string();
        let mut request = json!({
            "uid": uid,
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": res},
            "requestKind": {"group": group, "version": version, "kind": kind},
            "namespace": namespace, "name": name, "operation": op,
            "userInfo": {"username": self.pick(&["admin", "system:serviceaccount:kruise-system:kruise-manager", ""]),
                         "groups": ["system:authenticated"]},
            "object": object.cloned().unwrap_or(Value::Null),
            "oldObject": old.cloned().unwrap_or(Value::Null),
        });
        if self.chance(10) {
            request["subResource"] = json!(self.pick(&["status", "scale", "eviction"]));
        }
        if self.chance(10) {
            request["dryRun"] = json!(true);
        }
        if self.chance(10) {
            request["options"] = json!({"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"});
        }
        json!({"apiVersion": api, "kind": "AdmissionReview", "request": request})
    }

    /// Feature gates that change what the handlers do.
    pub fn gates(&mut self) -> String {
        let mut gates = Vec::new();
        for gate in [
            "KruisePodReadinessGate",
            "EnableSortSidecarContainerByName",
            "PodWebhook",
            "ResourcesDeletionProtection",
            "TemplateNoDefaults",
            "InPlaceUpdateEnvFromMetadata",
            "InPlaceWorkloadVerticalScaling",
            "RecreatePodWhenChangeVCTInCloneSetGate",
            "SidecarSetPatchPodMetadataDefaultsAllowed",
            "StatefulSetStartOrdinal",
            "DefaultHostNetworkHostPortsInPodTemplates",
        ] {
            if self.chance(12) {
                gates.push(format!("{gate}={}", self.chance(50)));
            }
        }
        gates.join(",")
    }
}

fn collect_pointers(v: &Value, prefix: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                let p = format!("{prefix}/{}", k.replace('~', "~0").replace('/', "~1"));
                out.push(p.clone());
                collect_pointers(child, p, out);
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                let p = format!("{prefix}/{i}");
                out.push(p.clone());
                collect_pointers(child, p, out);
            }
        }
        _ => {}
    }
}

fn remove_pointer(v: &mut Value, pointer: &str) {
    let Some((parent, last)) = pointer.rsplit_once('/') else { return };
    let key = last.replace("~1", "/").replace("~0", "~");
    match v.pointer_mut(parent) {
        Some(Value::Object(m)) => {
            m.remove(&key);
        }
        Some(Value::Array(a)) => {
            if let Ok(i) = key.parse::<usize>()
                && i < a.len()
            {
                a.remove(i);
            }
        }
        _ => {}
    }
}
