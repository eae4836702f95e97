//! `agentloop acp` driven by the reference ACP client
//! (`@agentclientprotocol/sdk`, installed by `scripts/install-acp-client.sh`)
//! through `tests/acp/client.mjs`: a text prompt streamed with its
//! thinking, a tool call the person allows (its diff shown, the file
//! written), one they refuse and one whose turn they cancel while asked
//! (neither file written), a cancel while a tool runs (every call
//! answered, the command stopped), a session loaded after the agent was
//! killed between turns and during one, and the fs and shell tools
//! working through the editor's buffers and terminal. The model is the
//! scripted provider. The command is in builds with the CLI's `acp`
//! feature: `cargo nextest run -p agentloop-cli --features acp --test acp`.
#![cfg(feature = "acp")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

/// The installed client's `node_modules`, or `None` (said loudly) when it
/// is not installed; under CI that is a failure.
fn client_modules() -> Option<PathBuf> {
    common::node::modules(
        "acp-client",
        "@agentclientprotocol/sdk",
        "install-acp-client.sh",
    )
}

/// A folder with the database, an empty configuration home and `files`,
/// the folder the editor opens its sessions in.
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("files")).unwrap();
        std::fs::create_dir(dir.path().join("config")).unwrap();
        Self { dir }
    }

    fn files(&self) -> PathBuf {
        self.dir.path().join("files").canonicalize().unwrap()
    }

    fn db(&self) -> String {
        self.dir.path().join("agentloop.db").display().to_string()
    }

    /// `agentloop acp` answering with the scripted `turns`, then `extra`.
    fn agent(&self, name: &str, turns: &Value, extra: &[&str]) -> Value {
        let script = self.dir.path().join(format!("{name}.json"));
        std::fs::write(&script, turns.to_string()).unwrap();
        let mut command = vec![
            env!("CARGO_BIN_EXE_agentloop").to_owned(),
            "acp".to_owned(),
            "--provider".to_owned(),
            format!("scripted:{}", script.display()),
            "--db".to_owned(),
            self.db(),
        ];
        command.extend(extra.iter().map(|a| (*a).to_owned()));
        json!(command)
    }

    /// Runs the client's `scenario` against `agents`; returns what it saw.
    fn client(&self, modules: &Path, agents: &Value, scenario: &str) -> Value {
        let mut command = Command::new("node");
        command
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp/client.mjs"))
            .arg(modules)
            .arg(agents.to_string())
            .arg(self.files())
            .arg(scenario)
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .env("XDG_DATA_HOME", self.dir.path().join("data"));
        common::without_provider_keys(&mut command);
        let output = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "the client failed:\n{stderr}");
        let seen: Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|e| panic!("the client printed no JSON ({e}):\n{stderr}"));
        assert!(seen.get("error").is_none(), "{seen:#}\n{stderr}");
        seen
    }
}

/// The updates the editor received for `session`.
fn updates<'a>(seen: &'a Value, session: &Value) -> &'a [Value] {
    seen["updates"][session.as_str().unwrap()]
        .as_array()
        .map_or(&[], Vec::as_slice)
}

/// The text of the chunks of `kind` among `updates`, joined.
fn chunks(updates: &[Value], kind: &str) -> String {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .map(|u| u["content"]["text"].as_str().unwrap())
        .collect()
}

/// The updates about tool call `id`, in order.
fn call<'a>(updates: &'a [Value], id: &str) -> Vec<&'a Value> {
    updates.iter().filter(|u| u["toolCallId"] == id).collect()
}

/// The last status the editor was told of for tool call `id`.
fn last_status(updates: &[Value], id: &str) -> Value {
    call(updates, id)
        .iter()
        .rev()
        .find_map(|u| u.get("status"))
        .cloned()
        .unwrap_or(Value::Null)
}

fn writes(id: &str, path: &str, text: &str) -> Value {
    let input = json!({"command": "create", "path": path, "file_text": text});
    json!({"steps": [{"type": "tool_call", "id": id, "name": "fs", "fragments": [input.to_string()]}]})
}

