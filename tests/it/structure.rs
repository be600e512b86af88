//! The house's shape, drawn from the code's own imports: no import circle
//! between files of different folders, and no file of `src/` over 700
//! lines outside `src/model/` (one model per file may be long; everything
//! else is split by job).
//!
//! An import is a `crate::a::b` or `super::a` path in a file's code (not
//! its comments, not its `#[cfg(test)] mod tests`), resolved to the file
//! of the longest module prefix that exists. A `mod.rs` naming its own
//! children (`mod x;`, `pub use x::...`) is the facade, not an import.

use crate::common;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir` except `tests.rs` files (unit tests).
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs")
            && p.file_name().is_some_and(|n| n != "tests.rs")
        {
            out.push(p);
        }
    }
}

/// A file's module path below `src/` (`lab/decision/mod.rs` → `lab::decision`).
fn module_of(src: &Path, f: &Path) -> Vec<String> {
    let rel = f.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The code of a file without its comments and its unit-test module.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests {") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module paths a file's code names after `prefix` (`crate::`, `super::`).
fn paths_after<'a>(code: &'a str, prefix: &str) -> Vec<(usize, Vec<&'a str>)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = code[from..].find(prefix) {
        let at = from + i;
        from = at + prefix.len();
        if at > 0 {
            let before = code.as_bytes()[at - 1];
            if before.is_ascii_alphanumeric() || before == b'_' {
                continue;
            }
        }
        // Count `super::super::...`.
        let mut ups = 1;
        let mut rest = &code[from..];
        if prefix == "super::" {
            while let Some(r) = rest.strip_prefix("super::") {
                ups += 1;
                rest = r;
            }
        }
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(rest.len());
        let path: Vec<&str> = rest[..end].split("::").filter(|s| !s.is_empty()).collect();
        out.push((ups, path));
    }
    out
}

#[test]
fn no_import_circle_spans_folders_and_no_file_outside_models_is_over_700_lines() {
    let src = common::root().join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let modules: BTreeMap<Vec<String>, PathBuf> = files
        .iter()
        .map(|f| (module_of(&src, f), f.clone()))
        .collect();
    let resolve = |parts: &[String]| -> Option<&PathBuf> {
        (1..=parts.len())
            .rev()
            .find_map(|n| modules.get(&parts[..n]))
    };
    let mut long = Vec::new();
    let mut edges: BTreeMap<&PathBuf, BTreeSet<&PathBuf>> = BTreeMap::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let rel = f.strip_prefix(&src).unwrap();
        if text.lines().count() > 700 && !rel.starts_with("model") {
            long.push(format!(
                "{} ({} lines)",
                rel.display(),
                text.lines().count()
            ));
        }
        let me = module_of(&src, f);
        let is_mod = f
            .file_name()
            .is_some_and(|n| n == "mod.rs" || n == "lib.rs");
        let code = code(&text);
        let mut targets = Vec::new();
        for (_, p) in paths_after(&code, "crate::") {
            let parts: Vec<String> = p.iter().map(|s| s.to_string()).collect();
            targets.extend(resolve(&parts));
        }
        for (ups, p) in paths_after(&code, "super::") {
            // A mod.rs is its module; another file's parent is one up.
            let base_len = if is_mod {
                me.len()
            } else {
                me.len().saturating_sub(1)
            };
            let Some(keep) = base_len.checked_sub(ups - 1 + usize::from(is_mod)) else {
                continue;
            };
            let mut parts: Vec<String> = me[..keep.min(me.len())].to_vec();
            parts.extend(p.iter().map(|s| s.to_string()));
            targets.extend(resolve(&parts));
        }
        let set = edges.entry(f).or_default();
        set.extend(targets.into_iter().filter(|t| *t != f));
    }
    assert!(
        long.is_empty(),
        "files over 700 lines outside src/model: {long:?}"
    );

    // Strongly connected components (Tarjan), then those spanning folders.
    struct Tarjan<'a> {
        edges: &'a BTreeMap<&'a PathBuf, BTreeSet<&'a PathBuf>>,
        index: BTreeMap<&'a PathBuf, usize>,
        low: BTreeMap<&'a PathBuf, usize>,
        stack: Vec<&'a PathBuf>,
        on: BTreeSet<&'a PathBuf>,
        out: Vec<Vec<&'a PathBuf>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a PathBuf) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on.insert(v);
            let next: Vec<&PathBuf> = self.edges.get(v).into_iter().flatten().copied().collect();
            for w in next {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let l = self.low[w].min(self.low[v]);
                    self.low.insert(v, l);
                } else if self.on.contains(w) {
                    let l = self.index[w].min(self.low[v]);
                    self.low.insert(v, l);
                }
            }
            if self.low[v] == self.index[v] {
                let mut comp = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on.remove(w);
                    comp.push(w);
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    self.out.push(comp);
                }
            }
        }
    }
    let mut t = Tarjan {
        edges: &edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for f in &files {
        if !t.index.contains_key(f) {
            t.visit(f);
        }
    }
    let spanning: Vec<Vec<String>> = t
        .out
        .iter()
        .filter(|c| c.iter().map(|f| f.parent()).collect::<BTreeSet<_>>().len() > 1)
        .map(|c| {
            c.iter()
                .map(|f| f.strip_prefix(&src).unwrap().display().to_string())
                .collect()
        })
        .collect();
    assert!(
        spanning.is_empty(),
        "import circles spanning folders: {spanning:?}"
    );
    assert!(
        edges.values().map(BTreeSet::len).sum::<usize>() > 500,
        "the imports were read"
    );
}

/// The second type argument of each `Result<...>` in `code` whose
/// arguments are exactly two (nested brackets balanced), with its line.
fn result_errors(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let b = code.as_bytes();
    for (start, _) in code.match_indices("Result<") {
        let (mut depth, mut parts, mut cur) = (1usize, Vec::new(), String::new());
        for &c in &b[start + "Result<".len()..] {
            match c {
                b'<' | b'(' | b'[' => depth += 1,
                b'>' | b')' | b']' => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                break;
            }
            if c == b',' && depth == 1 {
                parts.push(std::mem::take(&mut cur));
            } else {
                cur.push(c as char);
            }
        }
        parts.push(cur);
        if let [_, err] = parts.as_slice() {
            let line = code[..start].matches('\n').count() + 1;
            out.push((line, err.split_whitespace().collect::<Vec<_>>().join(" ")));
        }
    }
    out
}

/// One error convention: every fallible function returns a typed error
/// (a floor's `thiserror` enum, `error::FieldError`, or `error::Error`),
/// never a bare message or a (field, message) tuple.
#[test]
fn no_result_has_a_string_or_a_tuple_of_strings_as_its_error() {
    assert_eq!(
        result_errors("fn f() -> Result<Vec<(u8, u8)>, String> {}\nfn g() -> Result<(), E>"),
        [(1, "String".to_string()), (2, "E".to_string())],
        "the reader finds the error type"
    );
    let src = common::root().join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut found = Vec::new();
    let mut results = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let code: String = text
            .lines()
            .map(|l| l.find("//").map_or(l, |i| &l[..i]))
            .collect::<Vec<_>>()
            .join("\n");
        for (line, err) in result_errors(&code) {
            results += 1;
            if matches!(err.as_str(), "String" | "(String, String)") {
                let rel = f.strip_prefix(&src).unwrap().display().to_string();
                found.push(format!("{rel}:{line}: Result<_, {err}>"));
            }
        }
    }
    assert!(results > 100, "the results were read ({results})");
    assert!(
        found.is_empty(),
        "errors as strings (give the floor's typed error): {found:?}"
    );
}
