//! `create ContainerRecreateRequest NAME --pod P [--containers a,b]` (alias `crr`): kruise-tools'
//! `kubectl kruise create ContainerRecreateRequest` (`pkg/cmd/create/create_crr.go`): a request
//! with kruise-tools' defaults (`failurePolicy: Fail`, `unreadyGracePeriodSeconds` 3,
//! `minStartedSeconds` 3, `activeDeadlineSeconds` 300, `ttlSecondsAfterFinished` 1800) for the
//! named containers of the pod, every container of it when none is named; output as kubectl's
//! name printer (`containerrecreaterequest.apps.kruise.io/NAME created`).
//!
//! Differences from kruise-tools, on purpose: `--containers`, `--unreadyGracePeriodSeconds` and
//! `--minStartedSeconds` are honoured (kruise-tools never reads them: it always recreates every
//! container with its defaults); only container names are sent (kruise-tools copies each
//! container's preStop and ports, which kruise's webhook refuses as read-only fields, and
//! dereferences a missing preStop); a missing pod names the pod (kruise-tools names the request),
//! an unknown container is named; names are trimmed and deduplicated.

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::PostParams;
use serde_json::{Value, json};

use super::cli::{CreateCrrArgs, DryRun, KubeFlags};
use super::{Failure, Outcome, connect, fail, out};
use crate::apis::containerrecreaterequest::ContainerRecreateRequest;

/// kruise-tools' `activeDeadlineSeconds`.
pub const ACTIVE_DEADLINE_SECONDS: i64 = 300;
/// kruise-tools' `ttlSecondsAfterFinished`.
pub const TTL_SECONDS_AFTER_FINISHED: i32 = 1800;

/// The request to create: `name` in `namespace` for the `containers` (comma-separated, all of
/// the pod's when empty) of `pod`.
pub fn request(args: &CreateCrrArgs, namespace: &str, pod: &Pod) -> Result<Value, String> {
    let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
    let all: Vec<&str> = pod.spec.iter().flat_map(|s| &s.containers).map(|c| c.name.as_str()).collect();
    let mut names: Vec<&str> = Vec::new();
    for n in args.containers.iter().flat_map(|c| c.split(',')).map(str::trim) {
        if n.is_empty() {
            return Err(format!("empty container name in --containers {:?}", args.containers.join(",")));
        }
        if !all.contains(&n) {
            return Err(format!("container {n} not found in pod {pod_name} (containers: {})", all.join(", ")));
        }
        if !names.contains(&n) {
            names.push(n);
        }
    }
    if names.is_empty() {
        names = all;
    }
    if names.is_empty() {
        return Err(format!("pod {pod_name} has no containers"));
    }
    if args.unready_grace_period_seconds < 0 {
        return Err("--unreadyGracePeriodSeconds must be non-negative".into());
    }
    if args.min_started_seconds < 0 {
        return Err("--minStartedSeconds must be non-negative".into());
    }
    Ok(json!({
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "ContainerRecreateRequest",
        "metadata": {"name": args.name, "namespace": namespace},
        "spec": {
            "podName": pod_name,
            "containers": names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>(),
            "strategy": {
                "failurePolicy": "Fail",
                "unreadyGracePeriodSeconds": args.unready_grace_period_seconds,
                "minStartedSeconds": args.min_started_seconds,
            },
            "activeDeadlineSeconds": ACTIVE_DEADLINE_SECONDS,
            "ttlSecondsAfterFinished": TTL_SECONDS_AFTER_FINISHED,
        }
    }))
}

