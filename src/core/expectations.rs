//! What a controller remembers between rounds so that a stale cache never doubles a pod or
//! deletes one too many (spec §5.1 items 2 and 7; kruise's `pkg/util/expectations`), as plain data
//! with the clock as a value. The reconciler holds one [`Expectations`] for all workloads of a
//! kind:
//! - scale expectations, per workload: names of pods/PVCs it created or deleted that the cache has
//!   not shown yet; while any is pending the workload is not planned (after the timeout, 5 minutes
//!   by default, kruise logs a leak and keeps waiting unless gate
//!   ForceDeleteTimeoutExpectationFeatureGate drops them);
//! - resourceVersion expectations, per object uid: the version its own last write returned; until
//!   the cache has caught up to it, plans would be made on an older object.
//!
//! Besides kruise's event-driven `observe`, [`Expectations::observe_cache`] settles scale
//! expectations from a listing: a created name is seen when the cache has it, a deleted name when
//! the cache no longer does.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// kruise's default `--expectation-timeout`.
pub const EXPECTATION_TIMEOUT: SignedDuration = SignedDuration::from_secs(300);

/// Created or deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ScaleAction {
    Create,
    Delete,
}

#[derive(Clone, Debug, Default, PartialEq)]
struct Pending {
    names: BTreeMap<ScaleAction, BTreeSet<String>>,
    first_unsatisfied: Option<Timestamp>,
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.names.values().all(BTreeSet::is_empty)
    }
}

#[derive(Clone, Debug, PartialEq)]
struct Version {
    resource_version: String,
    first_unsatisfied: Option<Timestamp>,
}

/// Whether a workload (or object) may be planned now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Satisfied {
    /// Nothing pending.
    Yes,
    /// Pending for this long; these names (scale) are awaited.
    No { waited: SignedDuration, pending: Vec<(ScaleAction, String)> },
}

/// Scale and resourceVersion expectations.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Expectations {
    scale: BTreeMap<String, Pending>,
    versions: BTreeMap<String, Version>,
}

/// `isResourceVersionNewer`: versions compare as unsigned integers; an empty or unparsable old
/// version is always older, an unparsable new one never newer.
pub fn resource_version_newer(old: &str, new: &str) -> bool {
    if old.is_empty() {
        return true;
    }
    let Ok(old) = old.parse::<u64>() else { return true };
    new.parse::<u64>().is_ok_and(|new| new >= old)
}

impl Expectations {
    /// `ExpectScale`.
    pub fn expect_scale(&mut self, workload: &str, action: ScaleAction, name: &str) {
        self.scale.entry(workload.to_string()).or_default().names.entry(action).or_default().insert(name.to_string());
    }

    /// `ObserveScale`: the cache showed this creation or deletion (or the write failed).
    pub fn observe_scale(&mut self, workload: &str, action: ScaleAction, name: &str) {
        let Some(p) = self.scale.get_mut(workload) else { return };
        if let Some(set) = p.names.get_mut(&action) {
            set.remove(name);
        }
        if p.is_empty() {
            self.scale.remove(workload);
        }
    }

