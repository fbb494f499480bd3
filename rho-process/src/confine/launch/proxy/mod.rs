//! The proxy of [`Network::Hosts`]: the one way out of a confinement
//! whose network namespace has no route, for the hosts it allows.
//!
//! Outer forks the proxy before it unshares anything ([`start`]), so the
//! proxy stays in the host's network namespace. Init, inside the new one
//! and with its loopback up, binds a listener on `127.0.0.1` and hands its
//! descriptor to the proxy over a socket pair ([`offer`]): the command
//! reaches it at an address of its own namespace, and the proxy opens
//! each allowed connection in the host's. No socket path is shared and no
//! forwarder runs inside. The proxy dies with outer (`PR_SET_PDEATHSIG`),
//! so a call's end closes every connection it carried.
//!
//! One port speaks both protocols tools use: a first byte of 5 is SOCKS5
//! ([`socks`], written here), anything else HTTP ([`http`], heads parsed
//! by `httparse`). Each destination is
//! decided by [`rules`]; each refusal is told to the client and written
//! on stderr as a `rho-confine: refused host ...` line, which the call's
//! result gathers into a note.
//!
//! [`Network::Hosts`]: crate::confine::Network::Hosts

mod head;
mod http;
mod rules;
mod socks;
mod tunnel;

use std::io::{IoSlice, IoSliceMut, Write};
use std::mem::MaybeUninit;
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
};
use rustix::process::Signal;

use super::{LaunchError, Plan, Step, failed, sys};
use crate::confine::Mechanism;
use crate::confine::launch_codes::REFUSED;
use crate::confine::policy::Network;
use rules::{Refusal, Rules};

/// The most connections the proxy carries at once; past it a client is
/// turned away (each takes two threads).
const MAX_CONNECTIONS: usize = 256;

/// How long a client may take to send what it asks for.
const ASKING_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Outer's end of the socket pair to the proxy, for init to offer the
/// listener on.
#[derive(Debug)]
pub(super) struct ProxyEnd(OwnedFd);

/// Forks the proxy if `plan` asks for [`Network::Hosts`]; call it before
/// unsharing, in outer (one thread). The proxy never returns.
pub(super) fn start(plan: &Plan) -> Result<Option<ProxyEnd>, LaunchError> {
    if plan.confinement.network() != Network::Hosts || !plan.uses(Mechanism::Namespaces) {
        return Ok(None);
    }
    let (ours, theirs) = rustix::net::socketpair(
        AddressFamily::UNIX,
        SocketType::STREAM,
        SocketFlags::CLOEXEC,
        None,
    )
    .map_err(failed(Step::ProxySocketPair))?;
    let outer = rustix::process::getpid();
    match sys::fork().map_err(failed(Step::StartProxy))? {
        sys::Forked::Child => {
            drop(ours);
            // Outer's death (the call's end) is the proxy's, and so every
            // connection's. Outer may be gone already: then so is the call.
            if rustix::process::set_parent_process_death_signal(Some(Signal::KILL)).is_err()
                || rustix::process::getppid() != Some(outer)
            {
                std::process::exit(0);
            }
            // The proxy reads what the name service needs and writes
            // nothing: a flaw in reading what the box sends it cannot
            // change a file. Where Landlock is missing, the proxy runs
            // without it (its network is the host's either way).
            let _ = read_only();
            run(&theirs, Rules::of(&plan.confinement))
        }
        sys::Forked::Parent(_) => Ok(Some(ProxyEnd(ours))),
    }
}

/// Restricts this process to reading files (Landlock), for good.
fn read_only() -> Result<(), landlock::RulesetError> {
    use landlock::{
        ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
        RulesetCreatedAttr,
    };
    let newest = ABI::V6;
    let Ok(root) = PathFd::new("/") else {
        return Ok(());
    };
    Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(newest))?
        .create()?
        .add_rule(PathBeneath::new(root, AccessFs::from_read(newest)))?
        .restrict_self()?;
    Ok(())
}

/// In init, with the loopback up: binds the listener the command reaches
/// the proxy at and hands it to the proxy. Returns its port.
pub(super) fn offer(end: ProxyEnd) -> Result<u16, LaunchError> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).map_err(failed(Step::ProxyListener))?;
    let port = listener
        .local_addr()
        .map_err(failed(Step::ProxyListener))?
        .port();
    let fds = [listener.as_fd()];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(LaunchError::new(Step::ProxyListener)
            .because("the descriptor does not fit its message"));
    }
    rustix::net::sendmsg(
        &end.0,
        &[IoSlice::new(b"L")],
        &mut control,
        SendFlags::empty(),
    )
    .map_err(failed(Step::ProxyListener))?;
    Ok(port)
}

