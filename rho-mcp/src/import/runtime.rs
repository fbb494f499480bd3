//! The tokio runtime an imported source runs rmcp on: by default on a
//! thread of its own, or the host's, when the host says so.
//!
//! rmcp needs tokio; the host may run smol, or a tokio runtime it does not
//! want rmcp's tasks on. So by default each source owns a small
//! current-thread runtime: its connections, watchers and calls run there,
//! and a tool's future in the host only waits on channels, which need no
//! runtime. The runtime is dropped on its own thread, never in a host's
//! task (where tokio forbids dropping a runtime).
//!
//! That costs each call two turns between threads (to the source's thread
//! and back). A tokio host can hand its own runtime instead
//! ([`SourceRuntime::Host`]); the source's tasks then end when it
//! closes (its connection killed, a start under way given up) rather
//! than with a runtime of its own.

use std::io;
use std::sync::Mutex;
use std::thread;
use std::time::Duration;

use tokio::runtime::{Builder, Handle};
use tokio::sync::oneshot;

/// How long the runtime's thread waits for its blocking work to end when
/// the source goes away.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(1);

/// A current-thread tokio runtime run by a thread of its own until
/// [`stop`](RuntimeThread::stop) or the drop.
#[derive(Debug)]
pub(crate) struct RuntimeThread {
    handle: Handle,
    stop: Mutex<Option<oneshot::Sender<()>>>,
}

impl RuntimeThread {
    /// Starts the runtime and its thread, named after `source`.
    pub(crate) fn start(source: &str) -> io::Result<Self> {
        let runtime = Builder::new_current_thread().enable_all().build()?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        thread::Builder::new()
            .name(format!("rho-mcp {source}"))
            .spawn(move || {
                // Ends on `stop` or when the sender is dropped.
                let _ = runtime.block_on(stopped);
                // Dropping the tasks here drops each connection, which kills
                // its server.
                runtime.shutdown_timeout(SHUTDOWN_WAIT);
            })?;
        Ok(Self {
            handle,
            stop: Mutex::new(Some(stop)),
        })
    }

    /// The runtime's handle: spawning on it works from any thread.
    pub(crate) fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Stops the runtime: its tasks are dropped on its thread. Never
    /// blocks; idempotent.
    pub(crate) fn stop(&self) {
        let stop = self
            .stop
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(stop) = stop {
            let _ = stop.send(());
        }
    }
}

impl Drop for RuntimeThread {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Where a source's tasks run.
#[derive(Debug)]
pub(crate) enum SourceRuntime {
    /// A runtime of the source's own, on its own thread.
    Own(RuntimeThread),
    /// The host's tokio runtime.
    Host(Handle),
}

impl SourceRuntime {
    /// Whether the source runs on the host's runtime.
    pub(crate) fn is_host(&self) -> bool {
        matches!(self, Self::Host(_))
    }

    /// The runtime's handle: spawning on it works from any thread.
    pub(crate) fn handle(&self) -> &Handle {
        match self {
            Self::Own(thread) => thread.handle(),
            Self::Host(handle) => handle,
        }
    }

    /// Stops a runtime of the source's own; the host's runs on (the
    /// source's tasks there end as its connection is killed). Never
    /// blocks; idempotent.
    pub(crate) fn stop(&self) {
        if let Self::Own(thread) = self {
            thread.stop();
        }
    }
}
