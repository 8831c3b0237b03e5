//! squall's own printer: short, Python-like text previews of recorded values (listings,
//! exports, the reprs of recorded objects). Never the program's `__repr__`: an object is shown
//! by its type, identity and recorded fields, `Item#12(name='a', price=3)`.

use std::fmt::Write;

use crate::snapshot::{SeqKind, Snap};
use crate::store::{ExpandBudget, ValueStore};
use crate::value::{Decoded, Value};

/// A Python-repr-like preview of `snap`, at most `max` bytes (longer ones end in `…`).
/// Truncated containers (fewer items than `len`) end in `...`.
pub fn preview(snap: &Snap, max: usize) -> String {
    let mut s = String::new();
    write_snap(&mut s, snap, max.saturating_add(1));
    cut(s, max)
}

/// A preview of a value reference: inline ints, floats and constants directly, slots through
/// `values`.
pub fn preview_ref(v: impl Into<Value>, values: &ValueStore, max: usize) -> String {
    let v = v.into();
    match v.decode() {
        Decoded::Int(i) => i.to_string(),
        Decoded::Float(f) => cut(float_repr(f), max),
        Decoded::None => "None".into(),
        Decoded::Bool(true) => "True".into(),
        Decoded::Bool(false) => "False".into(),
        Decoded::Absent => "<absent>".into(),
        Decoded::Slot(i) if (i as usize) < values.len() => {
            // A preview shows little: expand only what it can show.
            let nodes = max.clamp(8, 4096);
            preview(&values.to_snap(v, ExpandBudget { max_depth: 6, max_nodes: nodes }), max)
        }
        Decoded::Slot(i) => format!("<value #{i} not recorded>"),
    }
}

/// The repr of a recorded object: `Type#id(attr=value, ...)` (the type's last dotted part), at
/// most about 200 characters (longer ones end in `…`).
pub fn object_repr(type_name: &str, id: u64, attrs: &[(String, Snap)]) -> String {
    const MAX: usize = 200;
    let mut out = String::new();
    short_type(&mut out, type_name, id);
    out.push('(');
    for (i, (k, v)) in attrs.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        if out.len() > MAX {
            break;
        }
        out.push_str(k);
        out.push('=');
        write_snap(&mut out, v, MAX + 1);
    }
    out.push(')');
    cut(out, MAX)
}

/// The repr of an object known by its name only: `<function f#3>`, `<class 'mod.C'>`, `<Lock#9>`.
pub fn opaque_repr(type_name: &str, id: u64, text: &str) -> String {
    match (type_name, text.is_empty()) {
        ("type", false) => format!("<class '{text}'>"),
        ("module", false) => format!("<module '{text}'>"),
        (_, false) => {
            let mut out = format!("<{} ", last_part(type_name));
            out.push_str(text);
            if id != 0 {
                let _ = write!(out, "#{id}");
            }
            out.push('>');
            out
        }
        (_, true) => {
            let mut out = String::from("<");
            short_type(&mut out, type_name, id);
            out.push('>');
            out
        }
    }
}

fn last_part(type_name: &str) -> &str {
    type_name.rsplit('.').next().unwrap_or(type_name)
}

fn short_type(out: &mut String, type_name: &str, id: u64) {
    out.push_str(last_part(type_name));
    if id != 0 {
        let _ = write!(out, "#{id}");
    }
}

/// `s` if it is at most `max` bytes long, else its first `max - 1` bytes or fewer (whole
/// characters) and `…`. The writers stop once past their budget (`max + 1` bytes), so whatever
/// they left out is always marked.
fn cut(mut s: String, max: usize) -> String {
    if s.len() <= max {
        return s;
    }
    let mut end = max.saturating_sub(1);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    s.push('…');
    s
}

/// A float as Python's `repr` prints it.
pub fn float_repr(f: f64) -> String {
    let mut s = String::new();
    float(&mut s, f);
    s
}

