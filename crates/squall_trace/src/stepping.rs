//! Power stepping and loops: from one entry to the next or previous one like it (same place,
//! same function, the same or an equal value), and the iterations of an expression in its frame.

use crate::entry::Kind;
use crate::error::TraceError;
use crate::snapshot::Snap;
use crate::store::{ExpandBudget, ValueStore};
use crate::timeline::Timeline;
use crate::value::{Decoded, ValRef};

/// What "like the entry at idx" means for [`step_like`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Like {
    /// The same place: the same site (an expression, binding, return...), or a call of the
    /// same function.
    Coord,
    /// A call of the function whose frame holds the entry.
    Fn,
    /// The same recorded value: the same value slot, or a state of the same object.
    Identity,
    /// An equal value (the same recorded tree).
    Equality,
}

impl Like {
    pub fn parse(s: &str) -> Option<Like> {
        Some(match s {
            "coord" => Like::Coord,
            "fn" => Like::Fn,
            "identity" => Like::Identity,
            "equality" => Like::Equality,
            _ => return None,
        })
    }
}

const VALUE_KINDS: [Kind; 5] = [Kind::Expr, Kind::Bind, Kind::Write, Kind::Return, Kind::Unwind];

/// The next (or, `backward`, previous) entry after `idx` like it; `None` when there is none.
pub fn step_like(
    tl: &Timeline,
    values: Option<&ValueStore>,
    idx: u64,
    like: Like,
    backward: bool,
) -> Result<Option<u32>, TraceError> {
    let frame = tl.frame_of(idx)?;
    let e = *tl.get(idx as usize).ok_or(TraceError::IdxOutOfRange { idx, len: tl.len() })?;
    let from = if backward { idx.checked_sub(1) } else { Some(idx + 1) };
    let Some(from) = from else { return Ok(None) };
    if from >= tl.len() as u64 {
        return Ok(None);
    }
    let found = match like {
        Like::Coord if e.kind().is_call() => find(tl, &[Kind::Call], from, backward, |x| x.id() == e.id()),
        Like::Coord => find(tl, &[e.kind()], from, backward, |x| x.id() == e.id()),
        Like::Fn => {
            let form = tl.get(frame as usize).map_or(u32::MAX, |c| c.id());
            find(tl, &[Kind::Call], from, backward, |x| x.id() == form)
        }
        Like::Identity | Like::Equality => {
            if e.kind().is_call() {
                return Err(TraceError::NoSingleValue(idx));
            }
            let v = e.value();
            let obj = values.map_or(0, |s| s.obj_of(v));
            let tree = match (like, values, v.decode()) {
                (Like::Equality, Some(s), Decoded::Slot(k)) if (k as usize) < s.len() => {
                    Some(s.to_snap(v, ExpandBudget::FULL))
                }
                (Like::Equality, _, Decoded::Float(f)) => Some(Snap::Float(f)),
                _ => None,
            };
            find(tl, &VALUE_KINDS, from, backward, |x| {
                let xv = x.value();
                if xv == v && v != ValRef::ABSENT {
                    return true;
                }
                // A float held in an entry equals a float node of the same value.
                match (&tree, xv.decode(), values) {
                    (Some(t), Decoded::Float(f), _) => Snap::Float(f) == *t,
                    (Some(t), Decoded::Slot(k), Some(store)) if (k as usize) < store.len() => {
                        store.to_snap(xv, ExpandBudget::FULL) == *t
                    }
                    (None, _, Some(store)) if obj != 0 => store.obj_of(xv) == obj,
                    _ => false,
                }
            })
        }
    };
    Ok(found)
}

fn find(
    tl: &Timeline,
    kinds: &[Kind],
    from: u64,
    backward: bool,
    mut ok: impl FnMut(&crate::Entry) -> bool,
) -> Option<u32> {
    tl.find_entry::<()>(kinds, Some(from), backward, |_, x| Ok(ok(x))).unwrap_or(None)
}

/// The iterations of the entry at an idx: every entry of the same site and kind in the same
/// frame, in order, and the position of that idx among them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Iterations {
    pub idxs: Vec<u32>,
    pub pos: usize,
}

/// The iterations of the expression, binding or write at `idx` in its frame.
pub fn iterations(tl: &Timeline, idx: u64) -> Result<Iterations, TraceError> {
    let e = *tl.get(idx as usize).ok_or(TraceError::IdxOutOfRange { idx, len: tl.len() })?;
    if !e.kind().is_event() {
        return Err(TraceError::NotAnEvent(idx));
    }
    let frame = tl.frame_of(idx)?;
    let idxs: Vec<u32> = tl
        .frame_events(u64::from(frame), None)?
        .into_iter()
        .filter(|&i| tl.get(i as usize).is_some_and(|x| x.id() == e.id() && x.kind() == e.kind()))
        .collect();
    let pos = idxs.iter().position(|&i| u64::from(i) == idx).unwrap_or(0);
    Ok(Iterations { idxs, pos })
}
