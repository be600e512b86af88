//! Byte searches for splitting a log line, inline: 16 bytes at a time
//! with SSE2 (every x86-64 has it), a word of 8 at a time elsewhere and
//! for the tail. A log's fields are a few to a hundred bytes, where a call
//! to `memchr` and its setup cost more than the search (`perf`: a tenth of
//! a `combined` log's read, a fifth of a CloudFront log's, went to
//! `memchr` under the split); these find the same bytes.

/// The first `b` in `hay` at or after `from` (None: none, or `from` past
/// the end).
///
/// # Examples
///
/// ```
/// use ratelab::workload::trace::log::bytes::find_byte;
/// let line = b"10.0.0.1 - - [01/Jan/2024:00:00:00 +0000] \"GET / HTTP/1.1\"";
/// assert_eq!(find_byte(b'[', line, 0), Some(13));
/// assert_eq!(find_byte(b'"', line, 43), Some(57));
/// assert_eq!(find_byte(b'#', line, 0), None);
/// ```
#[inline]
pub fn find_byte(b: u8, hay: &[u8], from: usize) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
        };
        let len = hay.len();
        let mut i = from;
        // SAFETY: SSE2 is part of x86-64; every load reads the 16 bytes
        // `hay[at..at + 16]`, inside the slice (`at + 16 <= hay.len()`).
        unsafe {
            let pat = _mm_set1_epi8(b as i8);
            while i + 16 <= len {
                let chunk = _mm_loadu_si128(hay.as_ptr().add(i).cast::<__m128i>());
                let mask = _mm_movemask_epi8(_mm_cmpeq_epi8(chunk, pat));
                if mask != 0 {
                    return Some(i + mask.trailing_zeros() as usize);
                }
                i += 16;
            }
            // The last bytes: the 16 that end `hay`, those before `i`
            // shifted out (a field at a line's end is found without a
            // loop a byte).
            if i < len && len >= 16 {
                let last = len - 16;
                let chunk = _mm_loadu_si128(hay.as_ptr().add(last).cast::<__m128i>());
                let mask = (_mm_movemask_epi8(_mm_cmpeq_epi8(chunk, pat)) as u32) >> (i - last);
                return (mask != 0).then(|| i + mask.trailing_zeros() as usize);
            }
        }
        hay.get(i..)?.iter().position(|&c| c == b).map(|at| i + at)
    }
    #[cfg(not(target_arch = "x86_64"))]
    find_either(b, b, hay, from)
}

