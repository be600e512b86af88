//! Keys to dense ids, straight from borrowed bytes: what a consumer of
//! [`TraceReader::next_ref`](super::TraceReader::next_ref) keeps instead of
//! a `String` per line.
//!
//! The keys live back to back in one byte arena and an open-addressing
//! table maps a key's xxh3 hash to its id. A slot holds the id, 24 more
//! bits of the hash, the key's length and its first 16 bytes, so a key of
//! at most 16 bytes (most client ids, every IPv4 address) is found with
//! one memory access; a longer one is compared with the arena only when
//! all of those agree. Looking a key up was three cache misses (table,
//! key's end, key's bytes) before the key moved into the slot (with 8
//! bytes in the slot, an address of 9 to 15 characters still paid all
//! three: a tenth of a shard's time on a log keyed by address). Nothing
//! here depends on the order of the table: the same keys in the same
//! order get the same ids on every machine.

use xxhash_rust::xxh3::xxh3_64;

/// Dense `u32` ids for the keys of a trace, in order of first appearance.
///
/// # Examples
/// ```
/// use ratelab::workload::trace::KeyInterner;
///
/// let mut keys = KeyInterner::new();
/// assert_eq!(keys.intern("alice"), Some(0));
/// assert_eq!(keys.intern("bob"), Some(1));
/// assert_eq!(keys.intern("alice"), Some(0));
/// assert_eq!(keys.get("bob"), Some(1));
/// assert_eq!(keys.get("carol"), None);
/// assert_eq!(keys.name(1), Some("bob"));
/// assert_eq!(keys.len(), 2);
/// ```
#[derive(Debug, Clone, Default)]
pub struct KeyInterner {
    /// Every key's bytes, back to back.
    arena: String,
    /// End of key `i` in `arena` (it starts where key `i - 1` ends).
    ends: Vec<usize>,
    /// `[tag << 32 | (id + 1), bytes 0..8, bytes 8..16]` (see
    /// [`slot_of`]); 0 is an empty slot. The length is a power of two, at
    /// most half full.
    slots: Slots,
    /// Most keys accepted (`u32::MAX` when unset).
    cap: Option<usize>,
    /// Keys at and past this id were added by [`KeyInterner::push_name`]
    /// and are not in `slots` yet (the table is made on first use).
    unindexed: Option<u32>,
}

impl KeyInterner {
    /// An empty interner.
    pub fn new() -> Self {
        Self::default()
    }

    /// An interner that refuses a key beyond the first `cap` distinct ones
    /// ([`KeyInterner::intern`] returns None for it).
    pub fn with_cap(cap: usize) -> Self {
        Self {
            cap: Some(cap),
            ..Self::default()
        }
    }

    /// Distinct keys interned.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether no key was interned.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The key of `id`.
    pub fn name(&self, id: u32) -> Option<&str> {
        let i = id as usize;
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        self.arena.get(start..end)
    }

    /// The id of `key`, if it was interned.
    pub fn get(&self, key: &str) -> Option<u32> {
        if let Ok(id) = self.find(key, xxh3_64(key.as_bytes())) {
            return Some(id);
        }
        // Names not in the table yet: looked through (a table of them is
        // made only when a key is interned).
        let from = self.unindexed?;
        (from..self.len() as u32).find(|&id| self.bytes(id) == key.as_bytes())
    }

    /// Adds `key` as the next id without looking it up: for a caller whose
    /// keys were already told apart by another interner (an access log's
    /// blocks intern their keys as they are parsed, and the reader keeps
    /// only their names). Its table is made when a key is next interned
    /// ([`KeyInterner::intern`]); until then [`KeyInterner::get`] looks
    /// through the names added so. Making that table while reading was a
    /// second hash table of every key, its growth and its page faults: a
    /// tenth and more of reading a log of many clients. None past the cap.
    ///
    /// # Examples
    /// ```
    /// use ratelab::workload::trace::KeyInterner;
    ///
    /// let mut keys = KeyInterner::with_cap(2);
    /// assert_eq!(keys.push_name("alice"), Some(0));
    /// assert_eq!(keys.push_name("bob"), Some(1));
    /// assert_eq!(keys.push_name("carol"), None);
    /// assert_eq!(keys.get("bob"), Some(1));
    /// assert_eq!(keys.intern("alice"), Some(0));
    /// assert_eq!(keys.name(1), Some("bob"));
    /// ```
    pub fn push_name(&mut self, key: &str) -> Option<u32> {
        let id = self.append(key)?;
        self.unindexed.get_or_insert(id);
        Some(id)
    }

