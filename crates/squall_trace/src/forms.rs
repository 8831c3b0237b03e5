//! Forms (instrumented functions) and sites (places in a form's source where events happen).

use std::sync::Arc;

use crate::entry::MAX_ID;
use crate::error::TraceError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum FormKind {
    Function = 0,
    Generator = 1,
    Coroutine = 2,
    AsyncGenerator = 3,
    Lambda = 4,
    Module = 5,
}

impl FormKind {
    /// Every form kind, in code order.
    pub const ALL: [FormKind; 6] = [
        FormKind::Function,
        FormKind::Generator,
        FormKind::Coroutine,
        FormKind::AsyncGenerator,
        FormKind::Lambda,
        FormKind::Module,
    ];

    /// The name of its constant in `squall._engine` (`FORM_` + this).
    pub fn const_name(self) -> &'static str {
        match self {
            FormKind::Function => "FUNCTION",
            FormKind::Generator => "GENERATOR",
            FormKind::Coroutine => "COROUTINE",
            FormKind::AsyncGenerator => "ASYNC_GENERATOR",
            FormKind::Lambda => "LAMBDA",
            FormKind::Module => "MODULE",
        }
    }

    pub fn from_code(code: i64) -> Result<FormKind, TraceError> {
        Ok(match code {
            0 => FormKind::Function,
            1 => FormKind::Generator,
            2 => FormKind::Coroutine,
            3 => FormKind::AsyncGenerator,
            4 => FormKind::Lambda,
            5 => FormKind::Module,
            other => return Err(TraceError::BadKind { what: "form", code: other }),
        })
    }

    /// Frames of resumable forms suspend and resume; each segment is its own fn-call.
    pub fn is_resumable(self) -> bool {
        matches!(self, FormKind::Generator | FormKind::Coroutine | FormKind::AsyncGenerator)
    }

    pub fn name(self) -> &'static str {
        match self {
            FormKind::Function => "function",
            FormKind::Generator => "generator",
            FormKind::Coroutine => "coroutine",
            FormKind::AsyncGenerator => "async generator",
            FormKind::Lambda => "lambda",
            FormKind::Module => "module",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum SiteKind {
    Return = 0,
    Yield = 1,
    Await = 2,
    Expr = 3,
    Bind = 4,
    /// An attribute or item write (its symbol: the attribute's name; none for items).
    Write = 5,
}

impl SiteKind {
    /// Every site kind, in code order.
    pub const ALL: [SiteKind; 6] =
        [SiteKind::Return, SiteKind::Yield, SiteKind::Await, SiteKind::Expr, SiteKind::Bind, SiteKind::Write];

    /// The name of its constant in `squall._engine` (`SITE_` + this).
    pub fn const_name(self) -> &'static str {
        match self {
            SiteKind::Return => "RETURN",
            SiteKind::Yield => "YIELD",
            SiteKind::Await => "AWAIT",
            SiteKind::Expr => "EXPR",
            SiteKind::Bind => "BIND",
            SiteKind::Write => "WRITE",
        }
    }

    pub fn from_code(code: i64) -> Result<SiteKind, TraceError> {
        Ok(match code {
            0 => SiteKind::Return,
            1 => SiteKind::Yield,
            2 => SiteKind::Await,
            3 => SiteKind::Expr,
            4 => SiteKind::Bind,
            5 => SiteKind::Write,
            other => return Err(TraceError::BadKind { what: "site", code: other }),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            SiteKind::Return => "return",
            SiteKind::Yield => "yield",
            SiteKind::Await => "await",
            SiteKind::Expr => "expr",
            SiteKind::Bind => "bind",
            SiteKind::Write => "write",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Form {
    /// The module, FlowStorm's `fn-ns`.
    pub ns: Arc<str>,
    /// The qualified name, FlowStorm's `fn-name`.
    pub name: Arc<str>,
    pub file: Arc<str>,
    pub line: u32,
    pub params: Vec<Arc<str>>,
    pub kind: FormKind,
}

/// A source range: 1-based lines, 0-based UTF-8 columns, as Python's `ast` gives them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Coord {
    pub line: u32,
    pub col: u32,
    pub end_line: u32,
    pub end_col: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    pub form: u32,
    pub kind: SiteKind,
    pub coord: Coord,
    /// The bound name, for binding sites.
    pub symbol: Option<Arc<str>>,
}

/// What the value a site records was computed from, as the rewriter saw it: optional data (sites
/// the rewriter said nothing of, and recordings made before it, have none). `origin` walks back
/// through it: the sub-expressions recorded inside `span`, the bindings of `names`, the writes
/// to `attr` of the object read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteReads {
    /// The source range of the expression whose value the site records (for a binding: the
    /// right-hand side; for a return: the returned expression).
    pub span: Coord,
    /// The local names that expression reads itself (loads of locals are never recorded as
    /// expressions: their bindings are), in source order, each once.
    pub names: Vec<Arc<str>>,
    /// The attribute the expression reads, when it is an attribute load (`obj.attr`).
    pub attr: Option<Arc<str>>,
}

/// What the recorder compiled for one source file: its size and the SHA-256 of exactly those
/// bytes. Lets readers of a recording tell the file on disk now from the one that was recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFile {
    pub file: Arc<str>,
    pub size: u64,
    pub sha256: [u8; 32],
}

/// Every form and site registered so far. Ids are indexes and are never reused.
#[derive(Default, Debug)]
pub struct Forms {
    forms: Vec<Form>,
    sites: Vec<Site>,
    /// Per site: its form id, with `RESUMABLE_BIT` set if the form is resumable. Read on every
    /// exit event, so kept apart from the wide `Site`/`Form` records.
    site_owner: Vec<u32>,
    /// Source files compiled, in the order noted (append-only; a file compiled again with other
    /// contents appears again).
    sources: Vec<SourceFile>,
    /// `SiteReads` of the sites that have them, by increasing site id.
    reads: Vec<(u32, SiteReads)>,
}

const RESUMABLE_BIT: u32 = 1 << 31;

impl Forms {
    pub const fn new() -> Forms {
        Forms { forms: Vec::new(), sites: Vec::new(), site_owner: Vec::new(), sources: Vec::new(), reads: Vec::new() }
    }

    /// Notes a compiled source file (nothing if the same file with the same contents is known).
    pub fn add_source(&mut self, src: SourceFile) {
        if !self.sources.contains(&src) {
            self.sources.push(src);
        }
    }

    /// Every source file noted, oldest first.
    pub fn sources(&self) -> &[SourceFile] {
        &self.sources
    }

    /// The versions of `file` that were compiled, oldest first (none: not noted, e.g. a recording
    /// older than source hashes).
    pub fn source_versions<'a>(&'a self, file: &'a str) -> impl Iterator<Item = &'a SourceFile> + 'a {
        self.sources.iter().filter(move |s| &*s.file == file)
    }

    pub fn add_form(&mut self, form: Form) -> Result<u32, TraceError> {
        let id = self.forms.len() as u32;
        if id > MAX_ID {
            return Err(TraceError::TooManyIds { what: "forms" });
        }
        self.forms.push(form);
        Ok(id)
    }

    pub fn add_site(&mut self, site: Site) -> Result<u32, TraceError> {
        if site.form as usize >= self.forms.len() {
            return Err(TraceError::UnknownForm(site.form));
        }
        let id = self.sites.len() as u32;
        if id > MAX_ID {
            return Err(TraceError::TooManyIds { what: "sites" });
        }
        let resumable = self.forms[site.form as usize].kind.is_resumable();
        self.site_owner.push(site.form | if resumable { RESUMABLE_BIT } else { 0 });
        self.sites.push(site);
        Ok(id)
    }

    /// Notes what site `site`'s value is computed from (see `SiteReads`); a second note for the
    /// same site replaces the first. Unknown sites are refused.
    pub fn set_site_reads(&mut self, site: u32, reads: SiteReads) -> Result<(), TraceError> {
        if site as usize >= self.sites.len() {
            return Err(TraceError::UnknownSite(site));
        }
        match self.reads.binary_search_by_key(&site, |r| r.0) {
            Ok(i) => self.reads[i].1 = reads,
            Err(i) => self.reads.insert(i, (site, reads)),
        }
        Ok(())
    }

    /// What site `site`'s value is computed from, if the rewriter said.
    pub fn site_reads(&self, site: u32) -> Option<&SiteReads> {
        self.reads.binary_search_by_key(&site, |r| r.0).ok().map(|i| &self.reads[i].1)
    }

    /// The form a site belongs to, and whether that form is resumable.
    #[inline]
    pub fn site_owner(&self, site: u32) -> Option<(u32, bool)> {
        self.site_owner.get(site as usize).map(|&w| (w & !RESUMABLE_BIT, w & RESUMABLE_BIT != 0))
    }

    pub fn form(&self, id: u32) -> Option<&Form> {
        self.forms.get(id as usize)
    }

    pub fn site(&self, id: u32) -> Option<&Site> {
        self.sites.get(id as usize)
    }

    pub fn forms(&self) -> &[Form] {
        &self.forms
    }

    pub fn sites(&self) -> &[Site] {
        &self.sites
    }

    /// Form ids whose module and name match the given filters (`None` matches anything).
    pub fn matching(&self, ns: Option<&str>, name: Option<&str>) -> Vec<bool> {
        self.forms.iter().map(|f| ns.is_none_or(|n| &*f.ns == n) && name.is_none_or(|n| &*f.name == n)).collect()
    }
}
