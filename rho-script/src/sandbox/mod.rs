//! The sandbox and its pool: a fresh QuickJS runtime per job, on the
//! pool's own threads or in its worker processes, with the job's limits,
//! the engine's interrupt and the answer made plain data.
//!
//! This is the bottom layer of the crate. It knows a job ([`JobSpec`]:
//! a source and its name, how to call it, its limits and deadline, the
//! names of the host calls it may make) and nothing of what built it: a
//! script tool, the model's `run_script` program, a definition's check.
//! A script's calls of the host (`rho.<name>`, `tools.<name>`) cross as
//! plain data to a [`HostCalls`] that the layer above hands in with the
//! job; the sandbox never imports grants, code mode or the agent-tools
//! source.
//!
//! | module | holds |
//! |---|---|
//! | `job`, `limits` | what a job is, what it may take |
//! | `engine`, `script` | one job in a fresh runtime: load, call, settle, answer |
//! | `convert`, `global`, `output` | the plain-data walk, the global `rho` (and `tools`), the answer's forms |
//! | `host`, `slot` | the host calls' protocol; what the script's thread and the call's future share, and the future |
//! | `pool`, `options` | the threads, the queue, the watchdog |
//! | `worker` | the same jobs in worker processes |

mod base64;
mod convert;
mod engine;
mod global;
mod host;
mod job;
mod limits;
mod options;
mod output;
mod pool;
mod script;
mod slot;
#[cfg(unix)]
pub mod worker;

pub(crate) use engine::CheckFailure;
pub(crate) use host::{Callee, HostAnswer, HostAsk, HostCalls};
pub(crate) use job::{Clock, JobKind, JobSpec, Origin};
pub use limits::ScriptLimits;
pub use options::{Isolation, PoolOptions, PoolState};
pub(crate) use output::plain_to_wire;
pub use pool::ScriptPool;
