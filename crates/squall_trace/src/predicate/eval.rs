//! A read predicate evaluated over recorded values ([`Snap`]s), three-valued: a value the
//! recording did not keep whole makes what depends on it undecided ([`Halt::Undecided`]), never
//! true or false by what happened to be kept. See the module doc of `crate::predicate`.

use std::borrow::Cow;
use std::cmp::Ordering;

use super::parse::{BinOp, CmpOp, Expr, Func};
use super::Undecided;
use crate::printer;
use crate::snapshot::{SeqKind, Snap};

/// Why evaluation stopped before a truth value.
#[derive(Debug, PartialEq)]
pub enum Halt {
    /// The predicate names something the subject does not have.
    Unknown(String),
    /// What Python would raise (arithmetic on unlike values, a missing key, an index out of
    /// range, `len` of a number...): the predicate does not hold for this subject.
    Fail,
    /// The recording did not keep what the answer depends on.
    Undecided(Undecided),
}

type R<T> = Result<T, Halt>;

const CUT: Halt = Halt::Undecided(Undecided::Cut);

/// A value the recording holds without its content at this moment: by identity (beyond the
/// depth), by an earlier state, or not saved at all.
fn hidden(s: &Snap) -> Option<Undecided> {
    match s {
        Snap::Cut { .. } => Some(Undecided::Cut),
        Snap::Earlier { .. } => Some(Undecided::Earlier),
        Snap::Opaque { type_name, .. } if type_name == "<missing>" => Some(Undecided::NotSaved),
        _ => None,
    }
}

fn open(s: &Snap) -> R<&Snap> {
    match hidden(s) {
        Some(why) => Err(Halt::Undecided(why)),
        None => Ok(s),
    }
}

/// A value whose type alone says it is not a recorded object (which [`hidden`] ones are).
fn scalar(s: &Snap) -> bool {
    matches!(
        s,
        Snap::None
            | Snap::Bool(_)
            | Snap::Int(_)
            | Snap::BigInt(_)
            | Snap::Float(_)
            | Snap::Complex { .. }
            | Snap::Str(_)
            | Snap::StrCut { .. }
            | Snap::Bytes(_)
            | Snap::BytesCut { .. }
    )
}

/// Kleene's `and` over results: false wins over undecided, undecided over true.
fn all(results: impl IntoIterator<Item = R<bool>>) -> R<bool> {
    let mut undecided = None;
    for r in results {
        match r {
            Ok(true) => {}
            Ok(false) => return Ok(false),
            Err(Halt::Undecided(w)) => undecided = undecided.or(Some(w)),
            Err(other) => return Err(other),
        }
    }
    undecided.map_or(Ok(true), |w| Err(Halt::Undecided(w)))
}

/// Kleene's `or`: true wins over undecided, undecided over false.
fn any(results: impl IntoIterator<Item = R<bool>>) -> R<bool> {
    let mut undecided = None;
    for r in results {
        match r {
            Ok(false) => {}
            Ok(true) => return Ok(true),
            Err(Halt::Undecided(w)) => undecided = undecided.or(Some(w)),
            Err(other) => return Err(other),
        }
    }
    undecided.map_or(Ok(false), |w| Err(Halt::Undecided(w)))
}

#[derive(Clone, Copy, Debug)]
enum Num {
    I(i128),
    F(f64),
    C(f64, f64),
}

fn num(s: &Snap) -> Option<R<Num>> {
    Some(Ok(match s {
        Snap::Bool(b) => Num::I(i128::from(*b)),
        Snap::Int(i) => Num::I(i128::from(*i)),
        Snap::BigInt(d) => return Some(d.parse().map(Num::I).map_err(|_| Halt::Undecided(Undecided::BigInt))),
        Snap::Float(f) => Num::F(*f),
        Snap::Complex { re, im } => Num::C(*re, *im),
        _ => return None,
    }))
}

fn as_f(n: Num) -> f64 {
    match n {
        Num::I(i) => i as f64,
        Num::F(f) | Num::C(f, _) => f,
    }
}

