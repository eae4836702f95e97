//! The memory tool on the command line, on a SQLite database: a fact
//! taught in one chat is recalled through the tool in a new chat (and by
//! `agentloop run`), never in another scope, and `agentloop memory
//! list|show|edit|delete` reads and changes what is kept; a run, and each
//! chat turn, starts with the stored memories its request is about among
//! its cited passages; `chat --extract-memories` ends each turn with the
//! extraction step, whose proposals are kept with the run they came from.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

const FACT: &str = "Ada takes her tea without sugar.";

fn agentloop(args: &[&str], stdin: &str) -> Output {
    let mut command = common::agentloop();
    common::without_provider_keys(&mut command);
    command.args(args);
    common::piped(command, stdin)
}

fn succeeds(args: &[&str], stdin: &str) -> Output {
    let output = agentloop(args, stdin);
    assert!(
        output.status.success(),
        "agentloop {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn json_out(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap()
}

/// A scripted provider file playing `turns`.
fn script(dir: &Path, name: &str, turns: Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, turns.to_string()).unwrap();
    format!("scripted:{}", path.display())
}

fn memory_call(id: &str, input: Value) -> Value {
    json!({ "steps": [{ "type": "tool_call", "id": id, "name": "memory",
                        "fragments": [input.to_string()] }] })
}

fn say(text: &str) -> Value {
    json!({ "steps": [{ "type": "text", "chunks": [text] }] })
}

/// The text of the tool result answering `call_id` in a stored chat.
fn chat_tool_result(db: &str, chat: &str, call_id: &str) -> String {
    let shown = json_out(&succeeds(
        &["chats", "show", chat, "--db", db, "--json"],
        "",
    ));
    shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| {
            let message = if m.get("message").is_some() {
                &m["message"]
            } else {
                m
            };
            message["content"].as_array().cloned().unwrap_or_default()
        })
        .find(|block| block["type"] == "tool_result" && block["tool_use_id"] == call_id)
        .map(|block| block["content"].to_string())
        .unwrap_or_else(|| panic!("no result for {call_id}: {shown}"))
}

