//! Fault injection for reliability tests, applied to API requests arriving over HTTP (the
//! harness's own garbage collector and kubelet are never faulted): added latency, a probability of
//! `409 Conflict` on writes, a probability of 5xx answers, and dropping every open watch stream
//! (once, or repeatedly after a fixed lifetime). Every knob can be changed at any time by the test.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::watch;

/// The fault settings; `Default` injects nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FaultConfig {
    /// Delay added before every faultable request is handled.
    pub latency: Duration,
    /// Probability (0..=1) that a write (POST/PUT/PATCH/DELETE) answers 409 Conflict untouched.
    pub conflict_rate: f64,
    /// Probability (0..=1) that a request answers with `server_error_code` untouched.
    pub server_error_rate: f64,
    /// The 5xx code for injected server errors (500 when 0).
    pub server_error_code: u16,
    /// Watch streams end after this long (the client must re-watch).
    pub watch_lifetime: Option<Duration>,
    /// Restrict faults to these plural resources (all resources when empty). Discovery is never
    /// faulted.
    pub resources: BTreeSet<String>,
}

/// What a request should suffer.
#[derive(Debug, Clone, PartialEq)]
pub enum Injection {
    /// Answer 409 Conflict.
    Conflict,
    /// Answer this 5xx code.
    ServerError(u16),
}

/// Counters of injected faults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultCounts {
    /// Injected conflicts.
    pub conflicts: u64,
    /// Injected server errors.
    pub server_errors: u64,
    /// Watch streams dropped by `drop_watches` or `watch_lifetime`.
    pub dropped_watches: u64,
}

/// The live fault knobs of one test cluster.
pub struct Faults {
    config: Mutex<FaultConfig>,
    rng: Mutex<fastrand::Rng>,
    counts: Mutex<FaultCounts>,
    drop_signal: watch::Sender<u64>,
}

impl Default for Faults {
    fn default() -> Self {
        Self {
            config: Mutex::new(FaultConfig::default()),
            rng: Mutex::new(fastrand::Rng::new()),
            counts: Mutex::new(FaultCounts::default()),
            drop_signal: watch::channel(0).0,
        }
    }
}

impl Faults {
    /// Replaces all settings.
    pub fn set(&self, config: FaultConfig) {
        *self.config.lock().unwrap_or_else(|e| e.into_inner()) = config;
    }

    /// Changes some settings.
    pub fn update(&self, f: impl FnOnce(&mut FaultConfig)) {
        f(&mut self.config.lock().unwrap_or_else(|e| e.into_inner()));
    }

    /// The current settings.
    pub fn config(&self) -> FaultConfig {
        self.config.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Turns every fault off.
    pub fn clear(&self) {
        self.set(FaultConfig::default());
    }

    /// Seeds the random choices, for reproducible runs.
    pub fn seed(&self, seed: u64) {
        *self.rng.lock().unwrap_or_else(|e| e.into_inner()) = fastrand::Rng::with_seed(seed);
    }

    /// Sets the added latency.
    pub fn set_latency(&self, latency: Duration) {
        self.update(|c| c.latency = latency);
    }

    /// Sets the probability of 409 on writes.
    pub fn set_conflict_rate(&self, rate: f64) {
        self.update(|c| c.conflict_rate = rate);
    }

    /// Sets the probability and code of 5xx answers.
    pub fn set_server_errors(&self, rate: f64, code: u16) {
        self.update(|c| {
            c.server_error_rate = rate;
            c.server_error_code = code;
        });
    }

    /// Ends watch streams after `lifetime` (or never).
    pub fn set_watch_lifetime(&self, lifetime: Option<Duration>) {
        self.update(|c| c.watch_lifetime = lifetime);
    }

    /// Ends every open watch stream now, as a load balancer or apiserver restart would.
    pub fn drop_watches(&self) {
        self.drop_signal.send_modify(|n| *n += 1);
    }

    /// How many faults were injected so far.
    pub fn counts(&self) -> FaultCounts {
        *self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn drop_receiver(&self) -> watch::Receiver<u64> {
        self.drop_signal.subscribe()
    }

    pub(crate) fn count_dropped_watch(&self) {
        self.counts.lock().unwrap_or_else(|e| e.into_inner()).dropped_watches += 1;
    }

    /// The latency to add and the fault to inject (if any) for a request on `resource`.
    pub(crate) fn decide(&self, resource: &str, write: bool) -> (Duration, Option<Injection>) {
        let cfg = self.config();
        if !cfg.resources.is_empty() && !cfg.resources.contains(resource) {
            return (Duration::ZERO, None);
        }
        let mut rng = self.rng.lock().unwrap_or_else(|e| e.into_inner());
        let injection = if write && cfg.conflict_rate > 0.0 && rng.f64() < cfg.conflict_rate {
            Some(Injection::Conflict)
        } else if cfg.server_error_rate > 0.0 && rng.f64() < cfg.server_error_rate {
            let code = if cfg.server_error_code == 0 { 500 } else { cfg.server_error_code };
            Some(Injection::ServerError(code))
        } else {
            None
        };
        drop(rng);
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        match injection {
            Some(Injection::Conflict) => counts.conflicts += 1,
            Some(Injection::ServerError(_)) => counts.server_errors += 1,
            None => {}
        }
        (cfg.latency, injection)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scoped_and_counted() {
        let f = Faults::default();
        f.seed(7);
        assert_eq!(f.decide("pods", true), (Duration::ZERO, None));
        f.set(FaultConfig { conflict_rate: 1.0, resources: ["pods".to_string()].into(), ..Default::default() });
        assert_eq!(f.decide("pods", true).1, Some(Injection::Conflict));
        assert_eq!(f.decide("pods", false).1, None);
        assert_eq!(f.decide("configmaps", true).1, None);
        f.set_server_errors(1.0, 503);
        assert_eq!(f.decide("pods", false).1, Some(Injection::ServerError(503)));
        assert_eq!(f.counts().conflicts, 1);
        assert_eq!(f.counts().server_errors, 1);
    }
}
