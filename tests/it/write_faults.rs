//! Writes that fail: every command that writes (`run`, `reproduce`, `size`,
//! `export`, `replay`, `merge`, `report`) under three faults must exit with
//! code 2, print one line on stderr naming the output path, leave the
//! previous output byte-identical and leave no temporary behind (`.ratelab-*`
//! files, `.<name>.staging-*` folders: nothing hidden at all).
//!
//! The faults, as they behave for root (the tests run as root, where file
//! modes do not stop writes):
//!
//! * `fsize`: ratelab runs under a shell's `ulimit -f 4` (2 KiB), as a user
//!   meets a file-size limit or quota: nothing is patched in the child, so
//!   ratelab itself must ignore SIGXFSZ to turn the limit into an EFBIG
//!   error instead of being killed. Always available.
//! * `read_only`: the output folder is bind-mounted onto itself read-only
//!   (EROFS, root included). Without the right to mount, `chattr +i` on the
//!   folder (EPERM, root included); without that either, the test says so
//!   and skips.
//! * `full`: the output folder is a fresh tmpfs (`size=1m`) whose free
//!   space is then eaten by a filler file (ENOSPC). Skipped, with the
//!   reason printed, where mount is refused.
//!
//! Each command's inputs live outside the faulty folder; its previous output
//! is made by the same command before the fault.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SCENARIO: &str = r#"{"name": "wf", "kind": "estimator_accuracy", "runs": 2,
  "description": "A small sweep for the write-fault tests.", "seed": 5,
  "workload": {"type": "harmonic", "keys": 300, "top": 3000},
  "configs": [{"hashes": 2, "slots": 64}, {"hashes": 3, "slots": 128}]}"#;

const DECISION: &str = r#"{"name": "wf-dec", "kind": "decision_accuracy", "seed": 2,
  "policy": {"limit": 10, "interval_ms": 1000},
  "shapes": [{"hashes": 2, "slots": 64}],
  "workload": {"type": "poisson", "keys": {"type": "uniform", "keys": 3},
               "rate": 400.0, "duration_s": 5.0}}"#;

/// A trace whose replay output is well past the 2 KiB file size limit.
fn trace() -> String {
    let mut t = String::from("t_ms,key,op,n\n");
    for i in 0..600 {
        t.push_str(&format!("{i},k{},observe,1\n", i % 7));
    }
    t
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    Fsize,
    ReadOnly,
    Full,
}

/// Undoes a fault's mount or attribute when dropped.
struct Undo(Vec<Vec<String>>);

impl Drop for Undo {
    fn drop(&mut self) {
        for cmd in self.0.iter().rev() {
            let _ = Command::new(&cmd[0]).args(&cmd[1..]).output();
        }
    }
}

fn sh(args: &[&str]) -> bool {
    Command::new(args[0])
        .args(&args[1..])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Runs ratelab; under the `fsize` fault through `sh -c 'ulimit -f 4; exec
/// ratelab …'` (4 blocks of 512 bytes), SIGXFSZ left as the shell has it.
fn run_faulty(args: &[String], fault: Fault) -> Output {
    let bin = env!("CARGO_BIN_EXE_ratelab");
    let mut cmd = if fault == Fault::Fsize {
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg("ulimit -f 4 && exec \"$0\" \"$@\"")
            .arg(bin);
        c
    } else {
        Command::new(bin)
    };
    cmd.args(args).current_dir(root());
    cmd.output().expect("the ratelab binary runs")
}

fn ok(args: &[String]) {
    let o = ratelab(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
}

/// Prepares `dir` (empty) for `fault`; `None` (with the reason printed)
/// where the machine does not allow it. Call after the previous output is
/// in place.
fn arm(dir: &Path, fault: Fault) -> Option<Undo> {
    let d = dir.to_str().unwrap().to_string();
    match fault {
        Fault::Fsize => Some(Undo(Vec::new())),
        Fault::ReadOnly => {
            if sh(&["mount", "--bind", &d, &d]) {
                let undo = Undo(vec![vec!["umount".into(), d.clone()]]);
                if sh(&["mount", "-o", "remount,ro,bind", &d]) {
                    return Some(undo);
                }
            }
            if sh(&["chattr", "+i", &d]) {
                return Some(Undo(vec![vec!["chattr".into(), "-i".into(), d]]));
            }
            eprintln!("skipped: neither a read-only bind mount nor chattr +i is allowed here");
            None
        }
        Fault::Full => unreachable!("the full fault is armed by mount_full"),
    }
}

/// Mounts a 1 MiB tmpfs on `dir` (empty), for the full-filesystem fault.
fn mount_full(dir: &Path) -> Option<Undo> {
    let d = dir.to_str().unwrap().to_string();
    if !sh(&["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", &d]) {
        eprintln!("skipped: mount -t tmpfs is not allowed here");
        return None;
    }
    Some(Undo(vec![vec!["umount".into(), d]]))
}

/// Eats every free block of the filesystem of `dir`.
fn fill(dir: &Path) {
    use std::io::Write;
    let mut f = std::fs::File::create(dir.join("filler")).unwrap();
    let chunk = vec![0u8; 4096];
    while f.write_all(&chunk).is_ok() {}
    let _ = f.write_all(&[0u8; 1]);
    let _ = f.sync_all();
}

fn stray(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            // `.ratelab-*` temporaries and `.<name>.staging-*` folders.
            if name.starts_with('.') {
                out.push(e.path().display().to_string());
            }
            if e.path().is_dir() {
                stack.push(e.path());
            }
        }
    }
    out
}

