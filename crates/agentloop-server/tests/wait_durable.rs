//! A wait is durable before it is announced: a decision sent the instant a
//! run's event stream says it waits is accepted, every time. Many runs in
//! parallel each wait several times for an approval; each follower sends
//! its decision as soon as the suspended `finished` event arrives, and not
//! one of 1,000 is refused. On SQLite and on PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_storage::{PostgresStore, Store};
use agentloop_types::{ModelProvider, ModelRequest, ModelStream};
use futures::StreamExt;
use serde_json::{Value, json};

use common::TestServer;

/// Runs started at once.
const RUNS: usize = 125;
/// Waits per run: `RUNS * WAITS` decisions in all.
const WAITS: usize = 8;

/// A model that asks for an approved file write until its run has written
/// `WAITS` files, then answers: each run waits `WAITS` times, whatever
/// order the runs' requests come in.
struct Writer;

impl ModelProvider for Writer {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        let written = request
            .messages
            .iter()
            .flat_map(|m| m.tool_results())
            .count();
        let turn = if written < WAITS {
            ScriptedTurn::new().tool_call(
                &format!("w{written}"),
                "fs",
                json!({ "command": "create", "path": format!("f{written}-{}.md", unique()), "file_text": "x" }),
            )
        } else {
            ScriptedTurn::new().text("done")
        };
        ScriptedProvider::unrecorded([turn]).stream(request)
    }
}

fn unique() -> String {
    agentloop_server::ids::new_id()
}

/// Follows run `run_id` to its end, deciding each wait the instant its
/// suspended `finished` event arrives; returns the decisions' HTTP
/// statuses and the run's last status.
async fn follow_and_decide(server: Arc<TestServer>, run_id: String) -> (Vec<(u16, Value)>, String) {
    let mut answers = Vec::new();
    let mut last_seq: Option<u64> = None;
    let mut quiet = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(240);
    // A stream ends without a `finished` when nothing executes the run for
    // a moment (between a decision and its execution): followed again.
    while tokio::time::Instant::now() < deadline {
        let mut request = server
            .client
            .get(server.url(&format!("/api/agent-runs/{run_id}/events")))
            .bearer_auth(&server.token);
        if let Some(seq) = last_seq {
            request = request.header("last-event-id", seq.to_string());
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200);
        let mut body = response.bytes_stream();
        let mut buffer = String::new();
        let mut ended = None;
        'stream: while let Some(chunk) = tokio::time::timeout(Duration::from_secs(60), body.next())
            .await
            .expect("the run's stream goes on")
        {
            buffer.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
            while let Some(newline) = buffer.find('\n') {
                let line: String = buffer.drain(..=newline).collect();
                let Some(data) = line.trim().strip_prefix("data:") else {
                    continue;
                };
                let event: Value = serde_json::from_str(data.trim()).unwrap();
                last_seq = event["seq"].as_u64().or(last_seq);
                let root = event["path"].as_array().is_none_or(Vec::is_empty);
                if event["type"] != "finished" || !root {
                    continue;
                }
                let status = event["result"]["status"].as_str().unwrap().to_owned();
                if status != "suspended" {
                    ended = Some(status);
                    break 'stream;
                }
                // The wait is announced: decide at once.
                let decisions: Vec<Value> = event["result"]["pending"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| json!({ "call_id": p["call"]["id"], "decision": "approve" }))
                    .collect();
                answers.push(
                    server
                        .send(
                            "POST",
                            &format!("/api/agent-runs/{run_id}/decisions"),
                            json!({ "decisions": decisions }),
                        )
                        .await,
                );
                break 'stream;
            }
        }
        if let Some(status) = ended {
            return (answers, status);
        }
        quiet += 1;
        // A back-off between reconnections, not a wait for a condition:
        // the condition is the next event, which the reconnection (from
        // `last-event-id`) reads; without it 125 followers would reopen
        // their streams in a busy loop while a run is between steps.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (_, run) = server.get(&format!("/api/agent-runs/{run_id}")).await;
    panic!(
        "agent run {run_id} did not end ({} decisions, {quiet} quiet streams): {run}",
        answers.len()
    );
}

async fn every_resume_sent_as_a_wait_is_announced_is_accepted(store: Arc<dyn Store>) {
    let mut config = common::config(Arc::new(Writer));
    // The leases outlive a loaded machine's pauses.
    config.lease_ttl = Duration::from_secs(10);
    // One user's 125 followers reconnect whenever a run is between steps:
    // on a loaded machine that passes any per-client limit, which is not
    // what this test is about.
    config.rate_limit = None;
    let server = Arc::new(common::start_with(store, config).await);
    let (project_id, _) = server
        .project_and_task_with(json!({ "approvals": "ask" }))
        .await;
    let mut followers = Vec::new();
    for i in 0..RUNS {
        let (status, task) = server
            .send(
                "POST",
                &format!("/api/projects/{project_id}/tasks"),
                json!({ "title": format!("task {i}") }),
            )
            .await;
        assert_eq!(status, 201, "{task}");
        // A planification run starts no chain after it.
        let run_id =
            common::gated::start_run(&server, task["id"].as_str().unwrap(), "planification").await;
        followers.push(tokio::spawn(follow_and_decide(server.clone(), run_id)));
    }
    let mut accepted = 0;
    let mut refused = Vec::new();
    for follower in followers {
        let (answers, status) = follower.await.unwrap();
        assert_eq!(status, "complete", "{answers:?}");
        for (status, body) in answers {
            if status == 200 {
                accepted += 1;
            } else {
                refused.push((status, body));
            }
        }
    }
    assert!(refused.is_empty(), "{} refused: {refused:?}", refused.len());
    assert_eq!(accepted, RUNS * WAITS);
    match Arc::try_unwrap(server) {
        Ok(server) => server.stop().await,
        Err(_) => panic!("a follower still holds the server"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_resumes_sent_as_waits_are_announced_are_accepted_on_sqlite() {
    let (_dir, store) = common::sqlite().await;
    every_resume_sent_as_a_wait_is_announced_is_accepted(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_resumes_sent_as_waits_are_announced_are_accepted_on_postgres() {
    let Some(database) =
        common::postgres("a_thousand_resumes_sent_as_waits_are_announced_are_accepted").await
    else {
        return;
    };
    let store = Arc::new(PostgresStore::connect(&database.url).await.unwrap());
    every_resume_sent_as_a_wait_is_announced_is_accepted(store.clone()).await;
    store.close().await;
    drop(database);
}
