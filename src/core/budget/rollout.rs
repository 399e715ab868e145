//! What a workload controller asks of the PodUnavailableBudgets before it updates one of its pods
//! (kruise v1.9 `cloneset_update.go` step 6: with gate PodUnavailableBudgetUpdateGate on, each pod
//! chosen for update is put to `pubcontrol.PodUnavailableBudgetValidatePod(pod, UPDATE,
//! "kruise-manager", false)` first; a refusal stops the round's updates and looks again in a
//! second).
//!
//! The planner decides on the cached budgets: it runs the webhook's [`precheck`] and counts the
//! units the pods it already let through this round take ([`UpdateAllowance::admit`]), and names
//! in its plan the units to take ([`BudgetTake`]). Taking them is I/O, so it is the controller's,
//! as in kruise: before it sends a pod's writes it takes the unit with the webhook's
//! `checkAndDecrement` on the freshest budget, which records the pod, so the pod webhook then
//! lets the controller's pod write through. Taking the unit before the first write matters: an
//! in-place update first writes `InPlaceUpdateReady=False` to the pod's status (which no webhook
//! sees) and the pod goes unready, after which the webhook would count it as already unavailable
//! and take nothing.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;

use super::admit::{Gates, Precheck, precheck, refusal};
use super::{Operation, related_pub};
use crate::apis::podunavailablebudget::PodUnavailableBudget;

/// A unit of a budget a planned pod update takes, before the pod's first write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BudgetTake {
    /// The pod's name.
    pub pod: String,
    /// The budget's name (in the pod's namespace).
    pub budget: String,
}

/// The budgets of a workload's namespace, as one round of its planner spends them.
pub struct UpdateAllowance<'a> {
    budgets: &'a [&'a PodUnavailableBudget],
    gates: Gates,
    /// Units spoken for this round, by budget name.
    taken: BTreeMap<String, usize>,
}