/// The first `a` or `b` in `hay` at or after `from`.
///
/// # Examples
///
/// ```
/// use ratelab::workload::trace::log::bytes::find_either;
/// assert_eq!(find_either(b'"', b'\\', br#"ab\"c""#, 0), Some(2));
/// assert_eq!(find_either(b'"', b'\\', br#"ab\"c""#, 3), Some(3));
/// ```
#[inline]
pub fn find_either(a: u8, b: u8, hay: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128,
            _mm_set1_epi8,
        };
        // SAFETY: SSE2 is part of x86-64; every load reads the 16 bytes
        // `hay[i..i + 16]`, inside the slice (`i + 16 <= hay.len()`).
        unsafe {
            let (pa, pb) = (_mm_set1_epi8(a as i8), _mm_set1_epi8(b as i8));
            while i + 16 <= hay.len() {
                let chunk = _mm_loadu_si128(hay.as_ptr().add(i).cast::<__m128i>());
                let hit = _mm_or_si128(_mm_cmpeq_epi8(chunk, pa), _mm_cmpeq_epi8(chunk, pb));
                let mask = _mm_movemask_epi8(hit);
                if mask != 0 {
                    return Some(i + mask.trailing_zeros() as usize);
                }
                i += 16;
            }
        }
    }
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let zero_of = |x: u64| x.wrapping_sub(LO) & !x & HI;
    let (pa, pb) = (LO * u64::from(a), LO * u64::from(b));
    while i + 8 <= hay.len() {
        let mut w = [0u8; 8];
        w.copy_from_slice(&hay[i..i + 8]);
        let w = u64::from_le_bytes(w);
        // A zero byte of `w ^ pattern` is a match; the lowest flag set is
        // the first (a borrow only runs upwards, past a true zero).
        let found = zero_of(w ^ pa) | zero_of(w ^ pb);
        if found != 0 {
            return Some(i + (found.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    hay.get(i..)?
        .iter()
        .position(|&c| c == a || c == b)
        .map(|at| i + at)
}

/// Where the line that starts at `from` ends (its first `\n`; None: the
/// text ends first) and whether its bytes before that are all ASCII:
/// found together, 16 bytes at a time, so that a reader need not check a
/// block for UTF-8 in a pass of its own (an ASCII line is UTF-8; only the
/// others are checked).
///
/// # Examples
///
/// ```
/// use ratelab::workload::trace::log::bytes::line_end;
/// let text = "a b\ncaf\u{e9}\nz".as_bytes();
/// assert_eq!(line_end(text, 0), (Some(3), true));
/// assert_eq!(line_end(text, 4), (Some(9), false));
/// assert_eq!(line_end(text, 10), (None, true));
/// ```
#[inline]
pub fn line_end(hay: &[u8], from: usize) -> (Option<usize>, bool) {
    let mut i = from;
    let mut ascii = true;
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128,
            _mm_set1_epi8, _mm_setzero_si128,
        };
        // SAFETY: SSE2 is part of x86-64; every load reads the 16 bytes
        // `hay[i..i + 16]`, inside the slice (`i + 16 <= hay.len()`).
        unsafe {
            let newline = _mm_set1_epi8(b'\n' as i8);
            // The bytes before the current 16, OR-ed: a high bit set is a
            // byte that is not ASCII.
            let mut high = _mm_setzero_si128();
            while i + 16 <= hay.len() {
                let chunk = _mm_loadu_si128(hay.as_ptr().add(i).cast::<__m128i>());
                let mask = _mm_movemask_epi8(_mm_cmpeq_epi8(chunk, newline)) as u32;
                if mask != 0 {
                    let k = mask.trailing_zeros();
                    let before = _mm_movemask_epi8(chunk) as u32 & ((1 << k) - 1);
                    let earlier = _mm_movemask_epi8(high);
                    return (Some(i + k as usize), before == 0 && earlier == 0);
                }
                high = _mm_or_si128(high, chunk);
                i += 16;
            }
            ascii &= _mm_movemask_epi8(high) == 0;
        }
    }
    for (at, &c) in hay.iter().enumerate().skip(i) {
        if c == b'\n' {
            return (Some(at), ascii);
        }
        ascii &= c.is_ascii();
    }
    (None, ascii)
}

/// The first byte at or after `from` that ends a run of a JSON string's
/// plain bytes: a quote, a backslash or a control byte (below 0x20, which
/// JSON does not allow in a string).
///
/// # Examples
///
/// ```
/// use ratelab::workload::trace::log::bytes::find_json_stop;
/// assert_eq!(find_json_stop(br#"abc"d"#, 0), Some(3));
/// assert_eq!(find_json_stop(b"ab\tc", 0), Some(2));
/// assert_eq!(find_json_stop(b"ab\x01c\"", 0), Some(2));
/// assert_eq!(find_json_stop("caf\u{e9}".as_bytes(), 0), None);
/// ```
#[inline]
pub fn find_json_stop(hay: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8,
            _mm_or_si128, _mm_set1_epi8,
        };
        // SAFETY: SSE2 is part of x86-64; every load reads the 16 bytes
        // `hay[i..i + 16]`, inside the slice (`i + 16 <= hay.len()`).
        unsafe {
            let (quote, slash, low) = (
                _mm_set1_epi8(b'"' as i8),
                _mm_set1_epi8(b'\\' as i8),
                _mm_set1_epi8(0x1f),
            );
            while i + 16 <= hay.len() {
                let chunk = _mm_loadu_si128(hay.as_ptr().add(i).cast::<__m128i>());
                // x <= 0x1f (unsigned) exactly when min(x, 0x1f) == x.
                let control = _mm_cmpeq_epi8(_mm_min_epu8(chunk, low), chunk);
                let hit = _mm_or_si128(
                    _mm_or_si128(_mm_cmpeq_epi8(chunk, quote), _mm_cmpeq_epi8(chunk, slash)),
                    control,
                );
                let mask = _mm_movemask_epi8(hit);
                if mask != 0 {
                    return Some(i + mask.trailing_zeros() as usize);
                }
                i += 16;
            }
        }
    }
    hay.get(i..)?
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .map(|at| i + at)
}

