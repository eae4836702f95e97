//! `agentloop serve` as a process: the run inspector's routes. A run that
//! creates a file, edits it and answers is shown step by step (`GET
//! /api/agent-runs/{id}/inspection`): each model step's request as the
//! run's log recorded it (its messages, tools and options), its response
//! and tokens, each tool step's calls with their durations and the files
//! they changed (a diff for an edit, the new text for a creation), secrets
//! redacted. A step saved
//! as an eval case (`GET …/steps/{seq}/eval-case`) is a dataset
//! `agentloop eval` runs. A message sent to a working run is listed by
//! `GET …/queued-messages` until the run takes it. Another user's run is
//! a 404 on each. On SQLite and on PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::served::*;
use common::{agentloop, create_user};
use serde_json::{Value, json};

const SECRET: &str = "sk-proj-abcdefghijklmnopqrstuvwxyz012345";

fn fs_call(id: &str, input: Value) -> Value {
    json!({ "type": "tool_call", "id": id, "name": "fs", "fragments": [input.to_string()] })
}

fn the_inspector_reads_a_run_step_by_step(db: &str, dir: &Path) {
    let script = dir.join("script.json");
    write_script(
        &script,
        json!([
            { "steps": [
                { "type": "text", "chunks": [format!("Noting it down, key {SECRET}")] },
                fs_call("c1", json!({ "command": "create", "path": "/notes.txt", "file_text": "one\ntwo\n" }))
            ], "usage": { "input_tokens": 30, "output_tokens": 7 } },
            { "steps": [
                fs_call("e1", json!({ "command": "str_replace", "path": "/notes.txt", "old_str": "two", "new_str": "three" }))
            ], "usage": { "input_tokens": 40, "output_tokens": 8 } },
            { "steps": [{ "type": "text", "chunks": ["Noted <img src=x onerror=alert(1)>"] }],
              "usage": { "input_tokens": 50, "output_tokens": 10 } },
            // The run the queued message goes to.
            { "steps": [
                { "type": "text", "chunks": ["Working"] },
                { "type": "delay", "ms": 4000 }
            ] },
            text("Short it is.")
        ]),
    );
    let repo = dir.join("repo");
    let token = create_user(db, "ada");
    let other = create_user(db, "bob");
    let served = serve(db, &script, "one");
    let address = served.address.clone();
    let task_id = task(&address, &token, &repo);
    let run_id = start_run(&address, &token, &task_id, "planification");
    until_status(&address, &token, &run_id, "completed");
    assert_eq!(
        std::fs::read_to_string(repo.join("notes.txt")).unwrap(),
        "one\nthree\n"
    );

    let path = format!("/api/agent-runs/{run_id}/inspection");
    let (status, inspection) = http(&address, &token, "GET", &path, None);
    assert_eq!(status, 200, "{inspection}");
    let body = inspection.to_string();
    assert!(!body.contains(SECRET), "the key is redacted: {body}");
    assert!(body.contains("[redacted]"), "{body}");
    assert_eq!(inspection["request_source"], "recorded");
    let tools: Vec<&str> = inspection["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"fs"), "{tools:?}");
    assert!(
        inspection["options"]["system_prompt"]
            .as_str()
            .unwrap()
            .contains("planification"),
        "{}",
        inspection["options"]
    );
    let messages = inspection["messages"].as_array().unwrap();
    let steps = inspection["steps"].as_array().unwrap();
    let model: Vec<&Value> = steps.iter().filter(|s| s["next"] == "model").collect();
    let tool_steps: Vec<&Value> = steps.iter().filter(|s| s["next"] == "tools").collect();
    assert_eq!((model.len(), tool_steps.len()), (3, 2), "{steps:?}");
    // Each model step: given its history, adding the model's turn, with
    // the turn's tokens and a duration.
    for (step, (input, output)) in model.iter().zip([(30, 7), (40, 8), (50, 10)]) {
        let before = step["messages_before"].as_u64().unwrap() as usize;
        let after = step["messages_after"].as_u64().unwrap() as usize;
        assert!(before >= 1 && after == before + 1, "{step}");
        // The request as recorded: the history it was given, sent as
        // stored (nothing was compacted), the agent's options and tools.
        let request = &step["request"];
        let sent: Vec<&Value> = request["messages"]
            .as_array()
            .unwrap_or_else(|| panic!("a recorded request: {step}"))
            .iter()
            .flat_map(|part| {
                let range = &part["history"];
                let (from, to) = (range["from"].as_u64(), range["to"].as_u64());
                let (from, to) = (from.unwrap() as usize, to.unwrap() as usize);
                messages[from..to].iter()
            })
            .collect();
        assert_eq!(
            sent,
            messages[..before].iter().collect::<Vec<_>>(),
            "{step}"
        );
        assert!(
            request["options"]["system_prompt"]
                .as_str()
                .unwrap()
                .contains("planification"),
            "{request}"
        );
        let offered: Vec<&str> = request["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|name| name.as_str().unwrap())
            .collect();
        assert!(offered.contains(&"fs"), "{request}");
        assert!(offered.iter().all(|name| tools.contains(name)), "{request}");
        assert_eq!(messages[before]["role"], "assistant", "{step}");
        assert_eq!(step["tokens"]["input_tokens"], input, "{step}");
        assert_eq!(step["tokens"]["output_tokens"], output, "{step}");
        assert!(step["duration_ms"].as_i64().unwrap() >= 0, "{step}");
    }
    let last = model[2];
    let answer = &messages[last["messages_before"].as_u64().unwrap() as usize];
    assert!(
        answer
            .to_string()
            .contains("Noted <img src=x onerror=alert(1)>"),
        "{answer}"
    );
    // Each tool step: its call, its result and the file it changed.
    let created = &tool_steps[0]["files"][0];
    assert_eq!(
        (
            &created["path"],
            &created["action"],
            &created["diff"],
            &created["after"]
        ),
        (
            &json!("/notes.txt"),
            &json!("create"),
            &json!(false),
            &json!("one\ntwo\n")
        ),
        "{}",
        tool_steps[0]
    );
    assert_eq!(tool_steps[0]["tool_calls"][0]["name"], "fs");
    for step in &tool_steps {
        let call = &step["tool_calls"][0];
        assert!(call["duration_ms"].is_u64(), "each call's duration: {call}");
    }
    assert!(
        tool_steps[0]["tool_calls"][0]["result"].is_string(),
        "{}",
        tool_steps[0]
    );
    let edited = &tool_steps[1]["files"][0];
    assert_eq!(
        (
            &edited["action"],
            &edited["diff"],
            &edited["before"],
            &edited["after"]
        ),
        (
            &json!("str_replace"),
            &json!(true),
            &json!("two"),
            &json!("three")
        ),
        "{}",
        tool_steps[1]
    );
    // The same changes as the folder's checkpoints saw them: the first
    // step's to the second's checkpoint, the second's to the folder now.
    let folder = |step: &Value| -> (Value, Vec<(String, String, String)>) {
        let changes = &step["folder_changes"];
        let listed = changes["changes"]
            .as_array()
            .unwrap_or_else(|| panic!("folder changes: {step}"))
            .iter()
            .map(|c| {
                (
                    c["path"].as_str().unwrap().to_owned(),
                    c["change"].as_str().unwrap().to_owned(),
                    c["diff"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        (changes["until"].clone(), listed)
    };
    let (until, first) = folder(tool_steps[0]);
    assert_eq!(until, tool_steps[1]["seq"], "{}", tool_steps[0]);
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(
        (first[0].0.as_str(), first[0].1.as_str()),
        ("notes.txt", "added")
    );
    assert!(first[0].2.contains("+one\n+two\n"), "{first:?}");
    let (until, second) = folder(tool_steps[1]);
    assert_eq!(until, Value::Null, "to the folder now");
    assert_eq!(
        (second[0].0.as_str(), second[0].1.as_str()),
        ("notes.txt", "modified")
    );
    assert!(second[0].2.contains("-two\n+three\n"), "{second:?}");

    // The last model step as an eval case, run by `agentloop eval`.
    let seq = last["seq"].as_u64().unwrap();
    let case_path = format!("/api/agent-runs/{run_id}/steps/{seq}/eval-case");
    let (status, dataset) = http(&address, &token, "GET", &case_path, None);
    assert_eq!(status, 200, "{dataset}");
    assert!(!dataset.to_string().contains(SECRET), "{dataset}");
    let case_file = dir.join("case.json");
    std::fs::write(&case_file, dataset.to_string()).unwrap();
    let eval_script = dir.join("eval-script.json");
    write_script(&eval_script, json!([text("Noted.")]));
    let home = dir.join("home");
    let output = agentloop()
        .arg("eval")
        .arg(&case_file)
        .arg("--provider")
        .arg(format!("scripted:{}", eval_script.display()))
        .args(["--format", "json"])
        .env("HOME", &home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    assert!(
        output.status.success(),
        "{report} {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(report["cases"][0]["passed"], true, "{report}");
    let (status, refused) = http(
        &address,
        &token,
        "GET",
        &format!("/api/agent-runs/{run_id}/steps/abc/eval-case"),
        None,
    );
    assert_eq!(status, 400, "{refused}");
    let (status, refused) = http(
        &address,
        &token,
        "GET",
        &format!("/api/agent-runs/{run_id}/steps/999999/eval-case"),
        None,
    );
    assert_eq!(status, 404, "{refused}");

    // A message to a working run is listed until the run takes it.
    let working = start_run(&address, &token, &task_id, "planification");
    let queued_path = format!("/api/agent-runs/{working}/queued-messages");
    // Sent once the model streams: the run takes it at its next step.
    read_sse_acting(&address, &token, &working, "first_chunk", || {
        let (status, answer) = http(
            &address,
            &token,
            "POST",
            &format!("/api/agent-runs/{working}/inputs"),
            Some(json!({ "type": "message", "message": {
                "id": "steer-1", "role": "user",
                "content": [{ "type": "text", "text": "Keep it short." }]
            } })),
        );
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["submitted"], "queued", "{answer}");
        let (status, queued) = http(&address, &token, "GET", &queued_path, None);
        assert_eq!(status, 200, "{queued}");
        let waiting = &queued["messages"][0];
        assert_eq!(waiting["message"]["id"], "steer-1", "{queued}");
        assert_eq!(waiting["strategy"], "enqueue", "{queued}");
        assert!(waiting["queued_at"].as_i64().unwrap() > 0, "{queued}");
    });
    until_status(&address, &token, &working, "completed");
    // Taken by the run, or, when it arrived during the run's last turn, by
    // the run started with it after: either way it leaves the queue.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (_, queued) = http(&address, &token, "GET", &queued_path, None);
        if queued["messages"] == json!([]) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never delivered: {queued}"
        );
        // The poll's pace, not a wait standing in for the condition.
        std::thread::sleep(std::time::Duration::from_millis(50));
    }

    // Another user reaches none of it.
    for path in [path, case_path, queued_path] {
        let (status, refused) = http(&address, &other, "GET", &path, None);
        assert_eq!(status, 404, "{path}: {refused}");
    }
}

#[test]
fn the_inspector_reads_a_run_step_by_step_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    the_inspector_reads_a_run_step_by_step(&db, dir.path());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_reads_a_run_step_by_step_on_postgres() {
    on_scratch_postgres("agentloop_cli_inspect", |url, path| {
        the_inspector_reads_a_run_step_by_step(url, path)
    })
    .await;
}
