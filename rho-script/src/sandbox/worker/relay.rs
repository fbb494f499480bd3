//! The pool thread's side of a worker process: start it, send it a job,
//! and stand in for the script's thread towards the call's future while
//! the job runs.
//!
//! From the call's future nothing changes: it sees the same [`Slot`] and
//! the same asks (partial results, host calls, a sleep until some time)
//! as in the in-process mode, made by the pool's thread from the worker's
//! messages; what the future does for the script goes back to the worker
//! the same way. A reading thread per worker turns its stdout into
//! messages in the running job's slot, so the pool's thread waits in one
//! place for both sides.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::process::ChildStdin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use rho_process::{ChildGroup, GroupKiller};
use rho_tool_core::untrusted::lines::{LineSplitter, Taken};

use crate::sandbox::engine::{Halt, Halted};
use crate::sandbox::host::HostAsk;
use crate::sandbox::interrupt::STUCK_AFTER;
use crate::sandbox::job::{Answer, JobSpec};
use crate::sandbox::output::ScriptOutput;
use crate::sandbox::slot::{Relayed, Slot, Woken};
use crate::sandbox::wire::{self, FromWorker, ToWorker, WorkerJob};
use crate::sandbox::worker::WorkerCommand;

/// How long the pool's thread waits for a worker that closed its stdout
/// to be reaped, for the exit status in the text.
const EXIT_WAIT: Duration = Duration::from_secs(2);

/// The longest line a worker may write before its first job is sent.
const FIRST_MAX_LINE: usize = 1 << 20;

/// How long a started worker has to greet (its first line on stdout)
/// before it is taken for a program that is not a worker. A worker greets
/// within milliseconds, but a loaded host (two cores, a build and tests
/// running) was seen to take more than 5 s to start one: a real worker
/// must not be taken for a stranger then. The call's own timeout still
/// ends a call sooner.
const GREETING_WAIT: Duration = Duration::from_secs(15);
/// How often the wait for a greeting looks whether the worker exited, and
/// how long after its exit a greeting or the end of its stdout may still
/// come: its stdout can stay open past its exit when another process
/// holds the pipe (a child it left, or a process that inherited it), so
/// its end alone does not tell.
const EXIT_LOOK: Duration = Duration::from_millis(100);
const AFTER_EXIT: Duration = Duration::from_millis(300);

/// The job a worker's reader delivers to.
struct Delivery {
    number: u64,
    slot: Arc<Slot>,
}

/// What the pool's thread tells a worker's reader.
struct Reading {
    /// The running job, if one runs.
    delivery: Option<Delivery>,
    /// The longest line the worker may write: the bound of the last job
    /// sent to it, set before the job is sent and kept after it ended.
    /// Every line the worker writes belongs to that job (a job ends with
    /// its answer, or the worker is killed), and the reader reads this
    /// bound once the line's first bytes are in, never before: a bound
    /// read while waiting could be the job before's, or none.
    max_line: usize,
    /// Whether the worker greeted yet.
    greeting: Greeting,
}

/// Whether a worker said it is a rho-script worker of this version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Greeting {
    /// Not yet: no job is sent to it before.
    Awaited,
    /// It did.
    Given,
}

type Current = Arc<Mutex<Reading>>;

/// A worker process serving one pool thread, one job at a time.
pub(crate) struct Worker {
    child: ChildGroup,
    stdin: ChildStdin,
    current: Current,
    /// Set by the reader when the worker's stdout ended or carried garbage.
    broken: Arc<AtomicBool>,
    next_job: u64,
    /// When it was started, for the wait for its greeting.
    started: Instant,
}

impl Worker {
    /// Starts a worker.
    fn start(command: &WorkerCommand) -> io::Result<Self> {
        let mut child = ChildGroup::spawn(command.command()?)?;
        let stdin = child
            .take_stdin()
            .ok_or_else(|| io::Error::other("the worker's stdin was not piped"))?;
        let stdout = child
            .take_stdout()
            .ok_or_else(|| io::Error::other("the worker's stdout was not piped"))?;
        let started = Instant::now();
        let current: Current = Arc::new(Mutex::new(Reading {
            delivery: None,
            max_line: FIRST_MAX_LINE,
            greeting: Greeting::Awaited,
        }));
        let broken = Arc::new(AtomicBool::new(false));
        let reader_current = Arc::clone(&current);
        let reader_broken = Arc::clone(&broken);
        let killer = child.killer();
        thread::Builder::new()
            .name("rho-script-worker-reader".to_owned())
            .spawn(move || read(stdout, &reader_current, &reader_broken, &killer))?;
        Ok(Self {
            child,
            stdin,
            current,
            broken,
            next_job: 0,
            started,
        })
    }

