//! The columnar encoding of an ENTRIES chunk body (see `docs/format.md`, "ENTRIES").
//!
//! Four streams, one per entry word, each a run of LEB128 varints, plus one for the args arena:
//! - `H`: `id << 4 | kind` (the entry's head word rotated: kind is its top 4 bits);
//! - `A`: the parent / fn-call idx: `0` for `NONE`; since version 7, `1..=4` for one of the
//!   last four distinct idxs this stream named (`Recent`: most entries are in the frame of the
//!   entry before, or back in a caller's a few calls up), else `zigzag(idx - a) + 5`; before
//!   version 7, `zigzag(idx - a) + 1`;
//! - `B`: every kind but calls, resumes and the kinds holding a float (a call's ret idx is
//!   recomputed on load): a value code;
//! - `C`: calls and resumes: a value code, or an args-arena offset (tag 3); the others but the
//!   kinds holding a float: the raw word (unused, 0);
//! - `G`: the args arena slice: value codes;
//! - `F` (version 5, only when not empty): the floats of the kinds holding one (7, 8, 9), 8 bytes
//!   each, little-endian: kept apart and unscrambled by varints, they compress as the float
//!   nodes they replace did.
//!
//! A value code is `payload << 2 | tag`: tag 0 an inline int (payload `zigzag(int)`), tag 1 a
//! constant (payload `word - MAX_SLOT`), tag 2 a value slot (payload `zigzag(slot - previous slot
//! in this stream and chunk)`), tag 3 an args offset (payload `zigzag(offset - previous offset)`).

use squall_trace::{Entry, Kind, MAX_SLOT, NONE};

use crate::wire::{put_uv, unzigzag, zigzag, Bad, Cursor, Rd, MAX_UV};

const INLINE: u32 = 1 << 31;

/// The format version whose `A` stream names recent idxs (`Recent`).
pub(crate) const RECENT_A: u32 = 7;

/// The last `RECENT` distinct parent / fn-call idxs of an `A` stream, most recent first: an
/// entry in a long frame names the same idx as the entry before (one byte instead of three or
/// four for its distance, and a run zstd shrinks to nothing), and an entry after a call
/// returns names the caller's idx again, a place or two down. Encoder and decoder update it
/// alike, from the idxs in stream order; each chunk starts empty.
struct Recent([u32; RECENT]);

const RECENT: usize = 4;

impl Recent {
    fn new() -> Recent {
        Recent([NONE; RECENT])
    }

    /// The code of `a` (not `NONE`): its place + 1 when recent, else 0; `a` moved to the front.
    #[inline(always)]
    fn code(&mut self, a: u32) -> u64 {
        let r = &mut self.0;
        if r[0] == a {
            return 1;
        }
        let at = r.iter().position(|&x| x == a).unwrap_or(RECENT - 1);
        let hit = r[at] == a;
        r.copy_within(0..at, 1);
        r[0] = a;
        if hit {
            at as u64 + 1
        } else {
            0
        }
    }

    /// The idx named by code `1..=RECENT`, moved to the front; `None` for a place never filled.
    #[inline(always)]
    fn take(&mut self, code: u64) -> Option<u32> {
        let at = usize::try_from(code - 1).ok()?;
        let a = *self.0.get(at)?;
        if a == NONE {
            return None;
        }
        self.0.copy_within(0..at, 1);
        self.0[0] = a;
        Some(a)
    }

    /// `a`, named by its distance, put at the front.
    #[inline(always)]
    fn push(&mut self, a: u32) {
        self.0.copy_within(0..RECENT - 1, 1);
        self.0[0] = a;
    }
}

/// The predictors of one value stream.
#[derive(Default)]
struct Pred {
    slot: u32,
    args: u32,
}

