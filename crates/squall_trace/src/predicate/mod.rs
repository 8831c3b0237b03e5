//! Predicates over recorded values: the language of the agents' `calls --where` (API, `squall
//! query`, MCP) and of the web UI's custom power step (`/api/power_step?how=predicate`), read and
//! evaluated here, over [`Snap`]s: the text runs no code, neither the caller's nor the
//! program's.
//!
//! **Names.** Over a call ([`Subject::Call`], [`call_verdict`], [`calls_where`]): its
//! parameters, `ret` (what it returned; None if it raised or has not returned) and `raised`
//! (the exception's `Type: message` text as `exceptions::exception_text` words it, None if it
//! returned). Over an entry ([`Subject::Entry`], [`entry_verdict`]): `v` (its value as
//! recorded), `kind` (`'expr'`, `'bind'`, `'fn-return'`, `'fn-unwind'`, `'write'`), `name` (the
//! name bound or attribute written, else None) and `fn` (its function's qualified name). Only
//! the values a predicate reads ([`Predicate::reads`]) are built: arguments can be big.
//!
//! **The language**, Python's expression syntax: constants (numbers, strings, bytes, `True`,
//! `False`, `None`, list and tuple displays), comparisons (`== != < <= > >= in not in is is
//! not`, chained: `0 < x <= 10`), `and or not`, arithmetic (`+ - * / // %`, unary `-`),
//! attributes (`item.price`: a recorded object's field, or a dict's key, None when a whole dict
//! lacks it; no `_` names), items with constant keys (`d['k']`, `xs[0]`, `xs[-1]`), and
//! `len(x)`, `abs(x)`, `str(x)` (a string itself; an exception its message; anything else the
//! core printer's text, `crate::printer::pprint`), `type_name(x)` (the recorded type name).
//!
//! **Semantics.** As Python's over the values as recorded, with these rules:
//! - An order comparison of unlike values (`'a' < 1`, `None > 3`) is false, as `==` of them is;
//!   `!=` of them is true.
//! - What Python would raise (arithmetic on unlike values, a missing key or field, an index
//!   out of range, `len` of a number, `in` over a number, division by zero) makes the whole
//!   predicate false for that subject.
//! - `is`: None, True and False are themselves; two recorded objects are the same when their
//!   identities are; other values compare with `==`.
//! - `and`/`or` give True or False (not an operand); a recorded object is true.
//! - **Values the recording did not keep whole** are never taken for something they are not:
//!   a string or bytes cut by the budget (its prefix and length kept), a container cut (some
//!   items and its length kept), an object beyond the depth budget (its type and identity
//!   kept), an earlier state standing for an object not encoded at that moment, and a value a
//!   cut file did not save. What the kept part decides is decided (`len(xs)` of a cut list is
//!   its length; `'JP' in s` is true when its prefix holds `JP`; `xs == [1]` is false when `xs`
//!   had 50 items; `type_name(x)` and `x is None` of an object by identity); what depends on
//!   the missing part is **undecided**, and so is anything read through an earlier state (it
//!   may have changed since). `str(x)` of a value holding anything cut is undecided (its text
//!   would be partly squall's markers). `and`/`or` are three-valued (Kleene): a false part
//!   makes an `and` false, a true part an `or` true, whatever the undecided ones. An undecided
//!   predicate does not hold ([`Verdict::Undecided`] says why; front ends count them).
//!
//! **Why a hand-written parser.** The grammar is eight precedence levels of Python's
//! expressions (a recursive-descent function each, in `parse.rs`), and the errors must name
//! the Python construct a user wrote that the language lacks (`uses ListComp`, `uses Lambda`:
//! the `ast` node names the agents' messages always gave), quote the text and say where. A
//! combinator crate (`winnow`, `chumsky`) would need the same per-construct code to say that,
//! plus a mapping of its error type, for no less code.

mod eval;
mod parse;

use std::collections::BTreeSet;

use thiserror::Error;

use crate::exceptions::{exception_text, NOT_SAVED};
use crate::forms::Forms;
use crate::printer;
use crate::snapshot::Snap;
use crate::store::{ExpandBudget, ValueStore};
use crate::timeline::Timeline;
use crate::value::{ValRef, Value};
use crate::Kind;

use eval::Halt;
use parse::{Expr, ParseError};

/// What a predicate's names belong to, as its errors say it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subject {
    /// A call: its parameters, `ret`, `raised`.
    Call,
    /// An entry of a timeline: `v`, `kind`, `name`, `fn`.
    Entry,
}

impl Subject {
    fn word(self) -> &'static str {
        match self {
            Subject::Call => "call",
            Subject::Entry => "entry",
        }
    }

    fn examples(self) -> &'static str {
        match self {
            Subject::Call => "`weight == 10` or `ret > 50`",
            Subject::Entry => "`v > 3` or `len(v) == 0`",
        }
    }
}

