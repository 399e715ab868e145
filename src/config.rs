//! Process settings every task receives (issue 10 item 1): the manager namespace (where
//! SidecarSet revisions, the certificate Secret, the webhook Service and the leader Lease live),
//! the feature gates, and the clock. Handlers read them from their `Context`, so tests vary them
//! instead of the environment.

use std::time::SystemTime;

use crate::core::features::FeatureGates;

/// The namespace kruise runs in when `POD_NAMESPACE`/`--namespace` do not say (spec §8.4).
pub const DEFAULT_NAMESPACE: &str = "kruise-system";

/// What every task of the process shares.
#[derive(Debug, Clone)]
pub struct Config {
    /// The manager namespace.
    pub namespace: String,
    /// Effective feature gates.
    pub gates: FeatureGates,
    /// The clock.
    pub clock: Clock,
}

impl Default for Config {
    fn default() -> Self {
        Self { namespace: DEFAULT_NAMESPACE.to_string(), gates: FeatureGates::default(), clock: Clock::System }
    }
}

impl Config {
    /// The defaults with these gates.
    pub fn with_gates(gates: FeatureGates) -> Self {
        Self { gates, ..Self::default() }
    }
}

/// Where "now" comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// The system clock.
    System,
    /// A fixed instant (tests).
    Fixed(SystemTime),
}

impl Clock {
    /// Now.
    pub fn now(&self) -> SystemTime {
        match self {
            Clock::System => SystemTime::now(),
            Clock::Fixed(t) => *t,
        }
    }
}
