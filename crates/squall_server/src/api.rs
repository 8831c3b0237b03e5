//! The JSON API. Every route answers `application/json`; a bad request is a 4xx with
//! `{"error": "..."}`. The token check runs before any route (see `lib.rs`).

use std::collections::HashMap;
use std::str::FromStr;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use squall_trace::order::{order_page, OrderQuery};
use squall_trace::{display_name, Drift, Entry, Forms, Kind, TraceError, ValRef};

use crate::source::View;
use crate::values::{expand, val_node, val_text, ExpandOpts, PREVIEW_MAX};

pub type Q = HashMap<String, String>;

#[derive(Debug)]
pub struct ApiError(pub StatusCode, pub String);

impl ApiError {
    pub fn bad(msg: impl Into<String>) -> ApiError {
        ApiError(StatusCode::BAD_REQUEST, msg.into())
    }
    pub fn not_found(msg: impl Into<String>) -> ApiError {
        ApiError(StatusCode::NOT_FOUND, msg.into())
    }
}

impl From<TraceError> for ApiError {
    fn from(e: TraceError) -> ApiError {
        let status = match e {
            TraceError::IdxOutOfRange { .. } => StatusCode::NOT_FOUND,
            _ => StatusCode::BAD_REQUEST,
        };
        ApiError(status, e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({"error": self.1}))).into_response()
    }
}

pub type ApiResult = Result<Value, ApiError>;

/// A required query parameter.
pub fn req<T: FromStr>(q: &Q, name: &str) -> Result<T, ApiError> {
    let s = q.get(name).ok_or_else(|| ApiError::bad(format!("missing query parameter `{name}`")))?;
    s.parse().map_err(|_| {
        ApiError::bad(format!("query parameter `{name}`: cannot read `{s}` as a {}", std::any::type_name::<T>()))
    })
}

/// An optional query parameter (absent or empty is `default`).
pub fn opt<T: FromStr>(q: &Q, name: &str, default: T) -> Result<T, ApiError> {
    match q.get(name).map(String::as_str) {
        None | Some("") => Ok(default),
        Some(_) => req(q, name),
    }
}

/// The timeline a request names by `tl`.
pub fn tl_of(view: &dyn View, q: &Q) -> Result<usize, ApiError> {
    let tl: usize = req(q, "tl")?;
    let n = view.timelines().len();
    if tl >= n {
        return Err(ApiError::not_found(format!("no timeline {tl}: this recording has {n} (see /api/flows)")));
    }
    Ok(tl)
}

fn form_json(forms: &Forms, id: u32) -> Value {
    match forms.form(id) {
        Some(f) => json!({
            "id": id, "ns": &*f.ns, "name": &*f.name, "display": display_name(forms, id),
            "file": &*f.file, "line": f.line, "kind": f.kind.name(),
            "params": f.params.iter().map(|p| &**p).collect::<Vec<_>>(),
        }),
        None => json!({"id": id, "display": format!("<form {id}>")}),
    }
}

fn coord_json(forms: &Forms, site: u32) -> Value {
    forms.site(site).map_or(Value::Null, |s| json!([s.coord.line, s.coord.col, s.coord.end_line, s.coord.end_col]))
}

/// The form an entry belongs to.
fn entry_form(view: &dyn View, tl: usize, e: &Entry) -> u32 {
    let forms = view.forms();
    match e.kind() {
        Kind::Call | Kind::Resume | Kind::Unwind => e.id(),
        Kind::Return | Kind::Expr | Kind::Bind | Kind::Write => forms.site_owner(e.id()).map_or_else(
            || view.timelines()[tl].timeline.get(e.fn_call_idx() as usize).map_or(0, |c| c.id()),
            |(f, _)| f,
        ),
    }
}

fn nparams(forms: &Forms, e: &Entry) -> usize {
    if e.kind() == Kind::Resume {
        1
    } else {
        forms.form(e.id()).map_or(0, |f| f.params.len())
    }
}

/// The arguments of the call at `idx`: `[{name, value}]`.
fn args_json(view: &dyn View, tl: usize, idx: u32, max: usize) -> Value {
    let forms = view.forms();
    let tls = view.timelines();
    let t = tls[tl].timeline;
    let Some(e) = t.get(idx as usize) else { return json!([]) };
    let names: Vec<String> = if e.kind() == Kind::Resume {
        vec!["<sent>".into()]
    } else {
        forms.form(e.id()).map(|f| f.params.iter().map(|p| p.to_string()).collect()).unwrap_or_default()
    };
    let vals = t.call_args(idx as usize, nparams(forms, e));
    Value::Array(
        vals.into_iter()
            .enumerate()
            .map(|(i, v)| json!({"name": names.get(i).cloned().unwrap_or_else(|| format!("arg{i}")), "value": val_node(view, tl, v, max)}))
            .collect(),
    )
}

