//! Converting a foreign value that is owned, then disposing of it, with every
//! panic of its code contained.

use std::fmt;

use serde::Serialize;

use super::dismantle::dispose_of;
use super::{Limits, Plain, PlainError, to_plain};
use crate::DropPanicked;

/// Converts `value` to [`Plain`] data, then drops it; a panic of either is
/// contained.
///
/// This is how an untrusted tool's answer leaves its task: call it inside the
/// task, so the value's `Serialize` and `Drop` (foreign code) run there. The
/// value is dropped in every case, also when the conversion fails. A panic
/// payload is read only when it is a `String` or `&str`, and disposed of with
/// its own `Drop` contained (see [`dispose`](crate::dispose)).
///
/// # Errors
///
/// - [`PlainError::Panicked`] when the `Serialize` (or a `Display` it used)
///   panicked;
/// - any error of [`to_plain`] when the conversion failed;
/// - [`PlainError::DropPanicked`] when the conversion succeeded but the
///   value's `Drop` panicked: the answer of a tool whose value cannot even be
///   dropped is an error.
///
/// When both the conversion and the drop fail, the conversion's error is
/// returned.
///
/// As everywhere in Rust, a `Drop` that panics while a panic unwinds through
/// it (a local of the value's own `Serialize`, say) aborts the process; no
/// library can contain that.
///
/// The value is dropped by its own `Drop`, which for a `serde_json::Value`
/// or a [`Plain`] recurses once per level of nesting: one nested deeper than
/// the thread's stack allows overflows it even though the conversion
/// refused it. Give values that may nest that deep to [`Foreign`], which
/// takes those two apart without recursion.
///
/// ```
/// use rho::untrusted::plain::{Limits, PlainError, plain_owned};
///
/// struct Bad;
/// impl serde::Serialize for Bad {
///     fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
///         panic!("no answer today")
///     }
/// }
/// assert_eq!(
///     plain_owned(Bad, &Limits::default()),
///     Err(PlainError::Panicked { message: Some("no answer today".into()) })
/// );
/// ```
pub fn plain_owned<T: Serialize>(value: T, limits: &Limits) -> Result<Plain, PlainError> {
    convert_then_dispose(value, limits, crate::drop_contained)
}

/// [`plain_owned`], with `dispose` dropping the value.
fn convert_then_dispose<T: Serialize>(
    value: T,
    limits: &Limits,
    dispose: impl FnOnce(T) -> Result<(), DropPanicked>,
) -> Result<Plain, PlainError> {
    let converted = crate::call_contained(|| to_plain(&value, limits));
    let dropped = dispose(value);
    match (converted, dropped) {
        (Err(caught), _) => Err(PlainError::Panicked {
            message: caught.message,
        }),
        (Ok(Err(error)), _) => Err(error),
        (Ok(Ok(_)), Err(panicked)) => Err(PlainError::DropPanicked {
            message: panicked.message,
        }),
        (Ok(Ok(plain)), Ok(())) => Ok(plain),
    }
}

/// A foreign answer not converted yet, its type erased.
///
/// It holds any `Serialize + Send + 'static` value until
/// [`into_plain`](Foreign::into_plain) converts it with [`plain_owned`]. Both
/// converting and dropping it run foreign code (the value's `Serialize` and
/// `Drop`), so a `Foreign` must be converted or dropped inside the tool's
/// task, never in the loop. Neither ever unwinds: a panic of the value's code
/// becomes an error, or is contained and forgotten when an unconverted
/// `Foreign` is dropped.
///
/// A `serde_json::Value` or a [`Plain`] is taken apart without recursion
/// once converted (or when dropped unconverted), however deep it nests: a
/// recursive drop of one nested a million levels deep would overflow the
/// task's stack. A value of any other type is dropped by its own `Drop`.
///
/// Its `Debug` prints nothing of the value.
///
/// ```
/// use rho::untrusted::plain::{Foreign, Limits, Plain};
///
/// let answer = Foreign::new(vec![1_u8, 2]);
/// assert_eq!(format!("{answer:?}"), "Foreign(..)");
/// assert_eq!(
///     answer.into_plain(&Limits::default()),
///     Ok(Plain::List(vec![Plain::UInt(1), Plain::UInt(2)]))
/// );
/// ```
pub struct Foreign(Box<Convert>);

/// The captured value with its conversion.
type Convert = dyn FnOnce(&Limits) -> Result<Plain, PlainError> + Send;

impl Foreign {
    /// Captures `value` for a later conversion.
    pub fn new<T: Serialize + Send + 'static>(value: T) -> Self {
        let guard = DropGuard(Some(value));
        Foreign(Box::new(move |limits: &Limits| guard.convert(limits)))
    }

    /// Converts the value as [`plain_owned`] does, then disposes of it.
    ///
    /// # Errors
    ///
    /// As [`plain_owned`].
    pub fn into_plain(self, limits: &Limits) -> Result<Plain, PlainError> {
        (self.0)(limits)
    }
}

impl fmt::Debug for Foreign {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Foreign(..)")
    }
}

/// Holds a captured value; dropping it unconverted drops the value with a
/// panic contained.
struct DropGuard<T: 'static>(Option<T>);

impl<T: Serialize + 'static> DropGuard<T> {
    fn convert(mut self, limits: &Limits) -> Result<Plain, PlainError> {
        match self.0.take() {
            Some(value) => convert_then_dispose(value, limits, dispose_of),
            // Not reachable: a guard is converted at most once, by value.
            None => Err(PlainError::Unsupported {
                what: "an answer converted twice".to_owned(),
                path: "$".to_owned(),
            }),
        }
    }
}

impl<T: 'static> Drop for DropGuard<T> {
    fn drop(&mut self) {
        if let Some(value) = self.0.take() {
            // The panic (if any) is contained and its payload disposed of;
            // nobody is left to tell.
            let _ = dispose_of(value);
        }
    }
}
