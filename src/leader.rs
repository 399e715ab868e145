//! Leader election on Lease `kruise-manager` in the manager namespace: reads and writes the Lease
//! as [`crate::core::leader`] decides, and publishes whether this replica leads on a watch channel.
//! Everything that writes (certificates, webhook configurations, reconcilers) runs only while it
//! is `true`; every replica serves admission whatever it says.

use std::time::{Duration, Instant, SystemTime};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::core::leader::{self, Observation, Record, Round, Timing};

/// The Lease kruise's manager elects its leader on (the same name as Go kruise's, so the two never
/// lead at once during a migration).
pub const LEASE_NAME: &str = "kruise-manager";

/// One candidate.
pub struct Elector {
    api: Api<Lease>,
    name: String,
    identity: String,
    timing: Timing,
}

impl Elector {
    /// A candidate for Lease `namespace/name` as `identity`.
    pub fn new(client: kube::Client, namespace: &str, name: &str, identity: &str, timing: Timing) -> Self {
        Self { api: Api::namespaced(client, namespace), name: name.into(), identity: identity.into(), timing }
    }

    /// Takes part in the election until `shutdown`, then releases the Lease if held. `leading`
    /// turns `true` on acquisition and `false` as soon as the renew deadline passes without a
    /// successful renewal, or on shutdown.
    pub async fn run(self, shutdown: CancellationToken, leading: watch::Sender<bool>) {
        let started = Instant::now();
        let mut seen = Observation::default();
        let mut last_renewed: Option<Duration> = None;
        loop {
            let local_now = started.elapsed();
            match tokio::time::timeout(self.timing.retry_period, self.try_round(&mut seen, local_now)).await {
                Ok(Ok(true)) => {
                    last_renewed = Some(local_now);
                    if !*leading.borrow() {
                        tracing::info!(identity = %self.identity, lease = %self.name, "became the leader");
                        let _ = leading.send(true);
                    }
                }
                Ok(Ok(false)) => {}
                Ok(Err(e)) => tracing::debug!(error = %e, "leader election round failed"),
                Err(_) => tracing::debug!("leader election round timed out"),
            }
            if *leading.borrow()
                && last_renewed.is_none_or(|t| leader::must_step_down(t, started.elapsed(), self.timing))
            {
                tracing::warn!(identity = %self.identity, "lost the lease: no renewal within the renew deadline");
                let _ = leading.send(false);
                last_renewed = None;
            }
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep(self.timing.retry_period) => {}
            }
        }
        if *leading.borrow() {
            let _ = leading.send(false);
            if let Err(e) = self.release().await {
                tracing::warn!(error = %e, "could not release the lease");
            } else {
                tracing::info!(identity = %self.identity, "released the lease");
            }
        }
    }

    /// One round; `Ok(true)` when this candidate holds the Lease afterwards.
    async fn try_round(&self, seen: &mut Observation, local_now: Duration) -> Result<bool, kube::Error> {
        let lease = self.api.get_opt(&self.name).await?;
        let read = lease.as_ref().map(record_of);
        match leader::round(&self.identity, read.as_ref(), seen, self.timing, local_now, SystemTime::now()) {
            Round::Follow { .. } => Ok(false),
            Round::Create(record) => {
                let lease = Lease {
                    metadata: ObjectMeta { name: Some(self.name.clone()), ..ObjectMeta::default() },
                    spec: Some(spec_of(&record)),
                };
                match self.api.create(&PostParams::default(), &lease).await {
                    Ok(_) => Ok(true),
                    Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                    Err(e) => Err(e),
                }
            }
            Round::Update(record) => {
                let Some(mut lease) = lease else { return Ok(false) };
                lease.spec = Some(spec_of(&record));
                match self.api.replace(&self.name, &PostParams::default(), &lease).await {
                    Ok(_) => Ok(true),
                    Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                    Err(e) => Err(e),
                }
            }
        }
    }

    async fn release(&self) -> Result<(), kube::Error> {
        let Some(mut lease) = self.api.get_opt(&self.name).await? else { return Ok(()) };
        if record_of(&lease).holder != self.identity {
            return Ok(());
        }
        let transitions = lease.spec.as_ref().and_then(|s| s.lease_transitions).unwrap_or(0);
        let mut released = leader::released(SystemTime::now());
        released.transitions = transitions;
        lease.spec = Some(spec_of(&released));
        self.api.replace(&self.name, &PostParams::default(), &lease).await.map(|_| ())
    }
}

/// This process's identity: `POD_NAME` when set (the Deployment passes it), else the hostname,
/// with a random suffix as client-go adds one.
pub fn default_identity() -> String {
    let base = std::env::var("POD_NAME")
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok().map(|h| h.trim().to_string()))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "kruise".into());
    let suffix: String = (0..8).map(|_| fastrand::lowercase()).collect();
    format!("{base}_{suffix}")
}

fn record_of(lease: &Lease) -> Record {
    let spec = lease.spec.clone().unwrap_or_default();
    Record {
        holder: spec.holder_identity.unwrap_or_default(),
        lease_duration_seconds: spec.lease_duration_seconds.unwrap_or(0),
        acquire_time: spec.acquire_time.map(|t| SystemTime::from(t.0)),
        renew_time: spec.renew_time.map(|t| SystemTime::from(t.0)),
        transitions: spec.lease_transitions.unwrap_or(0),
    }
}

fn spec_of(r: &Record) -> LeaseSpec {
    let micro = |t: Option<SystemTime>| t.and_then(|t| jiff::Timestamp::try_from(t).ok()).map(MicroTime);
    LeaseSpec {
        holder_identity: Some(r.holder.clone()),
        lease_duration_seconds: Some(r.lease_duration_seconds),
        acquire_time: micro(r.acquire_time),
        renew_time: micro(r.renew_time),
        lease_transitions: Some(r.transitions),
        ..LeaseSpec::default()
    }
}