/// One entry in FlowStorm's shape, with value previews.
pub fn entry_json(view: &dyn View, tl: usize, idx: u32) -> Result<Value, ApiError> {
    let forms = view.forms();
    let tls = view.timelines();
    let t = tls[tl].timeline;
    let e = *t.get(idx as usize).ok_or(TraceError::IdxOutOfRange { idx: u64::from(idx), len: t.len() })?;
    let mut d = json!({"idx": idx, "type": e.kind().type_name(), "form_id": entry_form(view, tl, &e)});
    match e.kind() {
        Kind::Call | Kind::Resume => {
            d["fn"] = json!(display_name(forms, e.id()));
            d["parent_idx"] = json!(e.parent_idx());
            d["ret_idx"] = json!(e.ret_idx());
        }
        Kind::Return => {
            d["fn_call_idx"] = json!(e.fn_call_idx());
            d["coord"] = coord_json(forms, e.id());
            d["kind"] = json!(forms.site(e.id()).map_or("return", |s| s.kind.name()));
            d["value"] = val_node(view, tl, e.value(), PREVIEW_MAX);
        }
        Kind::Unwind => {
            d["fn_call_idx"] = json!(e.fn_call_idx());
            d["coord"] = Value::Null;
            d["value"] = val_node(view, tl, e.value(), PREVIEW_MAX);
        }
        Kind::Expr => {
            d["fn_call_idx"] = json!(e.fn_call_idx());
            d["coord"] = coord_json(forms, e.id());
            d["site_id"] = json!(e.id());
            d["value"] = val_node(view, tl, e.value(), PREVIEW_MAX);
        }
        Kind::Bind => {
            d["fn_call_idx"] = json!(e.fn_call_idx());
            d["coord"] = coord_json(forms, e.id());
            d["site_id"] = json!(e.id());
            d["symbol"] = json!(forms.site(e.id()).and_then(|s| s.symbol.as_deref()));
            d["value"] = val_node(view, tl, e.value(), PREVIEW_MAX);
        }
        Kind::Write => {
            d["fn_call_idx"] = json!(e.fn_call_idx());
            d["coord"] = coord_json(forms, e.id());
            d["site_id"] = json!(e.id());
            d["symbol"] = json!(forms.site(e.id()).and_then(|s| s.symbol.as_deref()));
            d["obj_id"] = json!(t.write_record(idx as usize).map(|r| r.0));
            d["value"] =
                if e.value() == ValRef::ABSENT { Value::Null } else { val_node(view, tl, e.value(), PREVIEW_MAX) };
        }
    }
    Ok(d)
}

// --- routes ----------------------------------------------------------------------------------

pub fn flows(view: &dyn View, live: bool) -> ApiResult {
    let mut flows: Vec<(u32, Vec<Value>)> = Vec::new();
    for (i, t) in view.timelines().iter().enumerate() {
        let th = json!({"tl": i, "thread_id": t.thread_id, "name": t.name, "len": t.timeline.len(), "calls": t.timeline.calls()});
        match flows.iter_mut().find(|(f, _)| *f == t.flow) {
            Some((_, v)) => v.push(th),
            None => flows.push((t.flow, vec![th])),
        }
    }
    flows.sort_by_key(|(f, _)| *f);
    Ok(json!({
        "live": live,
        "info": view.info(),
        "flows": flows.into_iter().map(|(f, th)| json!({"flow": f, "threads": th})).collect::<Vec<_>>(),
    }))
}

pub fn entry(view: &dyn View, q: &Q) -> ApiResult {
    let tl = tl_of(view, q)?;
    let t = view.timelines()[tl].timeline;
    let idx: u64 = req(q, "idx")?;
    let drift = Drift::parse(&opt(q, "drift", "at".to_string())?)?;
    let to = t.timeline_entry(idx, drift)?;
    entry_json(view, tl, to)
}

fn resolve_idx(view: &dyn View, tl: usize, q: &Q) -> Result<u32, ApiError> {
    let t = view.timelines()[tl].timeline;
    if t.is_empty() {
        return Err(ApiError::not_found("this timeline has no entries"));
    }
    let idx: u64 = match q.get("idx").map(String::as_str) {
        Some("last") => t.len() as u64 - 1,
        Some("first") | None => 0,
        Some(_) => req(q, "idx")?,
    };
    let drift = Drift::parse(&opt(q, "drift", "at".to_string())?)?;
    Ok(t.timeline_entry(idx, drift)?)
}

