//! Instructions per review without the network (issue 16): decode an AdmissionReview, run its
//! handler, encode the response — what the criterion bench `admission` times — counted under
//! callgrind, which gives the same figure on a busy machine. Each handler runs `--warmup` times,
//! then `--n` times inside `measured`, the only function callgrind collects
//! (`--toggle-collect`), so the total divided by n is the cost of one review.
//!
//! The `sets-N` rows run the handler alone (no decode or encode) on the pod review of the
//! criterion bench `injection` with N SidecarSets in the view, one of them matching: the cost
//! should not grow with N (issue 4 item 4).
//!
//! `cargo build --release --example loadtest_review_cost`, then
//! `target/release/examples/loadtest_review_cost --callgrind [--n 200]` runs itself once per
//! handler under valgrind and prints a table (profiles in `--profile-dir`, default
//! `target/bench`); without `--callgrind` it runs the loop of `--only NAME` once (what valgrind
//! starts).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use kruise::cluster::files::Snapshot;
use kruise::core::features::FeatureGates;
use kruise::webhook::paths::Handler;
use kruise::webhook::review::{decode, encode};
use kruise::webhook::{Context, handle};

/// The allocator of the `kruise` binary, so the figures are the server's.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: kruise_alloc::Mimalloc = kruise_alloc::Mimalloc;

/// The reviews of the criterion bench `admission`, with its names.
#[path = "../benches/reviews.rs"]
mod reviews;
use reviews::CASES;

/// The views of n SidecarSets and the pod review of the criterion bench `injection`.
#[allow(dead_code)]
#[path = "../benches/views.rs"]
mod views;

/// View sizes of the `sets-N` rows.
const SET_COUNTS: [usize; 4] = [1, 100, 1000, 10_000];

fn arg(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned()).unwrap_or_else(|| default.to_string())
}

fn example(name: &str) -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join(name)).unwrap()
}

fn review_once(ctx: &Context, handler: Handler, body: &[u8]) -> Vec<u8> {
    let r = decode(body).unwrap();
    let v = handle(ctx, handler, &r).unwrap();
    encode(&r.request, &v)
}

/// The collected loop (callgrind's `--toggle-collect` names it).
#[inline(never)]
fn measured(ctx: &Context, handler: Handler, body: &[u8], n: u64) {
    for _ in 0..n {
        black_box(review_once(ctx, handler, black_box(body)));
    }
}

/// The handler alone on the `injection` bench's review, with `sets` SidecarSets in the view.
#[inline(never)]
fn measured_sets(ctx: &Context, review: &kruise::webhook::Review, n: u64) {
    for _ in 0..n {
        black_box(handle(ctx, Handler::MutatePod, black_box(review)));
    }
}

fn run_one(name: &str, n: u64, warmup: u64) {
    if let Some(sets) = name.strip_prefix("sets-") {
        let ctx = Context::with_gates(FeatureGates::default(), Arc::new(views::snapshot(sets.parse().unwrap())));
        let review = views::review();
        let verdict = handle(&ctx, Handler::MutatePod, &review).unwrap();
        assert!(verdict.allowed && verdict.patch.is_some(), "the matching set is injected");
        for _ in 0..warmup {
            black_box(handle(&ctx, Handler::MutatePod, &review));
        }
        return measured_sets(&ctx, &review, n);
    }
    let (_, file, handler) = CASES.iter().find(|c| c.0 == name).unwrap_or_else(|| panic!("unknown case {name}"));
    let mut snapshot = Snapshot::default();
    let sample: serde_json::Value = serde_yaml_ng::from_slice(&example("sidecarset.yaml")).unwrap();
    assert!(snapshot.insert(sample).unwrap());
    assert!(snapshot.insert(reviews::budget()).unwrap());
    let ctx = Context::with_gates(FeatureGates::default(), Arc::new(snapshot));
    let body = example(file);
    for _ in 0..warmup {
        black_box(review_once(&ctx, *handler, &body));
    }
    measured(&ctx, *handler, &body, n);
}

fn main() {
    let n: u64 = arg("--n", "200").parse().unwrap();
    let warmup: u64 = arg("--warmup", "20").parse().unwrap();
    if !std::env::args().any(|a| a == "--callgrind") {
        return run_one(&arg("--only", "mutate_pod_create"), n, warmup);
    }
    let dir = PathBuf::from(arg("--profile-dir", "target/bench"));
    std::fs::create_dir_all(&dir).unwrap();
    let me = std::env::current_exe().unwrap();
    println!("in-process reviews under callgrind: decode + handle + encode, instructions per review");
    let names = CASES.iter().map(|c| c.0.to_string()).chain(SET_COUNTS.iter().map(|n| format!("sets-{n}")));
    for name in names {
        let name = name.as_str();
        let out = dir.join(format!("callgrind.review.{name}.out"));
        let status = Command::new("valgrind")
            .args(["--tool=callgrind", "--collect-atstart=no", "--toggle-collect=*measured*"])
            .arg(format!("--callgrind-out-file={}", out.display()))
            .arg(&me)
            .args(["--only", name, "--n", &n.to_string(), "--warmup", &warmup.to_string()])
            .stderr(std::process::Stdio::null())
            .status()
            .expect("valgrind runs");
        assert!(status.success(), "{name} failed under valgrind");
        let text = std::fs::read_to_string(&out).unwrap();
        let total: u64 = text
            .lines()
            .find(|l| l.starts_with("totals:") || l.starts_with("summary:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        println!("  {name:<30} {:>10} instructions/review   (profile: {})", total / n, out.display());
    }
}
