//! Network by host name (`Network::Hosts`): real clients inside the box
//! (curl, Python's `urllib`, a raw socket) reach an allowed name through
//! the confinement's proxy, and every way around it is refused. Each
//! scenario runs the confined shell through rho's `Runner` on tokio and
//! on smol (`by_name::<scenario>::on_tokio`, `::on_smol`).
//!
//! The names are the tests' own (`registry.test`, `evil.test`), mapped to
//! servers on the host's loopback that the tests start: only loopback
//! addresses are used, and each mapping is one the confinement names.
//!
//! As root, `the_scenarios_pass_as_an_unprivileged_user` runs them again
//! as `nobody`.

#![cfg(target_os = "linux")]

mod support;

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rho_process::ShellTool;
use rho_process::confine::Confinement;
use rho_tool_core::{CallEnd, Executor, Outcome, Runner, Tool, ToolCall};
use support::{Scratch, launcher};

/// A program the scenarios run inside the box, or a loud failure naming
/// what to install.
fn needs(program: &str, package: &str) {
    assert!(
        Path::new(program).exists(),
        "{program} is missing: install {package} (`apt-get install {package}`); these tests run real clients inside the box"
    );
}

/// An HTTP server on the host's loopback that answers every request with
/// `served <Host> <path>` and counts what reached it.
struct Origin {
    port: u16,
    /// Connections accepted.
    connections: Arc<AtomicUsize>,
    /// The first bytes of each connection, as text.
    seen: Arc<Mutex<Vec<String>>>,
}