fn int_snap(v: i128) -> Snap {
    i64::try_from(v).map_or_else(|_| Snap::BigInt(v.to_string()), Snap::Int)
}

fn num_snap(n: Num) -> Snap {
    match n {
        Num::I(i) => int_snap(i),
        Num::F(f) => Snap::Float(f),
        Num::C(re, im) => Snap::Complex { re, im },
    }
}

fn num_cmp(a: Num, b: Num) -> Option<Ordering> {
    match (a, b) {
        (Num::I(x), Num::I(y)) => Some(x.cmp(&y)),
        (Num::I(i), Num::F(f)) => int_float_cmp(i, f),
        (Num::F(f), Num::I(i)) => int_float_cmp(i, f).map(Ordering::reverse),
        (Num::F(x), Num::F(y)) => x.partial_cmp(&y),
        _ => None,
    }
}

/// An int against a float exactly (as Python compares them), not through a lossy cast.
fn int_float_cmp(i: i128, f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    if f.is_infinite() {
        return Some(if f > 0.0 { Ordering::Less } else { Ordering::Greater });
    }
    let whole = f.trunc();
    if whole.abs() < 1.6e38 {
        let w = whole as i128;
        return Some(i.cmp(&w).then(if f > whole {
            Ordering::Less
        } else if f < whole {
            Ordering::Greater
        } else {
            Ordering::Equal
        }));
    }
    Some(if f > 0.0 { Ordering::Less } else { Ordering::Greater })
}

fn num_eq(a: Num, b: Num) -> bool {
    match (a, b) {
        (Num::C(r1, i1), Num::C(r2, i2)) => r1 == r2 && i1 == i2,
        (Num::C(re, im), other) | (other, Num::C(re, im)) => {
            im == 0.0 && num_cmp(Num::F(re), other) == Some(Ordering::Equal)
        }
        _ => num_cmp(a, b) == Some(Ordering::Equal),
    }
}

/// Which sequences compare with which: a list with a list (its subclasses too, as Python's
/// `list.__eq__` does), a tuple with a tuple, a set with a set or frozenset; others only with
/// their own type.
fn family(kind: SeqKind, type_name: &str) -> &str {
    match kind {
        SeqKind::List => "list",
        SeqKind::Tuple => "tuple",
        SeqKind::Set | SeqKind::FrozenSet => "set",
        SeqKind::Other => type_name,
    }
}

fn chars(s: &str) -> u64 {
    s.chars().count() as u64
}

/// A whole text against one cut to `prefix` of `len` characters (or bytes).
fn cut_text_eq(whole: &[u8], whole_len: u64, prefix: &[u8], len: u64) -> R<bool> {
    if whole_len != len || !whole.starts_with(prefix) {
        return Ok(false);
    }
    Err(CUT)
}

fn two_cut_eq(p1: &[u8], l1: u64, p2: &[u8], l2: u64) -> R<bool> {
    if l1 != l2 || !(p1.starts_with(p2) || p2.starts_with(p1)) {
        return Ok(false);
    }
    Err(CUT)
}

