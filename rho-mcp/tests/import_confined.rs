//! MCP servers imported confined by the kernel: the reference servers,
//! run through the launcher embedded in the `rho-mcp` binary, still work,
//! and reach nothing their confinement does not allow.
//!
//! `@modelcontextprotocol/server-filesystem` is told it may serve `/`, so
//! its own path checks never stop a request: only the confinement does.

#![cfg(target_os = "linux")]

#[macro_use]
mod import_support;

use std::path::PathBuf;

use import_support::{
    Host, Smol, Tokio, call, check_reference_answers, everything_source, filesystem_server, node,
    node_peers,
};
use rho_mcp::import::McpSource;
use rho_process::confine::{Confinement, Launcher};
use rho_registry::ToolRegistry;
use rho_tool_core::Outcome;
use serde_json::json;

on_both_hosts!(
    the_reference_server_confined_gives_the_reference_answers,
    the_filesystem_server_confined_serves_its_root_and_reads_nothing_outside,
    a_server_that_cannot_be_confined_is_not_started,
    the_proxys_policy_file_confines_its_server,
);

/// The `rho-mcp` binary, which embeds the launcher.
fn launcher() -> Launcher {
    Launcher::new(env!("CARGO_BIN_EXE_rho-mcp"))
}

/// A directory of this test's own, removed when dropped.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Self {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "confined-{name}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a directory");
        Dir(dir)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What a node server needs: its packages, read-only.
fn node_confinement() -> Confinement {
    Confinement::new().with_read(node_peers())
}

/// server-everything, confined, answers as it does unconfined.
fn the_reference_server_confined_gives_the_reference_answers(host: impl Host) {
    let registry = ToolRegistry::new();
    let runner = host.runner();
    host.block_on(async {
        let source = everything_source("everything")
            .confined(node_confinement())
            .launcher(launcher())
            .connect(&registry)
            .await
            .expect("the confined reference server starts");
        check_reference_answers(&registry, &runner).await;
        drop(source);
    });
}

/// server-filesystem, allowed `/` by its own arguments but confined to
/// its root: reads and writes there; a file beside the root, the host's
/// `/etc/shadow` and the host's home do not exist for it.
fn the_filesystem_server_confined_serves_its_root_and_reads_nothing_outside(host: impl Host) {
    let root = Dir::new("root");
    let beside = Dir::new("beside");
    std::fs::write(root.0.join("hello.txt"), "inside the root").expect("a file");
    std::fs::write(beside.0.join("secret.txt"), "OUTSIDE SECRET").expect("a file");
    let registry = ToolRegistry::new();
    let runner = host.runner();
    host.block_on(async {
        let source = McpSource::stdio("files", node())
            .arg(filesystem_server())
            .arg("/")
            .confined(node_confinement().with_workspace(&root.0))
            .launcher(launcher())
            .connect(&registry)
            .await
            .expect("the confined filesystem server starts");

        let inside = root.0.join("hello.txt");
        let read = call(
            &registry,
            &runner,
            "read_text_file",
            json!({ "path": inside }),
        )
        .await;
        assert_eq!(read.outcome, Outcome::Succeeded, "{}", read.result.text());
        assert_eq!(read.result.text(), "inside the root");

        let written = root.0.join("written.txt");
        let write = call(
            &registry,
            &runner,
            "write_file",
            json!({ "path": written, "content": "from the server" }),
        )
        .await;
        assert_eq!(write.outcome, Outcome::Succeeded, "{}", write.result.text());
        assert_eq!(
            std::fs::read_to_string(&written).expect("written"),
            "from the server"
        );

        for outside in [beside.0.join("secret.txt"), PathBuf::from("/etc/shadow")] {
            let read = call(
                &registry,
                &runner,
                "read_text_file",
                json!({ "path": outside }),
            )
            .await;
            assert!(
                read.result.is_error,
                "{outside:?} was read: {}",
                read.result.text()
            );
            assert!(!read.result.text().contains("OUTSIDE SECRET"));
        }
        let planted = beside.0.join("planted.txt");
        let write = call(
            &registry,
            &runner,
            "write_file",
            json!({ "path": planted, "content": "x" }),
        )
        .await;
        assert!(write.result.is_error, "{}", write.result.text());
        assert!(!planted.exists());

        // What it sees of `/`: the new root, not the host's.
        let listing = call(&registry, &runner, "list_directory", json!({ "path": "/" })).await;
        let text = listing.result.text();
        assert!(text.contains("[DIR] usr"), "{text}");
        assert!(
            !text.contains("root") && !text.contains("home") && !text.contains("var"),
            "{text}"
        );
        drop(source);
    });
}

/// A confinement naming a path that does not exist is refused before the
/// server starts, saying which.
fn a_server_that_cannot_be_confined_is_not_started(host: impl Host) {
    let registry = ToolRegistry::new();
    host.block_on(async {
        let refused = everything_source("nowhere")
            .confined(node_confinement().with_read("/no/such/path"))
            .launcher(launcher())
            .connect(&registry)
            .await;
        let Err(error) = refused else {
            panic!("a server whose confinement names a missing path was started");
        };
        let error = error.to_string();
        assert!(error.contains("/no/such/path"), "{error}");
        assert!(registry.tools().is_empty());
    });
}

/// `rho-mcp proxy --policy FILE` whose file has a `[confinement]` table,
/// in front of server-filesystem (told it may serve `/`), imported here as
/// a stdio server: through the proxy the server reads its root and
/// nothing beside it.
fn the_proxys_policy_file_confines_its_server(host: impl Host) {
    let root = Dir::new("proxy-root");
    let beside = Dir::new("proxy-beside");
    std::fs::write(root.0.join("hello.txt"), "inside the root").expect("a file");
    std::fs::write(beside.0.join("secret.txt"), "OUTSIDE SECRET").expect("a file");
    let policy = root.0.with_extension("toml");
    std::fs::write(
        &policy,
        format!(
            "default = \"allow\"\n\n[confinement]\nworkspace = {:?}\nread = [{:?}]\n",
            root.0,
            node_peers()
        ),
    )
    .expect("a policy file");
    let registry = ToolRegistry::new();
    let runner = host.runner();
    host.block_on(async {
        let source = McpSource::stdio("proxy", env!("CARGO_BIN_EXE_rho-mcp"))
            .arg("proxy")
            .arg("--policy")
            .arg(&policy)
            .arg("--")
            .arg(node())
            .arg(filesystem_server())
            .arg("/")
            .connect(&registry)
            .await
            .expect("the proxy starts its confined server");
        let read = call(
            &registry,
            &runner,
            "read_text_file",
            json!({ "path": root.0.join("hello.txt") }),
        )
        .await;
        assert_eq!(read.result.text(), "inside the root", "{read:?}");
        let read = call(
            &registry,
            &runner,
            "read_text_file",
            json!({ "path": beside.0.join("secret.txt") }),
        )
        .await;
        assert!(read.result.is_error, "{}", read.result.text());
        assert!(!read.result.text().contains("OUTSIDE SECRET"));
        drop(source);
    });
    let _ = std::fs::remove_file(&policy);
}
