//! kruise's `TestGetStatefulSetReplicasRange` (4 rows) and the ordinals of
//! `TestStatefulSetControlWithStartOrdinal` (5 rows: the pods a scale-up creates are the range's
//! ordinals), `ParseRange`/`GetReserveOrdinalIntSet` on what kruise HEAD accepts, the spec §6.1
//! example, and the range computed here against Go's one-ordinal-at-a-time walk.

use super::*;
use crate::core::rollout::statefulset::fixtures::{named_pod, stateful_set};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::{Int, String as Str};

fn gates() -> FeatureGates {
    FeatureGates::default().with(Gate::StatefulSetStartOrdinal, true)
}

fn set_with(replicas: i32, start: Option<i32>, reserve: Vec<IntOrString>) -> StatefulSet {
    let mut set = stateful_set(replicas);
    set.spec.ordinals = start.map(|start| crate::apis::statefulset::v1beta1::StatefulSetOrdinals { start });
    set.spec.reserve_ordinals = reserve;
    set
}

#[test]
fn get_stateful_set_replicas_range() {
    // TestGetStatefulSetReplicasRange: (name, replicas, start, reserve, count = end - start).
    let rows = [
        ("Ordinals start 0", 4, 0, 6),
        ("Ordinals start 2 with ReserveOrdinals 1&3", 4, 2, 5),
        ("Ordinals start 3 with ReserveOrdinals 1&3", 4, 3, 5),
        ("Ordinals start 4 with ReserveOrdinals 1&3", 4, 4, 4),
    ];
    for (name, replicas, start, count) in rows {
        let set = set_with(replicas, Some(start), vec![Int(1), Int(3)]);
        let range = ReplicaRange::of(&set, &gates());
        assert_eq!(range.slots(), count, "{name}");
        assert_eq!(range.start, i64::from(start), "{name}");
        assert!(range.reserved.contains(1) && range.reserved.contains(3) && !range.reserved.contains(2), "{name}");
        assert_eq!(range.ordinals().count(), replicas as usize, "{name}");
    }
}

#[test]
fn start_ordinal_ids() {
    // TestStatefulSetControlWithStartOrdinal: (replicas, start, reserved, created ordinals).
    let rows: [(i32, i32, &[i32], &[i64]); 5] = [
        (3, 2, &[], &[2, 3, 4]),
        (3, 2, &[0, 4], &[2, 3, 5]),
        (3, 2, &[0, 2, 3, 4, 5], &[6, 7, 8]),
        (4, 1, &[], &[1, 2, 3, 4]),
        (4, 1, &[1, 3, 4], &[2, 5, 6, 7]),
    ];
    for (replicas, start, reserved, want) in rows {
        let set = set_with(replicas, Some(start), reserved.iter().map(|i| Int(*i)).collect());
        let range = ReplicaRange::of(&set, &gates());
        assert_eq!(range.ordinals().collect::<Vec<_>>(), want, "{replicas} from {start} minus {reserved:?}");
    }
}

#[test]
fn start_ordinal_needs_the_gate() {
    let set = set_with(2, Some(5), vec![]);
    assert_eq!(start_ordinal(&set, &FeatureGates::default()), 0);
    assert_eq!(start_ordinal(&set, &gates()), 5);
    assert_eq!(ReplicaRange::of(&set, &FeatureGates::default()).ordinals().collect::<Vec<_>>(), [0, 1]);
    assert_eq!(start_ordinal(&set_with(2, None, vec![]), &gates()), 0);
}

#[test]
fn reserve_ordinals_parse() {
    // (reserveOrdinals, reserved members checked 0..=9, or None for the empty set)
    let rows: Vec<(Vec<IntOrString>, &[i64])> = vec![
        (vec![Int(1)], &[1]),
        (vec![Str("1-3".into())], &[1, 2, 3]),
        (vec![Int(0), Str("5-6".into()), Int(9)], &[0, 5, 6, 9]),
        (vec![Str("4-4".into())], &[4]),
        (vec![Str("+2-3".into())], &[2, 3]),
        // Any invalid entry empties the whole set (klog error, nil set).
        (vec![Int(1), Str("3-1".into())], &[]),
        (vec![Int(1), Str("3".into())], &[]),
        (vec![Int(1), Str("a-b".into())], &[]),
        (vec![Str("1-2-3".into())], &[]),
        (vec![Str("-1-3".into())], &[]),
        (vec![Str(" 1-3".into())], &[]),
        (vec![Str("".into())], &[]),
    ];
    for (items, want) in rows {
        let r = Reserved::parse(&items);
        let got: Vec<i64> = (0..10).filter(|&i| r.contains(i)).collect();
        assert_eq!(got, want, "{items:?}");
        assert_eq!(r.is_empty(), want.is_empty(), "{items:?}");
    }
    assert_eq!(parse_range("1-3"), Ok((1, 3)));
    assert_eq!(parse_range("3-1"), Err("invalid range 3-1".into()));
    assert!(parse_range("1-x").unwrap_err().contains("invalid syntax"));
    // A negative integer entry is kept as an integer (the webhook rejects it).
    assert!(Reserved::parse(&[Int(-1)]).contains(-1));
}

