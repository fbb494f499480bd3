//! One connection to a server, of either kind: shaken hands with, and
//! watched until it dies.
//!
//! A connection dies once. How depends on its kind ([`stdio`](super::stdio)
//! or [`http`](super::http)); what follows does not: the death, with the
//! end of the server's stderr where there is one, is published to every
//! call in flight on the connection, which ends at that moment, and to the
//! server's health, which spaces the next start.

use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::ProtocolVersion;
use rmcp::service::ClientServiceExt;
use rmcp::service::{ClientInitializeError, Peer, RunningService};
use rmcp::transport::Transport;
use rmcp::transport::streamable_http_client::StreamableHttpError;
use tokio::sync::watch;

use super::answering::{Answering, InFlight};
use super::handler::{Handler, Heard};
use super::handshake::Handshake;
use super::http::HttpPeer;
use super::progress::{HandlerTally, ProgressRoutes, Routed};
use super::stdio::Process;

/// How long a failed handshake waits for the server's death, which says
/// more than rmcp's error.
const DEATH_WAIT: Duration = Duration::from_millis(100);

/// How a server died, as the end of a sentence about it ("exited with code
/// 3"), with the end of its stderr.
#[derive(Debug, Clone)]
pub(crate) struct Death {
    pub(crate) what: String,
    pub(crate) stderr: String,
    /// The host closed the connection (the source was removed): not the
    /// server's fault, not counted.
    pub(crate) deliberate: bool,
}

impl Death {
    /// "MCP server `name` <what>", and the end of its stderr if it wrote any.
    pub(crate) fn describe(&self, server: &str) -> String {
        format!("MCP server `{server}` {}", self.describe_short())
    }

    /// The death without the server's name: "exited with code 1; the end
    /// of its stderr: ...".
    pub(crate) fn describe_short(&self) -> String {
        with_stderr(self.what.clone(), &self.stderr)
    }
}

/// `text`, followed by the end of the server's stderr when it wrote any.
pub(crate) fn with_stderr(mut text: String, stderr: &str) -> String {
    let stderr = stderr.trim_end();
    if !stderr.is_empty() {
        text.push_str("; the end of its stderr:\n");
        text.push_str(stderr);
    }
    text
}

/// Where a connection's death is published: the connection's watcher
/// writes it once, calls and the server's health read it.
pub(crate) type DeathSender = watch::Sender<Option<Arc<Death>>>;
/// A reader of a connection's death.
pub(crate) type DeathReceiver = watch::Receiver<Option<Arc<Death>>>;

/// Publishes `death` unless one was published already: a connection dies
/// once, of whatever was seen first.
pub(crate) fn publish(died: &DeathSender, death: Death) {
    died.send_if_modified(|current| {
        if current.is_some() {
            return false;
        }
        *current = Some(Arc::new(death));
        true
    });
}

/// Whether the server behind `peer` speaks 2026-07-28 or later: each
/// request then says what its client is (capabilities, log level), and
/// the server announces only on a stream asked of it.
pub(crate) fn speaks_2026(peer: &Peer<RoleClient>) -> bool {
    peer.peer_info()
        .is_some_and(|info| info.protocol_version >= ProtocolVersion::V_2026_07_28)
}

/// What a connection's owner sets for it.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    pub(crate) max_message: usize,
    pub(crate) startup_timeout: Duration,
    /// Copy the server's stderr to this process's as it comes.
    pub(crate) forward_stderr: bool,
    /// How the conversation opens.
    pub(crate) handshake: Handshake,
    /// Who answers the server's questions to its client.
    pub(crate) answering: Answering,
}

/// What is on the other end of a connection.
pub(crate) enum Remote {
    /// A child process, kept so its group dies with the connection.
    Process(Arc<Process>),
    /// An HTTP endpoint.
    Http(HttpPeer),
}

/// A live (or dead) connection to one server.
pub(crate) struct Connection {
    service: RunningService<RoleClient, Handler>,
    routes: ProgressRoutes,
    tally: Arc<HandlerTally>,
    in_flight: Arc<InFlight>,
    remote: Remote,
    died: DeathReceiver,
}

impl Connection {
    /// Shakes hands over `transport`, giving up when the server dies first
    /// (as the connection's watcher publishes on `died`) or takes longer
    /// than the startup timeout.
    ///
    /// # Errors
    ///
    /// Why the handshake failed, as the end of a sentence about the server
    /// (with the end of a child's stderr).
    pub(crate) async fn handshake<T>(
        transport: T,
        remote: Remote,
        mut died: DeathReceiver,
        limits: Limits,
        heard: Heard,
    ) -> Result<Self, String>
    where
        T: Transport<RoleClient> + 'static,
    {
        let handler = Handler::new(heard, limits.answering.clone());
        let in_flight = Arc::clone(&handler.in_flight);
        let routes = Arc::clone(&handler.routes);
        let tally = Arc::clone(&handler.tally);
        let transport = Routed::new(transport, Arc::clone(&routes), Arc::clone(&tally));
        let handshake = tokio::time::timeout(
            limits.startup_timeout,
            handler.serve_with_lifecycle(transport, limits.handshake.lifecycle()),
        );
        let service = tokio::select! {
            biased;
            answered = handshake => match answered {
                Ok(Ok(service)) => service,
                Ok(Err(error)) => {
                    let error = format!("{}: {}", limits.handshake.opening(), handshake_error(&error));
                    // Only a child's death comes after a failed handshake.
                    let death = match remote {
                        Remote::Process(_) => settle(&mut died).await,
                        Remote::Http(_) => None,
                    };
                    return Err(match death {
                        Some(death) => format!(
                            "failed its handshake ({error}): {}",
                            death.describe_short()
                        ),
                        None => format!("failed its handshake ({error})"),
                    });
                }
                Err(_) => {
                    return Err(with_stderr(
                        format!(
                            "did not answer {} within {} ms",
                            limits.handshake.opening(),
                            limits.startup_timeout.as_millis()
                        ),
                        &remote.stderr_tail(),
                    ));
                }
            },
            death = wait_for_death(&mut died) => {
                return Err(format!(
                    "died before it answered {}: {}",
                    limits.handshake.opening(),
                    death.describe_short()
                ));
            }
        };
        Ok(Self {
            service,
            routes,
            tally,
            in_flight,
            remote,
            died,
        })
    }

