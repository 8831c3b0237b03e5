//! Byte-level building blocks: the file prefix, chunk framing, varints, the body codec.

/// The first 8 bytes of every recording. The high first byte catches 7-bit transfers, the `\r\n`
/// catches newline translation (as in PNG).
pub const MAGIC: [u8; 8] = *b"\x89SQREC\r\n";

/// The format version this squall writes, and the newest it reads. See `docs/format.md`.
pub const FORMAT_VERSION: u32 = 7;

/// Bytes before the first chunk: magic and version.
pub(crate) const PREFIX_LEN: usize = 12;
/// Bytes of a chunk frame before its payload: type, flags, reserved u16, length u32, crc32c u32.
pub(crate) const FRAME_LEN: usize = 12;
/// Largest chunk payload a reader accepts (writers stay far below).
pub(crate) const MAX_PAYLOAD: u32 = 1 << 30;
/// Largest uncompressed body a reader accepts.
pub(crate) const MAX_RAW: u64 = 1 << 31;

/// Chunk types (see `docs/format.md`).
pub(crate) mod chunk {
    pub const HEADER: u8 = 1;
    pub const FORMS: u8 = 2;
    pub const THREAD: u8 = 3;
    pub const ENTRIES: u8 = 4;
    /// Version 1 only (read, never written): entry values as whole trees.
    pub const VALUES: u8 = 5;
    pub const END: u8 = 6;
    /// Optional (written with `FLAG_OPTIONAL`): a timeline's thread-switch marks.
    pub const SWITCHES: u8 = 7;
    /// A timeline's value-store nodes and names (version 2).
    pub const NODES: u8 = 8;
    /// Optional: the size and SHA-256 of each source file the recorder compiled.
    pub const SOURCES: u8 = 9;
    /// Optional: what the program wrote to stdout and stderr (`outputs.rs`).
    pub const OUTPUTS: u8 = 10;
    /// Optional: what sites' values are computed from (`squall_trace::SiteReads`).
    pub const SITE_READS: u8 = 11;
}
/// Frame flag: a reader that does not know the chunk type skips the chunk.
pub(crate) const FLAG_OPTIONAL: u8 = 1;

/// How chunk bodies are compressed. Every body records its own codec, so a reader reads all of
/// them whatever the writer chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    /// Stored as is.
    None,
    /// LZ4 block format.
    Lz4,
    /// Zstandard at the given level (the default: level 1).
    Zstd(i32),
}

impl Default for Codec {
    fn default() -> Self {
        Codec::Zstd(1)
    }
}

pub(crate) const CODEC_NONE: u8 = 0;
pub(crate) const CODEC_ZSTD: u8 = 1;
pub(crate) const CODEC_LZ4: u8 = 2;

/// The CRC of a frame: crc32c over the first 8 frame bytes, then the payload.
pub(crate) fn frame_crc(frame8: &[u8], payload: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(frame8), payload)
}

/// Appends a complete chunk (frame + payload) to `out`.
pub(crate) fn put_chunk(out: &mut Vec<u8>, ty: u8, flags: u8, payload: &[u8]) {
    let mut f = [0u8; 8];
    f[0] = ty;
    f[1] = flags;
    f[4..8].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    let crc = frame_crc(&f, payload);
    out.extend_from_slice(&f);
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(payload);
}

/// Compresses `raw` into a body: codec byte, raw length varint, data.
pub(crate) fn put_body(out: &mut Vec<u8>, codec: Codec, raw: &[u8]) {
    match codec {
        Codec::None => {
            out.push(CODEC_NONE);
            put_uv(out, raw.len() as u64);
            out.extend_from_slice(raw);
        }
        Codec::Lz4 => {
            out.push(CODEC_LZ4);
            put_uv(out, raw.len() as u64);
            out.extend_from_slice(&lz4_flex::block::compress(raw));
        }
        Codec::Zstd(level) => match zstd::bulk::compress(raw, level) {
            Ok(c) => {
                out.push(CODEC_ZSTD);
                put_uv(out, raw.len() as u64);
                out.extend_from_slice(&c);
            }
            Err(_) => put_body(out, Codec::None, raw),
        },
    }
}

