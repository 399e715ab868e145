//! The command line of `kubectl-kruise` (the `kruise` binary started under that name, which is how
//! kubectl runs a plugin): kruise-tools' command names and flags (`rollout status|history|undo|
//! pause|resume|restart`, `scaledown`), our `plan`, and kubectl's connection flags
//! (`--kubeconfig`, `--context`, `--cluster`, `--user`, `-n/--namespace`), accepted anywhere on
//! the line as cobra's persistent flags are. Bool flags take `--flag=false` as pflag's do, and
//! `--timeout` takes Go durations (`90s`, `1m30s`, `0`).

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Args, Parser, Subcommand};

/// kubectl-kruise: OpenKruise's kubectl plugin (rollouts of CloneSets, Advanced StatefulSets and Advanced DaemonSets).
#[derive(Debug, Parser)]
#[command(
    name = "kubectl-kruise",
    bin_name = "kubectl kruise",
    version,
    about = "OpenKruise's kubectl plugin: rollouts of CloneSets, Advanced StatefulSets and Advanced DaemonSets, selective scale-down, kruise plan"
)]
pub struct PluginCli {
    #[command(flatten)]
    pub kube: KubeFlags,
    #[command(subcommand)]
    pub command: PluginCommand,
}

/// kubectl's connection flags.
#[derive(Clone, Debug, Default, Args)]
pub struct KubeFlags {
    /// Path to the kubeconfig file to use (default: $KUBECONFIG, then ~/.kube/config, then in-cluster).
    #[arg(long, global = true, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The name of the kubeconfig context to use.
    #[arg(long, global = true)]
    pub context: Option<String>,
    /// The name of the kubeconfig cluster to use.
    #[arg(long, global = true)]
    pub cluster: Option<String>,
    /// The name of the kubeconfig user to use.
    #[arg(long, global = true)]
    pub user: Option<String>,
    /// The namespace scope for this request (default: the context's namespace, else `default`).
    #[arg(short = 'n', long, global = true)]
    pub namespace: Option<String>,
}

/// Commands.
#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Manage the rollout of a CloneSet, an Advanced StatefulSet or an Advanced DaemonSet.
    Rollout(RolloutArgs),
    /// Scale down a CloneSet, deleting the named pods (scaleStrategy.podsToDelete).
    Scaledown(ScaledownArgs),
    /// `kruise plan`: what the controller will do next, and why (`kruise plan --help` for its flags).
    #[command(disable_help_flag = true)]
    Plan(PlanArgs),
    /// Create a resource: a ContainerRecreateRequest.
    Create(CreateArgs),
}

/// `create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    #[command(subcommand)]
    pub command: CreateCommand,
}

/// `create` subcommands.
#[derive(Debug, Subcommand)]
pub enum CreateCommand {
    /// Create a ContainerRecreateRequest: recreate containers of a pod in place.
    #[command(name = "ContainerRecreateRequest", visible_aliases = ["crr", "containerrecreaterequest"])]
    ContainerRecreateRequest(CreateCrrArgs),
}

/// `--dry-run`: kubectl's strategies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum DryRun {
    /// Create it.
    #[default]
    None,
    /// Print what would be created, send nothing.
    Client,
    /// Send it with dryRun=All.
    Server,
}

/// `create ContainerRecreateRequest NAME --pod P [--containers a,b]`.
#[derive(Debug, Args)]
pub struct CreateCrrArgs {
    /// Name of the request.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// The pod whose containers are recreated.
    #[arg(short = 'p', long, default_value = "")]
    pub pod: String,
    /// The containers to recreate, comma-separated (default: every container of the pod).
    #[arg(long, value_delimiter = ',')]
    pub containers: Vec<String>,
    /// Seconds the pod is marked not ready before the preStop hook and the stop.
    #[arg(short = 'u', long = "unreadyGracePeriodSeconds", default_value_t = 3, allow_negative_numbers = true)]
    pub unready_grace_period_seconds: i64,
    /// Seconds a new container must be started and ready to count as recreated.
    #[arg(short = 'm', long = "minStartedSeconds", default_value_t = 3, allow_negative_numbers = true)]
    pub min_started_seconds: i32,
    /// none, client or server (`--dry-run` alone is client).
    #[arg(long = "dry-run", value_enum, default_value_t = DryRun::None, num_args = 0..=1, default_missing_value = "client")]
    pub dry_run: DryRun,
}

