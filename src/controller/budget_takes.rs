//! Taking the PodUnavailableBudget units a workload plan names, before the plan's pod writes
//! (gate PodUnavailableBudgetUpdateGate; kruise `cloneset_update.go` step 6, which calls
//! `PodUnavailableBudgetValidatePod(pod, UPDATE, "kruise-manager", false)` on each pod it is about
//! to update). A unit records the pod in the budget, so the pod webhook then lets the pod's writes
//! through. At the first refusal (the cached budget was stale), the actions of that pod and of the
//! pods after it are not sent, nor the status (it counted them), and the workload is looked at
//! again in a second. Shared by the CloneSet and the Advanced StatefulSet controllers.

use std::collections::HashSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use crate::apis::podunavailablebudget::PodUnavailableBudget;
use crate::cluster::ClusterView;
use crate::core::budget::Operation;
use crate::core::budget::rollout::BudgetTake;
use crate::core::features::{FeatureGates, Gate};
use crate::core::rollout::actions::{Action, Write};
use crate::core::rollout::plan::min_positive;
use crate::webhook::budget::Budgets;
use crate::webhook::validate_pod::BudgetCheck;

/// The budgets of `namespace` a round plans with: the view's, when the update gate is on.
pub fn for_round(view: &dyn ClusterView, gates: &FeatureGates, namespace: &str) -> Vec<Arc<PodUnavailableBudget>> {
    if gates.enabled(Gate::PodUnavailableBudgetUpdateGate) {
        view.pod_unavailable_budgets(namespace)
    } else {
        Vec::new()
    }
}

/// The parts of a plan a refusal holds back.
pub struct Held<'a> {
    pub actions: &'a mut Vec<Action>,
    pub status_write: &'a mut Option<Write>,
    pub waiting: &'a mut Vec<String>,
    pub requeue_after: &'a mut Option<SignedDuration>,
}

/// Takes `takes` in order through `budgets`; on the first refusal holds back what it must.
pub async fn take(
    budgets: &Budgets,
    namespace: &str,
    takes: &[BudgetTake],
    pods: &[&Pod],
    listed: &[Arc<PodUnavailableBudget>],
    now: Timestamp,
    held: Held<'_>,
) {
    for (i, unit) in takes.iter().enumerate() {
        let pod = pods.iter().find(|p| p.metadata.name.as_deref() == Some(unit.pod.as_str()));
        let budget = listed.iter().find(|b| b.metadata.name.as_deref() == Some(unit.budget.as_str()));
        let (Some(pod), Some(budget)) = (pod, budget) else { continue };
        let check = BudgetCheck {
            namespace: namespace.to_string(),
            pod: (*pod).clone(),
            op: Operation::Update,
            dry_run: false,
            budget: Arc::clone(budget),
        };
        let verdict = budgets.take(&check, now).await;
        if verdict.allowed {
            continue;
        }
        let later: HashSet<&str> = takes[i..].iter().map(|t| t.pod.as_str()).collect();
        held.actions.retain(|a| a.pod.as_deref().is_none_or(|p| !later.contains(p)));
        *held.status_write = None;
        held.waiting.push(format!("{} waits for its PodUnavailableBudget: {}", unit.pod, verdict.message));
        *held.requeue_after = min_positive(*held.requeue_after, SignedDuration::from_secs(1));
        tracing::debug!(pod = %unit.pod, budget = %unit.budget, message = %verdict.message, "budget refused an update");
        return;
    }
}