/// The environment that offers the proxy at `port` to the command: the
/// variables curl, Python, pip, npm, cargo, git and Go read.
pub(super) fn environment(port: u16) -> Vec<(String, String)> {
    let http = format!("http://127.0.0.1:{port}");
    let socks = format!("socks5h://127.0.0.1:{port}");
    let local = "localhost,127.0.0.1,::1".to_owned();
    let mut vars = Vec::new();
    for (name, value) in [
        ("HTTP_PROXY", &http),
        ("HTTPS_PROXY", &http),
        ("ALL_PROXY", &socks),
        ("NO_PROXY", &local),
    ] {
        vars.push((name.to_owned(), value.clone()));
        vars.push((name.to_ascii_lowercase(), value.clone()));
    }
    // npm reads its own names first (and these before the others).
    vars.push(("npm_config_proxy".to_owned(), http.clone()));
    vars.push(("npm_config_https_proxy".to_owned(), http));
    vars
}

/// What every connection of one proxy shares.
pub(super) struct Served {
    rules: Rules,
}

impl Served {
    /// Writes the refusal of `host:port` on stderr for the call's result,
    /// and returns the text the client is told.
    fn report(&self, host: &str, port: u16, refusal: &Refusal) -> String {
        let mut text = format!("{host}:{port}: {refusal}");
        if let Some(remedy) = refusal.remedy(host) {
            text.push_str("; ");
            text.push_str(&remedy);
        }
        // One line, whatever the box asked for: no control character of
        // a name reaches the line the call's result is made from.
        let line: String = text
            .chars()
            .map(|c| if c.is_control() { '?' } else { c })
            .collect();
        let _ = writeln!(std::io::stderr(), "{REFUSED}{line}");
        format!("rho: the connection to {text}")
    }
}

/// The proxy's run: takes the listener, then serves each connection on
/// threads of its own. Never returns.
fn run(end: &OwnedFd, rules: Rules) -> ! {
    let Some(listener) = receive_listener(end) else {
        std::process::exit(0)
    };
    // The proxy keeps outer's ids, root too: the parent-death signal is
    // sent with outer's permissions, and outer (by then root of a user
    // namespace of its own) may signal only a process of its own ids. A
    // proxy turned `nobody` outlived its call.
    let most = most_connections();
    let served = Arc::new(Served { rules });
    let open = Arc::new(AtomicUsize::new(0));
    for client in listener.incoming() {
        let mut client = match client {
            Ok(client) => client,
            // Out of descriptors or memory for the moment: the connection
            // waits in the queue; try again a little later, not at once.
            Err(_) => {
                std::thread::sleep(std::time::Duration::from_millis(20));
                continue;
            }
        };
        if open.fetch_add(1, Ordering::SeqCst) >= most {
            open.fetch_sub(1, Ordering::SeqCst);
            http::respond(
                &mut client,
                503,
                "rho: the proxy carries no more connections at once",
            );
            continue;
        }
        let (served, held) = (served.clone(), Held(open.clone()));
        // The count goes down when the connection's thread ends, however
        // it ends (a panic too), or when the thread never starts.
        let _ = std::thread::Builder::new()
            .name("rho-proxy".into())
            .spawn(move || {
                let _held = held;
                serve(client, &served);
            });
    }
    std::process::exit(0)
}

/// How many connections the proxy carries at once: [`MAX_CONNECTIONS`],
/// or fewer when its open files limit (raised to the hard limit first)
/// would not hold the four descriptors each takes.
fn most_connections() -> usize {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    limit.current = limit.maximum;
    let _ = setrlimit(Resource::Nofile, limit);
    let files = getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX);
    let room = usize::try_from(files.saturating_sub(32) / 4).unwrap_or(usize::MAX);
    MAX_CONNECTIONS.min(room).max(1)
}

/// One connection's place in the count of open ones, given back when
/// dropped.
struct Held(Arc<AtomicUsize>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Reads the listener init sends.
fn receive_listener(end: &OwnedFd) -> Option<TcpListener> {
    let mut byte = [0u8; 1];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    rustix::net::recvmsg(
        end,
        &mut [IoSliceMut::new(&mut byte)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )
    .ok()?;
    let fd: OwnedFd = control.drain().find_map(|message| match message {
        RecvAncillaryMessage::ScmRights(mut fds) => fds.next(),
        _ => None,
    })?;
    Some(TcpListener::from(fd))
}

/// Serves one client: SOCKS5 or HTTP, by its first byte.
fn serve(client: TcpStream, served: &Served) {
    let _ = client.set_read_timeout(Some(ASKING_TIMEOUT));
    let mut first = [0u8; 1];
    let Ok(1) = client.peek(&mut first) else {
        return;
    };
    if first[0] == 5 {
        socks::serve(client, served);
    } else {
        http::serve(client, Vec::new(), served);
    }
}
