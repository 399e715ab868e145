//! The leader's certificate loop (spec §8.4, issue 10 item 3): observe the Secret, every
//! `caBundle` and every replica's report; ask [`next_step`]; make that one write; repeat — after
//! a short settle when something was written, and when nothing was to be done as soon as the
//! Secret, a webhook configuration, a kruise CRD or a replica report changes (watched), or after
//! the poll interval at the latest (the clock is polled). The CRD list is large, so it is kept
//! between rounds and listed again when a kruise CRD changed (a metadata-only watch says so:
//! CRDs created after the leader started, as `kubectl apply -k` does, get the bundle at once) or
//! [`CRD_REFRESH`] passed. Writes never overwrite what another leader just wrote: the Secret is
//! created with `create` (an `AlreadyExists` means someone else won) and updated with the
//! resourceVersion it was read at (a `Conflict` means it changed: observe again). `caBundle` is
//! written by [`publish`]. In external mode nothing is written: the loop only says when a
//! `caBundle` does not hold the Secret's `ca.crt`.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{PartialObjectMeta, PostParams};
use kube::core::ResourceExt;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, watch_object, watcher};
use tokio_util::sync::CancellationToken;

use super::issue::{self, IssueError, issue_leaf, new_ca};
use super::publish::{self, Target};
use super::secret::{Material, Mode};
use super::{Settings, report};
use crate::core::certs::{CertStep, Observed, next_step};

/// How long the CRD list is reused at most when no change of a kruise CRD was seen (the watch
/// saying so can be down; CRDs are large; our own writes update the list meanwhile).
const CRD_REFRESH: Duration = Duration::from_secs(60);

