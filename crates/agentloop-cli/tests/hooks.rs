//! Command hooks from `config.toml`, through the binary (pipes): a hook
//! that denies a write (exit 2, stderr as the reason), one that rewrites
//! its arguments and one that adds context (JSON on stdout); a hook that
//! hangs past its time limit and one that crashes, each answered with its
//! configured default; `agentloop hooks list`; `agentloop chat` asking the
//! same hooks (a pipe).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::events;
use serde_json::{Value, json};

/// One turn writing `/notes.txt`, then a closing text.
const WRITE: &str = r#"[
  {"steps": [{"type": "tool_call", "id": "t1", "name": "fs", "fragments": ["{\"command\": \"create\", \"path\": \"/notes.txt\", \"file_text\": \"hello\"}"]}]},
  {"steps": [{"type": "text", "chunks": ["Done."]}]}
]"#;

/// `agentloop run --json` over `WRITE` with the configuration `config`,
/// writes approved, its stdin a closed pipe.
fn run_with(home: &Path, config: &str) -> Output {
    let config_dir = home.join("config/agentloop");
    std::fs::create_dir_all(&config_dir).unwrap();
    std::fs::write(config_dir.join("config.toml"), config).unwrap();
    let script = home.join("script.json");
    std::fs::write(&script, WRITE).unwrap();
    let root = home.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let output = command(home)
        .args([
            "run",
            "write notes",
            "--json",
            "--tools",
            "fs",
            "--approve",
            "all",
        ])
        .args(["--root", root.to_str().unwrap()])
        .args(["--provider", &format!("scripted:{}", script.display())])
        .current_dir(home)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn command(home: &Path) -> Command {
    let mut command = common::agentloop();
    command
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("NO_COLOR", "1");
    command
}

fn hook_events(output: &Output) -> Vec<Value> {
    events(output)
        .into_iter()
        .filter(|e| e["type"] == "hook")
        .map(|mut e| {
            e.as_object_mut().unwrap().remove("seq");
            e
        })
        .collect()
}

/// The text of the tool result the model got for `t1`.
fn result_of_t1(output: &Output) -> (String, bool) {
    for event in events(output) {
        if event["type"] != "message_created" {
            continue;
        }
        for block in event["message"]["content"].as_array().unwrap() {
            if block["type"] == "tool_result" && block["tool_use_id"] == "t1" {
                let text = match &block["content"] {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                return (text, block["is_error"] == true);
            }
        }
    }
    panic!("no result for t1")
}

#[test]
fn a_hook_that_exits_2_denies_the_call_with_its_stderr() {
    let home = tempfile::tempdir().unwrap();
    let config = r#"
[[hooks]]
event = "before_tool_call"
tool = "fs|shell"
name = "no-writes"
command = "cat > seen.json; echo 'no writes in this folder' >&2; exit 2"
"#;
    let output = run_with(home.path(), config);
    assert_eq!(
        hook_events(&output),
        [json!({
            "type": "hook", "hook": "no-writes", "point": "before_tool_call",
            "tool_use_id": "t1", "decision": "block", "reason": "no writes in this folder"
        })]
    );
    assert_eq!(
        result_of_t1(&output),
        (
            "Blocked by hook `no-writes`: no writes in this folder".to_owned(),
            true
        )
    );
    assert!(
        !home.path().join("root/notes.txt").exists(),
        "nothing written"
    );
    // What the command read: one JSON object naming the moment.
    let seen: Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join("seen.json")).unwrap())
            .unwrap();
    assert_eq!(seen["event"], "before_tool_call");
    assert_eq!(seen["tool"], "fs");
    assert_eq!(seen["tool_use_id"], "t1");
    assert_eq!(seen["arguments"]["path"], "/notes.txt");
    assert_eq!(seen["cwd"], home.path().display().to_string());
    assert!(seen["run_id"].is_string());
}

#[test]
fn a_hook_for_another_tool_is_not_asked() {
    let home = tempfile::tempdir().unwrap();
    let config = r#"
[[hooks]]
event = "before_tool_call"
tool = "mcp__*"
command = "exit 2"
"#;
    let output = run_with(home.path(), config);
    assert!(hook_events(&output).is_empty());
    assert!(home.path().join("root/notes.txt").exists());
}

