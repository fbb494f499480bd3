//! OpenAI's `apply_patch` tool, run by rho: a file created, updated by a
//! V4A diff, or deleted, beneath the workspace.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rho_tool_core::{Concurrency, Tool, ToolAnnotations, ToolContext, ToolOutput, async_trait};
use serde_json::{Value, json};

use super::beneath::{Beneath, Kind};

/// The name OpenAI's apply_patch tool has.
pub const APPLY_PATCH: &str = "apply_patch";

/// The largest file a patch is applied to.
const MAX_FILE_BYTES: u64 = 16 << 20;

/// OpenAI's `apply_patch` tool (named [`APPLY_PATCH`]), run on the files
/// beneath a workspace: each call is one operation, `create_file` (the
/// diff's `+` lines are the file), `update_file` (a V4A diff: hunks of
/// context, `-` and `+` lines, found after `@@` anchor lines) or
/// `delete_file`. A new file's folders are made where missing.
///
/// Every path is opened beneath the workspace by the kernel, as for the
/// [`TextEditor`](super::TextEditor). A hunk whose lines are not in the
/// file, an anchor that is not, a file that exists (to create) or does not
/// (to update or delete), a binary file, a path outside: each is an error
/// the model reads, and the file is left as it was (a patch is applied
/// whole or not at all).
///
/// ```
/// use rho::model::client::ApplyPatch;
///
/// let patch = ApplyPatch::new(std::env::temp_dir()).unwrap();
/// # let _ = patch;
/// ```
#[derive(Debug, Clone)]
pub struct ApplyPatch {
    name: String,
    workspace: Arc<Beneath>,
}

impl ApplyPatch {
    /// The tool over the files beneath `workspace` (a folder).
    pub fn new(workspace: impl AsRef<Path>) -> std::io::Result<Self> {
        let workspace = std::fs::canonicalize(workspace.as_ref())?;
        Ok(Self {
            name: APPLY_PATCH.to_owned(),
            workspace: Arc::new(Beneath::open(&workspace)?),
        })
    }

    /// Another name for the tool.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    fn apply(&self, arguments: &Value) -> Result<String, String> {
        let text = |key: &str| arguments.get(key).and_then(Value::as_str);
        let path = text("path").ok_or("an operation needs a `path`")?;
        let relative = self.workspace.relative(path).ok_or_else(|| {
            format!(
                "`{path}` is outside the workspace ({}); patches apply only inside it",
                self.workspace.path().display()
            )
        })?;
        let shown = relative.display().to_string();
        match text("type") {
            Some("create_file") => {
                if self.workspace.kind(&relative)? != Kind::Missing {
                    return Err(format!("`{shown}` exists already; update it instead"));
                }
                let body = created(text("diff").unwrap_or_default())?;
                self.workspace.make_folders(&relative)?;
                self.workspace.write(&relative, body.as_bytes())?;
                Ok(format!("created `{shown}`"))
            }
            Some("update_file") => {
                let content = self.text_of(&relative)?;
                let diff = text("diff").ok_or("`update_file` needs a `diff`")?;
                let updated = update(&content, diff).map_err(|why| format!("`{shown}`: {why}"))?;
                self.workspace.write(&relative, updated.as_bytes())?;
                Ok(format!("updated `{shown}`"))
            }
            Some("delete_file") => {
                if self.workspace.kind(&relative)? == Kind::Missing {
                    return Err(format!("`{shown}` does not exist"));
                }
                self.workspace.remove(&relative)?;
                Ok(format!("deleted `{shown}`"))
            }
            Some(other) => Err(format!(
                "unknown operation `{other}`; the operations are create_file, update_file and delete_file"
            )),
            None => {
                Err("an operation needs a `type`: create_file, update_file or delete_file".into())
            }
        }
    }

    fn text_of(&self, relative: &Path) -> Result<String, String> {
        let shown = relative.display();
        match self.workspace.kind(relative)? {
            Kind::File(_) => {}
            Kind::Missing => return Err(format!("`{shown}` does not exist; create it instead")),
            Kind::Folder | Kind::Other => return Err(format!("`{shown}` is not a file")),
        }
        let bytes = self.workspace.read(relative, MAX_FILE_BYTES)?;
        if bytes.contains(&0) {
            return Err(format!(
                "`{shown}` is a binary file; patches apply to text only"
            ));
        }
        String::from_utf8(bytes)
            .map_err(|_| format!("`{shown}` is not UTF-8 text; patches apply to text only"))
    }
}

