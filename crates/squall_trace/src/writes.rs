//! The writes query: where was an object's attribute or item changed, by which site (line), from
//! what to what. Written once here; the live recording and a recording file both answer through
//! it.
//!
//! "From what" is computed, never recorded: the previous write to the same target and name in
//! the same timeline, else the target's last state recorded before the write (an object node
//! whose slot is below the write's store length: slots grow with time), else unknown.

use std::collections::HashMap;

use crate::store::{ExpandBudget, LoggedWrite, Node, ObjId, ValueStore, WriteKey};
use crate::{Entry, Forms, Kind, Snap, Timeline, ValRef};

/// Keys are small (names, numbers, short strings): enough of one to tell keys apart.
const KEY_BUDGET: ExpandBudget = ExpandBudget { max_depth: 4, max_nodes: 64 };

/// Which writes to report.
#[derive(Clone, Debug, Default)]
pub struct WriteFilter<'a> {
    /// Only writes to this object.
    pub obj: Option<ObjId>,
    /// Only writes to this attribute name or item key (attribute names match items keyed by the
    /// same string too).
    pub name: Option<&'a Snap>,
    /// Only writes to objects whose recorded type name is this (`Item`, or `mod.Item`).
    pub type_name: Option<&'a str>,
}

/// Where the value before a write comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum OldValue {
    /// The previous write's new value (`None`: it was a delete), at that entry idx.
    PreviousWrite { idx: u32, value: Option<ValRef> },
    /// The field in the target's last state recorded before the write.
    RecordedState { value: ValRef },
    /// Nothing of the target's field was recorded before the write.
    Unknown,
}

/// One write, as the query reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct WriteFact {
    pub idx: u32,
    pub site: u32,
    pub obj: ObjId,
    /// The attribute name (attribute writes) or the key, as recorded.
    pub name: Snap,
    pub is_attr: bool,
    /// `None`: a delete.
    pub new: Option<ValRef>,
    pub old: OldValue,
}

fn key_of(tl: &Timeline, forms: &Forms, store: &ValueStore, idx: usize, e: &Entry) -> Option<(ObjId, Snap, bool, u32)> {
    let (obj, key, store_len) = tl.write_record(idx)?;
    if key == ValRef::ABSENT {
        let sym = forms.site(e.id())?.symbol.as_deref()?.to_string();
        Some((obj, Snap::Str(sym), true, store_len))
    } else {
        Some((obj, store.to_snap(key, KEY_BUDGET), false, store_len))
    }
}

/// The type name of the last object node of `obj` (any slot held in memory), if one was recorded.
fn type_of(store: &ValueStore, obj: ObjId) -> Option<&str> {
    store.nodes().iter().rev().find(|n| n.obj() == obj).and_then(|n| match n {
        Node::Seq(n) => Some(store.name(n.ty)),
        Node::SeqDelta(n) => Some(store.name(n.ty)),
        Node::Map(n) => Some(store.name(n.ty)),
        Node::Object(n) => Some(store.name(n.ty)),
        Node::Opaque(n) => Some(store.name(n.ty)),
        Node::Cut(n) => Some(store.name(n.ty)),
        Node::Ref(r) => Some(store.name(r.ty())),
        _ => None, // scalars have no identity
    })
}

fn type_matches(have: &str, want: &str) -> bool {
    have == want || have.rsplit('.').next() == Some(want)
}

/// The field `name` of `obj`'s last state recorded in a slot below `store_len` (and held).
fn recorded_field(store: &ValueStore, obj: ObjId, name: &Snap, is_attr: bool, store_len: u32) -> Option<ValRef> {
    let end = (store_len as usize).saturating_sub(store.first_held()).min(store.nodes().len());
    let node = store.nodes()[..end].iter().rev().find(|n| n.obj() == obj)?;
    match (node, name) {
        (Node::Object(n), Snap::Str(s)) if is_attr => {
            n.attrs.iter().find(|(k, _)| store.name(*k) == s).map(|(_, v)| *v)
        }
        (Node::Map(n), key) if !is_attr => {
            n.entries.iter().find(|(k, _)| &store.to_snap(*k, KEY_BUDGET) == key).map(|(_, v)| *v)
        }
        _ => None,
    }
}

/// Every write in `tl` that `filter` admits, oldest first, with its old value.
pub fn writes(tl: &Timeline, forms: &Forms, store: &ValueStore, filter: &WriteFilter) -> Vec<WriteFact> {
    let mut out = Vec::new();
    // (obj, name as text) -> (idx, new value) of the last write seen, for "from what". Snap has
    // floats (no Hash); its debug text tells keys apart as `==` does, but for -0.0 / NaN keys.
    let mut last: HashMap<(ObjId, String), (u32, Option<ValRef>)> = HashMap::new();
    for idx in tl.first_idx()..tl.len() {
        let Some(e) = tl.get(idx) else { continue };
        if e.kind() != Kind::Write {
            continue;
        }
        let Some((obj, name, is_attr, store_len)) = key_of(tl, forms, store, idx, e) else { continue };
        // A write's value is always a ref (only returns, expressions and bindings hold floats).
        let new = e.value_ref().filter(|&v| v != ValRef::ABSENT);
        let slot = (obj, format!("{name:?}"));
        let prev = last.get(&slot).copied();
        let admitted = filter.obj.is_none_or(|o| o == obj)
            && filter.name.is_none_or(|n| *n == name)
            && filter.type_name.is_none_or(|t| type_of(store, obj).is_some_and(|have| type_matches(have, t)));
        if admitted {
            let old = match prev {
                Some((idx, value)) => OldValue::PreviousWrite { idx, value },
                None => match recorded_field(store, obj, &name, is_attr, store_len) {
                    Some(value) => OldValue::RecordedState { value },
                    None => OldValue::Unknown,
                },
            };
            out.push(WriteFact { idx: idx as u32, site: e.id(), obj, name: name.clone(), is_attr, new, old });
        }
        last.insert(slot, (idx as u32, new));
    }
    out
}

/// Logs in `store` the writes of `tl` it has not seen yet, so that an earlier state shown for a
/// reference has the writes made since applied (`ValueStore::log_writes`). Cheap when nothing is
/// new: call it before reading values of a timeline that may have grown.
pub fn sync_writes(tl: &Timeline, forms: &Forms, store: &ValueStore) {
    let from = store.writes_synced_to().max(tl.first_idx());
    if from >= tl.len() {
        return;
    }
    let mut out = Vec::new();
    for idx in from..tl.len() {
        let Some(e) = tl.get(idx) else { continue };
        if e.kind() != Kind::Write {
            continue;
        }
        let Some((obj, name, is_attr, at)) = key_of(tl, forms, store, idx, e) else { continue };
        let key = match (is_attr, name) {
            (true, Snap::Str(s)) => WriteKey::Attr(s.into()),
            (true, _) => continue,
            (false, k) => WriteKey::Item(k),
        };
        let value = e.value_ref().filter(|&v| v != ValRef::ABSENT);
        out.push((obj, LoggedWrite { key, value, at, idx: idx as u32 }));
    }
    store.log_writes(tl.len(), out);
}
