//! What the UI's code pane asks for: how often each line of a file ran (the gutter's hit
//! counts), which lines ran in one frame (before and after the current entry), and the entries
//! of one site (clicking an expression in the code jumps to when it ran; Printers replay sites
//! over the recording).

use std::collections::{BTreeMap, HashSet};

use serde_json::{json, Value};
use squall_trace::{Entry, Forms, Kind, Timeline, TraceError, ValRef};

use crate::api::{opt, req, tl_of, ApiError, ApiResult, Q};
use crate::source::View;
use crate::values::val_node;

/// The entry kinds whose id is a site (the others' is a form).
const SITE_KINDS: [Kind; 4] = [Kind::Expr, Kind::Bind, Kind::Return, Kind::Write];

fn site_of(e: &Entry) -> Option<u32> {
    SITE_KINDS.contains(&e.kind()).then(|| e.id())
}

/// True when a form's recorded file is the file the client names (its full path, or a path
/// ending with it after a `/`).
fn same_file(recorded: &str, asked: &str) -> bool {
    recorded == asked || recorded.ends_with(&format!("/{asked}"))
}

fn forms_in(forms: &Forms, file: &str) -> Result<Vec<bool>, ApiError> {
    let in_file: Vec<bool> = forms.forms().iter().map(|f| same_file(&f.file, file)).collect();
    if !in_file.iter().any(|&b| b) {
        return Err(ApiError::not_found(format!("no recorded function is in `{file}`")));
    }
    Ok(in_file)
}

/// `/api/lines?tl=T&file=F`: how many times each line of `F` ran in timeline `T`. A line's
/// count is that of its most-run site starting on it (a line with three expressions that ran
/// twice counts 2, not 6); a `def` line counts the calls of its function.
pub fn line_hits(view: &dyn View, q: &Q) -> ApiResult {
    let tl = tl_of(view, q)?;
    let file: String = req(q, "file")?;
    let forms = view.forms();
    let in_file = forms_in(forms, &file)?;
    let t = view.timelines()[tl].timeline;
    let mut site_hits = vec![0u64; forms.sites().len()];
    let mut call_hits = vec![0u64; forms.forms().len()];
    for e in t.entries() {
        match e.kind() {
            Kind::Call => {
                if let Some(c) = call_hits.get_mut(e.id() as usize) {
                    *c += 1;
                }
            }
            k if SITE_KINDS.contains(&k) => {
                if let Some(c) = site_hits.get_mut(e.id() as usize) {
                    *c += 1;
                }
            }
            _ => {}
        }
    }
    let mut lines: BTreeMap<u32, u64> = BTreeMap::new();
    let mut raise = |line: u32, n: u64| {
        if n > 0 {
            let c = lines.entry(line).or_insert(0);
            *c = (*c).max(n);
        }
    };
    for (s, n) in forms.sites().iter().zip(&site_hits) {
        if in_file.get(s.form as usize).copied().unwrap_or(false) {
            raise(s.coord.line, *n);
        }
    }
    for ((f, n), inside) in forms.forms().iter().zip(&call_hits).zip(&in_file) {
        if *inside {
            raise(f.line, *n);
        }
    }
    let lines: serde_json::Map<String, Value> = lines.into_iter().map(|(l, n)| (l.to_string(), json!(n))).collect();
    Ok(json!({"tl": tl, "file": file, "lines": lines}))
}

/// The entries of the frame opened at `call` that belong to it: its events and its exit.
fn frame_entries(t: &Timeline, call: u32) -> Result<Vec<u32>, TraceError> {
    let mut idxs = t.frame_events(u64::from(call), None)?;
    if let Some(r) = t.get(call as usize).and_then(Entry::ret_idx) {
        idxs.push(r);
    }
    Ok(idxs)
}

