//! A trace written as partition folders (as DuckDB's `PARTITION_BY` and
//! Spark's `partitionBy` write them) or as a flat directory of files: read
//! as one trace, and split between shards so that each opens only its own
//! partitions; the merged report is the unsharded run's byte for byte, and
//! a key in two partitions, a shard without a partition, an empty
//! partition or mixed formats are refused with one line.

use crate::common::*;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Requests of 600 well-behaved keys and 6 abusive ones (30/s against a
/// limit of 10/s) over 10 s, some of weight 2: (t_ns, key, weight), sorted
/// by time; seeded xorshift.
fn events() -> Vec<(u64, String, u32)> {
    let mut s = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let span = 10_000_000_000u64;
    let mut ev = Vec::new();
    for k in 0..600 {
        let name = format!("10.0.{}.{}", k / 200, k % 200);
        for _ in 0..(1 + next() % 12) {
            let w = if next() % 10 == 0 { 2 } else { 1 };
            ev.push((next() % span, name.clone(), w));
        }
    }
    for a in 0..6 {
        for _ in 0..300 {
            ev.push((next() % span, format!("abuser-{a}"), 1));
        }
    }
    ev.sort();
    ev
}

fn csv(ev: &[&(u64, String, u32)]) -> String {
    let mut out = String::from("t_ns,key,weight\n");
    for (t, k, w) in ev {
        let _ = writeln!(out, "{t},{k},{w}");
    }
    out
}

/// The partition of a key: FNV-1a of its bytes mod `parts` (any hash
/// does; a partitioning engine uses its own).
fn bucket(key: &str, parts: u64) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for b in key.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    h % parts
}

/// Writes `ev` partitioned by key into `dir` as DuckDB's `COPY ... TO dir
/// (PARTITION_BY (part))` lays it out (`part=P/data_0.csv`, each file in
/// time order), or Spark's (`part=P/part-00000-<id>.csv.gz` plus
/// `_SUCCESS` and `.crc` files).
fn partition(ev: &[(u64, String, u32)], dir: &Path, parts: u64, spark: bool) {
    for p in 0..parts {
        let rows: Vec<&(u64, String, u32)> =
            ev.iter().filter(|e| bucket(&e.1, parts) == p).collect();
        let folder = dir.join(format!("part={p}"));
        std::fs::create_dir_all(&folder).unwrap();
        if spark {
            // Two files in one partition, each in time order.
            let (a, b): (Vec<_>, Vec<_>) = rows.iter().partition(|e| e.1.len() % 2 == 0);
            for (i, half) in [a, b].iter().enumerate() {
                let name = format!("part-0000{i}-3f1c9a.c000.csv.gz");
                let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                gz.write_all(csv(half).as_bytes()).unwrap();
                std::fs::write(folder.join(&name), gz.finish().unwrap()).unwrap();
                std::fs::write(folder.join(format!(".{name}.crc")), b"crc").unwrap();
            }
        } else {
            std::fs::write(folder.join("data_0.csv"), csv(&rows)).unwrap();
        }
    }
    if spark {
        std::fs::write(dir.join("_SUCCESS"), b"").unwrap();
    }
}

/// Per-key candidates only: every shard reads only its partitions.
const PER_KEY: &str = r#"{
  "name": "parts",
  "kind": "decision_accuracy",
  "seed": 3,
  "policy": { "limit": 10, "interval_ms": 1000 },
  "limiters": [
    { "model": "token_bucket" },
    { "model": "gcra" },
    { "model": "sliding_window_counter" }
  ],
  "trace": { "path": "TRACE", "unit": "ns" },
  "watch": { "key": "abuser-2", "from_s": 0.0 }
}"#;

