//! The executor conformance suite of rho: one named test per contract
//! point, which any executor crate runs against itself.
//!
//! rho's call contract (see [`rho_tool_core`]: one call, step by step, and
//! what a kill can stop) lives in `rho-tool-core` and is the same on every
//! runtime, but only as long as the executor under it keeps its half:
//! spawn a task not linked to the loop, kill it without waiting for it,
//! resolve its handle once with nothing foreign inside, drop a killed
//! task's future, survive a future whose `Drop` panics, report the
//! executor going away, and keep a timer. This crate checks all of it
//! through real calls, on whatever executor it is given, so that a tool
//! and a gate written once behave the same on tokio, on smol, or on a
//! third party's runtime.
//!
//! # Running it against an executor
//!
//! Implement [`Harness`] in a test file of the executor crate (with `rho`
//! and its `conformance` feature as a dev-dependency, or this crate
//! itself), then expand
//! [`conformance_suite!`] once per harness, each in its own module so the
//! test names read `<module>::<point>`:
//!
//! ```
//! # mod my_runtime {
//! #     use std::future::Future;
//! #     use std::marker::PhantomData;
//! #     use std::pin::Pin;
//! #     use std::task::{Context, Poll};
//! #     use std::time::Duration;
//! #     use rho::executor::{Executor, Joined, TaskHandle};
//! #     pub struct Runtime;
//! #     impl Runtime {
//! #         pub fn with_threads(_threads: usize) -> Self { Runtime }
//! #         pub fn executor(&self) -> MyExecutor { MyExecutor }
//! #         pub fn block_on<F: Future>(&self, _future: F) -> F::Output { unimplemented!() }
//! #         pub fn shut_down_now(self) {}
//! #     }
//! #     #[derive(Clone)]
//! #     pub struct MyExecutor;
//! #     pub struct Task<T>(PhantomData<fn() -> T>);
//! #     impl<T> Future for Task<T> {
//! #         type Output = Joined<T>;
//! #         fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Joined<T>> { Poll::Pending }
//! #     }
//! #     impl<T: Send + 'static> TaskHandle<T> for Task<T> { fn kill(&mut self) {} }
//! #     impl Executor for MyExecutor {
//! #         type Handle<T: Send + 'static> = Task<T>;
//! #         type Sleep = std::future::Pending<()>;
//! #         fn spawn<F>(&self, _future: F) -> Task<F::Output>
//! #         where F: Future + Send + 'static, F::Output: Send + 'static { Task(PhantomData) }
//! #         fn sleep(&self, _duration: Duration) -> Self::Sleep { std::future::pending() }
//! #     }
//! # }
//! use rho::conformance::Harness;
//! use my_runtime::{MyExecutor, Runtime};
//!
//! /// A fresh two-thread runtime for each test.
//! pub struct MyHarness(Runtime);
//!
//! impl Harness for MyHarness {
//!     type Executor = MyExecutor;
//!     const MULTI_THREADED: bool = true;
//!
//!     fn new() -> Self {
//!         MyHarness(Runtime::with_threads(2))
//!     }
//!     fn executor(&self) -> MyExecutor {
//!         self.0.executor()
//!     }
//!     fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
//!         self.0.block_on(future)
//!     }
//!     fn shut_down(self) {
//!         self.0.shut_down_now()
//!     }
//! }
//!
//! mod my_runtime_suite {
//!     rho::conformance::conformance_suite!(super::MyHarness);
//! }
//! # fn main() {}
//! ```
//!
//! `cargo test --test <file>` then runs every point; `cargo test --test
//! <file> -- --list` prints their names, which are [`POINTS`] for every
//! executor. The `rho-exec-tokio` and `rho-exec-smol` crates run the
//! suite this way from their `tests/conformance.rs` (tokio's multi-thread
//! and current-thread runtimes; a smol executor with threads of its own
//! and smol's global one).
//!
//! The property points run `RHO_PROPTEST_CASES` cases each (default 256),
//! e.g. `RHO_PROPTEST_CASES=5000 cargo test --test conformance
//! the_reason_never_runs` for a long run.
//!
//! # The points
//!
//! Each point is a function `points::<name>::<H>()` (see [`points`] for
//! what each one checks); the names, in order, are [`POINTS`]:
//!
//! - the gate: waiting longer than the timeout then allowing succeeds;
//!   1,000 calls finish while one gate waits; deny; panics with a `&str`, a
//!   `String`, a custom payload; a host abort while the gate waits.
//! - the running notice: at most once, after the gate allowed, before the
//!   tool started; never for a call whose gate did not allow.
//! - tool panics: `&str`, `String`, custom payload, a payload whose `Drop`
//!   panics (its second payload never runs), `run` panicking before it
//!   returns its future, metadata that panics.
//! - answers: every answer form as `to_result` makes it, exactly the
//!   `ToolResult` and JSON it must be.
//! - untrusted answers: made plain inside the call's task; their
//!   `Serialize` or `Drop` panicking ends the call as crashed; a
//!   `Serialize` that fails, or details beyond the runner's limits, end it
//!   failed; partial results (`ToolContext::update`) made plain in the
//!   task, delivered in order before the end.
//! - kills: timeout, a tool that never yields, a future whose `Drop` panics
//!   killed at its timeout or aborted by the host, a dropped handle, a
//!   `Duration::MAX` timeout, a loop on a plain thread (no runtime) still
//!   timing calls out.
//! - the watch: each start and end told exactly once; a panicking watch
//!   changes nothing; a call's own watch hears that call alone, a refusal
//!   included.
//! - the executor itself (its `Executor`/`TaskHandle` contract, on raw
//!   tasks): done, killed (idempotently), killed after it finished (still
//!   done), detached, panicked (payload kept out of the loop, also when the
//!   handle is dropped), killed with a panicking `Drop`, the timer.
//! - no task leaks: after every kind of end, and after the executor shut
//!   down.
//! - the executor going away: calls in flight and calls started afterwards
//!   end `ExecutorGone`, once each, with a loop that has no runtime left
//!   (also one already waiting on them, which the shutdown alone wakes); a
//!   tool future whose `Drop` panics, dropped by the shutdown, leaves the
//!   process running.
//! - properties (proptest): **the reason never runs** (no code of a foreign
//!   payload or answer runs in the loop, over payload kind x phase x
//!   timing) and **every call ends exactly once** (generated batches of
//!   calls ending every way).
//!
//! Every point also ends by checking that the executor holds no task of
//! rho's (counted by [`support::Counting`]), and runs its whole loop side
//! marked ([`support::InLoop`]), so foreign code that runs in the loop is
//! caught wherever it happens. On a multi-threaded harness, whose tasks run
//! on threads of their own, the points about foreign code (payloads,
//! answers, killed futures) also check that none of it ran on the loop's
//! thread at all.
//!
//! # Documented exceptions
//!
//! One point checks a weaker behaviour when [`Harness::MULTI_THREADED`] is
//! `false` (say, tokio's current-thread runtime), and prints
//! `rho-conformance: <point>: weaker on this executor: <why>`:
//!
//! - `a_tool_that_never_yields_ends_at_its_deadline`: a tool that never
//!   yields holds the only thread, so neither the loop nor the timer runs
//!   until it yields; the point then checks that the call ends `TimedOut`
//!   at the tool's first yield after its deadline (not at the deadline).
//!
//! Five points are skipped when [`Harness::SHUTS_DOWN`] is `false` (an
//! executor that lives as long as the process and so cannot go away, like
//! smol's global one), and print `rho-conformance: <point>: skipped:
//! <why>`:
//!
//! - `no_task_leaks_after_the_executor_shuts_down`,
//! - `calls_in_flight_when_the_executor_shuts_down_end_executor_gone`,
//! - `calls_awaited_on_a_plain_thread_end_executor_gone_when_the_executor_shuts_down`,
//! - `a_tool_future_whose_drop_panics_when_the_executor_shuts_down_leaves_the_process_running`,
//! - `a_call_started_after_the_executor_shut_down_ends_executor_gone`.
//!
//! Every other point holds as stated on every conforming executor. (Output
//! of passing tests is captured: `cargo test -- --nocapture` shows these
//! lines.)
//!
//! # What is not here
//!
//! That `plain` is total and bounded (any value is made plain data or
//! refused with an error, within the limits) does not depend on an
//! executor: it is a property test of `rho-untrusted`. What the suite
//! cannot check in-process: `panic = "abort"` builds and foreign code
//! calling `std::process::abort` end the process (see
//! `rho_untrusted::PANICS_ARE_CONTAINED`).

