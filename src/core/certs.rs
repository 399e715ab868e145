//! The webhook certificate's next step (spec §8.4, improved per ADMISSION.md "rotation must
//! overlap"): given what the Secret holds, what the apiserver trusts (`caBundle` of every webhook
//! and conversion clientConfig), what every live replica serves, and the clock, decide the one
//! write to make now. The leader applies it, observes again, and repeats until [`CertStep::Done`].
//!
//! A CA rotation never leaves a replica serving a leaf the apiserver cannot verify:
//! 1. a next CA is created and the bundle becomes old + next ([`CertStep::StartCaRotation`]);
//! 2. once every clientConfig trusts both, the leaf is re-issued from the next CA, which becomes
//!    the current one ([`CertStep::SwitchToNextCa`]); replicas pick the new leaf up;
//! 3. once every live replica reports serving a leaf of the new CA, the old CA leaves the bundle
//!    ([`CertStep::FinishCaRotation`]), and clientConfigs follow ([`CertStep::PublishBundle`]).
//!
//! A leaf is renewed from the same CA (the bundle does not change) when a third of its lifetime is
//! left, when it does not cover the service name, or when another CA signed it.

use std::time::{Duration, SystemTime};

/// A CA as the decision needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaInfo {
    /// SHA-256 of its DER, hex.
    pub fingerprint: String,
    /// Validity.
    pub not_before: SystemTime,
    /// Validity.
    pub not_after: SystemTime,
}

/// A serving certificate as the decision needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeafInfo {
    /// Validity.
    pub not_before: SystemTime,
    /// Validity.
    pub not_after: SystemTime,
    /// Fingerprint of the CA that verifies it (`None`: no CA of the Secret does).
    pub issuer: Option<String>,
    /// Whether it covers `<service>.<namespace>.svc` of every Service the apiserver calls (the
    /// webhook Service and the conversion Service).
    pub covers_service: bool,
}

/// What the certificate Secret holds, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SecretState {
    /// The CA signing the current leaf (`ca-cert.pem`), if it parses with its key.
    pub ca: Option<CaInfo>,
    /// The CA a rotation moves to (`next-ca-cert.pem`), if one is under way.
    pub next_ca: Option<CaInfo>,
    /// The CAs `caBundle` must hold (`ca-bundle.pem`, fingerprints in order).
    pub bundle: Vec<String>,
    /// The serving certificate (`tls.crt`/`cert.pem`), if it parses with its key.
    pub leaf: Option<LeafInfo>,
}

/// A replica's report of what it serves (its identity Lease).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaReport {
    /// The replica.
    pub identity: String,
    /// Fingerprint of the CA that signed the leaf it serves.
    pub serving_ca: Option<String>,
    /// Whether its Lease is still held (renewed within its duration).
    pub live: bool,
}

/// Everything observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    /// The Secret (`None`: it does not exist).
    pub secret: Option<SecretState>,
    /// The fingerprints in each clientConfig's `caBundle`, one list per webhook / conversion
    /// clientConfig we manage.
    pub trusted: Vec<Vec<String>>,
    /// The replicas.
    pub replicas: Vec<ReplicaReport>,
    /// Now.
    pub now: SystemTime,
}

/// Lifetimes (shortened in tests to force renewals and rotations).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lifetimes {
    /// Of a CA.
    pub ca: Duration,
    /// Of a serving certificate.
    pub leaf: Duration,
}

impl Default for Lifetimes {
    fn default() -> Self {
        Self { ca: Duration::from_secs(10 * 365 * 24 * 3600), leaf: Duration::from_secs(365 * 24 * 3600) }
    }
}

/// The one write to make now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CertStep {
    /// No usable CA: create a CA and a leaf; the bundle is the new CA alone.
    Create,
    /// A new leaf from the current CA.
    RenewLeaf(&'static str),
    /// Create the next CA; the bundle becomes current + next.
    StartCaRotation,
    /// Every clientConfig trusts the next CA: issue the leaf from it and make it current.
    SwitchToNextCa,
    /// Every live replica serves a leaf of the current CA: the bundle becomes that CA alone.
    FinishCaRotation,
    /// Set every clientConfig's `caBundle` to the Secret's bundle.
    PublishBundle,
    /// Nothing can be done until something changes (the reason says what).
    Wait(String),
    /// Everything is as it should be.
    Done,
}

