//! Text search over recorded entries: function names (`fn`) or printed values (`value`), case
//! insensitive, in any thread, stopping at a cap that the answer reports.

use crate::entry::{Entry, Kind};
use crate::forms::Forms;
use crate::printer;
use crate::queries::display_name;
use crate::store::ValueStore;
use crate::timeline::Timeline;
use crate::value::{Decoded, ValRef};

/// Characters of a value's printed text that a value search looks at.
pub const VALUE_TEXT_MAX: usize = 20_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SearchKind {
    /// Calls of functions whose `module.qualname` contains the text.
    Fn,
    /// Entries with a value (a call's arguments, a return, an unwind's exception, an expression,
    /// a binding, a write) whose printed text contains the text.
    Value,
}

impl SearchKind {
    pub fn parse(s: &str) -> Option<SearchKind> {
        match s {
            "fn" => Some(SearchKind::Fn),
            "value" => Some(SearchKind::Value),
            _ => None,
        }
    }
}

/// A search's matcher, for one recording: which forms match, and the printed values seen so far
/// (per timeline, by value-store slot).
pub struct TextSearch {
    kind: SearchKind,
    needle: String,
    forms_ok: Vec<bool>,
}

/// The values of one timeline that a search looked at: slot -> matched.
#[derive(Default)]
pub struct SeenValues(Vec<u8>);

impl TextSearch {
    pub fn new(forms: &Forms, kind: SearchKind, text: &str) -> TextSearch {
        let needle = text.to_lowercase();
        let forms_ok =
            (0..forms.forms().len() as u32).map(|i| display_name(forms, i).to_lowercase().contains(&needle)).collect();
        TextSearch { kind, needle, forms_ok }
    }

    /// Whether the printed value `v` contains the text.
    pub fn value_matches(&self, store: Option<&ValueStore>, seen: &mut SeenValues, v: ValRef) -> bool {
        match v.decode() {
            Decoded::Absent => false,
            Decoded::Slot(s) => {
                let Some(store) = store else { return false };
                let s = s as usize;
                if seen.0.len() <= s {
                    seen.0.resize(s + 1, 0);
                }
                if seen.0[s] == 0 {
                    let text = printer::preview_ref(v, store, VALUE_TEXT_MAX);
                    seen.0[s] = if text.to_lowercase().contains(&self.needle) { 2 } else { 1 };
                }
                seen.0[s] == 2
            }
            Decoded::Int(i) => i.to_string().contains(&self.needle),
            Decoded::None => "none".contains(&self.needle),
            Decoded::Bool(b) => (if b { "true" } else { "false" }).contains(&self.needle),
        }
    }

    /// Whether entry `idx` (`e`) of `tl` matches.
    pub fn matches(
        &self,
        forms: &Forms,
        tl: &Timeline,
        store: Option<&ValueStore>,
        seen: &mut SeenValues,
        idx: usize,
        e: &Entry,
    ) -> bool {
        match (self.kind, e.kind()) {
            (SearchKind::Fn, Kind::Call) => self.forms_ok.get(e.id() as usize).copied().unwrap_or(false),
            (SearchKind::Fn, _) => false,
            (SearchKind::Value, Kind::Call | Kind::Resume) => {
                let n = if e.kind() == Kind::Resume { 1 } else { forms.form(e.id()).map_or(0, |f| f.params.len()) };
                tl.call_args(idx, n).into_iter().any(|v| self.value_matches(store, seen, v))
            }
            (SearchKind::Value, _) => self.value_matches(store, seen, e.value()),
        }
    }
}
