//! The container image (issue 32): `tools/image.sh` builds it with buildah from the `Containerfile`
//! into an OCI archive, umoci unpacks it, and the unpacked root filesystem runs `kruise --version`
//! and `kruise serve --help` under chroot as uid 65532 — nothing of the host's filesystem reachable.
//! The image config says what the Deployment relies on: entrypoint `/kruise`, a non-root user, the
//! OCI labels with the crate's version.
//!
//! Built from this test run's debug binary: `make image` builds the static release binary (fat
//! LTO, minutes on two cores), which has no place in `make test`. The debug binary is linked
//! dynamically, so the image also carries its ELF interpreter and libraries: the same script and
//! Containerfile, and a root filesystem that must be complete to run at all.
//!
//! Skipped, saying so, only when buildah, umoci or chroot is not installed (.ci/run installs them).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn installed(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success())
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A blob of the OCI layout `dir`, by digest, as JSON.
fn blob(dir: &Path, digest: &str) -> Value {
    let hex = digest.strip_prefix("sha256:").unwrap();
    serde_json::from_slice(&std::fs::read(dir.join("blobs/sha256").join(hex)).unwrap()).unwrap()
}

/// Runs `/kruise args` inside `rootfs` as uid 65532 with an empty environment.
fn in_image(rootfs: &Path, args: &[&str]) -> Output {
    let root_user = std::fs::metadata("/proc/self").unwrap().uid() == 0;
    let mut cmd = if root_user {
        let mut c = Command::new("chroot");
        c.arg("--userspec=65532:65532");
        c
    } else {
        // Without root, chroot in a user namespace of our own (as its root: no other uid is mapped).
        let mut c = Command::new("unshare");
        c.args(["--user", "--map-root-user", "chroot"]);
        c
    };
    // Nothing of the host's environment but a PATH to find chroot by.
    cmd.env_clear().env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin").arg(rootfs).arg("/kruise").args(args);
    run(&mut cmd)
}

#[test]
fn image_runs_kruise_on_an_empty_base() {
    for tool in ["buildah", "umoci", "chroot"] {
        if !installed(tool) {
            eprintln!(
                "SKIPPED image_runs_kruise_on_an_empty_base: {tool} is not installed \
                 (Debian: apt-get install buildah umoci; .ci/run installs them)"
            );
            return;
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let archive = tmp.path().join("kruise.oci.tar");
    let out = run(Command::new(root().join("tools/image.sh"))
        .arg("--binary")
        .arg(env!("CARGO_BIN_EXE_kruise"))
        .arg("--out")
        .arg(&archive)
        .args(["--tag", "kruise:test"])
        .env("TMPDIR", tmp.path()));
    eprint!("{}", String::from_utf8_lossy(&out.stdout));
    eprintln!("image archive: {} bytes (debug binary and its libraries)", std::fs::metadata(&archive).unwrap().len());

    let layout = tmp.path().join("layout");
    std::fs::create_dir(&layout).unwrap();
    run(Command::new("tar").arg("xf").arg(&archive).arg("-C").arg(&layout));

    // The image config: what a runtime and the Deployment rely on.
    let index = blob_file(&layout.join("index.json"));
    let manifests = index["manifests"].as_array().unwrap();
    assert_eq!(manifests.len(), 1, "{index}");
    assert_eq!(manifests[0]["annotations"]["org.opencontainers.image.ref.name"], "kruise:test");
    let manifest = blob(&layout, manifests[0]["digest"].as_str().unwrap());
    assert_eq!(manifest["layers"].as_array().unwrap().len(), 1, "FROM scratch and one COPY: one layer\n{manifest}");
    let image = blob(&layout, manifest["config"]["digest"].as_str().unwrap());
    let config = &image["config"];
    assert_eq!(config["Entrypoint"], serde_json::json!(["/kruise"]), "{image}");
    assert_eq!(config["Cmd"], serde_json::json!(["serve"]), "{image}");
    assert_eq!(config["User"], "65532:65532", "{image}");
    let labels = &config["Labels"];
    assert_eq!(labels["org.opencontainers.image.version"], env!("CARGO_PKG_VERSION"), "{image}");
    assert_eq!(labels["org.opencontainers.image.title"], "kruise", "{image}");
    assert_eq!(labels["org.opencontainers.image.licenses"], "Apache-2.0", "{image}");
    assert!(labels["org.opencontainers.image.revision"].as_str().is_some_and(|r| !r.is_empty()), "{image}");
    assert_eq!(image["os"], "linux");
    assert_eq!(image["architecture"], "amd64");

    // The root filesystem: the binary, its loader and libraries, nothing else (no shell).
    let bundle = tmp.path().join("bundle");
    let mut unpack = Command::new("umoci");
    unpack.arg("unpack");
    if std::fs::metadata("/proc/self").unwrap().uid() != 0 {
        unpack.arg("--rootless");
    }
    run(unpack.arg("--image").arg(format!("{}:kruise:test", layout.display())).arg(&bundle));
    let rootfs = bundle.join("rootfs");
    let mut top: Vec<String> =
        std::fs::read_dir(&rootfs).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    top.sort();
    assert!(top.iter().all(|n| ["kruise", "lib", "lib64", "usr"].contains(&n.as_str())), "rootfs holds {top:?}");
    assert!(!rootfs.join("bin/sh").exists());
    let runtime = blob_file(&bundle.join("config.json"));
    assert_eq!(runtime["process"]["args"], serde_json::json!(["/kruise", "serve"]));
    assert_eq!(runtime["process"]["user"]["uid"], 65532);

    let version = in_image(&rootfs, &["--version"]);
    assert_eq!(String::from_utf8_lossy(&version.stdout), format!("kruise {}\n", env!("CARGO_PKG_VERSION")));
    let help = String::from_utf8_lossy(&in_image(&rootfs, &["serve", "--help"]).stdout).into_owned();
    for flag in ["--cert-mode", "--feature-gates", "--leader-elect"] {
        assert!(help.contains(flag), "`kruise serve --help` in the image lacks {flag}:\n{help}");
    }
}

fn blob_file(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}
