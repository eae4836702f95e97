//! A waiting run's life over real HTTP: cancelled or marked done while it
//! waits, a project that lets writes run without asking, a run taken over
//! before every call is decided, and waiting across a restart (SQLite, and
//! PostgreSQL when configured).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_storage::model::{AgentRunStatus, now_millis};
use agentloop_storage::{PostgresStore, Store};
use agentloop_types::{EventKind, LoopStatus};
use common::approvals::*;
use common::gated::start_run;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_or_marking_done_a_waiting_run_closes_its_pending_calls() {
    let (_dir, store) = common::sqlite().await;
    let provider = ScriptedProvider::new([
        create("w1", "one.md", "1"),
        create("w2", "two.md", "2"),
        ScriptedTurn::new().text("This turn must never be requested."),
    ]);
    let server = common::start(store.clone(), provider.clone()).await;
    let (project_id, task_id) = server
        .project_and_task_with(json!({ "approvals": "ask" }))
        .await;
    let run_id = start_run(&server, &task_id, "implementation").await;
    until_status(&server, &run_id, "waiting").await;

    let (status, cancelled) = server
        .send(
            "POST",
            &format!("/api/agent-runs/{run_id}/cancel"),
            json!({}),
        )
        .await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(cancelled["stopped_by"], "cancel");
    let (_, pending) = server
        .get(&format!("/api/agent-runs/{run_id}/pending"))
        .await;
    assert_eq!(pending["pending"], json!([]));
    let (status, late) = decide(
        &server,
        &run_id,
        json!([{ "call_id": "w1", "decision": "approve" }]),
    )
    .await;
    assert_eq!(status, 409, "{late}");
    // The log ends with the cancelled result, the call is closed, and the
    // chain does not go on.
    let log = events(&server, &run_id, None).await;
    assert_eq!(finished_statuses(&log), ["suspended", "cancelled"]);
    let closed = messages(&*store, &run_id).await;
    let result = closed
        .last()
        .unwrap()
        .tool_results()
        .next()
        .unwrap()
        .clone();
    assert_eq!(result.tool_use_id, "w1");
    assert!(result.is_error, "{result:?}");
    let (_, runs) = server
        .get(&format!("/api/tasks/{task_id}/agent-runs"))
        .await;
    assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");

    // Mark Done on a task whose run waits does the same.
    let (status, task) = server
        .send(
            "POST",
            &format!("/api/projects/{project_id}/tasks"),
            json!({ "title": "Second" }),
        )
        .await;
    assert_eq!(status, 201);
    let second = task["id"].as_str().unwrap().to_owned();
    let run2 = start_run(&server, &second, "implementation").await;
    until_status(&server, &run2, "waiting").await;
    let (status, _) = server
        .send(
            "PUT",
            &format!("/api/tasks/{second}/workflow-complete"),
            json!({ "complete": true }),
        )
        .await;
    assert_eq!(status, 200);
    let (_, run) = server.get(&format!("/api/agent-runs/{run2}")).await;
    assert_eq!(run["status"], "completed");
    assert_eq!(run["stopped_by"], "workflow_complete");
    let log = events(&server, &run2, None).await;
    assert_eq!(finished_statuses(&log), ["suspended", "complete"]);
    // Its terminal event and its record say it was force-completed.
    let terminal = &log.last().unwrap()["result"];
    assert_eq!(terminal["stopped_by"], "workflow_complete", "{terminal}");
    let record = store.get_run(&run2).await.unwrap();
    assert_eq!(
        record.status,
        agentloop_storage::model::RunStatus::Completed
    );
    assert_eq!(record.result.unwrap()["stopped_by"], "workflow_complete");
    assert!(server.repo.path().is_dir());
    assert!(!server.repo.path().join("one.md").exists());
    assert!(!server.repo.path().join("two.md").exists());
    server.stop().await;
    assert_eq!(provider.remaining(), 1);
    let chat_runs = {
        let run = store.get_agent_run(&run2).await.unwrap();
        let conversation = store
            .get_conversation(run.conversation_id.as_deref().unwrap())
            .await
            .unwrap();
        store
            .list_runs(conversation.chat_id.as_deref().unwrap())
            .await
            .unwrap()
    };
    assert!(
        chat_runs
            .iter()
            .all(|r| r.status != agentloop_storage::model::RunStatus::Suspended),
        "{chat_runs:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_can_let_writes_run_without_asking() {
    let (_dir, store) = common::sqlite().await;
    let provider = ScriptedProvider::new([
        create("w1", "notes.md", "hello"),
        ScriptedTurn::new().text("Written."),
    ]);
    let server = common::start(store.clone(), provider).await;
    // A per-tool entry wins over the project's `ask` policy.
    let (project_id, task_id) = server
        .project_and_task_with(json!({ "approvals": "ask", "tool_approvals": { "fs": "never" } }))
        .await;
    let (_, project) = server.get(&format!("/api/projects/{project_id}")).await;
    assert_eq!(project["tool_approvals"], json!({ "fs": "never" }));
    assert_eq!(project["approvals"], "ask");
    start_run(&server, &task_id, "planification").await;
    let runs = server.settle(&task_id, 1).await;
    assert_eq!(runs[0]["status"], "completed", "{runs:?}");
    assert!(server.repo.path().join("notes.md").exists());
    let (status, error) = server
        .send(
            "POST",
            "/api/projects",
            json!({ "name": "x", "repoFolder": server.repo.path().join("other"),
                    "approvals": { "fs": "sometimes" } }),
        )
        .await;
    assert_eq!(status, 400, "{error}");
    assert!(
        error["error"].as_str().unwrap().starts_with("approvals:"),
        "{error}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_taken_over_before_all_calls_are_decided_waits_again_keeping_its_decisions() {
    let (_dir, store) = common::sqlite().await;
    let provider = ScriptedProvider::new([
        ScriptedTurn::new()
            .tool_call(
                "w1",
                "fs",
                json!({ "command": "create", "path": "a.md", "file_text": "A" }),
            )
            .tool_call(
                "w2",
                "fs",
                json!({ "command": "create", "path": "b.md", "file_text": "B" }),
            ),
        ScriptedTurn::new().text("Both written."),
    ]);
    let server = common::start(store.clone(), provider.clone()).await;
    let (_, task_id) = server
        .project_and_task_with(json!({ "approvals": "ask" }))
        .await;
    let run_id = start_run(&server, &task_id, "planification").await;
    until_status(&server, &run_id, "waiting").await;
    let (status, _) = decide(
        &server,
        &run_id,
        json!([{ "call_id": "w1", "decision": "approve" }]),
    )
    .await;
    assert_eq!(status, 200);
    // As if an instance crashed with the run woken before every call was
    // decided: the claim loop takes it over.
    assert!(store.resume_run(&run_id, now_millis()).await.unwrap());
    assert_eq!(
        store.get_agent_run(&run_id).await.unwrap().status,
        AgentRunStatus::Running,
        "the agent run moves with its record"
    );

    let run = until_status(&server, &run_id, "waiting").await;
    assert_eq!(
        run["pending"][0]["decision"],
        json!({ "decision": "approve" })
    );
    assert_eq!(run["pending"][1]["decision"], Value::Null);
    assert_eq!(provider.remaining(), 1, "the model was not asked again");
    assert!(!server.repo.path().join("a.md").exists());
    let (status, decided) = decide(
        &server,
        &run_id,
        json!([{ "call_id": "w2", "decision": "approve" }]),
    )
    .await;
    assert_eq!(status, 200, "{decided}");
    assert_eq!(decided["resumed"], true);
    let runs = server.settle(&task_id, 1).await;
    assert_eq!(runs[0]["status"], "completed", "{runs:?}");
    assert!(server.repo.path().join("a.md").exists());
    assert!(server.repo.path().join("b.md").exists());
    server.stop().await;
}

/// A run waits on one server; the server stops; a new one over the same
/// database lists what it waits for and a decision resumes it.
async fn survives_a_restart(
    open: impl Fn() -> futures::future::BoxFuture<'static, Arc<dyn Store>>,
) {
    let first = ScriptedProvider::new([create("w1", "notes.md", "hello")]);
    let mut server = common::start(open().await, first).await;
    let (_, task_id) = server
        .project_and_task_with(json!({ "approvals": "ask" }))
        .await;
    let run_id = start_run(&server, &task_id, "planification").await;
    until_status(&server, &run_id, "waiting").await;
    let token = server.token.clone();
    let repo = std::mem::replace(&mut server.repo, tempfile::tempdir().unwrap());
    server.stop().await;

    let second = ScriptedProvider::new([ScriptedTurn::new().text("Written.")]);
    let store = open().await;
    let server = common::start_as(store.clone(), common::config(second.clone()), token).await;
    let (status, pending) = server
        .get(&format!("/api/agent-runs/{run_id}/pending"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(pending["agent_run"]["status"], "waiting");
    assert_eq!(pending["pending"][0]["call_id"], "w1");
    assert!(!repo.path().join("notes.md").exists());
    let (status, decided) = decide(
        &server,
        &run_id,
        json!([{ "call_id": "w1", "decision": "approve" }]),
    )
    .await;
    assert_eq!(status, 200, "{decided}");
    assert_eq!(decided["resumed"], true);
    let runs = server.settle(&task_id, 1).await;
    assert_eq!(runs[0]["status"], "completed", "{runs:?}");
    assert_eq!(
        std::fs::read_to_string(repo.path().join("notes.md")).unwrap(),
        "hello"
    );
    assert_eq!(second.remaining(), 0);
    let log = events(&server, &run_id, None).await;
    let seqs: Vec<u64> = log.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());
    assert_eq!(finished_statuses(&log), ["suspended", "complete"]);
    let finished = store.list_events(&run_id, None, 1000).await.unwrap();
    assert!(finished.iter().any(|e| matches!(
        &e.kind,
        EventKind::Finished(f) if matches!(f.result.status, LoopStatus::Complete { .. })
    )));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_run_survives_a_restart_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.sqlite").to_str().unwrap().to_owned();
    survives_a_restart(move || {
        let path = path.clone();
        Box::pin(async move { agentloop_storage::open_store(&path).await.unwrap() })
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_run_survives_a_restart_on_postgres() {
    let Some(database) = common::postgres("a_waiting_run_survives_a_restart_on_postgres").await
    else {
        return;
    };
    let url = database.url.clone();
    survives_a_restart(move || {
        let url = url.clone();
        Box::pin(
            async move { Arc::new(PostgresStore::connect(&url).await.unwrap()) as Arc<dyn Store> },
        )
    })
    .await;
    drop(database);
}

/// The runtime gives a run's lease up as it logs the run's suspension (or
/// end), and the heartbeat reads a lease given up as lost: it halts the
/// run's execution, which could happen before the execution read the
/// suspension and switched the run to `waiting`. The run then stayed
/// `running` with nothing executing it (its record suspended, so no
/// instance claims it). With a heartbeat every millisecond the halt lands
/// in that window for some of many runs; every run must come to wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_halted_for_a_lease_they_gave_up_themselves_still_come_to_wait() {
    const RUNS: usize = 30;
    let (_dir, store) = common::sqlite().await;
    let turns: Vec<ScriptedTurn> = (0..RUNS)
        .map(|i| create(&format!("w{i}"), "one.md", "1"))
        .collect();
    let mut config = common::config(ScriptedProvider::new(turns));
    config.heartbeat = std::time::Duration::from_millis(1);
    let server = common::start_with(store.clone(), config).await;
    let (project_id, first_task) = server
        .project_and_task_with(json!({ "approvals": "ask" }))
        .await;
    let mut runs = vec![start_run(&server, &first_task, "implementation").await];
    while runs.len() < RUNS {
        let path = format!("/api/projects/{project_id}/tasks");
        let (status, task) = server.send("POST", &path, json!({ "title": "t" })).await;
        assert_eq!(status, 201, "{task}");
        let task_id = task["id"].as_str().unwrap();
        runs.push(start_run(&server, task_id, "implementation").await);
    }
    for run_id in &runs {
        until_status(&server, run_id, "waiting").await;
        let log = events(&server, run_id, None).await;
        assert_eq!(finished_statuses(&log), ["suspended"]);
    }
}
