//! Handing events out in time order: straight through (rejecting any step
//! back in time), or sorted within a bounded reorder window; a line older
//! than the window allows is an error naming it, or (with `skip_late`)
//! counted and skipped.

use super::format::{Disorder, TraceEvent};
use super::reader::{KeyAt, TraceReader};
use crate::clock::Nanos;
use crate::error::Result;

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
    #[inline]
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
            match self.check_order(t) {
                Ok(true) => return Some(Ok((t, at, w))),
                Ok(false) => continue,
                Err(e) => return Some(Err(e)),
            }
        }
    }

    /// Whether an event at `t` is handed out (true) or skipped as late
    /// (false, counted); a late event is an error unless late lines are
    /// skipped (the reader is then done).
    #[inline]
    pub(super) fn check_order(&mut self, t: Nanos) -> Result<bool> {
        if let Some(last) = self.last_emitted.filter(|&last| t < last) {
            if self.opts.skip_late {
                self.late += 1;
                return Ok(false);
            }
            self.done = true;
            self.buffer.clear();
            return Err(self.late_error(t, last));
        }
        self.last_emitted = Some(t);
        Ok(true)
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
            if let Some(t) = self.buffer.oldest_time()
                && (self.newest_seen.saturating_sub(t) > window || self.buffer.len() >= cap)
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
                    self.buffer.push((t, self.seq, k, w));
                }
                Ok(None) => self.done = true,
                Err(e) => {
                    self.done = true;
                    self.buffer.clear();
                    return Some(Err(e));
                }
            }
        }
        let (t, _, k, w) = self.buffer.pop()?;
        Some(Ok((t, k, w)))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{KeyCap, KeyInterner, TraceFormat, TraceOptions, TraceReader};
    use std::path::Path;

    fn reader(text: &str, opts: TraceOptions) -> TraceReader {
        let input = Box::new(std::io::Cursor::new(text.as_bytes().to_vec()));
        TraceReader::new(Path::new("t.csv"), TraceFormat::Csv, input, opts)
    }

    /// `next_id` reads a plain CSV trace in one function past its first
    /// event: the same events, ids (first appearance) and messages as the
    /// iterator's general path, through quoted keys, blank lines, carriage
    /// returns, late lines (rejected or skipped), bad fields and the key
    /// cap.
    #[test]
    fn next_id_reads_plain_csv_as_the_general_path() {
        let body = "t_ns,key,weight\n5,a,1\n7,\"b,c\",2\n\n  \n9,a,1\r\n9,d,1\n";
        let texts = [
            body.to_string(),
            format!("{body}8,e,1\n10,f,1\n"),
            format!("{body}10,\"g\"\"h\",1\n11,x,0\n12,y,1\n"),
            format!("{body}12,a\n"),
            format!("{body}1e3,a,1\n"),
            format!("{body}13,é,1\n14,a,1\n15,b,1\n"),
        ];
        for text in &texts {
            for skip_late in [false, true] {
                for cap in [usize::MAX, 3] {
                    let opts = TraceOptions {
                        skip_late,
                        ..TraceOptions::default()
                    };
                    let mut keys = KeyInterner::with_cap(cap);
                    let mut want = Vec::new();
                    let mut general = reader(text, opts);
                    while let Some(e) = general.next() {
                        match e {
                            Ok(e) => match keys.intern(&e.key) {
                                Some(id) => want.push(Ok((e.t_ns, Some(id), e.weight))),
                                None => {
                                    want.push(Err(format!("refused at line {}", general.line_no)));
                                    break;
                                }
                            },
                            Err(e) => want.push(Err(e.to_string())),
                        }
                    }
                    let mut r = reader(text, opts);
                    r.intern_keys(KeyCap {
                        keys: cap,
                        bytes_per_key: 512,
                    });
                    let mut got = Vec::new();
                    while let Some(e) = r.next_id() {
                        match e {
                            Ok(e) => got.push(Ok(e)),
                            Err(e) => {
                                let e = e.to_string();
                                if e.contains("distinct key number") {
                                    // A refused key: at its own line.
                                    let at = format!("line {}:", r.line_no);
                                    assert!(e.contains(&at), "{e}");
                                    got.push(Err(format!("refused at line {}", r.line_no)));
                                    break;
                                }
                                got.push(Err(e));
                            }
                        }
                    }
                    assert_eq!(got, want, "{text:?} skip_late {skip_late} cap {cap}");
                    assert!(!got.is_empty());
                }
            }
        }
    }
}