/// Calls `f` with where each `b` of `hay` is, in order: 16 bytes compared
/// at once and each match taken from the chunk's mask, so a line with a
/// separator every few bytes (a W3C log's tabs) costs a few instructions
/// a separator, where a search from each to the next paid its setup every
/// time.
///
/// # Examples
///
/// ```
/// use ratelab::workload::trace::log::bytes::each_position;
/// let mut tabs = Vec::new();
/// each_position(b'\t', b"a\tbb\t\tc", |at| tabs.push(at));
/// assert_eq!(tabs, [1, 4, 5]);
/// ```
#[inline]
pub fn each_position(b: u8, hay: &[u8], mut f: impl FnMut(usize)) {
    let mut i = 0;
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
        };
        // SAFETY: SSE2 is part of x86-64; every load reads the 16 bytes
        // `hay[i..i + 16]`, inside the slice (`i + 16 <= hay.len()`).
        unsafe {
            let pat = _mm_set1_epi8(b as i8);
            while i + 16 <= hay.len() {
                let chunk = _mm_loadu_si128(hay.as_ptr().add(i).cast::<__m128i>());
                let mut mask = _mm_movemask_epi8(_mm_cmpeq_epi8(chunk, pat)) as u32;
                while mask != 0 {
                    f(i + mask.trailing_zeros() as usize);
                    mask &= mask - 1;
                }
                i += 16;
            }
        }
    }
    for (at, &c) in hay.iter().enumerate().skip(i) {
        if c == b {
            f(at);
        }
    }
}

/// Calls `f(base, ma, mb)` for each 64 bytes of `hay` from `from` on (the
/// last run shorter): bit `k` of `ma` is set when `hay[base + k]` is `a`,
/// of `mb` when it is `b` (no bit past the end). Stops where `f` returns
/// false, and says whether it ran to the end. Sixty-four bytes a call, so
/// a long line's sparse bytes (an ALB line's quotes) cost a few
/// instructions each and its other bytes a fraction of one.
///
/// # Examples
///
/// ```
/// use ratelab::workload::trace::log::bytes::each_mask64;
/// let mut seen = Vec::new();
/// let hay = br#"a "b" \c"#;
/// assert!(each_mask64(b'"', b'\\', hay, 1, |base, q, s| {
///     seen.push((base, q, s));
///     true
/// }));
/// assert_eq!(seen, [(1, 0b1010, 0b10_0000)]);
/// ```
#[inline]
pub fn each_mask64(
    a: u8,
    b: u8,
    hay: &[u8],
    from: usize,
    mut f: impl FnMut(usize, u64, u64) -> bool,
) -> bool {
    let len = hay.len();
    let mut i = from;
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
        };
        // SAFETY: SSE2 is part of x86-64; every load reads the 16 bytes
        // `hay[at..at + 16]`, inside the slice (`at + 16 <= hay.len()`).
        unsafe {
            let (pa, pb) = (_mm_set1_epi8(a as i8), _mm_set1_epi8(b as i8));
            let masks = |at: usize| {
                let chunk = _mm_loadu_si128(hay.as_ptr().add(at).cast::<__m128i>());
                (
                    _mm_movemask_epi8(_mm_cmpeq_epi8(chunk, pa)) as u16 as u64,
                    _mm_movemask_epi8(_mm_cmpeq_epi8(chunk, pb)) as u16 as u64,
                )
            };
            while i + 64 <= len {
                let (a0, b0) = masks(i);
                let (a1, b1) = masks(i + 16);
                let (a2, b2) = masks(i + 32);
                let (a3, b3) = masks(i + 48);
                let ma = a0 | a1 << 16 | a2 << 32 | a3 << 48;
                let mb = b0 | b1 << 16 | b2 << 32 | b3 << 48;
                if !f(i, ma, mb) {
                    return false;
                }
                i += 64;
            }
            if i >= len {
                return true;
            }
            // The last run, under 64 bytes: 16 at a time, then its last
            // bytes from the 16 that end the line (those before `k`
            // shifted out).
            let (mut ma, mut mb) = (0u64, 0u64);
            let mut k = i;
            while k + 16 <= len {
                let (x, y) = masks(k);
                ma |= x << (k - i);
                mb |= y << (k - i);
                k += 16;
            }
            if k < len && len >= 16 {
                let (x, y) = masks(len - 16);
                let seen = k - (len - 16);
                ma |= (x >> seen) << (k - i);
                mb |= (y >> seen) << (k - i);
                k = len;
            }
            for (at, &c) in hay.iter().enumerate().take(len).skip(k) {
                ma |= u64::from(c == a) << (at - i);
                mb |= u64::from(c == b) << (at - i);
            }
            return f(i, ma, mb);
        }
    }
    #[allow(unreachable_code)]
    while i < len {
        let (mut ma, mut mb) = (0u64, 0u64);
        for (k, &c) in hay[i..len.min(i + 64)].iter().enumerate() {
            ma |= u64::from(c == a) << k;
            mb |= u64::from(c == b) << k;
        }
        if !f(i, ma, mb) {
            return false;
        }
        i += 64;
    }
    true
}

