//! The change signal: every change of the tool list reaches the listeners,
//! a change that changes nothing does not, and a quarantine and a
//! re-enabling (which only the policy sees) do too.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rho_registry::{Accounting, QuarantineRule, Source, ToolRegistry};
use rho_tool_core::Outcome;
use support::{Class, QuietPanics, run, runner, scripted};

/// A registry with a listener that counts what it is told.
fn counted() -> (
    ToolRegistry,
    Arc<AtomicUsize>,
    rho_registry::ChangeSubscription,
) {
    let registry = ToolRegistry::new();
    let told = Arc::new(AtomicUsize::new(0));
    let counter = told.clone();
    let subscription = registry.on_tools_changed(move || {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    (registry, told, subscription)
}

#[test]
fn every_change_of_sources_and_tools_is_told_and_no_op_changes_are_not() {
    let (registry, told, _subscription) = counted();
    let told = || told.load(Ordering::SeqCst);

    let builtin = registry
        .add_source(Source::trusted("builtin"))
        .expect("new");
    assert_eq!(told(), 1, "a source added");
    builtin.add(scripted("a")).expect("a new name");
    assert_eq!(told(), 2, "a tool added");
    builtin.replace(scripted("a")).expect("its own name");
    assert_eq!(told(), 3, "a tool swapped");
    assert!(builtin.add(scripted("a")).is_err());
    assert_eq!(told(), 3, "a refused change is no change");
    assert!(!builtin.remove("nope"));
    assert_eq!(told(), 3, "removing nothing is no change");
    assert!(builtin.remove("a"));
    assert_eq!(told(), 4, "a tool removed");
    assert_eq!(builtin.clear(), 0);
    assert_eq!(told(), 4, "clearing nothing is no change");
    assert!(registry.remove_source("builtin"));
    assert_eq!(told(), 5, "a source removed");
    assert_eq!(registry.generation(), 5);
}

#[test]
fn a_panicking_listener_does_not_keep_the_others_from_hearing() {
    let _quiet = QuietPanics::new();
    let (registry, told, _subscription) = counted();
    let _bad = registry.on_tools_changed(|| panic!("a listener's bug"));
    let later = Arc::new(AtomicUsize::new(0));
    let counter = later.clone();
    let _after_the_bad_one = registry.on_tools_changed(move || {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    registry
        .add_source(Source::trusted("builtin"))
        .expect("new");
    assert_eq!(told.load(Ordering::SeqCst), 1);
    assert_eq!(later.load(Ordering::SeqCst), 1);
}

#[test]
fn a_listener_may_change_the_registry_without_a_deadlock() {
    let registry = ToolRegistry::new();
    let inner = registry.clone();
    let _subscription = registry.on_tools_changed(move || {
        // Reads and writes from inside a listener.
        let _ = inner.tools();
        let _ = inner.add_source(Source::trusted("second"));
    });
    registry.add_source(Source::trusted("first")).expect("new");
    assert_eq!(registry.sources(), ["first", "second"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quarantine_and_a_reenabling_are_told() {
    let _quiet = QuietPanics::new();
    let (registry, told, _subscription) = counted();
    let accounting = Arc::new(Accounting::new(QuarantineRule::after(2)));
    registry
        .add_source(Source::untrusted("agent").with_policy(accounting.clone()))
        .expect("new")
        .add(scripted("flaky"))
        .expect("a new name");
    let before = told.load(Ordering::SeqCst);
    let runner = runner();

    let end = run(&registry, &runner, Class::Panic, "flaky").await;
    assert_eq!(end.outcome, Outcome::Crashed);
    assert_eq!(
        told.load(Ordering::SeqCst),
        before,
        "one strike: still listed"
    );
    let end = run(&registry, &runner, Class::Panic, "flaky").await;
    assert_eq!(end.outcome, Outcome::Crashed);
    assert_eq!(
        told.load(Ordering::SeqCst),
        before + 1,
        "quarantined: off the list"
    );
    assert!(registry.tools().is_empty());

    assert!(accounting.reenable("flaky"));
    assert_eq!(told.load(Ordering::SeqCst), before + 2, "back on the list");
    assert!(!accounting.reenable("flaky"));
    assert_eq!(
        told.load(Ordering::SeqCst),
        before + 2,
        "nothing to put back"
    );
}

#[test]
fn a_dropped_subscription_hears_nothing_more() {
    let (registry, told, subscription) = counted();
    drop(subscription);
    registry
        .add_source(Source::trusted("builtin"))
        .expect("new");
    assert_eq!(told.load(Ordering::SeqCst), 0);
    // The notifier outlives nothing: once the registry is gone it is a no-op.
    let notifier = registry.notifier();
    drop(registry);
    notifier.notify();
}
