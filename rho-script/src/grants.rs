//! The host functions a script is granted: the global `rho`, with
//! `update`, `sleep`, `answer` and `error`. Installed in every sandbox
//! before the script loads; runs on the script's thread only.
//!
//! The JavaScript half (the prelude) runs before the script, so what it
//! keeps (`Reflect.apply`, the answers' `WeakMap` and its methods,
//! `Promise`) are the originals, whatever the script changes later. The
//! Rust half holds no JavaScript value inside a function the script can
//! reach (the engine's collector cannot see into Rust closures): the
//! native functions capture plain Rust data only, and the helpers Rust
//! calls back are kept on the Rust stack of the call, dropped before its
//! runtime.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rho_tool_core::untrusted::plain::Limits;
use rquickjs::{Array, Coerced, Ctx, Exception, Function, Value};

use crate::convert::{Originals, WalkError, Walker};
use crate::pool::Slot;

/// The most sleeps one call may have pending at once.
pub(crate) const MAX_SLEEPS: usize = 10_000;

/// The longest sleep a script can ask for, in milliseconds (a year); longer
/// ones are cut to it (the call's timeout ends it long before).
const MAX_SLEEP_MS: f64 = 365.0 * 24.0 * 3600.0 * 1000.0;

const PRELUDE: &str = r#"(function (nativeUpdate, nativeSleep, functionToString, toWellFormed, promiseResolve) {
  "use strict";
  const apply = Reflect.apply;
  const freeze = Object.freeze;
  const create = Object.create;
  const PromiseOf = Promise;
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
  function fire(id) {
    const resolve = waiting[id];
    delete waiting[id];
    if (resolve !== undefined) resolve();
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
  globalThis.rho = freeze({
    update(value) { nativeUpdate(value, functionToString, toWellFormed, promiseResolve); },
    sleep(ms) { return new PromiseOf((resolve) => { waiting[nativeSleep(ms)] = resolve; }); },
    answer,
    error(text) { return answer({ error: text }); },
  });
  return [fire, answerOf, binary];
})"#;

/// The sleeps a call has pending: when each is due, and its id.
#[derive(Default)]
pub(crate) struct Timers {
    next: u64,
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

/// What the call keeps of the grants: the helpers it calls back and the
/// pending sleeps.
pub(crate) struct Grants<'js> {
    /// `fire(id)`: resolves the promise of sleep `id`.
    pub(crate) fire: Function<'js>,
    /// `answerOf(value)`: the holder `{ spec }` of an answer built by
    /// `rho.answer`, or `undefined`.
    pub(crate) answer_of: Function<'js>,
    /// `binary(data)`: the bytes of a typed array, `ArrayBuffer` or array
    /// of byte values, as a string of one char per byte.
    pub(crate) binary: Function<'js>,
    pub(crate) timers: Rc<RefCell<Timers>>,
}

/// Installs `rho` in `ctx`: partial results go to `slot`, made plain under
/// `limits`.
pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    originals: &Originals<'js>,
    slot: &Arc<Slot>,
    limits: &Limits,
) -> rquickjs::Result<Grants<'js>> {
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
                let originals =
                    Originals::from_parts(function_to_string, to_well_formed, promise_resolve);
                match Walker::new(&originals, &limits).convert(value) {
                    Ok(partial) => {
                        slot.push_update(partial);
                        Ok(())
                    }
                    // The exception is pending: it goes on in the script.
                    Err(WalkError::Threw { .. }) => Err(rquickjs::Error::Exception),
                    Err(error) => Err(Exception::throw_type(
                        &ctx,
                        &format!(
                            "rho.update: the value cannot be made plain data: {}",
                            error.describe()
                        ),
                    )),
                }
            },
        )?
    };
    let timers = Rc::new(RefCell::new(Timers::default()));
    let sleep = {
        let timers = Rc::clone(&timers);
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, Coerced(ms): Coerced<f64>| -> rquickjs::Result<f64> {
                let mut timers = timers.borrow_mut();
                if timers.pending.len() >= MAX_SLEEPS {
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
                let id = timers.next;
                timers.next += 1;
                timers.pending.insert((due, id));
                // Ids stay far below 2^53: exact as JavaScript numbers.
                #[allow(clippy::cast_precision_loss)]
                Ok(id as f64)
            },
        )?
    };
    let prelude: Function<'js> = ctx.eval(PRELUDE)?;
    let (function_to_string, to_well_formed, promise_resolve) = originals.parts();
    let helpers: Array<'js> = prelude.call((
        update,
        sleep,
        function_to_string,
        to_well_formed,
        promise_resolve,
    ))?;
    Ok(Grants {
        fire: helpers.get(0)?,
        answer_of: helpers.get(1)?,
        binary: helpers.get(2)?,
        timers,
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
