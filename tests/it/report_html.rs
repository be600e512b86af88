//! `ratelab report`: the design-review page. Static checks always; a render
//! in headless Chromium proves every image loads. Without Chromium the render
//! is skipped (printed), except under CI=true, where it must be there.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Copies the committed report folders (report files only, and the sizing
/// results) into `dst`.
fn copy_reports(dst: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(root().join("reports")).unwrap() {
        let dir = e.unwrap().path();
        if !dir.join("report.json").is_file() && !dir.join("size.json").is_file() {
            continue;
        }
        let to = dst.join(dir.file_name().unwrap());
        std::fs::create_dir_all(&to).unwrap();
        for f in std::fs::read_dir(&dir).unwrap() {
            let f = f.unwrap().path();
            if f.is_file() {
                std::fs::copy(&f, to.join(f.file_name().unwrap())).unwrap();
            }
        }
        n += 1;
    }
    n
}

/// The report folders under `dir`, sorted.
fn folder_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .filter_map(|p| p.file_name().and_then(|n| n.to_str()).map(String::from))
        .collect();
    names.sort();
    names
}

/// `html` from the first `start` to the next `end` after it.
fn between<'a>(html: &'a str, start: &str, end: &str) -> &'a str {
    let a = html.find(start).unwrap_or_else(|| panic!("no {start}"));
    let b = html[a..].find(end).map_or(html.len(), |b| a + b);
    &html[a..b]
}

/// The ids of every `<section>` of the page.
fn section_ids(html: &str) -> Vec<String> {
    html.split("<section")
        .skip(1)
        .filter_map(|s| {
            let tag = &s[..s.find('>')?];
            let id = tag.split("id=\"").nth(1)?;
            Some(id[..id.find('"')?].to_string())
        })
        .collect()
}

/// The declarations of the first CSS rule whose selector list names `sel`.
fn css_rule(html: &str, sel: &str) -> String {
    let mut css = between(html, "<style>", "</style>").to_string();
    while let Some(a) = css.find("/*") {
        let b = css[a..].find("*/").map_or(css.len(), |b| a + b + 2);
        css.replace_range(a..b, "");
    }
    for rule in css.split('}') {
        if let Some((selectors, body)) = rule.split_once('{')
            && selectors.split(',').any(|s| s.trim() == sel)
        {
            return body.to_string();
        }
    }
    panic!("no CSS rule for {sel}")
}

fn chart_count(dir: &Path) -> usize {
    let mut stems = std::collections::BTreeSet::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let sub = e.unwrap().path();
        if !sub.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&sub).unwrap() {
            let p = f.unwrap().path();
            if matches!(p.extension().and_then(|x| x.to_str()), Some("svg" | "png")) {
                stems.insert(p.with_extension(""));
            }
        }
    }
    stems.len()
}

