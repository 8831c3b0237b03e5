//! The tagged binary encoding of [`Snap`] value trees (see `docs/format.md`, "VALUES").

use squall_trace::{SeqKind, Snap};

use crate::wire::{put_str, put_uv, unzigzag, zigzag, Bad, Rd};

/// Deepest value tree a reader accepts (recorders cut far shallower).
pub(crate) const MAX_DEPTH: u32 = 200;

const T_NONE: u8 = 0;
const T_FALSE: u8 = 1;
const T_TRUE: u8 = 2;
const T_INT: u8 = 3;
const T_BIGINT: u8 = 4;
const T_FLOAT: u8 = 5;
const T_COMPLEX: u8 = 6;
const T_STR: u8 = 7;
const T_BYTES: u8 = 8;
const T_SEQ: u8 = 9;
const T_MAP: u8 = 10;
const T_OBJECT: u8 = 11;
const T_OPAQUE: u8 = 12;
const T_CUT: u8 = 13;

pub(crate) fn put_snap(out: &mut Vec<u8>, s: &Snap) {
    match s {
        Snap::None => out.push(T_NONE),
        Snap::Bool(false) => out.push(T_FALSE),
        Snap::Bool(true) => out.push(T_TRUE),
        Snap::Int(i) => {
            out.push(T_INT);
            put_uv(out, zigzag(*i));
        }
        Snap::BigInt(d) => {
            out.push(T_BIGINT);
            put_str(out, d);
        }
        Snap::Float(f) => {
            out.push(T_FLOAT);
            out.extend_from_slice(&f.to_le_bytes());
        }
        Snap::Complex { re, im } => {
            out.push(T_COMPLEX);
            out.extend_from_slice(&re.to_le_bytes());
            out.extend_from_slice(&im.to_le_bytes());
        }
        Snap::Str(v) => {
            out.push(T_STR);
            put_str(out, v);
        }
        Snap::Bytes(v) => {
            out.push(T_BYTES);
            put_uv(out, v.len() as u64);
            out.extend_from_slice(v);
        }
        Snap::Seq { kind, type_name, items, len } => {
            out.push(T_SEQ);
            out.push(*kind as u8);
            put_str(out, type_name);
            put_uv(out, *len);
            put_uv(out, items.len() as u64);
            for it in items {
                put_snap(out, it);
            }
        }
        Snap::Map { type_name, entries, len } => {
            out.push(T_MAP);
            put_str(out, type_name);
            put_uv(out, *len);
            put_uv(out, entries.len() as u64);
            for (k, v) in entries {
                put_snap(out, k);
                put_snap(out, v);
            }
        }
        Snap::Object { type_name, repr, attrs } => {
            out.push(T_OBJECT);
            put_str(out, type_name);
            put_str(out, repr);
            put_uv(out, attrs.len() as u64);
            for (k, v) in attrs {
                put_str(out, k);
                put_snap(out, v);
            }
        }
        Snap::Opaque { type_name, repr } => {
            out.push(T_OPAQUE);
            put_str(out, type_name);
            put_str(out, repr);
        }
        Snap::Cut { type_name, len } => {
            out.push(T_CUT);
            put_str(out, type_name);
            put_uv(out, *len);
        }
    }
}

pub(crate) fn get_snap(r: &mut Rd, depth: u32) -> Result<Snap, Bad> {
    if depth > MAX_DEPTH {
        return Err(Bad("value nested too deep"));
    }
    Ok(match r.u8()? {
        T_NONE => Snap::None,
        T_FALSE => Snap::Bool(false),
        T_TRUE => Snap::Bool(true),
        T_INT => Snap::Int(unzigzag(r.uv()?)),
        T_BIGINT => Snap::BigInt(r.string()?),
        T_FLOAT => Snap::Float(r.f64()?),
        T_COMPLEX => Snap::Complex { re: r.f64()?, im: r.f64()? },
        T_STR => Snap::Str(r.string()?),
        T_BYTES => Snap::Bytes(r.block()?.to_vec()),
        T_SEQ => {
            let kind = SeqKind::from_code(r.u8()?).ok_or(Bad("unknown sequence kind"))?;
            let type_name = r.string()?;
            let len = r.uv()?;
            let n = r.count()?;
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                items.push(get_snap(r, depth + 1)?);
            }
            Snap::Seq { kind, type_name, items, len }
        }
        T_MAP => {
            let type_name = r.string()?;
            let len = r.uv()?;
            let n = r.count()?;
            let mut entries = Vec::with_capacity(n);
            for _ in 0..n {
                let k = get_snap(r, depth + 1)?;
                entries.push((k, get_snap(r, depth + 1)?));
            }
            Snap::Map { type_name, entries, len }
        }
        T_OBJECT => {
            let type_name = r.string()?;
            let repr = r.string()?;
            let n = r.count()?;
            let mut attrs = Vec::with_capacity(n);
            for _ in 0..n {
                let k = r.string()?;
                attrs.push((k, get_snap(r, depth + 1)?));
            }
            Snap::Object { type_name, repr, attrs }
        }
        T_OPAQUE => Snap::Opaque { type_name: r.string()?, repr: r.string()? },
        T_CUT => Snap::Cut { type_name: r.string()?, len: r.uv()? },
        _ => return Err(Bad("unknown value tag")),
    })
}
