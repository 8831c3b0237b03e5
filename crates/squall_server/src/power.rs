//! `/api/power_step`: the power steps `/api/find` does not take. `same-frame`: the next or
//! previous time the current expression ran in the same frame (a loop's next iteration; for a
//! call, the next call of the same function from the same caller frame). `text`: the next or
//! previous entry whose printed value holds `text`. `predicate`: the next or previous entry for
//! which the custom predicate `pred` holds (the core's language, `squall_trace::predicate`, the
//! agents' `calls --where`, over the entry's names `v`, `kind`, `name`, `fn`: `v > 3`,
//! `len(v) == 0`); an entry it cannot decide for (it reads what the recording cut) is not a
//! match. Both scan for at most `TEXT_BUDGET`; when that runs out the answer says where it
//! stopped, so the client can go on from there.

use std::time::{Duration, Instant};

use serde_json::json;
use squall_trace::predicate::{entry_verdict, Predicate, Subject, Verdict};
use squall_trace::{Kind, TraceError, ValueStore};

use crate::api::{opt, req, tl_of, ApiError, ApiResult, Q};
use crate::source::View;
use crate::values::val_text;

const TEXT_BUDGET: Duration = Duration::from_secs(3);

/// The entry kinds a text or predicate step stops at (those with a value).
const VALUE_KINDS: [Kind; 5] = [Kind::Expr, Kind::Bind, Kind::Return, Kind::Unwind, Kind::Write];

/// Why a predicate scan stopped before its end.
enum Stop {
    /// Out of time at this idx.
    Time(u32),
    /// The predicate cannot be answered for this entry (a message for the user).
    Bad(String),
}

/// Where a scan that ran out of time before looking at entry `i` stopped: the entry before it in
/// the scan's direction, so that the next step from there (the client sends it as `idx`) starts
/// at `i`.
fn checked_up_to(i: u32, backward: bool) -> u32 {
    if backward {
        i.saturating_add(1)
    } else {
        i.saturating_sub(1)
    }
}

pub fn power_step(view: &dyn View, q: &Q) -> ApiResult {
    power_step_within(view, q, TEXT_BUDGET)
}

/// [`power_step`], a text or predicate scan stopping after `budget`.
pub fn power_step_within(view: &dyn View, q: &Q, budget: Duration) -> ApiResult {
    let tl = tl_of(view, q)?;
    let t = view.timelines()[tl].timeline;
    let idx: u32 = req(q, "idx")?;
    let e = *t.get(idx as usize).ok_or(TraceError::IdxOutOfRange { idx: u64::from(idx), len: t.len() })?;
    let backward = match opt(q, "dir", "next".to_string())?.as_str() {
        "next" => false,
        "prev" => true,
        other => return Err(ApiError::bad(format!("dir must be next or prev, not `{other}`"))),
    };
    let from = if backward { u64::from(idx).checked_sub(1) } else { Some(u64::from(idx) + 1) };
    let how: String = req(q, "how")?;
    match how.as_str() {
        "same-frame" => {
            let Some(from) = from else { return Ok(json!({"idx": null})) };
            let found = if e.kind().is_call() {
                let parent = e.parent_idx();
                t.find_entry::<()>(&[e.kind()], Some(from), backward, |_, x| {
                    Ok(x.id() == e.id() && x.parent_idx() == parent)
                })
            } else {
                let frame = t.frame_of(u64::from(idx))?;
                t.find_entry::<()>(&[e.kind()], Some(from), backward, |_, x| {
                    Ok(x.id() == e.id() && x.fn_call_idx() == frame)
                })
            };
            Ok(json!({"idx": found.unwrap_or(None)}))
        }
        "text" => {
            let text: String = req(q, "text")?;
            if text.is_empty() {
                return Err(ApiError::bad("text is empty: write what the printed value should hold"));
            }
            let Some(from) = from else { return Ok(json!({"idx": null})) };
            let start = Instant::now();
            let mut stopped_at = None;
            let found = t.find_entry::<u32>(&VALUE_KINDS, Some(from), backward, |i, x| {
                if start.elapsed() >= budget {
                    return Err(i);
                }
                Ok(val_text(view, tl, x.value(), 2000).contains(&text))
            });
            let found = match found {
                Ok(f) => f,
                Err(i) => {
                    stopped_at = Some(checked_up_to(i, backward));
                    None
                }
            };
            Ok(json!({"idx": found, "stopped_at": stopped_at}))
        }
        "predicate" => {
            let text: String = req(q, "pred")?;
            if text.trim().is_empty() {
                return Err(ApiError::bad("pred is empty: write a condition over the value `v`, e.g. `v > 3`"));
            }
            let pred = Predicate::parse(&text, Subject::Entry).map_err(|e| ApiError::bad(e.to_string()))?;
            if pred.reads().is_empty() {
                // True or false for every entry alike: most likely text typed without `text:`.
                let quoted = squall_trace::printer::preview(&squall_trace::Snap::Str(text.clone()), usize::MAX);
                return Err(ApiError::bad(format!(
                    "{quoted} reads none of the entry's names (v, kind, name, fn), so it holds for every entry or none: write e.g. `v == 3`, or text:{text} for the printed value"
                )));
            }
            let Some(from) = from else { return Ok(json!({"idx": null})) };
            let empty = ValueStore::new();
            let store = view.values(tl).unwrap_or(&empty);
            // A live timeline grows: its new writes apply to earlier states its values show.
            squall_trace::sync_writes(t, view.forms(), store);
            let start = Instant::now();
            let found = t.find_entry::<Stop>(&VALUE_KINDS, Some(from), backward, |i, _| {
                if start.elapsed() >= budget {
                    return Err(Stop::Time(i));
                }
                match entry_verdict(&pred, t, store, view.forms(), i) {
                    Ok(v) => Ok(v == Verdict::Holds),
                    Err(e) => Err(Stop::Bad(e.to_string())),
                }
            });
            match found {
                Ok(f) => Ok(json!({"idx": f, "stopped_at": null})),
                Err(Stop::Time(i)) => Ok(json!({"idx": null, "stopped_at": checked_up_to(i, backward)})),
                Err(Stop::Bad(why)) => Err(ApiError::bad(why)),
            }
        }
        other => Err(ApiError::bad(format!("how must be same-frame, text or predicate, not `{other}`"))),
    }
}