    /// Puts the names added by [`KeyInterner::push_name`] in the table.
    fn index(&mut self) {
        if self.unindexed.take().is_some() {
            let n = (2 * self.len() + 1).next_power_of_two().max(16);
            self.rebuild(n);
        }
    }

    /// The id of `key`, a new one (the next integer) if it is new; None when
    /// a new key would pass the cap (or `u32::MAX` keys).
    pub fn intern(&mut self, key: &str) -> Option<u32> {
        self.intern_hashed(key, Self::hash(key))
    }

    /// The hash of `key` that [`KeyInterner::prefetch`] and
    /// [`KeyInterner::intern_hashed`] take.
    pub fn hash(key: &str) -> u64 {
        xxh3_64(key.as_bytes())
    }

    /// Asks the CPU for the table slot where the lookup of hash `h`
    /// starts, so that an [`KeyInterner::intern_hashed`] of it a few keys
    /// later finds it in cache: a reader that parses some lines ahead of
    /// the one it interns overlaps the table's cache misses (one a request
    /// on a trace with many keys: a fifth of a one-candidate decision run)
    /// with the parsing. A hint only: nothing it does changes an id.
    ///
    /// # Examples
    /// ```
    /// use ratelab::workload::trace::KeyInterner;
    ///
    /// let mut keys = KeyInterner::new();
    /// let h = KeyInterner::hash("alice");
    /// keys.prefetch(h);
    /// assert_eq!(keys.intern_hashed("alice", h), Some(0));
    /// assert_eq!(keys.intern("alice"), Some(0));
    /// ```
    pub fn prefetch(&self, h: u64) {
        if let Some(slot) = self
            .slots
            .get(h as usize & self.slots.len().wrapping_sub(1))
        {
            crate::prefetch::read(slot);
        }
    }

    /// The next id's name appended (None past the cap or u32's ids), not
    /// yet in the table.
    #[inline]
    fn append(&mut self, key: &str) -> Option<u32> {
        let max = self.cap.unwrap_or(usize::MAX).min(u32::MAX as usize - 1);
        if self.len() >= max {
            return None;
        }
        let id = self.len() as u32;
        self.arena.push_str(key);
        self.ends.push(self.arena.len());
        Some(id)
    }

    /// [`KeyInterner::intern`] of `key` whose [`KeyInterner::hash`] is `h`.
    pub fn intern_hashed(&mut self, key: &str, h: u64) -> Option<u32> {
        self.index();
        if self.slots.is_empty() {
            self.grow();
        }
        let slot = match self.find(key, h) {
            Ok(id) => return Some(id),
            Err(slot) => slot,
        };
        let id = self.append(key)?;
        self.slots[slot] = slot_of(h, key.as_bytes(), id);
        if 2 * self.len() >= self.slots.len() {
            self.grow();
        }
        Some(id)
    }

    /// `Ok(id)` of `key`, or `Err(the empty slot it would go to)`.
    fn find(&self, key: &str, h: u64) -> Result<u32, usize> {
        if self.slots.is_empty() {
            // Only before the first key (`intern` makes the table first).
            return Err(0);
        }
        let mask = self.slots.len() - 1;
        let want = slot_of(h, key.as_bytes(), 0);
        let mut i = h as usize & mask;
        loop {
            let [word, a, b] = self.slots[i];
            if word == 0 {
                return Err(i);
            }
            if word >> 32 == want[0] >> 32 && a == want[1] && b == want[2] {
                let id = (word as u32) - 1;
                if key.len() <= HEAD || self.bytes(id) == key.as_bytes() {
                    return Ok(id);
                }
            }
            i = (i + 1) & mask;
        }
    }

