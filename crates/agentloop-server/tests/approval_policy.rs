//! A project's approval policy over HTTP: `unattended` (the server's
//! default) lets fs writes run without a person, `ask` makes them wait; a
//! project follows the server unless it sets its own, `PATCH` changes it,
//! per-tool `tool_approvals` win over it, and tools it does not cover (a
//! project's MCP servers) keep their own rule.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_storage::MemoryStore;
use agentloop_storage::model::ApprovalMode;
use common::approvals::{create, until_status};
use common::gated::start_run;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_shows_its_policy_and_patch_changes_it() {
    let server = common::start(Arc::new(MemoryStore::new()), ScriptedProvider::new([])).await;
    let (project_id, _) = server.project_and_task().await;
    let path = format!("/api/projects/{project_id}");
    let (_, project) = server.get(&path).await;
    assert_eq!(
        (&project["approvals"], &project["approvals_source"]),
        (&json!("unattended"), &json!("server"))
    );
    let (status, project) = server
        .send("PATCH", &path, json!({ "approvals": "ask" }))
        .await;
    assert_eq!(status, 200, "{project}");
    assert_eq!(
        (&project["approvals"], &project["approvals_source"]),
        (&json!("ask"), &json!("project"))
    );
    let (_, listed) = server.get("/api/projects").await;
    assert_eq!(listed[0]["approvals"], "ask");
    let (status, project) = server
        .send("PATCH", &path, json!({ "approvals": null }))
        .await;
    assert_eq!(status, 200, "{project}");
    assert_eq!(
        (&project["approvals"], &project["approvals_source"]),
        (&json!("unattended"), &json!("server"))
    );

    // Bad values name what is allowed, on PATCH and on POST.
    for bad in [
        json!("sometimes"),
        json!(true),
        json!(3),
        json!({ "fs": "never" }),
    ] {
        let (status, error) = server
            .send("PATCH", &path, json!({ "approvals": bad }))
            .await;
        assert_eq!(status, 400, "{error}");
        let message = error["error"].as_str().unwrap();
        assert!(
            message.contains("\"ask\"") && message.contains("\"unattended\""),
            "{message}"
        );
    }
    let (status, error) = server
        .send(
            "POST",
            "/api/projects",
            json!({ "name": "x", "repoFolder": server.repo.path().join("other"),
                    "approvals": "never" }),
        )
        .await;
    assert_eq!(status, 400, "{error}");
    assert!(error["error"].as_str().unwrap().contains("\"unattended\""));
    let (status, error) = server.send("PATCH", &path, json!({ "name": "y" })).await;
    assert_eq!(status, 400, "{error}");
    assert!(error["error"].as_str().unwrap().contains("approvals"));
    let (status, _) = server
        .send("PATCH", "/api/projects/nope", json!({ "approvals": "ask" }))
        .await;
    assert_eq!(status, 404);
    // The policy is stored with the project.
    assert_eq!(
        server
            .store
            .get_project(&project_id)
            .await
            .unwrap()
            .approval_mode,
        None
    );
    server.stop().await;

    // On a server whose default is `ask`, a project that sets nothing asks.
    let mut config = common::config(ScriptedProvider::new([]));
    config.approvals = ApprovalMode::Ask;
    let server = common::start_with(Arc::new(MemoryStore::new()), config).await;
    let (project_id, _) = server.project_and_task().await;
    let (_, project) = server.get(&format!("/api/projects/{project_id}")).await;
    assert_eq!(
        (&project["approvals"], &project["approvals_source"]),
        (&json!("ask"), &json!("server"))
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_decides_whether_a_write_waits() {
    let (_dir, store) = common::sqlite().await;
    let provider = ScriptedProvider::new([
        create("w1", "first.md", "one"),
        create("w2", "second.md", "two"),
        ScriptedTurn::new().text("Written."),
        create("w3", "third.md", "three"),
    ]);
    let mut config = common::config(provider);
    config.approvals = ApprovalMode::Ask;
    let server = common::start_with(store, config).await;
    let (project_id, task_id) = server.project_and_task().await;
    let repo = server.repo.path().to_owned();

    // The server asks: the write waits for a person.
    let run = start_run(&server, &task_id, "planification").await;
    let waiting = until_status(&server, &run, "waiting").await;
    assert_eq!(waiting["pending"][0]["call_id"], "w1", "{waiting}");
    assert!(!repo.join("first.md").exists());
    let (status, _) = server
        .send("POST", &format!("/api/agent-runs/{run}/cancel"), json!({}))
        .await;
    assert_eq!(status, 200);

    // The project lets its agents work unattended: the write runs.
    let path = format!("/api/projects/{project_id}");
    let (status, _) = server
        .send("PATCH", &path, json!({ "approvals": "unattended" }))
        .await;
    assert_eq!(status, 200);
    let run = start_run(&server, &task_id, "planification").await;
    until_status(&server, &run, "completed").await;
    assert_eq!(
        std::fs::read_to_string(repo.join("second.md")).unwrap(),
        "two"
    );

    // A per-tool entry wins over the policy, tool by tool.
    let (status, _) = server
        .send(
            "PATCH",
            &path,
            json!({ "tool_approvals": { "fs": "always" } }),
        )
        .await;
    assert_eq!(status, 200);
    let run = start_run(&server, &task_id, "planification").await;
    let waiting = until_status(&server, &run, "waiting").await;
    assert_eq!(waiting["pending"][0]["call_id"], "w3", "{waiting}");
    assert!(!repo.join("third.md").exists());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unattended_project_still_asks_before_its_mcp_tools_act() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("m1", "fake__wait", json!({})),
        ScriptedTurn::new().text("never requested"),
    ]);
    let server = common::start_with_project_mcp(provider).await;
    let task_id = server
        .mcp_task(
            json!("unattended"),
            json!({ "fake": { "command": "python3", "args": [common::fake_mcp_server()] } }),
        )
        .await;
    let run = start_run(&server, &task_id, "planification").await;
    let waiting = until_status(&server, &run, "waiting").await;
    assert_eq!(waiting["pending"][0]["tool"], "fake__wait", "{waiting}");
    assert_eq!(waiting["pending"][0]["kind"], "approval");
    server.stop().await;
}
