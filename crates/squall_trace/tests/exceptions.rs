//! Exceptions as Python's traceback names them, and the frames one unwound from a given unwind.

use squall_trace::exceptions::{exception_text, exceptions, unwind_chain, ExceptionText};
use squall_trace::{Kind, Limits, Node, ObjectNode, SeqKind, SeqNode, ThreadRef, Timeline, ValRef, ValueStore};

const NO_LIMITS: Limits = Limits { thread_trace_limit: None, fn_call_limit: None, memory_limit: None };

/// An exception object of type `ty` (as the encoder interns it: `module.Qualname`) with `args`.
fn exc(store: &mut ValueStore, ty: &str, obj: u64, args: &[&str]) -> ValRef {
    let items: Vec<ValRef> = args.iter().map(|a| store.push(Node::Str((*a).into())).unwrap()).collect();
    let tuple = store.intern("tuple");
    let len = items.len() as u64;
    let args =
        store.push(Node::Seq(Box::new(SeqNode { kind: SeqKind::Tuple, ty: tuple, obj: 0, len, items: items.into() })));
    let name = store.intern("args");
    let ty = store.intern(ty);
    store.push(Node::Object(Box::new(ObjectNode { ty, obj, attrs: vec![(name, args.unwrap())].into() }))).unwrap()
}

fn text(store: &ValueStore, v: ValRef) -> ExceptionText {
    exception_text(Some(store), v, 1000)
}

#[test]
fn types_are_named_as_the_traceback_names_them() {
    let mut store = ValueStore::new();
    let cases = [
        ("__main__.ParseError", &["bad input"][..], "ParseError: bad input"),
        ("__main__.Outer.Error", &["x"][..], "Outer.Error: x"),
        ("json.decoder.JSONDecodeError", &["Expecting value"][..], "json.decoder.JSONDecodeError: Expecting value"),
        ("ValueError", &[][..], "ValueError"),
        ("KeyError", &["k"][..], "KeyError: 'k'"),
        ("shop.errors.OutOfStock", &["pen", "ink"][..], "shop.errors.OutOfStock: ('pen', 'ink')"),
    ];
    for (n, (ty, args, line)) in cases.into_iter().enumerate() {
        let v = exc(&mut store, ty, n as u64 + 1, args);
        assert_eq!(text(&store, v).line().as_deref(), Some(line), "{ty}");
    }
    assert_eq!(exception_text(Some(&store), ValRef::ABSENT, 1000).line(), None);
}

/// main -> parse -> inner: `inner` raises, `parse` lets it through, `main` catches it; then
/// main calls `inner` again, which raises another exception `main` lets through.
#[test]
fn the_chain_from_an_unwind_goes_outward_while_callers_unwound_with_it() {
    let mut store = ValueStore::new();
    let first = exc(&mut store, "__main__.ParseError", 1, &["bad"]);
    let second = exc(&mut store, "ValueError", 2, &["worse"]);
    let (main, parse, inner) = (0, 1, 2);
    let mut tl = Timeline::new();
    tl.call(main, &[], &NO_LIMITS); // 0
    tl.call(parse, &[], &NO_LIMITS); // 1
    tl.call(inner, &[], &NO_LIMITS); // 2
    tl.exit(Kind::Unwind, inner, inner, false, first, &NO_LIMITS); // 3
    tl.exit(Kind::Unwind, parse, parse, false, first, &NO_LIMITS); // 4
    tl.call(inner, &[], &NO_LIMITS); // 5
    tl.exit(Kind::Unwind, inner, inner, false, second, &NO_LIMITS); // 6
    tl.exit(Kind::Unwind, main, main, false, second, &NO_LIMITS); // 7

    let unwinds = |c: Vec<squall_trace::exceptions::Unwound>| c.iter().map(|u| u.unwind_idx).collect::<Vec<_>>();
    assert_eq!(unwinds(unwind_chain(Some(&store), &tl, 3).unwrap()), [3, 4]);
    assert_eq!(unwinds(unwind_chain(Some(&store), &tl, 4).unwrap()), [4]);
    assert_eq!(unwinds(unwind_chain(Some(&store), &tl, 6).unwrap()), [6, 7]);
    assert_eq!(unwind_chain(Some(&store), &tl, 2), None, "a call is no unwind");
    // The same chains as the exceptions query groups.
    let refs = [ThreadRef { flow: 0, thread_id: 1, timeline: &tl, values: Some(&store) }];
    let grouped: Vec<Vec<u32>> = exceptions(&refs).into_iter().map(|x| unwinds(x.chain)).collect();
    assert_eq!(grouped, [vec![3, 4], vec![6, 7]]);
}

