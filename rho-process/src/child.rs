//! [`ChildGroup`]: a long-lived child process that leads a process group of
//! its own, talked to over its stdin and stdout, killed whole when it is
//! dropped.
//!
//! [`ProcessTool`](crate::ProcessTool) starts a child per call. Some
//! children are worth keeping between calls: a worker that runs scripts
//! for a pool, a server spoken to over a protocol. They need the same
//! guarantees over a longer life: everything the child starts dies with
//! it, it is reaped (no zombie), its exit is seen at once by whoever waits
//! for it, and its stderr is kept, bounded, for the text that explains
//! its death. The stdin and stdout pipes are the owner's to use.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::io::{self, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::pin::Pin;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use crate::group::Group;
use crate::report::signal_text;

impl ChildGroup {
    /// How much of the end of a child's stderr a [`ChildGroup`] keeps by
    /// default: 16 KiB.
    pub const DEFAULT_STDERR_TAIL: usize = 16 << 10;
}

/// A child process in a process group of its own, with piped stdin and
/// stdout, reaped by a thread of its own.
///
/// - **Killed whole.** [`kill`](ChildGroup::kill), a [`GroupKiller`] or
///   the drop of the `ChildGroup` sends `SIGKILL` to the whole group:
///   the child and whatever it started, unless they left the group on
///   purpose. When the child exits by itself, what it left in its group
///   is killed too.
/// - **Reaped.** A thread waits for the child and reaps it, so no zombie
///   stays, whether or not anyone asks how it ended.
/// - **Its end is seen at once**: [`wait_timeout`](ChildGroup::wait_timeout)
///   blocks for it, [`exited`](ChildGroup::exited) is a future of it (on
///   any executor), [`status`](ChildGroup::status) reads it.
/// - **Its stderr is kept, bounded**: the last
///   [`ChildGroup::DEFAULT_STDERR_TAIL`] bytes (or what
///   [`spawn_with_stderr_tail`](ChildGroup::spawn_with_stderr_tail) says),
///   read by a thread so the child never blocks on a full pipe.
///
/// A child that must die when the host dies should end when its stdin
/// closes (the host's end closes when the host exits, however it exits):
/// nothing else here can kill a group after the host is gone.
///
/// ```
/// use std::io::{BufRead, BufReader, Write};
/// use std::process::Command;
/// use std::time::Duration;
/// use rho::process::ChildGroup;
///
/// let mut command = Command::new("/bin/sh");
/// command.args(["-c", "while read line; do echo \"got $line\"; done"]);
/// let mut child = ChildGroup::spawn(command)?;
/// let mut stdin = child.take_stdin().expect("piped");
/// let mut stdout = BufReader::new(child.take_stdout().expect("piped"));
/// writeln!(stdin, "hello")?;
/// let mut line = String::new();
/// stdout.read_line(&mut line)?;
/// assert_eq!(line, "got hello\n");
///
/// child.kill();
/// let end = child.wait_timeout(Duration::from_secs(10)).expect("killed and reaped");
/// assert_eq!(end.to_string(), "was killed by signal SIGKILL (9)");
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct ChildGroup {
    group: Arc<Group>,
    pid: u32,
    stdin: Option<ChildStdin>,
    stdout: Option<ChildStdout>,
    watch: Arc<Watch>,
}

/// What the reaping and stderr threads share with the owner.
#[derive(Default)]
struct Watch {
    state: Mutex<WatchState>,
    changed: Condvar,
}

#[derive(Default)]
struct WatchState {
    exit: Option<ChildExit>,
    stderr: VecDeque<u8>,
    /// The child's stderr was read to its end (or cannot be read).
    stderr_ended: bool,
    wakers: Vec<Waker>,
}

impl Watch {
    fn lock(&self) -> MutexGuard<'_, WatchState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The state once `done` holds of it, or once `timeout` has passed
    /// (a timeout too long to add to now waits for `done` alone).
    fn wait_until(
        &self,
        timeout: Duration,
        done: impl Fn(&WatchState) -> bool,
    ) -> MutexGuard<'_, WatchState> {
        let deadline = Instant::now().checked_add(timeout);
        let mut state = self.lock();
        while !done(&state) {
            let left = match deadline {
                Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                    Some(left) => left,
                    None => break,
                },
                None => Duration::from_secs(3600),
            };
            state = self
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        state
    }

    fn exited(&self, exit: ChildExit) {
        let wakers = {
            let mut state = self.lock();
            state.exit = Some(exit);
            std::mem::take(&mut state.wakers)
        };
        self.changed.notify_all();
        for waker in wakers {
            waker.wake();
        }
    }
}

