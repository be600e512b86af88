//! A trace written as many files: a directory of parts, read as one trace
//! (merged in time order), or split between shards so that each opens only
//! its own parts.
//!
//! Layouts, as engines write them:
//! * **Hive-style partition folders** — DuckDB's `COPY t TO 'dir' (FORMAT
//!   parquet, PARTITION_BY (part))` writes `dir/part=3/data_0.parquet`,
//!   Spark's `partitionBy("part")` writes `dir/part=3/part-00000-….parquet`:
//!   every entry of the directory is a `NAME=VALUE` folder (one `NAME`),
//!   each a partition whose files (any depth) are read together.
//! * **A flat directory of files** (`part-00000.csv.gz`, `part-00001.csv.gz`,
//!   …, or any names): each file is its own partition.
//!
//! Names starting with `_` or `.` (Spark's `_SUCCESS`, `.part-….crc`) and
//! `*.crc` files are skipped. Files are read in the byte order of their
//! paths below the directory; events of equal time in two files come in that
//! order, so a run over the directory is the same on every machine.
//!
//! **Which shard reads a partition** (`--shard i/n`): partition values that
//! are all integers (a hash bucket, as `hash(key) % 16`) go to shard
//! `value mod n`; otherwise (and in a flat directory) the partition at
//! position `p` among the sorted partitions goes to shard `p mod n`.

use super::format::TraceOptions;
use super::log::LogSpec;
use super::reader::{KeyAt, TraceReader};
use crate::clock::Nanos;
use crate::error::{Error, Result};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};

/// Most files a directory trace may hold (each open file keeps a buffer).
pub const MAX_FILES: usize = 4096;

/// A directory trace's files and partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartPlan {
    /// The directory.
    pub root: PathBuf,
    /// Every data file, sorted by its path below `root`.
    pub files: Vec<PathBuf>,
    /// Each file's partition (an index into `parts`).
    pub part_of: Vec<u32>,
    /// The partitions, sorted: `NAME=VALUE` folders, or the files' names.
    pub parts: Vec<String>,
    /// Each partition's integer value (all of them, or none).
    pub values: Option<Vec<i64>>,
}

