//! The events a reorder window holds, handed out oldest first (by time,
//! then by line): a run of events that came in order, and a heap of the
//! others. Most of a log's lines come in order even when some do not (an
//! Envoy or ALB line is written when its request ends, stamped when it
//! began), so most events are appended to the run and taken from its
//! front, and only the ones that step back pay a heap's sifting (a heap of
//! every event was a twentieth of an Envoy log's read).

use super::reader::Buffered;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Buffered events: the same order out as one min-heap by `(time, seq)`.
#[derive(Debug, Default)]
pub(super) struct Reorder {
    /// Events in increasing `(time, seq)`, each pushed after the last.
    run: VecDeque<Buffered>,
    /// The events that would have broken the run's order.
    heap: BinaryHeap<Reverse<Buffered>>,
}

impl Reorder {
    /// Holds an event; `seq` must grow from one push to the next.
    pub(super) fn push(&mut self, e: Buffered) {
        match self.run.back() {
            Some(last) if (e.0, e.1) < (last.0, last.1) => self.heap.push(Reverse(e)),
            _ => self.run.push_back(e),
        }
    }

    /// Whether the oldest event is the run's front (None: nothing held).
    fn oldest_in_run(&self) -> Option<bool> {
        match (self.run.front(), self.heap.peek()) {
            (None, None) => None,
            (Some(_), None) => Some(true),
            (None, Some(_)) => Some(false),
            (Some(r), Some(Reverse(h))) => Some((r.0, r.1) < (h.0, h.1)),
        }
    }

    /// The time of the oldest event held.
    pub(super) fn oldest_time(&self) -> Option<u64> {
        match self.oldest_in_run()? {
            true => self.run.front().map(|e| e.0),
            false => self.heap.peek().map(|Reverse(e)| e.0),
        }
    }

    /// Takes the oldest event.
    pub(super) fn pop(&mut self) -> Option<Buffered> {
        match self.oldest_in_run()? {
            true => self.run.pop_front(),
            false => self.heap.pop().map(|Reverse(e)| e),
        }
    }

    /// Events held.
    pub(super) fn len(&self) -> usize {
        self.run.len() + self.heap.len()
    }

    /// Drops every event.
    pub(super) fn clear(&mut self) {
        self.run.clear();
        self.heap.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same events out, in the same order, as one heap, on seeded
    /// sequences mostly in order with steps back of every size, ties
    /// included, and pops interleaved with pushes.
    #[test]
    fn hands_out_what_one_heap_would() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..200u64 {
            let (mut ours, mut heap) = (Reorder::default(), BinaryHeap::new());
            let mut t = 1_000u64;
            for seq in 0..2_000u64 {
                let r = next();
                let when = match r % 4 {
                    0 => t.saturating_sub(r >> 40 & 0x3ff),
                    1 => t,
                    _ => {
                        t += r >> 50 & 0xf;
                        t
                    }
                };
                let e: Buffered = (when, seq, Some(format!("k{}", r % 7)), round);
                ours.push(e.clone());
                heap.push(Reverse(e));
                if next() % 3 == 0 {
                    assert_eq!(ours.oldest_time(), heap.peek().map(|Reverse(e)| e.0));
                    assert_eq!(ours.pop(), heap.pop().map(|Reverse(e)| e));
                }
                assert_eq!(ours.len(), heap.len());
            }
            while let Some(Reverse(e)) = heap.pop() {
                assert_eq!(ours.pop(), Some(e));
            }
            assert_eq!(
                (ours.pop(), ours.oldest_time(), ours.len()),
                (None, None, 0)
            );
        }
    }
}
