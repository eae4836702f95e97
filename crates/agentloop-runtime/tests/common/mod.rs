//! Shared helpers of the runtime tests.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentloop_runtime::{ChatRuntime, ChatSettings, ProjectSettings};
use agentloop_storage::{MemoryStore, SqliteStore, Store};
use agentloop_types::{Tool, ToolContext, ToolResult, ToolStream, single_result};
use serde_json::{Value, json};

/// Every store a test runs against: memory and a SQLite temp file (the
/// tempdir is returned to keep it alive).
pub async fn stores() -> Vec<(&'static str, Arc<dyn Store>, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let sqlite = SqliteStore::connect(path.to_str().unwrap()).await.unwrap();
    vec![
        (
            "memory",
            Arc::new(MemoryStore::new()) as Arc<dyn Store>,
            None,
        ),
        ("sqlite", Arc::new(sqlite) as Arc<dyn Store>, Some(dir)),
    ]
}

/// A project and a chat in it; returns the chat id.
pub async fn chat(runtime: &ChatRuntime, project: ProjectSettings, chat: ChatSettings) -> String {
    let p = runtime.create_project("test", &project).await.unwrap();
    runtime.create_chat(&p.id, "chat", &chat).await.unwrap().id
}

/// A tool that counts its calls, optionally appends a line to a file, and
/// optionally sleeps first.
pub struct Counter {
    pub name: &'static str,
    pub calls: Arc<AtomicUsize>,
    pub sleep_ms: u64,
    pub marker: Option<std::path::PathBuf>,
}

impl Counter {
    pub fn new(name: &'static str) -> Arc<Self> {
        Arc::new(Self {
            name,
            calls: Arc::new(AtomicUsize::new(0)),
            sleep_ms: 0,
            marker: None,
        })
    }
}

impl Tool for Counter {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "Counts."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn execute(self: Arc<Self>, _input: Value, ctx: ToolContext) -> ToolStream {
        single_result(async move {
            if let Some(marker) = &self.marker {
                use std::io::Write;
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(marker)
                    .unwrap();
                writeln!(f, "{} {}", self.name, ctx.tool_use_id).unwrap();
            }
            if self.sleep_ms > 0 {
                tokio::time::sleep(Duration::from_millis(self.sleep_ms)).await;
            }
            let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
            ToolResult::ok(format!("{} call {n}", self.name))
        })
    }
}
