//! Agents declared in `config.toml`, through the binary: `run --agent`
//! starts with the named agent, which hands the conversation to another
//! (its own tools, the events naming who speaks); mistakes in the file or
//! the flag are usage errors; and a `chat` killed with SIGKILL right after
//! a handoff was stored goes on, when the chat is opened again, with the
//! agent handed to — the handoff and the tool call before it not repeated.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentloop_storage::model::RunStatus;
use agentloop_storage::{SqliteStore, Store};
use agentloop_types::EventKind;
use serde_json::Value;

const AGENTS: &str = r#"
agent = "triage"

[agents.triage]
instructions = "Hand the customer to the specialist who can answer."
tools = ["fs"]
handoffs = ["billing"]

[agents.billing]
description = "Invoices and refunds."
instructions = "You answer billing questions."
model = "billing-model"
tools = ["fs"]
handoffs = ["triage"]
history = "last_user_message"
"#;

/// Triage writes a note and hands off; billing writes the receipt and
/// answers.
const HANDOFF: &str = r#"[
  {"steps": [
    {"type": "tool_call", "id": "t1", "name": "fs", "fragments": ["{\"command\": \"create\", \"path\": \"/triage.txt\", \"file_text\": \"seen\"}"]},
    {"type": "tool_call", "id": "h1", "name": "transfer_to_billing", "fragments": ["{\"reason\": \"an invoice\"}"]}
  ]},
  {"steps": [{"type": "tool_call", "id": "t2", "name": "fs", "fragments": ["{\"command\": \"create\", \"path\": \"/receipt.txt\", \"file_text\": \"paid\"}"]}]},
  {"steps": [{"type": "text", "chunks": ["Billing: INV-42 is paid."]}]}
]"#;

fn command(home: &Path, config: &str) -> Command {
    let config_dir = home.join("config/agentloop");
    std::fs::create_dir_all(&config_dir).unwrap();
    std::fs::write(config_dir.join("config.toml"), config).unwrap();
    std::fs::create_dir_all(home.join("root")).unwrap();
    let mut command = common::agentloop();
    command
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("NO_COLOR", "1")
        .current_dir(home);
    command
}

fn script(home: &Path, name: &str, turns: &str) -> String {
    let path = home.join(name);
    std::fs::write(&path, turns).unwrap();
    format!("scripted:{}", path.display())
}

fn json_lines(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// Who spoke, in order, and the handoffs between, as `speaks X` and
/// `X -> Y` lines.
fn speakers(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e["type"].as_str() {
            Some("streaming_start") => Some(format!("speaks {}", e["agent"].as_str().unwrap())),
            Some("handoff") => Some(format!(
                "{} -> {}",
                e["from"].as_str().unwrap(),
                e["to"].as_str().unwrap()
            )),
            _ => None,
        })
        .collect()
}

#[test]
fn run_starts_with_the_configured_agent_and_hands_off() {
    let home = tempfile::tempdir().unwrap();
    let provider = script(home.path(), "script.json", HANDOFF);
    let output = command(home.path(), AGENTS)
        .args(["run", "was INV-42 paid?", "--json", "--approve", "all"])
        .args(["--root", home.path().join("root").to_str().unwrap()])
        .args(["--provider", &provider])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let events = json_lines(&output.stdout);
    assert_eq!(
        speakers(&events),
        [
            "speaks triage",
            "triage -> billing",
            "speaks billing",
            "speaks billing"
        ]
    );
    // Each agent's own tool ran in the folder.
    let root = home.path().join("root");
    assert_eq!(
        std::fs::read_to_string(root.join("triage.txt")).unwrap(),
        "seen"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("receipt.txt")).unwrap(),
        "paid"
    );
    let last = events.last().unwrap();
    assert_eq!(last["type"], "finished");
    assert_eq!(last["result"]["status"], "complete", "{last}");
}