/// `create ContainerRecreateRequest NAME --pod P`.
pub async fn run(flags: &KubeFlags, args: &CreateCrrArgs) -> Outcome {
    if args.name.trim().is_empty() {
        return fail("NAME is required".to_string());
    }
    if args.pod.trim().is_empty() {
        return fail("--pod is required: the pod whose containers are recreated".to_string());
    }
    let (client, ns) = connect::connect(flags).await.map_err(|e| vec![e])?;
    let go = async {
        let pod = match Api::<Pod>::namespaced(client.clone(), &ns).get_opt(args.pod.trim()).await? {
            Some(p) => p,
            None => return Err(Failure::Other(format!("pod {} in namespace {ns} not exist", args.pod.trim()))),
        };
        let object = request(args, &ns, &pod)?;
        let suffix = match args.dry_run {
            DryRun::Client => {
                out(&format!("containerrecreaterequest.apps.kruise.io/{} created (dry run)\n", args.name));
                return Ok(());
            }
            DryRun::Server => " (server dry run)",
            DryRun::None => "",
        };
        let crr: ContainerRecreateRequest =
            serde_json::from_value(object).map_err(|e| Failure::Other(format!("cannot build the request: {e}")))?;
        let pp =
            PostParams { dry_run: args.dry_run == DryRun::Server, field_manager: Some("kubectl kruise-create".into()) };
        let created = Api::<ContainerRecreateRequest>::namespaced(client.clone(), &ns)
            .create(&pp, &crr)
            .await
            .map_err(|e| match Failure::from(e) {
                Failure::Api(s) => Failure::Other(format!("failed to create crr: {}", s.message)),
                other => other,
            })?;
        let name = created.metadata.name.unwrap_or_else(|| args.name.clone());
        out(&format!("containerrecreaterequest.apps.kruise.io/{name} created{suffix}\n"));
        Ok::<(), Failure>(())
    };
    go.await.map_err(|e| vec![e])
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn pod() -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "web"}, "spec": {"containers": [
            {"name": "a", "ports": [{"containerPort": 80}], "lifecycle": {"postStart": {"exec": {"command": ["x"]}}}},
            {"name": "b"}, {"name": "c"}]}}))
        .unwrap()
    }

    fn args(containers: &[&str]) -> CreateCrrArgs {
        CreateCrrArgs {
            name: "r".into(),
            pod: "web".into(),
            containers: containers.iter().map(|s| (*s).to_string()).collect(),
            unready_grace_period_seconds: 3,
            min_started_seconds: 3,
            dry_run: DryRun::None,
        }
    }

    #[test]
    fn the_request_names_the_containers_with_kruise_tools_defaults() {
        let r = request(&args(&["b, a", "b"]), "ns", &pod()).unwrap();
        assert_eq!(
            r,
            json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "ContainerRecreateRequest",
                "metadata": {"name": "r", "namespace": "ns"},
                "spec": {"podName": "web", "containers": [{"name": "b"}, {"name": "a"}],
                         "strategy": {"failurePolicy": "Fail", "unreadyGracePeriodSeconds": 3, "minStartedSeconds": 3},
                         "activeDeadlineSeconds": 300, "ttlSecondsAfterFinished": 1800}})
        );
        // The typed request decodes it (what is sent).
        let typed: ContainerRecreateRequest = serde_json::from_value(r).unwrap();
        assert_eq!(typed.spec.containers.len(), 2);
        // No container named: all of the pod's, names only.
        let all = request(&args(&[]), "ns", &pod()).unwrap();
        assert_eq!(all["spec"]["containers"], json!([{"name": "a"}, {"name": "b"}, {"name": "c"}]));
        let mut custom = args(&["c"]);
        custom.unready_grace_period_seconds = 0;
        custom.min_started_seconds = 10;
        let r = request(&custom, "ns", &pod()).unwrap();
        assert_eq!(r["spec"]["strategy"]["unreadyGracePeriodSeconds"], 0);
        assert_eq!(r["spec"]["strategy"]["minStartedSeconds"], 10);
    }

    #[test]
    fn bad_requests_are_refused_with_a_reason() {
        for (a, why) in [
            (args(&["a,nope"]), "container nope not found in pod web (containers: a, b, c)"),
            (args(&["a,,b"]), "empty container name"),
        ] {
            assert!(request(&a, "ns", &pod()).unwrap_err().contains(why), "{why}");
        }
        let mut negative = args(&[]);
        negative.unready_grace_period_seconds = -1;
        assert!(request(&negative, "ns", &pod()).unwrap_err().contains("non-negative"));
        let empty: Pod =
            serde_json::from_value(json!({"metadata": {"name": "e"}, "spec": {"containers": []}})).unwrap();
        assert_eq!(request(&args(&[]), "ns", &empty).unwrap_err(), "pod e has no containers");
    }
}