impl ChildGroup {
    /// Starts `command` as the leader of a new process group, with its
    /// stdin and stdout piped to the caller and its stderr kept (the last
    /// [`ChildGroup::DEFAULT_STDERR_TAIL`] bytes).
    ///
    /// # Errors
    ///
    /// The child could not be spawned, or a thread to reap it could not
    /// be started (the child is then killed and reaped before this
    /// returns).
    pub fn spawn(command: Command) -> io::Result<Self> {
        Self::spawn_with_stderr_tail(command, ChildGroup::DEFAULT_STDERR_TAIL)
    }

    /// As [`spawn`](ChildGroup::spawn), keeping the last `tail` bytes of
    /// the child's stderr.
    ///
    /// # Errors
    ///
    /// As [`spawn`](ChildGroup::spawn).
    pub fn spawn_with_stderr_tail(command: Command, tail: usize) -> io::Result<Self> {
        Self::spawn_with_stderr(command, tail, None)
    }

    /// As [`spawn_with_stderr_tail`](ChildGroup::spawn_with_stderr_tail),
    /// also copying every byte of the child's stderr to `copy` as it comes
    /// (say, this process's own stderr, for a server whose logs its user
    /// reads). A `copy` that fails is given up on; the tail is still kept.
    ///
    /// # Errors
    ///
    /// As [`spawn`](ChildGroup::spawn).
    pub fn spawn_with_stderr(
        mut command: Command,
        tail: usize,
        copy: Option<Box<dyn io::Write + Send>>,
    ) -> io::Result<Self> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = command.spawn()?;
        let group = Arc::new(Group::default());
        group.set_leader(&child);
        let pid = child.id();
        let watch = Arc::new(Watch::default());
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        if let Some(stderr) = child.stderr.take() {
            let kept = Arc::clone(&watch);
            // Without this thread a chatty child would block on a full
            // pipe: then kill it rather than let it hang.
            let started = thread::Builder::new()
                .name("rho-process-stderr".to_owned())
                .spawn(move || {
                    keep_tail(stderr, tail, &kept, copy);
                    kept.lock().stderr_ended = true;
                    kept.changed.notify_all();
                });
            if let Err(error) = started {
                return Err(give_up(&group, child, error));
            }
        } else {
            watch.lock().stderr_ended = true;
        }
        let reaped = Arc::clone(&watch);
        let reaper = Arc::clone(&group);
        // The child moves into the closure only if the thread starts; the
        // `Option` hands it back otherwise, so it is never left unreaped.
        let held = Arc::new(Mutex::new(Some(child)));
        let taken = Arc::clone(&held);
        let started = thread::Builder::new()
            .name("rho-process-reaper".to_owned())
            .spawn(move || {
                let child = taken.lock().unwrap_or_else(PoisonError::into_inner).take();
                if let Some(mut child) = child {
                    let status = reaper.reap(&mut child);
                    reaped.exited(ChildExit {
                        status: status.map_err(|error| error.to_string()),
                    });
                }
            });
        if let Err(error) = started {
            let child = held.lock().unwrap_or_else(PoisonError::into_inner).take();
            if let Some(child) = child {
                return Err(give_up(&group, child, error));
            }
        }
        Ok(Self {
            group,
            pid,
            stdin,
            stdout,
            watch,
        })
    }

    /// The child's process id, which is also its group's id.
    pub fn id(&self) -> u32 {
        self.pid
    }

    /// Takes the child's stdin (the first time; `None` after). Dropping it
    /// closes the pipe, which a well-behaved child reads as "end now".
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.stdin.take()
    }

    /// Takes the child's stdout (the first time; `None` after). It reads
    /// end of file once the child and everything holding the pipe are
    /// gone.
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.stdout.take()
    }

    /// Sends `SIGKILL` to the child's whole group. Never blocks;
    /// idempotent; does nothing once the child was reaped.
    pub fn kill(&self) {
        self.group.kill();
    }

    /// A handle that kills the group from anywhere (another thread, a
    /// reader that saw garbage), even after the `ChildGroup` is gone.
    pub fn killer(&self) -> GroupKiller {
        GroupKiller {
            group: Arc::clone(&self.group),
        }
    }

    /// How the child ended, once it was reaped; `None` while it runs.
    pub fn status(&self) -> Option<ChildExit> {
        self.watch.lock().exit.clone()
    }

    /// Blocks until the child was reaped, for at most `timeout`; `None` if
    /// it still runs then.
    pub fn wait_timeout(&self, timeout: Duration) -> Option<ChildExit> {
        self.watch
            .wait_until(timeout, |state| state.exit.is_some())
            .exit
            .clone()
    }

    /// A future of how the child ends, on any executor. It does not kill
    /// the child; it only waits.
    pub fn exited(&self) -> Exited {
        Exited {
            watch: Arc::clone(&self.watch),
        }
    }

    /// The end of the child's stderr kept so far, as text (bytes that are
    /// not UTF-8 replaced), at most the tail's size.
    pub fn stderr_tail(&self) -> String {
        tail_text(&self.watch.lock())
    }

    /// [`stderr_tail`](Self::stderr_tail) once the child's stderr was read
    /// to its end, or after `timeout`, whichever comes first. Its reader
    /// may finish after the child was reaped: this is the text for a child
    /// known to be dead, whose last words (an abort's message) are
    /// otherwise easily missed.
    pub fn stderr_tail_at_end(&self, timeout: Duration) -> String {
        tail_text(&self.watch.wait_until(timeout, |state| state.stderr_ended))
    }
}

