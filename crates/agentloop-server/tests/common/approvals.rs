//! Helpers of the approval tests: starting a run, waiting for its status,
//! sending decisions and reading its events and messages.

use std::time::Duration;

use agentloop_engine::scripted::ScriptedTurn;
use agentloop_storage::Store;
use agentloop_types::Message;
use serde_json::{Value, json};

use super::TestServer;

pub fn create(id: &str, path: &str, text: &str) -> ScriptedTurn {
    ScriptedTurn::new().tool_call(
        id,
        "fs",
        json!({ "command": "create", "path": path, "file_text": text }),
    )
}

/// Polls the run until it has `status` (bounded).
pub async fn until_status(server: &TestServer, run_id: &str, status: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..600 {
        let (_, run) = server.get(&format!("/api/agent-runs/{run_id}")).await;
        if run["status"] == status {
            return run;
        }
        last = run;
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("agent run {run_id} never became {status}: {last}");
}

pub async fn decide(server: &TestServer, run_id: &str, decisions: Value) -> (u16, Value) {
    server
        .send(
            "POST",
            &format!("/api/agent-runs/{run_id}/decisions"),
            json!({ "decisions": decisions }),
        )
        .await
}

/// The SSE body of a run's event stream, after `last_event_id` if given.
pub async fn events(server: &TestServer, run_id: &str, last_event_id: Option<u64>) -> Vec<Value> {
    let mut request = server
        .client
        .get(server.url(&format!("/api/agent-runs/{run_id}/events")))
        .bearer_auth(&server.token);
    if let Some(id) = last_event_id {
        request = request.header("last-event-id", id.to_string());
    }
    let body = tokio::time::timeout(Duration::from_secs(10), async {
        request.send().await.unwrap().text().await.unwrap()
    })
    .await
    .expect("the event stream of a run that is not running ends");
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|data| serde_json::from_str(data.trim()).unwrap())
        .collect()
}

/// The root `finished` events' statuses, in log order.
pub fn finished_statuses(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "finished" && e["path"].as_array().is_none_or(Vec::is_empty))
        .map(|e| e["result"]["status"].as_str().unwrap().to_owned())
        .collect()
}

/// The chat messages of an agent run.
pub async fn messages(store: &dyn Store, run_id: &str) -> Vec<Message> {
    let run = store.get_agent_run(run_id).await.unwrap();
    let conversation = store
        .get_conversation(run.conversation_id.as_deref().unwrap())
        .await
        .unwrap();
    store
        .list_messages(conversation.chat_id.as_deref().unwrap())
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.message)
        .collect()
}
