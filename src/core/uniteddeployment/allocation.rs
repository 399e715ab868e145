//! How many replicas each subset of a UnitedDeployment gets: kruise's
//! `pkg/controller/uniteddeployment/allocator.go` (v1.9.0) and `ParseSubsetReplicas`
//! (`uniteddeployment_controller_utils.go`), ported function by function (issue 34 item 2).
//!
//! Four allocators, chosen as kruise's `NewReplicaAllocator` does:
//! - **reservation** (`scheduleStrategy.type: Adaptive` with `reserveUnschedulablePods`): min
//!   first, then max, where a subset marked unschedulable only counts its healthy pods and the rest
//!   is allocated again elsewhere (temporary pods);
//! - **adaptive** (`Adaptive`): min/max, where an unschedulable subset is held to its ready pods
//!   and a schedulable subset never drops below its ready pods;
//! - **min/max** (any subset with `minReplicas` or `maxReplicas`): every subset's min in order,
//!   then up to each max in order;
//! - **specific** (otherwise): fixed numbers and percentages first, the rest spread evenly over
//!   the subsets without `replicas` (`*`/rest), the larger current subsets taking the remainder.
//!
//! Kept as kruise has it: a subset value that does not parse counts as 0 (kruise ignores the
//! error), also for `maxReplicas`; the specific allocator refuses (an error, nothing changes) when
//! fixed numbers exceed the total, or do not reach it while every subset is fixed. Arithmetic is
//! Go's 32-bit wrapping arithmetic, so no input can panic.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::apis::uniteddeployment::{Subset, UnitedDeploymentScheduleStrategy, UnitedDeploymentSpec};
use crate::compat::field::go_quote;

/// `scheduleStrategy.type` of the adaptive strategy.
pub const ADAPTIVE: &str = "Adaptive";
/// `scheduleStrategy.type` of the fixed strategy.
pub const FIXED: &str = "Fixed";

/// What the allocators read of an existing subset workload (kruise's `Subset`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SubsetState {
    /// The workload's `spec.replicas`.
    pub replicas: i32,
    /// Ready pods of the workload.
    pub ready_replicas: i32,
    /// `UnschedulableStatus.Unschedulable`.
    pub unschedulable: bool,
    /// `UnschedulableStatus.MarkedAsUnschedulable`.
    pub marked_as_unschedulable: bool,
    /// `UnschedulableStatus.ReservedPods`.
    pub reserved_pods: i32,
}

impl SubsetState {
    /// kruise `Subset.Allocatable`.
    pub fn allocatable(&self) -> bool {
        !self.unschedulable && !self.marked_as_unschedulable
    }
}

/// kruise `UnitedDeploymentScheduleStrategy.IsAdaptive`.
pub fn is_adaptive(s: &UnitedDeploymentScheduleStrategy) -> bool {
    s.type_ == ADAPTIVE
}

/// kruise `UnitedDeploymentScheduleStrategy.ShouldReserveUnschedulablePods`.
pub fn should_reserve_unschedulable_pods(s: &UnitedDeploymentScheduleStrategy) -> bool {
    is_adaptive(s) && s.adaptive.as_ref().is_some_and(|a| a.reserve_unschedulable_pods)
}

/// kruise `ParseSubsetReplicas`: an integer (not negative) or a percentage `N%` of `ud_replicas`
/// (0..=100, rounded half up); a percentage needs the UnitedDeployment's replicas (`ud_replicas`
/// -1 when unset). The errors are kruise's texts.
pub fn parse_subset_replicas(ud_replicas: i32, subset_replicas: &IntOrString) -> Result<i32, String> {
    let s = match subset_replicas {
        IntOrString::Int(v) if *v < 0 => return Err(format!("subset replicas ({v}) should not be less than 0")),
        IntOrString::Int(v) => return Ok(*v),
        IntOrString::String(s) => s,
    };
    if ud_replicas < 0 {
        return Err(format!("subsetReplicas ({s}) should not be string when unitedDeployment replicas is empty"));
    }
    let Some(int_part) = s.strip_suffix('%') else {
        return Err(format!("subset replicas ({s}) only support integer value or percentage value with a suffix '%'"));
    };
    let percent = go_parse_int32(int_part)
        .map_err(|e| format!("subset replicas ({s}) should be correct percentage integer: {e}"))?;
    if !(0..=100).contains(&percent) {
        return Err(format!("subset replicas ({s}) should be in range [0, 100]"));
    }
    // int32(math.Floor(float64(udReplicas)*float64(percent)/100 + 0.5))
    Ok((f64::from(ud_replicas) * percent as f64 / 100.0 + 0.5).floor() as i32)
}