/// The kept end of a child's stderr as text.
fn tail_text(state: &WatchState) -> String {
    let (front, back) = state.stderr.as_slices();
    let mut bytes = Vec::with_capacity(front.len() + back.len());
    bytes.extend_from_slice(front);
    bytes.extend_from_slice(back);
    String::from_utf8_lossy(&bytes).into_owned()
}

impl Drop for ChildGroup {
    fn drop(&mut self) {
        self.group.kill();
    }
}

impl fmt::Debug for ChildGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildGroup")
            .field("pid", &self.pid)
            .field("exit", &self.watch.lock().exit)
            .finish_non_exhaustive()
    }
}

/// Kills a spawned child that cannot be watched, reaps it, and gives the
/// error back.
fn give_up(group: &Group, mut child: Child, error: io::Error) -> io::Error {
    group.kill();
    let _reaped = group.reap(&mut child);
    error
}

/// Reads `stderr` to its end, keeping the last `tail` bytes, and copying
/// all of it to `copy` while that works.
fn keep_tail(
    mut stderr: impl Read,
    tail: usize,
    watch: &Watch,
    mut copy: Option<Box<dyn io::Write + Send>>,
) {
    let mut buffer = vec![0u8; 8192];
    loop {
        match stderr.read(&mut buffer) {
            Ok(0) => return,
            Ok(read) => {
                if let Some(out) = &mut copy
                    && out
                        .write_all(&buffer[..read])
                        .and_then(|()| out.flush())
                        .is_err()
                {
                    copy = None;
                }
                let mut state = watch.lock();
                let kept = &mut state.stderr;
                let new = &buffer[read.saturating_sub(tail)..read];
                let overflow = (kept.len() + new.len()).saturating_sub(tail);
                kept.drain(..overflow.min(kept.len()));
                kept.extend(new);
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// Kills a [`ChildGroup`]'s whole group; cheap to clone, `Send` and `Sync`.
#[derive(Clone)]
pub struct GroupKiller {
    group: Arc<Group>,
}

impl GroupKiller {
    /// Sends `SIGKILL` to the group. Never blocks; idempotent; does
    /// nothing once the child was reaped.
    pub fn kill(&self) {
        self.group.kill();
    }
}

impl fmt::Debug for GroupKiller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupKiller").finish_non_exhaustive()
    }
}

/// How a [`ChildGroup`]'s child ended. Its `Display` reads as the end of a
/// sentence about the child: "exited with code 3", "was killed by signal
/// SIGABRT (6) (core dumped)".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildExit {
    status: Result<ExitStatus, String>,
}

impl ChildExit {
    /// The exit status, or why it could not be read (the host reaps
    /// children itself, say).
    pub fn status(&self) -> Result<ExitStatus, &str> {
        self.status.as_ref().copied().map_err(String::as_str)
    }

    /// Whether a signal ended it: a crash, or a kill.
    pub fn signal(&self) -> Option<i32> {
        self.status.as_ref().ok().and_then(ExitStatusExt::signal)
    }
}

impl fmt::Display for ChildExit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.status {
            Err(error) => write!(f, "ended, but its exit status could not be read ({error})"),
            Ok(status) => match (status.code(), status.signal()) {
                (Some(code), _) => write!(f, "exited with code {code}"),
                (None, Some(signal)) => {
                    write!(f, "was killed by signal {}", signal_text(signal))?;
                    if status.core_dumped() {
                        f.write_str(" (core dumped)")?;
                    }
                    Ok(())
                }
                (None, None) => write!(f, "ended abnormally ({status})"),
            },
        }
    }
}

