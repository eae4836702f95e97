//! `agentloop mcp serve` driven by the reference Python MCP SDK client
//! (`mcp`, pinned in .ci/python-test-tools.txt): the ask tool listed and
//! called over stdio and streamable HTTP, progress received, a cancelled
//! call stopping its run, approvals asked through elicitation or refused,
//! a prompt to a chat whose turn runs queued for that turn's run.
//! Each check runs in the client's two modes: its default, which
//! negotiates the newest revision (capabilities declared per request,
//! forms answered in rounds), and the initialize handshake.
//! The model is the scripted provider.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::Killed;
use serde_json::{Value, json};

/// The Python of the test tools `.ci/run` installs, when it has the MCP
/// SDK; under CI a missing SDK fails the test, else it is skipped loudly.
fn python() -> Option<PathBuf> {
    common::python::python_with("mcp", "the Python MCP SDK")
}

/// The client's modes and the revision each must end up speaking.
const MODES: [(&str, &str); 2] = [("auto", "2026-07-28"), ("legacy", "2025-11-25")];

fn client_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_serve/client.py")
}

/// A folder with the script `turns`, an empty `files` folder for the fs
/// tool, and an empty configuration home.
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new(turns: Value) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("script.json"), turns.to_string()).unwrap();
        std::fs::create_dir(dir.path().join("files")).unwrap();
        std::fs::create_dir(dir.path().join("config")).unwrap();
        Self { dir }
    }

    fn files(&self) -> PathBuf {
        self.dir.path().join("files")
    }

    /// `agentloop mcp serve` with the script, the fs tool in `files`, and
    /// `extra`.
    fn server_args(&self, extra: &[&str]) -> Vec<String> {
        let mut args = vec![
            "mcp".to_owned(),
            "serve".to_owned(),
            "--provider".to_owned(),
            format!("scripted:{}", self.dir.path().join("script.json").display()),
            "--tools".to_owned(),
            "fs".to_owned(),
            "--root".to_owned(),
            self.files().display().to_string(),
        ];
        args.extend(extra.iter().map(|a| (*a).to_owned()));
        args
    }

    /// Runs the Python client over stdio; returns what it saw.
    fn stdio(&self, python: &Path, mode: &str, scenario: &str, extra: &[&str]) -> Value {
        let mut command = vec![env!("CARGO_BIN_EXE_agentloop").to_owned()];
        command.extend(self.server_args(extra));
        self.client(
            python,
            mode,
            &["stdio", &json!(command).to_string(), scenario],
            &[],
        )
    }

    /// Starts the server on streamable HTTP; returns it and its endpoint.
    fn http(&self, extra: &[&str], token: &str) -> (Killed, String) {
        let mut child = common::agentloop()
            .args(self.server_args(extra))
            .args(["--http", "127.0.0.1:0", "--token-env", "MCP_TEST_TOKEN"])
            .env("MCP_TEST_TOKEN", token)
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { return };
                eprintln!("[server] {line}");
                if let Some(url) = line.split("MCP server at ").nth(1) {
                    let _ = tx.send(url.trim().to_owned());
                }
            }
        });
        let url = rx.recv_timeout(Duration::from_secs(60)).unwrap();
        (Killed(child), url)
    }

    /// Runs the client in `mode`; returns what it saw, after checking it
    /// spoke the revision the mode negotiates and logged no failure.
    fn client(&self, python: &Path, mode: &str, args: &[&str], env: &[(&str, &str)]) -> Value {
        let mut command = Command::new(python);
        command
            .arg(client_script())
            .args(args)
            .env("MCP_MODE", mode)
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"));
        common::without_provider_keys(&mut command);
        for (key, value) in env {
            command.env(key, value);
        }
        let output = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "the client failed:\n{stderr}");
        let seen: Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|e| panic!("the client printed no JSON ({e}):\n{stderr}"));
        let revision = MODES.iter().find(|(m, _)| *m == mode).map(|(_, r)| *r);
        assert_eq!(seen["protocol"].as_str(), revision, "{seen}");
        // The SDK logs a session end it takes for a failure.
        assert!(!stderr.contains("termination failed"), "{stderr}");
        seen
    }
}

