//! Which workload a `kubectl kruise` command line names: `TYPE/NAME...` or `TYPE NAME...`, with
//! the type names kubectl's RESTMapper resolves for kruise-tools (`kubectl-kruise rollout undo
//! cloneset/abc`, `asts/abc`, `statefulset.apps.kruise.io/abc`). Plain `statefulset`/`sts`
//! resolve to apps/v1 StatefulSets in kubectl (the core group wins the short name), so they are
//! refused here with the names that do mean an Advanced StatefulSet. The same holds for the
//! Advanced DaemonSet: its short names `ads` and `daemon` and `daemonset.apps.kruise.io` name it
//! (kruise-tools' `VisitAdvancedDaemonSet`), plain `daemonset`/`ds` are apps/v1's.

use std::fmt;

/// A workload kind the plugin handles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// `apps.kruise.io` CloneSet (read as v1alpha1, as kruise-tools reads it).
    CloneSet,
    /// `apps.kruise.io` StatefulSet, the Advanced StatefulSet (read as v1beta1).
    AdvancedStatefulSet,
    /// `apps.kruise.io` DaemonSet, the Advanced DaemonSet (read as v1beta1, the storage version;
    /// kruise-tools reads v1alpha1, the same object through the conversion webhook).
    AdvancedDaemonSet,
}

impl Workload {
    /// The resource as kubectl names it in errors (`clonesets.apps.kruise.io "web" not found`).
    pub fn resource(self) -> &'static str {
        match self {
            Workload::CloneSet => "clonesets.apps.kruise.io",
            Workload::AdvancedStatefulSet => "statefulsets.apps.kruise.io",
            Workload::AdvancedDaemonSet => "daemonsets.apps.kruise.io",
        }
    }

    /// The kind as kubectl's name printer writes it (`cloneset.apps.kruise.io/web paused`).
    pub fn printed(self) -> &'static str {
        match self {
            Workload::CloneSet => "cloneset.apps.kruise.io",
            Workload::AdvancedStatefulSet => "statefulset.apps.kruise.io",
            Workload::AdvancedDaemonSet => "daemonset.apps.kruise.io",
        }
    }

    /// The kind in sentences.
    pub fn title(self) -> &'static str {
        match self {
            Workload::CloneSet => "CloneSet",
            Workload::AdvancedStatefulSet => "Advanced StatefulSet",
            Workload::AdvancedDaemonSet => "Advanced DaemonSet",
        }
    }
}

/// One named workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub workload: Workload,
    pub name: String,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.workload.printed(), self.name)
    }
}

/// The kruise types a TYPE argument may name: `resource`, `resource.group` or
/// `resource.version.group`, singular, plural, short name or kind, any case.
pub fn parse_type(t: &str) -> Result<Workload, String> {
    let lower = t.to_ascii_lowercase();
    let (resource, group) = match lower.split_once('.') {
        Some((r, rest)) => {
            // `clonesets.v1alpha1.apps.kruise.io`: a version between resource and group.
            let group = match rest.split_once('.') {
                Some((v, g)) if (v == "v1alpha1" || v == "v1beta1") && g.contains('.') => g,
                _ => rest,
            };
            (r, Some(group))
        }
        None => (lower.as_str(), None),
    };
    let kruise = group.is_none_or(|g| g == "apps.kruise.io");
    match (resource, group) {
        ("cloneset" | "clonesets" | "clone", _) if kruise => Ok(Workload::CloneSet),
        ("asts", _) if kruise => Ok(Workload::AdvancedStatefulSet),
        ("statefulset" | "statefulsets" | "sts", Some("apps.kruise.io")) => Ok(Workload::AdvancedStatefulSet),
        ("statefulset" | "statefulsets" | "sts", None | Some("apps")) => Err(format!(
            "{t:?} is the apps/v1 StatefulSet (kubectl resolves it to the core group; `kubectl kruise rollout` \
             passes it to `kubectl rollout`): use asts/NAME (statefulset.apps.kruise.io/NAME) for an Advanced \
             StatefulSet"
        )),
        ("ads" | "daemon", _) if kruise => Ok(Workload::AdvancedDaemonSet),
        ("daemonset" | "daemonsets" | "ds", Some("apps.kruise.io")) => Ok(Workload::AdvancedDaemonSet),
        ("daemonset" | "daemonsets" | "ds", None | Some("apps")) => Err(format!(
            "{t:?} is the apps/v1 DaemonSet (kubectl resolves it to the core group; `kubectl kruise rollout` \
             passes it to `kubectl rollout`): use ads/NAME (daemonset.apps.kruise.io/NAME) for an Advanced \
             DaemonSet"
        )),
        ("deployment" | "deployments" | "deploy", _) => Err(format!(
            "kubectl kruise handles clonesets, Advanced StatefulSets (asts) and Advanced DaemonSets (ads): use \
             `kubectl rollout` for {t:?}"
        )),
        _ => Err(format!("the server doesn't have a resource type {t:?}")),
    }
}