/// With a shared-state candidate (nginx's zone, one LRU over every key):
/// the shard that replays it reads every partition.
const SHARED: &str = r#"{
  "name": "parts",
  "kind": "decision_accuracy",
  "seed": 3,
  "policy": { "limit": 10, "interval_ms": 1000 },
  "limiters": [
    { "model": "gcra" },
    { "model": "nginx_limit_req", "nodelay": true }
  ],
  "trace": { "path": "TRACE", "unit": "ns" },
  "watch": { "key": "abuser-2", "from_s": 0.0 }
}"#;

/// A scenario reading `trace`, in `dir`.
fn scenario(dir: &Path, text: &str, trace: &str) -> PathBuf {
    let s = dir.join("parts.json");
    std::fs::write(&s, text.replace("TRACE", trace)).unwrap();
    s
}

fn run(scenario: &Path, out: &Path, shard: Option<(u32, u32)>) -> String {
    let spec = shard.map(|(i, n)| format!("{i}/{n}"));
    let mut args = vec![
        "run",
        scenario.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--no-progress",
    ];
    if let Some(s) = &spec {
        args.extend(["--shard", s]);
    }
    ok(&args)
}

/// Shards `0..n` of `scenario` merged: the merged folder's files and the
/// shards' lines.
fn sharded(scenario: &Path, n: u32) -> (Vec<(String, Vec<u8>)>, Vec<String>) {
    let parts = tempfile::tempdir().unwrap();
    let merged = tempfile::tempdir().unwrap();
    let lines: Vec<String> = (0..n)
        .map(|i| run(scenario, parts.path(), Some((i, n))))
        .collect();
    let files: Vec<String> = (0..n)
        .map(|i| format!("{}/parts.shard-{i}-of-{n}.json", parts.path().display()))
        .collect();
    let mut args = vec!["merge", "--out", merged.path().to_str().unwrap()];
    args.extend(files.iter().map(String::as_str));
    ok(&args);
    (tree(merged.path()), lines)
}

#[test]
fn a_duckdb_partitioned_trace_shards_by_partition_and_merges_to_the_unsharded_report() {
    let ev = events();
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("trace.csv"),
        csv(&ev.iter().collect::<Vec<_>>()),
    )
    .unwrap();
    partition(&ev, &d.path().join("parted"), 8, false);
    let whole_file = tempfile::tempdir().unwrap();
    run(
        &scenario(d.path(), PER_KEY, "trace.csv"),
        whole_file.path(),
        None,
    );
    let s = scenario(d.path(), PER_KEY, "parted");
    let whole = tempfile::tempdir().unwrap();
    run(&s, whole.path(), None);
    let want = tree(whole.path());
    // The directory read as one trace is the file it was cut from (no two
    // requests share a nanosecond across files here): the same report but
    // for the trace's name.
    let renamed: Vec<(String, Vec<u8>)> = want
        .iter()
        .map(|(n, b)| {
            let text = String::from_utf8_lossy(b).replace("\"parted\"", "\"trace.csv\"");
            (
                n.clone(),
                if n.ends_with(".json") {
                    text.into_bytes()
                } else {
                    b.clone()
                },
            )
        })
        .collect();
    let file = tree(whole_file.path());
    assert_eq!(renamed.len(), file.len());
    for ((n, a), (m, b)) in renamed.iter().zip(&file) {
        assert!(n == m && a == b, "directory vs the one file: {n} differs");
    }
    assert!(want.iter().any(|(n, _)| n.ends_with("report.json")));
    for n in [2, 3, 4] {
        let (got, lines) = sharded(&s, n);
        assert!(got == want, "N = {n}: merged vs unsharded");
        // Each shard read only its partitions' files.
        let read: u64 = lines
            .iter()
            .map(|l| {
                assert!(l.contains("(only their files read)"), "{l}");
                let (own, _) = l.split_once(" requests from ").unwrap();
                own.rsplit(' ').next().unwrap().parse::<u64>().unwrap()
            })
            .sum();
        assert_eq!(read, ev.len() as u64, "N = {n}: {lines:?}");
    }
}