    /// The bytes of key `id` (which exists).
    fn bytes(&self, id: u32) -> &[u8] {
        let i = id as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.arena.as_bytes()[start..self.ends[i]]
    }

    /// Doubles the table (16 slots at first) and reinserts every key.
    fn grow(&mut self) {
        self.rebuild((self.slots.len() * 2).max(16));
    }

    /// Makes the table `n` slots (a power of two, more than twice the
    /// keys) and inserts every key.
    fn rebuild(&mut self, n: usize) {
        let mask = n - 1;
        // Every key is placed again from the arena: the old slots are only
        // emptied, in place when their mapping has room for the new ones.
        let mut slots = std::mem::take(&mut self.slots);
        slots.empty_to(n);
        // In chunks: every key's new slot asked for before the chunk is
        // placed (on a big table each placement is a cache miss).
        const CHUNK: u32 = 32;
        let mut hashes = [0u64; CHUNK as usize];
        let len = self.len() as u32;
        for from in (0..len).step_by(CHUNK as usize) {
            let ids = from..(from + CHUNK).min(len);
            for (id, h) in ids.clone().zip(hashes.iter_mut()) {
                *h = xxh3_64(self.bytes(id));
                crate::prefetch::read(&slots[*h as usize & mask]);
            }
            for (id, &h) in ids.zip(hashes.iter()) {
                let mut i = h as usize & mask;
                while slots[i][0] != 0 {
                    i = (i + 1) & mask;
                }
                slots[i] = slot_of(h, self.bytes(id), id);
            }
        }
        self.slots = slots;
    }
}

/// Events a reader has parsed ahead of the one it hands out with a key id
/// (`TraceReader::next_id`): their keys' table slots are prefetched as
/// they are read and interned only as they are handed out, so the ids,
/// the interner's state and every message are what a reader going one
/// line at a time gives.
#[derive(Debug, Default)]
pub(super) struct Ahead {
    /// `(time, key, weight, line number)` in reading order.
    pub(super) events: std::collections::VecDeque<(u64, AheadKey, u64, u64)>,
    /// The keys of [`AheadKey::Text`], back to back.
    pub(super) text: String,
    /// The reading's failure, after the events read before it.
    pub(super) failure: Option<crate::error::Error>,
    /// The input ended after the events.
    pub(super) ended: bool,
}

impl Ahead {
    /// Holds an event whose key is text: the key copied into
    /// [`Ahead::text`], its table slot in `keys` prefetched (it is
    /// interned when handed out).
    #[inline]
    pub(super) fn push_text(&mut self, keys: &KeyInterner, t: u64, key: &str, w: u64, line: u64) {
        let hash = KeyInterner::hash(key);
        keys.prefetch(hash);
        let start = self.text.len();
        self.text.push_str(key);
        let end = self.text.len();
        self.events
            .push_back((t, AheadKey::Text { start, end, hash }, w, line));
    }
}

/// A key read ahead.
#[derive(Debug, Clone, Copy)]
pub(super) enum AheadKey {
    /// Its bytes in [`Ahead::text`] and its [`KeyInterner::hash`].
    Text { start: usize, end: usize, hash: u64 },
    /// Already interned (a log's block interns its keys as it is parsed).
    Id(u32),
    /// A key the reader's filter does not want.
    Elsewhere,
}

/// Events read ahead at a time: enough to cover a memory access with
/// the parsing of the lines after it.
pub(super) const AHEAD: usize = 32;

/// The table's slots, zeroed (every slot empty). A big table is memory
/// mapped on its own, 2 MiB-aligned and backed by huge pages where the
/// system allows them on request (transparent huge pages): a table of half
/// a million slots spans 3,000 small pages, more than the TLB holds, so
/// each lookup was a page walk as well as a cache miss (the prefetch of its
/// slot stalled behind the walk: half of what interning cost, `perf
/// annotate`), and each page a fault. Asking for huge pages on memory
/// from the allocator did not do it: a table often reuses memory freed
/// before, already backed by small pages (none of a run's table was in
/// huge pages, `/proc/PID/smaps`). A small table, or a system that refuses
/// the mapping, gets an ordinary vector. Where the slots live changes
/// nothing in them: every id is the same either way.
#[derive(Default)]
struct Slots {
    /// The slots when they are not mapped on their own.
    heap: Vec<Slot>,
    /// The mapped slots (null: `heap`'s), how many, and the mapping's
    /// start and length in bytes.
    mapped: Option<Mapped>,
}

