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

/// `agentloop ARGS` on a pty, in a home of its own under `home`, with
/// `env` set besides.
fn on_a_terminal(home: &Path, args: &[&str], env: &[(&str, &str)]) -> rexpect::session::PtySession {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentloop"));
    command
        .args(args)
        .envs(env.iter().copied())
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("TERM", "xterm")
        .env("NO_COLOR", "1")
        .env_remove("AGENTLOOP_AGENT_LOOP_STRATEGY");
    // Generous: a slow CI machine, not a performance bound.
    rexpect::session::spawn_command(command, Some(30_000)).unwrap()
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

/// An Anthropic stream of one assistant turn: `block` (its
/// `content_block_start`), then `delta` if any, ending for `stop`.
fn anthropic_turn(block: Value, delta: Option<Value>, stop: &str) -> String {
    let mut events = vec![
        json!({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
               "model": "claude-sonnet-4-5", "content": [], "stop_reason": null,
               "usage": {"input_tokens": 5, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": block}),
    ];
    events.extend(
        delta.map(|delta| json!({"type": "content_block_delta", "index": 0, "delta": delta})),
    );
    events.push(json!({"type": "content_block_stop", "index": 0}));
    events.push(json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 2}}));
    events.push(json!({"type": "message_stop"}));
    events
        .iter()
        .map(|event| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap()
            )
        })
        .collect()
}

/// On a terminal the person fills in the form a server asks for while
/// its tool runs (MCP elicitation): each field asked with its choices and
/// default, a wrong answer asked again with the reason, the required one
/// insisted on; the server gets the typed answers and its tool goes on,
/// its result (what the server read of the answers) reaching the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_terminal_the_person_fills_in_a_servers_form() {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};

    let Some(everything) = server_everything() else {
        return;
    };
    let model = MockServer::start().await;
    let sse = |body: String| {
        ResponseTemplate::new(200)
            .insert_header("content-type", "text/event-stream")
            .set_body_string(body)
    };
    let call = json!({"type": "tool_use", "id": "toolu_form",
                      "name": "everything__trigger-elicitation-request", "input": {}});
    let arguments = json!({"type": "input_json_delta", "partial_json": "{}"});
    Mock::given(method("POST"))
        .respond_with(sse(anthropic_turn(call, Some(arguments), "tool_use")))
        .up_to_n_times(1)
        .mount(&model)
        .await;
    let text = json!({"type": "text", "text": ""});
    let thanks = json!({"type": "text_delta", "text": "Thanks."});
    Mock::given(method("POST"))
        .respond_with(sse(anthropic_turn(text, Some(thanks), "end_turn")))
        .mount(&model)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().to_owned();
    let base = model.uri();
    let server = format!("node {} stdio", everything.display());
    tokio::task::spawn_blocking(move || {
        let mut p = on_a_terminal(
            &home,
            &[
                "run", "fill it in", "--approve", "all", "--mcp-stdio", &server, "--provider",
                "anthropic", "--base-url", &base,
            ],
            &[("ANTHROPIC_API_KEY", "sk-test")],
        );
        p.exp_string("? everything asks: Please provide inputs for the following fields:")
            .unwrap();
        // The fields come in the order of their names.
        let answers: &[(&str, &[&str])] = &[
            ("Your date of birth: ", &[""]),
            ("Agree to the terms and conditions [y/n]: ", &["maybe", "y"]),
            ("Your email address", &[""]),
            ("[It was a dark and stormy night.]: ", &[""]),
            ("Portfolio / personal website: ", &[""]),
            ("[42]: ", &["500", "7"]),
            ("(1 Cats, 2 Dogs, 3 Birds, 4 Fish, 5 Reptiles) [pet-1]: ", &["2"]),
            ("Your full, legal name*: ", &["", "Ada Lovelace"]),
            ("[3.14]: ", &[""]),
            ("(1 Tuna, 2 Salmon, 3 Trout; several, comma-separated) [fish-1]: ", &["tuna, 3"]),
            ("(1 Superman, 2 Green Lantern, 3 Wonder Woman) [hero-1]: ", &["wonder woman"]),
            ("(1 Guitar, 2 Piano, 3 Violin, 4 Drums, 5 Bass; several, comma-separated) [Guitar]: ", &[""]),
            ("(1 Monica, 2 Rachel, 3 Joey, 4 Chandler, 5 Ross, 6 Phoebe) [Monica]: ", &["Joey"]),
        ];
        for (prompt, typed) in answers {
            p.exp_string(prompt)
                .unwrap_or_else(|e| panic!("no prompt {prompt:?}: {e}"));
            for (n, line) in typed.iter().enumerate() {
                if n > 0 {
                    // The answer before was refused, with the reason.
                    p.exp_string(prompt).unwrap();
                }
                p.send_line(line).unwrap();
            }
        }
        p.exp_string("Send these answers? [Y/n]: ").unwrap();
        p.send_line("").unwrap();
        p.exp_string("User provided the requested information!").unwrap();
        p.exp_string("Thanks.").unwrap();
        p.exp_eof().unwrap();
    })
    .await
    .unwrap();

    let requests = model.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    let result = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|block| block["type"] == "tool_result")
        .expect("the second request carries the call's result")["content"]
        .to_string();
    for said in [
        "- Name: Ada Lovelace",
        "- Agreed to terms: true",
        "- Favorite Integer: 7",
        "- Favorite Number: 3.14",
        r#"\"legacyTitledEnum\": \"pet-2\""#,
        r#"\"titledSingleSelectEnum\": \"hero-3\""#,
        r#"\"untitledSingleSelectEnum\": \"Joey\""#,
        r#"\"firstLine\": \"It was a dark and stormy night.\""#,
    ] {
        assert!(result.contains(said), "{said} in {result}");
    }
}

