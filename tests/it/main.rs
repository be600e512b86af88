//! Every end-to-end test, in one binary (one link instead of one per file):
//! a module per area, `common` the shared helpers. Run one area with
//! `cargo test --test it <area>::` (e.g. `cargo test --test it peers::`).
//!
//! These tests share one process: none may change process-wide state (the
//! environment, the working directory, rlimits, signal dispositions) except
//! in a child between fork and exec (`Command::pre_exec`), as
//! `write_faults` does. Slow tests are `#[ignore]`d with a reason starting
//! "slow:"; `.ci/run` runs them with `cargo test -- --include-ignored`.

mod common;

mod access_logs;
mod bad_inputs;
mod characterization;
mod chart_layout;
mod check;
mod ci_script;
mod cli_teaches;
mod count_min_table;
mod crash_safety;
mod decision;
mod docs;
mod estimator_cli;
mod exec_ci_layout;
mod exec_estimator;
mod exec_examples;
mod exec_harness;
mod exec_limiter;
mod exec_reference;
mod exec_trust;
mod fleet;
mod fleet_reference;
mod fuzz;
mod fuzz_surfaces;
mod gcra_vs_governor;
mod limiter_seam;
mod msrv;
mod notebooks;
mod partitions;
mod peers;
mod portable_numerics;
mod proptests;
mod real_estimator;
mod real_nginx;
mod real_redis_rate;
mod recommend;
mod recommend_fleet;
mod recommend_real_nginx;
mod recommend_snippets;
mod replay_modes;
mod replay_pacers;
mod replay_rate;
mod report_html;
mod reproduce_concurrent;
mod samplers;
mod shard;
mod shard_decision;
mod signals;
mod size_limit;
mod size_search;
mod sizing_guarantee;
mod structure;
mod write_faults;