#[test]
fn a_hook_rewrites_the_arguments_with_json_on_stdout() {
    let home = tempfile::tempdir().unwrap();
    let config = r#"
[[hooks]]
event = "before_tool_call"
command = """echo '{"decision": "rewrite", "arguments": {"command": "create", "path": "/tmp-notes.txt", "file_text": "rewritten"}}'"""
"#;
    let output = run_with(home.path(), config);
    assert_eq!(hook_events(&output)[0]["decision"], "rewrite");
    assert!(!home.path().join("root/notes.txt").exists());
    let written = std::fs::read_to_string(home.path().join("root/tmp-notes.txt")).unwrap();
    assert_eq!(written, "rewritten");
}

#[test]
fn a_prompt_hook_adds_context_the_model_reads() {
    let home = tempfile::tempdir().unwrap();
    let config = r#"
[[hooks]]
event = "user_prompt_submitted"
name = "rules"
command = """echo '{"decision": "add_context", "text": "Project rule: keep notes short."}'"""
"#;
    let output = run_with(home.path(), config);
    let created: Vec<Value> = events(&output)
        .into_iter()
        .filter(|e| e["type"] == "message_created")
        .collect();
    assert_eq!(created[0]["message"]["role"], "user");
    assert_eq!(
        created[0]["message"]["content"][0]["text"],
        "Project rule: keep notes short."
    );
    assert_eq!(hook_events(&output)[0]["hook"], "rules");
}

#[test]
fn a_hook_that_hangs_is_stopped_and_answers_its_default() {
    let home = tempfile::tempdir().unwrap();
    let config = r#"
[[hooks]]
event = "before_tool_call"
name = "slow"
command = "sleep 30"
timeout_ms = 300
on_error = "block"
"#;
    let started = Instant::now();
    let output = run_with(home.path(), config);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the run did not wait for the hook"
    );
    assert_eq!(
        hook_events(&output),
        [json!({
            "type": "hook", "hook": "slow", "point": "before_tool_call", "tool_use_id": "t1",
            "decision": "block", "reason": "the hook `slow` failed",
            "error": "no answer within 300 ms"
        })]
    );
    assert!(!home.path().join("root/notes.txt").exists());
}

#[test]
fn a_hook_that_times_out_is_stopped_with_every_process_it_started() {
    let home = tempfile::tempdir().unwrap();
    let pid_file = home.path().join("sleeper.pid");
    let config = format!(
        r#"
[[hooks]]
event = "before_tool_call"
name = "spawner"
command = "sleep 60 & echo $! > '{}'; wait"
timeout_ms = 500
"#,
        pid_file.display()
    );
    let output = run_with(home.path(), &config);
    assert_eq!(hook_events(&output)[0]["error"], "no answer within 500 ms");
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let proc_dir = std::path::Path::new("/proc").join(pid.trim());
    // Killed with the hook's group: gone (or a zombie awaiting its reaper).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let state = std::fs::read_to_string(proc_dir.join("stat")).unwrap_or_default();
        let gone = state.is_empty() || state.split_whitespace().nth(2) == Some("Z");
        if gone {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the hook's background process still runs: {state}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_hook_that_crashes_is_reported_and_passes_by_default() {
    let home = tempfile::tempdir().unwrap();
    let config = r#"
[[hooks]]
event = "before_tool_call"
name = "crashy"
command = "kill -9 $$"

[[hooks]]
event = "before_tool_call"
name = "garbled"
command = "echo 'not json'"
"#;
    let output = run_with(home.path(), config);
    let hooks = hook_events(&output);
    assert_eq!(hooks.len(), 2);
    assert_eq!(hooks[0]["decision"], "pass");
    assert_eq!(hooks[0]["error"], "killed by a signal");
    assert_eq!(hooks[1]["decision"], "pass");
    assert!(
        hooks[1]["error"]
            .as_str()
            .unwrap()
            .starts_with("its stdout is not a decision"),
        "{hooks:?}"
    );
    assert_eq!(
        std::fs::read_to_string(home.path().join("root/notes.txt")).unwrap(),
        "hello"
    );
}

#[test]
fn hooks_list_shows_the_configured_hooks_and_refuses_bad_ones() {
    let home = tempfile::tempdir().unwrap();
    let config_dir = home.path().join("config/agentloop");
    std::fs::create_dir_all(&config_dir).unwrap();
    std::fs::write(
        config_dir.join("config.toml"),
        r#"
[[hooks]]
event = "before_tool_call"
tool = "fs"
command = "./check.sh"
timeout_ms = 500

[[hooks]]
event = "before_compaction"
command = "./keep-goals.sh"

[[hooks]]
event = "run_end"
command = "true"
on_error = "block"
"#,
    )
    .unwrap();
    let output = command(home.path())
        .args(["hooks", "list"])
        .output()
        .unwrap();
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "before_tool_call\ttool=fs\ttimeout=500ms\tmax_output=65536\ton_error=pass\t./check.sh\n\
         before_compaction\ttool=*\ttimeout=10000ms\tmax_output=65536\ton_error=pass\t./keep-goals.sh\n\
         run_end\ttool=*\ttimeout=10000ms\tmax_output=65536\ton_error=block\ttrue\n"
    );

    std::fs::write(
        config_dir.join("config.toml"),
        "[[hooks]]\nevent = \"before_everything\"\ncommand = \"true\"\n",
    )
    .unwrap();
    let output = command(home.path())
        .args(["hooks", "list"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("hooks[0]: unknown event \"before_everything\""),
        "{stderr}"
    );
    assert!(
        stderr.contains("before_model_call, before_compaction, before_tool_call"),
        "the error names every event: {stderr}"
    );
}

/// Two writes, one of a secret, then a closing text.
const TWO_WRITES: &str = r#"[
  {"steps": [
    {"type": "tool_call", "id": "t1", "name": "fs", "fragments": ["{\"command\": \"create\", \"path\": \"/secret.txt\", \"file_text\": \"pw\"}"]},
    {"type": "tool_call", "id": "t2", "name": "fs", "fragments": ["{\"command\": \"create\", \"path\": \"/notes.txt\", \"file_text\": \"hello\"}"]}
  ]},
  {"steps": [{"type": "text", "chunks": ["Done."]}]}
]"#;

