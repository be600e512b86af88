//! The design-review page: `<out>/index.html` gathering every report folder
//! under `<out>` (any folder with a `report.json`, whatever its kind, and the
//! sizing results of `ratelab size`, folders with a `size.json`).
//!
//! The page is organised for a review: a findings summary first (one line
//! per scenario, its verdict and key number, linked to its section, see
//! [`jobs::finding`]), then the sections grouped by the job a reader comes
//! with ([`jobs::JOBS`]: choose a limiter, size a sketch, ...). The contents
//! stay in reach: a sticky side column on wide screens, a sticky bar with a
//! fold-out list on narrow ones (plain HTML and CSS, no script).
//!
//! Per scenario: its kind, description, a "what to look at" note (the
//! report's `look_at` field when present), its `table.md` rendered to HTML
//! (tables scroll inside their own box with the first column
//! fixed), and its charts (SVG shown full width, a tap shows it at its own
//! size; PNG linked; a chart with only a PNG shows the PNG). A chart's
//! caption is the `table.md` list item that names it (`` - `chart_name`:
//! text ``, which [`super::ReportBuilder`] writes from each chart's caption),
//! else the SVG's own `<desc>`.
//!
//! The page has no external assets: CSS is inline, no scripts, no fonts or
//! images from elsewhere. Images are referenced relatively
//! (`<name>/<chart>.svg`, so the page works inside the reports folder and is
//! small) or, with `embed`, inlined as `data:` URIs (one self-contained file
//! to attach to a review).

use crate::error::{Error, Result};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::report::jobs;
mod markdown;

pub use markdown::markdown_to_html;
use markdown::{body_markdown, chart_captions, inline};

/// One report folder.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Folder name (= scenario name).
    pub name: String,
    /// The folder.
    pub dir: PathBuf,
    /// Its report.json.
    pub json: Value,
    /// Its table.md, if any.
    pub table_md: String,
    /// Chart stems with the extensions present (svg, png).
    pub charts: Vec<(String, bool, bool)>,
    /// Other files (links).
    pub files: Vec<String>,
}

/// Reads every `<out>/*/report.json` folder, sorted by name, and the
/// sizing results of `ratelab size` (`<out>/size/size.json`) if present.
pub fn collect(out: &Path) -> Result<Vec<Entry>> {
    let rd = std::fs::read_dir(out).map_err(|e| Error::io(out, e))?;
    // A report.json there in any form (a folder, a pipe, a link to nowhere)
    // is read, and refused naming it if it cannot be: skipped, its report
    // would be missing from the page without a word.
    let present = |p: &Path| p.symlink_metadata().is_ok();
    let mut dirs: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_dir()
                && (present(&p.join("report.json")) || present(&p.join("size.json")))
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| crate::scenario::validate_name(n).is_ok())
        })
        .collect();
    dirs.sort();
    let mut entries = Vec::new();
    for dir in dirs {
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        let sizing = !present(&dir.join("report.json"));
        let json = if sizing {
            size_json(&dir.join("size.json"))?
        } else {
            let mut j = super::read::read_report(&dir.join("report.json"))?;
            // A `size` scenario's report holds size.json under `size`: a
            // rate-limit sizing is shown as one, like `ratelab size`'s.
            let limit = j.pointer("/size/schema").and_then(Value::as_str)
                == Some(crate::report::LIMIT_SIZE_SCHEMA);
            if j.get("kind").and_then(Value::as_str) == Some("size") && limit {
                j["kind"] = "size_limit".into();
            }
            j
        };
        let md_path = dir.join(if sizing { "size.md" } else { "table.md" });
        let table_md = if md_path.is_file() {
            String::from_utf8_lossy(&crate::report::pending::read_bounded(
                &md_path,
                crate::report::read::MAX_REPORT_BYTES,
                "a report table",
            )?)
            .into_owned()
        } else {
            String::new()
        };
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .map_err(|e| Error::io(&dir, e))?
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_file())
            .filter_map(|e| e.file_name().to_str().map(String::from))
            .filter(|n| !n.starts_with('.'))
            .collect();
        files.sort();
        let mut stems: Vec<String> = files
            .iter()
            .filter_map(|f| f.strip_suffix(".svg").or_else(|| f.strip_suffix(".png")))
            .map(String::from)
            .collect();
        stems.dedup();
        // Charts in the order table.md mentions them, then by name.
        let order = chart_captions(&table_md);
        stems.sort_by_key(|s| {
            (
                order.iter().position(|(n, _)| n == s).unwrap_or(usize::MAX),
                s.clone(),
            )
        });
        let charts = stems
            .into_iter()
            .map(|s| {
                let svg = files.contains(&format!("{s}.svg"));
                let png = files.contains(&format!("{s}.png"));
                (s, svg, png)
            })
            .collect();
        let files = files
            .into_iter()
            .filter(|f| !f.ends_with(".svg") && !f.ends_with(".png"))
            .collect();
        entries.push(Entry {
            name,
            dir,
            json,
            table_md,
            charts,
            files,
        });
    }
    Ok(entries)
}

