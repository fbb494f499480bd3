//! The global `rho` of every sandbox: `update`, `sleep`, `answer`,
//! `error`, the host functions granted by name and, in code mode, the
//! global `tools`. Installed before the script loads; runs on the
//! script's thread only.
//!
//! Everything is made natively, with no JavaScript source to parse: the
//! prelude this replaced cost more to parse and compile on every call than
//! the rest of rho's part of the call together. What it needs of the
//! built-ins (`Function.prototype.bind`, `Object.freeze`, the answers'
//! `WeakMap` and its methods, `Promise.resolve`, `Error`, and what the
//! `binary` helper uses) is read before the script runs, so those are the
//! originals, whatever the script changes later.
//!
//! A native closure captures plain Rust data only, never a JavaScript
//! value (the engine's collector cannot see into Rust closures, and the
//! runtime must be freeable with nothing left alive). The JavaScript
//! values a native function needs sit in one array, the kit, which
//! `Function.prototype.bind` binds as the function's first argument: the
//! collector sees a bound function's arguments, and a script cannot read
//! them. What Rust calls back (`settle`, `answer_of`, `binary`) it reaches
//! through the kit held in [`RhoGlobal`], on the Rust stack of the call,
//! dropped before its runtime.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rho_tool_core::untrusted::plain::Limits;
use rquickjs::function::{Opt, This};
use rquickjs::object::Property;
use rquickjs::proxy::ProxyHandler;
use rquickjs::{
    Array, Coerced, Constructor, Ctx, Exception, Function, IntoJs, Object, Promise, Proxy, Value,
};

use crate::sandbox::convert::{Originals, WalkError, Walker};
use crate::sandbox::host::{Callee, HostAsk};
use crate::sandbox::slot::Slot;

/// The most sleeps one call may have pending at once.
pub(crate) const MAX_SLEEPS: usize = 10_000;

/// The most calls of host functions one call may have pending at once.
pub(crate) const MAX_HOST_CALLS: usize = 64;

/// The longest sleep a script can ask for, in milliseconds (a year); longer
/// ones are cut to it (the call's timeout ends it long before).
const MAX_SLEEP_MS: f64 = 365.0 * 24.0 * 3600.0 * 1000.0;

/// Where each value sits in the kit. The walk's originals come first
/// ([`Originals::values`]).
mod kit {
    pub(super) const ORIGINALS: usize = 0;
    /// The promises waiting for a sleep or a host call: `[resolve,
    /// reject]` by id, in an object without a prototype.
    pub(super) const WAITING: usize = 4;
    /// The answers built by `rho.answer`: a `WeakMap` from token to holder.
    pub(super) const ANSWERS: usize = 5;
    pub(super) const GET_ANSWER: usize = 6;
    pub(super) const SET_ANSWER: usize = 7;
    pub(super) const FREEZE: usize = 8;
    pub(super) const ERROR: usize = 9;
    pub(super) const BIND: usize = 10;
    /// What the `binary` helper uses: `Uint8Array`, `ArrayBuffer.isView`,
    /// `Uint8Array.prototype.subarray`, `String.fromCharCode`,
    /// `Reflect.apply`.
    pub(super) const BYTES: usize = 11;
    pub(super) const IS_VIEW: usize = 12;
    pub(super) const SUBARRAY: usize = 13;
    pub(super) const FROM_CHAR_CODE: usize = 14;
    pub(super) const APPLY: usize = 15;
    /// Code mode: the native half of `tools.<name>`.
    pub(super) const TOOL: usize = 16;
}

/// The helper that reads an image's bytes, made only when an answer has
/// an image whose data is not base64 text: few calls do. It is handed the
/// originals the kit kept, so what the script replaced before it was made
/// changes nothing.
const BINARY: &str = r#"(function (Bytes, isView, subarray, fromCharCode, apply) {
  "use strict";
  return function binary(data) {
    const bytes = isView(data) ? new Bytes(data.buffer, data.byteOffset, data.byteLength) : new Bytes(data);
    let text = "";
    for (let at = 0; at < bytes.length; at += 8192) {
      text += apply(fromCharCode, undefined, apply(subarray, bytes, [at, at + 8192]));
    }
    return text;
  };
})"#;

/// The sleeps a call has pending: when each is due, and its id.
#[derive(Default)]
pub(crate) struct Timers {
    pending: BTreeSet<(Instant, u64)>,
}

impl Timers {
    /// When the first pending sleep is due.
    pub(crate) fn next_due(&self) -> Option<Instant> {
        self.pending.first().map(|(due, _)| *due)
    }