/// `TYPE/NAME [TYPE/NAME...]` or `TYPE NAME [NAME...]`, as kubectl's resource builder takes them.
pub fn parse_targets(args: &[String]) -> Result<Vec<Target>, String> {
    let Some(first) = args.first() else {
        return Err("required resource not specified".into());
    };
    if first.contains('/') {
        return args
            .iter()
            .map(|a| match a.split_once('/') {
                Some((t, name)) if !t.is_empty() && !name.is_empty() && !name.contains('/') => {
                    Ok(Target { workload: parse_type(t)?, name: name.to_string() })
                }
                _ if !a.contains('/') => Err(format!(
                    "there is no need to specify a resource type as a separate argument when passing arguments in \
                     resource/name form (e.g. 'kubectl kruise rollout status cloneset/<name>' instead of \
                     'kubectl kruise rollout status cloneset cloneset/<name>'): {a:?}"
                )),
                _ => Err(format!("arguments in resource/name form must have a single resource and name: {a:?}")),
            })
            .collect();
    }
    let workload = parse_type(first)?;
    if args.len() == 1 {
        return Err(format!("give the {} to act on by name: {first}/NAME or {first} NAME", workload.title()));
    }
    args[1..]
        .iter()
        .map(|name| {
            if name.contains('/') || name.is_empty() {
                Err(format!(
                    "there is no need to specify a resource type as a separate argument when passing arguments in \
                     resource/name form: {name:?}"
                ))
            } else {
                Ok(Target { workload, name: name.clone() })
            }
        })
        .collect()
}

