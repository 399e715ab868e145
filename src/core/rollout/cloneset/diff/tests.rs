//! kruise's `TestCalculateDiffsWithExpectation`
//! (pkg/controller/cloneset/sync/cloneset_sync_utils_test.go), all 80 rows, with exact numbers.
//! As in kruise's test: gate CloneSetPartitionRollback on unless the row turns it off, the current
//! revision is `old_rev` unless the row says the revisions are consistent, and rows marked
//! `PreparingUpdateAsUpdate` count PreparingUpdate pods as new (kruise passes
//! `revision.IsPodUpdate` with that gate on).

use super::*;
use crate::apis::cloneset::{CloneSet, CloneSetSpec};
use crate::apis::keys::{LIFECYCLE_STATE, SPECIFIED_DELETE};
use crate::core::pods::test_pods::{at, pod, running_ready};
use crate::core::rollout::cloneset::settings::{Gates, SCALING_EXCLUDE_PREPARING_DELETE};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

type Diffs = ExpectationDiffs;

const OLD: &str = "old_rev";
const NEW: &str = "new_rev";

#[derive(Clone, Copy, PartialEq)]
enum Flag {
    /// currentRevision == updateRevision.
    Consistent,
    /// CloneSetPartitionRollback off.
    RollbackOff,
    /// PreparingUpdate pods count as new.
    PreparingUpdateAsUpdate,
}

fn i(n: i32) -> IntOrString {
    IntOrString::Int(n)
}

fn s(v: &str) -> IntOrString {
    IntOrString::String(v.into())
}

/// `createTestCloneSet(replicas, partition, maxUnavailable, maxSurge)`.
fn cs(replicas: i32, partition: IntOrString, max_unavailable: IntOrString, max_surge: IntOrString) -> CloneSet {
    let mut spec = CloneSetSpec { replicas: Some(replicas), ..Default::default() };
    spec.update_strategy.partition = Some(partition);
    spec.update_strategy.max_unavailable = Some(max_unavailable);
    spec.update_strategy.max_surge = Some(max_surge);
    CloneSet::new("test", spec)
}

trait Edit {
    fn exclude_preparing_delete(self) -> Self;
    fn paused(self) -> Self;
    fn scale_max_unavailable(self, v: IntOrString) -> Self;
}

impl Edit for CloneSet {
    fn exclude_preparing_delete(mut self) -> Self {
        self.metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert(SCALING_EXCLUDE_PREPARING_DELETE.into(), "true".into());
        self
    }
    fn paused(mut self) -> Self {
        self.spec.update_strategy.paused = true;
        self
    }
    fn scale_max_unavailable(mut self, v: IntOrString) -> Self {
        self.spec.scale_strategy.max_unavailable = Some(v);
        self
    }
}

/// `createTestPod(revision, lifecycleState, ready, specifiedDelete)`.
fn p(revision: &str, state: &str, ready: bool, specified_delete: bool) -> Pod {
    let mut labels = vec![("controller-revision-hash", revision), (LIFECYCLE_STATE, state)];
    if specified_delete {
        labels.push((SPECIFIED_DELETE, "true"));
    }
    let p = pod("p", &labels);
    if ready { running_ready(p, None) } else { p }
}

struct Row {
    name: &'static str,
    cs: CloneSet,
    pods: Vec<Pod>,
    flags: &'static [Flag],
    want: Diffs,
}

