//! `agentloop serve` seen by an operator: the OpenAPI description checked
//! by a validator and a fuzzer, and the logs and metrics of a run (which
//! never show a secret).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use common::create_user;
use common::served::*;
use serde_json::{Value, json};

/// The folder of the Python test tools `.ci/run` installs (schemathesis,
/// openapi-spec-validator), if present.
fn python_tools() -> Option<std::path::PathBuf> {
    let dir = common::python::tools_bin();
    dir.join("schemathesis").exists().then_some(dir)
}

#[tokio::test]
async fn the_openapi_description_validates_and_a_fuzzer_finds_nothing() {
    let Some(tools) = python_tools() else {
        common::python::missing("schemathesis");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([{ "steps": [{ "type": "text", "chunks": ["Done."] }] }]),
    );
    let token = create_user(&db, "ada");
    // A fuzzer sends as fast as it can from one user: with a rate limit its
    // checks would meet 429s instead of the routes. Rates have their own
    // test (`serve_rate_limit.rs`).
    let mut server = serve_with(&db, &script, "fuzzed", &["--rate-limit", "off"]);
    let document = dir.path().join("openapi.json");
    let (status, body) = http(&server.address, &token, "GET", "/api/openapi.json", None);
    assert_eq!(status, 200);
    std::fs::write(&document, body.to_string()).unwrap();
    let validated = Command::new(tools.join("openapi-spec-validator"))
        .arg(&document)
        .output()
        .unwrap();
    assert!(
        validated.status.success(),
        "{}{}",
        String::from_utf8_lossy(&validated.stdout),
        String::from_utf8_lossy(&validated.stderr)
    );
    let fuzzed = Command::new(tools.join("schemathesis"))
        // It keeps a cache in its working folder: not in the repository.
        .current_dir(dir.path())
        .args([
            "--config-file",
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/schemathesis.toml"
            ),
            "run",
            &format!("http://{}/api/openapi.json", server.address),
            "--header",
            &format!("Authorization: Bearer {token}"),
            "--checks",
            "all",
            "--max-examples",
            "25",
            "--seed",
            "20261122",
            "--no-color",
        ])
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&fuzzed.stdout);
    assert!(
        fuzzed.status.success(),
        "{report}{}",
        String::from_utf8_lossy(&fuzzed.stderr)
    );
    assert!(report.contains("passed"), "{report}");
    server.child.kill().unwrap();
    server.child.wait().unwrap();
}

#[tokio::test]
async fn logs_and_metrics_tell_an_operator_what_happened_and_keep_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([
            { "steps": [
                { "type": "tool_call", "id": "c1", "name": "fs",
                  "fragments": ["{\"command\": \"view\", \"path\": \"/nope.txt\"}"] }
              ],
              "usage": { "input_tokens": 12, "output_tokens": 3 } },
            { "steps": [{ "type": "text", "chunks": ["Planned."] }] }
        ]),
    );
    let token = create_user(&db, "ada");
    let mut server = serve_with(
        &db,
        &script,
        "observed",
        &[
            "--log-format",
            "json",
            "--metrics-bind",
            "127.0.0.1:0",
            // Request lines are DEBUG.
            "--log-level",
            "info,agentloop_server=debug",
        ],
    );
    let task_id = task(&server.address, &token, &dir.path().join("repo"));
    let (status, run) = http(
        &server.address,
        &token,
        "POST",
        &format!("/api/tasks/{task_id}/agent-runs"),
        Some(json!({ "agentType": "planification" })),
    );
    assert_eq!(status, 201, "{run}");
    let run_id = run["id"].as_str().unwrap().to_owned();
    let events = read_sse(&server.address, &token, &run_id, "none");
    assert!(events.iter().any(|(n, _)| n == "finished"));
    // A token in a URL is refused outside the WebSocket route, and not logged.
    let (status, _) = http(
        &server.address,
        "",
        "GET",
        &format!("/api/me?token={token}"),
        None,
    );
    assert_eq!(status, 401);

    let metrics_address = server
        .log
        .lock()
        .unwrap()
        .iter()
        .find_map(|l| {
            l.split("metrics on http://")
                .nth(1)
                .map(|r| r.trim_end_matches("/metrics").to_owned())
        })
        .expect("the metrics address is printed");
    let mut scrape = String::new();
    for _ in 0..200 {
        let mut stream = TcpStream::connect(&metrics_address).unwrap();
        write!(
            stream,
            "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        scrape.clear();
        stream.read_to_string(&mut scrape).unwrap();
        if scrape.contains("agentloop_runs_finished_total{status=\"completed\"} 1") {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    for expected in [
        "agentloop_runs_finished_total{status=\"completed\"} 1",
        "agentloop_tool_errors_total{tool=\"fs\"} 1",
        "agentloop_tokens_total{provider=\"none\",model=\"scripted\",kind=\"input\"} 12",
        "agentloop_model_turn_seconds_count{provider=\"none\",model=\"scripted\"} 2",
        "agentloop_tool_call_seconds_count{tool=\"fs\"} 1",
        "agentloop_sse_clients 0",
        "agentloop_http_requests_total{method=\"POST\",route=\"/api/tasks/{task_id}/agent-runs\",status=\"201\"} 1",
    ] {
        assert!(
            scrape.contains(expected),
            "missing {expected} in:\n{scrape}"
        );
    }

    let term = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    assert!(server.child.wait().unwrap().success());
    let log = server.log.lock().unwrap().join("\n");
    assert!(!log.contains(&token), "the bearer token was logged");
    let lines: Vec<Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let created = lines
        .iter()
        .find(|l| {
            l["fields"]["message"] == "request"
                && l["span"]["http.route"] == "/api/tasks/{task_id}/agent-runs"
        })
        .unwrap_or_else(|| panic!("no request line for the run in:\n{log}"));
    assert_eq!(created["fields"]["http.response.status_code"], 201);
    // Latencies are milliseconds to the microsecond, not a float's noise.
    let latency = created["fields"]["latency_ms"].to_string();
    let decimals = latency.split_once('.').map_or(0, |(_, d)| d.len());
    assert!(
        created["fields"]["latency_ms"].is_number() && decimals <= 3,
        "latency_ms={latency}"
    );
    assert_eq!(created["span"]["http.request.method"], "POST");
    assert!(created["span"]["user_id"].is_string(), "{created}");
    assert!(created["span"]["request_id"].is_string(), "{created}");
    assert!(
        lines
            .iter()
            .any(|l| l["fields"]["message"] == "agent run status"
                && l["fields"]["status"] == "completed"
                && l["fields"]["agent_run_id"] == run_id.as_str()),
        "no run status line in:\n{log}"
    );
}