/// `rollout`.
#[derive(Debug, Args)]
pub struct RolloutArgs {
    #[command(subcommand)]
    pub command: RolloutCommand,
}

/// `rollout` subcommands.
#[derive(Debug, Subcommand)]
pub enum RolloutCommand {
    /// Show the status of the rollout (watching until it is done, unless --watch=false).
    Status(StatusArgs),
    /// View the rollout history (the workload's ControllerRevisions).
    History(HistoryArgs),
    /// Roll the pod template back to a previous revision.
    Undo(UndoArgs),
    /// Mark the workload as paused: its controller stops updating pods.
    Pause(TargetArgs),
    /// Resume a paused workload.
    Resume(TargetArgs),
    /// Restart the workload's pods (a new template annotation `kubectl.kubernetes.io/restartedAt`).
    Restart(TargetArgs),
}

/// `TYPE/NAME...` or `TYPE NAME...`.
#[derive(Debug, Args)]
pub struct TargetArgs {
    /// cloneset/NAME, asts/NAME (statefulset.apps.kruise.io/NAME), ads/NAME (daemonset.apps.kruise.io/NAME), or TYPE NAME.
    #[arg(value_name = "TYPE/NAME")]
    pub resources: Vec<String>,
}

/// `rollout status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// cloneset/NAME, asts/NAME or ads/NAME.
    #[arg(value_name = "TYPE/NAME")]
    pub resources: Vec<String>,
    /// Watch the status of the rollout until it's done.
    #[arg(short = 'w', long, action = ArgAction::Set, num_args = 0..=1, require_equals = true,
          default_value_t = true, default_missing_value = "true")]
    pub watch: bool,
    /// The length of time to wait before ending watch, zero means never (e.g. 1s, 2m, 3h).
    #[arg(long, default_value = "0s", value_parser = parse_go_duration)]
    pub timeout: Duration,
}

/// `rollout history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// cloneset/NAME, asts/NAME or ads/NAME.
    #[arg(value_name = "TYPE/NAME")]
    pub resources: Vec<String>,
    /// See the details, including the pod template, of the revision specified.
    #[arg(long, default_value_t = 0)]
    pub revision: i64,
}

/// `rollout undo`.
#[derive(Debug, Args)]
pub struct UndoArgs {
    /// cloneset/NAME, asts/NAME or ads/NAME.
    #[arg(value_name = "TYPE/NAME")]
    pub resources: Vec<String>,
    /// The revision to rollback to. Default to 0 (last revision).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub to_revision: i64,
}

/// `scaledown`.
#[derive(Debug, Args)]
pub struct ScaledownArgs {
    /// cloneset/NAME or cloneset NAME.
    #[arg(value_name = "TYPE/NAME")]
    pub resources: Vec<String>,
    /// Name of the pods to delete, comma-separated.
    #[arg(long, default_value = "")]
    pub pods: String,
}

/// `plan`: everything after it goes to `kruise plan` (with `-n` and the kubeconfig flags applied).
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// `kruise plan` arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<String>,
}

