//! What the agents of a run are told: their scripts and the limiters they
//! share.

use crate::model::multi::{LimiterPool, Node};
use crate::model::uber_ratelimit::LeakyBucket;

/// One thing an agent does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// `WaitN(ctx, n)` on a pool limiter (bucket or multi; a multi passes
    /// `n` to each inner bucket, the nested multi-limiter examples use `n = 1`).
    Wait {
        /// The limiter.
        limiter: Node,
        /// Tokens per inner `Wait`.
        n: i64,
        /// Context deadline relative to the step's start; `None` = no
        /// deadline.
        timeout_ns: Option<i64>,
    },
    /// `Take()` on uber-go pacer `pacer` (index into [`World::pacers`]).
    Take {
        /// The pacer.
        pacer: usize,
    },
    /// Sleep (work) for `ns`.
    Sleep {
        /// Duration.
        ns: i64,
    },
}

/// What an agent does and when it arrives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentScript {
    /// Arrival time (virtual ns).
    pub arrival_ns: i64,
    /// The steps, in order.
    pub steps: Vec<Step>,
}

/// Everything the agents share.
#[derive(Clone, Debug, Default)]
pub struct World {
    /// `x/time/rate` limiters and multis.
    pub limiters: LimiterPool,
    /// uber-go/ratelimit pacers.
    pub pacers: Vec<LeakyBucket>,
}
