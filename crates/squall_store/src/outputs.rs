//! The OUTPUTS chunk (optional, type 10): what the program wrote to stdout and stderr, each chunk
//! linked to the writing thread's last entry. Layout in `docs/format.md`.

use squall_trace::{OutStream, OutputChunk, Outputs};

use crate::wire::{put_str, put_uv, Bad, Rd};

/// Encodes `chunks` (the ones not saved yet) with the counts of what was not kept so far.
pub(crate) fn put_outputs(r: &mut Vec<u8>, chunks: &[OutputChunk], not_kept: (u64, u64)) {
    put_uv(r, not_kept.0);
    put_uv(r, not_kept.1);
    put_uv(r, chunks.len() as u64);
    for c in chunks {
        r.push(c.stream as u8);
        put_uv(r, c.thread_id);
        match c.at {
            None => put_uv(r, 0),
            Some((tl, idx)) => {
                put_uv(r, u64::from(tl) + 1);
                put_uv(r, u64::from(idx));
            }
        }
        put_uv(r, c.chars);
        put_str(r, &c.text);
    }
}

/// One decoded OUTPUTS chunk: what was not kept up to it, and its chunks (timelines as the
/// recorder numbered them).
pub(crate) struct OutputsPart {
    pub not_kept: (u64, u64),
    pub chunks: Vec<OutputChunk>,
}

pub(crate) fn get_outputs(raw: &[u8]) -> Result<OutputsPart, Bad> {
    let mut r = Rd::new(raw);
    let not_kept = (r.uv()?, r.uv()?);
    let n = r.count()?;
    let mut chunks = Vec::with_capacity(n);
    for _ in 0..n {
        let stream = OutStream::from_code(r.u8()?).ok_or(Bad("unknown output stream"))?;
        let thread_id = r.uv()?;
        let at = match r.uv()? {
            0 => None,
            tl => Some((u32::try_from(tl - 1).map_err(|_| Bad("output timeline out of range"))?, r.u32v()?)),
        };
        let chars = r.uv()?;
        let text = r.string()?;
        if (text.chars().count() as u64) > chars {
            return Err(Bad("an output chunk longer than its length"));
        }
        chunks.push(OutputChunk { stream, thread_id, at, text, chars });
    }
    Ok(OutputsPart { not_kept, chunks })
}

/// Adds a decoded part to the loaded outputs; `index_of` maps a recorder timeline number to its
/// loaded index and entry count (`None`: not declared before).
pub(crate) fn apply_outputs(
    outputs: &mut Outputs,
    part: OutputsPart,
    index_of: impl Fn(u32) -> Option<(u32, usize)>,
) -> Result<(), Bad> {
    for mut c in part.chunks {
        if let Some((tl, idx)) = c.at {
            let (index, entries) = index_of(tl).ok_or(Bad("output of an undeclared timeline"))?;
            if idx as usize >= entries {
                return Err(Bad("output linked to an entry not written before it"));
            }
            c.at = Some((index, idx));
        }
        outputs.push_loaded(c);
    }
    outputs.set_not_kept(part.not_kept.0, part.not_kept.1);
    Ok(())
}