/// A zstd context kept between chunks: [`put_body`] makes (and zeroes the memory of) a new one
/// for every body.
#[derive(Default)]
pub(crate) struct Compressor {
    cx: Option<(i32, zstd::bulk::Compressor<'static>)>,
    buf: Vec<u8>,
}

impl Compressor {
    /// The bytes its buffer and zstd context hold.
    pub(crate) fn held(&mut self) -> usize {
        self.buf.capacity() + self.cx.as_mut().map_or(0, |(_, c)| c.context_mut().sizeof())
    }
}

/// [`put_body`] with a context kept in `z`.
pub(crate) fn put_body_with(out: &mut Vec<u8>, codec: Codec, raw: &[u8], z: &mut Compressor) {
    let Codec::Zstd(level) = codec else { return put_body(out, codec, raw) };
    if z.cx.as_ref().is_none_or(|(l, _)| *l != level) {
        z.cx = zstd::bulk::Compressor::new(level).ok().map(|c| (level, c));
    }
    let Some((_, cx)) = z.cx.as_mut() else { return put_body(out, codec, raw) };
    z.buf.clear();
    z.buf.reserve(zstd::zstd_safe::compress_bound(raw.len()));
    match cx.compress_to_buffer(raw, &mut z.buf) {
        Ok(_) => {
            out.push(CODEC_ZSTD);
            put_uv(out, raw.len() as u64);
            out.extend_from_slice(&z.buf);
        }
        Err(_) => put_body(out, Codec::None, raw),
    }
}

/// Decompresses a body written by [`put_body`].
pub(crate) fn get_body(body: &[u8]) -> Result<Vec<u8>, Bad> {
    let mut r = Rd::new(body);
    let codec = r.u8()?;
    let raw_len = r.uv()?;
    if raw_len > MAX_RAW {
        return Err(Bad("body too large"));
    }
    let data = &body[r.pos..];
    let raw = match codec {
        CODEC_NONE => data.to_vec(),
        CODEC_LZ4 => {
            // lz4 expands at most ~255x; refuse claims beyond that before allocating.
            if raw_len > data.len() as u64 * 256 + 64 {
                return Err(Bad("lz4 body length"));
            }
            lz4_flex::block::decompress(data, raw_len as usize).map_err(|_| Bad("lz4 body"))?
        }
        CODEC_ZSTD => {
            if raw_len > data.len() as u64 * 32768 + 4096 {
                return Err(Bad("zstd body length"));
            }
            zstd::bulk::decompress(data, raw_len as usize).map_err(|_| Bad("zstd body"))?
        }
        _ => return Err(Bad("unknown body codec")),
    };
    if raw.len() as u64 != raw_len {
        return Err(Bad("body length"));
    }
    Ok(raw)
}

/// A decoding failure inside a chunk: what did not add up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Bad(pub &'static str);

/// The most bytes a `u64` takes as a varint.
pub(crate) const MAX_UV: usize = 10;

#[inline]
pub(crate) fn put_uv(out: &mut Vec<u8>, v: u64) {
    out.reserve(MAX_UV);
    // SAFETY: `reserve` made room for `MAX_UV` bytes.
    unsafe { put_uv_unchecked(out, v) }
}

/// `put_uv` without the capacity check: a loop that reserves once for many varints (the entry
/// streams: a check per byte pushed was most of the writer's encoding time).
///
/// # Safety
/// `out` has room for `MAX_UV` more bytes (`out.capacity() - out.len() >= MAX_UV`).
#[inline(always)]
pub(crate) unsafe fn put_uv_unchecked(out: &mut Vec<u8>, mut v: u64) {
    let len = out.len();
    // SAFETY: this fn's contract: the varint's at most `MAX_UV` bytes lie within the capacity,
    // and are written before the length covers them.
    unsafe {
        let p = out.as_mut_ptr().add(len);
        let mut n = 0;
        while v >= 0x80 {
            p.add(n).write((v as u8) | 0x80);
            v >>= 7;
            n += 1;
        }
        p.add(n).write(v as u8);
        out.set_len(len + n + 1);
    }
}

/// A stream being written past its length, into room made beforehand: the varints go out
/// through a pointer kept in a register, and the length is set once (`done`). Through the
/// `Vec` itself each varint reloaded and stored the length, which the compiler could not keep
/// in a register across the other streams' writes (twice the encoding time: docs/benchmarks.md,
/// "Twentieth session").
pub(crate) struct Cursor(*mut u8);

impl Cursor {
    /// At the end of `v`.
    #[inline(always)]
    pub(crate) fn at_end(v: &mut Vec<u8>) -> Cursor {
        // SAFETY: one past the last element is within (or one past) the allocation.
        Cursor(unsafe { v.as_mut_ptr().add(v.len()) })
    }

    /// # Safety
    /// The room ahead holds `MAX_UV` more bytes.
    #[inline(always)]
    pub(crate) unsafe fn uv(&mut self, mut v: u64) {
        // SAFETY: this fn's contract: at most `MAX_UV` bytes are written.
        unsafe {
            while v >= 0x80 {
                self.0.write((v as u8) | 0x80);
                self.0 = self.0.add(1);
                v >>= 7;
            }
            self.0.write(v as u8);
            self.0 = self.0.add(1);
        }
    }