/// Exactly one target (`rollout status`, `scaledown`).
pub fn parse_one(args: &[String], command: &str) -> Result<Target, String> {
    let mut targets = parse_targets(args)?;
    if targets.len() != 1 {
        return Err(format!(
            "{command} is only supported on individual resources and resource collections - {} resources were found",
            targets.len()
        ));
    }
    Ok(targets.remove(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn type_names_kubectl_resolves_to_kruise_kinds() {
        use Workload::*;
        let table: &[(&str, Result<Workload, &str>)] = &[
            ("cloneset", Ok(CloneSet)),
            ("clonesets", Ok(CloneSet)),
            ("CloneSet", Ok(CloneSet)),
            ("clone", Ok(CloneSet)),
            ("cloneset.apps.kruise.io", Ok(CloneSet)),
            ("clonesets.apps.kruise.io", Ok(CloneSet)),
            ("clonesets.v1alpha1.apps.kruise.io", Ok(CloneSet)),
            ("clonesets.v1beta1.apps.kruise.io", Ok(CloneSet)),
            ("asts", Ok(AdvancedStatefulSet)),
            ("statefulset.apps.kruise.io", Ok(AdvancedStatefulSet)),
            ("statefulsets.apps.kruise.io", Ok(AdvancedStatefulSet)),
            ("StatefulSet.apps.kruise.io", Ok(AdvancedStatefulSet)),
            ("statefulsets.v1beta1.apps.kruise.io", Ok(AdvancedStatefulSet)),
            ("sts.apps.kruise.io", Ok(AdvancedStatefulSet)),
            ("statefulset", Err("apps/v1 StatefulSet")),
            ("sts", Err("apps/v1 StatefulSet")),
            ("statefulsets.apps", Err("apps/v1 StatefulSet")),
            ("ads", Ok(AdvancedDaemonSet)),
            ("daemon", Ok(AdvancedDaemonSet)),
            ("ADS", Ok(AdvancedDaemonSet)),
            ("daemonset.apps.kruise.io", Ok(AdvancedDaemonSet)),
            ("daemonsets.apps.kruise.io", Ok(AdvancedDaemonSet)),
            ("DaemonSet.apps.kruise.io", Ok(AdvancedDaemonSet)),
            ("daemonsets.v1beta1.apps.kruise.io", Ok(AdvancedDaemonSet)),
            ("daemonsets.v1alpha1.apps.kruise.io", Ok(AdvancedDaemonSet)),
            ("ads.apps.kruise.io", Ok(AdvancedDaemonSet)),
            ("daemonset", Err("ads/NAME")),
            ("ds", Err("apps/v1 DaemonSet")),
            ("daemonsets.apps", Err("apps/v1 DaemonSet")),
            ("ads.apps", Err("doesn't have a resource type")),
            ("deployment", Err("use `kubectl rollout`")),
            ("cloneset.apps", Err("doesn't have a resource type")),
            ("pods", Err("doesn't have a resource type")),
        ];
        for (t, want) in table {
            match (parse_type(t), want) {
                (Ok(got), Ok(w)) => assert_eq!(got, *w, "{t}"),
                (Err(e), Err(w)) => assert!(e.contains(w), "{t}: {e}"),
                (got, want) => panic!("{t}: {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn both_argument_forms_and_their_errors() {
        let cs = |n: &str| Target { workload: Workload::CloneSet, name: n.into() };
        assert_eq!(parse_targets(&args(&["cloneset/web"])), Ok(vec![cs("web")]));
        assert_eq!(parse_targets(&args(&["cloneset", "web", "api"])), Ok(vec![cs("web"), cs("api")]));
        assert_eq!(
            parse_targets(&args(&["clone/web", "asts/db"])),
            Ok(vec![cs("web"), Target { workload: Workload::AdvancedStatefulSet, name: "db".into() }])
        );
        for (bad, why) in [
            (&[][..], "required resource not specified"),
            (&["cloneset"][..], "by name"),
            (&["cloneset/"][..], "single resource and name"),
            (&["cloneset/a/b"][..], "single resource and name"),
            (&["cloneset/web", "api"][..], "no need to specify"),
            (&["cloneset", "cloneset/web"][..], "no need to specify"),
            (&["statefulset/db"][..], "asts/NAME"),
            (&["daemonset/agent"][..], "ads/NAME"),
        ] {
            let e = parse_targets(&args(bad)).unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
        assert_eq!(parse_one(&args(&["cloneset", "web"]), "rollout status"), Ok(cs("web")));
        let e = parse_one(&args(&["cloneset", "a", "b"]), "rollout status").unwrap_err();
        assert!(e.contains("2 resources were found"), "{e}");
        assert_eq!(cs("web").to_string(), "cloneset.apps.kruise.io/web");
        let ads = Target { workload: Workload::AdvancedDaemonSet, name: "agent".into() };
        assert_eq!(parse_targets(&args(&["daemon", "agent"])), Ok(vec![ads.clone()]));
        assert_eq!(ads.to_string(), "daemonset.apps.kruise.io/agent");
    }
}
