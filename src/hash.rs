//! Row hashers for sketches.
//!
//! Keys are hashed as explicit bytes, never through `std::hash::Hash`, whose
//! output is not promised to be stable across compiler versions.
//!
//! * [`HasherKind::Xxh3`] (default): XXH3-64 with a per-row seed. Its output is
//!   specified byte for byte, so a sketch's collisions (and therefore every
//!   report) are identical on every CPU and every build.
//! * [`HasherKind::AHash`]: `ahash::RandomState::with_seeds`, the hash family
//!   pingora-limits uses (it seeds each row randomly; we seed from the run's
//!   seed). Faithful in *kind*, but ahash picks an AES or a fallback code path
//!   depending on the CPU and may change between ahash releases, so reports
//!   made with it are reproducible only on the same kind of machine.

use serde::{Deserialize, Serialize};

/// Which hash family a sketch's rows use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum HasherKind {
    /// Portable seeded XXH3-64 (default).
    #[default]
    Xxh3,
    /// ahash, as pingora-limits uses; not portable across CPUs.
    #[serde(rename = "ahash")]
    AHash,
}

impl HasherKind {
    /// The name used in scenario files and reports.
    pub fn name(self) -> &'static str {
        match self {
            HasherKind::Xxh3 => "xxh3",
            HasherKind::AHash => "ahash",
        }
    }
}

/// One row's hash function: a hash family plus that row's seed.
#[derive(Clone)]
pub enum RowHasher {
    /// Seeded XXH3-64.
    Xxh3 {
        /// The row's seed.
        seed: u64,
    },
    /// ahash with fixed seeds.
    AHash(ahash::RandomState),
}

impl std::fmt::Debug for RowHasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RowHasher::Xxh3 { seed } => write!(f, "Xxh3({seed:#x})"),
            RowHasher::AHash(_) => write!(f, "AHash"),
        }
    }
}

impl RowHasher {
    /// The hasher of family `kind` for a row whose seed is `seed`.
    pub fn new(kind: HasherKind, seed: u64) -> Self {
        match kind {
            HasherKind::Xxh3 => RowHasher::Xxh3 { seed },
            HasherKind::AHash => {
                let s = |i: u64| crate::rng::derive_seed(seed, &[i]);
                RowHasher::AHash(ahash::RandomState::with_seeds(s(0), s(1), s(2), s(3)))
            }
        }
    }

    /// Hashes the key's bytes.
    #[inline]
    pub fn hash(&self, key: &[u8]) -> u64 {
        match self {
            RowHasher::Xxh3 { seed } => xxhash_rust::xxh3::xxh3_64_with_seed(key, *seed),
            RowHasher::AHash(state) => state.hash_one(key),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xxh3_rows_are_pinned() {
        // XXH3 is specified byte for byte: these values must never change.
        let row = RowHasher::new(HasherKind::Xxh3, 0);
        assert_eq!(row.hash(b""), 0x2D06_8005_38D3_94C2);
        let row = RowHasher::new(HasherKind::Xxh3, 1);
        assert_ne!(
            row.hash(b"key"),
            RowHasher::new(HasherKind::Xxh3, 2).hash(b"key")
        );
    }

    #[test]
    fn ahash_rows_are_deterministic_for_a_seed() {
        let a = RowHasher::new(HasherKind::AHash, 9);
        let b = RowHasher::new(HasherKind::AHash, 9);
        assert_eq!(a.hash(b"k"), b.hash(b"k"));
        assert_ne!(
            a.hash(b"k"),
            RowHasher::new(HasherKind::AHash, 10).hash(b"k")
        );
    }
}
