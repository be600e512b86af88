//! Crash-safe writing: nothing ratelab writes is ever seen half-written.
//!
//! * [`write_folder`]: a whole folder, built complete in a hidden staging
//!   folder next to its final place and then swapped in by rename. Killing
//!   ratelab at any point leaves either the previous folder or the new one,
//!   never a mix (at worst a stale hidden `.name.staging-<pid>` or
//!   `.name.old-<pid>` folder, which the next write of that report removes
//!   once its process is gone, or restores when it holds the only copy).
//!   A file-size limit (`ulimit -f`) is an error, not a kill: the binary
//!   ignores SIGXFSZ, so the write fails with EFBIG and is cleaned up.
//! * [`write_file`]: one file from bytes in memory.
//! * [`write_files`]: several files of one folder, all or nothing.
//! * [`StreamingFile`]: one file written as it is produced (a trace, a
//!   replay's CSV), to a temporary file in the target's folder that
//!   [`StreamingFile::commit`] renames over the target; dropped without a
//!   commit, it leaves nothing.
//!
//! [`parse_out_path`] validates the output paths given on the command line.

use crate::error::{Error, Result};
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
pub fn parse_out_path(s: &str) -> std::result::Result<PathBuf, super::error::ReportError> {
    if s.is_empty() {
        return Err(super::error::ReportError::EmptyPath);
    }
    if s.chars().any(char::is_control) {
        return Err(super::error::ReportError::ControlInPath(s.to_string()));
    }
    let p = PathBuf::from(s);
    if p.components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(super::error::ReportError::ParentInPath(s.to_string()));
    }
    Ok(p)
}

/// Checks, before any work, that `<out>/<name>/` can become a report
/// folder: neither `out` nor `<out>/<name>` is something other than a
/// folder (a file there would otherwise be found only after the run).
///
/// # Examples
/// ```
/// use ratelab::report::atomic::check_report_place;
/// let dir = tempfile::tempdir().unwrap();
/// assert!(check_report_place(dir.path(), "r").is_ok());
/// std::fs::write(dir.path().join("r"), "not a folder").unwrap();
/// let e = check_report_place(dir.path(), "r").unwrap_err();
/// assert!(e.to_string().contains("not a folder"));
/// ```
pub fn check_report_place(out: &Path, name: &str) -> Result<()> {
    check_place(out, Place::Folder)?;
    for p in [out.to_path_buf(), out.join(name)] {
        match fs::metadata(&p) {
            Ok(m) if !m.is_dir() => {
                return Err(Error::input(format!(
                    "{}: exists and is not a folder: expected a report folder (or nothing) there",
                    p.display()
                )))
            }
            _ => {}
        }
    }
    Ok(())
}

/// What an output path is to become, for [`check_place`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A folder (reports, a size folder, the folder of shard files).
    Folder,
    /// A regular file, replaced by rename (a shard file, a trace, a CSV).
    File,
}

