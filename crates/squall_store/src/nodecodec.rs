//! The binary encoding of value-store nodes (see `docs/format.md`, "NODES").
//!
//! A node's child values are written relative to the node itself: a slot as its distance back
//! (children always come before their parents), an inline integer zigzagged, a constant by code.

use squall_trace::{CutNode, Decoded, MapNode, Node, ObjectNode, OpaqueNode, SeqDeltaNode, SeqKind, SeqNode, ValRef};

use crate::wire::{unzigzag, zigzag, Bad, Cursor, Rd, MAX_UV};

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

/// # Safety
/// The room ahead of `c` holds `MAX_UV` more bytes.
#[inline(always)]
unsafe fn put_val(c: &mut Cursor, here: u32, v: ValRef) {
    let code = match v.decode() {
        Decoded::Int(i) => zigzag(i) << 2 | V_INT,
        Decoded::Slot(s) => u64::from(here.saturating_sub(s)) << 2 | V_SLOT,
        Decoded::None => V_CONST,
        Decoded::Bool(true) => 1 << 2 | V_CONST,
        Decoded::Bool(false) => 2 << 2 | V_CONST,
        // A node's child is a ref, never a float held in an entry.
        Decoded::Absent | Decoded::Float(_) => 3 << 2 | V_CONST,
    };
    // SAFETY: this fn's contract.
    unsafe { c.uv(code) }
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

/// The most bytes `put_node` writes for `n`: a tag and a kind byte, a varint per field, two
/// per item, and the text.
fn max_bytes(n: &Node) -> usize {
    let (fields, items, text) = match n {
        Node::Float(_) | Node::Int(_) | Node::Same(_) => (1, 0, 0),
        Node::Complex(_) => (2, 0, 0),
        Node::BigInt(s) | Node::Str(s) => (1, 0, s.len()),
        Node::StrCut(b) => (2, 0, b.0.len()),
        Node::Bytes(b) => (1, 0, b.len()),
        Node::BytesCut(b) => (2, 0, b.0.len()),
        Node::Seq(s) => (4, s.items.len(), 0),
        Node::SeqDelta(d) => (6, d.changes.len(), 0),
        Node::Map(m) => (4, m.entries.len(), 0),
        Node::Object(o) => (3, o.attrs.len(), 0),
        Node::Opaque(o) => (3, 0, o.text.len()),
        Node::Cut(_) | Node::Ref(_) => (3, 0, 0),
    };
    2 + (fields + 2 * items) * MAX_UV + text
}

/// Appends node number `here` of its store to `out`. Written through a cursor into room made
/// once per node: through the `Vec` each byte checked the capacity and stored the length
/// (docs/benchmarks.md, "Twenty-first session").
pub(crate) fn put_node(out: &mut Vec<u8>, here: u32, n: &Node) {
    let (max, before) = (max_bytes(n), out.len());
    out.reserve(max);
    let mut c = Cursor::at_end(out);
    // SAFETY: the room made above holds the node's longest encoding (`max_bytes`), and the
    // cursor was made at `out`'s end.
    unsafe {
        write_node(&mut c, here, n);
        c.done(out);
    }
    debug_assert!(out.len() - before <= max, "{n:?}: {} bytes written, {max} counted", out.len() - before);
}

/// # Safety
/// The room ahead of `c` holds `max_bytes(n)` bytes.
unsafe fn write_node(c: &mut Cursor, here: u32, n: &Node) {
    // SAFETY: this fn's contract: each arm writes at most what `max_bytes` counts for it.
    unsafe {
        match n {
            Node::Float(f) => {
                c.byte(T_FLOAT);
                c.u64_le(f.to_bits());
            }
            Node::Int(i) => {
                c.byte(T_INT);
                c.uv(zigzag(*i));
            }
            Node::BigInt(s) => {
                c.byte(T_BIGINT);
                c.block(s.as_bytes());
            }
            Node::Complex(z) => {
                c.byte(T_COMPLEX);
                c.u64_le(z.0.to_bits());
                c.u64_le(z.1.to_bits());
            }
            Node::Str(s) => {
                c.byte(T_STR);
                c.block(s.as_bytes());
            }
            Node::StrCut(b) => {
                c.byte(T_STR_CUT);
                c.block(b.0.as_bytes());
                c.uv(b.1);
            }
            Node::Bytes(b) => {
                c.byte(T_BYTES);
                c.block(b);
            }
            Node::BytesCut(b) => {
                c.byte(T_BYTES_CUT);
                c.block(&b.0);
                c.uv(b.1);
            }
            Node::Seq(s) => {
                c.byte(T_SEQ);
                c.byte(s.kind as u8);
                c.uv(u64::from(s.ty));
                c.uv(s.obj);
                c.uv(s.len);
                c.uv(s.items.len() as u64);
                for &v in s.items.iter() {
                    put_val(c, here, v);
                }
            }
            Node::SeqDelta(d) => {
                c.byte(T_SEQ_DELTA);
                c.byte(d.kind as u8);
                c.uv(u64::from(d.ty));
                c.uv(d.obj);
                c.uv(d.len);
                c.uv(u64::from(here.saturating_sub(d.base)));
                c.uv(u64::from(d.n_items));
                c.uv(d.changes.len() as u64);
                let mut prev = 0u32;
                for &(i, v) in d.changes.iter() {
                    c.uv(u64::from(i - prev));
                    prev = i;
                    put_val(c, here, v);
                }
            }
            Node::Map(m) => {
                c.byte(T_MAP);
                c.uv(u64::from(m.ty));
                c.uv(m.obj);
                c.uv(m.len);
                c.uv(m.entries.len() as u64);
                for &(k, v) in m.entries.iter() {
                    put_val(c, here, k);
                    put_val(c, here, v);
                }
            }
            Node::Object(o) => {
                c.byte(T_OBJECT);
                c.uv(u64::from(o.ty));
                c.uv(o.obj);
                c.uv(o.attrs.len() as u64);
                for &(k, v) in o.attrs.iter() {
                    c.uv(u64::from(k));
                    put_val(c, here, v);
                }
            }
            Node::Opaque(o) => {
                c.byte(T_OPAQUE);
                c.uv(u64::from(o.ty));
                c.uv(o.obj);
                c.block(o.text.as_bytes());
            }
            Node::Same(t) => {
                c.byte(T_SAME);
                c.uv(u64::from(here.saturating_sub(*t)));
            }
            Node::Cut(_) | Node::Ref(_) => {
                // A packed reference is written as any other: the reader packs it again.
                let Some(cut) = n.cut() else { unreachable!() };
                c.byte(T_CUT);
                c.uv(u64::from(cut.ty));
                c.uv(cut.obj);
                c.uv(cut.len);
            }
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
