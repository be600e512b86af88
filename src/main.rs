//! The `ratelab` binary: parse the command line, run, exit with a documented
//! code (0 ok, 1 check failed, 2 bad input or usage, 3 internal error).

fn main() {
    // A panic is a bug in ratelab: say so on one line and exit 3, never 101.
    std::panic::set_hook(Box::new(|info| {
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
        eprintln!(
            "error: internal error (a bug in ratelab; please report it with the scenario to reproduce it): {}{location}",
            payload.replace('\n', " ")
        );
        std::process::exit(3);
    }));
    let code = ratelab::cli::main_with_args(std::env::args_os().collect());
    std::process::exit(code);
}
