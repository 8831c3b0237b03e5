//! The binary encoding of value-store nodes (see `docs/format.md`, "NODES").
//!
//! A node's child values are written relative to the node itself: a slot as its distance back
//! (children always come before their parents), an inline integer zigzagged, a constant by code.

use squall_trace::{CutNode, Decoded, MapNode, Node, ObjectNode, OpaqueNode, SeqDeltaNode, SeqKind, SeqNode, ValRef};

use crate::wire::{put_str, put_uv, unzigzag, zigzag, Bad, Rd};

const T_FLOAT: u8 = 1;
const T_INT: u8 = 2;
const T_BIGINT: u8 = 3;
const T_COMPLEX: u8 = 4;
const T_STR: u8 = 5;
const T_STR_CUT: u8 = 6;
const T_BYTES: u8 = 7;
const T_BYTES_CUT: u8 = 8;
const T_SEQ: u8 = 9;
const T_MAP: u8 = 10;
const T_OBJECT: u8 = 11;
const T_OPAQUE: u8 = 12;
const T_CUT: u8 = 13;
/// Since format version 4.
const T_SEQ_DELTA: u8 = 14;
/// Since format version 6.
const T_SAME: u8 = 15;

const V_INT: u64 = 0;
const V_SLOT: u64 = 1;
const V_CONST: u64 = 2;

fn put_val(out: &mut Vec<u8>, here: u32, v: ValRef) {
    match v.decode() {
        Decoded::Int(i) => put_uv(out, zigzag(i) << 2 | V_INT),
        Decoded::Slot(s) => put_uv(out, u64::from(here.saturating_sub(s)) << 2 | V_SLOT),
        Decoded::None => put_uv(out, V_CONST),
        Decoded::Bool(true) => put_uv(out, 1 << 2 | V_CONST),
        Decoded::Bool(false) => put_uv(out, 2 << 2 | V_CONST),
        // A node's child is a ref, never a float held in an entry.
        Decoded::Absent | Decoded::Float(_) => put_uv(out, 3 << 2 | V_CONST),
    }
}

fn get_val(r: &mut Rd, here: u32) -> Result<ValRef, Bad> {
    let w = r.uv()?;
    let payload = w >> 2;
    Ok(match w & 3 {
        V_INT => ValRef::small_int(unzigzag(payload)).ok_or(Bad("inline integer out of range"))?,
        V_SLOT => {
            let back = u32::try_from(payload).map_err(|_| Bad("value slot out of range"))?;
            if back == 0 || back > here {
                return Err(Bad("a value node refers to a node not before it"));
            }
            ValRef::slot(here - back).ok_or(Bad("value slot out of range"))?
        }
        V_CONST => match payload {
            0 => ValRef::NONE,
            1 => ValRef::TRUE,
            2 => ValRef::FALSE,
            3 => ValRef::ABSENT,
            _ => return Err(Bad("unknown value constant")),
        },
        _ => return Err(Bad("unknown value reference kind")),
    })
}

