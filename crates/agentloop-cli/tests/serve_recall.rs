//! Memories on `agentloop serve`, over HTTP: every agent run starts with
//! the memories of its project its prompt is about — a fact one task's run
//! wrote is recalled in another task of the same project (its event names
//! it once, also across a wait for a person, and the model's request
//! carries it), never in another user's project — on SQLite and
//! PostgreSQL; and a project that turns on the extraction step ends each
//! run with a model call whose proposals are kept as the project's
//! memories, linked to the run, with a `hook` event saying so.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::create_user;
use common::served::*;
use serde_json::{Value, json};

const FACT: &str = "The staging database listens on port 6543.";
const QUESTION: &str = "Which port does the staging database listen on?";

/// A model turn that calls the memory tool with `input`.
fn memory_call(id: &str, input: Value) -> Value {
    json!({ "steps": [{ "type": "tool_call", "id": id, "name": "memory",
                        "fragments": [input.to_string()] }] })
}

/// A model turn that asks the person `question`.
fn question(id: &str, question: &str) -> Value {
    let input = json!({ "question": question }).to_string();
    json!({ "steps": [{ "type": "tool_call", "id": id, "name": "ask_user",
                        "fragments": [input] }] })
}

/// The project of a task.
fn project_of(address: &str, token: &str, task_id: &str) -> String {
    let (status, task) = http(
        address,
        token,
        "GET",
        &format!("/api/tasks/{task_id}"),
        None,
    );
    assert_eq!(status, 200, "{task}");
    task["project_id"].as_str().unwrap().to_owned()
}

/// A new task in project `project_id`; its id.
fn task_in(address: &str, token: &str, project_id: &str) -> String {
    let (status, task) = http(
        address,
        token,
        "POST",
        &format!("/api/projects/{project_id}/tasks"),
        Some(json!({ "title": "another" })),
    );
    assert_eq!(status, 201, "{task}");
    task["id"].as_str().unwrap().to_owned()
}

/// Starts the planning agent on a task with `request`; the run's id.
fn start_with(address: &str, token: &str, task_id: &str, request: &str) -> String {
    let (status, answer) = http(
        address,
        token,
        "POST",
        &format!("/api/tasks/{task_id}/inputs"),
        Some(
            json!({ "type": "start", "agent": "planification", "message": {
            "id": "request", "role": "user",
            "content": [{ "type": "text", "text": request }]
        } }),
        ),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["submitted"], "started", "{answer}");
    answer["agent_run"]["id"].as_str().unwrap().to_owned()
}

/// The `passages_recalled` edits of a run's whole event log.
fn recalls(address: &str, token: &str, run_id: &str) -> Vec<Value> {
    whole_stream(address, token, run_id)
        .into_iter()
        .filter(|(name, data)| {
            name == "context_edited" && data["edit"]["kind"] == "passages_recalled"
        })
        .map(|(_, data)| data["edit"].clone())
        .collect()
}

/// The text of a chat completion's messages, all roles.
fn request_text(request: &Value) -> String {
    request["messages"].to_string()
}

