//! Whether managed certificate lifetimes leave a leader the time to renew them (spec §8.4
//! managed certificates, §8.5 leader election): `kruise serve` with managed certificates refuses,
//! before anything starts, lifetimes whose renewal margin — the part of a certificate's lifetime
//! left when the leader renews it — is not at least twice the longest time a due renewal can
//! wait for a leader. (A soak with a 10 s leaf under 4 s leases saw admissions fail with
//! "certificate has expired" around a leader restart: the leaf was renewed with about 3.7 s left.)
//!
//! The wait ([`renewal_wait`]): with leader election, a holder that stopped (killed, partitioned)
//! is replaced once its record has not changed for a lease duration, as seen by a candidate that
//! polls every retry period (a holder that fails to renew keeps leading for the renew deadline,
//! which client-go keeps below the lease duration; the longer of the two counts). Then the new
//! leader's first round runs, but the renewal may have fallen due just after the old leader's
//! last round (one `--cert-check-interval`), and replicas pick the new Secret up by watch or, at
//! the latest, by their own poll at that interval. Twice the wait, because a rolling update
//! restarts the replicas one after the other: two handovers back to back.
//!
//! A leaf's margin is a third of its lifetime ([`crate::core::certs`] renews with a third left;
//! back-dating an issued certificate only adds to it). The CA rotates when a new leaf would
//! outlive it, so its margin is at least a leaf's lifetime — provided it lives at least twice as
//! long as a leaf: a shorter CA is rotated (a change of every `caBundle` in several steps) more
//! often than a leaf is renewed, and one that does not outlive a leaf is rotated in a loop.

use std::time::Duration;

use super::leader::Timing;

/// What the rule reads: the lifetimes, how often certificates are checked, and the leader
/// election's timing (`None`: no election, this replica always leads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Renewal {
    /// `--ca-lifetime`.
    pub ca_lifetime: Duration,
    /// `--cert-lifetime`.
    pub leaf_lifetime: Duration,
    /// `--cert-check-interval`.
    pub check_interval: Duration,
    /// `--leader-lease-duration`, `--leader-renew-deadline`, `--leader-retry-period`, when
    /// `--leader-elect` is on.
    pub election: Option<Timing>,
}

/// How many waits for a leader a renewal margin must hold.
const WAITS: u32 = 2;
/// A leaf is renewed with `1 / RENEWED_WITH_LEFT` of its lifetime left (`core::certs`).
const RENEWED_WITH_LEFT: u32 = 3;

/// The part of a leaf's lifetime left when it is renewed (at least: back-dating adds to it).
pub fn leaf_margin(leaf_lifetime: Duration) -> Duration {
    leaf_lifetime / RENEWED_WITH_LEFT
}

/// The longest a due renewal can wait until replicas serve the renewed certificate.
pub fn renewal_wait(check_interval: Duration, election: Option<&Timing>) -> Duration {
    let handover = election.map_or(Duration::ZERO, |t| t.lease_duration.max(t.renew_deadline) + t.retry_period);
    handover + check_interval * 2
}

