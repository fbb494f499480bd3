//! The global `rho` of every sandbox: `update`, `sleep`, `answer`,
//! `error`, and the host functions granted by name. Installed before the
//! script loads; runs on the script's thread only.
//!
//! The JavaScript half (the prelude) runs before the script, so what it
//! keeps (`Reflect.apply`, the answers' `WeakMap` and its methods,
//! `Promise`, `Error`) are the originals, whatever the script changes
//! later. The Rust half holds no JavaScript value inside a function the
//! script can reach (the engine's collector cannot see into Rust
//! closures): the native functions capture plain Rust data only, and the
//! helpers Rust calls back are kept on the Rust stack of the call, dropped
//! before its runtime.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rho_tool_core::untrusted::plain::Limits;
use rquickjs::{Array, Coerced, Ctx, Exception, Function, Value};

use crate::convert::{Originals, WalkError, Walker};
use crate::slot::{Callee, HostAsk, Slot};

/// The most sleeps one call may have pending at once.
pub(crate) const MAX_SLEEPS: usize = 10_000;

/// The most calls of host functions one call may have pending at once.
pub(crate) const MAX_HOST_CALLS: usize = 64;

/// The longest sleep a script can ask for, in milliseconds (a year); longer
/// ones are cut to it (the call's timeout ends it long before).
const MAX_SLEEP_MS: f64 = 365.0 * 24.0 * 3600.0 * 1000.0;

const PRELUDE: &str = r#"(function (nativeUpdate, nativeSleep, nativeHost, granted, nativeTool, toolNames, originals) {
  "use strict";
  const functionToString = originals[0];
  const toWellFormed = originals[1];
  const promiseResolve = originals[2];
  const apply = Reflect.apply;
  const freeze = Object.freeze;
  const create = Object.create;
  const PromiseOf = Promise;
  const ErrorOf = Error;
  const Bytes = Uint8Array;
  const isView = ArrayBuffer.isView;
  const subarray = Uint8Array.prototype.subarray;
  const fromCharCode = String.fromCharCode;
  const answers = new WeakMap();
  const getAnswer = WeakMap.prototype.get;
  const setAnswer = WeakMap.prototype.set;
  const waiting = create(null);
  function answer(spec) {
    const token = freeze(create(null));
    const holder = create(null);
    holder.spec = spec;
    apply(setAnswer, answers, [token, holder]);
    return token;
  }
  function settle(id, ok, value) {
    const waiter = waiting[id];
    delete waiting[id];
    if (waiter === undefined) return;
    if (ok) waiter.resolve(value); else waiter.reject(new ErrorOf(value));
  }
  function answerOf(value) {
    if ((typeof value !== "object" && typeof value !== "function") || value === null) return undefined;
    return apply(getAnswer, answers, [value]);
  }
  function binary(data) {
    const bytes = isView(data) ? new Bytes(data.buffer, data.byteOffset, data.byteLength) : new Bytes(data);
    let text = "";
    for (let at = 0; at < bytes.length; at += 8192) {
      text += apply(fromCharCode, undefined, apply(subarray, bytes, [at, at + 8192]));
    }
    return text;
  }
  function waitFor(id, resolve, reject) {
    const waiter = create(null);
    waiter.resolve = resolve;
    waiter.reject = reject;
    waiting[id] = waiter;
  }
  const api = {
    update(value) { nativeUpdate(value, functionToString, toWellFormed, promiseResolve); },
    sleep(ms) { return new PromiseOf((resolve, reject) => { waitFor(nativeSleep(ms), resolve, reject); }); },
    answer,
    error(text) { return answer({ error: text }); },
  };
  for (let index = 0; index < granted.length; index++) {
    const name = granted[index];
    api[name] = function (argument) {
      return new PromiseOf((resolve, reject) => {
        waitFor(nativeHost(name, argument, functionToString, toWellFormed, promiseResolve), resolve, reject);
      });
    };
  }
  globalThis.rho = freeze(api);
  if (toolNames !== null) {
    const ProxyOf = Proxy;
    function caller(name) {
      return function (args) {
        return new PromiseOf((resolve, reject) => {
          waitFor(nativeTool(name, args === undefined ? {} : args, functionToString, toWellFormed, promiseResolve), resolve, reject);
        });
      };
    }
    const allowed = create(null);
    for (let index = 0; index < toolNames.length; index++) {
      allowed[toolNames[index]] = caller(toolNames[index]);
    }
    freeze(allowed);
    // A name the script may not call still answers as the host would
    // answer the model (no such tool, the nearest names), not with a
    // TypeError about `undefined`.
    globalThis.tools = new ProxyOf(allowed, {
      get(target, name) {
        if (typeof name !== "string") return undefined;
        const known = target[name];
        return known !== undefined ? known : caller(name);
      },
    });
  }
  return [settle, answerOf, binary];
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

/// What the call keeps of the global: the helpers it calls back and what
/// the script waits for.
pub(crate) struct RhoGlobal<'js> {
    /// `settle(id, ok, value)`: resolves the promise waiting under `id`
    /// with `value`, or rejects it with an `Error` of the text `value`.
    pub(crate) settle: Function<'js>,
    /// `answerOf(value)`: the holder `{ spec }` of an answer built by
    /// `rho.answer`, or `undefined`.
    pub(crate) answer_of: Function<'js>,
    /// `binary(data)`: the bytes of a typed array, `ArrayBuffer` or array
    /// of byte values, as a string of one char per byte.
    pub(crate) binary: Function<'js>,
    pub(crate) pending: Rc<RefCell<Pending>>,
}