fn float(out: &mut String, f: f64) {
    if f.is_nan() {
        out.push_str("nan");
    } else if f.is_infinite() {
        out.push_str(if f > 0.0 { "inf" } else { "-inf" });
    } else {
        let _ = write!(out, "{f:?}");
    }
}

/// `s` quoted as Python's `repr` quotes it: in `'`, or in `"` when it holds a `'` and no `"`.
fn py_str(out: &mut String, s: &str, budget: usize) {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    out.push(quote);
    for c in s.chars() {
        if out.len() > budget {
            break;
        }
        match c {
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
}

/// The opening and closing text of a sequence: Python's literal for the builtin types, else
/// `type_name(` around one. `one`: a one-item tuple shown whole (`(1,)`); `empty`: no item shown.
fn seq_brackets(kind: SeqKind, type_name: &str, one: bool, empty: bool) -> (String, String) {
    match kind {
        SeqKind::List if type_name == "list" => ("[".to_string(), "]".to_string()),
        SeqKind::Tuple if type_name == "tuple" => ("(".into(), if one { ",)".into() } else { ")".into() }),
        SeqKind::Set if type_name == "set" && !empty => ("{".into(), "}".into()),
        SeqKind::FrozenSet if type_name == "frozenset" => ("frozenset({".into(), "})".into()),
        SeqKind::List => (format!("{type_name}(["), "])".into()),
        SeqKind::Set | SeqKind::FrozenSet => (format!("{type_name}({{"), "})".into()),
        SeqKind::Tuple => (format!("{type_name}(("), "))".into()),
        // `deque` and the like: Python's own repr, `deque([1, 2])`.
        SeqKind::Other => (format!("{type_name}(["), "])".into()),
    }
}

/// Characters of a pretty print at most (longer ones end in `…`).
const PPRINT_MAX: usize = 200_000;

/// A Python-like print of `snap` bounded like FlowStorm's `val-pprint` (Clojure's
/// `*print-level*` / `*print-length*`): a container nested `print_level` deep or deeper prints
/// as `[...]`, at most `print_length` items of each container print, then `...`. Objects print
/// their recorded fields likewise (`Item#3(name='a', ...)`); leaves print as [`preview`]. The
/// one printer of bounded values: the Python API's `val_pprint` and the UI's `/api/value` both
/// call it.
pub fn pprint(snap: &Snap, print_level: usize, print_length: usize) -> String {
    let mut out = String::new();
    write_bounded(&mut out, snap, print_level, print_length, 0);
    cut(out, PPRINT_MAX)
}

fn write_bounded(out: &mut String, s: &Snap, level: usize, length: usize, depth: usize) {
    if out.len() > PPRINT_MAX {
        return;
    }
    let deep = depth >= level;
    match s {
        Snap::Seq { kind, type_name, items, len, .. } => {
            if empty_set(*kind, *len) {
                let _ = write!(out, "{type_name}()");
                return;
            }
            let shown = if deep { 0 } else { items.len().min(length) };
            let whole_one = !deep && shown == 1 && *len == 1;
            let (open, close) = seq_brackets(*kind, type_name, whole_one, shown == 0);
            out.push_str(&open);
            for (i, it) in items.iter().take(shown).enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_bounded(out, it, level, length, depth + 1);
            }
            bounded_tail(out, deep, shown, items.len(), *len, type_name);
            out.push_str(&close);
        }
        Snap::Map { type_name, entries, len, .. } => {
            let plain = type_name == "dict";
            if !plain {
                let _ = write!(out, "{type_name}(");
            }
            out.push('{');
            let shown = if deep { 0 } else { entries.len().min(length) };
            for (i, (k, v)) in entries.iter().take(shown).enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_bounded(out, k, level, length, depth + 1);
                out.push_str(": ");
                write_bounded(out, v, level, length, depth + 1);
            }
            bounded_tail(out, deep, shown, entries.len(), *len, type_name);
            out.push('}');
            if !plain {
                out.push(')');
            }
        }
        Snap::Object { type_name, attrs, repr, id } => {
            if deep || attrs.is_empty() {
                out.push_str(repr);
                return;
            }
            short_type(out, type_name, *id);
            out.push('(');
            for (i, (k, v)) in attrs.iter().take(length).enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(k);
                out.push('=');
                write_bounded(out, v, level, length, depth + 1);
            }
            if attrs.len() > length {
                out.push_str(if length == 0 { "..." } else { ", ..." });
            }
            out.push(')');
        }
        Snap::Earlier { value, .. } => {
            out.push_str("(earlier) ");
            write_bounded(out, value, level, length, depth);
        }
        leaf => write_snap(out, leaf, PPRINT_MAX + 1),
    }
}