fn two_answers() -> Value {
    json!([
        {"steps": [{"type": "text", "chunks": ["Hel", "lo there."]}]},
        {"steps": [{"type": "text", "chunks": ["Hello again."]}]}
    ])
}

fn check_ask(seen: &Value) {
    let tools = seen["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1, "{seen}");
    assert_eq!(tools[0]["name"], "ask");
    assert_eq!(tools[0]["input"]["required"], json!(["prompt"]));
    assert_eq!(seen["first"]["text"], "Hello there.", "{seen}");
    assert_eq!(seen["first"]["is_error"], false);
    assert_eq!(seen["first"]["structured"]["status"], "complete");
    let messages: Vec<&str> = seen["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["message"].as_str().unwrap())
        .collect();
    assert_eq!(messages, ["model turn 1", "finished: complete"], "{seen}");
    // The same chat goes on: its id comes back.
    assert_eq!(seen["second"]["text"], "Hello again.");
    assert_eq!(
        seen["second"]["structured"]["chat_id"],
        seen["first"]["structured"]["chat_id"]
    );
    assert_eq!(seen["bad"]["is_error"], true);
    assert_eq!(seen["bad"]["text"], "`prompt` must be a string");
}

#[test]
fn over_stdio_the_ask_tool_is_listed_and_answers_with_progress() {
    let Some(python) = python() else { return };
    for (mode, _) in MODES {
        let setup = Setup::new(two_answers());
        let seen = setup.stdio(&python, mode, "ask", &[]);
        assert_eq!(seen["server"], "agentloop");
        check_ask(&seen);
    }
}

#[test]
fn over_http_the_ask_tool_is_listed_and_answers_with_progress() {
    let Some(python) = python() else { return };
    for (mode, _) in MODES {
        let setup = Setup::new(two_answers());
        let (_server, url) = setup.http(&[], "s3cret-token");
        let seen = setup.client(
            &python,
            mode,
            &["http", &url, "ask"],
            &[("MCP_BEARER", "s3cret-token")],
        );
        check_ask(&seen);
    }
}

#[test]
fn over_http_a_request_without_the_token_is_refused() {
    let setup = Setup::new(two_answers());
    let (_server, url) = setup.http(&[], "s3cret-token");
    let address = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    use std::io::{Read, Write};
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nAuthorization: Bearer wrong\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 401"), "{response}");
}

/// The first turn waits, then writes `marker.txt`; a cancelled run never
/// gets there. The second turn answers the next call, slowly enough that
/// a run that went on would have written the file by then.
fn cancellable() -> Value {
    json!([
        {"steps": [
            {"type": "text", "chunks": ["Working on it."]},
            {"type": "delay", "ms": 1500},
            {"type": "tool_call", "id": "t1", "name": "fs", "fragments": ["{\"command\": \"create\", \"path\": \"/marker.txt\", \"file_text\": \"ran\"}"]}
        ]},
        {"steps": [
            {"type": "delay", "ms": 3000},
            {"type": "text", "chunks": ["Second answer."]}
        ]}
    ])
}

fn check_cancelled(setup: &Setup, seen: &Value) {
    assert_eq!(seen["progress_before_cancel"][0], "model turn 1", "{seen}");
    assert!(seen.get("cancelled_call_returned").is_none(), "{seen}");
    // The next call got the model's next turn: the cancelled run made no
    // further request, and its tool call never ran.
    assert_eq!(seen["after"]["text"], "Second answer.", "{seen}");
    assert!(!setup.files().join("marker.txt").exists());
}

#[test]
fn over_stdio_a_cancelled_call_stops_its_run() {
    let Some(python) = python() else { return };
    for (mode, _) in MODES {
        let setup = Setup::new(cancellable());
        let seen = setup.stdio(&python, mode, "cancel", &["--approve", "all"]);
        check_cancelled(&setup, &seen);
    }
}

#[test]
fn over_http_a_cancelled_call_stops_its_run() {
    let Some(python) = python() else { return };
    for (mode, _) in MODES {
        let setup = Setup::new(cancellable());
        let (_server, url) = setup.http(&["--approve", "all"], "tok");
        let seen = setup.client(
            &python,
            mode,
            &["http", &url, "cancel"],
            &[("MCP_BEARER", "tok")],
        );
        check_cancelled(&setup, &seen);
    }
}

fn writes_a_file() -> Value {
    json!([
        {"steps": [
            {"type": "tool_call", "id": "t1", "name": "fs", "fragments": ["{\"command\": \"create\", \"path\": \"/notes.txt\", \"file_text\": \"hello\"}"]}
        ]},
        {"steps": [{"type": "text", "chunks": ["Done."]}]}
    ])
}

#[test]
fn an_approval_is_asked_through_elicitation() {
    let Some(python) = python() else { return };
    for (mode, _) in MODES {
        let setup = Setup::new(writes_a_file());
        let seen = setup.stdio(&python, mode, "approve", &[]);
        let forms = seen["forms"].as_array().unwrap();
        assert_eq!(forms.len(), 1, "{seen}");
        let message = forms[0]["message"].as_str().unwrap();
        assert!(message.contains("`fs`"), "{message}");
        assert_eq!(forms[0]["schema"]["required"], json!(["approve"]));
        assert_eq!(seen["result"]["text"], "Done.");
        assert_eq!(
            std::fs::read_to_string(setup.files().join("notes.txt")).unwrap(),
            "hello"
        );
    }
}

/// Over HTTP in each mode, a call that writes a file meets one form that
/// the client answers as `scenario` does; whether the file was written.
fn over_http_the_form_is(python: &Path, scenario: &str, written: bool) {
    for (mode, _) in MODES {
        let setup = Setup::new(writes_a_file());
        let (_server, url) = setup.http(&[], "tok");
        let seen = setup.client(
            python,
            mode,
            &["http", &url, scenario],
            &[("MCP_BEARER", "tok")],
        );
        assert_eq!(seen["forms"].as_array().unwrap().len(), 1, "{seen}");
        // Approved or not, the model's next turn answers.
        assert_eq!(seen["result"]["text"], "Done.", "{seen}");
        assert_eq!(setup.files().join("notes.txt").exists(), written, "{mode}");
    }
}

#[test]
fn over_http_an_approval_is_asked_through_elicitation() {
    let Some(python) = python() else { return };
    over_http_the_form_is(&python, "approve", true);
}

#[test]
fn over_http_a_declined_form_rejects_the_call() {
    let Some(python) = python() else { return };
    over_http_the_form_is(&python, "decline", false);
}

#[test]
fn without_elicitation_an_approval_is_refused_with_a_reason() {
    let Some(python) = python() else { return };
    for (mode, _) in MODES {
        let setup = Setup::new(writes_a_file());
        let seen = setup.stdio(&python, mode, "no-elicit", &[]);
        assert_eq!(
            seen["result"]["text"].as_str().unwrap().lines().next(),
            Some("Done.")
        );
        let refused = seen["result"]["structured"]["refused"][0].as_str().unwrap();
        assert!(
            refused.contains("fs was not run") && refused.contains("does not support elicitation"),
            "{refused}"
        );
        assert!(!setup.files().join("notes.txt").exists());
    }
}

#[test]
fn a_question_is_asked_through_elicitation_and_the_run_goes_on() {
    let Some(python) = python() else { return };
    for (mode, _) in MODES {
        let setup = Setup::new(asks_a_question());
        let seen = setup.stdio(&python, mode, "answer", &["--tools", "ask_user"]);
        let forms = seen["forms"].as_array().unwrap();
        assert_eq!(forms.len(), 1, "{seen}");
        assert_eq!(forms[0]["message"], "The agent asks: Which colour?");
        assert_eq!(forms[0]["schema"]["required"], json!(["answer"]));
        assert_eq!(seen["result"]["text"], "Blue it is.");
    }
}

/// A question the script asks whether or not `ask_user` is offered.
fn asks_a_question() -> Value {
    json!([
        {"steps": [
            {"type": "tool_call", "id": "q1", "name": "ask_user", "fragments": ["{\"question\": \"Which colour?\"}"]}
        ]},
        {"steps": [{"type": "text", "chunks": ["Blue it is."]}]}
    ])
}

#[test]
fn a_client_with_elicitation_is_offered_questions_without_tools_naming_ask_user() {
    let Some(python) = python() else { return };
    for (mode, _) in MODES {
        let setup = Setup::new(asks_a_question());
        let seen = setup.stdio(&python, mode, "answer", &[]);
        let forms = seen["forms"].as_array().unwrap();
        assert_eq!(forms.len(), 1, "{seen}");
        assert_eq!(forms[0]["message"], "The agent asks: Which colour?");
        assert_eq!(seen["result"]["text"], "Blue it is.");
    }
}

#[test]
fn a_client_without_elicitation_is_not_offered_questions_unless_named() {
    let Some(python) = python() else { return };
    for (mode, _) in MODES {
        let setup = Setup::new(asks_a_question());
        let seen = setup.stdio(&python, mode, "no-elicit", &[]);
        // Not offered, so nothing is refused for want of a person: the engine
        // answers the call as one to an unknown tool.
        let refused = &seen["result"]["structured"]["refused"];
        assert!(
            refused.is_null() || refused.as_array().is_some_and(Vec::is_empty),
            "{seen}"
        );
        // Named, it is offered and refused with the reason.
        let seen = setup.stdio(&python, mode, "no-elicit", &["--tools", "ask_user"]);
        let refused = seen["result"]["structured"]["refused"][0].as_str().unwrap();
        assert!(
            refused.contains("ask_user was not run") && refused.contains("elicitation"),
            "{refused}"
        );
    }
}

/// Looks, looks again slowly (the second prompt arrives meanwhile), then
/// answers; the chat's next call is answered after.
fn steerable() -> Value {
    let view = json!({ "command": "view", "path": "/" }).to_string();
    json!([
        {"steps": [
            {"type": "text", "chunks": ["Looking."]},
            {"type": "tool_call", "id": "v1", "name": "fs", "fragments": [view]}
        ]},
        {"steps": [
            {"type": "delay", "ms": 4000},
            {"type": "tool_call", "id": "v2", "name": "fs", "fragments": [view]}
        ]},
        {"steps": [{"type": "text", "chunks": ["Short, then."]}]},
        {"steps": [{"type": "text", "chunks": ["Nothing else."]}]}
    ])
}

/// A prompt to a chat whose turn runs is queued (answered at once), taken
/// by the run at a step boundary — after a tool's end, before the next
/// model turn — once, and the chat goes on after.
fn check_steered(seen: &Value) {
    assert_eq!(seen["queued"]["is_error"], false, "{seen}");
    assert_eq!(seen["queued"]["structured"]["status"], "queued", "{seen}");
    assert_eq!(seen["queued"]["structured"]["chat_id"], "steered", "{seen}");
    assert_eq!(seen["first"]["text"], "Short, then.", "{seen}");
    assert_eq!(seen["first"]["structured"]["chat_id"], "steered", "{seen}");
    let progress: Vec<&str> = seen["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap_or_default())
        .collect();
    let taken: Vec<usize> = progress
        .iter()
        .enumerate()
        .filter(|(_, p)| **p == "message taken: Keep it short.")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(taken.len(), 1, "{progress:?}");
    let at = taken[0];
    assert_eq!(progress[at - 1], "tool fs finished", "{progress:?}");
    assert!(progress[at + 1].starts_with("model turn "), "{progress:?}");
    assert_eq!(seen["after"]["text"], "Nothing else.", "{seen}");
}

#[test]
fn over_stdio_a_prompt_to_a_busy_chat_joins_its_run_at_the_next_step() {
    let Some(python) = python() else { return };
    for (mode, _) in MODES {
        let setup = Setup::new(steerable());
        let seen = setup.stdio(&python, mode, "steer", &["--approve", "all"]);
        check_steered(&seen);
    }
}

#[test]
fn over_http_a_prompt_to_a_busy_chat_joins_its_run_at_the_next_step() {
    let Some(python) = python() else { return };
    for (mode, _) in MODES {
        let setup = Setup::new(steerable());
        let (_server, url) = setup.http(&["--approve", "all"], "tok");
        let seen = setup.client(
            &python,
            mode,
            &["http", &url, "steer"],
            &[("MCP_BEARER", "tok")],
        );
        check_steered(&seen);
    }
}
