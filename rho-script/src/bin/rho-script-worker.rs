//! The worker process of a rho-script pool in the worker-process mode:
//! serves jobs on stdin and stdout until stdin ends. Started by the pool
//! (`Isolation::WorkerProcesses`), not by hand.

#[cfg(unix)]
fn main() -> std::process::ExitCode {
    rho_script::worker::serve()
}

#[cfg(not(unix))]
fn main() -> std::process::ExitCode {
    eprintln!("rho-script-worker runs on Unix only");
    std::process::ExitCode::FAILURE
}
