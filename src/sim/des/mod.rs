//! A discrete-event engine: callers ("agents") that block on limiters and
//! wake on the virtual clock.
//!
//! Why: the pacer and multi-limiter experiments are about *concurrent*
//! callers (say 20 goroutines calling `Wait` or `Take` at once). Go's
//! scheduler makes their order nondeterministic; ratelab fixes one order and
//! says which, so a run is a pure function of its input.
//!
//! # What is inside
//! * `script` — the input, what each agent does ([`AgentScript`], [`Step`])
//!   and the limiters they share ([`World`]).
//! * `record` — the output, one [`AgentRecord`] per agent with a
//!   [`StepRecord`] per step, the processed [`EventRecord`]s, and
//!   [`SimError`].
//! * `engine`: [`run`], the event loop.
//! * `agent`: how one agent resumes and runs until it blocks again.
//!
//! # Time
//! The engine's times are signed `i64` nanoseconds, the clock of the Go
//! limiters it drives (`x/time/rate`, uber-go/ratelimit), so their models are
//! called without conversion.
//!
//! # Model
//! * Each agent runs a script: it arrives at `arrival_ns`, then runs its
//!   [`Step`]s in order. A step that must block schedules a wake-up on the
//!   virtual clock; nothing else happens for that agent until then.
//! * **Run to block**: an agent keeps running (without yielding to others)
//!   until a step makes it sleep, as a goroutine does when `Wait` returns
//!   without a delay.
//! * [`Step::Wait`] is `x/time/rate`'s `Wait` (`WaitN(ctx, n)`) on a bucket
//!   or on a `MultiLimiter`: a multi's inner `Wait`s are run one after the
//!   other, each at the virtual time the previous one returned, so other
//!   agents interleave between them (this is what gives the nested
//!   multi-limiter examples their timings). Each inner `Wait` reserves at the
//!   current time and the agent sleeps the reservation's delay. An optional
//!   timeout gives the context a deadline `timeout` after the step starts,
//!   shared by the inner `Wait`s.
//! * [`Step::Take`] is uber-go/ratelimit's `Take()`. Atomic variants: the
//!   agent sleeps after updating the state, so others are not held up. Mutex
//!   variant: the agent sleeps holding the lock; callers that arrive
//!   meanwhile queue **FIFO** (in the order they called) and each reads the
//!   clock when it gets the lock. The queue lives in
//!   [`LeakyBucket`](crate::model::uber_ratelimit::LeakyBucket) itself, which
//!   tracks when its lock is free; since the engine calls `take` in event
//!   order, that is FIFO hand-off.
//! * [`Step::Sleep`] is plain work/think time (`time.Sleep`; a non-positive
//!   duration returns at once).
//!
//! # Deterministic order
//! Events are processed by (virtual time, then scheduling sequence, then
//! agent id). The sequence number grows each time an event is scheduled.
//! All arrivals are scheduled before the run, in agent-id order, so
//! simultaneous arrivals run in agent-id order, and an arrival at `T` runs
//! before a wake-up at `T` scheduled during the run. Time never moves
//! backwards: a violation is returned as [`SimError::TimeWentBackwards`]
//! (and checked by tests).
//!
//! # Examples
//! Three callers wait on a bucket of one token per second with a burst of
//! one: they are let through at 0, 1 and 2 s.
//!
//! ```
//! use ratelab::model::x_time_rate::TokenBucket;
//! use ratelab::sim::des::{self, AgentScript, Step, World};
//!
//! let mut world = World::default();
//! let bucket = world.limiters.add_bucket(TokenBucket::new(1.0, 1));
//! let wait = Step::Wait { limiter: bucket, n: 1, timeout_ns: None };
//! let agents = vec![AgentScript { arrival_ns: 0, steps: vec![wait] }; 3];
//!
//! let outcome = des::run(&mut world, &agents)?;
//! let admitted: Vec<Option<i64>> = outcome
//!     .agents
//!     .iter()
//!     .map(|a| a.steps[0].admitted_ns)
//!     .collect();
//! assert_eq!(admitted, [Some(0), Some(1_000_000_000), Some(2_000_000_000)]);
//! # Ok::<(), ratelab::sim::des::SimError>(())
//! ```

mod agent;
mod engine;
pub(crate) mod record;
pub(crate) mod script;
#[cfg(test)]
mod tests;

pub use engine::run;
pub use record::{AgentRecord, EventRecord, SimError, SimOutcome, StepRecord};
pub use script::{AgentScript, Step, World};
