//! Bounded writes (`Limits::written`, `Limits::files`): a call's writes
//! to its workspace are held by the kernel to a bound, what it wrote
//! within the bound reaches the host's files when it ends, and nothing
//! reaches them when it is killed. Each scenario runs the confined shell
//! through rho's `Runner` on tokio and on smol
//! (`bounded::<scenario>::on_tokio`, `::on_smol`); as root,
//! `the_scenarios_pass_as_an_unprivileged_user` runs them again as
//! `nobody`.

#![cfg(target_os = "linux")]

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rho_process::ShellTool;
use rho_process::confine::{Confinement, Limits};
use rho_tool_core::{CallEnd, Executor, Outcome, Runner, Tool, ToolCall};
use support::{Scratch, launcher};

/// The default confinement with writes bounded to `written` bytes and
/// `files` files.
fn bounded(written: Option<u64>, files: Option<u64>) -> Confinement {
    Confinement::new().with_limits(Limits {
        written,
        files,
        ..Limits::default()
    })
}

async fn run_shell<E: Executor>(
    runner: &Runner<E>,
    workspace: &Path,
    confinement: Confinement,
    timeout: Duration,
    command: &str,
) -> CallEnd {
    let tool = ShellTool::new(workspace)
        .with_confinement(confinement)
        .with_launcher(launcher())
        .with_timeout(timeout);
    let call = ToolCall::new("1", tool.name(), serde_json::json!({ "command": command }));
    runner.start(call, Arc::new(tool)).await
}

/// A tree as text: each path under `root` (sorted), its kind, mode and,
/// for a file, its content, for a link, its target.
fn tree(root: &Path) -> BTreeMap<String, String> {
    use std::os::unix::fs::PermissionsExt;
    let mut found = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("a directory") {
            let path = entry.expect("an entry").path();
            let name = path
                .strip_prefix(root)
                .expect("under the root")
                .display()
                .to_string();
            let meta = std::fs::symlink_metadata(&path).expect("metadata");
            let mode = meta.permissions().mode() & 0o7777;
            let what = if meta.file_type().is_symlink() {
                format!(
                    "link -> {}",
                    std::fs::read_link(&path).expect("a target").display()
                )
            } else if meta.is_dir() {
                stack.push(path.clone());
                format!("dir {mode:o}")
            } else {
                let content = std::fs::read(&path).expect("a file");
                format!("file {mode:o} {}", String::from_utf8_lossy(&content))
            };
            found.insert(name, what);
        }
    }
    found
}

/// A workspace with a few files and folders, as a project has.
fn project(dir: &Path) {
    std::fs::create_dir_all(dir.join("src/old")).expect("dirs");
    std::fs::create_dir_all(dir.join("docs/drafts")).expect("dirs");
    std::fs::write(dir.join("README"), "read me\n").expect("a file");
    std::fs::write(dir.join("src/lib.rs"), "fn a() {}\n").expect("a file");
    std::fs::write(dir.join("src/old/gone.rs"), "old\n").expect("a file");
    std::fs::write(dir.join("docs/drafts/one"), "one\n").expect("a file");
    std::fs::write(dir.join("docs/notes"), "notes\n").expect("a file");
}

mod bounded {
    use super::*;

    crate::on_both_executors!(
        every_kind_of_change_lands_as_it_would_unbounded,
        writes_past_the_byte_bound_fail_and_what_came_before_is_kept,
        files_past_the_file_bound_fail,
        a_call_killed_at_its_deadline_leaves_the_hosts_files_as_they_were,
        inits_descriptors_are_out_of_the_commands_reach,
    );

    /// The same command, run on two copies of a project, one with its
    /// writes bounded (well above what it writes) and one without,
    /// leaves the same tree: new, changed, removed and renamed files and
    /// folders, a folder replaced by a file and one emptied and refilled,
    /// links and modes.
    pub(super) async fn every_kind_of_change_lands_as_it_would_unbounded<E: Executor>(
        runner: Runner<E>,
    ) {
        let command = "\
            echo new > new.txt && echo more >> README && rm src/old/gone.rs && rmdir src/old \
            && mkdir -p build/out && echo bin > build/out/app && chmod 750 build/out/app \
            && rm -rf docs/drafts && mkdir docs/drafts && echo two > docs/drafts/two \
            && mv src/lib.rs src/main.rs && mv docs notes-dir && ln -s notes-dir/notes NOTES \
            && rm notes-dir/notes && echo replaced > notes-dir/notes && mkdir empty \
            && echo done";
        let plain = Scratch::new("unbounded");
        let held = Scratch::new("bounded");
        project(plain.path());
        project(held.path());
        let never = support::NEVER;
        let unbounded = run_shell(&runner, plain.path(), Confinement::new(), never, command).await;
        assert_eq!(unbounded.result.text(), "done\n", "{unbounded:?}");
        let end = run_shell(
            &runner,
            held.path(),
            bounded(Some(64 << 20), Some(1000)),
            never,
            command,
        )
        .await;
        assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
        assert_eq!(end.result.text(), "done\n");
        assert_eq!(tree(held.path()), tree(plain.path()));
        assert!(tree(held.path()).contains_key("notes-dir/drafts/two"));
    }

