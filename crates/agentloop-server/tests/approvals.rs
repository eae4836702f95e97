//! A person in the loop over real HTTP: runs that wait for approvals and
//! answers, the decisions that resume them, and how decisions are checked.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_storage::model::{AgentRunStatus, AgentType};
use common::approvals::*;
use common::gated::start_run;
use serde_json::{Value, json};

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
    let (_, task_id) = server
        .project_and_task_with(json!({ "approvals": "ask" }))
        .await;
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
    let (_, task_id) = server
        .project_and_task_with(json!({ "approvals": "ask" }))
        .await;
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
    let (_, task_id) = server
        .project_and_task_with(json!({ "approvals": "ask" }))
        .await;
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
    let (_, task_id) = server
        .project_and_task_with(json!({ "approvals": "ask" }))
        .await;
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
    let server = common::start_with(store.clone(), common::config(provider.clone())).await;
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
    let (_, task_id) = server
        .project_and_task_with(json!({ "approvals": "ask" }))
        .await;
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