/// Everything the stepper shows at one idx: the entry, its frame (function, args, return),
/// bindings visible there, the stack, and the form's recorded sites.
pub fn frame(view: &dyn View, q: &Q) -> ApiResult {
    let tl = tl_of(view, q)?;
    let idx = resolve_idx(view, tl, q)?;
    let forms = view.forms();
    let tls = view.timelines();
    let t = tls[tl].timeline;
    let call = t.frame_of(u64::from(idx))?;
    let ce = *t.get(call as usize).ok_or(TraceError::IdxOutOfRange { idx: u64::from(call), len: t.len() })?;
    let ret = match ce.ret_idx() {
        Some(r) => entry_json(view, tl, r)?,
        None => Value::Null,
    };
    // A bound value with an identity is shown in its newest state recorded up to idx
    // (`state_idx`: the entry that recorded it, when not the binding's own).
    let store = view.values(tl).filter(|s| s.legacy_len() == 0);
    let mut node_entries = None;
    let bindings: Vec<Value> = t
        .bindings_at(forms, u64::from(idx))?
        .into_iter()
        .filter_map(|i| {
            let e = t.get(i as usize)?;
            let mut value = e.value();
            let mut state_idx = None;
            let mut applied = None;
            if let (Some(store), squall_trace::Decoded::Slot(slot)) = (store, value.decode()) {
                let obj = store.node(slot).map_or(0, squall_trace::Node::obj);
                if obj != 0 {
                    let ne = node_entries
                        .get_or_insert_with(|| squall_trace::NodeEntries::upto(t, forms, store, idx as usize + 1));
                    let mut state_slot = slot;
                    if let Some(s) = squall_trace::latest_state(store, ne, obj, idx, slot) {
                        value = ValRef(s.slot).into();
                        state_idx = s.idx;
                        state_slot = s.slot;
                    }
                    // Writes recorded since that state, up to idx, are applied (the object as of
                    // the last of them); `v` stays the state's, which expanding shows unapplied.
                    squall_trace::sync_writes(t, forms, store);
                    if let Some((n, last)) = store.writes_since(state_slot, idx) {
                        let mut node = crate::values::snap_node(
                            &store.node_as_of(state_slot, idx, squall_trace::ExpandBudget::FULL),
                            PREVIEW_MAX,
                        );
                        node["v"] = json!(state_slot);
                        applied = Some((n, node));
                        state_idx = Some(last);
                    }
                }
            }
            let writes_applied = applied.as_ref().map(|a| a.0);
            let value = match applied {
                Some((_, node)) => node,
                None => val_node(view, tl, value, PREVIEW_MAX),
            };
            Some(json!({
                "idx": i,
                "symbol": forms.site(e.id()).and_then(|s| s.symbol.as_deref()),
                "coord": coord_json(forms, e.id()),
                "value": value,
                "state_idx": state_idx,
                "writes_applied": writes_applied,
            }))
        })
        .collect();
    let stack: Vec<Value> = t
        .stack_for_frame(u64::from(idx))?
        .into_iter()
        .map(|f| {
            let form = forms.form(f.form);
            json!({"fn_call_idx": f.fn_call_idx, "fn": display_name(forms, f.form), "file": form.map(|f| &*f.file), "line": form.map(|f| f.line)})
        })
        .collect();
    let sites: Vec<Value> = forms
        .sites()
        .iter()
        .enumerate()
        .filter(|(_, s)| s.form == ce.id())
        .map(|(i, s)| json!([i, s.coord.line, s.coord.col, s.coord.end_line, s.coord.end_col]))
        .collect();
    Ok(json!({
        "tl": tl,
        "idx": idx,
        "len": t.len(),
        "entry": entry_json(view, tl, idx)?,
        "frame": {
            "fn_call_idx": call,
            "form": form_json(forms, ce.id()),
            "args": args_json(view, tl, call, PREVIEW_MAX),
            "parent_idx": ce.parent_idx(),
            "ret": ret,
        },
        "bindings": bindings,
        "stack": stack,
        "sites": sites,
    }))
}

fn has_children(t: &squall_trace::Timeline, call: u32) -> bool {
    // Cheap: the frame holds more than its call entry and its exit.
    let Some(e) = t.get(call as usize) else { return false };
    let end = e.ret_idx().map_or(t.len(), |r| r as usize);
    let first = t.first_idx();
    t.entries()[call as usize + 1 - first..end - first].iter().any(|e| e.kind().is_call())
}

