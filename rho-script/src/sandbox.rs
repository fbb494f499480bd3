//! One call in a fresh QuickJS runtime: load the script, call `run(args)`,
//! drive a returned promise, make the answer plain, and put every way it can
//! end into one [`ScriptOutput`]. Runs on a script thread only.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::{Duration, Instant};

use rho_tool_core::Image;
use rho_tool_core::untrusted::plain::{Limits, Plain};
use rho_tool_core::untrusted::timeout_text;
use rquickjs::context::EvalOptions;
use rquickjs::promise::PromiseState;
use rquickjs::{Coerced, Context, Ctx, Promise, Runtime, Type, Value};

use crate::convert::{Originals, WalkError, Walker};
use crate::global::{self, RhoGlobal};
use crate::host::HostAnswer;
use crate::output::ScriptOutput;
use crate::pool::{Answer, JobKind, JobSpec, Origin};
use crate::slot::{Slot, Woken};

/// The interrupt has not fired.
const RUNNING: u8 = 0;
/// The call's future was dropped (a timeout or an abort in the loop).
const DROPPED: u8 = 1;
/// The sandbox's own deadline passed.
const PAST_DEADLINE: u8 = 2;

/// What QuickJS throws when an allocation fails under the memory limit.
const OUT_OF_MEMORY: &str = "out of memory";
/// What QuickJS throws when the stack limit is reached.
const STACK_EXCEEDED: &str = "Maximum call stack size exceeded";

/// The limits of how a thrown value that is not an `Error` is shown.
const THROWN_LIMITS: Limits = Limits::new()
    .with_max_depth(8)
    .with_max_bytes(4 << 10)
    .with_max_elements(256)
    .with_max_string(2 << 10);

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

/// Why a definition's script was refused by its check.
#[derive(Debug)]
pub(crate) enum CheckFailure {
    /// The source does not parse: where, and the engine's message.
    Syntax {
        line: u32,
        column: u32,
        message: String,
    },
    /// The top level ran but left no function `run`: what `typeof run`
    /// was instead.
    NoRun { found: String },
    /// The top level threw, or ran past the memory or stack limit: the
    /// text, made in the sandbox.
    Failed(String),
    /// The top level was still running at the check's deadline.
    TimedOut,
    /// The check could not run (the pool was busy, the engine failed).
    Unavailable(String),
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

/// The interrupt's check: the call's future is gone or its deadline passed.
/// Sticky: once it says stop, every later check says so too.
fn interrupted(stop: &AtomicBool, deadline: Instant, why: &AtomicU8) -> bool {
    if why.load(Ordering::Relaxed) != RUNNING {
        return true;
    }
    if stop.load(Ordering::Acquire) {
        why.store(DROPPED, Ordering::Release);
        return true;
    }
    if Instant::now() >= deadline {
        why.store(PAST_DEADLINE, Ordering::Release);
        return true;
    }
    false
}

/// Where in the call a failure came from, for its text.
#[derive(Clone, Copy)]
enum Phase {
    Load,
    TopLevel,
    Call,
    Promise,
    Answer,
}

struct Call<'a, 'js> {
    ctx: &'a Ctx<'js>,
    spec: &'a JobSpec,
    stop: &'a AtomicBool,
    slot: &'a Arc<Slot>,
    why: &'a AtomicU8,
}

impl<'js> Call<'_, 'js> {
    /// Loads the script, as a call does, and checks that it defines a
    /// function `run`. A syntax error is told apart from a throw of the
    /// top level by its stack: the parser's error has one frame, the
    /// script's own position, and no function name.
    fn check(&self) -> Result<(), CheckFailure> {
        let ctx = self.ctx;
        let originals = Originals::take(ctx).map_err(|error| self.check_failed(&error, None))?;
        let _global = self
            .install(&originals)
            .map_err(|error| self.check_failed(&error, Some(&originals)))?;
        let mut options = EvalOptions::default();
        options.filename = Some(self.file_name());
        if let Err(error) =
            ctx.eval_with_options::<Value<'js>, _>(self.spec.source.as_bytes(), options)
        {
            if let rquickjs::Error::Exception = error {
                let thrown = ctx.catch();
                if let Some(failure) = self.syntax_error(&thrown) {
                    return Err(failure);
                }
                return Err(match self.describe(thrown, Phase::TopLevel, &originals) {
                    Described::Limit(text) | Described::Threw(text) => CheckFailure::Failed(text),
                });
            }
            return Err(self.check_failed(&error, Some(&originals)));
        }
        let found: String = ctx
            .eval("typeof run")
            .map_err(|error| self.check_failed(&error, Some(&originals)))?;
        if found == "function" {
            Ok(())
        } else {
            Err(CheckFailure::NoRun { found })
        }
    }

