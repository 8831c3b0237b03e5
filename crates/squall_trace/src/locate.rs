//! Where code ran: the entries recorded at a `file:line` ("goto file:line"), in any thread.

use crate::entry::{Entry, Kind};
use crate::forms::Forms;
use crate::timeline::Timeline;

/// The kinds of entries that sit at a line: calls (at the function's `def` line), returns,
/// expressions, bindings and writes (at their site's line).
pub const LINE_KINDS: [Kind; 6] = [Kind::Call, Kind::Resume, Kind::Return, Kind::Expr, Kind::Bind, Kind::Write];

/// Which entries were recorded at one `file:line`.
pub struct LineMatcher {
    line: u32,
    form_in_file: Vec<bool>,
    site_ok: Vec<bool>,
}

/// `recorded` (a path as the instrumenter saw it) names `wanted` (as a user typed it): equal, or
/// `wanted` is a trailing part of it on a path-component boundary.
pub fn same_file(recorded: &str, wanted: &str) -> bool {
    recorded == wanted || (recorded.ends_with(wanted) && recorded[..recorded.len() - wanted.len()].ends_with('/'))
}

impl LineMatcher {
    /// `None` when no recorded function is in `file`.
    pub fn new(forms: &Forms, file: &str, line: u32) -> Option<LineMatcher> {
        let form_in_file: Vec<bool> = forms.forms().iter().map(|f| same_file(&f.file, file)).collect();
        if !form_in_file.contains(&true) {
            return None;
        }
        let site_ok = forms
            .sites()
            .iter()
            .map(|s| s.coord.line == line && form_in_file.get(s.form as usize).copied().unwrap_or(false))
            .collect();
        Some(LineMatcher { line, form_in_file, site_ok })
    }

    pub fn matches(&self, forms: &Forms, e: &Entry) -> bool {
        match e.kind() {
            Kind::Call | Kind::Resume => {
                self.form_in_file.get(e.id() as usize).copied().unwrap_or(false)
                    && forms.form(e.id()).is_some_and(|f| f.line == self.line)
            }
            Kind::Return | Kind::Expr | Kind::Bind | Kind::Write => {
                self.site_ok.get(e.id() as usize).copied().unwrap_or(false)
            }
            Kind::Unwind => false,
        }
    }

    /// The first entry at the line from `from` (inclusive; the start or, `backward`, the end
    /// when `None`) in the given direction.
    pub fn find(&self, forms: &Forms, tl: &Timeline, from: Option<u64>, backward: bool) -> Option<u32> {
        tl.find_entry::<()>(&LINE_KINDS, from, backward, |_, e| Ok(self.matches(forms, e))).unwrap_or(None)
    }

    /// How many entries of `tl` (held in memory) are at the line.
    pub fn count(&self, forms: &Forms, tl: &Timeline) -> u64 {
        tl.entries().iter().filter(|e| self.matches(forms, e)).count() as u64
    }
}
