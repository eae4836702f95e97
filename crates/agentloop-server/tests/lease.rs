//! An instance that lost a run's lease stops writing for it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_storage::model::{AgentRunStatus, now_millis};
use agentloop_storage::{MemoryStore, RunStore, TaskStore};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_stop_once_another_worker_holds_the_lease() {
    let provider = ScriptedProvider::new([ScriptedTurn::new().delay_ms(300).text("Late answer.")]);
    let mut config = common::config(provider);
    config.heartbeat = Duration::from_secs(60);
    let store = Arc::new(MemoryStore::new());
    let server = common::start_with(store.clone(), config).await;
    let (_, task_id) = server.project_and_task().await;
    let (status, run) = server
        .send(
            "POST",
            &format!("/api/tasks/{task_id}/agent-runs"),
            json!({ "agentType": "planification" }),
        )
        .await;
    assert_eq!(status, 201);
    let run_id = run["id"].as_str().unwrap().to_owned();
    // Another worker takes the lease (as if this one's had expired).
    let far = now_millis() + 3_600_000;
    assert!(
        store
            .acquire_lease(&run_id, "thief", far, far + 60_000)
            .await
            .unwrap()
    );

    // At the model's answer this instance finds the lease gone: it commits
    // nothing more of the run and stops executing it.
    for _ in 0..400 {
        if server.state.local_run(&run_id).is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        server.state.local_run(&run_id).is_none(),
        "the run stopped here"
    );
    let (_, messages) = server
        .get(&format!("/api/agent-runs/{run_id}/messages"))
        .await;
    assert_eq!(messages.as_array().map(Vec::len), Some(1), "{messages}");
    let agent_run = store.get_agent_run(&run_id).await.unwrap();
    assert_eq!(agent_run.status, AgentRunStatus::Running);
    let events = store.list_events(&run_id, None, 1000).await.unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.name()).collect();
    assert!(!kinds.contains(&"message_created"), "{kinds:?}");
    assert!(!kinds.contains(&"finished"), "{kinds:?}");
    let record = store.get_run(&run_id).await.unwrap();
    assert_eq!(record.lease_owner.as_deref(), Some("thief"));
    server.stop().await;
}