impl PartPlan {
    /// The files of `dir` as a partitioned trace; `Ok(None)` when `dir`
    /// is not a directory. An empty directory or partition folder, mixed
    /// layouts or mixed formats are one-line errors naming the path.
    ///
    /// # Examples
    /// ```
    /// use ratelab::workload::trace::parts::PartPlan;
    /// let d = tempfile::tempdir().unwrap();
    /// for p in [0, 1, 2] {
    ///     std::fs::create_dir(d.path().join(format!("part={p}"))).unwrap();
    ///     std::fs::write(d.path().join(format!("part={p}/data_0.csv")), "t_ns,key\n1,a\n").unwrap();
    /// }
    /// std::fs::write(d.path().join("_SUCCESS"), "").unwrap();
    /// let plan = PartPlan::of(d.path())?.unwrap();
    /// assert_eq!(plan.parts, ["part=0", "part=1", "part=2"]);
    /// assert_eq!(plan.files_of_shard(1, 2)?, [1]);
    /// # Ok::<(), ratelab::error::Error>(())
    /// ```
    pub fn of(dir: &Path) -> Result<Option<PartPlan>> {
        if !std::fs::metadata(dir).is_ok_and(|m| m.is_dir()) {
            return Ok(None);
        }
        let top = entries(dir)?;
        if top.is_empty() {
            return Err(Error::input_at(
                dir,
                "directory",
                "holds no trace files (names starting with _ or . and *.crc are skipped)",
            ));
        }
        let dirs: Vec<&(String, PathBuf, bool)> = top.iter().filter(|e| e.2).collect();
        let mut plan = PartPlan {
            root: dir.to_path_buf(),
            files: Vec::new(),
            part_of: Vec::new(),
            parts: Vec::new(),
            values: None,
        };
        if dirs.is_empty() {
            // A flat directory: each file a partition.
            for (name, path, _) in &top {
                plan.part_of.push(plan.parts.len() as u32);
                plan.parts.push(name.clone());
                plan.files.push(path.clone());
            }
        } else {
            if let Some((name, _, _)) = top.iter().find(|e| !e.2) {
                return Err(Error::input_at(
                    &dir.join(name),
                    "file",
                    "beside partition folders: a directory trace holds either NAME=VALUE folders or files",
                ));
            }
            let mut column: Option<&str> = None;
            let mut values = Some(Vec::new());
            for (name, path, _) in &top {
                let Some((col, value)) = name.split_once('=') else {
                    return Err(Error::input_at(
                        path,
                        "folder",
                        "not a NAME=VALUE partition folder (as DuckDB's PARTITION_BY or Spark's partitionBy write)",
                    ));
                };
                match column {
                    Some(c) if c != col => {
                        return Err(Error::input_at(
                            path,
                            "folder",
                            format!("partition column {col:?} beside {c:?}: one partition column"),
                        ))
                    }
                    _ => column = Some(col),
                }
                let mut found = Vec::new();
                files_below(path, &mut found, 0)?;
                if found.is_empty() {
                    return Err(Error::input_at(
                        path,
                        "partition",
                        "empty: no trace files in it",
                    ));
                }
                found.sort();
                let p = plan.parts.len() as u32;
                plan.parts.push(name.clone());
                for f in found {
                    plan.part_of.push(p);
                    plan.files.push(f);
                }
                values = values.and_then(|mut v: Vec<i64>| {
                    v.push(value.parse().ok()?);
                    Some(v)
                });
            }
            plan.values = values;
        }
        if plan.files.len() > MAX_FILES {
            return Err(Error::input_at(
                dir,
                "directory",
                format!(
                    "{} files: at most {MAX_FILES} are read as one trace",
                    plan.files.len()
                ),
            ));
        }
        // One format: the extensions, without compression's.
        let kind = |f: &Path| {
            super::input::without_compression(f)
                .extension()
                .and_then(|e| e.to_str())
                .unwrap_or("")
                .to_ascii_lowercase()
        };
        if let Some(f) = plan.files.iter().find(|f| kind(f) != kind(&plan.files[0])) {
            return Err(Error::input_at(
                f,
                "file",
                format!(
                    "mixed formats: .{} beside .{} ({}): the files of one trace share a format",
                    kind(f),
                    kind(&plan.files[0]),
                    plan.files[0].display()
                ),
            ));
        }
        Ok(Some(plan))
    }

    /// The shard of `count` that reads partition `p`: its integer value
    /// mod `count` when every value is an integer, else its place mod
    /// `count`.
    ///
    /// # Examples
    /// ```
    /// use ratelab::workload::trace::parts::PartPlan;
    /// let d = tempfile::tempdir().unwrap();
    /// for p in [3, 7] {
    ///     std::fs::create_dir(d.path().join(format!("b={p}"))).unwrap();
    ///     std::fs::write(d.path().join(format!("b={p}/x.csv")), "t_ns,key\n1,a\n").unwrap();
    /// }
    /// let plan = PartPlan::of(d.path())?.unwrap();
    /// assert_eq!((plan.shard_of_part(0, 4), plan.shard_of_part(1, 4)), (3, 3));
    /// # Ok::<(), ratelab::error::Error>(())
    /// ```
    pub fn shard_of_part(&self, p: usize, count: u32) -> u32 {
        let n = i128::from(count.max(1));
        match &self.values {
            Some(v) => i128::from(v[p]).rem_euclid(n) as u32,
            None => (p as i128).rem_euclid(n) as u32,
        }
    }