/// Makes a value plain under `limits` with the helpers handed back by the
/// prelude, or the error the script sees (`what` names the function).
fn plain_for<'js>(
    ctx: &Ctx<'js>,
    what: &str,
    value: Value<'js>,
    helpers: (Function<'js>, Function<'js>, Function<'js>),
    limits: &Limits,
) -> rquickjs::Result<rho_tool_core::untrusted::Plain> {
    let originals = Originals::from_parts(helpers.0, helpers.1, helpers.2);
    match Walker::new(&originals, limits).convert(value) {
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

/// `names` as a JavaScript array.
fn names_array<'js>(ctx: &Ctx<'js>, names: &[Arc<str>]) -> rquickjs::Result<Array<'js>> {
    let array = Array::new(ctx.clone())?;
    for (index, name) in names.iter().enumerate() {
        array.set(index, &**name)?;
    }
    Ok(array)
}

/// The native half of `rho.<name>` (`callee` a grant) or `tools.<name>`
/// (a tool): makes the argument plain, hands the call to the slot, and
/// gives the id its promise waits under.
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
              name: String,
              argument: Value<'js>,
              function_to_string: Function<'js>,
              to_well_formed: Function<'js>,
              promise_resolve: Function<'js>|
              -> rquickjs::Result<f64> {
            if pending.borrow().host_calls >= MAX_HOST_CALLS {
                return Err(Exception::throw_range(
                    &ctx,
                    &format!(
                        "{prefix}.{name}: more than {MAX_HOST_CALLS} calls of host functions and tools pending at once"
                    ),
                ));
            }
            let helpers = (function_to_string, to_well_formed, promise_resolve);
            let what = format!("{prefix}.{name}");
            let argument = plain_for(&ctx, &what, argument, helpers, &limits)?;
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
            Ok(id_value(id))
        },
    )
}

/// Ids stay far below 2^53: exact as JavaScript numbers.
#[allow(clippy::cast_precision_loss)]
pub(crate) fn id_value(id: u64) -> f64 {
    id as f64
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
    let update = {
        let slot = Arc::clone(slot);
        let limits = limits.clone();
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>,
                  value: Value<'js>,
                  function_to_string: Function<'js>,
                  to_well_formed: Function<'js>,
                  promise_resolve: Function<'js>|
                  -> rquickjs::Result<()> {
                let helpers = (function_to_string, to_well_formed, promise_resolve);
                let partial = plain_for(&ctx, "rho.update", value, helpers, &limits)?;
                slot.push_update(partial);
                Ok(())
            },
        )?
    };
    let pending = Rc::new(RefCell::new(Pending::default()));
    let sleep = {
        let pending = Rc::clone(&pending);
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, Coerced(ms): Coerced<f64>| -> rquickjs::Result<f64> {
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
                Ok(id_value(id))
            },
        )?
    };
    let host = host_function(ctx, &pending, slot, limits, Callee::Grant)?;
    let tool = host_function(ctx, &pending, slot, limits, Callee::Tool)?;
    let names = names_array(ctx, granted)?;
    let tool_names = match tools {
        Some(tools) => names_array(ctx, tools)?.into_value(),
        None => Value::new_null(ctx.clone()),
    };
    let prelude: Function<'js> = ctx.eval(PRELUDE)?;
    let (function_to_string, to_well_formed, promise_resolve) = originals.parts();
    let kept = Array::new(ctx.clone())?;
    kept.set(0, function_to_string)?;
    kept.set(1, to_well_formed)?;
    kept.set(2, promise_resolve)?;
    let helpers: Array<'js> = prelude.call((update, sleep, host, names, tool, tool_names, kept))?;
    Ok(RhoGlobal {
        settle: helpers.get(0)?,
        answer_of: helpers.get(1)?,
        binary: helpers.get(2)?,
        pending,
    })
}

/// The bytes of standard or URL-safe base64 text (padding optional,
/// whitespace ignored), or `None` when it is not base64.
pub(crate) fn base64(text: &str) -> Option<Vec<u8>> {
    let mut bytes = Vec::with_capacity(text.len() / 4 * 3 + 2);
    let mut bits: u32 = 0;
    let mut held: u32 = 0;
    let mut padding = 0;
    for byte in text.bytes() {
        let value = match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => {
                padding += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' | b'\n' => continue,
            _ => return None,
        };
        if padding > 0 {
            return None;
        }
        bits = (bits << 6) | u32::from(value);
        held += 6;
        if held >= 8 {
            held -= 8;
            bytes.push(((bits >> held) & 0xff) as u8);
            bits &= (1 << held) - 1;
        }
    }
    // One char of a group alone carries no whole byte.
    if padding > 2 || held >= 6 {
        return None;
    }
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_reads_standard_and_url_safe_text_with_or_without_padding() {
        assert_eq!(base64("aGVsbG8=").as_deref(), Some(&b"hello"[..]));
        assert_eq!(base64("aGVsbG8").as_deref(), Some(&b"hello"[..]));
        assert_eq!(base64("aGVs\nbG8h").as_deref(), Some(&b"hello!"[..]));
        assert_eq!(base64("-_8=").as_deref(), Some(&[0xfb, 0xff][..]));
        assert_eq!(base64("").as_deref(), Some(&[][..]));
    }

    #[test]
    fn base64_refuses_what_is_not_base64() {
        assert_eq!(base64("a"), None);
        assert_eq!(base64("ab=c"), None);
        assert_eq!(base64("ab*c"), None);
        assert_eq!(base64("ab==="), None);
    }

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
