//! The README and the guide (`docs/book/src/`) cannot rot: every ```` ```sh ````
//! block is run from the repository root, every ```` ```json ```` block is
//! parsed (scenarios are also loaded by the binary), the output a page shows
//! is compared with what the command prints, and every relative link and
//! `#anchor` resolves.
//!
//! Conventions a page follows (also in the guide's "Architecture" chapter):
//!
//! - ```` ```sh ```` blocks run with `bash -euo pipefail` from the repository
//!   root. `ratelab` is the binary under test; `cargo run [--release]
//!   [--quiet] -- ARGS` runs it too, `cargo run --example NAME` runs the
//!   built example, and `cargo test`, `cargo build`, `cargo install` lines
//!   do nothing (this test is already running under them). Commands write
//!   only under `target/` so a test run leaves the tree clean.
//! - ```` ```sh slow ```` blocks (minutes) run only in the ignored test
//!   `slow_sh_blocks_run` (`.ci/run` runs it with `--include-ignored`).
//! - ```` ```sh needs=TOOL ```` blocks run when `TOOL` is on the PATH (docker:
//!   when its daemon answers), and
//!   are skipped with a notice otherwise (e.g. `docker`).
//! - ```` ```sh scratch ```` blocks are run by `exec_ci_layout` in a
//!   scratch repository laid out as their page says (they write
//!   `reports/`, so never from this repository's root).
//! - A ```` ```text ```` block right after a `sh` block (nothing but blank
//!   lines between) is that command's output: each of its lines must appear
//!   in what the command printed (stdout then stderr), in order, trailing
//!   spaces aside; a line `...` skips any number of lines and a line
//!   ending in `...` matches any line starting with the rest.
//! - ```` ```json ```` blocks parse as JSON, or as the members of an object
//!   (a fragment such as `"expect": {...}`). A block that is a whole
//!   scenario (it has `name` and `kind`) is loaded by `ratelab run` with a
//!   work budget of one unit: it must fail only on that budget (or, when
//!   it names a program, on the trust check that precedes any work).

use crate::common;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A fenced code block of a Markdown page.
#[derive(Debug)]
struct Block {
    file: PathBuf,
    /// 1-based line of the opening fence.
    line: usize,
    /// The info string (`sh`, `sh slow`, `json`, `text`, ...).
    info: String,
    text: String,
    /// Index of the block right before this one when only blank lines
    /// separate them.
    after: Option<usize>,
}

impl Block {
    fn lang(&self) -> &str {
        self.info.split([' ', ',']).next().unwrap_or("")
    }
    fn has(&self, attr: &str) -> bool {
        self.info.split([' ', ',']).skip(1).any(|a| a == attr)
    }
    fn at(&self) -> String {
        format!(
            "{}:{}",
            self.file
                .strip_prefix(common::root())
                .unwrap_or(&self.file)
                .display(),
            self.line
        )
    }
}

/// README.md and every page of the guide.
fn pages() -> Vec<PathBuf> {
    let mut out = vec![common::root().join("README.md")];
    let mut stack = vec![common::root().join("docs/book/src")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The fenced blocks of one page, in order.
fn blocks_of(file: &Path) -> Vec<Block> {
    let text = std::fs::read_to_string(file).unwrap();
    let mut out: Vec<Block> = Vec::new();
    let mut open: Option<(usize, String, String, String)> = None; // line, fence, info, text
    let mut last_closed: Option<usize> = None;
    for (i, line) in text.lines().enumerate() {
        match &mut open {
            None => {
                let t = line.trim_start();
                let fence: String = t.chars().take_while(|&c| c == '`').collect();
                if fence.len() >= 3 {
                    open = Some((
                        i + 1,
                        fence.clone(),
                        t[fence.len()..].trim().to_string(),
                        String::new(),
                    ));
                } else if !line.trim().is_empty() {
                    last_closed = None;
                }
            }
            Some((start, fence, info, body)) => {
                if line.trim() == fence.as_str() {
                    let after = last_closed;
                    out.push(Block {
                        file: file.to_path_buf(),
                        line: *start,
                        info: std::mem::take(info),
                        text: std::mem::take(body),
                        after,
                    });
                    last_closed = Some(out.len() - 1);
                    open = None;
                } else {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    assert!(open.is_none(), "{}: unclosed code block", file.display());
    out
}

fn all_blocks() -> Vec<Vec<Block>> {
    pages().iter().map(|p| blocks_of(p)).collect()
}

/// Shims so a page's commands run as written: `ratelab` and `cargo run`
/// are the binary under test, `cargo test|build|install` do nothing.
const PRELUDE: &str = r#"
ratelab() { "$RATELAB_BIN" "$@"; }
cargo() {
  case "$1" in
    run)
      shift
      local example=""
      while [ $# -gt 0 ]; do
        case "$1" in
          --release|--quiet|-q|--locked) shift ;;
          --example) example="$2"; shift 2 ;;
          --) shift; break ;;
          *) echo "docs test: unknown cargo run flag $1" >&2; return 2 ;;
        esac
      done
      if [ -n "$example" ]; then "$RATELAB_EXAMPLES/$example" "$@"; else "$RATELAB_BIN" "$@"; fi ;;
    test|build|install|doc|fmt|clippy) echo "(docs test: cargo $1 not run here)" ;;
    *) echo "docs test: cargo $1 is not shimmed" >&2; return 2 ;;
  esac
}
export -f ratelab cargo
"#;

