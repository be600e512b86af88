//! The design-review page: `<out>/index.html` gathering every report folder
//! under `<out>` (any folder with a `report.json`, whatever its kind).
//!
//! Per scenario: its kind, description, a "what to look at" note (the
//! report's `look_at` field when present), its `table.md` rendered to HTML,
//! and its charts (SVG shown, PNG linked; a chart with only a PNG shows the
//! PNG). A chart's caption is the `table.md` list item that names it
//! (`` - `chart_name`: text ``, which [`super::ReportBuilder`] writes from
//! each chart's caption), else the SVG's own `<desc>`. The sizing results of
//! `ratelab size` (`<out>/size/`: size.json, size.md, the frontier chart)
//! get a section of their own.
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
    let mut dirs: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            (p.join("report.json").is_file() || p.join("size.json").is_file())
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
        let sizing = !dir.join("report.json").is_file();
        let json = if sizing {
            size_json(&dir.join("size.json"))?
        } else {
            super::read::read_report(&dir.join("report.json"))?
        };
        let md_path = dir.join(if sizing { "size.md" } else { "table.md" });
        let table_md = if md_path.is_file() {
            std::fs::read_to_string(&md_path).map_err(|e| Error::io(&md_path, e))?
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
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| {
        Error::input_at(
            path,
            format!("line {} column {}", e.line(), e.column()),
            "malformed JSON",
        )
    })?;
    let mut m = serde_json::Map::new();
    m.insert("kind".into(), "size".into());
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
    let svg = std::fs::read_to_string(path).ok()?;
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

/// `- `name`: caption` items of table.md.
fn chart_captions(md: &str) -> Vec<(String, String)> {
    md.lines()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix("- `")?;
            let (name, after) = rest.split_once('`')?;
            let caption = after.trim_start().strip_prefix(':')?.trim();
            Some((name.to_string(), caption.to_string()))
        })
        .collect()
}

/// Escapes text for HTML content and attributes.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// Inline markdown: `code`, **bold**; everything else escaped.
fn inline(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find(['`', '*']) {
        let (before, at) = rest.split_at(i);
        out.push_str(&esc(before));
        if let Some(code) = at.strip_prefix('`') {
            if let Some(end) = code.find('`') {
                let _ = write!(out, "<code>{}</code>", esc(&code[..end]));
                rest = &code[end + 1..];
                continue;
            }
        } else if let Some(b) = at.strip_prefix("**") {
            if let Some(end) = b.find("**") {
                let _ = write!(out, "<strong>{}</strong>", esc(&b[..end]));
                rest = &b[end + 2..];
                continue;
            }
        }
        out.push_str(&esc(&at[..1]));
        rest = &at[1..];
    }
    out.push_str(&esc(rest));
    out
}

fn split_row(line: &str) -> Vec<String> {
    let t = line.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = t.strip_suffix('|').unwrap_or(t);
    t.split('|').map(|c| c.trim().to_string()).collect()
}

fn is_separator(line: &str) -> bool {
    let cells = split_row(line);
    !cells.is_empty()
        && cells
            .iter()
            .all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':' | ' ')))
}

/// A cell that reads as a number (right-aligned).
fn numeric(c: &str) -> bool {
    let t = c.trim_end_matches(['%', 'x']);
    let t = ["KiB", "MiB", "GiB", "ms", "ns", "us", "s"]
        .iter()
        .find_map(|u| t.strip_suffix(u))
        .unwrap_or(t);
    !t.is_empty() && t.replace(['_', ','], "").parse::<f64>().is_ok()
}

