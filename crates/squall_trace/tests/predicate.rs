//! The predicate language (`squall_trace::predicate`): what it reads, what it says of values as
//! recorded (cut ones included), its errors, and the two subjects, a call and an entry.

use std::sync::Arc;

use squall_trace::predicate::{
    call_verdict, calls_where, entry_verdict, Predicate, PredicateError, Subject, Undecided, Verdict,
};
use squall_trace::{
    Coord, Form, FormKind, Forms, Kind, Limits, SeqKind, Site, SiteKind, Snap, Timeline, ValRef, ValueStore,
};

fn s(text: &str) -> Snap {
    Snap::Str(text.into())
}

fn list(items: Vec<Snap>) -> Snap {
    let len = items.len() as u64;
    Snap::Seq { kind: SeqKind::List, type_name: "list".into(), id: 0, items, len }
}

fn dict(entries: Vec<(Snap, Snap)>) -> Snap {
    let len = entries.len() as u64;
    Snap::Map { type_name: "dict".into(), id: 0, entries, len }
}

fn object(type_name: &str, id: u64, attrs: Vec<(&str, Snap)>) -> Snap {
    let attrs: Vec<(String, Snap)> = attrs.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    let repr = squall_trace::printer::object_repr(type_name, id, &attrs);
    Snap::Object { type_name: type_name.into(), id, repr, attrs }
}

fn verdict(text: &str, names: &[(&str, Snap)]) -> Verdict {
    Predicate::parse(text, Subject::Call).unwrap_or_else(|e| panic!("{text}: {e}")).verdict(names).unwrap()
}

fn holds(text: &str, names: &[(&str, Snap)]) -> bool {
    match verdict(text, names) {
        Verdict::Holds => true,
        Verdict::Fails => false,
        Verdict::Undecided(why) => panic!("{text}: undecided ({why:?})"),
    }
}

fn error(text: &str) -> String {
    Predicate::parse(text, Subject::Call).expect_err(text).to_string()
}

#[test]
fn the_agents_cases_hold_as_before() {
    let item = object("__main__.Item", 3, vec![("price", Snap::Float(1.5))]);
    assert!(holds("weight == 10", &[("weight", Snap::Int(10))]));
    assert!(!holds("weight == 10", &[("weight", Snap::Int(12))]));
    assert!(holds("ret > 50 and raised is None", &[("ret", Snap::Int(74)), ("raised", Snap::None)]));
    assert!(holds("item.price < 2", &[("item", item)]));
    let names = [("d", dict(vec![(s("k"), Snap::Int(2))])), ("xs", list(vec![]))];
    assert!(holds("d['k'] == 1 or len(xs) == 0", &names));
    assert!(holds("'JP' in str(x)", &[("x", list(vec![s("JP")]))]));
    assert!(holds("not flag", &[("flag", Snap::Bool(false))]));
    assert!(holds("d.k == 2 and d.missing is None", &names), "a dict's keys read as attributes");
}

#[test]
fn unlike_values_compare_false_and_what_python_raises_is_false() {
    let x = [("x", Snap::Int(1)), ("t", s("a")), ("n", Snap::None)];
    assert!(!holds("x + 1 > 'a'", &x));
    assert!(!holds("n > 3", &x), "an order of unlike values is false");
    assert!(holds("not n > 3", &x));
    assert!(holds("t != 1 and not t == 1", &x));
    assert!(!holds("t + 1 == 2 or x == 1", &x), "what Python raises makes the whole predicate false");
    assert!(!holds("x / 0 == 1", &x));
    assert!(!holds("len(x) == 1", &x));
    assert!(!holds("x.price == 1", &x));
    assert!(holds("True == 1 and 1 == 1.0 and 7 // -2 == -4 and -7 % 3 == 2", &x));
    assert!(holds("1 / 2 == 0.5 and abs(-x) == 1 and -x < 0", &x));
}

#[test]
fn comparisons_chain_and_items_index_from_either_end() {
    let xs = [("xs", list(vec![Snap::Int(1), Snap::Int(5), Snap::Int(9)])), ("a", Snap::Int(5))];
    assert!(holds("0 < a <= 5 < 9", &xs));
    assert!(!holds("0 < a < 5", &xs));
    assert!(holds("1 < a < 10 != 11", &xs));
    assert!(holds("xs[0] == 1 and xs[-1] == 9 and xs[-3] == 1", &xs));
    assert!(!holds("xs[3] == 1 or xs[-4] == 1", &xs), "an index out of range is false");
    assert!(holds("xs == [1, 5, 9] and xs != (1, 5, 9) and 5 in xs and 4 not in xs", &xs));
    assert!(holds("xs < [1, 6] and xs > [1, 5] and (1, 2) < (1, 2, 0)", &xs));
    assert!(holds("'ab' 'c' == 'abc' and 'b' in 'abc' and 'abc'[-1] == 'c'", &xs));
}