#[test]
fn a_prompt_streams_and_tool_calls_are_allowed_refused_or_cancelled_through_permission_requests() {
    let Some(modules) = client_modules() else {
        return;
    };
    let setup = Setup::new();
    let turns = json!([
        {"steps": [
            {"type": "thinking", "chunks": ["Let me ", "think."]},
            {"type": "text", "chunks": ["Hel", "lo there."]}
        ]},
        writes("w1", "/notes.txt", "hello"),
        {"steps": [{"type": "text", "chunks": ["Wrote it."]}]},
        writes("w2", "/secrets.txt", "s3cret"),
        {"steps": [{"type": "text", "chunks": ["Left it."]}]},
        writes("w3", "/later.txt", "later")
    ]);
    let agent = setup.agent("turns", &turns, &["--tools", "fs"]);
    let seen = setup.client(&modules, &agent, "turns");

    let capabilities = &seen["initialize"]["agentCapabilities"];
    assert_eq!(capabilities["loadSession"], true, "{seen:#}");
    assert!(capabilities["sessionCapabilities"]["list"].is_object());
    assert_eq!(
        seen["stops"],
        json!(["end_turn", "end_turn", "end_turn", "cancelled"]),
        "{seen:#}"
    );
    let updates = updates(&seen, &seen["sessionId"]);
    assert_eq!(chunks(updates, "agent_thought_chunk"), "Let me think.");
    assert_eq!(
        chunks(updates, "agent_message_chunk"),
        "Hello there.Wrote it.Left it."
    );

    // Allowed: announced with its diff, asked, run, the file written.
    let notes = setup.files().join("notes.txt");
    let first = call(updates, "w1");
    assert_eq!(first[0]["sessionUpdate"], "tool_call", "{first:#?}");
    assert_eq!(first[0]["kind"], "edit");
    // Pending, the default status, goes unsaid.
    assert!(
        first[0].get("status").is_none_or(|s| s == "pending"),
        "{first:#?}"
    );
    let diff = &first[0]["content"][0];
    assert_eq!(diff["type"], "diff", "{first:#?}");
    assert_eq!(diff["path"], notes.display().to_string());
    assert_eq!(diff["newText"], "hello");
    assert_eq!(seen["permissions"][0]["toolCall"]["toolCallId"], "w1");
    let kinds: Vec<&Value> = seen["permissions"][0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| &o["kind"])
        .collect();
    assert_eq!(
        kinds,
        [
            &json!("allow_once"),
            &json!("allow_always"),
            &json!("reject_once")
        ]
    );
    assert_eq!(last_status(updates, "w1"), "completed");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "hello");

    // Refused: asked, failed, never written.
    assert_eq!(seen["permissions"][1]["toolCall"]["toolCallId"], "w2");
    assert_eq!(seen["permissions"][1]["answer"], "reject");
    assert_eq!(last_status(updates, "w2"), "failed");
    assert!(!setup.files().join("secrets.txt").exists());

    // Cancelled while asked: the call is answered, never run.
    assert_eq!(seen["permissions"][2]["toolCall"]["toolCallId"], "w3");
    assert_eq!(last_status(updates, "w3"), "failed", "{updates:#?}");
    assert!(!setup.files().join("later.txt").exists());

    // The session is listed, titled by its first prompt.
    let listed = seen["list"]["sessions"].as_array().unwrap();
    let mine = listed
        .iter()
        .find(|s| s["sessionId"] == seen["sessionId"])
        .unwrap_or_else(|| panic!("{seen:#}"));
    assert_eq!(mine["title"], "hello");
    assert_eq!(mine["cwd"], setup.files().display().to_string());
}

