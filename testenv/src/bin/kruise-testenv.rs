//! `kruise-testenv`: starts the test cluster (control plane, simulated nodes and kubelet) by
//! hand and keeps it running until Ctrl-C or SIGTERM: `make cluster`, then
//! `KUBECONFIG=<printed path> kubectl get nodes`. With `--kruise BIN` (`make dev`) it also runs
//! `kruise serve` replicas in it as `deploy/` deploys them: with the ServiceAccount token of
//! `kruise-manager` (so deploy/'s RBAC is what they have), managed certificates, leader election,
//! reached by the apiserver through deploy/'s Services (tests/e2e_incluster.rs's recipe).

use clap::Parser;
use kruise_testenv::{Endpoint, PodAddress, TestCluster, publish_endpoints};
use std::path::{Path, PathBuf};

#[derive(Parser, Debug)]
#[command(version, about = "A real Kubernetes control plane with simulated nodes, for kruise tests")]
struct Cli {
    /// How many simulated nodes.
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    /// Also copy the admin kubeconfig here.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Manifests (files or directories) to apply once it runs, e.g. deploy/crds.
    #[arg(long = "apply")]
    apply: Vec<PathBuf>,
    /// Run this `kruise` binary in the cluster as deployed (apply deploy/'s Namespace, RBAC,
    /// Services, CRDs and webhook configurations first, with --apply).
    #[arg(long)]
    kruise: Option<PathBuf>,
    /// How many kruise replicas (with --kruise).
    #[arg(long, default_value_t = 2)]
    replicas: usize,
}

/// deploy/'s manager namespace, ServiceAccount and Services.
const NAMESPACE: &str = "kruise-system";
const SERVICE_ACCOUNT: &str = "kruise-manager";
const SERVICES: [&str; 2] = ["kruise-webhook-service", "kruise-conversion-service"];
const WEBHOOK_PORT: u16 = 9876;

/// Starts `replicas` `kruise serve` processes as pods of deploy/'s Deployment would run, and
/// publishes them as the ready endpoints of its Services. Killed when the handles drop.
async fn start_kruise(
    cluster: &TestCluster,
    bin: &Path,
    replicas: usize,
    dir: &Path,
) -> Result<Vec<tokio::process::Child>, Box<dyn std::error::Error>> {
    let kubeconfig = cluster.service_account_kubeconfig(NAMESPACE, SERVICE_ACCOUNT, dir).await?;
    let mut children = Vec::new();
    let mut endpoints = Vec::new();
    for i in 0..replicas {
        let address = PodAddress::allocate(WEBHOOK_PORT)?;
        let admin = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
        let log_path = dir.join(format!("kruise-{i}.log"));
        let log = std::fs::File::create(&log_path)?;
        let child = tokio::process::Command::new(bin)
            .arg("serve")
            .arg("--addr")
            .arg(address.socket(WEBHOOK_PORT).to_string())
            .arg("--admin-addr")
            .arg(admin.to_string())
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .env("POD_NAME", format!("kruise-manager-{i}"))
            .env("POD_NAMESPACE", NAMESPACE)
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true)
            .spawn()?;
        eprintln!(
            "kruise-manager-{i}: pod address {} (listening on {}), http://{admin}/readyz, log {}",
            address.endpoint,
            address.socket(WEBHOOK_PORT),
            log_path.display()
        );
        children.push(child);
        endpoints.push(Endpoint { address, ready: true });
    }
    let client = cluster.client().await?;
    for service in SERVICES {
        publish_endpoints(&client, NAMESPACE, service, "https", WEBHOOK_PORT, &endpoints).await?;
    }
    Ok(children)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let cluster = TestCluster::start(cli.nodes)?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        for path in &cli.apply {
            let applied = cluster.apply_path(path).await?;
            eprintln!("applied {} objects from {}", applied.len(), path.display());
        }
        // Kept until the end: dropping them stops kruise and removes its kubeconfig and logs.
        let kruise_dir = tempfile::tempdir()?;
        let _kruise = match &cli.kruise {
            Some(bin) => start_kruise(&cluster, bin, cli.replicas, kruise_dir.path()).await?,
            None => Vec::new(),
        };
        let kubeconfig = match &cli.kubeconfig {
            Some(copy) => {
                std::fs::copy(cluster.kubeconfig(), copy)?;
                copy.clone()
            }
            None => cluster.kubeconfig().to_path_buf(),
        };
        println!("{}", kubeconfig.display());
        eprintln!(
            "control plane at {} (started in {:.1?}), logs in {}; KUBECONFIG={} kubectl get nodes; Ctrl-C stops it",
            cluster.server(),
            cluster.started_in(),
            cluster.logs().display(),
            kubeconfig.display()
        );
        eprintln!("CRI endpoints of the simulated nodes: {}/<node>.sock", cluster.kubelet().cri_dir().display());
        if cli.kruise.is_some() {
            eprintln!(
                "kruise: {} replicas as deployed (their ServiceAccount token lasts an hour); try\n  \
                 export KUBECONFIG={}\n  kubectl -n {NAMESPACE} get lease kruise-manager\n  \
                 kubectl apply -f examples/cloneset.yaml && kubectl get cloneset -w",
                cli.replicas,
                kubeconfig.display()
            );
        }
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    // Exiting closes the control plane's stdin: it stops and removes its directory.
    Ok(())
}
