//! The two sides of every comparison, behind one small trait so that each
//! figure's loop is written once: rho's runner, and the floor.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rho_tool_core::{CallEnd, CallHandle, Executor, Gate, Outcome, Runner, Tool, ToolCall};

use crate::floor::{self, Floor, FloorCall, FloorDone, FloorEnd, FloorGate, FloorRt, FloorTool};
use crate::rt::Bench;

/// Which side a measurement is of (named as [`Which::name`] on the
/// command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Which {
    /// rho's runner.
    Rho,
    /// The hand-written floor.
    Floor,
}

impl Which {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Which::Rho => "rho",
            Which::Floor => "floor",
        }
    }

    /// Round `round`'s order: rho first in even rounds, the floor first in
    /// odd ones, so that neither always runs on a warmer (or colder) machine.
    pub(crate) fn order(round: usize) -> [Which; 2] {
        if round.is_multiple_of(2) {
            [Which::Rho, Which::Floor]
        } else {
            [Which::Floor, Which::Rho]
        }
    }
}

/// How a call ended, in the few classes the figures check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    Succeeded,
    TimedOut,
    Denied,
    Other,
}

/// A way to start calls of one tool.
pub(crate) trait Side {
    type Call: Future<Output = Self::End> + Unpin;
    type End;

    fn start(&self, call: ToolCall) -> Self::Call;

    /// The end's class, and how long the tool ran (from the running notice
    /// to the end), if it started.
    fn ended(end: &Self::End) -> (Ended, Option<Duration>);
}

/// rho's runner with one tool.
pub(crate) struct RhoSide<E> {
    runner: Runner<E>,
    tool: Arc<dyn Tool>,
}

impl<E: Executor> Side for RhoSide<E> {
    type Call = CallHandle<E>;
    type End = CallEnd;

    fn start(&self, call: ToolCall) -> CallHandle<E> {
        self.runner.start(call, self.tool.clone())
    }

    fn ended(end: &CallEnd) -> (Ended, Option<Duration>) {
        let class = match end.outcome {
            Outcome::Succeeded => Ended::Succeeded,
            Outcome::TimedOut => Ended::TimedOut,
            Outcome::Denied => Ended::Denied,
            Outcome::Failed
            | Outcome::Crashed
            | Outcome::Aborted
            | Outcome::ExecutorGone
            | Outcome::Refused => Ended::Other,
        };
        (class, end.ran)
    }
}

/// The floor with one tool.
pub(crate) struct FloorSide<R> {
    floor: Floor<R>,
    tool: Arc<dyn FloorTool>,
}

impl<R: FloorRt> Side for FloorSide<R> {
    type Call = FloorCall<R>;
    type End = FloorDone;

    fn start(&self, call: ToolCall) -> FloorCall<R> {
        self.floor.start(call, self.tool.clone())
    }

    fn ended(done: &FloorDone) -> (Ended, Option<Duration>) {
        let class = match done.end {
            FloorEnd::Answered(_) => Ended::Succeeded,
            FloorEnd::TimedOut => Ended::TimedOut,
            FloorEnd::Denied => Ended::Denied,
            FloorEnd::Panicked(_) | FloorEnd::Lost => Ended::Other,
        };
        (class, done.ran)
    }
}

/// rho's runner on `bench` with the default gate (or `gate`) and `tool`.
pub(crate) fn rho<B: Bench>(
    bench: &B,
    gate: Option<Arc<dyn Gate>>,
    tool: Arc<dyn Tool>,
) -> RhoSide<B::Exec> {
    let runner = Runner::new(bench.executor());
    let runner = match gate {
        Some(gate) => runner.with_gate(gate),
        None => runner,
    };
    RhoSide { runner, tool }
}

/// The floor on `bench` with its default gate (or `gate`) and `tool`.
pub(crate) fn floor<B: Bench>(
    bench: &B,
    gate: Option<Arc<dyn FloorGate>>,
    tool: Arc<dyn FloorTool>,
) -> FloorSide<B::Floor> {
    let gate = gate.unwrap_or_else(|| Arc::new(floor::AllowAll));
    FloorSide {
        floor: Floor::new(bench.floor(), gate),
        tool,
    }
}
