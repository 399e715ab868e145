//! `kubectl kruise` (issue 32 item 4): the `kruise` binary answers as the kubectl plugin
//! `kubectl-kruise` when started under that file name (kubectl runs `kubectl-kruise` from the
//! PATH for `kubectl kruise ...`; `make install` puts the link there). The commands are
//! kruise-tools' (`openkruise/kruise-tools`, `pkg/cmd/rollout`, `pkg/cmd/scaledown`) for CloneSets
//! Advanced StatefulSets and Advanced DaemonSets, printing and exiting as kubectl's rollout commands do (the name
//! printer's `cloneset.apps.kruise.io/web paused`, `Error from server (NotFound): ...` and exit 1
//! on any error), plus `plan`, our `kruise plan`, and `create ContainerRecreateRequest` (`crr`,
//! kruise-tools' `pkg/cmd/create`); `rollout` on apps/v1 kinds is kubectl's own (`native`).
//!
//! Each command is one file: its pure decisions (is the rollout complete, which patch pauses,
//! which revision undo picks) as functions with table tests, and a thin `run` doing the I/O.
//! Where we differ from kruise-tools on purpose, the file says so at the decision.

pub mod cli;
pub mod connect;
pub mod create;
pub mod history;
pub mod native;
pub mod pause;
pub mod plan;
pub mod restart;
pub mod scaledown;
pub mod status;
pub mod target;
pub mod undo;

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::Path;

use clap::Parser;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde::de::DeserializeOwned;

use crate::apis::CloneSet;
use crate::apis::daemonset::v1beta1::DaemonSet;
use crate::apis::statefulset::v1beta1::StatefulSet;
use cli::{CreateCommand, PluginCli, PluginCommand, RolloutCommand};
use target::{Target, Workload};

/// The file name kubectl looks up on the PATH for `kubectl kruise`.
pub const PLUGIN_NAME: &str = "kubectl-kruise";

/// Whether the process was started as the plugin: argv[0]'s file name is `kubectl-kruise`
/// (`.exe` on Windows), wherever it lies and whatever links led there.
pub fn invoked_as_plugin(argv0: Option<&OsStr>) -> bool {
    let Some(name) = argv0.and_then(|a| Path::new(a).file_name()).and_then(OsStr::to_str) else {
        return false;
    };
    name == PLUGIN_NAME || name.strip_suffix(".exe") == Some(PLUGIN_NAME)
}

/// Why a command failed, printed as kubectl prints it.
#[derive(Debug)]
pub enum Failure {
    /// The API server refused (`Error from server (NotFound): clonesets.apps.kruise.io "web" not found`).
    Api(Box<kube::core::Status>),
    /// Anything else (`error: ...`).
    Other(String),
}

impl Failure {
    /// kubectl's `StandardErrorMessage`, else `error: ` and the message.
    pub fn message(&self) -> String {
        match self {
            Failure::Api(s) if s.reason == "Unauthorized" => {
                format!("error: You must be logged in to the server ({})", s.message)
            }
            Failure::Api(s) if !s.reason.is_empty() => format!("Error from server ({}): {}", s.reason, s.message),
            Failure::Api(s) => format!("Error from server: {}", s.message),
            Failure::Other(m) if m.starts_with("error: ") => m.clone(),
            Failure::Other(m) => format!("error: {m}"),
        }
    }
}

impl From<kube::Error> for Failure {
    fn from(e: kube::Error) -> Self {
        match e {
            kube::Error::Api(s) => Failure::Api(s),
            other => Failure::Other(other.to_string()),
        }
    }
}

impl From<String> for Failure {
    fn from(m: String) -> Self {
        Failure::Other(m)
    }
}

/// Writes to standard output; a closed pipe (`| head`) is not an error worth a panic.
pub fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush());
}

/// Writes to standard error.
pub fn err(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(text.as_bytes()).and_then(|()| stderr.flush());
}

/// kubectl's name printer: `cloneset.apps.kruise.io/web paused`.
pub fn name_line(target: &Target, operation: &str) -> String {
    if operation.is_empty() { format!("{target}\n") } else { format!("{target} {operation}\n") }
}

/// Runs the plugin's command line (argv, argv[0] included); returns the exit code: 0 done, 1 any
/// error (kubectl's `DefaultErrorExitCode`, usage errors included), `kruise plan`'s own for `plan`.
pub async fn run(args: Vec<OsString>) -> i32 {
    let strings: Vec<String> = args.iter().skip(1).map(|a| a.to_string_lossy().into_owned()).collect();
    if native::is_native_rollout(&strings) {
        return native::run_kubectl(&strings);
    }
    let cli = match PluginCli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 1 } else { 0 };
        }
    };
    let result = match cli.command {
        PluginCommand::Rollout(r) => match r.command {
            RolloutCommand::Status(a) => status::run(&cli.kube, &a).await,
            RolloutCommand::History(a) => history::run(&cli.kube, &a).await,
            RolloutCommand::Undo(a) => undo::run(&cli.kube, &a).await,
            RolloutCommand::Pause(a) => pause::run(&cli.kube, &a, true).await,
            RolloutCommand::Resume(a) => pause::run(&cli.kube, &a, false).await,
            RolloutCommand::Restart(a) => restart::run(&cli.kube, &a).await,
        },
        PluginCommand::Scaledown(a) => scaledown::run(&cli.kube, &a).await,
        PluginCommand::Plan(a) => return plan::run(&cli.kube, &a).await,
        PluginCommand::Create(c) => match c.command {
            CreateCommand::ContainerRecreateRequest(a) => create::run(&cli.kube, &a).await,
        },
    };
    match result {
        Ok(()) => 0,
        Err(failures) => {
            for f in failures {
                err(&format!("{}\n", f.message()));
            }
            1
        }
    }
}