/// Entries evicted from memory (saved to the recording file) leave what they held of the
/// exceptions with the timeline: the exceptions query lists the same exceptions, chains and
/// catchers whatever entries were evicted, and wherever the eviction point fell in a chain or
/// in a frame still open.
#[test]
fn exceptions_stay_whole_whatever_entries_were_evicted() {
    let mut store = ValueStore::new();
    let e1 = exc(&mut store, "__main__.ParseError", 1, &["bad"]);
    let e2 = exc(&mut store, "ValueError", 2, &["worse"]);
    let e3 = exc(&mut store, "KeyError", 3, &["k"]);
    let (main, f, g, h) = (0, 1, 2, 3);
    // main -> f -> g: g raises e1, f lets it through, main catches it; main -> f -> g: g raises
    // e2, f catches it; main -> h: h raises e3, main lets it through.
    // (form, `None` for a call or the exit's kind and value).
    let steps: [(u32, Option<(Kind, ValRef)>); 12] = [
        (main, None),
        (f, None),
        (g, None),
        (g, Some((Kind::Unwind, e1))),
        (f, Some((Kind::Unwind, e1))),
        (f, None),
        (g, None),
        (g, Some((Kind::Unwind, e2))),
        (f, Some((Kind::Return, ValRef::NONE))),
        (h, None),
        (h, Some((Kind::Unwind, e3))),
        (main, Some((Kind::Unwind, e3))),
    ];
    let step = |tl: &mut Timeline, &(form, exit): &(u32, Option<(Kind, ValRef)>)| {
        let _ = match exit {
            None => tl.call(form, &[], &NO_LIMITS),
            Some((kind, v)) => tl.exit(kind, form, form, false, v, &NO_LIMITS),
        };
    };
    let facts = |tl: &Timeline| {
        let refs = [ThreadRef { flow: 0, thread_id: 1, timeline: tl, values: Some(&store) }];
        exceptions(&refs)
            .into_iter()
            .map(|x| {
                let chain: Vec<_> = x.chain.iter().map(|u| (u.call_idx, u.unwind_idx)).collect();
                (chain, x.value, x.caught_in, x.caught_in_form)
            })
            .collect::<Vec<_>>()
    };
    let mut whole = Timeline::new();
    steps.iter().for_each(|s| step(&mut whole, s));
    let expected = facts(&whole);
    assert_eq!(
        expected,
        [
            (vec![(2, 3), (1, 4)], e1, Some(0), Some(main)),
            (vec![(6, 7)], e2, Some(5), Some(f)),
            (vec![(9, 10), (0, 11)], e3, None, None),
        ]
    );
    // Every eviction point, and every pair of them.
    for a in 0..=steps.len() {
        for b in a..=steps.len() {
            let mut tl = Timeline::new();
            for (i, s) in steps.iter().enumerate() {
                if i == a || i == b {
                    tl.evict_before(tl.len(), tl.args_len(), Some(&store));
                }
                step(&mut tl, s);
            }
            assert_eq!(facts(&tl), expected, "evicted before steps {a} and {b}");
        }
    }
}