/// Slots in a mapping of their own ([`Slots`]).
struct Mapped {
    slots: std::ptr::NonNull<Slot>,
    len: usize,
    base: *mut u8,
    bytes: usize,
}

// SAFETY: `Mapped` owns its mapping alone (nothing else points into it), as
// a `Vec` owns its buffer.
unsafe impl Send for Mapped {}
// SAFETY: shared access only reads, as a `Vec`'s.
unsafe impl Sync for Mapped {}

/// Huge page size asked for (x86-64's, and aarch64's with 4 KiB pages).
const HUGE: usize = 2 << 20;

impl Slots {
    /// `n` empty slots.
    fn zeroed(n: usize) -> Self {
        let bytes = n * std::mem::size_of::<Slot>();
        if bytes >= HUGE
            && let Some(mapped) = Mapped::zeroed(n)
        {
            return Slots {
                heap: Vec::new(),
                mapped: Some(mapped),
            };
        }
        Slots {
            heap: vec![[0; 3]; n],
            mapped: None,
        }
    }
}

impl Slots {
    /// Makes these `n` empty slots: in place when they are mapped and the
    /// mapping has room for `n` (the old slots emptied, the pages already
    /// backed reused), else in new memory. A table that doubles in place
    /// has the system zero only its last size's pages: zeroing each new
    /// table's huge pages was a tenth of a one-candidate run (`perf`:
    /// `clear_page_erms` under `grow`).
    fn empty_to(&mut self, n: usize) {
        if let Some(m) = self.mapped.as_mut()
            && m.room() >= n
        {
            // SAFETY: the first `m.len` slots were written; the mapping
            // holds `room() >= n` slots from `m.slots`, zero-filled past
            // what was written.
            unsafe { std::ptr::write_bytes(m.slots.as_ptr(), 0, m.len) };
            m.len = n;
            return;
        }
        *self = Slots::zeroed(n);
    }
}

/// Bytes a table's mapping reserves at least (address space only: a page
/// is backed once written), so that it doubles in place up to this size.
const RESERVE: usize = 128 << 20;

impl Mapped {
    /// Slots the mapping holds from `slots`.
    fn room(&self) -> usize {
        (self.base as usize + self.bytes - self.slots.as_ptr() as usize)
            / std::mem::size_of::<Slot>()
    }

    /// `n` zeroed slots in a fresh anonymous mapping whose 2 MiB-aligned
    /// part holds them (and room for the table to grow to [`RESERVE`]
    /// bytes), asked for in huge pages before any is touched (None: not on
    /// Linux, or the system refused the mapping).
    #[cfg(target_os = "linux")]
    fn zeroed(n: usize) -> Option<Self> {
        let size = n.checked_mul(std::mem::size_of::<Slot>())?;
        let span = size.max(RESERVE).checked_next_multiple_of(HUGE)?;
        let bytes = span.checked_add(HUGE)?;
        // SAFETY: a fresh private anonymous mapping: no file, no address
        // asked for; the result is checked before use.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return None;
        }
        let base = base.cast::<u8>();
        let skip = (base as usize).next_multiple_of(HUGE) - base as usize;
        // SAFETY: `skip < HUGE` and `skip + span <= bytes`: inside the
        // mapping, which is page-aligned, zero-filled and writable.
        let start = unsafe { base.add(skip) };
        // SAFETY: `[start, start + span)` is inside the mapping; MADV_HUGEPAGE
        // changes how pages are backed, never their contents. A refusal (no
        // THP) is ignored.
        unsafe {
            libc::madvise(start.cast(), span, libc::MADV_HUGEPAGE);
        }
        Some(Mapped {
            slots: std::ptr::NonNull::new(start.cast::<Slot>())?,
            len: n,
            base,
            bytes,
        })
    }

    #[cfg(not(target_os = "linux"))]
    fn zeroed(_: usize) -> Option<Self> {
        None
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        // SAFETY: `base` and `bytes` are the mapping made in
        // `Mapped::zeroed`, unmapped once, here; no slice of it outlives
        // `self`.
        unsafe {
            libc::munmap(self.base.cast(), self.bytes);
        }
    }
}

