//! Tool-name patterns: an exact name, or a glob with `*` (any run of
//! characters, none included) and `?` (any one character).

use std::fmt;

/// A pattern a policy rule matches tool names with.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Glob {
    pattern: String,
}

impl Glob {
    pub(crate) fn new(pattern: impl Into<String>) -> Self {
        Self {
            pattern: pattern.into(),
        }
    }

    /// Whether `name` matches the whole pattern.
    pub(crate) fn matches(&self, name: &str) -> bool {
        let pattern: Vec<char> = self.pattern.chars().collect();
        let name: Vec<char> = name.chars().collect();
        // The classic two-pointer walk: on a mismatch, let the last `*`
        // swallow one more character. Linear in practice, never
        // exponential, whatever the pattern.
        let (mut p, mut n) = (0, 0);
        let mut star: Option<(usize, usize)> = None;
        while n < name.len() {
            match pattern.get(p) {
                Some('*') => {
                    star = Some((p, n));
                    p += 1;
                }
                Some(&c) if c == '?' || c == name[n] => {
                    p += 1;
                    n += 1;
                }
                _ => match star {
                    Some((star_p, star_n)) => {
                        p = star_p + 1;
                        n = star_n + 1;
                        star = Some((star_p, star_n + 1));
                    }
                    None => return false,
                },
            }
        }
        pattern[p..].iter().all(|&c| c == '*')
    }
}

impl fmt::Display for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.pattern)
    }
}

impl fmt::Debug for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::Glob;

    #[test]
    fn exact_names_and_globs() {
        let cases = [
            ("echo", "echo", true),
            ("echo", "echo2", false),
            ("read_*", "read_file", true),
            ("read_*", "read_", true),
            ("read_*", "write_file", false),
            ("*_file", "move_file", true),
            ("*", "", true),
            ("get-?", "get-a", true),
            ("get-?", "get-ab", false),
            ("a*b*c", "aXXbYYc", true),
            ("a*b*c", "aXXbYY", false),
            ("**", "anything", true),
            ("é*", "élan", true),
        ];
        for (pattern, name, expected) in cases {
            assert_eq!(
                Glob::new(pattern).matches(name),
                expected,
                "{pattern} ~ {name}"
            );
        }
    }

    #[test]
    fn many_stars_stay_fast() {
        let pattern = Glob::new("*a*a*a*a*a*a*a*a*a*a*b");
        let name = "a".repeat(10_000);
        assert!(!pattern.matches(&name));
    }
}
