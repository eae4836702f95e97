//! `agentloop serve --allow-shell`: a project that enables the sandboxed
//! `shell` tool gets it in its runs. An implementation agent (scripted)
//! writes a small Python project, the review agent runs its tests through
//! `shell` and reads the real result; a command that writes outside the
//! project folder changes nothing there. Without `--allow-shell` a project
//! cannot ask for the tool.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::create_user;
use common::served::*;
use serde_json::{Value, json};

fn shell(id: &str, command: &str) -> Value {
    let input = json!({ "command": command }).to_string();
    json!({ "steps": [{ "type": "tool_call", "id": id, "name": "shell", "fragments": [input] }] })
}

const CALC: &str = "def add(a, b):\n    return a + b\n";
const TEST: &str = "import unittest\nfrom calc import add\n\n\
class AddTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n\
if __name__ == '__main__':\n    unittest.main()\n";

/// The results of the `shell` calls a run's messages hold, by call id.
fn shell_results(address: &str, token: &str, run_id: &str) -> Vec<(String, String)> {
    let (status, messages) = http(
        address,
        token,
        "GET",
        &format!("/api/agent-runs/{run_id}/messages"),
        None,
    );
    assert_eq!(status, 200, "{messages}");
    let mut results = Vec::new();
    for stored in messages.as_array().unwrap() {
        for block in stored["message"]["content"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if block["type"] == "tool_result" {
                let id = block["tool_use_id"].as_str().unwrap_or_default().to_owned();
                results.push((id, block["content"].to_string()));
            }
        }
    }
    results
}

#[test]
fn a_review_agent_runs_the_projects_tests_through_the_sandboxed_shell() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([
            fs_create("i1", "calc.py", CALC),
            fs_create("i2", "test_calc.py", TEST),
            text("Implemented."),
            shell("r1", "python3 -m unittest -v 2>&1"),
            shell(
                "r2",
                "touch ../escaped.txt; echo wrote-outside > ../escaped.txt; echo tried"
            ),
            json!({ "steps": [
                { "type": "tool_call", "id": "r3", "name": "complete_workflow", "fragments": ["{}"] }
            ] }),
            text("Reviewed: the tests pass."),
        ]),
    );
    let repo = dir.path().join("repo");
    let token = create_user(&db, "ada");
    let server = serve_with(&db, &script, "only", &["--allow-shell"]);
    let address = server.address.clone();
    let task_id = task_with(&address, &token, &repo, json!({ "shell": true }));
    start_run(&address, &token, &task_id, "implementation");

    let mut runs = Value::Null;
    for _ in 0..1200 {
        let (_, listed) = http(
            &address,
            &token,
            "GET",
            &format!("/api/tasks/{task_id}/agent-runs"),
            None,
        );
        let done = listed
            .as_array()
            .is_some_and(|runs| runs.len() == 2 && runs.iter().all(|r| r["status"] != "running"));
        runs = listed;
        if done {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let runs = runs.as_array().cloned().unwrap_or_default();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(runs.iter().all(|r| r["status"] == "completed"), "{runs:?}");
    let review = runs[1]["id"].as_str().unwrap();
    let results = shell_results(&address, &token, review);
    let tests = &results.iter().find(|(id, _)| id == "r1").unwrap().1;
    assert!(tests.contains("Ran 1 test"), "{tests}");
    assert!(tests.contains("OK"), "{tests}");
    let escape = &results.iter().find(|(id, _)| id == "r2").unwrap().1;
    assert!(escape.contains("tried"), "{escape}");
    assert!(
        !dir.path().join("escaped.txt").exists(),
        "nothing was written outside"
    );
    assert!(repo.join("calc.py").exists());
    drop(server);
}

#[test]
fn without_allow_shell_a_project_cannot_ask_for_the_shell() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    write_script(&script, json!([text("Never asked.")]));
    let token = create_user(&db, "ada");
    let server = serve(&db, &script, "only");
    let address = server.address.clone();
    let body = json!({ "name": "p", "repoFolder": dir.path().join("repo"), "shell": true });
    let (status, answer) = http(&address, &token, "POST", "/api/projects", Some(body));
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("--allow-shell"),
        "{answer}"
    );
    let body = json!({ "name": "p", "repoFolder": dir.path().join("repo"), "shell": "yes" });
    let (status, _) = http(&address, &token, "POST", "/api/projects", Some(body));
    assert_eq!(status, 400);
    let (status, document) = http(&address, &token, "GET", "/api/openapi.json", None);
    assert_eq!(status, 200);
    let project = &document["components"]["schemas"]["Project"];
    assert!(
        project["required"]
            .as_array()
            .unwrap()
            .contains(&json!("shell"))
    );
    drop(server);
}

#[test]
fn a_projects_own_write_quota_stops_a_command_and_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([
            shell(
                "q1",
                // Never ends by itself: only a quota stops it.
                "i=0; while true; do : > f$i; i=$((i+1)); done"
            ),
            text("Tried."),
        ]),
    );
    let repo = dir.path().join("repo");
    let token = create_user(&db, "ada");
    let server = serve_with(&db, &script, "only", &["--allow-shell"]);
    let address = server.address.clone();
    for refused in [
        json!({ "max_write_files": 0 }),
        json!({ "max_write_files": "20" }),
        json!({ "max_files": 20 }),
        json!(20),
    ] {
        let body =
            json!({ "name": "p", "repoFolder": repo, "shell": true, "shell_quota": refused });
        let (status, answer) = http(&address, &token, "POST", "/api/projects", Some(body));
        assert_eq!(status, 400, "{refused}: {answer}");
        assert!(
            answer["error"].as_str().unwrap().contains("shell_quota"),
            "{answer}"
        );
    }
    let task_id = task_with(
        &address,
        &token,
        &repo,
        json!({ "shell": true, "shell_quota": { "max_write_files": 20 } }),
    );
    let (_, task) = http(
        &address,
        &token,
        "GET",
        &format!("/api/tasks/{task_id}"),
        None,
    );
    let project_id = task["project_id"]
        .as_str()
        .or_else(|| task["projectId"].as_str())
        .unwrap()
        .to_owned();
    let (status, project) = http(
        &address,
        &token,
        "GET",
        &format!("/api/projects/{project_id}"),
        None,
    );
    assert_eq!(status, 200, "{project}");
    assert_eq!(project["shell_quota"], json!({ "max_write_files": 20 }));
    let run_id = start_run(&address, &token, &task_id, "implementation");
    let mut results = Vec::new();
    for _ in 0..1200 {
        results = shell_results(&address, &token, &run_id);
        if !results.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let result = &results.iter().find(|(id, _)| id == "q1").unwrap().1;
    // The project's 20, not the server's 100,000.
    assert!(
        result.contains("stopped: file quota: the command added more than 20 files"),
        "{result}"
    );
    // The quota is lifted again with null.
    let (status, project) = http(
        &address,
        &token,
        "PATCH",
        &format!("/api/projects/{project_id}"),
        Some(json!({ "shell_quota": null })),
    );
    assert_eq!(status, 200, "{project}");
    assert_eq!(project["shell_quota"], Value::Null);
    drop(server);
}