/// `strconv.ParseInt(s, 10, 32)`, with Go's error texts.
fn go_parse_int32(s: &str) -> Result<i64, String> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("strconv.ParseInt: parsing {}: invalid syntax", go_quote(s)));
    }
    match s.parse::<i64>() {
        Ok(v) if i32::try_from(v).is_ok() => Ok(v),
        _ => Err(format!("strconv.ParseInt: parsing {}: value out of range", go_quote(s))),
    }
}

/// kruise `NewReplicaAllocator(ud).Alloc(existing)`: the next replicas of every subset of `spec`,
/// by name. `existing` holds the subset workloads found, by subset name.
pub fn allocate(
    spec: &UnitedDeploymentSpec,
    existing: &BTreeMap<String, SubsetState>,
) -> Result<BTreeMap<String, i32>, String> {
    let strategy = &spec.topology.schedule_strategy;
    let subsets = &spec.topology.subsets;
    if should_reserve_unschedulable_pods(strategy) {
        return reservation_alloc(spec.replicas.unwrap_or(0), subsets, existing);
    }
    if is_adaptive(strategy) {
        return adaptive_alloc(spec.replicas.unwrap_or(0), subsets, existing);
    }
    if subsets.iter().any(|s| s.min_replicas.is_some() || s.max_replicas.is_some()) {
        return min_max_alloc(spec.replicas.unwrap_or(0), subsets);
    }
    specific_alloc(spec, existing)
}

/// One entry of kruise's `subsetInfos`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubsetInfo {
    /// Subset name.
    pub name: String,
    /// Current, then allocated, replicas.
    pub replicas: i32,
    /// Whether `replicas` came from the subset's own `replicas`.
    pub specified: bool,
}

impl SubsetInfo {
    /// A subset with `replicas` now.
    pub fn new(name: &str, replicas: i32) -> Self {
        SubsetInfo { name: name.to_string(), replicas, specified: false }
    }
}

/// `sort.Sort(subsetInfos)`: by replicas, then name.
pub fn sort_infos(infos: &mut [SubsetInfo]) {
    infos.sort_by(|a, b| a.replicas.cmp(&b.replicas).then_with(|| a.name.cmp(&b.name)));
}

/// kruise `specificAllocator.Alloc`.
fn specific_alloc(
    spec: &UnitedDeploymentSpec,
    existing: &BTreeMap<String, SubsetState>,
) -> Result<BTreeMap<String, i32>, String> {
    let mut infos: Vec<SubsetInfo> = spec
        .topology
        .subsets
        .iter()
        .map(|s| SubsetInfo::new(&s.name, existing.get(&s.name).map_or(0, |e| e.replicas)))
        .collect();
    sort_infos(&mut infos);
    let expected = spec.replicas.unwrap_or(-1);
    let specified = specified_subset_replicas(expected, &spec.topology.subsets);
    allocate_replicas(&mut infos, expected, &specified)?;
    Ok(infos.into_iter().map(|i| (i.name, i.replicas)).collect())
}

/// kruise `getSpecifiedSubsetReplicas`: the subsets with `replicas`, parsed (unparsable ones left
/// out, as kruise logs and skips them).
pub fn specified_subset_replicas(expected: i32, subsets: &[Subset]) -> BTreeMap<String, i32> {
    subsets
        .iter()
        .filter_map(|s| {
            let r = s.replicas.as_ref()?;
            parse_subset_replicas(expected, r).ok().map(|v| (s.name.clone(), v))
        })
        .collect()
}

/// kruise `specificAllocator.AllocateReplicas` on sorted `infos`: validates the fixed numbers,
/// then `normalAllocate`. On error `infos` is left as it was.
pub fn allocate_replicas(
    infos: &mut [SubsetInfo],
    replicas: i32,
    specified: &BTreeMap<String, i32>,
) -> Result<(), String> {
    validate_replicas(infos, replicas, specified)?;
    normal_allocate(infos, replicas, specified);
    Ok(())
}

