//! Handing events out in time order: straight through (rejecting any step
//! back in time), or sorted within a bounded reorder window; a line older
//! than the window allows is an error naming it, or (with `skip_late`)
//! counted and skipped.

use super::format::{Disorder, TraceEvent};
use super::reader::{KeyAt, TraceReader};
use crate::clock::Nanos;
use crate::error::Result;
use std::cmp::Reverse;

/// Most events held for sorting when `TraceOptions::max_buffered` is not
/// set.
const DEFAULT_MAX_BUFFERED: usize = 1_000_000;

impl Iterator for TraceReader {
    type Item = Result<TraceEvent>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(self.next_event()?.map(|(t, at, w)| TraceEvent {
            t_ns: t,
            key: self.key_at(&at).to_string(),
            weight: w,
        }))
    }
}

impl TraceReader {
    /// The next event as the iterator would hand it out, with its key
    /// borrowed from the reader: no allocation per line when events come in
    /// order (a sorted reader still holds each buffered key as its own
    /// string). What a consumer that interns keys should call; the same
    /// events and errors as [`Iterator::next`].
    ///
    /// # Examples
    /// ```
    /// use ratelab::workload::trace::{TraceFormat, TraceOptions, TraceReader};
    /// use std::io::Cursor;
    /// use std::path::Path;
    ///
    /// let input = Box::new(Cursor::new(b"t_ns,key\n5,a\n7,\"b,c\"\n".to_vec()));
    /// let mut r = TraceReader::new(Path::new("t.csv"), TraceFormat::Csv, input, TraceOptions::default());
    /// assert_eq!(r.next_ref().unwrap()?, (5, "a", 1));
    /// assert_eq!(r.next_ref().unwrap()?, (7, "b,c", 1));
    /// assert!(r.next_ref().is_none());
    /// # Ok::<(), ratelab::error::Error>(())
    /// ```
    pub fn next_ref(&mut self) -> Option<Result<(Nanos, &str, u64)>> {
        match self.next_event()? {
            Ok((t, at, w)) => Some(Ok((t, self.key_at(&at), w))),
            Err(e) => Some(Err(e)),
        }
    }

    /// The next event as [`next_ref`](Self::next_ref) hands it out, the
    /// key None when the reader's filter ([`TraceReader::set_key_filter`])
    /// does not want it.
    ///
    /// # Examples
    /// ```
    /// use ratelab::workload::trace::{TraceFormat, TraceOptions, TraceReader};
    /// use std::io::Cursor;
    /// use std::path::Path;
    /// use std::sync::Arc;
    ///
    /// let input = Box::new(Cursor::new(b"t_ns,key\n5,a\n7,b\n".to_vec()));
    /// let mut r = TraceReader::new(Path::new("t.csv"), TraceFormat::Csv, input, TraceOptions::default());
    /// r.set_key_filter(Arc::new(|k: &str| k == "b"), false);
    /// assert_eq!(r.next_key().unwrap()?, (5, None, 1));
    /// assert_eq!(r.next_key().unwrap()?, (7, Some("b"), 1));
    /// assert!(r.next_key().is_none());
    /// # Ok::<(), ratelab::error::Error>(())
    /// ```
    pub fn next_key(&mut self) -> Option<Result<(Nanos, Option<&str>, u64)>> {
        match self.next_event()? {
            Ok((t, at, w)) => Some(Ok((t, self.key_of(&at), w))),
            Err(e) => Some(Err(e)),
        }
    }

    /// Lines skipped because they were older than the reorder window
    /// allows (only with `skip_late`).
    pub fn late_skipped(&self) -> u64 {
        self.late + self.part_readers().map(|r| r.late).sum::<u64>()
    }

    /// The next event in time order (before spreading): every line in
    /// order, or sorted within the window; a late line is an error, or
    /// skipped and counted.
    pub(super) fn next_ordered(&mut self) -> Option<Result<(Nanos, KeyAt, u64)>> {
        loop {
            let (t, at, w) = match self.opts.disorder {
                Disorder::Reject => {
                    if self.done {
                        return None;
                    }
                    match self.next_raw_at() {
                        Ok(Some(e)) => e,
                        Ok(None) => return None,
                        Err(e) => {
                            self.done = true;
                            return Some(Err(e));
                        }
                    }
                }
                Disorder::SortWithin(_) => match self.next_sorted_owned()? {
                    Ok((t, Some(k), w)) => {
                        self.held_key = k;
                        (t, KeyAt::Held, w)
                    }
                    Ok((t, None, w)) => (t, KeyAt::Elsewhere, w),
                    Err(e) => return Some(Err(e)),
                },
            };
            if let Some(last) = self.last_emitted.filter(|&last| t < last) {
                if self.opts.skip_late {
                    self.late += 1;
                    continue;
                }
                self.done = true;
                self.buffer.clear();
                return Some(Err(self.late_error(t, last)));
            }
            self.last_emitted = Some(t);
            return Some(Ok((t, at, w)));
        }
    }

    /// The oldest buffered event once nothing within `window` of the newest
    /// line read can precede it (or the buffer is full).
    fn next_sorted_owned(&mut self) -> Option<Result<(Nanos, Option<String>, u64)>> {
        let Disorder::SortWithin(window) = self.opts.disorder else {
            return None;
        };
        let cap = self.opts.max_buffered.unwrap_or(DEFAULT_MAX_BUFFERED);
        while !self.done {
            // Emit the oldest once nothing within the window can precede it.
            if let Some(Reverse((t, _, _, _))) = self.buffer.peek()
                && (self.newest_seen.saturating_sub(*t) > window || self.buffer.len() >= cap)
            {
                break;
            }
            match self.next_raw() {
                Ok(Some((t, k, w))) => {
                    // A line already older than the window is late however
                    // the buffer is ordered: say so at its own line. Older
                    // than the window is more than `window` behind the
                    // newest line read, or behind an event already handed
                    // out (the buffer may be full before the window is):
                    // in the first window too, where nothing was handed out
                    // yet and a step back of any size would otherwise be
                    // sorted in.
                    let behind = self.newest_seen.saturating_sub(t) > window;
                    let last = self.last_emitted.filter(|&last| t < last);
                    if behind || last.is_some() {
                        let last = last.unwrap_or(self.newest_seen);
                        if self.opts.skip_late {
                            self.late += 1;
                            continue;
                        }
                        self.done = true;
                        self.buffer.clear();
                        return Some(Err(self.late_error(t, last)));
                    }
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
        Some(Ok((t, k, w)))
    }
}
