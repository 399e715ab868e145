//! Process entry: install the rustls provider, parse the command line, run, exit.

use clap::Parser;

/// The global allocator (feature `mimalloc`, on by default; see Cargo.toml).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: kruise_alloc::Mimalloc = kruise_alloc::Mimalloc;

fn main() {
    // ring, not aws-lc-rs: it builds without cmake. Ignored if already installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    // Started as `kubectl-kruise` (kubectl's plugin lookup, or the `make install` link): the plugin's
    // command line instead of kruise's.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if kruise::kubectl::invoked_as_plugin(args.first().map(|a| a.as_os_str())) {
        std::process::exit(block_on(kruise::kubectl::run(args)));
    }
    let cli = kruise::cli::Cli::parse_from(args);
    kruise::init_tracing(cli.log_format, &cli.log);
    let code = block_on(kruise::run(cli));
    kruise::log::sink::flush();
    std::process::exit(code);
}

/// Stack of each runtime worker. Decoding and validating the deepest kruise objects (a
/// UnitedDeployment embeds a whole CloneSet or Advanced StatefulSet spec) overflowed the 2 MiB
/// default in unoptimised builds; a webhook worker that overflows aborts the process.
const WORKER_STACK: usize = 8 * 1024 * 1024;

/// Runs `f` on a multi-threaded runtime; exits 1 when none can be started.
fn block_on(f: impl std::future::Future<Output = i32>) -> i32 {
    match tokio::runtime::Builder::new_multi_thread().thread_stack_size(WORKER_STACK).enable_all().build() {
        Ok(rt) => rt.block_on(f),
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            1
        }
    }
}