/// Call-tree node for the call at `idx`.
fn node_json(view: &dyn View, tl: usize, idx: u32) -> Value {
    let forms = view.forms();
    let tls = view.timelines();
    let t = tls[tl].timeline;
    let Some(&e) = t.get(idx as usize) else {
        return json!({"idx": idx, "evicted": true});
    };
    let ret = e.ret_idx().and_then(|r| t.get(r as usize).map(|x| (r, *x)));
    json!({
        "idx": idx,
        "fn": display_name(forms, e.id()),
        "form_id": e.id(),
        "resumed": e.kind() == Kind::Resume,
        "args": args_json(view, tl, idx, 60),
        "ret": ret.map(|(r, x)| json!({"idx": r, "type": x.kind().type_name(), "value": val_node(view, tl, x.value(), 60)})),
        "has_children": has_children(t, idx),
    })
}

pub fn children(view: &dyn View, q: &Q) -> ApiResult {
    let tl = tl_of(view, q)?;
    let t = view.timelines()[tl].timeline;
    let call: Option<u64> = match q.get("call").map(String::as_str) {
        None | Some("") | Some("root") => None,
        Some(_) => Some(req(q, "call")?),
    };
    let offset: usize = opt(q, "offset", 0)?;
    let limit: usize = opt(q, "limit", 100)?.clamp(1, 1000);
    let mut idxs = t.callstack_node_childs(call, offset, Some(limit + 1))?;
    let more = idxs.len() > limit;
    idxs.truncate(limit);
    Ok(json!({
        "call": call, "offset": offset,
        "items": idxs.into_iter().map(|i| node_json(view, tl, i)).collect::<Vec<_>>(),
        "more": more,
    }))
}

/// The timeline a request names by `tl`, or `None` (every timeline) without one.
fn tl_or_all(view: &dyn View, q: &Q) -> Result<Option<usize>, ApiError> {
    match q.get("tl").map(String::as_str) {
        None | Some("") => Ok(None),
        Some(_) => tl_of(view, q).map(Some),
    }
}

/// `/api/fn_stats[?tl=N]`: calls per function, most called first, in timeline `tl` or summed
/// over every timeline.
pub fn fn_stats(view: &dyn View, q: &Q) -> ApiResult {
    let only = tl_or_all(view, q)?;
    let forms = view.forms();
    let tls = view.timelines();
    let stats = match only {
        Some(tl) => tls[tl].timeline.fn_call_stats(),
        None => squall_trace::merge_call_stats(tls.iter().map(|t| t.timeline)),
    };
    Ok(json!(stats
        .into_iter()
        .map(|s| {
            let mut f = form_json(forms, s.form);
            f["count"] = json!(s.count);
            f
        })
        .collect::<Vec<_>>()))
}

/// `/api/fn_calls?form=F[&tl=N]`: the calls of form `F` in timeline `tl` or in every timeline
/// (timeline by timeline), paged; each names its timeline and thread.
pub fn fn_calls(view: &dyn View, q: &Q) -> ApiResult {
    let only = tl_or_all(view, q)?;
    let form: u32 = req(q, "form")?;
    if view.forms().form(form).is_none() {
        return Err(ApiError::not_found(format!("no form {form}")));
    }
    let offset: usize = opt(q, "offset", 0)?;
    let limit: usize = opt(q, "limit", 50)?.clamp(1, 1000);
    let tls = view.timelines();
    let mut total = 0usize;
    let mut items = Vec::new();
    for (tl, info) in tls.iter().enumerate().filter(|(tl, _)| only.is_none_or(|o| o == *tl)) {
        let t = info.timeline;
        for (i, e) in t.entries().iter().enumerate().map(|(i, e)| (i + t.first_idx(), e)) {
            if e.kind() == Kind::Call && e.id() == form {
                if total >= offset && items.len() < limit {
                    let mut n = node_json(view, tl, i as u32);
                    n["tl"] = json!(tl);
                    n["thread_id"] = json!(info.thread_id);
                    n["thread"] = json!(info.name);
                    items.push(n);
                }
                total += 1;
            }
        }
    }
    Ok(json!({"form": form_json(view.forms(), form), "total": total, "offset": offset, "items": items}))
}

