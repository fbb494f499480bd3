//! The types a host on smol names, without a generic parameter.
//!
//! rho's runner, call handle, turn runner and turn are generic over the
//! executor, so that any runtime plugs in; a host on smol names them here
//! instead: `rho_exec_smol::TurnRunner` is
//! `rho_turn::TurnRunner<SmolExecutor>`, and so on. The turn types need the
//! `turn` feature (on by default).

use crate::SmolExecutor;

/// Starts single calls on smol: [`rho_tool_core::Runner`] on [`SmolExecutor`].
pub type Runner = rho_tool_core::Runner<SmolExecutor>;

/// A call in flight on smol: [`rho_tool_core::CallHandle`] on [`SmolExecutor`].
pub type CallHandle = rho_tool_core::CallHandle<SmolExecutor>;

/// Runs the turns of a session on smol: [`rho_turn::TurnRunner`] on
/// [`SmolExecutor`].
#[cfg(feature = "turn")]
pub type TurnRunner = rho_turn::TurnRunner<SmolExecutor>;

/// The calls of one model message on smol: [`rho_turn::Turn`] on
/// [`SmolExecutor`].
#[cfg(feature = "turn")]
pub type Turn = rho_turn::Turn<SmolExecutor>;
