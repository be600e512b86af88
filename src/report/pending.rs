//! Side outputs opened before the work and written after it: a command
//! with several output files (`check --junit X --summary-md Y`) opens a
//! temporary file beside each before it runs anything, so an unwritable
//! path fails at once (exit 2, nothing written), and each file replaces
//! its target atomically (rename) only once every one of them is written.
//!
//! # Examples
//!
//! ```
//! use ratelab::report::pending::Pending;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let a = dir.path().join("a.xml");
//! let outs = Pending::open_all(&[a.clone()]).unwrap();
//! // ... the work ...
//! Pending::commit_all(outs, &[b"<ok/>".to_vec()]).unwrap();
//! assert_eq!(std::fs::read(&a).unwrap(), b"<ok/>");
//! // A folder is not a file: refused before any work.
//! assert!(Pending::open_all(&[dir.path().to_path_buf()]).is_err());
//! ```

use crate::error::{Error, Result};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// One output file, its temporary sibling open for writing.
#[derive(Debug)]
pub struct Pending {
    target: PathBuf,
    tmp: PathBuf,
    file: Option<File>,
}

impl Pending {
    /// Opens a temporary file beside `target` (creating its folder),
    /// refusing a target that exists and is not a regular file.
    pub fn open(target: &Path) -> Result<Pending> {
        if target.as_os_str().is_empty() {
            return Err(Error::input("an output path is empty"));
        }
        if let Ok(meta) = std::fs::metadata(target)
            && !meta.is_file()
        {
            return Err(Error::input(format!(
                "{}: exists and is not a regular file (a folder?); give a file path",
                target.display()
            )));
        }
        let dir = target
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| Error::io(target, e))?;
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| Error::input(format!("{}: expected a file name", target.display())))?;
        let tmp = dir.join(format!(".{name}.pending-{}", std::process::id()));
        crate::report::signals::watch_folder(dir);
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .map_err(|e| Error::io(target, e))?;
        crate::report::signals::after_create(|| {
            let _ = std::fs::remove_file(&tmp);
        });
        Ok(Pending {
            target: target.to_path_buf(),
            tmp,
            file: Some(file),
        })
    }

    /// Opens every target, or none (the ones opened are removed).
    pub fn open_all(targets: &[PathBuf]) -> Result<Vec<Pending>> {
        targets.iter().map(|t| Pending::open(t)).collect()
    }

    /// Writes `bytes` to the temporary file (not yet in place).
    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        let f = self.file.as_mut().expect("written once");
        f.write_all(bytes)
            .and_then(|_| f.sync_all())
            .map_err(|e| Error::io(&self.target, e))?;
        self.file = None;
        Ok(())
    }

    /// Moves the written file over its target.
    fn rename(mut self) -> Result<()> {
        std::fs::rename(&self.tmp, &self.target).map_err(|e| Error::io(&self.target, e))?;
        self.tmp = PathBuf::new();
        Ok(())
    }

    /// Writes every output, then moves each into place: a write that fails
    /// leaves every target as it was.
    pub fn commit_all(outs: Vec<Pending>, contents: &[Vec<u8>]) -> Result<()> {
        let mut outs = outs;
        for (p, c) in outs.iter_mut().zip(contents) {
            p.write(c)?;
        }
        for p in outs {
            p.rename()?;
        }
        Ok(())
    }
}

/// How long [`open_input`] waits for a process to open a named pipe for
/// writing.
pub const FIFO_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Opens an input file to read. A named pipe (FIFO) is opened without
/// blocking: `open(2)` of a FIFO that no process writes to would wait for
/// ever, so the pipe is watched for a writer for at most [`FIFO_WAIT`],
/// then refused with one line naming it. Once a writer is there, reads
/// block as on any pipe (a slow producer is waited for).
///
/// # Examples
///
/// ```
/// use std::io::Read;
/// let dir = tempfile::tempdir().unwrap();
/// let f = dir.path().join("x.csv");
/// std::fs::write(&f, "t_ns,key").unwrap();
/// let mut text = String::new();
/// ratelab::report::pending::open_input(&f).unwrap().read_to_string(&mut text).unwrap();
/// assert_eq!(text, "t_ns,key");
/// ```
pub fn open_input(path: &Path) -> Result<Box<dyn std::io::Read + Send>> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo()) {
            return open_fifo(path);
        }
    }
    Ok(Box::new(File::open(path).map_err(|e| Error::io(path, e))?))
}

/// [`open_input`] of a named pipe: a non-blocking read tells a pipe
/// without a writer (end of file) from one whose writer has not written
/// yet (would block); the descriptor is made blocking once a writer is
/// seen.
#[cfg(unix)]
fn open_fifo(path: &Path) -> Result<Box<dyn std::io::Read + Send>> {
    use std::io::{ErrorKind, Read};
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::AsRawFd;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    let blocking = |f: &File| {
        let fd = f.as_raw_fd();
        // SAFETY: fcntl on a descriptor this function owns; no memory is
        // passed.
        let ok = unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) >= 0
        };
        if ok {
            Ok(())
        } else {
            Err(Error::io(path, std::io::Error::last_os_error()))
        }
    };
    let start = std::time::Instant::now();
    let mut first = [0u8; 1];
    loop {
        match f.read(&mut first) {
            Ok(1) => {
                blocking(&f)?;
                return Ok(Box::new(std::io::Cursor::new(first).chain(f)));
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                blocking(&f)?;
                return Ok(Box::new(f));
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, e)),
            // No writer yet (or one that left without writing).
            Ok(_) => {
                if start.elapsed() >= FIFO_WAIT {
                    return Err(Error::input(format!(
                        "{}: a named pipe no process wrote to within {} s: expected a file, or a pipe with a writer",
                        path.display(),
                        FIFO_WAIT.as_secs()
                    )));
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
    }
}

/// Reads at most `max` bytes of `path` (a file, a pipe or a device such as
/// `/dev/zero`): a longer input is refused with one line naming it and
/// `what` it was expected to be, instead of growing without bound.
///
/// # Examples
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let f = dir.path().join("x.json");
/// std::fs::write(&f, "12345").unwrap();
/// use ratelab::report::pending::read_bounded;
/// assert_eq!(read_bounded(&f, 5, "a file").unwrap(), b"12345");
/// assert!(read_bounded(&f, 4, "a file").unwrap_err().to_string().contains("4 bytes"));
/// ```
pub fn read_bounded(path: &Path, max: u64, what: &str) -> Result<Vec<u8>> {
    use std::io::Read;
    let f = open_input(path)?;
    let mut buf = Vec::new();
    f.take(max.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|e| Error::io(path, e))?;
    if buf.len() as u64 > max {
        return Err(Error::input(format!(
            "{}: larger than {max} bytes, the most ratelab reads for {what}",
            path.display()
        )));
    }
    Ok(buf)
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_second_output_leaves_the_first_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.txt");
        std::fs::write(&a, "old").unwrap();
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, "x").unwrap();
        // The second target's folder is a file: refused before any write.
        let e = Pending::open_all(&[a.clone(), blocker.join("b.txt")]).unwrap_err();
        assert!(e.to_string().contains("b.txt"), "{e}");
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "old");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 2, "no temporary file left");
    }
}