mod harness;
pub mod points;
pub mod support;

pub use harness::Harness;

/// Expands `$crate::__rho_conformance_expand!((mode) <every point name>)`:
/// the one list of the points, behind [`POINTS`] and
/// [`conformance_suite!`].
#[doc(hidden)]
#[macro_export]
macro_rules! __rho_conformance_points {
    ($($mode:tt)*) => {
        $crate::__rho_conformance_expand! {
            ($($mode)*)
            a_gate_waiting_longer_than_the_timeout_then_allowing_succeeds
            a_thousand_calls_finish_while_one_gate_waits
            a_gate_that_denies_ends_denied_and_the_tool_never_runs
            a_gate_panicking_with_a_str_ends_crashed
            a_gate_panicking_with_a_string_ends_crashed
            a_gate_panicking_with_a_custom_payload_ends_crashed_and_the_payload_never_runs_in_the_loop
            a_host_abort_while_the_gate_waits_ends_aborted_without_a_clock
            the_running_notice_comes_at_most_once_after_the_gate_allows_and_before_the_tool_starts
            a_tool_panicking_with_a_str_ends_crashed_with_its_message
            a_tool_panicking_with_a_string_ends_crashed_with_its_message
            a_tool_panicking_with_a_custom_payload_ends_crashed_and_the_payload_never_runs_in_the_loop
            a_tool_panic_payload_whose_drop_panics_is_contained_and_its_second_payload_never_runs
            a_run_that_panics_before_returning_its_future_ends_crashed
            a_tool_whose_metadata_panics_ends_crashed_without_running
            every_answer_form_reaches_the_loop_as_to_result_makes_it
            an_untrusted_answer_is_made_plain_inside_its_task_and_the_loop_gets_plain_data
            an_answer_whose_serialize_panics_ends_crashed
            an_answer_whose_drop_panics_ends_crashed
            an_answer_whose_serialize_fails_ends_failed_with_the_error
            an_answer_beyond_the_runners_limits_ends_failed
            partial_results_arrive_in_order_before_the_end_as_plain_data
            a_tool_sleeping_past_its_timeout_ends_timed_out_and_its_future_is_dropped
            a_tool_that_never_yields_ends_at_its_deadline
            a_paused_clock_moves_the_deadline_by_the_time_it_held
            the_clock_runs_again_after_a_pause
            a_pause_held_for_ever_ends_at_the_timeout_plus_the_runners_most
            a_tool_future_whose_drop_panics_killed_at_its_timeout_leaves_the_process_running
            a_tool_future_whose_drop_panics_aborted_by_the_host_leaves_the_process_running
            dropping_an_unfinished_call_handle_kills_its_task
            a_tool_with_the_longest_possible_timeout_runs_normally
            a_loop_on_a_plain_thread_still_times_calls_out
            a_watch_sees_each_call_start_and_end_exactly_once
            a_panicking_watch_changes_nothing_about_the_results
            a_calls_own_watch_hears_that_call_once_beside_the_runners
            a_raw_task_resolves_done_with_its_value
            a_killed_raw_task_resolves_killed_and_its_future_is_dropped
            a_raw_task_killed_after_it_finished_resolves_done
            a_dropped_raw_task_handle_detaches_its_task
            a_raw_task_that_panics_resolves_crashed_and_its_payload_never_runs_in_the_loop
            a_killed_raw_task_whose_drop_panics_resolves_killed_and_its_payload_never_runs_in_the_loop
            dropping_a_raw_task_handle_after_its_task_panicked_keeps_the_payload_out_of_the_loop
            the_executors_sleep_waits_at_least_its_duration
            no_task_leaks_after_every_kind_of_end
            no_task_leaks_after_the_executor_shuts_down
            calls_in_flight_when_the_executor_shuts_down_end_executor_gone
            calls_awaited_on_a_plain_thread_end_executor_gone_when_the_executor_shuts_down
            a_tool_future_whose_drop_panics_when_the_executor_shuts_down_leaves_the_process_running
            a_call_started_after_the_executor_shut_down_ends_executor_gone
            the_reason_never_runs
            every_call_ends_exactly_once
        }
    };
}