/// `a == b` of two recorded values (or constants).
pub fn eq(a: &Snap, b: &Snap) -> R<bool> {
    if let Some(why) = hidden(a).or_else(|| hidden(b)) {
        // Its type is known: a scalar is never an object known by identity.
        let other = if hidden(a).is_some() { b } else { a };
        if scalar(other) {
            return Ok(false);
        }
        return Err(Halt::Undecided(why));
    }
    if let (Some(x), Some(y)) = (num(a), num(b)) {
        return Ok(num_eq(x?, y?));
    }
    use Snap::*;
    match (a, b) {
        (None, None) => Ok(true),
        (Str(x), Str(y)) => Ok(x == y),
        (Str(x), StrCut { prefix, len }) | (StrCut { prefix, len }, Str(x)) => {
            cut_text_eq(x.as_bytes(), chars(x), prefix.as_bytes(), *len)
        }
        (StrCut { prefix: p1, len: l1 }, StrCut { prefix: p2, len: l2 }) => {
            two_cut_eq(p1.as_bytes(), *l1, p2.as_bytes(), *l2)
        }
        (Bytes(x), Bytes(y)) => Ok(x == y),
        (Bytes(x), BytesCut { prefix, len }) | (BytesCut { prefix, len }, Bytes(x)) => {
            cut_text_eq(x, x.len() as u64, prefix, *len)
        }
        (BytesCut { prefix: p1, len: l1 }, BytesCut { prefix: p2, len: l2 }) => two_cut_eq(p1, *l1, p2, *l2),
        (
            Seq { kind: k1, type_name: t1, items: i1, len: l1, .. },
            Seq { kind: k2, type_name: t2, items: i2, len: l2, .. },
        ) => {
            if family(*k1, t1) != family(*k2, t2) || l1 != l2 {
                return Ok(false);
            }
            let cut2 = (i2.len() as u64) < *l2;
            let cut = (i1.len() as u64) < *l1 || cut2;
            if family(*k1, t1) == "set" {
                // An item not among the other's kept ones may be among its cut ones.
                all(i1
                    .iter()
                    .map(|x| any(i2.iter().map(|y| eq(x, y)).chain(cut2.then_some(Err(CUT)))))
                    .chain(cut.then_some(Err(CUT))))
            } else {
                all(i1.iter().zip(i2).map(|(x, y)| eq(x, y)).chain(cut.then_some(Err(CUT))))
            }
        }
        (Map { entries: e1, len: l1, .. }, Map { entries: e2, len: l2, .. }) => {
            if l1 != l2 {
                return Ok(false);
            }
            let cut2 = (e2.len() as u64) < *l2;
            let cut = (e1.len() as u64) < *l1 || cut2;
            all(e1
                .iter()
                .map(|(k, v)| match lookup(e2, k, cut2) {
                    Ok(w) => eq(v, w),
                    Err(Halt::Fail) => Ok(false),
                    Err(h) => Err(h),
                })
                .chain(cut.then_some(Err(CUT))))
        }
        (Object { type_name: t1, attrs: a1, .. }, Object { type_name: t2, attrs: a2, .. }) => {
            if t1 != t2 || a1.len() != a2.len() {
                return Ok(false);
            }
            all(a1.iter().map(|(k, v)| match a2.iter().find(|(k2, _)| k2 == k) {
                Some((_, w)) => eq(v, w),
                Option::None => Ok(false),
            }))
        }
        (Opaque { type_name: t1, id: i1, repr: r1 }, Opaque { type_name: t2, id: i2, repr: r2 }) => {
            Ok(if *i1 != 0 && *i2 != 0 { i1 == i2 } else { t1 == t2 && r1 == r2 })
        }
        _ => Ok(false),
    }
}

/// The value under key `key` among a mapping's `entries`; `cut`: the recording kept only some.
/// A key not there is `Fail` (Python's `KeyError`), or undecided when it may be among the cut.
fn lookup<'s>(entries: &'s [(Snap, Snap)], key: &Snap, cut: bool) -> R<&'s Snap> {
    let mut undecided = None;
    for (k, v) in entries {
        match eq(k, key) {
            Ok(true) => return Ok(v),
            Ok(false) => {}
            Err(Halt::Undecided(w)) => undecided = undecided.or(Some(w)),
            Err(other) => return Err(other),
        }
    }
    match (undecided, cut) {
        (Some(w), _) => Err(Halt::Undecided(w)),
        (None, true) => Err(CUT),
        (None, false) => Err(Halt::Fail),
    }
}

/// A whole text against one cut to `prefix`, in order; `None`: the cut part decides.
fn cut_text_cmp(whole: &[u8], prefix: &[u8]) -> Option<Ordering> {
    let n = whole.len().min(prefix.len());
    match whole[..n].cmp(&prefix[..n]) {
        Ordering::Equal if whole.len() <= prefix.len() => Some(Ordering::Less),
        Ordering::Equal => None,
        o => Some(o),
    }
}

