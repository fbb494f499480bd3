//! An allowance by command prefix is judged by bash itself: whatever
//! command the model sends, when rho reads a command's first words (and so
//! lets a prefix cover it), bash runs exactly one command and passes it
//! exactly those words first.
//!
//! The commands are words in every quoting style bash has for them, with
//! hostile text (operators, substitutions, expansions, comments, quotes
//! left open) glued in or between. bash runs each with an empty `PATH` and
//! a `command_not_found_handle` that prints the argv it was given, so no
//! program runs, in a fresh directory that takes what a redirection
//! writes. The test needs `bash` on `PATH`, and fails saying so without it.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use rho_tool_core::{Allowance, ApprovalRequest};
use serde_json::json;

/// How a word is written in the command.
#[derive(Debug, Clone, Copy)]
enum Style {
    Plain,
    Single,
    Double,
    Backslash,
}

/// Characters of a word's text: plain ones and every one bash reads
/// specially somewhere (no newline: after a backslash it joins lines).
const WORD_CHARS: &[char] = &[
    'x', 'z', 'q', '1', '-', ' ', '\t', ';', '&', '|', '<', '>', '(', ')', '$', '`', '\'', '"',
    '\\', '*', '?', '[', ']', '{', '}', '~', '#', '=', '!', ',',
];

/// Characters of hostile text between or inside words. The only letters
/// are `x`, `z` and `q`, which name no bash builtin or keyword, so
/// whatever bash makes of the text runs no program and no builtin that
/// waits or writes outside the fresh directory.
const JUNK_CHARS: &[char] = &[
    'x', 'z', 'q', ' ', '\t', '\n', ';', '&', '|', '<', '>', '(', ')', '$', '`', '\'', '"', '\\',
    '*', '?', '[', ']', '{', '}', '~', '#', '=', '!', ',',
];

fn written(text: &str, style: Style) -> String {
    let plain = !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    match style {
        Style::Plain if plain => text.to_owned(),
        Style::Plain | Style::Single => format!("'{}'", text.replace('\'', r"'\''")),
        Style::Double => {
            let mut out = String::from("\"");
            for c in text.chars() {
                if matches!(c, '"' | '\\' | '$' | '`') {
                    out.push('\\');
                }
                out.push(c);
            }
            out.push('"');
            out
        }
        Style::Backslash if text.is_empty() => "''".to_owned(),
        Style::Backslash => text
            .chars()
            .flat_map(|c| {
                let escape = !(c.is_ascii_alphanumeric() || c == '-');
                escape.then_some('\\').into_iter().chain([c])
            })
            .collect(),
    }
}

fn text_of(chars: &'static [char], most: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(chars), 0..=most)
        .prop_map(|chars| chars.into_iter().collect())
}

fn style() -> impl Strategy<Value = Style> {
    prop_oneof![
        Just(Style::Plain),
        Just(Style::Single),
        Just(Style::Double),
        Just(Style::Backslash),
    ]
}

/// A command: its words (the first always starts `zq`, a name nothing
/// has), how each is written, and hostile text at one place or none.
#[derive(Debug, Clone)]
struct Case {
    words: Vec<String>,
    styles: Vec<Style>,
    junk: Option<(usize, bool, String)>,
}

impl Case {
    fn command(&self) -> String {
        let mut out = String::new();
        for (i, (word, style)) in self.words.iter().zip(&self.styles).enumerate() {
            if let Some((at, glued, junk)) = &self.junk {
                if *at == i {
                    out.push_str(junk);
                    if !glued {
                        out.push(' ');
                    }
                }
            }
            out.push_str(&written(word, *style));
            out.push(' ');
        }
        if let Some((at, _, junk)) = &self.junk {
            if *at >= self.words.len() {
                out.push_str(junk);
            }
        }
        out
    }
}

fn case() -> impl Strategy<Value = Case> {
    (1usize..=4)
        .prop_flat_map(|n| {
            (
                text_of(WORD_CHARS, 6).prop_map(|rest| format!("zq{rest}")),
                prop::collection::vec(text_of(WORD_CHARS, 6), n - 1),
                prop::collection::vec(style(), n),
                prop::option::of((0..=n, any::<bool>(), text_of(JUNK_CHARS, 8))),
            )
        })
        .prop_map(|(first, rest, styles, junk)| Case {
            words: std::iter::once(first).chain(rest).collect(),
            styles,
            junk,
        })
}

