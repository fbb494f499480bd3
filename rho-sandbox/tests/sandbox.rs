//! `rho-sandbox` as people run it: the built binary, real commands, real
//! clients (curl), a server on the host's loopback reached by a name.

#![cfg(target_os = "linux")]

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A scratch directory, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "rho-sandbox-{}-{}-{name}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        Self(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn sandbox() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_rho-sandbox"));
    command.stdin(Stdio::null());
    command
}

fn run(command: &mut Command) -> Output {
    command.output().expect("rho-sandbox runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A server on the host's loopback answering `served <path>`, counting
/// its connections.
fn origin() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("a listener");
    let port = listener.local_addr().expect("an address").port();
    let count = Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            counted.fetch_add(1, Ordering::SeqCst);
            let mut head = [0u8; 4096];
            let read = stream.read(&mut head).unwrap_or(0);
            let request = String::from_utf8_lossy(&head[..read]).into_owned();
            let path = request.split(' ').nth(1).unwrap_or("?").to_owned();
            let body = format!("served {path}");
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, count)
}

#[test]
fn it_exits_with_the_commands_status_and_the_command_sees_only_what_it_is_given() {
    let dir = Scratch::new("write");
    let out = dir.path().join("out");
    let output = run(sandbox().arg("--write").arg(dir.path()).args([
        "--",
        "sh",
        "-c",
        &format!(
            "echo made > {}; test -e /etc/shadow || echo 'no /etc/shadow'; test -e $HOME/.ssh || echo 'no ~/.ssh'; echo x > /usr/x 2>/dev/null || echo 'no write to /usr'; exit 7",
            out.display()
        ),
    ]));
    assert_eq!(output.status.code(), Some(7), "{output:?}");
    assert_eq!(
        text(&output.stdout),
        "no /etc/shadow\nno ~/.ssh\nno write to /usr\n"
    );
    assert_eq!(std::fs::read_to_string(&out).expect("written"), "made\n");
}

#[test]
fn a_command_killed_by_a_signal_ends_it_by_the_same_signal() {
    let output = run(sandbox().args(["--", "sh", "-c", "kill -TERM $$"]));
    assert_eq!(output.status.signal(), Some(15), "{output:?}");
}

#[test]
fn an_allowed_host_is_reached_by_name_and_a_refused_one_is_printed() {
    assert!(
        Path::new("/usr/bin/curl").exists(),
        "curl is missing: install it (`apt-get install curl`); this test runs it inside the box"
    );
    let (port, connections) = origin();
    let output = run(sandbox().args([
        "--allow-host",
        "registry.test",
        "--host-address",
        "registry.test=127.0.0.1",
        "--host-address",
        "evil.test=127.0.0.1",
        "--",
        "sh",
        "-c",
        &format!(
            "curl -sS -m 20 http://registry.test:{port}/ok; echo; curl -sS -m 20 -p http://evil.test:{port}/no"
        ),
    ]));
    assert_eq!(
        output.status.code(),
        Some(56),
        "curl's own status: {output:?}"
    );
    assert_eq!(text(&output.stdout), "served /ok\n");
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "rho-confine: refused host evil.test:{port}: it is not one of the confinement's allowed hosts; to allow it, add `evil.test`"
        )),
        "{stderr}"
    );
    assert_eq!(connections.load(Ordering::SeqCst), 1);
}

#[test]
fn a_configuration_file_says_the_same_as_the_flags() {
    let dir = Scratch::new("config");
    let (port, _) = origin();
    let config = dir.path().join("sandbox.toml");
    std::fs::write(
        &config,
        format!(
            "hosts = [\"registry.test:{port}\"]\nwrite = [\"{}\"]\n\n[addresses]\n\"registry.test\" = \"127.0.0.1\"\n\n[limits]\nprocesses = 300\n",
            dir.path().display()
        ),
    )
    .expect("a configuration");
    let output = run(sandbox().arg("--config").arg(&config).args([
        "--",
        "sh",
        "-c",
        &format!(
            "curl -sS -m 20 http://registry.test:{port}/file > {}/got",
            dir.path().display()
        ),
    ]));
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("got")).expect("written"),
        "served /file"
    );

    std::fs::write(&config, "network = \"everything\"\n").expect("a configuration");
    let output = run(sandbox().arg("--config").arg(&config).arg("true"));
    assert_eq!(output.status.code(), Some(125));
    assert!(
        text(&output.stderr).contains("is not a confinement"),
        "{output:?}"
    );
}

#[test]
fn what_cannot_be_set_up_exits_125_and_a_usage_error_2() {
    let output = run(sandbox().args(["--read", "/no/such/path", "--", "true"]));
    assert_eq!(output.status.code(), Some(125), "{output:?}");
    assert!(text(&output.stderr).contains("/no/such/path"), "{output:?}");
    let output = run(sandbox().args(["--allow-host", "*", "true"]));
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let output = run(sandbox().args(["--", "no-such-program-here"]));
    assert_eq!(output.status.code(), Some(127), "{output:?}");
}

/// Killed, it takes the box with it: every process the command started
/// is gone, wherever it went.
#[test]
fn killing_it_ends_everything_the_command_started() {
    let marker = format!("rho-sandbox-marker-{}", std::process::id());
    let mut child = sandbox()
        .args([
            "--",
            "sh",
            "-c",
            &format!("setsid sh -c 'sleep 1000; : {marker}' & sh -c 'sleep 1000; : {marker}'"),
        ])
        .spawn()
        .expect("rho-sandbox runs");
    let running = |marker: &str| {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
            .filter(|cmdline| String::from_utf8_lossy(cmdline).contains(marker))
            .count()
    };
    let since = Instant::now();
    // rho-sandbox (the launcher's outer), init, the shell and the two
    // shells it started, one in a session of its own.
    while running(&marker) < 5 {
        assert!(
            since.elapsed() < Duration::from_secs(30),
            "the sleeps never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().expect("killed");
    let _ = child.wait();
    let since = Instant::now();
    while running(&marker) > 0 {
        assert!(
            since.elapsed() < Duration::from_secs(30),
            "still running after rho-sandbox was killed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// With hosts allowed, the proxy outside the box ends with the command:
/// nothing holds the sandbox's output open once it has exited (a proxy
/// that outlived its call held stdout and stderr open for good).
#[test]
fn the_proxy_ends_with_the_command() {
    let mut child = sandbox()
        .args(["--allow-host", "registry.test", "--", "true"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rho-sandbox runs");
    let (mut stdout, mut stderr) = (
        child.stdout.take().expect("piped"),
        child.stderr.take().expect("piped"),
    );
    let (done, ended) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = stdout.read_to_end(&mut sink);
        let _ = stderr.read_to_end(&mut sink);
        let _ = done.send(sink);
    });
    let said = ended
        .recv_timeout(Duration::from_secs(30))
        .expect("its output ends within 30 s of the command's end");
    assert!(child.wait().expect("it ends").success(), "{}", text(&said));
}
