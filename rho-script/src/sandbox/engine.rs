//! One call in a fresh QuickJS runtime: load the script, call `run(args)`,
//! drive a returned promise, make the answer plain, and put every way it can
//! end into one [`ScriptOutput`]. Runs on a script thread only.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::Duration;

use rho_tool_core::untrusted::timeout_text;
use rquickjs::{Context, Runtime};

use crate::sandbox::failure::engine_failure;
use crate::sandbox::interrupt::{DROPPED, RUNNING, interrupted};
use crate::sandbox::job::{Answer, CheckFailure, JobKind, JobSpec};
use crate::sandbox::output::ScriptOutput;
use crate::sandbox::script::Call;
use crate::sandbox::slot::Slot;

/// The room a thread that runs an engine needs on its stack beyond the
/// JavaScript stack limit, for rho-script's own frames and the engine's
/// native ones.
pub(crate) const STACK_MARGIN: usize = 2 << 20;

/// Runs one job: a call, whose answer is plain data made on this thread,
/// or a definition check; and the job's engine, to be freed once the
/// answer is sent.
pub(crate) fn run(
    spec: &JobSpec,
    stop: &Arc<AtomicBool>,
    slot: &Arc<Slot>,
    stack_limit: usize,
    spare: Option<Engine>,
) -> (Answer, Spent) {
    let sandbox = Sandbox {
        spec,
        stop,
        slot,
        stack_limit,
        spare,
    };
    match &spec.kind {
        JobKind::Call(arguments) => {
            let (output, spent) = call(sandbox, arguments);
            (Answer::Output(output), spent)
        }
        JobKind::Check => {
            let (verdict, spent) = check(sandbox);
            (Answer::Checked(verdict), spent)
        }
    }
}

/// A runtime and its context that no job has used: made while a script
/// thread has nothing to do, so that the next call does not wait for them.
/// Each is used by one job only, then freed; a job gets its limits and
/// interrupt when it takes it.
pub(crate) struct Engine {
    // Dropped in this order: the context, then its runtime.
    context: Context,
    runtime: Runtime,
}

impl Engine {
    /// A fresh runtime with the pool's stack limit, and its context.
    pub(crate) fn new(stack_limit: usize) -> rquickjs::Result<Self> {
        let runtime = Runtime::new()?;
        runtime.set_max_stack_size(stack_limit);
        let context = Context::full(&runtime)?;
        Ok(Self { context, runtime })
    }
}

/// What one job runs with.
struct Sandbox<'a> {
    spec: &'a JobSpec,
    stop: &'a Arc<AtomicBool>,
    slot: &'a Arc<Slot>,
    stack_limit: usize,
    /// A fresh engine made before the job came, if the thread had one.
    spare: Option<Engine>,
}

/// A finished job's runtime and context, freed when this is dropped.
///
/// Freeing a runtime takes about a fifth of a trivial call's
/// instructions; the answer is plain data that owes nothing to the
/// runtime, so the thread sends it first and frees the runtime after,
/// before it takes its next job (nothing is carried over).
pub(crate) struct Spent {
    /// Held for its drop: the context first, then its runtime.
    _engine: Option<(Context, Runtime)>,
}

impl Spent {
    /// Nothing to free (the job ran elsewhere).
    pub(crate) fn none() -> Self {
        Spent { _engine: None }
    }

    /// Frees the job's engine, after its answer was sent. A panic of the
    /// binding while it frees is contained here like one while it runs
    /// (the answer is already out); the payload is dropped on this thread.
    pub(crate) fn free(self) {
        let _ = catch_unwind(AssertUnwindSafe(move || drop(self)));
    }
}

/// The job's engine (the thread's spare, or a new one) with the job's
/// memory cap and interrupt, and the flag that says why the interrupt
/// fired.
fn engine(sandbox: &mut Sandbox<'_>) -> rquickjs::Result<(Engine, Arc<AtomicU8>)> {
    let engine = match sandbox.spare.take() {
        Some(engine) => engine,
        None => Engine::new(sandbox.stack_limit)?,
    };
    let spec = sandbox.spec;
    engine.runtime.set_memory_limit(spec.limits.memory);
    let why = Arc::new(AtomicU8::new(RUNNING));
    {
        let stop = Arc::clone(sandbox.stop);
        let why = Arc::clone(&why);
        let deadline = spec.deadline;
        engine
            .runtime
            .set_interrupt_handler(Some(Box::new(move || interrupted(&stop, deadline, &why))));
    }
    Ok((engine, why))
}

/// How a job in a fresh sandbox went, before the job says what that means.
enum Sandboxed<R> {
    /// The job ran to its end and the interrupt did not fire.
    Done(R),
    /// The engine could not make what the job needs.
    NoEngine {
        /// What it was doing, for the text.
        doing: &'static str,
        error: rquickjs::Error,
    },
    /// The call's future was dropped (a timeout or an abort in the loop):
    /// nobody waits for the answer any more.
    Dropped,
    /// The sandbox's own deadline passed.
    PastDeadline,
}