#[test]
fn a_cancel_while_a_tool_runs_stops_it_and_answers_every_call() {
    let Some(modules) = client_modules() else {
        return;
    };
    let setup = Setup::new();
    let slow = json!({"command": "sleep 2; echo ran > marker.txt"});
    let turns = json!([
        {"steps": [{"type": "tool_call", "id": "s1", "name": "shell", "fragments": [slow.to_string()]}]},
        {"steps": [{"type": "text", "chunks": ["Still here."]}]}
    ]);
    let agent = setup.agent(
        "cancel",
        &turns,
        &["--tools", "shell", "--approve", "shell"],
    );
    let seen = setup.client(&modules, &agent, "cancel");

    assert_eq!(seen["cancelledWhile"], "s1", "{seen:#}");
    assert_eq!(seen["stop"], "cancelled", "{seen:#}");
    let updates = updates(&seen, &seen["sessionId"]);
    assert_eq!(last_status(updates, "s1"), "failed", "{updates:#?}");
    // The session goes on with the next prompt.
    assert_eq!(seen["after"], "end_turn");
    assert_eq!(chunks(updates, "agent_message_chunk"), "Still here.");
    // The command was stopped: past the time it would have taken, it has
    // still not written its file.
    std::thread::sleep(Duration::from_secs(3));
    assert!(!setup.files().join("marker.txt").exists());
}