/// Appends node number `here` of its store.
pub(crate) fn put_node(out: &mut Vec<u8>, here: u32, n: &Node) {
    match n {
        Node::Float(f) => {
            out.push(T_FLOAT);
            out.extend_from_slice(&f.to_le_bytes());
        }
        Node::Int(i) => {
            out.push(T_INT);
            put_uv(out, zigzag(*i));
        }
        Node::BigInt(s) => {
            out.push(T_BIGINT);
            put_str(out, s);
        }
        Node::Complex(c) => {
            out.push(T_COMPLEX);
            out.extend_from_slice(&c.0.to_le_bytes());
            out.extend_from_slice(&c.1.to_le_bytes());
        }
        Node::Str(s) => {
            out.push(T_STR);
            put_str(out, s);
        }
        Node::StrCut(b) => {
            out.push(T_STR_CUT);
            put_str(out, &b.0);
            put_uv(out, b.1);
        }
        Node::Bytes(b) => {
            out.push(T_BYTES);
            put_uv(out, b.len() as u64);
            out.extend_from_slice(b);
        }
        Node::BytesCut(b) => {
            out.push(T_BYTES_CUT);
            put_uv(out, b.0.len() as u64);
            out.extend_from_slice(&b.0);
            put_uv(out, b.1);
        }
        Node::Seq(s) => {
            out.push(T_SEQ);
            out.push(s.kind as u8);
            put_uv(out, u64::from(s.ty));
            put_uv(out, s.obj);
            put_uv(out, s.len);
            put_uv(out, s.items.len() as u64);
            for &v in s.items.iter() {
                put_val(out, here, v);
            }
        }
        Node::SeqDelta(d) => {
            out.push(T_SEQ_DELTA);
            out.push(d.kind as u8);
            put_uv(out, u64::from(d.ty));
            put_uv(out, d.obj);
            put_uv(out, d.len);
            put_uv(out, u64::from(here.saturating_sub(d.base)));
            put_uv(out, u64::from(d.n_items));
            put_uv(out, d.changes.len() as u64);
            let mut prev = 0u32;
            for &(i, v) in d.changes.iter() {
                put_uv(out, u64::from(i - prev));
                prev = i;
                put_val(out, here, v);
            }
        }
        Node::Map(m) => {
            out.push(T_MAP);
            put_uv(out, u64::from(m.ty));
            put_uv(out, m.obj);
            put_uv(out, m.len);
            put_uv(out, m.entries.len() as u64);
            for &(k, v) in m.entries.iter() {
                put_val(out, here, k);
                put_val(out, here, v);
            }
        }
        Node::Object(o) => {
            out.push(T_OBJECT);
            put_uv(out, u64::from(o.ty));
            put_uv(out, o.obj);
            put_uv(out, o.attrs.len() as u64);
            for &(k, v) in o.attrs.iter() {
                put_uv(out, u64::from(k));
                put_val(out, here, v);
            }
        }
        Node::Opaque(o) => {
            out.push(T_OPAQUE);
            put_uv(out, u64::from(o.ty));
            put_uv(out, o.obj);
            put_str(out, &o.text);
        }
        Node::Same(t) => {
            out.push(T_SAME);
            put_uv(out, u64::from(here.saturating_sub(*t)));
        }
        Node::Cut(_) | Node::Ref(_) => {
            // A packed reference is written as any other: the reader packs it again.
            let Some(c) = n.cut() else { unreachable!() };
            out.push(T_CUT);
            put_uv(out, u64::from(c.ty));
            put_uv(out, c.obj);
            put_uv(out, c.len);
        }
    }
}

