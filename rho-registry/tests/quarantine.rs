//! Quarantine: at exactly the Nth counted failure, never for denials or
//! aborts, and undone by re-enabling.

mod support;

use std::sync::Arc;
use std::time::Duration;

use rho_registry::{
    Accounting, QuarantineRule, Refusal, Source, SourceHandle, ToolRegistry, ToolState,
};
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
        Err(Refusal::Disabled(tool)) => {
            assert_eq!((tool.name(), tool.source_name()), ("flaky", "agent"));
            assert_eq!(tool.disabled().failures, 3);
        }
        other => panic!("expected a disabled refusal, got {other:?}"),
    }

    // Its calls now get an error result saying so, and do not run; its
    // source hears of each as a refusal, never as a strike.
    let before = accounting.tool_health("flaky").expect("flaky ran");
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
    let after = accounting.tool_health("flaky").expect("flaky ran");
    assert_eq!(
        (after.calls, after.refused, after.strikes),
        (before.calls + 1, before.refused + 1, before.strikes),
        "{after:?}"
    );
    assert_eq!(after.in_flight(), 0, "{after:?}");
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
            health.denied,
            health.refused
        ),
        (14, 2, 1, 4, 2, 2, 2, 1)
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
            tokio::spawn(runner.start(class.call(format!("c{i}"), "flaky"), tool))
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

/// A model that keeps calling a quarantined tool shows in its source's
/// health: each call is refused, counted as `refused` (never as a strike),
/// and the row is data a host reads without parsing the text table.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_of_a_quarantined_tool_reach_its_source_as_refusals_and_health_is_data() {
    let _quiet = QuietPanics::new();
    let (registry, accounting, _agent) = setup(QuarantineRule::after(1));
    let runner = runner();

    assert_eq!(
        run(&registry, &runner, Class::Panic, "flaky").await.outcome,
        Outcome::Crashed
    );
    for _ in 0..5 {
        let end = run(&registry, &runner, Class::Ok, "flaky").await;
        assert_eq!(end.outcome, Outcome::Refused, "{end:?}");
    }

    let health = accounting.tool_health("flaky").expect("flaky was called");
    assert_eq!((health.calls, health.refused), (6, 5), "{health:?}");
    assert_eq!(health.count(Outcome::Refused), 5);
    assert_eq!(health.count(Outcome::Crashed), 1);
    assert_eq!(health.in_flight(), 0);
    let counted: Vec<(Outcome, u64)> = health.counts().filter(|(_, n)| *n > 0).collect();
    assert_eq!(counted, [(Outcome::Crashed, 1), (Outcome::Refused, 5)]);
    match health.state() {
        ToolState::Quarantined(quarantine) => {
            assert_eq!((quarantine.failures, quarantine.crashes), (1, 1));
        }
        other => panic!("expected a quarantine, got {other:?}"),
    }
    assert_eq!(
        accounting.tool_health("solid").map(|row| row.state()),
        None,
        "a tool never called has no row"
    );

    let json = health.to_json();
    assert_eq!(json["tool"], "flaky");
    assert_eq!(json["state"], "quarantined");
    assert_eq!(json["outcomes"]["refused"], 5);
    assert_eq!(json["outcomes"]["crashed"], 1);
    assert_eq!(json["outcomes"].as_object().map(|o| o.len()), Some(8));
    assert_eq!(json["quarantine"]["failures"], 1);
    assert!(
        json["last_error"]
            .as_str()
            .is_some_and(|text| text.contains("panicked")),
        "{json}"
    );

    // The text table shows the same refusals.
    let table = accounting.health_table().to_string();
    let row = table
        .lines()
        .find(|line| line.starts_with("flaky"))
        .expect("a row for flaky");
    let columns: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        &columns[1..11],
        ["6", "0", "0", "1", "0", "0", "0", "0", "5", "quarantined"]
    );

    // Put back, it is enabled with no strikes, and its refusals stay counted.
    assert!(accounting.reenable("flaky"));
    let health = accounting.tool_health("flaky").expect("flaky was called");
    assert_eq!(health.state(), ToolState::Enabled { strikes: 0 });
    assert_eq!(health.to_json()["state"], "enabled");
    assert_eq!(health.refused, 5);
}

/// The one way to run a registered tool without its source hearing of it
/// says so in its name: a call started with `unaccounted_tool` is not
/// counted and cannot quarantine the tool, while a call started with the `Resolved` is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_tool_named_unaccounted_skips_its_source() {
    let _quiet = QuietPanics::new();
    let (registry, accounting, _agent) = setup(QuarantineRule::after(1));
    let runner = runner();

    let resolved = registry.resolve("flaky").expect("registered");
    let end = runner
        .start(Class::Panic.call("1", "flaky"), resolved.unaccounted_tool())
        .await;
    assert_eq!(end.outcome, Outcome::Crashed);
    assert!(accounting.tool_health("flaky").is_none(), "nobody was told");
    assert!(registry.resolve("flaky").is_ok());

    let end = runner
        .start(Class::Panic.call("2", "flaky"), resolved)
        .await;
    assert_eq!(end.outcome, Outcome::Crashed);
    let health = accounting.tool_health("flaky").expect("told");
    assert_eq!((health.calls, health.crashed), (1, 1));
    assert!(health.is_quarantined());
}
