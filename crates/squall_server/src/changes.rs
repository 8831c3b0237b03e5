//! `/api/changes`: an object's history for the inspector: every recorded state and, between
//! them, every recorded write to it ("where was this changed": which line, from what to what),
//! in recorded order over one flow's threads.

use serde_json::{json, Value};
use squall_trace::{display_name, Change, NodeEntries, OldValue, Snap, Timeline, ValRef, ValueStore};

use crate::api::{opt, req, ApiError, ApiResult, Q};
use crate::source::View;
use crate::values::{snap_node, val_node, PREVIEW_MAX};

fn where_json(view: &dyn View, site: u32) -> Value {
    let forms = view.forms();
    match forms.site(site) {
        Some(s) => {
            let f = forms.form(s.form);
            json!({"fn": display_name(forms, s.form), "file": f.map(|f| &*f.file), "line": s.coord.line})
        }
        None => Value::Null,
    }
}

/// An attribute's name as written in code (`total`); an item's key as Python prints it (`'k'`).
fn name_text(name: &Snap, is_attr: bool) -> Value {
    match (name, is_attr) {
        (Snap::Str(s), true) => json!(s),
        _ => snap_node(name, 80)["preview"].clone(),
    }
}

/// `/api/changes?obj=N[&flow=F][&limit=L]`: `{"obj", "flow", "total", "left_out", "changes"}`;
/// each change is `{"kind": "state", tl, idx, value}` or `{"kind": "write", tl, idx, name,
/// attr, new (null: deleted), old ({"value"} / {"idx", "value"} from an earlier write /
/// null: unknown), where: {fn, file, line}}`.
pub fn changes(view: &dyn View, q: &Q) -> ApiResult {
    let obj: u64 = req(q, "obj")?;
    let tls = view.timelines();
    let flow: u32 = match q.get("flow").map(String::as_str) {
        None | Some("") => tls.first().map_or(0, |t| t.flow),
        Some(_) => req(q, "flow")?,
    };
    let mine: Vec<usize> = tls.iter().enumerate().filter(|(_, t)| t.flow == flow).map(|(i, _)| i).collect();
    if mine.is_empty() {
        return Err(ApiError::not_found(format!("no flow {flow} in this recording (see /api/flows)")));
    }
    let limit: usize = opt(q, "limit", 200)?.clamp(1, 1000);
    let forms = view.forms();
    let parts: Vec<(usize, &ValueStore, NodeEntries)> = mine
        .iter()
        .filter_map(|&i| {
            let store = view.values(i)?;
            squall_trace::sync_writes(tls[i].timeline, forms, store);
            Some((i, store, NodeEntries::new(tls[i].timeline, forms, store)))
        })
        .collect();
    let refs: Vec<(&Timeline, &ValueStore, &NodeEntries)> =
        parts.iter().map(|p| (tls[p.0].timeline, p.1, &p.2)).collect();
    let all = squall_trace::history_with_writes(&refs, forms, obj);
    let shown: Vec<Value> = all
        .iter()
        .take(limit)
        .map(|c| {
            let tl = parts[c.timeline].0;
            match &c.change {
                Change::State(s) => json!({
                    "kind": "state", "tl": tl, "idx": s.idx,
                    "value": val_node(view, tl, ValRef(s.slot), PREVIEW_MAX),
                }),
                Change::Write(w) => {
                    let old = match &w.old {
                        OldValue::PreviousWrite { idx, value } => json!({
                            "idx": idx,
                            "value": value.map(|v| val_node(view, tl, v, PREVIEW_MAX)),
                        }),
                        OldValue::RecordedState { value } => json!({"value": val_node(view, tl, *value, PREVIEW_MAX)}),
                        OldValue::Unknown => Value::Null,
                    };
                    json!({
                        "kind": "write", "tl": tl, "idx": w.idx,
                        "name": name_text(&w.name, w.is_attr), "attr": w.is_attr,
                        "new": w.new.map(|v| val_node(view, tl, v, PREVIEW_MAX)),
                        "old": old,
                        "where": where_json(view, w.site),
                    })
                }
            }
        })
        .collect();
    Ok(json!({"obj": obj, "flow": flow, "total": all.len(), "left_out": all.len() - shown.len(), "changes": shown}))
}