    fn send(&mut self, message: &ToWorker) -> io::Result<()> {
        self.stdin.write_all(message.to_line().as_bytes())?;
        self.stdin.flush()
    }
}

/// Reads a worker's stdout, its greeting first, then into the running
/// job's slot, until it ends or carries what no worker writes (then the
/// worker is killed: it is broken or not a worker).
fn read(stdout: impl Read, current: &Current, broken: &AtomicBool, killer: &GroupKiller) {
    let mut stdout = BufReader::with_capacity(64 << 10, stdout);
    let max_line = || {
        current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .max_line
    };
    let lost = match greeted(&mut stdout, max_line) {
        Ok(()) => {
            let mut reading = current.lock().unwrap_or_else(PoisonError::into_inner);
            reading.greeting = Greeting::Given;
            if let Some(delivery) = &reading.delivery {
                delivery.slot.relay(Relayed::Greeted);
            }
            drop(reading);
            Relayed::Broken(relay_lines(&mut stdout, current, max_line))
        }
        Err(why) => Relayed::NotAWorker(why),
    };
    broken.store(true, Ordering::Release);
    killer.kill();
    if let Some(delivery) = &current
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .delivery
    {
        delivery.slot.relay(lost);
    }
}

/// Reads the worker's first line, which must be the greeting of a
/// rho-script worker of this version: why it is not one otherwise.
fn greeted(stdout: &mut impl BufRead, max_line: impl Fn() -> usize) -> Result<(), String> {
    match read_line(stdout, max_line)? {
        Some(line) => wire::check_greeting(&line),
        None => Err("its stdout ended before it said it is a rho-script worker".to_owned()),
    }
}

/// Relays the worker's messages to the running job's slot until its
/// stdout ends or carries what no worker writes: why.
fn relay_lines(
    stdout: &mut impl BufRead,
    current: &Mutex<Reading>,
    max_line: impl Fn() -> usize,
) -> String {
    loop {
        let line = match read_line(stdout, &max_line) {
            Ok(Some(line)) => line,
            Ok(None) => return "its stdout ended".to_owned(),
            Err(why) => return why,
        };
        let message = match FromWorker::parse(&line) {
            Ok(message) => message,
            Err(why) => return format!("it wrote {why}"),
        };
        let current = current.lock().unwrap_or_else(PoisonError::into_inner);
        // A late message of a job that was stopped is dropped.
        if let Some(delivery) = current
            .delivery
            .as_ref()
            .filter(|delivery| delivery.number == message.job())
        {
            delivery.slot.relay(Relayed::Message(message));
        }
    }
}

/// One line of at most `max_line()` bytes, its newline counted, by rho's
/// one rule for a peer's lines (`LineSplitter`), without its newline;
/// `None` at the end of the stream. The bound is asked for once the
/// line's first bytes are in.
fn read_line(
    reader: &mut impl BufRead,
    max_line: impl Fn() -> usize,
) -> Result<Option<Vec<u8>>, String> {
    let mut splitter = LineSplitter::new();
    let mut max = None;
    loop {
        let buffer = match reader.fill_buf() {
            Ok(buffer) => buffer,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(format!("reading its stdout failed ({error})")),
        };
        if buffer.is_empty() {
            return if splitter.in_line() {
                Err("its stdout ended in the middle of a line".to_owned())
            } else {
                Ok(None)
            };
        }
        let max = *max.get_or_insert_with(&max_line);
        let (used, taken) = splitter.take(buffer, max);
        reader.consume(used);
        match taken {
            Taken::More => {}
            Taken::Line(line) => return Ok(Some(line)),
            Taken::TooLong => return Err(format!("it wrote a line longer than {max} bytes")),
        }
    }
}