/// Renders the markdown subset ratelab writes (headings, paragraphs, pipe
/// tables, lists, code fences) to HTML; headings shift down by `shift` levels.
pub fn markdown_to_html(md: &str, shift: usize) -> String {
    let mut out = String::new();
    let lines: Vec<&str> = md.lines().collect();
    let mut i = 0;
    let mut para: Vec<&str> = Vec::new();
    let flush_para = |para: &mut Vec<&str>, out: &mut String| {
        if !para.is_empty() {
            let _ = writeln!(out, "<p>{}</p>", inline(&para.join(" ")));
            para.clear();
        }
    };
    while i < lines.len() {
        let line = lines[i];
        let t = line.trim();
        if t.is_empty() {
            flush_para(&mut para, &mut out);
            i += 1;
        } else if t.starts_with("```") {
            flush_para(&mut para, &mut out);
            let mut code = Vec::new();
            i += 1;
            while i < lines.len() && !lines[i].trim().starts_with("```") {
                code.push(lines[i]);
                i += 1;
            }
            i += 1;
            let _ = writeln!(out, "<pre>{}</pre>", esc(&code.join("\n")));
        } else if t.starts_with('#') {
            flush_para(&mut para, &mut out);
            let level = t.chars().take_while(|c| *c == '#').count();
            let text = t[level..].trim();
            let h = (level + shift).min(6);
            let _ = writeln!(out, "<h{h}>{}</h{h}>", inline(text));
            i += 1;
        } else if t.starts_with('|') && lines.get(i + 1).is_some_and(|l| is_separator(l)) {
            flush_para(&mut para, &mut out);
            out.push_str("<div class=\"table-wrap\"><table>\n<thead><tr>");
            for c in split_row(t) {
                let _ = write!(out, "<th>{}</th>", inline(&c));
            }
            out.push_str("</tr></thead>\n<tbody>\n");
            i += 2;
            while i < lines.len() && lines[i].trim().starts_with('|') {
                out.push_str("<tr>");
                for c in split_row(lines[i]) {
                    let class = if numeric(&c) { " class=\"num\"" } else { "" };
                    let _ = write!(out, "<td{class}>{}</td>", inline(&c));
                }
                out.push_str("</tr>\n");
                i += 1;
            }
            out.push_str("</tbody></table></div>\n");
        } else if t.starts_with("- ") || t.starts_with("* ") {
            flush_para(&mut para, &mut out);
            out.push_str("<ul>\n");
            while i < lines.len() {
                let l = lines[i].trim();
                if let Some(item) = l.strip_prefix("- ").or_else(|| l.strip_prefix("* ")) {
                    let _ = writeln!(out, "<li>{}</li>", inline(item));
                } else {
                    break;
                }
                i += 1;
            }
            out.push_str("</ul>\n");
        } else {
            para.push(t);
            i += 1;
        }
    }
    flush_para(&mut para, &mut out);
    out
}

