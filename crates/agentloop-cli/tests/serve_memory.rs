//! The `memory` tool of `agentloop serve`'s runs, over HTTP: a fact one
//! run of a project writes is read by a later run of the same project —
//! after the server restarted, on SQLite and PostgreSQL — and never by a
//! run of another user's project; the project's owner lists, edits and
//! deletes its memories on the API, each linked to the run that wrote it,
//! and nobody else reaches them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::create_user;
use common::served::*;
use serde_json::{Value, json};

const FACT: &str = "The staging database listens on port 6543.";

/// A model turn that calls the memory tool with `input`.
fn memory_call(id: &str, input: Value) -> Value {
    json!({ "steps": [{ "type": "tool_call", "id": id, "name": "memory",
                        "fragments": [input.to_string()] }] })
}

/// The text of the tool result answering `call_id` in a run's messages.
fn tool_result(address: &str, token: &str, run_id: &str, call_id: &str) -> String {
    let (status, messages) = http(
        address,
        token,
        "GET",
        &format!("/api/agent-runs/{run_id}/messages"),
        None,
    );
    assert_eq!(status, 200, "{messages}");
    messages
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|stored| {
            stored["message"]["content"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .find(|block| block["type"] == "tool_result" && block["tool_use_id"] == call_id)
        .map(|block| block["content"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_else(|| panic!("no result for {call_id}: {messages}"))
}

/// A new task in project `project_id`; its id.
fn task_in(address: &str, token: &str, project_id: &str) -> String {
    let (status, task) = http(
        address,
        token,
        "POST",
        &format!("/api/projects/{project_id}/tasks"),
        Some(json!({ "title": "again" })),
    );
    assert_eq!(status, 201, "{task}");
    task["id"].as_str().unwrap().to_owned()
}

fn project_of(address: &str, token: &str, task_id: &str) -> String {
    let (_, task) = http(
        address,
        token,
        "GET",
        &format!("/api/tasks/{task_id}"),
        None,
    );
    task["project_id"].as_str().unwrap().to_owned()
}

fn memories_kept_per_project_across_a_restart(db: &str, dir: &Path) {
    let ada = create_user(db, "ada");
    let bob = create_user(db, "bob");

    // The first server: ada's run writes a fact.
    let first_script = dir.join("first.json");
    write_script(
        &first_script,
        json!([
            memory_call(
                "m1",
                json!({ "command": "create", "path": "/memories/facts.md",
                                      "file_text": FACT })
            ),
            text("Noted."),
        ]),
    );
    let server = serve(db, &first_script, "memory-1");
    let address = server.address.clone();
    let first_task = task(&address, &ada, &dir.join("ada-repo"));
    let project = project_of(&address, &ada, &first_task);
    let writer = start_run(&address, &ada, &first_task, "planification");
    until_status(&address, &ada, &writer, "completed");
    assert_eq!(
        tool_result(&address, &ada, &writer, "m1"),
        "File created successfully at: /memories/facts.md"
    );
    drop(server);

    // A new server on the same database: another task of ada's project
    // reads the fact; a run of bob's project sees no memory of ada's.
    let second_script = dir.join("second.json");
    write_script(
        &second_script,
        json!([
            memory_call(
                "r1",
                json!({ "command": "view", "path": "/memories/facts.md" })
            ),
            text("Recalled."),
            memory_call("b1", json!({ "command": "view", "path": "/memories" })),
            memory_call(
                "b2",
                json!({ "command": "view", "path": "/memories/facts.md" })
            ),
            text("Nothing here."),
        ]),
    );
    let server = serve(db, &second_script, "memory-2");
    let address = server.address.clone();
    let second_task = task_in(&address, &ada, &project);
    let reader = start_run(&address, &ada, &second_task, "planification");
    until_status(&address, &ada, &reader, "completed");
    let recalled = tool_result(&address, &ada, &reader, "r1");
    assert!(recalled.contains(FACT), "{recalled}");

    let bobs_task = task(&address, &bob, &dir.join("bob-repo"));
    let bobs_project = project_of(&address, &bob, &bobs_task);
    let stranger = start_run(&address, &bob, &bobs_task, "planification");
    until_status(&address, &bob, &stranger, "completed");
    let listing = tool_result(&address, &bob, &stranger, "b1");
    assert!(!listing.contains("facts.md"), "{listing}");
    let missing = tool_result(&address, &bob, &stranger, "b2");
    assert!(!missing.contains(FACT), "{missing}");
    assert!(missing.contains("does not exist"), "{missing}");

    // On the API: ada's project holds the one memory, linked to its run.
    let path = format!("/api/projects/{project}/memories");
    let (status, listed) = http(&address, &ada, "GET", &path, None);
    assert_eq!(status, 200, "{listed}");
    let memories = listed["memories"].as_array().unwrap();
    assert_eq!(memories.len(), 1, "{listed}");
    let memory = &memories[0];
    assert_eq!(memory["path"], "/memories/facts.md");
    assert_eq!(memory["text"], FACT);
    assert_eq!(memory["source_run"], writer.as_str());
    assert_eq!(memory["source_step"], "m1");
    let link = memory["source_link"].as_str().unwrap();
    let (status, source) = http(&address, &ada, "GET", link, None);
    assert_eq!(
        (status, source["id"].as_str()),
        (200, Some(writer.as_str())),
        "{source}"
    );
    let id = memory["id"].as_str().unwrap();
    let one = format!("{path}/{id}");

    // Bob reaches none of it: not the list, not the memory, not through
    // his own project's path.
    let (status, _) = http(&address, &bob, "GET", &path, None);
    assert_eq!(status, 404);
    let foreign = format!("/api/projects/{bobs_project}/memories/{id}");
    for (method, body) in [
        ("GET", None),
        ("PATCH", Some(json!({ "text": "overwritten" }))),
        ("DELETE", None),
    ] {
        let (status, answer) = http(&address, &bob, method, &foreign, body.clone());
        assert_eq!(status, 404, "{method}: {answer}");
        let (status, answer) = http(&address, &bob, method, &one, body);
        assert_eq!(status, 404, "{method}: {answer}");
    }
    let (status, bobs) = http(
        &address,
        &bob,
        "GET",
        &format!("/api/projects/{bobs_project}/memories"),
        None,
    );
    assert_eq!(
        (status, bobs["memories"].clone()),
        (200, json!([])),
        "{bobs}"
    );

    // Ada edits it (and refuses an unknown field), then deletes it.
    let (status, refused) = http(&address, &ada, "PATCH", &one, Some(json!({ "txt": "x" })));
    assert_eq!(status, 400, "{refused}");
    let (status, edited) = http(
        &address,
        &ada,
        "PATCH",
        &one,
        Some(json!({ "text": "Port 6544 since Monday.", "expires_at": 4_102_444_800_000_i64 })),
    );
    assert_eq!(status, 200, "{edited}");
    assert_eq!(edited["text"], "Port 6544 since Monday.");
    assert_eq!(edited["expires_at"], 4_102_444_800_000_i64);
    assert_eq!(edited["source_run"], writer.as_str());
    let (status, shown) = http(&address, &ada, "GET", &one, None);
    assert_eq!((status, &shown), (200, &edited));
    let (status, _) = http(&address, &ada, "DELETE", &one, None);
    assert_eq!(status, 204);
    let (status, gone) = http(&address, &ada, "GET", &one, None);
    assert_eq!(status, 404, "{gone}");
    let (_, listed) = http(&address, &ada, "GET", &path, None);
    assert_eq!(listed["memories"], json!([]));
}

#[test]
fn memories_are_the_projects_own_and_outlive_the_server_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    memories_kept_per_project_across_a_restart(&db, dir.path());
}

#[tokio::test]
async fn memories_are_the_projects_own_and_outlive_the_server_on_postgres() {
    let Ok(admin_url) = std::env::var("AGENTLOOP_TEST_POSTGRES_URL") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI needs AGENTLOOP_TEST_POSTGRES_URL"
        );
        println!("skipping: AGENTLOOP_TEST_POSTGRES_URL is not set");
        return;
    };
    let name = format!("agentloop_cli_memory_{}", std::process::id());
    let database = ScratchDatabase::create(&admin_url, &name).await;
    let dir = tempfile::tempdir().unwrap();
    let url = database.url.clone();
    let path = dir.path().to_owned();
    tokio::task::spawn_blocking(move || memories_kept_per_project_across_a_restart(&url, &path))
        .await
        .unwrap();
    database.remove().await;
}