/// `/api/frame_lines?tl=T&idx=I`: the lines that ran in the frame holding `I`, with how many
/// times each ran in it: `ran` up to and including `I`, `later` after it only.
pub fn frame_lines(view: &dyn View, q: &Q) -> ApiResult {
    let tl = tl_of(view, q)?;
    let idx: u64 = req(q, "idx")?;
    let forms = view.forms();
    let t = view.timelines()[tl].timeline;
    let call = t.frame_of(idx)?;
    let mut ran: BTreeMap<u32, u64> = BTreeMap::new();
    let mut later: BTreeMap<u32, u64> = BTreeMap::new();
    if let Some(f) = t.get(call as usize).and_then(|c| forms.form(c.id())) {
        ran.insert(f.line, 1);
    }
    for i in frame_entries(t, call)? {
        let Some(site) = t.get(i as usize).and_then(site_of).and_then(|s| forms.site(s)) else { continue };
        let into = if u64::from(i) <= idx { &mut ran } else { &mut later };
        *into.entry(site.coord.line).or_insert(0) += 1;
    }
    later.retain(|l, _| !ran.contains_key(l));
    let obj = |m: BTreeMap<u32, u64>| -> serde_json::Map<String, Value> {
        m.into_iter().map(|(l, n)| (l.to_string(), json!(n))).collect()
    };
    Ok(json!({"tl": tl, "idx": idx, "call": call, "ran": obj(ran), "later": obj(later)}))
}

/// `/api/site_hits?tl=T&site=S[&frame=C][&limit=L]`: the entries of site `S`, in the frame
/// opened at `C` when given (else in the whole timeline), oldest first, at most `L` (default
/// 200) with their values; `total` counts them all.
pub fn site_hits(view: &dyn View, q: &Q) -> ApiResult {
    let tl = tl_of(view, q)?;
    let site: u32 = req(q, "site")?;
    let forms = view.forms();
    if forms.site(site).is_none() {
        return Err(ApiError::not_found(format!(
            "no site {site}: this recording has {} (the frame's `sites` list them)",
            forms.sites().len()
        )));
    }
    let limit: usize = opt(q, "limit", 200)?.clamp(1, 10_000);
    let t = view.timelines()[tl].timeline;
    let frame: Option<u32> = match q.get("frame").map(String::as_str) {
        None | Some("") => None,
        Some(_) => Some(req(q, "frame")?),
    };
    let hits: Vec<u32> = match frame {
        Some(call) => {
            if !t.get(call as usize).is_some_and(|e| e.kind().is_call()) {
                return Err(ApiError::bad(format!("frame {call} is not a call entry's idx")));
            }
            frame_entries(t, call)?.into_iter().filter(|&i| t.get(i as usize).and_then(site_of) == Some(site)).collect()
        }
        None => {
            (t.first_idx()..t.len()).filter(|&i| t.get(i).and_then(site_of) == Some(site)).map(|i| i as u32).collect()
        }
    };
    let items: Vec<Value> = hits
        .iter()
        .take(limit)
        .map(|&i| {
            let v = t.get(i as usize).map_or(squall_trace::Value::ABSENT, Entry::value);
            json!({"idx": i, "value": val_node(view, tl, v, 120)})
        })
        .collect();
    Ok(json!({"tl": tl, "site": site, "frame": frame, "total": hits.len(), "items": items}))
}

/// `/api/site_entries?tl=T&sites=S1,S2,..[&offset=O][&limit=L]`: the entries of any of the
/// sites, in recorded order (Printers: print points replayed over the recording), each with its
/// site, its frame and its value; `total` counts them all.
pub fn site_entries(view: &dyn View, q: &Q) -> ApiResult {
    let tl = tl_of(view, q)?;
    let text: String = req(q, "sites")?;
    let forms = view.forms();
    let mut sites = HashSet::new();
    for part in text.split(',').filter(|p| !p.is_empty()) {
        let s: u32 = part
            .trim()
            .parse()
            .map_err(|_| ApiError::bad(format!("sites: `{part}` is not a site number (write e.g. sites=3,7)")))?;
        if forms.site(s).is_none() {
            return Err(ApiError::not_found(format!("no site {s}: this recording has {}", forms.sites().len())));
        }
        sites.insert(s);
    }
    let offset: usize = opt(q, "offset", 0)?;
    let limit: usize = opt(q, "limit", 200)?.clamp(1, 1000);
    let t = view.timelines()[tl].timeline;
    let mut total = 0usize;
    let mut items = Vec::new();
    for i in t.first_idx()..t.len() {
        let Some(e) = t.get(i) else { continue };
        let Some(s) = site_of(e).filter(|s| sites.contains(s)) else { continue };
        if total >= offset && items.len() < limit {
            let value = if e.value() == ValRef::ABSENT { Value::Null } else { val_node(view, tl, e.value(), 300) };
            items.push(json!({"idx": i, "site": s, "fn_call_idx": e.fn_call_idx(), "value": value}));
        }
        total += 1;
    }
    Ok(json!({"tl": tl, "total": total, "offset": offset, "items": items}))
}
