//! An opt-in panic hook that keeps contained panics quiet and located.
//!
//! Rust's default hook prints every panic to stderr, even one that rho
//! catches a moment later and turns into an error result. A host that draws
//! a terminal UI cannot have that text over its screen each time a tool
//! panics. [`install_quiet_panic_hook`] installs a hook that, for panics
//! raised while rho is running foreign code under containment (a gate, a
//! tool, an answer's `Serialize` or `Drop`), records where the panic was
//! raised (`file:line:column`) for the error text and prints nothing. Every
//! other panic goes to the hook that was installed before, unchanged.
//!
//! Nothing is installed unless the host asks, and
//! [`restore_panic_hook`] puts the previous hook back.

use std::cell::{Cell, RefCell};
use std::panic::{self, PanicHookInfo};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

type Hook = Arc<dyn Fn(&PanicHookInfo<'_>) + Send + Sync + 'static>;

thread_local! {
    /// How deeply this thread is inside rho's containment right now.
    static CONTAINED_DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Where the last contained panic on this thread was raised.
    static LAST_LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// The hook that was installed before ours, while ours is installed.
static PREVIOUS: Mutex<Option<Hook>> = Mutex::new(None);

/// Whether the quiet hook is installed (read on the panic path only).
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Marks this thread as running contained foreign code until dropped.
pub(crate) struct ContainedScope(());

impl ContainedScope {
    pub(crate) fn enter() -> Self {
        CONTAINED_DEPTH.with(|depth| depth.set(depth.get() + 1));
        ContainedScope(())
    }

    /// The location the quiet hook recorded for the panic this scope just
    /// caught. Called only on that path: the hook writes the slot at every
    /// contained panic, so it always holds the latest one, and the hot path
    /// (no panic) never touches it.
    pub(crate) fn take_location(&self) -> Option<String> {
        // Without the quiet hook nothing writes the slot: what is there is
        // from before the hook was restored, not from this panic.
        if !INSTALLED.load(Ordering::Acquire) {
            return None;
        }
        LAST_LOCATION.with(|last| last.borrow_mut().take())
    }
}

impl Drop for ContainedScope {
    fn drop(&mut self) {
        CONTAINED_DEPTH.with(|depth| depth.set(depth.get().saturating_sub(1)));
    }
}

fn is_contained() -> bool {
    CONTAINED_DEPTH.with(|depth| depth.get() > 0)
}

/// Installs the quiet, located hook in front of the current one.
///
/// Idempotent: installing twice keeps one quiet hook and the original
/// previous hook. Returns `true` if this call installed it.
///
/// # Panics
///
/// Like [`std::panic::set_hook`], when called from a panicking thread.
///
/// ```
/// use rho::untrusted::{install_quiet_panic_hook, restore_panic_hook};
///
/// assert!(install_quiet_panic_hook());
/// assert!(!install_quiet_panic_hook()); // already there
/// assert!(restore_panic_hook());        // the previous hook is back
/// ```
pub fn install_quiet_panic_hook() -> bool {
    let mut previous = PREVIOUS.lock().unwrap_or_else(PoisonError::into_inner);
    if previous.is_some() {
        return false;
    }
    let before: Hook = Arc::from(panic::take_hook());
    *previous = Some(before);
    panic::set_hook(Box::new(quiet_hook));
    INSTALLED.store(true, Ordering::Release);
    true
}

/// Puts back the hook that was installed before
/// [`install_quiet_panic_hook`]. Returns `false` when the quiet hook was not
/// installed (nothing changes then).
///
/// # Panics
///
/// Like [`std::panic::set_hook`], when called from a panicking thread.
pub fn restore_panic_hook() -> bool {
    let mut previous = PREVIOUS.lock().unwrap_or_else(PoisonError::into_inner);
    match previous.take() {
        Some(before) => {
            INSTALLED.store(false, Ordering::Release);
            panic::set_hook(Box::new(move |info| before(info)));
            true
        }
        None => false,
    }
}

fn quiet_hook(info: &PanicHookInfo<'_>) {
    if is_contained() {
        if let Some(location) = info.location() {
            let text = format!(
                "{}:{}:{}",
                location.file(),
                location.line(),
                location.column()
            );
            // try_borrow_mut: a panic raised while the slot is borrowed (it
            // never is across foreign code) must not panic again here.
            LAST_LOCATION.with(|last| {
                if let Ok(mut slot) = last.try_borrow_mut() {
                    *slot = Some(text);
                }
            });
        }
        return;
    }
    let before = PREVIOUS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    if let Some(before) = before {
        before(info);
    }
}