/// Turns the list of points into tests (`tests <harness>`) or into their
/// names (`names`).
#[doc(hidden)]
#[macro_export]
macro_rules! __rho_conformance_expand {
    ((tests $harness:ty) $($name:ident)*) => {
        $(
            #[test]
            fn $name() {
                $crate::points::$name::<$harness>();
            }
        )*
    };
    ((names) $($name:ident)*) => {
        &[$(::core::stringify!($name)),*]
    };
}

/// Expands to one `#[test] fn <point>()` per contract point, each running
/// `rho_conformance::points::<point>::<Harness>()`.
///
/// The test names are [`POINTS`], the same for every executor. Expand it
/// inside a module of its own per harness (`mod multi_thread {
/// rho_conformance::conformance_suite!(super::MyHarness); }`); see the
/// crate docs for a whole example.
#[macro_export]
macro_rules! conformance_suite {
    ($harness:ty $(,)?) => {
        $crate::__rho_conformance_points!(tests $harness);
    };
}

/// The names of the contract points, in order: the test names
/// [`conformance_suite!`] expands to, and the functions in [`points`].
pub const POINTS: &[&str] = __rho_conformance_points!(names);

#[cfg(test)]
mod tests {
    use super::POINTS;

    #[test]
    fn the_points_are_unique_and_named_in_snake_case() {
        let mut seen = std::collections::HashSet::new();
        for point in POINTS {
            assert!(seen.insert(point), "{point} is listed twice");
            assert!(
                point
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{point}"
            );
        }
        assert!(POINTS.contains(&"the_reason_never_runs"));
    }
}