/// Reads node number `here` of its store.
pub(crate) fn get_node(r: &mut Rd, here: u32) -> Result<Node, Bad> {
    Ok(match r.u8()? {
        T_FLOAT => Node::Float(r.f64()?),
        T_INT => Node::Int(unzigzag(r.uv()?)),
        T_BIGINT => Node::BigInt(r.str()?.into()),
        T_COMPLEX => Node::Complex(Box::new((r.f64()?, r.f64()?))),
        T_STR => Node::Str(r.str()?.into()),
        T_STR_CUT => Node::StrCut(Box::new((r.str()?.into(), r.uv()?))),
        T_BYTES => Node::Bytes(r.block()?.into()),
        T_BYTES_CUT => Node::BytesCut(Box::new((r.block()?.into(), r.uv()?))),
        T_SEQ => {
            let kind = SeqKind::from_code(r.u8()?).ok_or(Bad("unknown sequence kind"))?;
            let (ty, obj, len) = (r.u32v()?, r.uv()?, r.uv()?);
            let n = r.count()?;
            let items = (0..n).map(|_| get_val(r, here)).collect::<Result<Vec<_>, _>>()?;
            Node::Seq(Box::new(SeqNode { kind, ty, obj, len, items: items.into() }))
        }
        T_SEQ_DELTA => {
            let kind = SeqKind::from_code(r.u8()?).ok_or(Bad("unknown sequence kind"))?;
            let (ty, obj, len) = (r.u32v()?, r.uv()?, r.uv()?);
            let back = r.u32v()?;
            if back == 0 || back > here {
                return Err(Bad("a sequence's changes refer to a base not before them"));
            }
            let n_items = r.u32v()?;
            let n = r.count()?;
            let mut at = 0u32;
            let mut changes = Vec::with_capacity(n.min(1 << 16));
            for k in 0..n {
                let step = r.u32v()?;
                if k > 0 && step == 0 {
                    return Err(Bad("a sequence's changes repeat an index"));
                }
                at = at.checked_add(step).ok_or(Bad("a sequence change's index is out of range"))?;
                changes.push((at, get_val(r, here)?));
            }
            Node::SeqDelta(Box::new(SeqDeltaNode {
                kind,
                ty,
                obj,
                len,
                base: here - back,
                n_items,
                changes: changes.into(),
            }))
        }
        T_MAP => {
            let (ty, obj, len) = (r.u32v()?, r.uv()?, r.uv()?);
            let n = r.count()?;
            let entries = (0..n).map(|_| Ok((get_val(r, here)?, get_val(r, here)?))).collect::<Result<Vec<_>, _>>()?;
            Node::Map(Box::new(MapNode { ty, obj, len, entries: entries.into() }))
        }
        T_OBJECT => {
            let (ty, obj) = (r.u32v()?, r.uv()?);
            let n = r.count()?;
            let attrs = (0..n).map(|_| Ok((r.u32v()?, get_val(r, here)?))).collect::<Result<Vec<_>, _>>()?;
            Node::Object(Box::new(ObjectNode { ty, obj, attrs: attrs.into() }))
        }
        T_OPAQUE => Node::Opaque(Box::new(OpaqueNode { ty: r.u32v()?, obj: r.uv()?, text: r.str()?.into() })),
        T_CUT => CutNode { ty: r.u32v()?, obj: r.uv()?, len: r.uv()? }.into_node(),
        T_SAME => {
            let back = r.u32v()?;
            if back == 0 || back > here {
                return Err(Bad("a value recorded again names a node not before it"));
            }
            Node::Same(here - back)
        }
        _ => return Err(Bad("unknown value node tag")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Rd;

    /// A reference of no length whose type and identity fit a word is stored packed (no box)
    /// and read back packed; one that does not fit, or has a length, stays a boxed `Cut`. Both
    /// are written alike, so files do not change.
    #[test]
    fn references_pack_when_they_fit_and_round_trip() {
        let cases = [
            (CutNode { ty: 7, obj: 12, len: 0 }, true),
            (CutNode { ty: (1 << 24) - 1, obj: (1 << 40) - 1, len: 0 }, true),
            (CutNode { ty: 7, obj: 1 << 40, len: 0 }, false),
            (CutNode { ty: 1 << 24, obj: 12, len: 0 }, false),
            (CutNode { ty: 7, obj: 12, len: 3 }, false),
        ];
        for (cut, packed) in cases {
            let node = cut.into_node();
            assert_eq!(matches!(node, Node::Ref(_)), packed, "{cut:?}");
            assert_eq!(node.cut(), Some(cut));
            assert_eq!(node.obj(), cut.obj);
            assert_eq!(node.heap_bytes() == 0, packed);
            let mut out = Vec::new();
            put_node(&mut out, 5, &node);
            let mut boxed = Vec::new();
            put_node(&mut boxed, 5, &Node::Cut(Box::new(cut)));
            assert_eq!(out, boxed, "the same bytes either way");
            let back = get_node(&mut Rd::new(&out), 5).unwrap();
            assert_eq!(back, node);
        }
    }
    /// A value recorded again is its distance back to the node it names; one that names no
    /// node before it is refused.
    #[test]
    fn a_value_recorded_again_round_trips_and_must_name_an_earlier_node() {
        let mut out = Vec::new();
        put_node(&mut out, 9, &Node::Same(4));
        assert_eq!(out, [T_SAME, 5]);
        assert_eq!(get_node(&mut Rd::new(&out), 9).unwrap(), Node::Same(4));
        for bad in [[T_SAME, 0], [T_SAME, 10]] {
            assert!(get_node(&mut Rd::new(&bad), 9).is_err(), "{bad:?}");
        }
    }
}