/// A command under test: given its input folder, its output folder and
/// whether this is the faulted run, the arguments that write into the
/// output folder. The faulted run asks for different output where the
/// command allows (another seed, target or interval), so a partly replaced
/// previous output would show.
type Case = fn(&Path, &Path, bool) -> Vec<String>;

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

fn input(inp: &Path, name: &str, text: &str) -> String {
    let p = inp.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// `--seed 77` on the faulted run.
fn seeded(mut args: Vec<String>, faulted: bool) -> Vec<String> {
    if faulted {
        args.extend(s(&["--seed", "77"]));
    }
    args
}

fn case_run(inp: &Path, out: &Path, faulted: bool) -> Vec<String> {
    let sc = input(inp, "wf.json", SCENARIO);
    let args = s(&["run", &sc, "--out", out.to_str().unwrap(), "--no-progress"]);
    seeded(args, faulted)
}

fn case_reproduce(inp: &Path, out: &Path, faulted: bool) -> Vec<String> {
    let dir = inp.join("scenarios");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("wf.json"), SCENARIO).unwrap();
    let args = s(&[
        "reproduce",
        "--scenarios",
        dir.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--no-progress",
    ]);
    seeded(args, faulted)
}

fn case_size(_inp: &Path, out: &Path, faulted: bool) -> Vec<String> {
    s(&[
        "size",
        "--keys",
        "300",
        "--dist",
        "harmonic",
        "--top",
        if faulted { "6000" } else { "3000" },
        "--target",
        "exact_pct>=50",
        "--out",
        out.to_str().unwrap(),
        "--no-progress",
    ])
}

fn case_export(inp: &Path, out: &Path, faulted: bool) -> Vec<String> {
    let sc = input(inp, "wf-dec.json", DECISION);
    let args = s(&[
        "export",
        &sc,
        "--out",
        out.join("trace.csv").to_str().unwrap(),
    ]);
    seeded(args, faulted)
}

fn case_replay(inp: &Path, out: &Path, faulted: bool) -> Vec<String> {
    let t = input(inp, "in.csv", &trace());
    s(&[
        "replay",
        "--algo",
        "rate",
        "--trace",
        &t,
        "--interval-ms",
        if faulted { "20" } else { "10" },
        "--hasher",
        "exact",
        "--out",
        out.join("out.csv").to_str().unwrap(),
    ])
}

fn case_merge(inp: &Path, out: &Path, _faulted: bool) -> Vec<String> {
    let sc = input(inp, "wf.json", SCENARIO);
    let parts = inp.join("parts");
    let p = parts.to_str().unwrap();
    if !parts.exists() {
        for i in 0..2 {
            ok(&s(&[
                "run",
                &sc,
                "--out",
                p,
                "--shard",
                &format!("{i}/2"),
                "--no-progress",
            ]));
        }
    }
    let mut a = s(&["merge", "--out", out.to_str().unwrap()]);
    for i in 0..2 {
        a.push(format!("{p}/wf.shard-{i}-of-2.json"));
    }
    a
}

fn case_report(inp: &Path, out: &Path, _faulted: bool) -> Vec<String> {
    // The report folder itself is the output: give it one report first
    // (made elsewhere and copied in, so the copy is all the fault sees).
    let src = inp.join("made");
    if !src.exists() {
        let sc = input(inp, "wf.json", SCENARIO);
        ok(&s(&[
            "run",
            &sc,
            "--out",
            src.to_str().unwrap(),
            "--no-progress",
        ]));
    }
    let dst = out.join("wf");
    if !dst.exists() {
        std::fs::create_dir_all(&dst).unwrap();
        for e in std::fs::read_dir(src.join("wf")).unwrap().flatten() {
            std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
        }
    }
    s(&["report", "--out", out.to_str().unwrap()])
}