#[test]
fn a_spark_layout_with_a_shared_state_candidate_merges_to_the_unsharded_report() {
    let ev = events();
    let d = tempfile::tempdir().unwrap();
    partition(&ev, &d.path().join("spark"), 6, true);
    let s = scenario(d.path(), SHARED, "spark");
    let whole = tempfile::tempdir().unwrap();
    run(&s, whole.path(), None);
    let want = tree(whole.path());
    let (got, lines) = sharded(&s, 3);
    assert!(got == want, "merged vs unsharded");
    // Shard 0 replays nginx's zone over every partition; the others read
    // only theirs.
    assert!(
        lines[0].contains("every request through 1 of 1"),
        "{lines:?}"
    );
    assert!(lines[1].contains("on other shards"), "{lines:?}");
}

#[test]
fn a_flat_directory_of_files_is_one_trace_and_each_file_a_partition() {
    let ev = events();
    let d = tempfile::tempdir().unwrap();
    let flat = d.path().join("flat");
    std::fs::create_dir(&flat).unwrap();
    for p in 0..4 {
        let rows: Vec<_> = ev.iter().filter(|e| bucket(&e.1, 4) == p).collect();
        std::fs::write(flat.join(format!("part-0000{p}.csv")), csv(&rows)).unwrap();
    }
    let s = scenario(d.path(), PER_KEY, "flat");
    let whole = tempfile::tempdir().unwrap();
    run(&s, whole.path(), None);
    let (got, _) = sharded(&s, 2);
    assert!(got == tree(whole.path()), "merged vs unsharded");
}

#[test]
fn bad_partitions_are_refused_with_one_line() {
    let ev = events();
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("p");
    partition(&ev, &dir, 4, false);
    let s = scenario(d.path(), PER_KEY, "p");
    let out = tempfile::tempdir().unwrap();
    let o = out.path().to_str().unwrap();
    let sp = s.to_str().unwrap();
    // No partition for shard 5 of 6 (values 0..3).
    let e = fails(&["run", sp, "--out", o, "--shard", "5/6", "--no-progress"]);
    assert!(e.contains("no partition for shard 5/6"), "{e}");
    // A key in two partitions of one shard: named with both files.
    let stray = "t_ns,key,weight\n5,abuser-2,1\n";
    let other = (0..4).find(|&p| p != bucket("abuser-2", 4)).unwrap();
    let shard_of = |p: u64| p % 2;
    let same = (0..4)
        .find(|&p| p != bucket("abuser-2", 4) && shard_of(p) == shard_of(bucket("abuser-2", 4)))
        .unwrap();
    std::fs::write(dir.join(format!("part={same}/data_1.csv")), stray).unwrap();
    let spec = format!("{}/2", shard_of(same));
    let e = fails(&["run", sp, "--out", o, "--shard", &spec, "--no-progress"]);
    assert!(
        e.contains("\"abuser-2\" is in two partitions") && e.contains(&format!("part={same}")),
        "{e}"
    );
    std::fs::remove_file(dir.join(format!("part={same}/data_1.csv"))).unwrap();
    // ... and of two shards: merge names both files.
    let across = (0..4)
        .find(|&p| shard_of(p) != shard_of(bucket("abuser-2", 4)))
        .unwrap();
    assert_ne!(across, same);
    let _ = other;
    std::fs::write(dir.join(format!("part={across}/data_1.csv")), stray).unwrap();
    for i in ["0/2", "1/2"] {
        ok(&["run", sp, "--out", o, "--shard", i, "--no-progress"]);
    }
    let merged = tempfile::tempdir().unwrap();
    let e = fails(&[
        "merge",
        "--out",
        merged.path().to_str().unwrap(),
        &format!("{o}/parts.shard-0-of-2.json"),
        &format!("{o}/parts.shard-1-of-2.json"),
    ]);
    assert!(
        e.contains("\"abuser-2\" is in two partitions")
            && e.contains(&format!("part={across}/data_1.csv"))
            && e.contains(&format!("part={}/data_0.csv", bucket("abuser-2", 4))),
        "{e}"
    );
    std::fs::remove_file(dir.join(format!("part={across}/data_1.csv"))).unwrap();
    // An empty partition folder.
    std::fs::create_dir(dir.join("part=9")).unwrap();
    let e = fails(&["run", sp, "--out", o, "--no-progress"]);
    assert!(e.contains("part=9") && e.contains("empty"), "{e}");
    std::fs::remove_dir(dir.join("part=9")).unwrap();
    // Mixed formats.
    std::fs::write(dir.join("part=1/data_1.jsonl"), "{}\n").unwrap();
    let e = fails(&["run", sp, "--out", o, "--no-progress"]);
    assert!(e.contains("mixed formats"), "{e}");
}

