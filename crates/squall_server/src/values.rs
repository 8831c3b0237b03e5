//! Values as JSON: short previews, and lazy expansion (one level, paged) with FlowStorm's print
//! level / print length.

use serde_json::{json, Value};
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

/// The value itself: an earlier state (`Snap::Earlier`) is expanded like the value it holds.
fn bare(s: &Snap) -> &Snap {
    match s {
        Snap::Earlier { value, .. } => bare(value),
        other => other,
    }
}

fn children_count(s: &Snap) -> usize {
    match bare(s) {
        Snap::Seq { items, .. } => items.len(),
        Snap::Map { entries, .. } => entries.len(),
        Snap::Object { attrs, .. } => attrs.len(),
        _ => 0,
    }
}

fn total_len(s: &Snap) -> Option<u64> {
    match bare(s) {
        Snap::Seq { len, .. } | Snap::Map { len, .. } | Snap::Cut { len, .. } => Some(*len),
        Snap::Str(v) => Some(v.chars().count() as u64),
        Snap::Bytes(v) => Some(v.len() as u64),
        Snap::Object { attrs, .. } => Some(attrs.len() as u64),
        _ => None,
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
    if let Snap::Earlier { slot, .. } = s {
        // Not recorded at this moment: the newest state recorded before (node `slot`).
        n["earlier"] = json!(true);
        n["earlier_slot"] = json!(slot);
    }
    if let Some(len) = total_len(s) {
        n["len"] = json!(len);
    }
    n
}

/// The child `i` of a snapshot: a sequence item, a map entry's value, an attribute's value.
fn child(s: &Snap, i: usize) -> Option<&Snap> {
    match bare(s) {
        Snap::Seq { items, .. } => items.get(i),
        Snap::Map { entries, .. } => entries.get(i).map(|(_, v)| v),
        Snap::Object { attrs, .. } => attrs.get(i).map(|(_, v)| v),
        _ => None,
    }
}

pub struct ExpandOpts {
    pub offset: usize,
    pub limit: usize,
    pub print_level: usize,
    pub print_length: usize,
}

/// One level of `snap` below `path`: its pretty text at the print level/length, and its children
/// `offset..offset+limit`, each a preview node with its path.
pub fn expand(snap: &Snap, path: &[usize], o: &ExpandOpts) -> Result<Value, String> {
    let mut s = snap;
    for (depth, &i) in path.iter().enumerate() {
        s = child(s, i)
            .ok_or_else(|| format!("path element {depth} ({i}) names no child of this {}", s.type_name()))?;
    }
    let n = children_count(s);
    let start = o.offset.min(n);
    let end = start.saturating_add(o.limit).min(n);
    let earlier = matches!(s, Snap::Earlier { .. });
    let s = bare(s);
    let children: Vec<Value> = (start..end)
        .map(|i| {
            let (key, c) = match s {
                Snap::Seq { items, .. } => (i.to_string(), &items[i]),
                Snap::Map { entries, .. } => (squall_store::preview(&entries[i].0, 60), &entries[i].1),
                Snap::Object { attrs, .. } => (attrs[i].0.clone(), &attrs[i].1),
                _ => unreachable!("children_count is 0"),
            };
            let mut node = snap_node(c, PREVIEW_MAX);
            let mut p = path.to_vec();
            p.push(i);
            node["key"] = json!(key);
            node["path"] = json!(p);
            node
        })
        .collect();
    let mut text = String::new();
    if earlier {
        text.push_str("(earlier) ");
    }
    text.push_str(&squall_store::pprint(s, o.print_level, o.print_length));
    let truncated = (children_count(s) as u64) < total_len(s).unwrap_or(0)
        && !matches!(s, Snap::Str(_) | Snap::Bytes(_) | Snap::Object { .. });
    Ok(json!({
        "type": s.type_name(),
        "len": total_len(s),
        "repr": text,
        "path": path,
        "offset": start,
        "children": children,
        "children_total": n,
        "more": end < n,
        "truncated_when_recorded": truncated,
        "earlier": earlier,
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