/// Runs `case` under `fault`: previous output first, then the failing
/// write, then the checks.
fn check(name: &str, case: Case, fault: Fault) {
    let inp = tempfile::tempdir().unwrap();
    let base = tempfile::tempdir().unwrap();
    let out: PathBuf = base.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let mut _undo = None;
    if fault == Fault::Full {
        match mount_full(&out) {
            Some(u) => _undo = Some(u),
            None => return,
        }
    }
    // The previous output: the same command, unfaulted.
    ok(&case(inp.path(), &out, false));
    let args = case(inp.path(), &out, true);
    assert!(!tree(&out).is_empty(), "{name}: no previous output");
    match fault {
        Fault::Full => fill(&out),
        _ => match arm(&out, fault) {
            Some(u) => _undo = Some(u),
            None => return,
        },
    }
    let before = tree(&out);
    let o = run_faulty(&args, fault);
    let err = stderr(&o);
    let out_s = out.display().to_string();
    let mut problems = Vec::new();
    if o.status.code() != Some(2) {
        problems.push(format!("exit code {:?}, want 2", o.status.code()));
    }
    if err.trim_end().lines().count() != 1 {
        problems.push("stderr is not one line".to_string());
    }
    if !err.contains(&out_s) {
        problems.push(format!("stderr does not name {out_s}"));
    }
    let left = stray(base.path());
    if !left.is_empty() {
        problems.push(format!("temporaries left: {left:?}"));
    }
    if tree(&out) != before {
        problems.push("the previous output changed".to_string());
    }
    drop(_undo.take());
    assert!(
        problems.is_empty(),
        "{name} under {fault:?}: {}\nstderr: {err}",
        problems.join("; ")
    );
}

macro_rules! fault_tests {
    ($($test:ident: $case:ident, $fault:expr;)*) => {
        $(#[test]
        fn $test() {
            check(stringify!($case), $case, $fault);
        })*
    };
}

fault_tests! {
    run_fsize: case_run, Fault::Fsize;
    run_read_only: case_run, Fault::ReadOnly;
    run_full: case_run, Fault::Full;
    reproduce_fsize: case_reproduce, Fault::Fsize;
    reproduce_read_only: case_reproduce, Fault::ReadOnly;
    reproduce_full: case_reproduce, Fault::Full;
    size_fsize: case_size, Fault::Fsize;
    size_read_only: case_size, Fault::ReadOnly;
    size_full: case_size, Fault::Full;
    export_fsize: case_export, Fault::Fsize;
    export_read_only: case_export, Fault::ReadOnly;
    export_full: case_export, Fault::Full;
    replay_fsize: case_replay, Fault::Fsize;
    replay_read_only: case_replay, Fault::ReadOnly;
    replay_full: case_replay, Fault::Full;
    merge_fsize: case_merge, Fault::Fsize;
    merge_read_only: case_merge, Fault::ReadOnly;
    merge_full: case_merge, Fault::Full;
    report_fsize: case_report, Fault::Fsize;
    report_read_only: case_report, Fault::ReadOnly;
    report_full: case_report, Fault::Full;
}

/// A pid with no process: one that has just exited.
fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

#[test]
fn the_staging_folders_of_a_killed_run_are_removed_by_the_next_run() {
    let inp = tempfile::tempdir().unwrap();
    let base = tempfile::tempdir().unwrap();
    let out = base.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let dead = dead_pid();
    for n in [format!(".wf.staging-{dead}"), format!(".wf.old-{dead}")] {
        std::fs::create_dir(out.join(&n)).unwrap();
        std::fs::write(out.join(&n).join("table.md"), "half").unwrap();
    }
    // Someone else's hidden folder is not ours to remove.
    std::fs::create_dir(out.join(".keep")).unwrap();
    ok(&case_run(inp.path(), &out, false));
    let mut left: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, [".keep", "wf"]);
}

#[test]
fn a_report_folder_that_is_a_file_is_refused_before_any_work() {
    let inp = tempfile::tempdir().unwrap();
    let base = tempfile::tempdir().unwrap();
    let out = base.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("wf"), "my notes").unwrap();
    for args in [
        case_run(inp.path(), &out, false),
        case_reproduce(inp.path(), &out, false),
    ] {
        let o = run_faulty(&args, Fault::ReadOnly);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains("is not a folder"), "{err}");
        assert_eq!(std::fs::read(out.join("wf")).unwrap(), b"my notes");
        assert!(stray(base.path()).is_empty(), "{:?}", stray(base.path()));
    }
}