/// Runs one `sh` block; returns stdout followed by stderr.
fn run_sh(b: &Block) -> String {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_ratelab"));
    let examples = bin.parent().unwrap().join("examples");
    let script = format!("set -euo pipefail\n{PRELUDE}\n{}", b.text);
    let o = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(common::root())
        .env("RATELAB_BIN", &bin)
        // Scripts a page runs find the binary under test as `ratelab`.
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin.parent().unwrap().display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env("RATELAB_EXAMPLES", &examples)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let out = format!("{}{}", common::stdout(&o), common::stderr(&o));
    assert!(
        o.status.success(),
        "{}: the block failed ({}):\n{}\n--- output:\n{out}",
        b.at(),
        o.status,
        b.text
    );
    out
}

/// Whether every line of `want` appears in `got` in order (see the module
/// docs for `...`).
fn output_matches(want: &str, got: &str) -> Result<(), String> {
    let got: Vec<&str> = got.lines().map(str::trim_end).collect();
    let mut at = 0;
    let mut skipping = false;
    for w in want.lines().map(str::trim_end) {
        if w.trim() == "..." {
            skipping = true;
            continue;
        }
        if w.is_empty() && !skipping {
            continue;
        }
        let prefix = w.strip_suffix("...");
        let matches = |g: &str| match prefix {
            Some(p) => g.starts_with(p.trim_end()),
            None => g == w,
        };
        let found = if skipping {
            got[at..].iter().position(|g| matches(g)).map(|p| at + p)
        } else {
            // Consecutive lines: the next non-blank printed line.
            let mut j = at;
            while j < got.len() && got[j].is_empty() && !w.is_empty() {
                j += 1;
            }
            // The first expected line may start anywhere.
            if at == 0 {
                got.iter().position(|g| matches(g))
            } else {
                (j < got.len() && matches(got[j])).then_some(j)
            }
        };
        match found {
            Some(j) => at = j + 1,
            None => return Err(format!("line {w:?} not found (after printed line {at})")),
        }
        skipping = false;
    }
    Ok(())
}

/// Runs the `sh` blocks that `pick` takes (a block, whether it is the
/// README's); returns how many ran.
fn check_sh_blocks(pick: impl Fn(&Block, bool) -> bool) -> usize {
    let mut ran = 0;
    let readme = common::root().join("README.md");
    for page in all_blocks() {
        for (i, b) in page.iter().enumerate() {
            if b.lang() != "sh" || !pick(b, b.file == readme) {
                continue;
            }
            if b.has("scratch") {
                assert!(
                    b.file.ends_with("your-limiter-ci.md"),
                    "{}: only the page exec_ci_layout reads may have scratch blocks",
                    b.at()
                );
                continue;
            }
            if let Some(tool) = b
                .info
                .split([' ', ','])
                .find_map(|a| a.strip_prefix("needs="))
            {
                let found = Command::new("sh")
                    .arg("-c")
                    // docker needs its daemon too, not only the client.
                    .arg(if tool == "docker" {
                        "docker info >/dev/null 2>&1".to_string()
                    } else {
                        format!("command -v {tool}")
                    })
                    .output()
                    .is_ok_and(|o| o.status.success());
                if !found {
                    eprintln!("{}: skipped, no {tool} on the PATH", b.at());
                    continue;
                }
            }
            let out = run_sh(b);
            ran += 1;
            if let Some(o) = page
                .get(i + 1)
                .filter(|o| o.after == Some(i) && o.lang() == "text")
                && let Err(e) = output_matches(&o.text, &out)
            {
                panic!(
                        "{}: the output shown differs from what the block at {} prints: {e}\n--- printed:\n{out}",
                        o.at(),
                        b.at()
                    );
            }
        }
    }
    ran
}