    /// The syntax error `thrown` stands for, if it is the parser's.
    fn syntax_error(&self, thrown: &Value<'js>) -> Option<CheckFailure> {
        if !thrown.is_error() {
            return None;
        }
        let object = thrown.as_object()?;
        let read = |property: &str| -> Option<String> {
            let value: Value<'js> = object.get(property).ok()?;
            value.as_string()?.to_string().ok()
        };
        if read("name")? != "SyntaxError" {
            return None;
        }
        let stack = read("stack")?;
        let mut frames = stack.lines().filter(|line| !line.trim().is_empty());
        let frame = frames.next()?.trim();
        if frames.next().is_some() {
            return None;
        }
        let place = frame
            .strip_prefix("at ")?
            .strip_prefix(self.file_name().as_str())?
            .strip_prefix(':')?;
        let (line, column) = place.split_once(':')?;
        Some(CheckFailure::Syntax {
            line: line.parse().ok()?,
            column: column.parse().ok()?,
            message: read("message").unwrap_or_default(),
        })
    }

    /// A failure of the check that is not the script's doing, or a limit.
    fn check_failed(
        &self,
        error: &rquickjs::Error,
        originals: Option<&Originals<'js>>,
    ) -> CheckFailure {
        if let rquickjs::Error::Exception = error {
            let thrown = self.ctx.catch();
            if let Some(text) = limit_of(&thrown, self.spec) {
                return CheckFailure::Failed(text);
            }
            if let Some(originals) = originals {
                let (Described::Limit(text) | Described::Threw(text)) =
                    self.describe(thrown, Phase::TopLevel, originals);
                return CheckFailure::Failed(text);
            }
        }
        CheckFailure::Unavailable(format!("the engine could not check the script: {error}"))
    }

    /// The file name the engine gives the script, in stacks.
    fn file_name(&self) -> String {
        format!("{}.js", self.spec.name)
    }

