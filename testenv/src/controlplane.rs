//! The real control plane as a child process: the Go program of `testenv/controlplane/` (etcd,
//! kube-apiserver, kube-controller-manager, kube-scheduler), built on first use into
//! `target/testenv/` and rebuilt when its sources change.
//!
//! The child runs with `--exit-on-stdin-eof`: its stdin is a pipe held by this process, so when a
//! test binary exits — however it exits — the control plane shuts down and removes its directory.

use crate::errors::Error;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Environment variable naming a prebuilt control plane binary (skips the Go build).
pub const BINARY_ENV: &str = "KRUISE_TESTENV_CONTROLPLANE";

/// Set to keep the control plane's directory (logs, etcd data, kubeconfig) after it stops.
pub const KEEP_ENV: &str = "KRUISE_TESTENV_KEEP_DIR";

/// What the control plane prints once every component is ready.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ready {
    /// The admin kubeconfig (bearer token, CA embedded).
    pub kubeconfig: PathBuf,
    /// `https://127.0.0.1:PORT`.
    pub server: String,
    /// The control plane's directory (removed when it stops).
    pub dir: PathBuf,
    /// Component logs: `etcd.log`, `kube-apiserver.log`, `kube-controller-manager.log`,
    /// `kube-scheduler.log`.
    pub logs: PathBuf,
    /// The CA of the apiserver's serving certificate.
    pub ca: PathBuf,
    /// The admin bearer token (group `system:masters`).
    pub token: String,
    /// How long the start took, as Go prints a duration.
    pub started_in: String,
}

/// A running control plane; stopped (gracefully) when dropped.
pub struct ControlPlane {
    child: Child,
    stdin: Option<ChildStdin>,
    ready: Ready,
}

impl ControlPlane {
    /// Builds the binary if needed and starts the control plane; returns once it is ready.
    pub fn start() -> Result<Self, Error> {
        let binary = binary()?;
        let dir = tempfile::Builder::new()
            .prefix("kruise-controlplane-")
            .tempdir()
            .map_err(|e| Error::ControlPlane(format!("temporary directory: {e}")))?
            .keep();
        let mut command = Command::new(&binary);
        if std::env::var_os(KEEP_ENV).is_some() {
            command.arg("--keep");
            eprintln!("kruise-testenv: control plane directory {} is kept", dir.display());
        }
        let mut child = command
            .arg("--exit-on-stdin-eof")
            .arg("--dir")
            .arg(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Error::ControlPlane(format!("start {}: {e}", binary.display())))?;
        let stdin = child.stdin.take();
        let (Some(stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(Error::ControlPlane("child pipes missing".into()));
        };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let read = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(read.map(|_| line));
        });
        let outcome = rx.recv_timeout(Duration::from_secs(180));
        let line = match outcome {
            Ok(Ok(line)) if !line.trim().is_empty() => line,
            other => {
                let _ = child.kill();
                let _ = child.wait();
                let mut err = String::new();
                let _ = stderr.read_to_string(&mut err);
                let why = match other {
                    Err(_) => "no ready line within 180 s".to_string(),
                    Ok(Err(e)) => format!("reading its stdout: {e}"),
                    Ok(Ok(_)) => "it exited before it was ready".to_string(),
                };
                return Err(Error::ControlPlane(format!("{why}; stderr:\n{err}")));
            }
        };
        // Later stderr (a component dying) goes to ours, where the failing test shows it.
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut stderr, &mut std::io::stderr());
        });
        let ready: Ready =
            serde_json::from_str(line.trim()).map_err(|e| Error::ControlPlane(format!("ready line {line:?}: {e}")))?;
        Ok(Self { child, stdin, ready })
    }

    /// What the control plane reported when it became ready.
    pub fn ready(&self) -> &Ready {
        &self.ready
    }

    /// Whether the process still runs.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Stops the control plane and waits (up to 30 s, then kills it).
    pub fn stop(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The Go module's directory.
pub fn source_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("controlplane")
}

/// Where the binary is built: `$CARGO_TARGET_DIR/testenv/` or the workspace's `target/testenv/`.
pub fn binary_path() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join("testenv/kruise-controlplane")
}

/// The control plane binary: [`BINARY_ENV`] if set, otherwise built (under a file lock, so
/// concurrent test binaries build it once) when missing or older than its sources.
pub fn binary() -> Result<PathBuf, Error> {
    if let Some(path) = std::env::var_os(BINARY_ENV) {
        return Ok(PathBuf::from(path));
    }
    let path = binary_path();
    let stamp_path = path.with_extension("stamp");
    let stamp = source_stamp()?;
    let fresh = |p: &Path| p.exists() && std::fs::read_to_string(&stamp_path).ok().as_deref() == Some(&stamp);
    if fresh(&path) {
        return Ok(path);
    }
    let dir = path.parent().ok_or_else(|| Error::ControlPlane("binary path has no parent".into()))?;
    std::fs::create_dir_all(dir).map_err(|e| Error::ControlPlane(format!("{}: {e}", dir.display())))?;
    let lock =
        std::fs::File::create(dir.join(".build.lock")).map_err(|e| Error::ControlPlane(format!("build lock: {e}")))?;
    lock.lock().map_err(|e| Error::ControlPlane(format!("build lock: {e}")))?;
    if fresh(&path) {
        return Ok(path);
    }
    let started = Instant::now();
    let out = Command::new("bash")
        .arg(source_dir().join("build.sh"))
        .arg(&path)
        .output()
        .map_err(|e| Error::ControlPlane(format!("run build.sh: {e}")))?;
    if !out.status.success() {
        return Err(Error::ControlPlane(format!(
            "building the control plane (testenv/controlplane/build.sh, needs Go >= 1.26 and the Go module proxy) failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    std::fs::write(&stamp_path, &stamp).map_err(|e| Error::ControlPlane(format!("stamp: {e}")))?;
    tracing::info!(elapsed = ?started.elapsed(), "built the control plane");
    Ok(path)
}

/// A hash of the Go sources the binary is built from.
fn source_stamp() -> Result<String, Error> {
    let dir = source_dir();
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| Error::ControlPlane(format!("{}: {e}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.ends_with(".go") || name == "go.mod" || name == "go.sum" || name == "build.sh"
        })
        .collect();
    names.sort();
    let mut hash = Sha256::new();
    for name in names {
        let data = std::fs::read(&name).map_err(|e| Error::ControlPlane(format!("{}: {e}", name.display())))?;
        hash.update(name.file_name().map(|n| n.as_encoded_bytes()).unwrap_or_default());
        hash.update((data.len() as u64).to_le_bytes());
        hash.update(&data);
    }
    Ok(hash.finalize().iter().map(|b| format!("{b:02x}")).collect())
}