#[test]
fn spec_example_and_huge_ranges() {
    // spec §6.1: replicas 3, reserveOrdinals [1] -> pods -0, -2, -3.
    let set = set_with(3, None, vec![Int(1)]);
    let range = ReplicaRange::of(&set, &gates());
    assert_eq!(range.ordinals().collect::<Vec<_>>(), [0, 2, 3]);
    assert_eq!((range.start, range.end), (0, 4));
    // A huge range is skipped, not expanded.
    let set = set_with(2, None, vec![Str("1-2000000000".into())]);
    let range = ReplicaRange::of(&set, &gates());
    assert_eq!(range.ordinals().collect::<Vec<_>>(), [0, 2_000_000_001]);
    assert_eq!(range.end, 2_000_000_002);
    // Zero replicas: an empty range at the start, reserved or not.
    let set = set_with(0, Some(1), vec![Int(1)]);
    let range = ReplicaRange::of(&set, &gates());
    assert_eq!((range.start, range.end, range.ordinals().count()), (1, 1, 0));
}

/// Go's `getStatefulSetReplicasRange` loop, verbatim.
fn go_walk(start: i64, replicas: i64, reserved: &Reserved) -> i64 {
    let mut max = start;
    let mut count = 0;
    while count < replicas {
        if reserved.contains(max) {
            max += 1;
            continue;
        }
        count += 1;
        max += 1;
    }
    max
}

#[test]
fn range_matches_go_walk() {
    // A small deterministic generator over starts, replicas and reserve lists.
    let mut seed = 7u64;
    let mut next = |n: u64| {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    for _ in 0..2000 {
        let start = next(6) as i32;
        let replicas = next(8) as i32;
        let items: Vec<IntOrString> = (0..next(4))
            .map(|_| {
                if next(2) == 0 {
                    Int(next(12) as i32)
                } else {
                    let a = next(12);
                    Str(format!("{a}-{}", a + next(4)))
                }
            })
            .collect();
        let set = set_with(replicas, Some(start), items.clone());
        let range = ReplicaRange::of(&set, &gates());
        let want_end = go_walk(i64::from(start), i64::from(replicas), &range.reserved);
        assert_eq!(range.end, want_end, "start {start} replicas {replicas} reserve {items:?}");
        let want: Vec<i64> = (range.start..want_end).filter(|o| !range.reserved.contains(*o)).collect();
        assert_eq!(range.ordinals().collect::<Vec<_>>(), want, "start {start} replicas {replicas} reserve {items:?}");
    }
}

#[test]
fn members_sorts_pods() {
    // replicas 3, reserve [1]: replicas 0, 2, 3; condemned 1 (reserved), 4 and 7 (out of range).
    let set = set_with(3, None, vec![Int(1)]);
    let range = ReplicaRange::of(&set, &gates());
    let names = ["foo-7", "foo-0", "foo-1", "foo-3", "foo-4", "foo-x", "foo-03", "bar"];
    let pods: Vec<Pod> = names.iter().map(|n| named_pod(n, &[])).collect();
    let refs: Vec<&Pod> = pods.iter().collect();
    let m = members(&set, &range, &refs);
    let slot = |s: &Slot<'_>| (s.ordinal, s.pod.map(|p| pods::name(p).to_string()));
    assert_eq!(
        m.replicas.iter().map(slot).collect::<Vec<_>>(),
        [(0, Some("foo-0".into())), (2, None), (3, Some("foo-3".into()))]
    );
    let condemned: Vec<&str> = m.condemned.iter().map(|p| pods::name(p)).collect();
    assert_eq!(condemned, ["foo-7", "foo-4", "foo-1"]);
    // `foo-03` has ordinal 3 too: `foo-3` keeps the slot, whichever came first.
    let dups: Vec<&str> = m.duplicates.iter().map(|p| pods::name(p)).collect();
    assert_eq!(dups, ["foo-03"]);
    let reversed: Vec<&Pod> = refs.iter().rev().copied().collect();
    let m = members(&set, &range, &reversed);
    assert_eq!(m.replicas[2].pod.map(pods::name), Some("foo-3"));
    assert_eq!(m.duplicates.iter().map(|p| pods::name(p)).collect::<Vec<_>>(), ["foo-03"]);
    assert!(range.contains_pod(&pods[1]) && !range.contains_pod(&pods[2]) && !range.contains_pod(&pods[5]));
}