/// How many `b` there are in `hay` from `from` on: 16 bytes compared at
/// once and the matches summed in the vector (a W3C line's tabs after the
/// fields a run reads are counted, not found one by one).
///
/// # Examples
///
/// ```
/// use ratelab::workload::trace::log::bytes::count_byte;
/// assert_eq!(count_byte(b'\t', b"a\tb\t\tc", 0), 3);
/// assert_eq!(count_byte(b'\t', b"a\tb\t\tc", 2), 2);
/// assert_eq!(count_byte(b'\t', b"a\tb", 9), 0);
/// ```
#[inline]
pub fn count_byte(b: u8, hay: &[u8], from: usize) -> usize {
    let mut i = from;
    let mut n = 0usize;
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_cvtsi128_si32, _mm_extract_epi16, _mm_loadu_si128,
            _mm_movemask_epi8, _mm_sad_epu8, _mm_set1_epi8, _mm_setzero_si128, _mm_sub_epi8,
        };
        // SAFETY: SSE2 is part of x86-64; every load reads the 16 bytes
        // `hay[at..at + 16]`, inside the slice (`at + 16 <= hay.len()`).
        unsafe {
            let pat = _mm_set1_epi8(b as i8);
            let zero = _mm_setzero_si128();
            while i + 16 <= hay.len() {
                // Each byte of `acc` counts its lane's matches: at most
                // 255 chunks before they are summed.
                let end = hay.len().min(i + 255 * 16);
                let mut acc = zero;
                while i + 16 <= end {
                    let chunk = _mm_loadu_si128(hay.as_ptr().add(i).cast::<__m128i>());
                    acc = _mm_sub_epi8(acc, _mm_cmpeq_epi8(chunk, pat));
                    i += 16;
                }
                let sums = _mm_sad_epu8(acc, zero);
                n += _mm_cvtsi128_si32(sums) as usize + _mm_extract_epi16::<4>(sums) as usize;
            }
            // The last bytes: from the 16 that end `hay`, those not
            // counted yet.
            if i < hay.len() && hay.len() >= 16 {
                let last = hay.len() - 16;
                let chunk = _mm_loadu_si128(hay.as_ptr().add(last).cast::<__m128i>());
                let mask = _mm_movemask_epi8(_mm_cmpeq_epi8(chunk, pat)) as u32;
                return n + (mask >> (i - last)).count_ones() as usize;
            }
        }
    }
    n + hay
        .get(i..)
        .map_or(0, |rest| rest.iter().filter(|&&c| c == b).count())
}

/// The first `stop` fields of `hay` split at `sep` into `spans` (as
/// [`split_fields`] splits them): `Ok` with where the field after them
/// starts, or `Err` with how many fields `hay` has when it has no more
/// than `stop`.
///
/// # Examples
///
/// ```
/// use ratelab::workload::trace::log::bytes::split_first;
/// let mut spans = [(0, 0); 3];
/// assert_eq!(split_first(b'\t', b"a\tbb\tc\td", &mut spans, 2), Ok(5));
/// assert_eq!(spans[..2], [(0, 1), (2, 4)]);
/// assert_eq!(split_first(b'\t', b"a\tbb", &mut spans, 3), Err(2));
/// ```
#[inline]
pub fn split_first(
    sep: u8,
    hay: &[u8],
    spans: &mut [(u32, u32)],
    stop: usize,
) -> Result<usize, usize> {
    let mut start = 0;
    for k in 0..stop {
        let Some(end) = find_byte(sep, hay, start) else {
            if let Some(s) = spans.get_mut(k) {
                *s = (start as u32, hay.len() as u32);
            }
            return Err(k + 1);
        };
        if let Some(s) = spans.get_mut(k) {
            *s = (start as u32, end as u32);
        }
        start = end + 1;
    }
    Ok(start)
}