/// Every timeline of the view as the core's cross-thread queries read them (`thread` n of an
/// answer is timeline `tl` n).
pub fn thread_refs(view: &dyn View) -> Vec<squall_trace::ThreadRef<'_>> {
    view.timelines()
        .iter()
        .enumerate()
        .map(|(i, t)| squall_trace::ThreadRef {
            flow: t.flow,
            thread_id: t.thread_id,
            timeline: t.timeline,
            values: view.values(i),
        })
        .collect()
}

fn call_json(view: &dyn View, tl: usize, call: u32) -> Value {
    let t = view.timelines()[tl].timeline;
    let form = t.get(call as usize).map(|c| c.id());
    json!({"idx": call, "fn": form.map(|f| display_name(view.forms(), f))})
}

/// `/api/exceptions[?tl=N][&limit=L]`: every exception that left a recorded frame, once each
/// (`squall_trace::exceptions`), in every thread (or timeline `tl`): its innermost unwind
/// (`idx`), where it was raised (`raised_idx`), its type and message, the frames it unwound
/// (`chain`, innermost first) and the recorded frame that caught it (`caught_in`, null when
/// none did).
pub fn exceptions(view: &dyn View, q: &Q) -> ApiResult {
    let limit: usize = opt(q, "limit", 100)?.clamp(1, 1000);
    let only: Option<usize> = match q.get("tl") {
        Some(_) => Some(tl_of(view, q)?),
        None => None,
    };
    let forms = view.forms();
    let tls = view.timelines();
    let mut refs = thread_refs(view);
    let numbers: Vec<usize> = match only {
        Some(tl) => {
            refs = vec![refs[tl]];
            vec![tl]
        }
        None => (0..refs.len()).collect(),
    };
    let found = squall_trace::exceptions::exceptions(&refs);
    let items: Vec<Value> = found
        .iter()
        .take(limit)
        .map(|x| {
            let tl = numbers[x.thread];
            let info = &tls[tl];
            let text = squall_trace::exceptions::exception_text(
                view.values(tl),
                x.value,
                squall_trace::exceptions::MESSAGE_MAX,
            );
            let inner = x.chain[0];
            json!({
                "tl": tl, "flow": info.flow, "thread_id": info.thread_id, "thread": info.name,
                "idx": inner.unwind_idx, "raised_idx": x.raised_idx(), "fn_call_idx": inner.call_idx,
                "fn": display_name(forms, inner.form),
                "type": text.type_name, "message": text.message,
                "value": if x.value == ValRef::ABSENT { Value::Null } else { val_node(view, tl, x.value, 300) },
                "chain": x.chain.iter().map(|u| json!({
                    "idx": u.call_idx, "unwind_idx": u.unwind_idx, "fn": display_name(forms, u.form),
                    "last_event_idx": u.last_event_idx,
                })).collect::<Vec<_>>(),
                "caught_in": x.caught_in.map(|c| call_json(view, tl, c)),
            })
        })
        .collect();
    Ok(json!({"total": found.len(), "capped": found.len() > items.len(), "items": items}))
}

fn parse_path(s: &str) -> Result<Vec<usize>, ApiError> {
    if s.is_empty() {
        return Ok(Vec::new());
    }
    s.split('.')
        .map(|p| {
            p.parse().map_err(|_| ApiError::bad(format!("bad value path `{s}`: dot-separated child numbers expected")))
        })
        .collect()
}

pub fn value(view: &dyn View, q: &Q) -> ApiResult {
    let tl = tl_of(view, q)?;
    // `v` a value ref, or `idx` an entry whose value is meant (a float an entry holds has no ref).
    let v = match (q.get("v").filter(|s| !s.is_empty()), q.get("idx").filter(|s| !s.is_empty())) {
        (None, Some(_)) => {
            let idx: usize = req(q, "idx")?;
            let t = view.timelines()[tl].timeline;
            let e = t
                .get(idx)
                .filter(|e| !e.kind().is_call())
                .ok_or_else(|| ApiError::not_found(format!("entry {idx} of timeline {tl} holds no single value")))?;
            match e.value() {
                squall_trace::Value::Ref(r) => r,
                squall_trace::Value::Float(f) => {
                    if !parse_path(q.get("path").map_or("", String::as_str))?.is_empty() {
                        return Err(ApiError::bad("this value has no children"));
                    }
                    let n = val_node(view, tl, squall_trace::Value::Float(f), PREVIEW_MAX);
                    return Ok(
                        json!({"v": null, "tl": tl, "type": n["type"], "repr": n["preview"], "path": [], "children": [], "children_total": 0, "offset": 0, "more": false}),
                    );
                }
            }
        }
        _ => ValRef(req(q, "v")?),
    };
    let path = parse_path(q.get("path").map_or("", String::as_str))?;
    let o = ExpandOpts {
        offset: opt(q, "offset", 0)?,
        limit: opt(q, "limit", 50)?.clamp(1, 1000),
        print_level: opt(q, "level", 3)?.min(50),
        print_length: opt(q, "length", 20)?.min(10_000),
    };
    match v.decode() {
        squall_trace::Decoded::Slot(_) => {
            let snap = view.snap(tl, v).map_err(ApiError::not_found)?;
            let mut out = expand(&snap, &path, &o).map_err(ApiError::bad)?;
            out["v"] = json!(v.0);
            out["tl"] = json!(tl);
            Ok(out)
        }
        _ => {
            if !path.is_empty() {
                return Err(ApiError::bad("this value has no children"));
            }
            let n = val_node(view, tl, v, PREVIEW_MAX);
            Ok(
                json!({"v": v.0, "tl": tl, "type": n["type"], "repr": n["preview"], "path": [], "children": [], "children_total": 0, "offset": 0, "more": false}),
            )
        }
    }
}

