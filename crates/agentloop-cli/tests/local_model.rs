//! `agentloop run` against a real model: llama.cpp's own OpenAI-compatible
//! `llama-server` serving SmolLM2-135M-Instruct, both installed by
//! `scripts/local-model.sh build` (which `.ci/run` calls). Each test starts
//! its own server on a free loopback port and asks little of the model:
//! it is tiny, the answers are greedy (`--temp 0`), and the checks are about
//! the loop and the adapter (streaming, tool calls, structured output,
//! usage, cancel, timeout), not the quality of the answers. Under `CI` a
//! missing server is a failure; elsewhere the tests skip loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Killed, agentloop};
use serde_json::Value;

/// The model id the script's server answers to.
const MODEL: &str = "smollm2-135m-instruct";

/// A running llama-server, killed when dropped.
struct LocalServer {
    _process: Killed,
    base_url: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The server binary and the model file, as the script reports them, or
/// `None` after a loud notice (a failure under CI).
fn installed() -> Option<(PathBuf, PathBuf)> {
    let output = Command::new("bash")
        .arg(workspace().join("scripts/local-model.sh"))
        .arg("paths")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let value = |key: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(key))
            .map(PathBuf::from)
    };
    let (server, model) = (value("LLAMA_SERVER=")?, value("LOCAL_MODEL_GGUF=")?);
    if server.is_file() && model.is_file() {
        return Some((server, model));
    }
    let message = format!(
        "SKIPPED: the local model is not installed ({} / {}); run scripts/local-model.sh build",
        server.display(),
        model.display()
    );
    if std::env::var_os("CI").is_some() {
        panic!("{message} (CI is set, so this is a failure)");
    }
    eprintln!("\n{0}\n{message}\n{0}\n", "*".repeat(72));
    None
}

fn start() -> Option<LocalServer> {
    let (server, model) = installed()?;
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("llama-server.log");
    let process = Command::new(server)
        .args(["-m", model.to_str().unwrap(), "--host", "127.0.0.1"])
        .args(["--port", &port.to_string(), "--alias", MODEL])
        .args([
            "--jinja", "--temp", "0", "-c", "4096", "-np", "1", "-t", "2",
        ])
        .arg("--no-webui")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let process = Killed(process);
    let base_url = format!("http://127.0.0.1:{port}/v1");
    let health = format!("http://127.0.0.1:{port}/health");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let ready = Command::new("curl")
            .args(["-fsS", "--max-time", "2", &health])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ready {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "llama-server was not ready in 120 s:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    Some(LocalServer {
        _process: process,
        base_url,
        log,
        _dir: dir,
    })
}

impl LocalServer {
    /// The port it listens on, as `AGENTLOOP_LOCAL_MODEL_PORT` names it.
    fn port(&self) -> String {
        let address = self.base_url.trim_end_matches("/v1");
        address.rsplit(':').next().unwrap().to_owned()
    }

