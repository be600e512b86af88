//! Nothing but a home for the criterion benchmarks (`replay.rs`,
//! `limiters.rs`): see `Cargo.toml` for why they are a package of their own.
