//! A rho [`Tool`](rho_tool_core::Tool) that runs a command as a child
//! process: the boundary for code that rho cannot contain in the host's
//! process; and [`confine`], which confines such a process by the kernel.
//!
//! - [`ProcessTool`]: a program spoken to in JSON (arguments on stdin, an
//!   answer on stdout), killed whole at its deadline.
//! - [`ShellTool`]: the model's command run by `bash -c` in the
//!   workspace, confined, for a coding agent.
//! - [`ChildGroup`]: the same boundary for a child kept between calls (a
//!   worker, a server).
//! - [`confine`]: what a process may read, write and reach, and its
//!   limits, enforced by namespaces, a new root, Landlock, seccomp and
//!   rlimits; every process rho starts can take one.
//!
//! # Which boundary each kind of tool gets
//!
//! rho runs every call in its own task and ends it at its deadline or at a
//! host abort without waiting for the tool to agree. What that *stops*
//! depends on where the tool's code runs:
//!
//! | the tool | at the timeout or a host abort | what it cannot contain |
//! |---|---|---|
//! | in-process, async, yields (awaits I/O, timers) | its future is dropped at its next `.await`: it stops | `std::process::abort`, a stack overflow, a panic under `panic = "abort"`, a `Drop` panicking during a panic: each ends the **host** |
//! | in-process, never yields (busy loop, blocking call) | the call ends on time with the timeout text (on a multi-threaded executor), but the code keeps its thread busy until it returns, if ever | the same, plus the thread and whatever the code holds |
//! | [`ProcessTool`] | `SIGKILL` to the child's whole process group, which is then reaped: the child and everything it started are gone | processes that left the group on purpose (`setsid`, `setpgid`, a daemon's double fork); what the child did meanwhile (files written, requests sent); resources it uses while it runs (memory, CPU: use rlimits or cgroups in the command) |
//! | [`ProcessTool`] or [`ShellTool`], confined ([`confine`]) | the same, and its PID namespace ends: every process it started is gone, `setsid` or not | only what its confinement allows: the paths it names, its network, its limits |
//!
//! A child that aborts, overflows its stack, runs under `panic = "abort"`,
//! never yields or blocks forever only ever takes itself down: the host
//! gets an error result naming the tool and goes on.
//!
//! # The protocol
//!
//! For each call, [`ProcessTool`] starts its program with its fixed
//! arguments, in a new process group (`process_group(0)`), with three pipes:
//!
//! - **stdin**: the call's JSON arguments as one line (compact JSON and a
//!   newline), then end of file.
//! - **stdout**: the child's answer, one JSON object (whitespace around it
//!   is fine, nothing else is):
//!   - `{"text": "..."}`: success; the model reads the text;
//!   - `{"error": "..."}`: a failed call; the model reads the text as the
//!     error;
//!   - `"images": [{"mimeType": "image/png", "data": "<base64>"}, ...]`,
//!     beside `text` only: images for the model (standard base64 with
//!     padding; each must be non-empty and of an `image/*` type);
//!   - `"details": <any JSON>`, beside either: data for host screens, made
//!     plain data under the runner's limits like any tool's details.
//!
//!   Exactly one of `text` and `error`, no other fields, none twice; `null`
//!   counts as absent. Output of the wrong shape gets serde's reason and
//!   where it is: "unknown field \`txt\`, expected one of ... at line 1
//!   column 6". Answer errors with `{"error": ...}` and exit 0: the answer
//!   is read only from a child that exits with status 0.
//! - **stderr**: free text for people. It is never parsed; its last
//!   2000 bytes are quoted when the call fails.
//!
//! # How a call ends
//!
//! | what happened | the result | [`Outcome`](rho_tool_core::Outcome) |
//! |---|---|---|
//! | exit 0, `{"text": ...}` | success | `Succeeded` |
//! | exit 0, `{"error": ...}` | the child's error text | `Failed` |
//! | exit 0, output not JSON, wrong shape, or empty | error naming the tool and what was wrong, with a bounded excerpt of stdout | `Failed` |
//! | killed by a signal | error naming the tool and the signal (`SIGABRT (6)`, `SIGSEGV (11)`, ...), with the end of stderr | `Crashed` |
//! | exited with a non-zero code | error naming the tool and the code, with the end of stderr | `Failed` |
//! | wrote more than a cap to stdout or stderr | error naming the tool, the stream and the cap; the group was killed | `Failed` |
//! | could not be started (no such program, ...) | error naming the tool, the program and the reason | `Failed` |
//! | still running at the tool's timeout | rho's timeout text; the group is killed | `TimedOut` |
//! | aborted by the host | rho's abort text; the group is killed | `Aborted` |
//!
//! A child killed by a signal is a crash
//! ([`ToolOutput::crashed`](rho_tool_core::ToolOutput::crashed)): the call
//! ends `Crashed`, so a registry source counts it against the tool the way
//! it counts a panic, and a tool that keeps segfaulting is quarantined. A
//! non-zero exit or invalid output is the tool's own failure (`Failed`).
//!
//! # What is killed, and when
//!
//! The whole process group gets `SIGKILL`:
//!
//! - **at the timeout or a host abort**: rho's loop kills the call's task,
//!   and the executor drops the tool's future, promptly and on one of its
//!   own threads (the future only ever waits, so there is no `.await` to
//!   wait for); its `Drop` signals the group, which never blocks. The loop
//!   does not wait for any of this: the call has already ended with the
//!   timeout or abort text. Dropping the call's handle, or the executor
//!   going away with the task in it, drops the future just the same.
//! - **when a stream passes its cap**: the thread reading it stops reading
//!   and signals the group.
//! - **when the child itself exits**: what it left behind in its group (a
//!   background job, a grandchild holding the pipes) is killed, so it does
//!   not outlive the call.
//!
//! In every case the child is then reaped by the thread supervising it, so
//! no zombie stays. On Linux the child is waited for without being reaped
//! first (`waitid` with `WNOWAIT`), so its group id cannot be reused by an
//! unrelated process before the group is killed. Orphans that were in the
//! group are reparented and reaped by init (or the host's subreaper), as
//! the system always does.
//!
//! The waits are blocking, so each call runs on std threads (one
//! supervising the child, one writing stdin, one reading each of stdout and
//! stderr) and hands its end to the tool's future through a small one-shot
//! (a `Mutex` and a `Waker`): the tool runs unchanged on tokio, smol or any
//! executor rho runs on, and a killed child is still reaped after its
//! future is gone. This crate depends on no async runtime.
//!
//! Two things are asked of the host process. Writing the arguments to a
//! child that exits without reading them fails quietly only while the host
//! ignores `SIGPIPE`, which every Rust program does unless it opted out.
//! And the child must be the tool's to reap: a host that reaps any child
//! (`waitpid(-1)`, `SIGCHLD` set to `SIG_IGN`) takes the exit status away,
//! and the call then fails saying the status could not be read.
//!
//! # Children kept between calls
//!
//! A [`ChildGroup`] is the same boundary for a child that lives longer than
//! a call (a worker, a server spoken to over its pipes): its own process
//! group killed whole when it is dropped, reaped by a thread of its own,
//! its end seen at once, its stderr's end kept for the text that explains
//! its death.
//!
//! # Platforms
//!
//! Unix only (process groups, signals); the crate is empty elsewhere. Linux
//! is where it is tested.
//!
//! # Example
//!
//! A child written as a shell script, run through rho's
//! [`Runner`](rho_tool_core::Runner) on tokio:
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use rho::tokio::TokioExecutor;
//! use rho::process::ProcessTool;
//! use rho::{Outcome, Runner, ToolCall};
//!
//! let hello = ProcessTool::new("hello", "/bin/sh")
//!     .with_description("Greets.")
//!     .with_args(["-c", r#"cat >/dev/null; echo '{"text": "hi"}'"#])
//!     .with_env("PATH", "/usr/bin:/bin")
//!     .with_timeout(Duration::from_secs(60));
//!
//! let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
//! let runner = Runner::new(TokioExecutor::new(runtime.handle().clone()).unwrap());
//! let call = ToolCall::new("call-1", "hello", serde_json::json!({}));
//! let end = runtime.block_on(runner.start(call, Arc::new(hello)));
//! assert_eq!(end.outcome, Outcome::Succeeded);
//! assert_eq!(end.result.text(), "hi");
//! ```

#![cfg(unix)]

mod answer;
mod capture;
mod child;
pub mod confine;
mod group;
pub mod installed;
mod oneshot;
mod report;
mod shell;
mod supervise;
mod tool;

pub use child::{ChildExit, ChildGroup, Exited, GroupKiller};
pub use shell::{CommandEnd, Executed, ShellTool};
pub use tool::ProcessTool;