    /// The ids of the sleeps due at `now`, the earliest first.
    pub(crate) fn take_due(&mut self, now: Instant) -> Vec<u64> {
        let mut due = Vec::new();
        while let Some(&(when, id)) = self.pending.first() {
            if when > now {
                break;
            }
            self.pending.pop_first();
            due.push(id);
        }
        due
    }
}

/// What the script waits for from outside: its sleeps and its calls of
/// host functions, under ids shared by both.
#[derive(Default)]
pub(crate) struct Pending {
    next_id: u64,
    pub(crate) timers: Timers,
    /// Host calls asked for and not yet answered.
    pub(crate) host_calls: usize,
}

impl Pending {
    fn id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Whether the script waits for anything at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.host_calls == 0 && self.timers.pending.is_empty()
    }
}

/// What the call keeps of the global: the kit, through which it settles
/// promises and reads answers, and what the script waits for.
pub(crate) struct RhoGlobal<'js> {
    kit: Array<'js>,
    /// The `binary` helper, once made.
    binary: RefCell<Option<Function<'js>>>,
    pub(crate) pending: Rc<RefCell<Pending>>,
}

impl<'js> RhoGlobal<'js> {
    /// Resolves the promise waiting under `id` with `result`'s value, or
    /// rejects it with an `Error` of its text; nothing when none waits.
    pub(crate) fn settle(
        &self,
        id: u64,
        result: Result<Value<'js>, String>,
    ) -> rquickjs::Result<()> {
        let waiting: Object<'js> = self.kit.get(kit::WAITING)?;
        let key = id_value(id);
        let waiter: Value<'js> = waiting.get(key)?;
        waiting.remove(key)?;
        let Some(waiter) = waiter.into_array() else {
            return Ok(());
        };
        match result {
            Ok(value) => {
                let resolve: Function<'js> = waiter.get(0)?;
                resolve.call((value,))
            }
            Err(text) => {
                let reject: Function<'js> = waiter.get(1)?;
                let error: Constructor<'js> = self.kit.get(kit::ERROR)?;
                let error: Value<'js> = error.construct((text,))?;
                reject.call((error,))
            }
        }
    }

    /// The holder `{ spec }` of an answer built by `rho.answer` (or
    /// `rho.error`) when `value` is one, else `undefined`.
    pub(crate) fn answer_of(&self, value: &Value<'js>) -> rquickjs::Result<Value<'js>> {
        if value.as_object().is_none() {
            return Ok(Value::new_undefined(value.ctx().clone()));
        }
        let answers: Object<'js> = self.kit.get(kit::ANSWERS)?;
        let get: Function<'js> = self.kit.get(kit::GET_ANSWER)?;
        get.call((This(answers), value.clone()))
    }

    /// The bytes of a typed array, `ArrayBuffer` or array of byte values,
    /// as a string of one char per byte.
    pub(crate) fn binary(
        &self,
        ctx: &Ctx<'js>,
        data: Value<'js>,
    ) -> rquickjs::Result<rquickjs::String<'js>> {
        let made = self.binary.borrow().clone();
        let binary = match made {
            Some(binary) => binary,
            None => {
                let maker: Function<'js> = ctx.eval(BINARY)?;
                let binary: Function<'js> = maker.call((
                    self.kit.get::<Value<'js>>(kit::BYTES)?,
                    self.kit.get::<Value<'js>>(kit::IS_VIEW)?,
                    self.kit.get::<Value<'js>>(kit::SUBARRAY)?,
                    self.kit.get::<Value<'js>>(kit::FROM_CHAR_CODE)?,
                    self.kit.get::<Value<'js>>(kit::APPLY)?,
                ))?;
                *self.binary.borrow_mut() = Some(binary.clone());
                binary
            }
        };
        binary.call((data,))
    }
}

/// Makes a value plain under `limits` with `originals`, or the error the
/// script sees (`what` names the function).
fn plain_for<'js>(
    ctx: &Ctx<'js>,
    what: &str,
    value: Value<'js>,
    originals: &Originals<'js>,
    limits: &Limits,
) -> rquickjs::Result<rho_tool_core::untrusted::Plain> {
    match Walker::new(originals, limits).convert(value) {
        Ok(plain) => Ok(plain),
        // The exception is pending: it goes on in the script.
        Err(WalkError::Threw { .. }) => Err(rquickjs::Error::Exception),
        Err(error) => Err(Exception::throw_type(
            ctx,
            &format!(
                "{what}: the value cannot be made plain data: {}",
                error.describe()
            ),
        )),
    }
}