#[test]
fn decisions_files_have_the_reports_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let inp = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let sc = input(inp.path(), "wf-dec.json", DECISION);
    let dec = out.path().join("decisions.csv");
    ok(&s(&[
        "run",
        &sc,
        "--out",
        out.path().to_str().unwrap(),
        "--decisions",
        dec.to_str().unwrap(),
        "--no-progress",
    ]));
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dec), mode(&out.path().join("wf-dec/report.json")));
}

/// A write that fails into an `--out` folder that did not exist leaves no
/// folder behind (an empty one would read as a run's output).
#[test]
fn a_failed_write_into_a_new_out_folder_leaves_no_folder() {
    let inp = tempfile::tempdir().unwrap();
    let base = tempfile::tempdir().unwrap();
    let out = base.path().join("new").join("reports");
    let sc = input(inp.path(), "wf.json", SCENARIO);
    let o = run_faulty(
        &s(&["run", &sc, "--out", out.to_str().unwrap(), "--no-progress"]),
        Fault::Fsize,
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        !base.path().join("new").exists(),
        "left: {:?}",
        tree(base.path())
    );
    // `size` writes its files into the folder itself: the same holds.
    let size_out = base.path().join("new2").join("size");
    let o = run_faulty(&case_size(inp.path(), &size_out, true), Fault::Fsize);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        !base.path().join("new2").exists(),
        "left: {:?}",
        tree(base.path())
    );
}

/// An output file that exists as a device or a named pipe is refused, and
/// left as it was: every file ratelab writes is renamed over its target,
/// which would replace the node itself (`export --out /dev/null` as root
/// replaced /dev/null with a regular file holding the trace).
#[test]
fn an_output_that_is_a_device_or_a_pipe_is_refused_and_left_alone() {
    use std::os::unix::fs::FileTypeExt;
    let inp = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    assert!(sh(&["mkfifo", fifo.to_str().unwrap()]));
    let mut nodes = vec![fifo];
    let null = dir.path().join("null");
    if sh(&["mknod", null.to_str().unwrap(), "c", "1", "3"]) {
        nodes.push(null);
    } else {
        eprintln!("mknod is not allowed here: the device case is skipped");
    }
    let dec = input(inp.path(), "wf-dec.json", DECISION);
    let t = input(inp.path(), "in.csv", &trace());
    for node in &nodes {
        let n = node.to_str().unwrap();
        let other = dir.path().join("reports");
        for args in [
            s(&["export", &dec, "--out", n]),
            s(&[
                "replay",
                "--algo",
                "rate",
                "--trace",
                &t,
                "--interval-ms",
                "10",
                "--out",
                n,
            ]),
            s(&[
                "run",
                &dec,
                "--decisions",
                n,
                "--out",
                other.to_str().unwrap(),
                "--no-progress",
            ]),
        ] {
            let o = run_faulty(&args, Fault::ReadOnly);
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            assert_eq!(err.trim_end().lines().count(), 1, "{err}");
            assert!(
                err.contains(&format!("{n}: exists and is not a regular file")),
                "{err}"
            );
            let ft = std::fs::symlink_metadata(node).unwrap().file_type();
            assert!(ft.is_fifo() || ft.is_char_device(), "{n} was replaced");
        }
        assert!(stray(dir.path()).is_empty(), "{:?}", stray(dir.path()));
    }
}

