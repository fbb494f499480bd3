//! A `serde::Serializer` that makes [`Plain`] data under [`Limits`].
//!
//! The conversion state ([`Ctx`]) counts values and bytes as they are made,
//! keeps the path to the value being converted, and records the first error.
//! That error is sticky: a foreign `Serialize` that swallows an error and goes
//! on gets an error from every later call, and the conversion ends with the
//! recorded error whatever the `Serialize` returns.

use std::fmt::{self, Display};

use serde::ser::{self, Serialize};

use super::path;
use super::{Limits, Plain, PlainError};

// The modules below that import each other in a circle, each circle one
// concept (`.ci/cycles.py` holds every other module to one-way imports):
// One concept: compound, ctx, key, value — one serde `Serializer`, split by
// role: the value serializer hands lists and maps to the compound ones, which
// send their keys through `key` and their elements back through `value`,
// all under one shared context (`Ctx`).
mod compound;
mod ctx;
mod key;
mod value;

use ctx::Ctx;
use value::ValueSer;

/// Messages of `serde::ser::Error::custom` are cut after this many bytes.
const MAX_CUSTOM_MESSAGE: usize = 4096;

/// Converts `value` to [`Plain`] data, within `limits`.
///
/// The module documentation lists the mapping. The limits are checked as the
/// value is walked, before the part that exceeds one is copied: a too-long
/// string is refused before it is copied, a too-deep value at the level that
/// is one too deep (so a value nested a million levels returns an error
/// without exhausting the stack), a too-large one when its count crosses the
/// limit.
///
/// This runs the value's `Serialize` (and any `Display` it uses) on the
/// calling thread, and does not catch a panic of it: for a value from
/// untrusted code, use [`plain_owned`](super::plain_owned) or
/// [`Foreign`](super::Foreign) inside the tool's task.
///
/// # Errors
///
/// The first problem met: [`PlainError::LimitExceeded`],
/// [`PlainError::Unsupported`] (a map key that is not a scalar), or
/// [`PlainError::Custom`] (the value's `Serialize` returned an error), each
/// with the path where it happened.
///
/// ```
/// use std::collections::BTreeMap;
/// use rho::untrusted::plain::{Limits, Plain, to_plain};
///
/// let mut counts = BTreeMap::new();
/// counts.insert(7_u8, (i128::MAX, f32::INFINITY));
/// let value = to_plain(&counts, &Limits::default()).unwrap();
/// assert_eq!(
///     value.get("7").and_then(|pair| pair.at(0)),
///     Some(&Plain::Text("170141183460469231731687303715884105727".into()))
/// );
/// assert_eq!(value.get("7").and_then(|pair| pair.at(1)), Some(&Plain::Text("inf".into())));
/// ```
pub fn to_plain<T: Serialize + ?Sized>(value: &T, limits: &Limits) -> Result<Plain, PlainError> {
    let mut ctx = Ctx {
        limits: limits.clone(),
        bytes: 0,
        elements: 0,
        frames: 0,
        error_path: Vec::new(),
        fill_level: 0,
        error: None,
    };
    let result = value.serialize(ValueSer {
        ctx: &mut ctx,
        depth: 0,
    });
    if let Some(error) = ctx.error {
        ctx.error_path.reverse();
        return Err(with_path(error, path::render(&ctx.error_path)));
    }
    match result {
        Ok(plain) => Ok(plain),
        Err(SerError::Custom(message)) => Err(PlainError::Custom {
            message,
            path: "$".to_owned(),
        }),
        // Only `Ctx::fail` makes this, and it records the error first.
        Err(SerError::Recorded) => Err(PlainError::Custom {
            message: "the value's Serialize returned an error".to_owned(),
            path: "$".to_owned(),
        }),
    }
}

/// The error the serializer hands to the value's `Serialize`.
#[derive(Debug)]
enum SerError {
    /// The error is recorded in [`Ctx::error`] (with its path).
    Recorded,
    /// Made by the value's own `Serialize` with `ser::Error::custom`; its path
    /// is recorded where a container of ours receives it.
    Custom(String),
}

impl Display for SerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SerError::Recorded => f.write_str("the value cannot be made plain data"),
            SerError::Custom(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for SerError {}

impl ser::Error for SerError {
    fn custom<T: Display>(message: T) -> Self {
        let (mut text, cut) = display_bounded(&message, MAX_CUSTOM_MESSAGE);
        if cut {
            text.push('…');
        }
        SerError::Custom(text)
    }
}

/// Formats `value`, stopping after `max` bytes (cut at a character boundary).
/// Returns the text and whether it was cut. The `Display` is told to stop by
/// a write error, so a huge or endless one is not written out.
fn display_bounded<T: Display + ?Sized>(value: &T, max: usize) -> (String, bool) {
    struct Bounded {
        text: String,
        max: usize,
        cut: bool,
    }
    impl fmt::Write for Bounded {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            let room = self.max - self.text.len();
            if s.len() <= room {
                self.text.push_str(s);
                return Ok(());
            }
            let mut end = room;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            self.text.push_str(&s[..end]);
            self.cut = true;
            Err(fmt::Error)
        }
    }
    let mut out = Bounded {
        text: String::new(),
        max,
        cut: false,
    };
    // An error is either ours (cut) or the Display's own; either way we keep
    // what was written.
    let _ = fmt::write(&mut out, format_args!("{value}"));
    (out.text, out.cut)
}

/// A type or variant name for a message, cut after 64 bytes: the names come
/// from the value's own code and may be anything.
fn short(name: &str) -> String {
    let (mut text, cut) = display_bounded(name, 64);
    if cut {
        text.push('…');
    }
    text
}

/// `error` with its path set (the variants that carry one).
fn with_path(mut error: PlainError, rendered: String) -> PlainError {
    match &mut error {
        PlainError::LimitExceeded { path, .. }
        | PlainError::Unsupported { path, .. }
        | PlainError::Custom { path, .. } => *path = rendered,
        _ => {}
    }
    error
}