#[async_trait]
impl Tool for ApplyPatch {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        "Creates, updates (by a V4A diff) or deletes a file in the workspace."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "type": { "enum": ["create_file", "update_file", "delete_file"] },
                "path": { "type": "string" },
                "diff": { "type": "string" },
            },
            "required": ["type", "path"],
        })
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(30)
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::new()
            .title("Apply a patch")
            .destructive(true)
    }

    /// Exclusive: a patch changes what later calls read.
    fn concurrency(&self) -> Concurrency {
        Concurrency::Exclusive
    }

    async fn run(&self, arguments: Value, _context: ToolContext) -> ToolOutput {
        match self.apply(&arguments) {
            Ok(text) => ToolOutput::text(text),
            Err(text) => ToolOutput::error(text),
        }
    }
}

/// A new file's text from a `create_file` diff: each line `+` and the
/// line.
fn created(diff: &str) -> Result<String, String> {
    let mut text = String::new();
    for (number, line) in diff.lines().enumerate() {
        if line == "*** End of File" {
            continue;
        }
        let Some(line) = line.strip_prefix('+') else {
            return Err(format!(
                "line {} of the diff does not start with `+`; a new file's diff is its lines, each after a `+`",
                number + 1
            ));
        };
        text.push_str(line);
        text.push('\n');
    }
    Ok(text)
}

/// One hunk of a V4A diff.
#[derive(Debug, Default)]
struct Hunk {
    /// `@@` lines: each found, in order, before the hunk's lines.
    anchors: Vec<String>,
    /// The lines as they are (context and `-`), and as they become
    /// (context and `+`).
    old: Vec<String>,
    new: Vec<String>,
    /// `*** End of File`: the hunk is at the file's end.
    at_end: bool,
}

/// The hunks of an `update_file` diff.
fn hunks(diff: &str) -> Result<Vec<Hunk>, String> {
    let mut hunks: Vec<Hunk> = Vec::new();
    let mut current = Hunk::default();
    let mut has_lines = false;
    for (number, line) in diff.lines().enumerate() {
        if let Some(anchor) = line.strip_prefix("@@") {
            if has_lines {
                hunks.push(std::mem::take(&mut current));
                has_lines = false;
            }
            let anchor = anchor.trim();
            if !anchor.is_empty() {
                current.anchors.push(anchor.to_owned());
            }
            continue;
        }
        if line == "*** End of File" {
            current.at_end = true;
            continue;
        }
        has_lines = true;
        match line.chars().next() {
            Some('+') => current.new.push(line[1..].to_owned()),
            Some('-') => current.old.push(line[1..].to_owned()),
            Some(' ') => {
                current.old.push(line[1..].to_owned());
                current.new.push(line[1..].to_owned());
            }
            // An empty line is an empty line of context (editors strip
            // the space).
            None => {
                current.old.push(String::new());
                current.new.push(String::new());
            }
            Some(_) => {
                return Err(format!(
                    "line {} of the diff starts with neither ` `, `-`, `+` nor `@@`: {line:?}",
                    number + 1
                ));
            }
        }
    }
    if has_lines || !current.anchors.is_empty() {
        hunks.push(current);
    }
    if hunks.is_empty() {
        return Err("the diff has no hunks".into());
    }
    Ok(hunks)
}

/// How strictly two lines are compared: as they are, then without
/// trailing space, then without any space around (what models get wrong
/// most).
const MATCHES: [fn(&str, &str) -> bool; 3] = [
    |a, b| a == b,
    |a, b| a.trim_end() == b.trim_end(),
    |a, b| a.trim() == b.trim(),
];