/// A file where an output folder (or a folder above it) should be is
/// refused before any work, naming it, for every command that writes a
/// folder or a shard file: `run` (above the report folder), `run --shard`,
/// `size`, `size --shard`, `recommend` and `merge`. Each trace here has a
/// bad last line, so an error naming it would show the work had begun;
/// before the check these ran and then failed with "File exists" or "Not a
/// directory".
#[test]
fn a_file_in_the_way_of_an_output_is_refused_before_any_work() {
    let inp = tempfile::tempdir().unwrap();
    let base = tempfile::tempdir().unwrap();
    let file = base.path().join("notes");
    std::fs::write(&file, "my notes").unwrap();
    let f = file.to_str().unwrap();
    let under = file.join("sub");
    let u = under.to_str().unwrap();
    let mut log = String::from("t_ns,key\n");
    for i in 0..3000u64 {
        log.push_str(&format!("{},k{}\n", i * 3_000_000, i % 5));
    }
    log.push_str("oops,k1\n");
    let t = input(inp.path(), "late-bad.csv", &log);
    let sc = input(inp.path(), "wf.json", SCENARIO);
    let size = |out: &str, shard: Option<&str>| {
        let mut a = s(&[
            "size",
            "--trace",
            &t,
            "--limit",
            "10",
            "--interval-ms",
            "1000",
            "--target",
            "compliant_denied_pct<=0.1",
            "--out",
            out,
            "--no-progress",
        ]);
        if let Some(sh) = shard {
            a.extend(s(&["--shard", sh]));
        }
        a
    };
    let decision_trace = |out: &str, shard: &str| {
        s(&[
            "run",
            "--trace",
            &t,
            "--limit",
            "10",
            "--interval-ms",
            "1000",
            "--out",
            out,
            "--shard",
            shard,
            "--no-progress",
        ])
    };
    let cases: Vec<(Vec<String>, String)> = vec![
        (
            s(&["run", &sc, "--out", u, "--no-progress"]),
            format!("{u}: {f} exists and is not a folder"),
        ),
        (
            s(&["run", &sc, "--out", f, "--shard", "0/2", "--no-progress"]),
            format!("{f}/wf.shard-0-of-2.json: {f} exists and is not a folder"),
        ),
        (
            decision_trace(f, "1/2"),
            format!("{f}/late-bad.shard-1-of-2.json: {f} exists and is not a folder"),
        ),
        (size(f, None), format!("{f}: exists and is not a folder")),
        (
            size(u, None),
            format!("{u}: {f} exists and is not a folder"),
        ),
        (
            size(f, Some("0/2")),
            format!("{f}/size.shard-0-of-2.json: {f} exists and is not a folder"),
        ),
        (
            s(&[
                "recommend",
                "--trace",
                &t,
                "--limit",
                "10",
                "--interval-ms",
                "1000",
                "--for",
                "nginx",
                "--out",
                u,
            ]),
            format!("{u}: {f} exists and is not a folder"),
        ),
        (
            s(&["merge", "--out", f, "no-such-shard.json"]),
            format!("{f}: exists and is not a folder"),
        ),
    ];
    for (args, want) in cases {
        let o = run_faulty(&args, Fault::ReadOnly);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(&want), "{args:?}: want {want:?} in {err}");
        assert_eq!(std::fs::read(&file).unwrap(), b"my notes");
    }
    assert!(stray(base.path()).is_empty(), "{:?}", stray(base.path()));
}

/// An output that names an input (the same file through another path or a
/// link) is refused before anything is written, and the input is kept:
/// `replay --out` over its `--trace`, `export --out` over its scenario,
/// `run --decisions` over the trace it reads. Each once replaced its input
/// with the output, exit 0.
#[test]
fn an_output_naming_an_input_is_refused_and_the_input_kept() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let trace = "t_ns,key\n1,a\n2,a\n3,b\n";
    std::fs::write(d.join("t.csv"), trace).unwrap();
    std::fs::write(d.join("s.json"), DECISION).unwrap();
    std::os::unix::fs::symlink(d.join("s.json"), d.join("link.json")).unwrap();
    let p = |n: &str| d.join(n).display().to_string();
    let cases: [(Vec<String>, &str, &str); 3] = [
        (
            s(&[
                "replay",
                "--algo",
                "limiter",
                "--limiter",
                "governor GCRA per key",
            ])
            .into_iter()
            .chain(s(&["--limit", "5", "--interval-ms", "1000", "--trace"]))
            .chain([
                p("t.csv"),
                "--out".into(),
                format!("{}/./t.csv", d.display()),
            ])
            .collect(),
            "t.csv",
            "--out",
        ),
        (
            vec!["export".into(), p("s.json"), "--out".into(), p("link.json")],
            "s.json",
            "--out",
        ),
        (
            s(&["run", "--trace"])
                .into_iter()
                .chain([p("t.csv")])
                .chain(s(&[
                    "--limit",
                    "1",
                    "--interval-ms",
                    "1000",
                    "--no-progress",
                    "--out",
                ]))
                .chain([p("out"), "--decisions".into(), p("t.csv")])
                .collect(),
            "t.csv",
            "--decisions",
        ),
    ];
    for (args, input, flag) in cases {
        let before = std::fs::read(d.join(input)).unwrap();
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = ratelab(&refs);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.trim_end().lines().count() == 1
                && err.contains(flag)
                && err.contains("the same file as"),
            "{args:?}: {err}"
        );
        assert_eq!(
            std::fs::read(d.join(input)).unwrap(),
            before,
            "{args:?}: input changed"
        );
        assert!(!d.join("out").exists(), "{args:?}: wrote a report");
        assert!(stray(d).is_empty(), "{args:?}: {:?}", stray(d));
    }
}