/// A text that is not a predicate, or names what its subject has not. Each message quotes the
/// text (as Python's `repr` would) and says what to write.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum PredicateError {
    #[error("the predicate is empty: write a condition such as {examples}")]
    Empty { examples: &'static str },
    #[error("{quoted} is not an expression ({what}, at character {at}); write e.g. {examples}")]
    Syntax { quoted: String, what: String, at: usize, examples: &'static str },
    #[error(
        "{quoted} uses {node}, which predicates do not have; use comparisons, and/or/not, arithmetic, attributes, constant items and len/abs/str/type_name"
    )]
    Uses { quoted: String, node: &'static str },
    #[error("{quoted} reads attribute {attr}: names starting with '_' are not allowed")]
    UnderscoreAttr { quoted: String, attr: String },
    #[error("{quoted}: an item key must be a constant (`d['k']`, `xs[0]`, `xs[-1]`)")]
    KeyNotConstant { quoted: String },
    #[error("{quoted} calls something other than len(x), abs(x), str(x), type_name(x)")]
    BadCall { quoted: String },
    #[error("{quoted} names {name}, which this {subject} does not have; its names are {known}")]
    UnknownName { quoted: String, name: String, subject: &'static str, known: String },
}

/// Why a predicate could not be decided for a subject.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Undecided {
    /// It reads a part of a value the recording's budget cut.
    Cut,
    /// It reads an object only an earlier state of which was recorded (it may have changed).
    Earlier,
    /// It reads a value a recording cut short never saved.
    NotSaved,
    /// An integer beyond 128 bits.
    BigInt,
}

impl Undecided {
    /// Why, in words.
    pub fn text(self) -> &'static str {
        match self {
            Undecided::Cut => "it reads a part of a value squall's snapshot budget cut",
            Undecided::Earlier => {
                "it reads an object recorded only by an earlier state (beyond object_depth; it may have changed since)"
            }
            Undecided::NotSaved => "it reads a value the recording was cut short before saving",
            Undecided::BigInt => "it computes with an integer beyond 128 bits",
        }
    }
}

/// What a predicate says of one subject.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Holds,
    Fails,
    Undecided(Undecided),
}

/// A read predicate.
#[derive(Clone, Debug)]
pub struct Predicate {
    text: String,
    subject: Subject,
    expr: Expr,
    reads: BTreeSet<String>,
}

/// `text` as Python's `repr` quotes it.
fn quoted(text: &str) -> String {
    printer::preview(&Snap::Str(text.to_string()), usize::MAX)
}

fn names_read(e: &Expr, out: &mut BTreeSet<String>) {
    match e {
        Expr::Const(_) => {}
        Expr::Name(n) => {
            out.insert(n.clone());
        }
        Expr::Display(_, items) | Expr::And(items) | Expr::Or(items) => items.iter().for_each(|i| names_read(i, out)),
        Expr::Attr(x, _) | Expr::Item(x, _) | Expr::Call(_, x) | Expr::Not(x) | Expr::Neg(x) => names_read(x, out),
        Expr::Bin(_, a, b) => {
            names_read(a, out);
            names_read(b, out);
        }
        Expr::Compare(first, rest) => {
            names_read(first, out);
            rest.iter().for_each(|(_, x)| names_read(x, out));
        }
    }
}

impl Predicate {
    /// Reads `text` as a predicate over `subject`'s names.
    pub fn parse(text: &str, subject: Subject) -> Result<Predicate, PredicateError> {
        let examples = subject.examples();
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(PredicateError::Empty { examples });
        }
        let q = || quoted(text);
        let expr = parse::parse(trimmed).map_err(|e| match e {
            ParseError::Syntax { what, at } => PredicateError::Syntax { quoted: q(), what, at, examples },
            ParseError::Uses(node) => PredicateError::Uses { quoted: q(), node },
            ParseError::UnderscoreAttr(attr) => PredicateError::UnderscoreAttr { quoted: q(), attr: quoted(&attr) },
            ParseError::KeyNotConstant => PredicateError::KeyNotConstant { quoted: q() },
            ParseError::BadCall => PredicateError::BadCall { quoted: q() },
        })?;
        let mut reads = BTreeSet::new();
        names_read(&expr, &mut reads);
        Ok(Predicate { text: text.to_string(), subject, expr, reads })
    }

    /// The names it reads (a caller builds only those values).
    pub fn reads(&self) -> &BTreeSet<String> {
        &self.reads
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// What it says of a subject whose names are `names` (every name the subject has; those it
    /// does not read may hold anything). `Err`: it names one the subject has not.
    pub fn verdict(&self, names: &[(&str, Snap)]) -> Result<Verdict, PredicateError> {
        match eval::holds(&self.expr, names) {
            Ok(true) => Ok(Verdict::Holds),
            Ok(false) | Err(Halt::Fail) => Ok(Verdict::Fails),
            Err(Halt::Undecided(why)) => Ok(Verdict::Undecided(why)),
            Err(Halt::Unknown(name)) => {
                let mut known: Vec<&str> = names.iter().map(|(k, _)| *k).collect();
                known.sort_unstable();
                Err(PredicateError::UnknownName {
                    quoted: quoted(&self.text),
                    name: quoted(&name),
                    subject: self.subject.word(),
                    known: if known.is_empty() { "none".into() } else { known.join(", ") },
                })
            }
        }
    }
}

