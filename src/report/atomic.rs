//! Crash-safe writing: nothing ratelab writes is ever seen half-written.
//!
//! * [`write_folder`]: a whole folder, built complete in a hidden staging
//!   folder next to its final place and then swapped in by rename. Killing
//!   ratelab at any point leaves either the previous folder or the new one,
//!   never a mix (at worst a stale hidden `.name.staging-*` folder, which the
//!   next write removes).
//! * [`write_file`]: one file from bytes in memory.
//! * [`write_files`]: several files of one folder, all or nothing.
//! * [`StreamingFile`]: one file written as it is produced (a trace, a
//!   replay's CSV), to a temporary file in the target's folder that
//!   [`StreamingFile::commit`] renames over the target; dropped without a
//!   commit, it leaves nothing.
//!
//! [`parse_out_path`] validates the output paths given on the command line.

use crate::error::{Error, Result};
use crate::scenario::validate_name;
use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Parses an `--out` path (a folder or file ratelab writes). Absolute and
/// relative paths are fine; rejected are an empty path, any `..` component
/// (`reports/../../etc` would write somewhere other than where it seems to
/// point: give the folder's own path instead) and control characters.
///
/// ```
/// use ratelab::report::atomic::parse_out_path;
/// assert!(parse_out_path("reports/run-1").is_ok());
/// assert!(parse_out_path("reports/../etc").is_err());
/// assert!(parse_out_path("").is_err());
/// ```
pub fn parse_out_path(s: &str) -> std::result::Result<PathBuf, String> {
    if s.is_empty() {
        return Err("empty: expected a path".into());
    }
    if s.chars().any(char::is_control) {
        return Err(format!(
            "{s:?}: control characters are not allowed in an output path"
        ));
    }
    let p = PathBuf::from(s);
    if p.components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(format!(
            "{s:?}: a `..` component is not allowed in an output path (give the folder's own path)"
        ));
    }
    Ok(p)
}

/// Writes `files` (name, bytes) as the whole content of `<out>/<name>/`,
/// atomically: stale files of the previous content do not survive.
///
/// `name` must be a valid scenario name and every file name must stay in
/// the folder (no `/`, `\` or leading `.`).
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
    // previous folder stays in place.
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

/// Writes one file atomically (creating its folder): a temporary file in
/// the same folder, renamed over the target.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = StreamingFile::create(path, ".ratelab-")?;
    file.write_all(bytes).map_err(|e| Error::io(path, e))?;
    file.commit()
}

/// Writes several files of one folder all or nothing: each goes to a
/// temporary beside its target, and only once every one is whole are they
/// renamed over their targets. A failed write removes every temporary and
/// leaves every previous file as it was.
pub fn write_files(dir: &Path, files: &[(String, Vec<u8>)]) -> Result<()> {
    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut staged = Vec::with_capacity(files.len());
    for (name, bytes) in files {
        let path = dir.join(name);
        let mut file = StreamingFile::create_in_existing_folder(&path, ".ratelab-")?;
        file.write_all(bytes).map_err(|e| Error::io(&path, e))?;
        let tmp = file
            .out
            .into_inner()
            .map_err(|e| Error::io(&path, e.into_error()))?;
        staged.push((tmp, path));
    }
    for (tmp, path) in staged {
        tmp.persist(&path).map_err(|e| Error::io(&path, e.error))?;
    }
    Ok(())
}

/// A file written as it is produced: the bytes go to a hidden temporary file
/// in the target's folder, which [`commit`](Self::commit) flushes and renames
/// over the target. Dropped without a commit (an error, a panic), the
/// temporary file is removed and the target is untouched.
///
/// ```
/// use std::io::Write;
/// use ratelab::report::atomic::StreamingFile;
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("out.csv");
/// let mut f = StreamingFile::create(&path, ".example-").unwrap();
/// writeln!(f, "a,b").unwrap();
/// assert!(!path.exists(), "nothing is visible before the commit");
/// f.commit().unwrap();
/// assert_eq!(std::fs::read_to_string(&path).unwrap(), "a,b\n");
/// ```
#[derive(Debug)]
pub struct StreamingFile {
    path: PathBuf,
    out: BufWriter<tempfile::NamedTempFile>,
}

impl StreamingFile {
    /// Creates `path`'s folder if needed, then the temporary file in it;
    /// `prefix` starts the temporary file's name (say `.ratelab-replay-`).
    pub fn create(path: &Path, prefix: &str) -> Result<Self> {
        let dir = folder_of(path);
        fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        Self::create_in_existing_folder(path, prefix)
    }

    /// Like [`create`](Self::create), but `path`'s folder must exist already
    /// (an error names the folder otherwise).
    pub fn create_in_existing_folder(path: &Path, prefix: &str) -> Result<Self> {
        let dir = folder_of(path);
        let tmp = tempfile::Builder::new()
            .prefix(prefix)
            .tempfile_in(dir)
            .map_err(|e| Error::io(dir, e))?;
        Ok(Self {
            path: path.to_path_buf(),
            out: BufWriter::with_capacity(1 << 20, tmp),
        })
    }

    /// The target path (where [`commit`](Self::commit) puts the file).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes the temporary file and renames it over the target.
    pub fn commit(self) -> Result<()> {
        let path = self.path;
        let tmp = self
            .out
            .into_inner()
            .map_err(|e| Error::io(&path, e.into_error()))?;
        tmp.persist(&path).map_err(|e| Error::io(&path, e.error))?;
        Ok(())
    }
}

impl Write for StreamingFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.out.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.out.write_all(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// The folder a file path lives in (`.` for a bare file name).
fn folder_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
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
        assert!(write_folder(dir.path(), "../escape", &[]).is_err());
    }

    #[test]
    fn single_files_and_streams_leave_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/x.txt");
        write_file(&path, b"one").unwrap();
        write_file(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        let dropped = StreamingFile::create(&dir.path().join("y.txt"), ".t-").unwrap();
        drop(dropped);
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "only sub/ is left");
        assert!(StreamingFile::create_in_existing_folder(&dir.path().join("no/z"), ".t-").is_err());
    }
}
