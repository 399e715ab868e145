//! kruise: a Rust re-implementation of OpenKruise's manager. The admission webhook server and,
//! in later issues, the embedded reconcilers. Layout (the README's "Layout" section): `apis` holds
//! CRD types, `core` pure decisions, `compat` the Go and apimachinery behaviour those decisions
//! are built from, `webhook` the HTTP adapters, `server` the TLS and admin servers, `cluster` the
//! view of other objects, `check` the offline `kruise check`, `certs` and `manifests` the
//! generated artifacts.

pub mod apis;
pub mod certs;
pub mod check;
pub mod cli;
pub mod cluster;
pub mod compat;
pub mod config;
pub mod core;
pub mod failopen;
pub mod leader;
pub mod manifests;
pub mod metrics;
pub mod process;
pub mod server;
pub mod webhook;

use cli::{Cli, Command, LogFormat};

/// Installs the tracing subscriber.
pub fn init_tracing(format: LogFormat, filter: &str) {
    let filter =
        tracing_subscriber::EnvFilter::try_new(filter).unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colours only on a terminal: escape codes are noise in collected logs, and cost a tenth of
    // the per-review log line (issue 16).
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

/// Runs a parsed command line; returns the process exit code.
pub async fn run(cli: Cli) -> i32 {
    match cli.command {
        Command::Serve(args) => match serve(*args).await {
            Ok(()) => 0,
            Err(e) => {
                tracing::error!("{e}");
                1
            }
        },
        Command::Certs(args) => {
            let req = certs::CertRequest {
                out: args.out,
                service: args.service,
                namespace: args.namespace,
                hosts: args.hosts,
            };
            match certs::ensure(&req) {
                Ok(outcome) => {
                    eprintln!("{}: {outcome:?} (SANs: {})", req.out.display(), req.names().join(", "));
                    0
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    1
                }
            }
        }
        Command::Manifests(args) => manifests_command(&args.root, args.check),
        Command::Check(args) => check_command(args),
    }
}

fn check_command(args: cli::CheckArgs) -> i32 {
    let fail = |e: &dyn std::fmt::Display| {
        eprintln!("error: {e}");
        check::exit::USAGE
    };
    let inputs = match check::input::read_paths(&args.files) {
        Ok(i) => i,
        Err(e) => return fail(&e),
    };
    let mut old = Vec::new();
    for spec in &args.old {
        let read = match spec.strip_prefix("git:") {
            Some(rev) => check::input::read_git(rev, &args.files),
            None => check::input::read_paths(std::slice::from_ref(spec)),
        };
        match read {
            Ok(o) => old.extend(o),
            Err(e) => return fail(&e),
        }
    }
    let extra = match &args.objects_dir {
        Some(dir) => match cluster::files::load_dir(dir) {
            Ok((snapshot, problems)) => {
                if let Some(p) = problems.first() {
                    return fail(&format!("{}: {}", p.path.display(), p.message));
                }
                snapshot
            }
            Err(e) => return fail(&e),
        },
        None => cluster::files::Snapshot::default(),
    };
    let settings = check::Settings { namespace: args.namespace, gates: args.feature_gates };
    let outcomes = check::check(&inputs, &old, &extra, &settings);
    match args.output {
        cli::CheckOutput::Text => print!("{}", check::report::text(&outcomes)),
        cli::CheckOutput::Json => println!("{:#}", check::report::json(&outcomes)),
        cli::CheckOutput::Junit => print!("{}", check::report::junit(&outcomes)),
    }
    if let Some(dir) = &args.mutated_out
        && let Err(e) = check::report::write_mutated(dir, &outcomes)
    {
        eprintln!("error: cannot write {}: {e}", dir.display());
        return check::exit::INTERNAL;
    }
    check::exit_code(&outcomes, args.warn_exit_code)
}

fn manifests_command(root: &std::path::Path, check: bool) -> i32 {
    let result = if check { manifests::stale(root) } else { manifests::write_all(root) };
    match (check, result) {
        (true, Ok(stale)) if stale.is_empty() => 0,
        (true, Ok(stale)) => {
            for f in stale {
                eprintln!("stale: {} (run `make manifests`)", f.display());
            }
            1
        }
        (false, Ok(written)) => {
            for f in written {
                eprintln!("wrote {}", f.display());
            }
            0
        }
        (_, Err(e)) => {
            eprintln!("error: {e}");
            1
        }
    }
}

pub use process::{RunError, serve};
