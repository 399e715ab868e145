//! `rollout` commands on apps/v1 workloads (Deployment, DaemonSet, StatefulSet), which kruise-tools
//! also accepts: they are kubectl's own `rollout` commands, so the plugin runs `kubectl rollout`
//! with the same arguments and returns its exit code — output, flags and exit codes are kubectl's
//! by construction. (kruise-tools carries a copy of kubectl's code for them.) The plugin runs under
//! kubectl, so `kubectl` is on the PATH; `$KUBECTL` names another binary.

/// Flags of `kubectl rollout` that take their value as the next argument.
const WITH_VALUE: &[&str] = &[
    "-n",
    "--namespace",
    "--kubeconfig",
    "--context",
    "--cluster",
    "--user",
    "--timeout",
    "--revision",
    "--to-revision",
    "-o",
    "--output",
    "-l",
    "--selector",
    "-f",
    "--filename",
    "--field-manager",
    "--template",
];

/// Whether a TYPE names an apps/v1 kind `kubectl rollout` handles (kubectl's names: plain
/// `statefulset`/`sts` are apps/v1, as its RESTMapper resolves them).
pub fn is_native_type(t: &str) -> bool {
    let lower = t.to_ascii_lowercase();
    let (resource, group) = match lower.split_once('.') {
        Some((r, g)) => (r, Some(g)),
        None => (lower.as_str(), None),
    };
    let apps = group.is_none_or(|g| g == "apps" || g == "v1.apps");
    apps && matches!(
        resource,
        "deployment"
            | "deployments"
            | "deploy"
            | "daemonset"
            | "daemonsets"
            | "ds"
            | "statefulset"
            | "statefulsets"
            | "sts"
    )
}

/// Whether the plugin's arguments (argv[0] excluded) are a `rollout` command on an apps/v1
/// workload: its first resource argument (`TYPE/NAME` or `TYPE NAME`) names one.
pub fn is_native_rollout(args: &[String]) -> bool {
    let mut positional = Vec::new();
    let mut skip = false;
    for a in args {
        if skip {
            skip = false;
            continue;
        }
        if a.starts_with('-') {
            skip = !a.contains('=') && WITH_VALUE.contains(&a.as_str());
            continue;
        }
        positional.push(a.as_str());
    }
    match positional.as_slice() {
        ["rollout", _command, resource, ..] => is_native_type(resource.split('/').next().unwrap_or("")),
        _ => false,
    }
}

/// Runs `kubectl` with `args`; its exit code.
pub fn run_kubectl(args: &[String]) -> i32 {
    let kubectl = std::env::var_os("KUBECTL").unwrap_or_else(|| "kubectl".into());
    match std::process::Command::new(&kubectl).args(args).status() {
        Ok(status) => status.code().unwrap_or(1),
        Err(e) => {
            eprintln!("error: cannot run {}: {e}", kubectl.to_string_lossy());
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn native_rollouts_are_told_from_kruise_ones() {
        for (line, native) in [
            ("rollout status deployment/web", true),
            ("rollout undo deploy web --to-revision 2", true),
            ("rollout status -n prod statefulset/db", true),
            ("rollout history sts/db", true),
            ("rollout restart daemonset.apps/agent", true),
            ("rollout pause deployments.v1.apps/web", true),
            ("--kubeconfig /k rollout status --timeout 5m ds/agent", true),
            ("rollout status cloneset/web", false),
            ("rollout status asts/db", false),
            ("rollout status statefulset.apps.kruise.io/db", false),
            ("rollout status daemonset.apps.kruise.io/agent", false),
            ("rollout status -n deployment cloneset/web", false),
            ("scaledown deployment/web --pods a", false),
            ("plan deployment web", false),
            ("rollout status", false),
        ] {
            assert_eq!(is_native_rollout(&args(line)), native, "{line}");
        }
    }
}