fn recalled_in_the_projects_other_tasks_only(db: &str, dir: &Path, base_url: &str) {
    let ada = create_user(db, "ada");
    let bob = create_user(db, "bob");
    let script = dir.join("script.json");
    write_script(
        &script,
        json!([
            // Ada's first task: the fact is written.
            memory_call(
                "m1",
                json!({ "command": "create", "path": "/memories/staging.md",
                        "file_text": FACT })
            ),
            text("Noted."),
            // Her second task: it asks a question, then answers.
            question("q1", "Staging or production?"),
            text("Port 6543."),
            // Bob's task.
            text("I do not know."),
        ]),
    );
    let server = serve(db, &script, "recall-1");
    let address = server.address.clone();
    let first = task(&address, &ada, &dir.join("ada-repo"));
    let project = project_of(&address, &ada, &first);
    let writer = start_run(&address, &ada, &first, "planification");
    until_status(&address, &ada, &writer, "completed");

    let second = task_in(&address, &ada, &project);
    let reader = start_with(&address, &ada, &second, QUESTION);
    until_status(&address, &ada, &reader, "waiting");
    let (status, decided) = http(
        &address,
        &ada,
        "POST",
        &format!("/api/agent-runs/{reader}/decisions"),
        Some(json!({ "decisions": [
            { "call_id": "q1", "decision": "answer", "text": "Staging." }
        ] })),
    );
    assert_eq!(status, 200, "{decided}");
    until_status(&address, &ada, &reader, "completed");
    // Recalled once, as the run started: the run resumed after its wait
    // goes on with what it recalled.
    let recalled = recalls(&address, &ada, &reader);
    assert_eq!(recalled.len(), 1, "{recalled:?}");
    assert_eq!(recalled[0]["sources"], json!(["/memories/staging.md"]));
    assert!(
        recalled[0]["query"].as_str().unwrap().contains(QUESTION),
        "{recalled:?}"
    );
    // The run that wrote the fact started before it existed.
    assert!(recalls(&address, &ada, &writer).is_empty());

    let bobs = task(&address, &bob, &dir.join("bob-repo"));
    let stranger = start_with(&address, &bob, &bobs, QUESTION);
    until_status(&address, &bob, &stranger, "completed");
    assert!(recalls(&address, &bob, &stranger).is_empty());
    drop(server);

    // Served again on the same database, by a model that shows what it
    // is sent: ada's next task's request carries the fact, bob's not.
    let server = serve_provider(
        db,
        &[
            "--provider",
            "openai-compatible",
            "--base-url",
            base_url,
            "--model",
            "mock",
        ],
        dir,
        "recall-2",
        &[],
    );
    let address = server.address.clone();
    let third = task_in(&address, &ada, &project);
    let run = start_with(&address, &ada, &third, QUESTION);
    until_status(&address, &ada, &run, "completed");
    let bobs_project = project_of(&address, &bob, &bobs);
    let bobs_next = task_in(&address, &bob, &bobs_project);
    let run = start_with(&address, &bob, &bobs_next, QUESTION);
    until_status(&address, &bob, &run, "completed");
}

async fn recall_scenario(db: String, dir: std::path::PathBuf) {
    let model = common::openai::start(None, "Port 6543.").await;
    let base_url = model.base_url.clone();
    tokio::task::spawn_blocking(move || {
        recalled_in_the_projects_other_tasks_only(&db, &dir, &base_url)
    })
    .await
    .unwrap();
    let requests = model.completions().await;
    assert_eq!(requests.len(), 2);
    let adas = request_text(&requests[0]);
    assert!(adas.contains("Retrieved passages"), "{adas}");
    assert!(adas.contains(FACT), "{adas}");
    let bobs = request_text(&requests[1]);
    assert!(!bobs.contains(FACT), "{bobs}");
    assert!(!bobs.contains("staging.md"), "{bobs}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projects_memories_are_recalled_in_its_other_tasks_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    recall_scenario(db, dir.path().to_owned()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projects_memories_are_recalled_in_its_other_tasks_on_postgres() {
    let Ok(admin_url) = std::env::var("AGENTLOOP_TEST_POSTGRES_URL") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI needs AGENTLOOP_TEST_POSTGRES_URL"
        );
        println!("skipping: AGENTLOOP_TEST_POSTGRES_URL is not set");
        return;
    };
    let name = format!("agentloop_cli_recall_{}", std::process::id());
    let database = ScratchDatabase::create(&admin_url, &name).await;
    let dir = tempfile::tempdir().unwrap();
    recall_scenario(database.url.clone(), dir.path().to_owned()).await;
    database.remove().await;
}

/// `turn`, spending 100 input and 50 output tokens.
fn spending(mut turn: Value) -> Value {
    turn["usage"] = json!({ "input_tokens": 100, "output_tokens": 50 });
    turn
}