/// A promise whose outcome `work` decides: `work` gives the id the promise
/// waits under (it is kept in the kit until settled), or throws, and the
/// promise rejects with what it threw, as a `Promise` executor's throw
/// would.
fn promised<'js>(
    ctx: &Ctx<'js>,
    kit: &Array<'js>,
    work: impl FnOnce() -> rquickjs::Result<u64>,
) -> rquickjs::Result<Promise<'js>> {
    let (promise, resolve, reject) = ctx.promise()?;
    match work() {
        Ok(id) => {
            let waiter = Array::new(ctx.clone())?;
            waiter.set(0, resolve)?;
            waiter.set(1, reject)?;
            let waiting: Object<'js> = kit.get(kit::WAITING)?;
            waiting.set(id_value(id), waiter)?;
        }
        Err(error) => {
            // The binding's own errors (a name that is not valid
            // Unicode) become the `TypeError` it would throw for them.
            if !matches!(error, rquickjs::Error::Exception) {
                let _ = Exception::throw_type(ctx, &error.to_string());
            }
            let thrown = ctx.catch();
            reject.call::<_, ()>((thrown,))?;
        }
    }
    Ok(promise)
}

/// The native half of `rho.<name>` (`callee` a grant) or `tools.<name>`
/// (a tool), to be bound to the kit and the name: makes the argument
/// plain, hands the call to the slot, and gives the promise that waits for
/// its end.
fn host_function<'js>(
    ctx: &Ctx<'js>,
    pending: &Rc<RefCell<Pending>>,
    slot: &Arc<Slot>,
    limits: &Limits,
    callee: Callee,
) -> rquickjs::Result<Function<'js>> {
    let pending = Rc::clone(pending);
    let slot = Arc::clone(slot);
    let limits = limits.clone();
    let prefix = match callee {
        Callee::Grant => "rho",
        Callee::Tool => "tools",
    };
    Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>,
              kit: Array<'js>,
              name: Value<'js>,
              argument: Opt<Value<'js>>|
              -> rquickjs::Result<Promise<'js>> {
            promised(&ctx, &kit, || {
                let name: String = name.get()?;
                if pending.borrow().host_calls >= MAX_HOST_CALLS {
                    return Err(Exception::throw_range(
                        &ctx,
                        &format!(
                            "{prefix}.{name}: more than {MAX_HOST_CALLS} calls of host functions and tools pending at once"
                        ),
                    ));
                }
                let argument = match (argument.0, callee) {
                    // A tool called with no arguments gets `{}`.
                    (None, Callee::Tool) => Object::new(ctx.clone())?.into_value(),
                    (Some(argument), Callee::Tool) if argument.is_undefined() => {
                        Object::new(ctx.clone())?.into_value()
                    }
                    (Some(argument), _) => argument,
                    (None, Callee::Grant) => Value::new_undefined(ctx.clone()),
                };
                let originals = Originals::from_values(&kit, kit::ORIGINALS)?;
                let what = format!("{prefix}.{name}");
                let argument = plain_for(&ctx, &what, argument, &originals, &limits)?;
                let id = {
                    let mut pending = pending.borrow_mut();
                    pending.host_calls += 1;
                    pending.id()
                };
                slot.ask_host(HostAsk {
                    id,
                    callee,
                    name: Arc::from(name),
                    argument,
                });
                Ok(id)
            })
        },
    )
}

/// Ids stay far below 2^53: exact as JavaScript numbers.
#[allow(clippy::cast_precision_loss)]
pub(crate) fn id_value(id: u64) -> f64 {
    id as f64
}

/// The answer token of `spec`: a frozen object with no prototype, known
/// by the kit's `WeakMap`, which maps it to the holder `{ spec }`.
fn build_answer<'js>(
    ctx: &Ctx<'js>,
    kit: &Array<'js>,
    spec: Value<'js>,
) -> rquickjs::Result<Object<'js>> {
    let token = Object::new_proto(ctx.clone(), None)?;
    let freeze: Function<'js> = kit.get(kit::FREEZE)?;
    freeze.call::<_, Value<'js>>((token.clone(),))?;
    let holder = Object::new_proto(ctx.clone(), None)?;
    holder.set("spec", spec)?;
    let answers: Object<'js> = kit.get(kit::ANSWERS)?;
    let set: Function<'js> = kit.get(kit::SET_ANSWER)?;
    set.call::<_, Value<'js>>((This(answers), token.clone(), holder))?;
    Ok(token)
}

/// `value` as an own data property of `object`, as an object literal
/// makes it: defined, so no setter a script put on `Object.prototype`
/// runs.
fn define<'js>(object: &Object<'js>, key: &str, value: Value<'js>) -> rquickjs::Result<()> {
    object.prop(
        key,
        Property::from(value).writable().enumerable().configurable(),
    )
}

