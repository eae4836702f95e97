//! Webhooks of `agentloop serve` heard by a local receiver: a delivery
//! that fails, then hangs, then succeeds is retried until it is
//! delivered, signed, and logged with every attempt; loopback receivers
//! are refused unless the operator allows private addresses.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::create_user;
use common::served::*;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

/// One request the receiver read.
struct Heard {
    headers: Vec<(String, String)>,
    body: String,
}

impl Heard {
    fn header(&self, name: &str) -> &str {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map_or("", |(_, v)| v.as_str())
    }
}

/// How the receiver answers its nth request.
#[derive(Clone, Copy)]
enum Answer {
    Fail,
    Hang,
    Succeed,
}

/// A receiver on loopback answering its requests as `answers` say (the
/// last answer repeats); what it hears goes to the returned channel.
fn receiver(answers: Vec<Answer>) -> (String, mpsc::Receiver<Heard>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { return };
            let heard = read_request(&mut stream);
            let _ = tx.send(heard);
            match answers[n.min(answers.len() - 1)] {
                Answer::Fail => {
                    let _ = stream.write_all(
                        b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    );
                }
                // Kept open, never answered.
                Answer::Hang => held.push(stream),
                Answer::Succeed => {
                    let _ =
                        stream.write_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
                }
            }
        }
    });
    (url, rx)
}

fn read_request(stream: &mut TcpStream) -> Heard {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .map_or(0, |(_, v)| v.parse().unwrap());
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    Heard {
        headers,
        body: String::from_utf8(body).unwrap(),
    }
}

fn sign(secret: &str, timestamp: &str, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{timestamp}.{body}").as_bytes());
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256={hex}")
}

/// The project's deliveries once `done` says they are, polled until a
/// deadline.
fn deliveries_when(
    address: &str,
    token: &str,
    project: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, body) = http(
            address,
            token,
            "GET",
            &format!("/api/projects/{project}/webhook-deliveries"),
            None,
        );
        assert_eq!(status, 200, "{body}");
        if done(&body["deliveries"]) {
            return body["deliveries"].clone();
        }
        assert!(
            Instant::now() < deadline,
            "deliveries never settled: {body}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

struct Setup {
    _dir: tempfile::TempDir,
    server: Served,
    token: String,
    project: String,
    task: String,
}

fn setup(extra: &[&str]) -> Setup {
    setup_with(
        extra,
        json!([{ "steps": [{ "type": "text", "chunks": ["Planned."] }] }]),
    )
}

fn setup_with(extra: &[&str], turns: Value) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    write_script(&script, turns);
    let token = create_user(&db, "ada");
    let server = serve_with(&db, &script, "webhooks", extra);
    let task = task(&server.address, &token, &dir.path().join("repo"));
    let (_, task_json) = http(
        &server.address,
        &token,
        "GET",
        &format!("/api/tasks/{task}"),
        None,
    );
    let project = task_json["project_id"].as_str().unwrap().to_owned();
    Setup {
        _dir: dir,
        server,
        token,
        project,
        task,
    }
}

fn register(setup: &Setup, url: &str) -> Value {
    register_for(setup, url, &["run.ended"])
}

fn register_for(setup: &Setup, url: &str, events: &[&str]) -> Value {
    let (status, body) = http(
        &setup.server.address,
        &setup.token,
        "PUT",
        &format!("/api/projects/{}/webhooks", setup.project),
        Some(json!({ "urls": [url], "events": events })),
    );
    assert_eq!(status, 200, "{body}");
    body
}

#[test]
fn a_failing_then_hanging_receiver_gets_the_signed_delivery_on_a_later_attempt() {
    let setup = setup(&[
        "--webhooks-allow-private",
        "--webhook-timeout",
        "1",
        "--webhook-retry-ms",
        "100",
    ]);
    let (url, heard) = receiver(vec![Answer::Fail, Answer::Hang, Answer::Succeed]);
    let registered = register(&setup, &url);
    let secret = registered["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"), "{registered}");
    let address = &setup.server.address;
    let run = start_run(address, &setup.token, &setup.task, "planification");
    // The run ends whatever the receiver does.
    until_status(address, &setup.token, &run, "completed");

    let deliveries = deliveries_when(address, &setup.token, &setup.project, |d| {
        d[0]["state"] == "delivered"
    });
    let attempts = deliveries[0]["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 3, "{deliveries}");
    assert_eq!(attempts[0]["status"], 500);
    assert!(
        attempts[1]["error"]
            .as_str()
            .unwrap()
            .contains("no answer within"),
        "{deliveries}"
    );
    assert_eq!(attempts[2]["status"], 204);
    assert_eq!(deliveries[0]["event"], "run.ended");

    let requests: Vec<Heard> = (0..3)
        .map(|_| heard.recv_timeout(Duration::from_secs(10)).unwrap())
        .collect();
    for request in &requests {
        let timestamp = request.header("x-agentloop-timestamp");
        assert_eq!(
            request.header("x-agentloop-signature"),
            sign(&secret, timestamp, &request.body)
        );
        assert_eq!(request.header("x-agentloop-event"), "run.ended");
        assert_eq!(
            request.header("x-agentloop-delivery"),
            deliveries[0]["id"].as_str().unwrap()
        );
        let body: Value = serde_json::from_str(&request.body).unwrap();
        assert_eq!(body["agent_run_id"], run.as_str());
        assert_eq!(body["status"], "completed");
        assert_eq!(body["project_id"], setup.project.as_str());
    }
    // A signature made with another secret does not match.
    assert_ne!(
        requests[0].header("x-agentloop-signature"),
        sign(
            "whsec_other",
            requests[0].header("x-agentloop-timestamp"),
            &requests[0].body
        )
    );

    // The log is stored: another server on the same database, after this
    // one is killed, shows it.
    let Setup {
        _dir: dir,
        server,
        token,
        project,
        ..
    } = setup;
    drop(server);
    let db = dir.path().join("db.sqlite").display().to_string();
    let again = serve_with(&db, &dir.path().join("script.json"), "webhooks-2", &[]);
    let (status, body) = http(
        &again.address,
        &token,
        "GET",
        &format!("/api/projects/{project}/webhook-deliveries"),
        None,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["deliveries"], deliveries);
}