fn extracted_as_the_projects_memories(db: &str, dir: &Path) {
    let ada = create_user(db, "ada");
    let script = dir.join("script.json");
    write_script(
        &script,
        json!([
            // The run of the project with the step, then the step's call,
            // each spending 150 tokens.
            spending(text("Deploys go out on Tuesdays, after the standup.")),
            spending(text(
                "Sure: [\"Deploys go out on Tuesdays.\", \"The standup comes first.\"]"
            )),
            // The run of the project without it.
            text("Done."),
        ]),
    );
    let server = serve(db, &script, "extract");
    let address = server.address.clone();
    let with_step = task_with(
        &address,
        &ada,
        &dir.join("extracting"),
        json!({ "memory_extraction": true }),
    );
    let project = project_of(&address, &ada, &with_step);
    let (_, shown) = http(
        &address,
        &ada,
        "GET",
        &format!("/api/projects/{project}"),
        None,
    );
    assert_eq!(shown["memory_extraction"], true, "{shown}");
    let budgets = format!("/api/projects/{project}/budgets");
    let (status, set) = http(
        &address,
        &ada,
        "PUT",
        &budgets,
        Some(json!({ "budgets": [{ "metric": "tokens", "period": "total", "limit": 100000 }] })),
    );
    assert_eq!(status, 200, "{set}");
    let run = start_with(&address, &ada, &with_step, "When do deploys go out?");
    until_status(&address, &ada, &run, "completed");
    // The step's model call spent against the project's budget too.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (_, shown) = http(&address, &ada, "GET", &budgets, None);
        let budget = &shown["budgets"][0];
        if budget["reserved"] == 0.0 && budget["spent"] == 300.0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the run's call and the step's, 150 tokens each: {shown}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }

    let (status, listed) = http(
        &address,
        &ada,
        "GET",
        &format!("/api/projects/{project}/memories"),
        None,
    );
    assert_eq!(status, 200, "{listed}");
    let memories = listed["memories"].as_array().unwrap();
    let texts: Vec<&str> = memories
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        ["Deploys go out on Tuesdays.", "The standup comes first."]
    );
    for (n, memory) in memories.iter().enumerate() {
        assert_eq!(
            memory["path"],
            format!("/memories/extracted/{run}/{}.md", n + 1)
        );
        assert_eq!(memory["source_run"], run.as_str());
        assert_eq!(memory["source_step"], "memory_extraction");
    }
    let hooks: Vec<Value> = whole_stream(&address, &ada, &run)
        .into_iter()
        .filter(|(name, _)| name == "hook")
        .map(|(_, data)| data)
        .collect();
    assert_eq!(hooks.len(), 1, "{hooks:?}");
    assert_eq!(hooks[0]["hook"], "memory_extraction");
    assert_eq!(hooks[0]["point"], "run_end");
    assert_eq!(hooks[0]["decision"], "pass");
    assert_eq!(
        hooks[0]["note"],
        format!("remembered /memories/extracted/{run}/1.md, /memories/extracted/{run}/2.md")
    );

    // Off by default: a project that does not turn it on keeps nothing.
    let without = task(&address, &ada, &dir.join("plain"));
    let plain = project_of(&address, &ada, &without);
    let run = start_run(&address, &ada, &without, "planification");
    until_status(&address, &ada, &run, "completed");
    let (_, listed) = http(
        &address,
        &ada,
        "GET",
        &format!("/api/projects/{plain}/memories"),
        None,
    );
    assert_eq!(listed["memories"], json!([]), "{listed}");
    assert!(
        whole_stream(&address, &ada, &run)
            .iter()
            .all(|(name, _)| name != "hook")
    );

    // The setting goes off again.
    let (status, changed) = http(
        &address,
        &ada,
        "PATCH",
        &format!("/api/projects/{project}"),
        Some(json!({ "memory_extraction": false })),
    );
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["memory_extraction"], false, "{changed}");
}

#[test]
fn the_extraction_step_keeps_a_runs_proposals_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    extracted_as_the_projects_memories(&db, dir.path());
}

#[tokio::test]
async fn the_extraction_step_keeps_a_runs_proposals_on_postgres() {
    on_scratch_postgres("agentloop_cli_extract", |url, path| {
        extracted_as_the_projects_memories(url, path)
    })
    .await;
}
