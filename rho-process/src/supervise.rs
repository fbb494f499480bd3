//! Running one child: spawned in its own group, fed, read and reaped on std
//! threads, its end handed to the tool's future.
//!
//! # Why threads, not polling with the call's timer
//!
//! The waits here are blocking ones (`waitid`, `read`, `write`), and one of
//! them must go on after the tool's future is gone: when rho kills a call,
//! the future is dropped, so it can never be polled again, yet the killed
//! child must still be reaped or it stays a zombie. A future that polled
//! `try_wait` on the context's timer would have to reap in its `Drop`, which
//! would block the executor's thread. So one supervising thread per call
//! owns the child: it waits for it to exit, kills its group, reaps it, and
//! sends the result through a one-shot ([`crate::oneshot`]) whose receiver
//! needs no runtime. The tool's future only awaits that receiver and, if it
//! is dropped first, kills the group (a signal, which never blocks); the
//! thread then reaps the child as usual. Nothing here polls on a timer, and
//! an answer reaches the tool the moment the child's streams close.
//!
//! Per call: the supervising thread, one thread writing the arguments to
//! stdin, and one reading each of stdout and stderr (a single thread could
//! not read two pipes and write a third without `poll`, and a child that
//! writes a full stderr pipe before reading its stdin would deadlock it).

use std::future::Future;
use std::io::{self, Read, Write};
use std::os::unix::process::CommandExt;
use std::pin::Pin;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::thread::{self, JoinHandle};

use crate::capture::{Captured, read_capped};
use crate::group::Group;
use crate::oneshot;

/// The most bytes read from each output stream.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caps {
    pub(crate) stdout: usize,
    pub(crate) stderr: usize,
}

/// How a child's run ended, as the supervising thread saw it.
#[derive(Debug)]
pub(crate) enum Finished {
    /// The child could not be spawned.
    NotStarted(io::Error),
    /// The child ran, and it and its group are gone.
    Ran(Ran),
}

/// A child that ran, was reaped and whose group was killed.
#[derive(Debug)]
pub(crate) struct Ran {
    /// How the child itself ended.
    pub(crate) status: io::Result<ExitStatus>,
    /// Its stdout, up to the cap.
    pub(crate) stdout: Captured,
    /// Its stderr, up to the cap.
    pub(crate) stderr: Captured,
    /// A thread the run needed could not be started (the group was killed).
    pub(crate) no_thread: Option<io::Error>,
}

/// Starts `command` with `input` on its stdin, in a new process group, on
/// a supervising thread. Await the returned [`Running`] for its end; drop it
/// to kill the group.
///
/// # Errors
///
/// The supervising thread could not be started; nothing was spawned then.
pub(crate) fn start(mut command: Command, input: Vec<u8>, caps: Caps) -> io::Result<Running> {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let group = Arc::new(Group::default());
    let (sender, receiver) = oneshot::channel();
    let supervised = group.clone();
    thread::Builder::new()
        .name("rho-process".to_owned())
        .spawn(move || sender.send(supervise(command, input, caps, &supervised)))?;
    Ok(Running {
        group,
        finished: receiver,
        done: false,
    })
}

/// The supervising thread's work: spawn, feed, read, wait, kill, reap.
fn supervise(mut command: Command, input: Vec<u8>, caps: Caps, group: &Arc<Group>) -> Finished {
    if group.kill_requested() {
        // Aborted before it began; no one awaits this.
        return Finished::NotStarted(io::Error::other(
            "the call ended before the process started",
        ));
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => return Finished::NotStarted(error),
    };
    group.set_leader(&child);
    let mut no_thread = None;

    if let Some(mut stdin) = child.stdin.take() {
        // Not joined: it ends when the input is written or when the pipe
        // closes (the child exits or is killed). A child that exits without
        // reading its input is no error of ours (Rust programs ignore
        // `SIGPIPE`, so the write fails instead).
        let written = spawn_named("rho-process-stdin", move || {
            let _closed_early = stdin.write_all(&input);
        });
        if let Err(error) = written {
            group.kill();
            no_thread = Some(error);
        }
    }
    let stdout = child
        .stdout
        .take()
        .map(|pipe| start_reader("rho-process-stdout", pipe, caps.stdout, group));
    let stderr = child
        .stderr
        .take()
        .map(|pipe| start_reader("rho-process-stderr", pipe, caps.stderr, group));

    // The child exits (by itself, or killed by a reader at its cap or by
    // the dropped future); what it left in its group is killed, and it is
    // reaped. Then the pipes close, unless a process that left the group
    // holds them.
    let status = group.reap(&mut child);
    let mut finish = |reader: Option<Result<JoinHandle<Captured>, io::Error>>| match reader {
        None => Captured::default(),
        Some(Ok(handle)) => handle.join().unwrap_or_else(|_panicked| Captured {
            error: Some(io::Error::other("the reading thread panicked")),
            ..Captured::default()
        }),
        Some(Err(error)) => {
            no_thread.get_or_insert(error);
            Captured::default()
        }
    };
    let stdout = finish(stdout);
    let stderr = finish(stderr);
    Finished::Ran(Ran {
        status,
        stdout,
        stderr,
        no_thread,
    })
}

/// Reads `pipe` up to `cap` on its own thread; past the cap the group is
/// killed. If the thread cannot start, the group is killed at once.
fn start_reader(
    name: &str,
    pipe: impl Read + Send + 'static,
    cap: usize,
    group: &Arc<Group>,
) -> io::Result<JoinHandle<Captured>> {
    let reader_group = group.clone();
    let started = spawn_named(name, move || read_capped(pipe, cap, || reader_group.kill()));
    if started.is_err() {
        group.kill();
    }
    started
}

fn spawn_named<T: Send + 'static>(
    name: &str,
    work: impl FnOnce() -> T + Send + 'static,
) -> io::Result<JoinHandle<T>> {
    thread::Builder::new().name(name.to_owned()).spawn(work)
}

/// A child in flight, seen from the tool's future.
///
/// Resolves to the child's end (`None` if the supervising thread died
/// without one). Dropping it before then kills the child's whole group;
/// the supervising thread still reaps the child.
pub(crate) struct Running {
    group: Arc<Group>,
    finished: oneshot::Receiver<Finished>,
    done: bool,
}

impl Future for Running {
    type Output = Option<Finished>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Finished>> {
        let finished = ready!(Pin::new(&mut self.finished).poll(cx));
        self.done = true;
        if finished.is_none() {
            // The supervising thread died (it never should): no one is left
            // to kill the group at the child's exit, so kill it now.
            self.group.kill();
        }
        Poll::Ready(finished)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.done {
            self.group.kill();
        }
    }
}
