//! `agentloop chat` on a terminal (a pty here): a line typed while a turn
//! runs is stored for the run, which takes it at its next step, before its
//! next model call, once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use rexpect::session::spawn_command;

/// Looks, looks again slowly (the line is typed meanwhile), then answers.
/// The line joins at the boundary after whichever look was running.
const SCRIPT: &str = r#"[
  {"steps": [{"type": "text", "chunks": ["Looking."]}, {"type": "tool_call", "id": "v1", "name": "fs", "fragments": ["{\"command\": \"view\", \"path\": \"/\"}"]}]},
  {"steps": [{"type": "delay", "ms": 2500}, {"type": "tool_call", "id": "v2", "name": "fs", "fragments": ["{\"command\": \"view\", \"path\": \"/\"}"]}]},
  {"steps": [{"type": "text", "chunks": ["Short, then."]}]}
]"#;

fn command(home: &Path, db: &str) -> Command {
    let script = home.join("script.json");
    std::fs::write(&script, SCRIPT).unwrap();
    let root = home.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentloop"));
    command
        .args(["chat", "--db", db, "--tools", "fs", "--root"])
        .arg(&root)
        .args(["--provider", &format!("scripted:{}", script.display())])
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("TERM", "xterm")
        .env("NO_COLOR", "1")
        .env_remove("EDITOR")
        .env_remove("VISUAL")
        .env_remove("AGENTLOOP_MODEL");
    command
}

#[tokio::test]
async fn a_line_typed_while_a_turn_runs_joins_its_run_at_the_next_step() {
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("chat.db").display().to_string();
    let mut p = spawn_command(command(home.path(), &db), Some(30_000)).unwrap();
    p.exp_string("> ").unwrap();
    p.send_line("look around").unwrap();
    p.exp_string("Looking.").unwrap();
    p.send_line("Keep it short.").unwrap();
    p.exp_string("queued").unwrap();
    p.exp_string("Short, then.").unwrap();
    p.exp_string("> ").unwrap();
    p.send_line("/exit").unwrap();
    p.exp_eof().unwrap();

    let store = agentloop_storage::open_store(&db).await.unwrap();
    let projects = store.list_projects().await.unwrap();
    let chats = store.list_chats(&projects[0].id).await.unwrap();
    assert_eq!(chats.len(), 1);
    let messages: Vec<_> = store
        .list_messages(&chats[0].id)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.message)
        .collect();
    let typed: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.text() == "Keep it short.")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(typed.len(), 1, "{messages:?}");
    let at = typed[0];
    // Right after a look's result (at a step boundary, not mid-tool), before
    // the answer, in the one run.
    assert!(
        messages[at - 1].tool_results().next().is_some(),
        "{messages:?}"
    );
    assert_eq!(messages[messages.len() - 1].text(), "Short, then.");
    assert!(at < messages.len() - 1);
    let runs = store.list_runs(&chats[0].id).await.unwrap();
    assert_eq!(runs.len(), 1, "one turn took it: {runs:?}");
}