#[test]
fn chat_asks_the_command_hooks_that_deny_rewrite_and_add_context() {
    let home = tempfile::tempdir().unwrap();
    let config = r#"
[[hooks]]
event = "user_prompt_submitted"
name = "rules"
command = """echo '{"decision": "add_context", "text": "Project rule: keep notes short."}'"""

[[hooks]]
event = "before_tool_call"
tool = "fs"
name = "no-secrets"
command = "if grep -q secret; then echo 'secrets stay out of files' >&2; exit 2; fi"

[[hooks]]
event = "before_tool_call"
tool = "fs"
name = "rewrite"
command = """if grep -q notes; then echo '{"decision": "rewrite", "arguments": {"command": "create", "path": "/notes.txt", "file_text": "rewritten"}}'; fi"""
"#;
    let config_dir = home.path().join("config/agentloop");
    std::fs::create_dir_all(&config_dir).unwrap();
    std::fs::write(config_dir.join("config.toml"), config).unwrap();
    let script = home.path().join("script.json");
    std::fs::write(&script, TWO_WRITES).unwrap();
    let root = home.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let db = home.path().join("chat.db").display().to_string();
    let mut chat = command(home.path());
    chat.args([
        "chat",
        "--db",
        &db,
        "--chat",
        "c1",
        "--tools",
        "fs",
        "--approve",
        "all",
    ])
    .args(["--root", root.to_str().unwrap()])
    .args(["--provider", &format!("scripted:{}", script.display())])
    .current_dir(home.path());
    let output = common::piped(chat, "write notes\n");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        !root.join("secret.txt").exists(),
        "the denied write never ran"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("notes.txt")).unwrap(),
        "rewritten"
    );
    let shown = command(home.path())
        .args(["chats", "show", "c1", "--db", &db, "--json"])
        .output()
        .unwrap();
    // The whole stored chat, as text: the added context and the denied
    // call's result are among its messages.
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    let stored = shown["messages"].to_string();
    assert!(
        stored.contains("Project rule: keep notes short."),
        "{stored}"
    );
    assert!(
        stored.contains("Blocked by hook `no-secrets`: secrets stay out of files"),
        "{stored}"
    );
}