    /// `agentloop run --json` against this server, the model named.
    fn run(&self) -> Command {
        let mut command = agentloop();
        command
            .args(["run", "--json", "--base-url", &self.base_url])
            .args(["--model", MODEL])
            .env_remove("AGENTLOOP_AGENT_LOOP_STRATEGY");
        command
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

fn events(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn result(events: &[Value]) -> &Value {
    &of_type(events, "finished")
        .last()
        .expect("no finished event")["result"]
}

#[test]
fn text_streams_in_chunks_and_its_tokens_are_counted() {
    let Some(server) = start() else { return };
    let output = server
        .run()
        .args(["--max-tokens", "24", "Say hello in five words."])
        .output()
        .unwrap();
    let events = events(&output.stdout);
    let result = result(&events);
    assert_eq!(
        result["status"],
        "complete",
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text_deltas = of_type(&events, "streaming_chunk")
        .into_iter()
        .filter(|e| e["delta"]["kind"] == "text")
        .count();
    assert!(text_deltas >= 2, "the text came in {text_deltas} chunk(s)");
    let tokens = &result["tokens"];
    assert!(tokens["input_tokens"].as_u64().unwrap() > 0, "{tokens}");
    let output_tokens = tokens["output_tokens"].as_u64().unwrap();
    assert!((1..=24).contains(&output_tokens), "{tokens}");
    // A model the price table does not know has no reliable cost.
    assert_eq!(tokens["cost_unreliable"], true);
}

#[test]
fn the_demo_question_makes_a_real_fs_call_whose_result_goes_back_to_the_model() {
    let Some(server) = start() else { return };
    let folder = tempfile::tempdir().unwrap();
    std::fs::write(folder.path().join("fruit.txt"), "apples and pears\n").unwrap();
    std::fs::write(folder.path().join("notes.md"), "# Notes\n").unwrap();
    let output = server
        .run()
        .args(["--tools", "fs", "--root", folder.path().to_str().unwrap()])
        .args(["--max-iterations", "2", "--max-tokens", "96"])
        .args([
            "--system",
            "Look at the folder with the fs tool: call it with \
             {\"command\": \"view\", \"path\": \"/\"}. Then name the files.",
        ])
        .arg("What is in this folder?")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let events = events(&output.stdout);
    // The model's first turn is a real tool call, which the fs tool ran.
    let call = of_type(&events, "tool_start")
        .first()
        .copied()
        .unwrap_or_else(|| panic!("the model called no tool: {stderr}"))
        .clone();
    assert_eq!(call["name"], "fs");
    let id = call["tool_use_id"].as_str().unwrap();
    assert!(
        of_type(&events, "tool_end")
            .iter()
            .any(|e| e["tool_use_id"] == id),
        "the call did not finish"
    );
    // Its result was committed and the model was asked again with it.
    let results_at = events
        .iter()
        .position(|e| {
            e["type"] == "message_created"
                && e["message"]["content"][0]["tool_use_id"].as_str() == Some(id)
        })
        .expect("no tool result committed");
    assert!(
        events[results_at..]
            .iter()
            .any(|e| e["type"] == "streaming_start" && e["iteration"] == 2),
        "the model was not asked again after the tool result"
    );
    let result = result(&events);
    let status = result["status"].as_str().unwrap();
    assert!(
        status == "complete" || status == "max_iterations",
        "{status}: {stderr}"
    );
    let turns = of_type(&events, "tokens_consumed").len();
    assert_eq!(turns, 2, "both turns report their tokens");
}

#[test]
fn structured_output_comes_back_validated_against_the_schema() {
    let Some(server) = start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("schema.json");
    std::fs::write(
        &schema,
        r#"{"type": "object", "properties": {"colour": {"type": "string"}, "sure": {"type": "boolean"}},
            "required": ["colour", "sure"], "additionalProperties": false}"#,
    )
    .unwrap();
    let output = server
        .run()
        .args(["--output-schema", schema.to_str().unwrap()])
        .args([
            "--max-tokens",
            "64",
            "What colour is the sky on a clear day?",
        ])
        .output()
        .unwrap();
    // With --json and a schema, stdout is the validated value alone.
    let stdout = String::from_utf8_lossy(&output.stdout);
    let value: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{}", String::from_utf8_lossy(&output.stderr)));
    assert!(value["colour"].is_string(), "{value}");
    assert!(value["sure"].is_boolean(), "{value}");
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn ctrl_c_mid_stream_cancels_the_run_and_the_server_sees_the_connection_drop() {
    let Some(server) = start() else { return };
    let mut child = server
        .run()
        .args(["--max-tokens", "1000", "Write a long story about a dragon."])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    // The first chunk of text: the stream is under way.
    for line in lines.by_ref() {
        let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
        let streaming = event["type"] == "streaming_chunk";
        seen.push(event);
        if streaming {
            break;
        }
    }
    assert!(
        seen.iter().any(|e| e["type"] == "streaming_chunk"),
        "no chunk streamed"
    );
    let interrupted = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(interrupted.success());
    seen.extend(lines.map(|line| serde_json::from_str(&line.unwrap()).unwrap()));
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert_eq!(result(&seen)["status"], "cancelled");
    // llama-server cancels a generation whose client went away.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !server.log().contains("cancel task") {
        assert!(
            Instant::now() < deadline,
            "the server never cancelled the generation:\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_run_past_its_timeout_ends_limit_exceeded() {
    let Some(server) = start() else { return };
    let output = server
        .run()
        .args(["--timeout", "1500ms", "--max-tokens", "1000"])
        .arg("Write a long story about a dragon.")
        .output()
        .unwrap();
    let events = events(&output.stdout);
    let result = result(&events);
    assert_eq!(result["status"], "limit_exceeded", "{result}");
    assert_eq!(result["limit"], "timeout");
    assert_eq!(output.status.code(), Some(5));
}

/// Kills, when dropped, the server `--local` started (by the pid it wrote).
struct StartedByRun(PathBuf);

impl Drop for StartedByRun {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(&self.0) {
            let _ = Command::new("kill").arg(pid.trim()).status();
        }
        let _ = std::fs::remove_file(&self.0);
        let _ = std::fs::remove_file(self.0.with_extension("log"));
    }
}

#[test]
fn run_local_starts_the_local_server_and_the_next_run_reuses_it() {
    let Some((server, _)) = installed() else {
        return;
    };
    let cache = server.parent().unwrap().parent().unwrap().to_owned();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let _started = StartedByRun(cache.join(format!("run/llama-server-{port}.pid")));
    let local_run = || {
        agentloop()
            .args(["run", "--local", "--json", "--max-tokens", "16", "Say hi."])
            .env("AGENTLOOP_LOCAL_MODEL_CACHE", &cache)
            .env("AGENTLOOP_LOCAL_MODEL_PORT", &port)
            .env_remove("AGENTLOOP_AGENT_LOOP_STRATEGY")
            .output()
            .unwrap()
    };
    let first = local_run();
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert_eq!(
        result(&events(&first.stdout))["status"],
        "complete",
        "{stderr}"
    );
    assert!(
        stderr.contains("starting the local model server"),
        "{stderr}"
    );
    let second = local_run();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(
        result(&events(&second.stdout))["status"],
        "complete",
        "{stderr}"
    );
    assert!(!stderr.contains("starting"), "not reused: {stderr}");
}

#[test]
fn run_local_without_an_installed_model_says_how_to_install_it() {
    let empty = tempfile::tempdir().unwrap();
    let output = agentloop()
        .args(["run", "--local", "Say hi."])
        .env("AGENTLOOP_LOCAL_MODEL_CACHE", empty.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("scripts/local-model.sh build"), "{stderr}");
}

/// `examples/evals/local-*.yaml` through `agentloop eval` against the real
/// model: every case passes, so a regression in the loop, the adapter or
/// the fs tool shows up as a failing report.
#[test]
fn the_local_eval_examples_pass_against_the_real_model() {
    let Some(server) = start() else { return };
    for (dataset, tools) in [("local-text.yaml", None), ("local-fs.yaml", Some("fs"))] {
        let path = workspace().join("examples/evals").join(dataset);
        let mut command = agentloop();
        command
            .arg("eval")
            .arg(&path)
            .args(["--base-url", &server.base_url, "--model", MODEL])
            .args(["--max-iterations", "2", "--max-tokens", "96"])
            .args(["--format", "json"]);
        if let Some(tools) = tools {
            command.args(["--tools", tools]);
        }
        let output = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let report: Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|e| panic!("{dataset}: no JSON report ({e}): {stderr}"));
        let summary = &report["summary"];
        assert!(summary["cases"].as_u64().unwrap() > 0, "{report}");
        assert_eq!(summary["passed"], summary["cases"], "{dataset}: {report}");
        assert!(output.status.success(), "{dataset}: {stderr}");
    }
}

#[test]
fn eval_local_without_an_installed_model_says_how_to_install_it() {
    let empty = tempfile::tempdir().unwrap();
    let dataset = workspace().join("examples/evals/local-text.yaml");
    let output = agentloop()
        .arg("eval")
        .arg(&dataset)
        .arg("--local")
        .env("AGENTLOOP_LOCAL_MODEL_CACHE", empty.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("scripts/local-model.sh build"), "{stderr}");
}

/// The `agentloop … --local` lines of the README's ```bash blocks.
fn readme_local_commands() -> Vec<Vec<String>> {
    let readme = std::fs::read_to_string(workspace().join("README.md")).unwrap();
    let mut inside = false;
    let mut commands = Vec::new();
    for line in readme.lines() {
        if line.trim_start().starts_with("```") {
            inside = !inside && line.trim() == "```bash";
            continue;
        }
        let code = line.split(" #").next().unwrap_or_default().trim();
        if inside && code.starts_with("agentloop ") && code.contains("--local") {
            commands.push(split_words(code.trim_start_matches("agentloop ")));
        }
    }
    commands
}

/// Words of a command line: double quotes group.
fn split_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            c if c.is_whitespace() && !quoted => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// Every README `--local` example, against the real model (the server this
/// test starts, found by `--local` on its port): it ends well (exit 0; a
/// chat given one line, a server until it serves). Each one's time is
/// printed.
#[test]
fn the_readme_local_examples_end_well() {
    let Some(server) = start() else { return };
    let port = server.port();
    let commands = readme_local_commands();
    assert!(commands.len() >= 4, "{commands:?}");
    for args in commands {
        let started = Instant::now();
        let mut command = agentloop();
        command
            .args(&args)
            .current_dir(workspace())
            .env("AGENTLOOP_LOCAL_MODEL_PORT", &port)
            .env_remove("AGENTLOOP_AGENT_LOOP_STRATEGY");
        if args[0] == "serve" {
            let dir = tempfile::tempdir().unwrap();
            let mut child = command
                .args(["--bind", "127.0.0.1:0", "--db", "memory"])
                .env("XDG_DATA_HOME", dir.path())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let stderr = child.stderr.take().unwrap();
            let served = BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
                .any(|line| line.contains("serving on http://"));
            let _ = child.kill();
            let _ = child.wait();
            assert!(served, "agentloop {args:?} did not serve");
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let output = common::piped(
            {
                command.env("XDG_DATA_HOME", dir.path());
                command
            },
            "Say hello.\n",
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        eprintln!(
            "agentloop {args:?}: {:.1} s",
            started.elapsed().as_secs_f64()
        );
        assert_eq!(
            output.status.code(),
            Some(0),
            "agentloop {args:?}: {stderr}\n{}",
            server.log()
        );
        assert!(
            !output.stdout.is_empty(),
            "agentloop {args:?}: no answer: {stderr}"
        );
    }
}

/// A prompt past the model's context is refused with the reason, before
/// the server would cut it.
#[test]
fn a_prompt_past_the_local_context_is_refused_saying_so() {
    let Some(server) = start() else { return };
    let port = server.port();
    let mut command = agentloop();
    command
        .args(["run", "--local", "Summarise:"])
        .env("AGENTLOOP_LOCAL_MODEL_PORT", &port);
    let output = common::piped(command, &"word ".repeat(6000));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("past the local model's context of 4096"),
        "{stderr}"
    );
}

/// A stand-in for llama-server, run by `--local` as the cache names it: it
/// answers `/health` and every chat completion with "ok", and records each
/// start in `$FAKE_LLAMA_STARTS`. The first one started dies on its
/// second completion, without answering, as a crashed server would; with
/// `$FAKE_LLAMA_RESTART_FAILS` set, a later one exits before it serves.
const FAKE_LLAMA_SERVER: &str = r#"#!/usr/bin/env python3
import http.server, json, os, sys
port = int(sys.argv[sys.argv.index("--port") + 1])
with open(os.environ["FAKE_LLAMA_STARTS"], "a") as f:
    f.write(f"{os.getpid()}\n")
with open(os.environ["FAKE_LLAMA_STARTS"]) as f:
    first = len(f.read().split()) == 1
if not first and os.environ.get("FAKE_LLAMA_RESTART_FAILS"):
    sys.exit(3)
answered = 0

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args):
        pass
    def send(self, kind, body):
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        self.send("application/json", b'{"status": "ok"}')
    def do_POST(self):
        global answered
        self.rfile.read(int(self.headers.get("content-length", 0)))
        if first and answered == 1:
            os._exit(1)
        answered += 1
        chunk = lambda delta, finish: "data: " + json.dumps({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n"
        body = chunk({"role": "assistant", "content": "ok"}, None) + chunk({}, "stop") + "data: [DONE]\n\n"
        self.send("text/event-stream", body.encode())

http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
"#;

/// `eval --local` of `cases` cases (each asking for "ok") against the
/// stand-in server; returns each case's name and whether it passed, the
/// number of starts, the report and stderr, and the exit code.
fn eval_against_a_dying_server(
    cases: usize,
    restart_fails: bool,
) -> (Vec<(String, bool)>, usize, String, Option<i32>) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let server = dir.path().join("fake-llama-server");
    std::fs::write(&server, FAKE_LLAMA_SERVER).unwrap();
    std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).unwrap();
    let model = dir.path().join("model.gguf");
    std::fs::write(&model, "").unwrap();
    std::fs::write(
        cache.join("current.env"),
        format!(
            "LLAMA_SERVER={}\nLOCAL_MODEL_GGUF={}\nLOCAL_MODEL_ALIAS=fake\n",
            server.display(),
            model.display()
        ),
    )
    .unwrap();
    let dataset = dir.path().join("cases.yaml");
    let lines: String = (1..=cases)
        .map(|n| format!("- {{name: case{n}, prompt: Say ok., expect: {{regex: ok}}}}\n"))
        .collect();
    std::fs::write(&dataset, format!("name: cases\ncases:\n{lines}")).unwrap();
    let starts = dir.path().join("starts");
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let _started = StartedByRun(cache.join(format!("run/llama-server-{port}.pid")));
    let mut command = agentloop();
    command
        .arg("eval")
        .arg(&dataset)
        .args(["--local", "--concurrency", "1", "--format", "json"])
        .env("AGENTLOOP_LOCAL_MODEL_CACHE", &cache)
        .env("AGENTLOOP_LOCAL_MODEL_PORT", &port)
        .env("FAKE_LLAMA_STARTS", &starts)
        .env_remove("FAKE_LLAMA_RESTART_FAILS")
        .env_remove("AGENTLOOP_AGENT_LOOP_STRATEGY");
    if restart_fails {
        command.env("FAKE_LLAMA_RESTART_FAILS", "1");
    }
    let output = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("no JSON report ({e}): {stderr}"));
    let passed: Vec<(String, bool)> = report["cases"]
        .as_array()
        .unwrap_or_else(|| panic!("{report}"))
        .iter()
        .map(|case| {
            (
                case["name"].as_str().unwrap_or_default().to_owned(),
                case["passed"].as_bool().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(passed.len(), cases, "{report}");
    let started = std::fs::read_to_string(&starts).unwrap().lines().count();
    let log = format!("{report}\n{stderr}");
    (passed, started, log, output.status.code())
}

/// When the local server dies during `eval --local`, the case it was
/// answering fails and the next cases start it again and pass, rather than
/// all failing "connection refused". Runs everywhere: the server is a
/// stand-in (Python's standard library), not the real model.
#[test]
fn eval_local_starts_the_local_server_again_when_it_dies() {
    let (passed, started, stderr, code) = eval_against_a_dying_server(3, false);
    let passed: Vec<bool> = passed.into_iter().map(|(_, passed)| passed).collect();
    assert_eq!(passed, [true, false, true], "{stderr}");
    assert_eq!(started, 2, "{stderr}");
    assert!(
        stderr.contains("the local model server stopped answering; starting the local model"),
        "{stderr}"
    );
    assert_eq!(code, Some(1), "{stderr}");
}

/// When the dead server cannot be started again, the cases after it fail
/// at once with why, and no further start is tried for each of them.
#[test]
fn eval_local_stops_trying_when_the_local_server_cannot_start_again() {
    let (passed, started, stderr, code) = eval_against_a_dying_server(4, true);
    let passed: Vec<bool> = passed.into_iter().map(|(_, passed)| passed).collect();
    assert_eq!(passed, [true, false, false, false], "{stderr}");
    assert_eq!(started, 2, "one failed start, not one per case: {stderr}");
    assert_eq!(
        stderr
            .matches("stopped answering and could not be started again")
            .count(),
        2,
        "the last two cases fail with the start's reason: {stderr}"
    );
    assert_eq!(code, Some(1), "{stderr}");
}