/// The README's examples: the front door, run by every `cargo test`.
#[test]
fn readme_sh_blocks_run_and_print_what_is_shown() {
    assert!(check_sh_blocks(|b, readme| readme && !b.has("slow")) >= 5);
}

/// The guide's blocks: a minute of commands at the test profile's
/// opt-level 0, so opt-in like the long ones.
#[test]
#[ignore = "slow: the guide's commands, a minute unoptimised; .ci/run runs it"]
fn book_sh_blocks_run_and_print_what_is_shown() {
    assert!(check_sh_blocks(|b, readme| !readme && !b.has("slow")) >= 10);
}

#[test]
#[ignore = "slow: the guide's long commands (reproduce and the like); .ci/run runs it"]
fn slow_sh_blocks_run() {
    check_sh_blocks(|b, _| b.has("slow"));
}

/// Parses a block as JSON, or as the members of an object.
fn parse_json(b: &Block) -> serde_json::Value {
    serde_json::from_str(&b.text)
        .or_else(|_| serde_json::from_str(&format!("{{{}}}", b.text)))
        .unwrap_or_else(|e| panic!("{}: not JSON: {e}\n{}", b.at(), b.text))
}

#[test]
fn json_blocks_parse_and_scenarios_load() {
    let tmp = tempfile::tempdir().unwrap();
    let mut scenarios = 0;
    for page in all_blocks() {
        for b in page.iter().filter(|b| b.lang() == "json") {
            let v = parse_json(b);
            if !(v.get("name").is_some() && v.get("kind").is_some()) {
                continue;
            }
            // Relative paths in a scenario are from its folder: put it in
            // scenarios/ as a reader would (a copy in a scratch folder).
            let dir = tmp.path().join(format!("s{scenarios}/scenarios"));
            std::fs::create_dir_all(&dir).unwrap();
            std::os::unix::fs::symlink(common::root().join("scenarios/traces"), dir.join("traces"))
                .unwrap();
            std::os::unix::fs::symlink(common::root().join("examples"), dir.join("../examples"))
                .unwrap();
            let file = dir.join("doc.json");
            std::fs::write(&file, &b.text).unwrap();
            let o = common::ratelab(&[
                "run",
                file.to_str().unwrap(),
                "--out",
                tmp.path().join("out").to_str().unwrap(),
                "--max-work",
                "1",
                "--no-progress",
            ]);
            let err = common::stderr(&o);
            // A scenario naming a program (an `exec` entry) stops at the
            // trust check instead (`exec_ci_layout` runs the one the guide
            // shows).
            // A trace's size is not known before it is read, so a trace
            // scenario runs (the guide's ones are small) instead.
            assert!(
                (v.get("trace").is_some() && o.status.success())
                    || (o.status.code() == Some(2)
                        && (err.contains("over the budget")
                            || err.contains("run it only if you trust it"))),
                "{}: the scenario does not load: {err}",
                b.at()
            );
            scenarios += 1;
        }
    }
    assert!(scenarios >= 3, "{scenarios}");
}

/// GitHub's anchor of a heading: lowercase, punctuation dropped, spaces
/// to `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a page's headings (outside code blocks).
fn anchors(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let mut in_code = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            out.push(slug(line.trim_start_matches('#')));
        }
    }
    out
}