/// Source lines of a file the recording's forms name (and no other file), read by the rules of
/// `squall_store::sourcefile` (regular files under the size cap, matching the recorded hash;
/// `verified` false with a `note` for a recording without hashes).
pub fn source(view: &dyn View, q: &Q) -> ApiResult {
    use squall_store::sourcefile::{read_source, SourceError};
    let file: String = req(q, "file")?;
    let got = read_source(view.forms(), &file).map_err(|e| {
        let status = match &e {
            SourceError::NotRecorded(_) | SourceError::Io { .. } => StatusCode::NOT_FOUND,
            SourceError::Changed { .. } => StatusCode::CONFLICT,
            _ => StatusCode::FORBIDDEN,
        };
        ApiError(status, e.to_string())
    })?;
    Ok(
        json!({"file": file, "verified": got.verified, "note": got.note(&file), "lines": got.text.lines().collect::<Vec<_>>()}),
    )
}

/// Power stepping (`squall_trace::stepping::step_like`): the next/previous entry like the one
/// at `idx`: `how` = `coord` (same place: same site, or a call of the same function),
/// `identity` (the same recorded value or object), `equality` (an equal value), `fn` (the next
/// call of this frame's function).
pub fn find(view: &dyn View, q: &Q) -> ApiResult {
    let tl = tl_of(view, q)?;
    let t = view.timelines()[tl].timeline;
    let idx: u64 = req(q, "idx")?;
    let backward = match opt(q, "dir", "next".to_string())?.as_str() {
        "next" => false,
        "prev" => true,
        other => return Err(ApiError::bad(format!("dir must be next or prev, not `{other}`"))),
    };
    let how = req::<String>(q, "how")?;
    let like = squall_trace::stepping::Like::parse(&how)
        .ok_or_else(|| ApiError::bad(format!("how must be coord, fn, identity or equality, not `{how}`")))?;
    if let Some(store) = view.values(tl) {
        // A live timeline grows: its new writes apply to the states compared.
        squall_trace::sync_writes(t, view.forms(), store);
    }
    let found = squall_trace::stepping::step_like(t, view.values(tl), idx, like, backward)?;
    Ok(json!({"idx": found}))
}

/// The iterations of the expression at `idx` in its frame (`squall_trace::stepping::iterations`):
/// every entry of the same site in the same frame, with the position of `idx` among them and a
/// window around it.
pub fn loops(view: &dyn View, q: &Q) -> ApiResult {
    let tl = tl_of(view, q)?;
    let t = view.timelines()[tl].timeline;
    let idx: u64 = req(q, "idx")?;
    let around: usize = opt(q, "around", 10)?.min(500);
    let it = squall_trace::stepping::iterations(t, idx)?;
    let (hits, pos) = (it.idxs, it.pos);
    let lo = pos.saturating_sub(around);
    let hi = (pos + around + 1).min(hits.len());
    let item = |n: usize| {
        let i = hits[n];
        json!({"n": n, "idx": i, "value": val_node(view, tl, t.get(i as usize).map_or(squall_trace::Value::ABSENT, |e| e.value()), 60)})
    };
    Ok(json!({
        "count": hits.len(), "pos": pos,
        "first": hits.first().map(|_| item(0)), "last": hits.last().map(|_| item(hits.len() - 1)),
        "window": (lo..hi).map(item).collect::<Vec<_>>(),
    }))
}

