//! A project's agents over HTTP against `agentloop serve` (a scripted
//! provider): the implementation agent hands the conversation to a
//! security specialist declared in the project, a follower of the run's
//! event stream sees the handoff and who speaks, the specialist's tool
//! call runs in the project folder; and mistakes in `agents` are refused
//! with 400 and create or change nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::create_user;
use common::served::{http, serve, start_run, until_status, whole_stream, write_script};
use serde_json::{Value, json};

const AGENTS: &str = r#"{
  "implementation": {"handoffs": ["security"]},
  "security": {
    "description": "Audits code for vulnerabilities.",
    "instructions": "You are a security specialist.",
    "model": "security-model",
    "handoffs": ["implementation"],
    "history": "text_only"
  }
}"#;

fn project(address: &str, token: &str, repo: &std::path::Path, agents: Value) -> (u16, Value) {
    http(
        address,
        token,
        "POST",
        "/api/projects",
        Some(json!({"name": "p", "repoFolder": repo, "agents": agents})),
    )
}

#[test]
fn the_implementation_agent_hands_off_to_a_project_specialist() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([
            { "steps": [
                { "type": "text", "chunks": ["Handing over."] },
                { "type": "tool_call", "id": "h1", "name": "transfer_to_security",
                  "fragments": ["{\"reason\": \"needs an audit\"}"] }
            ] },
            { "steps": [
                { "type": "delay", "ms": 300 },
                { "type": "tool_call", "id": "a1", "name": "fs",
                  "fragments": ["{\"command\": \"create\", \"path\": \"/audit.md\", \"file_text\": \"no findings\"}"] }
            ] },
            { "steps": [{ "type": "text", "chunks": ["Audited: no findings."] }] },
            // The review the implementation chains to.
            { "steps": [{ "type": "tool_call", "id": "r1", "name": "complete_workflow", "fragments": ["{}"] }] },
            { "steps": [{ "type": "text", "chunks": ["Reviewed."] }] }
        ]),
    );
    let repo = dir.path().join("repo");
    let token = create_user(&db, "ada");
    let mut server = serve(&db, &script, "only");
    let address = server.address.clone();

    let (status, created) = project(
        &address,
        &token,
        &repo,
        serde_json::from_str(AGENTS).unwrap(),
    );
    assert_eq!(status, 201, "{created}");
    assert_eq!(
        created["agents"]["implementation"]["handoffs"],
        json!(["security"])
    );
    assert_eq!(created["agents"]["security"]["history"], "text_only");
    let project_id = created["id"].as_str().unwrap();
    let (status, task) = http(
        &address,
        &token,
        "POST",
        &format!("/api/projects/{project_id}/tasks"),
        Some(json!({"title": "t"})),
    );
    assert_eq!(status, 201, "{task}");
    let task_id = task["id"].as_str().unwrap();

    let run_id = start_run(&address, &token, task_id, "implementation");
    // A follower reads the run's stream from its start to its end.
    let events = whole_stream(&address, &token, &run_id);
    let speakers: Vec<String> = events
        .iter()
        .filter_map(|(name, data)| match name.as_str() {
            "streaming_start" => Some(format!("speaks {}", data["agent"].as_str().unwrap_or("?"))),
            "handoff" => Some(format!(
                "{} -> {} ({})",
                data["from"].as_str().unwrap(),
                data["to"].as_str().unwrap(),
                data["reason"].as_str().unwrap_or("")
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        speakers,
        [
            "speaks implementation",
            "implementation -> security (needs an audit)",
            "speaks security",
            "speaks security"
        ],
        "{events:?}"
    );
    let run = until_status(&address, &token, &run_id, "completed");
    assert_eq!(run["agent_type"], "implementation", "{run}");
    assert_eq!(
        std::fs::read_to_string(repo.join("audit.md")).unwrap(),
        "no findings"
    );

    // The inspector shows each request as recorded: the specialist's
    // with its own instructions, model and tools, and the history as its
    // `text_only` filter sent it — the handoff turn as its text alone, a
    // message only that request carried.
    let (status, inspection) = http(
        &address,
        &token,
        "GET",
        &format!("/api/agent-runs/{run_id}/inspection"),
        None,
    );
    assert_eq!(status, 200, "{inspection}");
    assert_eq!(inspection["request_source"], "recorded");
    let requests: Vec<&Value> = inspection["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["next"] == "model")
        .map(|s| &s["request"])
        .collect();
    assert_eq!(requests.len(), 3, "{inspection}");
    assert!(
        requests[0]["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("transfer_to_security"))
    );
    let specialist = requests[1];
    assert_eq!(
        specialist["options"]["system_prompt"], "You are a security specialist.",
        "{specialist}"
    );
    assert_eq!(specialist["options"]["model"], "security-model");
    assert!(
        specialist["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("transfer_to_implementation"))
    );
    let only_sent: Vec<&Value> = specialist["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|part| part.get("message"))
        .collect();
    assert_eq!(only_sent.len(), 1, "{specialist}");
    assert_eq!(only_sent[0]["role"], "assistant");
    assert_eq!(
        only_sent[0]["content"],
        json!([{ "type": "text", "text": "Handing over." }]),
        "{specialist}"
    );
    server.child.kill().unwrap();
    server.child.wait().unwrap();
}

#[test]
fn mistakes_in_a_projects_agents_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([{ "steps": [{ "type": "text", "chunks": ["Done."] }] }]),
    );
    let token = create_user(&db, "ada");
    let mut server = serve(&db, &script, "only");
    let address = server.address.clone();
    let cases = [
        (
            json!({"implementation": {"handoffs": ["ghost"]}}),
            "`implementation` hands off to `ghost`, which is neither declared nor one of the server's agents",
        ),
        (
            json!({"bad name": {}}),
            "agent name `bad name` must be 1 to 48 ASCII letters",
        ),
        (
            json!({"review": {"instructions": "Mine."}}),
            "`review` is one of the server's agents",
        ),
        (
            json!({"security": {"colour": "red"}}),
            "unknown field `colour`",
        ),
        (json!(["security"]), "agents:"),
    ];
    for (i, (agents, expected)) in cases.into_iter().enumerate() {
        let repo = dir.path().join(format!("repo{i}"));
        let (status, body) = project(&address, &token, &repo, agents.clone());
        assert_eq!(status, 400, "{agents}: {body}");
        assert!(
            body["error"].as_str().unwrap().contains(expected),
            "{agents}: {body}"
        );
    }
    let (_, projects) = http(&address, &token, "GET", "/api/projects", None);
    assert_eq!(projects, json!([]), "nothing was created");

    // A change is checked the same way, and a refused one changes nothing.
    let repo = dir.path().join("repo");
    let (status, created) = project(&address, &token, &repo, json!(null));
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["agents"], json!({}));
    let path = format!("/api/projects/{}", created["id"].as_str().unwrap());
    let (status, body) = http(
        &address,
        &token,
        "PATCH",
        &path,
        Some(json!({"agents": {"review": {"handoffs": ["nobody"]}}})),
    );
    assert_eq!(status, 400, "{body}");
    let (status, changed) = http(
        &address,
        &token,
        "PATCH",
        &path,
        Some(json!({"agents": serde_json::from_str::<Value>(AGENTS).unwrap()})),
    );
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["agents"]["security"]["model"], "security-model");
    let (status, cleared) = http(
        &address,
        &token,
        "PATCH",
        &path,
        Some(json!({"agents": null})),
    );
    assert_eq!(status, 200, "{cleared}");
    assert_eq!(cleared["agents"], json!({}));
    server.child.kill().unwrap();
    server.child.wait().unwrap();
}
