//! Figure 18: what reaching a host by name through the confinement's
//! proxy costs (`Network::Hosts`). One `curl` of a small HTTP server on
//! this machine's loopback, start to end, three ways in alternating order
//! each round: unconfined (`curl http://127.0.0.1:PORT/`); through
//! bubblewrap with the host's network (`bwrap --share-net`, the same
//! namespaces and mounts otherwise, so the request goes straight out);
//! and confined by rho with the name allowed (`curl
//! http://bench.test:PORT/`, through the proxy outside the box, which
//! checks the name, maps it to the loopback address the confinement names
//! and carries the request). The added p50 is rho's over the unconfined
//! request; bubblewrap's is beside it for context (it filters nothing).

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, TcpListener};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use rho_process::confine::{Confinement, Launcher};

use crate::Config;
use crate::confine::{BWRAP, bwrap};
use crate::report::Report;
use crate::stats::Samples;

/// Where the measured client is.
const CURL: &str = "/usr/bin/curl";

/// The ways to make the request.
#[derive(Debug, Clone, Copy)]
enum Way {
    Plain,
    Bwrap,
    Rho,
}

/// A server answering every request with a few bytes, on a thread of its
/// own; its port.
fn server() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("a listener");
    let port = listener.local_addr().expect("an address").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut head = [0u8; 2048];
            let _ = stream.read(&mut head);
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
        }
    });
    port
}

/// Runs `command` to its end, checking it printed `ok`; the time it took,
/// in ms.
fn time(command: &mut Command) -> f64 {
    let started = Instant::now();
    let output = command
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .expect("the command runs");
    let took = started.elapsed();
    assert!(
        output.status.success() && output.stdout == b"ok",
        "{command:?} ended {}: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout)
    );
    took.as_secs_f64() * 1000.0
}

pub(crate) fn run(config: &Config, report: &mut Report) {
    let name = "tokio";
    if !Path::new(CURL).exists() {
        eprintln!(
            "rho-bench: {CURL} is missing, so figure 18 is not measured; install curl (`apt-get install curl`)"
        );
        return;
    }
    let launcher = Launcher::installed()
        .unwrap_or_else(|_| Launcher::new(std::env::current_exe().expect("this binary's path")));
    let has_bwrap = Path::new(BWRAP).exists();
    if !has_bwrap {
        eprintln!(
            "rho-bench: {BWRAP} is missing, so the bubblewrap figure of 18 is not measured; \
             install Debian's package (rho-bench/peers/install-bwrap.sh)"
        );
    }
    let port = server();
    let direct = format!("http://127.0.0.1:{port}/");
    let by_name = format!("http://bench.test:{port}/");
    let confinement = Confinement::new()
        .with_allowed_host("bench.test".parse().expect("a host"))
        .with_host_address("bench.test", IpAddr::from(Ipv4Addr::LOCALHOST));
    let mut rho_curl = Command::new(CURL);
    rho_curl.args(["-sS", "-m", "20", &by_name]);
    let confined = launcher
        .confine(&rho_curl, &confinement)
        .expect("this kernel confines (see `rho-confine --rho-confine-probe`)");
    let mut rho_command = confined.into_command();
    let mut ways = vec![Way::Plain, Way::Rho];
    if has_bwrap {
        ways.push(Way::Bwrap);
    }
    let mut samples: [Samples; 3] = Default::default();
    for round in 0..=config.confine_runs {
        ways.rotate_left(1);
        for &way in &ways {
            let took = match way {
                Way::Plain => time(Command::new(CURL).args(["-sS", "-m", "20", &direct])),
                Way::Bwrap => time(&mut bwrap(&[CURL, "-sS", "-m", "20", &direct], true)),
                Way::Rho => time(&mut rho_command),
            };
            if round > 0 {
                samples[way as usize].push(took);
            }
        }
    }
    let [mut plain, mut bwrapped, mut rho] = samples;
    let plain_p50 = plain.percentile(50.0);
    let rho_p50 = rho.percentile(50.0);
    report.info(name, "hosts_curl_plain_p50", plain_p50, "ms");
    report.info(name, "hosts_curl_rho_p50", rho_p50, "ms");
    report.info(name, "hosts_curl_rho_p99", rho.percentile(99.0), "ms");
    report.info(name, "hosts_curl_rho_added_p50", rho_p50 - plain_p50, "ms");
    if has_bwrap {
        let bwrap_p50 = bwrapped.percentile(50.0);
        report.info(name, "hosts_curl_bwrap_share_net_p50", bwrap_p50, "ms");
        report.info(
            name,
            "hosts_curl_bwrap_added_p50",
            bwrap_p50 - plain_p50,
            "ms",
        );
    }
}