/// A saving recorder evicts entries, then the value nodes stored before them: an exception
/// carried from evicted entries keeps its text (`Carried::keep_texts`, before its node leaves),
/// and an unwind recorded after that, carrying the same exception encoded afresh at a new node,
/// continues its chain by identity.
#[test]
fn an_exception_whose_node_left_memory_keeps_its_chain_and_text() {
    let mut store = ValueStore::new();
    let e1 = exc(&mut store, "__main__.ParseError", 1, &["bad"]);
    let (main, f, g) = (0, 1, 2);
    let mut tl = Timeline::new();
    for form in [main, f, g] {
        let _ = tl.call(form, &[], &NO_LIMITS);
    }
    let _ = tl.exit(Kind::Unwind, g, g, false, e1, &NO_LIMITS);
    tl.evict_before(tl.len(), tl.args_len(), Some(&store));
    tl.keep_exception_texts(&store, store.len() as u32);
    store.evict_below(store.len());
    let again = exc(&mut store, "__main__.ParseError", 1, &["bad"]);
    assert_ne!(again, e1);
    let _ = tl.exit(Kind::Unwind, f, f, false, again, &NO_LIMITS);
    let _ = tl.exit(Kind::Return, main, main, false, ValRef::NONE, &NO_LIMITS);
    let refs = [ThreadRef { flow: 0, thread_id: 1, timeline: &tl, values: Some(&store) }];
    let facts = exceptions(&refs);
    assert_eq!(facts.len(), 1, "{facts:?}");
    let chain: Vec<_> = facts[0].chain.iter().map(|u| (u.call_idx, u.unwind_idx)).collect();
    assert_eq!((chain, facts[0].caught_in, facts[0].obj), (vec![(2, 3), (1, 4)], Some(0), 1));
    assert_eq!(facts[0].text.as_deref().and_then(|t| t.line()).as_deref(), Some("ParseError: bad"));
    // Read from the value, it would be only where it went.
    assert_eq!(exception_text(Some(&store), e1, 100).type_name.as_deref(), Some(squall_trace::IN_FILE));
    let _ = tl.bytes();
}

/// Only the first `KEPT_TEXTS` exceptions carried keep their texts: past them, one whose value
/// left memory is named as in the file (the file has it).
#[test]
fn the_texts_kept_are_bounded() {
    use squall_trace::exceptions::KEPT_TEXTS;
    let mut store = ValueStore::new();
    let mut tl = Timeline::new();
    let _ = tl.call(0, &[], &NO_LIMITS);
    for i in 0..KEPT_TEXTS + 2 {
        let e = exc(&mut store, "ValueError", i as u64 + 1, &["bad"]);
        let _ = tl.call(1, &[], &NO_LIMITS);
        let _ = tl.exit(Kind::Unwind, 1, 1, false, e, &NO_LIMITS);
    }
    tl.evict_before(tl.len(), tl.args_len(), Some(&store));
    tl.keep_exception_texts(&store, store.len() as u32);
    store.evict_below(store.len());
    let refs = [ThreadRef { flow: 0, thread_id: 1, timeline: &tl, values: Some(&store) }];
    let texts: Vec<_> = exceptions(&refs).into_iter().map(|x| x.text.and_then(|t| t.line())).collect();
    assert_eq!(texts.len(), KEPT_TEXTS + 2);
    assert!(texts[..KEPT_TEXTS].iter().all(|t| t.as_deref() == Some("ValueError: bad")));
    assert_eq!(texts[KEPT_TEXTS..], [None, None]);
}

/// An exception's text names the objects in its args without resolving them to their earlier
/// states: reading it builds no index over the store (the flusher reads texts this way over a
/// long recording, where building each object's states grew without bound).
#[test]
fn an_exception_text_builds_no_index() {
    let mut store = ValueStore::new();
    let ty = store.intern("__main__.Thing");
    let n = store.intern("n");
    store.push(Node::Object(Box::new(ObjectNode { ty, obj: 9, attrs: vec![(n, ValRef::NONE)].into() }))).unwrap();
    let thing = store.push(squall_trace::CutNode { ty, obj: 9, len: 0 }.into_node()).unwrap();
    let tuple = store.intern("tuple");
    let args = store
        .push(Node::Seq(Box::new(SeqNode {
            kind: SeqKind::Tuple,
            ty: tuple,
            obj: 0,
            len: 1,
            items: vec![thing].into(),
        })))
        .unwrap();
    let (kerr, args_name) = (store.intern("KeyError"), store.intern("args"));
    let e = store.push(Node::Object(Box::new(ObjectNode { ty: kerr, obj: 10, attrs: vec![(args_name, args)].into() })));
    let line = text(&store, e.unwrap()).line().unwrap();
    assert!(line.starts_with("KeyError: <") && line.contains("Thing"), "{line}");
    assert_eq!(store.index_bytes(), 0);
    // Expanded for display, the reference is resolved (and the index built).
    let _ = store.to_snap(args, squall_trace::ExpandBudget::FULL);
    assert!(store.index_bytes() > 0);
}
