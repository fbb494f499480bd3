//! rho's demo: a scripted session of tool calls, printed live.
//!
//! Four model messages, each run as one turn of `rho-turn`: the first has
//! one call of each kind a host meets (a gate that waits about a second for
//! a person while the others run, a build that reports progress and is
//! killed at its timeout, an agent-written tool that panics with a custom
//! payload, an image, details, an agent-written tool whose answer is a
//! struct of its own, a call the gate denies); the second retries the
//! crashing tool (its source quarantines it), misspells a tool and sends
//! malformed arguments; the third tries the quarantined tool; in the fourth
//! a person presses Esc. The session keeps details of at most 120 bytes;
//! the health table of the agent's tools closes the run.
//!
//! `cargo run -p rho-demo` prints readable lines; `-- --json` prints one JSON
//! object a line; `-- --runtime smol` runs the same tools and gate on smol
//! instead of tokio.

mod print;
mod session;
mod tools;

use std::time::Instant;

use rho_exec_smol::SmolPool;
use rho_exec_tokio::TokioExecutor;

use crate::print::Printer;
use crate::session::run_session;

fn main() {
    let mut json = false;
    let mut runtime = "tokio".to_owned();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--json" => json = true,
            "--runtime" => runtime = args.next().unwrap_or_default(),
            other => fail(&format!(
                "unknown argument `{other}` (use --json, --runtime tokio|smol)"
            )),
        }
    }
    // The panics of `flaky_lint` are reported in its end lines, with where
    // they were raised; the quiet hook keeps them from being printed over
    // the demo.
    rho_untrusted::install_quiet_panic_hook();
    let mut printer = Printer::new(json, &runtime, Instant::now());

    match runtime.as_str() {
        "tokio" => {
            let tokio = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap_or_else(|error| fail(&format!("cannot start tokio: {error}")));
            let executor = TokioExecutor::new(tokio.handle().clone())
                .unwrap_or_else(|error| fail(&error.to_string()));
            run_session(executor, &|turn| tokio.block_on(turn), &mut printer);
        }
        "smol" => {
            let smol = SmolPool::new(2)
                .unwrap_or_else(|error| fail(&format!("cannot start smol: {error}")));
            run_session(smol.executor(), &|turn| smol::block_on(turn), &mut printer);
        }
        other => fail(&format!("unknown runtime `{other}` (use tokio or smol)")),
    }
}

pub(crate) fn fail(message: &str) -> ! {
    eprintln!("rho-demo: {message}");
    std::process::exit(2);
}