impl Cursor {
    /// A value code (see the module's doc).
    ///
    /// # Safety
    /// The room ahead holds `MAX_UV` more bytes.
    #[inline(always)]
    unsafe fn val(&mut self, w: u32, p: &mut Pred) {
        let code = if w & INLINE != 0 {
            let i = ((w << 1) as i32 >> 1) as i64;
            zigzag(i) << 2
        } else if w >= MAX_SLOT {
            (u64::from(w - MAX_SLOT) << 2) | 1
        } else {
            let d = i64::from(w) - i64::from(p.slot);
            p.slot = w;
            (zigzag(d) << 2) | 2
        };
        // SAFETY: this fn's contract.
        unsafe { self.uv(code) }
    }

    /// An args-arena offset (tag 3).
    ///
    /// # Safety
    /// The room ahead holds `MAX_UV` more bytes.
    #[inline(always)]
    unsafe fn args_off(&mut self, w: u32, p: &mut Pred) {
        let d = i64::from(w) - i64::from(p.args);
        p.args = w;
        // SAFETY: this fn's contract.
        unsafe { self.uv((zigzag(d) << 2) | 3) }
    }
}

#[inline]
fn get_val(r: &mut Rd, p: &mut Pred, allow_args: bool) -> Result<u32, Bad> {
    let code = r.uv()?;
    let payload = code >> 2;
    match code & 3 {
        0 => {
            let i = unzigzag(payload);
            if !(-(1i64 << 30)..(1i64 << 30)).contains(&i) {
                return Err(Bad("inline int out of range"));
            }
            Ok(INLINE | (i as u32 & !INLINE))
        }
        1 => {
            if payload > u64::from(u32::MAX - MAX_SLOT) || MAX_SLOT as u64 + payload >= u64::from(INLINE) {
                return Err(Bad("constant out of range"));
            }
            Ok(MAX_SLOT + payload as u32)
        }
        2 => {
            let w = i64::from(p.slot) + unzigzag(payload);
            if !(0..i64::from(MAX_SLOT)).contains(&w) {
                return Err(Bad("slot out of range"));
            }
            p.slot = w as u32;
            Ok(w as u32)
        }
        _ => {
            if !allow_args {
                return Err(Bad("args offset where a value belongs"));
            }
            let w = i64::from(p.args) + unzigzag(payload);
            let w = u32::try_from(w).map_err(|_| Bad("args offset out of range"))?;
            p.args = w;
            Ok(w)
        }
    }
}

/// Entries (or args) whose streams' room is made at once: at most 40 KiB per stream.
const BLOCK: usize = 4096;

/// Reusable stream buffers of the writer.
#[derive(Default)]
pub(crate) struct Streams {
    h: Vec<u8>,
    a: Vec<u8>,
    b: Vec<u8>,
    c: Vec<u8>,
    g: Vec<u8>,
    f: Vec<u8>,
}

impl Streams {
    /// The bytes the streams' buffers hold.
    pub(crate) fn held(&self) -> usize {
        self.h.capacity()
            + self.a.capacity()
            + self.b.capacity()
            + self.c.capacity()
            + self.g.capacity()
            + self.f.capacity()
    }
}

