//! The launcher's side: the program that confines itself, then runs the
//! command. Linux only.
//!
//! The host starts the launcher (its own executable, or `rho-confine`)
//! with a [`Plan`] and the command. Three processes follow, each with one
//! job:
//!
//! 1. **outer** ([`outer`]), in the host's namespaces: unshares a user,
//!    PID, mount, IPC, UTS (and, unless the network is full, network)
//!    namespace, maps its own user and group to root inside, and forks
//!    init. It waits for init's report of how the command ended and ends
//!    the same way (the same exit code, or killed by the same signal), so
//!    the host reads the command's end from the launcher's.
//! 2. **init** ([`init`]), PID 1 of the new PID namespace, root of the new
//!    user namespace: builds the new root ([`root`]), brings the loopback
//!    up ([`net`]), sets the limits ([`limits`]), drops every capability,
//!    restricts itself by Landlock and seccomp ([`filter`]), starts the
//!    command, reaps every process, and when the command ends reports how
//!    and exits. When PID 1 exits the kernel kills every process left in
//!    the namespace, wherever it went: `setsid`, double forks, daemons.
//!    When outer dies (the host killed it at the deadline) init gets
//!    `SIGKILL` (`PR_SET_PDEATHSIG`), so the same happens.
//! 3. the command, PID 2, confined by everything init set (which its
//!    children inherit and cannot undo).
//!
//! A step that fails says which it was, about what and by which errno
//! ([`error`]); init reports it to outer, and outer to the host by its
//! exit code and a line on stderr.
//!
//! Why processes and not `pre_exec`: `unshare(CLONE_NEWUSER)` refuses a
//! process with more than one thread, which every host is, and a
//! `pre_exec` closure in a threaded host may only make async-signal-safe
//! calls, which building a confinement is not. The launcher has one
//! thread, so its own fork of init is sound ([`sys`]).

mod error;
pub(crate) mod filter;
mod init;
mod limits;
mod net;
mod outer;
mod proxy;
pub(crate) mod root;
mod sys;
mod writes;

use std::ffi::OsString;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::policy::Confinement;

use error::{LaunchError, Step, failed, failed_at};
pub(crate) use outer::probe_support;

/// The argument that asks a launcher what the kernel lets it enforce: the
/// launcher's own word (outer passes it to a launcher it starts to probe),
/// which the host side reads from its arguments.
pub(crate) const PROBE_ARG: &str = "--rho-confine-probe";

/// What the host asks the launcher to enforce: the confinement, less what
/// the host already knows this kernel cannot do (best effort).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Plan {
    pub(crate) confinement: Confinement,
    /// Mechanisms not to use (the kernel lacks them; the host reports it).
    pub(crate) skip: Vec<super::Mechanism>,
    /// The command's working directory, inside the confinement.
    pub(crate) cwd: Option<PathBuf>,
    /// The host's user and group ids (outer's, read before the unshare).
    #[serde(default)]
    pub(crate) ids: Option<(u32, u32)>,
}

impl Plan {
    pub(crate) fn uses(&self, mechanism: super::Mechanism) -> bool {
        !self.skip.contains(&mechanism)
    }
}

/// How the command ended, as init reports it to outer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Report {
    /// It exited with this code.
    Exited(i32),
    /// A signal killed it.
    Signaled(i32),
    /// The confinement could not be set up, or the command could not be
    /// started inside it: the command never ran.
    Failed(LaunchError),
    /// What a probe found.
    Probe(super::Support),
}

pub(crate) use super::launch_codes::{NOT_STARTED, PREFIX, SETUP_FAILED, WRITES};

/// Which stage this process is, from its command line.
pub(crate) enum Stage {
    /// Run a command confined.
    Outer {
        plan: String,
        command: Vec<OsString>,
    },
    /// Say what this kernel can enforce.
    Probe,
}

/// Runs `stage`; never returns.
pub(crate) fn run(stage: Stage) -> ! {
    match stage {
        Stage::Outer { plan, command } => outer::run(&plan, command),
        Stage::Probe => outer::probe(),
    }
}

/// Reads a plan from its JSON.
fn parse_plan(plan: &str) -> Result<Plan, LaunchError> {
    serde_json::from_str(plan).map_err(failed(Step::Plan))
}