/// `a < b` and the like: the order of two values, `None` when they have none (unlike values:
/// the comparison is false).
fn order(a: &Snap, b: &Snap) -> R<Option<Ordering>> {
    if let Some(why) = hidden(a).or_else(|| hidden(b)) {
        let other = if hidden(a).is_some() { b } else { a };
        return if scalar(other) { Ok(Option::None) } else { Err(Halt::Undecided(why)) };
    }
    if let (Some(x), Some(y)) = (num(a), num(b)) {
        return Ok(num_cmp(x?, y?));
    }
    use Snap::*;
    let cut = |o: Option<Ordering>| o.ok_or(CUT).map(Some);
    match (a, b) {
        (Str(x), Str(y)) => Ok(Some(x.cmp(y))),
        (Str(x), StrCut { prefix, .. }) => cut(cut_text_cmp(x.as_bytes(), prefix.as_bytes())),
        (StrCut { prefix, .. }, Str(x)) => cut(cut_text_cmp(x.as_bytes(), prefix.as_bytes()).map(Ordering::reverse)),
        (StrCut { prefix: p1, .. }, StrCut { prefix: p2, .. }) => {
            let n = p1.len().min(p2.len());
            cut(Some(p1.as_bytes()[..n].cmp(&p2.as_bytes()[..n])).filter(|o| o.is_ne()))
        }
        (Bytes(x), Bytes(y)) => Ok(Some(x.cmp(y))),
        (Bytes(x), BytesCut { prefix, .. }) => cut(cut_text_cmp(x, prefix)),
        (BytesCut { prefix, .. }, Bytes(x)) => cut(cut_text_cmp(x, prefix).map(Ordering::reverse)),
        (
            Seq { kind: k1, type_name: t1, items: i1, len: l1, .. },
            Seq { kind: k2, type_name: t2, items: i2, len: l2, .. },
        ) if family(*k1, t1) == family(*k2, t2) && family(*k1, t1) != "set" => {
            // Python's order: the first items that differ, else the lengths.
            for (x, y) in i1.iter().zip(i2) {
                if !eq(x, y)? {
                    return order(x, y);
                }
            }
            let (whole1, whole2) = (i1.len() as u64 == *l1, i2.len() as u64 == *l2);
            let compared = i1.len().min(i2.len());
            if whole1 && whole2 {
                Ok(Some(l1.cmp(l2)))
            } else if whole1 && compared == i1.len() && l1 < l2 {
                Ok(Some(Ordering::Less))
            } else if whole2 && compared == i2.len() && l2 < l1 {
                Ok(Some(Ordering::Greater))
            } else {
                Err(CUT)
            }
        }
        _ => Ok(Option::None),
    }
}

/// `needle in container`. A container of no kind `in` reads is `Fail` (Python's `TypeError`).
fn contains(container: &Snap, needle: &Snap) -> R<bool> {
    let container = open(container)?;
    use Snap::*;
    match (container, needle) {
        (Str(h), Str(n)) => Ok(h.contains(n.as_str())),
        (Str(h), StrCut { prefix, .. }) => {
            if h.contains(prefix.as_str()) {
                Err(CUT)
            } else {
                Ok(false)
            }
        }
        (StrCut { prefix, .. }, Str(n)) => {
            if prefix.contains(n.as_str()) {
                Ok(true)
            } else {
                Err(CUT)
            }
        }
        (StrCut { .. }, StrCut { .. }) => Err(CUT),
        (Str(_) | StrCut { .. }, n) if hidden(n).is_some() => Ok(false),
        (Bytes(h), Bytes(n)) => Ok(n.is_empty() || h.windows(n.len()).any(|w| w == n.as_slice())),
        (BytesCut { prefix, .. }, Bytes(n)) => {
            if n.is_empty() || prefix.windows(n.len()).any(|w| w == n.as_slice()) {
                Ok(true)
            } else {
                Err(CUT)
            }
        }
        (Bytes(_) | BytesCut { .. }, BytesCut { .. }) => Err(CUT),
        (Seq { items, len, .. }, n) => {
            any(items.iter().map(|x| eq(x, n)).chain(((items.len() as u64) < *len).then_some(Err(CUT))))
        }
        (Map { entries, len, .. }, n) => match lookup(entries, n, (entries.len() as u64) < *len) {
            Ok(_) => Ok(true),
            Err(Halt::Fail) => Ok(false),
            Err(h) => Err(h),
        },
        _ => Err(Halt::Fail),
    }
}