/// kruise `specificAllocator.validateReplicas`.
fn validate_replicas(infos: &[SubsetInfo], replicas: i32, limits: &BTreeMap<String, i32>) -> Result<(), String> {
    let specified_replicas = limits.values().fold(0i32, |a, v| a.wrapping_add(*v));
    let specified_count = infos.iter().filter(|i| limits.contains_key(&i.name)).count();
    if replicas != -1 {
        if specified_replicas > replicas {
            return Err(format!(
                "specified subsets' replica ({specified_replicas}) is greater than UnitedDeployment replica ({replicas})"
            ));
        }
        if specified_replicas < replicas && specified_count == infos.len() {
            return Err(format!(
                "specified subsets' replica ({specified_replicas}) is less than UnitedDeployment replica ({replicas})"
            ));
        }
    } else if specified_count != infos.len() {
        return Err("all subsets must be specified when UnitedDeployment replica is unspecified".into());
    }
    Ok(())
}

/// kruise `specificAllocator.normalAllocate`: fixed subsets first, the rest evenly over the
/// others, the remainder going to the last (largest) of them.
fn normal_allocate(infos: &mut [SubsetInfo], expected: i32, specified: &BTreeMap<String, i32>) {
    let mut specified_replicas = 0i32;
    let mut specified_count = 0usize;
    for info in infos.iter_mut() {
        if let Some(r) = specified.get(&info.name) {
            specified_replicas = specified_replicas.wrapping_add(*r);
            info.replicas = *r;
            info.specified = true;
            specified_count += 1;
        }
    }
    let mut left = infos.len() - specified_count;
    if left == 0 {
        return;
    }
    let allocatable = i64::from(expected.wrapping_sub(specified_replicas));
    let count = left as i64;
    let average = allocatable / count;
    let mut remainder = allocatable % count;
    for info in infos.iter_mut().rev() {
        if info.specified {
            continue;
        }
        if remainder > 0 {
            info.replicas = (average + 1) as i32;
            remainder -= 1;
        } else {
            info.replicas = average as i32;
        }
        left -= 1;
        if left == 0 {
            break;
        }
    }
}

/// The min and max of one subset (`parseMinMaxReplicas`): 0 and 2^31-1 when unset, 0 when a
/// value does not parse.
fn parse_min_max(replicas: i32, subset: &Subset) -> (i32, i32) {
    let min = subset.min_replicas.as_ref().map_or(0, |v| parse_subset_replicas(replicas, v).unwrap_or(0));
    let max = subset.max_replicas.as_ref().map_or(i32::MAX, |v| parse_subset_replicas(replicas, v).unwrap_or(0));
    (min, max)
}

type MinMax = (BTreeMap<String, i32>, BTreeMap<String, i32>);

/// kruise `calculateRawMinMaxMap` (and `validateAndCalculateMinMaxMap`, the same rule).
fn raw_min_max(replicas: i32, subsets: &[Subset]) -> Result<MinMax, String> {
    let mut mins = BTreeMap::new();
    let mut maxs = BTreeMap::new();
    for (index, subset) in subsets.iter().enumerate() {
        let (min, max) = parse_min_max(replicas, subset);
        if min > max {
            return Err(format!("subset[{index}].maxReplicas({max}) must be more than or equal to minReplicas({min})"));
        }
        mins.insert(subset.name.clone(), min);
        maxs.insert(subset.name.clone(), max);
    }
    Ok((mins, maxs))
}

/// kruise `minMaxAllocator.Alloc`.
fn min_max_alloc(replicas: i32, subsets: &[Subset]) -> Result<BTreeMap<String, i32>, String> {
    let (mins, maxs) = raw_min_max(replicas, subsets)?;
    Ok(allocate_by_min_max(replicas, &mins, &maxs, subsets))
}

