//! A server's deaths: the backoff before it is started again, and the
//! quarantine of the whole server when it keeps dying.
//!
//! Each call that a death ends is also counted against its own tool (it
//! ends `Crashed`, and the source's accounting sees it), but a server that
//! dies takes all its tools with it, so the server is judged as a whole
//! too: at the rule's limit of deaths (or failed starts) it is not started
//! again, and its tools leave the model's list, until the host puts it
//! back.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rho_registry::{Disabled, QuarantineRule, ToolListNotifier};

/// How restarts are spaced: the first restart after a death waits
/// `initial`, each further death in a row doubles the wait, up to `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The wait before the first restart.
    pub initial: Duration,
    /// The longest wait.
    pub max: Duration,
}

impl Default for Backoff {
    /// 100 ms, doubling up to 5 s.
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(5),
        }
    }
}

impl Backoff {
    /// The wait after `deaths` deaths in a row (none after none).
    fn wait(&self, deaths: u32) -> Duration {
        match deaths {
            0 => Duration::ZERO,
            n => {
                let doublings = (n - 1).min(30);
                self.initial.saturating_mul(1u32 << doublings).min(self.max)
            }
        }
    }
}

/// A server's record of deaths.
#[derive(Debug)]
pub(crate) struct Health {
    server: String,
    rule: QuarantineRule,
    backoff: Backoff,
    /// Mirrors `state.quarantine.is_some()`: the registry asks at every
    /// look-up of a tool, and this answers without the lock.
    quarantined: AtomicBool,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// When each death counted towards the quarantine happened.
    deaths: VecDeque<Instant>,
    /// Deaths since the server last answered a call.
    in_a_row: u32,
    last_death: Option<Instant>,
    last_text: Option<String>,
    total: u64,
    quarantine: Option<Disabled>,
    notifiers: Vec<ToolListNotifier>,
}

impl Health {
    pub(crate) fn new(server: impl Into<String>, rule: QuarantineRule, backoff: Backoff) -> Self {
        Self {
            server: server.into(),
            rule,
            backoff,
            quarantined: AtomicBool::new(false),
            state: Mutex::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Only this module's bookkeeping runs under the lock.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a death (or a failed start) described by `text`; quarantines
    /// the server at the rule's limit.
    pub(crate) fn died(&self, text: &str) {
        let now = Instant::now();
        let mut state = self.state();
        state.total += 1;
        state.in_a_row = state.in_a_row.saturating_add(1);
        state.last_death = Some(now);
        state.last_text = Some(text.to_owned());
        if state.quarantine.is_some() {
            return;
        }
        state.deaths.push_back(now);
        if let Some(window) = self.rule.window() {
            while state
                .deaths
                .front()
                .is_some_and(|&death| now.duration_since(death) > window)
            {
                state.deaths.pop_front();
            }
        }
        let Some(limit) = self.rule.limit() else {
            state.deaths.clear();
            return;
        };
        if state.deaths.len() >= limit as usize {
            state.quarantine = Some(Disabled::new(
                format!(
                    "MCP server `{}` kept dying and is quarantined with all its tools; \
                     the last time: {text}",
                    self.server
                ),
                limit,
            ));
            self.quarantined.store(true, Ordering::Release);
            let notifiers = state.notifiers.clone();
            drop(state);
            for notifier in notifiers {
                notifier.notify();
            }
        }
    }

    /// The server answered a call: the next death waits the shortest time
    /// again.
    pub(crate) fn answered(&self) {
        self.state().in_a_row = 0;
    }

    /// How long from now a start must wait.
    pub(crate) fn wait_before_start(&self) -> Duration {
        let state = self.state();
        let Some(last) = state.last_death else {
            return Duration::ZERO;
        };
        self.backoff
            .wait(state.in_a_row)
            .saturating_sub(last.elapsed())
    }

    /// The quarantine, while the server is in it.
    pub(crate) fn quarantine(&self) -> Option<Disabled> {
        if !self.quarantined.load(Ordering::Acquire) {
            return None;
        }
        self.state().quarantine.clone()
    }

    /// Ends the quarantine, forgetting the deaths; returns whether there
    /// was one.
    pub(crate) fn reenable(&self) -> bool {
        let mut state = self.state();
        if state.quarantine.take().is_none() {
            return false;
        }
        self.quarantined.store(false, Ordering::Release);
        state.deaths.clear();
        state.in_a_row = 0;
        state.last_death = None;
        let notifiers = state.notifiers.clone();
        drop(state);
        for notifier in notifiers {
            notifier.notify();
        }
        true
    }

    /// How many times the server died (or failed to start), and the text
    /// of the last time.
    pub(crate) fn deaths(&self) -> (u64, Option<String>) {
        let state = self.state();
        (state.total, state.last_text.clone())
    }

    pub(crate) fn attach(&self, notifier: ToolListNotifier) {
        self.state().notifiers.push(notifier);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_doubles_up_to_the_max() {
        let backoff = Backoff {
            initial: Duration::from_millis(100),
            max: Duration::from_millis(500),
        };
        let waits: Vec<u128> = (0..6).map(|n| backoff.wait(n).as_millis()).collect();
        assert_eq!(waits, [0, 100, 200, 400, 500, 500]);
        assert_eq!(backoff.wait(u32::MAX), Duration::from_millis(500));
    }

    #[test]
    fn the_limit_th_death_quarantines_and_reenable_forgets() {
        let health = Health::new("srv", QuarantineRule::after(2), Backoff::default());
        health.died("exited with code 1");
        assert!(health.quarantine().is_none());
        health.died("exited with code 2");
        let quarantine = health.quarantine().expect("quarantined");
        assert!(
            quarantine.reason.contains("exited with code 2"),
            "{quarantine}"
        );
        assert!(health.reenable());
        assert!(health.quarantine().is_none());
        assert_eq!(health.wait_before_start(), Duration::ZERO);
        assert_eq!(health.deaths().0, 2);
    }
}
