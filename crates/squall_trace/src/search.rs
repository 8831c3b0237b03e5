//! Text search over recorded entries: function names (`fn`) or printed values (`value`), case
//! insensitive, in any thread, stopping at a cap that the answer reports.

use crate::entry::{Entry, Kind};
use crate::forms::Forms;
use crate::printer;
use crate::queries::display_name;
use crate::store::ValueStore;
use crate::timeline::Timeline;
use crate::value::{Decoded, ValRef, Value};

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
    /// Lowercased unless the search is case sensitive.
    needle: String,
    ignore_case: bool,
    forms_ok: Vec<bool>,
}

/// The values of one timeline that a search looked at: slot -> matched.
#[derive(Default)]
pub struct SeenValues(Vec<u8>);

/// The printed text a value search looks at for `v` (`None`: no value, or one not in `store`).
pub fn value_text(store: Option<&ValueStore>, v: impl Into<Value>) -> Option<String> {
    let v = v.into();
    match v.decode() {
        Decoded::Absent => None,
        Decoded::Slot(_) => store.map(|s| printer::preview_ref(v, s, VALUE_TEXT_MAX)),
        Decoded::Float(f) => Some(printer::float_repr(f)),
        Decoded::Int(i) => Some(i.to_string()),
        Decoded::None => Some("None".into()),
        Decoded::Bool(b) => Some((if b { "True" } else { "False" }).into()),
    }
}

impl TextSearch {
    /// A case-insensitive search (the UI's).
    pub fn new(forms: &Forms, kind: SearchKind, text: &str) -> TextSearch {
        TextSearch::with_case(forms, kind, text, true)
    }

    pub fn with_case(forms: &Forms, kind: SearchKind, text: &str, ignore_case: bool) -> TextSearch {
        let needle = if ignore_case { text.to_lowercase() } else { text.to_string() };
        let mut s = TextSearch { kind, needle, ignore_case, forms_ok: Vec::new() };
        s.forms_ok = (0..forms.forms().len() as u32).map(|i| s.contains(&display_name(forms, i))).collect();
        s
    }

    /// Whether `text` contains the searched text.
    pub fn contains(&self, text: &str) -> bool {
        if self.ignore_case {
            text.to_lowercase().contains(&self.needle)
        } else {
            text.contains(&self.needle)
        }
    }

    /// Whether the printed value `v` contains the text.
    pub fn value_matches(&self, store: Option<&ValueStore>, seen: &mut SeenValues, v: impl Into<Value>) -> bool {
        let v = v.into();
        match v.decode() {
            Decoded::Slot(s) => {
                let Some(text) = value_text(store, v) else { return false };
                let s = s as usize;
                if seen.0.len() <= s {
                    seen.0.resize(s + 1, 0);
                }
                if seen.0[s] == 0 {
                    seen.0[s] = if self.contains(&text) { 2 } else { 1 };
                }
                seen.0[s] == 2
            }
            _ => value_text(store, v).is_some_and(|t| self.contains(&t)),
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
                call_args(forms, tl, idx, e).into_iter().any(|v| self.value_matches(store, seen, v))
            }
            (SearchKind::Value, _) => self.value_matches(store, seen, e.value()),
        }
    }

    /// The matching entries among `from..to` of `tl` (from its first kept entry), at most
    /// `limit` of them, and the idx the search stopped before (`to`, or the idx after the
    /// `limit`th hit): a caller searches a long timeline in such ranges, checking between them
    /// whether to stop.
    #[allow(clippy::too_many_arguments)]
    pub fn search_range(
        &self,
        forms: &Forms,
        tl: &Timeline,
        store: Option<&ValueStore>,
        seen: &mut SeenValues,
        from: usize,
        to: usize,
        limit: usize,
    ) -> (Vec<u32>, usize) {
        let to = to.min(tl.len());
        let mut out = Vec::new();
        let mut k = from.max(tl.first_idx());
        while k < to {
            if out.len() >= limit {
                break;
            }
            if let Some(e) = tl.get(k) {
                if self.matches(forms, tl, store, seen, k, e) {
                    out.push(k as u32);
                }
            }
            k += 1;
        }
        (out, k.max(from))
    }

    /// The text a hit of this search was found in: the function's name for a name search; for a
    /// value search, a call's arguments printed as a list (`[a, b]`), another entry's value.
    pub fn hit_text(&self, forms: &Forms, tl: &Timeline, store: Option<&ValueStore>, idx: usize) -> String {
        let Some(e) = tl.get(idx) else { return String::new() };
        match (self.kind, e.kind()) {
            (SearchKind::Fn, _) => display_name(forms, e.id()),
            (SearchKind::Value, Kind::Call | Kind::Resume) => {
                let args: Vec<String> = call_args(forms, tl, idx, e)
                    .into_iter()
                    .map(|v| value_text(store, v).unwrap_or_else(|| "<absent>".into()))
                    .collect();
                format!("[{}]", args.join(", "))
            }
            (SearchKind::Value, _) => value_text(store, e.value()).unwrap_or_default(),
        }
    }
}

/// The argument values of call (or resume) entry `idx`.
fn call_args(forms: &Forms, tl: &Timeline, idx: usize, e: &Entry) -> Vec<ValRef> {
    let n = if e.kind() == Kind::Resume { 1 } else { forms.form(e.id()).map_or(0, |f| f.params.len()) };
    tl.call_args(idx, n)
}