#[test]
fn a_session_is_loaded_with_its_history_after_the_agent_was_killed() {
    let Some(modules) = client_modules() else {
        return;
    };
    let setup = Setup::new();
    let first = setup.agent(
        "first",
        &json!([{"steps": [{"type": "text", "chunks": ["Noted: ", "blue."]}]}]),
        &[],
    );
    let second = setup.agent(
        "second",
        &json!([{"steps": [{"type": "text", "chunks": ["Blue."]}]}]),
        &[],
    );
    let seen = setup.client(&modules, &json!([first, second]), "reload");

    assert_eq!(seen["firstStop"], "end_turn", "{seen:#}");
    assert_eq!(seen["killedBy"], "SIGKILL");
    let id = &seen["sessionId"];
    assert!(
        seen["list"]["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| &s["sessionId"] == id),
        "{seen:#}"
    );
    let replayed = seen["replayed"].as_array().unwrap();
    assert_eq!(chunks(replayed, "user_message_chunk"), "remember blue");
    assert_eq!(chunks(replayed, "agent_message_chunk"), "Noted: blue.");
    assert_eq!(seen["secondStop"], "end_turn");
    let after = seen["afterLoad"].as_array().unwrap();
    assert_eq!(chunks(after, "agent_message_chunk"), "Blue.");
    assert_eq!(seen["missing"]["code"], -32002, "{seen:#}");
    // The conversation went on in the same stored chat.
    let shown = common::agentloop()
        .args([
            "chats",
            "show",
            id.as_str().unwrap(),
            "--db",
            &setup.db(),
            "--json",
        ])
        .env("XDG_CONFIG_HOME", setup.dir.path().join("config"))
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    for said in ["remember blue", "Noted: blue.", "what colour?", "Blue."] {
        assert!(shown.contains(said), "{said:?} not in {shown}");
    }
}

#[test]
fn the_fs_tool_reads_and_writes_the_editors_buffers_when_offered() {
    let Some(modules) = client_modules() else {
        return;
    };
    let setup = Setup::new();
    let draft = setup.files().join("draft.txt");
    std::fs::write(&draft, "saved words").unwrap();
    let view = json!({"command": "view", "path": "/draft.txt"});
    let edit = json!({"command": "str_replace", "path": "/draft.txt", "old_str": "unsaved", "new_str": "edited"});
    let turns = json!([
        {"steps": [{"type": "tool_call", "id": "v1", "name": "fs", "fragments": [view.to_string()]}]},
        {"steps": [{"type": "tool_call", "id": "e1", "name": "fs", "fragments": [edit.to_string()]}]},
        {"steps": [{"type": "text", "chunks": ["Done."]}]}
    ]);
    let agent = setup.agent("editor", &turns, &["--tools", "fs", "--approve", "all"]);
    let seen = setup.client(&modules, &agent, "editor");

    assert_eq!(seen["stop"], "end_turn", "{seen:#}");
    let path = draft.display().to_string();
    assert!(
        seen["reads"].as_array().unwrap().contains(&json!(path)),
        "{seen:#}"
    );
    assert_eq!(
        seen["writes"],
        json!([{"path": path, "content": "edited words"}])
    );
    // The editor's buffer changed, not the file on disk.
    assert_eq!(std::fs::read_to_string(&draft).unwrap(), "saved words");
}

#[test]
fn a_session_whose_agent_was_killed_mid_turn_is_loaded_and_goes_on() {
    let Some(modules) = client_modules() else {
        return;
    };
    let setup = Setup::new();
    // The first agent is killed while this answer streams.
    let first = setup.agent(
        "first",
        &json!([{"steps": [
            {"type": "text", "chunks": ["Working"]},
            {"type": "delay", "ms": 60000},
            {"type": "text", "chunks": [" on it."]}
        ]}]),
        &[],
    );
    let second = setup.agent(
        "second",
        &json!([{"steps": [{"type": "text", "chunks": ["Blue."]}]}]),
        &[],
    );
    let seen = setup.client(&modules, &json!([first, second]), "crash");

    assert_eq!(seen["killedBy"], "SIGKILL", "{seen:#}");
    let replayed = seen["replayed"].as_array().unwrap();
    assert_eq!(chunks(replayed, "user_message_chunk"), "remember blue");
    // The interrupted turn does not hold the session: the next prompt is
    // answered (not refused as "already has a running run").
    assert_eq!(seen["secondStop"], "end_turn", "{seen:#}");
    let after = seen["afterLoad"].as_array().unwrap();
    assert_eq!(chunks(after, "agent_message_chunk"), "Blue.");
}

#[test]
fn the_shell_tool_runs_in_the_editors_terminal_when_offered() {
    let Some(modules) = client_modules() else {
        return;
    };
    let setup = Setup::new();
    let command = "echo from-the-editor > made.txt; echo done";
    let run = json!({"command": command});
    let turns = json!([
        {"steps": [{"type": "tool_call", "id": "t1", "name": "shell", "fragments": [run.to_string()]}]},
        {"steps": [{"type": "text", "chunks": ["Ran it."]}]}
    ]);
    let agent = setup.agent(
        "terminal",
        &turns,
        &["--tools", "shell", "--approve", "shell"],
    );
    let seen = setup.client(&modules, &agent, "terminal");

    assert_eq!(seen["stop"], "end_turn", "{seen:#}");
    let terminal = &seen["terminals"][0];
    assert_eq!(terminal["command"], "/bin/sh", "{seen:#}");
    assert_eq!(terminal["args"], json!(["-c", command]));
    assert_eq!(terminal["cwd"], setup.files().display().to_string());
    assert_eq!(seen["released"], json!([terminal["id"]]));
    // The client's process ran it, in the session's folder.
    assert_eq!(
        std::fs::read_to_string(setup.files().join("made.txt")).unwrap(),
        "from-the-editor\n"
    );
    let updates = updates(&seen, &seen["sessionId"]);
    let shown = call(updates, "t1");
    assert!(
        shown.iter().any(|u| u["content"][0]["type"] == "terminal"
            && u["content"][0]["terminalId"] == terminal["id"]),
        "{shown:#?}"
    );
    let result = shown.last().unwrap();
    assert_eq!(result["status"], "completed", "{shown:#?}");
    let text = result["content"][0]["content"]["text"].as_str().unwrap();
    assert!(
        text.starts_with("exit code 0") && text.contains("done"),
        "{text}"
    );
}

/// The client code of the README's ACP section.
fn readme_snippet() -> String {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    let section = readme
        .split("### Editors: the Agent Client Protocol")
        .nth(1)
        .unwrap();
    let block = section.split("```js\n").nth(1).unwrap();
    block.split("```").next().unwrap().to_owned()
}

#[test]
fn the_readme_snippet_runs_against_the_agent() {
    let Some(modules) = client_modules() else {
        return;
    };
    let setup = Setup::new();
    let dir = setup.dir.path();
    std::fs::write(dir.join("snippet.mjs"), readme_snippet()).unwrap();
    std::os::unix::fs::symlink(&modules, dir.join("node_modules")).unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_agentloop")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new("node");
    command
        .arg(dir.join("snippet.mjs"))
        .current_dir(setup.files())
        .env("PATH", path)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_DATA_HOME", dir.join("data"));
    common::without_provider_keys(&mut command);
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    // With no provider configured, the demo answers; the turn ends.
    assert_eq!(
        stdout.lines().last(),
        Some("end_turn"),
        "{stdout}\n{stderr}"
    );
    assert!(stdout.contains("agent_message_chunk"), "{stdout}");
}