#[test]
fn size_reads_a_partitioned_directory_as_one_trace_and_its_shards_merge() {
    let ev = events();
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("parted");
    partition(&ev, &dir, 4, false);
    let file = d.path().join("trace.csv");
    std::fs::write(&file, csv(&ev.iter().collect::<Vec<_>>())).unwrap();
    let size = |trace: &Path, out: &Path, shard: Option<&str>| {
        let (trace, out) = (trace.to_str().unwrap(), out.to_str().unwrap());
        let mut args = size_limit_args(trace, out, "compliant_denied_pct<=1", &["--seeds", "3"]);
        if let Some(s) = shard {
            args.extend(["--shard", s]);
        }
        ok(&args)
    };
    let (whole, one) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let text = size(&dir, whole.path(), None);
    let single = size(&file, one.path(), None);
    // The same pick as the file the directory was cut from.
    let pick = |t: &str| {
        t.lines()
            .filter(|l| l.starts_with("recommended:"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert!(!pick(&text).is_empty(), "{text}");
    assert_eq!(pick(&text), pick(&single));
    let parts = tempfile::tempdir().unwrap();
    for i in ["0/2", "1/2"] {
        size(&dir, parts.path(), Some(i));
    }
    let merged = tempfile::tempdir().unwrap();
    let p = parts.path().display().to_string();
    ok(&[
        "merge",
        "--out",
        merged.path().to_str().unwrap(),
        &format!("{p}/size.shard-0-of-2.json"),
        &format!("{p}/size.shard-1-of-2.json"),
    ]);
    assert!(
        tree(merged.path()) == tree(whole.path()),
        "merged vs unsharded"
    );
}

/// The interpreter with Python's `duckdb` module: $RATELAB_PYTHON (CI's
/// venv, from notebooks/requirements.txt), else python3.
fn duckdb() -> Option<String> {
    let py = std::env::var("RATELAB_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = std::process::Command::new(&py)
        .args(["-c", "import duckdb"])
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(py)
}

#[test]
fn a_trace_partitioned_by_real_duckdb_shards_and_merges_to_the_unsharded_report() {
    let Some(py) = duckdb() else {
        return crate::common::adapters::skip(
            "a_trace_partitioned_by_real_duckdb_shards_and_merges_to_the_unsharded_report",
            "no python with duckdb (pip install -r notebooks/requirements.txt, set RATELAB_PYTHON)",
        );
    };
    let ev = events();
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("trace.csv"),
        csv(&ev.iter().collect::<Vec<_>>()),
    )
    .unwrap();
    // The chapter's partitioning step, as written there.
    let sql = "COPY (SELECT *, hash(key) % 4 AS part FROM read_csv('trace.csv') ORDER BY t_ns) \
               TO 'parted' (FORMAT parquet, PARTITION_BY (part))";
    let o = std::process::Command::new(&py)
        .args([
            "-c",
            &format!("import duckdb; duckdb.sql('SET threads = 1'); duckdb.sql(\"{sql}\")"),
        ])
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(d.path().join("parted/part=0/data_0.parquet").is_file());
    let s = scenario(d.path(), PER_KEY, "parted");
    let whole = tempfile::tempdir().unwrap();
    let text = run(&s, whole.path(), None);
    assert!(text.contains(&format!("{} requests", ev.len())), "{text}");
    let (got, lines) = sharded(&s, 4);
    assert!(got == tree(whole.path()), "merged vs unsharded: {lines:?}");
}

#[test]
fn run_trace_over_a_directory_shards_by_partition() {
    let ev = events();
    let d = tempfile::tempdir().unwrap();
    partition(&ev, &d.path().join("logs"), 4, true);
    let dir = d.path().join("logs");
    let run_trace = |out: &Path, shard: Option<&str>| {
        let mut args = vec![
            "run",
            "--trace",
            dir.to_str().unwrap(),
            "--limit",
            "10",
            "--interval-ms",
            "1000",
            "--candidates",
            "gcra_governor,token_bucket",
            "--out",
            out.to_str().unwrap(),
            "--no-progress",
        ];
        if let Some(s) = shard {
            args.extend(["--shard", s]);
        }
        ok(&args)
    };
    let whole = tempfile::tempdir().unwrap();
    let text = run_trace(whole.path(), None);
    assert!(text.contains(&format!("{} requests", ev.len())), "{text}");
    let parts = tempfile::tempdir().unwrap();
    for s in ["0/2", "1/2"] {
        let line = run_trace(parts.path(), Some(s));
        assert!(
            line.contains("2 of 4 partitions (only their files read)"),
            "{line}"
        );
    }
    let merged = tempfile::tempdir().unwrap();
    let p = parts.path().display().to_string();
    ok(&[
        "merge",
        "--out",
        merged.path().to_str().unwrap(),
        &format!("{p}/logs.shard-0-of-2.json"),
        &format!("{p}/logs.shard-1-of-2.json"),
    ]);
    assert!(
        tree(merged.path()) == tree(whole.path()),
        "merged vs unsharded"
    );
}

/// `ev` as nginx logs it (`combined`, whole seconds, the key as the client
/// address; the abusers get addresses of their own).
fn combined(ev: &[&(u64, String, u32)]) -> String {
    let mut out = String::new();
    for (n, (t, k, _)) in ev.iter().enumerate() {
        let ip = match k.strip_prefix("abuser-") {
            Some(a) => format!("192.0.2.{a}"),
            None => k.clone(),
        };
        let s = t / 1_000_000_000;
        let _ = writeln!(
            out,
            "{ip} - - [01/Jan/2024:00:00:{s:02} +0000] \"GET /u/{n} HTTP/1.1\" 200 {} \"-\" \"curl/8.4.0\"",
            n % 977
        );
    }
    out
}

#[test]
fn an_access_log_in_partition_folders_shards_and_merges_to_the_unsharded_report() {
    let ev = events();
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("logs");
    for p in 0..3 {
        let rows: Vec<_> = ev.iter().filter(|e| bucket(&e.1, 3) == p).collect();
        let folder = dir.join(format!("bucket={p}"));
        std::fs::create_dir_all(&folder).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(combined(&rows).as_bytes()).unwrap();
        std::fs::write(folder.join("access.log.gz"), gz.finish().unwrap()).unwrap();
    }
    let text = PER_KEY
        .replace(r#""unit": "ns""#, r#""format": "combined""#)
        .replace("abuser-2", "192.0.2.2");
    let s = scenario(d.path(), &text, "logs");
    let whole = tempfile::tempdir().unwrap();
    let out = run(&s, whole.path(), None);
    assert!(out.contains(&format!("{} requests", ev.len())), "{out}");
    let want = tree(whole.path());
    let report = want
        .iter()
        .find(|(n, _)| n.ends_with("report.json"))
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        .unwrap();
    assert!(
        report.contains("spread uniform"),
        "whole seconds spread per file"
    );
    for n in [2, 3] {
        let (got, lines) = sharded(&s, n);
        assert!(got == want, "N = {n}: merged vs unsharded: {lines:?}");
    }
}
