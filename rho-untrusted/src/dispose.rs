//! Running and dropping foreign code without letting it unwind.
//!
//! Every function here returns normally whatever the foreign code does, as long
//! as the process is built with `panic = "unwind"` (see
//! [`PANICS_ARE_CONTAINED`](crate::PANICS_ARE_CONTAINED)). A panic payload is
//! itself a foreign value: its `Drop` may panic again. We drop it inside
//! `catch_unwind`, and a second payload coming out of that drop is forgotten,
//! never dropped: leaking a few bytes in a pathological case is the price of
//! a bound on how much foreign code can run.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::hook::ContainedScope;

/// A caught panic payload: the value a `panic!` carried, still unformatted.
pub type Payload = Box<dyn Any + Send + 'static>;

/// Drops a panic payload, containing a panic of its `Drop`.
///
/// A payload whose `Drop` panics produces a second payload; that one is
/// forgotten (leaked) so no more of its code runs. Returns `true` when the
/// payload was dropped cleanly, `false` when its `Drop` panicked.
pub fn dispose(payload: Payload) -> bool {
    let _scope = ContainedScope::enter();
    match catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        Ok(()) => true,
        Err(second) => {
            std::mem::forget(second);
            false
        }
    }
}

/// Every other containment goes through here: one place that marks the
/// thread as running contained code (for the quiet hook), catches the
/// unwind and turns the payload into its message and location.
fn contain<R>(f: impl FnOnce() -> R) -> Result<R, Caught> {
    let scope = ContainedScope::enter();
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(value) => Ok(value),
        Err(payload) => {
            let location = scope.take_location();
            drop(scope);
            Err(Caught {
                message: take_message(payload),
                location,
            })
        }
    }
}

/// Drops any value, containing a panic of its `Drop`.
///
/// # Errors
///
/// [`DropPanicked`] when the value's `Drop` panicked; it keeps the panic's
/// message only when the payload was a `String` or `&str` (see
/// [`panic_message`](crate::panic_message)), and the payload is disposed of.
pub fn drop_contained<T>(value: T) -> Result<(), DropPanicked> {
    contain(move || drop(value)).map_err(|caught| DropPanicked {
        message: caught.message,
    })
}

/// Runs `f`, catching a panic; the payload is turned into its message (if it
/// has one) and disposed of with [`dispose`] before this returns.
///
/// # Errors
///
/// [`Caught`] when `f` panicked: the message (for `String`/`&str`
/// payloads) and, when the quiet hook is installed (see
/// [`install_quiet_panic_hook`](crate::install_quiet_panic_hook)), where
/// the panic was raised.
pub fn call_contained<R>(f: impl FnOnce() -> R) -> Result<R, Caught> {
    contain(f)
}

/// Reads the message out of a payload (if it is a `String` or `&str`) and
/// disposes of the payload.
pub fn take_message(payload: Payload) -> Option<String> {
    let message = crate::panic_message(payload.as_ref()).map(str::to_owned);
    dispose(payload);
    message
}

/// A panic caught by [`call_contained`]: only its message and location, the
/// payload is gone.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Caught {
    /// The panic's message when its payload was a `String` or `&str`.
    pub message: Option<String>,
    /// Where it was raised (`file:line:column`), recorded only while the
    /// quiet hook is installed.
    pub location: Option<String>,
}

/// A value's `Drop` panicked inside [`drop_contained`]; the payload is gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropPanicked {
    /// The panic's message when its payload was a `String` or `&str`.
    pub message: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static DROPS: AtomicUsize = AtomicUsize::new(0);

    struct PanicsOnDrop(u8);
    impl Drop for PanicsOnDrop {
        fn drop(&mut self) {
            DROPS.fetch_add(1, Ordering::SeqCst);
            if self.0 > 0 {
                std::panic::panic_any(PanicsOnDrop(self.0 - 1));
            }
        }
    }

    #[test]
    fn a_payload_whose_drop_panics_is_contained_and_its_second_payload_forgotten() {
        let before = DROPS.load(Ordering::SeqCst);
        let clean = dispose(Box::new(PanicsOnDrop(3)));
        assert!(!clean);
        // The first payload's drop ran (and panicked); the second payload is
        // forgotten, so its drop never runs.
        assert_eq!(DROPS.load(Ordering::SeqCst) - before, 1);
    }

    #[test]
    fn call_contained_keeps_only_string_messages() {
        let caught = call_contained(|| std::panic::panic_any(7_u32)).expect_err("it panics");
        assert_eq!(caught.message, None);
        let caught = call_contained(|| panic!("boom {}", 1)).expect_err("it panics");
        assert_eq!(caught.message.as_deref(), Some("boom 1"));
        assert_eq!(call_contained(|| 5).ok(), Some(5));
    }
}