/// `Ok` when the lifetimes leave time for a renewal around leader handovers; otherwise what to
/// change, in the flags' words.
pub fn check(r: &Renewal) -> Result<(), String> {
    let wait = renewal_wait(r.check_interval, r.election.as_ref());
    let margin = leaf_margin(r.leaf_lifetime);
    if margin < wait * WAITS {
        let minimum = whole_seconds_up(wait * WAITS * RENEWED_WITH_LEFT);
        let parts = match &r.election {
            Some(t) => {
                let held = if t.renew_deadline > t.lease_duration {
                    format!("--leader-renew-deadline {}", show(t.renew_deadline))
                } else {
                    format!("--leader-lease-duration {}", show(t.lease_duration))
                };
                format!(
                    "{held} + --leader-retry-period {} + 2 × --cert-check-interval {}",
                    show(t.retry_period),
                    show(r.check_interval)
                )
            }
            None => format!("2 × --cert-check-interval {}", show(r.check_interval)),
        };
        let ca = if r.ca_lifetime < minimum * 2 {
            format!(" and --ca-lifetime to at least {}", show(minimum * 2))
        } else {
            String::new()
        };
        let shorten = if r.election.is_some() {
            "--leader-lease-duration, --leader-retry-period or --cert-check-interval"
        } else {
            "--cert-check-interval"
        };
        return Err(format!(
            "--cert-lifetime={} is renewed with {} left (a third), less than twice the longest wait for a \
             leader to renew it ({parts} = {}): the serving certificate could expire around a leader \
             handover. Set --cert-lifetime to at least {}{ca}, or shorten {shorten}",
            show(r.leaf_lifetime),
            show(margin),
            show(wait),
            show(minimum),
        ));
    }
    if r.ca_lifetime < r.leaf_lifetime * 2 {
        return Err(format!(
            "--ca-lifetime={} must be at least twice --cert-lifetime={} (the CA is rotated when a new \
             serving certificate would outlive it, so a shorter one is rotated more often than the \
             certificate is renewed, and one no longer than it in a loop): set --ca-lifetime to at least {}",
            show(r.ca_lifetime),
            show(r.leaf_lifetime),
            show(r.leaf_lifetime * 2),
        ));
    }
    Ok(())
}

fn whole_seconds_up(d: Duration) -> Duration {
    Duration::from_secs(d.as_secs() + u64::from(d.subsec_nanos() > 0))
}

