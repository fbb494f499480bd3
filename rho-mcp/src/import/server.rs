//! What a source shares with its tools: the server's current connection,
//! started on demand (again, with backoff, after a death), its health,
//! and its tool list kept up to date.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::Duration;

use rho_registry::{Disabled, SourceHandle};
use rho_tool_core::Tool;
use rmcp::model::{SubscribeRequestParams, ToolListChangedNotification};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use super::answering::Answering;
use super::connection::{Connection, Limits, wait_for_death};
use super::handler::Heard;
use super::handshake::Handshake;
use super::health::Health;
use super::http::{self, HttpSpec};
use super::lanes::{Conduit, Lanes, Reservation, Reserved};
use super::listed;
use super::listen;
use super::runtime::SourceRuntime;
use super::stdio::{self, CommandSpec};
use super::tool::{ImportedTool, ToolSpec};
use crate::concurrency;
use crate::serve::{ClientSession, McpClient, ToolListing};

/// Where the server is.
#[derive(Debug, Clone)]
pub(crate) enum Endpoint {
    /// A child process spoken to over its stdin and stdout.
    Stdio(CommandSpec),
    /// A streamable HTTP endpoint.
    Http(HttpSpec),
}

/// What the host set for the source.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// Each tool's rho timeout.
    pub(crate) timeout: Duration,
    /// Put before each tool's name in the registry.
    pub(crate) prefix: String,
    /// How many calls may run on the server at once, if bounded.
    pub(crate) max_concurrent_calls: Option<usize>,
    pub(crate) limits: Limits,
}

/// Why a call found no connection to send on.
#[derive(Debug)]
pub(crate) enum Unavailable {
    /// The source was closed.
    Closed,
    /// The server is quarantined as a whole.
    Quarantined(Disabled),
    /// The server could not be started; the text is the end of a sentence
    /// about it.
    StartFailed(String),
}

/// The server of one source.
pub(crate) struct Server {
    /// The source's name, which names the server in every text.
    pub(crate) name: String,
    endpoint: Endpoint,
    pub(crate) settings: Settings,
    pub(crate) runtime: SourceRuntime,
    pub(crate) health: Arc<Health>,
    source: SourceHandle,
    slot: tokio::sync::Mutex<Slot>,
    /// A copy of the slot's connection for readers that cannot wait
    /// (the pid, the stderr, a close from `Drop`).
    current: Mutex<Option<Arc<Connection>>>,
    /// How many starts were begun.
    attempts: AtomicU64,
    closed: AtomicBool,
    /// Cancelled when the source closes: a start under way (its backoff,
    /// its handshake) gives up then, rather than start a server for a
    /// source that is gone (on the host's runtime nothing else stops it).
    closing: CancellationToken,
    /// What the server tells its client, heard by the source and its
    /// features.
    pub(crate) heard: Heard,
    /// The turns to call the server, when its calls are bounded: by the
    /// host ([`Settings::max_concurrent_calls`]), set from the start, or
    /// else by what the server declares (see `concurrency`), set at the
    /// first connection that declares it, before any tool is listed.
    /// Closed with the source.
    turns: OnceLock<Arc<Semaphore>>,
    /// The connections opened for one client each (see
    /// [`conduit_for`](Server::conduit_for)), by the number of the client's
    /// session.
    lanes: Lanes,
    /// Whether the source serves one client, and what that client offered
    /// once it came (see [`serve_one_client`](Server::serve_one_client)).
    one_client: OneClient,
}

/// The one client of a source served to one client (a proxy over stdio).
#[derive(Default)]
struct OneClient {
    served: AtomicBool,
    /// Decided at the client's first request: what the shared connection
    /// declares from then on, when that is what the client offered
    /// (`None`: the source's own offer).
    offered: OnceLock<Option<Answering>>,
}