/// `/api/goto?file=F&line=L[&tl=N][&from=I][&dir=next|prev]`: where `file:line` ran, in
/// every thread: `hits` has, for each timeline that ran it, its first entry there (for timeline
/// `tl`, the first at or after `from`, or with `dir=prev` at or before it) and how often it ran
/// there. `idx` is timeline `tl`'s hit (or, without `tl`, the first hit's), `tl` its timeline.
pub fn goto(view: &dyn View, q: &Q) -> ApiResult {
    let only: Option<usize> = match q.get("tl").map(String::as_str) {
        None | Some("") => None,
        Some(_) => Some(tl_of(view, q)?),
    };
    let file: String = req(q, "file")?;
    let line: u32 = req(q, "line")?;
    let from: Option<u64> = match q.get("from").map(String::as_str) {
        None | Some("") => None,
        Some(_) => Some(req(q, "from")?),
    };
    let backward = match opt(q, "dir", "next".to_string())?.as_str() {
        "next" => false,
        "prev" => true,
        other => return Err(ApiError::bad(format!("dir must be next or prev, not `{other}`"))),
    };
    let forms = view.forms();
    let m = squall_trace::locate::LineMatcher::new(forms, &file, line)
        .ok_or_else(|| ApiError::not_found(format!("no recorded function is in `{file}`")))?;
    let mut hits = Vec::new();
    for (tl, info) in view.timelines().iter().enumerate() {
        let start = if Some(tl) == only { from } else { None };
        if let Some(idx) = m.find(forms, info.timeline, start, backward) {
            hits.push(json!({
                "tl": tl, "flow": info.flow, "thread_id": info.thread_id, "thread": info.name,
                "idx": idx, "count": m.count(forms, info.timeline),
            }));
        }
    }
    let pick = match only {
        Some(tl) => hits.iter().find(|h| h["tl"] == tl),
        None => hits.first(),
    };
    let (idx, tl) = pick.map_or((Value::Null, Value::Null), |h| (h["idx"].clone(), h["tl"].clone()));
    Ok(json!({"idx": idx, "tl": tl, "hits": hits}))
}

/// A page of entries (the timeline tool).
pub fn entries(view: &dyn View, q: &Q) -> ApiResult {
    let tl = tl_of(view, q)?;
    let t = view.timelines()[tl].timeline;
    let offset: usize = opt(q, "offset", 0)?;
    let limit: usize = opt(q, "limit", 100)?.clamp(1, 1000);
    let end = offset.saturating_add(limit).min(t.len());
    let items: Result<Vec<Value>, ApiError> = (offset.min(end)..end).map(|i| entry_json(view, tl, i as u32)).collect();
    Ok(json!({"offset": offset, "len": t.len(), "items": items?}))
}

/// Every recorded function (the modules browser, quick jump).
pub fn forms(view: &dyn View) -> ApiResult {
    let forms = view.forms();
    Ok(json!((0..forms.forms().len() as u32).map(|i| form_json(forms, i)).collect::<Vec<_>>()))
}

pub fn value_text(view: &dyn View, tl: usize, v: ValRef) -> String {
    val_text(view, tl, v, 400)
}

fn flag(q: &Q, name: &str) -> Result<bool, ApiError> {
    match q.get(name).map(String::as_str) {
        None | Some("" | "0" | "false") => Ok(false),
        Some("1" | "true") => Ok(true),
        Some(s) => Err(ApiError::bad(format!("query parameter `{name}`: `{s}` is not true/false/1/0"))),
    }
}

