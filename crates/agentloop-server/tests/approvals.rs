//! A person in the loop over real HTTP: runs that wait for approvals and
//! answers, the decisions that resume them, cancelling while waiting, and
//! waiting across a restart (SQLite, and PostgreSQL when configured).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_storage::model::{AgentRunStatus, AgentType};
use agentloop_storage::{PostgresStore, Store};
use agentloop_tools::AskUserTool;
use agentloop_types::{EventKind, LoopStatus, Message};
use common::TestServer;
use serde_json::{Value, json};

fn create(id: &str, path: &str, text: &str) -> ScriptedTurn {
    ScriptedTurn::new().tool_call(
        id,
        "fs",
        json!({ "command": "create", "path": path, "file_text": text }),
    )
}

async fn start_run(server: &TestServer, task_id: &str, agent: &str) -> String {
    let (status, run) = server
        .send(
            "POST",
            &format!("/api/tasks/{task_id}/agent-runs"),
            json!({ "agentType": agent }),
        )
        .await;
    assert_eq!(status, 201, "{run}");
    run["id"].as_str().unwrap().to_owned()
}

/// Polls the run until it has `status` (bounded).
async fn until_status(server: &TestServer, run_id: &str, status: &str) -> Value {
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

async fn decide(server: &TestServer, run_id: &str, decisions: Value) -> (u16, Value) {
    server
        .send(
            "POST",
            &format!("/api/agent-runs/{run_id}/decisions"),
            json!({ "decisions": decisions }),
        )
        .await
}

/// The SSE body of a run's event stream, after `last_event_id` if given.
async fn events(server: &TestServer, run_id: &str, last_event_id: Option<u64>) -> Vec<Value> {
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
fn finished_statuses(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "finished" && e["path"].as_array().is_none_or(Vec::is_empty))
        .map(|e| e["result"]["status"].as_str().unwrap().to_owned())
        .collect()
}

/// The chat messages of an agent run.
async fn messages(store: &dyn Store, run_id: &str) -> Vec<Message> {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_waits_for_approval_and_the_chain_goes_on_after_it() {
    let (_dir, store) = common::sqlite().await;
    let provider = ScriptedProvider::new([
        create("w1", "notes.md", "hello"),
        ScriptedTurn::new().text("Written."),
        ScriptedTurn::new().tool_call("c1", "complete_workflow", json!({ "summary": "ok" })),
        ScriptedTurn::new().text("Reviewed."),
    ]);
    let server = common::start(store.clone(), provider.clone()).await;
    let (_, task_id) = server.project_and_task().await;
    let mut socket = common::connect_ws(&server).await;
    let run_id = start_run(&server, &task_id, "implementation").await;

    let notice = tokio::task::spawn_blocking(move || {
        loop {
            let notice: Value =
                serde_json::from_str(&common::read_text_frame(&mut socket)).unwrap();
            if notice["type"] == "agent-run-waiting" {
                return notice;
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(notice["agentRunId"], run_id.as_str());
    assert_eq!(notice["taskId"], task_id.as_str());
    assert_eq!(notice["pending"][0]["call_id"], "w1");

    let run = until_status(&server, &run_id, "waiting").await;
    let expected = json!([{
        "call_id": "w1",
        "tool": "fs",
        "arguments": { "command": "create", "path": "notes.md", "file_text": "hello" },
        "kind": "approval",
        "reason": "fs calls with command create need approval",
        "path": [],
        "decision": null,
    }]);
    assert_eq!(run["pending"], expected);
    let (status, listed) = server
        .get(&format!("/api/tasks/{task_id}/agent-runs"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(listed[0]["status"], "waiting");
    assert_eq!(listed[0]["pending"], expected);
    let (status, pending) = server
        .get(&format!("/api/agent-runs/{run_id}/pending"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(pending["pending"], expected);
    assert_eq!(pending["agent_run"]["status"], "waiting");
    assert!(!server.repo.path().join("notes.md").exists());
    // The model was asked once: the run waits, it does not go on.
    assert_eq!(provider.remaining(), 3);
    // The stream of a waiting run ends after its suspended `finished`.
    let before = events(&server, &run_id, None).await;
    assert_eq!(finished_statuses(&before), ["suspended"]);
    let last_seq = before.last().unwrap()["seq"].as_u64().unwrap();

    let (status, decided) = decide(
        &server,
        &run_id,
        json!([{ "call_id": "w1", "decision": "approve" }]),
    )
    .await;
    assert_eq!(status, 200, "{decided}");
    assert_eq!(decided["resumed"], true);
    let runs = server.settle(&task_id, 2).await;
    assert_eq!(runs[0]["status"], "completed", "{runs:?}");
    assert_eq!(runs[0].get("pending"), None);
    assert_eq!(
        std::fs::read_to_string(server.repo.path().join("notes.md")).unwrap(),
        "hello"
    );

    // The log goes on after the suspension, seqs without a clash, and
    // reconnecting after the last event seen shows the resumed part.
    let all = events(&server, &run_id, None).await;
    let seqs: Vec<u64> = all.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());
    assert_eq!(finished_statuses(&all), ["suspended", "complete"]);
    let rest = events(&server, &run_id, Some(last_seq)).await;
    assert_eq!(rest.first().unwrap()["seq"], last_seq + 1);
    assert_eq!(rest.len(), all.len() - before.len());
    assert_eq!(finished_statuses(&rest), ["complete"]);

    server.stop().await;
    let runs = store.list_agent_runs(&task_id).await.unwrap();
    let kinds: Vec<_> = runs.iter().map(|r| (r.agent_type, r.status)).collect();
    assert_eq!(
        kinds,
        [
            (AgentType::Implementation, AgentRunStatus::Completed),
            (AgentType::Review, AgentRunStatus::Completed),
        ]
    );
    assert!(store.get_task(&task_id).await.unwrap().workflow_complete);
    assert_eq!(provider.remaining(), 0);
    // The model saw the write's result, not an error.
    let requests = provider.requests();
    let result = requests[1]
        .messages
        .last()
        .unwrap()
        .tool_results()
        .next()
        .unwrap()
        .clone();
    assert_eq!(result.tool_use_id, "w1");
    assert!(!result.is_error, "{result:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decisions_come_one_by_one_and_a_rejection_reaches_the_model() {
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
        ScriptedTurn::new().text("Understood."),
    ]);
    let server = common::start(store.clone(), provider.clone()).await;
    let (_, task_id) = server.project_and_task().await;
    let run_id = start_run(&server, &task_id, "planification").await;
    let run = until_status(&server, &run_id, "waiting").await;
    let ids: Vec<&str> = run["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["w1", "w2"]);

    let (status, first) = decide(
        &server,
        &run_id,
        json!([{ "call_id": "w1", "decision": "approve" }]),
    )
    .await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["resumed"], false);
    assert_eq!(first["agent_run"]["status"], "waiting");
    assert_eq!(
        first["pending"][0]["decision"],
        json!({ "decision": "approve" })
    );
    assert_eq!(first["pending"][1]["decision"], Value::Null);
    assert!(!server.repo.path().join("a.md").exists());

    // A call is decided once, even when the decision would change it.
    let (status, again) = decide(
        &server,
        &run_id,
        json!([{ "call_id": "w1", "decision": "reject", "reason": "changed my mind" }]),
    )
    .await;
    assert_eq!(status, 409, "{again}");
    assert_eq!(again["error"], "call w1 is already decided");

    let (status, second) = decide(
        &server,
        &run_id,
        json!([{ "call_id": "w2", "decision": "reject", "reason": "b.md must not exist" }]),
    )
    .await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["resumed"], true);
    let runs = server.settle(&task_id, 1).await;
    assert_eq!(runs[0]["status"], "completed", "{runs:?}");
    assert_eq!(
        std::fs::read_to_string(server.repo.path().join("a.md")).unwrap(),
        "A"
    );
    assert!(!server.repo.path().join("b.md").exists());
    server.stop().await;
    let requests = provider.requests();
    let results: Vec<_> = requests[1]
        .messages
        .last()
        .unwrap()
        .tool_results()
        .map(|r| (r.tool_use_id.clone(), r.is_error, r.content.clone()))
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!((results[0].0.as_str(), results[0].1), ("w1", false));
    assert_eq!((results[1].0.as_str(), results[1].1), ("w2", true));
    assert!(results[1].2.contains("b.md must not exist"), "{results:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edited_arguments_run_and_approve_always_covers_later_calls() {
    let (_dir, store) = common::sqlite().await;
    let provider = ScriptedProvider::new([
        create("w1", "draft.md", "model's text"),
        create("w2", "second.md", "2"),
        ScriptedTurn::new().text("Both written."),
    ]);
    let server = common::start(store.clone(), provider.clone()).await;
    let (_, task_id) = server.project_and_task().await;
    let run_id = start_run(&server, &task_id, "planification").await;
    until_status(&server, &run_id, "waiting").await;
    let edited = json!({ "command": "create", "path": "final.md", "file_text": "person's text" });
    let (status, decided) = decide(
        &server,
        &run_id,
        json!([{ "call_id": "w1", "decision": "approve", "arguments": edited }]),
    )
    .await;
    assert_eq!(status, 200, "{decided}");
    assert_eq!(decided["resumed"], true);
    // The run goes on, and waits again on its next write.
    until_status(&server, &run_id, "waiting").await;
    assert_eq!(
        std::fs::read_to_string(server.repo.path().join("final.md")).unwrap(),
        "person's text"
    );
    assert!(!server.repo.path().join("draft.md").exists());
    // The second wait is a new one: the first call's decision is gone.
    let (_, pending) = server
        .get(&format!("/api/agent-runs/{run_id}/pending"))
        .await;
    assert_eq!(pending["pending"][0]["call_id"], "w2");
    assert_eq!(pending["pending"][0]["decision"], Value::Null);
    assert_eq!(pending["pending"].as_array().unwrap().len(), 1);
    server.stop().await;

    // approve_always: a run that asks for fs twice waits once.
    let (_dir, store) = common::sqlite().await;
    let provider = ScriptedProvider::new([
        create("w1", "one.md", "1"),
        create("w2", "two.md", "2"),
        ScriptedTurn::new().text("Both written."),
    ]);
    let server = common::start(store.clone(), provider.clone()).await;
    let (_, task_id) = server.project_and_task().await;
    let run_id = start_run(&server, &task_id, "planification").await;
    until_status(&server, &run_id, "waiting").await;
    let (status, decided) = decide(
        &server,
        &run_id,
        json!([{ "call_id": "w1", "decision": "approve_always" }]),
    )
    .await;
    assert_eq!(status, 200, "{decided}");
    let runs = server.settle(&task_id, 1).await;
    assert_eq!(runs[0]["status"], "completed", "{runs:?}");
    assert!(server.repo.path().join("one.md").exists());
    assert!(server.repo.path().join("two.md").exists());
    let log = events(&server, &run_id, None).await;
    assert_eq!(finished_statuses(&log), ["suspended", "complete"]);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_resumes_a_question() {
    let (_dir, store) = common::sqlite().await;
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("q1", "ask_user", json!({ "question": "Which file name?" })),
        ScriptedTurn::new().text("Thanks."),
    ]);
    let mut config = common::config(provider.clone());
    config.extra_tools.push(Arc::new(AskUserTool));
    let server = common::start_with(store.clone(), config).await;
    let (_, task_id) = server.project_and_task().await;
    let run_id = start_run(&server, &task_id, "planification").await;
    let run = until_status(&server, &run_id, "waiting").await;
    assert_eq!(run["pending"][0]["kind"], "question");
    assert_eq!(run["pending"][0]["question"], "Which file name?");
    assert_eq!(run["pending"][0]["tool"], "ask_user");

    // A question is answered (or rejected), not approved.
    let (status, unfit) = decide(
        &server,
        &run_id,
        json!([{ "call_id": "q1", "decision": "approve" }]),
    )
    .await;
    assert_eq!(status, 400, "{unfit}");
    assert!(
        unfit["error"]
            .as_str()
            .unwrap()
            .contains("answer it or reject it"),
        "{unfit}"
    );
    let (status, answered) = decide(
        &server,
        &run_id,
        json!([{ "call_id": "q1", "decision": "answer", "text": "README.md" }]),
    )
    .await;
    assert_eq!(status, 200, "{answered}");
    assert_eq!(answered["resumed"], true);
    let runs = server.settle(&task_id, 1).await;
    assert_eq!(runs[0]["status"], "completed", "{runs:?}");
    server.stop().await;
    let requests = provider.requests();
    let result = requests[1]
        .messages
        .last()
        .unwrap()
        .tool_results()
        .next()
        .unwrap()
        .clone();
    assert_eq!(
        (
            result.tool_use_id.as_str(),
            result.is_error,
            result.content.as_str()
        ),
        ("q1", false, "README.md")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decisions_are_validated() {
    let (_dir, store) = common::sqlite().await;
    let provider = ScriptedProvider::new([
        create("w1", "notes.md", "hello"),
        ScriptedTurn::new().text("Done."),
    ]);
    let server = common::start(store.clone(), provider.clone()).await;
    let (_, task_id) = server.project_and_task().await;
    let run_id = start_run(&server, &task_id, "planification").await;
    until_status(&server, &run_id, "waiting").await;
    let path = format!("/api/agent-runs/{run_id}/decisions");

    let bad = [
        ("{", "malformed JSON"),
        ("[]", "the body must be a JSON object"),
        ("{}", "decisions must be an array"),
        (r#"{"decisions": []}"#, "decisions must not be empty"),
        (r#"{"decisions": [{"decision": "approve"}]}"#, "call_id"),
        (
            r#"{"decisions": [{"call_id": "w1", "decision": "maybe"}]}"#,
            "unknown decision",
        ),
        (
            r#"{"decisions": [{"call_id": "w1", "decision": "approve", "text": "x"}]}"#,
            "text does not go with decision approve",
        ),
        (
            r#"{"decisions": [{"call_id": "w1", "decision": "approve", "arguments": [1]}]}"#,
            "arguments must be a JSON object",
        ),
        (
            r#"{"decisions": [{"call_id": "w1", "decision": "approve"}, {"call_id": "w1", "decision": "approve"}]}"#,
            "decided twice",
        ),
        (
            r#"{"decisions": [{"call_id": "nope", "decision": "approve"}]}"#,
            "does not wait on call nope",
        ),
        (
            r#"{"decisions": [{"call_id": "w1", "decision": "answer", "text": "x"}]}"#,
            "waits for approval, not an answer",
        ),
        (
            r#"{"decisions": [{"call_id": "w1", "decision": "approve"}], "extra": 1}"#,
            "unknown field",
        ),
    ];
    for (body, message) in bad {
        let (status, error) = server.raw("POST", &path, body).await;
        assert_eq!(status, 400, "{body}: {error}");
        assert!(
            error["error"].as_str().unwrap().contains(message),
            "{body}: {error}"
        );
    }
    let (status, error) = server
        .raw("POST", "/api/agent-runs/not%20an%20id/decisions", "{}")
        .await;
    assert_eq!(status, 400, "{error}");
    // Nothing was recorded by the refused requests.
    let (_, pending) = server
        .get(&format!("/api/agent-runs/{run_id}/pending"))
        .await;
    assert_eq!(pending["pending"][0]["decision"], Value::Null);

    // Someone else's run is not found, as every foreign id.
    let (_, bob) = agentloop_server::users::create_user(&*store, "bob")
        .await
        .unwrap();
    for (method, url) in [
        ("GET", format!("/api/agent-runs/{run_id}/pending")),
        ("POST", path.clone()),
    ] {
        let response = server
            .client
            .request(method.parse().unwrap(), server.url(&url))
            .bearer_auth(&bob)
            .json(&json!({ "decisions": [{ "call_id": "w1", "decision": "approve" }] }))
            .send()
            .await
            .unwrap();
        let (status, body) = common::decode(response).await;
        assert_eq!(status, 404, "{method} {url}: {body}");
        assert_eq!(body["error"], "Agent run not found");
    }

    // Another agent on the task while one waits: 409 naming the waiting run.
    let (status, conflict) = server
        .send(
            "POST",
            &format!("/api/tasks/{task_id}/agent-runs"),
            json!({ "agentType": "implementation" }),
        )
        .await;
    assert_eq!(status, 409, "{conflict}");
    assert_eq!(conflict["runningAgent"]["id"], run_id.as_str());
    assert_eq!(conflict["runningAgent"]["status"], "waiting");
    assert!(
        conflict["error"].as_str().unwrap().contains(&run_id),
        "{conflict}"
    );

    let (status, _) = decide(
        &server,
        &run_id,
        json!([{ "call_id": "w1", "decision": "approve" }]),
    )
    .await;
    assert_eq!(status, 200);
    server.settle(&task_id, 1).await;
    // A run that does not wait takes no decisions.
    let (status, late) = decide(
        &server,
        &run_id,
        json!([{ "call_id": "w1", "decision": "approve" }]),
    )
    .await;
    assert_eq!(status, 409, "{late}");
    assert_eq!(late["agentRun"]["status"], "completed");
    let (status, pending) = server
        .get(&format!("/api/agent-runs/{run_id}/pending"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(pending["pending"], json!([]));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_or_marking_done_a_waiting_run_closes_its_pending_calls() {
    let (_dir, store) = common::sqlite().await;
    let provider = ScriptedProvider::new([
        create("w1", "one.md", "1"),
        create("w2", "two.md", "2"),
        ScriptedTurn::new().text("This turn must never be requested."),
    ]);
    let server = common::start(store.clone(), provider.clone()).await;
    let (project_id, task_id) = server.project_and_task().await;
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
    assert_eq!(run["status"], "cancelled");
    assert_eq!(run["stopped_by"], "workflow_complete");
    let log = events(&server, &run2, None).await;
    assert_eq!(finished_statuses(&log), ["suspended", "cancelled"]);
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
    let (project_id, task_id) = server
        .project_and_task_with(json!({ "approvals": { "fs": "never" } }))
        .await;
    let (_, project) = server.get(&format!("/api/projects/{project_id}")).await;
    assert_eq!(project["approvals"], json!({ "fs": "never" }));
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
    let (_, task_id) = server.project_and_task().await;
    let run_id = start_run(&server, &task_id, "planification").await;
    until_status(&server, &run_id, "waiting").await;
    let (status, _) = decide(
        &server,
        &run_id,
        json!([{ "call_id": "w1", "decision": "approve" }]),
    )
    .await;
    assert_eq!(status, 200);
    // As if an instance crashed with the run switched back to running
    // before every call was decided: the claim loop takes it over.
    assert!(
        store
            .switch_agent_run(&run_id, AgentRunStatus::Waiting, AgentRunStatus::Running)
            .await
            .unwrap()
    );
    let mut record = store.get_run(&run_id).await.unwrap();
    record.status = agentloop_storage::model::RunStatus::Running;
    store.update_run(&record).await.unwrap();

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
    let (_, task_id) = server.project_and_task().await;
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
