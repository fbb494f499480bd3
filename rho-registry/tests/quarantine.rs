//! Quarantine: at exactly the Nth counted failure, never for denials or
//! aborts, and undone by re-enabling.

mod support;

use std::sync::Arc;
use std::time::Duration;

use rho_registry::{Accounting, QuarantineRule, Refusal, Source, SourceHandle, ToolRegistry};
use rho_tool_core::Outcome;
use support::{Class, QuietPanics, launch, run, runner, scripted, scripted_with_timeout};

const SHORT: Duration = Duration::from_millis(30);

fn setup(rule: QuarantineRule) -> (ToolRegistry, Arc<Accounting>, SourceHandle) {
    let registry = ToolRegistry::new();
    let accounting = Arc::new(Accounting::new(rule));
    let agent = registry
        .add_source(Source::untrusted("agent").with_policy(accounting.clone()))
        .expect("a new source");
    agent
        .add_all([scripted_with_timeout("flaky", SHORT), scripted("solid")])
        .expect("new names");
    (registry, accounting, agent)
}

fn listed(registry: &ToolRegistry) -> Vec<String> {
    registry.tools().into_iter().map(|tool| tool.name).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quarantine_happens_at_exactly_the_nth_counted_failure() {
    let _quiet = QuietPanics::new();
    let (registry, accounting, _agent) = setup(QuarantineRule::after(3));
    let runner = runner();

    // Two strikes among calls that never count.
    let before_the_limit = [
        (Class::Panic, 1),
        (Class::Ok, 1),
        (Class::Deny, 1),
        (Class::Abort, 1),
        (Class::Error, 1),
        (Class::Hang, 2),
        (Class::Deny, 2),
        (Class::Abort, 2),
        (Class::Ok, 2),
    ];
    for (class, strikes) in before_the_limit {
        let end = run(&registry, &runner, class, "flaky").await;
        assert_eq!(end.outcome, class.outcome(), "{end:?}");
        let health = accounting.tool_health("flaky").expect("flaky ran");
        assert_eq!(health.strikes, strikes, "after {class:?}: {health:?}");
        assert!(!health.is_quarantined(), "after {class:?}: {health:?}");
        assert!(registry.resolve("flaky").is_ok());
        assert_eq!(listed(&registry), ["flaky", "solid"]);
    }

    // The third strike quarantines it.
    let end = run(&registry, &runner, Class::Panic, "flaky").await;
    assert_eq!(end.outcome, Outcome::Crashed);
    let quarantine = accounting.quarantine("flaky").expect("quarantined");
    assert_eq!(
        (quarantine.failures, quarantine.crashes, quarantine.timeouts),
        (3, 2, 1)
    );
    assert_eq!(listed(&registry), ["solid"]);
    match registry.resolve("flaky") {
        Err(Refusal::Disabled {
            name,
            source_name,
            disabled,
        }) => {
            assert_eq!((name.as_str(), source_name.as_str()), ("flaky", "agent"));
            assert_eq!(disabled.failures, 3);
        }
        other => panic!("expected a disabled refusal, got {other:?}"),
    }

    // Its calls now get an error result saying so, and do not run or count.
    let calls_before = accounting.tool_health("flaky").expect("flaky ran").calls;
    let end = run(&registry, &runner, Class::Ok, "flaky").await;
    assert_eq!(end.outcome, Outcome::Refused);
    assert!(end.result.is_error);
    let text = end.result.text();
    assert!(
        text.starts_with("tool `flaky` was disabled after 3 failures: 2 crashes and 1 timeout reached the limit of 3; last: tool `flaky` panicked"),
        "{text}"
    );
    assert!(text.contains("re-enables"), "{text}");
    let details = end.result.details.expect("refusals carry details");
    assert_eq!(
        details.get("refused").and_then(|d| d.as_str()),
        Some("disabled")
    );
    assert_eq!(
        accounting.tool_health("flaky").expect("flaky ran").calls,
        calls_before
    );
    // The other tool of the source is unaffected.
    assert_eq!(
        run(&registry, &runner, Class::Ok, "solid").await.outcome,
        Outcome::Succeeded
    );

    // Re-enabling puts it back, with its strikes afresh.
    assert!(accounting.reenable("flaky"));
    assert!(!accounting.reenable("flaky"));
    assert_eq!(listed(&registry), ["flaky", "solid"]);
    for strikes in 1..=2 {
        let end = run(&registry, &runner, Class::Panic, "flaky").await;
        assert_eq!(end.outcome, Outcome::Crashed);
        let health = accounting.tool_health("flaky").expect("flaky ran");
        assert_eq!((health.strikes, health.is_quarantined()), (strikes, false));
    }
    run(&registry, &runner, Class::Hang, "flaky").await;
    assert!(accounting.quarantine("flaky").is_some());
    assert!(registry.resolve("flaky").is_err());

    let health = accounting.tool_health("flaky").expect("flaky ran");
    assert_eq!(
        (
            health.calls,
            health.succeeded,
            health.failed,
            health.crashed,
            health.timed_out,
            health.aborted,
            health.denied
        ),
        (13, 2, 1, 4, 2, 2, 2)
    );
    assert_eq!(
        health.last_error.as_deref(),
        Some("tool `flaky` timed out after 30ms and was stopped")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn denied_and_aborted_calls_never_count() {
    let _quiet = QuietPanics::new();
    let (registry, accounting, _agent) = setup(QuarantineRule::after(1));
    let runner = runner();

    let mut calls = Vec::new();
    for i in 0..200 {
        let class = if i % 2 == 0 {
            Class::Deny
        } else {
            Class::Abort
        };
        calls.push(launch(
            &registry,
            &runner,
            class,
            class.call(format!("c{i}"), "flaky"),
        ));
    }
    for call in calls {
        let end = call.await.expect("the awaiting task does not panic");
        assert!(
            matches!(end.outcome, Outcome::Denied | Outcome::Aborted),
            "{end:?}"
        );
    }
    let health = accounting.tool_health("flaky").expect("flaky was called");
    assert_eq!(
        (health.denied, health.aborted, health.strikes),
        (100, 100, 0)
    );
    assert!(!health.is_quarantined());
    assert_eq!(health.last_error, None);

    // One crash is the limit here.
    run(&registry, &runner, Class::Panic, "flaky").await;
    assert!(accounting.quarantine("flaky").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_already_in_flight_do_not_move_the_quarantine() {
    let _quiet = QuietPanics::new();
    let (registry, accounting, _agent) = setup(QuarantineRule::after(5));
    let runner = runner();

    // All 40 are resolved before any is started, so none can be refused by
    // a quarantine that earlier ones trigger: all of them run.
    let resolved: Vec<_> = (0..40)
        .map(|_| registry.resolve("flaky").expect("flaky is enabled"))
        .collect();
    let calls: Vec<_> = resolved
        .into_iter()
        .enumerate()
        .map(|(i, tool)| {
            let class = if i % 2 == 0 {
                Class::Panic
            } else {
                Class::Hang
            };
            tokio::spawn(tool.start(&runner, class.call(format!("c{i}"), "flaky")))
        })
        .collect();
    for call in calls {
        let end = call.await.expect("the awaiting task does not panic");
        assert!(
            matches!(end.outcome, Outcome::Crashed | Outcome::TimedOut),
            "{end:?}"
        );
    }
    let health = accounting.tool_health("flaky").expect("flaky ran");
    assert_eq!((health.crashed, health.timed_out), (20, 20));
    let quarantine = health.quarantine.expect("quarantined");
    assert_eq!(quarantine.failures, 5);
    assert_eq!(quarantine.crashes + quarantine.timeouts, 5);
    assert_eq!(health.strikes, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_outside_the_window_do_not_add_up() {
    let _quiet = QuietPanics::new();
    let window = Duration::from_millis(100);
    let (registry, accounting, _agent) = setup(QuarantineRule::after(2).within(window));
    let runner = runner();

    for _ in 0..4 {
        run(&registry, &runner, Class::Panic, "flaky").await;
        // Longer than the window, so the next crash is alone in it.
        tokio::time::sleep(window * 3).await;
    }
    let health = accounting.tool_health("flaky").expect("flaky ran");
    assert_eq!(health.crashed, 4);
    assert!(!health.is_quarantined(), "{health:?}");
    assert_eq!(health.strikes, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_can_serve_several_sources() {
    let _quiet = QuietPanics::new();
    let registry = ToolRegistry::new();
    let accounting = Arc::new(Accounting::new(QuarantineRule::after(1)));
    for (source, tool) in [("one", "first"), ("two", "second")] {
        registry
            .add_source(Source::untrusted(source).with_policy(accounting.clone()))
            .expect("a new source")
            .add(scripted(tool))
            .expect("a new name");
    }
    let runner = runner();
    run(&registry, &runner, Class::Panic, "second").await;
    assert_eq!(listed(&registry), ["first"]);
    let rows: Vec<(String, u64, bool)> = accounting
        .health()
        .into_iter()
        .map(|h| (h.tool.clone(), h.crashed, h.is_quarantined()))
        .collect();
    assert_eq!(rows, [("second".to_owned(), 1, true)]);
    let table = accounting.health_table().to_string();
    assert!(table.contains("quarantined after 1 failure\n"), "{table}");
}
