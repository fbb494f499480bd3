//! The quiet hook keeps contained panics off the previous hook, records
//! where they were raised, passes every other panic on, and can be undone.
//!
//! One test function: the panic hook is global to the process, and this
//! file is its own test binary so no other test sees the hooks it sets.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rho_untrusted::{
    Phase, call_contained, drop_contained, install_quiet_panic_hook, panic_text_at,
    restore_panic_hook,
};

#[test]
fn quiet_hook_locates_contained_panics_and_passes_the_rest_on() {
    let host_hook_calls = Arc::new(AtomicUsize::new(0));
    let counter = host_hook_calls.clone();
    std::panic::set_hook(Box::new(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    }));

    // Before the quiet hook: a contained panic reaches the host's hook and
    // has no location.
    let caught = call_contained(|| panic!("before")).expect_err("it panics");
    assert_eq!(host_hook_calls.load(Ordering::SeqCst), 1);
    assert_eq!(caught.location, None);

    assert!(install_quiet_panic_hook());
    assert!(!install_quiet_panic_hook(), "a second install is a no-op");

    // A contained panic is quiet and located.
    let line = line!() + 1;
    let caught = call_contained(|| panic!("inside")).expect_err("it panics");
    assert_eq!(host_hook_calls.load(Ordering::SeqCst), 1, "nothing printed");
    assert_eq!(caught.message.as_deref(), Some("inside"));
    let location = caught.location.expect("the quiet hook records it");
    assert!(
        location.starts_with(&format!("rho-untrusted/tests/quiet_hook.rs:{line}:"))
            || location.starts_with(&format!("tests/quiet_hook.rs:{line}:")),
        "{location}"
    );
    assert_eq!(
        panic_text_at("t", Phase::Tool, Some("inside"), Some(&location)),
        format!("tool `t` panicked at {location}: inside")
    );

    // A Drop that panics inside containment is quiet too.
    struct Loud;
    impl Drop for Loud {
        fn drop(&mut self) {
            panic!("from drop");
        }
    }
    assert!(drop_contained(Loud).is_err());
    assert_eq!(host_hook_calls.load(Ordering::SeqCst), 1);

    // A panic outside containment goes to the host's hook as before.
    let outside = std::thread::spawn(|| panic!("outside")).join();
    assert!(outside.is_err());
    assert_eq!(host_hook_calls.load(Ordering::SeqCst), 2);

    // Restored: contained panics reach the host's hook again.
    assert!(restore_panic_hook());
    assert!(!restore_panic_hook(), "nothing left to restore");
    let caught = call_contained(|| panic!("after")).expect_err("it panics");
    assert_eq!(host_hook_calls.load(Ordering::SeqCst), 3);
    assert_eq!(caught.location, None);

    drop(std::panic::take_hook());
}