/// Decides the next step.
pub fn next_step(o: &Observed, lifetimes: Lifetimes) -> CertStep {
    let Some(secret) = &o.secret else { return CertStep::Create };
    let Some(ca) = secret.ca.as_ref().filter(|ca| usable(ca, o.now)) else { return CertStep::Create };
    let trusted_everywhere = |fp: &str| o.trusted.iter().all(|b| b.iter().any(|t| t == fp));
    let bundle_published = o.trusted.iter().all(|b| *b == secret.bundle);

    if let Some(next) = &secret.next_ca {
        if !secret.bundle.contains(&next.fingerprint) || !secret.bundle.contains(&ca.fingerprint) {
            // A half-written rotation: put both in the bundle again.
            return CertStep::StartCaRotation;
        }
        return if trusted_everywhere(&next.fingerprint) && trusted_everywhere(&ca.fingerprint) {
            CertStep::SwitchToNextCa
        } else {
            CertStep::PublishBundle
        };
    }

    if secret.bundle.iter().any(|f| *f != ca.fingerprint) || !secret.bundle.contains(&ca.fingerprint) {
        if !trusted_everywhere(&ca.fingerprint) {
            return CertStep::PublishBundle;
        }
        let behind: Vec<&str> = o
            .replicas
            .iter()
            // A replica serving nothing (starting, or without a usable pair) loses nothing when the
            // previous CA leaves the bundle: only one serving a leaf of another CA holds it back.
            .filter(|r| r.live && r.serving_ca.as_ref().is_some_and(|fp| *fp != ca.fingerprint))
            .map(|r| r.identity.as_str())
            .collect();
        if behind.is_empty() {
            return CertStep::FinishCaRotation;
        }
        return CertStep::Wait(format!("replicas {} still serve a leaf of the previous CA", behind.join(", ")));
    }

    if remaining_share(ca.not_before, ca.not_after, o.now) < 1.0 / 3.0 || ca_outlived_by_leaf(ca, o.now, lifetimes) {
        return CertStep::StartCaRotation;
    }
    match &secret.leaf {
        None => return CertStep::RenewLeaf("there is no serving certificate"),
        Some(l) if l.issuer.as_deref() != Some(ca.fingerprint.as_str()) => {
            return CertStep::RenewLeaf("the serving certificate is not signed by the current CA");
        }
        Some(l) if !l.covers_service => {
            return CertStep::RenewLeaf("the serving certificate does not name every service");
        }
        Some(l) if remaining_share(l.not_before, l.not_after, o.now) < 1.0 / 3.0 => {
            return CertStep::RenewLeaf("a third of the serving certificate's lifetime is left");
        }
        Some(_) => {}
    }
    if !bundle_published {
        return CertStep::PublishBundle;
    }
    CertStep::Done
}

fn usable(ca: &CaInfo, now: SystemTime) -> bool {
    ca.not_before <= now && now < ca.not_after
}

/// A new leaf must not outlive its CA: rotate the CA first when it would.
fn ca_outlived_by_leaf(ca: &CaInfo, now: SystemTime, lifetimes: Lifetimes) -> bool {
    now + lifetimes.leaf > ca.not_after
}

/// Whether a replica's report counts: renewed within `ttl` of `now`. A replica that stopped
/// renewing (crashed, partitioned) no longer holds a CA rotation back.
pub fn report_is_live(renewed: SystemTime, ttl: Duration, now: SystemTime) -> bool {
    now.duration_since(renewed).map(|age| age < ttl).unwrap_or(true)
}

/// Whether a report is so old that its replica is surely gone and the leader deletes it: ten
/// `ttl`s without renewal (a replica that merely paused renews it again and it is recreated).
pub fn report_is_stale(renewed: SystemTime, ttl: Duration, now: SystemTime) -> bool {
    now.duration_since(renewed).map(|age| age >= ttl * 10).unwrap_or(false)
}