/// `agentloop chat` starts MCP servers as `run` does: the model calls
/// their tools, and on the REPL `/prompts` lists their prompts and
/// `/prompt` sends one, filled in, as the person's message; a prompt
/// argument without a value says how to write it.
#[test]
fn a_chat_offers_mcp_tools_and_sends_a_prompt_from_the_repl() {
    let Some(everything) = server_everything() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let provider = script(
        dir.path(),
        json!([
            {"steps": [{"type": "text", "chunks": ["Sunny in Paris."]}]},
            {"steps": [tool_call("call-echo", "everything__echo", json!({"message": "from the chat"}))]},
            {"steps": [{"type": "text", "chunks": ["Echoed."]}]}
        ]),
    );
    let db = dir.path().join("chat.db").display().to_string();
    let server = format!("node {} stdio", everything.display());
    let mut p = on_a_terminal(
        dir.path(),
        &[
            "chat",
            "--approve",
            "all",
            "--provider",
            &provider,
            "--mcp-stdio",
            &server,
            "--db",
            &db,
        ],
        &[],
    );
    p.exp_string("Type a message").unwrap();
    p.send_line("/prompts").unwrap();
    p.exp_string("everything:args-prompt (city*, state)  A prompt with two arguments")
        .unwrap();
    p.send_line("/prompt everything:args-prompt city").unwrap();
    p.exp_string("\"city\": write each argument as NAME=VALUE")
        .unwrap();
    p.send_line("/prompt everything:args-prompt city=Paris")
        .unwrap();
    p.exp_string("Sunny in Paris.").unwrap();
    p.send_line("Echo something").unwrap();
    p.exp_string("Echo: from the chat").unwrap();
    p.exp_string("Echoed.").unwrap();
    p.send_line("/exit").unwrap();
    p.exp_eof().unwrap();

    let listed = agentloop(&["chats", "list", "--db", &db, "--json"]);
    let chats: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let chat = chats[0]["id"].as_str().unwrap().to_owned();
    let shown = agentloop(&["chats", "show", &chat, "--db", &db, "--json"]);
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    let first = &shown["messages"][0]["message"];
    assert_eq!(first["role"], "user", "{shown}");
    assert_eq!(
        first["content"][0]["text"], "What's weather in Paris?",
        "{shown}"
    );
}
