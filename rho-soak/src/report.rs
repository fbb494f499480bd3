//! What the soak prints: the registry's counts against the injected ones,
//! the summary, the wrong things, and the last line.

use std::collections::BTreeMap;
use std::sync::PoisonError;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::args::Args;
use crate::check::Tally;
use crate::lane::Soak;
use crate::memory::mib;
use crate::run::{Running, Settled, Watched};
use crate::tools;
use crate::witness;

/// Compares each tool's counts in its source's accounting with the calls
/// that reached it (every disagreement goes to the verdicts); returns how
/// many tools were compared.
pub(crate) fn compare_counts(soak: &Soak) -> usize {
    let expected: BTreeMap<String, Tally> = soak
        .verdicts
        .with_findings(|findings| findings.tallies.clone());
    let mut counted: BTreeMap<String, Tally> = BTreeMap::new();
    let accounts = [&soak.builtin_accounts, &soak.agent_accounts];
    for health in accounts.iter().flat_map(|accounts| accounts.health()) {
        counted.insert(health.tool.clone(), Tally::of(&health));
    }
    let mut names: Vec<&String> = expected.keys().chain(counted.keys()).collect();
    names.sort();
    names.dedup();
    for name in &names {
        let want = expected.get(*name).copied().unwrap_or_default();
        let got = counted.get(*name).copied().unwrap_or_default();
        if want != got {
            soak.verdicts
                .wrong(|| format!("registry counts of `{name}`: injected {want}; counted {got}"));
        }
    }
    names.len()
}

/// The verdict of a run and its last line.
pub(crate) struct Verdict {
    pub(crate) passed: bool,
    line: String,
}

impl Verdict {
    /// Prints the last line: `calls N, ends N, wrong 0, ...`.
    pub(crate) fn print_last_line(&self) {
        println!("{}", self.line);
    }
}

/// The last line of the output.
fn last_line(
    calls: u64,
    ends: u64,
    wrong: u64,
    foreign: u64,
    leaked: usize,
    growth: Option<f64>,
) -> String {
    let growth = growth.map_or_else(|| "n/a".to_owned(), |growth| format!("{growth:.1}%"));
    format!(
        "calls {calls}, ends {ends}, wrong {wrong}, foreign-code-in-loop {foreign}, leaked-tasks \
         {leaked}, rss-growth {growth}"
    )
}

/// Prints the summary of a finished run and the wrong things; returns the
/// verdict (whose last line is printed once the runtimes are down).
pub(crate) fn summary(
    args: &Args,
    running: &Running,
    watched: &Watched,
    settled: &Settled,
) -> Verdict {
    let soak = &running.soak;
    let calls = soak.verdicts.calls.load(Ordering::Relaxed);
    let seconds = watched.ran_for.as_secs_f64();
    println!(
        "ran {calls} calls in {seconds:.1} s ({:.0} calls/s) on {}, {} turns in flight at once",
        calls as f64 / seconds,
        args.runtimes,
        running.drivers,
    );
    let (outcomes, raced, late) = soak.verdicts.with_findings(|findings| {
        let outcomes: Vec<String> = findings
            .outcomes
            .iter()
            .map(|(outcome, count)| format!("{outcome} {count}"))
            .collect();
        (
            outcomes.join(", "),
            findings.raced_aborted,
            findings.late_after_gate,
        )
    });
    println!("outcomes: {outcomes}");
    println!("host aborts that won a race against the call's own end: {raced}");
    println!(
        "calls timed out after a gate that outlasted their timeout, their quick tool not polled \
         in time by a busy worker: {late}"
    );
    let events = &settled.events;
    println!(
        "events: {} starts, {} ends; registry: counts of {} tools compared",
        events.starts, events.ends, settled.compared_tools
    );
    let sweep = &settled.sweep;
    let (spins, spin_bound_hit) = tools::spin_counts();
    println!(
        "foreign values: {} made, {} gone, {} second payloads forgotten (leaked) by design; \
         tools that never yield: {spins} ({spin_bound_hit} stopped at their safety bound)",
        sweep.made, sweep.settled, sweep.forgotten
    );
    let churned = &settled.churned;
    println!(
        "subscribers: {} panicking ({} panics contained), {} lagging ({} updates dropped), \
         {} streams dropped mid-flow after {} events",
        churned.panicking,
        churned.panics_contained,
        churned.lagging,
        churned.updates_lagged,
        churned.streams_dropped,
        churned.stream_events
    );
    println!(
        "registry: {} tools added and {} removed under load ({} while calls of them were in \
         flight)",
        soak.tools_added.load(Ordering::Relaxed),
        soak.tools_removed.load(Ordering::Relaxed),
        soak.tools_removed_mid_turn.load(Ordering::Relaxed),
    );
    println!(
        "killed tasks all dropped {:.1?} after the run",
        settled.settled_in
    );
    let growth = match (watched.warm_rss, settled.end_rss) {
        (Some(warm), Some(end)) => {
            println!(
                "rss: {:.1} MiB after warm-up ({} calls), {:.1} MiB after the run",
                mib(warm),
                watched.warm_up,
                mib(end)
            );
            Some((end as f64 - warm as f64) / warm as f64 * 100.0)
        }
        (None, Some(_)) => {
            println!("rss: not compared: the run ended before its warm-up did");
            None
        }
        _ => {
            println!("rss: not measured (no /proc/self/status)");
            None
        }
    };
    wrong_things(&soak.verdicts.described());
    let rss_ok = growth.is_none_or(|growth| growth <= args.max_rss_growth);
    if !rss_ok {
        println!(
            "VIOLATION: resident memory grew more than {}% after the warm-up",
            args.max_rss_growth
        );
    }
    let wrong = soak.verdicts.wrong.load(Ordering::Relaxed);
    let ends = soak.verdicts.ends.load(Ordering::Relaxed);
    let passed = wrong == 0
        && ends == args.calls
        && calls == args.calls
        && settled.foreign == 0
        && settled.leaked == 0
        && rss_ok;
    Verdict {
        passed,
        line: last_line(
            args.calls,
            ends,
            wrong,
            settled.foreign,
            settled.leaked,
            growth,
        ),
    }
}

/// Prints the first wrong things found.
fn wrong_things(described: &[String]) {
    for description in described {
        println!("WRONG: {description}");
    }
}

/// Reports a run in which no turn ended for `stuck`: what is in flight,
/// the wrong things so far, and the last line.
pub(crate) fn stuck(args: &Args, running: &Running, stuck: Duration) {
    let soak = &running.soak;
    println!(
        "STUCK: no turn ended for {stuck:?}; {} rho tasks live, {} calls in flight in the \
         registry",
        running.live_tasks(),
        soak.registry.in_flight()
    );
    wrong_things(&soak.verdicts.described());
    let in_flight = soak
        .in_flight
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    for (driver, plan) in in_flight.iter() {
        println!(
            "{driver}: turn {} ({} calls)",
            plan.number,
            plan.calls.len()
        );
        for index in 0..plan.calls.len() {
            println!("  {}", plan.describe(index));
        }
        println!("  aborts: {:?}", plan.aborts);
    }
    let line = last_line(
        args.calls,
        soak.verdicts.ends.load(Ordering::Relaxed),
        soak.verdicts.wrong.load(Ordering::Relaxed) + 1,
        witness::foreign_in_loop(),
        running.live_tasks(),
        None,
    );
    println!("{line}");
}
