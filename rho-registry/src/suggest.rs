//! Nearest names: what the model most likely meant by a tool that is not
//! there.
//!
//! Names are compared in a folded form (lowercase, without `_`, `-`, `.`
//! and spaces), so `ReadFile`, `read-file` and `read_file` are the same
//! name. A candidate is near when its folded edit distance (insertions,
//! deletions, substitutions and swaps of two neighbours each cost 1) is at
//! most a third of the longer name (at least 1), or when one folded name
//! contains the other (`read` for `read_file`).

/// At most this many names are suggested.
pub(crate) const MAX_SUGGESTIONS: usize = 3;

/// The names among `candidates` nearest to `wanted`, best first (ties by
/// name), at most [`MAX_SUGGESTIONS`].
pub(crate) fn nearest<'a>(
    wanted: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Vec<String> {
    let wanted_folded = fold(wanted);
    let mut near: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter_map(|candidate| {
            let folded = fold(candidate);
            let distance = distance(&wanted_folded, &folded);
            let longer = wanted_folded.len().max(folded.len());
            let close = distance <= (longer / 3).max(1);
            let contains = wanted_folded.len().min(folded.len()) >= 3
                && (contains(&folded, &wanted_folded) || contains(&wanted_folded, &folded));
            (close || contains).then_some((distance, candidate))
        })
        .collect();
    near.sort_unstable();
    near.into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, name)| name.to_owned())
        .collect()
}

/// Lowercase characters, without separators.
fn fold(name: &str) -> Vec<char> {
    name.chars()
        .filter(|c| !matches!(c, '_' | '-' | '.' | ' '))
        .flat_map(char::to_lowercase)
        .collect()
}

/// Whether `needle` occurs in `haystack`.
fn contains(haystack: &[char], needle: &[char]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|part| part == needle)
}

/// Optimal string alignment distance: Levenshtein plus swaps of two
/// neighbouring characters, each costing 1.
fn distance(a: &[char], b: &[char]) -> usize {
    // Three rows of the usual table: two rows back (for swaps), the previous
    // row and the current one.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current: Vec<usize> = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        current[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (previous[j] + 1)
                .min(current[j - 1] + 1)
                .min(previous[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(before[j - 2] + 1);
            }
            current[j] = best;
        }
        std::mem::swap(&mut before, &mut previous);
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(a: &str, b: &str) -> usize {
        distance(&fold(a), &fold(b))
    }

    #[test]
    fn distance_counts_edits_and_swaps() {
        assert_eq!(d("", ""), 0);
        assert_eq!(d("abc", ""), 3);
        assert_eq!(d("", "abc"), 3);
        assert_eq!(d("kitten", "sitting"), 3);
        assert_eq!(d("read_file", "raed_file"), 1);
        assert_eq!(d("ReadFile", "read_file"), 0);
        assert_eq!(d("grep", "grap"), 1);
    }

    #[test]
    fn nearest_names_come_best_first_and_few() {
        let names = [
            "read_file",
            "write_file",
            "list_dir",
            "grep",
            "read_url",
            "reader",
        ];
        assert_eq!(nearest("read_flie", names), ["read_file"]);
        assert_eq!(nearest("grap", names), ["grep"]);
        assert_eq!(nearest("lst-dir", names), ["list_dir"]);
        assert_eq!(nearest("ReadFile", names)[0], "read_file");
        assert_eq!(nearest("read", names).len(), MAX_SUGGESTIONS);
        assert!(nearest("deploy_to_production", names).is_empty());
        assert!(nearest("x", []).is_empty());
    }
}
