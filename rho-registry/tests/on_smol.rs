//! The registry's accounting on smol: the same tools and gate as on tokio,
//! with exact counts per tool and class, and a quarantine at exactly the
//! Nth counted failure.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rho_exec_smol::{SmolExecutor, SmolPool};
use rho_registry::{Accounting, QuarantineRule, Refusal, Source, ToolRegistry};
use rho_tool_core::{Outcome, Runner};
use support::{Class, DenyMarked, QuietPanics, scripted, scripted_with_timeout};

/// rho's runner on `pool`, with the tests' gate.
fn runner(pool: &SmolPool) -> Runner<SmolExecutor> {
    Runner::new(pool.executor()).with_gate(Arc::new(DenyMarked))
}

#[test]
fn ten_thousand_concurrent_calls_are_counted_exactly_on_smol() {
    const CALLS: usize = 10_000;
    let _quiet = QuietPanics::new();
    let pool = SmolPool::new(2).expect("two executor threads");
    let registry = ToolRegistry::new();
    let accounting = Arc::new(Accounting::new(QuarantineRule::never()));
    registry
        .add_source(Source::untrusted("agent").with_policy(accounting.clone()))
        .expect("a new source")
        .add_all([
            scripted("alpha"),
            scripted_with_timeout("gamma", Duration::from_millis(30)),
        ])
        .expect("new names");
    let runner = runner(&pool);
    let mix = [
        ("alpha", Class::Ok),
        ("alpha", Class::Error),
        ("alpha", Class::Panic),
        ("alpha", Class::Deny),
        ("alpha", Class::Abort),
        ("gamma", Class::Hang),
        ("gamma", Class::Ok),
    ];

    let mut injected: BTreeMap<(&str, Class), u64> = BTreeMap::new();
    // Every call is started before any is awaited: all run at once.
    let calls: Vec<_> = (0..CALLS)
        .map(|i| {
            let (tool, class) = mix[i % mix.len()];
            *injected.entry((tool, class)).or_default() += 1;
            let handle = {
                let call = class.call(format!("call-{i}"), tool);
                let start = registry.start_for(&call.name);
                runner.start(call, start)
            };
            if class == Class::Abort {
                handle.abort();
            }
            (class, handle)
        })
        .collect();
    smol::block_on(async {
        for (class, handle) in calls {
            let end = handle.await;
            assert_eq!(end.outcome, class.outcome(), "{end:?}");
        }
    });

    assert_eq!(registry.in_flight(), 0);
    for tool in ["alpha", "gamma"] {
        let count = |class: Class| injected.get(&(tool, class)).copied().unwrap_or(0);
        let health = accounting.tool_health(tool).expect("the tool ran");
        assert_eq!(
            (
                health.calls,
                health.succeeded,
                health.failed,
                health.crashed,
                health.timed_out,
                health.aborted,
                health.denied,
            ),
            (
                Class::ALL.into_iter().map(count).sum(),
                count(Class::Ok),
                count(Class::Error),
                count(Class::Panic),
                count(Class::Hang),
                count(Class::Abort),
                count(Class::Deny),
            ),
            "{tool}"
        );
    }
}

#[test]
fn quarantine_happens_at_exactly_the_nth_counted_failure_on_smol() {
    let _quiet = QuietPanics::new();
    let pool = SmolPool::new(2).expect("two executor threads");
    let registry = ToolRegistry::new();
    let accounting = Arc::new(Accounting::new(QuarantineRule::after(3)));
    registry
        .add_source(Source::untrusted("agent").with_policy(accounting.clone()))
        .expect("a new source")
        .add(scripted_with_timeout("flaky", Duration::from_millis(30)))
        .expect("a new name");
    let runner = runner(&pool);
    let run = |class: Class| {
        let handle = {
            let call = class.call("c", "flaky");
            let start = registry.start_for(&call.name);
            runner.start(call, start)
        };
        if class == Class::Abort {
            handle.abort();
        }
        smol::block_on(handle)
    };

    // Denials and aborts never count; two crashes and a timeout do.
    for class in [
        Class::Deny,
        Class::Abort,
        Class::Panic,
        Class::Deny,
        Class::Panic,
    ] {
        assert_eq!(run(class).outcome, class.outcome());
        assert!(
            !accounting
                .tool_health("flaky")
                .expect("ran")
                .is_quarantined()
        );
    }
    assert_eq!(run(Class::Hang).outcome, Outcome::TimedOut);
    let health = accounting.tool_health("flaky").expect("ran");
    assert_eq!(
        health.quarantine.as_ref().map(|q| q.failures),
        Some(3),
        "{health:?}"
    );
    assert!(matches!(
        registry.resolve("flaky"),
        Err(Refusal::Disabled(_))
    ));
    assert_eq!(run(Class::Ok).outcome, Outcome::Refused);

    assert!(accounting.reenable("flaky"));
    assert_eq!(run(Class::Ok).outcome, Outcome::Succeeded);
}
