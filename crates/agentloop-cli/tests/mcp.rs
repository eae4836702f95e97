//! `agentloop run --mcp-stdio` and `--mcp`: MCP servers' tools offered to a
//! scripted model, called, and their results and progress in the events.
//! The runs pass `--approve all`: an MCP tool its server does not declare
//! read-only waits for approval, and these tests are about MCP itself.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::events;
use serde_json::{Value, json};

fn agentloop(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .args(args)
        .env_remove("AGENTLOOP_AGENT_LOOP_STRATEGY")
        .output()
        .unwrap()
}

/// The installed server-everything entry script, or `None` after a loud
/// notice (a failure under CI).
fn server_everything() -> Option<PathBuf> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../../target/mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    if script.is_file() {
        return Some(script);
    }
    let message = format!(
        "SKIPPED: server-everything is not installed at {}; run scripts/install-mcp-servers.sh",
        script.display()
    );
    if std::env::var_os("CI").is_some() {
        panic!("{message} (CI is set, so this is a failure)");
    }
    eprintln!("\n{0}\n{message}\n{0}\n", "*".repeat(72));
    None
}

fn fake_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../agentloop-mcp/tests/fixtures/fake_server.py")
}

fn tool_call(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "tool_call", "id": id, "name": name, "fragments": [input.to_string()]})
}

fn script(dir: &Path, turns: Value) -> String {
    let path = dir.join("script.json");
    std::fs::write(&path, turns.to_string()).unwrap();
    format!("scripted:{}", path.display())
}

fn tool_end<'a>(events: &'a [Value], id: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["type"] == "tool_end" && e["tool_use_id"] == id)
        .unwrap_or_else(|| panic!("no tool_end for {id}"))
}

