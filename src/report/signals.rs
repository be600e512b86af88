//! Interruption: SIGINT (Ctrl-C), SIGTERM and SIGHUP stop a run cleanly,
//! and what a killed run (SIGKILL, a power cut) left behind is swept by the
//! next run in the same folder.
//!
//! **Why a thread and not a handler.** Cleaning up means taking locks,
//! listing folders and removing files, none of which is allowed in a signal
//! handler. [`install`] blocks the three signals in the main thread before
//! any other thread exists (so every thread inherits the mask) and starts
//! one thread that waits for them with `sigwait`; when one arrives, that
//! ordinary thread:
//!
//! 1. sets the [`stopping`] flag (a temporary created from then on is
//!    removed by its creator, which then waits for the exit);
//! 2. kills the process group of every running `exec` child (each runs in
//!    a group of its own, so a grandchild it started dies with it, as
//!    protocol.md promises);
//! 3. removes this process's temporaries in every folder it wrote to:
//!    `.ratelab-<kind>-<pid>-*` files (decisions, exports, replays, reports
//!    written atomically), `.<name>.pending-<pid>` side outputs and
//!    `.<name>.staging-<pid>` folders (an `.<name>.old-<pid>` folder is put
//!    back when it holds the only copy of the report);
//! 4. says so on one line and exits 128 + the signal: 130 (SIGINT), 143
//!    (SIGTERM), 129 (SIGHUP), as shells report a process the signal
//!    killed.
//!
//! Children are started with an empty signal mask (the standard library
//! resets it in the child), so blocking the signals here does not leak
//! into them.
//!
//! **Killed runs.** Every temporary's name carries its process id;
//! [`sweep_stale`] removes those whose process is gone, and runs wherever
//! ratelab is about to write.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Set once a stop signal arrived: work in flight is abandoned.
static STOPPING: AtomicBool = AtomicBool::new(false);

/// Folders this process writes temporaries in, and the process groups of
/// its running `exec` children.
static STATE: Mutex<State> = Mutex::new(State {
    folders: Vec::new(),
    groups: Vec::new(),
});

struct State {
    folders: Vec<PathBuf>,
    groups: Vec<i32>,
}

fn state() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

/// The signals that stop a run.
const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Whether a stop signal arrived (then the process is about to exit).
pub fn stopping() -> bool {
    STOPPING.load(Ordering::SeqCst)
}

/// Blocks SIGINT, SIGTERM and SIGHUP and starts the thread that handles
/// them. Call first thing in `main`, before any other thread is started
/// (a thread started earlier would keep the signals unblocked and die of
/// them instead).
pub fn install() {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset; the mask
    // is set for the calling (only) thread.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in SIGNALS {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    };
    let spawned = std::thread::Builder::new()
        .name("ratelab-signals".into())
        .spawn(move || loop {
            let mut sig: libc::c_int = 0;
            // SAFETY: `set` is a valid, initialised signal set; `sig` is ours.
            let r = unsafe { libc::sigwait(&set, &mut sig) };
            if r == 0 && SIGNALS.contains(&sig) {
                stop(sig);
            }
        });
    if spawned.is_err() {
        // No handler thread: let the signals kill the process as before.
        // SAFETY: as above.
        unsafe {
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        }
    }
}

/// What a stop signal does: stop children, remove temporaries, exit.
fn stop(sig: libc::c_int) -> ! {
    STOPPING.store(true, Ordering::SeqCst);
    let (groups, folders) = {
        let s = state();
        (s.groups.clone(), s.folders.clone())
    };
    for g in &groups {
        kill_group(*g);
    }
    let me = std::process::id();
    for f in &folders {
        crate::report::atomic::sweep(f, Some(me));
    }
    let name = match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "SIGHUP",
    };
    let _ = std::io::Write::write_all(
        &mut std::io::stderr().lock(),
        format!(
            "ratelab: stopped by {name}: {} exec child process group(s) killed, temporary files removed; nothing was written\n",
            groups.len()
        )
        .as_bytes(),
    );
    // SAFETY: ends the process at once; nothing else may run after the
    // cleanup (a worker would otherwise go on creating files).
    unsafe { libc::_exit(128 + sig) }
}