/// Go's `time.ParseDuration`: a sequence of decimal numbers with units (`ns`, `us`, `µs`, `ms`,
/// `s`, `m`, `h`), e.g. `300ms`, `1.5h`, `2h45m`; a bare `0` is allowed, other bare numbers are not.
pub fn parse_go_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration {s:?}");
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() || s.starts_with('-') {
        return Err(bad());
    }
    let mut rest = s.strip_prefix('+').unwrap_or(s);
    let mut total = 0f64;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let (number, tail) = rest.split_at(digits);
        if number.is_empty() || number == "." {
            return Err(bad());
        }
        let value: f64 = number.parse().map_err(|_| bad())?;
        let unit_len = tail.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_len);
        let seconds = match unit {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "" => return Err(format!("missing unit in duration {s:?}")),
            _ => return Err(format!("unknown unit {unit:?} in duration {s:?}")),
        };
        total += value * seconds;
        rest = tail;
    }
    if !total.is_finite() || total > 9.2e9 {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<PluginCli, clap::Error> {
        PluginCli::try_parse_from(std::iter::once("kubectl-kruise").chain(args.iter().copied()))
    }

    #[test]
    fn go_durations() {
        let table: &[(&str, Option<f64>)] = &[
            ("0", Some(0.0)),
            ("0s", Some(0.0)),
            ("90s", Some(90.0)),
            ("1m30s", Some(90.0)),
            ("1.5h", Some(5400.0)),
            ("300ms", Some(0.3)),
            ("2h45m", Some(9900.0)),
            ("10", None),
            ("", None),
            ("-1s", None),
            ("1d", None),
            ("s", None),
        ];
        for (s, want) in table {
            match (parse_go_duration(s), want) {
                (Ok(d), Some(w)) => assert!((d.as_secs_f64() - w).abs() < 1e-9, "{s}: {d:?}"),
                (Err(_), None) => {}
                (got, want) => panic!("{s}: {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn flags_as_kubectl_takes_them() {
        let cli =
            parse(&["rollout", "status", "cloneset/web", "-n", "prod", "--watch=false", "--timeout", "1m"]).unwrap();
        assert_eq!(cli.kube.namespace.as_deref(), Some("prod"));
        let PluginCommand::Rollout(RolloutArgs { command: RolloutCommand::Status(s) }) = cli.command else {
            panic!("status")
        };
        assert_eq!(
            (s.resources.as_slice(), s.watch, s.timeout),
            (&["cloneset/web".to_string()][..], false, Duration::from_secs(60))
        );

        let cli =
            parse(&["--kubeconfig", "/k", "--context", "c", "rollout", "status", "-w", "cloneset", "web"]).unwrap();
        assert_eq!((cli.kube.kubeconfig, cli.kube.context.as_deref()), (Some(PathBuf::from("/k")), Some("c")));
        let PluginCommand::Rollout(RolloutArgs { command: RolloutCommand::Status(s) }) = cli.command else {
            panic!("status")
        };
        assert!(s.watch && s.timeout.is_zero());

        let cli = parse(&["rollout", "undo", "asts/db", "--to-revision=2"]).unwrap();
        let PluginCommand::Rollout(RolloutArgs { command: RolloutCommand::Undo(u) }) = cli.command else {
            panic!("undo")
        };
        assert_eq!(u.to_revision, 2);

        let cli = parse(&["scaledown", "cloneset/web", "--pods", "web-a,web-b", "-n", "x"]).unwrap();
        let PluginCommand::Scaledown(s) = cli.command else { panic!("scaledown") };
        assert_eq!(s.pods, "web-a,web-b");

        // plan: everything after it is its own (connection flags among them are taken out by
        // `plan::take_kube_flags`); before it they are the plugin's.
        let cli = parse(&["-n", "ns", "plan", "cloneset", "web", "-o", "json", "--context", "c"]).unwrap();
        assert_eq!((cli.kube.context.as_deref(), cli.kube.namespace.as_deref()), (None, Some("ns")));
        let PluginCommand::Plan(p) = cli.command else { panic!("plan") };
        assert_eq!(p.args, ["cloneset", "web", "-o", "json", "--context", "c"]);
        let cli = parse(&["plan", "--help"]).unwrap();
        let PluginCommand::Plan(p) = cli.command else { panic!("plan") };
        assert_eq!(p.args, ["--help"]);

        // create ContainerRecreateRequest (and its short name crr).
        for kind in ["ContainerRecreateRequest", "crr"] {
            let cli = parse(&["create", kind, "r1", "--pod", "web", "--containers", "a,b", "-n", "ns"]).unwrap();
            let PluginCommand::Create(CreateArgs { command: CreateCommand::ContainerRecreateRequest(c) }) = cli.command
            else {
                panic!("create")
            };
            assert_eq!(
                (c.name.as_str(), c.pod.as_str(), c.containers.clone()),
                ("r1", "web", vec!["a".into(), "b".into()])
            );
            assert_eq!((c.unready_grace_period_seconds, c.min_started_seconds, c.dry_run), (3, 3, DryRun::None));
            assert_eq!(cli.kube.namespace.as_deref(), Some("ns"));
        }
        let cli = parse(&["create", "crr", "r", "-p", "web", "-u", "0", "-m", "7", "--dry-run"]).unwrap();
        let PluginCommand::Create(CreateArgs { command: CreateCommand::ContainerRecreateRequest(c) }) = cli.command
        else {
            panic!("create")
        };
        assert_eq!((c.unready_grace_period_seconds, c.min_started_seconds, c.dry_run), (0, 7, DryRun::Client));
        assert!(parse(&["create", "crr"]).is_err(), "NAME is required");

        assert!(parse(&["rollout", "status", "cloneset/web", "--bogus"]).is_err());
        assert!(parse(&["rollout", "status", "cloneset/web", "--timeout", "10"]).is_err());
    }
}
