//! Handing events out in time order: straight through (rejecting any step
//! back in time), or sorted within a bounded reorder window.

use super::format::{Disorder, TraceEvent};
use super::reader::TraceReader;
use crate::clock::Nanos;
use crate::error::Result;
use std::cmp::Reverse;

/// Most events held for sorting when `TraceOptions::max_buffered` is not
/// set.
const DEFAULT_MAX_BUFFERED: usize = 1_000_000;

impl Iterator for TraceReader {
    type Item = Result<TraceEvent>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.opts.disorder {
            Disorder::Reject => self.next_in_order(),
            Disorder::SortWithin(window) => self.next_sorted(window),
        }
    }
}

impl TraceReader {
    /// The next line's event, an error if it is earlier than the last.
    fn next_in_order(&mut self) -> Option<Result<TraceEvent>> {
        if self.done {
            return None;
        }
        match self.next_raw() {
            Ok(Some((t, k, w))) => {
                let r = self.emit(t, k, w);
                self.done = r.is_err();
                Some(r)
            }
            Ok(None) => None,
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }

    /// The oldest buffered event once nothing within `window` of the newest
    /// line read can precede it (or the buffer is full).
    fn next_sorted(&mut self, window: Nanos) -> Option<Result<TraceEvent>> {
        let cap = self.opts.max_buffered.unwrap_or(DEFAULT_MAX_BUFFERED);
        while !self.done {
            // Emit the oldest once nothing within the window can precede it.
            if let Some(Reverse((t, _, _, _))) = self.buffer.peek() {
                if self.newest_seen.saturating_sub(*t) > window || self.buffer.len() >= cap {
                    break;
                }
            }
            match self.next_raw() {
                Ok(Some((t, k, w))) => {
                    self.newest_seen = self.newest_seen.max(t);
                    self.seq += 1;
                    self.buffer.push(Reverse((t, self.seq, k, w)));
                }
                Ok(None) => self.done = true,
                Err(e) => {
                    self.done = true;
                    self.buffer.clear();
                    return Some(Err(e));
                }
            }
        }
        let Reverse((t, _, k, w)) = self.buffer.pop()?;
        let r = self.emit(t, k, w);
        if r.is_err() {
            self.done = true;
            self.buffer.clear();
        }
        Some(r)
    }
}