/// Runs `work` in a fresh runtime and context, with the job's caps and
/// the interrupt; the interrupt's reason, when it fired, wins over what
/// `work` answered.
fn in_sandbox<R>(
    mut sandbox: Sandbox<'_>,
    work: impl for<'a, 'js> FnOnce(&Call<'a, 'js>) -> R,
) -> (Sandboxed<R>, Spent) {
    let (engine, why) = match engine(&mut sandbox) {
        Ok(made) => made,
        Err(error) => {
            let failed = Sandboxed::NoEngine {
                doing: "make a script runtime and context",
                error,
            };
            return (failed, Spent::none());
        }
    };
    let Engine { runtime, context } = engine;
    // Every JavaScript value of the job lives inside `with`: once it
    // returns, only the engine is left to free.
    let done = context.with(|ctx| {
        work(&Call {
            ctx: &ctx,
            spec: sandbox.spec,
            stop: sandbox.stop,
            slot: sandbox.slot,
            why: &why,
        })
    });
    let spent = Spent {
        _engine: Some((context, runtime)),
    };
    let sandboxed = match why.load(Ordering::Acquire) {
        RUNNING => Sandboxed::Done(done),
        DROPPED => Sandboxed::Dropped,
        _ => Sandboxed::PastDeadline,
    };
    (sandboxed, spent)
}

/// Runs one call; the answer is plain data, made on this thread.
fn call(sandbox: Sandbox<'_>, arguments: &serde_json::Value) -> (ScriptOutput, Spent) {
    let spec = sandbox.spec;
    let name = &*spec.name;
    let (sandboxed, spent) = in_sandbox(sandbox, |call| call.run(arguments));
    let output = match sandboxed {
        Sandboxed::Done(answer) => answer,
        Sandboxed::NoEngine { doing, error } => engine_failure(spec, doing, &error),
        Sandboxed::Dropped => halted_call(name, spec.timeout, Halt::Dropped),
        Sandboxed::PastDeadline => halted_call(name, spec.timeout, Halt::PastDeadline),
    };
    (output, spent)
}

/// What stopped a job from outside its script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Halt {
    /// The call's future was dropped (a timeout or an abort in the loop).
    Dropped,
    /// The sandbox's own deadline passed.
    PastDeadline,
}

/// What a job stopped by `halt` answers: one text whether the engine's
/// interrupt stopped the script, or the pool gave up on a thread that did
/// not come back or killed a worker that did not answer, so that the two
/// modes answer alike.
#[derive(Debug, Clone)]
pub(crate) struct Halted {
    name: Arc<str>,
    timeout: Duration,
    asked: Asked,
}

/// What a job asked for, for the text of its halt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asked {
    Call,
    Check,
}

impl Halted {
    pub(crate) fn of(spec: &JobSpec) -> Self {
        Self {
            name: Arc::clone(&spec.name),
            timeout: spec.timeout,
            asked: match spec.kind {
                JobKind::Call(_) => Asked::Call,
                JobKind::Check => Asked::Check,
            },
        }
    }

    /// The job's answer when `halt` stopped it.
    pub(crate) fn answer(&self, halt: Halt) -> Answer {
        match self.asked {
            Asked::Call => Answer::Output(halted_call(&self.name, self.timeout, halt)),
            Asked::Check => Answer::Checked(Err(halted_check(halt))),
        }
    }
}

/// A call's answer when `halt` stopped it.
fn halted_call(name: &str, timeout: Duration, halt: Halt) -> ScriptOutput {
    match halt {
        Halt::Dropped => ScriptOutput::error(format!("tool `{name}` was stopped")),
        Halt::PastDeadline => ScriptOutput::crashed(timeout_text(name, timeout)),
    }
}

/// A check's verdict when `halt` stopped it.
fn halted_check(halt: Halt) -> CheckFailure {
    match halt {
        Halt::Dropped => CheckFailure::Unavailable("the check was stopped".to_owned()),
        Halt::PastDeadline => CheckFailure::TimedOut,
    }
}

/// Checks a definition's script: loads it in a fresh sandbox with the
/// call's caps and interrupt (which parses it, then runs its top level),
/// and looks for a function `run`, without calling it.
fn check(sandbox: Sandbox<'_>) -> (Result<(), CheckFailure>, Spent) {
    let (sandboxed, spent) = in_sandbox(sandbox, |call| call.check());
    let verdict = match sandboxed {
        Sandboxed::Done(verdict) => verdict,
        Sandboxed::NoEngine { doing, error } => Err(CheckFailure::Unavailable(format!(
            "the engine could not {doing}: {error}"
        ))),
        Sandboxed::Dropped => Err(halted_check(Halt::Dropped)),
        Sandboxed::PastDeadline => Err(halted_check(Halt::PastDeadline)),
    };
    (verdict, spent)
}