impl std::ops::Deref for Slots {
    type Target = [Slot];
    fn deref(&self) -> &[Slot] {
        match &self.mapped {
            // SAFETY: `len` initialized (zero-filled) slots, owned by
            // `self` and borrowed with it.
            Some(m) => unsafe { std::slice::from_raw_parts(m.slots.as_ptr(), m.len) },
            None => &self.heap,
        }
    }
}

impl std::ops::DerefMut for Slots {
    fn deref_mut(&mut self) -> &mut [Slot] {
        match &mut self.mapped {
            // SAFETY: as in `deref`, borrowed mutably with `self`.
            Some(m) => unsafe { std::slice::from_raw_parts_mut(m.slots.as_ptr(), m.len) },
            None => &mut self.heap,
        }
    }
}

impl Clone for Slots {
    fn clone(&self) -> Self {
        let mut copy = Slots::zeroed(self.len());
        copy.copy_from_slice(self);
        copy
    }
}

impl std::fmt::Debug for Slots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} slots", self.len())
    }
}

/// A table slot: `[tag << 32 | (id + 1), bytes 0..8, bytes 8..16]`.
type Slot = [u64; 3];

/// Bytes of a key kept in its slot.
const HEAD: usize = 16;

/// The slot of key `key` (hash `h`) with id `id`: the tag (24 bits of the
/// hash above the ones that index the table in practice, and the length
/// capped at 255) and id + 1, then the first 16 bytes zero-padded. Two
/// keys of at most 16 bytes with equal tags and heads are equal: the
/// length tells a padding zero from a key's own.
fn slot_of(h: u64, key: &[u8], id: u32) -> Slot {
    let len = key.len().min(255) as u64;
    let tag = (h >> 40) << 8 | len;
    let (a, b) = head(key);
    [tag << 32 | (u64::from(id) + 1), a, b]
}

