//! kruise's `allocator_test.go` (v1.9.0) row by row, `ParseSubsetReplicas`, and property tests
//! (allocations add up to the replicas and respect min/max).

use super::*;
use crate::apis::uniteddeployment::{AdaptiveUnitedDeploymentStrategy, Topology};
use proptest::prelude::*;

/// kruise `sortToAllocator` + `AllocateReplicas` + `String()`.
fn specific(current: &[(&str, i32)], replicas: i32, specified: &[(&str, i32)]) -> String {
    let mut infos: Vec<SubsetInfo> = current.iter().map(|(n, r)| SubsetInfo::new(n, *r)).collect();
    sort_infos(&mut infos);
    let specified: BTreeMap<String, i32> = specified.iter().map(|(n, r)| (n.to_string(), *r)).collect();
    let _ = allocate_replicas(&mut infos, replicas, &specified);
    sort_infos(&mut infos);
    infos.iter().map(|i| format!(" {} -> {};", i.name, i.replicas)).collect()
}

#[test]
fn kruise_scale_replicas() {
    let four = [("t1", 1), ("t2", 4), ("t3", 2), ("t4", 2)];
    assert_eq!(specific(&four, 5, &[]), " t1 -> 1; t3 -> 1; t4 -> 1; t2 -> 2;");
    assert_eq!(specific(&[("t1", 2)], 0, &[]), " t1 -> 0;");
    assert_eq!(specific(&four, 17, &[]), " t1 -> 4; t3 -> 4; t4 -> 4; t2 -> 5;");
    let four2 = [("t1", 2), ("t2", 4), ("t3", 2), ("t4", 2)];
    assert_eq!(specific(&four2, 9, &[]), " t1 -> 2; t3 -> 2; t4 -> 2; t2 -> 3;");
    assert_eq!(specific(&[("t1", 0), ("t2", 10)], 19, &[]), " t1 -> 9; t2 -> 10;");
    assert_eq!(specific(&[("t1", 0), ("t2", 10)], 21, &[]), " t1 -> 10; t2 -> 11;");
}

#[test]
fn kruise_specify_valid_replicas() {
    let a = [("t1", 1), ("t2", 4), ("t3", 2), ("t4", 2)];
    assert_eq!(specific(&a, 27, &[("t1", 4), ("t3", 4)]), " t1 -> 4; t3 -> 4; t4 -> 9; t2 -> 10;");
    let b = [("t1", 2), ("t2", 4), ("t3", 2), ("t4", 2)];
    assert_eq!(specific(&b, 8, &[("t1", 4), ("t3", 4)]), " t2 -> 0; t4 -> 0; t1 -> 4; t3 -> 4;");
    assert_eq!(specific(&b, 16, &[("t1", 4), ("t2", 4), ("t3", 4), ("t4", 4)]), " t1 -> 4; t2 -> 4; t3 -> 4; t4 -> 4;");
    let c = [("t1", 4), ("t2", 2), ("t3", 2), ("t4", 2)];
    assert_eq!(specific(&c, 10, &[("t1", 1), ("t2", 2), ("t3", 3)]), " t1 -> 1; t2 -> 2; t3 -> 3; t4 -> 4;");
    assert_eq!(specific(&c, 10, &[("t1", 1), ("t2", 2), ("t3", 3), ("t4", 4)]), " t1 -> 1; t2 -> 2; t3 -> 3; t4 -> 4;");
    assert_eq!(specific(&c, -1, &[("t1", 1), ("t2", 2), ("t3", 3), ("t4", 4)]), " t1 -> 1; t2 -> 2; t3 -> 3; t4 -> 4;");
}

#[test]
fn kruise_specify_invalid_replicas() {
    let a = [("t1", 10), ("t2", 4)];
    assert_eq!(specific(&a, 14, &[("t1", 6), ("t2", 6)]), " t2 -> 4; t1 -> 10;");
    assert_eq!(specific(&a, 14, &[("t1", 10), ("t2", 11)]), " t2 -> 4; t1 -> 10;");
    let mut infos: Vec<SubsetInfo> = a.iter().map(|(n, r)| SubsetInfo::new(n, *r)).collect();
    let err = allocate_replicas(&mut infos, 14, &[("t1".to_string(), 6), ("t2".to_string(), 6)].into());
    assert_eq!(err.unwrap_err(), "specified subsets' replica (12) is less than UnitedDeployment replica (14)");
    let err = allocate_replicas(&mut infos, 14, &[("t1".to_string(), 10), ("t2".to_string(), 11)].into());
    assert_eq!(err.unwrap_err(), "specified subsets' replica (21) is greater than UnitedDeployment replica (14)");
    let err = allocate_replicas(&mut infos, -1, &[("t1".to_string(), 1)].into());
    assert_eq!(err.unwrap_err(), "all subsets must be specified when UnitedDeployment replica is unspecified");
}