/// The turns of a server that takes `calls` calls at once.
fn turns_for(calls: usize) -> Arc<Semaphore> {
    Arc::new(Semaphore::new(calls.clamp(1, Semaphore::MAX_PERMITS)))
}

#[derive(Default)]
struct Slot {
    connection: Option<Arc<Connection>>,
    /// The last start that failed: its number and why.
    failure: Option<(u64, String)>,
}

impl Server {
    pub(crate) fn new(
        name: String,
        endpoint: Endpoint,
        settings: Settings,
        runtime: SourceRuntime,
        health: Arc<Health>,
        source: SourceHandle,
    ) -> Self {
        let turns = OnceLock::new();
        if let Some(calls) = settings.max_concurrent_calls {
            let _ = turns.set(turns_for(calls));
        }
        Self {
            name,
            endpoint,
            settings,
            runtime,
            health,
            source,
            slot: tokio::sync::Mutex::default(),
            current: Mutex::default(),
            attempts: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            closing: CancellationToken::new(),
            heard: Heard::default(),
            turns,
            lanes: Lanes::default(),
            one_client: OneClient::default(),
        }
    }

    /// Waits for this call's turn on a server whose calls are bounded
    /// (at once when they are not): what the call holds while it runs.
    /// `Err` when the source was closed meanwhile.
    pub(crate) async fn turn(&self) -> Result<Option<OwnedSemaphorePermit>, Unavailable> {
        match self.turns.get() {
            None => Ok(None),
            Some(turns) => Arc::clone(turns)
                .acquire_owned()
                .await
                .map(Some)
                .map_err(|_| Unavailable::Closed),
        }
    }

    /// Whether its source is still registered.
    pub(crate) fn is_registered(&self) -> bool {
        self.source.is_registered()
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// The live connection, started if there is none (after the backoff
    /// a recent death asks for). Callers that waited while a start failed
    /// get that failure rather than trying again at once.
    pub(crate) async fn connection(self: &Arc<Self>) -> Result<Arc<Connection>, Unavailable> {
        let seen = self.attempts.load(Ordering::Acquire);
        let mut slot = self.slot.lock().await;
        if self.is_closed() {
            return Err(Unavailable::Closed);
        }
        if let Some(connection) = &slot.connection
            && connection.death().is_none()
        {
            return Ok(Arc::clone(connection));
        }
        if let Some(quarantine) = self.health.quarantine() {
            return Err(Unavailable::Quarantined(quarantine));
        }
        if let Some((attempt, why)) = &slot.failure
            && *attempt > seen
        {
            return Err(Unavailable::StartFailed(why.clone()));
        }
        let wait = self.health.wait_before_start();
        if !wait.is_zero() {
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = self.closing.cancelled() => return Err(Unavailable::Closed),
            }
        }
        let (attempt, started) = self.start_in(&mut slot).await;
        let connection = started?;
        drop(slot);
        if attempt > 1 {
            // A restarted server may offer other tools, resources and
            // prompts.
            self.heard.restarted();
        }
        Ok(connection)
    }

    /// Starts the shared connection into `slot` (held by the caller, so
    /// that no other start runs meanwhile): the attempt's number, and the
    /// connection or why there is none (a failure kept in the slot for
    /// the callers that waited, and counted against the server's health).
    async fn start_in(
        self: &Arc<Self>,
        slot: &mut Slot,
    ) -> (u64, Result<Arc<Connection>, Unavailable>) {
        let attempt = self.attempts.fetch_add(1, Ordering::AcqRel) + 1;
        let started = tokio::select! {
            started = self.start() => started,
            () = self.closing.cancelled() => return (attempt, Err(Unavailable::Closed)),
        };
        if self.is_closed() {
            // Closed as the start finished: `close` may have missed it.
            if let Ok(connection) = started {
                connection.kill();
                self.current
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
            }
            return (attempt, Err(Unavailable::Closed));
        }
        let started = match started {
            Ok(connection) => {
                slot.connection = Some(Arc::clone(&connection));
                slot.failure = None;
                Ok(connection)
            }
            Err(why) => {
                self.health
                    .died(&format!("MCP server `{}` {why}", self.name));
                slot.failure = Some((attempt, why.clone()));
                Err(Unavailable::StartFailed(why))
            }
        };
        (attempt, started)
    }

