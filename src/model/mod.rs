//! The algorithms under test, one file each, modelled from their real sources.
//! None of them reads the time: they are handed `now`.
//!
//! | family | file | models |
//! |---|---|---|
//! | estimator | `estimator.rs` | pingora-limits `Estimator` (count-min sketch) |
//! | window | `rate.rs` | pingora-limits `Rate` (two-slot fixed window) |
//! | window | `fixed_window.rs` | tower 0.5 `RateLimit` (fixed window, waits) |
//! | inflight | `inflight.rs` | pingora-limits `Inflight` + `Guard` |
//! | pacer | `leaky_bucket.rs` | uber-go/ratelimit (atomic, atomic int64, mutex) |
//! | pacer | `token_bucket.rs` | golang.org/x/time/rate `Limiter` |
//! | pacer | `multi.rs` | the book's `MultiLimiter` |
//! | example | `proxy_example.rs` | pingora's rate-limiter user guide request_filter |

pub mod estimator;
pub mod fixed_window;
pub mod inflight;
pub mod leaky_bucket;
pub mod multi;
pub mod proxy_example;
pub mod rate;
pub mod token_bucket;