/// Splits `hay` at every `sep` ([`each_position`]): the fields' spans
/// into `spans` (those past its end dropped), and how many fields there
/// are (one more than the separators).
///
/// # Examples
///
/// ```
/// use ratelab::workload::trace::log::bytes::split_fields;
/// let mut spans = [(0, 0); 2];
/// assert_eq!(split_fields(b'\t', b"a\tbb\tc", &mut spans), 3);
/// assert_eq!(spans, [(0, 1), (2, 4)]);
/// ```
pub fn split_fields(sep: u8, hay: &[u8], spans: &mut [(u32, u32)]) -> usize {
    let mut n = 0;
    let mut start = 0usize;
    let mut field = |end: usize| {
        if n < spans.len() {
            spans[n] = (start as u32, end as u32);
        }
        n += 1;
        start = end + 1;
    };
    each_position(sep, hay, &mut field);
    field(hay.len());
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_searches_find_what_a_plain_search_finds() {
        // Every start and length around the 8- and 16-byte steps, the
        // bytes absent, once, or more than once.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for len in 0..80 {
            for _ in 0..40 {
                let hay: Vec<u8> = (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        b"ab\"\n \\\xff\x1f\x20\x00"[(x % 10) as usize]
                    })
                    .collect();
                for from in 0..=len + 1 {
                    for (a, b) in [(b'"', b'"'), (b'\n', b'\n'), (b'z', b'z'), (b'"', b'\\')] {
                        let want = hay
                            .get(from..)
                            .and_then(|h| h.iter().position(|&c| c == a || c == b))
                            .map(|i| from + i);
                        assert_eq!(find_either(a, b, &hay, from), want, "{hay:?} from {from}");
                        if a == b {
                            assert_eq!(find_byte(a, &hay, from), want);
                        }
                    }
                }
                for from in 0..=len + 1 {
                    let want = hay
                        .get(from..)
                        .and_then(|h| h.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20))
                        .map(|i| from + i);
                    assert_eq!(find_json_stop(&hay, from), want, "{hay:?} from {from}");
                }
                for from in 0..=len + 1 {
                    let end = hay
                        .get(from..)
                        .and_then(|h| h.iter().position(|&c| c == b'\n'))
                        .map(|i| from + i);
                    let line = hay.get(from..end.unwrap_or(len)).unwrap_or_default();
                    assert_eq!(
                        line_end(&hay, from),
                        (end, line.is_ascii()),
                        "{hay:?} from {from}"
                    );
                }
                for from in 0..=len + 1 {
                    let want = hay
                        .get(from..)
                        .map_or(0, |h| h.iter().filter(|&&c| c == b'"').count());
                    assert_eq!(count_byte(b'"', &hay, from), want, "{hay:?} from {from}");
                }
                let mut all = [(0, 0); 100];
                let n = split_fields(b'"', &hay, &mut all);
                for stop in 0..n + 2 {
                    let mut first = [(9, 9); 100];
                    match split_first(b'"', &hay, &mut first, stop) {
                        Ok(rest) => {
                            assert!(stop < n, "{hay:?} stop {stop}");
                            assert_eq!(
                                rest,
                                if stop == 0 {
                                    0
                                } else {
                                    all[stop - 1].1 as usize + 1
                                }
                            );
                            assert_eq!(first[..stop], all[..stop], "{hay:?} stop {stop}");
                        }
                        Err(m) => {
                            assert!(stop >= n && m == n, "{hay:?} stop {stop}");
                            assert_eq!(first[..n], all[..n], "{hay:?} stop {stop}");
                        }
                    }
                }
                let want: Vec<usize> = (0..hay.len()).filter(|&i| hay[i] == b'\n').collect();
                let mut each = Vec::new();
                each_position(b'\n', &hay, |at| each.push(at));
                assert_eq!(each, want);
                for from in 0..=len + 1 {
                    // The masks' bits, in order, are the bytes' places.
                    let (mut qs, mut bs) = (Vec::new(), Vec::new());
                    let whole = each_mask64(b'"', b'\\', &hay, from, |base, q, b| {
                        for k in 0..64 {
                            if q >> k & 1 == 1 {
                                qs.push(base + k);
                            }
                            if b >> k & 1 == 1 {
                                bs.push(base + k);
                            }
                        }
                        true
                    });
                    assert!(whole);
                    let at = |c: u8| -> Vec<usize> {
                        (from..hay.len()).filter(|&i| hay[i] == c).collect()
                    };
                    assert_eq!((qs, bs), (at(b'"'), at(b'\\')), "{hay:?} from {from}");
                }
            }
        }
    }
}