    /// The connection for `call`: its client's lane or the shared one,
    /// as [`conduit_for`](Server::conduit_for) says.
    pub(crate) async fn connection_for(
        self: &Arc<Self>,
        call: &rho_tool_core::ToolContext,
    ) -> Result<Arc<Connection>, Unavailable> {
        let client = McpClient::of(call);
        Ok(self.conduit_for(client.as_ref()).await?.connection)
    }

    /// Where a request of `client` goes: its own lane, for a client before
    /// 2026-07-28 of a server that speaks both revisions (or of any server
    /// that speaks 2025-11-25, once the source serves many clients: see
    /// [`lanes_for_all`](Server::lanes_for_all)); the shared connection
    /// for any other (and for a request of no client).
    ///
    /// The shared connection speaks 2026-07-28 to such a server, where a
    /// server asks its client only by answering a call with questions. A
    /// server written to ask the older way (a request of its own while the
    /// call runs, as most SDKs' `elicit` still does) then has no way back
    /// to an older client. So each older client gets a connection opened
    /// the way it opened its own, with `initialize` at 2025-11-25, that
    /// declares what it offered (elicitation, sampling, roots) and nothing
    /// else: the server asks it as it would have asked it directly, and
    /// lists and refuses by what it can do. Its calls, reads, prompts,
    /// completions, subscriptions and log level all go there, the tools
    /// listed there are the ones it is shown (of the source's: see
    /// [`lane_listing_of`](Server::lane_listing_of)), and what the server
    /// announces there reaches that client alone (which then no longer
    /// hears the shared connection's announcements): it has the session
    /// of its own it would have had directly. The lane closes when
    /// the client's session does (or the source), and at most
    /// [`MAX_LANES`](super::lanes::MAX_LANES) are open at once (a client
    /// that comes past them shares the source's connection for its whole
    /// session).
    pub(crate) async fn conduit_for(
        self: &Arc<Self>,
        client: Option<&McpClient>,
    ) -> Result<Conduit, Unavailable> {
        if let Some(client) = client {
            self.offer_to_its_one_client(client).await;
        }
        let shared = self.connection().await?;
        let shared = Conduit {
            connection: shared,
            heard: self.heard.clone(),
        };
        // An older server speaks each client's revision already, and a
        // source with one client (a proxy over stdio) has it share the
        // source's session; a source told to discover only has a server
        // that may not know `initialize`.
        let lanes = shared.connection.speaks_2026() || self.lanes.for_all();
        if !lanes || self.settings.limits.handshake == Handshake::Discover {
            return Ok(shared);
        }
        let Some(client) = client else {
            return Ok(shared);
        };
        // A client whose handshake said what it offers, which its lane
        // declares.
        let (Some(session), true) = (client.session().cloned(), client.info().is_some()) else {
            return Ok(shared);
        };
        let number = session.number;
        // A client's requests after its first find their place without
        // waiting for anything.
        match self.lanes.settled(number) {
            Some(Ok(lane)) => return Ok(lane),
            Some(Err(())) => return Ok(shared),
            None => {}
        }
        let opener = self.lanes.opener(number);
        let _opening = opener.lock().await;
        let before = match self.lanes.reserve(number) {
            Reserved::Live(lane) => return Ok(lane),
            Reserved::Shared => return Ok(shared),
            Reserved::Full => {
                self.forget_when_closed(session);
                return Ok(shared);
            }
            Reserved::New => None,
            Reserved::Replacing(heard) => Some(heard),
        };
        // A new lane's place, given back unless it settles.
        let _reserved = Reservation {
            lanes: &self.lanes,
            number,
        };
        if session.closed.is_cancelled() {
            return Ok(shared);
        }
        let heard = before
            .clone()
            .unwrap_or_else(|| self.heard.of_session(number));
        let mut limits = self.settings.limits.clone();
        limits.handshake = Handshake::Initialize;
        limits.answering = limits.answering.for_client(client);
        let started = tokio::select! {
            started = self.start_connection(limits, heard.clone()) => started,
            () = self.closing.cancelled() => return Err(Unavailable::Closed),
        };
        let connection = match started {
            Ok(connection) => connection,
            Err(why) => {
                self.health
                    .died(&format!("MCP server `{}` {why}", self.name));
                return Err(Unavailable::StartFailed(why));
            }
        };
        if before.is_some() {
            // The server the client had is gone with what it was asked
            // to do for it: asked again.
            self.renew_subscriptions(&connection, &heard).await;
            self.renew_log_level(&connection, &heard).await;
        } else {
            // What the client is shown of the source's tools, before it
            // can ask (a failed listing shows it the source's, until the
            // server says its tools changed).
            self.list_lane_tools(&connection, &heard).await;
        }
        // Looked at with nothing awaited before the lane settles: a lane
        // settled after its source or its client's session closed would
        // never be closed.
        if self.is_closed() || session.closed.is_cancelled() {
            connection.kill();
            return Err(Unavailable::Closed);
        }
        let lane = Conduit { connection, heard };
        self.lanes.settle(number, lane.clone());
        self.heard.notifier.set_apart(number, true);
        if before.is_some() {
            // Told the lists may differ; its tools listed again now that
            // the lane is where its follower looks.
            lane.heard.restarted();
        } else {
            self.follow_lane_tools(session.clone(), lane.heard.clone());
            self.forget_when_closed(session);
        }
        Ok(lane)
    }

