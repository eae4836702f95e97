//! `agentloop chat` through a real terminal (a pty): the prompt, `/cost`,
//! Ctrl-C cancelling a turn, Ctrl-D leaving, `--continue`, the demo
//! answering message after message, and command hooks from the
//! configuration (deny, rewrite, add context, one that hangs and one that
//! crashes) shown as they decide.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use rexpect::session::{PtySession, spawn_command};

/// `agentloop ARGS` on a pty, with no provider configured and its data
/// and config folders inside `home`.
fn on_a_terminal(home: &Path, args: &[&str]) -> PtySession {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentloop"));
    command
        .args(args)
        .current_dir(home)
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("TERM", "xterm")
        .env_remove("NO_COLOR");
    for name in [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "AGENTLOOP_MODEL",
    ] {
        command.env_remove(name);
    }
    // Generous: a slow CI machine, not a performance bound.
    spawn_command(command, Some(30_000)).unwrap()
}

fn chat(home: &Path, db: &str, script: &str, extra: &[&str]) -> PtySession {
    let script_path = home.join(format!("script-{}.json", extra.len()));
    std::fs::write(&script_path, script).unwrap();
    let provider = format!("scripted:{}", script_path.display());
    let mut args = vec!["chat", "--db", db, "--provider", &provider];
    args.extend_from_slice(extra);
    on_a_terminal(home, &args)
}

#[test]
fn the_demo_repl_answers_every_message() {
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("chats.db").display().to_string();
    let mut p = on_a_terminal(home.path(), &["chat", "--db", &db]);
    p.exp_string("this is a demo").unwrap();
    for message in ["one", "two", "three"] {
        p.exp_string("> ").unwrap();
        p.send_line(message).unwrap();
        // The tool call, then the end of the answer.
        p.exp_string("Directory / (").unwrap();
        p.exp_string("is what a real run shows.").unwrap();
    }
    p.exp_string("> ").unwrap();
    p.send_line("/exit").unwrap();
    p.exp_eof().unwrap();
}

#[test]
fn the_repl_answers_reports_cost_survives_ctrl_c_and_continues() {
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("chats.db").display().to_string();
    let mut p = chat(
        home.path(),
        &db,
        r#"[
          {"steps": [{"type": "text", "chunks": ["Hello ", "there."]}], "usage": {"input_tokens": 10, "output_tokens": 3, "cost": 0.5}},
          {"steps": [{"type": "text", "chunks": ["thinking it over"]}, {"type": "hang"}]}
        ]"#,
        &["--chat", "pty-chat"],
    );
    p.exp_string("chat pty-chat (stored in").unwrap();
    p.exp_string("> ").unwrap();
    p.send_line("hi").unwrap();
    p.exp_string("Hello there.").unwrap();
    p.exp_string("> ").unwrap();
    p.send_line("/cost").unwrap();
    // rexpect reads bytes as Latin-1: match around the `·` separators.
    p.exp_string("chat pty-chat: 10 in ").unwrap();
    p.exp_string(" 3 out ").unwrap();
    p.exp_string("$0.5000").unwrap();
    p.exp_string("> ").unwrap();
    p.send_line("take your time").unwrap();
    p.exp_string("thinking it over").unwrap();
    p.send_control('c').unwrap();
    p.exp_string("cancelled").unwrap();
    p.exp_string("> ").unwrap();
    p.send_line("/help").unwrap();
    p.exp_string("/exit").unwrap();
    p.exp_string("> ").unwrap();
    p.send_control('d').unwrap();
    p.exp_string("continue it with --continue").unwrap();
    p.exp_eof().unwrap();

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let statuses: Vec<String> = runtime.block_on(async {
        let store = agentloop_storage::open_store(&db).await.unwrap();
        let runs = store.list_runs("pty-chat").await.unwrap();
        runs.iter()
            .map(|r| {
                serde_json::to_value(r.status)
                    .unwrap()
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect()
    });
    assert_eq!(statuses.len(), 2, "{statuses:?}");
    assert!(statuses.iter().any(|s| s == "cancelled"), "{statuses:?}");

    let mut p = chat(
        home.path(),
        &db,
        r#"[{"steps": [{"type": "text", "chunks": ["Still here."]}]}]"#,
        &["--continue"],
    );
    p.exp_string("chat pty-chat (stored in").unwrap();
    p.exp_string("> ").unwrap();
    p.send_line("are you there?").unwrap();
    p.exp_string("Still here.").unwrap();
    p.exp_string("> ").unwrap();
    p.send_line("/exit").unwrap();
    p.exp_eof().unwrap();
}

#[test]
fn chat_on_a_terminal_asks_command_hooks_and_shows_their_decisions() {
    let home = tempfile::tempdir().unwrap();
    let config_dir = home.path().join("config/agentloop");
    std::fs::create_dir_all(&config_dir).unwrap();
    std::fs::write(
        config_dir.join("config.toml"),
        r#"
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

[[hooks]]
event = "before_tool_call"
name = "slow"
command = "if grep -q slow; then sleep 30; fi"
timeout_ms = 300
on_error = "block"

[[hooks]]
event = "before_tool_call"
name = "crashy"
command = "if grep -q crash; then kill -9 $$; fi"
"#,
    )
    .unwrap();
    let root = home.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let db = home.path().join("chats.db").display().to_string();
    let write = |id: &str, path: &str| {
        format!(
            r#"{{"type": "tool_call", "id": "{id}", "name": "fs", "fragments": ["{{\"command\": \"create\", \"path\": \"/{path}\", \"file_text\": \"x\"}}"]}}"#
        )
    };
    let script = format!(
        r#"[
          {{"steps": [{}, {}, {}, {}]}},
          {{"steps": [{{"type": "text", "chunks": ["All written."]}}]}}
        ]"#,
        write("t1", "secret.txt"),
        write("t2", "notes.txt"),
        write("t3", "slow.txt"),
        write("t4", "crash.txt"),
    );
    let started = std::time::Instant::now();
    let mut p = chat(
        home.path(),
        &db,
        &script,
        &[
            "--chat",
            "hooked",
            "--tools",
            "fs",
            "--approve",
            "all",
            "--root",
            root.to_str().unwrap(),
        ],
    );
    p.exp_string("chat hooked (stored in").unwrap();
    p.exp_string("> ").unwrap();
    p.send_line("write the files").unwrap();
    // Each decision is drawn as it is taken, in the order of the calls.
    p.exp_string("[hook rules at user_prompt_submitted: add_context]")
        .unwrap();
    p.exp_string("[hook no-secrets at before_tool_call: block]")
        .unwrap();
    p.exp_string("[hook rewrite at before_tool_call: rewrite]")
        .unwrap();
    p.exp_string("[hook slow at before_tool_call: block after an error: no answer within 300 ms]")
        .unwrap();
    p.exp_string("[hook crashy at before_tool_call: pass after an error: killed by a signal]")
        .unwrap();
    p.exp_string("All written.").unwrap();
    p.exp_string("> ").unwrap();
    p.send_line("/exit").unwrap();
    p.exp_eof().unwrap();
    assert!(
        started.elapsed() < std::time::Duration::from_secs(25),
        "the chat waited for the hanging hook"
    );
    assert!(
        !root.join("secret.txt").exists(),
        "the denied write never ran"
    );
    assert!(
        !root.join("slow.txt").exists(),
        "the hung hook answered its default, block"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("notes.txt")).unwrap(),
        "rewritten"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("crash.txt")).unwrap(),
        "x",
        "the crashed hook answered its default, pass"
    );
}
