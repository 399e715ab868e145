//! Command line: `kruise serve | daemon | check | plan | certs | manifests`. Every `serve` flag has an
//! environment fallback (`KRUISE_*`) so the Deployment can be configured either way.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::core::features::FeatureGates;

/// kruise: OpenKruise's admission webhook and workload controllers, in Rust.
#[derive(Debug, Parser)]
#[command(name = "kruise", version, about)]
pub struct Cli {
    /// Log format.
    #[arg(long, env = "KRUISE_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, global = true)]
    pub log_format: LogFormat,
    /// Log filter (tracing `EnvFilter` syntax, e.g. `info` or `kruise=debug`).
    #[arg(long, env = "KRUISE_LOG", default_value = "info", global = true)]
    pub log: String,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Log line format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the admission webhooks over HTTPS.
    Serve(Box<ServeArgs>),
    /// The node agent (kruise-daemon, one per node): pull the images of this node's NodeImage
    /// through the container runtime's CRI and report each tag in its status.
    Daemon(Box<DaemonArgs>),
    /// Create (or keep, while still valid) a CA and a serving certificate.
    Certs(CertsArgs),
    /// Regenerate deploy/crds, webhook-config and the Helm chart's generated files from the sources.
    Manifests(ManifestsArgs),
    /// Run manifests through the webhooks offline (for CI): exit 0 admitted, 1 denied, 2 bad input, 3 internal error.
    Check(CheckArgs),
    /// Show what the CloneSet, Advanced StatefulSet, Advanced DaemonSet and SidecarSet controllers will do next, and why, without writing anything.
    Plan(PlanArgs),
}

/// `kruise plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// Manifests with the CloneSets or Advanced StatefulSets and their Pods (optionally
    /// ControllerRevisions, PVCs, Nodes), e.g. `kubectl get cloneset,pods,controllerrevisions,pvc -o
    /// yaml` or `kubectl get statefulsets.apps.kruise.io,pods,controllerrevisions,pvc -o yaml`, or
    /// SidecarSets (v1alpha1 or v1beta1) with Pods, Namespaces and the manager namespace's
    /// ControllerRevisions, or Advanced DaemonSets with their Pods, ControllerRevisions and the
    /// Nodes, or UnitedDeployments with their subset workloads, Pods and ControllerRevisions;
    /// files, directories or `-`.
    #[arg(short = 'f', long = "filename", num_args = 1..)]
    pub files: Vec<String>,
    /// `cloneset NAME`, `statefulset NAME` (kruise's Advanced StatefulSet; also `asts`),
    /// `daemonset NAME` (kruise's Advanced DaemonSet; also `ads`), `uniteddeployment NAME` (also
    /// `ud`) or `sidecarset NAME` (or `KIND/NAME`): read them from the cluster (KUBECONFIG or
    /// in-cluster).
    #[arg(num_args = 0..=2, value_names = ["KIND", "NAME"])]
    pub target: Vec<String>,
    /// Namespace (with `KIND NAME`; SidecarSets are cluster-scoped).
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// The manager namespace, where SidecarSet revisions live (as `serve --manager-namespace`).
    #[arg(long, default_value = crate::config::DEFAULT_NAMESPACE)]
    pub manager_namespace: String,
    /// Feature gates, as for `serve`.
    #[arg(long, default_value = "", value_parser = parse_gates)]
    pub feature_gates: FeatureGates,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = PlanOutput::Text)]
    pub output: PlanOutput,
    /// Plan as of this time (RFC 3339; default now): readiness for minReadySeconds, grace periods
    /// and progress deadlines are judged against it.
    #[arg(long, value_parser = parse_time)]
    pub now: Option<k8s_openapi::jiff::Timestamp>,
}

/// `kruise plan -o`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PlanOutput {
    /// One line per action, then why the rollout waits.
    Text,
    /// One JSON object per CloneSet, StatefulSet or SidecarSet.
    Json,
}

fn parse_time(s: &str) -> Result<k8s_openapi::jiff::Timestamp, String> {
    s.parse().map_err(|e| format!("invalid time {s:?} (use RFC 3339, e.g. 2024-01-01T00:00:00Z): {e}"))
}