    /// Keeps what the server behind a lane, `connection`, lists of its
    /// tools as its client's (`heard`'s); whether it listed them (a
    /// listing that fails keeps the one before).
    async fn list_lane_tools(&self, connection: &Connection, heard: &Heard) -> bool {
        let limit = self.settings.limits.startup_timeout;
        match listed::fetch(connection.peer(), &self.name, limit).await {
            Ok(tools) => {
                heard.listed.keep(&tools, &self.settings.prefix);
                true
            }
            Err(_) => false,
        }
    }

    /// Lists the tools of the lane of `session`'s client again each time
    /// its server says they changed (and after each replacement), and
    /// tells that client, until its session ends or the source closes. A
    /// change heard while the lane is dead or starting is listed by the
    /// replacement, which wakes this once it settled.
    fn follow_lane_tools(self: &Arc<Self>, session: ClientSession, heard: Heard) {
        let server = Arc::downgrade(self);
        let closing = self.closing.clone();
        self.runtime.handle().spawn(async move {
            loop {
                tokio::select! {
                    () = heard.tools_changed.notified() => {}
                    () = session.closed.cancelled() => return,
                    () = closing.cancelled() => return,
                }
                let Some(server) = server.upgrade() else {
                    return;
                };
                let Some(Ok(lane)) = server.lanes.settled(session.number) else {
                    continue;
                };
                if server.list_lane_tools(&lane.connection, &heard).await {
                    heard.announce(ToolListChangedNotification::default().into());
                }
            }
        });
    }

    /// Serves one client from now on (a proxy over stdio): in front of a
    /// server that speaks only 2025-11-25, where that client has no lane,
    /// the shared connection is opened again declaring only what that
    /// client offered, as it initializes (see
    /// [`offer_to_its_one_client`](Server::offer_to_its_one_client)).
    pub(crate) fn serve_one_client(&self) {
        self.one_client.served.store(true, Ordering::Release);
    }