/// Every `[text](target)` / `![alt](target)` of a page outside code.
fn links(file: &Path) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(file).unwrap();
    let mut in_code = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        // Drop inline code spans, then find "](".
        let mut plain = String::new();
        for (k, part) in line.split('`').enumerate() {
            if k % 2 == 0 {
                plain.push_str(part);
            }
        }
        let mut rest = plain.as_str();
        while let Some(p) = rest.find("](") {
            let after = &rest[p + 2..];
            let end = after.find(')').unwrap_or(after.len());
            out.push((i + 1, after[..end].trim().to_string()));
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn relative_links_and_anchors_resolve() {
    let src = common::root().join("docs/book/src");
    let summary = src.join("SUMMARY.md");
    // Chapters listed in the table of contents before they are written:
    // mdBook creates them empty, so links to them are fine.
    let listed: Vec<PathBuf> = links(&summary)
        .into_iter()
        .map(|(_, t)| src.join(t))
        .collect();
    let mut bad = Vec::new();
    let mut checked = 0;
    for page in pages() {
        for (line, target) in links(&page) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(path)
            };
            checked += 1;
            if !file.exists() {
                if listed.iter().any(|l| l == &file) {
                    continue;
                }
                bad.push(format!("{}:{line}: {target}: no such file", page.display()));
                continue;
            }
            if let Some(a) = anchor
                && file.extension().is_some_and(|x| x == "md")
                && !anchors(&file).iter().any(|h| h == a)
            {
                bad.push(format!(
                    "{}:{line}: {target}: no such heading",
                    page.display()
                ));
            }
        }
    }
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
    assert!(checked > 20, "{checked}");
}

