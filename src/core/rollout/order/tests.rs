//! kruise's `pkg/util/updatesort` tables, row by row: `TestCompare` (13 rows),
//! `Test_prioritySort_Sort` (3), `TestGenerateRules` (2), `TestScatterPodsByRule` (12) and
//! `TestSort` (21).

use super::*;
use crate::apis::common::{UpdatePriorityOrderTerm, UpdatePriorityWeightTerm};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

type Labels = BTreeMap<String, String>;
/// (name, pods, strategy, expected).
type RuleRow = (&'static str, Vec<Labels>, Vec<UpdateScatterTerm>, Vec<UpdateScatterTerm>);
type SortRow = (&'static str, Vec<Option<Labels>>, Vec<UpdateScatterTerm>, Vec<usize>);

fn l(pairs: &[(&str, &str)]) -> Labels {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn weights(terms: &[(i32, &str, &str)]) -> UpdatePriorityStrategy {
    UpdatePriorityStrategy {
        weight_priority: terms
            .iter()
            .map(|(w, k, v)| UpdatePriorityWeightTerm {
                weight: *w,
                match_selector: LabelSelector { match_labels: Some(l(&[(k, v)])), ..Default::default() },
            })
            .collect(),
        ..Default::default()
    }
}

fn orders(keys: &[&str]) -> UpdatePriorityStrategy {
    UpdatePriorityStrategy {
        order_priority: keys.iter().map(|k| UpdatePriorityOrderTerm { ordered_key: k.to_string() }).collect(),
        ..Default::default()
    }
}

/// kruise calls `compare(podI, podJ, true)`: a tie answers the default, true.
#[test]
fn kruise_compare() {
    let w2 = weights(&[(20, "key", "foo"), (10, "key", "bar")]);
    let w3a = weights(&[(20, "key1", "foo"), (10, "key2", "bar"), (15, "key3", "baz")]);
    let w3b = weights(&[(20, "key1", "foo"), (10, "key2", "bar"), (5, "key3", "baz")]);
    let o = orders(&["key1", "key2"]);
    let rows: Vec<(&UpdatePriorityStrategy, Labels, Labels, bool)> = vec![
        (&w2, l(&[]), l(&[]), true),
        (&w2, l(&[("key", "foo")]), l(&[("key", "foo")]), true),
        (&w2, l(&[("key", "bar")]), l(&[("key", "foo")]), false),
        (&w2, l(&[]), l(&[("key", "bar")]), false),
        (&w2, l(&[]), l(&[("key", "foo")]), false),
        (&w3a, l(&[("key1", "foo")]), l(&[("key2", "bar"), ("key3", "baz")]), false),
        (&w3b, l(&[("key2", "bar"), ("key3", "baz")]), l(&[("key1", "foo")]), false),
        (&o, l(&[]), l(&[]), true),
        (&o, l(&[("key1", "o-10")]), l(&[("key1", "o-5")]), true),
        (&o, l(&[("key1", "o-10")]), l(&[("key1", "o-10")]), true),
        (&o, l(&[("key1", "o-10")]), l(&[("key1", "o-20")]), false),
        (&o, l(&[("key2", "o-20")]), l(&[("key1", "o-10")]), false),
        (&o, l(&[("key2", "o-20")]), l(&[("key2", "o-10")]), true),
    ];
    assert_eq!(rows.len(), 13);
    for (i, (s, a, b, want)) in rows.iter().enumerate() {
        let got = match priority_order(s, a, b) {
            Ordering::Less => true,
            Ordering::Equal => true,
            Ordering::Greater => false,
        };
        assert_eq!(got, *want, "case #{i}");
    }
}

#[test]
fn kruise_priority_sort() {
    let pods = [l(&[("hello", "world")]), l(&[]), l(&[("foo", "bar")]), l(&[])];
    let view: Vec<PodLabels<'_>> = pods.iter().map(Some).collect();
    let rows: Vec<(&str, UpdatePriorityStrategy, Vec<usize>)> = vec![
        ("empty priority strategy", UpdatePriorityStrategy::default(), vec![0, 1, 2, 3]),
        (
            "priority strategy, keep original order if not match any priority rule",
            weights(&[(100, "foo", "bar"), (90, "hello", "world")]),
            vec![2, 0, 1, 3],
        ),
        (
            "priority strategy, no Pods matched any priority rule, keep original order",
            weights(&[(100, "not", "match"), (90, "not1", "match1")]),
            vec![0, 1, 2, 3],
        ),
    ];
    for (name, s, want) in rows {
        let mut idx = vec![0, 1, 2, 3];
        sort_by_priority(&s, &view, &mut idx);
        assert_eq!(idx, want, "{name}");
    }
    // kruise's first row has three pods.
    let mut three = vec![0, 1, 2];
    sort_by_priority(&UpdatePriorityStrategy::default(), &view[..3], &mut three);
    assert_eq!(three, [0, 1, 2]);
}

fn term(k: &str, v: &str) -> UpdateScatterTerm {
    UpdateScatterTerm { key: k.into(), value: v.into() }
}

#[test]
fn kruise_generate_rules() {
    let rows: Vec<RuleRow> = vec![
        (
            "one pod one label",
            vec![l(&[]), l(&[]), l(&[]), l(&[]), l(&[("labelA", "AAA")]), l(&[("labelA", "AAA")])],
            vec![term("labelA", "AAA")],
            vec![term("labelA", "AAA")],
        ),
        (
            "same pods a label",
            vec![
                l(&[]),
                l(&[]),
                l(&[("labelB", "B")]),
                l(&[("labelB", "BBB")]),
                l(&[("labelA", "AAA")]),
                l(&[("labelA", "AAA")]),
            ],
            vec![term("labelA", "AAA"), term("labelB", "BBB")],
            vec![term("labelA", "AAA"), term("labelB", "BBB")],
        ),
    ];
    for (name, pods, strategy, want) in rows {
        let view: Vec<PodLabels<'_>> = pods.iter().map(Some).collect();
        let idx: Vec<usize> = (0..pods.len()).collect();
        assert_eq!(scatter_terms(&strategy, &view, &idx), want, "{name}");
    }
}

/// Pods from kruise's shorthand `"k=v,k2=v2"` strings.
fn parse(spec: &str) -> Labels {
    spec.split(',').filter_map(|kv| kv.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn kruise_scatter_pods_by_rule() {
    let rows: Vec<(&str, Vec<&str>, Vec<usize>)> = vec![
        ("no label", vec![""], vec![0]),
        ("only one scattered pod", vec!["labelA=AAA"], vec![0]),
        ("odd scattered pod + odd ordinary pod", vec!["labelA=AAA", "bbb"], vec![0, 1]),
        (
            "even scattered pods + even ordinary pods",
            vec!["", "", "", "", "labelA=AAA", "labelA=AAA"],
            vec![4, 0, 1, 2, 3, 5],
        ),
        (
            "odd scattered pods + odd ordinary pods",
            vec!["", "", "", "labelA=AAA", "labelA=AAA", "labelA=AAA"],
            vec![3, 0, 1, 4, 2, 5],
        ),
        (
            "even scattered pods + odd ordinary pods",
            vec!["", "", "", "labelA=AAA", "", "", "labelA=AAA"],
            vec![3, 0, 1, 2, 4, 5, 6],
        ),
        (
            "odd scattered pods + even ordinary pods",
            vec!["", "", "", "", "", "", "labelA=AAA", "labelA=AAA", "labelA=AAA"],
            vec![6, 0, 1, 2, 7, 3, 4, 5, 8],
        ),
        (
            "even scattered pods + even ordinary pods + scattered pods more than ordinary pods",
            vec!["", "", "labelA=AAA", "labelA=AAA", "labelA=AAA", "labelA=AAA"],
            vec![2, 3, 0, 4, 1, 5],
        ),
        (
            "odd scattered pods + odd ordinary pods + scattered pods more than ordinary pods",
            vec!["", "", "", "labelA=AAA", "labelA=AAA", "labelA=AAA", "labelA=AAA", "labelA=AAA"],
            vec![3, 0, 1, 4, 2, 5],
        ),
        (
            "even scattered pods + odd ordinary pods + scattered pods more than ordinary pods",
            vec!["", "", "labelA=AAA", "", "labelA=AAA", "labelA=AAA", "labelA=AAA", "labelA=AAA", "labelA=AAA"],
            vec![2, 4, 0, 5, 6, 1, 7, 3, 8],
        ),
        (
            "odd scattered pods + even ordinary pods + scattered pods more than ordinary pods",
            vec!["", "labelA=AAA", "", "labelA=AAA", "", "", "labelA=AAA", "labelA=AAA", "labelA=AAA"],
            vec![1, 0, 3, 2, 6, 4, 7, 5, 8],
        ),
        (
            "invalid label",
            vec!["", "", "", "", "ee", "a", "", "labelA=AAA", "labelA=AAA", "labelA=AAA,labelB=BBB"],
            vec![7, 0, 1, 2, 3, 8, 4, 5, 6, 9],
        ),
    ];
    assert_eq!(rows.len(), 12);
    let t = term("labelA", "AAA");
    for (name, specs, want) in rows {
        // kruise builds as many pods as expected indexes, from the first label specs.
        let pods: Vec<Labels> = specs.iter().take(want.len()).map(|s| parse(s)).collect();
        let view: Vec<PodLabels<'_>> = pods.iter().map(Some).collect();
        let idx: Vec<usize> = (0..pods.len()).collect();
        assert_eq!(scatter_by_term(&t, &view, &idx), want, "{name}");
    }
}

#[test]
fn kruise_sort() {
    let a = ("labelA", "AAA");
    let b = ("labelB", "BBB");
    let c = ("labelC", "CCC");
    let e = |pairs: &[(&str, &str)]| Some(l(pairs));
    let n = || Some(l(&[]));
    let ab = vec![term("labelA", "AAA"), term("labelB", "BBB")];
    let abc = vec![term("labelA", "AAA"), term("labelB", "BBB"), term("labelC", "CCC")];
    let rows: Vec<SortRow> = vec![
        ("a scattered pod + an ordinary pod", vec![e(&[a, b])], vec![term("labelA", "AAA")], vec![0]),
        ("all ordinary pods", vec![n(), n(), n(), n(), n(), n()], vec![], vec![0, 1, 2, 3, 4, 5]),
        (
            "one pod one label",
            vec![n(), n(), n(), n(), e(&[a]), e(&[a])],
            vec![term("labelA", "AAA")],
            vec![4, 0, 1, 2, 3, 5],
        ),
        (
            "one pod more labels",
            vec![
                n(),
                n(),
                n(),
                n(),
                e(&[("sdfb", "eee")]),
                e(&[("dsf", "same")]),
                e(&[b]),
                e(&[a]),
                e(&[a]),
                e(&[a, b]),
            ],
            vec![term("labelB", "BBB")],
            vec![6, 0, 1, 2, 3, 4, 5, 7, 8, 9],
        ),
        (
            "2 dimensions + one pod one label",
            vec![e(&[b]), e(&[b]), n(), n(), e(&[a]), e(&[a])],
            ab.clone(),
            vec![0, 4, 2, 3, 5, 1],
        ),
        (
            "2 dimensions + one pod more labels",
            vec![n(), n(), n(), e(&[b]), e(&[a, b]), e(&[a])],
            ab.clone(),
            vec![4, 0, 1, 2, 5, 3],
        ),
        (
            "2 dimensions + same label + sequence: A + B",
            vec![n(), n(), n(), n(), e(&[("sdfb", "eee")]), e(&[("dsf", "same")]), e(&[b]), e(&[a]), e(&[a]), e(&[b])],
            vec![term("labelB", "BBB"), term("labelA", "AAA")],
            vec![7, 6, 0, 1, 2, 3, 4, 5, 9, 8],
        ),
        (
            "2 dimensions + same label + sequence: B + A",
            vec![n(), n(), n(), n(), e(&[("sdfb", "eee")]), e(&[("dsf", "same")]), e(&[b]), e(&[a]), e(&[a]), e(&[b])],
            ab.clone(),
            vec![6, 7, 0, 1, 2, 3, 4, 5, 8, 9],
        ),
        (
            "2 dimensions + same pod same label + even scatter pods + even ordinary pods",
            vec![n(), n(), n(), n(), e(&[("sdfb", "eee")]), e(&[("dsf", "same")]), e(&[a, b]), n(), n(), e(&[b, a])],
            ab.clone(),
            vec![6, 0, 1, 2, 3, 4, 5, 7, 8, 9],
        ),
        (
            "2 dimensions + same pod same label + even scatter pods + odd ordinary pods",
            vec![n(), n(), n(), e(&[("sdfb", "eee")]), e(&[("dsf", "same")]), e(&[a, b]), n(), n(), e(&[b, a])],
            ab.clone(),
            vec![5, 0, 1, 2, 3, 4, 6, 7, 8],
        ),
        (
            "2 dimensions + same pod same label + odd scatter pods + odd ordinary pods",
            vec![n(), n(), n(), e(&[a]), e(&[("sdfb", "eee")]), e(&[("dsf", "same")]), e(&[a, b]), n(), n(), n()],
            ab.clone(),
            vec![3, 0, 1, 2, 4, 5, 7, 6],
        ),
        (
            "2 dimensions + same pod same label + odd scatter pods + odd ordinary pods (12 pods)",
            vec![
                n(),
                n(),
                n(),
                e(&[a]),
                n(),
                n(),
                e(&[("sdfb", "eee")]),
                e(&[("dsf", "same")]),
                e(&[a, b]),
                n(),
                n(),
                e(&[b, a]),
            ],
            ab.clone(),
            vec![0, 1, 2, 4, 3, 5, 6, 7, 9, 10, 8],
        ),
        (
            "2 dimensions + same pod same label + even scatter pods + even ordinary pods + scatter pods more than ordinary pods",
            vec![
                n(),
                n(),
                n(),
                e(&[a]),
                e(&[("sdfb", "eee"), a]),
                e(&[("dsf", "same")]),
                e(&[a, b]),
                n(),
                n(),
                e(&[b, a]),
            ],
            ab.clone(),
            vec![6, 3, 0, 1, 4, 2, 5, 7, 8, 9],
        ),
        (
            "2 dimensions + same pod same label + even scatter pods + odd ordinary pods + scatter pods more than ordinary pods",
            vec![n(), e(&[a]), e(&[a]), e(&[("sdfb", "eee")]), e(&[("dsf", "same")]), e(&[a, b]), n(), n(), e(&[b, a])],
            ab.clone(),
            vec![5, 1, 0, 3, 2, 4, 6, 7, 8],
        ),
        (
            "2 dimensions + same pod same label + odd scatter pods + odd ordinary pods + scatter pods more than ordinary pods",
            vec![
                e(&[a]),
                n(),
                n(),
                e(&[a]),
                e(&[("sdfb", "eee"), a]),
                e(&[("dsf", "same")]),
                e(&[a, b]),
                n(),
                n(),
                e(&[b, a]),
            ],
            ab.clone(),
            vec![1, 0, 2, 3, 5, 4, 7, 6],
        ),
        (
            "2 dimensions + same pod same label + odd scatter pods + odd ordinary pods + scatter pods more than ordinary pods (12 pods)",
            vec![
                n(),
                n(),
                e(&[a]),
                e(&[a]),
                n(),
                e(&[a]),
                e(&[("sdfb", "eee")]),
                e(&[("dsf", "same")]),
                e(&[a, b]),
                n(),
                n(),
                e(&[b, a]),
            ],
            ab.clone(),
            vec![0, 2, 1, 4, 3, 6, 7, 5, 9, 10, 8],
        ),
        (
            "3 dimensions + one pod one label",
            vec![n(), e(&[a]), e(&[a]), e(&[b]), e(&[b]), e(&[c]), e(&[c]), e(&[c]), e(&[c]), e(&[c])],
            abc.clone(),
            vec![3, 1, 5, 0, 6, 7, 8, 9, 2, 4],
        ),
        (
            "3 dimensions + one pod more label",
            vec![n(), e(&[a]), e(&[a, c]), e(&[b, c]), e(&[b]), n(), n(), e(&[c]), e(&[c]), e(&[c])],
            abc.clone(),
            vec![3, 2, 0, 7, 8, 5, 6, 9, 1, 4],
        ),
        (
            "continuous sort 1",
            vec![n(), n(), n(), n(), e(&[a]), e(&[a]), e(&[a])],
            vec![term("labelA", "AAA")],
            vec![0, 1, 4, 2, 3, 5],
        ),
        (
            "continuous sort 2",
            vec![e(&[a]), e(&[a]), n(), n(), n(), n(), n(), n(), n(), e(&[a])],
            vec![term("labelA", "AAA")],
            vec![2, 0, 3, 4, 5, 6, 1],
        ),
        (
            "reserveOrdinals nil in slice",
            vec![n(), e(&[a]), e(&[a, c]), e(&[b, c]), e(&[b]), None, n(), n(), e(&[c]), e(&[c]), e(&[c])],
            abc.clone(),
            vec![3, 2, 0, 8, 9, 6, 7, 10, 1, 4],
        ),
    ];
    assert_eq!(rows.len(), 21);
    for (name, pods, strategy, want) in rows {
        // kruise: the first len(want)+#nil pods are waiting (nil ones skipped), the rest only count.
        let nils = pods.iter().filter(|p| p.is_none()).count();
        let view: Vec<PodLabels<'_>> = pods.iter().map(Option::as_ref).collect();
        let idx: Vec<usize> = (0..(want.len() + nils).min(pods.len())).filter(|&i| pods[i].is_some()).collect();
        assert_eq!(sort_by_scatter(&strategy, &view, idx), want, "{name}");
    }
}

#[test]
fn int_suffix_table() {
    for (v, want) in [("o-10", 10), ("abc", 0), ("12", 12), ("", 0), ("a99999999999999999999", 0), ("v1.2", 2)] {
        assert_eq!(int_suffix(v), want, "{v}");
    }
}