#[test]
fn a_starting_agent_without_handoffs_is_a_plain_agent() {
    let home = tempfile::tempdir().unwrap();
    let provider = script(
        home.path(),
        "script.json",
        r#"[{"steps": [{"type": "text", "chunks": ["Hello."]}]}]"#,
    );
    let output = command(home.path(), "[agents.solo]\ninstructions = \"Greet.\"\n")
        .args(["run", "hi", "--json", "--agent", "solo"])
        .args(["--provider", &provider])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success());
    let events = json_lines(&output.stdout);
    // No handoffs: the events name no agent.
    let start = events
        .iter()
        .find(|e| e["type"] == "streaming_start")
        .unwrap();
    assert!(start.get("agent").is_none(), "{start}");
}

#[test]
fn mistakes_in_agents_are_usage_errors() {
    let cases = [
        (
            AGENTS,
            vec!["--agent", "nobody"],
            "--agent names `nobody`, which the configuration does not declare (declared: billing, triage)",
        ),
        (
            "[agents.a]\nhandoffs = [\"ghost\"]\n",
            vec!["--agent", "a"],
            "[agents.a] hands off to `ghost`, which the configuration does not declare",
        ),
        (
            "[agents.\"bad name\"]\n",
            vec![],
            "[agents.bad name]: agent name `bad name` must be 1 to 48 ASCII letters",
        ),
        (
            "agent = \"missing\"\n",
            vec![],
            "the configuration's agent names `missing`, but the configuration declares no agents",
        ),
        (
            "[agents.a]\nhandoffs = [\"a\"]\ninstructions = 3\n",
            vec![],
            "is not valid",
        ),
        (
            "[agents.a]\nhandoffs = [\"b\"]\n[agents.b]\n",
            vec!["--agent", "a", "--strategy", "react"],
            "agent `a` hands off, which only the native strategy does (not react)",
        ),
    ];
    for (config, flags, expected) in cases {
        let home = tempfile::tempdir().unwrap();
        let provider = script(
            home.path(),
            "script.json",
            r#"[{"steps": [{"type": "text", "chunks": ["unused"]}]}]"#,
        );
        let output = command(home.path(), config)
            .args(["run", "hi", "--provider", &provider])
            .args(&flags)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{config}: {stderr}");
        assert!(stderr.contains(expected), "{config}: {stderr}");
    }
}