/// The text the model got back for call `id` (its tool_result block).
fn result_text(events: &[Value], id: &str) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "message_created")
        .flat_map(|e| {
            e["message"]["content"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .find(|block| block["type"] == "tool_result" && block["tool_use_id"] == id)
        .unwrap_or_else(|| panic!("no tool result for {id}"))["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn mcp_stdio_tools_are_called_with_progress() {
    let Some(everything) = server_everything() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let provider = script(
        dir.path(),
        json!([
            {"steps": [
                tool_call("call-echo", "everything__echo", json!({"message": "from the model"})),
                tool_call("call-long", "everything__trigger-long-running-operation", json!({"duration": 0.3, "steps": 3})),
            ]},
            {"steps": [{"type": "text", "chunks": ["done"]}]}
        ]),
    );
    let server = format!("node {} stdio", everything.display());
    let output = agentloop(&[
        "run",
        "hi",
        "--approve",
        "all",
        "--provider",
        &provider,
        "--mcp-stdio",
        &server,
        "--json",
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let events = events(&output);

    // Both calls ran: the tools were offered to the model under their
    // namespaced names (an unknown tool would end as an error).
    assert_eq!(tool_end(&events, "call-echo")["is_error"], false);
    assert_eq!(tool_end(&events, "call-long")["is_error"], false);
    assert!(result_text(&events, "call-echo").contains("Echo: from the model"));
    assert!(result_text(&events, "call-long").contains("Long running operation completed."));

    let progress: Vec<String> = events
        .iter()
        .filter(|e| e["type"] == "tool_block_update" && e["tool_use_id"] == "call-long")
        .map(|e| {
            e["block"]["rendering_groups"][0]["blocks"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(progress, ["Progress 1/3", "Progress 2/3", "Progress 3/3"]);
    assert_eq!(events.last().unwrap()["result"]["status"], "complete");
}

#[test]
fn the_terminal_view_shows_mcp_progress_as_it_arrives() {
    let Some(everything) = server_everything() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let provider = script(
        dir.path(),
        json!([
            {"steps": [tool_call("call-long", "everything__trigger-long-running-operation", json!({"duration": 0.3, "steps": 3}))]},
            {"steps": [{"type": "text", "chunks": ["done"]}]}
        ]),
    );
    let server = format!("node {} stdio", everything.display());
    let output = agentloop(&[
        "run",
        "hi",
        "--approve",
        "all",
        "--provider",
        &provider,
        "--mcp-stdio",
        &server,
        "--color",
        "always",
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // The view is on stderr (notes aside), the answer alone on stdout.
    assert_eq!(String::from_utf8_lossy(&output.stdout), "done\n");
    let view: String = String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter(|line| !line.starts_with("agentloop: "))
        .map(|line| format!("{line}\n"))
        .collect();
    // Colour codes shown as `⟨2m` so the snapshot stays readable.
    let view = view.replace("\x1b[", "⟨");
    insta::assert_snapshot!(view);
}

#[test]
fn mcp_config_file_servers_and_a_crash_the_model_sees() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"fake": {"command": "python3", "args": ["-u", fake_server()]}}})
            .to_string(),
    )
    .unwrap();
    let provider = script(
        dir.path(),
        json!([
            {"steps": [tool_call("call-crash", "fake__crash", json!({}))]},
            {"steps": [tool_call("call-pid", "fake__pid", json!({}))]},
            {"steps": [{"type": "text", "chunks": ["done"]}]}
        ]),
    );
    let output = agentloop(&[
        "run",
        "hi",
        "--approve",
        "all",
        "--provider",
        &provider,
        "--mcp",
        config.to_str().unwrap(),
        "--json",
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let events = events(&output);
    assert_eq!(tool_end(&events, "call-crash")["is_error"], true);
    assert!(
        result_text(&events, "call-crash").contains("MCP server `fake` stopped during the call")
    );
    // Restarted for the next call.
    assert_eq!(tool_end(&events, "call-pid")["is_error"], false);
    assert_eq!(events.last().unwrap()["result"]["status"], "complete");
}

#[test]
fn a_bad_mcp_config_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(&config, r#"{"mcpServers": {"x": {"args": []}}}"#).unwrap();
    let provider = script(
        dir.path(),
        json!([{"steps": [{"type": "text", "chunks": ["not reached"]}]}]),
    );
    let output = agentloop(&[
        "run",
        "hi",
        "--approve",
        "all",
        "--provider",
        &provider,
        "--mcp",
        config.to_str().unwrap(),
    ]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("needs `command` or `url`"), "{stderr}");

    let output = agentloop(&[
        "run",
        "hi",
        "--approve",
        "all",
        "--provider",
        &provider,
        "--mcp-stdio",
        "/nonexistent/server --flag",
    ]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("/nonexistent/server"), "{stderr}");
}

#[test]
fn ctrl_c_during_an_mcp_call_reaches_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"fake": {
            "command": "python3",
            "args": ["-u", fake_server()],
            "env": {"FAKE_LOG": log},
        }}})
        .to_string(),
    )
    .unwrap();
    let provider = script(
        dir.path(),
        json!([{"steps": [tool_call("call-wait", "fake__wait", json!({}))]}]),
    );
    let child = Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .args([
            "run",
            "hi",
            "--approve",
            "all",
            "--provider",
            &provider,
            "--mcp",
            config.to_str().unwrap(),
            "--json",
        ])
        .env_remove("AGENTLOOP_AGENT_LOOP_STRATEGY")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once the server holds the call.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !std::fs::read_to_string(&log).is_ok_and(|l| l.contains("\"wait\"")) {
        assert!(
            std::time::Instant::now() < deadline,
            "the server never got the call"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let entries: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let wait_id = entries[0]["wait"].clone();
    let cancelled = entries
        .iter()
        .find_map(|e| e.get("cancelled"))
        .unwrap_or_else(|| panic!("no cancellation reached the server: {entries:?}"));
    assert_eq!(cancelled["requestId"], wait_id);
    assert_eq!(cancelled["reason"], "cancelled by the client");
    let events = events(&output);
    assert_eq!(events.last().unwrap()["result"]["status"], "cancelled");
}

#[test]
fn mcp_servers_of_the_configuration_file_are_started_for_run() {
    let Some(everything) = server_everything() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config/agentloop");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!(
            "[mcp_servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n",
            everything.display().to_string()
        ),
    )
    .unwrap();
    let provider = script(
        dir.path(),
        json!([
            {"steps": [tool_call("call-echo", "everything__echo", json!({"message": "configured"}))]},
            {"steps": [{"type": "text", "chunks": ["done"]}]}
        ]),
    );
    let output = Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .args([
            "run",
            "hi",
            "--approve",
            "all",
            "--provider",
            &provider,
            "--json",
        ])
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let events = events(&output);
    assert_eq!(tool_end(&events, "call-echo")["is_error"], false);
    assert!(result_text(&events, "call-echo").contains("Echo: configured"));
}

/// A server's prompts are the person's: `agentloop mcp prompts` lists
/// them as `run --mcp-prompt` takes them, and a run started from one
/// opens with its messages, filled in with `--mcp-arg`s, the argument
/// prompt after them. A malformed name or argument says what is wrong.
#[test]
fn mcp_prompts_are_listed_and_a_run_starts_from_one() {
    let Some(everything) = server_everything() else {
        return;
    };
    let server = format!("node {} stdio", everything.display());
    let listed = agentloop(&["mcp", "prompts", "--mcp-stdio", &server]);
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let lines = String::from_utf8(listed.stdout).unwrap();
    assert!(
        lines.lines().any(|line| line
            == "everything:args-prompt (city*, state)  A prompt with two arguments, one required and one optional"),
        "{lines}"
    );
    assert!(
        lines
            .lines()
            .any(|line| line == "everything:simple-prompt  A prompt with no arguments"),
        "{lines}"
    );

    let dir = tempfile::tempdir().unwrap();
    let provider = script(
        dir.path(),
        json!([{"steps": [{"type": "text", "chunks": ["Sunny."]}]}]),
    );
    let output = agentloop(&[
        "run",
        "And tomorrow?",
        "--provider",
        &provider,
        "--mcp-stdio",
        &server,
        "--mcp-prompt",
        "everything:args-prompt",
        "--mcp-arg",
        "city=Paris",
        "--mcp-arg",
        "state=Texas",
        "--json",
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let events = events(&output);
    let result = &events.last().unwrap()["result"];
    assert_eq!(result["status"], "complete", "{result}");
    let opening: Vec<(String, String)> = result["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let text = m["content"][0]["text"].as_str().unwrap_or_default();
            (m["role"].as_str().unwrap().to_owned(), text.to_owned())
        })
        .collect();
    assert_eq!(
        opening[..3],
        [
            (
                "user".to_owned(),
                "What's weather in Paris, Texas?".to_owned()
            ),
            ("user".to_owned(), "And tomorrow?".to_owned()),
            ("assistant".to_owned(), "Sunny.".to_owned()),
        ],
        "{result}"
    );

    for (args, said) in [
        (
            vec!["--mcp-prompt", "args-prompt"],
            "does not name a prompt: write it as SERVER:PROMPT",
        ),
        (
            vec!["--mcp-prompt", "nowhere:args-prompt"],
            "no MCP server `nowhere`",
        ),
        (
            vec![
                "--mcp-prompt",
                "everything:args-prompt",
                "--mcp-arg",
                "city",
            ],
            "--mcp-arg \"city\": write it as NAME=VALUE",
        ),
    ] {
        let mut command = vec!["run", "hi", "--provider", &provider, "--mcp-stdio", &server];
        command.extend(args);
        let refused = agentloop(&command);
        assert!(!refused.status.success());
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(stderr.contains(said), "{stderr}");
    }
}