/// Checks, before any work, that `path` can become a `place`: it is
/// nothing yet or already one (a file replaced by rename must be a regular
/// file: renaming over a device or a pipe would replace the device or pipe
/// itself), and the nearest thing above it that exists is a folder. Without
/// this a file in the way is found only when the write comes, after the
/// work.
///
/// # Examples
/// ```
/// use ratelab::report::atomic::{check_place, Place};
/// let dir = tempfile::tempdir().unwrap();
/// let file = dir.path().join("notes.txt");
/// std::fs::write(&file, "x").unwrap();
/// assert!(check_place(&dir.path().join("new/deeper"), Place::Folder).is_ok());
/// assert!(check_place(&file, Place::File).is_ok());
/// assert!(check_place(&file, Place::Folder).is_err());
/// assert!(check_place(dir.path(), Place::File).is_err());
/// let e = check_place(&file.join("out"), Place::Folder).unwrap_err();
/// assert!(e.to_string().contains("is not a folder"), "{e}");
/// assert!(check_place(std::path::Path::new("/dev/null"), Place::File).is_err());
/// // A dangling symbolic link is named as one, before any work.
/// let link = dir.path().join("link");
/// std::os::unix::fs::symlink(dir.path().join("nowhere"), &link).unwrap();
/// let e = check_place(&link, Place::Folder).unwrap_err();
/// assert!(e.to_string().contains("a symbolic link to"), "{e}");
/// ```
pub fn check_place(path: &Path, place: Place) -> Result<()> {
    if let Ok(m) = fs::metadata(path) {
        return match place {
            Place::Folder if !m.is_dir() => Err(Error::input(format!(
                "{}: exists and is not a folder: expected a folder (or nothing) there",
                path.display()
            ))),
            Place::File if !m.is_file() => Err(not_a_regular_file(path)),
            _ => Ok(()),
        };
    }
    // A link to nothing would fail only once the work is done.
    if let Ok(m) = fs::symlink_metadata(path)
        && m.file_type().is_symlink()
    {
        let to = fs::read_link(path).unwrap_or_default();
        return Err(Error::input(format!(
            "{}: a symbolic link to {}, which does not exist: create it or give another path",
            path.display(),
            to.display()
        )));
    }
    for above in path.ancestors().skip(1) {
        if above.as_os_str().is_empty() {
            break;
        }
        match fs::metadata(above) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => {
                return Err(Error::input(format!(
                    "{}: {} exists and is not a folder: nothing can be written under it",
                    path.display(),
                    above.display()
                )))
            }
            Err(_) => continue,
        }
    }
    Ok(())
}

/// Refuses an output `out` (option `flag`) that is the input `input`
/// (`what`) through any path or link: renamed over it, it would lose it.
///
/// # Examples
///
/// ```
/// use ratelab::report::atomic::refuse_output_over_input;
/// let dir = tempfile::tempdir().unwrap();
/// let t = dir.path().join("t.csv");
/// std::fs::write(&t, "t_ns,key\n").unwrap();
/// let e = refuse_output_over_input(&dir.path().join(".").join("t.csv"), "--out", &t, "--trace").unwrap_err();
/// assert!(e.message().contains("the same file as --trace"), "{}", e.message());
/// assert!(refuse_output_over_input(&dir.path().join("o.csv"), "--out", &t, "--trace").is_ok());
/// ```
pub fn refuse_output_over_input(out: &Path, flag: &str, input: &Path, what: &str) -> Result<()> {
    if let (Ok(a), Ok(b)) = (fs::canonicalize(out), fs::canonicalize(input))
        && a == b
    {
        return Err(Error::input(format!(
            "{flag} {}: the same file as {what} {}: writing it would replace the input; give another path",
            out.display(),
            input.display()
        )));
    }
    Ok(())
}

/// The error for an output file that exists as something else.
fn not_a_regular_file(path: &Path) -> Error {
    Error::input(format!(
        "{}: exists and is not a regular file (a folder, a device or a pipe?); give a file path",
        path.display()
    ))
}

