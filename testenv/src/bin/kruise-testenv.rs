//! `kruise-testenv`: runs a test cluster until SIGTERM or ctrl-c, for kubectl sessions and for a
//! separately started `kruise serve`. Writes a kubeconfig, prints the server URL, and routes
//! webhook services given with `--service ns/name:port=127.0.0.1:9443`.

use clap::Parser;
use kruise_testenv::{KubeletConfig, ServiceRef, TestEnv};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(version, about = "An in-process Kubernetes API server for kruise tests")]
struct Cli {
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Where to write the kubeconfig.
    #[arg(long, default_value = "testenv.kubeconfig")]
    kubeconfig: PathBuf,
    /// Route a webhook service to an address: `namespace/name:port=127.0.0.1:9443` (repeatable).
    #[arg(long = "service", value_parser = parse_service)]
    services: Vec<(ServiceRef, SocketAddr)>,
    /// Run the simulated kubelet with this many nodes (0 = no kubelet).
    #[arg(long, default_value_t = 0)]
    nodes: usize,
    /// Delay before containers turn ready, in milliseconds.
    #[arg(long, default_value_t = 0)]
    ready_delay_ms: u64,
    /// Manifests (files or directories) to apply at start, e.g. deploy/crds.
    #[arg(long = "apply")]
    apply: Vec<PathBuf>,
}

fn parse_service(s: &str) -> Result<(ServiceRef, SocketAddr), String> {
    let (svc, addr) = s.split_once('=').ok_or("expected namespace/name:port=address")?;
    let (ns, rest) = svc.split_once('/').ok_or("expected namespace/name")?;
    let (name, port) = rest.rsplit_once(':').unwrap_or((rest, "443"));
    let port: u16 = port.parse().map_err(|e| format!("port: {e}"))?;
    let addr: SocketAddr = addr.parse().map_err(|e| format!("address: {e}"))?;
    Ok((ServiceRef::new(ns, name, port), addr))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let mut builder = TestEnv::builder().port(cli.port);
    for (svc, addr) in cli.services {
        builder = builder.service(svc, addr);
    }
    if cli.nodes > 0 {
        builder = builder.kubelet(KubeletConfig {
            nodes: cli.nodes,
            ready_delay: Duration::from_millis(cli.ready_delay_ms),
            max_grace_period: None,
        });
    }
    let env = builder.start().await?;
    for path in &cli.apply {
        env.apply_path(path).await?;
    }
    env.write_kubeconfig(&cli.kubeconfig)?;
    println!("{}", env.url());
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    drop(env);
    Ok(())
}
