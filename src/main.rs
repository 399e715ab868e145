//! Process entry: install the rustls provider, parse the command line, run, exit.

use clap::Parser;

/// The global allocator (feature `mimalloc`, on by default; see Cargo.toml).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: kruise_alloc::Mimalloc = kruise_alloc::Mimalloc;

fn main() {
    // ring, not aws-lc-rs: it builds without cmake. Ignored if already installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = kruise::cli::Cli::parse();
    kruise::init_tracing(cli.log_format, &cli.log);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            std::process::exit(1);
        }
    };
    let code = runtime.block_on(kruise::run(cli));
    kruise::log::sink::flush();
    std::process::exit(code);
}