/// A `ratelab size` result as an entry's JSON: kind `size`, a description
/// naming the targets and the pick.
fn size_json(path: &Path) -> Result<Value> {
    let v = crate::report::read::read_json(path, "a size report")?;
    let mut m = serde_json::Map::new();
    let limit = v.get("schema").and_then(Value::as_str) == Some(crate::report::LIMIT_SIZE_SCHEMA);
    m.insert(
        "kind".into(),
        if limit { "size_limit" } else { "size" }.into(),
    );
    let desc = v
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("Sizing results of `ratelab size`: the cheapest count-min shape meeting the accuracy targets on the workload.")
        .to_string();
    m.insert("description".into(), desc.into());
    m.insert("size".into(), v);
    Ok(Value::Object(m))
}

/// The `<desc>` of an SVG chart (its caption), unescaped.
fn svg_desc(path: &Path) -> Option<String> {
    let svg = crate::report::pending::read_bounded(
        path,
        crate::report::read::MAX_REPORT_BYTES,
        "a chart",
    )
    .ok()
    .and_then(|b| String::from_utf8(b).ok())?;
    let start = svg.find("<desc>")? + "<desc>".len();
    let end = start + svg[start..].find("</desc>")?;
    Some(
        svg[start..end]
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&amp;", "&"),
    )
}

/// Escapes text for HTML content and attributes.
pub fn esc(s: &str) -> String {
    crate::report::fmt::escape_markup(s, Some("&#39;"), false)
}

/// Standard base64 (for data URIs).
pub fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut o = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                o.push(char::from(A[((n >> (18 - 6 * k)) & 63) as usize]));
            } else {
                o.push('=');
            }
        }
    }
    o
}

/// The page's style sheet (inlined in `<style>`).
const CSS: &str = include_str!("page.css");

fn data_uri(dir: &Path, file: &str) -> Result<String> {
    let p = dir.join(file);
    let bytes =
        crate::report::pending::read_bounded(&p, crate::report::read::MAX_REPORT_BYTES, "a chart")?;
    let mime = if file.ends_with(".svg") {
        "image/svg+xml"
    } else {
        "image/png"
    };
    Ok(format!("data:{mime};base64,{}", base64(&bytes)))
}

/// A report's kind, as its JSON names it.
fn kind_of(e: &Entry) -> &str {
    e.json.get("kind").and_then(Value::as_str).unwrap_or("")
}

/// The entries of each job, in [`jobs::JOBS`] order, each job's entries in
/// folder order; jobs without entries are left out.
fn grouped(entries: &[Entry]) -> Vec<(&'static jobs::Job, Vec<&Entry>)> {
    jobs::JOBS
        .iter()
        .map(|j| {
            let mine: Vec<&Entry> = entries
                .iter()
                .filter(|e| jobs::job_of_report(kind_of(e), &e.json).id == j.id)
                .collect();
            (j, mine)
        })
        .filter(|(_, mine)| !mine.is_empty())
        .collect()
}

/// A link to a job's section (`id="g-…"`), its title the text.
fn job_link(job: &jobs::Job) -> String {
    format!("<a href=\"#g-{}\">{}</a>", job.id, esc(job.title))
}

/// A link to a scenario's section (`id="s-…"`), its name the text.
fn scenario_link(e: &Entry) -> String {
    format!("<a href=\"#s-{n}\">{n}</a>", n = esc(&e.name))
}

