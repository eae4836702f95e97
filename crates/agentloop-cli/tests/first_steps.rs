//! What a newcomer meets on the command line, driven through the binary:
//! the first command on a terminal, refused flags and files, piped chat
//! output, the chats list, `serve` and `mcp serve` start-up mistakes,
//! hooks with relative commands, and the messages that name the fix.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rexpect::process::wait::WaitStatus;
use rexpect::session::spawn_command;

/// The binary with no provider, its folders inside `home`.
fn agentloop(home: &Path, args: &[&str]) -> Command {
    let mut command = common::agentloop();
    command
        .args(args)
        .current_dir(home)
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env_remove("NO_COLOR");
    command
}

fn run(home: &Path, args: &[&str]) -> Output {
    agentloop(home, args).stdin(Stdio::null()).output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn script(home: &Path, json: &str) -> String {
    let path = home.join("script.json");
    std::fs::write(&path, json).unwrap();
    format!("scripted:{}", path.display())
}

fn write_config(home: &Path, text: &str) {
    let dir = home.join("config/agentloop");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), text).unwrap();
}

#[test]
fn the_first_command_on_a_terminal_ends_well_and_names_the_next_steps() {
    let home = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentloop"));
    common::without_provider_keys(&mut command);
    command
        .args(["run", "What is in this folder?", "--tools", "fs"])
        .current_dir(home.path())
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("NO_COLOR", "1")
        .env("TERM", "xterm");
    // Generous: a slow CI machine, not a performance bound.
    let mut p = spawn_command(command, Some(30_000)).unwrap();
    // rexpect reads bytes as Latin-1: match around the `→`.
    p.exp_string(r#"fs {"command":"view","path":"/"}"#).unwrap();
    let shown = p.exp_string("provider found").unwrap();
    p.exp_eof().unwrap();
    let status = p.process.wait().unwrap();
    assert!(
        matches!(status, WaitStatus::Exited(_, 0)),
        "{status:?}: {shown}"
    );
    for next in ["--demo", "--local", "ANTHROPIC_API_KEY", "keys.env"] {
        assert!(shown.contains(next), "{next}: {shown}");
    }
    assert!(!shown.contains("exit code 2"), "{shown}");
}

#[test]
fn approve_refuses_an_empty_list_and_a_tool_named_twice() {
    let home = tempfile::tempdir().unwrap();
    for (approve, said) in [
        ("", "--approve is empty"),
        ("fs,fs", "names the tool fs twice"),
        ("js,javascript", "names the tool javascript twice"),
    ] {
        let output = run(home.path(), &["run", "hi", "--demo", "--approve", approve]);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{approve:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains(said),
            "{approve:?}: {}",
            stderr(&output)
        );
        assert!(!stderr(&output).contains("→ fs"), "nothing played");
    }
}

#[test]
fn replay_stream_refuses_a_recording_of_another_api() {
    let home = tempfile::tempdir().unwrap();
    let recording = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../agentloop-providers/tests/fixtures/anthropic-json-tool.1.chunks.txt");
    let recording = recording.to_str().unwrap();
    for api in ["openai-chat", "openai-responses", "gemini"] {
        let output = run(home.path(), &["replay-stream", "--api", api, recording]);
        assert_eq!(output.status.code(), Some(2), "{api}: {}", stderr(&output));
        assert!(
            stderr(&output).contains("holds a anthropic-messages stream")
                && stderr(&output).contains("pass --api anthropic-messages"),
            "{api}: {}",
            stderr(&output)
        );
        assert!(stdout(&output).is_empty());
    }
    let right = run(
        home.path(),
        &["replay-stream", "--api", "anthropic-messages", recording],
    );
    assert_eq!(right.status.code(), Some(0), "{}", stderr(&right));
}

#[test]
fn the_configuration_takes_tools_and_approve_as_a_string_or_a_list() {
    let home = tempfile::tempdir().unwrap();
    for (text, tools, approve) in [
        (
            "tools = \"fs\"\napprove = \"fs\"\n",
            "tools = [\"fs\"]",
            "approve = \"fs\"",
        ),
        (
            "tools = [\"fs\", \"memory\"]\napprove = [\"fs\", \"memory\"]\n",
            "tools = [\"fs\", \"memory\"]",
            "approve = \"fs,memory\"",
        ),
        (
            "tools = \"fs, memory\"\n",
            "tools = [\"fs\", \"memory\"]",
            "",
        ),
    ] {
        write_config(home.path(), text);
        let output = run(home.path(), &["config", "show"]);
        assert_eq!(output.status.code(), Some(0), "{text}: {}", stderr(&output));
        let shown = stdout(&output);
        assert!(shown.contains(tools), "{text}: {shown}");
        assert!(shown.contains(approve), "{text}: {shown}");
    }
    // Each name is still checked as --tools checks it.
    write_config(home.path(), "tools = \"fs,fs\"\n");
    let output = run(home.path(), &["run", "hi", "--demo"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("names the tool fs twice"),
        "{}",
        stderr(&output)
    );
    write_config(home.path(), "tools = 3\n");
    let output = run(home.path(), &["run", "hi", "--demo"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("comma-separated string"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_toml_file_given_to_config_is_named_with_where_the_configuration_is() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("config.toml");
    std::fs::write(&file, "provider = \"anthropic\"\n").unwrap();
    let output = run(
        home.path(),
        &["run", "hi", "--demo", "--config", file.to_str().unwrap()],
    );
    assert_eq!(output.status.code(), Some(2));
    let said = stderr(&output);
    assert!(
        said.contains("sets `provider`, which belongs in the configuration file"),
        "{said}"
    );
    assert!(said.contains("config/agentloop/config.toml"), "{said}");
}

#[test]
fn a_piped_chat_writes_only_the_answers_to_stdout() {
    let home = tempfile::tempdir().unwrap();
    let output = common::piped(
        agentloop(home.path(), &["chat", "--chat", "piped"]),
        "hello\nagain\n",
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let answer = "This folder holds the files listed above. That was a scripted demo: no model \
                  was called, but everything you saw (streaming, thinking, a tool call and the \
                  token counts) is what a real run shows.";
    assert_eq!(stdout(&output), format!("{answer}\n{answer}\n"));
    let view = stderr(&output);
    assert!(view.contains("thinking") && view.contains("→ fs"), "{view}");
    assert!(view.contains("complete · "), "{view}");
}

#[test]
fn chats_list_shows_dates_and_titles_and_show_keeps_the_order() {
    let home = tempfile::tempdir().unwrap();
    let provider = script(
        home.path(),
        r#"[
          {"steps": [{"type": "text", "chunks": ["Let me look."]},
                     {"type": "tool_call", "id": "t1", "name": "fs", "fragments": ["{\"command\": \"view\", \"path\": \"/\"}"]}]},
          {"steps": [{"type": "text", "chunks": ["Nothing much."]}]}
        ]"#,
    );
    let output = common::piped(
        agentloop(
            home.path(),
            &[
                "chat",
                "--chat",
                "c1",
                "--provider",
                &provider,
                "--tools",
                "fs",
            ],
        ),
        "What is in this folder, please?\n",
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // An empty chat, as `/clear` leaves one, is not listed.
    let empty = common::piped(agentloop(home.path(), &["chat", "--chat", "empty"]), "");
    assert_eq!(empty.status.code(), Some(0), "{}", stderr(&empty));

    let listed = run(home.path(), &["chats", "list"]);
    let text = stdout(&listed);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert!(lines[0].starts_with("c1\t"), "{text}");
    assert!(
        lines[0].contains("What is in this folder, please?"),
        "{text}"
    );
    let date = regex::Regex::new(r"\t\d{4}-\d\d-\d\d \d\d:\d\d UTC\t").unwrap();
    assert!(date.is_match(lines[0]), "{text}");

    let shown = stdout(&run(home.path(), &["chats", "show", "c1"]));
    let said = shown.find("assistant: Let me look.").unwrap_or(usize::MAX);
    let called = shown.find("assistant: tool call fs").unwrap();
    assert!(said < called, "the text came before the call: {shown}");
}

#[test]
fn serve_start_up_mistakes_are_usage_errors_that_name_the_fix() {
    let home = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = taken.local_addr().unwrap().to_string();
    let missing = home.path().join("nowhere/agentloop.db");
    for (args, said) in [
        (vec!["serve", "--demo", "--bind", "nonsense"], "HOST:PORT"),
        (
            vec!["serve", "--demo", "--bind", &taken],
            "another program listens there",
        ),
        (
            vec![
                "serve",
                "--demo",
                "--bind",
                "127.0.0.1:0",
                "--db",
                missing.to_str().unwrap(),
            ],
            "does not exist",
        ),
    ] {
        let output = run(home.path(), &args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains(said),
            "{args:?}: {}",
            stderr(&output)
        );
    }
}

/// `serve` with `args`, its stderr lines collected; returns the process,
/// its address and the lines.
fn serve_logging(home: &Path, args: &[&str]) -> (common::Killed, String, Arc<Mutex<Vec<String>>>) {
    let mut child = agentloop(home, &["serve", "--bind", "127.0.0.1:0"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&lines);
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            seen.lock().unwrap().push(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let address = loop {
        let found = lines.lock().unwrap().iter().find_map(|line| {
            line.split("serving on http://")
                .nth(1)
                .map(|rest| rest.split_whitespace().next().unwrap_or("").to_owned())
        });
        if let Some(address) = found {
            break address;
        }
        assert!(Instant::now() < deadline, "{:?}", lines.lock().unwrap());
        std::thread::sleep(Duration::from_millis(50));
    };
    (common::Killed(child), address, lines)
}

#[test]
fn serve_says_how_to_get_a_model_and_logs_no_line_per_request() {
    let home = tempfile::tempdir().unwrap();
    let (server, address, lines) = serve_logging(home.path(), &[]);
    let start = lines.lock().unwrap().join("\n");
    for named in ["--demo", "--local", "ANTHROPIC_API_KEY"] {
        assert!(start.contains(named), "{named}: {start}");
    }
    for _ in 0..5 {
        let mut stream = std::net::TcpStream::connect(&address).unwrap();
        write!(
            stream,
            "GET /api/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        std::io::Read::read_to_string(&mut stream, &mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
    drop(server);
    let logged = lines.lock().unwrap().join("\n");
    assert!(!logged.contains("request"), "a line per request: {logged}");
    assert!(logged.contains("serving on"), "{logged}");
}

#[test]
fn mcp_serve_refuses_an_open_address_without_a_token() {
    let home = tempfile::tempdir().unwrap();
    let provider = script(
        home.path(),
        r#"[{"steps": [{"type": "text", "chunks": ["hi"]}]}]"#,
    );
    let output = run(
        home.path(),
        &[
            "mcp",
            "serve",
            "--http",
            "0.0.0.0:0",
            "--provider",
            &provider,
        ],
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let said = stderr(&output);
    assert!(
        said.contains("--token-env") && said.contains("--allow-unauthenticated"),
        "{said}"
    );
}

#[test]
fn a_relative_hook_command_runs_from_the_configuration_folder_and_blocks_plainly() {
    let home = tempfile::tempdir().unwrap();
    let hooks = home.path().join("config/agentloop/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let deny = hooks.join("deny.sh");
    std::fs::write(&deny, "#!/bin/sh\necho 'no writes here' >&2\nexit 2\n").unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&deny)
        .status()
        .unwrap();
    write_config(
        home.path(),
        "[[hooks]]\nevent = \"before_tool_call\"\nname = \"deny\"\ncommand = \"./hooks/deny.sh\"\n",
    );
    let provider = script(
        home.path(),
        r#"[
          {"steps": [{"type": "tool_call", "id": "t1", "name": "fs", "fragments": ["{\"command\": \"create\", \"path\": \"/x.txt\", \"file_text\": \"x\"}"]}]},
          {"steps": [{"type": "text", "chunks": ["Not written."]}]}
        ]"#,
    );
    // Run from another folder: the hook is found all the same.
    let elsewhere = home.path().join("work");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let output = agentloop(
        home.path(),
        &[
            "run",
            "write",
            "--provider",
            &provider,
            "--tools",
            "fs",
            "--approve",
            "all",
        ],
    )
    .current_dir(&elsewhere)
    .stdin(Stdio::null())
    .output()
    .unwrap();
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{said}");
    assert!(!said.contains("status 127"), "{said}");
    assert!(
        said.contains("✗ fs blocked by hook `deny`: no writes here"),
        "{said}"
    );
    assert!(!elsewhere.join("x.txt").exists());
}

#[test]
fn an_unreachable_server_is_named_unreachable() {
    let home = tempfile::tempdir().unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let output = agentloop(home.path(), &["run", "hi"])
        .env("OPENAI_BASE_URL", &url)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(
        said.contains("cannot reach") && said.contains("OPENAI_BASE_URL"),
        "{said}"
    );
    assert!(!said.contains("--model"), "{said}");
}

#[test]
fn info_names_the_local_model() {
    let home = tempfile::tempdir().unwrap();
    let output = agentloop(home.path(), &["info"])
        .env("AGENTLOOP_LOCAL_MODEL_CACHE", home.path().join("none"))
        .output()
        .unwrap();
    let shown = stdout(&output);
    assert!(shown.contains("--local runs the local model"), "{shown}");
    assert!(
        shown.contains("local:") && shown.contains("scripts/local-model.sh build"),
        "{shown}"
    );
}
