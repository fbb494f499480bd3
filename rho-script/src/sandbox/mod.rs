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
//! | `job`, `limits` | what a job is (and a check's failure), what it may take |
//! | `engine`, `script` | one job in a fresh runtime: load, call, settle, answer |
//! | `interrupt`, `failure` | when a job stops and why; how its failures read |
//! | `convert`, `global`, `output`, `base64` | the plain-data walk, the global `rho` (and `tools`), the answer's forms, base64 as scripts write it |
//! | `host`, `slot` | the host calls' protocol; what the script's thread and the call's future share, and the future |
//! | `pool`, `options` | the threads, the queue, the watchdog |
//! | `wire`, `worker` | the messages to and from a worker process; the same jobs in worker processes |
//!
//! The modules import each other one way, from the pool down to the job
//! (`.ci/cycles.py` checks it): the pool runs the engine or a worker's
//! relay, the engine runs the script, the script uses the global, the
//! global and the script share the slot, and every one of them speaks of
//! jobs and outputs. What points up would close a circle, so it lives
//! below: a check's failure is the job's; what the slot knows of its pool
//! is the slot's own trait (`slot::PoolLink`), which the pool implements;
//! the wire is a sibling of the worker, since the slot carries its messages.

mod base64;
mod convert;
mod engine;
mod failure;
mod global;
mod host;
mod interrupt;
mod job;
mod limits;
mod options;
mod output;
mod pool;
mod script;
mod slot;
mod wire;
#[cfg(unix)]
pub mod worker;

pub(crate) use host::{Callee, HostAnswer, HostAsk, HostCalls};
pub(crate) use job::{CheckFailure, Clock, JobKind, JobSpec, Origin};
pub use limits::ScriptLimits;
pub use options::{Isolation, PoolOptions, PoolState};
pub(crate) use output::plain_to_wire;
pub use pool::ScriptPool;
