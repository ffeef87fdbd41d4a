//! The calling thread's scheduling priority: work that should take only the
//! cores others leave idle (the ast-grep rules beside a checker that uses
//! every core).

/// Lowers the calling thread to the lowest priority (nice 19); threads it
/// starts afterwards inherit it. On Linux a nice value belongs to a thread,
/// so the rest of the process is untouched. Best effort: where it cannot,
/// nothing changes.
pub fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority with PRIO_PROCESS and who = 0 changes only the
    // calling thread's nice value on Linux; no memory is involved.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 19);
    }
}