fn int(v: i32) -> Option<IntOrString> {
    (v != -1).then_some(IntOrString::Int(v))
}

fn min_max_spec(replicas: i32, mins: &[i32], maxs: &[i32]) -> UnitedDeploymentSpec {
    let subsets = mins
        .iter()
        .zip(maxs)
        .enumerate()
        .map(|(i, (min, max))| Subset {
            name: format!("subset-{i}"),
            min_replicas: int(*min),
            max_replicas: int(*max),
            ..Default::default()
        })
        .collect();
    UnitedDeploymentSpec {
        replicas: Some(replicas),
        topology: Topology { subsets, ..Default::default() },
        ..Default::default()
    }
}

fn in_order(out: &BTreeMap<String, i32>, n: usize) -> Vec<i32> {
    (0..n).map(|i| out.get(&format!("subset-{i}")).copied().unwrap_or(-100)).collect()
}

/// kruise `TestCapacityAllocator`.
#[test]
fn kruise_capacity_allocator() {
    type Row = (&'static str, i32, [i32; 5], [i32; 5], [i32; 5]);
    let cases: &[Row] = &[
        ("sum_all_min_replicas == replicas", 10, [2, 2, 2, 2, 2], [5, 5, 5, 5, -1], [2, 2, 2, 2, 2]),
        ("sum_all_min_replicas < replicas", 14, [2, 2, 2, 2, 2], [5, 5, 5, 5, -1], [5, 3, 2, 2, 2]),
        ("sum_all_min_replicas > replicas", 5, [2, 2, 2, 2, 2], [5, 5, 5, 5, -1], [2, 2, 1, 0, 0]),
    ];
    for (name, replicas, mins, maxs, want) in cases {
        let out = allocate(&min_max_spec(*replicas, mins, maxs), &BTreeMap::new()).expect(name);
        assert_eq!(in_order(&out, 5), want.to_vec(), "{name}");
    }
}

/// kruise `TestDefaultAdaptiveAllocation`.
#[test]
fn kruise_default_adaptive_allocation() {
    type Row = (&'static str, i32, &'static [i32], &'static [i32], &'static [i32], &'static [i32], &'static [i32]);
    // name, specReplicas, subsetPods, min, max, pending (-1: no pods but unschedulable), results
    let rows: &[Row] = &[
        ("5 pending pods = maxReplicas -> 3, 7", 10, &[5, 5], &[3, -1], &[5, -1], &[5, 0], &[3, 7]),
        ("4 pending pods < maxReplicas -> 3, 7", 10, &[5, 5], &[3, -1], &[5, -1], &[4, 0], &[3, 7]),
        ("3 pending pods = minReplicas -> 3, 7", 10, &[5, 5], &[3, -1], &[5, -1], &[3, 0], &[3, 7]),
        ("2 pending pods < minReplicas -> 3, 7", 10, &[5, 5], &[3, -1], &[5, -1], &[2, 0], &[3, 7]),
        ("no pending pods -> 5, 5", 10, &[5, 5], &[3, -1], &[5, -1], &[0, 0], &[5, 5]),
        ("normal scale up 2-> 4", 4, &[1, 1], &[1, -1], &[2, -1], &[0, 0], &[2, 2]),
        ("normal scale down 4 -> 3", 3, &[2, 2], &[1, -1], &[2, -1], &[0, 0], &[2, 1]),
        ("normal scale down 3 -> 1", 1, &[2, 1], &[1, -1], &[2, -1], &[0, 0], &[1, 0]),
        ("scale down with min and pending", 3, &[1, 3], &[1, -1], &[2, -1], &[1, 0], &[1, 2]),
        ("scale down with only pending", 3, &[1, 3], &[0, -1], &[2, -1], &[1, 0], &[0, 3]),
        ("complex: start", 4, &[0, 0, 0, 0], &[0, 0, 0, 0], &[2, -1, -1, -1], &[0, 0, 0, 0], &[2, 2, 0, 0]),
        (
            "complex: found subset-1 unschedulable",
            4,
            &[2, 2, 0, 0],
            &[0, 0, 0, 0],
            &[2, -1, -1, -1],
            &[0, 2, 0, 0],
            &[2, 0, 2, 0],
        ),
        (
            "complex: found subset-2 unschedulable",
            4,
            &[2, 0, 2, 0],
            &[0, 0, 0, 0],
            &[2, -1, -1, -1],
            &[0, -1, 2, 0],
            &[2, 0, 0, 2],
        ),
        (
            "complex: scale up 4 -> 8 when unschedulable",
            8,
            &[2, 0, 0, 2],
            &[0, 0, 0, 0],
            &[2, -1, -1, -1],
            &[0, -1, -1, 0],
            &[2, 0, 0, 6],
        ),
        (
            "complex: scale up 4 -> 8 after recovered",
            8,
            &[2, 0, 0, 2],
            &[0, 0, 0, 0],
            &[2, -1, -1, -1],
            &[0, 0, 0, 0],
            &[2, 4, 0, 2],
        ),
        (
            "complex: scale down 8 -> 4 when unschedulable",
            4,
            &[2, 0, 0, 6],
            &[0, 0, 0, 0],
            &[-1, -1, -1, -1],
            &[0, 0, 0, 0],
            &[2, 0, 0, 2],
        ),
        (
            "complex: scale down 8 -> 4 after recovered",
            4,
            &[2, 0, 0, 6],
            &[0, 0, 0, 0],
            &[-1, -1, -1, -1],
            &[0, 0, 0, 0],
            &[2, 0, 0, 2],
        ),
    ];
    for (name, replicas, pods, mins, maxs, pending, want) in rows {
        let mut spec = min_max_spec(*replicas, mins, maxs);
        spec.topology.schedule_strategy.type_ = ADAPTIVE.into();
        let existing: BTreeMap<String, SubsetState> = pods
            .iter()
            .zip(pending.iter())
            .enumerate()
            .map(|(i, (p, pend))| {
                let pend_n = (*pend).max(0);
                let state = SubsetState {
                    replicas: *p,
                    ready_replicas: p - pend_n,
                    unschedulable: *pend != 0,
                    ..Default::default()
                };
                (format!("subset-{i}"), state)
            })
            .collect();
        let out = allocate(&spec, &existing).expect(name);
        assert_eq!(in_order(&out, want.len()), want.to_vec(), "{name}");
    }
}

/// kruise `TestReservedAdaptiveAllocation`.
#[test]
fn kruise_reserved_adaptive_allocation() {
    type Row = (
        &'static str,
        i32,
        Option<&'static [i32]>,
        Option<&'static [i32]>,
        &'static [i32],
        &'static [i32],
        Option<&'static [i32]>,
        &'static [i32],
    );
    // name, replicas, min, max, cur, reserved (-1: unschedulable anyway), newPods, expect
    let rows: &[Row] = &[
        (
            "4 subsets, 2 each, start",
            8,
            Some(&[1, 1, 1, 1]),
            Some(&[2, 2, 2, -1]),
            &[0, 0, 0, 0],
            &[0, 0, 0, 0],
            None,
            &[2, 2, 2, 2],
        ),
        (
            "4 subsets, subset 1 and 2 unschedulable detected",
            8,
            Some(&[1, 1, 1, 1]),
            Some(&[2, 2, 2, -1]),
            &[2, 2, 2, 2],
            &[0, 2, 2, 0],
            None,
            &[2, 2, 2, 6],
        ),
        (
            "4 subsets, subset 1 and 2 starts each 1 pods",
            8,
            Some(&[1, 1, 1, 1]),
            Some(&[2, 2, 2, -1]),
            &[2, 2, 2, 6],
            &[0, 1, 1, 0],
            None,
            &[2, 2, 2, 4],
        ),
        (
            "4 subsets, subset 1 recovered",
            8,
            Some(&[1, 1, 1, 1]),
            Some(&[2, 2, 2, -1]),
            &[2, 2, 2, 4],
            &[0, -1, 1, 0],
            None,
            &[2, 2, 2, 3],
        ),
        (
            "4 subsets, all subset recovered",
            8,
            Some(&[1, 1, 1, 1]),
            Some(&[2, 2, 2, -1]),
            &[2, 2, 2, 3],
            &[0, 0, -1, 0],
            None,
            &[2, 2, 2, 2],
        ),
        (
            "4 subsets, part of subset 1 and 2 started, scaled to 16",
            16,
            Some(&[2, 2, 2, 2]),
            Some(&[4, 4, 4, -1]),
            &[2, 2, 2, 6],
            &[0, 1, 1, 0],
            None,
            &[4, 2, 2, 10],
        ),
        (
            "4 subsets, part of subset 1 and 2 started, scaled back to 8",
            8,
            Some(&[1, 1, 1, 1]),
            Some(&[2, 2, 2, -1]),
            &[4, 2, 2, 10],
            &[0, 1, 1, 0],
            None,
            &[2, 2, 2, 4],
        ),
        (
            "4 subsets, all of subset 1 and 2 started, already scaled to 16 replicas",
            16,
            Some(&[2, 2, 2, 2]),
            Some(&[4, 4, 4, -1]),
            &[4, 2, 2, 10],
            &[0, -1, -1, 0],
            None,
            &[4, 4, 4, 8],
        ),
        (
            "4 subsets, scaled to 16, new pods of subset 1 2 already started, verifying new pods",
            16,
            Some(&[2, 2, 2, 2]),
            Some(&[4, 4, 4, -1]),
            &[4, 4, 4, 8],
            &[0, 2, 2, 0],
            None,
            &[4, 4, 4, 8],
        ),
        (
            "4 subsets, scaled to 16, new pods of subset 1 2 already started, new pods started",
            16,
            Some(&[2, 2, 2, 2]),
            Some(&[4, 4, 4, -1]),
            &[4, 4, 4, 8],
            &[0, -1, -1, 0],
            None,
            &[4, 4, 4, 4],
        ),
        ("3 infinity subsets, start", 2, None, None, &[0, 0, 0], &[0, 0, 0], None, &[2, 0, 0]),
        ("3 infinity subsets, found subset-0 unschedulable", 2, None, None, &[2, 0, 0], &[2, 0, 0], None, &[2, 2, 0]),
        ("3 infinity subsets, found subset-1 unschedulable", 2, None, None, &[2, 2, 0], &[2, 2, 0], None, &[2, 2, 2]),
        ("3 infinity subsets, 2 unschedulable, scale up to 4", 4, None, None, &[2, 2, 2], &[2, 2, 0], None, &[2, 2, 4]),
        (
            "3 infinity subsets, scaled, 2 unschedulable, subset-1 recovered",
            4,
            None,
            None,
            &[2, 2, 4],
            &[4, -1, 0],
            None,
            &[2, 4, 2],
        ),
        (
            "3 infinity subsets, scaled, 2 unschedulable, subset-1 started, waiting verify",
            4,
            None,
            None,
            &[2, 4, 2],
            &[4, 2, 0],
            None,
            &[2, 4, 2],
        ),
        (
            "3 infinity subsets, scaled, 2 unschedulable, subset-1 started after recovery",
            4,
            None,
            None,
            &[2, 4, 2],
            &[4, -1, 0],
            None,
            &[2, 4, 0],
        ),
        ("3 infinity subsets, one of subset-1 started", 2, None, None, &[2, 2, 2], &[2, 1, 0], None, &[2, 2, 1]),
        ("3 infinity subsets, subset-0 recovered", 2, None, None, &[2, 2, 1], &[0, 1, 0], None, &[2, 0, 0]),
        ("3 infinity subsets, scale from 4 to 2", 2, None, None, &[2, 2, 0], &[0, 0, 0], None, &[2, 0, 0]),
        (
            "3 infinity subsets, scaled from 2 to 4 and subset-1 recovered",
            4,
            None,
            None,
            &[2, 2, 4],
            &[-1, 2, 0],
            None,
            &[4, 2, 2],
        ),
        ("3 subsets, 2 with minReplicas, start", 2, Some(&[1, 1, 0]), None, &[0, 0, 0], &[0, 0, 0], None, &[1, 1, 0]),
        (
            "3 subsets, 2 with minReplicas, two subsets unschedulable",
            2,
            Some(&[1, 1, 0]),
            None,
            &[1, 1, 0],
            &[1, 1, 0],
            None,
            &[1, 1, 2],
        ),
        (
            "3 subsets, 2 with minReplicas, subset-0 recovered",
            2,
            Some(&[1, 1, 0]),
            None,
            &[1, 1, 2],
            &[-1, 1, 0],
            None,
            &[2, 1, 1],
        ),
        (
            "3 subsets, 2 with minReplicas, subset-0 recovered, verifying new pods ",
            2,
            Some(&[1, 1, 0]),
            None,
            &[2, 1, 1],
            &[1, 1, 0],
            None,
            &[2, 1, 1],
        ),
        (
            "3 subsets, 2 with minReplicas, subset-0 recovered, new pod started",
            2,
            Some(&[1, 1, 0]),
            None,
            &[2, 1, 1],
            &[0, 1, 0],
            None,
            &[2, 1, 0],
        ),
        (
            "3 subsets, 2 with minReplicas, subset-1 recovered",
            2,
            Some(&[1, 1, 0]),
            None,
            &[2, 1, 0],
            &[0, -1, 0],
            None,
            &[1, 1, 0],
        ),
    ];
    for (name, replicas, mins, maxs, cur, reserved, new_pods, want) in rows {
        let n = want.len();
        let zeros = vec![0; n];
        let new_pods = new_pods.map_or(zeros.clone(), |p| p.to_vec());
        let mut subsets = Vec::new();
        let mut existing = BTreeMap::new();
        for i in 0..n {
            let name = format!("subset-{i}");
            let min = mins.and_then(|m| (m[i] >= 0).then_some(IntOrString::Int(m[i])));
            let max = maxs.and_then(|m| (m[i] >= 0).then_some(IntOrString::Int(m[i])));
            subsets.push(Subset { name: name.clone(), min_replicas: min, max_replicas: max, ..Default::default() });
            let marked = reserved[i] != 0;
            let res = reserved[i].max(0);
            existing.insert(
                name,
                SubsetState {
                    replicas: cur[i],
                    ready_replicas: cur[i] - res - new_pods[i],
                    unschedulable: res != 0,
                    marked_as_unschedulable: marked,
                    reserved_pods: res,
                },
            );
        }
        if let Some(last) = subsets.last_mut() {
            last.max_replicas = None;
        }
        let mut spec = UnitedDeploymentSpec {
            replicas: Some(*replicas),
            topology: Topology { subsets, ..Default::default() },
            ..Default::default()
        };
        spec.topology.schedule_strategy.type_ = ADAPTIVE.into();
        spec.topology.schedule_strategy.adaptive =
            Some(AdaptiveUnitedDeploymentStrategy { reserve_unschedulable_pods: true, ..Default::default() });
        assert!(should_reserve_unschedulable_pods(&spec.topology.schedule_strategy));
        let out = allocate(&spec, &existing).expect(name);
        assert_eq!(in_order(&out, n), want.to_vec(), "{name}");
    }
}

#[test]
fn parse_subset_replicas_as_kruise() {
    let s = |v: &str| IntOrString::String(v.into());
    assert_eq!(parse_subset_replicas(10, &IntOrString::Int(3)), Ok(3));
    assert_eq!(parse_subset_replicas(-1, &IntOrString::Int(3)), Ok(3));
    assert_eq!(parse_subset_replicas(10, &s("90%")), Ok(9));
    assert_eq!(parse_subset_replicas(10, &s("71%")), Ok(7));
    assert_eq!(parse_subset_replicas(10, &s("29%")), Ok(3));
    assert_eq!(parse_subset_replicas(3, &s("50%")), Ok(2), "rounded half up");
    assert_eq!(
        parse_subset_replicas(10, &IntOrString::Int(-1)).unwrap_err(),
        "subset replicas (-1) should not be less than 0"
    );
    assert_eq!(
        parse_subset_replicas(-1, &s("90%")).unwrap_err(),
        "subsetReplicas (90%) should not be string when unitedDeployment replicas is empty"
    );
    assert_eq!(
        parse_subset_replicas(10, &s("9")).unwrap_err(),
        "subset replicas (9) only support integer value or percentage value with a suffix '%'"
    );
    assert_eq!(
        parse_subset_replicas(10, &s("a%")).unwrap_err(),
        "subset replicas (a%) should be correct percentage integer: strconv.ParseInt: parsing \"a\": invalid syntax"
    );
    assert_eq!(
        parse_subset_replicas(10, &s("3000000000%")).unwrap_err(),
        "subset replicas (3000000000%) should be correct percentage integer: strconv.ParseInt: parsing \"3000000000\": value out of range"
    );
    assert_eq!(
        parse_subset_replicas(10, &s("101%")).unwrap_err(),
        "subset replicas (101%) should be in range [0, 100]"
    );
}

#[test]
fn min_over_max_is_refused() {
    let err = allocate(&min_max_spec(5, &[3, 0], &[2, -1]), &BTreeMap::new()).unwrap_err();
    assert_eq!(err, "subset[0].maxReplicas(2) must be more than or equal to minReplicas(3)");
}

/// The e2e shape: `zone-a: 4`, `zone-b` the rest.
#[test]
fn fixed_then_rest() {
    let spec = UnitedDeploymentSpec {
        replicas: Some(6),
        topology: Topology {
            subsets: vec![
                Subset { name: "zone-a".into(), replicas: Some(IntOrString::Int(4)), ..Default::default() },
                Subset { name: "zone-b".into(), ..Default::default() },
            ],
            ..Default::default()
        },
        ..Default::default()
    };
    let out = allocate(&spec, &BTreeMap::new()).unwrap();
    assert_eq!(out, [("zone-a".to_string(), 4), ("zone-b".to_string(), 2)].into());
}

proptest! {
    /// Specific allocation: whatever the current sizes, the subsets add up to the replicas when
    /// the fixed numbers leave room.
    #[test]
    fn specific_adds_up(
        replicas in 0i32..500,
        current in proptest::collection::vec(0i32..50, 1..6),
        fixed in proptest::collection::vec(proptest::option::of(0i32..100), 1..6),
    ) {
        let n = current.len().min(fixed.len());
        let subsets: Vec<Subset> = (0..n).map(|i| Subset {
            name: format!("s{i}"),
            replicas: fixed[i].map(IntOrString::Int),
            ..Default::default()
        }).collect();
        let existing = (0..n).map(|i| (format!("s{i}"), SubsetState { replicas: current[i], ..Default::default() })).collect();
        let spec = UnitedDeploymentSpec { replicas: Some(replicas), topology: Topology { subsets, ..Default::default() }, ..Default::default() };
        let fixed_sum: i32 = fixed[..n].iter().flatten().sum();
        let all_fixed = fixed[..n].iter().all(Option::is_some);
        match allocate(&spec, &existing) {
            Ok(out) => {
                prop_assert!(fixed_sum <= replicas && (!all_fixed || fixed_sum == replicas));
                prop_assert_eq!(out.values().sum::<i32>(), replicas);
                prop_assert!(out.values().all(|v| *v >= 0));
                for (i, f) in fixed[..n].iter().enumerate() {
                    if let Some(f) = f { prop_assert_eq!(out[&format!("s{i}")], *f); }
                }
            }
            Err(_) => prop_assert!(fixed_sum > replicas || (all_fixed && fixed_sum != replicas)),
        }
    }

    /// Min/max allocation respects every max, every min when the mins fit, and adds up to the
    /// replicas or to the sum of the maxes.
    #[test]
    fn min_max_respects_bounds(
        replicas in 0i32..200,
        bounds in proptest::collection::vec((0i32..20, proptest::option::of(0i32..40)), 1..6),
    ) {
        let bounds: Vec<(i32, Option<i32>)> = bounds.into_iter().map(|(min, max)| (min, max.map(|m| m.max(min)))).collect();
        let subsets: Vec<Subset> = bounds.iter().enumerate().map(|(i, (min, max))| Subset {
            name: format!("s{i}"),
            min_replicas: Some(IntOrString::Int(*min)),
            max_replicas: max.map(IntOrString::Int),
            ..Default::default()
        }).collect();
        let spec = UnitedDeploymentSpec { replicas: Some(replicas), topology: Topology { subsets, ..Default::default() }, ..Default::default() };
        let out = allocate(&spec, &BTreeMap::new()).unwrap();
        let min_sum: i64 = bounds.iter().map(|b| i64::from(b.0)).sum();
        let max_sum: i64 = bounds.iter().map(|b| b.1.map_or(i64::from(i32::MAX), i64::from)).sum();
        let total: i64 = out.values().map(|v| i64::from(*v)).sum();
        prop_assert_eq!(total, i64::from(replicas).min(max_sum));
        for (i, (min, max)) in bounds.iter().enumerate() {
            let got = out[&format!("s{i}")];
            prop_assert!(got >= 0);
            if let Some(max) = max { prop_assert!(got <= *max); }
            if min_sum <= i64::from(replicas) { prop_assert!(got >= *min); }
        }
    }
}
