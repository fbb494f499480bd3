//! The text editor (Anthropic's, run by rho): each command, each refusal
//! the model reads, and the kernel's hold on the workspace.
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rho::model::client::{TEXT_EDITOR, TextEditor};
use rho::tokio::{TokioExecutor, TurnRunner};
use rho::{Outcome, SessionEntry, Source, ToolCall, ToolRegistry};
use serde_json::{Value, json};

/// A fresh workspace folder of the test's own.
fn workspace(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("text-editor")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a workspace");
    dir
}

/// Runs `commands` (each the arguments of one call) as one turn of the
/// editor over `dir`, in order.
fn run(dir: &Path, commands: &[Value]) -> Vec<SessionEntry> {
    let registry = ToolRegistry::new();
    registry
        .add_source(Source::trusted("client"))
        .expect("a source")
        .add(Arc::new(TextEditor::new(dir).expect("an editor")))
        .expect("the editor");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let turns = TurnRunner::new(TokioExecutor::current().expect("tokio"), registry);
        let calls = commands
            .iter()
            .enumerate()
            .map(|(n, arguments)| ToolCall::new(format!("c{n}"), TEXT_EDITOR, arguments.clone()));
        turns.turn(calls).await
    })
}

fn ok(entry: &SessionEntry) -> String {
    assert_eq!(entry.outcome, Outcome::Succeeded, "{}", entry.text());
    entry.text()
}

fn refused(entry: &SessionEntry) -> String {
    assert!(entry.is_error(), "succeeded: {}", entry.text());
    entry.text()
}

#[test]
fn view_create_replace_and_insert_edit_the_file_as_asked() {
    let dir = workspace("edits");
    std::fs::create_dir_all(dir.join("src/deep/deeper")).expect("folders");
    std::fs::write(dir.join("src/deep/deeper/hidden.rs"), "").expect("a file");
    std::fs::write(dir.join(".secret"), "").expect("a file");
    let path = dir.join("src/lib.rs");
    let absolute = path.to_str().expect("utf-8").to_owned();
    let entries = run(
        &dir,
        &[
            json!({ "command": "create", "path": "src/lib.rs", "file_text": "fn a() {}\nfn b() {}\n" }),
            json!({ "command": "view", "path": absolute }),
            json!({ "command": "str_replace", "path": "src/lib.rs", "old_str": "fn b() {}", "new_str": "fn b() { a() }" }),
            json!({ "command": "insert", "path": "src/lib.rs", "insert_line": 0, "insert_text": "// top" }),
            json!({ "command": "insert", "path": "src/lib.rs", "insert_line": 3, "insert_text": "fn c() {}\n" }),
            json!({ "command": "view", "path": "src/lib.rs", "view_range": [2, -1] }),
            json!({ "command": "view", "path": "." }),
        ],
    );
    assert!(ok(&entries[0]).contains("created `src/lib.rs` (2 lines)"));
    assert_eq!(ok(&entries[1]), "     1\tfn a() {}\n     2\tfn b() {}\n");
    assert!(
        ok(&entries[2]).contains("     2\tfn b() { a() }"),
        "{}",
        entries[2].text()
    );
    ok(&entries[3]);
    ok(&entries[4]);
    assert_eq!(
        std::fs::read_to_string(&path).expect("the file"),
        "// top\nfn a() {}\nfn b() { a() }\nfn c() {}\n"
    );
    assert_eq!(
        ok(&entries[5]),
        "     2\tfn a() {}\n     3\tfn b() { a() }\n     4\tfn c() {}\n"
    );
    let listing = ok(&entries[6]);
    assert!(
        listing.contains("src/\n") && listing.contains("src/deep/\n"),
        "{listing}"
    );
    assert!(listing.contains("src/lib.rs\n"), "{listing}");
    // Two levels down, hidden names left out.
    assert!(
        !listing.contains("deeper") && !listing.contains(".secret"),
        "{listing}"
    );
}

#[test]
fn no_match_and_several_matches_say_what_to_do() {
    let dir = workspace("matches");
    std::fs::write(dir.join("a.txt"), "x = 1\ny = 2\nx = 1\n").expect("a file");
    let entries = run(
        &dir,
        &[
            json!({ "command": "str_replace", "path": "a.txt", "old_str": "z = 3", "new_str": "" }),
            json!({ "command": "str_replace", "path": "a.txt", "old_str": "x = 1", "new_str": "x = 9" }),
            json!({ "command": "str_replace", "path": "a.txt", "old_str": "", "new_str": "x" }),
            json!({ "command": "insert", "path": "a.txt", "insert_line": 4, "insert_text": "w" }),
            json!({ "command": "view", "path": "a.txt", "view_range": [3, 9] }),
            json!({ "command": "undo_edit", "path": "a.txt" }),
            json!({ "command": "rename", "path": "a.txt" }),
        ],
    );
    assert!(refused(&entries[0]).contains("no match"));
    let several = refused(&entries[1]);
    assert!(
        several.contains("occurs 2 times") && several.contains("lines 1, 3"),
        "{several}"
    );
    assert!(refused(&entries[2]).contains("`old_str` is empty"));
    assert!(refused(&entries[3]).contains("past the end"));
    assert!(refused(&entries[4]).contains("outside the file's 3 lines"));
    // Commands the editor lacks are refused by its schema, which names
    // the ones it has.
    for entry in &entries[5..] {
        let text = refused(entry);
        assert!(
            text.contains("is not one of") && text.contains("str_replace"),
            "{text}"
        );
    }
    // Nothing was changed by any of them.
    assert_eq!(
        std::fs::read_to_string(dir.join("a.txt")).expect("the file"),
        "x = 1\ny = 2\nx = 1\n"
    );
}