    /// The files shard `index` of `count` reads (indices into `files`);
    /// an error when it has none.
    pub fn files_of_shard(&self, index: u32, count: u32) -> Result<Vec<usize>> {
        let own: Vec<usize> = (0..self.files.len())
            .filter(|&f| self.shard_of_part(self.part_of[f] as usize, count) == index)
            .collect();
        if own.is_empty() {
            return Err(Error::input_at(
                &self.root,
                "directory",
                format!(
                    "no partition for shard {index}/{count}: its {} partitions ({}) give shard {index} none ({})",
                    self.parts.len(),
                    summary(&self.parts),
                    match &self.values {
                        Some(_) => "integer values go to shard value mod N",
                        None => "the p-th partition goes to shard p mod N; use at most as many shards as partitions",
                    }
                ),
            ));
        }
        Ok(own)
    }

    /// A file's path below the directory, as shard files and messages
    /// name it (`part=3/data_0.parquet`).
    pub fn name(&self, file: usize) -> String {
        let f = &self.files[file];
        f.strip_prefix(&self.root)
            .unwrap_or(f)
            .to_string_lossy()
            .into_owned()
    }
}

/// The first and last partitions' names, for a message.
fn summary(parts: &[String]) -> String {
    match parts {
        [] => String::new(),
        [one] => one.clone(),
        [a, .., b] => format!("{a} .. {b}"),
    }
}

/// Whether a directory entry is skipped: engines' markers and checksums.
fn skipped(name: &str) -> bool {
    name.starts_with('_') || name.starts_with('.') || name.ends_with(".crc")
}

/// A directory's entries, not skipped, sorted by name: (name, path, is a
/// folder).
fn entries(dir: &Path) -> Result<Vec<(String, PathBuf, bool)>> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let e = e.map_err(|e| Error::io(dir, e))?;
        let Some(name) = e.file_name().to_str().map(str::to_string) else {
            return Err(Error::input_at(
                &e.path(),
                "file name",
                "not UTF-8: rename it",
            ));
        };
        if skipped(&name) {
            continue;
        }
        let path = e.path();
        // Follows links: a folder of links to files is a list of files.
        let meta = std::fs::metadata(&path).map_err(|err| Error::io(&path, err))?;
        v.push((name, path, meta.is_dir()));
        if v.len() > MAX_FILES {
            break;
        }
    }
    v.sort();
    Ok(v)
}

/// Every data file below `dir` (partition folders may nest: Spark's
/// `a=1/b=2/`).
fn files_below(dir: &Path, out: &mut Vec<PathBuf>, depth: u32) -> Result<()> {
    if depth > 16 {
        return Err(Error::input_at(dir, "folder", "nested more than 16 deep"));
    }
    for (_, path, is_dir) in entries(dir)? {
        if is_dir {
            files_below(&path, out, depth + 1)?;
        } else {
            out.push(path);
        }
        if out.len() > MAX_FILES {
            return Ok(());
        }
    }
    Ok(())
}

/// The files of a directory trace being read as one, merged in time order.
pub(super) struct Merge {
    /// One reader per file read, with the file's index in the plan.
    readers: Vec<(u32, TraceReader)>,
    /// Each reader's next event, once read.
    heads: Vec<Option<(Nanos, KeyAt, u64)>>,
    /// Readers by their next event: (time, reader).
    queue: BinaryHeap<Reverse<(Nanos, u32)>>,
    /// Events handed out per reader.
    emitted: Vec<u64>,
    /// The reader whose event was handed out last (to read on next time).
    advance: Option<usize>,
    started: bool,
    /// Of the event handed out last: the file's index in the plan and the
    /// event's place among that file's events.
    last: Option<(u32, u64)>,
    /// The reader of the event handed out last.
    current: Option<usize>,
}

