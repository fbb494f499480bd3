//! The child's process group: killing all of it, and reaping its leader.
//!
//! The child is spawned as the leader of a new process group
//! (`process_group(0)`), so its pid is also the group's id, and everything
//! it starts (a shell's pipeline, a background job) is in the group unless
//! it leaves on purpose (`setsid`, `setpgid`). One `SIGKILL` to the group
//! ends them all.
//!
//! Three parties may kill: the tool's future when it is dropped (rho's kill
//! at the timeout, or a host abort), a reader whose stream passed its cap,
//! and the supervising thread when the child exits. The supervising thread
//! also reaps the child. A [`Group`] makes those safe together: a group id
//! is only signalled while its leader is unreaped, because a reaped leader's
//! pid, and so the group id, may be reused by an unrelated process.

use std::io;
use std::process::{Child, ExitStatus};
use std::sync::{Mutex, MutexGuard, PoisonError};

use rustix::process::{Pid, Signal, kill_process_group};

/// The process group of one call's child.
#[derive(Debug, Default)]
pub(crate) struct Group {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The child's pid, which is the group's id, once it was spawned.
    leader: Option<Pid>,
    /// Someone asked for the group to be killed.
    kill_requested: bool,
    /// The leader was reaped: its pid is no longer ours to signal.
    reaped: bool,
}

impl Group {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding the lock; the fields stay valid.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records the leader of the group, just spawned. If a kill was asked
    /// for before (the call was aborted while the child was being spawned),
    /// the group is killed now.
    pub(crate) fn set_leader(&self, child: &Child) {
        let mut state = self.lock();
        let leader = Pid::from_child(child);
        state.leader = Some(leader);
        if state.kill_requested {
            signal_group(leader);
        }
    }

    /// Whether a kill was asked for: the call is over, nothing is awaited.
    pub(crate) fn kill_requested(&self) -> bool {
        self.lock().kill_requested
    }

    /// Sends `SIGKILL` to every process in the group. Never blocks on the
    /// processes; idempotent; does nothing once the leader was reaped (its
    /// group is gone then, and the id may belong to someone else).
    pub(crate) fn kill(&self) {
        let mut state = self.lock();
        state.kill_requested = true;
        if let (Some(leader), false) = (state.leader, state.reaped) {
            signal_group(leader);
        }
    }

    /// Waits for the leader to exit, kills what it left behind in its group,
    /// and reaps it. Blocks: call it on the supervising thread.
    ///
    /// On Linux the leader is first waited for without being reaped
    /// (`waitid` with `WNOWAIT`): as a zombie it keeps its pid, so the group
    /// id cannot be reused before the group is killed. Elsewhere the leader
    /// is reaped first and the group killed right after; a group whose
    /// members are all gone cannot be signalled then, and a reuse of its id
    /// within that instant is the remaining (tiny) risk.
    pub(crate) fn reap(&self, child: &mut Child) -> io::Result<ExitStatus> {
        if exited_unreaped(Pid::from_child(child)) {
            let mut state = self.lock();
            if let Some(leader) = state.leader {
                signal_group(leader);
            }
            // The leader has exited: this returns at once, so holding the
            // lock (and so making a concurrent `kill` wait) is brief.
            let status = child.wait();
            state.reaped = true;
            status
        } else {
            let status = child.wait();
            let mut state = self.lock();
            if let Some(leader) = state.leader {
                signal_group(leader);
            }
            state.reaped = true;
            status
        }
    }
}

/// `SIGKILL` to the group led by `leader`. An error means there is no such
/// group left (every member is gone), which is what a kill wants anyway.
fn signal_group(leader: Pid) {
    let _gone_already = kill_process_group(leader, Signal::KILL);
}

/// Blocks until the child `pid` has exited, leaving it unreaped; `false`
/// when that could not be done (then the caller reaps without it).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn exited_unreaped(pid: Pid) -> bool {
    use rustix::io::Errno;
    use rustix::process::{WaitId, WaitIdOptions, waitid};

    loop {
        match waitid(
            WaitId::Pid(pid),
            WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
        ) {
            Ok(Some(_exited)) => return true,
            Err(Errno::INTR) => continue,
            // `Ok(None)` is only for `WNOHANG`; an error (the host ignores
            // `SIGCHLD`, so children reap themselves) leaves it to `wait`.
            Ok(None) | Err(_) => return false,
        }
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn exited_unreaped(_pid: Pid) -> bool {
    false
}
