//! The algorithms under test, one file each, modelled from their real sources.
//! None of them reads the time: they are handed `now`.

pub mod estimator;