impl<'a> UpdateAllowance<'a> {
    /// `budgets`: the budgets of the workload's namespace (the cache's).
    pub fn new(budgets: &'a [&'a PodUnavailableBudget], gates: Gates) -> Self {
        UpdateAllowance { budgets, gates, taken: BTreeMap::new() }
    }

    /// Whether `pod` may be updated now: `Ok` with the unit it must take first, if any (counted
    /// for the rest of the round), or the budget's Forbidden message. The budget is the one the
    /// pod names in `kruise.io/related-pub`, as kruise's `GetPubForPod` reads it.
    pub fn admit(&mut self, pod: &Pod) -> Result<Option<BudgetTake>, String> {
        let name = related_pub(pod);
        let budget = if name.is_empty() {
            None
        } else {
            self.budgets.iter().copied().find(|b| b.metadata.name.as_deref() == Some(name))
        };
        match precheck(pod, budget, Operation::Update, self.gates) {
            Precheck::Allowed(_) => Ok(None),
            Precheck::Consume => {
                let Some(budget) = budget else { return Ok(None) };
                let taken = self.taken.entry(name.to_string()).or_default();
                if let Some(why) = refusal(budget, *taken) {
                    return Err(why);
                }
                *taken += 1;
                Ok(Some(BudgetTake { pod: crate::core::pods::name(pod).to_string(), budget: name.to_string() }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::{budget, pod};
    use super::*;
    use serde_json::json;

    fn allowing(n: i32) -> PodUnavailableBudget {
        budget(|v| {
            v["status"] = json!({"unavailableAllowed": n, "desiredAvailable": 2, "currentAvailable": 2 + n,
                                 "totalReplicas": 2 + n, "observedGeneration": 1});
        })
    }

    fn named(name: &str) -> Pod {
        pod(|v| v["metadata"]["name"] = json!(name))
    }

    /// Each row: the budget's `unavailableAllowed`, the pods asked in order (name, ready,
    /// recorded in the budget), and which are admitted.
    #[test]
    fn pods_admitted_in_one_round() {
        struct Row {
            name: &'static str,
            allowed: i32,
            pods: Vec<Pod>,
            recorded: &'static [&'static str],
            want: Vec<bool>,
        }
        let not_ready = |n: &str| {
            pod(|v| {
                v["metadata"]["name"] = json!(n);
                v["status"]["conditions"] = json!([{"type": "Ready", "status": "False"}]);
            })
        };
        let unrelated = pod(|v| {
            v["metadata"]["name"] = json!("other");
            v["metadata"]["annotations"] = json!({});
        });
        let no_protect = pod(|v| {
            v["metadata"]["name"] = json!("np");
            v["metadata"]["annotations"]["pub.kruise.io/no-protect"] = json!("true");
        });
        let rows = vec![
            Row {
                name: "one unit: the first ready pod only",
                allowed: 1,
                pods: vec![named("a"), named("b"), named("c")],
                recorded: &[],
                want: vec![true, false, false],
            },
            Row {
                name: "two units: two pods",
                allowed: 2,
                pods: vec![named("a"), named("b"), named("c")],
                recorded: &[],
                want: vec![true, true, false],
            },
            Row { name: "no unit left", allowed: 0, pods: vec![named("a")], recorded: &[], want: vec![false] },
            Row {
                name: "a pod not ready is already unavailable: it takes nothing",
                allowed: 1,
                pods: vec![not_ready("a"), named("b"), named("c")],
                recorded: &[],
                want: vec![true, true, false],
            },
            Row {
                name: "a pod the budget records takes nothing more",
                allowed: 0,
                pods: vec![named("a"), named("b")],
                recorded: &["a"],
                want: vec![true, false],
            },
            Row {
                name: "a pod no budget covers, or marked no-protect",
                allowed: 0,
                pods: vec![unrelated, no_protect],
                recorded: &[],
                want: vec![true, true],
            },
        ];
        for row in rows {
            let mut b = allowing(row.allowed);
            if let Some(s) = b.status.as_mut() {
                for r in row.recorded {
                    s.unavailable_pods.insert(
                        (*r).into(),
                        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
                    );
                }
            }
            let budgets = [&b];
            let mut allowance = UpdateAllowance::new(&budgets, Gates::default());
            let got: Vec<bool> = row.pods.iter().map(|p| allowance.admit(p).is_ok()).collect();
            assert_eq!(got, row.want, "{}", row.name);
        }
    }

    /// The units to take: only for pods that consume one (ready, protected, not recorded).
    #[test]
    fn units_to_take() {
        let b = allowing(3);
        let budgets = [&b];
        let mut allowance = UpdateAllowance::new(&budgets, Gates::default());
        let not_ready = pod(|v| {
            v["metadata"]["name"] = json!("down");
            v["status"]["conditions"] = json!([{"type": "Ready", "status": "False"}]);
        });
        assert_eq!(allowance.admit(&not_ready), Ok(None));
        assert_eq!(allowance.admit(&named("a")), Ok(Some(BudgetTake { pod: "a".into(), budget: "pub-test".into() })));
    }

    #[test]
    fn refusal_names_the_budget() {
        let b = allowing(0);
        let budgets = [&b];
        let mut allowance = UpdateAllowance::new(&budgets, Gates::default());
        assert_eq!(
            allowance.admit(&named("a")),
            Err("podunavailablebudget.policy.kruise.io \"pub-test\" is forbidden: pub unavailable allowed is negative"
                .into())
        );
    }

    #[test]
    fn a_budget_not_protecting_updates_admits_all() {
        let b = budget(|v| {
            v["metadata"]["annotations"]["kruise.io/pub-protect-operations"] = json!("DELETE,EVICT");
            v["status"] = json!({"unavailableAllowed": 0, "desiredAvailable": 2, "currentAvailable": 2,
                                 "totalReplicas": 2, "observedGeneration": 1});
        });
        let budgets = [&b];
        let mut allowance = UpdateAllowance::new(&budgets, Gates::default());
        assert_eq!(allowance.admit(&named("a")), Ok(None));
    }
}