/// `a is b`: None, True and False are themselves; two recorded objects with an identity are the
/// same object when their identities are; other values are compared with `==`.
fn is(a: &Snap, b: &Snap) -> R<bool> {
    let singleton = |s: &Snap| matches!(s, Snap::None | Snap::Bool(_));
    if singleton(a) || singleton(b) {
        return Ok(a == b);
    }
    match (a.id(), b.id()) {
        (0, 0) => eq(a, b),
        (x, y) => Ok(x == y),
    }
}

fn compare(op: CmpOp, a: &Snap, b: &Snap) -> R<bool> {
    let ordered = |want: fn(Ordering) -> bool| order(a, b).map(|o| o.is_some_and(want));
    match op {
        CmpOp::Eq => eq(a, b),
        CmpOp::Ne => eq(a, b).map(|x| !x),
        CmpOp::Lt => ordered(Ordering::is_lt),
        CmpOp::Le => ordered(Ordering::is_le),
        CmpOp::Gt => ordered(Ordering::is_gt),
        CmpOp::Ge => ordered(Ordering::is_ge),
        CmpOp::In => contains(b, a),
        CmpOp::NotIn => contains(b, a).map(|x| !x),
        CmpOp::Is => is(a, b),
        CmpOp::IsNot => is(a, b).map(|x| !x),
    }
}

/// Python's truth of a value. A recorded object is true (as an object without `__bool__` or
/// `__len__`: the recording does not run the program's).
fn truth(s: &Snap) -> R<bool> {
    Ok(match open(s)? {
        Snap::None => false,
        Snap::Bool(b) => *b,
        Snap::Int(i) => *i != 0,
        Snap::Float(f) => *f != 0.0,
        Snap::Complex { re, im } => *re != 0.0 || *im != 0.0,
        Snap::Str(s) => !s.is_empty(),
        Snap::Bytes(b) => !b.is_empty(),
        Snap::Seq { len, .. } | Snap::Map { len, .. } => *len > 0,
        _ => true,
    })
}

fn arith(op: BinOp, a: &Snap, b: &Snap) -> R<Snap> {
    if let Some(why) = hidden(a).or_else(|| hidden(b)) {
        return Err(Halt::Undecided(why));
    }
    if let (Some(x), Some(y)) = (num(a), num(b)) {
        return num_arith(op, x?, y?).map(num_snap);
    }
    use Snap::*;
    match (op, a, b) {
        (BinOp::Add, Str(x), Str(y)) => Ok(Str(format!("{x}{y}"))),
        (BinOp::Add, Str(_) | StrCut { .. }, Str(_) | StrCut { .. }) => Err(CUT),
        (BinOp::Add, Bytes(x), Bytes(y)) => Ok(Bytes([x.as_slice(), y].concat())),
        (BinOp::Add, Bytes(_) | BytesCut { .. }, Bytes(_) | BytesCut { .. }) => Err(CUT),
        _ => Err(Halt::Fail),
    }
}