/// The longest line a job's answer may need: its images (bounded by the
/// memory cap, as base64) and its text and details (bounded by the
/// answer's limits), with room for the JSON around them.
fn max_line(spec: &JobSpec) -> usize {
    let answer = spec.limits.answer.max_bytes;
    spec.limits
        .memory
        .saturating_mul(3)
        .saturating_div(2)
        .saturating_add(answer.saturating_mul(4))
        .saturating_add(1 << 20)
}

/// A pool thread's worker process.
#[derive(Default)]
pub(crate) enum WorkerSlot {
    /// None was started yet: the thread's first job starts one.
    #[default]
    Unstarted,
    /// It serves the thread's jobs.
    Serving(Worker),
    /// It was killed (it did not stop in time), died or broke, or its
    /// replacement could not start: the thread's next job starts another,
    /// which counts as a restart. (Not started before that job: a worker
    /// program that dies at once would otherwise be started in a loop.)
    Lost,
}

impl WorkerSlot {
    /// Takes the worker out for a job: the one serving, unless it broke
    /// since its last job (its reader saw its stdout end or carry garbage:
    /// it is dropped, which kills it), or a new one. Until the job puts it
    /// back the thread's worker counts as lost, so that one lost in the
    /// job (or in a panic of the relay) is replaced as a restart.
    fn take(&mut self, command: &WorkerCommand, restarts: &AtomicU64) -> io::Result<Worker> {
        match std::mem::replace(self, WorkerSlot::Lost) {
            WorkerSlot::Serving(held) if !held.broken.load(Ordering::Acquire) => Ok(held),
            WorkerSlot::Unstarted => {
                Worker::start(command).inspect_err(|_| *self = WorkerSlot::Unstarted)
            }
            WorkerSlot::Serving(_) | WorkerSlot::Lost => {
                let started = Worker::start(command)?;
                restarts.fetch_add(1, Ordering::Relaxed);
                Ok(started)
            }
        }
    }
}

/// Runs `spec` in the pool thread's worker, starting one if there is
/// none (or the last one was lost), and gives the answer for the call.
/// The worker is kept for the next job unless it broke or had to be
/// killed; `restarts` counts the workers started in place of a lost one.
pub(crate) fn run(
    worker: &mut WorkerSlot,
    command: &WorkerCommand,
    spec: JobSpec,
    stop: &AtomicBool,
    slot: &Arc<Slot>,
    stack_limit: usize,
    restarts: &AtomicU64,
) -> Answer {
    let mut held = match worker.take(command, restarts) {
        Ok(held) => held,
        Err(error) => {
            return Answer::Output(ScriptOutput::crashed(format!(
                "tool `{}` crashed: its worker process `{}` could not be started: {error}; {}",
                spec.name,
                command.program().display(),
                crate::sandbox::worker::HOW,
            )));
        }
    };
    let name = std::sync::Arc::clone(&spec.name);
    let halted = Halted::of(&spec);
    let deadline = spec.deadline;
    let number = held.next_job;
    held.next_job += 1;
    let greeting = {
        let mut reading = held.current.lock().unwrap_or_else(PoisonError::into_inner);
        reading.delivery = Some(Delivery {
            number,
            slot: Arc::clone(slot),
        });
        reading.max_line = max_line(&spec);
        // Read under the lock under which the reader, once it greets,
        // looks for a job to tell: the greeting is not missed.
        reading.greeting
    };
    let unsent = match greeting {
        Greeting::Given => None,
        Greeting::Awaited => greeting_awaited(&held, stop, slot, deadline),
    };
    let ended = match unsent {
        Some(ended) => ended,
        None => match held.send(&ToWorker::Job(WorkerJob {
            number,
            spec,
            stack_limit,
        })) {
            Ok(()) => relay(&mut held, number, stop, slot, deadline),
            Err(error) => Ended::Broken(format!("writing the job to it failed ({error})")),
        },
    };
    held.current
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .delivery = None;
    match ended {
        Ended::Answered(answer) => {
            *worker = WorkerSlot::Serving(held);
            answer
        }
        Ended::Halted(halt) => {
            // Stopped while the worker was still starting: it is kept.
            *worker = WorkerSlot::Serving(held);
            halted.answer(halt)
        }
        // The worker stays lost, and is killed as it is dropped here.
        Ended::Broken(why) => died(&held, &name, &why),
        Ended::NotAWorker(why) => not_a_worker(&held, &name, command, &why),
        Ended::Stuck => {
            // It did not stop in time: killed, its whole group, at once.
            // The call answers as a stuck thread's does in the in-process
            // mode.
            held.child.kill();
            let halt = if stop.load(Ordering::Acquire) {
                Halt::Dropped
            } else {
                Halt::PastDeadline
            };
            halted.answer(halt)
        }
    }
}

