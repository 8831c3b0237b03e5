//! Values as JSON: short previews, and lazy expansion (one level, paged) with FlowStorm's print
//! level / print length.

use std::fmt::Write;

use serde_json::{json, Value};
use squall_trace::{Decoded, SeqKind, Snap, ValRef};

use crate::source::View;

/// Characters of a preview in listings.
pub const PREVIEW_MAX: usize = 120;

/// The preview node of a value ref: `{v, type, preview, expandable, len?}`.
pub fn val_node(view: &dyn View, tl: usize, v: ValRef, max: usize) -> Value {
    match v.decode() {
        Decoded::Int(i) => json!({"v": v.0, "type": "int", "preview": i.to_string(), "expandable": false}),
        Decoded::None => json!({"v": v.0, "type": "NoneType", "preview": "None", "expandable": false}),
        Decoded::Bool(b) => {
            json!({"v": v.0, "type": "bool", "preview": if b { "True" } else { "False" }, "expandable": false})
        }
        Decoded::Absent => json!({"v": null, "type": "absent", "preview": "<absent>", "expandable": false}),
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
pub fn val_text(view: &dyn View, tl: usize, v: ValRef, max: usize) -> String {
    match v.decode() {
        Decoded::Slot(_) => view.snap(tl, v).map(|s| squall_store::preview(&s, max)).unwrap_or_default(),
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
    pprint(&mut text, s, o.print_level, o.print_length, 0, 200_000);
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

/// A Python-like pretty print limited like FlowStorm's `val-pprint`: containers deeper than
/// `level` print as `...`, at most `length` items per container, then `...`.
pub fn pprint(out: &mut String, s: &Snap, level: usize, length: usize, depth: usize, budget: usize) {
    if out.len() > budget {
        return;
    }
    let deep = depth >= level;
    match s {
        Snap::Seq { kind, type_name, items, len, .. } => {
            let (open, close) = match kind {
                SeqKind::List if type_name == "list" => ("[".to_string(), "]".to_string()),
                SeqKind::Tuple if type_name == "tuple" => ("(".into(), ")".into()),
                SeqKind::Set if type_name == "set" => ("{".into(), "}".into()),
                _ => (format!("{type_name}(["), "])".into()),
            };
            out.push_str(&open);
            if deep && *len > 0 {
                out.push_str("...");
            } else {
                for (i, it) in items.iter().take(length).enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    pprint(out, it, level, length, depth + 1, budget);
                }
                if items.len() > length || (items.len() as u64) < *len {
                    out.push_str(if items.is_empty() { "..." } else { ", ..." });
                }
            }
            if *kind == SeqKind::Tuple && type_name == "tuple" && *len == 1 && !deep {
                out.push(',');
            }
            out.push_str(&close);
        }
        Snap::Map { type_name, entries, len, .. } => {
            let plain = type_name == "dict";
            if !plain {
                let _ = write!(out, "{type_name}(");
            }
            out.push('{');
            if deep && *len > 0 {
                out.push_str("...");
            } else {
                for (i, (k, v)) in entries.iter().take(length).enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    pprint(out, k, level, length, depth + 1, budget);
                    out.push_str(": ");
                    pprint(out, v, level, length, depth + 1, budget);
                }
                if entries.len() > length || (entries.len() as u64) < *len {
                    out.push_str(if entries.is_empty() { "..." } else { ", ..." });
                }
            }
            out.push('}');
            if !plain {
                out.push(')');
            }
        }
        Snap::Object { type_name, attrs, repr, id } => {
            if deep || attrs.is_empty() {
                out.push_str(repr);
            } else {
                let short = type_name.rsplit('.').next().unwrap_or(type_name);
                if *id != 0 {
                    let _ = write!(out, "{short}#{id}(");
                } else {
                    let _ = write!(out, "{short}(");
                }
                for (i, (k, v)) in attrs.iter().take(length).enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(k);
                    out.push('=');
                    pprint(out, v, level, length, depth + 1, budget);
                }
                if attrs.len() > length {
                    out.push_str(", ...");
                }
                out.push(')');
            }
        }
        Snap::Earlier { value, .. } => {
            out.push_str("(earlier) ");
            pprint(out, value, level, length, depth, budget);
        }
        other => out.push_str(&squall_store::preview(other, budget.saturating_sub(out.len()).max(16))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: Vec<Snap>) -> Snap {
        let len = items.len() as u64;
        Snap::Seq { kind: SeqKind::List, type_name: "list".into(), id: 0, items, len }
    }

    #[test]
    fn print_level_and_length() {
        let v =
            list(vec![Snap::Int(1), list(vec![Snap::Int(2), list(vec![Snap::Int(3)])]), Snap::Int(4), Snap::Int(5)]);
        let mut s = String::new();
        pprint(&mut s, &v, 2, 3, 0, 1000);
        assert_eq!(s, "[1, [2, [...]], 4, ...]");
        let mut s = String::new();
        pprint(&mut s, &v, 9, 9, 0, 1000);
        assert_eq!(s, "[1, [2, [3]], 4, 5]");
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
