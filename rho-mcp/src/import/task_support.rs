//! Which tools a server on 2025-11-25 runs only as tasks (its listing's
//! `execution.taskSupport: "required"`), read from the lines of its
//! listings over stdio: rmcp's `Tool` has no `execution`, so what rmcp
//! reads of a listing cannot tell. A call of such a tool runs as a task
//! (see `call::older_task`).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

/// The tools a server's listings said run only as tasks, by the server's
/// name of each: each page of a listing adds the ones it says so of and
/// takes out the others it names.
#[derive(Clone, Default)]
pub(crate) struct TaskOnly(Arc<Mutex<HashSet<String>>>);

impl TaskOnly {
    /// Reads one answer to `tools/list`, `line` as the server wrote it.
    pub(crate) fn read_listing(&self, line: &[u8]) {
        let Ok(answer) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        let Some(tools) = answer.pointer("/result/tools").and_then(Value::as_array) else {
            return;
        };
        let mut task_only = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        for tool in tools {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            let required = tool
                .pointer("/execution/taskSupport")
                .and_then(Value::as_str)
                == Some("required");
            if required {
                task_only.insert(name.to_owned());
            } else {
                task_only.remove(name);
            }
        }
    }

    /// Whether the server's tool `name` runs only as a task.
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(tools: &Value) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "jsonrpc": "2.0", "id": 3, "result": { "tools": tools },
        }))
        .expect("encodes")
    }

    /// A tool is task-only exactly while the last page that named it said
    /// `required`; other pages leave it as it was.
    #[test]
    fn a_tool_is_task_only_while_its_last_listing_says_required() {
        let task_only = TaskOnly::default();
        task_only.read_listing(&listing(&serde_json::json!([
            { "name": "research", "execution": { "taskSupport": "required" } },
            { "name": "maybe", "execution": { "taskSupport": "optional" } },
            { "name": "echo" },
        ])));
        assert!(task_only.contains("research"));
        assert!(!task_only.contains("maybe"));
        assert!(!task_only.contains("echo"));
        // A second page names other tools only.
        task_only.read_listing(&listing(&serde_json::json!([{ "name": "other" }])));
        assert!(task_only.contains("research"));
        // Listed again without it: a plain tool now.
        task_only.read_listing(&listing(&serde_json::json!([{ "name": "research" }])));
        assert!(!task_only.contains("research"));
        // Not a listing, or garbage: nothing changes.
        task_only.read_listing(b"{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}");
        task_only.read_listing(b"not json");
        assert!(!task_only.contains("research"));
    }
}
