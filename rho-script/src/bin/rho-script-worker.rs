//! The worker process of a rho-script pool in the worker-process mode:
//! serves jobs on stdin and stdout until stdin ends. Started by the pool
//! (`Isolation::WorkerProcesses`), not by hand.

/// The worker program's command line: no arguments; `--help` and
/// `--version` for a person who runs it by hand (the pool never passes
/// them: stdout is the pool's once the worker serves).
#[cfg(unix)]
#[derive(clap::Parser)]
#[command(
    version,
    about = "Serves a rho-script pool's jobs on stdin and stdout, until stdin ends."
)]
struct Worker {}

#[cfg(unix)]
fn main() -> std::process::ExitCode {
    use clap::Parser as _;
    // The worker program is also its own confinement launcher: the pool
    // starts it through itself (`rho_process::confine`).
    rho_process::confine::serve_if_launcher();
    // A command line that is not the worker's ends here, with clap's
    // message on stderr and its exit code, before anything is served.
    let Worker {} = Worker::parse();
    rho_script::worker::serve()
}

#[cfg(not(unix))]
fn main() -> std::process::ExitCode {
    eprintln!("rho-script-worker runs on Unix only");
    std::process::ExitCode::FAILURE
}