#[test]
fn a_fact_taught_in_one_chat_is_recalled_in_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("memory.db").display().to_string();

    let teach = script(
        dir.path(),
        "teach.json",
        json!([
            memory_call(
                "t1",
                json!({ "command": "create", "path": "/memories/ada.md",
                                      "file_text": FACT })
            ),
            say("I will remember that."),
        ]),
    );
    succeeds(
        &[
            "chat",
            "--db",
            &db,
            "--chat",
            "first",
            "--provider",
            &teach,
            "--tools",
            "memory",
        ],
        "I take my tea without sugar; remember it.\n",
    );

    // A new chat, a new process: the model looks and finds the fact.
    let recall = script(
        dir.path(),
        "recall.json",
        json!([
            memory_call("r1", json!({ "command": "view", "path": "/memories" })),
            memory_call(
                "r2",
                json!({ "command": "view", "path": "/memories/ada.md" })
            ),
            say("No sugar, then."),
        ]),
    );
    succeeds(
        &[
            "chat",
            "--db",
            &db,
            "--chat",
            "second",
            "--provider",
            &recall,
            "--tools",
            "memory",
        ],
        "How do I take my tea?\n",
    );
    assert!(chat_tool_result(&db, "second", "r1").contains("/memories/ada.md"));
    assert!(chat_tool_result(&db, "second", "r2").contains(FACT));

    // Another scope holds none of it.
    succeeds(
        &[
            "chat",
            "--db",
            &db,
            "--chat",
            "third",
            "--provider",
            &recall,
            "--tools",
            "memory",
            "--memory-scope",
            "user:bob",
        ],
        "How do I take my tea?\n",
    );
    assert!(!chat_tool_result(&db, "third", "r1").contains("ada.md"));
    assert!(chat_tool_result(&db, "third", "r2").contains("does not exist"));

    // `agentloop memory`: listed with the run and call that wrote it.
    let listed = json_out(&succeeds(&["memory", "list", "--db", &db, "--json"], ""));
    let memories = listed.as_array().unwrap();
    assert_eq!(memories.len(), 1, "{listed}");
    assert_eq!(memories[0]["path"], "/memories/ada.md");
    assert_eq!(memories[0]["text"], FACT);
    assert_eq!(
        memories[0]["scope"],
        json!({ "kind": "project", "id": "cli" })
    );
    assert_eq!(memories[0]["source_step"], "t1");
    assert!(
        memories[0]["source_run"]
            .as_str()
            .is_some_and(|r| !r.is_empty())
    );
    let id = memories[0]["id"].as_str().unwrap().to_owned();
    let bobs = json_out(&succeeds(
        &[
            "memory",
            "list",
            "--db",
            &db,
            "--json",
            "--memory-scope",
            "user:bob",
        ],
        "",
    ));
    assert_eq!(bobs, json!([]));
    let text =
        String::from_utf8(succeeds(&["memory", "show", &id, "--db", &db], "").stdout).unwrap();
    assert!(text.contains(FACT) && text.contains("call t1"), "{text}");

    // Edited on the command line, the next run reads the new text.
    let edited = json_out(&succeeds(
        &[
            "memory",
            "edit",
            &id,
            "--db",
            &db,
            "--json",
            "--text",
            "Ada now takes honey.",
        ],
        "",
    ));
    assert_eq!(edited["text"], "Ada now takes honey.");
    assert_eq!(edited["id"], id.as_str());
    let look = script(
        dir.path(),
        "look.json",
        json!([
            memory_call(
                "l1",
                json!({ "command": "view", "path": "/memories/ada.md" })
            ),
            say("Honey."),
        ]),
    );
    let run = succeeds(
        &[
            "run",
            "--db",
            &db,
            "--provider",
            &look,
            "--tools",
            "memory",
            "--json",
            "Tea?",
        ],
        "",
    );
    let events = String::from_utf8(run.stdout).unwrap();
    assert!(events.contains("Ada now takes honey."), "{events}");

    // Deleted, it is gone for the tool and the list; an unknown id is one line.
    succeeds(&["memory", "delete", &id, "--db", &db], "");
    let listed = json_out(&succeeds(&["memory", "list", "--db", &db, "--json"], ""));
    assert_eq!(listed, json!([]));
    let missing = agentloop(&["memory", "show", &id, "--db", &db], "");
    assert!(!missing.status.success());
    let error = String::from_utf8(missing.stderr).unwrap();
    assert!(error.contains("no memory"), "{error}");
    let nothing = agentloop(&["memory", "edit", &id, "--db", &db], "");
    assert_eq!(nothing.status.code(), Some(2), "{nothing:?}");
}

