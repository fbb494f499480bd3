//! The worker process's side: read jobs from stdin, run each in the same
//! sandbox as the in-process mode, on a thread of its own, and write what
//! the script asks and answers to stdout.
//!
//! Three threads: stdin's reader, which hands jobs to the main thread and
//! delivers what the parent sends for the running job straight into its
//! slot (so a stop reaches the engine's interrupt while the script runs);
//! the main thread, which starts each job's sandbox thread and forwards
//! what the script asks of its "future" (here: the parent) to stdout; and
//! the sandbox thread. stdout is written by the main thread only.

use std::io::{self, BufRead, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Wake, Waker};
use std::thread::{self, Thread};
use std::time::Instant;

use crate::sandbox::engine::{self, STACK_MARGIN};
use crate::sandbox::slot::{Outgoing, Reply, Slot};
use crate::sandbox::wire::{self, FromWorker, ToWorker, WorkerJob};

/// The job that runs, as stdin's reader sees it.
struct Running {
    number: u64,
    slot: Arc<Slot>,
    stop: Arc<AtomicBool>,
}

type Current = Arc<Mutex<Option<Running>>>;

/// Greets the parent, then serves jobs until stdin ends (the parent is
/// gone); whether it ended well.
pub(crate) fn serve() -> bool {
    let mut stdout = io::BufWriter::new(io::stdout().lock());
    // First, before anything else is written: the parent takes a program
    // that does not greet so for one that is not a worker (of its version).
    if let Err(error) = stdout
        .write_all(wire::greeting().as_bytes())
        .and_then(|()| stdout.flush())
    {
        eprintln!("rho-script worker: writing to the parent failed: {error}");
        return false;
    }
    let current: Current = Arc::new(Mutex::new(None));
    let (jobs, next_job) = mpsc::channel::<WorkerJob>();
    let reader_current = Arc::clone(&current);
    let reader = thread::Builder::new()
        .name("rho-script-worker-stdin".to_owned())
        .spawn(move || read_stdin(&jobs, &reader_current));
    if let Err(error) = reader {
        eprintln!("rho-script worker: could not start a thread: {error}");
        return false;
    }
    // Ends when stdin's reader drops its sender, at the end of stdin.
    while let Ok(job) = next_job.recv() {
        if let Err(error) = run(job, &current, &mut stdout) {
            // The parent stopped reading: it is gone.
            eprintln!("rho-script worker: writing to the parent failed: {error}");
            return false;
        }
    }
    true
}

/// Reads the parent's messages: jobs go to the main thread, the rest to
/// the running job's slot. At the end of stdin the running job is
/// stopped and the process exits, so a worker never outlives its parent
/// even while a script runs.
fn read_stdin(jobs: &mpsc::Sender<WorkerJob>, current: &Current) {
    let stdin = io::stdin();
    let mut line = String::new();
    loop {
        line.clear();
        match stdin.lock().read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let Some(message) = ToWorker::parse(&line) else {
            eprintln!(
                "rho-script worker: a message it cannot read: {}",
                line.trim_end()
            );
            continue;
        };
        let running = current.lock().unwrap_or_else(PoisonError::into_inner);
        let running = running.as_ref();
        match message {
            ToWorker::Job(job) => {
                if jobs.send(job).is_err() {
                    break;
                }
            }
            ToWorker::Host { job, answer } => {
                if let Some(running) = running.filter(|running| running.number == job) {
                    running.slot.give_back(false, vec![answer]);
                }
            }
            ToWorker::Due { job } => {
                if let Some(running) = running.filter(|running| running.number == job) {
                    running.slot.give_back(true, Vec::new());
                }
            }
            ToWorker::Stop { job } => {
                if let Some(running) = running.filter(|running| running.number == job) {
                    running.slot.stop(&running.stop);
                }
            }
        }
    }
    if let Some(running) = current
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
    {
        running.slot.stop(&running.stop);
    }
    std::process::exit(0);
}

/// Wakes the main thread when the script asks something of its future.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs one job on a sandbox thread and forwards what it asks and
/// answers.
fn run(job: WorkerJob, current: &Current, out: &mut impl Write) -> io::Result<()> {
    let WorkerJob {
        number,
        spec,
        stack_limit,
    } = job;
    let slot = Arc::new(Slot::default());
    let stop = Arc::new(AtomicBool::new(false));
    *current.lock().unwrap_or_else(PoisonError::into_inner) = Some(Running {
        number,
        slot: Arc::clone(&slot),
        stop: Arc::clone(&stop),
    });
    let reply = Reply::new(Arc::clone(&slot));
    let sandbox_slot = Arc::clone(&slot);
    let sandbox_stop = Arc::clone(&stop);
    let started = thread::Builder::new()
        .name("rho-script-worker-sandbox".to_owned())
        .stack_size(stack_limit.saturating_add(STACK_MARGIN))
        .spawn(move || {
            // A panic of the binding leaves the reply unsent: its drop
            // answers with a crash text.
            if let Ok((answer, spent)) = catch_unwind(AssertUnwindSafe(|| {
                engine::run(&spec, &sandbox_stop, &sandbox_slot, stack_limit, None)
            })) {
                reply.send(answer);
                spent.free();
            }
        });
    let sandbox = match started {
        Ok(handle) => Some(handle),
        Err(error) => {
            // The reply went with the closure, unsent: it already
            // answered with a crash text; say why on stderr.
            eprintln!("rho-script worker: could not start a sandbox thread: {error}");
            None
        }
    };
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let result = forward(number, &slot, &waker, out);
    if let Some(sandbox) = sandbox {
        let _ended = sandbox.join();
    }
    *current.lock().unwrap_or_else(PoisonError::into_inner) = None;
    result
}

/// Forwards what the script asks of its future, then its answer.
fn forward(number: u64, slot: &Slot, waker: &Waker, out: &mut impl Write) -> io::Result<()> {
    loop {
        let Outgoing {
            updates,
            asks,
            timer,
            answer,
        } = slot.take_outgoing(waker);
        for partial in updates {
            out.write_all(
                FromWorker::Update {
                    job: number,
                    partial,
                }
                .to_line()
                .as_bytes(),
            )?;
        }
        for ask in asks {
            let message = FromWorker::Host {
                job: number,
                id: ask.id,
                callee: ask.callee,
                name: ask.name.to_string(),
                argument: ask.argument,
            };
            out.write_all(message.to_line().as_bytes())?;
        }
        if let Some(due) = timer {
            let wait = due.saturating_duration_since(Instant::now());
            out.write_all(
                FromWorker::SleepFor { job: number, wait }
                    .to_line()
                    .as_bytes(),
            )?;
        }
        if let Some(answer) = answer {
            out.write_all(
                FromWorker::Answer {
                    job: number,
                    answer,
                }
                .to_line()
                .as_bytes(),
            )?;
            return out.flush();
        }
        out.flush()?;
        thread::park();
    }
}
