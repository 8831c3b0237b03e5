//! The writes query: which site changed an object's attribute or item, from what to what.

use std::sync::Arc;

use squall_trace::{
    writes, Coord, Form, FormKind, Forms, Limits, Node, ObjectNode, OldValue, Site, SiteKind, Snap, Timeline, ValRef,
    ValueStore, WriteFilter,
};

const NO_LIMITS: Limits = Limits { thread_trace_limit: None, fn_call_limit: None, memory_limit: None };

fn int(v: i64) -> ValRef {
    ValRef::small_int(v).unwrap()
}

fn setup() -> (Forms, u32, u32) {
    let mut forms = Forms::default();
    let form = Form {
        ns: "shop".into(),
        name: "discount".into(),
        file: "shop.py".into(),
        line: 1,
        params: vec![Arc::from("item")],
        kind: FormKind::Function,
    };
    forms.add_form(form).unwrap();
    let at = |line| Coord { line, col: 4, end_line: line, end_col: 14 };
    let price =
        forms.add_site(Site { form: 0, kind: SiteKind::Write, coord: at(2), symbol: Some("price".into()) }).unwrap();
    let item = forms.add_site(Site { form: 0, kind: SiteKind::Write, coord: at(3), symbol: None }).unwrap();
    (forms, price, item)
}

#[test]
fn each_write_names_its_site_and_the_value_before_it() {
    let (forms, price, item) = setup();
    let mut store = ValueStore::new();
    let ty = store.intern("shop.Item");
    let attr = store.intern("price");
    // Item #7 recorded (as a call argument) with price 200 before any write.
    let state =
        store.push(Node::Object(Box::new(ObjectNode { ty, obj: 7, attrs: vec![(attr, int(200))].into() }))).unwrap();
    let mut tl = Timeline::new();
    tl.call(0, &[state], &NO_LIMITS);
    let len = store.len() as u32;
    tl.write(price, 0, false, 7, ValRef::ABSENT, int(180), len, &NO_LIMITS);
    tl.write(price, 0, false, 8, ValRef::ABSENT, int(5), len, &NO_LIMITS); // another object
    tl.write(item, 0, false, 9, int(0), int(1), len, &NO_LIMITS); // an item of an unrecorded list
    tl.write(price, 0, false, 7, ValRef::ABSENT, int(90), len, &NO_LIMITS);
    tl.write(price, 0, false, 7, ValRef::ABSENT, ValRef::ABSENT, len, &NO_LIMITS); // del

    let name = Snap::Str("price".into());
    let got = writes(&tl, &forms, &store, &WriteFilter { obj: Some(7), name: Some(&name), type_name: None });
    let olds: Vec<&OldValue> = got.iter().map(|w| &w.old).collect();
    assert_eq!(got.iter().map(|w| w.idx).collect::<Vec<_>>(), [1, 4, 5]);
    assert_eq!(got.iter().map(|w| w.new).collect::<Vec<_>>(), [Some(int(180)), Some(int(90)), None]);
    assert_eq!(
        olds,
        [
            &OldValue::RecordedState { value: int(200) },
            &OldValue::PreviousWrite { idx: 1, value: Some(int(180)) },
            &OldValue::PreviousWrite { idx: 4, value: Some(int(90)) },
        ]
    );
    // The type-level form finds #7 by its recorded type, not #8 (never recorded).
    let by_type = writes(&tl, &forms, &store, &WriteFilter { obj: None, name: Some(&name), type_name: Some("Item") });
    assert_eq!(by_type.iter().map(|w| w.obj).collect::<Vec<_>>(), [7, 7, 7]);
    // Items: keyed by their recorded key; nothing recorded before: unknown.
    let items = writes(&tl, &forms, &store, &WriteFilter { obj: Some(9), ..WriteFilter::default() });
    assert_eq!(items.len(), 1);
    assert_eq!(
        (items[0].name.clone(), items[0].is_attr, items[0].old.clone()),
        (Snap::Int(0), false, OldValue::Unknown)
    );
}