/// `agentloop run --json` with the `minion` tool over `script` and the
/// configuration `config`, its stdin a closed pipe. The minion's child
/// runs on the same scripted provider, so it plays the turns after the
/// parent's call.
fn run_minion(home: &Path, config: &str, script: &str) -> Output {
    let config_dir = home.join("config/agentloop");
    std::fs::create_dir_all(&config_dir).unwrap();
    std::fs::write(config_dir.join("config.toml"), config).unwrap();
    let path = home.join("script.json");
    std::fs::write(&path, script).unwrap();
    let output = command(home)
        .args(["run", "delegate the notes", "--json", "--tools", "minion"])
        .args(["--provider", &format!("scripted:{}", path.display())])
        .current_dir(home)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The parent calls the minion (`t1`), then answers. With no block, the
/// child would take the `Done.` turn and the parent would find no turn
/// left.
const MINION: &str = r#"[
  {"steps": [{"type": "tool_call", "id": "t1", "name": "minion", "fragments": ["{\"task\": \"summarise notes.txt\"}"]}]},
  {"steps": [{"type": "text", "chunks": ["Done."]}]}
]"#;

#[test]
fn a_before_subagent_hook_that_exits_2_keeps_the_minion_from_starting() {
    let home = tempfile::tempdir().unwrap();
    let config = r#"
[[hooks]]
event = "before_subagent"
tool = "minion"
name = "no-minions"
command = "cat > seen.json; echo 'no sub-agents in this folder' >&2; exit 2"
"#;
    let output = run_minion(home.path(), config, MINION);
    assert_eq!(
        hook_events(&output),
        [json!({
            "type": "hook", "hook": "no-minions", "point": "before_subagent",
            "tool_use_id": "t1", "decision": "block", "reason": "no sub-agents in this folder"
        })]
    );
    assert_eq!(
        result_of_t1(&output),
        (
            "Blocked by hook `no-minions`: no sub-agents in this folder".to_owned(),
            true
        )
    );
    let all = events(&output);
    assert!(
        !all.iter().any(|e| e["type"] == "tool_start"),
        "the minion never started"
    );
    let last = all.last().unwrap();
    assert_eq!(last["type"], "finished");
    assert_eq!(last["result"]["status"], "complete", "{last}");
    // What the command read: the sub-agent moment with the minion's task.
    let seen: Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join("seen.json")).unwrap())
            .unwrap();
    assert_eq!(seen["event"], "before_subagent");
    assert_eq!(seen["tool"], "minion");
    assert_eq!(seen["tool_use_id"], "t1");
    assert_eq!(seen["arguments"]["task"], "summarise notes.txt");
    assert!(seen["run_id"].is_string());

    let listed = command(home.path())
        .args(["hooks", "list"])
        .output()
        .unwrap();
    assert!(listed.status.success());
    assert!(
        String::from_utf8_lossy(&listed.stdout).starts_with("before_subagent\ttool=minion\t"),
        "{}",
        String::from_utf8_lossy(&listed.stdout)
    );
}

#[test]
fn an_after_subagent_hook_replaces_the_minions_answer() {
    let home = tempfile::tempdir().unwrap();
    let config = r#"
[[hooks]]
event = "after_subagent"
name = "review"
command = """cat > seen.json; echo '{"decision": "replace", "result": "The minion found nothing to report."}'"""
"#;
    let script = r#"[
  {"steps": [{"type": "tool_call", "id": "t1", "name": "minion", "fragments": ["{\"task\": \"summarise notes.txt\"}"]}]},
  {"steps": [{"type": "text", "chunks": ["The notes mention a password."]}]},
  {"steps": [{"type": "text", "chunks": ["Done."]}]}
]"#;
    let output = run_minion(home.path(), config, script);
    assert_eq!(hook_events(&output)[0]["point"], "after_subagent");
    assert_eq!(hook_events(&output)[0]["decision"], "replace");
    assert_eq!(
        result_of_t1(&output),
        ("The minion found nothing to report.".to_owned(), false)
    );
    let seen: Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join("seen.json")).unwrap())
            .unwrap();
    assert_eq!(seen["event"], "after_subagent");
    assert!(
        seen["result"]
            .as_str()
            .unwrap()
            .contains("The notes mention a password."),
        "{seen}"
    );
    assert_eq!(seen["is_error"], false);
}
