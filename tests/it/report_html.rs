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
    assert!(html.contains("<nav class=\"toc\">"), "table of contents");
    for e in std::fs::read_dir(tmp.path()).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            let name = p.file_name().unwrap().to_str().unwrap().to_string();
            assert!(
                html.contains(&format!("href=\"#s-{name}\"")),
                "{name} in TOC"
            );
            assert!(html.contains(&format!("id=\"s-{name}\"")), "{name} section");
        }
    }
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
                "section.scenario:not(#s-{name}), nav.toc, h1, p.sub, footer {{ display: none; }} section.scenario {{ margin-top: 0; }}</style>"
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
