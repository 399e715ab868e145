//! AdmissionReview requests as the apiserver builds them (ADMISSION.md): the one builder of the
//! envelope, used by `kruise check` (which must send what a cluster would send), by the tests and
//! by the benches. `kind`/`resource` and `requestKind`/`requestResource` are the same (no
//! version conversion), `name` and `namespace` come from the object unless set.

use kube::core::admission::Operation;
use serde_json::{Map, Value, json};

use super::review::{ADMISSION_V1, DecodeError, Review, decode};

/// An AdmissionReview request body under construction.
#[derive(Clone, Debug)]
pub struct ReviewRequest {
    admission_version: &'static str,
    uid: String,
    operation: Operation,
    group: String,
    version: String,
    kind: String,
    resource: String,
    sub_resource: Option<String>,
    name: Option<String>,
    namespace: Option<Option<String>>,
    username: String,
    object: Option<Value>,
    old_object: Option<Value>,
    dry_run: bool,
}

impl ReviewRequest {
    /// A review of `operation` on `group/version` `resource` (plural, lower case) of kind `kind`.
    pub fn new(operation: Operation, group: &str, version: &str, kind: &str, resource: &str) -> Self {
        ReviewRequest {
            admission_version: ADMISSION_V1,
            uid: "00000000-0000-0000-0000-000000000001".into(),
            operation,
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            resource: resource.into(),
            sub_resource: None,
            name: None,
            namespace: None,
            username: "kruise".into(),
            object: None,
            old_object: None,
            dry_run: false,
        }
    }

    /// A review of `object` (the new object; the old one on DELETE): group, version and kind from
    /// its `apiVersion` and `kind`, the resource as the kind's lower-case plural (`clonesets`).
    pub fn for_object(operation: Operation, object: &Value) -> Self {
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let kind = object["kind"].as_str().unwrap_or_default();
        let resource = format!("{}s", kind.to_lowercase());
        let review = ReviewRequest::new(operation.clone(), group, version, kind, &resource);
        match operation {
            Operation::Delete => review.old_object(object.clone()),
            _ => review.object(object.clone()),
        }
    }

    /// `request.object` (`null` when not set).
    #[must_use]
    pub fn object(mut self, object: Value) -> Self {
        self.object = Some(object);
        self
    }

    /// `request.oldObject` (`null` when not set).
    #[must_use]
    pub fn old_object(mut self, old: Value) -> Self {
        self.old_object = Some(old);
        self
    }

    /// `request.object` and `request.oldObject` where given (`null` otherwise).
    #[must_use]
    pub fn objects(self, object: Option<&Value>, old: Option<&Value>) -> Self {
        ReviewRequest { object: object.cloned(), old_object: old.cloned(), ..self }
    }

    /// `request.uid`.
    #[must_use]
    pub fn uid(mut self, uid: impl Into<String>) -> Self {
        self.uid = uid.into();
        self
    }