/// Whether the predicate reads `name`: a name it does not is given as None, unbuilt.
fn built(pred: &Predicate, name: &str, make: impl FnOnce() -> Snap) -> Snap {
    if pred.reads.contains(name) {
        make()
    } else {
        Snap::None
    }
}

/// What `raised` is for the exception value `v`: the traceback's last line.
fn raised_text(store: &ValueStore, v: Value) -> String {
    let r = match v {
        Value::Ref(r) => r,
        Value::Float(_) => ValRef::ABSENT,
    };
    match exception_text(Some(store), r, crate::exceptions::MESSAGE_MAX).line() {
        None => "<exception not recorded>".into(),
        Some(line) if line == NOT_SAVED => {
            "<exception not saved: the recording was cut short before it was written>".into()
        }
        Some(line) => line,
    }
}

/// The predicate over the call at `idx` of `tl` (whose values are `store`): its parameters by
/// name, `ret` and `raised`. A live timeline's writes must be synced first
/// (`crate::sync_writes`), as for any read of its values.
pub fn call_verdict(
    pred: &Predicate,
    tl: &Timeline,
    store: &ValueStore,
    forms: &Forms,
    idx: u32,
) -> Result<Verdict, PredicateError> {
    let Some(call) = tl.get(idx as usize).filter(|e| e.kind().is_call()) else { return Ok(Verdict::Fails) };
    let params: &[std::sync::Arc<str>] =
        if call.kind() == Kind::Resume { &[] } else { forms.form(call.id()).map_or(&[], |f| &f.params) };
    let args = tl.call_args(idx as usize, params.len());
    let mut names: Vec<(&str, Snap)> = params
        .iter()
        .zip(args.iter().map(Some).chain(std::iter::repeat(None)))
        .map(|(p, arg)| (&**p, built(pred, p, || arg.map_or(Snap::None, |&a| store.to_snap(a, ExpandBudget::FULL)))))
        .collect();
    let exit = call.ret_idx().and_then(|r| tl.get(r as usize));
    let raised = exit.filter(|x| x.kind() == Kind::Unwind);
    let ret = exit.filter(|x| x.kind() != Kind::Unwind);
    names
        .push(("ret", built(pred, "ret", || ret.map_or(Snap::None, |x| store.to_snap(x.value(), ExpandBudget::FULL)))));
    names.push((
        "raised",
        built(pred, "raised", || raised.map_or(Snap::None, |x| Snap::Str(raised_text(store, x.value())))),
    ));
    pred.verdict(&names)
}

/// The calls of `tl` a predicate was asked about: those it holds for, and those it could not
/// decide for (with why, the first time).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CallsWhere {
    pub holds: Vec<u32>,
    pub undecided: Vec<u32>,
    pub why: Option<Undecided>,
}

/// The calls (not resumptions) of the forms `forms_ok` selects, in order, that `pred` holds for
/// (every one without a predicate).
pub fn calls_where(
    pred: Option<&Predicate>,
    tl: &Timeline,
    store: &ValueStore,
    forms: &Forms,
    forms_ok: &[bool],
) -> Result<CallsWhere, PredicateError> {
    let mut out = CallsWhere::default();
    tl.find_fn_call(forms_ok, None, false, |idx| -> Result<bool, PredicateError> {
        match pred.map(|p| call_verdict(p, tl, store, forms, idx)).transpose()? {
            None | Some(Verdict::Holds) => out.holds.push(idx),
            Some(Verdict::Fails) => {}
            Some(Verdict::Undecided(why)) => {
                out.undecided.push(idx);
                out.why = out.why.or(Some(why));
            }
        }
        Ok(false)
    })?;
    Ok(out)
}

/// The predicate over entry `idx` of `tl`: `v` (its value), `kind`, `name` and `fn`. Call
/// entries have no value: `v` is None for them.
pub fn entry_verdict(
    pred: &Predicate,
    tl: &Timeline,
    store: &ValueStore,
    forms: &Forms,
    idx: u32,
) -> Result<Verdict, PredicateError> {
    let Some(e) = tl.get(idx as usize) else { return Ok(Verdict::Fails) };
    let (name, function) = match e.kind() {
        Kind::Unwind | Kind::Call | Kind::Resume => (None, forms.form(e.id()).map(|f| &*f.name)),
        _ => match forms.site(e.id()) {
            Some(s) => (s.symbol.as_deref(), forms.form(s.form).map(|f| &*f.name)),
            None => (None, None),
        },
    };
    let text = |t: Option<&str>| t.map_or(Snap::None, |t| Snap::Str(t.to_string()));
    let names = [
        (
            "v",
            built(pred, "v", || {
                if e.kind().is_call() {
                    Snap::None
                } else {
                    store.to_snap(e.value(), ExpandBudget::FULL)
                }
            }),
        ),
        ("kind", Snap::Str(e.kind().type_name().to_string())),
        ("name", text(name)),
        ("fn", text(function)),
    ];
    pred.verdict(&names)
}
