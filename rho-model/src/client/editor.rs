//! A text editor the model drives by commands, confined to a workspace:
//! Anthropic's text editor tool (`view`, `create`, `str_replace`,
//! `insert`), run by rho.

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rho_tool_core::{Concurrency, Tool, ToolAnnotations, ToolContext, ToolOutput, async_trait};
use serde_json::{Value, json};

use super::beneath::{Beneath, Kind};

/// The name Anthropic's current text editor tool has.
pub const TEXT_EDITOR: &str = crate::anthropic::TEXT_EDITOR;

/// The largest file the editor opens.
const MAX_FILE_BYTES: u64 = 16 << 20;

/// A text editor confined to a workspace, driven by the commands of
/// Anthropic's text editor tool: `view` a file (its lines numbered, or a
/// range of them) or a folder (two levels of names), `create` a file,
/// `str_replace` one exact occurrence of a text, `insert` text after a
/// line.
///
/// Every path is opened beneath the workspace by the kernel (Linux's
/// `openat2` with `RESOLVE_BENEATH`): no `..` and no symbolic link leads
/// out. What cannot be done is an error the model reads, saying what to do
/// instead: no match, several matches (with their lines), a path outside
/// the workspace, a binary file, and a stale view (the file changed since
/// the model last read it through this editor, so its edit would be made
/// to text it has not seen).
///
/// A rho tool like any other: gated, timed, counted; its calls run alone,
/// in the model's order.
///
/// ```
/// use rho::model::client::TextEditor;
///
/// let workspace = std::env::temp_dir();
/// let editor = TextEditor::new(&workspace).unwrap();
/// # let _ = editor;
/// ```
#[derive(Debug, Clone)]
pub struct TextEditor {
    name: String,
    workspace: Arc<Beneath>,
    /// The most characters a view shows, if bounded.
    max_characters: Option<usize>,
    /// What each file held when the model last saw it (a view, or its own
    /// edit): a hash of its text. Shared by the editor's clones.
    seen: Arc<Mutex<HashMap<PathBuf, u64>>>,
}

impl TextEditor {
    /// An editor of the files beneath `workspace` (a folder), named
    /// [`TEXT_EDITOR`].
    pub fn new(workspace: impl AsRef<Path>) -> std::io::Result<Self> {
        let workspace = std::fs::canonicalize(workspace.as_ref())?;
        Ok(Self {
            name: TEXT_EDITOR.to_owned(),
            workspace: Arc::new(Beneath::open(&workspace)?),
            max_characters: None,
            seen: Arc::default(),
        })
    }

    /// The most characters a `view` shows; more is cut, and the view says
    /// so (Anthropic's `max_characters`).
    #[must_use]
    pub fn with_max_characters(mut self, characters: usize) -> Self {
        self.max_characters = Some(characters);
        self
    }

    /// Another name for the tool.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The most characters a view shows, if bounded.
    pub fn max_characters(&self) -> Option<usize> {
        self.max_characters
    }

    /// The workspace's folder.
    pub fn workspace(&self) -> &Path {
        self.workspace.path()
    }
}

#[async_trait]
impl Tool for TextEditor {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        "Views, creates and edits text files in the workspace. Commands: `view` (a file's lines, numbered, or a folder's names), `create` (a file with `file_text`), `str_replace` (`old_str`, which must occur exactly once, by `new_str`), `insert` (`insert_text` after line `insert_line`, 0 for the top)."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": { "enum": ["view", "create", "str_replace", "insert"] },
                "path": { "type": "string", "description": "The file or folder, absolute or relative to the workspace." },
                "view_range": { "type": "array", "items": { "type": "integer" }, "minItems": 2, "maxItems": 2,
                    "description": "`view` only: the first and last line to show (-1: to the end)." },
                "file_text": { "type": "string" },
                "old_str": { "type": "string" },
                "new_str": { "type": "string" },
                "insert_line": { "type": "integer", "minimum": 0 },
                "insert_text": { "type": "string" },
            },
            "required": ["command", "path"],
        })
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(30)
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::new()
            .title("Text editor")
            .destructive(false)
    }

    /// Exclusive: an edit changes what later calls read.
    fn concurrency(&self) -> Concurrency {
        Concurrency::Exclusive
    }

    async fn run(&self, arguments: Value, _context: ToolContext) -> ToolOutput {
        match self.command(&arguments) {
            Ok(text) => ToolOutput::text(text),
            Err(text) => ToolOutput::error(text),
        }
    }
}

