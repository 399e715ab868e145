//! Validation of the kruise workloads (spec §2): pure functions from typed objects to a list of
//! [`FieldError`](crate::compat::field::FieldError)s in Kubernetes' format, plus the decisions the
//! validating handlers add on top (the InPlaceOnly guard, the recreate warning, deletion
//! protection). One file per resource or concern, tests at the bottom of each: [`cloneset`] (and
//! [`cloneset_v1beta1`], what only a v1beta1 object can break),
//! [`statefulset`]; [`meta`] (object metadata), [`podtemplate`] (the workload selector and pod
//! template), [`update_order`] (priority and scatter strategies), [`template_update`] (the
//! InPlaceOnly guard and the recreate warning), [`protection`] (deletion protection),
//! [`podunavailablebudget`] (PodUnavailableBudget objects), [`imagepulljob`],
//! [`imagelistpulljob`] and [`nodeimage`] (the image-pull kinds), [`daemonset`] (the Advanced
//! DaemonSet), [`workloadspread`].

pub mod advancedcronjob;
pub mod advancedcronjob_v1beta1;
pub mod broadcastjob;
pub mod cloneset;
pub mod cloneset_v1beta1;
pub mod daemonset;
pub mod imagelistpulljob;
pub mod imagepulljob;
pub mod meta;
pub mod nodeimage;
pub mod podprobemarker;
pub mod podtemplate;
pub mod podunavailablebudget;
pub mod protection;
pub mod statefulset;
pub mod template_update;
pub mod uniteddeployment;
pub mod update_order;
pub mod workloadspread;

/// A value as JSON for a field error (`null` if it cannot be serialised).
pub(crate) fn json<T: serde::Serialize + ?Sized>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}