/// What a command returns: every failure it met (commands over several targets go on after one
/// fails, as kubectl's aggregate errors do).
pub type Outcome = Result<(), Vec<Failure>>;

/// One failure as an [`Outcome`].
pub fn fail(f: impl Into<Failure>) -> Outcome {
    Err(vec![f.into()])
}

/// Reads a namespaced object.
pub async fn get<K>(client: &kube::Client, namespace: &str, name: &str) -> Result<K, Failure>
where
    K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    Ok(Api::<K>::namespaced(client.clone(), namespace).get(name).await?)
}

/// A workload as read, typed by kind.
#[derive(Clone, Debug)]
pub enum Object {
    CloneSet(Box<CloneSet>),
    AdvancedStatefulSet(Box<StatefulSet>),
    AdvancedDaemonSet(Box<DaemonSet>),
}

impl Object {
    pub fn meta(&self) -> &kube::core::ObjectMeta {
        match self {
            Object::CloneSet(o) => &o.metadata,
            Object::AdvancedStatefulSet(o) => &o.metadata,
            Object::AdvancedDaemonSet(o) => &o.metadata,
        }
    }

    /// The workload's pod template.
    pub fn template(&self) -> &k8s_openapi::api::core::v1::PodTemplateSpec {
        match self {
            Object::CloneSet(o) => &o.spec.template,
            Object::AdvancedStatefulSet(o) => &o.spec.template,
            Object::AdvancedDaemonSet(o) => &o.spec.template,
        }
    }
}

/// Reads the target workload.
pub async fn get_target(client: &kube::Client, namespace: &str, target: &Target) -> Result<Object, Failure> {
    Ok(match target.workload {
        Workload::CloneSet => Object::CloneSet(Box::new(get(client, namespace, &target.name).await?)),
        Workload::AdvancedStatefulSet => {
            Object::AdvancedStatefulSet(Box::new(get(client, namespace, &target.name).await?))
        }
        Workload::AdvancedDaemonSet => Object::AdvancedDaemonSet(Box::new(get(client, namespace, &target.name).await?)),
    })
}

/// Sends a patch to the target workload.
pub async fn patch_target(
    client: &kube::Client,
    namespace: &str,
    target: &Target,
    patch: &Patch<serde_json::Value>,
) -> Result<(), Failure> {
    let params = PatchParams::default();
    match target.workload {
        Workload::CloneSet => {
            Api::<CloneSet>::namespaced(client.clone(), namespace).patch(&target.name, &params, patch).await?;
        }
        Workload::AdvancedStatefulSet => {
            Api::<StatefulSet>::namespaced(client.clone(), namespace).patch(&target.name, &params, patch).await?;
        }
        Workload::AdvancedDaemonSet => {
            Api::<DaemonSet>::namespaced(client.clone(), namespace).patch(&target.name, &params, patch).await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_name_from_argv0() {
        for (argv0, plugin) in [
            ("kubectl-kruise", true),
            ("/usr/local/bin/kubectl-kruise", true),
            ("./kubectl-kruise.exe", true),
            ("kruise", false),
            ("/usr/local/bin/kruise", false),
            ("kubectl-kruise-dev", false),
            ("/opt/kubectl-kruise/kruise", false),
        ] {
            assert_eq!(invoked_as_plugin(Some(OsStr::new(argv0))), plugin, "{argv0}");
        }
        assert!(!invoked_as_plugin(None));
    }

    #[test]
    fn errors_as_kubectl_prints_them() {
        let status = |reason: &str, message: &str| {
            Failure::Api(Box::new(kube::core::Status {
                reason: reason.into(),
                message: message.into(),
                ..Default::default()
            }))
        };
        assert_eq!(
            status("NotFound", r#"clonesets.apps.kruise.io "web" not found"#).message(),
            r#"Error from server (NotFound): clonesets.apps.kruise.io "web" not found"#
        );
        assert_eq!(status("", "boom").message(), "Error from server: boom");
        assert_eq!(status("Unauthorized", "no").message(), "error: You must be logged in to the server (no)");
        assert_eq!(
            Failure::Other("no last revision to roll back to".into()).message(),
            "error: no last revision to roll back to"
        );
        assert_eq!(Failure::Other("error: x".into()).message(), "error: x");
        let t = Target { workload: Workload::AdvancedStatefulSet, name: "db".into() };
        assert_eq!(name_line(&t, "paused"), "statefulset.apps.kruise.io/db paused\n");
    }
}