impl TraceReader {
    /// A reader of files `which` of `plan` as one trace, every file read
    /// as [`open_with`](Self::open_with) reads one and their events merged
    /// in time order (equal times: the file first in the plan first).
    ///
    /// # Examples
    /// ```
    /// use ratelab::workload::trace::{parts::PartPlan, TraceOptions, TraceReader};
    /// let d = tempfile::tempdir().unwrap();
    /// std::fs::write(d.path().join("part-0.csv"), "t_ns,key\n1,a\n5,a\n").unwrap();
    /// std::fs::write(d.path().join("part-1.csv"), "t_ns,key\n2,b\n5,b\n").unwrap();
    /// let plan = PartPlan::of(d.path())?.unwrap();
    /// let r = TraceReader::open_parts(&plan, &[0, 1], TraceOptions::default(), None)?;
    /// let got: Vec<(u64, String)> = r.map(|e| e.map(|e| (e.t_ns, e.key))).collect::<Result<_, _>>()?;
    /// assert_eq!(got, [(1, "a".into()), (2, "b".into()), (5, "a".into()), (5, "b".into())]);
    /// # Ok::<(), ratelab::error::Error>(())
    /// ```
    pub fn open_parts(
        plan: &PartPlan,
        which: &[usize],
        opts: TraceOptions,
        spec: Option<&LogSpec>,
    ) -> Result<TraceReader> {
        let mut readers = Vec::with_capacity(which.len());
        for &f in which {
            let path = &plan.files[f];
            readers.push((f as u32, TraceReader::open_with(path, opts, spec)?));
        }
        let mut r = TraceReader::new(
            &plan.root,
            super::format::TraceFormat::Csv,
            Box::new(std::io::empty()),
            opts,
        );
        let n = readers.len();
        r.parts = Some(Box::new(Merge {
            readers,
            heads: (0..n).map(|_| None).collect(),
            queue: BinaryHeap::with_capacity(n),
            emitted: vec![0; n],
            advance: None,
            started: false,
            last: None,
            current: None,
        }));
        Ok(r)
    }

    /// Of the event handed out last by a directory trace's reader: the
    /// file's index in its [`PartPlan`] and the event's place among that
    /// file's events (None: a single file).
    ///
    /// # Examples
    /// ```
    /// use ratelab::workload::trace::{parts::PartPlan, TraceOptions, TraceReader};
    /// let d = tempfile::tempdir().unwrap();
    /// std::fs::write(d.path().join("a.csv"), "t_ns,key\n1,a\n4,a\n").unwrap();
    /// std::fs::write(d.path().join("b.csv"), "t_ns,key\n3,b\n").unwrap();
    /// let plan = PartPlan::of(d.path())?.unwrap();
    /// let mut r = TraceReader::open_parts(&plan, &[0, 1], TraceOptions::default(), None)?;
    /// let mut at = Vec::new();
    /// while let Some(e) = r.next_ref() {
    ///     e?;
    ///     at.push(r.last_part().unwrap());
    /// }
    /// assert_eq!(at, [(0, 0), (1, 0), (0, 1)]);
    /// # Ok::<(), ratelab::error::Error>(())
    /// ```
    pub fn last_part(&self) -> Option<(u32, u64)> {
        self.parts.as_ref().and_then(|m| m.last)
    }

    /// The file of the event handed out last and what its records are
    /// called (None: a single file, or nothing handed out yet).
    pub(super) fn part_at(&self) -> Option<(&Path, &'static str)> {
        let m = self.parts.as_ref()?;
        let i = m.current?;
        let r = &m.readers[i].1;
        Some((r.path.as_path(), r.record))
    }

    /// The readers of a directory trace's files (empty for one file).
    pub(super) fn part_readers(&self) -> impl Iterator<Item = &TraceReader> {
        self.parts
            .iter()
            .flat_map(|m| m.readers.iter().map(|r| &r.1))
    }

    /// Sets the key filter of every file's reader.
    pub(super) fn part_filter(&mut self, filter: &super::block::KeyFilter, keep: bool) {
        if let Some(m) = self.parts.as_mut() {
            for (_, r) in m.readers.iter_mut() {
                r.set_key_filter(filter.clone(), keep);
            }
        }
    }

    /// Reads reader `i`'s next event into its head and the queue.
    fn pull(m: &mut Merge, i: usize) -> Result<()> {
        match m.readers[i].1.next_event().transpose()? {
            Some(e) => {
                m.queue.push(Reverse((e.0, i as u32)));
                m.heads[i] = Some(e);
            }
            None => m.heads[i] = None,
        }
        Ok(())
    }

