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
    store.push(Node::Object(Box::new(ObjectNode { ty, obj, attrs: Box::new([(name, args.unwrap())]) }))).unwrap()
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