/// Encodes one ENTRIES body (uncompressed) into `out`. `nparams[form]` is the form's parameter
/// count when known: calls of forms with 2+ parameters hold an args offset in `c`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn encode_entries(
    out: &mut Vec<u8>,
    s: &mut Streams,
    timeline: u32,
    first_idx: u64,
    entries: &[Entry],
    args_first: u64,
    args: &[u32],
    nparams: &[u32],
) {
    for v in [&mut s.h, &mut s.a, &mut s.b, &mut s.c, &mut s.g, &mut s.f] {
        v.clear();
    }
    let (mut pb, mut pc, mut pg) = (Pred::default(), Pred::default(), Pred::default());
    let mut recent = Recent::new();
    // Each entry puts at most one varint in each of `h`, `a`, `b` and `c` and 8 bytes in `f`:
    // room for a block's worth is made once, and the varints are written without a check each.
    let mut idx = first_idx;
    for block in entries.chunks(BLOCK) {
        for v in [&mut s.h, &mut s.a, &mut s.b, &mut s.c] {
            v.reserve(block.len() * MAX_UV);
        }
        s.f.reserve(block.len() * 8);
        let (mut h, mut a, mut b, mut c, mut f) = (
            Cursor::at_end(&mut s.h),
            Cursor::at_end(&mut s.a),
            Cursor::at_end(&mut s.b),
            Cursor::at_end(&mut s.c),
            Cursor::at_end(&mut s.f),
        );
        for e in block {
            let kind = e.kind();
            let head = e.raw()[0];
            let rel = if e.a == NONE {
                0
            } else {
                match recent.code(e.a) {
                    0 => zigzag(idx as i64 - i64::from(e.a)) + RECENT as u64 + 1,
                    code => code,
                }
            };
            // SAFETY: the room made for this block above (one varint per stream per entry, or
            // 8 bytes in `f`).
            unsafe {
                h.uv((u64::from(head & 0x0FFF_FFFF) << 4) | u64::from(head >> 28));
                a.uv(rel);
                if kind.is_call() {
                    let many = kind == Kind::Call && nparams.get(e.id() as usize).is_some_and(|&n| n >= 2);
                    if many {
                        c.args_off(e.c, &mut pc);
                    } else {
                        c.val(e.c, &mut pc);
                    }
                } else if e.holds_float() {
                    f.u64_le(u64::from(e.b) | u64::from(e.c) << 32);
                } else {
                    b.val(e.b, &mut pb);
                    c.uv(u64::from(e.c));
                }
            }
            idx += 1;
        }
        // SAFETY: each cursor was made at its stream's end and wrote within the room made.
        unsafe {
            h.done(&mut s.h);
            a.done(&mut s.a);
            b.done(&mut s.b);
            c.done(&mut s.c);
            f.done(&mut s.f);
        }
    }
    for block in args.chunks(BLOCK) {
        s.g.reserve(block.len() * MAX_UV);
        let mut g = Cursor::at_end(&mut s.g);
        for &w in block {
            // SAFETY: the room made for this block above.
            unsafe { g.val(w, &mut pg) };
        }
        // SAFETY: the cursor was made at the stream's end and wrote within the room made.
        unsafe { g.done(&mut s.g) };
    }
    put_uv(out, u64::from(timeline));
    put_uv(out, first_idx);
    put_uv(out, entries.len() as u64);
    put_uv(out, args_first);
    put_uv(out, args.len() as u64);
    for v in [&s.h, &s.a, &s.b, &s.c, &s.g] {
        put_uv(out, v.len() as u64);
        out.extend_from_slice(v);
    }
    if !s.f.is_empty() {
        put_uv(out, s.f.len() as u64);
        out.extend_from_slice(&s.f);
    }
}

/// A decoded ENTRIES body.
pub(crate) struct EntriesPart {
    /// Largest form id named by a call, resume or unwind (+1; 0 if none).
    pub forms_needed: u64,
    /// Largest site id named by a return, expr, bind or write (+1; 0 if none).
    pub sites_needed: u64,
    /// References (`a` words) to entries before this chunk: (entry idx, referenced idx). The
    /// reader checks that they name calls; references inside the chunk are checked here.
    pub outside: Vec<(u32, u32)>,
    pub timeline: u32,
    pub first_idx: u64,
    pub entries: Vec<Entry>,
    pub args_first: u64,
    pub args: Vec<u32>,
}