impl Origin {
    fn start() -> Self {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("a listener");
        let port = listener.local_addr().expect("an address").port();
        let connections = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (counted, kept) = (connections.clone(), seen.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                counted.fetch_add(1, Ordering::SeqCst);
                let kept = kept.clone();
                std::thread::spawn(move || answer(stream, &kept));
            }
        });
        Self {
            port,
            connections,
            seen,
        }
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// Reads one request head and answers it.
fn answer(mut stream: TcpStream, seen: &Mutex<Vec<String>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(20)));
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 16 << 10 {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    seen.lock().expect("the log").push(text.clone());
    let path = text.split(' ').nth(1).unwrap_or("?").to_owned();
    let host = text
        .lines()
        .find_map(|line| {
            line.strip_prefix("Host: ")
                .or_else(|| line.strip_prefix("host: "))
        })
        .unwrap_or("?")
        .to_owned();
    let body = format!("served {host} {path}");
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// The confinement of the scenarios: `registry.test` allowed and mapped
/// to the host's loopback (named, so allowed though not public);
/// `evil.test` mapped too, and not allowed.
fn by_name() -> Confinement {
    let loopback = IpAddr::from(Ipv4Addr::LOCALHOST);
    Confinement::new()
        .with_allowed_host("registry.test".parse().expect("a host"))
        .with_host_address("registry.test", loopback)
        .with_host_address("evil.test", loopback)
}

async fn run_shell<E: Executor>(
    runner: &Runner<E>,
    confinement: Confinement,
    command: &str,
) -> CallEnd {
    let workspace = Scratch::new("hosts");
    let tool = ShellTool::new(workspace.path())
        .with_confinement(confinement)
        .with_launcher(launcher());
    let call = ToolCall::new("1", tool.name(), serde_json::json!({ "command": command }));
    runner.start(call, Arc::new(tool)).await
}

mod by_name {
    use super::*;

    crate::on_both_executors!(
        curl_reaches_an_allowed_name_over_http_connect_and_socks,
        a_name_not_allowed_is_refused_and_named_in_the_result,
        python_urllib_reaches_an_allowed_name_and_not_another,
        no_dns_and_no_direct_connection_from_inside,
        an_address_is_refused_though_its_name_is_allowed,
        an_allowed_name_resolving_to_loopback_is_refused_unless_named,
        a_tunnel_to_one_host_naming_another_is_cut,
        udp_and_ipv6_literals_are_refused,
        a_kept_connection_ends_with_the_call,
        a_host_granted_through_the_gate_is_reached_in_that_call_only,
        garbage_sent_to_the_proxy_leaves_it_serving,
    );

    /// curl, as a coding agent's commands use it: plain HTTP through the
    /// proxy, a `CONNECT` tunnel, and SOCKS5 with the name resolved by
    /// the proxy. Each reaches the server with the name it asked for.
    pub(super) async fn curl_reaches_an_allowed_name_over_http_connect_and_socks<E: Executor>(
        runner: Runner<E>,
    ) {
        needs("/usr/bin/curl", "curl");
        let origin = Origin::start();
        let port = origin.port;
        let command = format!(
            r#"curl -sS -m 20 http://registry.test:{port}/plain; echo
curl -sS -m 20 -p http://registry.test:{port}/tunnel; echo
curl -sS -m 20 -x "$ALL_PROXY" http://registry.test:{port}/socks; echo"#
        );
        let end = run_shell(&runner, by_name(), &command).await;
        assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
        assert_eq!(
            end.result.text(),
            format!(
                "served registry.test:{port} /plain\nserved registry.test:{port} /tunnel\nserved registry.test:{port} /socks\n"
            )
        );
        assert_eq!(origin.connections(), 3);
    }

    /// A name not on the list: curl gets the proxy's refusal, the server
    /// sees nothing, and the call's result names the host and how to
    /// allow it.
    pub(super) async fn a_name_not_allowed_is_refused_and_named_in_the_result<E: Executor>(
        runner: Runner<E>,
    ) {
        needs("/usr/bin/curl", "curl");
        let origin = Origin::start();
        let port = origin.port;
        let command = format!(
            "curl -sS -m 20 http://evil.test:{port}/; curl -sS -m 20 -p https://evil.test:{port}/; curl -sS -m 20 -x \"$ALL_PROXY\" http://evil.test:{port}/"
        );
        let end = run_shell(&runner, by_name(), &command).await;
        let text = end.result.text();
        assert_eq!(end.outcome, Outcome::Failed, "{end:?}");
        assert!(
            text.contains(&format!(
                "rho: the connection to evil.test:{port}: it is not one of the confinement's allowed hosts"
            )),
            "the client reads the refusal: {text}"
        );
        assert!(text.contains("403"), "the tunnel's refusal: {text}");
        assert!(
            text.contains(&format!(
                "connections the confinement refused during the call:\n- evil.test:{port}: it is not one of the confinement's allowed hosts; to allow it, add `evil.test` to the allowed hosts"
            )),
            "the note names the host once: {text}"
        );
        assert_eq!(
            text.matches("- evil.test").count(),
            1,
            "each refused host once: {text}"
        );
        assert_eq!(origin.connections(), 0, "nothing reached the server");
    }

    /// Python's `urllib`, which reads `HTTP_PROXY` itself.
    pub(super) async fn python_urllib_reaches_an_allowed_name_and_not_another<E: Executor>(
        runner: Runner<E>,
    ) {
        needs("/usr/bin/python3", "python3");
        let origin = Origin::start();
        let port = origin.port;
        let command = format!(
            r#"python3 - <<'EOF'
import urllib.request, urllib.error
print(urllib.request.urlopen("http://registry.test:{port}/simple/", timeout=20).read().decode())
try:
    urllib.request.urlopen("http://evil.test:{port}/", timeout=20)
except urllib.error.HTTPError as error:
    print("refused", error.code)
EOF"#
        );
        let end = run_shell(&runner, by_name(), &command).await;
        assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
        let text = end.result.text();
        assert!(
            text.starts_with(&format!(
                "served registry.test:{port} /simple/\nrefused 403\n"
            )),
            "{text}"
        );
        assert!(text.contains(&format!("- evil.test:{port}:")), "{text}");
        assert_eq!(origin.connections(), 1);
    }

    /// Inside, there is no DNS and no route: a lookup of its own fails,
    /// and a connection to an address (the host's loopback server's)
    /// never leaves the box, with or without the proxy's variables.
    pub(super) async fn no_dns_and_no_direct_connection_from_inside<E: Executor>(
        runner: Runner<E>,
    ) {
        needs("/usr/bin/python3", "python3");
        let origin = Origin::start();
        let port = origin.port;
        let command = format!(
            r#"python3 - <<'EOF'
import socket
def host_server():
    # The box's own loopback has one listener, the proxy's, on a port of
    # its own choosing that may be the host server's number: reaching the
    # host's server is what counts, so ask for its answer.
    s = socket.create_connection(("127.0.0.1", {port}), timeout=5)
    s.sendall(b"GET /direct HTTP/1.0\r\n\r\n")
    if b"served" not in s.recv(100):
        raise OSError("not the host's server")
for what, attempt in [
    ("lookup", lambda: socket.getaddrinfo("registry.test", 80)),
    ("lookup of a real name", lambda: socket.getaddrinfo("example.com", 443)),
    ("direct", host_server),
    ("direct public", lambda: socket.create_connection(("1.1.1.1", 53), timeout=5)),
    ("dns over udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("8.8.8.8", 53))),
]:
    try:
        attempt()
        print(what, "succeeded")
    except OSError as error:
        print(what, "failed")
EOF"#
        );
        let end = run_shell(&runner, by_name(), &command).await;
        assert_eq!(
            end.result.text(),
            "lookup failed\nlookup of a real name failed\ndirect failed\ndirect public failed\ndns over udp failed\n",
            "{end:?}"
        );
        assert_eq!(origin.connections(), 0);
    }

    /// An address asked for directly, though the name that leads to it is
    /// allowed: a rule names names, not what they resolve to.
    pub(super) async fn an_address_is_refused_though_its_name_is_allowed<E: Executor>(
        runner: Runner<E>,
    ) {
        needs("/usr/bin/curl", "curl");
        let origin = Origin::start();
        let port = origin.port;
        let command = format!(
            "curl -sS -m 20 --noproxy '' http://127.0.0.1:{port}/; curl -sS -m 20 --noproxy '' -p http://127.0.0.1:{port}/; curl -sS -m 20 --noproxy '' -x \"$ALL_PROXY\" http://127.0.0.1:{port}/"
        );
        let end = run_shell(&runner, by_name(), &command).await;
        let text = end.result.text();
        assert!(
            text.contains(&format!(
                "- 127.0.0.1:{port}: it is not one of the confinement's allowed hosts"
            )),
            "{text}"
        );
        assert_eq!(origin.connections(), 0, "{text}");
    }

    /// An allowed name that resolves to a loopback address (here
    /// `localhost`, by the host's own resolver): refused, since the
    /// confinement does not name the address; named, it is reached.
    pub(super) async fn an_allowed_name_resolving_to_loopback_is_refused_unless_named<
        E: Executor,
    >(
        runner: Runner<E>,
    ) {
        needs("/usr/bin/curl", "curl");
        let origin = Origin::start();
        let port = origin.port;
        // `registry.test`'s own address entry names 127.0.0.1 too: that
        // lets `registry.test` reach it, not any other name that resolves
        // to it.
        let allowed = by_name().with_allowed_host("localhost".parse().expect("a host"));
        // Inside, `localhost` is the box's own loopback and skips the
        // proxy (NO_PROXY, as for the loopback addresses in the tests
        // below): ask the proxy for it explicitly.
        let command = format!("curl -sS -m 20 --noproxy '' -p http://localhost:{port}/");
        let end = run_shell(&runner, allowed.clone(), &command).await;
        let text = end.result.text();
        assert!(
            text.contains(&format!("- localhost:{port}: it resolves to 127.0.0.1, a loopback, private or link-local address the confinement does not name")),
            "{text}"
        );
        assert_eq!(origin.connections(), 0);
        let named = allowed.with_host_address("localhost", IpAddr::from(Ipv4Addr::LOCALHOST));
        let end = run_shell(&runner, named, &command).await;
        assert_eq!(
            end.result.text(),
            format!("served localhost:{port} /"),
            "{end:?}"
        );
    }

    /// A tunnel opened for the allowed name whose traffic names another
    /// host: a `Host` header, or a TLS server name (a ClientHello made by
    /// Python's `ssl`). The proxy cuts it before a byte reaches the
    /// server, and names both.
    pub(super) async fn a_tunnel_to_one_host_naming_another_is_cut<E: Executor>(runner: Runner<E>) {
        needs("/usr/bin/python3", "python3");
        let origin = Origin::start();
        let port = origin.port;
        let command = format!(
            r#"python3 - <<'EOF'
import os, socket, ssl
proxy = os.environ["HTTPS_PROXY"].rsplit(":", 1)
def tunnel():
    s = socket.create_connection(("127.0.0.1", int(proxy[1])), timeout=20)
    s.sendall(b"CONNECT registry.test:{port} HTTP/1.1\r\nHost: registry.test:{port}\r\n\r\n")
    assert s.recv(1024).startswith(b"HTTP/1.1 200")
    return s
def after(s, first):
    s.sendall(first)
    try:
        return "answered" if s.recv(1024) else "cut"
    except OSError:
        return "cut"
print("host header:", after(tunnel(), b"GET / HTTP/1.1\r\nHost: other.test\r\n\r\n"))
incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
hello = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname="other.test")
try:
    hello.do_handshake()
except ssl.SSLWantReadError:
    pass
print("tls server name:", after(tunnel(), outgoing.read()))
bare = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
bare.check_hostname = False
bare.verify_mode = ssl.CERT_NONE
incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
hello = bare.wrap_bio(incoming, outgoing, server_hostname=None)
try:
    hello.do_handshake()
except ssl.SSLWantReadError:
    pass
print("no server name:", after(tunnel(), outgoing.read()))
s = socket.create_connection(("127.0.0.1", int(proxy[1])), timeout=20)
s.sendall(b"CONNECT registry.test:{port} HTTP/1.1\r\nHost: other.test\r\n\r\n")
print("connect host header:", s.recv(12).decode())
print("same host:", after(tunnel(), b"GET / HTTP/1.1\r\nHost: registry.test\r\n\r\n"))
EOF"#
        );
        let end = run_shell(&runner, by_name(), &command).await;
        let text = end.result.text();
        assert!(
            text.starts_with(
                "host header: cut\ntls server name: cut\nno server name: cut\nconnect host header: HTTP/1.1 403\nsame host: answered\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(&format!("- registry.test:{port}: the connection was asked for it but its traffic names other.test")),
            "{text}"
        );
        // Each tunnel connected to the allowed host when it was asked
        // for; only the honest one's bytes went through.
        let heads: Vec<String> = origin
            .seen
            .lock()
            .expect("the log")
            .iter()
            .filter(|head| !head.is_empty())
            .cloned()
            .collect();
        assert_eq!(heads, ["GET / HTTP/1.1\r\nHost: registry.test\r\n\r\n"]);
    }

    /// SOCKS5 UDP, and IPv6 literals (loopback, and a public one no rule
    /// names): refused, each named.
    pub(super) async fn udp_and_ipv6_literals_are_refused<E: Executor>(runner: Runner<E>) {
        needs("/usr/bin/python3", "python3");
        needs("/usr/bin/curl", "curl");
        let command = r#"python3 - <<'EOF'
import os, socket
port = int(os.environ["ALL_PROXY"].rsplit(":", 1)[1])
s = socket.create_connection(("127.0.0.1", port), timeout=20)
s.sendall(b"\x05\x01\x00")
assert s.recv(2) == b"\x05\x00"
s.sendall(b"\x05\x03\x00\x01\x00\x00\x00\x00\x00\x35")
print("udp associate reply:", s.recv(10)[1])
EOF
curl -sS -m 20 --noproxy '' -p 'http://[::1]:9/' 2>&1 | tail -c 60; echo
curl -sS -m 20 -x "$ALL_PROXY" 'http://[2606:4700::1111]:80/' 2>&1 | tail -c 60; echo"#;
        let end = run_shell(&runner, by_name(), command).await;
        let text = end.result.text();
        assert!(text.starts_with("udp associate reply: 7\n"), "{text}");
        for refused in [
            "- 0.0.0.0:53: the proxy does not carry UDP (SOCKS5 UDP ASSOCIATE)",
            "- [::1]:9: it is not one of the confinement's allowed hosts",
            "- [2606:4700::1111]:80: it is not one of the confinement's allowed hosts",
        ] {
            assert!(text.contains(refused), "`{refused}` missing: {text}");
        }
    }

    /// A connection kept open by a process the command left behind ends
    /// with the call: nothing the box opened outlives it.
    pub(super) async fn a_kept_connection_ends_with_the_call<E: Executor>(runner: Runner<E>) {
        needs("/usr/bin/python3", "python3");
        let origin = Origin::start();
        let port = origin.port;
        // A tunnel opened, its request held back, and the holder left
        // running in the background when the command ends.
        let command = format!(
            r#"python3 - <<'EOF' &
import os, socket, time
port = int(os.environ["HTTPS_PROXY"].rsplit(":", 1)[1])
s = socket.create_connection(("127.0.0.1", port), timeout=60)
s.sendall(b"CONNECT registry.test:{port} HTTP/1.1\r\n\r\n")
s.recv(1024)
open("tunnel-open", "w").close()
time.sleep(5)
s.sendall(b"GET /after-the-end HTTP/1.1\r\nHost: registry.test\r\n\r\n")
EOF
while [ ! -e tunnel-open ]; do sleep 0.05; done; echo opened"#
        );
        let end = run_shell(&runner, by_name(), &command).await;
        assert_eq!(end.result.text(), "opened\n", "{end:?}");
        std::thread::sleep(Duration::from_secs(7));
        let seen = origin.seen.lock().expect("the log").clone();
        assert!(
            seen.iter().all(|head| !head.contains("after-the-end")),
            "a request came after the call's end: {seen:?}"
        );
    }
    /// A call that needs a host the confinement does not allow asks for it
    /// in a grant: the approver is asked exactly that host, and the call
    /// reaches it; the next call without the grant is refused again.
    pub(super) async fn a_host_granted_through_the_gate_is_reached_in_that_call_only<
        E: Executor,
    >(
        runner: Runner<E>,
    ) {
        use rho_process::confine::Grants;
        use rho_tool_core::{AllowAll, ApprovalRequest, Verdict};

        needs("/usr/bin/curl", "curl");
        let origin = Origin::start();
        let port = origin.port;
        let asked = Arc::new(Mutex::new(Vec::new()));
        let recorded = asked.clone();
        let approve: Arc<dyn rho_tool_core::Approver> =
            Arc::new(move |request: ApprovalRequest| {
                recorded
                    .lock()
                    .expect("the log")
                    .push(request.reason.clone());
                async { Verdict::Allow }
            });
        let grants = Grants::new(approve.clone());
        let runner = runner
            .with_gate(Arc::new(grants.gate(AllowAll)))
            .with_approver(approve);
        let workspace = Scratch::new("granted");
        let shell = Arc::new(
            ShellTool::new(workspace.path())
                .with_confinement(by_name())
                .with_launcher(launcher())
                .with_grants(&grants),
        );
        let command = format!("curl -fsS -m 20 http://evil.test:{port}/granted");
        let call = |id: &str, arguments: serde_json::Value| ToolCall::new(id, "shell", arguments);

        let granted = runner
            .start(
                call(
                    "1",
                    serde_json::json!({ "command": command, "grant": { "hosts": ["evil.test"] } }),
                ),
                shell.clone(),
            )
            .await;
        assert_eq!(granted.outcome, Outcome::Succeeded, "{granted:?}");
        assert_eq!(
            granted.result.text(),
            format!("served evil.test:{port} /granted")
        );
        assert_eq!(
            *asked.lock().expect("the log"),
            ["`shell` asks for more than its confinement allows: the hosts evil.test"]
        );

        let again = runner
            .start(call("2", serde_json::json!({ "command": command })), shell)
            .await;
        assert_eq!(again.outcome, Outcome::Failed, "{again:?}");
        assert!(
            again.result.text().contains(&format!(
                "- evil.test:{port}: it is not one of the confinement's allowed hosts"
            )),
            "{again:?}"
        );
        assert_eq!(origin.connections(), 1);
    }
    /// What the box sends the proxy that is no request (an endless head,
    /// odd SOCKS messages, a TLS record that is no ClientHello, bytes cut
    /// short, hundreds of connections dropped at once) is answered or
    /// dropped, and the next honest request is served.
    pub(super) async fn garbage_sent_to_the_proxy_leaves_it_serving<E: Executor>(
        runner: Runner<E>,
    ) {
        needs("/usr/bin/python3", "python3");
        let origin = Origin::start();
        let port = origin.port;
        let command = format!(
            r#"python3 - <<'EOF'
import os, socket
proxy = int(os.environ["HTTP_PROXY"].rsplit(":", 1)[1])
def send(data, read=True):
    s = socket.create_connection(("127.0.0.1", proxy), timeout=20)
    try:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        return s.recv(64) if read else b""
    except OSError:
        return b""
    finally:
        s.close()
answers = [
    send(b"A" * 200000),
    send(b"CONNECT\r\n\r\n"),
    send(b"GET http://[::1 HTTP/1.1\r\n\r\n"),
    send(b"GET /relative HTTP/1.1\r\nHost: registry.test\r\n\r\n"),
    send(b"\x05"),
    send(b"\x05\x01\x00\x05\x09\x00"),
    send(b"\x05\x01\x00\x05\x01\x00\x03\xff" + b"x" * 255 + b"\x00\x50"),
    send(b"\x05\x01\x00\x05\x01\x00\x03\x02\xff\xfe\x00\x50"),
    send(b"CONNECT registry.test:{port} HTTP/1.1\r\n\r\n\x16\x03\x01\x00\x05\xff\xff\xff\xff\xff"),
    send(bytes(range(256)) * 100),
]
for _ in range(300):
    send(b"", read=False)
print(" ".join(str(a[:12]) for a in answers[:4]))
EOF
curl -sS -m 20 http://registry.test:{port}/after"#
        );
        let end = run_shell(&runner, by_name(), &command).await;
        assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
        let text = end.result.text();
        assert!(
            text.starts_with("b'HTTP/1.1 400' b'HTTP/1.1 400' b'HTTP/1.1 400' b'HTTP/1.1 400'\n"),
            "{text}"
        );
        assert!(
            text.contains(&format!("served registry.test:{port} /after")),
            "{text}"
        );
    }
}

/// When the tests run as root, the scenarios again as `nobody`, from
/// copies of this test binary and the launcher.
#[test]
fn the_scenarios_pass_as_an_unprivileged_user() {
    support::rerun_as_nobody("by_name::", env!("CARGO_BIN_EXE_rho-confine"));
}