/// The kit's values before the script: the originals, the tables the
/// natives share, and the built-ins they call.
fn make_kit<'js>(ctx: &Ctx<'js>, originals: &Originals<'js>) -> rquickjs::Result<Array<'js>> {
    let globals = ctx.globals();
    let object: Object<'js> = globals.get("Object")?;
    let weak_map: Constructor<'js> = globals.get("WeakMap")?;
    let weak_map_prototype: Object<'js> = weak_map.get("prototype")?;
    let bytes: Object<'js> = globals.get("Uint8Array")?;
    let bytes_prototype: Object<'js> = bytes.get("prototype")?;
    let array_buffer: Object<'js> = globals.get("ArrayBuffer")?;
    let string: Object<'js> = globals.get("String")?;
    let reflect: Object<'js> = globals.get("Reflect")?;
    let values: [Value<'js>; 13] = [
        Object::new_proto(ctx.clone(), None)?.into_value(),
        weak_map.construct(())?,
        weak_map_prototype.get("get")?,
        weak_map_prototype.get("set")?,
        object.get("freeze")?,
        globals.get("Error")?,
        Function::prototype(ctx.clone()).get("bind")?,
        bytes.into_value(),
        array_buffer.get("isView")?,
        bytes_prototype.get("subarray")?,
        string.get("fromCharCode")?,
        reflect.get("apply")?,
        Value::new_undefined(ctx.clone()),
    ];
    let kit = Array::new(ctx.clone())?;
    for (index, value) in originals.values().into_iter().chain(values).enumerate() {
        kit.set(index, value)?;
    }
    Ok(kit)
}

/// `native` bound to `kit` (and `name`, when given), named `label` (as
/// the JavaScript functions these replaced were named: a grant's or a
/// tool's function had no name).
fn bind<'js>(
    kit: &Array<'js>,
    native: &Function<'js>,
    name: Option<Value<'js>>,
    label: &str,
) -> rquickjs::Result<Function<'js>> {
    let bind: Function<'js> = kit.get(kit::BIND)?;
    let this = This(native.clone());
    let undefined = Value::new_undefined(kit.ctx().clone());
    let bound: Function<'js> = match name {
        Some(name) => bind.call((this, undefined, kit.clone(), name))?,
        None => bind.call((this, undefined, kit.clone()))?,
    };
    bound.set_name(label)?;
    Ok(bound)
}