/// Decodes one ENTRIES body (uncompressed).
pub(crate) fn decode_entries(body: &[u8], version: u32) -> Result<EntriesPart, Bad> {
    let mut r = Rd::new(body);
    let timeline = r.u32v()?;
    let first_idx = r.uv()?;
    let n = r.uv()?;
    let args_first = r.uv()?;
    let nargs = r.uv()?;
    if first_idx.checked_add(n).is_none_or(|end| end > u64::from(NONE)) {
        return Err(Bad("entry idx beyond u32"));
    }
    let (mut h, mut a, mut b, mut c, mut g) =
        (Rd::new(r.block()?), Rd::new(r.block()?), Rd::new(r.block()?), Rd::new(r.block()?), Rd::new(r.block()?));
    let mut f = Rd::new(if r.at_end() { &[] } else { r.block()? });
    // Every entry takes at least one byte of `H`, every arg one byte of `G`.
    if n > h.remaining() as u64 || nargs > g.remaining() as u64 {
        return Err(Bad("count larger than the data"));
    }
    let mut entries = Vec::with_capacity(n as usize);
    let (mut forms_needed, mut sites_needed, mut outside) = (0u64, 0u64, Vec::new());
    let (mut pb, mut pc, mut pg) = (Pred::default(), Pred::default(), Pred::default());
    let (mut recent, far) = (Recent::new(), if version >= RECENT_A { RECENT as u64 + 1 } else { 1 });
    for i in 0..n {
        let idx = first_idx + i;
        let code = h.uv()?;
        if code >> 32 != 0 {
            return Err(Bad("id out of range"));
        }
        let kind_bits = code as u32 & 15;
        let id = (code as u32) >> 4;
        let head = id | (kind_bits << 28);
        // Kinds 0, 1 (call, resume) and 3 (unwind) name forms; 2, 4, 5, 6 (write, version 3)
        // and 7, 8, 9 (return, expr and bind holding a float, version 5) sites; others are unknown.
        match kind_bits {
            0 | 1 | 3 => forms_needed = forms_needed.max(u64::from(id) + 1),
            2 | 4..=9 => sites_needed = sites_needed.max(u64::from(id) + 1),
            _ => return Err(Bad("unknown entry kind")),
        }
        let holds_float = (7..=9).contains(&kind_bits);
        let is_call = kind_bits <= 1;
        let ac = a.uv()?;
        let aw = if ac == 0 {
            NONE
        } else if ac < far {
            recent.take(ac).ok_or(Bad("a recent idx named before there was one"))?
        } else {
            let v = idx as i64 - unzigzag(ac - far);
            let w = u32::try_from(v).ok().filter(|&w| w != NONE).ok_or(Bad("relative idx out of range"))?;
            recent.push(w);
            w
        };
        // Parents and fn-call idxs name earlier calls.
        if !(is_call && aw == NONE) {
            if u64::from(aw) >= idx {
                return Err(Bad("an entry's parent or fn-call idx is not an earlier entry"));
            }
            if u64::from(aw) < first_idx {
                outside.push((idx as u32, aw));
            } else if !entries.get((u64::from(aw) - first_idx) as usize).is_some_and(|e: &Entry| e.kind().is_call()) {
                return Err(Bad("an entry's parent or fn-call idx is not a call"));
            }
        }
        let (bw, cw) = if is_call {
            (NONE, get_val(&mut c, &mut pc, kind_bits == 0)?)
        } else if holds_float {
            let w = u64::from_le_bytes(f.bytes(8)?.try_into().map_err(|_| Bad("float"))?);
            (w as u32, (w >> 32) as u32)
        } else {
            (get_val(&mut b, &mut pb, false)?, c.u32v()?)
        };
        entries.push(Entry::from_raw(head, aw, bw, cw).ok_or(Bad("unknown entry kind"))?);
    }
    let mut args = Vec::with_capacity(nargs as usize);
    for _ in 0..nargs {
        args.push(get_val(&mut g, &mut pg, false)?);
    }
    if !(h.at_end() && a.at_end() && b.at_end() && c.at_end() && g.at_end() && f.at_end() && r.at_end()) {
        return Err(Bad("trailing bytes in an entries stream"));
    }
    Ok(EntriesPart { forms_needed, sites_needed, outside, timeline, first_idx, entries, args_first, args })
}
