//! Quarantine: when a tool that keeps crashing or hanging is taken out of
//! the model's reach.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use rho_tool_core::Outcome;

use crate::policy::Disabled;

/// When [`Accounting`](crate::Accounting) quarantines a tool: after `N`
/// counted failures (crashes plus timeouts), optionally only those within a
/// time window. Gate denials, host aborts, a lost executor and the tool's
/// own error answers never count.
///
/// ```
/// use std::time::Duration;
/// use rho::QuarantineRule;
///
/// let rule = QuarantineRule::after(3).within(Duration::from_secs(600));
/// assert_eq!(rule.limit(), Some(3));
/// assert_eq!(QuarantineRule::never().limit(), None);
/// assert_eq!(QuarantineRule::default(), QuarantineRule::after(3));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuarantineRule {
    after: u32,
    within: Option<Duration>,
}

impl QuarantineRule {
    /// Quarantine at the `failures`-th counted failure (`0`: never).
    pub const fn after(failures: u32) -> Self {
        Self {
            after: failures,
            within: None,
        }
    }

    /// Never quarantine; only count.
    pub const fn never() -> Self {
        Self::after(0)
    }

    /// Count only the failures of the last `window`: a tool quarantines when
    /// `N` of them fall within any `window`.
    pub const fn within(mut self, window: Duration) -> Self {
        self.within = Some(window);
        self
    }

    /// How many counted failures quarantine a tool; `None` for never.
    pub fn limit(&self) -> Option<u32> {
        (self.after > 0).then_some(self.after)
    }

    /// The window failures are counted in; `None` for "since the tool was
    /// last (re-)enabled".
    pub fn window(&self) -> Option<Duration> {
        self.within
    }
}

impl Default for QuarantineRule {
    /// Three crashes or timeouts, at any distance.
    fn default() -> Self {
        Self::after(3)
    }
}

/// A tool's quarantine: when, and after which failures.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Quarantine {
    /// The counted failures that quarantined it (the rule's limit).
    pub failures: u32,
    /// How many of them were crashes.
    pub crashes: u32,
    /// How many of them were timeouts.
    pub timeouts: u32,
    /// The rule's window, if it has one.
    pub window: Option<Duration>,
    /// The last failure, in words.
    pub last_error: String,
    /// When the tool was quarantined.
    pub since: Instant,
}

impl Quarantine {
    /// Why the tool was quarantined, in words for the model.
    pub fn reason(&self) -> String {
        let within = match self.window {
            Some(window) => format!(" within {window:?}"),
            None => String::new(),
        };
        format!(
            "{} and {}{within} reached the limit of {}; last: {}",
            plural(self.crashes, "crash", "crashes"),
            plural(self.timeouts, "timeout", "timeouts"),
            self.failures,
            self.last_error,
        )
    }

    /// The quarantine as a source's answer to "is this tool disabled?".
    pub fn to_disabled(&self) -> Disabled {
        Disabled::new(self.reason(), self.failures)
    }
}

fn plural(n: u32, one: &str, many: &str) -> String {
    match n {
        1 => format!("1 {one}"),
        n => format!("{n} {many}"),
    }
}

/// The counted failures that still count: those since the last
/// (re-)enabling, within the window if the rule has one. Never more than the
/// rule's limit are kept.
#[derive(Debug, Default)]
pub(crate) struct Strikes {
    /// Each a crash or a timeout ([`Outcome::counts_against_tool`]).
    recent: VecDeque<(Instant, Outcome)>,
}

impl Strikes {
    /// Records `strike` at `now`; returns the quarantine when this strike is
    /// the one that reaches the limit.
    pub(crate) fn record(
        &mut self,
        strike: Outcome,
        now: Instant,
        rule: &QuarantineRule,
        last_error: &str,
    ) -> Option<Quarantine> {
        let limit = rule.limit()?;
        self.recent.push_back((now, strike));
        self.forget_old(now, rule);
        while self.recent.len() > limit as usize {
            self.recent.pop_front();
        }
        if self.recent.len() < limit as usize {
            return None;
        }
        let crashes = self.count_of(Outcome::Crashed);
        let quarantine = Quarantine {
            failures: limit,
            crashes,
            timeouts: limit - crashes,
            window: rule.window(),
            last_error: last_error.to_owned(),
            since: now,
        };
        self.recent.clear();
        Some(quarantine)
    }

    /// How many strikes count at `now`.
    pub(crate) fn count(&self, now: Instant, rule: &QuarantineRule) -> u32 {
        let counting = self
            .recent
            .iter()
            .filter(|(at, _)| in_window(*at, now, rule))
            .count();
        u32::try_from(counting).unwrap_or(u32::MAX)
    }

    pub(crate) fn clear(&mut self) {
        self.recent.clear();
    }

    fn forget_old(&mut self, now: Instant, rule: &QuarantineRule) {
        while let Some((at, _)) = self.recent.front() {
            if in_window(*at, now, rule) {
                break;
            }
            self.recent.pop_front();
        }
    }

    fn count_of(&self, kind: Outcome) -> u32 {
        let n = self.recent.iter().filter(|(_, s)| *s == kind).count();
        u32::try_from(n).unwrap_or(u32::MAX)
    }
}

fn in_window(at: Instant, now: Instant, rule: &QuarantineRule) -> bool {
    match rule.window() {
        Some(window) => now.saturating_duration_since(at) <= window,
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_th_strike_quarantines_and_starts_afresh() {
        let rule = QuarantineRule::after(3);
        let mut strikes = Strikes::default();
        let now = Instant::now();
        assert!(strikes.record(Outcome::Crashed, now, &rule, "a").is_none());
        assert!(strikes.record(Outcome::TimedOut, now, &rule, "b").is_none());
        let q = strikes
            .record(Outcome::Crashed, now, &rule, "c")
            .expect("the third strike");
        assert_eq!((q.failures, q.crashes, q.timeouts), (3, 2, 1));
        assert_eq!(q.last_error, "c");
        assert!(
            q.reason()
                .contains("2 crashes and 1 timeout reached the limit of 3")
        );
        assert_eq!(strikes.count(now, &rule), 0);
    }

    #[test]
    fn strikes_outside_the_window_do_not_count() {
        let rule = QuarantineRule::after(2).within(Duration::from_secs(10));
        let mut strikes = Strikes::default();
        let start = Instant::now();
        assert!(
            strikes
                .record(Outcome::Crashed, start, &rule, "a")
                .is_none()
        );
        let later = start + Duration::from_secs(11);
        assert!(
            strikes
                .record(Outcome::Crashed, later, &rule, "b")
                .is_none()
        );
        assert_eq!(strikes.count(later, &rule), 1);
        let soon = later + Duration::from_secs(1);
        assert!(
            strikes
                .record(Outcome::TimedOut, soon, &rule, "c")
                .is_some()
        );
    }

    #[test]
    fn never_counts_nothing() {
        let rule = QuarantineRule::never();
        let mut strikes = Strikes::default();
        for _ in 0..10 {
            assert!(
                strikes
                    .record(Outcome::Crashed, Instant::now(), &rule, "x")
                    .is_none()
            );
        }
        assert_eq!(strikes.count(Instant::now(), &rule), 0);
    }
}