/// `content` with the V4A `diff` applied, or why it cannot be.
fn update(content: &str, diff: &str) -> Result<String, String> {
    let ends_with_newline = content.ends_with('\n') || content.is_empty();
    let mut lines: Vec<String> = content.lines().map(str::to_owned).collect();
    let mut cursor = 0;
    for (index, hunk) in hunks(diff)?.into_iter().enumerate() {
        for anchor in &hunk.anchors {
            let found = MATCHES
                .iter()
                .find_map(|same| (cursor..lines.len()).find(|&at| same(&lines[at], anchor)));
            let Some(at) = found else {
                return Err(format!(
                    "hunk {}: its anchor `@@ {anchor}` is not in the file after line {cursor}",
                    index + 1
                ));
            };
            cursor = at + 1;
        }
        let at = if hunk.old.is_empty() {
            if hunk.at_end { lines.len() } else { cursor }
        } else {
            find(&lines, &hunk.old, cursor, hunk.at_end).ok_or_else(|| {
                format!(
                    "hunk {}: its lines are not in the file after line {cursor} (it starts {:?}); \
                     read the file again and copy the lines exactly",
                    index + 1,
                    hunk.old[0]
                )
            })?
        };
        let count = hunk.new.len();
        lines.splice(at..at + hunk.old.len(), hunk.new);
        cursor = at + count;
    }
    let mut text = lines.join("\n");
    if ends_with_newline && !lines.is_empty() {
        text.push('\n');
    }
    Ok(text)
}

/// Where `old` is in `lines`, at or after `from` (at the end first, for a
/// hunk marked so), trying each way of comparing in turn.
fn find(lines: &[String], old: &[String], from: usize, at_end: bool) -> Option<usize> {
    if old.len() > lines.len() {
        return None;
    }
    let last = lines.len() - old.len();
    let fits = |at: usize, same: fn(&str, &str) -> bool| {
        old.iter()
            .zip(&lines[at..at + old.len()])
            .all(|(old, line)| same(line, old))
    };
    MATCHES.iter().find_map(|&same| {
        if at_end && last >= from && fits(last, same) {
            return Some(last);
        }
        (from..=last).find(|&at| fits(at, same))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunks_apply_after_their_anchors_in_order() {
        let file =
            "class A:\n    def f(self):\n        pass\nclass B:\n    def f(self):\n        pass\n";
        let diff = "@@ class B:\n@@     def f(self):\n-        pass\n+        return 1\n";
        assert_eq!(
            update(file, diff).expect("applies"),
            "class A:\n    def f(self):\n        pass\nclass B:\n    def f(self):\n        return 1\n"
        );
    }

    #[test]
    fn context_that_is_not_there_is_an_error_naming_the_hunk() {
        let error = update("a\nb\n", " a\n-c\n+d\n").expect_err("no c");
        assert!(
            error.starts_with("hunk 1: its lines are not in the file"),
            "{error}"
        );
        let error = update("a\n", "@@ nowhere\n-a\n").expect_err("no anchor");
        assert!(error.contains("anchor `@@ nowhere`"), "{error}");
        assert!(update("a\n", "?a\n").is_err());
    }

    #[test]
    fn whitespace_slips_are_forgiven_in_order_of_strictness() {
        assert_eq!(
            update("  x = 1  \n", "-x = 1\n+x = 2\n").expect("applies"),
            "x = 2\n"
        );
        assert_eq!(update("a\nb", "-b\n+c\n").expect("applies"), "a\nc");
        assert_eq!(
            update("a\n", "*** End of File\n+z\n").expect("applies"),
            "a\nz\n"
        );
    }

    #[test]
    fn a_new_files_diff_is_its_lines_after_plus() {
        assert_eq!(created("+one\n+two").expect("a file"), "one\ntwo\n");
        assert!(created("+one\ntwo").is_err());
    }
}
