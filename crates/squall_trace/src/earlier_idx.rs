//! Which entry an earlier state is from: a reference inside a recorded value (an object past the
//! recording's `object_depth`, a receiver) is shown with the newest state of its object recorded
//! before ([`Snap::Earlier`]), and a reader asks from when. The store names that state by its
//! node slot; the entry that created a node is found as `history::NodeEntries` finds it (the
//! first entry whose running maximum of named slots passes the node), but from an index kept
//! per block of [`BLOCK`] entries in the store ([`EntryReach`]), extended as the timeline grows,
//! and one block of the timeline scanned.

use crate::forms::Forms;
use crate::history::entry_top;
use crate::snapshot::Snap;
use crate::store::{EntryReach, ValueStore};
use crate::timeline::Timeline;

/// Entries per block of the index: a block is scanned per lookup (~64 entries' slots read), and
/// the index costs 4 bytes per block.
pub const BLOCK: usize = 64;

/// Sets the `idx` of every [`Snap::Earlier`] in `snap` that has none (the store set those
/// with writes applied) to the entry of `tl` that recorded its state; left `None` when that
/// entry is no longer in memory or was never written.
pub fn mark_earlier_idx(snap: &mut Snap, tl: &Timeline, forms: &Forms, store: &ValueStore) {
    if !has_earlier(snap) {
        return;
    }
    store.with_entry_reach(|reach| {
        extend(reach, tl, forms, store);
        mark(snap, &mut |slot| entry_of(reach, tl, forms, store, slot));
    });
}

/// The entry of `tl` that created node `slot` of its store (see the module doc).
pub fn entry_of_node(tl: &Timeline, forms: &Forms, store: &ValueStore, slot: u32) -> Option<u32> {
    store
        .with_entry_reach(|reach| {
            extend(reach, tl, forms, store);
            entry_of(reach, tl, forms, store, slot)
        })
        .flatten()
}

fn has_earlier(s: &Snap) -> bool {
    match s {
        Snap::Earlier { .. } => true,
        Snap::Seq { items, .. } => items.iter().any(has_earlier),
        Snap::Map { entries, .. } => entries.iter().any(|(k, v)| has_earlier(k) || has_earlier(v)),
        Snap::Object { attrs, .. } => attrs.iter().any(|(_, v)| has_earlier(v)),
        _ => false,
    }
}

fn mark(s: &mut Snap, find: &mut impl FnMut(u32) -> Option<u32>) {
    match s {
        Snap::Earlier { slot, idx, value } => {
            if idx.is_none() {
                *idx = find(*slot);
            }
            mark(value, find);
        }
        Snap::Seq { items, .. } => items.iter_mut().for_each(|x| mark(x, find)),
        Snap::Map { entries, .. } => entries.iter_mut().for_each(|(k, v)| {
            mark(k, find);
            mark(v, find);
        }),
        Snap::Object { attrs, .. } => attrs.iter_mut().for_each(|(_, v)| mark(v, find)),
        _ => {}
    }
}

/// Folds the entries `tl` holds past what `reach` indexed (all of them again when entries were
/// evicted from memory since).
fn extend(reach: &mut EntryReach, tl: &Timeline, forms: &Forms, store: &ValueStore) {
    if reach.first_idx != tl.first_idx() || reach.indexed < tl.first_idx() {
        *reach = EntryReach { first_idx: tl.first_idx(), indexed: tl.first_idx(), ..EntryReach::default() };
    }
    for idx in reach.indexed..tl.len() {
        reach.top = reach.top.max(entry_top(tl, forms, store, idx));
        if (idx + 1 - reach.first_idx).is_multiple_of(BLOCK) {
            reach.blocks.push(reach.top);
        }
    }
    reach.indexed = reach.indexed.max(tl.len());
}

fn entry_of(reach: &EntryReach, tl: &Timeline, forms: &Forms, store: &ValueStore, slot: u32) -> Option<u32> {
    let block = reach.blocks.partition_point(|&r| r <= slot);
    let from = reach.first_idx + block * BLOCK;
    let mut top = if block == 0 { 0 } else { reach.blocks[block - 1] };
    let found = (from..reach.indexed.min(from + BLOCK)).find(|&idx| {
        top = top.max(entry_top(tl, forms, store, idx));
        top > slot
    })?;
    // A node below the first entry held in memory may be an evicted entry's.
    if found == reach.first_idx && reach.first_idx > 0 {
        return None;
    }
    u32::try_from(found).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::{Entry, Kind};
    use crate::history::NodeEntries;
    use crate::store::Node;
    use crate::value::ValRef;

    /// Every node's entry, by the block index, is `NodeEntries`' answer: across block ends, and
    /// with the index extended as the timeline grows between lookups (a live recording).
    #[test]
    fn a_nodes_entry_by_blocks_is_node_entries_answer() {
        let mut store = ValueStore::new();
        let mut entries = Vec::new();
        for i in 0..450u32 {
            // Entries that make one node, two, or none (an inline value).
            let v = match i % 3 {
                0 => ValRef::small_int(i64::from(i)).unwrap(),
                1 => store.push(Node::Int(1 << 40)).unwrap(),
                _ => {
                    store.push(Node::Float(0.5));
                    store.push(Node::Int(1 << 41)).unwrap()
                }
            };
            entries.push(Entry::new(Kind::Expr, 0, 0, v.0, 0));
        }
        let forms = Forms::default();
        for upto in [10, 64, 200, 450] {
            let tl = Timeline::from_parts(entries[..upto].to_vec(), Vec::new());
            let ne = NodeEntries::new(&tl, &forms, &store);
            for slot in 0..store.len() as u32 {
                assert_eq!(entry_of_node(&tl, &forms, &store, slot), ne.entry_of(slot), "slot {slot} of {upto}");
            }
        }
        let mut snap = Snap::Seq {
            kind: crate::snapshot::SeqKind::List,
            type_name: "list".into(),
            id: 1,
            items: vec![Snap::Earlier { slot: 4, idx: None, value: Box::new(Snap::Int(1)) }],
            len: 1,
        };
        let tl = Timeline::from_parts(entries, Vec::new());
        mark_earlier_idx(&mut snap, &tl, &forms, &store);
        let Snap::Seq { items, .. } = snap else { unreachable!() };
        assert!(matches!(items[0], Snap::Earlier { idx: Some(5), .. }), "{items:?}");
    }
}