#[test]
fn a_loopback_receiver_is_refused_unless_the_operator_allows_it() {
    let setup = setup(&[]);
    let (url, heard) = receiver(vec![Answer::Succeed]);
    register(&setup, &url);
    let address = &setup.server.address;
    let run = start_run(address, &setup.token, &setup.task, "planification");
    until_status(address, &setup.token, &run, "completed");
    let deliveries = deliveries_when(address, &setup.token, &setup.project, |d| {
        d[0]["state"] == "failed"
    });
    let error = deliveries[0]["attempts"][0]["error"].as_str().unwrap();
    assert!(error.contains("loopback or private"), "{error}");
    assert_eq!(deliveries[0]["attempts"].as_array().unwrap().len(), 1);
    assert!(heard.try_recv().is_err(), "the receiver was reached");
}

#[test]
fn registrations_are_checked_and_kept_to_their_owner() {
    let setup = setup(&[]);
    let address = &setup.server.address;
    let path = format!("/api/projects/{}/webhooks", setup.project);
    for bad in [
        json!({ "urls": ["ftp://example.com/x"] }),
        json!({ "urls": ["https://example.com/x"], "events": ["run.started"] }),
        json!({ "urls": "https://example.com/x" }),
        json!({ "urls": [], "secret": "mine" }),
    ] {
        let (status, body) = http(address, &setup.token, "PUT", &path, Some(bad.clone()));
        assert_eq!(status, 400, "{bad} → {body}");
    }
    let first = register(&setup, "https://example.com/hook");
    // The secret stays across changes unless rotated.
    let again = register(&setup, "https://example.com/other");
    assert_eq!(first["secret"], again["secret"]);
    let (_, rotated) = http(
        address,
        &setup.token,
        "PUT",
        &path,
        Some(json!({ "urls": ["https://example.com/other"], "rotate_secret": true })),
    );
    assert_ne!(rotated["secret"], first["secret"]);
    assert_eq!(rotated["events"].as_array().unwrap().len(), 3);
    // The project's own JSON never shows the secret.
    let (_, project) = http(
        address,
        &setup.token,
        "GET",
        &format!("/api/projects/{}", setup.project),
        None,
    );
    assert!(!project.to_string().contains("whsec_"), "{project}");
    // Another user sees nothing of it.
    let db = setup._dir.path().join("db.sqlite").display().to_string();
    let other = create_user(&db, "bob");
    let (status, _) = http(address, &other, "GET", &path, None);
    assert_eq!(status, 404);
    let deliveries = format!("/api/projects/{}/webhook-deliveries", setup.project);
    let (status, _) = http(address, &other, "GET", &deliveries, None);
    assert_eq!(status, 404);
    let (status, _) = http(address, &setup.token, "DELETE", &path, None);
    assert_eq!(status, 204);
    let (status, shown) = http(address, &setup.token, "GET", &path, None);
    assert_eq!(status, 404, "removed webhooks are gone: {shown}");
}

#[test]
fn a_run_waiting_for_a_person_and_a_completed_chain_are_heard() {
    let setup = setup_with(
        &["--webhooks-allow-private"],
        json!([
            // Implementation asks a question and waits.
            { "steps": [{ "type": "tool_call", "id": "q1", "name": "ask_user",
                          "fragments": ["{\"question\": \"Which name?\"}"] }] },
            { "steps": [{ "type": "text", "chunks": ["Built."] }] },
            // Review completes the workflow: the chain ends.
            { "steps": [{ "type": "tool_call", "id": "c1", "name": "complete_workflow", "fragments": ["{}"] }] },
            { "steps": [{ "type": "text", "chunks": ["Approved."] }] }
        ]),
    );
    let (url, heard) = receiver(vec![Answer::Succeed]);
    register_for(&setup, &url, &["run.waiting", "chain.completed"]);
    let address = &setup.server.address;
    let run = start_run(address, &setup.token, &setup.task, "implementation");
    until_status(address, &setup.token, &run, "waiting");
    let waiting = heard.recv_timeout(Duration::from_secs(30)).unwrap();
    assert_eq!(waiting.header("x-agentloop-event"), "run.waiting");
    let body: Value = serde_json::from_str(&waiting.body).unwrap();
    assert_eq!(body["agent_run_id"], run.as_str());
    assert_eq!(body["status"], "waiting");

    let (status, answer) = http(
        address,
        &setup.token,
        "POST",
        &format!("/api/agent-runs/{run}/decisions"),
        Some(json!({ "decisions": [{ "call_id": "q1", "decision": "answer", "text": "x" }] })),
    );
    assert_eq!(status, 200, "{answer}");
    let done = heard.recv_timeout(Duration::from_secs(30)).unwrap();
    assert_eq!(done.header("x-agentloop-event"), "chain.completed");
    let body: Value = serde_json::from_str(&done.body).unwrap();
    assert_eq!(body["agent_type"], "review");
    assert_eq!(body["status"], "completed");
    // Nothing else was registered for: run.ended is not sent.
    let deliveries = deliveries_when(address, &setup.token, &setup.project, |d| {
        d.as_array()
            .unwrap()
            .iter()
            .all(|d| d["state"] == "delivered")
    });
    let events: Vec<&str> = deliveries
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["event"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["run.waiting", "chain.completed"]);
}
