//! A cache prefetch hint, for the loops that look up big tables in an
//! order the hardware cannot guess (the trace's key table, a batch
//! grouped by key, a sketch's cells): asked for a few items ahead, the
//! misses overlap. Only a hint: the results are the same without it.

/// Asks for the cache line holding `*p` (x86-64; elsewhere nothing: the
/// same results, found slower on big tables).
#[inline]
pub(crate) fn read<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and reads nothing into the program;
    // `p` is a valid reference besides.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((p as *const T).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