fn num_arith(op: BinOp, a: Num, b: Num) -> R<Num> {
    let big = Halt::Undecided(Undecided::BigInt);
    match (a, b) {
        (Num::I(x), Num::I(y)) => {
            let r = match op {
                BinOp::Add => x.checked_add(y),
                BinOp::Sub => x.checked_sub(y),
                BinOp::Mul => x.checked_mul(y),
                BinOp::Div if y == 0 => return Err(Halt::Fail),
                BinOp::Div => return Ok(Num::F(x as f64 / y as f64)),
                _ if y == 0 => return Err(Halt::Fail),
                BinOp::FloorDiv => {
                    let q = x.checked_div(y).ok_or(Halt::Fail)?;
                    Some(if x % y != 0 && ((x < 0) != (y < 0)) { q - 1 } else { q })
                }
                BinOp::Mod => {
                    let r = x.checked_rem(y).ok_or(Halt::Fail)?;
                    Some(if r != 0 && ((r < 0) != (y < 0)) { r + y } else { r })
                }
            };
            r.map(Num::I).ok_or(big)
        }
        (Num::C(..), _) | (_, Num::C(..)) => {
            let (ar, ai) = complex(a);
            let (br, bi) = complex(b);
            match op {
                BinOp::Add => Ok(Num::C(ar + br, ai + bi)),
                BinOp::Sub => Ok(Num::C(ar - br, ai - bi)),
                BinOp::Mul => Ok(Num::C(ar * br - ai * bi, ar * bi + ai * br)),
                BinOp::Div => {
                    let d = br * br + bi * bi;
                    if d == 0.0 {
                        return Err(Halt::Fail);
                    }
                    Ok(Num::C((ar * br + ai * bi) / d, (ai * br - ar * bi) / d))
                }
                BinOp::FloorDiv | BinOp::Mod => Err(Halt::Fail),
            }
        }
        _ => {
            let (x, y) = (as_f(a), as_f(b));
            Ok(Num::F(match op {
                BinOp::Add => x + y,
                BinOp::Sub => x - y,
                BinOp::Mul => x * y,
                _ if y == 0.0 => return Err(Halt::Fail),
                BinOp::Div => x / y,
                BinOp::FloorDiv => (x / y).floor(),
                BinOp::Mod => {
                    let r = x % y;
                    if r != 0.0 && ((r < 0.0) != (y < 0.0)) {
                        r + y
                    } else {
                        r
                    }
                }
            }))
        }
    }
}

fn complex(n: Num) -> (f64, f64) {
    match n {
        Num::C(re, im) => (re, im),
        other => (as_f(other), 0.0),
    }
}

/// `str(x)` as Python gives it for recorded values: a string itself; an exception its message
/// (`__str__` recorded, or its `args`, as `exceptions::exception_text` words it); anything else
/// the core printer's text. A value holding anything cut or earlier is undecided: its text
/// would be partly squall's markers.
fn str_of(s: &Snap) -> R<Snap> {
    match open(s)? {
        Snap::Str(_) | Snap::StrCut { .. } => return Ok(s.clone()),
        Snap::Object { attrs, type_name, repr, .. } => {
            let attr = |name: &str| attrs.iter().find(|(k, _)| k == name).map(|(_, v)| v);
            match (attr("__str__"), attr("args")) {
                (Some(text @ (Snap::Str(_) | Snap::StrCut { .. })), _) => return Ok(text.clone()),
                (_, Some(args @ Snap::Seq { kind: SeqKind::Tuple, items, len, .. })) => {
                    return match (items.as_slice(), len) {
                        (_, 0) => Ok(Snap::Str(String::new())),
                        ([one], 1) if type_name.ends_with("KeyError") => {
                            whole(one).map(|_| Snap::Str(printer::pprint(one, usize::MAX, usize::MAX)))
                        }
                        ([one], 1) => str_of(one),
                        _ => whole(args).map(|_| Snap::Str(printer::pprint(args, usize::MAX, usize::MAX))),
                    }
                }
                _ if attrs.is_empty() => return Ok(Snap::Str(repr.clone())),
                _ => {}
            }
        }
        _ => {}
    }
    whole(s)?;
    Ok(Snap::Str(printer::pprint(s, usize::MAX, usize::MAX)))
}