/// The chat's runs and the events of all of them, in order.
async fn the_runs(
    store: &dyn Store,
    chat: &str,
) -> (Vec<agentloop_storage::model::RunRecord>, Vec<EventKind>) {
    let runs = store.list_runs(chat).await.unwrap();
    let mut events = Vec::new();
    for run in &runs {
        let logged = store.list_events(&run.id, None, 10_000).await.unwrap();
        events.extend(logged.into_iter().map(|e| e.kind));
    }
    (runs, events)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_killed_after_a_handoff_goes_on_with_the_agent_handed_to() {
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("chat.db");
    let db_arg = db.display().to_string();
    let root = home.path().join("root");
    // Billing's first turn never ends: the process is killed during it.
    let first = script(
        home.path(),
        "first.json",
        r#"[
  {"steps": [
    {"type": "tool_call", "id": "t1", "name": "fs", "fragments": ["{\"command\": \"create\", \"path\": \"/triage.txt\", \"file_text\": \"seen\"}"]},
    {"type": "tool_call", "id": "h1", "name": "transfer_to_billing", "fragments": ["{\"reason\": \"an invoice\"}"]}
  ]},
  {"steps": [{"type": "hang"}]}
]"#,
    );
    let chat_args = |provider: &str| {
        let mut chat = command(home.path(), AGENTS);
        chat.args(["chat", "--json", "--approve", "all", "--chat", "c1"])
            .args(["--db", &db_arg, "--root", root.to_str().unwrap()])
            .args(["--provider", provider]);
        chat
    };
    let mut child = chat_args(&first)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(home.path().join("first.stderr")).unwrap())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let stdin = child.stdin.as_mut().unwrap();
        stdin.write_all(b"was INV-42 paid?\n").unwrap();
        stdin.flush().unwrap();
    }
    let mut child = common::Killed(child);

    // Killed as soon as the handoff and the checkpoint naming billing are
    // stored.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut store: Option<Arc<dyn Store>> = None;
    loop {
        assert!(Instant::now() < deadline, "the handoff was never stored");
        assert!(
            child.0.try_wait().unwrap().is_none(),
            "the chat ended early: {}",
            std::fs::read_to_string(home.path().join("first.stderr")).unwrap()
        );
        let said = std::fs::read_to_string(home.path().join("first.stderr")).unwrap();
        if store.is_none() && said.contains("chat c1 (stored in") {
            // Opened once the chat made (and migrated) the file: two
            // processes migrating one new file at once would collide.
            store = SqliteStore::connect(&db_arg)
                .await
                .ok()
                .map(|s| Arc::new(s) as Arc<dyn Store>);
        }
        if let Some(store) = &store
            && let Ok(runs) = store.list_runs("c1").await
            && runs.len() == 1
        {
            let speaking = runs[0]
                .state
                .as_ref()
                .and_then(|s| s.strategy.as_ref())
                .map(|s| s["agent"].clone());
            let events = store.list_events(&runs[0].id, None, 10_000).await.unwrap();
            if speaking == Some(Value::from("billing"))
                && events
                    .iter()
                    .any(|e| matches!(e.kind, EventKind::Handoff(_)))
            {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let store = store.unwrap();
    child.0.kill().unwrap(); // SIGKILL
    child.0.wait().unwrap();

    let (runs, events) = the_runs(&*store, "c1").await;
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, RunStatus::Running);
    let handoffs = |events: &[EventKind]| {
        events
            .iter()
            .filter(|e| matches!(e, EventKind::Handoff(_)))
            .count()
    };
    let tool_starts = |events: &[EventKind], id: &str| {
        events
            .iter()
            .filter(|e| matches!(e, EventKind::ToolStart(s) if s.tool_use_id == id))
            .count()
    };
    assert_eq!(handoffs(&events), 1);
    assert_eq!(tool_starts(&events, "t1"), 1);

    // The dead process's lease runs out before another may take the run.
    let deadline = Instant::now() + Duration::from_secs(60);
    while store.list_runs("c1").await.unwrap()[0]
        .lease_expires_at
        .is_some_and(|at| at > agentloop_storage::model::now_millis())
    {
        assert!(Instant::now() < deadline, "the lease never expired");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Opened again: the interrupted run goes on with billing.
    let second = script(
        home.path(),
        "second.json",
        r#"[
  {"steps": [{"type": "tool_call", "id": "t2", "name": "fs", "fragments": ["{\"command\": \"create\", \"path\": \"/receipt.txt\", \"file_text\": \"paid\"}"]}]},
  {"steps": [{"type": "text", "chunks": ["Billing: INV-42 is paid."]}]}
]"#,
    );
    let output = common::piped(chat_args(&second), "");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("continuing the run that was interrupted"),
        "{stderr}"
    );
    let continued = json_lines(&output.stdout);
    assert_eq!(
        speakers(&continued),
        ["speaks billing", "speaks billing"],
        "billing goes on speaking, and nobody hands off again"
    );

    // The interrupted run is marked so, and its continuation completed.
    let (runs, events) = the_runs(&*store, "c1").await;
    let statuses: Vec<RunStatus> = runs.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [RunStatus::Failed, RunStatus::Completed]);
    assert_eq!(runs[0].result.as_ref().unwrap()["status"], "interrupted");
    assert_eq!(handoffs(&events), 1, "the handoff is in the log once");
    assert_eq!(tool_starts(&events, "t1"), 1, "triage's call ran once");
    assert_eq!(tool_starts(&events, "t2"), 1);
    assert_eq!(
        std::fs::read_to_string(root.join("triage.txt")).unwrap(),
        "seen"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("receipt.txt")).unwrap(),
        "paid"
    );
    let messages = store.list_messages("c1").await.unwrap();
    let last = &messages.last().unwrap().message;
    assert_eq!(last.text(), "Billing: INV-42 is paid.");
}
