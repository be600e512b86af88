//! Replay of one model; see `crate::replay`.

use super::ReplayArgs;
use crate::error::{Error, Result};

/// Replays `args.trace` into `args.out`.
pub fn run(args: &ReplayArgs) -> Result<()> {
    Err(Error::input(format!(
        "replay --algo {:?} is not built yet",
        args.algo
    )))
}
