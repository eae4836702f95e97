//! The server's projects over MCP (`/mcp`), driven by the reference Python
//! MCP SDK client: the caller's own projects, a task created and an agent
//! run started and followed to its end; another user sees none of it, and
//! a request without a token is refused. The client runs in its default
//! mode (the newest revision, no handshake) and in its handshake mode.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::create_user;
use common::served::*;
use serde_json::{Value, json};

fn python() -> Option<PathBuf> {
    common::python::python_with("mcp", "the Python MCP SDK")
}

/// The client's modes and the revision each must end up speaking.
const MODES: [(&str, &str); 2] = [("auto", "2026-07-28"), ("legacy", "2025-11-25")];

fn client(python: &Path, mode: &str, url: &str, token: &str, project: Option<&str>) -> Value {
    let mut command = Command::new(python);
    command
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_serve/client.py"))
        .args(["http", url, "projects"])
        .env("MCP_MODE", mode)
        .env("MCP_BEARER", token);
    match project {
        Some(project) => command.env("MCP_PROJECT", project),
        None => command.env_remove("MCP_PROJECT"),
    };
    let output = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the client failed:\n{stderr}");
    // The SDK logs a session end it takes for a failure.
    assert!(!stderr.contains("termination failed"), "{stderr}");
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap();
    let revision = MODES.iter().find(|(m, _)| *m == mode).map(|(_, r)| *r);
    assert_eq!(seen["protocol"].as_str(), revision, "{seen}");
    seen
}

#[test]
fn a_user_works_on_their_own_projects_over_mcp() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    write_script(
        &script,
        // One run for each of the client's modes.
        json!([
            { "steps": [{ "type": "text", "chunks": ["Planned."] }] },
            { "steps": [{ "type": "text", "chunks": ["Planned again."] }] }
        ]),
    );
    let ada = create_user(&db, "ada");
    let bob = create_user(&db, "bob");
    let server = serve(&db, &script, "mcp");
    let address = server.address.clone();
    let task = task(&address, &ada, &dir.path().join("repo"));
    let (_, task_json) = http(&address, &ada, "GET", &format!("/api/tasks/{task}"), None);
    let project = task_json["project_id"].as_str().unwrap().to_owned();
    let url = format!("http://{address}/mcp");

    for (mode, _) in MODES {
        let seen = client(&python, mode, &url, &ada, Some(&project));
        assert_eq!(
            seen["tools"],
            json!([
                "create_task",
                "get_agent_run",
                "list_projects",
                "list_tasks",
                "start_agent_run"
            ])
        );
        let projects = &seen["projects"]["structured"]["projects"];
        assert_eq!(projects.as_array().unwrap().len(), 1, "{seen}");
        assert_eq!(projects[0]["id"], project.as_str());
        assert_eq!(seen["task"]["structured"]["title"], "From MCP", "{seen}");
        assert_eq!(
            seen["finished"]["structured"]["status"], "completed",
            "{seen}"
        );

        // Another user's token shows none of it and cannot act on it.
        let seen = client(&python, mode, &url, &bob, Some(&project));
        assert_eq!(seen["projects"]["structured"]["projects"], json!([]));
        assert_eq!(seen["task"]["is_error"], true);
        assert!(
            seen["task"]["text"].as_str().unwrap().contains("HTTP 404"),
            "{seen}"
        );
    }

    // No token: refused before MCP.
    let (status, _) = http(&address, "wrong", "POST", "/mcp", Some(json!({})));
    assert_eq!(status, 401);
}