/// `kruise check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Files or directories of manifests (`.yaml`, `.yml`, `.json`, recursively), or `-` for stdin.
    #[arg(short = 'f', long = "filename", required = true, num_args = 1..)]
    pub files: Vec<String>,
    /// Previous versions: paths, or `git:REV` to read the same paths at a git revision. Objects found
    /// there are checked as UPDATEs; objects only there as DELETEs.
    #[arg(long, num_args = 1..)]
    pub old: Vec<String>,
    /// More manifests for the cluster view (SidecarSets, Namespaces, Pods, ControllerRevisions).
    #[arg(long)]
    pub objects_dir: Option<PathBuf>,
    /// Namespace of namespaced objects that have none.
    #[arg(short = 'n', long, default_value = "default")]
    pub namespace: String,
    /// Feature gates, as the server's.
    #[arg(long, default_value = "", value_parser = parse_gates, long_help = crate::core::features::help())]
    pub feature_gates: FeatureGates,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = CheckOutput::Text)]
    pub output: CheckOutput,
    /// Write every admitted (mutated) object into this directory.
    #[arg(long)]
    pub mutated_out: Option<PathBuf>,
    /// Exit with this code when there are warnings (and nothing worse).
    #[arg(long)]
    pub warn_exit_code: Option<i32>,
}

/// `kruise check` output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CheckOutput {
    /// One line per object.
    Text,
    /// A JSON report.
    Json,
    /// JUnit XML, a test suite per file.
    Junit,
}