    /// # Safety
    /// The room ahead holds 8 more bytes.
    #[inline(always)]
    pub(crate) unsafe fn u64_le(&mut self, v: u64) {
        // SAFETY: this fn's contract.
        unsafe {
            self.0.cast::<[u8; 8]>().write_unaligned(v.to_le_bytes());
            self.0 = self.0.add(8);
        }
    }

    /// # Safety
    /// The room ahead holds 1 more byte.
    #[inline(always)]
    pub(crate) unsafe fn byte(&mut self, b: u8) {
        // SAFETY: this fn's contract.
        unsafe {
            self.0.write(b);
            self.0 = self.0.add(1);
        }
    }

    /// # Safety
    /// The room ahead holds `b.len()` more bytes.
    #[inline(always)]
    pub(crate) unsafe fn bytes(&mut self, b: &[u8]) {
        // SAFETY: this fn's contract; `b` cannot overlap the room ahead, which no slice borrows.
        unsafe {
            std::ptr::copy_nonoverlapping(b.as_ptr(), self.0, b.len());
            self.0 = self.0.add(b.len());
        }
    }

    /// A varint byte length, then the bytes.
    ///
    /// # Safety
    /// The room ahead holds `MAX_UV + b.len()` more bytes.
    #[inline(always)]
    pub(crate) unsafe fn block(&mut self, b: &[u8]) {
        // SAFETY: this fn's contract.
        unsafe {
            self.uv(b.len() as u64);
            self.bytes(b);
        }
    }

    /// Sets `v`'s length to what was written through this cursor.
    ///
    /// # Safety
    /// The cursor was made by `at_end(v)`, and wrote within `v`'s capacity.
    #[inline(always)]
    pub(crate) unsafe fn done(self, v: &mut Vec<u8>) {
        // SAFETY: this fn's contract: the bytes up to the cursor are initialized and within the
        // capacity.
        unsafe { v.set_len(self.0.offset_from(v.as_ptr()) as usize) }
    }
}

#[inline]
pub(crate) fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline]
pub(crate) fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

pub(crate) fn put_str(out: &mut Vec<u8>, s: &str) {
    put_uv(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// A bounds-checked reader over a byte slice.
pub(crate) struct Rd<'a> {
    pub b: &'a [u8],
    pub pos: usize,
}

impl<'a> Rd<'a> {
    pub fn new(b: &'a [u8]) -> Rd<'a> {
        Rd { b, pos: 0 }
    }

    pub fn remaining(&self) -> usize {
        self.b.len() - self.pos
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.b.len()
    }

    #[inline]
    pub fn u8(&mut self) -> Result<u8, Bad> {
        let v = *self.b.get(self.pos).ok_or(Bad("unexpected end of data"))?;
        self.pos += 1;
        Ok(v)
    }

    #[inline]
    pub fn uv(&mut self) -> Result<u64, Bad> {
        if let Some(&b0) = self.b.get(self.pos) {
            if b0 < 0x80 {
                self.pos += 1;
                return Ok(u64::from(b0));
            }
        }
        self.uv_slow()
    }

    #[cold]
    fn uv_slow(&mut self) -> Result<u64, Bad> {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let byte = *self.b.get(self.pos).ok_or(Bad("unexpected end of data"))?;
            self.pos += 1;
            if shift == 63 && byte > 1 {
                return Err(Bad("varint overflow"));
            }
            v |= u64::from(byte & 0x7F) << shift;
            if byte < 0x80 {
                return Ok(v);
            }
            shift += 7;
            if shift > 63 {
                return Err(Bad("varint overflow"));
            }
        }
    }

    pub fn u32v(&mut self) -> Result<u32, Bad> {
        u32::try_from(self.uv()?).map_err(|_| Bad("number out of range"))
    }

    /// A count of items that each take at least one byte: bounded by the bytes left.
    pub fn count(&mut self) -> Result<usize, Bad> {
        let n = self.uv()?;
        if n > self.remaining() as u64 {
            return Err(Bad("count larger than the data"));
        }
        Ok(n as usize)
    }

    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], Bad> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.b.len()).ok_or(Bad("unexpected end of data"))?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    pub fn str(&mut self) -> Result<&'a str, Bad> {
        let n = self.count()?;
        std::str::from_utf8(self.bytes(n)?).map_err(|_| Bad("invalid UTF-8"))
    }

    pub fn string(&mut self) -> Result<String, Bad> {
        self.str().map(str::to_owned)
    }

    pub fn f64(&mut self) -> Result<f64, Bad> {
        let b = self.bytes(8)?;
        Ok(f64::from_le_bytes(b.try_into().map_err(|_| Bad("float"))?))
    }

    /// A length-prefixed sub-slice.
    pub fn block(&mut self) -> Result<&'a [u8], Bad> {
        let n = self.count()?;
        self.bytes(n)
    }
}
