//! Live streams: SSE followers that fall behind the broadcast channel, and
//! the WebSocket notices of a run's owner.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_storage::MemoryStore;
use serde_json::{Value, json};
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lagging_sse_follower_gets_every_event_once() {
    let chunks: Vec<String> = (0..300).map(|i| format!("c{i} ")).collect();
    let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
    let provider = ScriptedProvider::new([ScriptedTurn::new().delay_ms(50).text_chunks(&chunks)]);
    let mut config = common::config(provider);
    config.live_capacity = 1;
    let server = common::start_with(Arc::new(MemoryStore::new()), config).await;
    let (_, task_id) = server.project_and_task().await;
    let (status, run) = server
        .send(
            "POST",
            &format!("/api/tasks/{task_id}/agent-runs"),
            json!({ "agentType": "planification" }),
        )
        .await;
    assert_eq!(status, 201);
    let url = server.url(&format!(
        "/api/agent-runs/{}/events",
        run["id"].as_str().unwrap()
    ));
    let body = server
        .client
        .get(&url)
        .bearer_auth(&server.token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let seqs: Vec<u64> = body
        .lines()
        .filter_map(|l| l.strip_prefix("id:"))
        .map(|v| v.trim().parse().unwrap())
        .collect();
    assert!(seqs.len() > 300);
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_websocket_hears_streaming_and_status_notices() {
    let provider = ScriptedProvider::new([ScriptedTurn::new().text("Planned.")]);
    let server = common::start(Arc::new(MemoryStore::new()), provider).await;
    let (_, task_id) = server.project_and_task().await;
    let socket = common::connect_ws(&server).await;
    let (status, run) = server
        .send(
            "POST",
            &format!("/api/tasks/{task_id}/agent-runs"),
            json!({ "agentType": "planification" }),
        )
        .await;
    assert_eq!(status, 201);
    let run_id = run["id"].as_str().unwrap().to_owned();
    let notices = notices_until(socket, "completed").await;
    let kinds: Vec<(&str, &str)> = notices
        .iter()
        .map(|n| {
            (
                n["type"].as_str().unwrap(),
                n["status"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("agent-run-status", "running"),
            ("streaming-started", ""),
            ("streaming-ended", ""),
            ("agent-run-status", "completed"),
        ]
    );
    assert!(notices.iter().all(|n| n["agentRunId"] == run_id.as_str()));
    let unauthorized = server
        .client
        .get(server.url("/api/ws"))
        .send()
        .await
        .unwrap();
    assert_eq!(unauthorized.status().as_u16(), 401);
    server.stop().await;
}

/// Reads `socket`'s notices until the one saying its run reached `status`.
async fn notices_until(socket: std::net::TcpStream, status: &'static str) -> Vec<Value> {
    tokio::task::spawn_blocking(move || {
        let mut socket = socket;
        let mut notices = Vec::new();
        loop {
            let notice: Value =
                serde_json::from_str(&common::read_text_frame(&mut socket)).unwrap();
            let done = notice["type"] == "agent-run-status" && notice["status"] == status;
            notices.push(notice);
            if done {
                return notices;
            }
        }
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_websocket_hears_none_of_another_users_notices() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().text("Alice's plan."),
        ScriptedTurn::new().text("Bob's plan."),
    ]);
    let store: Arc<dyn agentloop_storage::Store> = Arc::new(MemoryStore::new());
    let server = common::start(store.clone(), provider).await;
    let (_, bob_token) = agentloop_server::users::create_user(&*store, "bob")
        .await
        .unwrap();
    let alice_socket = common::connect_ws(&server).await;
    let bob_socket = common::connect_ws_as(&server, &bob_token).await;

    // Alice's run goes from start to end while Bob's socket is open.
    let (_, alice_task) = server.project_and_task().await;
    let (status, alice_run) = server
        .send(
            "POST",
            &format!("/api/tasks/{alice_task}/agent-runs"),
            json!({ "agentType": "planification" }),
        )
        .await;
    assert_eq!(status, 201);
    let alice_notices = notices_until(alice_socket, "completed").await;
    assert!(
        alice_notices
            .iter()
            .all(|n| n["agentRunId"] == alice_run["id"])
    );

    // Then Bob's: the first notice his socket gets is about his own run,
    // so none of Alice's, all sent before it, reached him.
    let bob_folder = tempfile::tempdir().unwrap();
    let created_by_bob = async |path: String, body: Value| {
        let response = server
            .client
            .post(server.url(&path))
            .bearer_auth(&bob_token)
            .json(&body)
            .send()
            .await
            .unwrap();
        let (status, created) = common::decode(response).await;
        assert_eq!(status, 201, "{created}");
        created["id"].as_str().unwrap().to_owned()
    };
    let project = created_by_bob(
        "/api/projects".into(),
        json!({ "name": "bob's", "repoFolder": bob_folder.path() }),
    )
    .await;
    let task = created_by_bob(
        format!("/api/projects/{project}/tasks"),
        json!({ "title": "Bob's task" }),
    )
    .await;
    let bob_run = created_by_bob(
        format!("/api/tasks/{task}/agent-runs"),
        json!({ "agentType": "planification" }),
    )
    .await;
    let bob_notices = notices_until(bob_socket, "completed").await;
    assert_eq!(bob_notices[0]["type"], "agent-run-status");
    assert_eq!(bob_notices[0]["status"], "running");
    assert!(
        bob_notices
            .iter()
            .all(|n| n["agentRunId"] == bob_run.as_str()),
        "{bob_notices:?}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_on_another_instance_follows_the_run_through_the_store() {
    let store: Arc<dyn agentloop_storage::Store> = Arc::new(MemoryStore::new());
    let chunks: Vec<String> = (0..20).map(|i| format!("c{i} ")).collect();
    let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
    let mut turn = ScriptedTurn::new();
    for chunk in chunks {
        turn = turn.delay_ms(10).text_chunks(&[chunk]);
    }
    let a = common::start(store.clone(), ScriptedProvider::new([turn])).await;
    let b = common::start_as(
        store,
        common::config(ScriptedProvider::new([])),
        a.token.clone(),
    )
    .await;
    let (_, task_id) = a.project_and_task().await;
    let (status, run) = a
        .send(
            "POST",
            &format!("/api/tasks/{task_id}/agent-runs"),
            json!({ "agentType": "planification" }),
        )
        .await;
    assert_eq!(status, 201);
    let url = b.url(&format!(
        "/api/agent-runs/{}/events",
        run["id"].as_str().unwrap()
    ));
    let body = b
        .client
        .get(&url)
        .bearer_auth(&a.token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let seqs: Vec<u64> = body
        .lines()
        .filter_map(|l| l.strip_prefix("id:"))
        .map(|v| v.trim().parse().unwrap())
        .collect();
    assert!(seqs.len() > 20);
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());
    assert!(body.contains("event: finished"));
    a.stop().await;
    b.stop().await;
}
