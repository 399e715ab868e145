//! kruise: a Rust re-implementation of OpenKruise's manager: the admission webhook server, the
//! embedded reconcilers, and the node agent (`kruise daemon`). Layout (the README's "Layout"
//! section): `apis` holds CRD types, `core` pure decisions, `compat` the Go and apimachinery
//! behaviour those decisions are built from, `webhook` the HTTP adapters, `server` the TLS and
//! admin servers, `cluster` the view of other objects, `daemon` the node agent's adapters, `check`
//! the offline `kruise check`, `certs` and `manifests` the generated artifacts.

pub mod apis;
pub mod certs;
pub mod check;
pub mod cli;
pub mod client;
pub mod cluster;
pub mod compat;
pub mod config;
pub mod controller;
pub mod core;
pub mod daemon;
pub mod kubectl;
pub mod leader;
pub mod log;
pub mod manifests;
pub mod metrics;
pub mod plan;
pub mod process;
pub mod server;
pub mod source;
pub mod webhook;

use cli::{Cli, Command};
pub use log::init_tracing;

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
        Command::Daemon(args) => match daemon::run(*args).await {
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
                conversion_service: args.conversion_service,
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
        Command::Plan(args) => plan_command(args).await,
    }
}

async fn plan_command(args: cli::PlanArgs) -> i32 {
    let fail = |e: &dyn std::fmt::Display| {
        eprintln!("error: {e}");
        check::exit::USAGE
    };
    let manifests = if !args.target.is_empty() {
        let ns = args.namespace.as_deref().unwrap_or("default");
        let (kind, name) = match args.target.as_slice() {
            [kind, name] => (kind.as_str(), name.as_str()),
            [one] => one.split_once('/').unwrap_or((one.as_str(), "")),
            _ => ("", ""),
        };
        let kind = match plan::live::Kind::parse(kind) {
            Some(kind) if !name.is_empty() && args.files.is_empty() => kind,
            _ => {
                return fail(
                    &"give `cloneset NAME`, `statefulset NAME`, `daemonset NAME` or `uniteddeployment NAME` [-n NAMESPACE], or `sidecarset NAME`, to read the cluster, or manifests with -f FILE",
                );
            }
        };
        match plan::live::read_kind_default(kind, ns, name, &args.manager_namespace).await {
            Ok(m) => m,
            Err(e) => return fail(&e),
        }
    } else if args.files.is_empty() {
        return fail(
            &"give the manifests with -f FILE, or `cloneset NAME` / `statefulset NAME` / `daemonset NAME` / `uniteddeployment NAME` -n NAMESPACE, or `sidecarset NAME` (see `kruise plan --help`)",
        );
    } else {
        let read = check::input::read_paths(&args.files);
        if let Some(p) = read.problems.first() {
            let at = p.line.map(|l| format!(":{l}")).unwrap_or_default();
            return fail(&format!("{}{at}: {}", p.file, p.message));
        }
        read.objects
    };
    let now = args.now.unwrap_or_else(k8s_openapi::jiff::Timestamp::now);
    let settings = plan::Settings { gates: &args.feature_gates, now, manager_namespace: &args.manager_namespace };
    let planned = match plan::plan_workloads(&manifests, &settings) {
        Ok(p) => p,
        Err(e) => return fail(&e),
    };
    for p in &planned.clonesets {
        match args.output {
            cli::PlanOutput::Text => print!("{}", plan::render::text(p)),
            cli::PlanOutput::Json => println!("{:#}", plan::render::json(p)),
        }
    }
    for p in &planned.statefulsets {
        match args.output {
            cli::PlanOutput::Text => print!("{}", plan::render::statefulset_text(p)),
            cli::PlanOutput::Json => println!("{:#}", plan::render::statefulset_json(p)),
        }
    }
    for p in &planned.sidecarsets {
        match args.output {
            cli::PlanOutput::Text => print!("{}", plan::render::sidecarset_text(p)),
            cli::PlanOutput::Json => println!("{:#}", plan::render::sidecarset_json(p)),
        }
    }
    for p in &planned.daemonsets {
        match args.output {
            cli::PlanOutput::Text => print!("{}", plan::render::daemonset_text(p)),
            cli::PlanOutput::Json => println!("{:#}", plan::render::daemonset_json(p)),
        }
    }
    for p in &planned.uniteddeployments {
        match args.output {
            cli::PlanOutput::Text => print!("{}", plan::uniteddeployment::text(p)),
            cli::PlanOutput::Json => println!("{:#}", plan::uniteddeployment::json(p)),
        }
    }
    check::exit::OK
}

fn check_command(args: cli::CheckArgs) -> i32 {
    let mut read = check::input::read_paths(&args.files);
    let mut old = Vec::new();
    for spec in &args.old {
        let r = match spec.strip_prefix("git:") {
            Some(rev) => check::input::read_git(rev, &args.files),
            None => check::input::read_paths(std::slice::from_ref(spec)),
        };
        old.extend(r.objects);
        read.problems.extend(r.problems);
    }
    let extra = match &args.objects_dir {
        Some(dir) => match cluster::files::load_dir(dir) {
            Ok((snapshot, problems)) => {
                read.problems.extend(problems);
                snapshot
            }
            Err(e) => {
                eprintln!("error: {e}");
                return check::exit::USAGE;
            }
        },
        None => cluster::files::Snapshot::default(),
    };
    let settings = check::Settings { namespace: args.namespace, gates: args.feature_gates };
    let outcomes = check::check(&read.objects, &old, &extra, &settings);
    let report = check::Report { outcomes, problems: read.problems };
    for p in &report.problems {
        eprintln!("error: {p}");
    }
    let rendered = match args.output {
        cli::CheckOutput::Text => check::report::text(&report),
        cli::CheckOutput::Json => format!("{:#}\n", check::report::json(&report)),
        cli::CheckOutput::Junit => check::report::junit(&report),
    };
    // A reader that stops early (`| head`) is not an error; any other failed write is.
    let mut stdout = std::io::stdout().lock();
    match std::io::Write::write_all(&mut stdout, rendered.as_bytes()).and_then(|()| std::io::Write::flush(&mut stdout))
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("error: cannot write the report: {e}");
            return check::exit::INTERNAL;
        }
        _ => {}
    }
    if let Some(dir) = &args.mutated_out
        && let Err(e) = check::report::write_mutated(dir, &report.outcomes)
    {
        eprintln!("error: cannot write {}: {e}", dir.display());
        return check::exit::INTERNAL;
    }
    check::exit_code(&report, args.warn_exit_code)
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