/// How relaying a job ended.
enum Ended {
    /// The worker answered.
    Answered(Answer),
    /// The call was stopped before the job was sent (the worker had not
    /// greeted yet).
    Halted(Halt),
    /// The program is not a rho-script worker of this version: why.
    NotAWorker(String),
    /// The worker's stdout ended or carried garbage, or it could not be
    /// written to.
    Broken(String),
    /// Told to stop, it did not answer in time.
    Stuck,
}

/// Waits for a new worker's greeting before its first job is sent: `None`
/// once it came, or how the job ended without it (the call stopped or past
/// its deadline first, the worker broke, or it is not a worker: it exited,
/// or gave no greeting within [`GREETING_WAIT`] of its start).
fn greeting_awaited(
    worker: &Worker,
    stop: &AtomicBool,
    slot: &Slot,
    deadline: Instant,
) -> Option<Ended> {
    let greeting_by = worker
        .started
        .checked_add(GREETING_WAIT)
        .unwrap_or(worker.started);
    let until = deadline.min(greeting_by);
    let mut exited: Option<Instant> = None;
    loop {
        let look = Instant::now()
            .checked_add(EXIT_LOOK)
            .map_or(until, |look| look.min(until));
        match slot.wait(None, stop, look) {
            Woken::Relayed(relayed) => {
                for relayed in relayed {
                    match relayed {
                        Relayed::Greeted => return None,
                        Relayed::NotAWorker(why) => return Some(Ended::NotAWorker(why)),
                        Relayed::Broken(why) => return Some(Ended::Broken(why)),
                        // None can come before the greeting: the reader
                        // reads that first.
                        Relayed::Message(_) => {}
                    }
                }
            }
            // No job was sent: nothing was asked.
            Woken::Answers(_) | Woken::Due => {}
            // A look at the worker, not the end of the wait.
            Woken::Stopped if !stop.load(Ordering::Acquire) && Instant::now() < until => {
                let Some(exit) = worker.child.status() else {
                    continue;
                };
                let since = *exited.get_or_insert_with(Instant::now);
                if since.elapsed() >= AFTER_EXIT {
                    return Some(Ended::NotAWorker(format!(
                        "it {exit} before it said it is a rho-script worker"
                    )));
                }
            }
            Woken::Stopped => {
                return Some(if stop.load(Ordering::Acquire) {
                    Ended::Halted(Halt::Dropped)
                } else if Instant::now() >= greeting_by {
                    Ended::NotAWorker(format!(
                        "it wrote nothing on stdout within {}s of its start, where a rho-script worker greets",
                        GREETING_WAIT.as_secs()
                    ))
                } else {
                    Ended::Halted(Halt::PastDeadline)
                });
            }
        }
    }
}

/// Stands in for the script's thread towards the call's future until the
/// worker answers.
fn relay(
    worker: &mut Worker,
    number: u64,
    stop: &AtomicBool,
    slot: &Slot,
    deadline: Instant,
) -> Ended {
    // The sleep the worker asked for, as a time on this clock.
    let mut due: Option<Instant> = None;
    loop {
        let sent = match slot.wait(due, stop, deadline) {
            Woken::Relayed(relayed) => {
                for relayed in relayed {
                    match relayed {
                        Relayed::Broken(why) => return Ended::Broken(why),
                        Relayed::NotAWorker(why) => return Ended::NotAWorker(why),
                        Relayed::Greeted => {}
                        Relayed::Message(FromWorker::Answer { answer, .. }) => {
                            return Ended::Answered(answer);
                        }
                        Relayed::Message(FromWorker::Update { partial, .. }) => {
                            slot.push_update(partial);
                        }
                        Relayed::Message(FromWorker::Host {
                            id,
                            callee,
                            name,
                            argument,
                            ..
                        }) => slot.ask_host(HostAsk {
                            id,
                            callee,
                            name: Arc::from(name),
                            argument,
                        }),
                        Relayed::Message(FromWorker::SleepFor { wait, .. }) => {
                            let now = Instant::now();
                            due = Some(now.checked_add(wait).unwrap_or(deadline));
                        }
                    }
                }
                Ok(())
            }
            Woken::Answers(answers) => answers.into_iter().try_for_each(|answer| {
                worker.send(&ToWorker::Host {
                    job: number,
                    answer,
                })
            }),
            Woken::Due => {
                due = None;
                worker.send(&ToWorker::Due { job: number })
            }
            Woken::Stopped => return stopped(worker, number, stop, slot),
        };
        if let Err(error) = sent {
            return Ended::Broken(format!("writing to it failed ({error})"));
        }
    }
}

