//! Leader election on a Lease, decided as client-go's `leaderelection` package decides it (spec
//! §8.5: Lease `kruise-manager` in the manager namespace), so a kruise manager written in Go and
//! this one never lead at the same time while one replaces the other:
//! - a Lease held by another is taken over only when its record has not changed for a whole lease
//!   duration, measured on the local clock from when this process last saw it change (no trust in
//!   the other holder's clock);
//! - the holder renews every retry period and steps down when no renewal succeeded within the
//!   renew deadline (before any other candidate may take over);
//! - on shutdown the holder releases the Lease (empty holder), so a successor need not wait.
//!
//! This file decides; `crate::leader` reads and writes the Lease.

use std::time::{Duration, SystemTime};

/// Timing, as controller-runtime's defaults (`LeaseDuration` 15 s, `RenewDeadline` 10 s,
/// `RetryPeriod` 2 s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// How long a record stays valid after it last changed.
    pub lease_duration: Duration,
    /// How long the holder keeps leading without a successful renewal.
    pub renew_deadline: Duration,
    /// How often candidates and the holder act.
    pub retry_period: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

/// The fields of a Lease's spec the election uses.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Record {
    /// `holderIdentity` (empty: released).
    pub holder: String,
    /// `leaseDurationSeconds`.
    pub lease_duration_seconds: i32,
    /// `acquireTime`.
    pub acquire_time: Option<SystemTime>,
    /// `renewTime`.
    pub renew_time: Option<SystemTime>,
    /// `leaseTransitions`.
    pub transitions: i32,
}

/// What a candidate remembers between rounds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observation {
    /// The record last seen.
    pub record: Option<Record>,
    /// Local monotonic time (any origin) when it was last seen to change.
    pub changed_at: Option<Duration>,
}

/// What to do this round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Round {
    /// No Lease exists: create it with this record.
    Create(Record),
    /// Write this record over the one read (with its resourceVersion, so a concurrent writer
    /// wins and this round fails).
    Update(Record),
    /// Another candidate holds a valid lease.
    Follow {
        /// Who.
        holder: String,
    },
}

/// One round of `tryAcquireOrRenew`: given what was read (`None`: no Lease), decide.
/// `local_now` is the monotonic clock, `wall_now` goes into the record.
pub fn round(
    me: &str,
    read: Option<&Record>,
    seen: &mut Observation,
    timing: Timing,
    local_now: Duration,
    wall_now: SystemTime,
) -> Round {
    let fresh = |transitions: i32| Record {
        holder: me.to_string(),
        lease_duration_seconds: i32::try_from(timing.lease_duration.as_secs()).unwrap_or(i32::MAX),
        acquire_time: Some(wall_now),
        renew_time: Some(wall_now),
        transitions,
    };
    let Some(current) = read else {
        return Round::Create(fresh(0));
    };
    if seen.record.as_ref() != Some(current) {
        seen.record = Some(current.clone());
        seen.changed_at = Some(local_now);
    }
    let changed_at = seen.changed_at.unwrap_or(local_now);
    let valid = changed_at + timing.lease_duration > local_now;
    if !current.holder.is_empty() && current.holder != me && valid {
        return Round::Follow { holder: current.holder.clone() };
    }
    if current.holder == me {
        Round::Update(Record {
            acquire_time: current.acquire_time,
            transitions: current.transitions,
            ..fresh(current.transitions)
        })
    } else {
        Round::Update(fresh(current.transitions + 1))
    }
}

/// The record written when the holder steps down on shutdown (client-go's `ReleaseOnCancel`).
pub fn released(wall_now: SystemTime) -> Record {
    Record {
        holder: String::new(),
        lease_duration_seconds: 1,
        acquire_time: Some(wall_now),
        renew_time: Some(wall_now),
        transitions: 0,
    }
}

/// Whether the holder must stop leading: its last successful renewal is older than the renew
/// deadline.
pub fn must_step_down(last_renewed: Duration, local_now: Duration, timing: Timing) -> bool {
    local_now.saturating_sub(last_renewed) >= timing.renew_deadline
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    fn wall(s: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + s)
    }

    fn held_by(holder: &str, renewed: u64, transitions: i32) -> Record {
        Record {
            holder: holder.into(),
            lease_duration_seconds: 15,
            acquire_time: Some(wall(0)),
            renew_time: Some(wall(renewed)),
            transitions,
        }
    }

    #[test]
    fn no_lease_is_created_by_the_first_candidate() {
        let mut seen = Observation::default();
        let r = round("me", None, &mut seen, Timing::default(), S, wall(5));
        assert_eq!(
            r,
            Round::Create(Record {
                holder: "me".into(),
                lease_duration_seconds: 15,
                acquire_time: Some(wall(5)),
                renew_time: Some(wall(5)),
                transitions: 0
            })
        );
    }

    #[test]
    fn a_valid_lease_of_another_is_followed_until_it_stops_changing_for_a_lease_duration() {
        let t = Timing::default();
        let mut seen = Observation::default();
        let other = held_by("other", 100, 3);
        assert_eq!(
            round("me", Some(&other), &mut seen, t, 10 * S, wall(200)),
            Round::Follow { holder: "other".into() }
        );
        // Its renewTime says long ago, but we judge by when we saw it change: still valid.
        assert_eq!(
            round("me", Some(&other), &mut seen, t, 24 * S, wall(214)),
            Round::Follow { holder: "other".into() }
        );
        // Renewed: the clock restarts.
        let renewed = held_by("other", 112, 3);
        assert_eq!(
            round("me", Some(&renewed), &mut seen, t, 24 * S, wall(214)),
            Round::Follow { holder: "other".into() }
        );
        assert_eq!(
            round("me", Some(&renewed), &mut seen, t, 38 * S, wall(228)),
            Round::Follow { holder: "other".into() }
        );
        // Unchanged for 15 s: taken over, one more transition, acquired now.
        match round("me", Some(&renewed), &mut seen, t, 39 * S, wall(229)) {
            Round::Update(r) => {
                assert_eq!(r.holder, "me");
                assert_eq!(r.transitions, 4);
                assert_eq!(r.acquire_time, Some(wall(229)));
            }
            other => panic!("expected a takeover, got {other:?}"),
        }
    }

    #[test]
    fn the_holder_renews_keeping_its_acquire_time_and_transitions() {
        let mut seen = Observation::default();
        let mine = held_by("me", 100, 2);
        match round("me", Some(&mine), &mut seen, Timing::default(), 50 * S, wall(102)) {
            Round::Update(r) => {
                assert_eq!((r.holder.as_str(), r.transitions, r.acquire_time), ("me", 2, Some(wall(0))));
                assert_eq!(r.renew_time, Some(wall(102)));
            }
            other => panic!("expected a renewal, got {other:?}"),
        }
    }

    #[test]
    fn a_released_lease_is_taken_at_once() {
        let mut seen = Observation::default();
        let released = Record { holder: String::new(), ..held_by("", 100, 5) };
        match round("me", Some(&released), &mut seen, Timing::default(), S, wall(101)) {
            Round::Update(r) => assert_eq!((r.holder.as_str(), r.transitions), ("me", 6)),
            other => panic!("expected an acquisition, got {other:?}"),
        }
        assert_eq!(super::released(wall(3)).holder, "");
    }

    #[test]
    fn the_holder_steps_down_at_the_renew_deadline_before_others_may_take_over() {
        let t = Timing::default();
        assert!(!must_step_down(100 * S, 109 * S, t));
        assert!(must_step_down(100 * S, 110 * S, t));
        assert!(t.renew_deadline < t.lease_duration);
    }
}