fn kill_group(pgid: i32) {
    if pgid > 0 {
        // SAFETY: a plain signal to a group this process created and has
        // not reaped the leader of (see `child_started`).
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

/// Records a running child's process group: a stop signal kills it. Call
/// right after the spawn; call [`child_reaped`] before waiting for it.
pub fn child_started(pgid: i32) {
    let mut s = state();
    if stopping() {
        drop(s);
        kill_group(pgid);
        park_forever();
    }
    s.groups.push(pgid);
}

/// Forgets a child's process group, before its leader is reaped (after
/// which the id may be reused).
pub fn child_reaped(pgid: i32) {
    state().groups.retain(|g| *g != pgid);
}

/// Records that this process makes temporaries in `folder` (a stop signal
/// removes them), and sweeps the temporaries killed runs left there.
pub fn watch_folder(folder: &Path) {
    let f = if folder.as_os_str().is_empty() {
        Path::new(".")
    } else {
        folder
    };
    sweep_stale(f);
    let mut s = state();
    if !s.folders.iter().any(|x| x == f) {
        s.folders.push(f.to_path_buf());
    }
}

/// Called right after a temporary was created: when a stop signal arrived
/// meanwhile (its sweep may have missed the new file), `remove` removes it
/// and the thread waits for the exit.
pub fn after_create(remove: impl FnOnce()) {
    if stopping() {
        remove();
        park_forever();
    }
}

/// Waits for the exit when a stop signal arrived: the cleanup thread ends
/// the process with 128 + the signal. Called where the process would end
/// on its own (an error, a panic, success), so that a failure the cleanup
/// itself causes (an exec child killed under a waiting run) is neither
/// reported nor the exit code.
pub fn wait_if_stopping() {
    if stopping() {
        park_forever();
    }
}

fn park_forever() -> ! {
    loop {
        std::thread::park();
    }
}

/// Removes the temporaries in `folder` whose process is gone (a run killed
/// by SIGKILL or a crash): ratelab's own names only, never a live run's.
pub fn sweep_stale(folder: &Path) {
    crate::report::atomic::sweep(folder, None);
}

/// The process id a ratelab temporary's name carries, if `name` is one:
/// `.ratelab-[kind-]<pid>-<random>`, `.<name>.pending-<pid>`,
/// `.<name>.staging-<pid>` or `.<name>.old-<pid>`.
///
/// # Examples
///
/// ```
/// use ratelab::report::signals::{temp_owner, Temp};
/// assert_eq!(temp_owner(".ratelab-decisions-42-a1B2c3"), Some((Temp::File, 42)));
/// assert_eq!(temp_owner(".ratelab-42-a1B2c3"), Some((Temp::File, 42)));
/// assert_eq!(temp_owner(".report.csv.pending-7"), Some((Temp::File, 7)));
/// assert_eq!(temp_owner(".r.staging-9"), Some((Temp::Staging, 9)));
/// assert_eq!(temp_owner(".r.old-9"), Some((Temp::Old, 9)));
/// assert_eq!(temp_owner("notes.txt"), None);
/// assert_eq!(temp_owner(".ratelab-decisions-a1B2c3"), None);
/// ```
pub fn temp_owner(name: &str) -> Option<(Temp, u32)> {
    let digits = |s: &str| -> Option<u32> {
        if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
            s.parse().ok()
        } else {
            None
        }
    };
    if let Some(rest) = name.strip_prefix(".ratelab-") {
        // An optional kind (letters), then the pid, then tempfile's suffix.
        let rest = match rest.split_once('-') {
            Some((kind, r)) if !kind.is_empty() && kind.bytes().all(|b| b.is_ascii_lowercase()) => {
                r
            }
            _ => rest,
        };
        let (pid, random) = rest.split_once('-')?;
        if random.is_empty() {
            return None;
        }
        return digits(pid).map(|p| (Temp::File, p));
    }
    let rest = name.strip_prefix('.')?;
    let (head, pid) = rest.rsplit_once('-')?;
    let pid = digits(pid)?;
    if head.ends_with(".pending") && head.len() > ".pending".len() {
        Some((Temp::File, pid))
    } else if head.ends_with(".staging") && head.len() > ".staging".len() {
        Some((Temp::Staging, pid))
    } else if head.ends_with(".old") && head.len() > ".old".len() {
        Some((Temp::Old, pid))
    } else {
        None
    }
}

/// What kind of temporary a name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Temp {
    /// A file written before it is renamed into place.
    File,
    /// A report folder being built.
    Staging,
    /// The previous report folder, moved aside while the new one goes in.
    Old,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_without_a_pid_are_never_ours() {
        assert_eq!(temp_owner(".ratelab-"), None);
        assert_eq!(temp_owner(".ratelab-12-"), None);
        assert_eq!(temp_owner(".staging-12"), None);
        assert_eq!(temp_owner(".r.staging-"), None);
        assert_eq!(temp_owner(".r.staging-abc"), None);
        assert_eq!(temp_owner("r.staging-12"), None);
        assert_eq!(
            temp_owner(".ratelab-export-123-XyZ"),
            Some((Temp::File, 123))
        );
    }
}