    fn run(&self, arguments: &serde_json::Value) -> ScriptOutput {
        let ctx = self.ctx;
        let originals = match Originals::take(ctx) {
            Ok(originals) => originals,
            Err(error) => return self.failed(Phase::Load, &error, None),
        };
        let global = match self.install(&originals) {
            Ok(global) => global,
            Err(error) => return self.failed(Phase::Load, &error, Some(&originals)),
        };
        let mut options = EvalOptions::default();
        options.filename = Some(self.file_name());
        if let Err(error) =
            ctx.eval_with_options::<Value<'js>, _>(self.spec.source.as_bytes(), options)
        {
            return self.not_loaded(self.failed(Phase::Load, &error, Some(&originals)));
        }
        let run = match ctx.eval::<Value<'js>, _>("typeof run === 'function' ? run : undefined") {
            Ok(run) => run,
            Err(error) => {
                return self.not_loaded(self.failed(Phase::Load, &error, Some(&originals)));
            }
        };
        let Some(run) = run.into_function() else {
            return self.not_loaded(self.crashed(
                "the script defines no function `run`: a tool's script must define `function run(args) { ... }`",
            ));
        };
        let arguments = match serde_json::to_string(arguments) {
            Ok(json) => json,
            Err(error) => return self.crashed(&format!("its arguments are not JSON: {error}")),
        };
        let arguments = match ctx.json_parse(arguments) {
            Ok(arguments) => arguments,
            Err(error) => return self.failed(Phase::Call, &error, Some(&originals)),
        };
        let answer: Value<'js> = match run.call((arguments,)) {
            Ok(answer) => answer,
            Err(error) => return self.threw(Phase::Call, &error, &global, &originals),
        };
        let answer = match self.settle(answer, &global, &originals) {
            Ok(answer) => answer,
            Err(output) => return output,
        };
        self.answer(answer, &global, &originals)
    }

    /// A script that did not load (a syntax error, a top level that threw,
    /// no `run`): a crash of a tool's own script, the call's mistake when
    /// the call brought the script.
    fn not_loaded(&self, output: ScriptOutput) -> ScriptOutput {
        match self.spec.origin {
            Origin::Defined => output,
            Origin::Given => output.crash_as_error(),
        }
    }

    /// Installs the global `rho`, with the job's grants.
    fn install(&self, originals: &Originals<'js>) -> rquickjs::Result<RhoGlobal<'js>> {
        global::install(
            self.ctx,
            originals,
            self.slot,
            &self.spec.limits.answer,
            &self.spec.grants,
            self.spec.tools.as_deref(),
        )
    }

    /// The answer itself, or what a returned promise (or other thenable)
    /// settles to, running the engine's jobs until it does.
    fn settle(
        &self,
        answer: Value<'js>,
        global: &RhoGlobal<'js>,
        originals: &Originals<'js>,
    ) -> Result<Value<'js>, ScriptOutput> {
        let is_thenable = match answer.as_object() {
            Some(object) if !answer.is_function() => {
                answer.is_promise()
                    || object
                        .get::<_, Value<'js>>("then")
                        .map_err(|error| self.failed(Phase::Answer, &error, Some(originals)))?
                        .is_function()
            }
            _ => false,
        };
        if !is_thenable {
            return Ok(answer);
        }
        let promise: Promise<'js> = originals
            .resolve(answer)
            .map_err(|error| self.failed(Phase::Promise, &error, Some(originals)))?;
        loop {
            if self.should_stop() {
                // The caller replaces this with the reason's own text.
                return Err(ScriptOutput::error("stopped"));
            }
            match promise.state() {
                PromiseState::Resolved | PromiseState::Rejected => break,
                PromiseState::Pending => {
                    if self.ctx.execute_pending_job() || promise.state() != PromiseState::Pending {
                        continue;
                    }
                    if global.pending.borrow().is_empty() {
                        return Err(self.crashed(
                            "its promise never settled: `run` returned a promise that was still pending when the script had nothing left to run",
                        ));
                    }
                    // Nothing to run but sleeps and host calls: wait for
                    // the first to end (a stop ends the wait at once; the
                    // loop's check then says why).
                    let due = global.pending.borrow().timers.next_due();
                    match self.slot.wait(due, self.stop, self.spec.deadline) {
                        Woken::Answers(answers) => {
                            for answer in answers {
                                global.pending.borrow_mut().host_calls -= 1;
                                self.settle_host(answer, global, originals)?;
                            }
                        }
                        // Nothing is relayed to a script's own thread.
                        Woken::Due | Woken::Relayed(_) => {}
                        Woken::Stopped => continue,
                    }
                    let due = global.pending.borrow_mut().timers.take_due(Instant::now());
                    for id in due {
                        global
                            .settle(id, Ok(Value::new_undefined(self.ctx.clone())))
                            .map_err(|error| {
                                self.failed(Phase::Promise, &error, Some(originals))
                            })?;
                    }
                }
            }
        }
        match promise.result::<Value<'js>>() {
            Some(Ok(value)) => Ok(value),
            Some(Err(error)) => Err(self.threw(Phase::Promise, &error, global, originals)),
            None => Err(self.crashed("its promise never settled")),
        }
    }

    /// Hands the end of a host call to the promise that waits for it.
    fn settle_host(
        &self,
        answer: HostAnswer,
        global: &RhoGlobal<'js>,
        originals: &Originals<'js>,
    ) -> Result<(), ScriptOutput> {
        let fail = |error: rquickjs::Error| self.failed(Phase::Promise, &error, Some(originals));
        let id = answer.id;
        match answer.result {
            Ok(value) => {
                // The host's value, as the JSON text it stands for: parsed
                // in the sandbox, under its memory cap.
                let json = serde_json::to_string(&value).map_err(|error| {
                    self.crashed(&format!("a host function's answer is not JSON: {error}"))
                })?;
                let value = self.ctx.json_parse(json).map_err(fail)?;
                global.settle(id, Ok(value)).map_err(fail)
            }
            Err(text) => global.settle(id, Err(text)).map_err(fail),
        }
    }

    /// The same check as the interrupt's, between jobs.
    fn should_stop(&self) -> bool {
        interrupted(self.stop, self.spec.deadline, self.why)
    }

    /// The answer made plain: a string is the text; an object or an array
    /// is the details and, as compact JSON, the text; any other value is
    /// the text of its plain form.
    fn answer(
        &self,
        answer: Value<'js>,
        global: &RhoGlobal<'js>,
        originals: &Originals<'js>,
    ) -> ScriptOutput {
        if let Some(output) = self.built_answer(&answer, global, originals) {
            return output;
        }
        if let Some(text) = answer.as_string() {
            // A string answer is the text, under the same length limit.
            let mut walker = Walker::new(originals, &self.spec.limits.answer);
            return match walker.convert(text.clone().into_value()) {
                Ok(Plain::Text(text)) => ScriptOutput::text(text),
                Ok(_) => ScriptOutput::text(String::new()),
                Err(error) => self.unplain(error, originals),
            };
        }
        let mut walker = Walker::new(originals, &self.spec.limits.answer);
        match walker.convert(answer) {
            Ok(plain @ (Plain::Map(_) | Plain::List(_))) => match serde_json::to_string(&plain) {
                Ok(json) => ScriptOutput::text(json).with_plain_details(plain),
                Err(error) => {
                    self.crashed(&format!("its answer could not be written as JSON: {error}"))
                }
            },
            Ok(Plain::Text(text)) => ScriptOutput::text(text),
            Ok(scalar) => match serde_json::to_string(&scalar) {
                Ok(json) => ScriptOutput::text(json),
                Err(error) => {
                    self.crashed(&format!("its answer could not be written as JSON: {error}"))
                }
            },
            Err(error) => self.unplain(error, originals),
        }
    }

    /// The answer `value` stands for when `rho.answer` or `rho.error` made
    /// it.
    fn built_answer(
        &self,
        value: &Value<'js>,
        global: &RhoGlobal<'js>,
        originals: &Originals<'js>,
    ) -> Option<ScriptOutput> {
        match global.answer_of(value) {
            Ok(holder) => {
                holder
                    .as_object()
                    .map(|holder| match holder.get::<_, Value<'js>>("spec") {
                        Ok(spec) => self.built(spec, global, originals),
                        Err(error) => self.failed(Phase::Answer, &error, Some(originals)),
                    })
            }
            Err(error) => Some(self.failed(Phase::Answer, &error, Some(originals))),
        }
    }

    /// What a throw (or a rejection) from `run` ends the call with: the
    /// answer it carries when the script threw one it built
    /// (`throw rho.error(...)`: a way to stop early, no crash), else a
    /// crash with what was thrown.
    fn threw(
        &self,
        phase: Phase,
        error: &rquickjs::Error,
        global: &RhoGlobal<'js>,
        originals: &Originals<'js>,
    ) -> ScriptOutput {
        let rquickjs::Error::Exception = error else {
            return self.failed(phase, error, Some(originals));
        };
        let thrown = self.ctx.catch();
        // Only an object can be a built answer (an exception for a limit
        // may be no value at all).
        if thrown.is_object() {
            if let Some(output) = self.built_answer(&thrown, global, originals) {
                return output;
            }
        }
        match self.describe(thrown, phase, originals) {
            Described::Limit(text) | Described::Threw(text) => self.crashed(&text),
        }
    }

    /// An answer built by `rho.answer` (or `rho.error`) from `spec`:
    /// `{ text, images, details }` or `{ error, details }`.
    fn built(
        &self,
        spec: Value<'js>,
        global: &RhoGlobal<'js>,
        originals: &Originals<'js>,
    ) -> ScriptOutput {
        self.built_output(spec, global, originals)
            .unwrap_or_else(|output| output)
    }

    fn built_output(
        &self,
        spec: Value<'js>,
        global: &RhoGlobal<'js>,
        originals: &Originals<'js>,
    ) -> Result<ScriptOutput, ScriptOutput> {
        let fail = |error: rquickjs::Error| self.failed(Phase::Answer, &error, Some(originals));
        let Some(object) = spec.as_object() else {
            return Err(self.malformed(
                "`rho.answer` takes an object: `{ text, images, details }` or `{ error, details }`",
            ));
        };
        // Keys read as JavaScript strings: one may hold a lone surrogate.
        for key in object.keys::<rquickjs::String<'js>>() {
            let key = originals.well_formed(&key.map_err(fail)?).map_err(fail)?;
            if !matches!(key.as_str(), "text" | "images" | "details" | "error") {
                return Err(self.malformed(&format!(
                    "unknown key `{key}` (the keys are `text`, `images`, `details` and `error`)"
                )));
            }
        }
        let field = |name: &str| object.get::<_, Value<'js>>(name).map_err(fail);
        let error = self.text_field(field("error")?, "error", originals)?;
        let text = self.text_field(field("text")?, "text", originals)?;
        let details = field("details")?;
        let details = if details.is_undefined() {
            None
        } else {
            let mut walker = Walker::new(originals, &self.spec.limits.answer);
            Some(
                walker
                    .convert(details)
                    .map_err(|error| self.unplain(error, originals))?,
            )
        };
        let images = self.images(field("images")?, global, originals)?;
        let output = match error {
            Some(error) => {
                if text.is_some() || !images.is_empty() {
                    return Err(self.malformed(
                        "an answer with an `error` has no `text` or `images` (only `details`)",
                    ));
                }
                ScriptOutput::error(error)
            }
            None if images.is_empty() => ScriptOutput::text(text.unwrap_or_default()),
            None => ScriptOutput::images(images, text.unwrap_or_default()),
        };
        Ok(match details {
            Some(details) => output.with_plain_details(details),
            None => output,
        })
    }

    /// A string field of a built answer, under the answer's limits.
    fn text_field(
        &self,
        value: Value<'js>,
        name: &str,
        originals: &Originals<'js>,
    ) -> Result<Option<String>, ScriptOutput> {
        if value.is_undefined() {
            return Ok(None);
        }
        if !value.is_string() {
            return Err(self.malformed(&format!("`{name}` must be a string")));
        }
        match Walker::new(originals, &self.spec.limits.answer).convert(value) {
            Ok(Plain::Text(text)) => Ok(Some(text)),
            Ok(_) => Ok(Some(String::new())),
            Err(error) => Err(self.unplain(error, originals)),
        }
    }

    /// The images of a built answer: each `{ mimeType, data }`, the data
    /// base64 text or bytes. Their mime types and sizes are rho's to check.
    fn images(
        &self,
        value: Value<'js>,
        global: &RhoGlobal<'js>,
        originals: &Originals<'js>,
    ) -> Result<Vec<Image>, ScriptOutput> {
        let fail = |error: rquickjs::Error| self.failed(Phase::Answer, &error, Some(originals));
        if value.is_undefined() {
            return Ok(Vec::new());
        }
        let Some(list) = value.as_array() else {
            return Err(self.malformed("`images` must be an array of `{ mimeType, data }`"));
        };
        let mut images = Vec::with_capacity(list.len().min(64));
        for index in 0..list.len() {
            let image: Value<'js> = list.get(index).map_err(fail)?;
            let Some(image) = image.as_object() else {
                return Err(self.malformed(&format!(
                    "`images[{index}]` must be an object `{{ mimeType, data }}`"
                )));
            };
            let mime: Value<'js> = image.get("mimeType").map_err(fail)?;
            let Some(mime) = mime.as_string() else {
                return Err(self.malformed(&format!(
                    "`images[{index}].mimeType` must be a string such as \"image/png\""
                )));
            };
            let mime = originals.well_formed(mime).map_err(fail)?;
            let data: Value<'js> = image.get("data").map_err(fail)?;
            let bytes = if let Some(text) = data.as_string() {
                let text = originals.well_formed(text).map_err(fail)?;
                global::base64(&text).ok_or_else(|| {
                    self.malformed(&format!(
                        "`images[{index}].data` is a string that is not base64"
                    ))
                })?
            } else if data.is_object() {
                let binary: rquickjs::String<'js> = global.binary(self.ctx, data).map_err(fail)?;
                let binary = binary.to_string().map_err(fail)?;
                // One char per byte, each below 256.
                binary
                    .chars()
                    .map(|byte| (u32::from(byte) & 0xff) as u8)
                    .collect()
            } else {
                return Err(self.malformed(&format!(
                    "`images[{index}].data` must be base64 text, a Uint8Array or an ArrayBuffer"
                )));
            };
            images.push(Image::new(mime, bytes));
        }
        Ok(images)
    }

    /// A built answer of the wrong shape: the script's mistake, told to the
    /// model.
    fn malformed(&self, what: &str) -> ScriptOutput {
        ScriptOutput::error(format!(
            "tool `{}` built its answer wrongly: {what}",
            self.spec.name
        ))
    }

    /// An answer the walk refused.
    fn unplain(&self, error: WalkError, originals: &Originals<'js>) -> ScriptOutput {
        if let WalkError::Threw { path } = &error {
            let thrown = self.ctx.catch();
            let text = self.describe(thrown, Phase::Answer, originals);
            return match text {
                Described::Limit(text) => self.crashed(&text),
                Described::Threw(text) => {
                    self.crashed(&format!("{text} (while its answer was read at {path})"))
                }
            };
        }
        ScriptOutput::error(format!(
            "tool `{}` answered a value that cannot be made plain data: {}",
            self.spec.name,
            error.describe()
        ))
    }

    /// A failure of the binding: a pending exception is described; any
    /// other error of the binding is named.
    fn failed(
        &self,
        phase: Phase,
        error: &rquickjs::Error,
        originals: Option<&Originals<'js>>,
    ) -> ScriptOutput {
        match (error, originals) {
            (rquickjs::Error::Exception, Some(originals)) => {
                let thrown = self.ctx.catch();
                match self.describe(thrown, phase, originals) {
                    Described::Limit(text) | Described::Threw(text) => self.crashed(&text),
                }
            }
            (rquickjs::Error::Exception, None) => {
                let thrown = self.ctx.catch();
                match limit_of(&thrown, self.spec) {
                    Some(text) => self.crashed(&text),
                    None => self.crashed("the script's context could not be set up"),
                }
            }
            (other, _) => engine_failure(self.spec, phase.doing(), other),
        }
    }

    /// The text of a thrown value: a limit it stands for, or what was
    /// thrown, where.
    fn describe(&self, thrown: Value<'js>, phase: Phase, originals: &Originals<'js>) -> Described {
        if let Some(text) = limit_of(&thrown, self.spec) {
            return Described::Limit(text);
        }
        let lead = phase.lead();
        if thrown.is_error() {
            let object = thrown.as_object();
            let read = |property: &str| -> Option<String> {
                let value: Value<'js> = object?.get(property).ok()?;
                if value.is_undefined() {
                    return None;
                }
                let Coerced(text) = value.get::<Coerced<rquickjs::String<'js>>>().ok()?;
                originals.well_formed(&text).ok()
            };
            let name = read("name").unwrap_or_else(|| "Error".to_owned());
            let message = read("message").unwrap_or_default();
            let stack = read("stack").unwrap_or_default();
            let mut text = format!("{lead} {name}: {message}");
            let stack = stack.trim_end();
            if !stack.is_empty() {
                text.push('\n');
                text.push_str(stack);
            }
            return Described::Threw(cut(text));
        }
        let shown = match Walker::new(originals, &THROWN_LIMITS).convert(thrown) {
            Ok(plain) => serde_json::to_string(&plain)
                .unwrap_or_else(|error| format!("(not shown: {error})")),
            Err(WalkError::Threw { .. }) => {
                // Showing it threw again; that exception is dropped.
                let _ = self.ctx.catch();
                "(not shown: reading it threw)".to_owned()
            }
            Err(error) => format!("(not shown: {})", error.describe()),
        };
        Described::Threw(format!("{lead} a value that is not an Error: {shown}"))
    }

    fn crashed(&self, what: &str) -> ScriptOutput {
        ScriptOutput::crashed(format!("tool `{}` crashed: {what}", self.spec.name))
    }
}