#[test]
fn str_is_the_printers_text_and_an_exceptions_message() {
    let item = object("shop.Item", 12, vec![("name", s("a")), ("price", Snap::Int(3))]);
    let args = Snap::Seq { kind: SeqKind::Tuple, type_name: "tuple".into(), id: 0, items: vec![s("k")], len: 1 };
    let key_error = object("KeyError", 4, vec![("args", args.clone())]);
    let value_error = object("ValueError", 5, vec![("args", args)]);
    let names = [("item", item), ("ke", key_error), ("ve", value_error), ("f", Snap::Float(2.5))];
    assert!(holds("str(item) == \"Item#12(name='a', price=3)\"", &names));
    assert!(holds("str(ke) == \"'k'\" and str(ve) == 'k'", &names));
    assert!(holds("str(f) == '2.5' and str(None) == 'None' and str([1, 'a']) == \"[1, 'a']\"", &names));
    assert!(holds("type_name(item) == 'shop.Item' and type_name(f) == 'float' and type_name('') == 'str'", &names));
}

#[test]
fn functions_bytes_and_big_numbers_compare_by_what_is_recorded() {
    let f = |id| Snap::Opaque { type_name: "function".into(), id, repr: format!("<function f#{id}>") };
    let names = [
        ("f", f(3)),
        ("same", f(3)),
        ("g", f(4)),
        ("b", Snap::Bytes(b"ab\x00".to_vec())),
        ("big", Snap::BigInt("123456789012345678901234567890".into())),
    ];
    assert!(holds("f == same and f != g and f is same", &names));
    assert!(holds("b == b'ab\\x00' and b'b' in b and len(b) == 3 and b[0] == 97", &names));
    assert!(holds("big > 10 and big == 123456789012345678901234567890 and big + 1 > big", &names));
}

#[test]
fn is_compares_identities_of_recorded_objects() {
    let a = object("m.A", 7, vec![("x", Snap::Int(1))]);
    let same = object("m.A", 7, vec![("x", Snap::Int(1))]);
    let other = object("m.A", 8, vec![("x", Snap::Int(1))]);
    let names = [("a", a), ("same", same), ("other", other), ("n", Snap::None)];
    assert!(holds("a is same and a is not other and a == other", &names));
    assert!(holds("n is None and a is not None and not (n is False)", &names));
}

fn cut_list() -> Snap {
    Snap::Seq { kind: SeqKind::List, type_name: "list".into(), id: 2, items: vec![Snap::Int(1), Snap::Int(2)], len: 50 }
}

#[test]
fn what_the_recording_cut_decides_what_it_can_and_no_more() {
    let names = [
        ("xs", cut_list()),
        ("s", Snap::StrCut { prefix: "hello wo".into(), len: 2000 }),
        ("short", Snap::StrCut { prefix: "hello wo".into(), len: 10 }),
        ("deep", Snap::Cut { type_name: "shop.Item".into(), id: 9, len: 0 }),
        ("d", Snap::Map { type_name: "dict".into(), id: 3, entries: vec![(s("a"), Snap::Int(1))], len: 7 }),
    ];
    // Decided by what was kept.
    assert!(holds("len(xs) == 50 and xs[0] == 1 and 1 in xs and xs != [1, 2]", &names));
    assert!(holds("type_name(s) == 'str' and len(xs) > 2", &names));
    assert!(holds("len(s) == 2000 and 'wo' in s and s != 'hello' and s != 'hello wo' and short != 'hello world' and s > 'hello' and s[0] == 'h'", &names));
    assert!(holds("type_name(deep) == 'shop.Item' and deep is not None and deep != 3", &names));
    assert!(holds("d['a'] == 1 and 'a' in d and len(d) == 7", &names));
    assert!(holds("xs[5] == 0 or xs[0] == 1", &names), "an or with a true part holds");
    assert!(!holds("xs[5] == 0 and xs[0] == 2", &names), "an and with a false part does not");
    assert!(!holds("xs[50] == 0", &names), "past its recorded length is out of range");
    // Undecided: the answer is in what was cut.
    let cut = Verdict::Undecided(Undecided::Cut);
    for text in [
        "xs[5] == 0",
        "xs[-1] == 0",
        "99 in xs",
        "99 not in xs",
        "'zz' in s",
        "short == 'hello wor!'",
        "deep.price > 1",
        "len(deep) == 0",
        "deep == deep",
        "d['b'] == 1",
        "d.b is None",
        "str(xs) == ''",
        "'JP' in str(xs)",
        "not xs[5] == 0",
        "xs[5] == 0 and xs[0] == 1",
    ] {
        assert_eq!(verdict(text, &names), cut, "{text}");
    }
}