/// Each command bash ran, as the argv it was given.
fn bash_runs(command: &str) -> Vec<Vec<String>> {
    let dir = std::env::temp_dir().join(format!(
        "rho-command-prefix-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let empty_path = dir.join("path");
    std::fs::create_dir_all(&empty_path).expect("a scratch directory");
    let script = format!(
        "command_not_found_handle() {{ printf '\\001'; printf '%s\\000' \"$@\"; }}\n{command}"
    );
    let mut child = Command::new(bash())
        .args(["--norc", "--noprofile", "-c", &script])
        .env_clear()
        .env("PATH", &empty_path)
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("bash starts");
    let mut out = Vec::new();
    let mut stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let _ = stdout.read_to_end(&mut out);
        out
    });
    let started = Instant::now();
    while child.try_wait().expect("wait for bash").is_none() {
        if started.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            panic!("bash did not end within 10 s on {command:?}");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let out = reader.join().expect("the reader");
    let _ = std::fs::remove_dir_all(&dir);
    out.split(|b| *b == 1)
        .skip(1)
        .map(|run| {
            run.split(|b| *b == 0)
                .map(|arg| String::from_utf8_lossy(arg).into_owned())
                .collect::<Vec<_>>()
        })
        .map(|mut argv| {
            argv.pop(); // after the last NUL
            argv
        })
        .collect()
}

/// Where bash is: the child's own `PATH` is empty, so it is found here.
fn bash() -> std::path::PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("bash"))
        .find(|bash| bash.is_file())
        .expect("this test needs bash on PATH, as its judge (apt-get install bash)")
}

fn request(command: &str) -> ApprovalRequest {
    ApprovalRequest::new("call", "sh", json!({ "command": command }))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Words rho reads from a command are the words bash runs it with,
    /// and a prefix covers a command only when bash runs exactly one
    /// command that starts with that prefix. Without hostile text, every
    /// command of quoted words is read, whatever the words hold.
    #[test]
    fn a_prefix_covers_a_command_only_when_bash_runs_one_command_starting_with_it(case in case(), cut in 1usize..=4, altered in any::<bool>()) {
        let command = case.command();
        let runs = bash_runs(&command);

        // Every prefix rho reads is what bash passes, and bash ran one
        // command.
        for n in 1..=case.words.len() + 2 {
            if let Some(read) = Allowance::prefix_of(&request(&command), "command", n) {
                let rho_tool_core::AllowanceScope::CommandPrefix { words, .. } = read.scope() else {
                    panic!("a prefix is a command prefix");
                };
                prop_assert_eq!(runs.len(), 1, "{:?} read as {:?}, bash ran {:?}", command, words, runs);
                prop_assert!(runs[0].len() >= n, "{:?}: bash ran {:?}", command, runs);
                prop_assert_eq!(&runs[0][..n], &words[..], "{:?}", command);
            }
        }

        // A prefix from the words (or one altered by a character) covers
        // the command only when bash agrees.
        let mut prefix: Vec<String> = case.words.iter().take(cut).cloned().collect();
        if altered {
            prefix.last_mut().expect("one word at least").push('x');
        }
        let allowance = Allowance::command_prefix("sh", "command", prefix.clone());
        if allowance.covers("sh", &json!({ "command": command })) {
            prop_assert_eq!(runs.len(), 1, "{:?} covered by {:?}, bash ran {:?}", command, prefix, runs);
            prop_assert!(runs[0].starts_with(&prefix), "{:?} covered by {:?}, bash ran {:?}", command, prefix, runs);
        }

        // Quoted words alone are always read, and bash agrees on them.
        if case.junk.is_none() {
            prop_assert_eq!(&runs, &vec![case.words.clone()], "{:?}", command);
            let read = Allowance::prefix_of(&request(&command), "command", case.words.len());
            prop_assert_eq!(read, Some(Allowance::command_prefix("sh", "command", case.words.clone())));
        }
    }
}

/// The property's judge is real: a command rho refuses to read does run
/// more than one command in bash, so "covered only when bash runs one" is
/// not true of every command by accident.
#[test]
fn the_judge_sees_a_second_command() {
    let runs = bash_runs("zqa b; zqc d");
    assert_eq!(runs, [vec!["zqa", "b"], vec!["zqc", "d"]]);
    assert_eq!(
        Allowance::prefix_of(&request("zqa b; zqc d"), "command", 1),
        None
    );
}
