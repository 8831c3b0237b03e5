//! `GET /api/outputs`: what the program wrote to stdout and stderr, in order, each chunk with
//! the timeline and entry idx it is linked to (the writing thread's last entry then).

use serde_json::{json, Value};
use squall_trace::OutStream;

use crate::api::{opt, tl_of, ApiError, ApiResult, Q};
use crate::source::View;

/// Query: `stream` (stdout or stderr), `tl` (one timeline), `contains` (text), `offset`, `limit`.
/// Answer: `total` (chunks matching), `items` (from `offset`, at most `limit`), `not_kept`.
pub fn outputs(view: &dyn View, q: &Q) -> ApiResult {
    let stream = match q.get("stream").map(String::as_str) {
        None | Some("") => None,
        Some("stdout") => Some(OutStream::Stdout),
        Some("stderr") => Some(OutStream::Stderr),
        Some(other) => {
            return Err(ApiError::bad(format!("query parameter `stream`: `{other}` is not `stdout` or `stderr`")))
        }
    };
    let only = match q.get("tl") {
        Some(_) => Some(tl_of(view, q)?),
        None => None,
    };
    let contains = q.get("contains").filter(|s| !s.is_empty());
    let offset: usize = opt(q, "offset", 0)?;
    let limit: usize = opt(q, "limit", 200)?.clamp(1, 1000);
    let Some(outputs) = view.outputs() else {
        return Ok(json!({"total": 0, "items": [], "not_kept": {"chunks": 0, "chars": 0}}));
    };
    let timelines = view.timelines();
    let mut items: Vec<Value> = Vec::new();
    let mut total = 0usize;
    for (n, c) in outputs.chunks().iter().enumerate() {
        let tl = c.at.and_then(|(number, _)| view.output_tl(number));
        if stream.is_some_and(|s| s != c.stream)
            || only.is_some_and(|o| tl != Some(o))
            || contains.is_some_and(|t| !c.text.contains(t.as_str()))
        {
            continue;
        }
        total += 1;
        if total <= offset || items.len() >= limit {
            continue;
        }
        let info = tl.and_then(|t| timelines.get(t));
        items.push(json!({
            "n": n,
            "stream": c.stream.name(),
            "tl": tl,
            "idx": c.at.map(|a| a.1),
            "flow": info.map(|i| i.flow),
            "thread_id": c.thread_id,
            "thread_name": info.map(|i| i.name),
            "text": c.text,
            "chars": c.chars,
            "cut": c.is_cut(),
        }));
    }
    let (nk_chunks, nk_chars) = outputs.not_kept();
    Ok(json!({"total": total, "items": items, "not_kept": {"chunks": nk_chunks, "chars": nk_chars}}))
}
