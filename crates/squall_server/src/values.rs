//! Values as JSON: short previews, and lazy expansion (one level, paged) with FlowStorm's print
//! level / print length.

use serde_json::{json, Value};
use squall_trace::value_tree::{self, children_count, total_len};
use squall_trace::{Decoded, Snap};

use crate::source::View;

/// Characters of a preview in listings.
pub const PREVIEW_MAX: usize = 120;

/// The preview node of a value ref or an entry's float: `{v, type, preview, expandable, len?}`
/// (`v` null for a float an entry holds: no slot to expand, like an absent value).
pub fn val_node(view: &dyn View, tl: usize, v: impl Into<squall_trace::Value>, max: usize) -> Value {
    let v = match v.into() {
        squall_trace::Value::Ref(r) => r,
        squall_trace::Value::Float(f) => {
            let mut n = snap_node(&Snap::Float(f), max);
            n["v"] = Value::Null;
            return n;
        }
    };
    match v.decode() {
        Decoded::Int(i) => json!({"v": v.0, "type": "int", "preview": i.to_string(), "expandable": false}),
        Decoded::None => json!({"v": v.0, "type": "NoneType", "preview": "None", "expandable": false}),
        Decoded::Bool(b) => {
            json!({"v": v.0, "type": "bool", "preview": if b { "True" } else { "False" }, "expandable": false})
        }
        Decoded::Absent | Decoded::Float(_) => {
            json!({"v": null, "type": "absent", "preview": "<absent>", "expandable": false})
        }
        Decoded::Slot(_) => match view.snap(tl, v) {
            Ok(s) => {
                let mut n = snap_node(&s, max);
                n["v"] = json!(v.0);
                n
            }
            Err(e) => json!({"v": v.0, "type": "missing", "preview": format!("<{e}>"), "expandable": false}),
        },
    }
}

/// A short text of the value (search, equality by text).
pub fn val_text(view: &dyn View, tl: usize, v: impl Into<squall_trace::Value>, max: usize) -> String {
    let v = v.into();
    match (v, v.decode()) {
        (squall_trace::Value::Ref(r), Decoded::Slot(_)) => {
            view.snap(tl, r).map(|s| squall_store::preview(&s, max)).unwrap_or_default()
        }
        _ => squall_store::preview_ref(v, &squall_trace::ValueStore::new(), max),
    }
}

pub fn snap_node(s: &Snap, max: usize) -> Value {
    let mut n = json!({
        "type": s.type_name(),
        "preview": squall_store::preview(s, max),
        "expandable": children_count(s) > 0,
    });
    if s.id() != 0 {
        n["id"] = json!(s.id());
    }
    if let Snap::Earlier { slot, idx, .. } = s {
        // Not recorded at this moment: the newest state recorded before (node `slot`), as of
        // entry `idx` (its last write applied, or the entry that recorded it).
        n["earlier"] = json!(true);
        n["earlier_slot"] = json!(slot);
        n["earlier_idx"] = json!(idx);
    }
    if let Some(len) = total_len(s) {
        n["len"] = json!(len);
    }
    n
}

pub struct ExpandOpts {
    pub offset: usize,
    pub limit: usize,
    pub print_level: usize,
    pub print_length: usize,
}

/// One level of `snap` below `path` (`squall_trace::value_tree::expand`, the DAP server's too):
/// its pretty text at the print level/length, and its children `offset..offset+limit`, each a
/// preview node with its path.
pub fn expand(snap: &Snap, path: &[usize], o: &ExpandOpts) -> Result<Value, String> {
    let x = value_tree::expand(snap, path, o.offset, o.limit)?;
    let children: Vec<Value> = x
        .children
        .iter()
        .map(|(key, c, p)| {
            let mut node = snap_node(c, PREVIEW_MAX);
            node["key"] = json!(key.text());
            node["path"] = json!(p);
            node
        })
        .collect();
    let s = value_tree::bare(x.node);
    Ok(json!({
        "type": s.type_name(),
        "len": total_len(s),
        "repr": x.text(o.print_level, o.print_length),
        "path": path,
        "offset": x.offset,
        "children": children,
        "children_total": x.children_total,
        "more": x.more(),
        "truncated_when_recorded": value_tree::cut_when_recorded(s),
        "earlier": x.earlier(),
        "earlier_idx": x.earlier_idx(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use squall_trace::SeqKind;

    fn list(items: Vec<Snap>) -> Snap {
        let len = items.len() as u64;
        Snap::Seq { kind: SeqKind::List, type_name: "list".into(), id: 0, items, len }
    }

    #[test]
    fn expand_pages_children() {
        let v = list((0..10).map(Snap::Int).collect());
        let o = ExpandOpts { offset: 4, limit: 3, print_level: 3, print_length: 5 };
        let e = expand(&v, &[], &o).unwrap();
        assert_eq!(e["children"].as_array().unwrap().len(), 3);
        assert_eq!(e["children"][0]["key"], "4");
        assert_eq!(e["more"], true);
        assert_eq!(e["repr"], "[0, 1, 2, 3, 4, ...]");
        assert!(expand(&v, &[20], &o).is_err());
    }
}
