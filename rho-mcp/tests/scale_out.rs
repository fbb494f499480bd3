//! Scale-out on an existing load balancer: three `rho-mcp sample --http`
//! servers behind nginx (Debian's package) on loopback serve one client
//! on MCP 2026-07-28 (stateless streamable HTTP, each request by itself).
//! 10,000 calls, 16 in flight; one server is killed (SIGKILL) a third of
//! the way in, while nine long calls run, three on each server (nginx
//! takes its servers in turn). Every call ends exactly once, with its own
//! answer or, for the calls in flight on the dead server (the three long
//! ones among them), with the balancer's clear error (502): nginx does not
//! send a call that was sent once to another server, so no tool runs
//! twice. None is lost, and the calls after the kill are served by the two
//! left.
//!
//! nginx comes from `rho-mcp/tests/peers/install-nginx.sh`, which the test
//! runs when nginx is missing (CI runs it first); when it cannot install
//! (no apt-get, not root and no sudo) the test fails saying so.

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod support;

use support::stateless::StatelessClient;

const CALLS: usize = 10_000;
const IN_FLIGHT: usize = 16;
const KILL_AT: usize = CALLS / 3;
/// The long calls running at the kill, three on each server.
const LONG: usize = 9;

/// A child process killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The nginx binary, installed on first use by the project's script
/// (Debian's package), or a failure saying how to get it.
fn nginx() -> PathBuf {
    let installed = Path::new("/usr/sbin/nginx");
    if !installed.exists() {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/install-nginx.sh");
        let _ = Command::new("bash").arg(script).status();
    }
    assert!(
        installed.exists(),
        "nginx is missing: this test puts it in front of three rho-mcp servers. \
         Install it with `bash rho-mcp/tests/peers/install-nginx.sh` (Debian's package)."
    );
    installed.to_path_buf()
}

/// A sample server over HTTP on a port the system picks, logging each
/// `echo` it runs to `log`: the process and its `host:port`.
fn sample_server(log: &Path) -> (Running, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rho-mcp"))
        .args(["sample", "--http"])
        .env("RHO_MCP_SAMPLE_LOG", log)
        // It serves until its stdin closes: the pipe stays open in the
        // child's handle until the test ends or kills it.
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the rho-mcp binary starts");
    let stdout = child.stdout.take().expect("its stdout");
    let mut url = String::new();
    BufReader::new(stdout)
        .read_line(&mut url)
        .expect("it prints its URL");
    let authority = url
        .trim()
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("not a URL: {url}"))
        .to_owned();
    (Running(child), authority)
}

/// A port free on loopback now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// nginx balancing over `upstreams`, listening on `port`, its files in
/// `dir`.
fn balancer(dir: &Path, port: u16, upstreams: &[String]) -> Balancer {
    let servers: String = upstreams
        .iter()
        .map(|upstream| format!("        server {upstream} max_fails=1 fail_timeout=60s;\n"))
        .collect();
    let dir_text = dir.display();
    let config = format!(
        "worker_processes 1;
daemon off;
pid {dir_text}/nginx.pid;
error_log {dir_text}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {dir_text}/body;
    proxy_temp_path {dir_text}/proxy;
    fastcgi_temp_path {dir_text}/fastcgi;
    uwsgi_temp_path {dir_text}/uwsgi;
    scgi_temp_path {dir_text}/scgi;
    upstream rho {{
{servers}        keepalive 32;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://rho;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
            # The servers check Host against DNS rebinding: the client's
            # own (a loopback name) goes through.
            proxy_set_header Host $http_host;
            proxy_buffering off;
            proxy_read_timeout 60s;
        }}
    }}
}}
"
    );
    let path = dir.join("nginx.conf");
    std::fs::write(&path, config).expect("writes nginx.conf");
    let child = Command::new(nginx())
        .arg("-p")
        .arg(dir)
        .arg("-c")
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nginx starts");
    let began = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "nginx did not listen on {port}: {}",
            std::fs::read_to_string(dir.join("error.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Balancer {
        master: child,
        config: path,
        dir: dir.to_path_buf(),
    }
}

/// nginx, stopped when dropped, and its directory removed.
struct Balancer {
    master: Child,
    config: PathBuf,
    dir: PathBuf,
}

