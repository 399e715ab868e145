//! `kruise-testenv`: starts the test cluster (control plane, simulated nodes and kubelet) by
//! hand and keeps it running until Ctrl-C or SIGTERM: `make cluster`, then
//! `KUBECONFIG=<printed path> kubectl get nodes`.

use clap::Parser;
use kruise_testenv::TestCluster;
use std::path::PathBuf;

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