/// How old a staging or old folder of a live process must be before it
/// counts as stale anyway (its pid reused by some other process).
const STALE_AGE: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// True while a process with this pid exists.
fn pid_alive(pid: u32) -> bool {
    let Ok(p) = i32::try_from(pid) else {
        return false;
    };
    if p <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(p, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Removes what earlier, killed writes of `<out>/<name>` left: hidden
/// `.<name>.staging-<pid>` and `.<name>.old-<pid>` folders whose process is
/// gone or that are older than a day (see [`sweep`], which does this for
/// every name in the folder).
pub fn remove_stale(out: &Path, name: &str) {
    sweep_where(out, None, |n| {
        n.strip_prefix(&format!(".{name}."))
            .is_some_and(|r| r.starts_with("staging-") || r.starts_with("old-"))
    });
}

/// Removes ratelab's temporaries in `folder` (names as
/// [`crate::report::signals::temp_owner`] reads them): with `owner` `Some(pid)`
/// those of that process (a stop signal's cleanup), with `None` those whose
/// process is gone or (staging folders) older than a day: what killed runs
/// left. An `.<name>.old-<pid>` folder is the previous report when its run
/// was killed between its two renames: it is put back when the report
/// folder is missing, removed otherwise.
///
/// # Examples
///
/// ```
/// use ratelab::report::atomic::sweep;
/// let dir = tempfile::tempdir().unwrap();
/// let mine = dir.path().join(format!(".ratelab-decisions-{}-abc123", std::process::id()));
/// std::fs::write(&mine, "x").unwrap();
/// std::fs::write(dir.path().join("data.csv"), "x").unwrap();
/// sweep(dir.path(), None);
/// assert!(mine.exists(), "a live process's temporary stays");
/// sweep(dir.path(), Some(std::process::id()));
/// assert!(!mine.exists());
/// assert!(dir.path().join("data.csv").exists());
/// ```
pub fn sweep(folder: &Path, owner: Option<u32>) {
    sweep_where(folder, owner, |_| true);
}

fn sweep_where(folder: &Path, owner: Option<u32>, wanted: impl Fn(&str) -> bool) {
    use crate::report::signals::{temp_owner, Temp};
    let Ok(rd) = fs::read_dir(folder) else {
        return;
    };
    let me = std::process::id();
    for e in rd.flatten() {
        let file_name = e.file_name();
        let Some(f) = file_name.to_str() else {
            continue;
        };
        let Some((kind, pid)) = temp_owner(f) else {
            continue;
        };
        if !wanted(f) {
            continue;
        }
        let remove = match owner {
            Some(o) => pid == o,
            None => {
                let old_enough = kind != Temp::File
                    && e.metadata()
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.elapsed().ok())
                        .is_some_and(|age| age > STALE_AGE);
                pid != me && (!pid_alive(pid) || old_enough)
            }
        };
        if !remove {
            continue;
        }
        let p = e.path();
        match kind {
            Temp::File => {
                let _ = fs::remove_file(&p);
            }
            Temp::Staging => {
                let _ = fs::remove_dir_all(&p);
            }
            Temp::Old => {
                // `.<name>.old-<pid>`: the report folder is `<name>`.
                let name = &f[1..f.len() - format!(".old-{pid}").len()];
                let final_dir = folder.join(name);
                if !final_dir.exists() {
                    let _ = fs::rename(&p, &final_dir);
                } else {
                    let _ = fs::remove_dir_all(&p);
                }
            }
        }
    }
}

/// Writes `files` (name, bytes) as the whole content of `<out>/<name>/`,
/// atomically: stale files of the previous content do not survive, nor
/// do the staging folders of earlier killed writes ([`remove_stale`]).
///
/// `name` must be a valid scenario name and every file name must stay in
/// the folder (no `/`, `\` or leading `.`).
pub fn write_folder(out: &Path, name: &str, files: &[(String, Vec<u8>)]) -> Result<PathBuf> {
    validate_name(name).map_err(|m| Error::input(format!("report name: {m}")))?;
    check_report_place(out, name)?;
    // A write that fails leaves no trace, not even the `--out` folder it
    // created for the report (an empty folder would read as a run's output).
    let created = create_dirs(out)?;
    let r = write_folder_in(out, name, files);
    if r.is_err() {
        remove_created(out, created.as_deref());
    }
    r
}

/// Creates `dir` and its missing parents; the topmost folder it created
/// (None when `dir` existed).
fn create_dirs(dir: &Path) -> Result<Option<PathBuf>> {
    let mut top = None;
    let mut p = Some(dir);
    while let Some(d) = p {
        if d.as_os_str().is_empty() || d.exists() {
            break;
        }
        top = Some(d.to_path_buf());
        p = d.parent();
    }
    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    Ok(top)
}

/// Removes the folders [`create_dirs`] made, from `dir` up to `top`, each
/// only if empty.
fn remove_created(dir: &Path, top: Option<&Path>) {
    let Some(top) = top else { return };
    let mut p = Some(dir);
    while let Some(d) = p {
        if fs::remove_dir(d).is_err() || d == top {
            break;
        }
        p = d.parent();
    }
}

fn write_folder_in(out: &Path, name: &str, files: &[(String, Vec<u8>)]) -> Result<PathBuf> {
    remove_stale(out, name);
    crate::report::signals::watch_folder(out);
    let final_dir = out.join(name);
    let staging = out.join(format!(".{name}.staging-{}", std::process::id()));
    if staging.exists() {
        fs::remove_dir_all(&staging).map_err(|e| Error::io(&staging, e))?;
    }
    fs::create_dir(&staging).map_err(|e| Error::io(&staging, e))?;
    crate::report::signals::after_create(|| {
        let _ = fs::remove_dir_all(&staging);
    });
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
    // The folders made for `dir` are removed again if a file fails (a
    // disk that fills, a read-only folder): a failed run leaves no empty
    // report folder behind.
    let top = create_dirs(dir)?;
    let mut guard = CreatedDirs(top.map(|t| (dir.to_path_buf(), t)));
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
    guard.0 = None;
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
    dirs: CreatedDirs,
}

/// The folders a [`StreamingFile`] created for its target: removed (when
/// empty) unless the file was committed, so a failed write leaves no new
/// empty folder.
#[derive(Debug, Default)]
struct CreatedDirs(Option<(PathBuf, PathBuf)>);

impl Drop for CreatedDirs {
    fn drop(&mut self) {
        if let Some((dir, top)) = self.0.take() {
            remove_created(&dir, Some(&top));
        }
    }
}

impl StreamingFile {
    /// Creates `path`'s folder if needed, then the temporary file in it;
    /// `prefix` starts the temporary file's name (say `.ratelab-replay-`).
    pub fn create(path: &Path, prefix: &str) -> Result<Self> {
        let dir = folder_of(path);
        let top = create_dirs(dir)?;
        let guard = CreatedDirs(top.map(|t| (dir.to_path_buf(), t)));
        let mut f = Self::create_in_existing_folder(path, prefix)?;
        f.dirs = guard;
        Ok(f)
    }

    /// Like [`create`](Self::create), but `path`'s folder must exist already
    /// (an error names the folder otherwise).
    pub fn create_in_existing_folder(path: &Path, prefix: &str) -> Result<Self> {
        // The commit renames over `path`: over a device or a pipe that
        // would replace the node itself (`--out /dev/null` as root).
        if fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            return Err(not_a_regular_file(path));
        }
        let dir = folder_of(path);
        crate::report::signals::watch_folder(dir);
        // 0666 less the umask, as `fs::write` makes the reports: a
        // temporary file's own 0600 would make `--decisions` and every
        // streamed output private where the reports are not.
        // The pid in the name: a stop signal removes this process's
        // temporaries, the next run those of a killed one.
        let prefix = format!("{prefix}{}-", std::process::id());
        let tmp = tempfile::Builder::new()
            .prefix(&prefix)
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
            .tempfile_in(dir)
            .map_err(|e| Error::io(dir, e))?;
        let tmp = {
            let mut tmp = Some(tmp);
            crate::report::signals::after_create(|| drop(tmp.take()));
            tmp.expect("kept unless stopping")
        };
        Ok(Self {
            path: path.to_path_buf(),
            out: BufWriter::with_capacity(1 << 20, tmp),
            dirs: CreatedDirs::default(),
        })
    }

    /// The target path (where [`commit`](Self::commit) puts the file).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes the temporary file and renames it over the target.
    pub fn commit(self) -> Result<()> {
        let StreamingFile {
            path,
            out,
            mut dirs,
        } = self;
        let tmp = out
            .into_inner()
            .map_err(|e| Error::io(&path, e.into_error()))?;
        tmp.persist(&path).map_err(|e| Error::io(&path, e.error))?;
        // In place: its folders stay.
        dirs.0 = None;
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

/// Scenario and report names: `[a-z0-9][a-z0-9_-]{0,63}`, so a name can never
/// climb out of the report folder or surprise a shell.
pub fn validate_name(name: &str) -> std::result::Result<(), super::error::ReportError> {
    let ok_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_';
    let first_ok = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if name.is_empty() || name.len() > 64 || !first_ok || !name.chars().all(ok_char) {
        return Err(super::error::ReportError::BadName(name.to_string()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_files_that_fail_leave_no_new_folder() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a").join("size-report");
        // The second file cannot be made (its folder does not exist): the
        // first is not written and the folders made for both are gone.
        let files = [
            ("size.json".to_string(), b"{}".to_vec()),
            ("missing/size.md".to_string(), b"#".to_vec()),
        ];
        assert!(write_files(&dir, &files).is_err());
        assert!(!root.path().join("a").exists(), "no empty folder left");
        // A folder that was there stays, untouched.
        std::fs::create_dir_all(&dir).unwrap();
        assert!(write_files(&dir, &files).is_err());
        assert!(dir.exists() && std::fs::read_dir(&dir).unwrap().next().is_none());
        write_files(&dir, &files[..1]).unwrap();
        assert_eq!(std::fs::read(dir.join("size.json")).unwrap(), b"{}");
    }

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
    fn stale_folders_of_dead_runs_go_and_a_lone_old_copy_comes_back() {
        let dir = tempfile::tempdir().unwrap();
        // A pid that surely has no process: one that has just exited.
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let dead = c.id();
        c.wait().unwrap();
        // A running process's folder is its work in progress: kept.
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let live = sleeper.id();
        let mk = |n: &str| {
            let p = dir.path().join(n);
            fs::create_dir(&p).unwrap();
            fs::write(p.join("a.txt"), n).unwrap();
            p
        };
        let stale = mk(&format!(".r.staging-{dead}"));
        let old = mk(&format!(".r.old-{dead}"));
        let other = mk(&format!(".q.staging-{dead}"));
        let mine = mk(&format!(".r.staging-{live}"));
        let not_ours = mk(".r.staging-abc");
        remove_stale(dir.path(), "r");
        assert!(!stale.exists());
        assert!(!old.exists());
        assert_eq!(
            fs::read_to_string(dir.path().join("r/a.txt")).unwrap(),
            format!(".r.old-{dead}"),
            "the only copy of the previous report is put back"
        );
        assert!(other.exists() && mine.exists() && not_ours.exists());
        let _ = sleeper.kill();
        let _ = sleeper.wait();
        fs::remove_dir_all(&mine).unwrap();
        let old = mk(&format!(".r.old-{dead}"));
        write_folder(dir.path(), "r", &[("a.txt".into(), b"new".to_vec())]).unwrap();
        assert!(!old.exists(), "removed when the report is in place");
        assert_eq!(fs::read(dir.path().join("r/a.txt")).unwrap(), b"new");
    }

    #[test]
    fn a_file_where_the_report_folder_goes_is_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("r"), "mine").unwrap();
        assert!(write_folder(dir.path(), "r", &[("a.txt".into(), vec![])]).is_err());
        assert_eq!(fs::read(dir.path().join("r")).unwrap(), b"mine");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn streamed_files_get_the_reports_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.csv");
        let mut f = StreamingFile::create(&a, ".t-").unwrap();
        f.write_all(b"x").unwrap();
        f.commit().unwrap();
        let b = dir.path().join("b.csv");
        fs::write(&b, "x").unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&a), mode(&b));
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