/// kruise `adaptiveAllocator.Alloc`.
fn adaptive_alloc(
    replicas: i32,
    subsets: &[Subset],
    existing: &BTreeMap<String, SubsetState>,
) -> Result<BTreeMap<String, i32>, String> {
    let (mut mins, mut maxs) = raw_min_max(replicas, subsets)?;
    for subset in subsets {
        let name = &subset.name;
        let mut min = mins.get(name).copied().unwrap_or(0);
        let mut max = maxs.get(name).copied().unwrap_or(0);
        let state = existing.get(name);
        let unschedulable = state.is_some_and(|s| s.unschedulable);
        if let Some(s) = state
            && unschedulable
        {
            min = min.max(s.ready_replicas);
            max = max.min(s.ready_replicas);
        }
        // Healthy pods stay where they are: a schedulable subset keeps at least its ready pods.
        let running = state.map_or(0, |s| s.ready_replicas);
        if !unschedulable && running > min {
            min = running.min(max);
        }
        mins.insert(name.clone(), min);
        maxs.insert(name.clone(), max);
    }
    Ok(allocate_by_min_max(replicas, &mins, &maxs, subsets))
}

/// kruise `allocateByMinMaxMap`: every subset's min in order, then up to its max in order.
fn allocate_by_min_max(
    replicas: i32,
    mins: &BTreeMap<String, i32>,
    maxs: &BTreeMap<String, i32>,
    subsets: &[Subset],
) -> BTreeMap<String, i32> {
    let mut allocated = 0i32;
    let mut out = BTreeMap::new();
    for subset in subsets {
        let min = mins.get(&subset.name).copied().unwrap_or(0);
        let add = min.min(replicas.wrapping_sub(allocated)).max(0);
        out.insert(subset.name.clone(), add);
        allocated = allocated.wrapping_add(add);
    }
    if allocated >= replicas {
        return out;
    }
    for subset in subsets {
        let max = maxs.get(&subset.name).copied().unwrap_or(0);
        let min = mins.get(&subset.name).copied().unwrap_or(0);
        let add = max.wrapping_sub(min).min(replicas.wrapping_sub(allocated)).max(0);
        let entry = out.entry(subset.name.clone()).or_insert(0);
        *entry = entry.wrapping_add(add);
        allocated = allocated.wrapping_add(add);
    }
    out
}

/// kruise `reservationAllocatorSubsetRecord`.
#[derive(Clone, Copy, Debug)]
struct Record {
    max_allocatable: i32,
    allocated: i32,
}

impl Record {
    /// kruise `reservationAllocatorSubsetRecord.allocate`: raises the subset to `to` (within
    /// `rest`) and answers how much of it counts against the total.
    fn allocate(&mut self, to: i32, rest: i32) -> i32 {
        let mut to_add = to.wrapping_sub(self.allocated).min(rest);
        self.allocated = self.allocated.wrapping_add(to_add);
        self.max_allocatable = self.max_allocatable.wrapping_sub(to_add);
        if self.max_allocatable < 0 {
            to_add = to_add.wrapping_add(self.max_allocatable);
            return to_add.max(0);
        }
        to_add
    }
}

/// kruise `reservationAllocator.Alloc` and `allocateByMinMaxMapAndReservation`.
fn reservation_alloc(
    mut replicas: i32,
    subsets: &[Subset],
    existing: &BTreeMap<String, SubsetState>,
) -> Result<BTreeMap<String, i32>, String> {
    let (mins, maxs) = raw_min_max(replicas, subsets)?;
    let mut records: BTreeMap<&str, Record> = BTreeMap::new();
    for s in subsets {
        let max_allocatable = match existing.get(&s.name) {
            Some(e) if !e.allocatable() => e.replicas.wrapping_sub(e.reserved_pods),
            _ => i32::MAX,
        };
        records.insert(&s.name, Record { max_allocatable, allocated: 0 });
    }
    let export = |records: &BTreeMap<&str, Record>| records.iter().map(|(k, r)| (k.to_string(), r.allocated)).collect();
    for s in subsets {
        let min = mins.get(&s.name).copied().unwrap_or(0);
        if let Some(r) = records.get_mut(s.name.as_str()) {
            replicas = replicas.wrapping_sub(r.allocate(min, replicas));
        }
        if replicas <= 0 {
            return Ok(export(&records));
        }
    }
    for s in subsets {
        let to = match existing.get(&s.name) {
            Some(e) if e.unschedulable => e.replicas,
            _ => maxs.get(&s.name).copied().unwrap_or(0),
        };
        if let Some(r) = records.get_mut(s.name.as_str()) {
            replicas = replicas.wrapping_sub(r.allocate(to, replicas));
        }
        if replicas <= 0 {
            return Ok(export(&records));
        }
    }
    Ok(export(&records))
}

#[cfg(test)]
mod tests;
