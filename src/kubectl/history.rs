//! `rollout history`: the workload's ControllerRevisions (those it controls, by owner uid, as
//! kruise-tools' `controlledHistoryV1`), as kubectl prints them: a `REVISION  CHANGE-CAUSE` table
//! (Go's tabwriter, padding 2; the cause is the revision's `kubernetes.io/change-cause`
//! annotation, `<none>` without one), or with `--revision N` that revision's pod template in the
//! layout of kubectl's `DescribePodTemplate` (labels, annotations, containers with image, ports,
//! command, args, environment and mounts, volumes — a subset of what kubectl describes).

use std::collections::BTreeMap;
use std::fmt::Write;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Container, PodTemplateSpec};
use kube::Api;
use kube::api::ListParams;

use super::cli::{HistoryArgs, KubeFlags};
use super::target::{Target, parse_targets};
use super::{Failure, Outcome, connect, get_target, name_line, out};
use crate::core::revision::template_of;

/// The annotation kubectl's `--record` wrote, shown as CHANGE-CAUSE.
pub const CHANGE_CAUSE: &str = "kubernetes.io/change-cause";

/// The revisions `uid` controls, by revision number (one per number; the last listed wins, as the
/// map kruise-tools builds).
pub fn owned<'a>(revisions: &'a [ControllerRevision], uid: &str) -> Vec<&'a ControllerRevision> {
    let mut by_number: BTreeMap<i64, &ControllerRevision> = BTreeMap::new();
    for r in revisions {
        let controlled =
            r.metadata.owner_references.iter().flatten().any(|o| o.controller == Some(true) && o.uid == uid);
        if controlled {
            by_number.insert(r.revision, r);
        }
    }
    by_number.into_values().collect()
}

/// The history table, or kubectl's line for none.
pub fn table(history: &[&ControllerRevision]) -> String {
    if history.is_empty() {
        return "No rollout history found.".into();
    }
    let width = history.iter().map(|r| r.revision.to_string().len()).max().unwrap_or(0).max("REVISION".len()) + 2;
    let mut out = format!("{:width$}CHANGE-CAUSE\n", "REVISION");
    for r in history {
        let cause = r
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(CHANGE_CAUSE))
            .filter(|c| !c.is_empty())
            .map_or("<none>", String::as_str);
        let _ = writeln!(out, "{:<width$}{cause}", r.revision);
    }
    out
}

fn multiline(out: &mut String, title: &str, map: Option<&BTreeMap<String, String>>) {
    let _ = write!(out, "  {title}:\t");
    match map.filter(|m| !m.is_empty()) {
        None => out.push_str("<none>\n"),
        Some(m) => {
            for (i, (k, v)) in m.iter().enumerate() {
                if i > 0 {
                    out.push('\t');
                }
                let _ = writeln!(out, "{k}={v}");
            }
        }
    }
}

fn container(out: &mut String, c: &Container) {
    let _ = writeln!(out, "   {}:", c.name);
    let _ = writeln!(out, "    Image:\t{}", c.image.as_deref().unwrap_or(""));
    let ports = c.ports.as_deref().unwrap_or_default();
    let proto = |p: &Option<String>| p.clone().unwrap_or_else(|| "TCP".into());
    let (title, host) = if ports.len() > 1 { ("Ports", "Host Ports") } else { ("Port", "Host Port") };
    if ports.is_empty() {
        let _ = writeln!(out, "    Port:\t<none>\n    Host Port:\t<none>");
    } else {
        let list: Vec<String> = ports.iter().map(|p| format!("{}/{}", p.container_port, proto(&p.protocol))).collect();
        let hosts: Vec<String> =
            ports.iter().map(|p| format!("{}/{}", p.host_port.unwrap_or(0), proto(&p.protocol))).collect();
        let _ = writeln!(out, "    {title}:\t{}\n    {host}:\t{}", list.join(", "), hosts.join(", "));
    }
    for (title, words) in [("Command", &c.command), ("Args", &c.args)] {
        if let Some(words) = words.as_ref().filter(|w| !w.is_empty()) {
            let _ = writeln!(out, "    {title}:");
            for w in words {
                let _ = writeln!(out, "      {w}");
            }
        }
    }
    match c.env.as_deref().filter(|e| !e.is_empty()) {
        None => out.push_str("    Environment:\t<none>\n"),
        Some(env) => {
            out.push_str("    Environment:\n");
            for e in env {
                let value = match (&e.value, &e.value_from) {
                    (_, Some(_)) => "<set from valueFrom>".to_string(),
                    (Some(v), None) => v.clone(),
                    (None, None) => String::new(),
                };
                let _ = writeln!(out, "      {}:\t{value}", e.name);
            }
        }
    }
    match c.volume_mounts.as_deref().filter(|m| !m.is_empty()) {
        None => out.push_str("    Mounts:\t<none>\n"),
        Some(mounts) => {
            out.push_str("    Mounts:\n");
            for m in mounts {
                let mode = if m.read_only == Some(true) { "ro" } else { "rw" };
                let _ = writeln!(out, "      {} from {} ({mode})", m.mount_path, m.name);
            }
        }
    }
}

