//! Threads of squall's own (the flusher, the writer, the prefault thread, the UI server and its
//! workers) that leave the process's asynchronous signals to the program's threads.
//!
//! A signal sent to the process (Ctrl-C's SIGINT, SIGTERM, a timer's SIGALRM) goes to any one of
//! its threads that does not block it. CPython's handler only notes it and wakes the main thread
//! through its wakeup fd; a main thread waiting in a C call (`time.sleep`, a lock, `select`) is
//! interrupted only when the signal lands on it. Landing on a thread of squall's, Ctrl-C would
//! wait for whatever the main thread waits for (`squall open` sleeps an hour between checks): the
//! program would behave differently recorded. So these threads block every signal but the ones
//! a fault raises in the thread itself.

use std::thread::{Builder, JoinHandle};

/// Signals raised by a fault in the thread that runs the faulting code: never blocked (blocking
/// them would only turn a crash into a hang or a different crash).
const SYNCHRONOUS: [libc::c_int; 6] =
    [libc::SIGSEGV, libc::SIGBUS, libc::SIGFPE, libc::SIGILL, libc::SIGTRAP, libc::SIGSYS];

/// `builder.spawn(f)`, the new thread blocking every asynchronous signal (it inherits the mask of
/// the thread that spawns it, which is set around the spawn and then restored). Threads the new
/// thread spawns (a tokio runtime's workers) inherit the blocked mask too.
pub fn spawn<F, T>(builder: Builder, f: F) -> std::io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    // SAFETY: sigset_t is plain data that sigfillset/sigdelset initialise; pthread_sigmask only
    // changes this thread's mask, and the old one is put back before returning whatever spawn gave.
    unsafe {
        let mut quiet: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut quiet);
        for s in SYNCHRONOUS {
            libc::sigdelset(&mut quiet, s);
        }
        let mut old: libc::sigset_t = std::mem::zeroed();
        let masked = libc::pthread_sigmask(libc::SIG_BLOCK, &quiet, &mut old) == 0;
        let spawned = builder.spawn(f);
        if masked {
            libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        }
        spawned
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocked(sig: libc::c_int) -> bool {
        // SAFETY: reads this thread's mask into a zeroed sigset_t.
        unsafe {
            let mut now: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut now);
            libc::sigismember(&now, sig) == 1
        }
    }

    #[test]
    fn the_thread_blocks_asynchronous_signals_and_the_spawner_is_unchanged() {
        let before = blocked(libc::SIGINT);
        let inside = spawn(Builder::new(), || {
            let nested = spawn(Builder::new(), || blocked(libc::SIGTERM)).unwrap().join().unwrap();
            let plain = std::thread::spawn(|| blocked(libc::SIGINT)).join().unwrap();
            (blocked(libc::SIGINT), blocked(libc::SIGALRM), blocked(libc::SIGSEGV), nested, plain)
        })
        .unwrap()
        .join()
        .unwrap();
        assert_eq!(inside, (true, true, false, true, true), "(INT, ALRM, SEGV, nested TERM, inherited INT)");
        assert_eq!(blocked(libc::SIGINT), before);
    }
}
