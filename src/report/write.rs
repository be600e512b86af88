//! Crash-safe report writing.
//!
//! A report folder is built complete in a hidden staging folder next to its
//! final place and then swapped in by rename. Killing ratelab at any point
//! leaves either the previous report or the new one, never a mix (at worst a
//! stale hidden `.name.staging-*` folder, which the next write removes).

use super::{json_bytes, Output};
use crate::error::{Error, Result};
use crate::scenario::validate_name;
use std::fs;
use std::path::{Path, PathBuf};

/// Writes `output` to `<out>/<name>/`, replacing the previous report whole.
pub fn write_report(out: &Path, name: &str, output: &Output) -> Result<PathBuf> {
    let mut files: Vec<(String, Vec<u8>)> = vec![
        ("report.json".into(), json_bytes(&output.json)),
        ("table.md".into(), output.table_md.clone().into_bytes()),
        ("table.csv".into(), output.table_csv.clone().into_bytes()),
    ];
    for chart in &output.charts {
        files.push((
            format!("{}.svg", chart.name),
            chart.svg.clone().into_bytes(),
        ));
        files.push((format!("{}.png", chart.name), chart.png.clone()));
    }
    files.extend(output.extra_files.iter().cloned());
    write_folder(out, name, &files)
}

/// Writes `files` as the whole content of `<out>/<name>/`, atomically.
pub fn write_folder(out: &Path, name: &str, files: &[(String, Vec<u8>)]) -> Result<PathBuf> {
    validate_name(name).map_err(|m| Error::input(format!("report name: {m}")))?;
    fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let final_dir = out.join(name);
    let staging = out.join(format!(".{name}.staging-{}", std::process::id()));
    if staging.exists() {
        fs::remove_dir_all(&staging).map_err(|e| Error::io(&staging, e))?;
    }
    fs::create_dir(&staging).map_err(|e| Error::io(&staging, e))?;
    // A failed write (disk full, file size limit, read-only folder) takes
    // its staging folder with it and names the file it was making; the
    // previous report stays in place.
    let fail = |path: &Path, e: std::io::Error| {
        let _ = fs::remove_dir_all(&staging);
        Error::io(path, e)
    };
    for (file, bytes) in files {
        if file.contains(['/', '\\']) || file.starts_with('.') {
            let _ = fs::remove_dir_all(&staging);
            return Err(Error::internal(format!(
                "report file name {file:?} would leave its folder"
            )));
        }
        fs::write(staging.join(file), bytes).map_err(|e| fail(&final_dir.join(file), e))?;
    }
    let old = out.join(format!(".{name}.old-{}", std::process::id()));
    if final_dir.exists() {
        fs::rename(&final_dir, &old).map_err(|e| fail(&final_dir, e))?;
    }
    if let Err(e) = fs::rename(&staging, &final_dir) {
        if old.exists() {
            let _ = fs::rename(&old, &final_dir);
        }
        return Err(fail(&final_dir, e));
    }
    if old.exists() {
        fs::remove_dir_all(&old).map_err(|e| Error::io(&old, e))?;
    }
    Ok(final_dir)
}

/// Writes one file atomically: a temporary file in the same folder, renamed
/// over the target.
pub fn write_file_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".ratelab-")
        .tempfile_in(dir)
        .map_err(|e| Error::io(dir, e))?;
    std::io::Write::write_all(&mut tmp, bytes).map_err(|e| Error::io(path, e))?;
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    Ok(())
}

/// Writes several files of one folder all or nothing: every file is written
/// to a temporary beside its target first, and only once all of them are
/// whole are they renamed over their targets. A failed write removes every
/// temporary and leaves every previous file as it was.
pub fn write_files_atomic(dir: &Path, files: &[(String, Vec<u8>)]) -> Result<()> {
    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut staged = Vec::with_capacity(files.len());
    for (name, bytes) in files {
        let path = dir.join(name);
        let mut tmp = tempfile::Builder::new()
            .prefix(".ratelab-")
            .tempfile_in(dir)
            .map_err(|e| Error::io(dir, e))?;
        std::io::Write::write_all(&mut tmp, bytes).map_err(|e| Error::io(&path, e))?;
        staged.push((tmp, path));
    }
    for (tmp, path) in staged {
        tmp.persist(&path).map_err(|e| Error::io(&path, e.error))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_whole_folder() {
        let dir = tempfile::tempdir().unwrap();
        write_folder(
            dir.path(),
            "r",
            &[
                ("a.txt".into(), b"1".to_vec()),
                ("b.txt".into(), b"2".to_vec()),
            ],
        )
        .unwrap();
        write_folder(dir.path(), "r", &[("a.txt".into(), b"3".to_vec())]).unwrap();
        let r = dir.path().join("r");
        assert_eq!(fs::read(r.join("a.txt")).unwrap(), b"3");
        assert!(
            !r.join("b.txt").exists(),
            "stale files of the previous report must go"
        );
        let leftovers: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1);
    }

    #[test]
    fn rejects_names_that_escape() {
        let dir = tempfile::tempdir().unwrap();
        assert!(write_folder(dir.path(), "r", &[("../x".into(), vec![])]).is_err());
        let out = Output {
            json: serde_json::json!({}),
            table_md: String::new(),
            table_csv: String::new(),
            charts: vec![],
            console: String::new(),
            extra_files: vec![],
        };
        assert!(write_report(dir.path(), "../escape", &out).is_err());
    }
}
