//! The guide's "Your limiter in CI" (`docs/book/src/your-limiter-ci.md`):
//! its example repository is built from the page's own text (the scenario, the three commands, the
//! output they print) with the Python token bucket as the team's limiter,
//! and the commands run as written.

use crate::common;

use std::process::Command;

/// The first fenced block with info string `lang` after `heading` in the page.
fn block(readme: &str, heading: &str, lang: &str) -> String {
    let at = readme
        .find(heading)
        .unwrap_or_else(|| panic!("the page has no {heading:?}"));
    let rest = &readme[at..];
    let open = format!("```{lang}\n");
    let start = rest
        .find(&open)
        .unwrap_or_else(|| panic!("no ```{lang} block"))
        + open.len();
    let len = rest[start..].find("```").unwrap();
    rest[start..start + len].to_string()
}

#[test]
#[ignore = "slow: a scratch repository's CI run; unoptimised, the test profile takes too long (.ci/run runs it)"]
fn the_guide_ci_example_runs_as_written() {
    let readme =
        std::fs::read_to_string(common::root().join("docs/book/src/your-limiter-ci.md")).unwrap();
    let heading = "# Your limiter in CI";
    let d = tempfile::tempdir().unwrap();
    let repo = d.path();
    std::fs::create_dir_all(repo.join("limiter")).unwrap();
    std::fs::create_dir_all(repo.join("scenarios")).unwrap();
    std::fs::copy(
        common::root().join("examples/limiters/token_bucket.py"),
        repo.join("limiter/ours.py"),
    )
    .unwrap();
    std::fs::write(
        repo.join("scenarios/ours-bursty.json"),
        block(&readme, heading, "json"),
    )
    .unwrap();
    let commands = block(&readme, heading, "sh scratch");
    let lines: Vec<&str> = commands.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 3, "{commands}");
    let mut first_out = String::new();
    for (i, line) in lines.iter().enumerate() {
        let cmd = line.split('#').next().unwrap().trim();
        let mut words: Vec<&str> = cmd.split_whitespace().collect();
        let mut c = Command::new(env!("CARGO_BIN_EXE_ratelab"));
        // Only what the line says: RATELAB_ALLOW_EXEC is off unless given.
        c.current_dir(repo).env("RATELAB_ALLOW_EXEC", "0");
        if let Some(kv) = words
            .first()
            .and_then(|w| w.strip_prefix("RATELAB_ALLOW_EXEC="))
        {
            c.env("RATELAB_ALLOW_EXEC", kv);
            words.remove(0);
        }
        assert_eq!(words[0], "ratelab", "{line}");
        let o = c.args(&words[1..]).output().unwrap();
        let out = common::stdout(&o);
        assert!(o.status.success(), "{line}: {out}{}", common::stderr(&o));
        if i == 0 {
            first_out = out;
        }
    }
    assert!(repo.join("reports/ours-bursty/report.json").exists());
    // The output the page quotes is what the first command printed.
    let quoted = block(&readme, "the first command prints", "");
    for l in quoted.lines().filter(|l| !l.trim().is_empty()) {
        assert!(
            first_out.contains(l),
            "page line {l:?} not in:\n{first_out}"
        );
    }
}