    /// Decides, at the first request of the source's one client (its
    /// `initialize`, when rho's server serves it, before any request of
    /// its reaches the server), what the shared connection declares: when
    /// that client would have no lane (the server speaks 2025-11-25,
    /// which learns at the handshake what its client offers, and lists
    /// tools and asks by it) and offered less than the source does, what
    /// it offered. A connection already open declared more: it is opened
    /// again, and the tools listed there, before the client goes on (not
    /// a restart its client is told of: it has listed nothing yet).
    async fn offer_to_its_one_client(self: &Arc<Self>, client: &McpClient) {
        if !self.one_client.served.load(Ordering::Acquire)
            || self.one_client.offered.get().is_some()
        {
            return;
        }
        let speaks_2026 = self
            .server_info()
            .map(|info| info.protocol_version >= rmcp::model::ProtocolVersion::V_2026_07_28);
        let offered = self.settings.limits.answering.for_client(client);
        let apart = speaks_2026 == Some(true)
            || self.settings.limits.handshake == Handshake::Discover
            || client.session().is_none()
            || client.info().is_none()
            || offered.capabilities() == self.settings.limits.answering.capabilities();
        // Decided once, whatever the client: a later request never
        // reopens a connection its calls may be on.
        let decided = if apart { None } else { Some(offered) };
        let reopen = decided.is_some() && speaks_2026.is_some();
        if self.one_client.offered.set(decided).is_err() || !reopen {
            // Not open yet, it starts declaring what was decided.
            return;
        }
        let mut slot = self.slot.lock().await;
        if self.is_closed() {
            return;
        }
        let before = slot.connection.take();
        self.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(before) = before {
            // Dropped here, by its last holder (no request has gone on it
            // since the source's own listing): a death the watcher sees as
            // deliberate, not the server's.
            before.kill();
        }
        // Not told as a restart (see above); a failure is kept for the
        // client's requests, as any start's.
        let _ = self.start_in(&mut slot).await;
        drop(slot);
        // A listing that fails leaves the tools listed before, as any
        // refresh does.
        let _ = self.refresh().await;
    }

    /// Gives every client before 2026-07-28 a lane of its own from now
    /// on (see [`conduit_for`](Server::conduit_for)): the source serves many
    /// clients, each of which would have a session of its own with the
    /// server directly.
    pub(crate) fn lanes_for_all(&self) {
        self.lanes.set_for_all();
    }

    /// Forgets the client of `session` when its session ends (or the
    /// source closes): its lane is closed, its place given up.
    fn forget_when_closed(self: &Arc<Self>, session: ClientSession) {
        let server = Arc::downgrade(self);
        let closing = self.closing.clone();
        self.runtime.handle().spawn(async move {
            tokio::select! {
                () = session.closed.cancelled() => {}
                () = closing.cancelled() => {}
            }
            if let Some(server) = server.upgrade() {
                server.close_lane(session.number);
            }
        });
    }

    /// Closes client `number`'s lane: its server killed (an HTTP session
    /// closed), its calls in flight ended.
    fn close_lane(&self, number: u64) {
        let lane = self.lanes.close(number);
        self.heard.notifier.set_apart(number, false);
        if let Some(lane) = lane {
            lane.connection.kill();
        }
    }

    /// Starts the shared connection: [`start_connection`](Server::start_connection)
    /// with the source's limits, then what the server's announcements and
    /// subscriptions need.
    async fn start(self: &Arc<Self>) -> Result<Arc<Connection>, String> {
        let mut limits = self.settings.limits.clone();
        if let Some(Some(offered)) = self.one_client.offered.get() {
            limits.answering = offered.clone();
        }
        let connection = self.start_connection(limits, self.heard.clone()).await?;
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(Arc::clone(&connection));
        if let Some(info) = connection.server_info()
            && connection.speaks_2026()
        {
            // A server on 2026-07-28 announces only on a stream asked of
            // it, for as long as the connection lives.
            let follow = listen::follow(
                connection.peer().clone(),
                info.capabilities.clone(),
                self.heard.clone(),
            );
            let mut died = connection.death_watch();
            tokio::spawn(async move {
                tokio::select! {
                    _ = wait_for_death(&mut died) => {}
                    () = follow => {}
                }
            });
        } else {
            self.renew_subscriptions(&connection, &self.heard).await;
        }
        if let Some(calls) = connection
            .server_info()
            .and_then(|info| concurrency::declared(&info.capabilities))
        {
            // Kept as the first server that said it: a bound the host set,
            // or one already in use, stays.
            let _ = self.turns.set(turns_for(calls));
        }
        Ok(connection)
    }