/// The future of a [`ChildGroup`]'s end ([`ChildGroup::exited`]).
#[must_use = "a future does nothing unless awaited"]
pub struct Exited {
    watch: Arc<Watch>,
}

impl Future for Exited {
    type Output = ChildExit;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<ChildExit> {
        let mut state = self.watch.lock();
        if let Some(exit) = &state.exit {
            return Poll::Ready(exit.clone());
        }
        if !state.wakers.iter().any(|waker| waker.will_wake(cx.waker())) {
            state.wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

impl fmt::Debug for Exited {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Exited").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn sh(script: &str) -> Command {
        let mut command = Command::new("/bin/sh");
        command.args(["-c", script]);
        command
    }

    #[test]
    fn a_child_that_exits_is_reaped_and_its_code_read() {
        let child = ChildGroup::spawn(sh("exit 3")).expect("spawned");
        let end = child.wait_timeout(Duration::from_secs(30)).expect("exited");
        assert_eq!(end.to_string(), "exited with code 3");
        assert_eq!(end.signal(), None);
    }

    #[test]
    fn a_crash_reads_as_its_signal() {
        let child = ChildGroup::spawn(sh("kill -ABRT $$")).expect("spawned");
        let end = child.wait_timeout(Duration::from_secs(30)).expect("exited");
        assert!(
            end.to_string()
                .starts_with("was killed by signal SIGABRT (6)"),
            "{end}"
        );
    }

    #[test]
    fn the_stderr_tail_at_its_end_has_the_last_words_of_a_dead_child() {
        let child = ChildGroup::spawn(sh("echo 'last words' >&2; kill -ABRT $$")).expect("spawned");
        child.wait_timeout(Duration::from_secs(30)).expect("exited");
        // No polling: it waits for the stderr thread to read to the end.
        assert_eq!(
            child.stderr_tail_at_end(Duration::from_secs(30)),
            "last words\n"
        );
    }

    #[test]
    fn the_stderr_tail_keeps_only_the_last_bytes() {
        let child = ChildGroup::spawn_with_stderr_tail(
            sh("i=0; while [ $i -lt 500 ]; do echo \"line $i\" >&2; i=$((i+1)); done"),
            64,
        )
        .expect("spawned");
        child.wait_timeout(Duration::from_secs(30)).expect("exited");
        // The stderr thread may finish just after the reaper.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !child.stderr_tail().ends_with("line 499\n") {
            assert!(Instant::now() < deadline, "{:?}", child.stderr_tail());
            thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(child.stderr_tail().len(), 64);
    }

    #[test]
    fn dropping_it_kills_what_the_child_started() {
        let mut child = ChildGroup::spawn(sh("sleep 300 & echo $!; wait")).expect("spawned");
        let mut stdout = child.take_stdout().expect("piped");
        let mut line = String::new();
        let mut byte = [0u8; 1];
        while stdout.read(&mut byte).expect("read") == 1 && byte[0] != b'\n' {
            line.push(char::from(byte[0]));
        }
        let grandchild: i32 = line.trim().parse().expect("a pid");
        let exited = child.exited();
        drop(child);
        let end = block_on(exited);
        assert!(end.to_string().contains("SIGKILL"), "{end}");
        // The grandchild was in the group: it is gone (or a zombie of
        // init's for an instant).
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::path::Path::new(&format!("/proc/{grandchild}/cmdline")).exists()
            && std::fs::read(format!("/proc/{grandchild}/cmdline")).is_ok_and(|c| !c.is_empty())
        {
            assert!(
                Instant::now() < deadline,
                "the grandchild outlived its group"
            );
            thread::sleep(Duration::from_millis(5));
        }
        let _ = std::io::stdout().flush();
    }

    /// Polls a future to its end on this thread, parking between polls.
    fn block_on<F: Future>(future: F) -> F::Output {
        struct Unpark(thread::Thread);
        impl std::task::Wake for Unpark {
            fn wake(self: Arc<Self>) {
                self.0.unpark();
            }
        }
        let waker = Waker::from(Arc::new(Unpark(thread::current())));
        let mut cx = Context::from_waker(&waker);
        let mut future = std::pin::pin!(future);
        loop {
            if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
                return output;
            }
            thread::park_timeout(Duration::from_millis(100));
        }
    }
}
