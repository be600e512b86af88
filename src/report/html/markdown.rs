//! The markdown subset ratelab writes (`table.md`, `size.md`): headings,
//! paragraphs, pipe tables, lists and code fences, rendered to HTML for the
//! review page. Tables are wrapped in a box that scrolls by itself, with the
//! first column (the candidate, the shape, the row's name) kept in view by
//! the page's CSS.

use super::esc;
use std::fmt::Write as _;

/// Tables with more rows than this get a box of bounded height (their
/// header row stays in view while the rows scroll).
const TALL_ROWS: usize = 15;

/// Inline markdown: `code`, **bold**; everything else escaped.
pub(super) fn inline(s: &str) -> String {
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
        } else if let Some(b) = at.strip_prefix("**")
            && let Some(end) = b.find("**")
        {
            let _ = write!(out, "<strong>{}</strong>", esc(&b[..end]));
            rest = &b[end + 2..];
            continue;
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
///
/// # Examples
///
/// ```
/// use ratelab::report::html::markdown_to_html;
/// let h = markdown_to_html("# Title\n\n| a | b |\n|---|---|\n| 1 | x |\n", 1);
/// assert!(h.starts_with("<h2>Title</h2>"));
/// assert!(h.contains("<div class=\"table-wrap\"><table>"));
/// assert!(h.contains("<td class=\"num\">1</td><td>x</td>"));
/// ```
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
            let header = split_row(t);
            i += 2;
            let mut body = String::new();
            let mut rows = 0;
            let extra = extra_columns(&header);
            let class_of = |j: usize, num: bool| {
                let mut c: Vec<&str> = Vec::new();
                if num {
                    c.push("num");
                }
                if extra.contains(&j) {
                    c.push("x");
                }
                if c.is_empty() {
                    String::new()
                } else {
                    format!(" class=\"{}\"", c.join(" "))
                }
            };
            while i < lines.len() && lines[i].trim().starts_with('|') {
                body.push_str("<tr>");
                for (j, c) in split_row(lines[i]).into_iter().enumerate() {
                    let class = class_of(j, numeric(&c));
                    let _ = write!(body, "<td{class}>{}</td>", inline(&c));
                }
                body.push_str("</tr>\n");
                rows += 1;
                i += 1;
            }
            let class = if rows > TALL_ROWS {
                "table-wrap tall"
            } else {
                "table-wrap"
            };
            // A wide table shows its essential columns; a toggle shows all.
            if !extra.is_empty() {
                let _ = writeln!(
                    out,
                    "<div class=\"wide\"><label class=\"all-cols\"><input type=\"checkbox\"> show all {} columns ({} more)</label>",
                    header.len(),
                    extra.len()
                );
            }
            let _ = write!(out, "<div class=\"{class}\"><table>\n<thead><tr>");
            for (j, c) in header.iter().enumerate() {
                let _ = write!(out, "<th{}>{}</th>", class_of(j, false), inline(c));
            }
            out.push_str("</tr></thead>\n<tbody>\n");
            out.push_str(&body);
            out.push_str("</tbody></table></div>\n");
            if !extra.is_empty() {
                out.push_str("</div>\n");
            }
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

/// Columns beyond which a table is wide (more are hidden behind a toggle).
const WIDE_COLUMNS: usize = 7;

/// The columns of a wide table shown only on request: all but the first
/// and the essential ones (those naming a harm, an error or a cost, the
/// first five of them; else the first six columns).
fn extra_columns(header: &[String]) -> Vec<usize> {
    if header.len() <= WIDE_COLUMNS {
        return Vec::new();
    }
    const ESSENTIAL: &[&str] = &[
        "denied %",
        "excess %",
        "worst window",
        "memory",
        "store op",
        "latency",
        "exact",
        "mean",
    ];
    let mut keep: Vec<usize> = (1..header.len())
        .filter(|&j| {
            let h = header[j].to_lowercase();
            ESSENTIAL.iter().any(|e| h.contains(e))
        })
        .take(5)
        .collect();
    if keep.len() < 3 {
        keep = (1..6).collect();
    }
    (1..header.len()).filter(|j| !keep.contains(j)).collect()
}

/// `- `name`: caption` items of table.md.
pub(super) fn chart_captions(md: &str) -> Vec<(String, String)> {
    md.lines()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix("- `")?;
            let (name, after) = rest.split_once('`')?;
            let caption = after.trim_start().strip_prefix(':')?.trim();
            Some((name.to_string(), caption.to_string()))
        })
        .collect()
}

/// table.md without its title, the description paragraph and the charts
/// list (the page shows those elsewhere).
pub(super) fn body_markdown(md: &str, description: &str) -> String {
    let mut out = Vec::new();
    let mut in_charts = false;
    let mut dropped_title = false;
    // The findings list (shown above the charts already).
    let mut in_findings = false;
    for line in md.lines() {
        let t = line.trim();
        if t == "**Findings.**" {
            in_findings = true;
            continue;
        }
        if in_findings {
            if t.is_empty() || t.starts_with("- ") {
                continue;
            }
            in_findings = false;
        }
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn long_tables_get_a_bounded_box() {
        let mut md = String::from("| a |\n|---|\n");
        for i in 0..TALL_ROWS {
            md.push_str(&format!("| {i} |\n"));
        }
        assert!(markdown_to_html(&md, 0).contains("<div class=\"table-wrap\">"));
        md.push_str("| one more |\n");
        assert!(markdown_to_html(&md, 0).contains("<div class=\"table-wrap tall\">"));
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
