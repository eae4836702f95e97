//! Chaining, failure, and the SSE event stream, on SQLite.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_storage::model::{AgentRunStatus, AgentType};
use agentloop_types::{ProviderError, ProviderErrorKind};
use common::start;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn implementation_and_review_chain_until_the_agent_completes_the_workflow() {
    let (_dir, store) = common::sqlite().await;
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().text("Step 1 is done."),
        ScriptedTurn::new().text("Reviewed: one more step is needed."),
        ScriptedTurn::new().tool_call("c1", "complete_workflow", json!({ "summary": "all done" })),
        ScriptedTurn::new().text("The task is complete."),
        ScriptedTurn::new().text("This turn must never be requested."),
    ]);
    let server = start(store.clone(), provider.clone()).await;
    let (_, task_id) = server.project_and_task().await;
    let (status, _) = server
        .send(
            "POST",
            &format!("/api/tasks/{task_id}/agent-runs"),
            json!({ "agentType": "implementation" }),
        )
        .await;
    assert_eq!(status, 201);
    server.settle(&task_id, 3).await;
    server.stop().await;

    let runs = store.list_agent_runs(&task_id).await.unwrap();
    let kinds: Vec<_> = runs.iter().map(|r| (r.agent_type, r.status)).collect();
    assert_eq!(
        kinds,
        vec![
            (AgentType::Implementation, AgentRunStatus::Completed),
            (AgentType::Review, AgentRunStatus::Completed),
            (AgentType::Implementation, AgentRunStatus::Completed),
        ]
    );
    assert!(store.get_task(&task_id).await.unwrap().workflow_complete);
    assert_eq!(provider.remaining(), 1);
    // Each run's messages are stored in its conversation's chat.
    let conversation = store
        .get_conversation(runs[2].conversation_id.as_deref().unwrap())
        .await
        .unwrap();
    let messages = store
        .list_messages(conversation.chat_id.as_deref().unwrap())
        .await
        .unwrap();
    let texts: Vec<_> = messages.iter().map(|m| m.message.role).collect();
    assert_eq!(texts.len(), 4, "{messages:?}");
    assert_eq!(messages[3].message.text(), "The task is complete.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_run_stops_the_chain_and_planification_never_chains() {
    let (_dir, store) = common::sqlite().await;
    let error = ProviderError {
        kind: ProviderErrorKind::Api,
        message: "overloaded".to_owned(),
        status: None,
        error_type: Some("invalid_request_error".to_owned()),
        request_id: None,
        partial: None,
    };
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().error(error),
        ScriptedTurn::new().text("Planned."),
        ScriptedTurn::new().text("never"),
    ]);
    let server = start(store.clone(), provider.clone()).await;
    let (_, task_id) = server.project_and_task().await;
    let path = format!("/api/tasks/{task_id}/agent-runs");
    let (status, _) = server
        .send("POST", &path, json!({ "agentType": "implementation" }))
        .await;
    assert_eq!(status, 201);
    let runs = server.settle(&task_id, 1).await;
    assert_eq!(runs[0]["status"], "failed");
    // The run says why, as the terminal event did.
    assert_eq!(runs[0]["error"]["kind"], "provider", "{}", runs[0]);
    assert!(
        runs[0]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("overloaded")),
        "{}",
        runs[0]
    );
    assert_eq!(runs[0]["stopped_by"], serde_json::Value::Null);
    let (status, _) = server
        .send("POST", &path, json!({ "agentType": "planification" }))
        .await;
    assert_eq!(status, 201);
    server.settle(&task_id, 2).await;
    server.stop().await;
    let runs = store.list_agent_runs(&task_id).await.unwrap();
    let kinds: Vec<_> = runs.iter().map(|r| (r.agent_type, r.status)).collect();
    assert_eq!(
        kinds,
        vec![
            (AgentType::Implementation, AgentRunStatus::Failed),
            (AgentType::Planification, AgentRunStatus::Completed),
        ]
    );
    assert_eq!(provider.remaining(), 1);
}

