//! The soak as CI runs it: 100,000 calls on both runtimes, with a fresh
//! seed each time (printed, so a failure can be replayed).

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Far longer than the run takes (about 15 s unoptimised, 7 s optimised).
const LIMIT: Duration = Duration::from_secs(600);

#[test]
fn a_hundred_thousand_calls_end_once_each_as_injected_with_nothing_left() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rho-soak"))
        .args(["--calls", "100000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the soak starts");
    let mut stdout = child.stdout.take().expect("its stdout");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("the soak's status") {
            break status;
        }
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            break child.wait().expect("the killed soak's status");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = reader.join().expect("the soak's output");
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    let last = output.lines().last().unwrap_or_default();
    let passed = last.starts_with("calls 100000, ends 100000, wrong 0, foreign-code-in-loop 0, ")
        && last.contains("leaked-tasks 0, rss-growth ");
    assert!(
        status.success() && passed,
        "the soak failed ({status}):\n{output}\n{stderr}"
    );
    println!("{output}");
}