impl TextEditor {
    fn command(&self, arguments: &Value) -> Result<String, String> {
        let text = |key: &str| arguments.get(key).and_then(Value::as_str);
        let path = text("path").ok_or("every command needs a `path`")?;
        let relative = self.workspace.relative(path).ok_or_else(|| {
            format!(
                "`{path}` is outside the workspace ({}); this editor works only inside it",
                self.workspace.path().display()
            )
        })?;
        match text("command") {
            Some("view") => self.view(&relative, arguments.get("view_range")),
            Some("create") => {
                let file_text = text("file_text").ok_or("`create` needs `file_text`")?;
                self.create(&relative, file_text)
            }
            Some("str_replace") => {
                let old = text("old_str").ok_or("`str_replace` needs `old_str`")?;
                self.replace(&relative, old, text("new_str").unwrap_or_default())
            }
            Some("insert") => {
                let line = arguments
                    .get("insert_line")
                    .and_then(Value::as_u64)
                    .ok_or("`insert` needs `insert_line`, a line number (0 for the top)")?;
                // `insert_text` now; `new_str` in the tool's older versions.
                let inserted = text("insert_text")
                    .or_else(|| text("new_str"))
                    .ok_or("`insert` needs `insert_text`")?;
                self.insert(&relative, line, inserted)
            }
            Some("undo_edit") => {
                Err("`undo_edit` is not offered: edit the file again instead".into())
            }
            Some(other) => Err(format!(
                "unknown command `{other}`; the commands are view, create, str_replace and insert"
            )),
            None => Err("a `command` is needed: view, create, str_replace or insert".into()),
        }
    }

    /// The text of the file at `relative`, refused if it is not text.
    fn read_text(&self, relative: &Path) -> Result<String, String> {
        match self.workspace.kind(relative)? {
            Kind::File(_) => {}
            Kind::Missing => return Err(format!("`{}` does not exist", relative.display())),
            Kind::Folder => {
                return Err(format!(
                    "`{}` is a folder; `view` it to see its files",
                    relative.display()
                ));
            }
            Kind::Other => return Err(format!("`{}` is not a regular file", relative.display())),
        }
        let bytes = self.workspace.read(relative, MAX_FILE_BYTES)?;
        if bytes.contains(&0) {
            return Err(format!(
                "`{}` is a binary file; this editor shows and edits text only",
                relative.display()
            ));
        }
        String::from_utf8(bytes).map_err(|_| {
            format!(
                "`{}` is not UTF-8 text (a binary file?); this editor shows and edits text only",
                relative.display()
            )
        })
    }

