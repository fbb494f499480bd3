//! A job's script in its sandbox: load it, call `run(args)` (or check it
//! defines one), drive a returned promise and its host calls and sleeps,
//! make the answer plain, and tell every way it can fail.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8};
use std::time::Instant;

use rho_tool_core::Image;
use rho_tool_core::untrusted::plain::Plain;
use rquickjs::context::EvalOptions;
use rquickjs::promise::PromiseState;
use rquickjs::{Coerced, Ctx, Promise, Value};

use crate::sandbox::base64::base64_decode;
use crate::sandbox::convert::{Originals, WalkError, Walker};
use crate::sandbox::failure::{THROWN_LIMITS, cut, engine_failure, limit_of};
use crate::sandbox::global::{self, RhoGlobal};
use crate::sandbox::host::HostAnswer;
use crate::sandbox::interrupt::interrupted;
use crate::sandbox::job::{CheckFailure, JobSpec, Origin};
use crate::sandbox::output::ScriptOutput;
use crate::sandbox::slot::{Slot, Woken};

/// Where in the call a failure came from, for its text.
#[derive(Clone, Copy)]
enum Phase {
    Load,
    TopLevel,
    Call,
    Promise,
    Answer,
}

pub(super) struct Call<'a, 'js> {
    pub(super) ctx: &'a Ctx<'js>,
    pub(super) spec: &'a JobSpec,
    pub(super) stop: &'a AtomicBool,
    pub(super) slot: &'a Arc<Slot>,
    pub(super) why: &'a AtomicU8,
}

impl<'js> Call<'_, 'js> {
    /// Loads the script, as a call does, and checks that it defines a
    /// function `run`. A syntax error is told apart from a throw of the
    /// top level by its stack: the parser's error has one frame, the
    /// script's own position, and no function name.
    pub(super) fn check(&self) -> Result<(), CheckFailure> {
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

    pub(super) fn run(&self, arguments: &serde_json::Value) -> ScriptOutput {
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
                base64_decode(&text).ok_or_else(|| {
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