/// Undecided when any part of `s` was cut or is an earlier state.
fn whole(s: &Snap) -> R<()> {
    open(s)?;
    match s {
        Snap::StrCut { .. } | Snap::BytesCut { .. } => Err(CUT),
        Snap::Seq { items, len, .. } => {
            if (items.len() as u64) < *len {
                return Err(CUT);
            }
            items.iter().try_for_each(whole)
        }
        Snap::Map { entries, len, .. } => {
            if (entries.len() as u64) < *len {
                return Err(CUT);
            }
            entries.iter().try_for_each(|(k, v)| whole(k).and_then(|_| whole(v)))
        }
        Snap::Object { attrs, .. } => attrs.iter().try_for_each(|(_, v)| whole(v)),
        _ => Ok(()),
    }
}

fn call(func: Func, s: &Snap) -> R<Snap> {
    Ok(match func {
        Func::TypeName => Snap::Str(s.type_name().to_string()),
        Func::Str => str_of(s)?,
        Func::Len => match open(s)? {
            Snap::Str(x) => Snap::Int(chars(x) as i64),
            Snap::Bytes(b) => Snap::Int(b.len() as i64),
            Snap::StrCut { len, .. } | Snap::BytesCut { len, .. } | Snap::Seq { len, .. } | Snap::Map { len, .. } => {
                int_snap(i128::from(*len))
            }
            _ => return Err(Halt::Fail),
        },
        Func::Abs => match num(s) {
            Some(n) => match n? {
                Num::I(i) => int_snap(i.checked_abs().ok_or(Halt::Undecided(Undecided::BigInt))?),
                Num::F(f) => Snap::Float(f.abs()),
                Num::C(re, im) => Snap::Float(re.hypot(im)),
            },
            None => {
                open(s)?;
                return Err(Halt::Fail);
            }
        },
    })
}

/// What an attribute or item read picked: part of the value, or a value made for it.
enum Picked<'s> {
    Part(&'s Snap),
    Made(Snap),
}

/// `s.name`: a recorded object's field, or a dict's key (`None` when a whole dict lacks it, as
/// `dict.get`).
fn attr<'s>(s: &'s Snap, name: &str) -> R<Picked<'s>> {
    match open(s)? {
        Snap::Object { attrs, .. } => {
            attrs.iter().find(|(k, _)| k == name).map(|(_, v)| Picked::Part(v)).ok_or(Halt::Fail)
        }
        Snap::Map { entries, len, .. } => {
            match lookup(entries, &Snap::Str(name.to_string()), (entries.len() as u64) < *len) {
                Ok(v) => Ok(Picked::Part(v)),
                Err(Halt::Fail) => Ok(Picked::Made(Snap::None)),
                Err(h) => Err(h),
            }
        }
        _ => Err(Halt::Fail),
    }
}

/// Position `i` (negative: from the end) of a sequence of `len` items of which `kept` were
/// recorded.
fn position(key: &Snap, len: u64, kept: usize) -> R<usize> {
    let i = match key {
        Snap::Int(i) => i128::from(*i),
        Snap::Bool(b) => i128::from(*b),
        _ => return Err(Halt::Fail),
    };
    let i = if i < 0 { i + i128::from(len) } else { i };
    if i < 0 || i >= i128::from(len) {
        return Err(Halt::Fail);
    }
    let i = usize::try_from(i).map_err(|_| CUT)?;
    if i >= kept {
        return Err(CUT);
    }
    Ok(i)
}

/// `s[key]`.
fn item<'s>(s: &'s Snap, key: &Snap) -> R<Picked<'s>> {
    match open(s)? {
        Snap::Seq { kind: SeqKind::Set | SeqKind::FrozenSet, .. } => Err(Halt::Fail),
        Snap::Seq { items, len, .. } => Ok(Picked::Part(&items[position(key, *len, items.len())?])),
        Snap::Map { entries, len, .. } => lookup(entries, key, (entries.len() as u64) < *len).map(Picked::Part),
        Snap::Str(x) => {
            let n = chars(x);
            let i = position(key, n, n as usize)?;
            Ok(Picked::Made(Snap::Str(x.chars().nth(i).map(String::from).unwrap_or_default())))
        }
        Snap::StrCut { prefix, len } => {
            let i = position(key, *len, prefix.chars().count())?;
            Ok(Picked::Made(Snap::Str(prefix.chars().nth(i).map(String::from).unwrap_or_default())))
        }
        Snap::Bytes(b) => Ok(Picked::Made(Snap::Int(i64::from(b[position(key, b.len() as u64, b.len())?])))),
        Snap::BytesCut { prefix, len } => {
            Ok(Picked::Made(Snap::Int(i64::from(prefix[position(key, *len, prefix.len())?]))))
        }
        _ => Err(Halt::Fail),
    }
}

