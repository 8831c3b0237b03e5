//! The value ref of each argument of one call, from the call's args ref: a caller derefs only
//! the arguments it reads (`calls --where`: building every argument as Python objects was most
//! of its cost).

use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use squall_trace::Kind;

use crate::bindings::query::{value_ref, Backend, ARGS_BIT, NUMBER_SHIFT};

/// `[value ref or None per parameter]` of the call whose args ref is `args_ref` (as
/// `deref(args_ref)` lists them, without building them).
pub fn arg_refs<B: Backend + ?Sized>(b: &B, args_ref: u64) -> PyResult<Vec<Option<u64>>> {
    let not_args = || PyKeyError::new_err(format!("value ref {args_ref} does not name a call's arguments"));
    if args_ref & ARGS_BIT == 0 {
        return Err(not_args());
    }
    let number = u32::try_from(args_ref >> NUMBER_SHIFT).map_err(|_| not_args())?;
    let local = (args_ref & 0xFFFF_FFFF) as usize;
    let rec = b.by_number(number)?;
    let call = rec.tl.get(local).filter(|e| e.kind().is_call()).ok_or_else(not_args)?;
    let nparams = if call.kind() == Kind::Resume { 1 } else { b.forms().form(call.id()).map_or(0, |f| f.params.len()) };
    Ok(rec.tl.call_args(local, nparams).into_iter().map(|v| value_ref(&rec, v)).collect())
}
