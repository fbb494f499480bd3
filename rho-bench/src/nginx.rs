//! nginx, the load balancer figure 16 puts in front of rho's HTTP servers:
//! Debian's package, installed by rho-mcp's peer script when missing (as
//! CI does before the bench), run as this user with a prefix and a
//! configuration of its own in a temporary directory (Debian's service and
//! files are root's and are never touched), stopped whole.

use std::ffi::OsStr;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where Debian's package puts nginx.
pub(crate) const NGINX: &str = "/usr/sbin/nginx";

/// Whether nginx is there, after running the project's installer
/// (`rho-mcp/tests/peers/install-nginx.sh`) if it was not.
pub(crate) fn available() -> bool {
    if !Path::new(NGINX).exists() {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../rho-mcp/tests/peers/install-nginx.sh");
        eprintln!("[tokio] no {NGINX}; running {}", script.display());
        let _ = Command::new("bash").arg(script).status();
    }
    Path::new(NGINX).exists()
}

/// nginx balancing round-robin over some upstream servers, on a loopback
/// port of its own. Dropping it stops it and removes its directory.
#[derive(Debug)]
pub(crate) struct Balancer {
    master: Child,
    dir: PathBuf,
    url: String,
}

impl Balancer {
    /// Starts nginx in front of `upstreams` (`host:port` each); returns
    /// once it listens. Panics when it does not within 10 s, with its log.
    pub(crate) fn start(upstreams: &[&str]) -> Self {
        let dir = std::env::temp_dir().join(format!("rho-bench-nginx-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory for nginx");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        // One failure takes a server out for the rest of the run; a POST
        // sent once is never sent again (nginx's default for requests that
        // are not idempotent), so it ends with 502 instead.
        let servers: String = upstreams
            .iter()
            .map(|upstream| format!("        server {upstream} max_fails=1 fail_timeout=60s;\n"))
            .collect();
        // Every path is relative to the prefix, `dir`: this user's own.
        let config = format!(
            "worker_processes 1; daemon off; pid nginx.pid; error_log error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path body; proxy_temp_path proxy; fastcgi_temp_path fastcgi;
    uwsgi_temp_path uwsgi; scgi_temp_path scgi;
    upstream rho {{
{servers}        keepalive 32;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://rho; proxy_http_version 1.1; proxy_set_header Connection \"\";
            # The servers check Host against DNS rebinding: the client's
            # own (a loopback name) goes through.
            proxy_set_header Host $http_host;
            proxy_buffering off; proxy_read_timeout 60s;
        }}
    }}
}}
"
        );
        std::fs::write(dir.join("nginx.conf"), config).expect("writes nginx.conf");
        let master = Command::new(NGINX)
            .args(args(&dir))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
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
        let url = format!("http://127.0.0.1:{port}/mcp");
        Self { master, dir, url }
    }

    /// The MCP endpoint through it.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }
}

/// nginx's prefix, `dir`, which holds its configuration and logs (the
/// startup log too, which would be Debian's, root's, otherwise).
fn args(dir: &Path) -> [&OsStr; 6] {
    let [p, c, e, conf, log] = ["-p", "-c", "-e", "nginx.conf", "error.log"].map(OsStr::new);
    [p, dir.as_os_str(), c, conf, e, log]
}

impl Drop for Balancer {
    fn drop(&mut self) {
        // `nginx -s stop` rather than SIGKILL: a killed master would leave
        // its worker process behind, still listening.
        let stopped = Command::new(NGINX)
            .args(args(&self.dir))
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
