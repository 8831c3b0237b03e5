//! A recorded value as a tree to open one level at a time: what a node's children are (a
//! sequence's items, a mapping's values by key, an object's recorded fields), how many the
//! recording kept, and a page of them. The UI's value inspector (`/api/value`) and the DAP
//! server's variables (through `Recording.val_expand`) both page with [`expand`], so both show
//! the same children under the same keys.

use crate::printer;
use crate::snapshot::Snap;

/// Characters of a mapping key's preview, as it names the child.
pub const KEY_MAX: usize = 60;

/// The value itself: an earlier state ([`Snap::Earlier`]) is opened like the value it holds.
pub fn bare(s: &Snap) -> &Snap {
    match s {
        Snap::Earlier { value, .. } => bare(value),
        other => other,
    }
}

/// How many children of `s` the recording kept.
pub fn children_count(s: &Snap) -> usize {
    match bare(s) {
        Snap::Seq { items, .. } => items.len(),
        Snap::Map { entries, .. } => entries.len(),
        Snap::Object { attrs, .. } => attrs.len(),
        _ => 0,
    }
}

/// The length the value had: a container's (the recording may have kept fewer items), a
/// string's characters, bytes, an object's recorded fields; `None` for other leaves.
pub fn total_len(s: &Snap) -> Option<u64> {
    match bare(s) {
        Snap::Seq { len, .. } | Snap::Map { len, .. } | Snap::Cut { len, .. } => Some(*len),
        Snap::Str(v) => Some(v.chars().count() as u64),
        Snap::Bytes(v) => Some(v.len() as u64),
        Snap::Object { attrs, .. } => Some(attrs.len() as u64),
        _ => None,
    }
}

/// Whether the recorder's budget kept fewer items of this container than it had.
pub fn cut_when_recorded(s: &Snap) -> bool {
    let s = bare(s);
    (children_count(s) as u64) < total_len(s).unwrap_or(0)
        && !matches!(s, Snap::Str(_) | Snap::Bytes(_) | Snap::Object { .. })
}

/// What names a child under its parent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChildKey {
    /// An item of a sequence (or set), by position.
    Index(usize),
    /// A mapping's value, by its key's preview (at most [`KEY_MAX`] characters); `exact`: the
    /// preview is the key's whole Python literal (a string, number, bool or None not cut).
    Key { text: String, exact: bool },
    /// An object's recorded field.
    Attr(String),
}

impl ChildKey {
    /// The key as the UI shows it: the position, the key's preview, the field's name.
    pub fn text(&self) -> String {
        match self {
            ChildKey::Index(i) => i.to_string(),
            ChildKey::Key { text, .. } | ChildKey::Attr(text) => text.clone(),
        }
    }
}

/// Child `i` of `s` and its key.
pub fn child(s: &Snap, i: usize) -> Option<(ChildKey, &Snap)> {
    match bare(s) {
        Snap::Seq { items, .. } => items.get(i).map(|c| (ChildKey::Index(i), c)),
        Snap::Map { entries, .. } => entries.get(i).map(|(k, v)| {
            let exact = matches!(k, Snap::Str(_) | Snap::Int(_) | Snap::BigInt(_) | Snap::Bool(_) | Snap::None);
            let text = printer::preview(k, KEY_MAX);
            let exact = exact && !text.ends_with('…');
            (ChildKey::Key { text, exact }, v)
        }),
        Snap::Object { attrs, .. } => attrs.get(i).map(|(k, v)| (ChildKey::Attr(k.clone()), v)),
        _ => None,
    }
}

/// The node `path` (child positions, outermost first) names under `root`; the error says which
/// position named no child.
pub fn walk<'a>(root: &'a Snap, path: &[usize]) -> Result<&'a Snap, String> {
    let mut s = root;
    for (depth, &i) in path.iter().enumerate() {
        s = child(s, i)
            .map(|(_, c)| c)
            .ok_or_else(|| format!("path element {depth} ({i}) names no child of this {}", s.type_name()))?;
    }
    Ok(s)
}

/// One level of a value: the node a path names and a page of its children.
#[derive(Debug)]
pub struct Expanded<'a> {
    /// The node (an earlier state as recorded: [`bare`] opens it).
    pub node: &'a Snap,
    /// The first child of the page.
    pub offset: usize,
    /// The page: each child's key, node and path.
    pub children: Vec<(ChildKey, &'a Snap, Vec<usize>)>,
    /// The children the recording kept.
    pub children_total: usize,
}

impl Expanded<'_> {
    /// Whether the node is an earlier state of its object (not recorded at this moment).
    pub fn earlier(&self) -> bool {
        matches!(self.node, Snap::Earlier { .. })
    }

    /// The entry an earlier state is as of (`Snap::Earlier`'s `idx`), when known.
    pub fn earlier_idx(&self) -> Option<u32> {
        match self.node {
            Snap::Earlier { idx, .. } => *idx,
            _ => None,
        }
    }

    /// Whether children follow the page.
    pub fn more(&self) -> bool {
        self.offset + self.children.len() < self.children_total
    }

    /// The node as [`text`] prints it.
    pub fn text(&self, print_level: usize, print_length: usize) -> String {
        text(self.node, print_level, print_length)
    }
}

/// A node printed by the core's printer within `print_level` / `print_length`, an earlier state
/// marked `(earlier) `.
pub fn text(s: &Snap, print_level: usize, print_length: usize) -> String {
    let printed = printer::pprint(bare(s), print_level, print_length);
    if matches!(s, Snap::Earlier { .. }) {
        format!("(earlier) {printed}")
    } else {
        printed
    }
}

/// The node `path` names under `root` and its children `offset..offset + limit`.
pub fn expand<'a>(root: &'a Snap, path: &[usize], offset: usize, limit: usize) -> Result<Expanded<'a>, String> {
    let node = walk(root, path)?;
    let n = children_count(node);
    let start = offset.min(n);
    let end = start.saturating_add(limit).min(n);
    let children = (start..end)
        .filter_map(|i| {
            let (key, c) = child(node, i)?;
            let mut p = path.to_vec();
            p.push(i);
            Some((key, c, p))
        })
        .collect();
    Ok(Expanded { node, offset: start, children, children_total: n })
}