    /// Settle scale expectations from the names the cache lists now.
    pub fn observe_cache<'a>(&mut self, workload: &str, present: impl IntoIterator<Item = &'a str>) {
        let present: BTreeSet<&str> = present.into_iter().collect();
        let Some(p) = self.scale.get_mut(workload) else { return };
        if let Some(set) = p.names.get_mut(&ScaleAction::Create) {
            set.retain(|n| !present.contains(n.as_str()));
        }
        if let Some(set) = p.names.get_mut(&ScaleAction::Delete) {
            set.retain(|n| present.contains(n.as_str()));
        }
        if p.is_empty() {
            self.scale.remove(workload);
        }
    }

    /// `SatisfiedExpectations`.
    pub fn scale_satisfied(&mut self, workload: &str, now: Timestamp) -> Satisfied {
        let Some(p) = self.scale.get_mut(workload) else { return Satisfied::Yes };
        if p.is_empty() {
            self.scale.remove(workload);
            return Satisfied::Yes;
        }
        let first = *p.first_unsatisfied.get_or_insert(now);
        let pending = p.names.iter().flat_map(|(a, names)| names.iter().map(move |n| (*a, n.clone()))).collect();
        Satisfied::No { waited: now.duration_since(first), pending }
    }

    /// `DeleteExpectations` (the workload is gone, or the timeout is forced).
    pub fn delete_scale(&mut self, workload: &str) {
        self.scale.remove(workload);
    }

    /// `ResourceVersionExpectation.Expect`: our write returned this version.
    pub fn expect_version(&mut self, uid: &str, resource_version: &str) {
        let v = self
            .versions
            .entry(uid.to_string())
            .or_insert_with(|| Version { resource_version: String::new(), first_unsatisfied: None });
        if resource_version_newer(&v.resource_version, resource_version) {
            v.resource_version = resource_version.to_string();
        }
    }

    /// `Observe`: the cache has this version.
    pub fn observe_version(&mut self, uid: &str, resource_version: &str) {
        if self.versions.get(uid).is_some_and(|v| resource_version_newer(&v.resource_version, resource_version)) {
            self.versions.remove(uid);
        }
    }

    /// `IsSatisfied` for the version the cache has.
    pub fn version_satisfied(&mut self, uid: &str, cached: &str, now: Timestamp) -> Satisfied {
        self.observe_version(uid, cached);
        match self.versions.get_mut(uid) {
            None => Satisfied::Yes,
            Some(v) => {
                let first = *v.first_unsatisfied.get_or_insert(now);
                Satisfied::No { waited: now.duration_since(first), pending: Vec::new() }
            }
        }
    }

    /// `Delete`.
    pub fn delete_version(&mut self, uid: &str) {
        self.versions.remove(uid);
    }
}

/// What a round waits for before it may plan (see [`cache_lag`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lag {
    /// What the cache has not shown yet, for the log.
    pub waiting_for: String,
    /// How long the workload has waited.
    pub waited: SignedDuration,
    /// Whether it waits for creations or deletions (scale expectations) rather than versions.
    pub scale: bool,
}

/// What a round does about a [`Lag`] (kruise's CloneSet `Reconcile`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnLag {
    /// Wait: look again shortly (the watch event that settles it usually comes first).
    Wait,
    /// Waited past the expectation timeout: keep waiting, and say so (kruise waits too: a
    /// creation the cache never shows is safer waited for than made twice).
    Overdue,
    /// `ForceDeleteTimeoutExpectationGate` on and scale expectations past the timeout: forget the
    /// workload's scale expectations and look again after [`FORCED_EXPECTATION_REQUEUE`] (kruise
    /// requeues after 10 s; an event lost after a pod was created and quickly deleted cannot
    /// then stop the workload for good).
    ForgetScale,
}

/// How soon a workload whose timed-out scale expectations were dropped is looked at again.
pub const FORCED_EXPECTATION_REQUEUE: SignedDuration = SignedDuration::from_secs(10);

/// The decision for a lag, after kruise: only scale expectations are ever dropped, only past
/// `timeout` (kruise's `unsatisfiedDuration >= ExpectationTimeout`), only with the gate.
pub fn on_lag(lag: &Lag, timeout: SignedDuration, force_delete_timeout_expectation: bool) -> OnLag {
    match (lag.waited >= timeout, lag.scale && force_delete_timeout_expectation) {
        (false, _) => OnLag::Wait,
        (true, true) => OnLag::ForgetScale,
        (true, false) => OnLag::Overdue,
    }
}

/// The name a pod's or PVC's scale expectation is kept under (pods and PVCs share one set per
/// workload).
pub fn scale_name(kind: &str, name: &str) -> String {
    format!("{kind}/{name}")
}