/// `kruise serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// HTTPS listen address.
    #[arg(long, env = "KRUISE_ADDR", default_value = "0.0.0.0:9876")]
    pub addr: SocketAddr,
    /// Directory holding tls.crt and tls.key (re-read when they change).
    #[arg(long, env = "KRUISE_CERT_DIR", default_value = "certs")]
    pub cert_dir: PathBuf,
    /// Plain-HTTP address of /healthz, /readyz and /metrics.
    #[arg(long, env = "KRUISE_ADMIN_ADDR", default_value = "0.0.0.0:8000")]
    pub admin_addr: SocketAddr,
    /// Feature gates, `Name=bool,...`, with kruise's names and defaults.
    #[arg(
        long,
        env = "KRUISE_FEATURE_GATES",
        default_value = "",
        value_parser = parse_gates,
        long_help = crate::core::features::help()
    )]
    pub feature_gates: FeatureGates,
    /// Run without a cluster: other objects come from --objects-dir.
    #[arg(long, env = "KRUISE_STANDALONE")]
    pub standalone: bool,
    /// With --standalone: manifests (SidecarSets, Namespaces, Pods, ControllerRevisions) forming
    /// the cluster view, reloaded when they change.
    #[arg(long, env = "KRUISE_OBJECTS_DIR", requires = "standalone")]
    pub objects_dir: Option<PathBuf>,
    /// Offer HTTP/2 (off: the apiserver speaks HTTP/1.1 to webhooks).
    #[arg(long, env = "KRUISE_ENABLE_HTTP2")]
    pub enable_http2: bool,
    /// How often certificate files are re-read (e.g. 2s, 500ms).
    #[arg(long, env = "KRUISE_CERT_RELOAD_INTERVAL", default_value = "2s", value_parser = parse_duration)]
    pub cert_reload_interval: Duration,
    /// Time allowed to read a request once it started.
    #[arg(long, env = "KRUISE_HEADER_READ_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub header_read_timeout: Duration,
    /// Time an idle keep-alive connection is kept (keep above the apiserver's 90s).
    #[arg(long, env = "KRUISE_IDLE_TIMEOUT", default_value = "120s", value_parser = parse_duration)]
    pub idle_timeout: Duration,
    /// After SIGTERM: time to keep serving while /readyz is false.
    #[arg(long, env = "KRUISE_SHUTDOWN_DELAY", default_value = "5s", value_parser = parse_duration)]
    pub shutdown_delay: Duration,
    /// After the delay: time in-flight requests get to finish.
    #[arg(long, env = "KRUISE_SHUTDOWN_TIMEOUT", default_value = "20s", value_parser = parse_duration)]
    pub shutdown_timeout: Duration,
    /// Where the serving certificate comes from in a cluster: `managed` (kruise creates, renews and
    /// rotates Secret --webhook-secret and publishes caBundle), `external` (cert-manager writes the
    /// Secret and injects caBundle; kruise only reads it), or `files` (--cert-dir, re-read when it
    /// changes; caBundle is yours to set). `--standalone` always uses files. Default: managed, or
    /// external with kruise's `EnableExternalCerts` feature gate on.
    #[arg(long, env = "KRUISE_CERT_MODE", value_enum)]
    pub cert_mode: Option<CertMode>,
    /// The certificate Secret in the manager namespace.
    #[arg(long, default_value = crate::certs::SECRET_NAME)]
    pub webhook_secret: String,
    /// The webhook Service in the manager namespace (the certificate names `<service>.<namespace>.svc`).
    #[arg(long, default_value = crate::certs::SERVICE_NAME)]
    pub webhook_service: String,
    /// The Service of the CRDs' conversion webhook in the manager namespace (with
    /// `publishNotReadyAddresses`, see deploy/service.yaml); a managed certificate names it too.
    #[arg(long, default_value = crate::certs::CONVERSION_SERVICE_NAME)]
    pub conversion_service: String,
    /// Extra DNS name or IP address of the managed serving certificate (repeatable).
    #[arg(long = "webhook-host")]
    pub webhook_hosts: Vec<String>,
    /// Lifetime of a managed CA (rotated with a third left, or when a new serving certificate
    /// would outlive it): at least twice --cert-lifetime.
    #[arg(long, default_value = "87600h", value_parser = parse_duration)]
    pub ca_lifetime: Duration,
    /// Lifetime of a managed serving certificate (renewed with a third left): that third must
    /// hold twice the longest wait for a leader, 2 × (--leader-lease-duration +
    /// --leader-retry-period + 2 × --cert-check-interval), or `serve` refuses to start.
    #[arg(long, default_value = "8760h", value_parser = parse_duration)]
    pub cert_lifetime: Duration,
    /// How often certificates are checked (leader) and reported and self-checked (every replica).
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub cert_check_interval: Duration,
    /// The manager namespace: SidecarSet revisions, the certificate Secret, the webhook Service
    /// and the leader Lease live there. Kruise reads it from `POD_NAMESPACE` only; its
    /// `--namespace` is the controllers' scope (below).
    #[arg(long, env = "POD_NAMESPACE", default_value = crate::config::DEFAULT_NAMESPACE)]
    pub manager_namespace: String,
    /// Restricts the controllers to objects of this namespace (kruise's `--namespace`, which
    /// "restricts the manager's cache to watch objects in the desired namespace"); all
    /// namespaces when empty. Cluster-scoped objects are still watched.
    #[arg(long = "namespace", default_value = "")]
    pub scope: String,
    /// Objects the CloneSet controller reconciles at the same time (kruise's `--cloneset-workers`).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
    pub cloneset_workers: u16,
    /// Advanced StatefulSets reconciled at the same time (kruise's `--statefulset-workers`).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
    pub statefulset_workers: u16,
    /// Requests per second the Kubernetes client sends at most, on average (kruise's
    /// `--rest-config-qps`, client-go's token bucket); 0: no client-side limit.
    #[arg(long, default_value_t = 30)]
    pub rest_config_qps: u32,
    /// Requests the Kubernetes client may send at once above the average (kruise's
    /// `--rest-config-burst`: the token bucket's size; at least 1).
    #[arg(long, default_value_t = 50)]
    pub rest_config_burst: u32,
    /// Kubeconfig to reach the cluster (default: $KUBECONFIG, ~/.kube/config, then the in-cluster
    /// service account).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Elect a leader among replicas for everything that writes (every replica serves admission).
    #[arg(long, env = "KRUISE_LEADER_ELECT", default_value_t = true, action = clap::ArgAction::Set)]
    pub leader_elect: bool,
    /// This replica's identity in the election (default: $POD_NAME or the hostname, plus a
    /// random suffix).
    #[arg(long)]
    pub leader_identity: Option<String>,
    /// How long a leader's lease stays valid without renewal.
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    pub leader_lease_duration: Duration,
    /// How long the leader keeps leading while renewals fail.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub leader_renew_deadline: Duration,
    /// How often candidates try to acquire or renew the lease.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub leader_retry_period: Duration,
}