    /// Starts a connection with `limits`, heard by `heard`, and the task
    /// that counts its death against the server's health.
    async fn start_connection(
        self: &Arc<Self>,
        limits: Limits,
        heard: Heard,
    ) -> Result<Arc<Connection>, String> {
        let connection = match &self.endpoint {
            Endpoint::Stdio(spec) => stdio::start(spec, limits, heard).await?,
            Endpoint::Http(spec) => http::start(spec, limits, heard).await?,
        };
        let connection = Arc::new(connection);
        let mut died = connection.death_watch();
        let server = Arc::downgrade(self);
        tokio::spawn(async move {
            let death = wait_for_death(&mut died).await;
            if let Some(server) = server.upgrade()
                && !death.deliberate
                && !server.is_closed()
            {
                server.health.died(&death.describe(&server.name));
            }
        });
        Ok(connection)
    }

    /// Subscribes a server before 2026-07-28 (which keeps subscriptions
    /// per connection) to every resource followed on the connection
    /// `heard` hears (the source's features, or one client's lane): a
    /// restarted server forgot them, and the clients that subscribed
    /// through the source would hear no more updates. Done before the
    /// connection is handed out, so nothing is called on the new server
    /// before it knows what it is followed for; each subscribe is
    /// bounded by the start-up timeout, and one the server refuses (the
    /// resource may be gone) is left to the next subscribe to renew.
    async fn renew_subscriptions(&self, connection: &Connection, heard: &Heard) {
        let uris = heard.followed.uris();
        let subscribes = connection
            .server_info()
            .and_then(|info| info.capabilities.resources.as_ref()?.subscribe)
            == Some(true);
        if uris.is_empty() || !subscribes {
            return;
        }
        let limit = self.settings.limits.startup_timeout;
        let mut renewals = tokio::task::JoinSet::new();
        for uri in uris {
            let peer = connection.peer().clone();
            renewals.spawn(async move {
                #[allow(deprecated)]
                let subscribe = peer.subscribe(SubscribeRequestParams::new(uri));
                // What fails is left as it is: see above.
                let _ = tokio::time::timeout(limit, subscribe).await;
            });
        }
        renewals.join_all().await;
    }

    /// Sets the log level a lane's client asked for on the server that
    /// replaced its lane's (before 2026-07-28, the level is the
    /// connection's), within the start-up timeout; a refusal leaves the
    /// server's default, as a failed subscribe is left.
    async fn renew_log_level(&self, connection: &Connection, heard: &Heard) {
        let level = *heard
            .log_level
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let logs = connection
            .server_info()
            .is_some_and(|info| info.capabilities.logging.is_some());
        if let Some(level) = level
            && logs
        {
            #[allow(deprecated)]
            let set = connection
                .peer()
                .set_level(rmcp::model::SetLevelRequestParams::new(level));
            let _ = tokio::time::timeout(self.settings.limits.startup_timeout, set).await;
        }
    }

