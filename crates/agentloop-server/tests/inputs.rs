//! `POST /api/tasks/{id}/inputs` and `POST /api/agent-runs/{id}/inputs`
//! over real HTTP: the `RunInput` every host submits, taken as it is by a
//! client — a start naming its agent and request, a decision that resumes
//! the run, a message that asks to be refused while an agent runs, Mark Done — and
//! refused, with a reason, where it does not fit.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use common::approvals::{create, until_status};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_a_decision_and_mark_done_go_through_the_one_input() {
    let (_dir, store) = common::sqlite().await;
    let provider = ScriptedProvider::new([
        create("w1", "notes.md", "hello"),
        ScriptedTurn::new().text("Written."),
    ]);
    let server = common::start(store.clone(), provider.clone()).await;
    let (_, task_id) = server
        .project_and_task_with(json!({ "approvals": "ask" }))
        .await;
    let task_inputs = format!("/api/tasks/{task_id}/inputs");

    // Refused before anything starts: a field no input has, an agent the
    // server does not offer, a type that does not exist.
    for (body, says) in [
        (json!({ "type": "start", "agnt": "review" }), "agnt"),
        (json!({ "type": "start", "agent": "poet" }), "poet"),
        (json!({ "type": "rewind" }), "rewind"),
        // serde would read a tag's index as its variant; the schema does not.
        (
            json!({ "type": "message", "message": { "id": "m0", "role": "user", "content": [
                { "type": "document", "name": "a", "source": { "id": "x", "kind": 0 } }
            ] } }),
            "/message/content/0",
        ),
    ] {
        let (status, answer) = server.send("POST", &task_inputs, body.clone()).await;
        assert_eq!(status, 400, "{body} → {answer}");
        assert!(answer["error"].as_str().unwrap().contains(says), "{answer}");
    }
    let (status, answer) = server
        .send("POST", &task_inputs, json!({ "type": "cancel" }))
        .await;
    assert_eq!(status, 409, "nothing to cancel yet: {answer}");

    let start = json!({
        "type": "start",
        "agent": "implementation",
        "message": { "id": "m1", "role": "user", "content": [{ "type": "text", "text": "Write notes." }] },
    });
    let (status, started) = server.send("POST", &task_inputs, start).await;
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["submitted"], "started");
    assert_eq!(started["agent_run"]["agent_type"], "implementation");
    let run_id = started["agent_run"]["id"].as_str().unwrap().to_owned();

    until_status(&server, &run_id, "waiting").await;
    // A message that asks to be rejected while an agent is not done is
    // refused, saying why.
    let (status, answer) = server
        .send(
            "POST",
            &task_inputs,
            json!({ "type": "message", "strategy": "reject", "message": { "id": "m2", "role": "user", "content": [{ "type": "text", "text": "Also this." }] } }),
        )
        .await;
    assert_eq!(status, 409, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains(&run_id),
        "{answer}"
    );
    // A start belongs to a task, not to one of its runs.
    let run_inputs = format!("/api/agent-runs/{run_id}/inputs");
    let (status, _) = server
        .send("POST", &run_inputs, json!({ "type": "start" }))
        .await;
    assert_eq!(status, 400);

    let decide = json!({ "type": "decide", "decisions": { "w1": { "decision": "approve" } } });
    let (status, decided) = server.send("POST", &run_inputs, decide).await;
    assert_eq!(status, 200, "{decided}");
    assert_eq!(decided["submitted"], "decided");
    assert_eq!(decided["resumed"], true);
    until_status(&server, &run_id, "completed").await;
    assert_eq!(
        std::fs::read_to_string(server.repo.path().join("notes.md")).unwrap(),
        "hello",
        "the approved call ran"
    );

    let (status, stopped) = server
        .send("POST", &task_inputs, json!({ "type": "stop" }))
        .await;
    assert_eq!(status, 200, "{stopped}");
    assert_eq!(stopped, json!({ "submitted": "stopped" }));
    let (_, task) = server.get(&format!("/api/tasks/{task_id}")).await;
    assert_eq!(task["workflow_complete"], true, "{task}");
    server.stop().await;
}