fn report(out: &Path, embed: bool) -> String {
    let mut args = vec!["report", "--out", out.to_str().unwrap()];
    if embed {
        args.push("--embed");
    }
    let o = ratelab(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    std::fs::read_to_string(out.join("index.html")).unwrap()
}

#[test]
fn page_has_every_scenario_and_no_external_assets() {
    let tmp = tempfile::tempdir().unwrap();
    let scenarios = copy_reports(tmp.path());
    assert!(scenarios >= 3);
    let html = report(tmp.path(), false);
    let names = folder_names(tmp.path());
    let side = between(&html, "<nav class=\"toc side\"", "</nav>");
    let bar = between(&html, "<header class=\"bar\">", "</header>");
    for name in &names {
        assert!(html.contains(&format!("id=\"s-{name}\"")), "{name} section");
        assert!(
            side.contains(&format!("href=\"#s-{name}\"")),
            "{name} in the side nav"
        );
        assert!(
            bar.contains(&format!("href=\"#s-{name}\"")),
            "{name} in the narrow-screen nav"
        );
    }
    // Every section of the page (summary, job groups, scenarios) is one
    // click away in both navs.
    let ids = section_ids(&html);
    assert!(ids.len() > names.len() + 2, "{ids:?}");
    for id in &ids {
        assert!(
            side.contains(&format!("href=\"#{id}\"")),
            "#{id} not in the side nav"
        );
        assert!(
            bar.contains(&format!("href=\"#{id}\"")),
            "#{id} not in the narrow-screen nav"
        );
    }

    // The findings summary comes first and links every scenario, one line each.
    let findings_at = html.find("<section id=\"findings\">").expect("findings");
    let first_section = html.find("<section class=\"job\"").expect("job groups");
    assert!(
        findings_at < first_section,
        "the summary comes before the sections"
    );
    assert!(findings_at < html.find("<section class=\"scenario\"").unwrap());
    let findings = between(&html, "<section id=\"findings\">", "</section>");
    for name in &names {
        assert_eq!(
            findings
                .matches(&format!("<li><a href=\"#s-{name}\">"))
                .count(),
            1,
            "{name}: one line in the findings"
        );
    }
    assert_eq!(findings.matches("<li>").count(), names.len());
    // The decision lab's line is computed from its rows: the least harm.
    let zoo = findings
        .split("<li>")
        .find(|l| l.contains("#s-decision-zoo"))
        .unwrap();
    let zoo_json: serde_json::Value = serde_json::from_slice(
        &std::fs::read(tmp.path().join("decision-zoo/report.json")).unwrap(),
    )
    .unwrap();
    let candidates = zoo_json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["memory_bytes"].is_null())
        .count();
    // A sentence with numbers, naming no trade-off's end the winner.
    assert!(
        zoo.contains(&format!(
            " of {candidates} candidates deny compliant requests"
        )),
        "{zoo}"
    );
    assert!(!zoo.contains("Least harm"), "{zoo}");
    assert!(
        zoo.chars().any(|c| c.is_ascii_digit()) && zoo.contains('%'),
        "{zoo}"
    );
    // Every scenario's line carries a number.
    for line in findings.split("<li>").skip(1) {
        assert!(
            line.chars().any(|c| c.is_ascii_digit()),
            "no number: {line}"
        );
    }
    // The fleet has a section of its own.
    assert!(html.contains("id=\"g-fleet\""));
    assert!(
        between(&html, "id=\"g-fleet\"", "id=\"g-size\"").contains("id=\"s-fleet-store-outage\"")
    );

    // Sections grouped by job, in job order: the decision lab first, then
    // both sizings (count and rate limit) together.
    let at = |id: &str| {
        html.find(&format!("id=\"{id}\""))
            .unwrap_or_else(|| panic!("{id}"))
    };
    assert!(at("g-choose") < at("s-decision-zoo") && at("s-decision-zoo") < at("g-size"));
    assert!(at("g-size") < at("s-size") && at("s-size") < at("s-size-limit"));
    assert!(at("s-size-limit") < at("g-estimate"));
    assert!(at("g-estimate") < at("s-estimator-zipf") && at("g-docs") < at("s-pacer-cadence"));
    let limit = between(&html, "id=\"s-size-limit\"", "</section>");
    assert!(limit.contains("for a rate limit") && limit.contains("compliant denied %"));

    // Wide tables: the first column (the candidate) stays, the header row
    // too, and the decision tables put the harm columns first.
    let rule = css_rule(&html, "td:first-child");
    assert!(
        rule.contains("position: sticky") && rule.contains("left: 0"),
        "{rule}"
    );
    assert!(css_rule(&html, ".table-wrap").contains("overflow: auto"));
    assert!(css_rule(&html, "nav.side").contains("position: sticky"));
    let zoo_table = between(&html, "id=\"s-decision-zoo\"", "</thead>");
    let col = |c: &str| {
        zoo_table
            .find(&format!(">{c}</th>"))
            .unwrap_or_else(|| panic!("{c}"))
    };
    assert!(col("algorithm") < col("compliant denied"));
    assert!(col("compliant denied") < col("limited excess"));
    assert!(col("limited excess") < col("per request: false allow"));
    // Charts: full width, a tap zooms (a checkbox per figure, CSS only).
    assert_eq!(
        html.matches("<div class=\"zoom\"><input type=\"checkbox\"")
            .count(),
        chart_count(tmp.path())
    );
    assert_eq!(html.matches("<img ").count(), chart_count(tmp.path()));
    assert!(html.contains("What to look at:"));
    assert!(
        html.contains("<td class=\"num\">75.2%</td>"),
        "table.md rendered"
    );
    for external in [
        "src=\"http",
        "href=\"http",
        "<link",
        "<script",
        "url(",
        "@import",
    ] {
        assert!(!html.contains(external), "external asset: {external}");
    }
    let embedded = report(tmp.path(), true);
    assert_eq!(
        embedded.matches("<img src=\"data:image/").count(),
        chart_count(tmp.path())
    );

    // No report folders: bad input, with the fix.
    let empty = tempfile::tempdir().unwrap();
    let o = ratelab(&["report", "--out", empty.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("ratelab reproduce"), "{}", stderr(&o));
}

/// A report folder whose report.json cannot be read (a folder, a link to
/// nowhere, a symlink loop) fails the page naming it, in one line: it was
/// skipped without a word, and the page went out without that report.
#[test]
fn a_report_json_that_cannot_be_read_is_named_not_skipped() {
    let src = root().join("reports/estimator-zipf");
    type Spoil = fn(&Path);
    let spoil: [(&str, Spoil, &str); 3] = [
        (
            "a folder",
            |p| std::fs::create_dir(p).unwrap(),
            "Is a directory",
        ),
        (
            "a link to nowhere",
            |p| std::os::unix::fs::symlink("gone.json", p).unwrap(),
            "No such file",
        ),
        (
            "a symlink loop",
            |p| std::os::unix::fs::symlink("report.json", p).unwrap(),
            "Too many levels",
        ),
    ];
    for (what, spoil, want) in spoil {
        let out = tempfile::tempdir().unwrap();
        let dir = out.path().join("estimator-zipf");
        std::fs::create_dir(&dir).unwrap();
        for f in std::fs::read_dir(&src).unwrap() {
            let f = f.unwrap().path();
            std::fs::copy(&f, dir.join(f.file_name().unwrap())).unwrap();
        }
        let json = dir.join("report.json");
        std::fs::remove_file(&json).unwrap();
        spoil(&json);
        let o = ratelab(&["report", "--out", out.path().to_str().unwrap()]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{what}: {e}");
        assert_eq!(e.trim_end().lines().count(), 1, "{what}: {e}");
        assert!(
            e.contains(&format!("{}: {want}", json.display())),
            "{what}: {e}"
        );
        assert!(!out.path().join("index.html").exists(), "{what}");
    }
}

fn chromium() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("RATELAB_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

const PROBE: &str = r#"<script>
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var bad = imgs.filter(function (i) { return !(i.complete && i.naturalWidth > 0); })
                .map(function (i) { return (i.getAttribute('src') || '').slice(0, 60); });
  var p = document.createElement('pre');
  p.id = 'img-check';
  p.textContent = 'IMAGES ' + imgs.length + ' BROKEN ' + bad.length + ' ' + bad.join(' ');
  document.body.appendChild(p);
});
</script>
</body>"#;

/// Loads `<dir>/index.html` plus the probe in Chromium; returns (images, broken).
fn render(chrome: &Path, dir: &Path) -> (usize, usize, String) {
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    let probe = dir.join("probe.html");
    std::fs::write(&probe, html.replace("</body>", PROBE)).unwrap();
    let profile = tempfile::tempdir().unwrap();
    // The DOM goes to a file: with embedded images it outgrows a pipe buffer.
    let dom_path = profile.path().join("dom.html");
    let dom_file = std::fs::File::create(&dom_path).unwrap();
    let mut child = Command::new(chrome)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=10000",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("file://{}", probe.display()))
        .stdout(dom_file)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("chromium starts");
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let dom = String::from_utf8_lossy(&std::fs::read(&dom_path).unwrap()).into_owned();
    let line = dom
        .lines()
        .find_map(|l| l.split("id=\"img-check\">IMAGES ").nth(1))
        .unwrap_or_else(|| panic!("no probe result in the DOM: {}", &dom[..dom.len().min(500)]))
        .to_string();
    let line = line.split('<').next().unwrap_or_default().to_string();
    let mut it = line.split_whitespace();
    let images: usize = it.next().unwrap().parse().unwrap();
    assert_eq!(it.next(), Some("BROKEN"));
    let broken: usize = it.next().unwrap().parse().unwrap();
    (images, broken, line)
}

/// What the page looks like to a reader, measured in Chromium at one width:
/// the page's own width, charts narrower than the screen, which contents
/// are in view halfway down, and how the first decision table cell sits.
const LAYOUT_PROBE: &str = r#"<script>
window.addEventListener('load', function () {
  var de = document.documentElement, w = window.innerWidth;
  var imgs = Array.prototype.slice.call(document.images);
  // Charts sit two abreast on wide screens: none narrower than 440 px
  // (or the screen's width, less its margins, on a phone).
  var narrow = imgs.filter(function (i) { return i.getBoundingClientRect().width < Math.min(440, 0.85 * w); }).length;
  // As first shown: the page's height, the first finding above the fold,
  // and every element inside its container (a scrolling box's content
  // may be wider: it scrolls).
  var height = de.scrollHeight;
  var first = document.querySelector('#findings ul.findings li');
  var fold = first ? (first.getBoundingClientRect().bottom <= window.innerHeight ? 1 : 0) : 0;
  var wider = 0, example = '-';
  Array.prototype.forEach.call(document.querySelectorAll('main *, header.bar *'), function (el) {
    var p = el.parentElement;
    if (!p || el.tagName === 'INPUT') return;
    if (p.closest('.table-wrap, .zoom, pre, nav.toc')) return;
    var r = el.getBoundingClientRect(), q = p.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) return;
    if (r.right > q.right + 1 || r.left < q.left - 1) {
      wider += 1;
      if (example === '-') example = (el.tagName + '.' + el.className + '#' + el.id).replace(/\s+/g, '_');
    }
  });
  window.scrollTo(0, Math.floor(de.scrollHeight / 2));
  function inView(sel) {
    var el = document.querySelector(sel);
    if (!el || getComputedStyle(el).display === 'none') return 0;
    var r = el.getBoundingClientRect();
    return (r.height > 0 && r.top >= -1 && r.top < window.innerHeight) ? 1 : 0;
  }
  var td = document.querySelector('#s-decision-zoo tbody td');
  var wrap = document.querySelector('#s-decision-zoo .table-wrap');
  var p = document.createElement('pre');
  p.id = 'layout-check';
  p.textContent = 'LAYOUT inner ' + w + ' scroll ' + de.scrollWidth + ' narrow_charts ' + narrow +
    ' side ' + inView('nav.side') + ' bar ' + inView('header.bar') +
    ' td ' + getComputedStyle(td).position + ' wrap_fits ' + (wrap.getBoundingClientRect().right <= w ? 1 : 0) +
    ' height ' + height + ' fold ' + fold + ' wider ' + wider + ' wider_example ' + example + ' END';
  // Measured in a frame (see `layout`): the answer goes to the frame's parent,
  // whose DOM is the one dumped.
  (window.parent || window).document.body.appendChild(p);
});
</script>
</body>"#;