    /// Past the byte bound, a write fails with "No space left on device";
    /// the command goes on, the result names the bound, and what it wrote
    /// within the bound reaches the host.
    pub(super) async fn writes_past_the_byte_bound_fail_and_what_came_before_is_kept<
        E: Executor,
    >(
        runner: Runner<E>,
    ) {
        let workspace = Scratch::new("bytes");
        let command = "echo first > first; head -c 3000000 /dev/zero > big; echo \"big: $?\"";
        let end = run_shell(
            &runner,
            workspace.path(),
            bounded(Some(1 << 20), None),
            support::NEVER,
            command,
        )
        .await;
        let text = end.result.text();
        assert!(text.starts_with("big: 1\n"), "{text}");
        assert!(text.contains("No space left on device"), "{text}");
        assert!(
            text.contains(
                "rho-confine: writes: the command reached the bound on what a call may write (1048576 bytes)"
            ),
            "{text}"
        );
        let big = std::fs::metadata(workspace.path().join("big"))
            .expect("big")
            .len();
        assert!(big <= 1 << 20, "{big} bytes got past the bound");
        assert_eq!(
            std::fs::read_to_string(workspace.path().join("first")).expect("first"),
            "first\n"
        );
    }

    /// Past the file bound, creating a file fails; the host gets at most
    /// the bound's count. The scratch `/tmp` has the same bound.
    pub(super) async fn files_past_the_file_bound_fail<E: Executor>(runner: Runner<E>) {
        let workspace = Scratch::new("files");
        let command = "made=0; for i in $(seq 1 200); do : > f$i 2>/dev/null || break; made=$i; done; \
            tmp=0; for i in $(seq 1 200); do : > /tmp/t$i 2>/dev/null || break; tmp=$i; done; \
            echo \"made $made, tmp $tmp\"";
        let end = run_shell(
            &runner,
            workspace.path(),
            bounded(None, Some(50)),
            support::NEVER,
            command,
        )
        .await;
        let text = end.result.text();
        let counts: Vec<usize> = text
            .lines()
            .next()
            .unwrap_or_default()
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|n| n.parse().ok())
            .collect();
        let [made, tmp] = counts[..] else {
            panic!("{text}")
        };
        assert!((40..=50).contains(&made), "{text}");
        assert!((40..=50).contains(&tmp), "{text}");
        let kept = std::fs::read_dir(workspace.path())
            .expect("a workspace")
            .count();
        assert_eq!(kept, made, "each file made reached the host, no more");
        assert!(text.contains("(50 files)"), "{text}");
    }

    /// A call killed at its deadline leaves the host's files as they were:
    /// what it wrote is dropped with it.
    pub(super) async fn a_call_killed_at_its_deadline_leaves_the_hosts_files_as_they_were<
        E: Executor,
    >(
        runner: Runner<E>,
    ) {
        let workspace = Scratch::new("killed");
        project(workspace.path());
        let before = tree(workspace.path());
        let end = run_shell(
            &runner,
            workspace.path(),
            bounded(Some(1 << 20), Some(100)),
            Duration::from_millis(1500),
            "echo x > new; echo y >> README; rm docs/notes; sleep 30",
        )
        .await;
        assert_eq!(end.outcome, Outcome::TimedOut, "{end:?}");
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(tree(workspace.path()), before);
    }

    /// Init holds the host's directories and the report pipe; the command
    /// cannot open them through `/proc/1/fd`, nor read init's environment
    /// (init is not dumpable).
    pub(super) async fn inits_descriptors_are_out_of_the_commands_reach<E: Executor>(
        runner: Runner<E>,
    ) {
        let workspace = Scratch::new("proc");
        let end = run_shell(
            &runner,
            workspace.path(),
            bounded(Some(1 << 20), None),
            support::NEVER,
            "for f in /proc/1/fd/*; do (exec 9<\"$f\") 2>/dev/null && echo \"opened $f\"; (exec 9>\"$f\") 2>/dev/null && echo \"opened $f to write\"; done; \
             cat /proc/1/environ >/dev/null 2>&1 && echo 'read its environment'; echo checked",
        )
        .await;
        assert_eq!(end.result.text(), "checked\n", "{end:?}");
    }
}

/// When the tests run as root, the scenarios again as `nobody`.
#[test]
fn the_scenarios_pass_as_an_unprivileged_user() {
    support::rerun_as_nobody("bounded::", env!("CARGO_BIN_EXE_rho-confine"));
}