    /// Lists the server's tools and makes them the source's.
    ///
    /// # Errors
    ///
    /// The listing failed or timed out, or the registry refused the tools
    /// (a name another source has): the text says which.
    pub(crate) async fn refresh(self: &Arc<Self>) -> Result<(), String> {
        let connection = self.connection().await.map_err(|why| match why {
            Unavailable::Closed => "the source was closed".to_owned(),
            Unavailable::Quarantined(quarantine) => quarantine.to_string(),
            Unavailable::StartFailed(why) => format!("MCP server `{}` {why}", self.name),
        })?;
        let listed = listed::fetch(
            connection.peer(),
            &self.name,
            self.settings.limits.startup_timeout,
        )
        .await?;
        // Kept as listed, so that a proxy lists each tool unchanged.
        self.heard.listed.keep(&listed, &self.settings.prefix);
        let tools: Vec<Arc<dyn Tool>> = listed
            .into_iter()
            .map(|tool| {
                Arc::new(ImportedTool::new(
                    Arc::clone(self),
                    ToolSpec::from_mcp(tool),
                )) as Arc<dyn Tool>
            })
            .collect();
        self.source
            .set_tools(tools)
            .map_err(|error| format!("the tools of MCP server `{}`: {error}", self.name))
    }

    /// The tool the registry names `name` as the server's last listing
    /// on the source's connection gave it.
    pub(crate) fn listing_of(&self, name: &str) -> Option<ToolListing> {
        self.heard.listed.of(name).flatten()
    }

    /// The tool the registry names `name` as the server listed it on the
    /// lane of the client of session `number`: `None` when that client has
    /// no lane or nothing was listed there, `Some(None)` when the server
    /// did not list it to that client.
    pub(crate) fn lane_listing_of(&self, number: u64, name: &str) -> Option<Option<ToolListing>> {
        self.lanes.heard_by(number)?.listed.of(name)
    }

    /// Refreshes the tools each time the server says they changed (and
    /// after each restart), until the source closes.
    pub(crate) fn follow_tool_changes(self: &Arc<Self>) {
        let server: Weak<Self> = Arc::downgrade(self);
        let changed = Arc::clone(&self.heard.tools_changed);
        self.runtime.handle().spawn(async move {
            loop {
                changed.notified().await;
                let Some(server) = server.upgrade() else {
                    return;
                };
                if server.is_closed() {
                    return;
                }
                // A failed refresh keeps the tools listed before; the
                // next change or restart tries again.
                let _ = server.refresh().await;
            }
        });
    }

    /// The server's process id while a stdio server runs.
    pub(crate) fn pid(&self) -> Option<u32> {
        let current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        current
            .as_ref()
            .filter(|connection| connection.death().is_none())
            .and_then(|connection| connection.pid())
    }

    /// What the current (or last) server said of itself at `initialize`.
    /// What the server declared it serves (nothing before it first
    /// answered).
    pub(crate) fn capabilities(&self) -> rmcp::model::ServerCapabilities {
        self.server_info()
            .map(|info| info.capabilities.clone())
            .unwrap_or_default()
    }

    pub(crate) fn server_info(&self) -> Option<Arc<rmcp::model::ServerPeerInfo>> {
        let current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        current
            .as_ref()
            .and_then(|connection| connection.server_info())
    }

    /// The end of the current (or last) server's stderr.
    pub(crate) fn stderr_tail(&self) -> String {
        let current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        current
            .as_ref()
            .map(|connection| connection.stderr_tail())
            .unwrap_or_default()
    }

    /// Closes the source: the server is killed (an HTTP session closed),
    /// calls in flight end, a start under way gives up, and a runtime of
    /// the source's own stops. Never blocks; idempotent.
    pub(crate) fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        self.closing.cancel();
        if let Some(turns) = self.turns.get() {
            // Every call waiting for its turn ends now, as closed.
            turns.close();
        }
        let current = self
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(connection) = current {
            connection.kill();
        }
        for lane in self.lanes.drain() {
            lane.connection.kill();
        }
        // The task that follows tool changes wakes, sees the source
        // closed, and ends (on the host's runtime nothing else ends it).
        self.heard.tools_changed.notify_one();
        self.source.clear();
        self.runtime.stop();
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.name)
            .field("endpoint", &self.endpoint)
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}