#[test]
fn paths_outside_the_workspace_and_links_out_of_it_are_refused() {
    let dir = workspace("outside");
    let outside = workspace("outside-target");
    std::fs::write(outside.join("secret.txt"), "secret").expect("a file");
    std::os::unix::fs::symlink(outside.join("secret.txt"), dir.join("absolute-link"))
        .expect("a link");
    std::os::unix::fs::symlink("../outside-target/secret.txt", dir.join("relative-link"))
        .expect("a link");
    std::os::unix::fs::symlink(&outside, dir.join("folder-link")).expect("a link");
    std::fs::write(dir.join("inside.txt"), "in").expect("a file");
    std::os::unix::fs::symlink("inside.txt", dir.join("inside-link")).expect("a link");
    let secret = outside.join("secret.txt");
    let entries = run(
        &dir,
        &[
            json!({ "command": "view", "path": secret.to_str() }),
            json!({ "command": "view", "path": "../outside-target/secret.txt" }),
            json!({ "command": "view", "path": "absolute-link" }),
            json!({ "command": "view", "path": "relative-link" }),
            json!({ "command": "create", "path": "folder-link/planted.txt", "file_text": "x" }),
            json!({ "command": "str_replace", "path": "absolute-link", "old_str": "secret", "new_str": "gone" }),
            json!({ "command": "view", "path": "/etc/passwd" }),
            json!({ "command": "view", "path": "inside-link" }),
        ],
    );
    for entry in &entries[..7] {
        let text = refused(entry);
        assert!(text.contains("outside the workspace"), "{text}");
    }
    assert!(ok(&entries[7]).contains("in"));
    assert_eq!(
        std::fs::read_to_string(&secret).expect("the secret"),
        "secret"
    );
    assert!(!outside.join("planted.txt").exists());
}

#[test]
fn binary_files_and_stale_views_are_refused() {
    let dir = workspace("binary");
    std::fs::write(dir.join("image.png"), [137, 80, 78, 71, 0, 1]).expect("a file");
    std::fs::write(dir.join("latin1.txt"), [b'c', b'a', b'f', 0xe9]).expect("a file");
    std::fs::write(dir.join("notes.md"), "one\n").expect("a file");
    let entries = run(
        &dir,
        &[
            json!({ "command": "view", "path": "image.png" }),
            json!({ "command": "str_replace", "path": "latin1.txt", "old_str": "caf", "new_str": "tea" }),
            json!({ "command": "view", "path": "notes.md" }),
        ],
    );
    assert!(refused(&entries[0]).contains("binary file"));
    assert!(refused(&entries[1]).contains("not UTF-8"));
    ok(&entries[2]);

    // The same editor, across turns: the file changes behind the model's
    // back after it viewed it.
    let registry = ToolRegistry::new();
    registry
        .add_source(Source::trusted("client"))
        .expect("a source")
        .add(Arc::new(TextEditor::new(&dir).expect("an editor")))
        .expect("the editor");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let turns = runtime
        .block_on(async { TurnRunner::new(TokioExecutor::current().expect("tokio"), registry) });
    let call = |id: &str, arguments: Value| ToolCall::new(id, TEXT_EDITOR, arguments);
    let view =
        runtime.block_on(turns.turn([call("v", json!({ "command": "view", "path": "notes.md" }))]));
    ok(&view[0]);
    std::fs::write(dir.join("notes.md"), "one\ntwo\n").expect("changed by someone else");
    let edit =
        json!({ "command": "str_replace", "path": "notes.md", "old_str": "one", "new_str": "1" });
    let stale = runtime.block_on(turns.turn([call("e", edit.clone())]));
    assert!(refused(&stale[0]).contains("changed since you last viewed it"));
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.md")).expect("the file"),
        "one\ntwo\n"
    );
    let again = runtime.block_on(turns.turn([
        call("v2", json!({ "command": "view", "path": "notes.md" })),
        call("e2", edit),
    ]));
    ok(&again[1]);
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.md")).expect("the file"),
        "1\ntwo\n"
    );
}