/// Images in the built book must be inside it (mdBook copies `src/`, not
/// the repository), so a chart of a report is copied to
/// `img/<scenario>/<file>`: the copy must be the committed report's bytes,
/// or the guide shows an old picture.
#[test]
fn book_images_are_in_the_book_and_current() {
    let root = common::root();
    let src = root.join("docs/book/src");
    let mut bad = Vec::new();
    for page in pages().iter().filter(|p| p.starts_with(&src)) {
        let text = std::fs::read_to_string(page).unwrap();
        for (line, target) in links(page) {
            let image = text
                .lines()
                .nth(line - 1)
                .is_some_and(|l| l.contains("![") && l.contains(&format!("]({target})")));
            if image && !target.contains("://") {
                let file = page.parent().unwrap().join(&target);
                let inside = file
                    .canonicalize()
                    .map(|f| f.starts_with(src.canonicalize().unwrap()))
                    .unwrap_or(false);
                if !inside {
                    bad.push(format!(
                        "{}:{line}: image {target} is outside docs/book/src (the built book will not have it)",
                        page.display()
                    ));
                }
            }
        }
    }
    let img = src.join("img");
    let mut copies = 0;
    for scenario in std::fs::read_dir(&img).into_iter().flatten().flatten() {
        for f in std::fs::read_dir(scenario.path()).unwrap().flatten() {
            let rel = f.path().strip_prefix(&img).unwrap().to_path_buf();
            let report = root.join("reports").join(&rel);
            copies += 1;
            if std::fs::read(&report).ok() != std::fs::read(f.path()).ok() {
                bad.push(format!(
                    "{} differs from {}: cp {} {}",
                    f.path().display(),
                    report.display(),
                    report.display(),
                    f.path().display()
                ));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    assert!(copies >= 2, "{copies}");
}

#[test]
fn every_page_is_in_the_table_of_contents() {
    let src = common::root().join("docs/book/src");
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap();
    for page in pages().iter().filter(|p| p.starts_with(&src)) {
        let rel = page.strip_prefix(&src).unwrap().display().to_string();
        if rel != "SUMMARY.md" {
            assert!(
                summary.contains(&format!("({rel})")),
                "{rel} is not in SUMMARY.md"
            );
        }
    }
}

#[test]
fn the_readme_is_a_front_door() {
    let readme = std::fs::read_to_string(common::root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines, the front door is at most 250"
    );
}

#[test]
fn the_output_matcher_fails_when_it_should() {
    let got = "a\nb 1\nc\nd\n";
    assert!(output_matches("b 1\nc", got).is_ok());
    assert!(output_matches("a\n...\nd", got).is_ok());
    assert!(output_matches("b ...\nc", got).is_ok());
    assert!(output_matches("b 2\nc", got).is_err());
    assert!(
        output_matches("a\nc", got).is_err(),
        "lines are consecutive"
    );
    assert!(output_matches("d\nc", got).is_err(), "and in order");
}

/// The text of the `## ` section of `page` whose heading contains `title`.
fn section<'a>(page: &'a str, title: &str) -> Option<&'a str> {
    let at = page.find(&format!("\n## {title}"))? + 1;
    let end = page[at + 3..]
        .find("\n## ")
        .map_or(page.len(), |e| at + 3 + e);
    Some(&page[at..end])
}

#[test]
fn the_scenario_reference_covers_every_kind_and_field() {
    let root = common::root();
    let reference = std::fs::read_to_string(root.join("docs/book/src/scenarios.md")).unwrap();
    let shared = section(&reference, "Fields of every scenario").unwrap();
    for k in ratelab::kinds::KINDS {
        assert!(
            section(&reference, &format!("`{}`", k.name)).is_some(),
            "scenarios.md has no section for the kind {}",
            k.name
        );
    }
    let mut seen = 0;
    for f in std::fs::read_dir(root.join("scenarios")).unwrap() {
        let p = f.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) != Some("json") {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let kind = v["kind"].as_str().unwrap();
        let own = section(&reference, &format!("`{kind}`")).unwrap();
        for field in v.as_object().unwrap().keys() {
            let quoted = format!("`{field}`");
            assert!(
                shared.contains(&quoted) || own.contains(&quoted),
                "{}: field {field} of kind {kind} is not in the scenario reference",
                p.display()
            );
        }
        for w in [&v["workload"]["type"], &v["workload"]["keys"]["type"]] {
            if let Some(t) = w.as_str() {
                assert!(
                    reference.contains(&format!("`{t}`")),
                    "{}: workload type {t} is not in the scenario reference",
                    p.display()
                );
            }
        }
        seen += 1;
    }
    assert!(seen >= 20, "{seen}");
}

#[test]
fn the_model_reference_covers_every_candidate_and_parameter() {
    let reference =
        std::fs::read_to_string(common::root().join("docs/book/src/models.md")).unwrap();
    let sections: Vec<&str> = reference.split("\n## ").collect();
    for row in ratelab::lab::decision::MODELS {
        let model = format!("`{}`", row.model);
        // The section titled with the model, else the first naming it.
        let own = sections
            .iter()
            .find(|s| s.lines().next().is_some_and(|h| h.contains(&model)))
            .or_else(|| sections.iter().find(|s| s.contains(&model)))
            .unwrap_or_else(|| panic!("models.md does not name the model {}", row.model));
        for p in row.params {
            assert!(
                own.contains(&format!("`{}`", p.name)),
                "models.md: the section of {} does not name its parameter {}",
                row.model,
                p.name
            );
        }
    }
}

/// The architecture chapter's "Adding ..." sections name the files to
/// touch: each named file exists (a `<name>` file's folder does), a
/// section names at most three files of code, and each table it adds a
/// row of (`MODELS`, `FORMATS`, `STRATEGIES`) is a `const` in one of its
/// files.
#[test]
fn the_architecture_chapter_names_the_files_to_touch() {
    let root = common::root();
    let text = std::fs::read_to_string(root.join("docs/book/src/architecture.md")).unwrap();
    let mut sections = 0;
    for sec in text.split("\n## ").filter(|s| s.starts_with("Adding ")) {
        sections += 1;
        let title = sec.lines().next().unwrap();
        let ticked: Vec<&str> = sec.split('`').skip(1).step_by(2).collect();
        let files: Vec<&str> = ticked
            .iter()
            .copied()
            .filter(|t| (t.starts_with("src/") || t.starts_with("docs/")) && t.contains('.'))
            .collect();
        assert!(!files.is_empty(), "{title}: names no file");
        let mut code = std::collections::BTreeSet::new();
        for f in &files {
            let p = root.join(f);
            if f.contains('<') {
                let dir = p.parent().unwrap();
                assert!(dir.is_dir(), "{title}: the folder of {f} does not exist");
            } else {
                assert!(p.is_file(), "{title}: {f} does not exist");
            }
            // Files of code a new thing touches (a longer builder may join
            // an existing helper file the section names as an option).
            if f.starts_with("src/") && !sec.contains(&format!("`{f}`, which")) {
                code.insert(*f);
            }
        }
        assert!(
            code.len() <= 3,
            "{title}: {} files of code: {code:?}",
            code.len()
        );
        let tables = sec
            .split("row of `")
            .skip(1)
            .map(|r| r.split('`').next().unwrap());
        for table in tables {
            let held = files.iter().filter(|f| !f.contains('<')).any(|f| {
                std::fs::read_to_string(root.join(f))
                    .unwrap()
                    .contains(&format!("const {table}:"))
            });
            assert!(held, "{title}: no file it names holds the table {table}");
        }
    }
    assert!(sections >= 3, "{sections} \"Adding ...\" sections");
}
