//! The `ratelab` binary: parse the command line, run, exit with a documented
//! code (0 ok, 1 check failed, 2 bad input or usage, 3 internal error).

use std::io::Write as _;

fn main() {
    // SIGINT, SIGTERM and SIGHUP stop a run cleanly (exec children's
    // groups killed, temporaries removed, exit 130/143/129): before any
    // other thread starts, so that every thread inherits the blocked mask.
    ratelab::report::signals::install();
    // A file-size limit (`ulimit -f`, a quota) must be an error ratelab
    // reports (EFBIG: exit 2, one line, nothing half-written left behind),
    // not a signal that kills it mid-write with the staging folder in place.
    // SAFETY: setting a signal's disposition to SIG_IGN at startup, before
    // any thread exists.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    // A panic is a bug in ratelab: say so on one line and exit 3, never 101.
    // The message is written with errors ignored: a closed stderr (`2>&1 |
    // head`) must not panic inside the hook, which would abort (SIGABRT).
    std::panic::set_hook(Box::new(|info| {
        ratelab::report::signals::wait_if_stopping();
        let location = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let payload = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let _ = writeln!(
            std::io::stderr().lock(),
            "error: internal error (a bug in ratelab; please report it with the scenario to reproduce it): {}{location}",
            payload.replace('\n', " ")
        );
        std::process::exit(3);
    }));
    let code = ratelab::main_with_args(std::env::args_os().collect());
    ratelab::report::signals::wait_if_stopping();
    std::process::exit(code);
}