impl Drop for Balancer {
    fn drop(&mut self) {
        // `nginx -s stop` (the master stops its workers) rather than a
        // kill: a master killed with SIGKILL leaves its worker behind,
        // still listening.
        let stopped = Command::new(nginx())
            .arg("-p")
            .arg(&self.dir)
            .arg("-c")
            .arg(&self.config)
            .args(["-s", "stop"])
            .stderr(Stdio::null())
            .status();
        if !stopped.is_ok_and(|status| status.success()) {
            let _ = self.master.kill();
        }
        let _ = self.master.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One `tools/call` of the sample's `tool` through the balancer: the text
/// it answered, or the error the client got (the balancer's 502, say).
async fn call_tool(
    client: &StatelessClient,
    tool: &str,
    arguments: Value,
) -> Result<String, String> {
    let params = json!({ "name": tool, "arguments": arguments });
    let result = client.try_request("tools/call", params).await?;
    result["content"][0]["text"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("no text in {result}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_servers_behind_nginx_end_every_call_once_when_one_is_killed() {
    let dir = std::env::temp_dir().join(format!("rho-scale-out-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory for nginx");
    let logs: Vec<PathBuf> = (0..3)
        .map(|n| dir.join(format!("server-{n}.log")))
        .collect();
    let mut servers: Vec<(Running, String)> = logs.iter().map(|log| sample_server(log)).collect();
    let upstreams: Vec<String> = servers
        .iter()
        .map(|(_, authority)| authority.clone())
        .collect();
    let port = free_port();
    let _nginx = balancer(&dir, port, &upstreams);
    let client =
        Arc::new(StatelessClient::new(format!("http://127.0.0.1:{port}/mcp")).declaring(json!({})));

    // Each call's end, by its number: counted, so that a second end shows.
    let ends: Arc<Vec<AtomicUsize>> = Arc::new((0..CALLS).map(|_| AtomicUsize::new(0)).collect());
    let outcomes = Arc::new(std::sync::Mutex::new(vec![None; CALLS]));
    let next = Arc::new(AtomicUsize::new(0));
    let ended = Arc::new(AtomicUsize::new(0));
    // Each short call holds a place; taking them all pauses the short
    // calls, so that the long ones go out in a row.
    let places = Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT));
    let began = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..IN_FLIGHT {
        let (client, ends, outcomes, next, ended, places) = (
            client.clone(),
            ends.clone(),
            outcomes.clone(),
            next.clone(),
            ended.clone(),
            places.clone(),
        );
        workers.spawn(async move {
            loop {
                let _place = places.acquire().await.expect("places stay open");
                let call = next.fetch_add(1, Ordering::SeqCst);
                if call >= CALLS - LONG {
                    return;
                }
                let text = format!("call {call}");
                let echo = call_tool(&client, "echo", json!({ "text": text }));
                let outcome = tokio::time::timeout(Duration::from_secs(60), echo)
                    .await
                    .unwrap_or_else(|_| Err("lost: no end within 60 s".to_owned()));
                ends[call].fetch_add(1, Ordering::SeqCst);
                let outcome = match outcome {
                    Ok(answer) if answer == text => Ok(()),
                    Ok(answer) => Err(format!("another call's answer: {answer}")),
                    Err(error) => Err(error),
                };
                outcomes.lock().expect("outcomes")[call] = Some(outcome);
                ended.fetch_add(1, Ordering::SeqCst);
            }
        });
    }
    // A third of the way in, the short calls pause, nine long ones go out
    // in a row (three to each server), and one server dies under them.
    while ended.load(Ordering::SeqCst) < KILL_AT {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let paused = places
        .acquire_many(u32::try_from(IN_FLIGHT).expect("a few"))
        .await
        .expect("places stay open");
    let mut long = tokio::task::JoinSet::new();
    for _ in 0..LONG {
        let client = client.clone();
        long.spawn(async move {
            let slow = call_tool(&client, "slow", json!({ "ms": 2000 }));
            tokio::time::timeout(Duration::from_secs(60), slow)
                .await
                .unwrap_or_else(|_| Err("lost: no end within 60 s".to_owned()))
        });
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    drop(paused);
    let killed_at = next.load(Ordering::SeqCst);
    let (mut dead, _) = servers.remove(0);
    dead.0.kill().expect("kills a server");
    let mut long_failed = Vec::new();
    while let Some(outcome) = long.join_next().await {
        match outcome.expect("a long call's task") {
            Ok(answer) => assert_eq!(answer, "slept 2000 ms"),
            Err(error) => long_failed.push(error),
        }
    }
    while workers.join_next().await.is_some() {}
    let took = began.elapsed();
    assert_eq!(
        long_failed.len(),
        LONG / 3,
        "the long calls on the dead server, and only they, fail: {long_failed:?}"
    );
    for error in &long_failed {
        assert!(
            error.contains("502"),
            "a long call failed unclearly: {error}"
        );
    }

    let outcomes = outcomes.lock().expect("outcomes");
    let mut failed = Vec::new();
    let short = CALLS - LONG;
    for (call, (outcome, ends)) in outcomes.iter().zip(ends.iter()).enumerate().take(short) {
        assert_eq!(
            ends.load(Ordering::SeqCst),
            1,
            "call {call} ended other than once"
        );
        match outcome {
            Some(Ok(())) => {}
            Some(Err(error)) => failed.push((call, error.clone())),
            None => panic!("call {call} has no outcome"),
        }
    }
    // What the servers ran: no call twice (nginx sends none it sent once
    // to another server), each answered call once.
    let mut runs = vec![0_usize; CALLS];
    for log in &logs {
        let log = std::fs::read_to_string(log).expect("each server logged its calls");
        for call in log
            .lines()
            .filter_map(|line| line.strip_prefix("echo ran: call "))
        {
            runs[call.parse::<usize>().expect("a call's number")] += 1;
        }
    }
    for (call, outcome) in outcomes.iter().enumerate().take(short) {
        let ran = runs[call];
        match outcome {
            Some(Ok(())) => assert_eq!(ran, 1, "answered call {call} ran {ran} times"),
            _ => assert!(ran <= 1, "failed call {call} ran {ran} times"),
        }
    }
    eprintln!(
        "{CALLS} calls through nginx to 3 servers, one killed at call {killed_at}: \
         {} short and {} long failed, {:.0} calls/s",
        failed.len(),
        long_failed.len(),
        CALLS as f64 / took.as_secs_f64()
    );
    // Only calls in flight on the dead server may fail, each with the
    // balancer's word for it.
    assert!(
        failed.len() <= IN_FLIGHT,
        "more calls failed than were in flight: {failed:?}"
    );
    for (call, error) in &failed {
        assert!(
            (killed_at.saturating_sub(IN_FLIGHT)..killed_at + IN_FLIGHT).contains(call),
            "call {call} failed far from the kill: {error}"
        );
        assert!(
            error.contains("502"),
            "call {call} failed unclearly: {error}"
        );
    }
}