/// A duration as the flags take it: `8760h`, `90m`, `39s`, `500ms`, `3.3s`.
fn show(d: Duration) -> String {
    let secs = d.as_secs();
    if d.subsec_nanos() == 0 {
        return match secs {
            s if s >= 3600 && s % 3600 == 0 => format!("{}h", s / 3600),
            s if s >= 60 && s % 60 == 0 => format!("{}m", s / 60),
            s => format!("{s}s"),
        };
    }
    if secs == 0 {
        return format!("{}ms", d.as_millis());
    }
    let text = format!("{:.1}", d.as_secs_f64());
    format!("{}s", text.strip_suffix(".0").unwrap_or(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);
    const MS: Duration = Duration::from_millis(1);
    const H: Duration = Duration::from_secs(3600);

    /// The tests' election (`tests/e2e_common` ELECTION): 4 s lease, 3 s deadline, 500 ms retry.
    fn fast() -> Option<Timing> {
        Some(Timing { lease_duration: S * 4, renew_deadline: S * 3, retry_period: MS * 500 })
    }

    fn renewal(ca: Duration, leaf: Duration, check: Duration, election: Option<Timing>) -> Renewal {
        Renewal { ca_lifetime: ca, leaf_lifetime: leaf, check_interval: check, election }
    }

    #[test]
    fn waits() {
        assert_eq!(renewal_wait(S * 5, Some(&Timing::default())), S * 27, "15 s + 2 s + 2 × 5 s");
        assert_eq!(renewal_wait(S, fast().as_ref()), MS * 6500, "4 s + 500 ms + 2 × 1 s");
        assert_eq!(renewal_wait(S, None), S * 2);
        let long_deadline = Timing { lease_duration: S * 4, renew_deadline: S * 6, retry_period: S };
        assert_eq!(renewal_wait(S, Some(&long_deadline)), S * 9, "the longer of lease and deadline counts");
        assert_eq!(leaf_margin(S * 39), S * 13);
    }

    #[test]
    fn rule() {
        // (name, renewal, None when accepted or a piece of the refusal)
        let rows: Vec<(&str, Renewal, Option<&str>)> = vec![
            ("the defaults", renewal(H * 87600, H * 8760, S * 5, Some(Timing::default())), None),
            (
                "deploy/ (defaults, no lifetime flags)",
                renewal(H * 87600, H * 8760, S * 5, Some(Timing::default())),
                None,
            ),
            ("e2e_incluster: default lifetimes, fast election", renewal(H * 87600, H * 8760, S * 5, fast()), None),
            (
                "the soak finding: leaf 10 s under the fast election",
                renewal(S * 40, S * 10, S, fast()),
                Some("--cert-lifetime=10s is renewed with 3.3s left"),
            ),
            (
                "... names the minimum, and the CA it needs",
                renewal(S * 40, S * 10, S, fast()),
                Some("Set --cert-lifetime to at least 39s and --ca-lifetime to at least 78s, or shorten"),
            ),
            (
                "... but not a CA that is long enough",
                renewal(H, S * 10, S, fast()),
                Some("Set --cert-lifetime to at least 39s, or shorten"),
            ),
            (
                "... and the flags it came from",
                renewal(S * 40, S * 10, S, fast()),
                Some(
                    "(--leader-lease-duration 4s + --leader-retry-period 500ms + 2 × --cert-check-interval 1s = 6.5s)",
                ),
            ),
            ("leaf at the minimum", renewal(S * 78, S * 39, S, fast()), None),
            ("leaf just under it", renewal(S * 78, S * 38, S, fast()), Some("at least 39s")),
            ("the 600 s soak: CA 240 s, leaf 60 s", renewal(S * 240, S * 60, S, fast()), None),
            ("default election: a 1 h leaf is fine", renewal(H * 2, H, S * 5, Some(Timing::default())), None),
            (
                "default election: 2 m is not (27 s wait, 162 s minimum)",
                renewal(H, S * 120, S * 5, Some(Timing::default())),
                Some("at least 162s"),
            ),
            (
                "a renew deadline longer than the lease is named",
                renewal(
                    S * 100,
                    S * 30,
                    S,
                    Some(Timing { lease_duration: S * 4, renew_deadline: S * 6, retry_period: S }),
                ),
                Some("--leader-renew-deadline 6s + --leader-retry-period 1s"),
            ),
            ("no election: only the check interval", renewal(S * 24, S * 12, S, None), None),
            (
                "no election, leaf too short",
                renewal(S * 24, S * 11, S, None),
                Some("(2 × --cert-check-interval 1s = 2s)"),
            ),
            (
                "no election: nothing about leases to shorten",
                renewal(S * 24, S * 11, S, None),
                Some("or shorten --cert-check-interval"),
            ),
            (
                "e2e_certs' in-process rig: CA 40 s, leaf 12 s, 500 ms poll",
                renewal(S * 40, S * 12, MS * 500, None),
                None,
            ),
            ("a CA twice the leaf", renewal(H * 2, H, S, fast()), None),
            (
                "a CA shorter than twice the leaf",
                renewal(H * 2 - S, H, S, fast()),
                Some("--ca-lifetime=7199s must be at least twice --cert-lifetime=1h"),
            ),
            ("a CA as long as the leaf", renewal(H, H, S, fast()), Some("set --ca-lifetime to at least 2h")),
            ("sub-second figures", renewal(S * 100, S * 2, MS * 100, None), None),
            (
                "sub-second figures refused",
                renewal(S * 100, MS * 1100, MS * 100, None),
                Some("renewed with 366ms left"),
            ),
        ];
        for (name, r, want) in rows {
            match (check(&r), want) {
                (Ok(()), None) => {}
                (Err(e), Some(piece)) => assert!(e.contains(piece), "{name}: {e:?} lacks {piece:?}"),
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn shown_durations_parse_back() {
        for (d, text) in [
            (H * 8760, "8760h"),
            (S * 90 * 60, "90m"),
            (S * 39, "39s"),
            (MS * 500, "500ms"),
            (S * 10 / 3, "3.3s"),
            (MS * 6500, "6.5s"),
            (Duration::ZERO, "0s"),
        ] {
            assert_eq!(show(d), text);
            assert!(crate::cli::parse_duration(text).is_ok(), "{text}");
        }
    }
}