/// Whether a workload's cached view is behind its controller's own writes, from what the cache
/// shows now: the workload at `resource_version` (uid `uid`), and its `pods` and `pvcs`. Scale
/// expectations settle first (a created name is seen once cached, a deleted one once gone or being
/// deleted, as kruise's pod event handler observes deletions), then the resourceVersions of the
/// workload and of every pod it patched. `None`: plan now.
pub fn cache_lag(
    exp: &mut Expectations,
    key: &str,
    uid: &str,
    resource_version: &str,
    pods: &[&k8s_openapi::api::core::v1::Pod],
    pvcs: &[&k8s_openapi::api::core::v1::PersistentVolumeClaim],
    now: Timestamp,
) -> Option<Lag> {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    let names = |live_only: bool| -> Vec<String> {
        let pick = |kind: &'static str| {
            move |m: &ObjectMeta| {
                (!live_only || m.deletion_timestamp.is_none())
                    .then(|| scale_name(kind, m.name.as_deref().unwrap_or("")))
            }
        };
        let pods = pods.iter().filter_map(|p| pick("pod")(&p.metadata));
        let pvcs = pvcs.iter().filter_map(|p| pick("pvc")(&p.metadata));
        pods.chain(pvcs).collect()
    };
    let (cached, live) = (names(false), names(true));
    // Creations settle against everything cached, deletions against what is not being deleted.
    exp.observe_cache(key, cached.iter().map(String::as_str));
    exp.observe_cache(key, live.iter().map(String::as_str));
    if let Satisfied::No { waited, pending } = exp.scale_satisfied(key, now) {
        let list: Vec<String> = pending
            .iter()
            .map(|(a, n)| format!("{} of {n}", if *a == ScaleAction::Create { "creation" } else { "deletion" }))
            .collect();
        return Some(Lag { waiting_for: list.join(", "), waited, scale: true });
    }
    if let Satisfied::No { waited, .. } = exp.version_satisfied(uid, resource_version, now) {
        return Some(Lag { waiting_for: "the workload's last write".into(), waited, scale: false });
    }
    for p in pods {
        let (Some(uid), Some(rv)) = (&p.metadata.uid, &p.metadata.resource_version) else { continue };
        if let Satisfied::No { waited, .. } = exp.version_satisfied(uid, rv, now) {
            let name = p.metadata.name.as_deref().unwrap_or("");
            return Some(Lag { waiting_for: format!("pod {name} as last written"), waited, scale: false });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(s).unwrap()
    }

    /// kruise `TestScale` (scale_expectations_test.go), then waiting times and pending names.
    #[test]
    fn kruise_scale_expectations() {
        let mut e = Expectations::default();
        let (k1, k2) = ("default/cs01", "default/cs02");
        e.expect_scale(k1, ScaleAction::Create, "pod01");
        e.expect_scale(k1, ScaleAction::Create, "pod02");
        e.expect_scale(k1, ScaleAction::Delete, "pod01");
        assert!(matches!(e.scale_satisfied(k1, at(0)), Satisfied::No { .. }));
        e.observe_scale(k1, ScaleAction::Create, "pod02");
        e.observe_scale(k1, ScaleAction::Create, "pod01");
        assert!(matches!(e.scale_satisfied(k1, at(0)), Satisfied::No { .. }));
        e.observe_scale(k2, ScaleAction::Delete, "pod01");
        assert!(matches!(e.scale_satisfied(k1, at(0)), Satisfied::No { .. }), "another workload's observation");
        e.observe_scale(k1, ScaleAction::Delete, "pod01");
        assert_eq!(e.scale_satisfied(k1, at(0)), Satisfied::Yes);

        let mut e = Expectations::default();
        e.expect_scale("ns/cs", ScaleAction::Create, "pod-a");
        e.expect_scale("ns/cs", ScaleAction::Create, "pod-b");
        e.expect_scale("ns/cs", ScaleAction::Delete, "pod-c");
        assert!(matches!(e.scale_satisfied("ns/cs", at(10)), Satisfied::No { .. }));
        e.observe_scale("ns/cs", ScaleAction::Create, "pod-a");
        e.observe_scale("ns/cs", ScaleAction::Create, "pod-b");
        match e.scale_satisfied("ns/cs", at(70)) {
            Satisfied::No { waited, pending } => {
                assert_eq!(waited, SignedDuration::from_secs(60), "waiting since the first unsatisfied check");
                assert_eq!(pending, vec![(ScaleAction::Delete, "pod-c".to_string())]);
            }
            other => panic!("{other:?}"),
        }
        e.observe_scale("ns/cs", ScaleAction::Delete, "pod-c");
        assert_eq!(e.scale_satisfied("ns/cs", at(80)), Satisfied::Yes);
        assert_eq!(e, Expectations::default(), "settled entries are dropped");
    }

    #[test]
    fn cache_listing_settles_scale_expectations() {
        let mut e = Expectations::default();
        e.expect_scale("k", ScaleAction::Create, "new");
        e.expect_scale("k", ScaleAction::Delete, "old");
        e.observe_cache("k", ["old"]);
        assert!(matches!(e.scale_satisfied("k", at(0)), Satisfied::No { pending, .. } if pending.len() == 2));
        e.observe_cache("k", ["old", "new"]);
        assert!(
            matches!(e.scale_satisfied("k", at(0)), Satisfied::No { pending, .. } if pending == vec![(ScaleAction::Delete, "old".into())])
        );
        e.observe_cache("k", ["new"]);
        assert_eq!(e.scale_satisfied("k", at(0)), Satisfied::Yes);
        e.expect_scale("k", ScaleAction::Create, "x");
        e.delete_scale("k");
        assert_eq!(e.scale_satisfied("k", at(0)), Satisfied::Yes);
    }

    /// kruise `TestResourceVersionExpectation` (resource_version_expectation_test.go), 4 rows:
    /// (expect, observe, is satisfied with, result).
    #[test]
    fn kruise_resource_version_expectation() {
        for (i, (expect, observe, check, want)) in
            [("2", "1", "1", false), ("2", "2", "2", true), ("2", "1", "2", true), ("2", "2", "3", true)]
                .into_iter()
                .enumerate()
        {
            let mut e = Expectations::default();
            e.expect_version("", expect);
            e.observe_version("", observe);
            assert_eq!(e.version_satisfied("", check, at(0)) == Satisfied::Yes, want, "#{i}");
        }
        let mut e = Expectations::default();
        e.expect_version("uid-1", "2");
        assert!(matches!(e.version_satisfied("uid-1", "1", at(0)), Satisfied::No { .. }));
        e.expect_version("uid-1", "1");
        assert!(matches!(e.version_satisfied("uid-1", "1", at(1)), Satisfied::No { .. }), "an older expect is ignored");
        e.observe_version("uid-1", "1");
        assert!(
            matches!(e.version_satisfied("uid-1", "1", at(2)), Satisfied::No { waited, .. } if waited == SignedDuration::from_secs(2))
        );
        assert_eq!(e.version_satisfied("uid-1", "2", at(3)), Satisfied::Yes);
        assert_eq!(e.version_satisfied("uid-2", "5", at(3)), Satisfied::Yes);
        e.expect_version("uid-3", "9");
        e.delete_version("uid-3");
        assert_eq!(e.version_satisfied("uid-3", "1", at(3)), Satisfied::Yes);
    }

    #[test]
    fn resource_version_order() {
        let rows = [
            ("", "1", true),
            ("1", "2", true),
            ("2", "2", true),
            ("3", "2", false),
            ("x", "1", true),
            ("1", "x", false),
        ];
        for (old, new, want) in rows {
            assert_eq!(resource_version_newer(old, new), want, "{old} -> {new}");
        }
    }

    fn pod(name: &str, uid: &str, rv: &str, deleting: bool) -> k8s_openapi::api::core::v1::Pod {
        let mut p = k8s_openapi::api::core::v1::Pod::default();
        p.metadata.name = Some(name.into());
        p.metadata.uid = Some(uid.into());
        p.metadata.resource_version = Some(rv.into());
        if deleting {
            p.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(at(0)));
        }
        p
    }

    /// The reconciler's gate: a round plans only once the cache shows its own creations,
    /// deletions (a pod being deleted counts) and patches.
    #[test]
    fn cache_lag_gates_planning_on_the_controllers_own_writes() {
        let mut e = Expectations::default();
        let k = "ns/web";
        assert_eq!(cache_lag(&mut e, k, "cs", "5", &[], &[], at(0)), None, "nothing expected");

        e.expect_scale(k, ScaleAction::Create, &scale_name("pod", "web-a"));
        e.expect_scale(k, ScaleAction::Create, &scale_name("pvc", "data-web-a"));
        let lag = cache_lag(&mut e, k, "cs", "5", &[], &[], at(1)).unwrap();
        assert_eq!(lag.waiting_for, "creation of pod/web-a, creation of pvc/data-web-a");
        let a = pod("web-a", "u-a", "7", false);
        let lag = cache_lag(&mut e, k, "cs", "5", &[&a], &[], at(3)).unwrap();
        assert_eq!(lag.waiting_for, "creation of pvc/data-web-a");
        assert_eq!(lag.waited, SignedDuration::from_secs(2));
        let mut claim = k8s_openapi::api::core::v1::PersistentVolumeClaim::default();
        claim.metadata.name = Some("data-web-a".into());
        assert_eq!(cache_lag(&mut e, k, "cs", "5", &[&a], &[&claim], at(4)), None);

        // A deletion is seen when the pod is being deleted, or gone.
        e.expect_scale(k, ScaleAction::Delete, &scale_name("pod", "web-a"));
        assert!(cache_lag(&mut e, k, "cs", "5", &[&a], &[&claim], at(5)).is_some(), "still cached, not deleting");
        let a_deleting = pod("web-a", "u-a", "8", true);
        assert_eq!(cache_lag(&mut e, k, "cs", "5", &[&a_deleting], &[&claim], at(6)), None);

        // A created pod that is already being deleted settles its creation too.
        e.expect_scale(k, ScaleAction::Create, &scale_name("pod", "web-b"));
        let b_deleting = pod("web-b", "u-b", "9", true);
        assert_eq!(cache_lag(&mut e, k, "cs", "5", &[&b_deleting], &[], at(7)), None);

        // Patches: the workload's own status write, then a pod's.
        e.expect_version("cs", "6");
        let lag = cache_lag(&mut e, k, "cs", "5", &[], &[], at(8)).unwrap();
        assert_eq!(lag.waiting_for, "the workload's last write");
        assert_eq!(cache_lag(&mut e, k, "cs", "6", &[], &[], at(9)), None);
        e.expect_version("u-c", "12");
        let c_old = pod("web-c", "u-c", "11", false);
        let lag = cache_lag(&mut e, k, "cs", "6", &[&c_old], &[], at(10)).unwrap();
        assert_eq!(lag.waiting_for, "pod web-c as last written");
        let c_new = pod("web-c", "u-c", "13", false);
        assert_eq!(cache_lag(&mut e, k, "cs", "6", &[&c_new], &[], at(11)), None, "a newer version also satisfies");
    }

    /// kruise's CloneSet `Reconcile` on unsatisfied expectations, with and without the gate.
    #[test]
    fn lag_decisions() {
        let timeout = EXPECTATION_TIMEOUT;
        let lag =
            |secs: i64, scale: bool| Lag { waiting_for: String::new(), waited: SignedDuration::from_secs(secs), scale };
        let rows = [
            // (waited, scale, gate) -> decision
            (0, true, false, OnLag::Wait),
            (299, true, true, OnLag::Wait),
            (300, true, false, OnLag::Overdue),
            (300, true, true, OnLag::ForgetScale),
            (900, true, true, OnLag::ForgetScale),
            (300, false, true, OnLag::Overdue),
            (900, false, false, OnLag::Overdue),
        ];
        for (waited, scale, gate, want) in rows {
            assert_eq!(on_lag(&lag(waited, scale), timeout, gate), want, "waited {waited}s scale {scale} gate {gate}");
        }
    }

    #[test]
    fn dropped_scale_expectations_let_the_workload_plan() {
        let mut e = Expectations::default();
        e.expect_scale("ns/cs", ScaleAction::Create, &scale_name("pod", "cs-lost"));
        let lag = cache_lag(&mut e, "ns/cs", "uid", "1", &[], &[], at(0)).expect("the creation is awaited");
        assert!(lag.scale, "{lag:?}");
        let later = cache_lag(&mut e, "ns/cs", "uid", "1", &[], &[], at(301)).expect("still awaited");
        assert_eq!(on_lag(&later, EXPECTATION_TIMEOUT, true), OnLag::ForgetScale);
        e.delete_scale("ns/cs");
        assert_eq!(cache_lag(&mut e, "ns/cs", "uid", "1", &[], &[], at(302)), None);
    }
}