/// Why a round failed (the loop logs it and tries again after the poll interval).
#[derive(Debug, thiserror::Error)]
pub enum ManageError {
    /// The API server refused or could not be reached.
    #[error("{step}: {source}")]
    Api {
        /// What was being done.
        step: &'static str,
        /// The cause.
        #[source]
        source: kube::Error,
    },
    /// A certificate could not be issued.
    #[error(transparent)]
    Issue(#[from] IssueError),
    /// The decision asked for a step the Secret cannot support (a bug; logged, never acted on).
    #[error("cannot {0}: the Secret lacks what it needs")]
    Inconsistent(&'static str),
}

fn api_err(step: &'static str) -> impl FnOnce(kube::Error) -> ManageError {
    move |source| ManageError::Api { step, source }
}

/// Keeps the certificate Secret and every `caBundle` as [`next_step`] decides until `token` is
/// cancelled (at once: an in-flight round is dropped). Run it only while this replica leads.
pub async fn lead(client: kube::Client, settings: Arc<Settings>, token: CancellationToken) {
    let mut changes = changes(&client, &settings);
    let mut leader = Leader { client, settings, crds: None };
    tracing::info!(secret = %leader.settings.secret, mode = ?leader.settings.mode, "managing webhook certificates");
    loop {
        let round = tokio::select! {
            _ = token.cancelled() => return,
            round = leader.round() => round,
        };
        match round {
            // Let the write reach the apiserver's webhook clients; changes it causes are ours.
            Round::Wrote => tokio::select! {
                _ = token.cancelled() => return,
                _ = tokio::time::sleep(leader.settings.settle) => {}
            },
            Round::Idle => tokio::select! {
                _ = token.cancelled() => return,
                _ = tokio::time::sleep(leader.settings.poll) => {}
                change = changes.next() => leader.note(change),
            },
        }
        // Events that queued up meanwhile are covered by the round about to run.
        while let Some(Some(change)) = changes.next().now_or_never() {
            leader.note(Some(change));
        }
    }
}

/// What changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    /// The Secret, a webhook configuration or a replica report.
    Watched,
    /// A CRD of a kruise group was added, changed or deleted: the kept list is stale.
    Crd,
}

/// A change, or a watch error logged (an error is not a change: polling covers it).
fn noted(result: Result<(), watcher::Error>) -> Option<()> {
    result
        .map_err(|e| {
            if crate::cluster::watch_errors::harmless(&e) {
                tracing::debug!(error = %e, "watching for certificate changes: listing again");
            } else {
                tracing::warn!(error = %e, "watching for certificate changes (polling meanwhile)");
            }
        })
        .ok()
}

/// Whether `name` is the name of a CRD of one of `groups` (`<plural>.<group>`).
fn in_groups(name: &str, groups: &[String]) -> bool {
    groups.iter().any(|g| {
        name.strip_suffix(g.as_str()).and_then(|rest| rest.strip_suffix('.')).is_some_and(|plural| !plural.is_empty())
    })
}

/// Whether `event` adds, changes or deletes a CRD of `groups` (a re-list after a watch restart
/// counts: changes may have been missed meanwhile).
fn crd_touched(event: &watcher::Event<PartialObjectMeta<CustomResourceDefinition>>, groups: &[String]) -> bool {
    match event {
        watcher::Event::Apply(crd) | watcher::Event::Delete(crd) | watcher::Event::InitApply(crd) => {
            in_groups(&crd.name_any(), groups)
        }
        watcher::Event::Init | watcher::Event::InitDone => false,
    }
}

/// A stream that yields whenever the Secret, a webhook configuration, a kruise CRD or a replica
/// report changes (watch errors are logged and back off).
fn changes(
    client: &kube::Client,
    s: &Settings,
) -> futures::stream::SelectAll<futures::stream::BoxStream<'static, Change>> {
    let secret = watch_object(Api::<Secret>::namespaced(client.clone(), &s.namespace), &s.secret);
    let mutating = watch_object(Api::<MutatingWebhookConfiguration>::all(client.clone()), &s.mutating);
    let validating = watch_object(Api::<ValidatingWebhookConfiguration>::all(client.clone()), &s.validating);
    let reports = watcher(
        Api::<Lease>::namespaced(client.clone(), &s.namespace),
        watcher::Config::default().labels(&format!("{}={}", report::REPLICA_OF, s.secret)),
    );
    let watched = |r: Result<(), watcher::Error>| std::future::ready(noted(r).map(|()| Change::Watched));
    let mut all = futures::stream::select_all([
        secret.default_backoff().filter_map(move |r| watched(r.map(|_| ()))).boxed(),
        mutating.default_backoff().filter_map(move |r| watched(r.map(|_| ()))).boxed(),
        validating.default_backoff().filter_map(move |r| watched(r.map(|_| ()))).boxed(),
        crate::cluster::watch_backoff::with_backoff(reports).filter_map(move |r| watched(r.map(|_| ()))).boxed(),
    ]);
    if !s.crd_groups.is_empty() {
        // Metadata only: a CRD's schema can be megabytes, its name is enough.
        let groups = s.crd_groups.clone();
        let crds = watcher(
            Api::<PartialObjectMeta<CustomResourceDefinition>>::all(client.clone()),
            watcher::Config::default(),
        );
        all.push(
            crate::cluster::watch_backoff::with_backoff(crds)
                .filter_map(move |r| {
                    let change = match r {
                        Ok(event) => crd_touched(&event, &groups).then_some(Change::Crd),
                        Err(e) => noted(Err(e)).and(None),
                    };
                    std::future::ready(change)
                })
                .boxed(),
        );
    }
    all
}

struct Leader {
    client: kube::Client,
    settings: Arc<Settings>,
    crds: Option<(Instant, Vec<Target>)>,
}

/// What a round did.
#[derive(Debug)]
enum Round {
    /// Wrote something: look again soon.
    Wrote,
    /// Nothing to do now.
    Idle,
}

impl Leader {
    /// Takes `change` into account before the next round.
    fn note(&mut self, change: Option<Change>) {
        if change == Some(Change::Crd) {
            self.crds = None;
        }
    }