/// Loads `<dir>/index.html` plus [`LAYOUT_PROBE`] in a `width` px window;
/// returns the probe's fields.
fn layout(chrome: &Path, dir: &Path, width: u32) -> std::collections::HashMap<String, String> {
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    let probe = dir.join(format!("layout-{width}.html"));
    std::fs::write(&probe, html.replace("</body>", LAYOUT_PROBE)).unwrap();
    // Headless Chromium will not lay a window out narrower than 500 px, so
    // the page is shown in a frame exactly `width` px wide and 900 tall (a
    // phone's screen is its viewport), as a phone would show it.
    let frame = dir.join(format!("frame-{width}.html"));
    std::fs::write(
        &frame,
        format!(
            "<!doctype html><html><body style=\"margin:0\"><iframe src=\"layout-{width}.html\" \
             style=\"width:{width}px;height:900px;border:0\"></iframe></body></html>"
        ),
    )
    .unwrap();
    let profile = tempfile::tempdir().unwrap();
    let o = Command::new(chrome)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=10000",
            // The frame's page is read from the parent (both file://).
            "--allow-file-access-from-files",
            "--dump-dom",
        ])
        .arg(format!("--window-size={},1000", width.max(500) + 40))
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("file://{}", frame.display()))
        .stderr(std::process::Stdio::null())
        .output()
        .expect("chromium starts");
    let dom = String::from_utf8_lossy(&o.stdout).into_owned();
    let line = dom
        .split("id=\"layout-check\">LAYOUT ")
        .nth(1)
        .and_then(|l| l.split(" END").next())
        .unwrap_or_else(|| panic!("no layout probe result at {width} px"));
    let f: Vec<&str> = line.split_whitespace().collect();
    f.chunks(2)
        .map(|kv| (kv[0].to_string(), kv.get(1).unwrap_or(&"").to_string()))
        .collect()
}

