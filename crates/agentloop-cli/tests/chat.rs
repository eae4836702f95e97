//! `agentloop chat`, `chats` and `export`/`import` on a temporary database.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn agentloop(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .args(args)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("AGENTLOOP_MODEL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "agentloop {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap()
}

const SCRIPT: &str = r#"[
  {"steps": [{"type": "text", "chunks": ["Hello, ", "Ada."]}], "usage": {"input_tokens": 10, "output_tokens": 3}},
  {"steps": [{"type": "text", "chunks": ["You said your name is Ada."]}], "usage": {"input_tokens": 30, "output_tokens": 7}}
]"#;

#[test]
fn chat_keeps_history_and_export_import_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(&script, SCRIPT).unwrap();
    let provider = format!("scripted:{}", script.display());
    let db = dir.path().join("a.db").to_string_lossy().into_owned();

    let out = agentloop(
        &["chat", "--db", &db, "--chat", "c1", "--provider", &provider],
        "I am Ada.\nWhat is my name?\n",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Hello, Ada."), "{stdout}");
    assert!(stdout.contains("You said your name is Ada."), "{stdout}");

    let shown = json(&agentloop(
        &["chats", "show", "c1", "--db", &db, "--json"],
        "",
    ));
    let messages = shown["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 4, "both turns are in the history");
    assert_eq!(shown["chat"]["totals"]["input_tokens"], 40);
    let listed = json(&agentloop(&["chats", "list", "--db", &db, "--json"], ""));
    assert_eq!(listed.as_array().unwrap().len(), 1);

    let export = dir.path().join("export.json");
    let export_str = export.to_string_lossy().into_owned();
    agentloop(&["export", "--db", &db, "--output", &export_str], "");
    let fresh = dir.path().join("b.db").to_string_lossy().into_owned();
    agentloop(&["import", &export_str, "--db", &fresh], "");
    let again = dir.path().join("again.json");
    let again_str = again.to_string_lossy().into_owned();
    agentloop(&["export", "--db", &fresh, "--output", &again_str], "");
    let first: Value = serde_json::from_slice(&std::fs::read(&export).unwrap()).unwrap();
    let second: Value = serde_json::from_slice(&std::fs::read(&again).unwrap()).unwrap();
    assert_eq!(first, second, "export → import → export is the identity");
    let shown = json(&agentloop(
        &["chats", "show", "c1", "--db", &fresh, "--json"],
        "",
    ));
    assert_eq!(shown["messages"].as_array().unwrap().len(), 4);

    agentloop(&["chats", "delete", "c1", "--db", &fresh], "");
    let listed = json(&agentloop(&["chats", "list", "--db", &fresh, "--json"], ""));
    assert!(listed.as_array().unwrap().is_empty());
}

/// A provider that reuses a tool-call id: twice in one turn, then in the
/// next message, then again from a new process over the stored chat.
const REUSING_IDS: &str = r#"[
  {"steps": [
    {"type": "tool_call", "id": "w1", "name": "fs", "fragments": ["{\"command\": \"view\", \"path\": \"/\"}"]},
    {"type": "tool_call", "id": "w1", "name": "fs", "fragments": ["{\"command\": \"view\", \"path\": \"/notes.txt\"}"]}
  ]},
  {"steps": [{"type": "text", "chunks": ["Looked twice."]}]},
  {"steps": [{"type": "tool_call", "id": "w1", "name": "fs", "fragments": ["{\"command\": \"view\", \"path\": \"/notes.txt\"}"]}]},
  {"steps": [{"type": "text", "chunks": ["Looked again."]}]}
]"#;

const REUSING_IDS_LATER: &str = r#"[
  {"steps": [{"type": "tool_call", "id": "w1", "name": "fs", "fragments": ["{\"command\": \"view\", \"path\": \"/\"}"]}]},
  {"steps": [{"type": "text", "chunks": ["Still answering."]}]},
  {"steps": [{"type": "text", "chunks": ["And again."]}]}
]"#;

#[test]
fn a_reused_tool_call_id_does_not_break_the_next_messages_of_a_stored_chat() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("notes.txt"), "remember the milk\n").unwrap();
    let root = root.to_string_lossy().into_owned();
    let db = dir.path().join("a.db").to_string_lossy().into_owned();
    let chat = |script: &str, stdin: &str| {
        let path = dir.path().join(format!("script-{}.json", stdin.len()));
        std::fs::write(&path, script).unwrap();
        let provider = format!("scripted:{}", path.display());
        let args = [
            "chat",
            "--db",
            &db,
            "--chat",
            "c1",
            "--provider",
            &provider,
            "--tools",
            "fs",
            "--root",
            &root,
        ];
        let out = agentloop(&args, stdin);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!stderr.contains("invalid history"), "{stderr}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };

    let stdout = chat(REUSING_IDS, "look\nlook again\n");
    assert!(stdout.contains("Looked twice."), "{stdout}");
    assert!(stdout.contains("Looked again."), "{stdout}");
    // A new process over the stored chat: its history holds w1, w1_2, w1_3.
    let stdout = chat(REUSING_IDS_LATER, "and now\none more\n");
    assert!(stdout.contains("Still answering."), "{stdout}");
    assert!(stdout.contains("And again."), "{stdout}");

    let shown = json(&agentloop(
        &["chats", "show", "c1", "--db", &db, "--json"],
        "",
    ));
    let messages = shown["messages"].as_array().unwrap();
    let blocks = || {
        messages
            .iter()
            .flat_map(|m| m["message"]["content"].as_array().unwrap())
    };
    let calls: Vec<(&str, &str)> = blocks()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| {
            (
                b["id"].as_str().unwrap(),
                b["input"]["path"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("w1", "/"),
            ("w1_2", "/notes.txt"),
            ("w1_3", "/notes.txt"),
            ("w1_4", "/")
        ]
    );
    let results: Vec<(&str, bool)> = blocks()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            let id = b["tool_use_id"].as_str().unwrap();
            let content = b["content"].as_str().unwrap();
            (id, content.contains("remember the milk"))
        })
        .collect();
    assert_eq!(
        results,
        [
            ("w1", false),
            ("w1_2", true),
            ("w1_3", true),
            ("w1_4", false)
        ],
        "each call keeps its own result"
    );
}
