//! Opening a recorded value one level at a time: children and their keys, pages, what the
//! recorder cut, earlier states.

use squall_trace::value_tree::{cut_when_recorded, expand, text, ChildKey};
use squall_trace::{SeqKind, Snap};

fn list(items: Vec<Snap>, len: u64) -> Snap {
    Snap::Seq { kind: SeqKind::List, type_name: "list".into(), id: 4, items, len }
}

#[test]
fn children_are_named_by_position_key_or_field() {
    let map = Snap::Map {
        type_name: "dict".into(),
        id: 0,
        entries: vec![
            (Snap::Str("a".into()), Snap::Int(1)),
            (
                Snap::Seq { kind: SeqKind::Tuple, type_name: "tuple".into(), id: 0, items: vec![Snap::Int(1)], len: 1 },
                Snap::Int(2),
            ),
            (Snap::Str("k".repeat(100)), Snap::Int(3)),
        ],
        len: 3,
    };
    let obj = Snap::Object {
        type_name: "shop.Cart".into(),
        id: 7,
        repr: String::new(),
        attrs: vec![("items".into(), list((0..100).map(Snap::Int).collect(), 150)), ("prices".into(), map)],
    };
    let x = expand(&obj, &[], 0, usize::MAX).unwrap();
    assert_eq!(
        x.children.iter().map(|c| c.0.clone()).collect::<Vec<_>>(),
        [ChildKey::Attr("items".into()), ChildKey::Attr("prices".into())]
    );
    assert_eq!(x.children[1].2, [1]);
    let prices = expand(&obj, &[1], 0, usize::MAX).unwrap();
    let keys: Vec<(String, bool)> = prices
        .children
        .iter()
        .map(|(k, _, _)| match k {
            ChildKey::Key { text, exact } => (text.chars().take(5).collect(), *exact),
            other => panic!("{other:?}"),
        })
        .collect();
    // A string key cut to its preview is no longer the key's literal; a tuple's preview never is.
    assert_eq!(keys, [("'a'".into(), true), ("(1,)".into(), false), ("'kkkk".into(), false)]);
    // The list the recorder cut: a page of it, the cut marker in its text.
    let items = expand(&obj, &[0], 98, 5).unwrap();
    assert_eq!((items.offset, items.children.len(), items.children_total, items.more()), (98, 2, 100, false));
    assert_eq!(items.children[0].0.text(), "98");
    assert!(cut_when_recorded(items.node));
    assert_eq!(items.text(1, 2), "[0, 1, ..., <...50 more of list[150]: cut by squall's snapshot budget>]");
    assert!(expand(&obj, &[2], 0, 1).unwrap_err().contains("path element 0 (2)"));
}

#[test]
fn an_earlier_state_opens_as_the_value_it_holds_and_says_so() {
    let earlier = Snap::Earlier { slot: 3, idx: None, value: Box::new(list(vec![Snap::Int(1)], 1)) };
    let x = expand(&earlier, &[], 0, 10).unwrap();
    assert!(x.earlier());
    assert_eq!(x.children.len(), 1);
    assert_eq!(text(&earlier, 3, 3), "(earlier) [1]");
}