/// An empty set or frozenset prints as Python shows it, `set()` (`{}` is a dict).
fn empty_set(kind: SeqKind, len: u64) -> bool {
    len == 0 && matches!(kind, SeqKind::Set | SeqKind::FrozenSet)
}

/// What follows the `shown` items of a container of `len` items of which the recording kept
/// `recorded`: `...` for items the print bounds hid, then the marker of the items the recorder's
/// budget cut (never hidden by the print bounds: a reader must not take a cut value for a
/// whole one). At the level bound (`deep`) a non-empty container is `[...]` alone.
fn bounded_tail(out: &mut String, deep: bool, shown: usize, recorded: usize, len: u64, type_name: &str) {
    let sep = |out: &mut String| {
        if shown > 0 {
            out.push_str(", ");
        }
    };
    if deep {
        if len > 0 {
            out.push_str("...");
        }
        return;
    }
    if shown < recorded {
        sep(out);
        out.push_str("...");
    }
    let cut = len.saturating_sub(recorded as u64);
    if cut > 0 {
        if shown < recorded {
            out.push_str(", ");
        } else {
            sep(out);
        }
        let _ = write!(out, "<...{cut} more of {type_name}[{len}]: cut by squall's snapshot budget>");
    }
}

fn write_snap(out: &mut String, s: &Snap, budget: usize) {
    if out.len() > budget {
        return;
    }
    match s {
        Snap::None => out.push_str("None"),
        Snap::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
        Snap::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Snap::BigInt(d) => out.push_str(d),
        Snap::Float(f) => float(out, *f),
        Snap::Complex { re, im } => {
            out.push('(');
            float(out, *re);
            if *im >= 0.0 || im.is_nan() {
                out.push('+');
            }
            float(out, *im);
            out.push_str("j)");
        }
        Snap::Str(v) => py_str(out, v, budget),
        Snap::Bytes(v) => {
            // Quoted and escaped as Python's repr does.
            let quote = if v.contains(&b'\'') && !v.contains(&b'"') { b'"' } else { b'\'' };
            out.push('b');
            out.push(quote as char);
            for &c in v {
                if out.len() > budget {
                    break;
                }
                match c {
                    c if c == quote || c == b'\\' => {
                        out.push('\\');
                        out.push(c as char);
                    }
                    b'\n' => out.push_str("\\n"),
                    b'\r' => out.push_str("\\r"),
                    b'\t' => out.push_str("\\t"),
                    0x20..=0x7e => out.push(c as char),
                    _ => {
                        let _ = write!(out, "\\x{c:02x}");
                    }
                }
            }
            out.push(quote as char);
        }
        Snap::Seq { kind, type_name, len, .. } if empty_set(*kind, *len) => {
            let _ = write!(out, "{type_name}()");
        }
        Snap::Seq { kind, type_name, items, len, .. } => {
            let (open, close) = seq_brackets(*kind, type_name, items.len() == 1 && *len == 1, items.is_empty());
            out.push_str(&open);
            for (i, it) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                if out.len() > budget {
                    break;
                }
                write_snap(out, it, budget);
            }
            if (items.len() as u64) < *len {
                out.push_str(if items.is_empty() { "..." } else { ", ..." });
            }
            out.push_str(&close);
        }
        Snap::Map { type_name, entries, len, .. } => {
            let plain = type_name == "dict";
            if !plain {
                let _ = write!(out, "{type_name}(");
            }
            out.push('{');
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                if out.len() > budget {
                    break;
                }
                write_snap(out, k, budget);
                out.push_str(": ");
                write_snap(out, v, budget);
            }
            if (entries.len() as u64) < *len {
                out.push_str(if entries.is_empty() { "..." } else { ", ..." });
            }
            out.push('}');
            if !plain {
                out.push(')');
            }
        }
        Snap::Object { repr, .. } | Snap::Opaque { repr, .. } => out.push_str(repr),
        Snap::Cut { type_name, id, len } => {
            out.push('<');
            short_type(out, type_name, *id);
            if *len > 0 {
                let _ = write!(out, " of {len}");
            }
            out.push_str(" …>");
        }
        // An object not recorded at this moment, with its newest earlier state.
        Snap::Earlier { value, .. } => {
            out.push_str("(earlier) ");
            write_snap(out, value, budget);
        }
        Snap::StrCut { prefix, len } => {
            py_str(out, prefix, budget);
            let _ = write!(out, "...[{len} chars]");
        }
        Snap::BytesCut { prefix, len } => {
            write_snap(out, &Snap::Bytes(prefix.clone()), budget);
            let _ = write!(out, "...[{len} bytes]");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(entries: Vec<(Snap, Snap)>) -> Snap {
        let len = entries.len() as u64;
        Snap::Map { type_name: "dict".into(), entries, len, id: 0 }
    }

    #[test]
    fn a_budget_stop_inside_a_map_is_marked() {
        let long = |k: &str| (Snap::Str(k.repeat(60)), Snap::Int(1));
        let m = map(vec![long("a"), long("b"), long("c"), (Snap::Str("__doc__".into()), Snap::None)]);
        let text = preview(&m, 80);
        assert!(text.ends_with('…'), "{text}");
        assert!(text.len() <= 80 + '…'.len_utf8(), "{text}");
        let repr = object_repr("m.Builder", 2, &[("namespace".into(), m)]);
        assert!(repr.ends_with('…'), "{repr}");
        assert!(!repr.contains("}"), "the map is cut inside, never closed as if whole: {repr}");
    }

    #[test]
    fn a_short_value_is_whole() {
        let m = map(vec![(Snap::Str("a".into()), Snap::Int(1))]);
        assert_eq!(preview(&m, 80), "{'a': 1}");
        assert_eq!(object_repr("m.P", 3, &[("x".into(), Snap::Int(1))]), "P#3(x=1)");
    }

    #[test]
    fn non_ascii_text_is_cut_at_a_character() {
        let text = preview(&Snap::Str("é".repeat(100)), 41);
        assert!(text.ends_with('…'), "{text}");
        assert!(text.len() <= 41 + '…'.len_utf8());
    }

    fn list(items: Vec<Snap>) -> Snap {
        let len = items.len() as u64;
        Snap::Seq { kind: SeqKind::List, type_name: "list".into(), id: 0, items, len }
    }

    #[test]
    fn pprint_shows_what_the_recorder_cut_whatever_the_print_length() {
        let cut = Snap::Seq {
            kind: SeqKind::List,
            type_name: "list".into(),
            id: 0,
            items: vec![Snap::Int(1), Snap::Int(2), Snap::Int(3)],
            len: 50,
        };
        let marker = "<...47 more of list[50]: cut by squall's snapshot budget>";
        assert_eq!(pprint(&cut, 5, 2), format!("[1, 2, ..., {marker}]"));
        assert_eq!(pprint(&cut, 5, 3), format!("[1, 2, 3, {marker}]"));
        assert_eq!(pprint(&cut, 5, 0), format!("[..., {marker}]"));
        assert_eq!(pprint(&cut, 0, 5), "[...]");
        let m = Snap::Map { type_name: "dict".into(), entries: vec![(Snap::Int(0), Snap::None)], len: 9, id: 0 };
        assert_eq!(pprint(&m, 5, 5), "{0: None, <...8 more of dict[9]: cut by squall's snapshot budget>}");
        let whole = list(vec![Snap::Int(1), Snap::Int(2)]);
        assert_eq!(pprint(&whole, 5, 1), "[1, ...]", "no marker when nothing was cut");
    }

    #[test]
    fn strings_are_quoted_as_python_quotes_them() {
        assert_eq!(preview(&Snap::Str("it's".into()), 80), "\"it's\"");
        assert_eq!(preview(&Snap::Str("a'b\"c".into()), 80), "'a\\'b\"c'");
        assert_eq!(preview(&Snap::Str("a\\b".into()), 80), "'a\\\\b'");
        assert_eq!(pprint(&Snap::Str("x'".into()), 5, 5), "\"x'\"");
        assert_eq!(preview(&Snap::Bytes(b"it's\n\x00".to_vec()), 80), "b\"it's\\n\\x00\"");
        assert_eq!(preview(&Snap::Bytes(b"a'\"".to_vec()), 80), "b'a\\'\"'");
    }

    #[test]
    fn an_empty_set_prints_as_python_shows_it() {
        let set = |kind, name: &str| Snap::Seq { kind, type_name: name.into(), id: 0, items: vec![], len: 0 };
        assert_eq!(pprint(&set(SeqKind::Set, "set"), 5, 5), "set()");
        assert_eq!(pprint(&set(SeqKind::FrozenSet, "frozenset"), 5, 5), "frozenset()");
        assert_eq!(preview(&set(SeqKind::Set, "set"), 80), "set()");
        assert_eq!(pprint(&set(SeqKind::List, "list"), 5, 5), "[]");
    }

    #[test]
    fn pprint_keeps_to_print_level_and_length() {
        let v =
            list(vec![Snap::Int(1), list(vec![Snap::Int(2), list(vec![Snap::Int(3)])]), Snap::Int(4), Snap::Int(5)]);
        assert_eq!(pprint(&v, 2, 3), "[1, [2, [...]], 4, ...]");
        assert_eq!(pprint(&v, 9, 9), "[1, [2, [3]], 4, 5]");
        assert_eq!(pprint(&v, 0, 9), "[...]");
        assert_eq!(pprint(&list(vec![]), 0, 9), "[]");
    }

    #[test]
    fn pprint_prints_containers_as_preview_does() {
        let one =
            Snap::Seq { kind: SeqKind::Tuple, type_name: "tuple".into(), id: 0, items: vec![Snap::Int(1)], len: 1 };
        assert_eq!(pprint(&one, 5, 5), preview(&one, 100));
        assert_eq!(pprint(&one, 5, 0), "(...)");
        let fs = Snap::Seq {
            kind: SeqKind::FrozenSet,
            type_name: "frozenset".into(),
            id: 0,
            items: vec![Snap::Int(1), Snap::Int(2)],
            len: 2,
        };
        assert_eq!(pprint(&fs, 5, 5), "frozenset({1, 2})");
        assert_eq!(pprint(&fs, 5, 1), "frozenset({1, ...})");
        let dq = Snap::Seq {
            kind: SeqKind::Other,
            type_name: "deque".into(),
            id: 0,
            items: vec![Snap::Int(1), Snap::Int(2)],
            len: 2,
        };
        assert_eq!(preview(&dq, 100), "deque([1, 2])");
        assert_eq!(pprint(&dq, 5, 1), "deque([1, ...])");
        let obj = Snap::Object {
            type_name: "m.Item".into(),
            id: 4,
            repr: "Item#4(a=1, b=[2])".into(),
            attrs: vec![("a".into(), Snap::Int(1)), ("b".into(), list(vec![Snap::Int(2)]))],
        };
        assert_eq!(pprint(&obj, 5, 5), "Item#4(a=1, b=[2])");
        assert_eq!(pprint(&obj, 1, 1), "Item#4(a=1, ...)");
        assert_eq!(pprint(&obj, 0, 5), "Item#4(a=1, b=[2])");
    }
}