/// A pod template in the layout of kubectl's `DescribePodTemplate`.
pub fn describe_template(t: &PodTemplateSpec) -> String {
    let mut out = String::from("Pod Template:\n");
    let meta = t.metadata.as_ref();
    multiline(&mut out, "Labels", meta.and_then(|m| m.labels.as_ref()));
    if let Some(a) = meta.and_then(|m| m.annotations.as_ref()).filter(|a| !a.is_empty()) {
        multiline(&mut out, "Annotations", Some(a));
    }
    let spec = t.spec.clone().unwrap_or_default();
    if let Some(sa) = spec.service_account_name.as_deref().filter(|s| !s.is_empty()) {
        let _ = writeln!(out, "  Service Account:\t{sa}");
    }
    if let Some(init) = spec.init_containers.as_deref().filter(|c| !c.is_empty()) {
        out.push_str("  Init Containers:\n");
        init.iter().for_each(|c| container(&mut out, c));
    }
    out.push_str("  Containers:\n");
    spec.containers.iter().for_each(|c| container(&mut out, c));
    match spec.volumes.as_deref().filter(|v| !v.is_empty()) {
        None => out.push_str("  Volumes:\t<none>\n"),
        Some(volumes) => {
            out.push_str("  Volumes:\n");
            for v in volumes {
                let _ = writeln!(out, "   {}:", v.name);
            }
        }
    }
    out
}

/// What `rollout history` prints for one workload.
pub fn render(target: &Target, history: &[&ControllerRevision], revision: i64) -> Result<String, String> {
    if revision > 0 && !history.is_empty() {
        let r = history.iter().find(|r| r.revision == revision).ok_or("unable to find the specified revision")?;
        let name = r.metadata.name.as_deref().unwrap_or("");
        let template = template_of(r).map_err(|_| format!("unable to parse history {name}"))?;
        return Ok(name_line(target, &format!("with revision #{revision}\n{}", describe_template(&template))));
    }
    Ok(name_line(target, &format!("\n{}", table(history))))
}

/// The workload `target` and the revisions it controls (kruise-tools' `clonesetHistory` /
/// `advancedstsHistory`).
pub async fn read(
    client: &kube::Client,
    ns: &str,
    target: &Target,
) -> Result<(super::Object, Vec<ControllerRevision>), Failure> {
    let object = get_target(client, ns, target).await?;
    let api: Api<ControllerRevision> = Api::namespaced(client.clone(), ns);
    let revisions = api.list(&ListParams::default()).await?.items;
    Ok((object, revisions))
}

/// `rollout history TYPE/NAME... [--revision N]`.
pub async fn run(flags: &KubeFlags, args: &HistoryArgs) -> Outcome {
    let targets = parse_targets(&args.resources).map_err(|e| vec![Failure::Other(e)])?;
    let (client, ns) = connect::connect(flags).await.map_err(|e| vec![e])?;
    for t in &targets {
        let (object, revisions) = read(&client, &ns, t).await.map_err(|e| vec![e])?;
        let uid = object.meta().uid.clone().unwrap_or_default();
        let text = render(t, &owned(&revisions, &uid), args.revision).map_err(|e| vec![Failure::Other(e)])?;
        out(&text);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::revision::revision_data;
    use crate::kubectl::target::Workload;
    use serde_json::json;

    pub(crate) fn revision(name: &str, number: i64, owner: &str, template: serde_json::Value) -> ControllerRevision {
        let template: PodTemplateSpec = serde_json::from_value(template).unwrap();
        let data: serde_json::Value = serde_json::from_str(&revision_data(&template)).unwrap();
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "ns",
                "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "web",
                                     "uid": owner, "controller": true}]},
            "revision": number,
            "data": data,
        }))
        .unwrap()
    }

    fn web(image: &str) -> serde_json::Value {
        json!({"metadata": {"labels": {"app": "web", "tier": "front"}},
               "spec": {"containers": [{"name": "main", "image": image,
                   "ports": [{"containerPort": 80}], "env": [{"name": "MODE", "value": "prod"}]}]}})
    }

    #[test]
    fn the_table_lists_controlled_revisions_by_number() {
        let mut caused = revision("web-b", 12, "u1", web("nginx:1.26"));
        caused.metadata.annotations = Some([(CHANGE_CAUSE.to_string(), "kubectl set image".to_string())].into());
        let revisions = vec![
            caused,
            revision("web-a", 3, "u1", web("nginx:1.25")),
            revision("other-a", 1, "u2", web("nginx:1.25")),
            revision("web-old", 3, "u1", web("nginx:1.24")),
        ];
        let history = owned(&revisions, "u1");
        assert_eq!(
            history.iter().map(|r| r.metadata.name.as_deref().unwrap()).collect::<Vec<_>>(),
            ["web-old", "web-b"]
        );
        let target = Target { workload: Workload::CloneSet, name: "web".into() };
        assert_eq!(
            render(&target, &history, 0).unwrap(),
            "cloneset.apps.kruise.io/web \nREVISION  CHANGE-CAUSE\n3         <none>\n12        kubectl set image\n\n"
        );
        assert_eq!(render(&target, &[], 0).unwrap(), "cloneset.apps.kruise.io/web \nNo rollout history found.\n");
        assert_eq!(render(&target, &history, 7).unwrap_err(), "unable to find the specified revision");
    }

    #[test]
    fn one_revision_shows_its_template() {
        let revisions = vec![revision("web-b", 2, "u1", web("nginx:1.26"))];
        let target = Target { workload: Workload::CloneSet, name: "web".into() };
        assert_eq!(
            render(&target, &owned(&revisions, "u1"), 2).unwrap(),
            "cloneset.apps.kruise.io/web with revision #2\nPod Template:\n  Labels:\tapp=web\n\ttier=front\n  Containers:\n   main:\n    Image:\tnginx:1.26\n    Port:\t80/TCP\n    Host Port:\t0/TCP\n    Environment:\n      MODE:\tprod\n    Mounts:\t<none>\n  Volumes:\t<none>\n\n"
        );
    }
}