/// The contents, a `<nav>` of class `class`: the findings, then every job
/// and its scenarios.
fn toc(groups: &[(&'static jobs::Job, Vec<&Entry>)], class: &str, head: &str) -> String {
    let mut h = format!(
        "<nav class=\"{class}\" aria-label=\"Contents\">{head}\n<a class=\"top-link\" href=\"#findings\">Findings</a>\n<ol>\n"
    );
    for (job, mine) in groups {
        let _ = writeln!(h, "<li>{}\n<ol>", job_link(job));
        for e in mine {
            let _ = writeln!(h, "<li>{}</li>", scenario_link(e));
        }
        h.push_str("</ol></li>\n");
    }
    h.push_str("</ol>\n</nav>\n");
    h
}

/// A report's findings ([`super::findings`]), from its JSON (the kind as
/// the page reads it: a rate-limit sizing is `size_limit`).
fn found(e: &Entry) -> Vec<String> {
    let mut json = e.json.clone();
    if kind_of(e) == "size_limit" {
        let f = jobs::finding("size_limit", &e.json);
        let mut s = f.verdict.trim_end_matches('.').to_string();
        if !f.key.is_empty() {
            s = format!("{s}: {}", f.key);
        }
        return vec![format!("{s}.")];
    }
    if json.get("kind").is_none() {
        json["kind"] = kind_of(e).into();
    }
    super::findings::findings(&json)
}

/// A scenario's line in the summary: its first finding, and when that
/// carries no number, the first one that does.
fn summary_line(found: &[String]) -> String {
    let has_number = |s: &String| s.chars().any(|c| c.is_ascii_digit());
    let first = found.first().cloned().unwrap_or_default();
    match found.iter().find(|f| has_number(f)) {
        Some(n) if !has_number(&first) => format!("{first} {n}"),
        _ => first,
    }
}

/// The findings summary: per job, one line per scenario (its first
/// finding, a sentence with numbers), linked to its section.
fn findings(groups: &[(&'static jobs::Job, Vec<&Entry>)]) -> String {
    let mut h = String::from(
        "<section id=\"findings\">\n<h2>Findings</h2>\n<p class=\"sub\">One line per scenario: what it shows, with its numbers, written from its <code>report.json</code>. The name links to its section; each job's section opens with all its scenarios' findings.</p>\n",
    );
    for (job, mine) in groups {
        let _ = writeln!(h, "<h3>{}</h3>\n<ul class=\"findings\">", job_link(job));
        for e in mine {
            let f = found(e);
            let _ = writeln!(
                h,
                "<li>{}<span class=\"verdict\">{}</span></li>",
                scenario_link(e),
                inline(&summary_line(&f)),
            );
        }
        h.push_str("</ul>\n");
    }
    h.push_str("</section>\n");
    h
}

/// One scenario's section.
fn scenario_section(h: &mut String, e: &Entry, embed: bool) -> Result<()> {
    let kind = kind_of(e);
    let desc = e
        .json
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("");
    let look = e
        .json
        .get("look_at")
        .or_else(|| e.json.get("caption"))
        .and_then(Value::as_str);
    let _ = writeln!(
        h,
        "<section class=\"scenario\" id=\"s-{n}\">\n<h3>{n} <span class=\"kind\">{k}</span></h3>",
        n = esc(&e.name),
        k = esc(kind)
    );
    // Its findings open the job's section; here its charts, and the
    // prose and the full tables one tap away.
    let mut more = String::new();
    if !desc.is_empty() {
        let _ = writeln!(more, "<p>{}</p>", inline(desc));
    }
    if let Some(l) = look {
        let _ = writeln!(
            more,
            "<div class=\"look\"><strong>What to look at:</strong> {}</div>",
            inline(l)
        );
    }
    more.push_str(&markdown_to_html(&body_markdown(&e.table_md, desc), 2));
    let captions = chart_captions(&e.table_md);
    h.push_str("<div class=\"charts\">\n");
    for (stem, svg, png) in &e.charts {
        let shown = if *svg {
            format!("{stem}.svg")
        } else if *png {
            format!("{stem}.png")
        } else {
            continue;
        };
        let src = if embed {
            data_uri(&e.dir, &shown)?
        } else {
            format!("{}/{}", e.name, shown)
        };
        // table.md's list first, else the chart's own <desc>.
        let caption = captions
            .iter()
            .find(|(n, _)| n == stem)
            .map(|(_, c)| c.clone())
            .or_else(|| {
                svg.then(|| svg_desc(&e.dir.join(format!("{stem}.svg"))))
                    .flatten()
            })
            .unwrap_or_default();
        let caption = caption.as_str();
        let links: Vec<String> = [(svg, "svg"), (png, "png")]
            .iter()
            .filter(|(has, _)| **has)
            .map(|(_, ext)| {
                format!(
                    "<a href=\"{}/{}.{ext}\">{}</a>",
                    esc(&e.name),
                    esc(stem),
                    ext.to_uppercase()
                )
            })
            .collect();
        // The checkbox is the zoom: checked, the image takes its own width
        // and the box scrolls (CSS only).
        let _ = writeln!(
            h,
            "<figure id=\"f-{n}-{s}\"><div class=\"zoom\"><input type=\"checkbox\" id=\"z-{n}-{s}\"><label for=\"z-{n}-{s}\" title=\"Tap to see the chart at its own size\"><img src=\"{src}\" alt=\"{n}: {s}\" loading=\"eager\"></label></div>\n<figcaption><code>{s}</code>{sep}{cap} <span class=\"files\">({links})</span></figcaption></figure>",
            n = esc(&e.name),
            s = esc(stem),
            src = esc(&src),
            sep = if caption.is_empty() { "" } else { ": " },
            cap = inline(caption),
            links = links.join(" · ")
        );
    }
    h.push_str("</div>\n");
    let _ = writeln!(
        h,
        "<details class=\"more\"><summary>Description, what to look at, and the full tables</summary>\n{more}</details>"
    );
    if !e.files.is_empty() {
        let links: Vec<String> = e
            .files
            .iter()
            .map(|f| format!("<a href=\"{n}/{f}\">{f}</a>", n = esc(&e.name), f = esc(f)))
            .collect();
        let _ = writeln!(h, "<p class=\"files\">Files: {}</p>", links.join(" · "));
    }
    h.push_str("</section>\n");
    Ok(())
}

/// The whole page. `embed`: images as data URIs instead of relative paths.
pub fn render(entries: &[Entry], embed: bool) -> Result<String> {
    let groups = grouped(entries);
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>ratelab design review</title>\n<style>");
    h.push_str(CSS);
    h.push_str("</style>\n</head>\n<body>\n");
    // Narrow screens: a sticky bar whose list folds out.
    let _ = writeln!(
        h,
        "<header class=\"bar\"><details><summary>Contents</summary>\n{}</details><a href=\"#findings\">Findings</a></header>",
        toc(&groups, "toc", "")
    );
    h.push_str("<div class=\"layout\">\n");
    let _ = writeln!(
        h,
        "<div class=\"side-col\">{}</div>",
        toc(
            &groups,
            "toc side",
            "<div class=\"brand\">ratelab design review</div>"
        )
    );
    h.push_str("<main>\n<h1>ratelab design review</h1>\n");
    let _ = writeln!(
        h,
        "<p class=\"sub\">{} report{}, read from their <code>report.json</code>, <code>table.md</code> and charts, grouped by the job they answer. Every number is reproducible: same scenario + seed, same bytes.</p>",
        entries.len(),
        if entries.len() == 1 { "" } else { "s" }
    );
    h.push_str(&findings(&groups));
    for (job, mine) in &groups {
        let _ = writeln!(
            h,
            "<section class=\"job\" id=\"g-{}\">\n<h2>{}</h2>\n<p class=\"sub\">{}</p>",
            job.id,
            esc(job.title),
            inline(job.question)
        );
        // The job opens with its findings: every finding of each scenario.
        h.push_str("<ul class=\"findings\">\n");
        for e in mine {
            let all: String = found(e)
                .iter()
                .map(|f| format!("<li>{}</li>", inline(f)))
                .collect();
            let _ = writeln!(
                h,
                "<li>{}<ul class=\"all\">{all}</ul></li>",
                scenario_link(e)
            );
        }
        h.push_str("</ul>\n");
        for e in mine {
            scenario_section(&mut h, e, embed)?;
        }
        h.push_str("</section>\n");
    }
    let _ = writeln!(
        h,
        "<footer>Generated by <code>ratelab report</code> {}. No external assets; images are {}.</footer>\n</main>\n</div>\n</body>\n</html>",
        env!("CARGO_PKG_VERSION"),
        if embed {
            "embedded as data URIs"
        } else {
            "referenced relative to this page"
        }
    );
    Ok(h)
}

/// Writes `<out>/index.html` atomically; returns its path.
pub fn write_index(out: &Path, embed: bool) -> Result<PathBuf> {
    let entries = collect(out)?;
    if entries.is_empty() {
        return Err(Error::input(format!(
            "{}: no report folders (sub-folders with a report.json); run `ratelab reproduce --out {}` first",
            out.display(),
            out.display()
        )));
    }
    let html = render(&entries, embed)?;
    let path = out.join("index.html");
    super::atomic::write_file(&path, html.as_bytes())?;
    // The temporary file was private; the page is meant to be read (served).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))
            .map_err(|e| Error::io(&path, e))?;
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_standard() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }
}