#[test]
fn an_earlier_state_is_never_read_as_this_moments() {
    let earlier =
        Snap::Earlier { slot: 4, idx: None, value: Box::new(object("m.Cart", 5, vec![("total", Snap::Int(3))])) };
    let names = [("cart", earlier)];
    let undecided = Verdict::Undecided(Undecided::Earlier);
    assert_eq!(verdict("cart.total == 3", &names), undecided);
    assert_eq!(verdict("str(cart) == 'x'", &names), undecided);
    assert!(holds("type_name(cart) == 'm.Cart' and cart is not None and cart != 'x'", &names));
}

#[test]
fn a_predicate_says_which_names_it_reads() {
    let p = Predicate::parse("len(items) == 0 and ret > x.y or str(z) == 'None' and None is not True", Subject::Call);
    let reads: Vec<&str> = p.as_ref().unwrap().reads().iter().map(String::as_str).collect();
    assert_eq!(reads, ["items", "ret", "x", "z"]);
}

#[test]
fn an_unknown_name_lists_the_subjects_names() {
    let p = Predicate::parse("wieght == 10", Subject::Call).unwrap();
    let err = p.verdict(&[("weight", Snap::Int(10)), ("ret", Snap::Int(15)), ("raised", Snap::None)]).unwrap_err();
    insta::assert_snapshot!(err.to_string(), @"'wieght == 10' names 'wieght', which this call does not have; its names are raised, ret, weight");
    // Not read when an `or`'s first part decides, as in Python.
    assert_eq!(
        Predicate::parse("weight == 10 or wieght", Subject::Call).unwrap().verdict(&[("weight", Snap::Int(10))]),
        Ok(Verdict::Holds)
    );
}

#[test]
fn bad_predicates_quote_the_text_and_say_what_to_write() {
    let cases = [
        "",
        "   ",
        "weight ==",
        "__import__('os')",
        "item.__class__",
        "[x for x in y]",
        "d[k] == 1",
        "lambda: 1",
        "import os",
        "x if y else z",
        "{'a': 1}",
        "f'{x}' == 'a'",
        "x ** 2",
        "xs[1:2]",
        "len(a, b)",
        "it's",
        "a = 1",
        "1j == x",
        "x @ y",
    ];
    let text: Vec<String> = cases.iter().map(|c| format!("{c:?} -> {}", error(c))).collect();
    insta::assert_snapshot!(text.join("\n"));
    assert_eq!(
        Predicate::parse("", Subject::Entry).unwrap_err(),
        PredicateError::Empty { examples: "`v > 3` or `len(v) == 0`" }
    );
}

// --- the subjects ---------------------------------------------------------------------------

const NO_LIMITS: Limits = Limits { thread_trace_limit: None, fn_call_limit: None, memory_limit: None };

fn int(v: i64) -> ValRef {
    ValRef::small_int(v).unwrap()
}

/// `cost(weight, items)` called three times: returns 15, 74, then raises ValueError('too heavy').
fn recorded() -> (Forms, Timeline, ValueStore) {
    let mut forms = Forms::default();
    forms
        .add_form(Form {
            ns: "shop".into(),
            name: "cost".into(),
            file: "shop.py".into(),
            line: 1,
            params: vec![Arc::from("weight"), Arc::from("items")],
            kind: FormKind::Function,
        })
        .unwrap();
    let at = |line| Coord { line, col: 4, end_line: line, end_col: 14 };
    let ret = forms.add_site(Site { form: 0, kind: SiteKind::Return, coord: at(2), symbol: None }).unwrap();
    let bind =
        forms.add_site(Site { form: 0, kind: SiteKind::Bind, coord: at(3), symbol: Some("total".into()) }).unwrap();
    let mut store = ValueStore::new();
    let mut tl = Timeline::new();
    let items = store.push_snap(&cut_list());
    let args =
        Snap::Seq { kind: SeqKind::Tuple, type_name: "tuple".into(), id: 0, items: vec![s("too heavy")], len: 1 };
    let exc = store.push_snap(&object("ValueError", 6, vec![("args", args)]));
    for (weight, outcome) in [(3, Some(15)), (10, Some(74)), (40, None)] {
        tl.call(0, &[int(weight), items], &NO_LIMITS);
        tl.event(Kind::Bind, bind, 0, false, int(weight * 2), &NO_LIMITS);
        match outcome {
            Some(v) => tl.exit(Kind::Return, ret, 0, false, int(v), &NO_LIMITS),
            None => tl.exit(Kind::Unwind, 0, 0, false, exc, &NO_LIMITS),
        };
    }
    (forms, tl, store)
}