/// Where `kruise serve` gets its serving certificate in a cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CertMode {
    /// Secret and caBundle managed by kruise.
    Managed,
    /// Secret and caBundle managed by someone else (cert-manager); read and verified only.
    External,
    /// Files of --cert-dir.
    Files,
}

impl CertMode {
    /// The mode `kruise serve` uses: the one asked for, else `external` with kruise's
    /// `EnableExternalCerts` gate on (kruise then only reads the Secret and checks caBundle), else
    /// `managed`. Asking for `managed` with the gate on is a contradiction, refused.
    pub fn effective(asked: Option<CertMode>, external_certs_gate: bool) -> Result<CertMode, String> {
        match (asked, external_certs_gate) {
            (Some(CertMode::Managed), true) => Err("--cert-mode=managed contradicts the feature gate \
                 EnableExternalCerts=true (kruise then never writes the certificate): drop one of them"
                .to_string()),
            (Some(mode), _) => Ok(mode),
            (None, true) => Ok(CertMode::External),
            (None, false) => Ok(CertMode::Managed),
        }
    }
}

/// `kruise daemon` (kruise's `kruise-daemon` flags where it has them: `--addr`,
/// `--max-workers-for-pull-image`, `--rest-config-qps`/`--rest-config-burst`).
#[derive(Debug, Args)]
pub struct DaemonArgs {
    /// This node's name: the NodeImage the daemon watches (kruise reads `NODE_NAME` only).
    #[arg(long, env = "NODE_NAME")]
    pub node_name: String,
    /// The container runtime's CRI endpoint (`unix:///run/containerd/containerd.sock` or a path);
    /// when given, only it is tried. Otherwise the kubelet's configured endpoint, then the
    /// well-known sockets (containerd, CRI-O, cri-dockerd, k3s).
    #[arg(long, env = "KRUISE_RUNTIME_ENDPOINT")]
    pub runtime_endpoint: Option<String>,
    /// The kubelet's configuration file, read for `containerRuntimeEndpoint`.
    #[arg(long, default_value = "/var/lib/kubelet/config.yaml")]
    pub kubelet_config: PathBuf,
    /// Pulls running at once across all images; 0 or less: no limit (kruise's
    /// `--max-workers-for-pull-image`, default -1).
    #[arg(long, alias = "max-workers-for-pull-image", default_value_t = -1, allow_negative_numbers = true)]
    pub max_concurrent_pulls: i32,
    /// Plain-HTTP address of /healthz, /readyz and /metrics (kruise-daemon's `--addr`).
    #[arg(long, alias = "addr", env = "KRUISE_ADMIN_ADDR", default_value = "0.0.0.0:10221")]
    pub admin_addr: SocketAddr,
    /// The fewest seconds between two status writes of the NodeImage (reports in between are
    /// coalesced into the next write).
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub status_write_interval: Duration,
    /// Requests per second to the API server on average; 0: no limit.
    #[arg(long, default_value_t = 5)]
    pub rest_config_qps: u32,
    /// Requests at once above the average.
    #[arg(long, default_value_t = 10)]
    pub rest_config_burst: u32,
    /// Kubeconfig (default: $KUBECONFIG, ~/.kube/config, then the in-cluster service account).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// The kubelet's `CredentialProviderConfig` (a file, or a directory of them): its plugins
    /// give credentials for the images they match, after the pull secrets'. Not there: no
    /// plugins (kruise-daemon's flag and default).
    #[arg(long, default_value = "/kruise/CredentialProviderPlugin.yaml")]
    pub plugin_config_file: PathBuf,
    /// Where the plugins' executables are (kruise-daemon's flag and default).
    #[arg(long, default_value = "/kruise/plugins")]
    pub plugin_bin_dir: PathBuf,
    /// Feature gates, as for `serve` (kruise-daemon reads `DaemonWatchingPod` and
    /// `InPlaceUpdateEnvFromMetadata`).
    #[arg(long, env = "KRUISE_FEATURE_GATES", default_value = "", value_parser = parse_gates)]
    pub feature_gates: FeatureGates,
}

