//! The types a host on tokio names, without a generic parameter.
//!
//! rho's runner, call handle, turn runner and turn are generic over the
//! executor, so that any runtime plugs in; a host on tokio names them here
//! instead: `rho_exec_tokio::TurnRunner` is
//! `rho_turn::TurnRunner<TokioExecutor>`, and so on. The turn types need the
//! `turn` feature (on by default).

use crate::TokioExecutor;

/// Starts single calls on tokio: [`rho_tool_core::Runner`] on [`TokioExecutor`].
pub type Runner = rho_tool_core::Runner<TokioExecutor>;

/// A call in flight on tokio: [`rho_tool_core::CallHandle`] on [`TokioExecutor`].
pub type CallHandle = rho_tool_core::CallHandle<TokioExecutor>;

/// Runs the turns of a session on tokio: [`rho_turn::TurnRunner`] on
/// [`TokioExecutor`].
#[cfg(feature = "turn")]
pub type TurnRunner = rho_turn::TurnRunner<TokioExecutor>;

/// The calls of one model message on tokio: [`rho_turn::Turn`] on
/// [`TokioExecutor`].
#[cfg(feature = "turn")]
pub type Turn = rho_turn::Turn<TokioExecutor>;