/// The multi-thread timeline: the entries of one flow's threads merged in the order they were
/// recorded (`squall_trace::total_order` over the timelines' thread-switch marks; recordings
/// without marks come as whole timelines one after another, `"marks": false`). Paged by `start`
/// and `limit` over positions in that order; `fns=1` keeps only calls, resumes, returns and
/// unwinds; `tl` + `idx` (without `start`) centre the page on that entry (`at` is its position,
/// or the first position after it when filtered out).
pub fn order(view: &dyn View, q: &Q) -> ApiResult {
    let tls = view.timelines();
    let flow: u32 = match q.get("flow").map(String::as_str) {
        None | Some("") => tls.first().map_or(0, |t| t.flow),
        Some(_) => req(q, "flow")?,
    };
    let mine: Vec<usize> = tls.iter().enumerate().filter(|(_, t)| t.flow == flow).map(|(i, _)| i).collect();
    if mine.is_empty() {
        return Err(ApiError::not_found(format!("no flow {flow} in this recording (see /api/flows)")));
    }
    let only_fns = flag(q, "fns")?;
    let limit: usize = opt(q, "limit", 200)?.clamp(1, 1000);
    let at = match q.get("tl") {
        Some(_) => {
            let tl = tl_of(view, q)?;
            if tls[tl].flow != flow {
                return Err(ApiError::bad(format!("timeline {tl} is not in flow {flow}")));
            }
            Some((tl, req::<u32>(q, "idx")?))
        }
        None => None,
    };
    let timelines: Vec<&squall_trace::Timeline> = mine.iter().map(|&i| tls[i].timeline).collect();
    let marks = timelines.iter().any(|t| !t.switches().is_empty());
    let start = match q.get("start").map(String::as_str) {
        None | Some("") if at.is_some() => None,
        _ => Some(opt(q, "start", 0)?),
    };
    // `at`'s timeline is in this flow (checked above): its index among the flow's timelines.
    let at = at.map(|(tl, idx)| (mine.iter().position(|&i| i == tl).unwrap_or(usize::MAX), idx));
    let page = order_page(&timelines, &OrderQuery { only_fns, start, limit, at });
    let mut items = Vec::with_capacity(page.items.len());
    for item in &page.items {
        let tl = mine[item.timeline];
        let mut d = entry_json(view, tl, item.idx)?;
        if d.get("fn").is_none() {
            let form = d["form_id"].as_u64().unwrap_or(0) as u32;
            d["fn"] = json!(display_name(view.forms(), form));
        }
        d["pos"] = json!(item.pos);
        d["tl"] = json!(tl);
        d["thread_id"] = json!(tls[tl].thread_id);
        d["thread"] = json!(tls[tl].name);
        d["switch"] = json!(item.switch);
        items.push(d);
    }
    let (total, start, at_pos) = (page.total, page.start, page.at);
    let threads: Vec<Value> = mine
        .iter()
        .map(|&i| json!({"tl": i, "thread_id": tls[i].thread_id, "name": tls[i].name, "len": tls[i].timeline.len()}))
        .collect();
    Ok(json!({
        "flow": flow, "total": total, "start": start, "limit": limit, "fns": only_fns, "marks": marks,
        "at": at_pos, "threads": threads, "items": items,
    }))
}

/// Bookmarks placed from code (`squall.bookmark("note")`, `squall_trace::bookmarks`), in
/// every timeline, with their note.
pub fn code_bookmarks(view: &dyn View, q: &Q) -> ApiResult {
    let limit: usize = opt(q, "limit", 1000)?.clamp(1, 10000);
    let tls = view.timelines();
    let found = squall_trace::bookmarks::bookmarks(view.forms(), &thread_refs(view));
    let out: Vec<Value> = found
        .iter()
        .take(limit)
        .map(|b| {
            let info = &tls[b.thread];
            let note = match view.snap(b.thread, b.note).as_deref() {
                Ok(squall_trace::Snap::Str(s)) => s.to_string(),
                _ => val_text(view, b.thread, b.note, 300),
            };
            json!({"tl": b.thread, "flow": info.flow, "thread": info.thread_id, "idx": b.idx, "note": note})
        })
        .collect();
    Ok(json!({"total": found.len(), "items": out}))
}

/// `/api/history?obj=N[&flow=F][&limit=L]`: every recorded state of object `obj` in one flow,
/// oldest first, the flow's threads merged in recorded order: each with its timeline, the idx
/// that first recorded it and its value; at most `limit` (default 200), `left_out` says how
/// many more there are.
pub fn history(view: &dyn View, q: &Q) -> ApiResult {
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
    let parts: Vec<(usize, &squall_trace::ValueStore, squall_trace::NodeEntries)> = mine
        .iter()
        .filter_map(|&i| {
            let store = view.values(i)?;
            Some((i, store, squall_trace::NodeEntries::new(tls[i].timeline, view.forms(), store)))
        })
        .collect();
    let refs: Vec<(&squall_trace::Timeline, &squall_trace::ValueStore, &squall_trace::NodeEntries)> =
        parts.iter().map(|p| (tls[p.0].timeline, p.1, &p.2)).collect();
    let states = squall_trace::history_merged(&refs, obj);
    let shown: Vec<Value> = states
        .iter()
        .take(limit)
        .map(|m| {
            let tl = parts[m.timeline].0;
            json!({"tl": tl, "idx": m.state.idx, "value": val_node(view, tl, ValRef(m.state.slot), PREVIEW_MAX)})
        })
        .collect();
    Ok(
        json!({"obj": obj, "flow": flow, "states": states.len(), "left_out": states.len() - shown.len(), "history": shown}),
    )
}
