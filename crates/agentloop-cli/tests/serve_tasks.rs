//! `agentloop serve` as a process, over HTTP: an agent's `ask_user`
//! question waits on the API and its answer continues the run; deleting a
//! task (refused while one of its runs waits, hidden from other users).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::create_user;
use common::served::*;
use serde_json::{Value, json};

/// The content of the tool result answering `call_id` in a run's messages.
fn tool_result(messages: &Value, call_id: &str) -> Option<(String, bool)> {
    messages.as_array()?.iter().find_map(|stored| {
        stored["message"]["content"]
            .as_array()?
            .iter()
            .find(|block| block["type"] == "tool_result" && block["tool_use_id"] == call_id)
            .map(|block| {
                (
                    block["content"].as_str().unwrap_or_default().to_owned(),
                    block["is_error"].as_bool().unwrap_or(false),
                )
            })
    })
}

#[test]
fn a_question_waits_on_the_api_and_the_answer_continues_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([
            { "steps": [
                { "type": "text", "chunks": ["I need one answer."] },
                { "type": "tool_call", "id": "q1", "name": "ask_user",
                  "fragments": ["{\"question\": \"Which file name?\", \"choices\": [\"README.md\", \"NOTES.md\"]}"] }
            ] },
            { "steps": [{ "type": "text", "chunks": ["Thanks, README.md it is."] }] }
        ]),
    );
    let token = create_user(&db, "ada");
    let server = serve(&db, &script, "questions");
    let address = server.address.clone();
    let task_id = task(&address, &token, &dir.path().join("repo"));
    let run_id = start_run(&address, &token, &task_id, "planification");

    until_status(&address, &token, &run_id, "waiting");
    let (status, pending) = http(
        &address,
        &token,
        "GET",
        &format!("/api/agent-runs/{run_id}/pending"),
        None,
    );
    assert_eq!(status, 200, "{pending}");
    assert_eq!(pending["agent_run"]["status"], "waiting", "{pending}");
    let calls = pending["pending"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{pending}");
    assert_eq!(calls[0]["call_id"], "q1");
    assert_eq!(calls[0]["tool"], "ask_user");
    assert_eq!(calls[0]["kind"], "question");
    assert_eq!(
        calls[0]["question"],
        "Which file name?\nChoices:\n- README.md\n- NOTES.md"
    );
    assert_eq!(calls[0]["decision"], Value::Null);

    // An empty answer is refused, and the run still waits.
    for empty in ["", "   "] {
        let (status, refused) = http(
            &address,
            &token,
            "POST",
            &format!("/api/agent-runs/{run_id}/decisions"),
            Some(json!({ "decisions": [
                { "call_id": "q1", "decision": "answer", "text": empty }
            ] })),
        );
        assert_eq!(status, 400, "{refused}");
        assert!(
            refused["error"]
                .as_str()
                .unwrap()
                .contains("must not be empty"),
            "{refused}"
        );
    }

    let (status, answered) = http(
        &address,
        &token,
        "POST",
        &format!("/api/agent-runs/{run_id}/decisions"),
        Some(json!({ "decisions": [
            { "call_id": "q1", "decision": "answer", "text": "README.md" }
        ] })),
    );
    assert_eq!(status, 200, "{answered}");
    assert_eq!(answered["resumed"], true, "{answered}");
    until_status(&address, &token, &run_id, "completed");

    // The model got the answer as the question's result, and went on.
    let (status, messages) = http(
        &address,
        &token,
        "GET",
        &format!("/api/agent-runs/{run_id}/messages"),
        None,
    );
    assert_eq!(status, 200, "{messages}");
    assert_eq!(
        tool_result(&messages, "q1"),
        Some(("README.md".to_owned(), false)),
        "{messages}"
    );
    let last = messages.as_array().unwrap().last().unwrap();
    assert_eq!(last["message"]["role"], "assistant");
    assert_eq!(
        last["message"]["content"][0]["text"],
        "Thanks, README.md it is."
    );
}

#[test]
fn a_task_is_deleted_with_its_runs_but_not_while_one_waits_nor_by_another_user() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([
            { "steps": [
                { "type": "tool_call", "id": "q1", "name": "ask_user",
                  "fragments": ["{\"question\": \"Go on?\"}"] }
            ] },
            { "steps": [{ "type": "text", "chunks": ["Planned."] }] }
        ]),
    );
    let ada = create_user(&db, "ada");
    let bob = create_user(&db, "bob");
    let server = serve(&db, &script, "deletes");
    let address = server.address.clone();
    let task_id = task(&address, &ada, &dir.path().join("repo"));
    let task_path = format!("/api/tasks/{task_id}");
    let waiting = start_run(&address, &ada, &task_id, "planification");
    until_status(&address, &ada, &waiting, "waiting");

    // While a run waits the task stays, and the answer names the run.
    let (status, refused) = http(&address, &ada, "DELETE", &task_path, None);
    assert_eq!(status, 409, "{refused}");
    let error = refused["error"].as_str().unwrap();
    assert!(
        error.contains(&waiting) && error.contains("waiting"),
        "{error}"
    );
    // Another user's task does not exist for them.
    let (status, hidden) = http(&address, &bob, "DELETE", &task_path, None);
    assert_eq!((status, &hidden["error"]), (404, &json!("Task not found")));
    let (status, _) = http(&address, &ada, "GET", &task_path, None);
    assert_eq!(status, 200);

    let (status, cancelled) = http(
        &address,
        &ada,
        "POST",
        &format!("/api/agent-runs/{waiting}/cancel"),
        Some(json!({})),
    );
    assert_eq!(status, 200, "{cancelled}");
    let finished = start_run(&address, &ada, &task_id, "planification");
    until_status(&address, &ada, &finished, "completed");

    let (status, body) = http(&address, &ada, "DELETE", &task_path, None);
    assert_eq!(status, 204, "{body}");
    let (status, gone) = http(&address, &ada, "GET", &task_path, None);
    assert_eq!((status, &gone["error"]), (404, &json!("Task not found")));
    for run_id in [&waiting, &finished] {
        for path in ["", "/messages", "/events"] {
            let (status, body) = http(
                &address,
                &ada,
                "GET",
                &format!("/api/agent-runs/{run_id}{path}"),
                None,
            );
            assert_eq!(status, 404, "{path}: {body}");
        }
    }
    let (status, again) = http(&address, &ada, "DELETE", &task_path, None);
    assert_eq!(status, 404, "{again}");
    // The project and its folder stay.
    let (status, projects) = http(&address, &ada, "GET", "/api/projects", None);
    assert_eq!(status, 200);
    let project_id = projects[0]["id"].as_str().unwrap();
    let (status, tasks) = http(
        &address,
        &ada,
        "GET",
        &format!("/api/projects/{project_id}/tasks"),
        None,
    );
    assert_eq!((status, tasks), (200, json!([])));
    assert!(dir.path().join("repo").is_dir());
}