/// The system messages of a model request that carry recalled passages.
fn recalled_passages(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "system")
        .map(|m| m["content"].to_string())
        .filter(|text| text.contains("Retrieved passages"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_starts_with_the_memories_its_request_is_about() {
    let model = common::openai::start(None, "No sugar.").await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("recall.db").display().to_string();
    let teach = script(
        dir.path(),
        "teach.json",
        json!([
            memory_call(
                "t1",
                json!({ "command": "create", "path": "/memories/ada.md",
                                      "file_text": FACT })
            ),
            memory_call(
                "t2",
                json!({ "command": "create", "path": "/memories/deploy.md",
                                      "file_text": "Deploys go out on Tuesdays." })
            ),
            say("Noted both."),
        ]),
    );
    succeeds(
        &[
            "run",
            "--db",
            &db,
            "--provider",
            &teach,
            "--tools",
            "memory",
            "Remember these.",
        ],
        "",
    );

    let base_url = model.base_url.clone();
    let db_for_run = db.clone();
    let output = tokio::task::spawn_blocking(move || {
        agentloop(
            &[
                "run",
                "--db",
                &db_for_run,
                "--tools",
                "memory",
                "--base-url",
                &base_url,
                "--model",
                "m",
                "How does Ada take her tea?",
            ],
            "",
        )
    })
    .await
    .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let request = &model.completions().await[0];
    let recalled = recalled_passages(request);
    assert_eq!(recalled.len(), 1, "{request}");
    assert!(recalled[0].contains(FACT), "{}", recalled[0]);
    assert!(recalled[0].contains("/memories/ada.md"), "{}", recalled[0]);
    assert!(!recalled[0].contains("Tuesdays"), "{}", recalled[0]);

    // Another scope recalls nothing of it.
    let base_url = model.base_url.clone();
    let output = tokio::task::spawn_blocking(move || {
        agentloop(
            &[
                "run",
                "--db",
                &db,
                "--tools",
                "memory",
                "--memory-scope",
                "user:bob",
                "--base-url",
                &base_url,
                "--model",
                "m",
                "How does Ada take her tea?",
            ],
            "",
        )
    })
    .await
    .unwrap();
    assert!(output.status.success());
    let request = &model.completions().await[1];
    assert!(
        !request.to_string().contains("Retrieved passages"),
        "{request}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_chat_turn_starts_with_the_memories_its_message_is_about() {
    let model = common::openai::start(None, "No sugar.").await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("chat-recall.db").display().to_string();
    let teach = script(
        dir.path(),
        "teach.json",
        json!([
            memory_call(
                "t1",
                json!({ "command": "create", "path": "/memories/ada.md",
                                      "file_text": FACT })
            ),
            say("Noted."),
        ]),
    );
    succeeds(
        &[
            "chat",
            "--db",
            &db,
            "--provider",
            &teach,
            "--tools",
            "memory",
        ],
        "Remember how Ada takes her tea.\n",
    );

    // A new chat: its first request carries the fact, recalled before the
    // model is asked, and the view says so.
    let base_url = model.base_url.clone();
    let output = tokio::task::spawn_blocking(move || {
        agentloop(
            &[
                "chat",
                "--db",
                &db,
                "--tools",
                "memory",
                "--base-url",
                &base_url,
                "--model",
                "m",
            ],
            "How does Ada take her tea?\n",
        )
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("recalled: /memories/ada.md"), "{stderr}");
    let request = &model.completions().await[0];
    let recalled = recalled_passages(request);
    assert_eq!(recalled.len(), 1, "{request}");
    assert!(recalled[0].contains(FACT), "{}", recalled[0]);
}

#[test]
fn the_extraction_step_keeps_what_a_chat_turn_proposed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("extract.db").display().to_string();
    let turns = script(
        dir.path(),
        "extract.json",
        json!([
            say("Noted: no sugar for Ada."),
            // The extraction step's call.
            say(&format!("[{}]", json!(FACT))),
        ]),
    );
    let output = succeeds(
        &[
            "chat",
            "--db",
            &db,
            "--chat",
            "tea",
            "--provider",
            &turns,
            "--extract-memories",
        ],
        "Ada takes her tea without sugar.\n",
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr
            .contains("[hook memory_extraction at run_end: pass — remembered /memories/extracted/"),
        "{stderr}"
    );
    let listed = json_out(&succeeds(&["memory", "list", "--db", &db, "--json"], ""));
    let memories = listed.as_array().unwrap();
    assert_eq!(memories.len(), 1, "{listed}");
    assert_eq!(memories[0]["text"], FACT);
    assert_eq!(memories[0]["source_step"], "memory_extraction");
    let run = memories[0]["source_run"].as_str().unwrap();
    assert_eq!(
        memories[0]["path"],
        format!("/memories/extracted/{run}/1.md")
    );
    // The run it names is the chat's turn.
    let runs = String::from_utf8(
        succeeds(
            &["runs", "list", "--chat", "tea", "--db", &db, "--json"],
            "",
        )
        .stdout,
    )
    .unwrap();
    assert!(runs.contains(run), "{run} in {runs}");

    // Off by default: a chat without the flag makes no extra call and
    // keeps nothing.
    let plain = script(dir.path(), "plain.json", json!([say("Hello.")]));
    succeeds(
        &["chat", "--db", &db, "--chat", "plain", "--provider", &plain],
        "Bob likes coffee.\n",
    );
    let listed = json_out(&succeeds(&["memory", "list", "--db", &db, "--json"], ""));
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
}
