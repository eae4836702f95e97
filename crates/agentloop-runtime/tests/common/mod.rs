//! Shared helpers of the runtime tests.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentloop_runtime::{ChatRuntime, ChatSettings, ProjectSettings};
use agentloop_storage::model::Project;
use agentloop_storage::{MemoryStore, PostgresStore, ProjectStore, SqliteStore, Store};
use agentloop_types::{Tool, ToolContext, ToolResult, ToolStream, single_result};
use serde_json::{Value, json};
use sqlx::Connection;

pub mod crash;

/// Keeps what a store needs alive: a temp folder, or a PostgreSQL test
/// database dropped at the end.
pub enum Guard {
    /// Nothing to keep.
    None,
    /// A SQLite file's folder.
    Dir(tempfile::TempDir),
    /// A PostgreSQL database.
    Pg(PgDatabase),
}

/// Every store a test runs against: memory, a SQLite temp file, and
/// PostgreSQL when `AGENTLOOP_TEST_POSTGRES_URL` is set.
pub async fn stores() -> Vec<(&'static str, Arc<dyn Store>, Guard)> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let sqlite = SqliteStore::connect(path.to_str().unwrap()).await.unwrap();
    let mut out = vec![
        (
            "memory",
            Arc::new(MemoryStore::new()) as Arc<dyn Store>,
            Guard::None,
        ),
        (
            "sqlite",
            Arc::new(sqlite) as Arc<dyn Store>,
            Guard::Dir(dir),
        ),
    ];
    if let Ok(url) = std::env::var("AGENTLOOP_TEST_POSTGRES_URL") {
        let db = PgDatabase::create(&url).await;
        out.push((
            "postgres",
            Arc::new(db.store.clone()) as Arc<dyn Store>,
            Guard::Pg(db),
        ));
    }
    out
}

/// A PostgreSQL database made for one test and dropped with it.
pub struct PgDatabase {
    admin_url: String,
    name: String,
    /// The store on it.
    pub store: PostgresStore,
    /// Its URL.
    pub url: String,
}

impl PgDatabase {
    /// Creates a uniquely named database on the server of `admin_url`.
    pub async fn create(admin_url: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "agentloop_rt_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        );
        let mut admin = sqlx::PgConnection::connect(admin_url).await.unwrap();
        sqlx::raw_sql(&format!("CREATE DATABASE \"{name}\""))
            .execute(&mut admin)
            .await
            .unwrap();
        let (base, _) = admin_url.rsplit_once('/').unwrap();
        let url = format!("{base}/{name}");
        let store = PostgresStore::connect(&url).await.unwrap();
        Self {
            admin_url: admin_url.to_owned(),
            name,
            store,
            url,
        }
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        let admin_url = self.admin_url.clone();
        let name = self.name.clone();
        // The store's connections belong to the test's runtime, which is
        // blocked here; `WITH (FORCE)` ends them from the server side
        // instead of closing the pool from another runtime.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let mut admin = sqlx::PgConnection::connect(&admin_url).await.unwrap();
                sqlx::raw_sql(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
                    .execute(&mut admin)
                    .await
                    .unwrap();
            });
        })
        .join();
    }
}

/// A project with `settings`, created in `store`: the runtime's store
/// holds no projects, the host creates them.
pub async fn project(store: &dyn ProjectStore, settings: ProjectSettings) -> Project {
    let project = Project {
        id: format!("project-{}", uuid_like()),
        name: "test".to_owned(),
        settings: serde_json::to_value(&settings).unwrap(),
        approval_mode: None,
        created_at: 0,
        updated_at: 0,
    };
    store.create_project(&project).await.unwrap();
    project
}

/// An id unique in this process.
fn uuid_like() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A project (in `store`) and a chat in it; returns the chat id.
pub async fn chat(
    store: &dyn ProjectStore,
    runtime: &ChatRuntime,
    project_settings: ProjectSettings,
    chat: ChatSettings,
) -> String {
    let p = project(store, project_settings).await;
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

/// Reads a started run to its end: `runtime.send(..).finish().await`.
pub trait Finish {
    /// The run's outcome, or why it could not start or go on.
    fn finish(
        self,
    ) -> impl std::future::Future<
        Output = agentloop_runtime::RuntimeResult<agentloop_runtime::RunOutcome>,
    > + Send;
}

impl<F> Finish for F
where
    F: std::future::Future<Output = agentloop_runtime::RuntimeResult<agentloop_runtime::ChatRun>>
        + Send,
{
    async fn finish(self) -> agentloop_runtime::RuntimeResult<agentloop_runtime::RunOutcome> {
        self.await?.outcome().await
    }
}

/// Reads a run to its end, keeping every event it yielded (each yielded
/// after it was stored) and its result.
pub async fn drain(
    mut run: agentloop_runtime::ChatRun,
) -> (Vec<agentloop_types::LoopEvent>, agentloop_types::LoopResult) {
    use futures::StreamExt;
    let mut events = Vec::new();
    while let Some(event) = run.next().await {
        events.push(event.unwrap());
    }
    let result = events
        .last()
        .cloned()
        .and_then(|e| e.into_root_result())
        .expect("the run ended with its terminal event");
    (events, result)
}

/// Project settings under which every call of the `count` tool waits for
/// a person's approval.
pub fn count_needs_approval() -> ProjectSettings {
    let mut settings = ProjectSettings::default();
    settings
        .loop_settings
        .approvals
        .insert("count".into(), agentloop_types::ApprovalPolicy::Always);
    settings
}
