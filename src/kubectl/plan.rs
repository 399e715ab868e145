//! `kubectl kruise plan ...`: our `kruise plan` (what the controller will do next, and why),
//! passed through unchanged: the binary runs itself as `kruise plan ARGS`, so every kind and flag
//! `kruise plan` gains is there too. kubectl's connection flags are applied the way `kruise plan`
//! reads them: `-n` becomes its `-n` (default: the kubeconfig context's namespace), and
//! `--kubeconfig` its `KUBECONFIG`. `kruise plan` reads the kubeconfig's current context, so
//! `--context`, `--cluster` and `--user` are refused here rather than silently ignored.

use super::cli::{KubeFlags, PlanArgs};
use super::{Failure, connect, err};

/// Connection flags written among `plan`'s own arguments: taken out and applied to `flags`.
pub fn take_kube_flags(args: &[String], flags: &mut KubeFlags) -> Result<Vec<String>, String> {
    let mut rest = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (key, inline) = match a.split_once('=') {
            Some((k, v)) if k.starts_with("--") => (k, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let slot = match key {
            "-n" | "--namespace" => &mut flags.namespace,
            "--context" => &mut flags.context,
            "--cluster" => &mut flags.cluster,
            "--user" => &mut flags.user,
            "--kubeconfig" => {
                let v = match inline {
                    Some(v) => v,
                    None => it.next().cloned().ok_or_else(|| format!("flag needs an argument: {key}"))?,
                };
                flags.kubeconfig = Some(v.into());
                continue;
            }
            _ => {
                rest.push(a.clone());
                continue;
            }
        };
        *slot = Some(match inline {
            Some(v) => v,
            None => it.next().cloned().ok_or_else(|| format!("flag needs an argument: {key}"))?,
        });
    }
    Ok(rest)
}

/// The `kruise plan` argument list for the plugin's `plan` arguments and namespace.
pub fn plan_argv(args: &[String], namespace: Option<&str>) -> Vec<String> {
    let mut argv = vec!["plan".to_string()];
    argv.extend(args.iter().cloned());
    let asks_help = args.iter().any(|a| a == "--help" || a == "-h");
    if let (Some(ns), false) = (namespace, asks_help) {
        argv.extend(["-n".to_string(), ns.to_string()]);
    }
    argv
}

/// `plan ARGS`: runs `kruise plan ARGS`; returns its exit code.
pub async fn run(flags: &KubeFlags, args: &PlanArgs) -> i32 {
    let mut flags = flags.clone();
    let rest = match take_kube_flags(&args.args, &mut flags) {
        Ok(r) => r,
        Err(e) => {
            err(&format!("{}\n", Failure::Other(e).message()));
            return 1;
        }
    };
    if flags.context.is_some() || flags.cluster.is_some() || flags.user.is_some() {
        err(
            "error: plan reads the kubeconfig's current context: --context, --cluster and --user are not supported with plan (use --kubeconfig)\n",
        );
        return 1;
    }
    // Default namespace as kubectl's: the context's (offline `-f` use needs no kubeconfig at all).
    let namespace = match &flags.namespace {
        Some(ns) => Some(ns.clone()),
        None => connect::config(&flags).await.ok().map(|c| c.default_namespace),
    };
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            err(&format!("error: cannot find the kruise binary: {e}\n"));
            return 1;
        }
    };
    let mut command = std::process::Command::new(exe);
    #[cfg(unix)]
    std::os::unix::process::CommandExt::arg0(&mut command, "kruise");
    command.args(plan_argv(&rest, namespace.as_deref()));
    if let Some(k) = &flags.kubeconfig {
        command.env("KUBECONFIG", k);
    }
    match command.status() {
        Ok(status) => status.code().unwrap_or(1),
        Err(e) => {
            err(&format!("error: cannot run kruise plan: {e}\n"));
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn connection_flags_are_taken_out_of_plan_arguments() {
        let mut flags = KubeFlags::default();
        let rest = take_kube_flags(
            &strings(&["cloneset", "web", "-o", "json", "-n", "prod", "--kubeconfig=/k", "--feature-gates", "A=true"]),
            &mut flags,
        )
        .unwrap();
        assert_eq!(rest, ["cloneset", "web", "-o", "json", "--feature-gates", "A=true"]);
        assert_eq!(
            (flags.namespace.as_deref(), flags.kubeconfig.as_deref()),
            (Some("prod"), Some(std::path::Path::new("/k")))
        );
        let mut flags = KubeFlags::default();
        take_kube_flags(&strings(&["--context", "c"]), &mut flags).unwrap();
        assert_eq!(flags.context.as_deref(), Some("c"));
        assert!(take_kube_flags(&strings(&["-n"]), &mut KubeFlags::default()).is_err());
    }

    #[test]
    fn the_namespace_is_passed_unless_help_is_asked() {
        assert_eq!(plan_argv(&strings(&["cloneset", "web"]), Some("prod")), ["plan", "cloneset", "web", "-n", "prod"]);
        assert_eq!(plan_argv(&strings(&["-f", "x.yaml"]), None), ["plan", "-f", "x.yaml"]);
        assert_eq!(plan_argv(&strings(&["--help"]), Some("prod")), ["plan", "--help"]);
    }
}
