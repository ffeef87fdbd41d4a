//! Gives the daemon's freed memory back to the system.
//!
//! A project check passes tens of megabytes of server answers through many
//! threads (connections, command-line runs, readers). glibc's allocator
//! gives each thread its own 64 MB arena and keeps what is freed in it, so
//! after a check of CPython's standard library (1,790 files) the daemon
//! alone held 1.2 GB, of which 93 MB was live: the memory ceiling then shut
//! down the very server that had just checked the whole project. Fewer
//! arenas (428 MB) and a trim after work (93 MB) keep the daemon's own
//! share what it really uses. Other allocators (musl's, in the static
//! builds) return memory on their own; there this does nothing.

/// Caps the arenas: called once, before the daemon starts its threads.
pub fn limit_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a tunable of the allocator; it is called
    // before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// Returns the freed memory of every arena to the system.
pub fn give_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes the arenas' own locks; it is safe to call
    // from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}
