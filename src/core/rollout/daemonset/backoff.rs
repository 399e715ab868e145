//! The failed-pod backoff of the Advanced DaemonSet (kruise's `failedPodsBackoff`, client-go's
//! `flowcontrol.Backoff` with 1 s initial and 15 min maximum), as plain data the controller keeps
//! between rounds and the planner reads and advances: a failed daemon pod is deleted (to be
//! created again) at most once per backoff period per node, the period doubling each time.

use std::collections::BTreeMap;

use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// Initial period.
pub const INITIAL: SignedDuration = SignedDuration::from_secs(1);
/// Maximum period.
pub const MAX: SignedDuration = SignedDuration::from_secs(15 * 60);

/// Backoff entries by key (`<ds uid>/<observedGeneration>/<node>`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Backoff {
    entries: BTreeMap<String, (SignedDuration, Timestamp)>,
}

impl Backoff {
    /// `IsInBackOffSinceUpdate`: the remaining wait, when still backing off.
    pub fn waiting(&self, key: &str, now: Timestamp) -> Option<SignedDuration> {
        let (period, last) = self.entries.get(key)?;
        let since = now.duration_since(*last);
        (since < *period).then(|| *period - since)
    }

    /// `Next`: doubles the period (from [`INITIAL`] when new or expired after 2 × [`MAX`]).
    pub fn next(&mut self, key: &str, now: Timestamp) {
        let period = match self.entries.get(key) {
            Some((p, last)) if now.duration_since(*last) <= MAX * 2 => (*p * 2).min(MAX),
            _ => INITIAL,
        };
        self.entries.insert(key.to_string(), (period, now));
    }

    /// `GC`: entries idle for more than 2 × [`MAX`] go.
    pub fn gc(&mut self, now: Timestamp) {
        self.entries.retain(|_, (_, last)| now.duration_since(*last) <= MAX * 2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_double_up_to_the_maximum_and_expire() {
        let t0 = Timestamp::from_second(1_000).unwrap();
        let mut b = Backoff::default();
        assert_eq!(b.waiting("k", t0), None);
        b.next("k", t0);
        assert_eq!(b.waiting("k", t0), Some(SignedDuration::from_secs(1)));
        let t1 = t0 + SignedDuration::from_secs(1);
        assert_eq!(b.waiting("k", t1), None);
        b.next("k", t1);
        assert_eq!(b.waiting("k", t1), Some(SignedDuration::from_secs(2)));
        for i in 0..20 {
            b.next("k", t1 + SignedDuration::from_secs(i));
        }
        assert_eq!(b.waiting("k", t1 + SignedDuration::from_secs(19)), Some(MAX));
        let late = t1 + MAX * 3;
        b.next("k", late);
        assert_eq!(b.waiting("k", late), Some(INITIAL));
        b.gc(late + MAX * 3);
        assert_eq!(b, Backoff::default());
    }
}