    /// What the server said of itself at `initialize` or
    /// `server/discover`: its name and
    /// version, and its instructions for the model.
    pub(crate) fn server_info(&self) -> Option<Arc<rmcp::model::ServerPeerInfo>> {
        self.service.peer_info()
    }

    /// Whether the server speaks 2026-07-28 (see [`speaks_2026`]).
    pub(crate) fn speaks_2026(&self) -> bool {
        speaks_2026(self.peer())
    }

    /// Whether the server's tool `name` runs only as a task of
    /// 2025-11-25, as its listings over stdio said (see `task_support`);
    /// over HTTP, rmcp reads the listings, and nothing says so.
    pub(crate) fn runs_only_as_task(&self, name: &str) -> bool {
        match &self.remote {
            Remote::Process(process) => process.task_only.contains(name),
            Remote::Http(_) => false,
        }
    }

    /// The rmcp peer to send requests on.
    pub(crate) fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }

    /// Where calls register while they run, for the questions the server
    /// sends by itself.
    pub(crate) fn in_flight(&self) -> &Arc<InFlight> {
        &self.in_flight
    }

    /// Where calls register for their progress.
    pub(crate) fn routes(&self) -> &ProgressRoutes {
        &self.routes
    }

    /// Whether rmcp's handler is done with the progress passed to it (see
    /// `progress`).
    pub(crate) fn progress_settled(&self) -> bool {
        self.tally.settled()
    }

    /// The death, once the server died.
    pub(crate) fn death(&self) -> Option<Arc<Death>> {
        self.died.borrow().clone()
    }

    /// A receiver of the death, for a call to wait on.
    pub(crate) fn death_watch(&self) -> DeathReceiver {
        self.died.clone()
    }

    /// Whether the server is an HTTP endpoint.
    pub(crate) fn is_http(&self) -> bool {
        matches!(self.remote, Remote::Http(_))
    }

    /// The connection to an HTTP endpoint failed (`what` says how): with
    /// no process to watch, this is the connection's death. A child
    /// process's death is seen by its watcher, which says more.
    pub(crate) fn transport_failed(&self, what: &str) {
        if let Remote::Http(http) = &self.remote {
            http.unreachable(what);
            self.service.cancellation_token().cancel();
        }
    }

    /// Ends the connection: a child's whole process group is killed, an
    /// HTTP session is closed. Never blocks.
    pub(crate) fn kill(&self) {
        match &self.remote {
            Remote::Process(process) => process.kill(),
            Remote::Http(http) => {
                http.closed();
                self.service.cancellation_token().cancel();
            }
        }
    }

    /// The server's process id, for a stdio server.
    pub(crate) fn pid(&self) -> Option<u32> {
        match &self.remote {
            Remote::Process(process) => Some(process.id()),
            Remote::Http(_) => None,
        }
    }

    /// The end of the server's stderr kept so far (a stdio server's).
    pub(crate) fn stderr_tail(&self) -> String {
        self.remote.stderr_tail()
    }
}

impl Remote {
    fn stderr_tail(&self) -> String {
        match self {
            Remote::Process(process) => process.stderr_tail(),
            Remote::Http(_) => String::new(),
        }
    }
}

/// rmcp's handshake error as a reader wants it: a transport's error by
/// what went wrong, down to its root cause ("error sending request for
/// url (...): client error (Connect): tcp connect error: Connection
/// refused (os error 111)"), not by the transport's type name.
fn handshake_error(error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::TransportError { error, .. } => error_chain(error.error.as_ref()),
        other => other.to_string(),
    }
}

/// `error` and each of its sources, joined by ": ", leaving out a source
/// that its error's own text already quotes.
///
/// rmcp's HTTP client keeps reqwest's error without naming it as the
/// source; it is read through, so that the text reaches the root cause
/// (a refused connection, a timeout).
pub(crate) fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    type HttpError = StreamableHttpError<reqwest::Error>;
    let mut text = error.to_string();
    let mut next = match error.downcast_ref::<HttpError>() {
        Some(StreamableHttpError::Client(client)) => {
            Some(client as &(dyn std::error::Error + 'static))
        }
        _ => error.source(),
    };
    while let Some(cause) = next {
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        next = cause.source();
    }
    text
}

/// Waits until the death is published.
pub(crate) async fn wait_for_death(died: &mut DeathReceiver) -> Arc<Death> {
    loop {
        if let Some(death) = died.borrow_and_update().clone() {
            return death;
        }
        if died.changed().await.is_err() {
            // The watcher is gone without a word: only when the runtime
            // shuts down, and then nobody is waiting.
            return Arc::new(Death {
                what: "stopped being watched".to_owned(),
                stderr: String::new(),
                deliberate: true,
            });
        }
    }
}

/// The death, if it comes soon: a failed handshake is usually the server
/// dying, and its exit says more than rmcp's error.
async fn settle(died: &mut DeathReceiver) -> Option<Arc<Death>> {
    tokio::time::timeout(DEATH_WAIT, wait_for_death(died))
        .await
        .ok()
}