    /// The next event of a directory trace: the earliest of the files'
    /// next events (equal times: the file first in the plan).
    pub(super) fn next_merged(&mut self) -> Option<Result<(Nanos, KeyAt, u64)>> {
        let m = self.parts.as_mut()?;
        if self.done {
            return None;
        }
        let step = if !m.started {
            m.started = true;
            (0..m.readers.len()).try_for_each(|i| Self::pull(m, i))
        } else if let Some(i) = m.advance.take() {
            Self::pull(m, i)
        } else {
            Ok(())
        };
        if let Err(e) = step {
            self.done = true;
            return Some(Err(e));
        }
        let Reverse((_, i)) = m.queue.pop()?;
        let i = i as usize;
        let (t, at, w) = m.heads[i].take()?;
        m.advance = Some(i);
        m.current = Some(i);
        m.last = Some((m.readers[i].0, m.emitted[i]));
        m.emitted[i] += 1;
        let at = match m.readers[i].1.key_of(&at) {
            None => KeyAt::Elsewhere,
            Some(k) => {
                self.held_key.clear();
                self.held_key.push_str(k);
                KeyAt::Held
            }
        };
        self.line_no = m.readers[i].1.line_no;
        Some(Ok((t, at, w)))
    }
}

/// The earliest event time of files `which` of `plan` (None: no events):
/// each file's first event, which is its earliest (a reader hands events
/// out in time order). What a shard that opens only its own files needs
/// to start its virtual clock where the whole trace starts.
///
/// # Examples
/// ```
/// use ratelab::workload::trace::{parts::{first_time, PartPlan}, TraceOptions};
/// let d = tempfile::tempdir().unwrap();
/// std::fs::write(d.path().join("a.csv"), "t_ns,key\n9,a\n").unwrap();
/// std::fs::write(d.path().join("b.csv"), "t_ns,key\n4,b\n8,b\n").unwrap();
/// let plan = PartPlan::of(d.path())?.unwrap();
/// assert_eq!(first_time(&plan, &[0, 1], TraceOptions::default(), None)?, Some(4));
/// assert_eq!(first_time(&plan, &[0], TraceOptions::default(), None)?, Some(9));
/// # Ok::<(), ratelab::error::Error>(())
/// ```
pub fn first_time(
    plan: &PartPlan,
    which: &[usize],
    opts: TraceOptions,
    spec: Option<&LogSpec>,
) -> Result<Option<Nanos>> {
    let mut first: Option<Nanos> = None;
    for &f in which {
        let mut r = TraceReader::open_with(&plan.files[f], opts, spec)?;
        if let Some(e) = r.next_event() {
            let t = e?.0;
            first = Some(first.map_or(t, |m| m.min(t)));
        }
    }
    Ok(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// An event and, of its file, (index, place).
    type Placed = (u64, String, Option<(u32, u64)>);

    fn events(plan: &PartPlan, which: &[usize]) -> Result<Vec<Placed>> {
        let mut r = TraceReader::open_parts(plan, which, TraceOptions::default(), None)?;
        let mut v = Vec::new();
        while let Some(e) = r.next_ref() {
            let (t, k, _) = e?;
            let k = k.to_string();
            v.push((t, k, r.last_part()));
        }
        Ok(v)
    }

    #[test]
    fn equal_times_come_in_file_order_and_each_event_names_its_file() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "b.csv", "t_ns,key\n5,b1\n9,b2\n");
        write(d.path(), "a.csv", "t_ns,key\n5,a1\n5,a2\n7,a3\n");
        let plan = PartPlan::of(d.path()).unwrap().unwrap();
        assert_eq!(plan.parts, ["a.csv", "b.csv"]);
        let got = events(&plan, &[0, 1]).unwrap();
        let keys: Vec<&str> = got.iter().map(|e| e.1.as_str()).collect();
        assert_eq!(keys, ["a1", "a2", "b1", "a3", "b2"]);
        assert_eq!(got[2].2, Some((1, 0)), "b1: file 1, its first event");
        assert_eq!(got[3].2, Some((0, 2)), "a3: file 0, its third");
        // Only the second file: its events alone.
        let got = events(&plan, &[1]).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(
            first_time(&plan, &[0, 1], TraceOptions::default(), None).unwrap(),
            Some(5)
        );
    }

    #[test]
    fn a_bad_line_is_named_in_its_own_file() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "a.csv", "t_ns,key\n1,a\n2,a\n");
        write(d.path(), "b.csv", "t_ns,key\n1,b\nx,b\n");
        let plan = PartPlan::of(d.path()).unwrap().unwrap();
        let e = events(&plan, &[0, 1]).unwrap_err().to_string();
        assert!(e.contains("b.csv: line 3"), "{e}");
    }

    #[test]
    fn partitions_go_to_shards_by_value_or_by_place() {
        let d = tempfile::tempdir().unwrap();
        for v in [0, 1, 2, 5, 10] {
            write(d.path(), &format!("part={v}/data_0.csv"), "t_ns,key\n1,a\n");
        }
        write(d.path(), "part=5/sub/data_1.csv", "t_ns,key\n1,a\n");
        write(d.path(), "part=5/.data_1.csv.crc", "x");
        write(d.path(), "_SUCCESS", "");
        let plan = PartPlan::of(d.path()).unwrap().unwrap();
        // Sorted by name: part=0, part=1, part=10, part=2, part=5.
        assert_eq!(plan.values, Some(vec![0, 1, 10, 2, 5]));
        assert_eq!(plan.files.len(), 6);
        assert_eq!(plan.files_of_shard(0, 2).unwrap(), [0, 2, 3]);
        assert_eq!(plan.files_of_shard(1, 2).unwrap(), [1, 4, 5]);
        assert_eq!(plan.name(5), "part=5/sub/data_1.csv");
        let e = plan.files_of_shard(3, 4).unwrap_err().to_string();
        assert!(e.contains("no partition for shard 3/4"), "{e}");
        // Values that are not all integers: by place.
        let d = tempfile::tempdir().unwrap();
        for v in ["eu", "us", "ap"] {
            write(
                d.path(),
                &format!("region={v}/data_0.csv"),
                "t_ns,key\n1,a\n",
            );
        }
        let plan = PartPlan::of(d.path()).unwrap().unwrap();
        assert_eq!(plan.values, None);
        assert_eq!(plan.parts, ["region=ap", "region=eu", "region=us"]);
        assert_eq!(plan.files_of_shard(1, 2).unwrap(), [1]);
    }

    #[test]
    fn bad_layouts_are_refused_naming_the_path() {
        let err = |setup: &dyn Fn(&Path)| {
            let d = tempfile::tempdir().unwrap();
            setup(d.path());
            PartPlan::of(d.path()).unwrap_err().to_string()
        };
        let e = err(&|d| write(d, "_SUCCESS", ""));
        assert!(e.contains("holds no trace files"), "{e}");
        let e = err(&|d| {
            write(d, "part=0/a.csv", "");
            write(d, "b.csv", "");
        });
        assert!(
            e.contains("b.csv") && e.contains("beside partition folders"),
            "{e}"
        );
        let e = err(&|d| {
            write(d, "part=0/a.csv", "");
            write(d, "other=1/a.csv", "");
        });
        assert!(e.contains("one partition column"), "{e}");
        let e = err(&|d| {
            write(d, "part=0/a.csv", "");
            std::fs::create_dir(d.join("part=1")).unwrap();
        });
        assert!(e.contains("part=1") && e.contains("empty"), "{e}");
        let e = err(&|d| {
            write(d, "a.csv.gz", "");
            write(d, "b.parquet", "");
        });
        assert!(e.contains("mixed formats"), "{e}");
        assert_eq!(PartPlan::of(Path::new("no/such/dir")).unwrap(), None);
    }
}