/// `kruise certs`.
#[derive(Debug, Args)]
pub struct CertsArgs {
    /// Output directory.
    #[arg(long, default_value = "certs")]
    pub out: PathBuf,
    /// Service name of the webhook.
    #[arg(long, default_value = crate::certs::SERVICE_NAME)]
    pub service: String,
    /// Service name of the CRDs' conversion webhook.
    #[arg(long, default_value = crate::certs::CONVERSION_SERVICE_NAME)]
    pub conversion_service: String,
    /// Namespace of the service.
    #[arg(long, default_value = "kruise-system")]
    pub namespace: String,
    /// Extra DNS name or IP address for the certificate (repeatable).
    #[arg(long = "host")]
    pub hosts: Vec<String>,
}

/// `kruise manifests`.
#[derive(Debug, Args)]
pub struct ManifestsArgs {
    /// Repository root to write into.
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
    /// Do not write: fail when a committed file is stale.
    #[arg(long)]
    pub check: bool,
}

fn parse_gates(s: &str) -> Result<FeatureGates, String> {
    FeatureGates::parse(s).map_err(|e| e.to_string())
}

/// Parses `500ms`, `2s`, `1m` or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (number, unit) = match s.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let value: f64 =
        number.trim().parse().map_err(|_| format!("invalid duration {s:?}: use e.g. 500ms, 2s, 1m or 24h"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => return Err(format!("invalid duration unit in {s:?}: use ms, s, m or h")),
    };
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(format!("invalid duration {s:?}: must be a non-negative number"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("8760h"), Ok(Duration::from_secs(365 * 24 * 3600)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert!(parse_duration("abc").is_err());
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("1d").is_err());
    }

    #[test]
    fn kruise_process_flags() {
        let serve = |args: &[&str]| {
            let cli = Cli::try_parse_from([&["kruise", "serve"], args].concat())?;
            let Command::Serve(args) = cli.command else { panic!("serve") };
            Ok::<_, clap::Error>(args)
        };
        // kruise's defaults: every namespace, 3 workers, 30 QPS with bursts of 50.
        let defaults = serve(&[]).unwrap();
        assert_eq!(defaults.scope, "");
        assert_eq!((defaults.cloneset_workers, defaults.rest_config_qps, defaults.rest_config_burst), (3, 30, 50));
        assert_eq!(defaults.statefulset_workers, 3);
        assert_eq!(serve(&["--statefulset-workers", "5"]).unwrap().statefulset_workers, 5);
        assert!(serve(&["--statefulset-workers", "0"]).is_err());
        let args = serve(&[
            "--namespace",
            "team-a",
            "--manager-namespace",
            "kruise",
            "--cloneset-workers",
            "8",
            "--rest-config-qps",
            "100",
            "--rest-config-burst=200",
        ])
        .unwrap();
        assert_eq!((args.scope.as_str(), args.manager_namespace.as_str()), ("team-a", "kruise"));
        assert_eq!((args.cloneset_workers, args.rest_config_qps, args.rest_config_burst), (8, 100, 200));
        // No worker would reconcile anything (and kube-runtime reads 0 as "no limit").
        assert!(serve(&["--cloneset-workers", "0"]).is_err());
        assert!(serve(&["--rest-config-qps", "-1"]).is_err());
    }

    #[test]
    fn daemon_flags() {
        let daemon = |args: &[&str]| {
            let cli = Cli::try_parse_from([&["kruise", "daemon"], args].concat())?;
            let Command::Daemon(args) = cli.command else { panic!("daemon") };
            Ok::<_, clap::Error>(args)
        };
        let d = daemon(&["--node-name", "node-a"]).unwrap();
        assert_eq!(d.node_name, "node-a");
        assert_eq!(d.max_concurrent_pulls, -1, "kruise's default: no limit");
        assert_eq!(d.admin_addr.port(), 10221);
        assert_eq!(d.kubelet_config, PathBuf::from("/var/lib/kubelet/config.yaml"));
        assert_eq!(d.runtime_endpoint, None);
        // kruise-daemon's own flag names work too.
        let d = daemon(&["--node-name=n", "--max-workers-for-pull-image=2", "--addr=127.0.0.1:9"]).unwrap();
        assert_eq!((d.max_concurrent_pulls, d.admin_addr.port()), (2, 9));
        let d =
            daemon(&["--node-name=n", "--max-concurrent-pulls", "-1", "--runtime-endpoint", "/run/k3s.sock"]).unwrap();
        assert_eq!((d.max_concurrent_pulls, d.runtime_endpoint.as_deref()), (-1, Some("/run/k3s.sock")));
    }

    #[test]
    fn cert_mode_follows_the_external_certs_gate() {
        use CertMode::{External, Files, Managed};
        for (asked, gate, want) in [
            (None, false, Ok(Managed)),
            (None, true, Ok(External)),
            (Some(Managed), false, Ok(Managed)),
            (Some(External), false, Ok(External)),
            (Some(External), true, Ok(External)),
            (Some(Files), false, Ok(Files)),
            (Some(Files), true, Ok(Files)),
        ] {
            assert_eq!(CertMode::effective(asked, gate), want, "{asked:?} gate {gate}");
        }
        let err = CertMode::effective(Some(Managed), true).unwrap_err();
        assert!(err.contains("EnableExternalCerts=true"), "{err}");
    }

    #[test]
    fn cli_parses_and_checks_flags() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
        let cli = Cli::try_parse_from([
            "kruise",
            "serve",
            "--standalone",
            "--objects-dir",
            "examples",
            "--feature-gates",
            "TemplateNoDefaults=true",
        ])
        .unwrap();
        let Command::Serve(args) = cli.command else { panic!("serve") };
        assert!(args.standalone);
        assert!(args.feature_gates.enabled(crate::core::features::Gate::TemplateNoDefaults));
        assert!(
            Cli::try_parse_from(["kruise", "serve", "--objects-dir", "x"]).is_err(),
            "objects-dir needs standalone"
        );
        assert!(Cli::try_parse_from(["kruise", "serve", "--feature-gates", "Bogus=true"]).is_err());
        let cli = Cli::try_parse_from([
            "kruise",
            "plan",
            "-f",
            "a.yaml",
            "b.yaml",
            "-o",
            "json",
            "--now",
            "2024-01-01T00:00:00Z",
        ])
        .unwrap();
        let Command::Plan(args) = cli.command else { panic!("plan") };
        assert_eq!(args.files, ["a.yaml", "b.yaml"]);
        assert_eq!(args.output, PlanOutput::Json);
        assert!(args.now.is_some());
        assert_eq!(args.manager_namespace, "kruise-system");
        let cli =
            Cli::try_parse_from(["kruise", "plan", "sidecarset", "logs", "--manager-namespace", "kruise"]).unwrap();
        let Command::Plan(args) = cli.command else { panic!("plan") };
        assert_eq!((args.target.join(" "), args.manager_namespace.as_str()), ("sidecarset logs".to_string(), "kruise"));
        assert!(Cli::try_parse_from(["kruise", "plan", "--now", "yesterday"]).is_err());
        // kruise's registered names, as its Helm chart passes them.
        let cli = Cli::try_parse_from([
            "kruise",
            "serve",
            "--feature-gates",
            "EnhancedLivenessProbe=true,ForceDeleteTimeoutExpectationGate=true",
        ]);
        assert!(cli.is_ok(), "{cli:?}");
        let help = Cli::command().find_subcommand_mut("serve").map(|c| c.render_long_help().to_string());
        assert!(help.is_some_and(|h| h.contains("PodWebhook=true|false (BETA - default=true)")));
    }
}