    /// `request.name` (else the object's `metadata.name`, else "").
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// `request.namespace` (else the object's `metadata.namespace`, if any).
    #[must_use]
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(Some(namespace.into()));
        self
    }

    /// No `request.namespace` at all (a cluster-scoped resource).
    #[must_use]
    pub fn cluster_scoped(mut self) -> Self {
        self.namespace = Some(None);
        self
    }

    /// `request.subResource` (e.g. `status`).
    #[must_use]
    pub fn sub_resource(mut self, sub_resource: impl Into<String>) -> Self {
        self.sub_resource = Some(sub_resource.into());
        self
    }

    /// `request.userInfo.username`.
    #[must_use]
    pub fn username(mut self, username: impl Into<String>) -> Self {
        self.username = username.into();
        self
    }

    /// `request.dryRun` and the matching `options.dryRun: ["All"]`.
    #[must_use]
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// The envelope's `apiVersion` (default `admission.k8s.io/v1`).
    #[must_use]
    pub fn admission_version(mut self, version: &'static str) -> Self {
        self.admission_version = version;
        self
    }

    /// The review as JSON.
    pub fn to_json(&self) -> Value {
        let any = self.object.as_ref().or(self.old_object.as_ref());
        let meta = |key: &str| any.and_then(|o| o["metadata"][key].as_str()).map(str::to_string);
        let name = self.name.clone().or_else(|| meta("name")).unwrap_or_default();
        let namespace = self.namespace.clone().unwrap_or_else(|| meta("namespace"));
        let kind = json!({"group": self.group, "version": self.version, "kind": self.kind});
        let resource = json!({"group": self.group, "version": self.version, "resource": self.resource});
        let mut request = Map::new();
        request.insert("uid".into(), json!(self.uid));
        request.insert("kind".into(), kind.clone());
        request.insert("resource".into(), resource.clone());
        if let Some(sub) = &self.sub_resource {
            request.insert("subResource".into(), json!(sub));
        }
        request.insert("requestKind".into(), kind);
        request.insert("requestResource".into(), resource);
        request.insert("name".into(), json!(name));
        if let Some(ns) = namespace {
            request.insert("namespace".into(), json!(ns));
        }
        request.insert("operation".into(), serde_json::to_value(&self.operation).unwrap_or_default());
        request.insert("userInfo".into(), json!({"username": self.username}));
        request.insert("object".into(), self.object.clone().unwrap_or(Value::Null));
        request.insert("oldObject".into(), self.old_object.clone().unwrap_or(Value::Null));
        if self.dry_run {
            let options_kind = match self.operation {
                Operation::Create => "CreateOptions",
                Operation::Update => "UpdateOptions",
                Operation::Delete => "DeleteOptions",
                Operation::Connect => "ConnectOptions",
            };
            request.insert("dryRun".into(), json!(true));
            request.insert(
                "options".into(),
                json!({"apiVersion": "meta.k8s.io/v1", "kind": options_kind, "dryRun": ["All"]}),
            );
        }
        json!({"apiVersion": self.admission_version, "kind": "AdmissionReview", "request": request})
    }

    /// The review as a request body.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(&self.to_json()).unwrap_or_default()
    }

    /// The review as the server decodes it.
    pub fn decode(&self) -> Result<Review, DecodeError> {
        decode(&self.to_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_what_the_apiserver_sends() {
        let cs = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
                        "metadata": {"name": "web", "namespace": "ns"}});
        let body = ReviewRequest::for_object(Operation::Create, &cs).to_json();
        assert_eq!(body["apiVersion"], ADMISSION_V1);
        assert_eq!(body["kind"], "AdmissionReview");
        let r = &body["request"];
        assert_eq!(r["kind"], json!({"group": "apps.kruise.io", "version": "v1alpha1", "kind": "CloneSet"}));
        assert_eq!(r["resource"], json!({"group": "apps.kruise.io", "version": "v1alpha1", "resource": "clonesets"}));
        assert_eq!(r["requestResource"], r["resource"]);
        assert_eq!((r["name"].as_str(), r["namespace"].as_str()), (Some("web"), Some("ns")));
        assert_eq!(r["operation"], "CREATE");
        assert_eq!(r["object"], cs);
        assert_eq!(r["oldObject"], Value::Null);
        assert!(r.get("dryRun").is_none() && r.get("subResource").is_none());

        let review = ReviewRequest::for_object(Operation::Delete, &cs).decode().unwrap();
        assert_eq!(review.request.operation, Operation::Delete);
        assert_eq!((review.object, review.old_object), (None, Some(cs.clone())));

        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}});
        let body = ReviewRequest::for_object(Operation::Update, &pod)
            .old_object(pod.clone())
            .namespace("default")
            .sub_resource("status")
            .dry_run(true)
            .uid("u-2")
            .to_json();
        let r = &body["request"];
        assert_eq!(r["resource"], json!({"group": "", "version": "v1", "resource": "pods"}));
        assert_eq!(
            (r["namespace"].as_str(), r["subResource"].as_str(), r["uid"].as_str()),
            (Some("default"), Some("status"), Some("u-2"))
        );
        assert_eq!(r["options"], json!({"apiVersion": "meta.k8s.io/v1", "kind": "UpdateOptions", "dryRun": ["All"]}));
        assert_eq!(r["dryRun"], true);
        let body = ReviewRequest::for_object(Operation::Create, &cs).cluster_scoped().to_json();
        assert!(body["request"].get("namespace").is_none());
    }
}
