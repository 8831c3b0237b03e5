//! Reading the value trees of format version 1 files (see `docs/format.md`, "VALUES"): squall
//! writes value-store nodes since version 2 (`nodecodec`).

use squall_trace::{SeqKind, Snap};

use crate::wire::{unzigzag, Bad, Rd};

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
            Snap::Seq { kind, type_name, id: 0, items, len }
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
            Snap::Map { type_name, id: 0, entries, len }
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
            Snap::Object { type_name, id: 0, repr, attrs }
        }
        T_OPAQUE => Snap::Opaque { type_name: r.string()?, id: 0, repr: r.string()? },
        T_CUT => Snap::Cut { type_name: r.string()?, id: 0, len: r.uv()? },
        _ => return Err(Bad("unknown value tag")),
    })
}