    fn remember(&self, relative: &Path, text: &str) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.insert(relative.to_path_buf(), digest(text));
        }
    }

    /// The file's text, refused if it changed since the model last saw it.
    fn read_fresh(&self, relative: &Path) -> Result<String, String> {
        let text = self.read_text(relative)?;
        let seen = self
            .seen
            .lock()
            .ok()
            .and_then(|seen| seen.get(relative).copied());
        if seen.is_some_and(|seen| seen != digest(&text)) {
            return Err(format!(
                "`{}` changed since you last viewed it; `view` it again before editing, so the \
                 edit is made to the text it holds now",
                relative.display()
            ));
        }
        Ok(text)
    }

    fn view(&self, relative: &Path, range: Option<&Value>) -> Result<String, String> {
        if self.workspace.kind(relative)? == Kind::Folder {
            let entries = self.workspace.list(relative, 2)?;
            let mut text = format!(
                "Files and folders in `{}`, two levels down, hidden ones left out:\n",
                display(relative)
            );
            for (path, folder) in entries {
                text.push_str(&path.display().to_string());
                if folder {
                    text.push('/');
                }
                text.push('\n');
            }
            return Ok(self.bounded(text));
        }
        let content = self.read_text(relative)?;
        self.remember(relative, &content);
        let lines: Vec<&str> = content.lines().collect();
        let (first, last) = match range {
            None | Some(Value::Null) => (1, lines.len()),
            Some(range) => {
                let bounds = range.as_array().filter(|bounds| bounds.len() == 2);
                let (Some(first), Some(last)) = (
                    bounds.and_then(|b| b[0].as_i64()),
                    bounds.and_then(|b| b[1].as_i64()),
                ) else {
                    return Err(
                        "`view_range` is two line numbers: [first, last] (last -1: to the end)"
                            .into(),
                    );
                };
                let count = lines.len() as i64;
                let last = if last == -1 { count } else { last };
                if first < 1 || first > count.max(1) || last < first || last > count {
                    return Err(format!(
                        "`view_range` [{first}, {last}] is outside the file's {count} lines"
                    ));
                }
                (first as usize, last as usize)
            }
        };
        let mut text = String::new();
        for (number, line) in lines.iter().enumerate().take(last).skip(first - 1) {
            text.push_str(&format!("{:>6}\t{line}\n", number + 1));
        }
        if lines.is_empty() {
            text.push_str("(the file is empty)\n");
        }
        Ok(self.bounded(text))
    }

    /// `text`, cut to the editor's bound on characters.
    fn bounded(&self, text: String) -> String {
        match self.max_characters {
            Some(max) if text.chars().count() > max => {
                let cut: String = text.chars().take(max).collect();
                format!("{cut}\n[cut at {max} characters: view a range of lines]")
            }
            _ => text,
        }
    }

    fn create(&self, relative: &Path, text: &str) -> Result<String, String> {
        match self.workspace.kind(relative)? {
            Kind::Missing => {}
            Kind::File(_) => {
                // Replacing a file is an edit of it: refused if it changed
                // since the model saw it.
                self.read_fresh(relative)?;
            }
            Kind::Folder => return Err(format!("`{}` is a folder", relative.display())),
            Kind::Other => return Err(format!("`{}` is not a regular file", relative.display())),
        }
        self.workspace.make_folders(relative)?;
        self.workspace.write(relative, text.as_bytes())?;
        self.remember(relative, text);
        Ok(format!(
            "created `{}` ({} lines)",
            relative.display(),
            text.lines().count()
        ))
    }

    fn replace(&self, relative: &Path, old: &str, new: &str) -> Result<String, String> {
        if old.is_empty() {
            return Err("`old_str` is empty; give the exact text to replace".into());
        }
        let content = self.read_fresh(relative)?;
        let starts: Vec<usize> = content.match_indices(old).map(|(at, _)| at).collect();
        match starts.as_slice() {
            [] => Err(format!(
                "no match: `old_str` does not occur in `{}`; view the file and copy the text \
                 exactly, whitespace and indentation included",
                relative.display()
            )),
            [at] => {
                let edited = format!("{}{new}{}", &content[..*at], &content[at + old.len()..]);
                self.workspace.write(relative, edited.as_bytes())?;
                self.remember(relative, &edited);
                let line = line_of(&edited, *at);
                Ok(format!(
                    "edited `{}`:\n{}",
                    relative.display(),
                    snippet(&edited, line, new.lines().count().max(1))
                ))
            }
            several => {
                let lines: Vec<String> = several
                    .iter()
                    .map(|at| line_of(&content, *at).to_string())
                    .collect();
                Err(format!(
                    "several matches: `old_str` occurs {} times in `{}` (lines {}); include more \
                     of the lines around it so that it occurs once",
                    several.len(),
                    relative.display(),
                    lines.join(", ")
                ))
            }
        }
    }

    fn insert(&self, relative: &Path, after: u64, inserted: &str) -> Result<String, String> {
        let content = self.read_fresh(relative)?;
        let lines: Vec<&str> = content.split_inclusive('\n').collect();
        let count = lines.len() as u64;
        if after > count {
            return Err(format!(
                "`insert_line` {after} is past the end of `{}` ({count} lines)",
                relative.display()
            ));
        }
        let after = after as usize;
        let mut edited = String::with_capacity(content.len() + inserted.len() + 1);
        for line in &lines[..after] {
            edited.push_str(line);
        }
        if !edited.is_empty() && !edited.ends_with('\n') {
            edited.push('\n');
        }
        edited.push_str(inserted);
        if !inserted.ends_with('\n') && after < lines.len() {
            edited.push('\n');
        }
        for line in &lines[after..] {
            edited.push_str(line);
        }
        self.workspace.write(relative, edited.as_bytes())?;
        self.remember(relative, &edited);
        Ok(format!(
            "inserted {} line(s) after line {after} of `{}`:\n{}",
            inserted.lines().count().max(1),
            relative.display(),
            snippet(&edited, after + 1, inserted.lines().count().max(1))
        ))
    }
}

/// A hash of a file's text.
fn digest(text: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

/// The line (from 1) holding byte `at` of `text`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

/// Lines `first..first + count` of `text`, with four around, numbered.
fn snippet(text: &str, first: usize, count: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = first.saturating_sub(4).max(1);
    let end = (first + count + 3).min(lines.len());
    let mut out = String::new();
    for number in start..=end {
        if let Some(line) = lines.get(number - 1) {
            out.push_str(&format!("{number:>6}\t{line}\n"));
        }
    }
    out
}

/// A relative path for people (`.` for the workspace itself).
fn display(relative: &Path) -> String {
    if relative.as_os_str().is_empty() {
        ".".to_owned()
    } else {
        relative.display().to_string()
    }
}