/// The `id:` values of an SSE body, with each event's `type`.
fn sse_events(body: &str) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    let mut id = None;
    for line in body.lines() {
        if let Some(v) = line.strip_prefix("id:") {
            id = Some(v.trim().parse::<u64>().unwrap());
        } else if let Some(data) = line.strip_prefix("data:") {
            let value: serde_json::Value = serde_json::from_str(data.trim()).unwrap();
            let seq = value["seq"].as_u64().unwrap();
            assert_eq!(Some(seq), id, "the SSE id is the event seq");
            out.push((seq, value["type"].as_str().unwrap().to_owned()));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_follows_live_and_replays_after_last_event_id() {
    let (_dir, store) = common::sqlite().await;
    let provider = ScriptedProvider::new([ScriptedTurn::new()
        .delay_ms(100)
        .text_chunks(&["Hel", "lo ", "wor", "ld"])]);
    let server = start(store, provider).await;
    let (_, task_id) = server.project_and_task().await;
    let (status, run) = server
        .send(
            "POST",
            &format!("/api/tasks/{task_id}/agent-runs"),
            json!({ "agentType": "planification" }),
        )
        .await;
    assert_eq!(status, 201);
    let run_id = run["id"].as_str().unwrap();
    let url = server.url(&format!("/api/agent-runs/{run_id}/events"));

    let live = server
        .client
        .get(&url)
        .bearer_auth(&server.token)
        .send()
        .await
        .unwrap();
    assert_eq!(live.status().as_u16(), 200);
    let events = sse_events(&live.text().await.unwrap());
    let seqs: Vec<u64> = events.iter().map(|e| e.0).collect();
    assert_eq!(
        seqs,
        (0..seqs.len() as u64).collect::<Vec<_>>(),
        "no gap, no duplicate"
    );
    assert_eq!(events.last().unwrap().1, "finished");
    assert!(events.iter().any(|e| e.1 == "streaming_chunk"));

    let middle = seqs[seqs.len() / 2];
    let replay = server
        .client
        .get(&url)
        .bearer_auth(&server.token)
        .header("Last-Event-ID", middle.to_string())
        .send()
        .await
        .unwrap();
    let replayed: Vec<u64> = sse_events(&replay.text().await.unwrap())
        .iter()
        .map(|e| e.0)
        .collect();
    assert_eq!(replayed, seqs[seqs.len() / 2 + 1..].to_vec());

    let bad = server
        .client
        .get(&url)
        .bearer_auth(&server.token)
        .header("Last-Event-ID", "x")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status().as_u16(), 400);
    let (status, _) = server.get("/api/agent-runs/unknown/events").await;
    assert_eq!(status, 404);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_broken_by_a_crash_is_continued() {
    let (_dir, store) = common::sqlite().await;
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().text("Reviewed."),
        ScriptedTurn::new().tool_call("c1", "complete_workflow", json!({})),
        ScriptedTurn::new().text("Done."),
    ]);
    let server = start(store.clone(), provider).await;
    let (_, task_id) = server.project_and_task().await;
    // An implementation run ended on its own long ago, and the instance that
    // ran it died before starting the review.
    let run = agentloop_storage::model::AgentRun {
        id: "crashed".to_owned(),
        task_id: task_id.clone(),
        agent_type: AgentType::Implementation,
        status: AgentRunStatus::Completed,
        conversation_id: None,
        created_at: 1,
        completed_at: Some(2),
        end_reason: None,
    };
    store.create_agent_run(&run).await.unwrap();
    store
        .create_run(&agentloop_storage::model::RunRecord {
            id: "crashed".to_owned(),
            chat_id: None,
            status: agentloop_storage::model::RunStatus::Completed,
            state: None,
            result: Some(json!({ "status": "complete", "messages": [], "tokens": {} })),
            pending_tool_call: None,
            end_reason: None,
            lease_owner: None,
            lease_expires_at: None,
            created_at: 1,
            updated_at: 2,
        })
        .await
        .unwrap();
    server.settle(&task_id, 3).await;
    server.stop().await;
    let runs = store.list_agent_runs(&task_id).await.unwrap();
    let kinds: Vec<_> = runs.iter().map(|r| (r.agent_type, r.status)).collect();
    assert_eq!(
        kinds,
        vec![
            (AgentType::Implementation, AgentRunStatus::Completed),
            (AgentType::Review, AgentRunStatus::Completed),
            (AgentType::Implementation, AgentRunStatus::Completed),
        ]
    );
    assert!(store.get_task(&task_id).await.unwrap().workflow_complete);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_mark_done_force_completed_is_not_continued_when_the_task_is_reopened() {
    let (_dir, store) = common::sqlite().await;
    let server = start(store.clone(), ScriptedProvider::new([])).await;
    let (_, task_id) = server.project_and_task().await;
    // Mark Done force-completed an implementation run long ago; the person
    // then unticked Mark Done. Recovery must not take that for a chain a
    // crash broke: restarting is the person's call.
    let stopped = agentloop_storage::model::EndReason::workflow_complete();
    let run = agentloop_storage::model::AgentRun {
        id: "stopped".to_owned(),
        task_id: task_id.clone(),
        agent_type: AgentType::Implementation,
        status: AgentRunStatus::Completed,
        conversation_id: None,
        created_at: 1,
        completed_at: Some(2),
        end_reason: Some(stopped.clone()),
    };
    store.create_agent_run(&run).await.unwrap();
    store
        .create_run(&agentloop_storage::model::RunRecord {
            id: "stopped".to_owned(),
            chat_id: None,
            status: agentloop_storage::model::RunStatus::Completed,
            state: None,
            result: Some(json!({ "status": "complete", "messages": [], "tokens": {},
                                 "stopped_by": stopped.kind, "stop_message": stopped.message })),
            pending_tool_call: None,
            end_reason: None,
            lease_owner: None,
            lease_expires_at: None,
            created_at: 1,
            updated_at: 2,
        })
        .await
        .unwrap();
    let started = agentloop_server::recovery::resume_chains(&server.state)
        .await
        .unwrap();
    assert_eq!(started, 0);
    let (_, runs) = server
        .get(&format!("/api/tasks/{task_id}/agent-runs"))
        .await;
    assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");
    assert_eq!(runs[0]["stopped_by"], "workflow_complete");
    server.stop().await;
}