/// The page in headless Chromium at a desktop's 1440 px and a phone's
/// 390 px: as wide as the screen, findings above the fold, no element
/// wider than its container, at most 40,000 px tall at 1440 px.
#[test]
#[ignore = "slow: two Chromium page loads of every report; .ci/run runs it"]
fn page_reads_on_a_phone_and_on_a_desktop() {
    let Some(chrome) = chromium() else {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("chromium is not installed, and CI=true requires it (.ci/run installs it)");
        }
        eprintln!("SKIPPED page_reads_on_a_phone_and_on_a_desktop: chromium not installed (apt-get install chromium)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    copy_reports(tmp.path());
    report(tmp.path(), false);
    for (width, side, bar) in [(390, "0", "1"), (1440, "1", "0")] {
        let l = layout(&chrome, tmp.path(), width);
        let get = |k: &str| l.get(k).map(String::as_str).unwrap_or("?");
        // The frame is exactly the phone's (or the desktop's) width.
        let inner: u32 = get("inner").parse().unwrap();
        assert_eq!(inner, width, "{l:?}");
        // Nothing wider than the screen: wide tables scroll in their box.
        assert_eq!(
            get("scroll"),
            get("inner"),
            "page wider than {width} px: {l:?}"
        );
        assert_eq!(
            get("wrap_fits"),
            "1",
            "a table box overflows at {width} px: {l:?}"
        );
        assert_eq!(
            get("narrow_charts"),
            "0",
            "charts not full width at {width} px: {l:?}"
        );
        // Halfway down the page the contents are still in view.
        assert_eq!(
            (get("side"), get("bar")),
            (side, bar),
            "nav at {width} px: {l:?}"
        );
        assert_eq!(get("td"), "sticky", "{l:?}");
        assert_eq!(
            get("fold"),
            "1",
            "findings below the fold at {width} px: {l:?}"
        );
        assert_eq!(
            get("wider"),
            "0",
            "an element wider than its container at {width} px: {l:?}"
        );
        if width == 1440 {
            let height: u32 = get("height").parse().unwrap();
            assert!(height <= 40_000, "{height} px tall at {width} px: {l:?}");
        }
    }
}

#[test]
fn every_image_loads_in_headless_chromium() {
    let Some(chrome) = chromium() else {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("chromium is not installed, and CI=true requires it (.ci/run installs it)");
        }
        eprintln!("SKIPPED every_image_loads_in_headless_chromium: chromium not installed (apt-get install chromium)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    copy_reports(tmp.path());
    let charts = chart_count(tmp.path());

    report(tmp.path(), false);
    let (images, broken, line) = render(&chrome, tmp.path());
    assert_eq!((images, broken), (charts, 0), "relative images: {line}");

    report(tmp.path(), true);
    let (images, broken, line) = render(&chrome, tmp.path());
    assert_eq!((images, broken), (charts, 0), "embedded images: {line}");

    // The probe can fail: a chart file removed after the page was written.
    report(tmp.path(), false);
    let victim = tmp.path().join("estimator-zipf/error_percentiles.svg");
    std::fs::remove_file(&victim).unwrap();
    let (_, broken, line) = render(&chrome, tmp.path());
    assert_eq!(broken, 1, "a missing image must be detected: {line}");
}

/// Where the review screenshots go: `<target>/review-screenshots/`.
fn screenshot_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"));
    target.join("review-screenshots")
}

/// A screenshot of every section of the review page (one PNG per scenario,
/// `<target>/review-screenshots/<name>.png`) for a person to look at.
#[test]
#[ignore = "slow: a Chromium start per scenario, two minutes; .ci/run runs it"]
fn screenshots_of_every_section() {
    let Some(chrome) = chromium() else {
        eprintln!("SKIPPED screenshots_of_every_section: chromium not installed (apt-get install chromium)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    copy_reports(tmp.path());
    let html = report(tmp.path(), false);
    let out = screenshot_dir();
    std::fs::create_dir_all(&out).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .filter_map(|p| p.file_name().and_then(|n| n.to_str()).map(String::from))
        .collect();
    names.sort();
    let mut shots = 0;
    for name in &names {
        let section_start = html.find(&format!("<section class=\"scenario\" id=\"s-{name}\""));
        let Some(start) = section_start else { continue };
        let end = html[start..]
            .find("</section>")
            .map_or(html.len(), |e| start + e);
        let section = &html[start..end];
        // A height that holds the section: its figures and table rows.
        let height = 500
            + 720 * section.matches("<figure").count()
            + 30 * section.matches("<tr>").count()
            + 60 * section.matches("<pre>").count()
            + 18 * section.matches('\n').count().min(400);
        let page = html.replace(
            "</style>",
            &format!(
                "section.scenario:not(#s-{name}), #findings, .side-col, header.bar, section.job > h2, h1, p.sub, footer {{ display: none; }} .layout {{ display: block; }} section.job, section.scenario {{ margin-top: 0; }}</style>"
            ),
        );
        let file = tmp.path().join(format!("shot-{name}.html"));
        std::fs::write(&file, page).unwrap();
        let png = out.join(format!("{name}.png"));
        let profile = tempfile::tempdir().unwrap();
        let status = Command::new(&chrome)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--virtual-time-budget=5000",
            ])
            .arg(format!("--window-size=1200,{}", height.min(16000)))
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg(format!("--screenshot={}", png.display()))
            .arg(format!("file://{}", file.display()))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("chromium starts");
        assert!(status.success(), "chromium failed on {name}");
        let bytes = std::fs::read(&png).unwrap();
        assert_eq!(&bytes[1..4], b"PNG", "{name}");
        shots += 1;
    }
    assert_eq!(shots, names.len());
    eprintln!("{shots} screenshots in {}", out.display());
}
