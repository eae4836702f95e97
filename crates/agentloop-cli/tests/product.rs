//! The `agentloop` binary as a person meets it: exit codes, closed pipes,
//! colour, one-line errors, the default database, base URLs and the demo.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// The binary with no provider configured and its data and config folders
/// inside `home`.
fn command(home: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentloop"));
    command
        .args(args)
        .current_dir(home)
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env_remove("NO_COLOR");
    for name in [
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "GEMINI_API_KEY",
        "GEMINI_BASE_URL",
        "GOOGLE_API_KEY",
        "AGENTLOOP_MODEL",
    ] {
        command.env_remove(name);
    }
    command
}

fn run(home: &Path, args: &[&str]) -> Output {
    command(home, args).stdin(Stdio::null()).output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A failure a person can act on: the expected code, one line on stderr
/// naming `needle`, no panic or backtrace.
fn assert_one_line_error(output: &Output, code: i32, needle: &str) {
    let text = stderr(output);
    assert_eq!(output.status.code(), Some(code), "stderr: {text}");
    assert_eq!(text.lines().count(), 1, "one line: {text}");
    assert!(text.starts_with("agentloop: "), "{text}");
    assert!(text.contains(needle), "{needle:?} missing from {text}");
    assert!(!text.contains("panicked") && !text.contains("backtrace"));
}

/// A database with one stored chat, made through `agentloop chat`.
fn database_with_a_chat(home: &Path) -> String {
    let script = home.join("script.json");
    std::fs::write(
        &script,
        r#"[{"steps": [{"type": "text", "chunks": ["Hi."]}], "usage": {"input_tokens": 3, "output_tokens": 1}}]"#,
    )
    .unwrap();
    let db = home.join("chats.db").display().to_string();
    let provider = format!("scripted:{}", script.display());
    let mut child = command(
        home,
        &["chat", "--db", &db, "--chat", "c1", "--provider", &provider],
    )
    .stdin(Stdio::piped())
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    child.stdin.take().unwrap().write_all(b"hello\n").unwrap();
    assert!(child.wait().unwrap().success());
    db
}

#[test]
fn help_lists_the_exit_codes() {
    let home = tempfile::tempdir().unwrap();
    let output = run(home.path(), &["--help"]);
    assert!(output.status.success());
    let help = stdout(&output);
    for line in [
        "Exit codes:",
        "1    runtime failure",
        "2    usage error",
        "130",
    ] {
        assert!(help.contains(line), "{line:?} missing from {help}");
    }
    let output = run(home.path(), &["run", "--no-such-flag"]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn a_closed_stdout_ends_every_printing_command_quietly() {
    let home = tempfile::tempdir().unwrap();
    let db = database_with_a_chat(home.path());
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../agentloop-providers/tests/fixtures/anthropic-text.chunks.txt")
        .display()
        .to_string();
    let root = home.path().display().to_string();
    let commands: Vec<Vec<&str>> = vec![
        vec!["tool", "list"],
        vec!["chats", "list", "--db", &db],
        vec!["chats", "list", "--db", &db, "--json"],
        vec!["chats", "show", "c1", "--db", &db],
        vec!["export", "--db", &db],
        vec!["replay-stream", "--api", "anthropic-messages", &fixture],
        vec!["run", "--demo", "--root", &root],
        vec!["run", "--demo", "--json", "--root", &root],
        vec![
            "tool",
            "call",
            "memory",
            "--input",
            r#"{"command": "view", "path": "/"}"#,
        ],
    ];
    for args in commands {
        let mut child = command(home.path(), &args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // No reader is left: the first write meets a closed pipe.
        drop(child.stdout.take());
        let output = child.wait_with_output().unwrap();
        let text = stderr(&output);
        assert_eq!(output.status.code(), Some(0), "{args:?}: {text}");
        assert!(!text.contains("panicked"), "{args:?}: {text}");
        assert!(!text.contains("Broken pipe"), "{args:?}: {text}");
    }
}

#[test]
fn chats_list_into_head_prints_one_line_and_exits_0() {
    let home = tempfile::tempdir().unwrap();
    let db = database_with_a_chat(home.path());
    let mut child = command(home.path(), &["chats", "list", "--db", &db])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(first.starts_with("c1\t"), "{first}");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

#[test]
fn colour_only_when_asked_or_on_a_terminal() {
    let home = tempfile::tempdir().unwrap();
    let root = home.path().display().to_string();
    let plain = run(home.path(), &["run", "--demo", "--root", &root]);
    assert!(plain.status.success());
    assert!(!stdout(&plain).contains('\x1b'), "a pipe gets no escapes");
    assert!(!stderr(&plain).contains('\x1b'), "a pipe gets no escapes");
    let always = run(
        home.path(),
        &["run", "--demo", "--root", &root, "--color", "always"],
    );
    assert!(stderr(&always).contains("\x1b[36m"));
    let never = command(home.path(), &["run", "--demo", "--root", &root])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(!stdout(&never).contains('\x1b'));
    assert!(!stderr(&never).contains('\x1b'));
    // Progress and notes stay on stderr: the answer alone is on stdout.
    assert!(stderr(&plain).contains("this is a demo"));
    assert!(stderr(&plain).contains("→ fs"));
    assert!(!stdout(&plain).contains("this is a demo"));
    assert!(!stdout(&plain).contains("→ fs"));
    assert_eq!(stdout(&plain).lines().count(), 1, "{}", stdout(&plain));
}

#[test]
fn the_demo_streams_thinking_a_tool_call_and_its_token_counts_at_no_cost() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("notes.txt"), "hello").unwrap();
    let root = home.path().display().to_string();
    let output = run(home.path(), &["run", "--demo", "--root", &root]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(text.contains("thinking ┆ The user wants"), "{text}");
    assert!(
        text.contains(r#"→ fs {"command":"view","path":"/"}"#),
        "{text}"
    );
    assert!(text.contains("✓ fs Directory /"), "{text}");
    assert!(text.contains("notes.txt"), "{text}");
    // No model was called: nothing was billed, so no cost is shown.
    let last = text.lines().last().unwrap();
    assert_eq!(last, "complete · 2670 in · 112 out", "{text}");
}

#[test]
fn the_terminal_view_of_the_demo() {
    let home = tempfile::tempdir().unwrap();
    let root = home.path().join("project");
    std::fs::create_dir(&root).unwrap();
    for name in ["a.txt", "b.txt", "c.txt", "d.txt", "e.txt"] {
        std::fs::write(root.join(name), "x").unwrap();
    }
    let root = root.display().to_string();
    let output = run(home.path(), &["run", "--demo", "--root", &root]);
    assert!(output.status.success(), "{}", stderr(&output));
    // The view is on stderr, after the demo's notice (a note of its own).
    let view: Vec<String> = stderr(&output)
        .lines()
        .filter(|line| !line.starts_with("agentloop: "))
        .map(str::to_owned)
        .collect();
    insta::assert_snapshot!(view.join("\n") + "\n");
    // Stdout holds the answer alone.
    assert!(stdout(&output).starts_with("This folder holds the files listed above."));
    assert_eq!(stdout(&output).lines().count(), 1);
}

#[test]
fn model_and_tool_text_cannot_send_terminal_escapes() {
    let home = tempfile::tempdir().unwrap();
    let script = home.path().join("script.json");
    std::fs::write(
        &script,
        r#"[
          {"steps": [
            {"type": "thinking", "chunks": ["\u001b[2Jwiped"]},
            {"type": "text", "chunks": ["title\u001b]0;pwned\u0007 done"]},
            {"type": "tool_call", "id": "t1", "name": "fs", "fragments": ["{\"command\": \"view\", \"path\": \"/\u001b[31mred\"}"]}
          ]},
          {"steps": [{"type": "text", "chunks": ["ok"]}]}
        ]"#,
    )
    .unwrap();
    let provider = format!("scripted:{}", script.display());
    let root = home.path().display().to_string();
    let output = run(
        home.path(),
        &[
            "run",
            "go",
            "--provider",
            &provider,
            "--tools",
            "fs",
            "--root",
            &root,
            "--color",
            "always",
        ],
    );
    // The answer on stdout, the rest on stderr: neither obeys escapes.
    let text = stdout(&output) + &stderr(&output);
    assert!(!text.contains("\x1b]0;"), "{text:?}");
    assert!(!text.contains("\x1b[2J"), "{text:?}");
    assert!(!text.contains('\x07'), "{text:?}");
    assert!(text.contains("title^[]0;pwned^G done"), "{text:?}");
    assert!(text.contains("^[[2Jwiped"), "{text:?}");
    // The tool's error names the hostile path: shown, not obeyed.
    assert!(!text.contains("\x1b[31mred"), "{text:?}");
}

#[test]
fn database_mistakes_are_one_line_each() {
    let home = tempfile::tempdir().unwrap();
    let folder = home.path().display().to_string();
    let output = run(home.path(), &["chats", "list", "--db", &folder]);
    assert_one_line_error(&output, 2, "is a folder");
    let missing_parent = home.path().join("no/such/dir/a.db").display().to_string();
    let output = run(home.path(), &["import", "-", "--db", &missing_parent]);
    // The import reads stdin first: an empty stdin is not an export.
    assert_one_line_error(&output, 2, "not a project export");
    let script = home.path().join("s.json");
    std::fs::write(
        &script,
        r#"[{"steps": [{"type": "text", "chunks": ["not reached"]}]}]"#,
    )
    .unwrap();
    let provider = format!("scripted:{}", script.display());
    let output = run(
        home.path(),
        &["chat", "--db", &missing_parent, "--provider", &provider],
    );
    assert_one_line_error(&output, 2, "does not exist");
    let output = run(home.path(), &["chats", "list", "--db", "mysql://host/db"]);
    assert_one_line_error(&output, 2, "unknown scheme mysql://");
    let output = run(home.path(), &["chats", "show", "nope"]);
    assert_one_line_error(&output, 1, "no chat nope");
    let output = run(home.path(), &["chats", "delete", "nope"]);
    assert_one_line_error(&output, 1, "no chat nope");
    let wrong = home.path().join("wrong.json");
    std::fs::write(&wrong, r#"{"hello": "world"}"#).unwrap();
    let wrong = wrong.display().to_string();
    let output = run(home.path(), &["import", &wrong]);
    assert_one_line_error(&output, 2, "is not a project export");
}

#[test]
fn commands_that_only_read_create_no_database() {
    let home = tempfile::tempdir().unwrap();
    for args in [
        vec!["chats", "list"],
        vec!["chats", "list", "--json"],
        vec!["users", "list"],
    ] {
        let output = run(home.path(), &args);
        assert!(output.status.success(), "{args:?}: {}", stderr(&output));
    }
    assert_eq!(
        stdout(&run(home.path(), &["chats", "list", "--json"])),
        "[]\n"
    );
    assert!(!home.path().join("data").exists(), "nothing was created");
    assert!(!home.path().join("agentloop.db").exists());
    let output = run(home.path(), &["export"]);
    assert_one_line_error(&output, 1, "no project cli");
    assert!(!home.path().join("data").exists());
}

#[test]
fn users_and_chat_share_the_data_folder_database() {
    let home = tempfile::tempdir().unwrap();
    let output = run(home.path(), &["users", "create", "ada"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(home.path().join("data/agentloop/agentloop.db").is_file());
    assert!(!home.path().join("agentloop.db").exists());
    let listed = stdout(&run(home.path(), &["users", "list"]));
    assert!(listed.contains("\tada"), "{listed}");
}

#[test]
fn an_unreachable_postgres_is_named() {
    let home = tempfile::tempdir().unwrap();
    // A port nothing listens on: refused at once.
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let url = format!("postgres://me@127.0.0.1:{port}/db");
    let output = run(home.path(), &["chats", "list", "--db", &url]);
    assert_one_line_error(&output, 1, &format!("127.0.0.1:{port}"));
    // A server that accepts but never answers: the connect timeout ends it.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let url = format!("postgres://me@127.0.0.1:{port}/db");
    let output = run(home.path(), &["chats", "list", "--db", &url]);
    assert_one_line_error(&output, 1, "did not answer");
    assert!(stderr(&output).contains(&format!("127.0.0.1:{port}")));
    drop(silent);
}

#[test]
fn a_bad_base_url_is_refused_before_any_request() {
    let home = tempfile::tempdir().unwrap();
    let output = command(
        home.path(),
        &[
            "run",
            "hi",
            "--provider",
            "anthropic",
            "--base-url",
            "localhost:9",
        ],
    )
    .env("ANTHROPIC_API_KEY", "k")
    .output()
    .unwrap();
    assert_one_line_error(&output, 2, "--base-url \"localhost:9\"");
    let output = command(home.path(), &["run", "hi", "--provider", "gemini"])
        .env("GEMINI_API_KEY", "k")
        .env("GEMINI_BASE_URL", "ftp://x")
        .output()
        .unwrap();
    assert_one_line_error(&output, 2, "is not an http:// or https:// URL");
}

/// Serves one HTTP request with `body` as an event stream; returns the
/// request line.
fn one_shot_server(body: &'static str) -> (String, std::thread::JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream);
        let mut request_line = String::new();
        reader.read_line(&mut request_line).unwrap();
        let mut length = 0;
        loop {
            let mut header = String::new();
            reader.read_line(&mut header).unwrap();
            if header.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap();
            }
        }
        let mut request_body = vec![0; length];
        reader.read_exact(&mut request_body).unwrap();
        let mut stream = reader.into_inner();
        write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{body}"
        )
        .unwrap();
        request_line
    });
    (address, handle)
}

#[test]
fn base_urls_from_the_environment_reach_every_provider() {
    let home = tempfile::tempdir().unwrap();
    let (address, server) = one_shot_server(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":2,\"output_tokens\":1}}}\n\n\
         event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
         event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"from the local anthropic\"}}\n\n\
         event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
         event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}\n\n\
         event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );
    let output = command(home.path(), &["run", "hi"])
        .env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", &address)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("from the local anthropic"));
    assert!(server.join().unwrap().contains("/messages"));

    let (address, server) = one_shot_server(
        "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"from the local gemini\"}]},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":2,\"candidatesTokenCount\":3}}\n\n",
    );
    let output = command(home.path(), &["run", "hi", "--base-url", &address])
        .env("GOOGLE_API_KEY", "k")
        .env("AGENTLOOP_MODEL", "gemini-2.5-flash")
        .args(["--provider", "gemini"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("from the local gemini"));
    assert!(server.join().unwrap().contains("streamGenerateContent"));
}

#[test]
fn tool_names_are_the_same_everywhere() {
    let home = tempfile::tempdir().unwrap();
    let listed = stdout(&run(home.path(), &["tool", "list"]));
    let names: Vec<&str> = listed
        .lines()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert!(names.contains(&"javascript"), "{names:?}");
    let root = home.path().display().to_string();
    for name in names.iter().filter(|n| **n != "minion") {
        let output = run(
            home.path(),
            &["run", "--demo", "--tools", name, "--root", &root],
        );
        assert!(
            output.status.success(),
            "--tools {name}: {}",
            stderr(&output)
        );
        let output = run(
            home.path(),
            &["tool", "call", name, "--input", "{}", "--root", &root],
        );
        assert!(
            !stderr(&output).contains("unknown tool"),
            "tool call {name}: {}",
            stderr(&output)
        );
    }
    let output = run(home.path(), &["run", "--demo", "--tools", "nope"]);
    assert_one_line_error(
        &output,
        2,
        "unknown tool \"nope\"; available: fs, memory, javascript",
    );
}

/// The notes (`agentloop: ` lines) of `output`, with `home` shown as
/// `[HOME]`.
fn notes(output: &Output, home: &Path) -> String {
    stderr(output)
        .lines()
        .filter(|line| line.starts_with("agentloop: "))
        .map(|line| line.replace(&home.display().to_string(), "[HOME]"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_question_with_no_key_plays_the_demo_but_is_not_answered() {
    let home = tempfile::tempdir().unwrap();
    let root = home.path().display().to_string();
    let output = run(
        home.path(),
        &["run", "what is here", "--tools", "fs", "--root", &root],
    );
    // Not a success a script could take for an answer.
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stdout(&output).is_empty(), "{}", stdout(&output));
    let shown = stderr(&output);
    assert!(shown.contains("→ fs"), "the demo played: {shown}");
    let notes = notes(&output, home.path());
    assert!(
        !notes.contains("agentloop run"),
        "no command the user just typed is suggested: {notes}"
    );
    insta::assert_snapshot!(notes);
    // Asked for, or with no question, the demo is a success.
    for args in [&["run", "--demo"][..], &["run"][..]] {
        let output = run(home.path(), args);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(stdout(&output).contains("scripted demo"), "{args:?}");
    }
}

#[test]
fn the_demo_refuses_what_it_cannot_honour() {
    let home = tempfile::tempdir().unwrap();
    let schema = home.path().join("schema.json");
    std::fs::write(&schema, r#"{"type": "object"}"#).unwrap();
    let schema = schema.display().to_string();
    for (args, needle) in [
        (
            vec!["run", "what is here", "--model", "nosuch-model"],
            "--model asks for the model \"nosuch-model\", but no model provider is configured",
        ),
        (
            vec!["run", "what is here", "--strategy", "react"],
            "the react strategy is asked for, but no model provider is configured",
        ),
        (
            vec!["run", "what is here", "--output-schema", &schema],
            "--output-schema asks for a value of its own shape",
        ),
    ] {
        let output = run(home.path(), &args);
        assert_one_line_error(&output, 2, needle);
        assert!(stderr(&output).contains("ANTHROPIC_API_KEY"), "{args:?}");
    }
    let output = command(home.path(), &["run", "what is here"])
        .env("AGENTLOOP_MODEL", "from-env")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_one_line_error(
        &output,
        2,
        "AGENTLOOP_MODEL asks for the model \"from-env\"",
    );
    // With --demo, a model of the environment is not for the demo.
    let output = command(home.path(), &["run", "--demo"])
        .env("AGENTLOOP_MODEL", "from-env")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let output = command(home.path(), &["run", "--demo"])
        .env("AGENTLOOP_AGENT_LOOP_STRATEGY", "react")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_one_line_error(
        &output,
        2,
        "the react strategy is asked for, but --demo plays a fixed script",
    );
    // An explicit --demo with a model is a contradiction clap names.
    let output = run(home.path(), &["run", "--demo", "--model", "x"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("'--demo' cannot be used with '--model <MODEL>'"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn replay_stream_reads_json_lines_recordings_as_well_as_sse() {
    let home = tempfile::tempdir().unwrap();
    let fixtures =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../agentloop-providers/tests/fixtures");
    for (file, api) in [
        ("anthropic-json-tool.1.chunks.txt", "anthropic-messages"),
        ("openai-text.chunks.txt", "openai-chat"),
    ] {
        let path = fixtures.join(file).display().to_string();
        let output = run(home.path(), &["replay-stream", "--api", api, &path]);
        assert!(output.status.success(), "{file}: {}", stderr(&output));
        let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert!(report["error"].is_null(), "{file}: {report}");
        assert!(!report["content"].as_array().unwrap().is_empty(), "{file}");
    }
    let missing = run(
        home.path(),
        &["replay-stream", "--api", "openai-chat", "no-such-file"],
    );
    assert_one_line_error(&missing, 2, "cannot read no-such-file");
}

/// Sends SIGINT to a child this test started, as Ctrl-C would.
fn interrupt(child: &std::process::Child) {
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn ctrl_c_in_a_piped_chat_cancels_the_turn_then_ends_the_chat() {
    let home = tempfile::tempdir().unwrap();
    let script = home.path().join("script.json");
    std::fs::write(
        &script,
        r#"[{"steps": [{"type": "text", "chunks": ["working on it"]}, {"type": "hang"}]},
            {"steps": [{"type": "text", "chunks": ["second answer"]}]}]"#,
    )
    .unwrap();
    let provider = format!("scripted:{}", script.display());
    let db = home.path().join("c.db").display().to_string();
    let mut child = command(
        home.path(),
        &[
            "chat",
            "--db",
            &db,
            "--chat",
            "piped",
            "--provider",
            &provider,
        ],
    )
    .stdin(Stdio::piped())
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Piped, the view (the streaming text, the status lines) is on stderr.
    let mut view = BufReader::new(child.stderr.take().unwrap());
    let mut wait_for = |needle: &str| {
        let mut seen = String::new();
        while !seen.contains(needle) {
            let mut line = String::new();
            assert!(
                view.read_line(&mut line).unwrap() > 0,
                "ended before {needle}: {seen}"
            );
            seen.push_str(&line);
        }
    };
    stdin.write_all(b"first\n").unwrap();
    wait_for("working on it");
    interrupt(&child);
    wait_for("cancelled");
    stdin.write_all(b"second\n").unwrap();
    wait_for("second answer");
    wait_for("complete");
    // Waiting for the next line, Ctrl-C ends the chat.
    interrupt(&child);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    drop(stdin);
}

#[test]
fn counts_and_error_kinds_read_as_words() {
    let home = tempfile::tempdir().unwrap();
    let root = home.path().join("root");
    std::fs::create_dir(&root).unwrap();
    // One file of one line, a folder of one entry, then no turn left.
    let script = home.path().join("script.json");
    std::fs::write(
        &script,
        r#"[{"steps": [
              {"type": "tool_call", "id": "t1", "name": "fs", "fragments": ["{\"command\": \"create\", \"path\": \"/a.txt\", \"file_text\": \"one\"}"]}
            ]},
            {"steps": [
              {"type": "tool_call", "id": "t2", "name": "fs", "fragments": ["{\"command\": \"view\", \"path\": \"/\"}"]}
            ]}]"#,
    )
    .unwrap();
    let provider = format!("scripted:{}", script.display());
    let root = root.display().to_string();
    let output = run(
        home.path(),
        &[
            "run",
            "hi",
            "--tools",
            "fs",
            "--approve",
            "fs",
            "--root",
            &root,
            "--provider",
            &provider,
        ],
    );
    let shown = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains("File created at /a.txt (1 line)."),
        "{shown}"
    );
    assert!(shown.contains("Directory / (1 entry):"), "{shown}");
    assert!(
        shown.contains("provider error: invalid request: the scripted provider has no turns left"),
        "{shown}"
    );
    assert!(!shown.contains("invalidrequest"), "{shown}");
}

/// Every `tool_use` id in a JSON value, in order.
fn tool_use_ids(value: &serde_json::Value, ids: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            if map.get("type").and_then(|t| t.as_str()) == Some("tool_use")
                && let Some(id) = map.get("id").and_then(|i| i.as_str())
            {
                ids.push(id.to_owned());
            }
            map.values().for_each(|v| tool_use_ids(v, ids));
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| tool_use_ids(v, ids)),
        _ => {}
    }
}

#[test]
fn the_demo_chat_answers_every_message_and_a_continued_chat_too() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("notes.txt"), "hello").unwrap();
    let chat = |args: &[&str], lines: &str| {
        let mut child = command(home.path(), args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(lines.as_bytes())
            .unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
        output
    };
    let answer = "This folder holds the files listed above.";

    let output = chat(&["chat", "--chat", "demo"], "one\ntwo\nthree\n");
    let (out, err) = (stdout(&output), stderr(&output));
    // Piped, a chat's answers go to stdout, the view (tool calls
    // included) to stderr.
    assert_eq!(out.matches(answer).count(), 3, "{out}\n{err}");
    assert_eq!(out.lines().count(), 3, "{out}");
    assert_eq!(err.matches("✓ fs Directory /").count(), 3, "{err}");
    assert_eq!(err.matches("notes.txt").count(), 3, "{err}");
    assert!(
        !format!("{out}{err}").contains("provider error"),
        "{out}\n{err}"
    );

    // A continued chat plays the demo again, after the stored history.
    let output = chat(&["chat", "--continue"], "four\n");
    let (out, err) = (stdout(&output), stderr(&output));
    assert_eq!(out.matches(answer).count(), 1, "{out}\n{err}");
    assert!(
        !format!("{out}{err}").contains("provider error"),
        "{out}\n{err}"
    );

    // Four prompts, four answers, and no tool-call id used twice.
    let shown = run(home.path(), &["chats", "show", "demo", "--json"]);
    assert!(shown.status.success(), "{}", stderr(&shown));
    let shown: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(shown["messages"].as_array().unwrap().len(), 16, "{shown}");
    let mut ids = Vec::new();
    tool_use_ids(&shown["messages"], &mut ids);
    let distinct: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!((ids.len(), distinct.len()), (4, 4), "{ids:?}");
}