/// The call is gone or past its deadline: waits, for [`STUCK_AFTER`] at
/// most, for the answer the worker then gives; a worker that gives none
/// is stuck (inside one long native operation, or broken) and is killed,
/// so that the pool's thread is free for the next call. A call that is
/// gone is told to stop; at the deadline the worker stops the script by
/// its own clock, with the same text as in the in-process mode (telling
/// it to stop would race that and could answer "stopped" instead).
fn stopped(worker: &mut Worker, number: u64, stop: &AtomicBool, slot: &Slot) -> Ended {
    if stop.load(Ordering::Acquire) && worker.send(&ToWorker::Stop { job: number }).is_err() {
        return Ended::Stuck;
    }
    answer_within(slot, Instant::now() + STUCK_AFTER).unwrap_or(Ended::Stuck)
}

/// The worker's answer (or its breaking) if it comes by `until`; what
/// else it sends meanwhile is dropped (the job is over).
fn answer_within(slot: &Slot, until: Instant) -> Option<Ended> {
    loop {
        let relayed = slot.wait_relayed(until);
        if relayed.is_empty() {
            return None;
        }
        for relayed in relayed {
            match relayed {
                Relayed::Message(FromWorker::Answer { answer, .. }) => {
                    return Some(Ended::Answered(answer));
                }
                Relayed::Broken(why) => return Some(Ended::Broken(why)),
                Relayed::NotAWorker(why) => return Some(Ended::NotAWorker(why)),
                Relayed::Message(_) | Relayed::Greeted => {}
            }
        }
    }
}

/// The crash of a job whose worker died or broke: how it ended, and the
/// end of its stderr.
fn died(worker: &Worker, name: &str, why: &str) -> Answer {
    let (exit, stderr) = last_words(worker);
    Answer::Output(ScriptOutput::crashed(format!(
        "tool `{name}` crashed: its worker process {exit} while it ran the script ({why}){stderr}"
    )))
}

/// The crash of a job whose worker program is not a rho-script worker (of
/// this version): why, how to have one, and the end of its stderr.
fn not_a_worker(worker: &Worker, name: &str, command: &WorkerCommand, why: &str) -> Answer {
    let (_exit, stderr) = last_words(worker);
    Answer::Output(ScriptOutput::crashed(format!(
        "tool `{name}` crashed: its worker process `{}` is not a rho-script worker of this host's version: {why}; {}{stderr}",
        command.program().display(),
        crate::sandbox::worker::HOW,
    )))
}

/// Kills the worker and gives how it ended and the end of its stderr (a
/// paragraph of its own, or nothing).
fn last_words(worker: &Worker) -> (String, String) {
    worker.child.kill();
    let exit = worker.child.wait_timeout(EXIT_WAIT).map_or_else(
        || "did not end when killed".to_owned(),
        |exit| exit.to_string(),
    );
    // Killed and reaped (or given up on): its stderr ends at once, but
    // its reader may not have read the last words yet.
    let stderr = worker.child.stderr_tail_at_end(EXIT_WAIT);
    let stderr = stderr.trim_end();
    let stderr = if stderr.is_empty() {
        String::new()
    } else {
        let start = stderr.len().saturating_sub(2000);
        let start = (start..stderr.len())
            .find(|&at| stderr.is_char_boundary(at))
            .unwrap_or(stderr.len());
        format!("\nthe end of its stderr:\n{}", &stderr[start..])
    };
    (exit, stderr)
}
