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

use crate::output::ScriptOutput;
use crate::pool::{Answer, JobSpec, STUCK_AFTER};
use crate::sandbox::{Halt, Halted};
use crate::slot::{HostAsk, Relayed, Slot, Woken};
use crate::worker::WorkerCommand;
use crate::worker::wire::{FromWorker, ToWorker, WorkerJob};

/// How long the pool's thread waits for a worker that closed its stdout
/// to be reaped, for the exit status in the text.
const EXIT_WAIT: Duration = Duration::from_secs(2);

/// The longest line a worker may write before its first job is sent.
const FIRST_MAX_LINE: usize = 1 << 20;

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
}

impl Worker {
    /// Starts a worker.
    fn start(command: &WorkerCommand) -> io::Result<Self> {
        let mut child = ChildGroup::spawn(command.command())?;
        let stdin = child
            .take_stdin()
            .ok_or_else(|| io::Error::other("the worker's stdin was not piped"))?;
        let stdout = child
            .take_stdout()
            .ok_or_else(|| io::Error::other("the worker's stdout was not piped"))?;
        let current: Current = Arc::new(Mutex::new(Reading {
            delivery: None,
            max_line: FIRST_MAX_LINE,
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
        })
    }

    fn send(&mut self, message: &ToWorker) -> io::Result<()> {
        self.stdin.write_all(message.to_line().as_bytes())?;
        self.stdin.flush()
    }
}

/// Reads a worker's stdout into the running job's slot until it ends or
/// carries what no worker writes (then the worker is killed: it is
/// broken or not a worker).
fn read(stdout: impl Read, current: &Current, broken: &AtomicBool, killer: &GroupKiller) {
    let mut stdout = BufReader::with_capacity(64 << 10, stdout);
    let max_line = || {
        current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .max_line
    };
    let why = loop {
        let line = match read_line(&mut stdout, max_line) {
            Ok(Some(line)) => line,
            Ok(None) => break "its stdout ended".to_owned(),
            Err(why) => break why,
        };
        let message = match FromWorker::parse(&line) {
            Ok(message) => message,
            Err(why) => break format!("it wrote {why}"),
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
    };
    broken.store(true, Ordering::Release);
    killer.kill();
    if let Some(delivery) = &current
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .delivery
    {
        delivery.slot.relay(Relayed::Broken(why));
    }
}

/// One line of at most `max_line()` bytes, without its newline; `None` at
/// the end of the stream. The bound is asked for once the line's first
/// bytes are in.
fn read_line(
    reader: &mut impl BufRead,
    max_line: impl Fn() -> usize,
) -> Result<Option<Vec<u8>>, String> {
    let mut line = Vec::new();
    let mut max = None;
    loop {
        let buffer = match reader.fill_buf() {
            Ok(buffer) => buffer,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(format!("reading its stdout failed ({error})")),
        };
        if buffer.is_empty() {
            return if line.is_empty() {
                Ok(None)
            } else {
                Err("its stdout ended in the middle of a line".to_owned())
            };
        }
        let (taken, done) = match buffer.iter().position(|&byte| byte == b'\n') {
            Some(end) => (end + 1, true),
            None => (buffer.len(), false),
        };
        let kept = if done { taken - 1 } else { taken };
        let max = *max.get_or_insert_with(&max_line);
        if line.len() + kept > max {
            return Err(format!("it wrote a line longer than {max} bytes"));
        }
        line.extend_from_slice(&buffer[..kept]);
        reader.consume(taken);
        if done {
            return Ok(Some(line));
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
                "tool `{}` crashed: its worker process `{}` could not be started: {error}",
                spec.name,
                command.program().display()
            )));
        }
    };
    let name = std::sync::Arc::clone(&spec.name);
    let halted = Halted::of(&spec);
    let deadline = spec.deadline;
    let number = held.next_job;
    held.next_job += 1;
    {
        let mut reading = held.current.lock().unwrap_or_else(PoisonError::into_inner);
        reading.delivery = Some(Delivery {
            number,
            slot: Arc::clone(slot),
        });
        reading.max_line = max_line(&spec);
    }
    let sent = held.send(&ToWorker::Job(WorkerJob {
        number,
        spec,
        stack_limit,
    }));
    let ended = match sent {
        Ok(()) => relay(&mut held, number, stop, slot, deadline),
        Err(error) => Ended::Broken(format!("writing the job to it failed ({error})")),
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
        // The worker stays lost, and is killed as it is dropped here.
        Ended::Broken(why) => died(&held, &name, &why),
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
    /// The worker's stdout ended or carried garbage, or it could not be
    /// written to.
    Broken(String),
    /// Told to stop, it did not answer in time.
    Stuck,
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
                Relayed::Message(_) => {}
            }
        }
    }
}

/// The crash of a job whose worker died or broke: how it ended, and the
/// end of its stderr.
fn died(worker: &Worker, name: &str, why: &str) -> Answer {
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
    Answer::Output(ScriptOutput::crashed(format!(
        "tool `{name}` crashed: its worker process {exit} while it ran the script ({why}){stderr}"
    )))
}