/// Installs `rho` in `ctx`, with `granted` host functions, and (code
/// mode) `tools`, one function per tool named: partial results, host calls
/// and calls of tools go to `slot`, made plain under `limits`.
pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    originals: &Originals<'js>,
    slot: &Arc<Slot>,
    limits: &Limits,
    granted: &[Arc<str>],
    tools: Option<&[Arc<str>]>,
) -> rquickjs::Result<RhoGlobal<'js>> {
    let kit = make_kit(ctx, originals)?;
    let pending = Rc::new(RefCell::new(Pending::default()));
    let update = {
        let slot = Arc::clone(slot);
        let limits = limits.clone();
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, kit: Array<'js>, value: Opt<Value<'js>>| -> rquickjs::Result<()> {
                let originals = Originals::from_values(&kit, kit::ORIGINALS)?;
                let value = value.0.unwrap_or_else(|| Value::new_undefined(ctx.clone()));
                let partial = plain_for(&ctx, "rho.update", value, &originals, &limits)?;
                slot.push_update(partial);
                Ok(())
            },
        )?
    };
    let sleep = {
        let pending = Rc::clone(&pending);
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>,
                  kit: Array<'js>,
                  ms: Opt<Value<'js>>|
                  -> rquickjs::Result<Promise<'js>> {
                promised(&ctx, &kit, || {
                    let ms = match ms.0 {
                        Some(ms) => ms.get::<Coerced<f64>>()?.0,
                        None => f64::NAN,
                    };
                    let mut pending = pending.borrow_mut();
                    if pending.timers.pending.len() >= MAX_SLEEPS {
                        return Err(Exception::throw_range(
                            &ctx,
                            &format!("rho.sleep: more than {MAX_SLEEPS} sleeps pending at once"),
                        ));
                    }
                    let ms = if ms.is_nan() {
                        0.0
                    } else {
                        ms.clamp(0.0, MAX_SLEEP_MS)
                    };
                    let now = Instant::now();
                    let due = now
                        .checked_add(Duration::from_secs_f64(ms / 1000.0))
                        .unwrap_or(now);
                    let id = pending.id();
                    pending.timers.pending.insert((due, id));
                    Ok(id)
                })
            },
        )?
    };
    let answer = Function::new(
        ctx.clone(),
        |ctx: Ctx<'js>, kit: Array<'js>, spec: Opt<Value<'js>>| -> rquickjs::Result<Object<'js>> {
            let spec = spec.0.unwrap_or_else(|| Value::new_undefined(ctx.clone()));
            build_answer(&ctx, &kit, spec)
        },
    )?;
    let error = Function::new(
        ctx.clone(),
        |ctx: Ctx<'js>, kit: Array<'js>, text: Opt<Value<'js>>| -> rquickjs::Result<Object<'js>> {
            let spec = Object::new(ctx.clone())?;
            define(
                &spec,
                "error",
                text.0.unwrap_or_else(|| Value::new_undefined(ctx.clone())),
            )?;
            build_answer(&ctx, &kit, spec.into_value())
        },
    )?;
    let api = Object::new(ctx.clone())?;
    define(
        &api,
        "update",
        bind(&kit, &update, None, "update")?.into_value(),
    )?;
    define(
        &api,
        "sleep",
        bind(&kit, &sleep, None, "sleep")?.into_value(),
    )?;
    define(
        &api,
        "answer",
        bind(&kit, &answer, None, "answer")?.into_value(),
    )?;
    define(
        &api,
        "error",
        bind(&kit, &error, None, "error")?.into_value(),
    )?;
    if !granted.is_empty() {
        let host = host_function(ctx, &pending, slot, limits, Callee::Grant)?;
        for name in granted {
            let bound = bind(&kit, &host, Some(name.into_js(ctx)?), "")?;
            define(&api, name, bound.into_value())?;
        }
    }
    let freeze: Function<'js> = kit.get(kit::FREEZE)?;
    let api: Value<'js> = freeze.call((api,))?;
    let globals = ctx.globals();
    globals.set("rho", api)?;
    if let Some(tools) = tools {
        let tool = host_function(ctx, &pending, slot, limits, Callee::Tool)?;
        kit.set(kit::TOOL, tool.clone())?;
        globals.set("tools", tools_global(ctx, &kit, &tool, tools)?)?;
    }
    Ok(RhoGlobal {
        kit,
        binary: RefCell::new(None),
        pending,
    })
}

/// Code mode's `tools`: a proxy of a frozen object that holds a function
/// per tool named. A name the script may not call still gives a function,
/// whose call the host answers as it would answer the model (no such tool,
/// the nearest names), not a `TypeError` about `undefined`.
fn tools_global<'js>(
    ctx: &Ctx<'js>,
    kit: &Array<'js>,
    tool: &Function<'js>,
    names: &[Arc<str>],
) -> rquickjs::Result<Proxy<'js>> {
    let allowed = Object::new_proto(ctx.clone(), None)?;
    for name in names {
        allowed.set(&**name, bind(kit, tool, Some(name.into_js(ctx)?), "")?)?;
    }
    let freeze: Function<'js> = kit.get(kit::FREEZE)?;
    freeze.call::<_, Value<'js>>((allowed.clone(),))?;
    let get = Function::new(
        ctx.clone(),
        |kit: Array<'js>, target: Object<'js>, name: Value<'js>| -> rquickjs::Result<Value<'js>> {
            let Some(name) = name.as_string() else {
                return Ok(Value::new_undefined(kit.ctx().clone()));
            };
            let known: Value<'js> = target.get(name.clone())?;
            if !known.is_undefined() {
                return Ok(known);
            }
            let tool: Function<'js> = kit.get(kit::TOOL)?;
            Ok(bind(&kit, &tool, Some(name.clone().into_value()), "")?.into_value())
        },
    )?;
    let handler = Object::new_proto(ctx.clone(), None)?;
    handler.set("get", bind(kit, &get, None, "get")?)?;
    Proxy::new(ctx.clone(), allowed, ProxyHandler::from_object(handler)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_sleeps_come_out_earliest_first() {
        let mut timers = Timers::default();
        let now = Instant::now();
        timers.pending.insert((now + Duration::from_millis(5), 1));
        timers.pending.insert((now, 0));
        timers.pending.insert((now + Duration::from_secs(9), 2));
        assert_eq!(timers.next_due(), Some(now));
        assert_eq!(timers.take_due(now + Duration::from_millis(5)), vec![0, 1]);
        assert_eq!(
            timers.take_due(now + Duration::from_secs(1)),
            Vec::<u64>::new()
        );
    }
}