fn pick<'a>(base: Cow<'a, Snap>, f: impl for<'s> Fn(&'s Snap) -> R<Picked<'s>>) -> R<Cow<'a, Snap>> {
    Ok(match base {
        Cow::Borrowed(b) => match f(b)? {
            Picked::Part(p) => Cow::Borrowed(p),
            Picked::Made(m) => Cow::Owned(m),
        },
        Cow::Owned(o) => Cow::Owned(match f(&o)? {
            Picked::Part(p) => p.clone(),
            Picked::Made(m) => m,
        }),
    })
}

/// The subject's names: each name with its value (a name the predicate does not read may hold
/// `Snap::None`: it is never looked at).
pub type Names<'a> = [(&'a str, Snap)];

/// The value of `e` over `names`.
pub fn value<'a>(e: &Expr, names: &'a Names<'_>) -> R<Cow<'a, Snap>> {
    Ok(match e {
        Expr::Const(c) => Cow::Owned(c.clone()),
        Expr::Name(n) => match names.iter().find(|(k, _)| k == n) {
            Some((_, v)) => Cow::Borrowed(v),
            None => return Err(Halt::Unknown(n.clone())),
        },
        Expr::Display(kind, items) => {
            let items = items.iter().map(|i| value(i, names).map(Cow::into_owned)).collect::<R<Vec<_>>>()?;
            let type_name = if *kind == SeqKind::List { "list" } else { "tuple" };
            Cow::Owned(Snap::Seq { kind: *kind, type_name: type_name.into(), id: 0, len: items.len() as u64, items })
        }
        Expr::Attr(base, name) => pick(value(base, names)?, |s| attr(s, name))?,
        Expr::Item(base, key) => pick(value(base, names)?, |s| item(s, key))?,
        Expr::Call(func, arg) => Cow::Owned(call(*func, &*value(arg, names)?)?),
        Expr::Neg(x) => {
            let v = value(x, names)?;
            match num(&v) {
                Some(n) => Cow::Owned(num_snap(num_arith(BinOp::Sub, Num::I(0), n?)?)),
                None => {
                    open(&v)?;
                    return Err(Halt::Fail);
                }
            }
        }
        Expr::Bin(op, a, b) => Cow::Owned(arith(*op, &*value(a, names)?, &*value(b, names)?)?),
        Expr::Not(_) | Expr::And(_) | Expr::Or(_) | Expr::Compare(..) => Cow::Owned(Snap::Bool(holds(e, names)?)),
    })
}

/// Whether `e` holds over `names`: Python's truth of its value, with `and`/`or` three-valued
/// (a false part makes an `and` false, a true part an `or` true, whatever the undecided ones).
pub fn holds(e: &Expr, names: &Names<'_>) -> R<bool> {
    match e {
        Expr::Not(x) => holds(x, names).map(|b| !b),
        Expr::And(parts) => all(parts.iter().map(|p| holds(p, names))),
        Expr::Or(parts) => any(parts.iter().map(|p| holds(p, names))),
        Expr::Compare(first, rest) => {
            let mut left = value(first, names)?;
            let mut results = Vec::with_capacity(rest.len());
            for (op, right) in rest {
                let right = value(right, names)?;
                let r = compare(*op, &left, &right);
                let stop = matches!(r, Ok(false));
                results.push(r);
                if stop {
                    break;
                }
                left = right;
            }
            all(results)
        }
        other => truth(&*value(other, names)?),
    }
}