/// The first 16 bytes of `key`, zero-padded, as two little-endian words,
/// read as at most two overlapping loads each (the bytes read twice are
/// the same bytes in the same places). Copied into a zeroed buffer and read
/// back, they were a call to `memcpy` and a stalled load (the load could not
/// be forwarded from the copy's stores) in every lookup: half of what
/// `find` cost (`perf annotate`).
#[inline]
fn head(key: &[u8]) -> (u64, u64) {
    let word = |at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&key[at..at + 8]);
        u64::from_le_bytes(w)
    };
    let half = |at: usize| {
        let mut w = [0u8; 4];
        w.copy_from_slice(&key[at..at + 4]);
        u64::from(u32::from_le_bytes(w))
    };
    let n = key.len();
    match n {
        16.. => (word(0), word(8)),
        // Bytes 8..n at the bottom of the word ending at n.
        9..=15 => (word(0), word(n - 8) >> (8 * (16 - n))),
        8 => (word(0), 0),
        // Bytes n-4..n moved up to their places over bytes 0..4.
        4..=7 => (half(0) | half(n - 4) << (8 * (n - 4)), 0),
        _ => {
            let mut w = 0u64;
            for (i, &b) in key.iter().enumerate() {
                w |= u64::from(b) << (8 * i);
            }
            (w, 0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn ids_follow_first_appearance_through_many_growths() {
        let mut k = KeyInterner::new();
        let mut reference: HashMap<String, u32> = HashMap::new();
        // Keys repeat in a scrambled order; the empty key is a key too.
        for i in 0..50_000u64 {
            let key = if i % 997 == 0 {
                String::new()
            } else {
                format!("k{}", (i * 7919) % 20_011)
            };
            let next = reference.len() as u32;
            let want = *reference.entry(key.clone()).or_insert(next);
            assert_eq!(k.intern(&key), Some(want), "{key}");
        }
        assert_eq!(k.len(), reference.len());
        for (key, id) in &reference {
            assert_eq!(k.get(key), Some(*id));
            assert_eq!(k.name(*id), Some(key.as_str()));
        }
        assert_eq!(k.get("absent"), None);
        assert_eq!(k.name(k.len() as u32), None);
    }

    #[test]
    fn keys_alike_in_their_first_bytes_stay_apart() {
        let mut k = KeyInterner::new();
        let keys = [
            "a",
            "a\0",
            "a\0\0",
            "",
            "\0",
            "abcdefgh",
            "abcdefghi",
            "abcdefghj",
            "abcdefgh\0",
            "abcdefghijklmnop",
            "abcdefghijklmnoq",
            "abcdefghijklmnopq",
            "abcdefghijklmnopr",
            "abcdefghijklmnop\0",
        ];
        for (i, key) in keys.iter().enumerate() {
            assert_eq!(k.intern(key), Some(i as u32), "{key:?}");
        }
        for (i, key) in keys.iter().enumerate() {
            assert_eq!(k.get(key), Some(i as u32), "{key:?}");
            assert_eq!(k.name(i as u32), Some(*key));
        }
        // A long key (its length over 255 is capped in the tag).
        let long = "x".repeat(300);
        let longer = "x".repeat(301);
        assert_eq!(k.intern(&long), Some(14));
        assert_eq!(k.intern(&longer), Some(15));
        assert_eq!(k.get(&long), Some(14));
    }

    #[test]
    fn a_mapped_table_keeps_ids_and_clones() {
        // 100,000 keys: the table passes 2 MiB and is mapped on its own
        // (where the system allows it), its copy too.
        let mut k = KeyInterner::new();
        for i in 0..100_000u32 {
            assert_eq!(k.intern(&format!("key{i}")), Some(i));
        }
        assert!(k.slots.len() * std::mem::size_of::<Slot>() >= HUGE);
        #[cfg(target_os = "linux")]
        assert!(k.slots.mapped.is_some());
        let copy = k.clone();
        drop(k);
        for i in (0..100_000u32).step_by(7) {
            assert_eq!(copy.get(&format!("key{i}")), Some(i));
        }
        assert_eq!(copy.get("key100000"), None);
        assert_eq!(copy.len(), 100_000);
    }

    #[test]
    fn the_head_words_are_the_zero_padded_bytes() {
        let bytes: Vec<u8> = (1..=40u8).map(|b| b.wrapping_mul(37)).collect();
        for n in 0..=bytes.len() {
            let key = &bytes[..n];
            let mut padded = [0u8; HEAD];
            padded[..n.min(HEAD)].copy_from_slice(&key[..n.min(HEAD)]);
            let want = (
                u64::from_le_bytes(padded[..8].try_into().unwrap()),
                u64::from_le_bytes(padded[8..].try_into().unwrap()),
            );
            assert_eq!(head(key), want, "{n} bytes");
        }
    }

    #[test]
    fn names_pushed_unlooked_are_found_and_interned_alike() {
        let mut k = KeyInterner::new();
        assert_eq!(k.intern("a"), Some(0));
        for i in 1..3000u32 {
            assert_eq!(k.push_name(&format!("n{i}")), Some(i));
        }
        assert_eq!(k.get("a"), Some(0));
        assert_eq!(k.get("n2999"), Some(2999));
        assert_eq!(k.get("n3000"), None);
        // Interning makes the table of every name.
        assert_eq!(k.intern("n17"), Some(17));
        assert_eq!(k.intern("new"), Some(3000));
        assert!(k.unindexed.is_none() && k.slots.len() > 2 * k.len());
        for i in 1..3000u32 {
            assert_eq!(
                k.find(&format!("n{i}"), KeyInterner::hash(&format!("n{i}"))),
                Ok(i)
            );
        }
        assert_eq!(k.name(3000), Some("new"));
    }

    #[test]
    fn the_cap_refuses_only_new_keys() {
        let mut k = KeyInterner::with_cap(2);
        assert!(k.is_empty());
        assert_eq!(k.intern("a"), Some(0));
        assert_eq!(k.intern("b"), Some(1));
        assert_eq!(k.intern("c"), None);
        assert_eq!(k.intern("a"), Some(0));
        assert_eq!(k.len(), 2);
        assert_eq!(k.get("c"), None);
    }
}
