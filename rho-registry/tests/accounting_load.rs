//! Ten thousand concurrent calls with injected outcomes: each source's
//! accounting matches what was injected, per tool and per class.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rho_registry::{Accounting, QuarantineRule, Source, ToolHealth, ToolRegistry};
use support::{Class, QuietPanics, launch, runner, scripted, scripted_with_timeout};

const CALLS: usize = 10_000;

/// The tool's timeout for the class that hangs. Only `gamma` hangs, so no
/// other call can time out however loaded the machine is.
const SHORT: Duration = Duration::from_millis(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_concurrent_calls_are_counted_exactly() {
    let _quiet = QuietPanics::new();
    let registry = ToolRegistry::new();
    let builtin_accounting = Arc::new(Accounting::new(QuarantineRule::never()));
    let agent_accounting = Arc::new(Accounting::new(QuarantineRule::never()));
    let builtin = registry
        .add_source(Source::trusted("builtin").with_policy(builtin_accounting.clone()))
        .expect("a new source");
    let agent = registry
        .add_source(Source::untrusted("agent").with_policy(agent_accounting.clone()))
        .expect("a new source");
    builtin
        .add_all([scripted("alpha"), scripted("beta")])
        .expect("new names");
    agent
        .add_all([scripted_with_timeout("gamma", SHORT), scripted("delta")])
        .expect("new names");

    let mix: &[(&str, Class)] = &[
        ("alpha", Class::Ok),
        ("alpha", Class::Error),
        ("alpha", Class::Panic),
        ("alpha", Class::Deny),
        ("alpha", Class::Abort),
        ("beta", Class::Ok),
        ("beta", Class::Panic),
        ("beta", Class::Deny),
        ("gamma", Class::Hang),
        ("gamma", Class::Deny),
        ("gamma", Class::Abort),
        ("delta", Class::Ok),
        ("delta", Class::Error),
        ("delta", Class::Panic),
        ("delta", Class::Abort),
        ("alpha", Class::Ok),
        ("delta", Class::Ok),
    ];

    let runner = runner();
    let mut injected: BTreeMap<(&str, Class), u64> = BTreeMap::new();
    let mut calls = Vec::with_capacity(CALLS);
    // Every call is started before any is awaited: all run at once.
    for i in 0..CALLS {
        let (tool, class) = mix[i % mix.len()];
        *injected.entry((tool, class)).or_default() += 1;
        let call = class.call(format!("call-{i}"), tool);
        calls.push((class, launch(&registry, &runner, class, call)));
    }
    for (class, call) in calls {
        let end = call.await.expect("the awaiting task does not panic");
        assert_eq!(end.outcome, class.outcome(), "{end:?}");
    }

    assert_eq!(registry.in_flight(), 0);
    let expected = |tool: &str| {
        let count = |class: Class| injected.get(&(tool, class)).copied().unwrap_or(0);
        let mut health = ToolHealth::default();
        health.tool = tool.to_owned();
        health.succeeded = count(Class::Ok);
        health.failed = count(Class::Error);
        health.crashed = count(Class::Panic);
        health.timed_out = count(Class::Hang);
        health.aborted = count(Class::Abort);
        health.denied = count(Class::Deny);
        health.calls = Class::ALL.into_iter().map(count).sum();
        health
    };
    let counted = |health: &ToolHealth| {
        (
            health.tool.clone(),
            health.calls,
            health.succeeded,
            health.failed,
            health.crashed,
            health.timed_out,
            health.aborted,
            health.denied,
            health.executor_gone,
        )
    };
    let builtin_health = builtin_accounting.health();
    let agent_health = agent_accounting.health();
    assert_eq!(
        builtin_health.iter().map(counted).collect::<Vec<_>>(),
        [expected("alpha"), expected("beta")]
            .iter()
            .map(counted)
            .collect::<Vec<_>>()
    );
    assert_eq!(
        agent_health.iter().map(counted).collect::<Vec<_>>(),
        [expected("delta"), expected("gamma")]
            .iter()
            .map(counted)
            .collect::<Vec<_>>()
    );
    let total: u64 = builtin_health
        .iter()
        .chain(&agent_health)
        .map(|h| h.calls)
        .sum();
    assert_eq!(total, CALLS as u64);
    for health in builtin_health.iter().chain(&agent_health) {
        assert_eq!(health.in_flight(), 0, "{health:?}");
        assert!(!health.is_quarantined(), "{health:?}");
    }
    // The last error of a tool that timed out is the model's timeout text.
    let gamma = agent_accounting.tool_health("gamma").expect("gamma ran");
    assert_eq!(
        gamma.last_error.as_deref(),
        Some("tool `gamma` timed out after 30ms and was stopped")
    );
}
