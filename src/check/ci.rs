//! CI-native renderings of a check: JUnit XML (one test case per scenario's
//! baseline and per `expect` entry), a Markdown summary, and GitHub Actions
//! annotations.

use super::findings::{Finding, Verdict};
use super::run::ScenarioResult;
use std::fmt::Write as _;

fn xml_escape(s: &str) -> String {
    crate::report::fmt::escape_markup(s, Some("&apos;"), true)
}

fn line(f: &Finding) -> String {
    let base = if f.baseline.is_empty() {
        "-"
    } else {
        f.baseline.as_str()
    };
    format!(
        "{}: {} -> {} [{}] {}",
        f.path, base, f.now, f.rule, f.verdict
    )
}

/// A test case: its name and its failing values (none: passed).
type Case<'a> = (String, Vec<&'a Finding>);

/// One test case: name, failures (empty: passed).
fn cases(r: &ScenarioResult, strict: bool) -> Vec<Case<'_>> {
    let mut out = Vec::new();
    if r.has_baseline {
        out.push(("baseline".to_string(), r.diff_failures(strict)));
    }
    for (text, f) in &r.expectations {
        out.push((
            format!("expect {text}"),
            f.iter().filter(|x| x.verdict.failed()).collect(),
        ));
    }
    out
}

/// The JUnit XML report: testsuites > testsuite (one per scenario) >
/// testcase (its baseline, each `expect` entry) > failure.
pub fn junit(results: &[ScenarioResult], strict: bool) -> String {
    let all: Vec<(&ScenarioResult, Vec<Case<'_>>)> =
        results.iter().map(|r| (r, cases(r, strict))).collect();
    let tests: usize = all.iter().map(|(_, c)| c.len()).sum();
    let failures: usize = all
        .iter()
        .map(|(_, c)| c.iter().filter(|(_, f)| !f.is_empty()).count())
        .sum();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuites name=\"ratelab check\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\">"
    );
    let stamp = timestamp();
    for (id, (r, cs)) in all.iter().enumerate() {
        let f = cs.iter().filter(|(_, f)| !f.is_empty()).count();
        let _ = writeln!(
            x,
            "  <testsuite name=\"{}\" package=\"ratelab\" id=\"{id}\" tests=\"{}\" failures=\"{f}\" errors=\"0\" skipped=\"0\" time=\"0\" timestamp=\"{stamp}\" hostname=\"localhost\">\n    <properties/>",
            xml_escape(&r.name),
            cs.len()
        );
        for (name, fails) in cs {
            let open = format!(
                "    <testcase name=\"{}\" classname=\"ratelab.{}\" time=\"0\"",
                xml_escape(name),
                xml_escape(&r.name)
            );
            if fails.is_empty() {
                let _ = writeln!(x, "{open}/>");
                continue;
            }
            let kind = if fails.iter().any(|f| f.verdict == Verdict::Fail) {
                "expectation"
            } else {
                "regression"
            };
            let body: Vec<String> = fails.iter().map(|f| line(f)).collect();
            let _ = writeln!(
                x,
                "{open}>\n      <failure message=\"{}\" type=\"{kind}\">{}</failure>\n    </testcase>",
                xml_escape(&format!("{} value(s) failed: {}", fails.len(), line(fails[0]))),
                xml_escape(&body.join("\n"))
            );
        }
        x.push_str("    <system-out/>\n    <system-err/>\n  </testsuite>\n");
    }
    x.push_str("</testsuites>\n");
    x
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The Markdown summary: one table line per scenario, then what failed,
/// regressed or improved.
pub fn markdown(results: &[ScenarioResult], strict: bool) -> String {
    let failed = results.iter().filter(|r| r.failed(strict)).count();
    let mut m = format!(
        "## ratelab check: {}\n\n",
        if failed == 0 {
            format!("passed ({} scenarios)", results.len())
        } else {
            format!("FAILED ({failed} of {} scenarios)", results.len())
        }
    );
    m.push_str("| scenario | result | expectations failed | regressed | improved | changed | within noise |\n");
    m.push_str("| --- | --- | --- | --- | --- | --- | --- |\n");
    for r in results {
        let c = |v| r.count(v);
        let _ = writeln!(
            m,
            "| {} | {} | {} | {} | {} | {} | {} |",
            md_cell(&r.name),
            if r.failed(strict) {
                "❌ failed"
            } else {
                "✅ ok"
            },
            r.expect_failures().len(),
            c(Verdict::Regressed) + c(Verdict::Missing) + c(Verdict::New),
            c(Verdict::Improved),
            c(Verdict::Changed),
            c(Verdict::WithinNoise) + c(Verdict::Within),
        );
    }
    let mut detail = String::new();
    for r in results {
        let mut rows: Vec<&Finding> = r.expect_failures();
        rows.extend(r.diff.iter().filter(|f| {
            matches!(
                f.verdict,
                Verdict::Regressed | Verdict::Missing | Verdict::New | Verdict::Improved
            )
        }));
        for f in rows {
            let _ = writeln!(
                detail,
                "| {} | {} | `{}` | {} | {} | {} |",
                md_cell(&r.name),
                f.verdict,
                md_cell(&f.path),
                md_cell(&f.baseline),
                md_cell(&f.now),
                md_cell(&f.rule)
            );
        }
    }
    if !detail.is_empty() {
        m.push_str("\n| scenario | verdict | field | baseline | now | rule |\n| --- | --- | --- | --- | --- | --- |\n");
        m.push_str(&detail);
    }
    m
}

fn gh_escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn gh_escape_prop(s: &str) -> String {
    gh_escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// GitHub Actions workflow commands: an error per failed expectation and
/// regressed value, a warning per improved value, on the scenario file.
pub fn annotations(results: &[ScenarioResult], strict: bool) -> String {
    let mut out = String::new();
    for r in results {
        let file = gh_escape_prop(&r.file.display().to_string());
        let mut emit = |level: &str, f: &Finding| {
            let _ = writeln!(
                out,
                "::{level} file={file},title={}::{}",
                gh_escape_prop(&format!("ratelab check {}: {}", r.name, f.verdict)),
                gh_escape_data(&line(f))
            );
        };
        for f in r.expect_failures() {
            emit("error", f);
        }
        for f in r.diff_failures(strict) {
            emit("error", f);
        }
        if !strict {
            for f in r.diff.iter().filter(|f| f.verdict == Verdict::Improved) {
                emit("warning", f);
            }
        }
    }
    out
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SS` (JUnit's timestamp).
fn timestamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}
