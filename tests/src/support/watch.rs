//! Watches: one that records what it is told, one that panics.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rho_tool_core::{CallEnd, Outcome, TaskId, ToolCall, Watch};

/// Records every `started` and `ended` it is told, in order (the whole
/// `CallEnd` of each end).
#[derive(Debug, Default)]
pub struct RecordingWatch {
    started: Mutex<Vec<(String, TaskId)>>,
    ended: Mutex<Vec<CallEnd>>,
}

impl RecordingWatch {
    /// A fresh watch.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The call ids told as started in `task`.
    pub fn started_for(&self, task: TaskId) -> Vec<String> {
        let started = self.started.lock().unwrap_or_else(PoisonError::into_inner);
        started
            .iter()
            .filter(|(_, t)| *t == task)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// The (tool, outcome) pairs told as ended for `task`.
    pub fn ended_for(&self, task: TaskId) -> Vec<(String, Outcome)> {
        let ended = self.ended.lock().unwrap_or_else(PoisonError::into_inner);
        ended
            .iter()
            .filter(|end| end.task == task)
            .map(|end| (end.tool.clone(), end.outcome))
            .collect()
    }

    /// The whole ends told for `task`.
    pub fn ends_for(&self, task: TaskId) -> Vec<CallEnd> {
        let ended = self.ended.lock().unwrap_or_else(PoisonError::into_inner);
        ended
            .iter()
            .filter(|end| end.task == task)
            .cloned()
            .collect()
    }

    /// How many `started` it was told.
    pub fn started_count(&self) -> usize {
        self.started
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// How many `ended` it was told.
    pub fn ended_count(&self) -> usize {
        self.ended
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// How many times each task was told as ended.
    pub fn ended_per_task(&self) -> HashMap<TaskId, usize> {
        let mut counts = HashMap::new();
        let ended = self.ended.lock().unwrap_or_else(PoisonError::into_inner);
        for end in ended.iter() {
            *counts.entry(end.task).or_insert(0) += 1;
        }
        counts
    }
}

impl Watch for RecordingWatch {
    fn started(&self, call: &ToolCall, task: TaskId) {
        self.started
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((call.id.clone(), task));
    }

    fn ended(&self, end: &CallEnd) {
        self.ended
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(end.clone());
    }
}

/// A watch that panics in both hooks.
#[derive(Debug, Default, Clone, Copy)]
pub struct PanickingWatch;

impl Watch for PanickingWatch {
    fn started(&self, call: &ToolCall, _task: TaskId) {
        panic!("the watch panicked when told that {} started", call.id);
    }

    fn ended(&self, end: &CallEnd) {
        panic!(
            "the watch panicked when told that {} ended {}",
            end.tool, end.outcome
        );
    }
}
