//! `agentloop serve` as a process: SIGKILL mid-run and recovery by a
//! restarted server, SIGTERM hand-back, `users create`, `complete-workflow`,
//! two servers sharing one PostgreSQL database, a cancel that stops the
//! agent, and a run waiting for approval across a SIGKILL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agentloop_types::FinishedEvent;
use std::process::Command;
use std::time::Duration;

use agentloop_storage::model::{AgentRunStatus, AgentType};
use agentloop_types::EventKind;
use common::served::*;
use common::{agentloop, create_user};
use serde_json::json;

/// Every agent run's log holds exactly one terminal event and seqs 0..n.
async fn assert_logs_whole(store: &dyn agentloop_storage::Store, task_id: &str) {
    for run in store.list_agent_runs(task_id).await.unwrap() {
        let events = store.list_events(&run.id, None, 100_000).await.unwrap();
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());
        let finished = events
            .iter()
            .filter(|e| {
                matches!(e.kind, EventKind::Finished(FinishedEvent { .. })) && e.path.is_root()
            })
            .count();
        assert_eq!(finished, 1, "run {} finished {finished} times", run.id);
    }
}

async fn wait_settled(store: &dyn agentloop_storage::Store, task_id: &str, count: usize) {
    for _ in 0..600 {
        let runs = store.list_agent_runs(task_id).await.unwrap();
        if runs.len() >= count && runs.iter().all(|r| r.status != AgentRunStatus::Running) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the agent runs did not settle");
}

#[tokio::test]
async fn a_run_survives_sigkill_and_the_restarted_server_finishes_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    write_script(&script, json!([slow_text(" done.")]));
    let repo = dir.path().join("repo");
    let token = create_user(&db, "ada");
    let mut first = serve(&db, &script, "first");
    let task_id = task(&first.address, &token, &repo);
    let (status, run) = http(
        &first.address,
        &token,
        "POST",
        &format!("/api/tasks/{task_id}/agent-runs"),
        Some(json!({ "agentType": "planification" })),
    );
    assert_eq!(status, 201, "{run}");
    let run_id = run["id"].as_str().unwrap().to_owned();
    let store = agentloop_storage::open_store(&db).await.unwrap();
    for _ in 0..600 {
        if !store
            .list_events(&run_id, None, 10)
            .await
            .unwrap()
            .is_empty()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    assert_eq!(
        store.get_agent_run(&run_id).await.unwrap().status,
        AgentRunStatus::Running
    );

    let mut second = serve(&db, &script, "second");
    wait_settled(&*store, &task_id, 1).await;
    let run = store.get_agent_run(&run_id).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);
    let conversation = store
        .get_conversation(run.conversation_id.as_deref().unwrap())
        .await
        .unwrap();
    let messages = store
        .list_messages(conversation.chat_id.as_deref().unwrap())
        .await
        .unwrap();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[1].message.text(), "Working done.");
    assert_logs_whole(&*store, &task_id).await;

    let output = agentloop()
        .args(["complete-workflow", &task_id, "--db", &db])
        .output()
        .unwrap();
    assert!(output.status.success());
    assert!(store.get_task(&task_id).await.unwrap().workflow_complete);

    let term = Command::new("kill")
        .args(["-TERM", &second.child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    assert!(second.child.wait().unwrap().success());
}

#[tokio::test]
async fn a_run_waiting_for_approval_survives_sigkill_and_a_decision_resumes_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([
            { "steps": [
                { "type": "tool_call", "id": "w1", "name": "fs",
                  "fragments": ["{\"command\": \"create\", \"path\": \"notes.md\", \"file_text\": \"hello\"}"] }
            ] }
        ]),
    );
    // The restarted server's model goes on where the first one stopped.
    let rest = dir.path().join("rest.json");
    write_script(
        &rest,
        json!([{ "steps": [{ "type": "text", "chunks": ["Written."] }] }]),
    );
    let repo = dir.path().join("repo");
    let token = create_user(&db, "ada");
    let mut first = serve(&db, &script, "first");
    let task_id = task_with(&first.address, &token, &repo, json!({ "approvals": "ask" }));
    let (status, run) = http(
        &first.address,
        &token,
        "POST",
        &format!("/api/tasks/{task_id}/agent-runs"),
        Some(json!({ "agentType": "planification" })),
    );
    assert_eq!(status, 201, "{run}");
    let run_id = run["id"].as_str().unwrap().to_owned();
    let waiting = until_status(&first.address, &token, &run_id, "waiting");
    assert_eq!(waiting["pending"][0]["call_id"], "w1");
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    assert!(!repo.join("notes.md").exists());

    let mut second = serve(&db, &rest, "second");
    let (status, pending) = http(
        &second.address,
        &token,
        "GET",
        &format!("/api/agent-runs/{run_id}/pending"),
        None,
    );
    assert_eq!(status, 200, "{pending}");
    assert_eq!(pending["agent_run"]["status"], "waiting");
    assert_eq!(pending["pending"][0]["call_id"], "w1");
    assert_eq!(pending["pending"][0]["kind"], "approval");
    let (status, decided) = http(
        &second.address,
        &token,
        "POST",
        &format!("/api/agent-runs/{run_id}/decisions"),
        Some(json!({ "decisions": [{ "call_id": "w1", "decision": "approve" }] })),
    );
    assert_eq!(status, 200, "{decided}");
    assert_eq!(decided["resumed"], true);
    until_status(&second.address, &token, &run_id, "completed");
    assert_eq!(
        std::fs::read_to_string(repo.join("notes.md")).unwrap(),
        "hello"
    );

    let store = agentloop_storage::open_store(&db).await.unwrap();
    let events = store.list_events(&run_id, None, 10_000).await.unwrap();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());
    let statuses: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Finished(FinishedEvent { result }) if e.path.is_root() => {
                Some(result.status.name())
            }
            _ => None,
        })
        .collect();
    assert_eq!(statuses, ["suspended", "complete"]);

    let term = Command::new("kill")
        .args(["-TERM", &second.child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    assert!(second.child.wait().unwrap().success());
}

#[tokio::test]
async fn two_servers_on_postgres_share_a_chain_and_run_each_step_once() {
    let Ok(admin_url) = std::env::var("AGENTLOOP_TEST_POSTGRES_URL") else {
        println!("skipping: AGENTLOOP_TEST_POSTGRES_URL is not set");
        return;
    };
    let name = format!("agentloop_cli_{}", std::process::id());
    let database = ScratchDatabase::create(&admin_url, &name).await;
    let url = database.url.clone();

    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    let finish = json!({ "steps": [
        { "type": "tool_call", "id": "c1", "name": "complete_workflow", "fragments": ["{}"] }
    ] });
    write_script(
        &script,
        json!([
            slow_text(" one."),
            slow_text(" two."),
            finish,
            slow_text(" end.")
        ]),
    );
    let token = create_user(&url, "ada");
    let mut a = serve(&url, &script, "a");
    let mut b = serve(&url, &script, "b");
    let task_id = task(&a.address, &token, &dir.path().join("repo"));
    let (status, _) = http(
        &a.address,
        &token,
        "POST",
        &format!("/api/tasks/{task_id}/agent-runs"),
        Some(json!({ "agentType": "implementation" })),
    );
    assert_eq!(status, 201);
    let store = agentloop_storage::open_store(&url).await.unwrap();
    // Stop `a` mid-chain: it hands its run back and `b` continues the chain.
    for _ in 0..600 {
        if !store.list_agent_runs(&task_id).await.unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let term = Command::new("kill")
        .args(["-TERM", &a.child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    assert!(a.child.wait().unwrap().success());
    wait_settled(&*store, &task_id, 3).await;
    let runs = store.list_agent_runs(&task_id).await.unwrap();
    assert!(runs.len() >= 3);
    assert_eq!(runs[0].agent_type, AgentType::Implementation);
    assert_eq!(runs[1].agent_type, AgentType::Review);
    assert_logs_whole(&*store, &task_id).await;
    b.child.kill().unwrap();
    b.child.wait().unwrap();
    database.remove().await;
}

#[tokio::test]
async fn a_cancel_stops_the_agent_and_closes_the_stream() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([
            { "steps": [
                { "type": "text", "chunks": ["working "] },
                { "type": "delay", "ms": 3000 },
                { "type": "tool_call", "id": "c1", "name": "fs",
                  "fragments": ["{\"command\": \"create\", \"path\": \"effect.txt\", \"file_text\": \"late\"}"] }
            ] },
            { "steps": [{ "type": "text", "chunks": ["never requested"] }] }
        ]),
    );
    let repo = dir.path().join("repo");
    let token = create_user(&db, "ada");
    let mut server = serve(&db, &script, "only");
    // Writes run without asking: a file on disk would show the stop came too late.
    let task_id = task_with(
        &server.address,
        &token,
        &repo,
        json!({ "approvals": { "*": "never" } }),
    );
    let (status, run) = http(
        &server.address,
        &token,
        "POST",
        &format!("/api/tasks/{task_id}/agent-runs"),
        Some(json!({ "agentType": "implementation" })),
    );
    assert_eq!(status, 201, "{run}");
    let run_id = run["id"].as_str().unwrap().to_owned();
    // The stream must close well before the scripted delay would have ended.
    let started = std::time::Instant::now();
    let events = read_sse(&server.address, &token, &run_id, "first_chunk");
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "the stream closed only after {:?}",
        started.elapsed()
    );
    let finished: Vec<_> = events.iter().filter(|(n, _)| n == "finished").collect();
    assert_eq!(finished.len(), 1, "{events:?}");
    assert_eq!(finished[0].1["result"]["status"], "cancelled");
    let (_, record) = http(
        &server.address,
        &token,
        "GET",
        &format!("/api/agent-runs/{run_id}"),
        None,
    );
    assert_eq!(record["status"], "cancelled");
    assert_eq!(record["stopped_by"], "cancel");
    let (status, again) = http(
        &server.address,
        &token,
        "POST",
        &format!("/api/agent-runs/{run_id}/cancel"),
        Some(json!({})),
    );
    assert_eq!(
        (status, again["agentRun"]["status"].as_str()),
        (409, Some("cancelled"))
    );

    // Past the point where the tool call would have come, then stopped.
    let term = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    assert!(server.child.wait().unwrap().success());
    let store = agentloop_storage::open_store(&db).await.unwrap();
    let logged = store.list_events(&run_id, None, 10_000).await.unwrap();
    let requests = logged
        .iter()
        .filter(|e| e.path.is_root() && e.kind.name() == "streaming_start")
        .count();
    assert_eq!(requests, 1, "no model request after the cancel");
    assert!(logged.iter().all(|e| e.kind.name() != "tool_start"));
    assert!(!repo.join("effect.txt").exists());
}
