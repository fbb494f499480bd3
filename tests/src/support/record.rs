//! [`Recorder`]: per-test counters of where foreign code ran.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::ThreadId;

use super::counting::current_task;
use super::marker::in_loop;

/// A piece of foreign code that can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Code {
    /// `Drop::drop`.
    Drop,
    /// `Display::fmt`.
    Display,
    /// `Debug::fmt`.
    Debug,
    /// `Clone::clone`.
    Clone,
    /// `Serialize::serialize`.
    Serialize,
    /// Any other code (a tool's body, a panic being raised).
    Run,
}

impl Code {
    /// Every kind of code, in a fixed order.
    pub const ALL: [Code; 6] = [
        Code::Drop,
        Code::Display,
        Code::Debug,
        Code::Clone,
        Code::Serialize,
        Code::Run,
    ];

    fn index(self) -> usize {
        match self {
            Code::Drop => 0,
            Code::Display => 1,
            Code::Debug => 2,
            Code::Clone => 3,
            Code::Serialize => 4,
            Code::Run => 5,
        }
    }
}

/// Counts each run of one foreign value's code: how often, of which kind,
/// how often while the loop was being polled or dropped
/// ([`in_loop`](super::in_loop)), how often outside every task of a
/// [`Counting`](super::Counting) executor, and in which tasks.
///
/// Make one per value (or per test) with [`Recorder::new`] and share it
/// with an `Arc`.
#[derive(Default)]
pub struct Recorder {
    by_code: [AtomicUsize; 6],
    in_loop: AtomicUsize,
    outside_task: AtomicUsize,
    tasks: Mutex<Vec<Option<u64>>>,
    threads: Mutex<Vec<ThreadId>>,
}

impl Recorder {
    /// A fresh recorder.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Records one run of `code` on this thread, now.
    pub fn note(&self, code: Code) {
        self.by_code[code.index()].fetch_add(1, Ordering::SeqCst);
        if in_loop() {
            self.in_loop.fetch_add(1, Ordering::SeqCst);
        }
        let task = current_task();
        if task.is_none() {
            self.outside_task.fetch_add(1, Ordering::SeqCst);
        }
        self.tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(task);
        self.threads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(std::thread::current().id());
    }

    /// Runs of `code`.
    pub fn count(&self, code: Code) -> usize {
        self.by_code[code.index()].load(Ordering::SeqCst)
    }

    /// Runs of any code.
    pub fn runs(&self) -> usize {
        Code::ALL.iter().map(|code| self.count(*code)).sum()
    }

    /// Runs of `Display`, `Debug`, `Clone` and `Serialize`: the code a panic
    /// payload's reader could run.
    pub fn formats(&self) -> usize {
        [Code::Display, Code::Debug, Code::Clone, Code::Serialize]
            .iter()
            .map(|code| self.count(*code))
            .sum()
    }

    /// Runs while the loop was being polled or dropped. Must stay 0.
    pub fn in_loop(&self) -> usize {
        self.in_loop.load(Ordering::SeqCst)
    }

    /// Runs outside every task of a `Counting` executor.
    pub fn outside_task(&self) -> usize {
        self.outside_task.load(Ordering::SeqCst)
    }

    /// The task of each run, in order (`None`: outside every task).
    pub fn tasks(&self) -> Vec<Option<u64>> {
        self.tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The thread of each run, in order.
    pub fn threads(&self) -> Vec<ThreadId> {
        self.threads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Whether any run happened on `thread` (say, the loop's thread).
    pub fn ran_on(&self, thread: ThreadId) -> bool {
        self.threads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&thread)
    }
}

impl fmt::Debug for Recorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_struct("Recorder");
        for code in Code::ALL {
            let count = self.count(code);
            if count > 0 {
                map.field(
                    match code {
                        Code::Drop => "drop",
                        Code::Display => "display",
                        Code::Debug => "debug",
                        Code::Clone => "clone",
                        Code::Serialize => "serialize",
                        Code::Run => "run",
                    },
                    &count,
                );
            }
        }
        map.field("in_loop", &self.in_loop())
            .field("outside_task", &self.outside_task())
            .finish()
    }
}