/// table.md without its title, the description paragraph and the charts
/// list (the page shows those elsewhere).
fn body_markdown(md: &str, description: &str) -> String {
    let mut out = Vec::new();
    let mut in_charts = false;
    let mut dropped_title = false;
    for line in md.lines() {
        let t = line.trim();
        if !dropped_title && t.starts_with("# ") {
            dropped_title = true;
            continue;
        }
        if t.starts_with('#') {
            in_charts = t
                .trim_start_matches('#')
                .trim()
                .eq_ignore_ascii_case("charts");
            if in_charts {
                continue;
            }
        }
        if in_charts {
            continue;
        }
        if !description.is_empty() && t == description.trim() {
            continue;
        }
        out.push(line);
    }
    out.join("\n")
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

const CSS: &str = r#"
:root { --fg:#1d232b; --muted:#5b6470; --line:#d9dee5; --bg:#ffffff; --soft:#f4f6f9; --accent:#0072b2; }
* { box-sizing: border-box; }
body { margin:0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color:var(--fg); background:var(--bg); }
main { max-width: 1100px; margin: 0 auto; padding: 24px 32px 64px; }
h1 { font-size: 28px; margin: 8px 0 4px; }
h2 { font-size: 22px; margin: 0 0 4px; padding-top: 8px; }
h3 { font-size: 17px; margin: 20px 0 6px; }
h4, h5, h6 { font-size: 15px; margin: 16px 0 4px; }
.sub { color: var(--muted); margin: 0 0 16px; }
nav.toc { background: var(--soft); border:1px solid var(--line); border-radius:6px; padding: 12px 20px; margin: 16px 0 32px; }
nav.toc ol { margin: 4px 0; padding-left: 22px; }
nav.toc li { margin: 2px 0; }
a { color: var(--accent); }
.kind { display:inline-block; font-size:12px; font-family: ui-monospace, "DejaVu Sans Mono", monospace; background: var(--soft); border:1px solid var(--line); border-radius: 4px; padding: 0 6px; color: var(--muted); vertical-align: middle; }
section.scenario { border-top: 2px solid var(--line); padding-top: 20px; margin-top: 36px; }
.look { border-left: 4px solid var(--accent); background: #eef6fb; padding: 8px 14px; margin: 12px 0; }
.look strong { color: var(--accent); }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 14px; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 10px; text-align: left; white-space: nowrap; }
th { background: var(--soft); font-weight: 600; }
tbody tr:nth-child(even) { background: #fafbfc; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
code, pre { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 13px; }
pre { background: var(--soft); padding: 10px; overflow-x: auto; }
figure { margin: 16px 0 28px; border: 1px solid var(--line); border-radius: 6px; padding: 12px; }
figure img { display: block; max-width: 100%; height: auto; margin: 0 auto; }
figcaption { color: var(--muted); margin-top: 8px; font-size: 14px; }
.files { color: var(--muted); font-size: 13px; }
footer { color: var(--muted); font-size: 13px; margin-top: 48px; }
"#;

fn data_uri(dir: &Path, file: &str) -> Result<String> {
    let p = dir.join(file);
    let bytes = std::fs::read(&p).map_err(|e| Error::io(&p, e))?;
    let mime = if file.ends_with(".svg") {
        "image/svg+xml"
    } else {
        "image/png"
    };
    Ok(format!("data:{mime};base64,{}", base64(&bytes)))
}

/// The whole page. `embed`: images as data URIs instead of relative paths.
pub fn render(entries: &[Entry], embed: bool) -> Result<String> {
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>ratelab design review</title>\n<style>");
    h.push_str(CSS);
    h.push_str("</style>\n</head>\n<body>\n<main>\n<h1>ratelab design review</h1>\n");
    let _ = writeln!(
        h,
        "<p class=\"sub\">{} scenario report(s), read from their <code>report.json</code>, <code>table.md</code> and charts. Every number is reproducible: same scenario + seed, same bytes.</p>",
        entries.len()
    );
    h.push_str("<nav class=\"toc\"><strong>Contents</strong>\n<ol>\n");
    for e in entries {
        let kind = e.json.get("kind").and_then(Value::as_str).unwrap_or("");
        let _ = writeln!(
            h,
            "<li><a href=\"#s-{n}\">{n}</a> <span class=\"kind\">{k}</span></li>",
            n = esc(&e.name),
            k = esc(kind)
        );
    }
    h.push_str("</ol></nav>\n");
    for e in entries {
        let kind = e.json.get("kind").and_then(Value::as_str).unwrap_or("");
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
            "<section class=\"scenario\" id=\"s-{n}\">\n<h2>{n} <span class=\"kind\">{k}</span></h2>",
            n = esc(&e.name),
            k = esc(kind)
        );
        if !desc.is_empty() {
            let _ = writeln!(h, "<p>{}</p>", inline(desc));
        }
        if let Some(l) = look {
            let _ = writeln!(
                h,
                "<div class=\"look\"><strong>What to look at:</strong> {}</div>",
                inline(l)
            );
        }
        h.push_str(&markdown_to_html(&body_markdown(&e.table_md, desc), 1));
        let captions = chart_captions(&e.table_md);
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
            let _ = writeln!(
                h,
                "<figure id=\"f-{n}-{s}\"><img src=\"{src}\" alt=\"{n}: {s}\" loading=\"eager\">\n<figcaption><code>{s}</code>{sep}{cap} <span class=\"files\">({links})</span></figcaption></figure>",
                n = esc(&e.name),
                s = esc(stem),
                src = esc(&src),
                sep = if caption.is_empty() { "" } else { ": " },
                cap = inline(caption),
                links = links.join(" · ")
            );
        }
        if !e.files.is_empty() {
            let links: Vec<String> = e
                .files
                .iter()
                .map(|f| format!("<a href=\"{n}/{f}\">{f}</a>", n = esc(&e.name), f = esc(f)))
                .collect();
            let _ = writeln!(h, "<p class=\"files\">Files: {}</p>", links.join(" · "));
        }
        h.push_str("</section>\n");
    }
    let _ = writeln!(
        h,
        "<footer>Generated by <code>ratelab report</code> {}. No external assets; images are {}.</footer>\n</main>\n</body>\n</html>",
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

    #[test]
    fn markdown_tables_lists_and_escaping() {
        let md =
            "# t\n\nA <b> & `x<y`\nmore\n\n| a | b |\n|---|---|\n| 1.5% | x |\n\n- `c`: caption\n";
        let h = markdown_to_html(md, 1);
        assert!(h.contains("<h2>t</h2>"), "{h}");
        assert!(
            h.contains("<p>A &lt;b&gt; &amp; <code>x&lt;y</code> more</p>"),
            "{h}"
        );
        assert!(h.contains("<th>a</th><th>b</th>"), "{h}");
        assert!(h.contains("<td class=\"num\">1.5%</td><td>x</td>"), "{h}");
        assert!(h.contains("<li><code>c</code>: caption</li>"), "{h}");
        assert_eq!(
            chart_captions(md),
            [("c".to_string(), "caption".to_string())]
        );
    }

    #[test]
    fn body_drops_title_description_and_chart_list() {
        let md =
            "# name\n\nDesc.\n\n| a |\n|---|\n| 1 |\n\n## Charts\n\n- `c`: x\n\n## After\n\ntext\n";
        let b = body_markdown(md, "Desc.");
        assert!(!b.contains("# name") && !b.contains("Desc.") && !b.contains("`c`"));
        assert!(b.contains("| 1 |") && b.contains("## After") && b.contains("text"));
    }
}