/// The share of a validity period still ahead at `now` (0 when past, 1 before it started).
pub fn remaining_share(not_before: SystemTime, not_after: SystemTime, now: SystemTime) -> f64 {
    let total = not_after.duration_since(not_before).unwrap_or_default().as_secs_f64();
    if total <= 0.0 {
        return 0.0;
    }
    let left = not_after.duration_since(now).unwrap_or_default().as_secs_f64();
    (left / total).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: Duration = Duration::from_secs(86400);

    fn t(days: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + DAY * (20000 + days as u32)
    }

    fn ca(fp: &str, from: u64, days: u64) -> CaInfo {
        CaInfo { fingerprint: fp.into(), not_before: t(from), not_after: t(from + days) }
    }

    fn leaf(issuer: &str, from: u64, days: u64) -> LeafInfo {
        LeafInfo { not_before: t(from), not_after: t(from + days), issuer: Some(issuer.into()), covers_service: true }
    }

    fn lifetimes() -> Lifetimes {
        Lifetimes { ca: DAY * 3650, leaf: DAY * 365 }
    }

    fn steady(now: u64) -> Observed {
        Observed {
            secret: Some(SecretState {
                ca: Some(ca("A", 0, 3650)),
                next_ca: None,
                bundle: vec!["A".into()],
                leaf: Some(leaf("A", 0, 365)),
            }),
            trusted: vec![vec!["A".into()], vec!["A".into()]],
            replicas: vec![
                ReplicaReport { identity: "r1".into(), serving_ca: Some("A".into()), live: true },
                ReplicaReport { identity: "r2".into(), serving_ca: Some("A".into()), live: true },
            ],
            now: t(now),
        }
    }

    fn with(mut o: Observed, f: impl FnOnce(&mut Observed)) -> Observed {
        f(&mut o);
        o
    }

    fn secret(o: &mut Observed) -> &mut SecretState {
        o.secret.get_or_insert_with(Default::default)
    }

    #[test]
    fn next_steps() {
        let rows: Vec<(&str, Observed, CertStep)> = vec![
            ("fresh install", with(steady(10), |o| o.secret = None), CertStep::Create),
            ("the CA does not parse", with(steady(10), |o| secret(o).ca = None), CertStep::Create),
            ("the CA expired", with(steady(3700), |_| {}), CertStep::Create),
            ("steady state", steady(10), CertStep::Done),
            (
                "a third of the leaf left",
                steady(245),
                CertStep::RenewLeaf("a third of the serving certificate's lifetime is left"),
            ),
            ("more than a third left", steady(240), CertStep::Done),
            (
                "no leaf",
                with(steady(10), |o| secret(o).leaf = None),
                CertStep::RenewLeaf("there is no serving certificate"),
            ),
            (
                "leaf of another CA",
                with(steady(10), |o| secret(o).leaf = Some(leaf("Z", 0, 365))),
                CertStep::RenewLeaf("the serving certificate is not signed by the current CA"),
            ),
            (
                "leaf without the service name",
                with(steady(10), |o| secret(o).leaf.as_mut().into_iter().for_each(|l| l.covers_service = false)),
                CertStep::RenewLeaf("the serving certificate does not name every service"),
            ),
            ("a clientConfig lacks the CA", with(steady(10), |o| o.trusted[1] = vec![]), CertStep::PublishBundle),
            (
                "a clientConfig trusts an extra CA",
                with(steady(10), |o| o.trusted[0] = vec!["A".into(), "Z".into()]),
                CertStep::PublishBundle,
            ),
            ("a third of the CA left", steady(2440), CertStep::StartCaRotation),
            (
                "a new leaf would outlive the CA",
                with(steady(10), |o| secret(o).ca = Some(ca("A", 0, 300))),
                CertStep::StartCaRotation,
            ),
            (
                "rotation started, bundle not yet trusted",
                with(steady(2440), |o| {
                    let s = secret(o);
                    s.next_ca = Some(ca("B", 2440, 3650));
                    s.bundle = vec!["A".into(), "B".into()];
                }),
                CertStep::PublishBundle,
            ),
            (
                "rotation started, one clientConfig trusts both",
                with(steady(2440), |o| {
                    let s = secret(o);
                    s.next_ca = Some(ca("B", 2440, 3650));
                    s.bundle = vec!["A".into(), "B".into()];
                    o.trusted[0] = vec!["A".into(), "B".into()];
                }),
                CertStep::PublishBundle,
            ),
            (
                "both trusted everywhere: switch",
                with(steady(2440), |o| {
                    let s = secret(o);
                    s.next_ca = Some(ca("B", 2440, 3650));
                    s.bundle = vec!["A".into(), "B".into()];
                    o.trusted = vec![vec!["A".into(), "B".into()]; 2];
                }),
                CertStep::SwitchToNextCa,
            ),
            (
                "a next CA without the bundle is redone",
                with(steady(2440), |o| secret(o).next_ca = Some(ca("B", 2440, 3650))),
                CertStep::StartCaRotation,
            ),
            (
                "switched, a replica still serves the old leaf",
                with(steady(2441), |o| {
                    let s = secret(o);
                    s.ca = Some(ca("B", 2440, 3650));
                    s.leaf = Some(leaf("B", 2440, 365));
                    s.bundle = vec!["A".into(), "B".into()];
                    o.trusted = vec![vec!["A".into(), "B".into()]; 2];
                    o.replicas[0].serving_ca = Some("B".into());
                }),
                CertStep::Wait("replicas r2 still serve a leaf of the previous CA".into()),
            ),
            (
                "switched, the lagging replica is gone",
                with(steady(2441), |o| {
                    let s = secret(o);
                    s.ca = Some(ca("B", 2440, 3650));
                    s.leaf = Some(leaf("B", 2440, 365));
                    s.bundle = vec!["A".into(), "B".into()];
                    o.trusted = vec![vec!["A".into(), "B".into()]; 2];
                    o.replicas[0].serving_ca = Some("B".into());
                    o.replicas[1].live = false;
                }),
                CertStep::FinishCaRotation,
            ),
            (
                "switched, a replica serves nothing yet",
                with(steady(2441), |o| {
                    let s = secret(o);
                    s.ca = Some(ca("B", 2440, 3650));
                    s.leaf = Some(leaf("B", 2440, 365));
                    s.bundle = vec!["A".into(), "B".into()];
                    o.trusted = vec![vec!["A".into(), "B".into()]; 2];
                    o.replicas[0].serving_ca = Some("B".into());
                    o.replicas[1].serving_ca = None;
                }),
                CertStep::FinishCaRotation,
            ),
            (
                "every replica serves the new CA",
                with(steady(2441), |o| {
                    let s = secret(o);
                    s.ca = Some(ca("B", 2440, 3650));
                    s.leaf = Some(leaf("B", 2440, 365));
                    s.bundle = vec!["A".into(), "B".into()];
                    o.trusted = vec![vec!["A".into(), "B".into()]; 2];
                    for r in &mut o.replicas {
                        r.serving_ca = Some("B".into());
                    }
                }),
                CertStep::FinishCaRotation,
            ),
            (
                "finished: clientConfigs drop the old CA",
                with(steady(2441), |o| {
                    let s = secret(o);
                    s.ca = Some(ca("B", 2440, 3650));
                    s.leaf = Some(leaf("B", 2440, 365));
                    s.bundle = vec!["B".into()];
                    o.trusted = vec![vec!["A".into(), "B".into()]; 2];
                }),
                CertStep::PublishBundle,
            ),
            (
                "old bundle entry while the current CA is not yet trusted",
                with(steady(2441), |o| {
                    let s = secret(o);
                    s.ca = Some(ca("B", 2440, 3650));
                    s.leaf = Some(leaf("B", 2440, 365));
                    s.bundle = vec!["A".into(), "B".into()];
                }),
                CertStep::PublishBundle,
            ),
        ];
        for (name, observed, want) in rows {
            assert_eq!(next_step(&observed, lifetimes()), want, "{name}");
        }
    }

    #[test]
    fn replica_reports() {
        let ttl = Duration::from_secs(30);
        let at = |s: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + s);
        // (renewed, now, live, stale)
        let rows = [
            (at(0), at(0), true, false),
            (at(0), at(29), true, false),
            (at(0), at(30), false, false),
            (at(0), at(299), false, false),
            (at(0), at(300), false, true),
            // A renewal from a clock slightly ahead counts as fresh.
            (at(5), at(0), true, false),
        ];
        for (renewed, now, live, stale) in rows {
            assert_eq!(report_is_live(renewed, ttl, now), live, "{renewed:?} {now:?}");
            assert_eq!(report_is_stale(renewed, ttl, now), stale, "{renewed:?} {now:?}");
        }
    }

    #[test]
    fn remaining_shares() {
        assert_eq!(remaining_share(t(0), t(300), t(0)), 1.0);
        assert_eq!(remaining_share(t(0), t(300), t(200)), 1.0 / 3.0);
        assert_eq!(remaining_share(t(0), t(300), t(400)), 0.0);
        assert_eq!(remaining_share(t(10), t(10), t(10)), 0.0);
    }
}