/// The text of a thrown value.
enum Described {
    /// The memory or stack limit stopped the script.
    Limit(String),
    /// The script threw (or rejected) this.
    Threw(String),
}

impl Phase {
    /// The start of the text of a value thrown in this phase.
    fn lead(self) -> &'static str {
        match self {
            Phase::Load => "the script failed to load:",
            Phase::TopLevel => "its top level threw",
            Phase::Call => "the script threw",
            Phase::Promise => "the script's promise was rejected with",
            Phase::Answer => "reading the script's answer threw",
        }
    }

    /// What the call was doing, for an error of the binding.
    fn doing(self) -> &'static str {
        match self {
            Phase::Load => "load the script",
            Phase::TopLevel => "run the script's top level",
            Phase::Call => "call `run`",
            Phase::Promise => "settle the script's promise",
            Phase::Answer => "read the script's answer",
        }
    }
}

/// The memory or stack limit a thrown value stands for, if any: QuickJS's
/// own out-of-memory and stack errors, or no exception value at all (when
/// memory ran out before one could be made).
fn limit_of(thrown: &Value<'_>, spec: &JobSpec) -> Option<String> {
    if thrown.type_of() == Type::Uninitialized {
        return Some(memory_text(spec));
    }
    // Out of memory while it makes the error itself, the engine throws
    // `null` instead; nothing tells that apart from a script's own
    // `throw null`, so the text says both.
    if thrown.is_null() {
        return Some(format!(
            "the script threw `null`, which is what the engine throws when a script exceeds its memory limit of {} (a script's own `throw null` reads the same)",
            bytes_text(spec.limits.memory)
        ));
    }
    if !thrown.is_error() {
        return None;
    }
    let message: Value<'_> = thrown.as_object()?.get("message").ok()?;
    let message = message.as_string()?.to_string().ok()?;
    match message.as_str() {
        OUT_OF_MEMORY => Some(memory_text(spec)),
        STACK_EXCEEDED => Some(format!(
            "the script exceeded its stack limit ({STACK_EXCEEDED}): recursion too deep"
        )),
        _ => None,
    }
}

fn memory_text(spec: &JobSpec) -> String {
    format!(
        "the script exceeded its memory limit of {} and was stopped",
        bytes_text(spec.limits.memory)
    )
}

/// A failure of the engine's binding itself (not of the script).
fn engine_failure(spec: &JobSpec, doing: &str, error: &rquickjs::Error) -> ScriptOutput {
    ScriptOutput::crashed(format!(
        "tool `{}` crashed: the engine could not {doing}: {error}",
        spec.name
    ))
}

/// `64 MiB`, `512 KiB` or `1000 bytes`.
pub(crate) fn bytes_text(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} bytes")
    }
}

/// The most of a thrown error's text the model reads: 16 KiB.
const MAX_THROWN_TEXT: usize = 16 << 10;

fn cut(mut text: String) -> String {
    if text.len() > MAX_THROWN_TEXT {
        let mut end = MAX_THROWN_TEXT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("… (cut)");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_read_as_people_write_them() {
        assert_eq!(bytes_text(64 << 20), "64 MiB");
        assert_eq!(bytes_text(512 << 10), "512 KiB");
        assert_eq!(bytes_text(1000), "1000 bytes");
    }
}