#[test]
fn calls_are_read_by_their_parameters_ret_and_raised() {
    let (forms, tl, store) = recorded();
    let calls = |text: &str| {
        let p = Predicate::parse(text, Subject::Call).unwrap();
        calls_where(Some(&p), &tl, &store, &forms, &[true]).unwrap()
    };
    assert_eq!(calls("ret < 20").holds, [0]);
    assert_eq!(calls("weight >= 10").holds, [3, 6]);
    assert_eq!(calls("raised == 'ValueError: too heavy'").holds, [6]);
    assert_eq!(calls("ret > 50 or raised is not None").holds, [3, 6]);
    assert_eq!(calls("len(items) == 50 and items[1] == 2").holds, [0, 3, 6]);
    let undecided = calls("items[-1] == 0");
    assert_eq!((undecided.holds.len(), undecided.undecided, undecided.why), (0, vec![0, 3, 6], Some(Undecided::Cut)));
    assert_eq!(calls_where(None, &tl, &store, &forms, &[true]).unwrap().holds, [0, 3, 6]);
    assert_eq!(calls_where(None, &tl, &store, &forms, &[false]).unwrap().holds, Vec::<u32>::new());
    let p = Predicate::parse("cost > 1", Subject::Call).unwrap();
    insta::assert_snapshot!(call_verdict(&p, &tl, &store, &forms, 0).unwrap_err().to_string(), @"'cost > 1' names 'cost', which this call does not have; its names are items, raised, ret, weight");
}

#[test]
fn entries_are_read_by_value_kind_name_and_function() {
    let (forms, tl, store) = recorded();
    let matching = |text: &str| -> Vec<u32> {
        let p = Predicate::parse(text, Subject::Entry).unwrap();
        (0..tl.len() as u32).filter(|&i| entry_verdict(&p, &tl, &store, &forms, i).unwrap() == Verdict::Holds).collect()
    };
    assert_eq!(matching("name == 'total' and v >= 20"), [4, 7]);
    assert_eq!(matching("kind == 'fn-return' and v > 50"), [5]);
    assert_eq!(matching("kind == 'fn-unwind' and type_name(v) == 'ValueError' and fn == 'cost'"), [8]);
    assert_eq!(matching("v is None and kind == 'fn-call'"), [0, 3, 6]);
}

proptest::proptest! {
    /// Any text (the UI's query string is anyone's) is read or refused, and evaluated, without
    /// a panic.
    #[test]
    fn any_text_is_read_or_refused_without_a_panic(text in "[ -~é]{0,40}", tail in "(\\[-?[0-9]\\]|\\.a|\\(v\\)| (<|==|in|and|or|not|is|\\+|//|%) )*") {
        let names = [("v", cut_list()), ("a", Snap::StrCut { prefix: "é".into(), len: 3 }), ("n", Snap::Int(i64::MIN))];
        for t in [text.clone(), format!("v{tail}"), format!("{text}{tail}n")] {
            if let Ok(p) = Predicate::parse(&t, Subject::Entry) {
                let _ = p.verdict(&names);
            }
        }
    }
}

#[test]
fn deep_or_long_texts_are_refused_not_overflowing_the_stack() {
    for text in [
        "(".repeat(5000) + "v",
        "not ".repeat(5000) + "v",
        "-".repeat(5000) + "v",
        "v + ".repeat(2000) + "v",
        "v".to_string() + &".a".repeat(3000),
        "x".repeat(20_000),
    ] {
        let e = Predicate::parse(&text, Subject::Entry).expect_err("refused").to_string();
        assert!(e.contains("deep") || e.contains("longer than"), "{e}");
    }
    let sum = Predicate::parse(&("v + ".repeat(97) + "v == 98"), Subject::Entry).unwrap();
    assert_eq!(sum.verdict(&[("v", Snap::Int(1))]), Ok(Verdict::Holds));
    let nots = Predicate::parse(&("not ".repeat(29) + "v"), Subject::Entry).unwrap();
    assert_eq!(nots.verdict(&[("v", Snap::Int(0))]), Ok(Verdict::Holds));
    assert!(Predicate::parse(&("(".repeat(25) + "v" + &")".repeat(25)), Subject::Entry).is_ok());
}