    async fn round(&mut self) -> Round {
        let result = match self.settings.mode {
            Mode::SelfManaged => self.manage().await,
            Mode::External => self.verify_external().await,
        };
        result.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "webhook certificate round failed; trying again");
            Round::Idle
        })
    }

    async fn targets(&mut self) -> Result<Vec<Target>, ManageError> {
        let mut targets = publish::observe_configurations(&self.client, &self.settings)
            .await
            .map_err(api_err("read the webhook configurations"))?;
        // Listed again when a kruise CRD changed (`note`), and while none was there (the manager
        // started first, as on a fresh install) even when the CRD watch is down.
        let fresh = self.crds.as_ref().is_some_and(|(at, crds)| !crds.is_empty() && at.elapsed() < CRD_REFRESH);
        if !fresh {
            let crds = publish::observe_crds(&self.client, &self.settings).await.map_err(api_err("list CRDs"))?;
            self.crds = Some((Instant::now(), crds));
        }
        targets.extend(self.crds.iter().flat_map(|(_, c)| c.iter().cloned()));
        Ok(targets)
    }

    async fn manage(&mut self) -> Result<Round, ManageError> {
        let s = Arc::clone(&self.settings);
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), &s.namespace);
        let secret = secrets.get_opt(&s.secret).await.map_err(api_err("read the certificate Secret"))?;
        let material = secret.as_ref().map(|sec| Material::from_secret(sec, Mode::SelfManaged));
        let targets = self.targets().await?;
        let now = SystemTime::now();
        let (replicas, stale) =
            report::read(&self.client, &s, now).await.map_err(api_err("read the replicas' certificate reports"))?;
        if !stale.is_empty() {
            report::remove(&self.client, &s, &stale).await.map_err(api_err("delete stale certificate reports"))?;
        }
        let required = s.required_names();
        let observed = Observed {
            secret: material.as_ref().map(|m| m.state(&required)),
            trusted: targets.iter().flat_map(Target::trusted).collect(),
            replicas,
            now,
        };
        let step = next_step(&observed, s.lifetimes);
        let mut m = material.clone().unwrap_or_default();
        let names = s.names();
        let lifetimes = s.lifetimes;
        match &step {
            CertStep::Done => return Ok(Round::Idle),
            CertStep::Wait(why) => {
                tracing::debug!(why = %why, "webhook certificates: waiting");
                return Ok(Round::Idle);
            }
            CertStep::PublishBundle => {
                let bundle = m.bundle_pem().ok_or(ManageError::Inconsistent("publish the bundle"))?;
                // Each target on its own: one that refuses (a CRD the role may not patch) does not
                // keep the bundle from the others; its error ends the round, which retries it.
                let mut wrote = false;
                let mut failed = None;
                for target in &targets {
                    match publish::publish(&self.client, target, &bundle).await {
                        Ok(w) => wrote |= w,
                        Err(e) => {
                            tracing::warn!(target = ?target, error = %e, "cannot publish caBundle");
                            failed.get_or_insert(e);
                        }
                    }
                }
                if let Some(e) = failed {
                    return Err(api_err("patch caBundle")(e));
                }
                // Our own CRD writes are known without listing them again.
                if let Some((_, crds)) = &mut self.crds {
                    let fps = issue::fingerprints(bundle.as_bytes());
                    for crd in crds.iter_mut() {
                        if let Target::Conversion { trusted, .. } = crd {
                            *trusted = fps.clone();
                        }
                    }
                }
                tracing::info!(bundle = ?issue::fingerprints(bundle.as_bytes()), "published caBundle");
                return Ok(if wrote { Round::Wrote } else { Round::Idle });
            }
            CertStep::Create => {
                let ca = new_ca(now, lifetimes.ca)?;
                m = Material {
                    leaf: Some(issue_leaf(&ca, &names, now, lifetimes.leaf)?),
                    bundle: Some(ca.cert.clone()),
                    ca: Some(ca),
                    next_ca: None,
                };
            }
            CertStep::RenewLeaf(_) => {
                let ca = m.ca.as_ref().ok_or(ManageError::Inconsistent("renew the leaf"))?;
                m.leaf = Some(issue_leaf(ca, &names, now, lifetimes.leaf)?);
            }
            CertStep::StartCaRotation => {
                let ca = m.ca.clone().ok_or(ManageError::Inconsistent("start a CA rotation"))?;
                // A half-written rotation keeps its next CA.
                let next = match m.next_ca.clone().filter(|n| issue::ca_info(n).is_some()) {
                    Some(next) => next,
                    None => new_ca(now, lifetimes.ca)?,
                };
                m.bundle = Some(format!("{}{}", ca.cert, next.cert));
                m.next_ca = Some(next);
            }
            CertStep::SwitchToNextCa => {
                let next = m.next_ca.take().ok_or(ManageError::Inconsistent("switch to the next CA"))?;
                m.leaf = Some(issue_leaf(&next, &names, now, lifetimes.leaf)?);
                m.ca = Some(next);
                // The bundle keeps both CAs until every replica serves the new leaf.
            }
            CertStep::FinishCaRotation => {
                let ca = m.ca.as_ref().ok_or(ManageError::Inconsistent("finish the CA rotation"))?;
                m.bundle = Some(ca.cert.clone());
            }
        }
        tracing::info!(step = ?step, secret = %s.secret, "writing the certificate Secret");
        self.write_secret(&secrets, secret, &m).await
    }

    /// Creates the Secret, or updates it at the resourceVersion it was read at.
    async fn write_secret(
        &self,
        secrets: &Api<Secret>,
        observed: Option<Secret>,
        m: &Material,
    ) -> Result<Round, ManageError> {
        let result = match observed {
            None => {
                secrets
                    .create(&PostParams::default(), &m.to_secret(&self.settings.namespace, &self.settings.secret))
                    .await
            }
            Some(mut secret) => {
                m.write_into(secret.data.get_or_insert_with(Default::default));
                // A Secret kruise wrote may carry `stringData`-derived fields; only data is ours.
                secret.string_data = None;
                secrets.replace(&self.settings.secret, &PostParams::default(), &secret).await
            }
        };
        match result {
            Ok(_) => Ok(Round::Wrote),
            Err(kube::Error::Api(e)) if e.code == 409 => {
                tracing::info!(reason = %e.message, "the certificate Secret changed meanwhile; observing again");
                Ok(Round::Wrote)
            }
            Err(e) => Err(ManageError::Api { step: "write the certificate Secret", source: e }),
        }
    }

    /// External mode: say when a `caBundle` does not trust the Secret's `ca.crt` (cert-manager's
    /// CA injector writes it; we never do).
    async fn verify_external(&mut self) -> Result<Round, ManageError> {
        let s = Arc::clone(&self.settings);
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), &s.namespace);
        let Some(secret) = secrets.get_opt(&s.secret).await.map_err(api_err("read the certificate Secret"))? else {
            tracing::warn!(secret = %s.secret, "external certificates: the Secret does not exist yet");
            return Ok(Round::Idle);
        };
        let m = Material::from_secret(&secret, Mode::External);
        let ca = m.bundle_pem().map(|b| issue::fingerprints(b.as_bytes())).unwrap_or_default();
        let targets = self.targets().await?;
        let behind = targets.iter().flat_map(Target::trusted).filter(|t| ca.iter().any(|c| !t.contains(c))).count();
        if behind > 0 {
            tracing::warn!(
                client_configs = behind,
                "external certificates: caBundle does not hold the Secret's ca.crt yet (the CA injector writes it)"
            );
        }
        Ok(Round::Idle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(name: &str) -> PartialObjectMeta<CustomResourceDefinition> {
        let mut meta = PartialObjectMeta::<CustomResourceDefinition>::default();
        meta.metadata.name = Some(name.to_string());
        meta
    }

    #[test]
    fn only_crds_of_the_kruise_groups_make_the_kept_list_stale() {
        let groups = vec!["apps.kruise.io".to_string(), "policy.kruise.io".to_string()];
        let rows: [(&str, bool); 7] = [
            ("clonesets.apps.kruise.io", true),
            ("podunavailablebudgets.policy.kruise.io", true),
            ("certificates.cert-manager.io", false),
            // A group that merely ends like ours is another group.
            ("widgets.myapps.kruise.io", false),
            ("apps.kruise.io", false),
            (".apps.kruise.io", false),
            ("clonesets.apps.kruise.io.example.com", false),
        ];
        for (name, want) in rows {
            assert_eq!(in_groups(name, &groups), want, "{name}");
            for event in [
                watcher::Event::Apply(crd(name)),
                watcher::Event::Delete(crd(name)),
                watcher::Event::InitApply(crd(name)),
            ] {
                assert_eq!(crd_touched(&event, &groups), want, "{name}: {event:?}");
            }
        }
        assert!(!crd_touched(&watcher::Event::Init, &groups));
        assert!(!crd_touched(&watcher::Event::InitDone, &groups));
    }
}
