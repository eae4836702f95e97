//! `agentloop serve` as a process: an agent run of many tool steps keeps
//! each step (`GET /api/agent-runs/{id}/steps`); forked at a middle step
//! (`POST /api/agent-runs/{id}/fork`) it gives a new agent run of the same
//! task whose history is the run's up to the step and which goes on to its
//! own end, the run itself untouched. A seq that is no step is a 400
//! naming where the steps are; another user's run is a 404. On SQLite and
//! on PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::create_user;
use common::served::*;
use serde_json::{Value, json};

/// A model turn saying a word and viewing the project's root.
fn view(id: &str) -> Value {
    let input = json!({ "command": "view", "path": "/" }).to_string();
    json!({ "steps": [
        { "type": "text", "chunks": [format!("looking {id}")] },
        { "type": "tool_call", "id": id, "name": "fs", "fragments": [input] }
    ] })
}

fn messages(address: &str, token: &str, run_id: &str) -> Vec<Value> {
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
        .map(|m| m["message"].clone())
        .collect()
}

fn an_agent_run_forks_at_a_middle_step(db: &str, dir: &Path) {
    let mut turns: Vec<Value> = (0..8).map(|i| view(&format!("a{i}"))).collect();
    turns.push(text("Planned."));
    // What the fork asks for next (one script, shared in order).
    turns.extend([view("b0"), view("b1"), text("Planned again.")]);
    // What a fork with a prompt asks for.
    turns.push(text("Short plan."));
    let script = dir.join("script.json");
    write_script(&script, Value::Array(turns));
    let repo = dir.join("repo");
    let token = create_user(db, "ada");
    let other = create_user(db, "bob");
    let served = serve(db, &script, "one");
    let address = served.address.clone();
    let task_id = task(&address, &token, &repo);
    let run_id = start_run(&address, &token, &task_id, "planification");
    until_status(&address, &token, &run_id, "completed");

    let (status, steps) = http(
        &address,
        &token,
        "GET",
        &format!("/api/agent-runs/{run_id}/steps"),
        None,
    );
    assert_eq!(status, 200, "{steps}");
    let steps = steps.as_array().unwrap().clone();
    assert!(steps.len() >= 8, "every step kept: {steps:?}");
    let original = messages(&address, &token, &run_id);
    let model_steps: Vec<&Value> = steps.iter().filter(|s| s["next"] == "model").collect();
    let middle = model_steps[model_steps.len() / 2];
    let at = middle["seq"].as_u64().unwrap();
    let prefix = usize::try_from(middle["messages"].as_u64().unwrap()).unwrap();
    assert!(prefix > 2 && prefix < original.len(), "{middle}");

    let fork_path = format!("/api/agent-runs/{run_id}/fork");
    let (status, refused) = http(
        &address,
        &other,
        "POST",
        &fork_path,
        Some(json!({ "at": at })),
    );
    assert_eq!(status, 404, "another user's run: {refused}");
    let seqs: Vec<u64> = steps.iter().map(|s| s["seq"].as_u64().unwrap()).collect();
    let gap = (seqs[0]..).find(|s| !seqs.contains(s)).unwrap();
    let (status, refused) = http(
        &address,
        &token,
        "POST",
        &fork_path,
        Some(json!({ "at": gap })),
    );
    assert_eq!(status, 400, "{refused}");
    let said = refused["error"].as_str().unwrap_or_default();
    assert!(
        said.contains(&format!("from {} to {}", seqs[0], seqs[seqs.len() - 1])),
        "{refused}"
    );

    let (status, fork) = http(
        &address,
        &token,
        "POST",
        &fork_path,
        Some(json!({ "at": at })),
    );
    assert_eq!(status, 201, "{fork}");
    let fork_id = fork["id"].as_str().unwrap().to_owned();
    assert_ne!(fork_id, run_id);
    until_status(&address, &token, &fork_id, "completed");

    let (status, runs) = http(
        &address,
        &token,
        "GET",
        &format!("/api/tasks/{task_id}/agent-runs"),
        None,
    );
    assert_eq!(status, 200, "{runs}");
    let ids: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [run_id.as_str(), fork_id.as_str()],
        "the fork joined the task"
    );

    let forked = messages(&address, &token, &fork_id);
    assert_eq!(
        forked[..prefix],
        original[..prefix],
        "the fork's history starts as the run's"
    );
    assert_eq!(forked.len(), prefix + 2 * 2 + 1, "{forked:?}");
    assert!(
        forked
            .last()
            .unwrap()
            .to_string()
            .contains("Planned again."),
        "{forked:?}"
    );
    assert_eq!(
        messages(&address, &token, &run_id),
        original,
        "the run is untouched"
    );

    // A prompt only where the run calls the model next.
    let tools_step = steps.iter().find(|s| s["next"] == "tools").unwrap();
    let (status, refused) = http(
        &address,
        &token,
        "POST",
        &fork_path,
        Some(json!({ "at": tools_step["seq"], "prompt": "shorter" })),
    );
    assert_eq!(status, 400, "{refused}");
    let (status, prompted) = http(
        &address,
        &token,
        "POST",
        &fork_path,
        Some(json!({ "at": at, "prompt": "Make it shorter." })),
    );
    assert_eq!(status, 201, "{prompted}");
    let prompted_id = prompted["id"].as_str().unwrap().to_owned();
    until_status(&address, &token, &prompted_id, "completed");
    let with_prompt = messages(&address, &token, &prompted_id);
    assert_eq!(with_prompt[..prefix], original[..prefix]);
    assert_eq!(with_prompt[prefix]["role"], "user", "{with_prompt:?}");
    assert!(with_prompt[prefix].to_string().contains("Make it shorter."));
    assert!(
        with_prompt
            .last()
            .unwrap()
            .to_string()
            .contains("Short plan.")
    );
}

#[test]
fn an_agent_run_forks_at_a_middle_step_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    an_agent_run_forks_at_a_middle_step(&db, dir.path());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_run_forks_at_a_middle_step_on_postgres() {
    let Ok(admin_url) = std::env::var("AGENTLOOP_TEST_POSTGRES_URL") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI needs AGENTLOOP_TEST_POSTGRES_URL"
        );
        println!("skipping: AGENTLOOP_TEST_POSTGRES_URL is not set");
        return;
    };
    let name = format!("agentloop_cli_fork_{}", std::process::id());
    let database = ScratchDatabase::create(&admin_url, &name).await;
    let dir = tempfile::tempdir().unwrap();
    let url = database.url.clone();
    let path = dir.path().to_owned();
    tokio::task::spawn_blocking(move || an_agent_run_forks_at_a_middle_step(&url, &path))
        .await
        .unwrap();
    database.remove().await;
}
