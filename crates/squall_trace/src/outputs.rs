//! What the program wrote to its stdout and stderr while it was recorded, in the order it wrote
//! it, each chunk linked to the entry that was last recorded on the writing thread.
//!
//! Bounded: a chunk keeps at most [`CHUNK_KEPT_BYTES`] of text (its full length is kept, so a cut
//! chunk says so), and the store keeps at most [`KEPT_BYTES`] of text in all; later chunks are only
//! counted ([`Outputs::not_kept`]). Consecutive writes of one thread to one stream at the same
//! entry are one chunk (`print("a", "b")` is four writes), while the chunk is not yet saved.

/// Text kept of one chunk, in bytes of UTF-8 (cut at a character boundary).
pub const CHUNK_KEPT_BYTES: usize = 64 << 10;
/// Text kept of all chunks, in bytes of UTF-8.
pub const KEPT_BYTES: usize = 16 << 20;

/// Which stream a chunk was written to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutStream {
    Stdout = 1,
    Stderr = 2,
}

impl OutStream {
    pub fn from_code(code: u8) -> Option<OutStream> {
        match code {
            1 => Some(OutStream::Stdout),
            2 => Some(OutStream::Stderr),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            OutStream::Stdout => "stdout",
            OutStream::Stderr => "stderr",
        }
    }
}

/// One write (or run of writes) to a stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputChunk {
    pub stream: OutStream,
    /// The writing thread (its native id, as timelines name threads).
    pub thread_id: u64,
    /// The writing thread's timeline and the idx of its last entry when the write happened;
    /// `None` when that thread had recorded nothing yet.
    pub at: Option<(u32, u32)>,
    /// The text written, cut to [`CHUNK_KEPT_BYTES`].
    pub text: String,
    /// The length of what was written, in characters (more than `text` holds when it was cut).
    pub chars: u64,
}

impl OutputChunk {
    /// True when `text` holds less than was written.
    pub fn is_cut(&self) -> bool {
        self.chars > self.text.chars().count() as u64
    }
}

/// Every chunk, in the order written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outputs {
    chunks: Vec<OutputChunk>,
    kept: usize,
    /// Chunks before this are saved (a file holds them): they are not merged into any more.
    saved: usize,
    not_kept_chunks: u64,
    not_kept_chars: u64,
}

fn cut_at(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

impl Outputs {
    pub const fn new() -> Outputs {
        Outputs { chunks: Vec::new(), kept: 0, saved: 0, not_kept_chunks: 0, not_kept_chars: 0 }
    }

    /// Notes a write of `text` to `stream` by thread `thread_id`, whose last entry is `at`.
    pub fn write(&mut self, stream: OutStream, thread_id: u64, at: Option<(u32, u32)>, text: &str) {
        if text.is_empty() {
            return;
        }
        let chars = text.chars().count() as u64;
        let room = KEPT_BYTES.saturating_sub(self.kept);
        let unsaved = self.chunks.len() > self.saved;
        if let Some(last) = self.chunks.last_mut().filter(|_| unsaved) {
            let fits = last.text.len() + text.len() <= CHUNK_KEPT_BYTES && text.len() <= room;
            if fits && !last.is_cut() && last.stream == stream && last.thread_id == thread_id && last.at == at {
                last.text.push_str(text);
                last.chars += chars;
                self.kept += text.len();
                return;
            }
        }
        if room == 0 {
            self.not_kept_chunks += 1;
            self.not_kept_chars += chars;
            return;
        }
        let kept = cut_at(text, CHUNK_KEPT_BYTES.min(room));
        self.kept += kept.len();
        self.chunks.push(OutputChunk { stream, thread_id, at, text: kept.to_string(), chars });
    }

    /// Appends a chunk read from a file, as it was saved.
    pub fn push_loaded(&mut self, chunk: OutputChunk) {
        self.kept += chunk.text.len();
        self.chunks.push(chunk);
        self.saved = self.chunks.len();
    }

    /// The chunks, in the order written.
    pub fn chunks(&self) -> &[OutputChunk] {
        &self.chunks
    }

    /// Chunks written past [`KEPT_BYTES`] and not kept: (chunks, characters).
    pub fn not_kept(&self) -> (u64, u64) {
        (self.not_kept_chunks, self.not_kept_chars)
    }

    /// Sets what was not kept (a file saves it with its chunks).
    pub fn set_not_kept(&mut self, chunks: u64, chars: u64) {
        self.not_kept_chunks = chunks;
        self.not_kept_chars = chars;
    }

    /// The chunks not handed to a file yet; they are saved from now on (no longer merged into).
    pub fn take_unsaved(&mut self) -> &[OutputChunk] {
        let from = self.saved.min(self.chunks.len());
        self.saved = self.chunks.len();
        &self.chunks[from..]
    }

    /// Forgets everything (the recording was cleared).
    pub fn clear(&mut self) {
        *self = Outputs::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_of_one_thread_at_one_entry_are_one_chunk_until_saved() {
        let mut o = Outputs::new();
        for piece in ["a", " ", "b", "\n"] {
            o.write(OutStream::Stdout, 7, Some((0, 3)), piece);
        }
        o.write(OutStream::Stderr, 7, Some((0, 3)), "err\n");
        o.write(OutStream::Stdout, 7, Some((0, 4)), "c\n");
        assert_eq!(o.chunks().iter().map(|c| c.text.as_str()).collect::<Vec<_>>(), ["a b\n", "err\n", "c\n"]);
        assert_eq!(o.take_unsaved().len(), 3);
        o.write(OutStream::Stdout, 7, Some((0, 4)), "d\n");
        assert_eq!(o.chunks().len(), 4, "a saved chunk is not merged into");
        assert_eq!(o.take_unsaved().len(), 1);
    }

    #[test]
    fn a_big_write_is_cut_at_a_character_boundary_and_says_its_length() {
        let mut o = Outputs::new();
        let big = "é".repeat(CHUNK_KEPT_BYTES); // 2 bytes each
        o.write(OutStream::Stdout, 1, None, &big);
        let c = &o.chunks()[0];
        assert_eq!(c.text.len(), CHUNK_KEPT_BYTES);
        assert_eq!(c.chars, CHUNK_KEPT_BYTES as u64);
        assert!(c.is_cut());
        o.write(OutStream::Stdout, 1, None, "x");
        assert_eq!(o.chunks().len(), 2, "nothing is appended to a cut chunk");
    }

    #[test]
    fn past_the_bound_chunks_are_counted_not_kept() {
        let mut o = Outputs::new();
        let piece = "x".repeat(CHUNK_KEPT_BYTES);
        let n = KEPT_BYTES / CHUNK_KEPT_BYTES;
        for i in 0..n + 3 {
            o.write(OutStream::Stdout, 1, Some((0, i as u32)), &piece);
        }
        assert_eq!(o.chunks().len(), n);
        assert_eq!(o.not_kept(), (3, 3 * CHUNK_KEPT_BYTES as u64));
    }
}