#[test]
fn kruise_calculate_diffs_with_expectation() {
    #[rustfmt::skip]
    let rows = vec![
        Row { name: "an empty cloneset", cs: cs(0, i(0), i(1), i(0)), pods: vec![], flags: &[], want: Diffs::default() },
        Row { name: "increase replicas to 5 (step 1/2)", cs: cs(5, i(0), i(1), i(0)), pods: vec![], flags: &[], want: Diffs { scale_up_num: 5, scale_up_limit: 5, ..Default::default() } },
        Row { name: "increase replicas to 5 (step 2/2)", cs: cs(5, i(0), i(1), i(0)), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false)], flags: &[], want: Diffs::default() },
        Row { name: "specified delete 1 pod (all ready) (step 1/3)", cs: cs(5, i(0), i(1), i(0)), pods: vec![p(NEW, "Normal", true, true), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false)], flags: &[], want: Diffs { delete_ready_limit: 1, ..Default::default() } },
        Row { name: "specified delete 1 pod (all ready) (step 2/3)", cs: cs(5, i(0), i(1), i(0)), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false)], flags: &[], want: Diffs { scale_up_num: 1, scale_up_limit: 1, ..Default::default() } },
        Row { name: "specified delete 1 pod (all ready) (step 3/3)", cs: cs(5, i(0), i(1), i(0)), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false)], flags: &[], want: Diffs::default() },
        Row { name: "specified delete 2 pod (all ready) (step 1/6)", cs: cs(5, i(0), i(1), i(0)), pods: vec![p(NEW, "Normal", true, true), p(NEW, "Normal", true, true), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false)], flags: &[], want: Diffs { delete_ready_limit: 1, ..Default::default() } },
        Row { name: "specified delete 2 pod (all ready) (step 2/6)", cs: cs(5, i(0), i(1), i(0)), pods: vec![p(NEW, "Normal", true, true), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false)], flags: &[], want: Diffs { scale_up_num: 1, scale_up_limit: 1, ..Default::default() } },
        Row { name: "specified delete 2 pod (all ready) (step 3/6)", cs: cs(5, i(0), i(1), i(0)), pods: vec![p(NEW, "Normal", true, true), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", false, false)], flags: &[], want: Diffs::default() },
        Row { name: "specified delete 2 pod (all ready) (step 4/6)", cs: cs(5, i(0), i(1), i(0)), pods: vec![p(NEW, "Normal", true, true), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false)], flags: &[], want: Diffs { delete_ready_limit: 1, ..Default::default() } },
        Row { name: "specified delete 2 pod (all ready) (step 5/6)", cs: cs(5, i(0), i(1), i(0)), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false)], flags: &[], want: Diffs { scale_up_num: 1, scale_up_limit: 1, ..Default::default() } },
        Row { name: "specified delete 2 pod (all ready) (step 6/6)", cs: cs(5, i(0), i(1), i(0)), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false)], flags: &[], want: Diffs::default() },
        Row { name: "specified delete 2 pod and replicas to 4 (step 1/3)", cs: cs(4, i(0), i(1), i(0)), pods: vec![p(NEW, "Normal", false, true), p(NEW, "Normal", false, true), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false)], flags: &[], want: Diffs { delete_ready_limit: 2, ..Default::default() } },
        Row { name: "specified delete 2 pod and replicas to 4 (step 2/3)", cs: cs(4, i(0), i(1), i(0)), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false)], flags: &[], want: Diffs { scale_up_num: 1, scale_up_limit: 1, ..Default::default() } },
        Row { name: "specified delete 2 pod and replicas to 4 (step 3/3)", cs: cs(4, i(0), i(1), i(0)), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false)], flags: &[], want: Diffs::default() },
        Row { name: "update partition=3 (step 1/3)", cs: cs(5, i(3), i(1), i(0)), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false)], flags: &[], want: Diffs { update_num: 2, update_max_unavailable: 1, ..Default::default() } },
        Row { name: "update partition=3 (step 2/3)", cs: cs(5, i(3), i(1), i(0)), pods: vec![p(NEW, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false)], flags: &[], want: Diffs { update_num: 1, update_max_unavailable: 1, ..Default::default() } },
        Row { name: "update partition=3 (step 3/3)", cs: cs(5, i(3), i(1), i(0)), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false)], flags: &[], want: Diffs::default() },
        Row { name: "rollback partition=4 (step 1/3)", cs: cs(5, i(4), i(2), i(0)), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(OLD, "Normal", true, false)], flags: &[], want: Diffs { update_num: -3, update_max_unavailable: 2, ..Default::default() } },
        Row { name: "rollback partition=4 (step 2/3)", cs: cs(5, i(4), i(2), i(0)), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false)], flags: &[], want: Diffs { update_num: -1, update_max_unavailable: 2, ..Default::default() } },
        Row { name: "rollback partition=4 (step 3/3)", cs: cs(5, i(4), i(2), i(0)), pods: vec![p(NEW, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false)], flags: &[], want: Diffs::default() },
        Row { name: "specified delete with maxSurge (step 1/4)", cs: cs(5, i(0), i(0), i(1)), pods: vec![p(NEW, "Normal", true, true), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false)], flags: &[], want: Diffs { scale_up_num: 1, use_surge: 1, scale_up_limit: 1, ..Default::default() } },
        Row { name: "specified delete with maxSurge (step 2/4)", cs: cs(5, i(0), i(0), i(1)), pods: vec![p(NEW, "Normal", true, true), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", false, false)], flags: &[], want: Diffs { use_surge: 1, ..Default::default() } },
        Row { name: "specified delete with maxSurge (step 3/4)", cs: cs(5, i(0), i(0), i(1)), pods: vec![p(NEW, "Normal", true, true), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false)], flags: &[], want: Diffs { delete_ready_limit: 1, use_surge: 1, ..Default::default() } },
        Row { name: "specified delete with maxSurge (step 4/4)", cs: cs(5, i(0), i(0), i(1)), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false)], flags: &[], want: Diffs::default() },
        Row { name: "update in-place partition=3 with maxSurge (step 1/4)", cs: cs(5, i(3), i(1), i(1)), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false)], flags: &[], want: Diffs { scale_up_num: 1, use_surge: 1, update_num: 2, update_max_unavailable: 1, scale_up_limit: 1, ..Default::default() } },
        Row { name: "update in-place partition=3 with maxSurge (step 2/4)", cs: cs(5, i(3), i(1), i(1)), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(NEW, "Normal", false, false)], flags: &[], want: Diffs { use_surge: 1, update_num: 1, update_max_unavailable: 2, ..Default::default() } },
        Row { name: "update in-place partition=3 with maxSurge (step 3/4)", cs: cs(5, i(3), i(1), i(1)), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(NEW, "Updating", false, false), p(NEW, "Normal", false, false)], flags: &[], want: Diffs { scale_down_num: 1, scale_down_num_old_revision: 1, delete_ready_limit: 0, ..Default::default() } },
        Row { name: "update in-place partition=3 with maxSurge (step 4/4)", cs: cs(5, i(3), i(1), i(1)), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", false, false)], flags: &[], want: Diffs { scale_down_num: 1, scale_down_num_old_revision: 1, delete_ready_limit: 1, ..Default::default() } },
        Row { name: "update recreate partition=3 with maxSurge (step 1/7)", cs: cs(5, i(3), i(1), i(1)), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false)], flags: &[], want: Diffs { scale_up_num: 1, use_surge: 1, update_num: 2, update_max_unavailable: 1, scale_up_limit: 1, ..Default::default() } },
        Row { name: "update recreate partition=3 with maxSurge (step 2/7)", cs: cs(5, i(3), i(1), i(1)), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(NEW, "Normal", false, false)], flags: &[], want: Diffs { use_surge: 1, update_num: 1, update_max_unavailable: 2, ..Default::default() } },
        Row { name: "update recreate partition=3 with maxSurge (step 3/7)", cs: cs(5, i(3), i(1), i(1)), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, true), p(NEW, "Normal", false, false)], flags: &[], want: Diffs { use_surge: 1, use_surge_old_revision: 1, delete_ready_limit: 1, update_num: 1, update_max_unavailable: 2, ..Default::default() } },
        Row { name: "update recreate partition=3 with maxSurge (step 4/7)", cs: cs(5, i(3), i(1), i(1)), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(NEW, "Normal", false, false)], flags: &[], want: Diffs { use_surge: 1, scale_up_num: 1, update_num: 1, update_max_unavailable: 1, scale_up_limit: 1, ..Default::default() } },
        Row { name: "update recreate partition=3 with maxSurge (step 5/7)", cs: cs(5, i(3), i(1), i(1)), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(NEW, "Normal", false, false), p(NEW, "Normal", false, false)], flags: &[], want: Diffs { scale_down_num: 1, scale_down_num_old_revision: 1, delete_ready_limit: 0, ..Default::default() } },
        Row { name: "update recreate partition=3 with maxSurge (step 6/7)", cs: cs(5, i(3), i(1), i(1)), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", false, false)], flags: &[], want: Diffs { scale_down_num: 1, scale_down_num_old_revision: 1, delete_ready_limit: 1, ..Default::default() } },
        Row { name: "update recreate partition=3 with maxSurge (step 7/7)", cs: cs(5, i(3), i(1), i(1)), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false)], flags: &[], want: Diffs::default() },
        Row { name: "update recreate partition=99% with maxUnavailable=3, maxSurge=2 (step 1/3)", cs: cs(5, s("99%"), i(3), i(2)), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false)], flags: &[], want: Diffs { scale_up_num: 1, use_surge: 1, update_num: 1, update_max_unavailable: 3, scale_up_limit: 1, ..Default::default() } },
        Row { name: "update recreate partition=99% with maxUnavailable=3, maxSurge=2 (step 2/3)", cs: cs(5, s("99%"), i(3), i(2)), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(NEW, "Normal", false, false)], flags: &[], want: Diffs { scale_down_num: 1, scale_down_num_old_revision: 1, delete_ready_limit: 3, ..Default::default() } },
        Row { name: "update recreate partition=99% with maxUnavailable=3, maxSurge=2 (step 3/3)", cs: cs(5, s("99%"), i(3), i(2)), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(NEW, "Normal", false, false)], flags: &[], want: Diffs::default() },
        Row { name: "update recreate partition=99% with maxUnavailable=40%, maxSurge=30% (step 1/3)", cs: cs(5, s("99%"), s("40%"), s("30%")), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false)], flags: &[], want: Diffs { scale_up_num: 1, use_surge: 1, update_num: 1, update_max_unavailable: 2, scale_up_limit: 1, ..Default::default() } },
        Row { name: "update recreate partition=99% with maxUnavailable=40%, maxSurge=30% (step 2/3)", cs: cs(5, s("99%"), s("40%"), s("30%")), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(NEW, "Normal", false, false)], flags: &[], want: Diffs { scale_down_num: 1, scale_down_num_old_revision: 1, delete_ready_limit: 2, ..Default::default() } },
        Row { name: "update recreate partition=99% with maxUnavailable=40%, maxSurge=30% (step 3/3)", cs: cs(5, s("99%"), s("40%"), s("30%")), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(NEW, "Normal", false, false)], flags: &[], want: Diffs::default() },
        Row { name: "update recreate partition=99% with maxUnavailable=30%, maxSurge=30% (step 1/3)", cs: cs(5, s("99%"), s("30%"), s("30%")), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false)], flags: &[], want: Diffs { scale_up_num: 1, use_surge: 1, update_num: 1, update_max_unavailable: 1, scale_up_limit: 1, ..Default::default() } },
        Row { name: "update recreate partition=99% with maxUnavailable=30%, maxSurge=30% (step 2/3)", cs: cs(5, s("99%"), s("30%"), s("30%")), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(NEW, "Normal", false, false)], flags: &[], want: Diffs { scale_down_num: 1, scale_down_num_old_revision: 1, delete_ready_limit: 1, ..Default::default() } },
        Row { name: "update recreate partition=99% with maxUnavailable=30%, maxSurge=30% (step 3/3)", cs: cs(5, s("99%"), s("30%"), s("30%")), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(NEW, "Normal", false, false)], flags: &[], want: Diffs::default() },
        Row { name: "revision consistent 1", cs: cs(5, i(0), i(1), i(0)), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false)], flags: &[Flag::Consistent], want: Diffs::default() },
        Row { name: "revision consistent 2", cs: cs(5, i(3), i(1), i(0)), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false)], flags: &[Flag::Consistent], want: Diffs::default() },
        Row { name: "revision consistent 3", cs: cs(5, i(3), i(1), i(0)), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false)], flags: &[Flag::Consistent], want: Diffs::default() },
        Row { name: "revision consistent 4", cs: cs(5, i(1), i(1), i(0)), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false)], flags: &[Flag::Consistent], want: Diffs { update_num: 2, update_max_unavailable: 1, ..Default::default() } },
        Row { name: "allow to update when fail to scale out normally", cs: cs(5, i(1), i(2), i(0)), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false)], flags: &[Flag::Consistent], want: Diffs { scale_up_num: 1, update_num: 1, update_max_unavailable: 1, scale_up_limit: 1, ..Default::default() } },
        Row { name: "allow to update when fail to scale in normally", cs: cs(5, i(1), i(1), i(0)), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false)], flags: &[Flag::Consistent], want: Diffs { scale_down_num: 1, scale_down_num_old_revision: 2, delete_ready_limit: 2, update_num: 1, update_max_unavailable: 2, ..Default::default() } },
        Row { name: "disable rollback feature-gate", cs: cs(5, i(4), i(1), i(0)), pods: vec![p(OLD, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false)], flags: &[Flag::RollbackOff], want: Diffs::default() },
        Row { name: "increase replicas 0 to 5 with scale maxUnavailable = 2", cs: cs(5, i(0), i(1), i(0)).scale_max_unavailable(i(2)), pods: vec![], flags: &[], want: Diffs { scale_up_num: 5, scale_up_limit: 2, ..Default::default() } },
        Row { name: "increase replicas 3 to 6 with scale maxUnavailable = 2, not ready pod = 1", cs: cs(6, i(0), i(1), i(0)).scale_max_unavailable(i(2)), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", false, false)], flags: &[], want: Diffs { scale_up_num: 3, scale_up_limit: 1, ..Default::default() } },
        Row { name: "increase replicas 3 to 6 with scale maxUnavailable = 2, not ready pod = 2", cs: cs(6, i(0), i(1), i(0)).scale_max_unavailable(i(2)), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", false, false), p(NEW, "Normal", false, false)], flags: &[], want: Diffs { scale_up_num: 3, scale_up_limit: 0, ..Default::default() } },
        Row { name: "[scalingExcludePreparingDelete=false] specific delete a pod with lifecycle hook (step 1/4)", cs: cs(3, i(0), i(1), i(0)), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, true)], flags: &[], want: Diffs { delete_ready_limit: 1, ..Default::default() } },
        Row { name: "[scalingExcludePreparingDelete=false] specific delete a pod with lifecycle hook (step 2/4)", cs: cs(3, i(0), i(1), i(0)), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "PreparingDelete", true, true)], flags: &[], want: Diffs::default() },
        Row { name: "[scalingExcludePreparingDelete=false] specific delete a pod with lifecycle hook (step 3/4)", cs: cs(3, i(0), i(1), i(0)), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false)], flags: &[], want: Diffs { scale_up_num: 1, scale_up_limit: 1, ..Default::default() } },
        Row { name: "[scalingExcludePreparingDelete=false] specific delete a pod with lifecycle hook (step 4/4)", cs: cs(3, i(0), i(1), i(0)), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", false, false)], flags: &[], want: Diffs::default() },
        Row { name: "[scalingExcludePreparingDelete=true] specific delete a pod with lifecycle hook (step 1/4)", cs: cs(3, i(0), i(1), i(0)).exclude_preparing_delete(), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, true)], flags: &[], want: Diffs { delete_ready_limit: 1, ..Default::default() } },
        Row { name: "[scalingExcludePreparingDelete=true] specific delete a pod with lifecycle hook (step 2/4)", cs: cs(3, i(0), i(1), i(0)).exclude_preparing_delete(), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "PreparingDelete", true, true)], flags: &[], want: Diffs { scale_up_num: 1, scale_up_limit: 1, ..Default::default() } },
        Row { name: "[scalingExcludePreparingDelete=true] specific delete a pod with lifecycle hook (step 3/4)", cs: cs(3, i(0), i(1), i(0)).exclude_preparing_delete(), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "PreparingDelete", true, true), p(NEW, "Normal", false, false)], flags: &[], want: Diffs::default() },
        Row { name: "[scalingExcludePreparingDelete=true] specific delete a pod with lifecycle hook (step 4/4)", cs: cs(3, i(0), i(1), i(0)).exclude_preparing_delete(), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "PreparingDelete", true, true), p(NEW, "Normal", false, false)], flags: &[], want: Diffs::default() },
        Row { name: "[scalingExcludePreparingDelete=true] specific delete a pod with lifecycle hook and then cancel (step 1/5)", cs: cs(3, i(0), i(1), i(0)).exclude_preparing_delete(), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, true)], flags: &[], want: Diffs { delete_ready_limit: 1, ..Default::default() } },
        Row { name: "[scalingExcludePreparingDelete=true] specific delete a pod with lifecycle hook and then cancel (step 2/5)", cs: cs(3, i(0), i(1), i(0)).exclude_preparing_delete(), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "PreparingDelete", true, true)], flags: &[], want: Diffs { scale_up_num: 1, scale_up_limit: 1, ..Default::default() } },
        Row { name: "[scalingExcludePreparingDelete=true] specific delete a pod with lifecycle hook and then cancel (step 3/5)", cs: cs(3, i(0), i(1), i(0)).exclude_preparing_delete(), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "PreparingDelete", true, true), p(NEW, "Normal", false, false)], flags: &[], want: Diffs::default() },
        Row { name: "[scalingExcludePreparingDelete=true] specific delete a pod with lifecycle hook and then cancel (step 4/5)", cs: cs(3, i(0), i(1), i(0)).exclude_preparing_delete(), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", false, false)], flags: &[], want: Diffs { scale_down_num: 1, delete_ready_limit: 1, ..Default::default() } },
        Row { name: "[scalingExcludePreparingDelete=true] specific delete a pod with lifecycle hook and then cancel (step 5/5)", cs: cs(3, i(0), i(1), i(0)).exclude_preparing_delete(), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false)], flags: &[], want: Diffs::default() },
        Row { name: "[scalingExcludePreparingDelete=true] specific scale down with lifecycle hook, then scale up pods (step 1/6)", cs: cs(3, i(0), i(1), i(0)).exclude_preparing_delete(), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, false)], flags: &[], want: Diffs::default() },
        Row { name: "[scalingExcludePreparingDelete=true] specific scale down with lifecycle hook, then scale up pods (step 2/6)", cs: cs(2, i(0), i(1), i(0)).exclude_preparing_delete(), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", true, true)], flags: &[], want: Diffs { delete_ready_limit: 2, ..Default::default() } },
        Row { name: "[scalingExcludePreparingDelete=true] specific scale down with lifecycle hook, then scale up pods (step 3/6)", cs: cs(2, i(0), i(1), i(0)).exclude_preparing_delete(), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "PreparingDelete", true, true)], flags: &[], want: Diffs::default() },
        Row { name: "[scalingExcludePreparingDelete=true] specific scale down with lifecycle hook, then scale up pods (step 4/6)", cs: cs(3, i(0), i(1), i(0)).exclude_preparing_delete(), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "PreparingDelete", true, true)], flags: &[], want: Diffs { scale_up_num: 1, scale_up_limit: 1, ..Default::default() } },
        Row { name: "[scalingExcludePreparingDelete=true] specific scale down with lifecycle hook, then scale up pods (step 5/6)", cs: cs(3, i(0), i(1), i(0)).exclude_preparing_delete(), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "PreparingDelete", true, true), p(NEW, "Normal", false, false)], flags: &[], want: Diffs::default() },
        Row { name: "[scalingExcludePreparingDelete=true] specific scale down with lifecycle hook, then scale up pods (step 6/6)", cs: cs(3, i(0), i(1), i(0)).exclude_preparing_delete(), pods: vec![p(NEW, "Normal", true, false), p(NEW, "Normal", true, false), p(NEW, "Normal", false, false)], flags: &[], want: Diffs::default() },
        Row { name: "[scalingWithPreparingUpdate=true] scaling up when a preparing pod is not updated, and expected-updated is 1", cs: cs(4, s("90%"), i(1), i(0)).exclude_preparing_delete(), pods: vec![p(OLD, "PreparingUpdate", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false)], flags: &[Flag::PreparingUpdateAsUpdate], want: Diffs { scale_up_num: 1, scale_up_limit: 1, scale_up_num_old_revision: 1, ..Default::default() } },
        Row { name: "[scalingWithPreparingUpdate=true] scaling up when a preparing pod is not updated, and expected-updated is 2", cs: cs(4, i(2), i(1), i(0)).exclude_preparing_delete(), pods: vec![p(OLD, "PreparingUpdate", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false)], flags: &[Flag::PreparingUpdateAsUpdate], want: Diffs { scale_up_num: 1, scale_up_limit: 1, ..Default::default() } },
        Row { name: "[UpdateStrategyPaused=true] scale up pods with maxSurge=3,maxUnavailable=0", cs: cs(5, i(0), i(0), i(3)).paused(), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false)], flags: &[], want: Diffs { scale_up_num: 2, scale_up_limit: 2, update_num: 3, update_max_unavailable: -2, ..Default::default() } },
        Row { name: "[UpdateStrategyPaused=true] scale down pods with maxSurge=3,maxUnavailable=0", cs: cs(3, i(0), i(0), i(3)).paused(), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false)], flags: &[], want: Diffs { scale_down_num: 2, scale_down_num_old_revision: 5, delete_ready_limit: 2, update_num: 3, update_max_unavailable: 2, ..Default::default() } },
        Row { name: "[UpdateStrategyPaused=true] create 0 newRevision pods with maxSurge=3,maxUnavailable=0", cs: cs(5, i(0), i(0), i(3)).paused(), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(NEW, "Normal", false, false), p(NEW, "Normal", false, false), p(NEW, "Normal", false, false)], flags: &[], want: Diffs { scale_down_num: 3, scale_down_num_old_revision: 5, update_num: 2, update_max_unavailable: 3, ..Default::default() } },
        Row { name: "[UpdateStrategyPaused=true] create 0 newRevision pods with maxSurge=3,maxUnavailable=0", cs: cs(5, i(2), i(0), i(3)).paused(), pods: vec![p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(OLD, "Normal", true, false), p(NEW, "Normal", false, false), p(NEW, "Normal", false, false), p(NEW, "Normal", false, false)], flags: &[], want: Diffs { scale_down_num: 3, scale_down_num_old_revision: 3, ..Default::default() } },
    ];
    assert_eq!(rows.len(), 80, "every row of kruise's table");
    for row in rows {
        let gates = Gates { partition_rollback: !row.flags.contains(&Flag::RollbackOff), ..Default::default() };
        let settings = Settings::new(&row.cs, gates);
        let current = if row.flags.contains(&Flag::Consistent) { NEW } else { OLD };
        let pods: Vec<&Pod> = row.pods.iter().collect();
        let as_update = row.flags.contains(&Flag::PreparingUpdateAsUpdate);
        let got = calculate(&settings, &pods, current, NEW, as_update, at(0));
        assert_eq!(got, row.want, "{}", row.name);
    }
}

#[test]
fn json_names_are_kruise_field_names() {
    let v = serde_json::to_value(Diffs { scale_up_num_old_revision: 1, ..Default::default() }).unwrap();
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "deleteReadyLimit",
            "scaleDownNum",
            "scaleDownNumOldRevision",
            "scaleUpLimit",
            "scaleUpNum",
            "scaleUpNumOldRevision",
            "updateMaxUnavailable",
            "updateNum",
            "useSurge",
            "useSurgeOldRevision"
        ]
    );
    assert_eq!(v["scaleUpNumOldRevision"], 1);
}
