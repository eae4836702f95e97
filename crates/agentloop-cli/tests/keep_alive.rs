//! `agentloop serve` over kept-alive connections written by hand (no
//! client library that would silently retry): an answer sent before the
//! request body was read — a rejected token, an unknown route, a wrong
//! method — never resets the connection. A small body is drained and the
//! connection kept; a body too large, or one that stops arriving, gets
//! its answer with `Connection: close`, then a clean close (no reset).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::create_user;
use common::served::{Served, serve_with, write_script};
use serde_json::{Value, json};

/// Requests of the long run, over [`CONNECTIONS`] connections.
const REQUESTS: usize = 100_000;
const CONNECTIONS: usize = 4;

/// Longest wait for any one answer or close.
const PATIENCE: Duration = Duration::from_secs(20);

fn start(dir: &tempfile::TempDir) -> (Served, String) {
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([{"steps": [{"type": "text", "chunks": ["Done."]}]}]),
    );
    let db = dir.path().join("db.sqlite").to_string_lossy().into_owned();
    let token = create_user(&db, "keepalive");
    // One log line per request would be most of the test's time. The
    // test is a flood from one address by design (it checks connections,
    // not rates), so no rate limit.
    let served = serve_with(
        &db,
        &script,
        "keepalive",
        &["--log-level", "warn", "--rate-limit", "off"],
    );
    (served, token)
}

/// One answer as it arrived.
#[derive(Debug)]
struct Answer {
    status: u16,
    closes: bool,
    body: Value,
}

/// Why a request got no complete answer (shown through `Debug`).
#[derive(Debug)]
#[allow(dead_code)]
enum Failure {
    /// The connection was reset (or a write failed).
    Reset(std::io::Error),
    /// The server closed before the answer was complete.
    Unanswered { received: usize },
}

/// A kept-alive connection: requests written with the head and the body
/// in separate writes (so the body often arrives after the route has
/// answered), answers read by `Content-Length`.
struct Connection {
    stream: TcpStream,
    address: String,
    buffer: Vec<u8>,
}

impl Connection {
    fn open(address: &str) -> Self {
        let stream = TcpStream::connect(address).unwrap();
        stream.set_nodelay(true).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        Self {
            stream,
            address: address.to_owned(),
            buffer: Vec::new(),
        }
    }

    fn send(&mut self, method: &str, path: &str, token: &str, body: &[u8]) -> Result<(), Failure> {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\n\
Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            self.address,
            body.len()
        );
        self.stream
            .write_all(head.as_bytes())
            .map_err(Failure::Reset)?;
        if !body.is_empty() {
            self.stream.write_all(body).map_err(Failure::Reset)?;
        }
        Ok(())
    }

    fn request(
        &mut self,
        method: &str,
        path: &str,
        token: &str,
        body: &[u8],
    ) -> Result<Answer, Failure> {
        self.send(method, path, token, body)?;
        self.answer()
    }

    /// Reads more into the buffer; a close before `what` is complete is
    /// an unanswered request.
    fn fill(&mut self) -> Result<(), Failure> {
        let mut chunk = [0u8; 16 * 1024];
        match self.stream.read(&mut chunk) {
            Ok(0) => Err(Failure::Unanswered {
                received: self.buffer.len(),
            }),
            Ok(n) => {
                self.buffer.extend_from_slice(&chunk[..n]);
                Ok(())
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => Ok(()),
            Err(e) => Err(Failure::Reset(e)),
        }
    }

    fn answer(&mut self) -> Result<Answer, Failure> {
        let head_end = loop {
            if let Some(at) = self.buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            self.fill()?;
        };
        let head = String::from_utf8_lossy(&self.buffer[..head_end]).to_ascii_lowercase();
        let status = head[9..12].parse().unwrap();
        let header = |name: &str| {
            head.lines()
                .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
                .map(|value| value.trim().to_owned())
        };
        assert!(
            header("transfer-encoding").is_none(),
            "answers carry a length: {head}"
        );
        let length: usize = header("content-length").unwrap().parse().unwrap();
        let closes = header("connection").is_some_and(|v| v.contains("close"));
        while self.buffer.len() < head_end + length {
            self.fill()?;
        }
        let body = serde_json::from_slice(&self.buffer[head_end..head_end + length])
            .unwrap_or_else(|e| panic!("a complete JSON answer ({e}): {head}"));
        self.buffer.drain(..head_end + length);
        Ok(Answer {
            status,
            closes,
            body,
        })
    }

    /// Waits for the server to close: `Ok` on a clean end of stream,
    /// `Err` on a reset.
    fn closed(&mut self) -> Result<Duration, std::io::Error> {
        let start = Instant::now();
        let mut chunk = [0u8; 4096];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => return Ok(start.elapsed()),
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

const PROJECT: &[u8] = br#"{"name": "demo", "repoFolder": "/nowhere/in/particular"}"#;

#[test]
fn a_hundred_thousand_rejected_posts_and_gets_never_reset_a_kept_alive_connection() {
    let dir = tempfile::tempdir().unwrap();
    let (served, _) = start(&dir);
    let address = served.address.clone();
    let started = Instant::now();
    let workers: Vec<_> = (0..CONNECTIONS)
        .map(|_| {
            let address = address.clone();
            std::thread::spawn(move || {
                let mut connection = Connection::open(&address);
                let mut failures = Vec::new();
                let mut answered = 0usize;
                for i in 0..REQUESTS / CONNECTIONS {
                    let answer = if i % 2 == 0 {
                        connection.request("POST", "/api/projects", "not-a-token", PROJECT)
                    } else {
                        connection.request("GET", "/api/health", "", b"")
                    };
                    match answer {
                        Ok(answer) => {
                            let (status, key) = if i % 2 == 0 {
                                (401, "error")
                            } else {
                                (200, "ok")
                            };
                            assert_eq!(answer.status, status, "request {i}: {:?}", answer.body);
                            assert!(answer.body.get(key).is_some(), "{:?}", answer.body);
                            assert!(
                                !answer.closes,
                                "request {i}: a drained body keeps the connection"
                            );
                            answered += 1;
                        }
                        Err(failure) => {
                            failures.push((i, format!("{failure:?}")));
                            connection = Connection::open(&address);
                        }
                    }
                }
                (answered, failures)
            })
        })
        .collect();
    let mut answered = 0;
    let mut failures = Vec::new();
    for worker in workers {
        let (n, mut failed) = worker.join().unwrap();
        answered += n;
        failures.append(&mut failed);
    }
    let took = started.elapsed();
    eprintln!("{answered} answers over {CONNECTIONS} kept-alive connections in {took:?}");
    assert!(
        failures.is_empty(),
        "{} requests reset or unanswered, first: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    assert_eq!(answered, REQUESTS);
    drop(served);
}

#[test]
fn every_early_answer_keeps_the_connection() {
    let dir = tempfile::tempdir().unwrap();
    let (served, token) = start(&dir);
    let mut connection = Connection::open(&served.address);
    let early = [
        ("POST", "/api/projects", "not-a-token", 401),
        ("POST", "/api/no-such-route", token.as_str(), 404),
        ("POST", "/api/health", token.as_str(), 405),
        ("PUT", "/api/me", "not-a-token", 405),
        (
            "POST",
            "/api/tasks/not-an-id/agent-runs",
            token.as_str(),
            400,
        ),
    ];
    for round in 0..200 {
        for (method, path, token, status) in early {
            let answer = connection.request(method, path, token, PROJECT).unwrap();
            assert_eq!(answer.status, status, "{method} {path}: {:?}", answer.body);
            assert!(answer.body["error"].is_string(), "{:?}", answer.body);
            assert!(!answer.closes, "round {round}: {method} {path} closed");
            let health = connection.request("GET", "/api/health", "", b"").unwrap();
            assert_eq!(health.status, 200);
        }
    }
}

/// A body over the limit: its answer comes whole with `Connection: close`,
/// the whole body is taken (the client's writes do not fail) and the
/// connection then ends cleanly.
#[test]
fn a_body_over_the_limit_is_answered_then_the_connection_closes_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let (served, token) = start(&dir);
    let big = {
        let mut body = br#"{"name": "demo", "notes": ""#.to_vec();
        body.resize(4 << 20, b'x');
        body.extend_from_slice(b"\"}");
        body
    };
    for (token, status) in [(token.as_str(), 413), ("not-a-token", 401)] {
        let mut connection = Connection::open(&served.address);
        let mut writer = connection.stream.try_clone().unwrap();
        let address = served.address.clone();
        let body = big.clone();
        let token_owned = token.to_owned();
        let sender = std::thread::spawn(move || {
            let head = format!(
                "POST /api/projects HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer \
{token_owned}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                body.len()
            );
            writer.write_all(head.as_bytes())?;
            writer.write_all(&body)
        });
        let answer = connection.answer().unwrap();
        assert_eq!(answer.status, status, "{:?}", answer.body);
        assert!(answer.body["error"].is_string(), "{:?}", answer.body);
        assert!(answer.closes, "the answer says the connection closes");
        sender
            .join()
            .unwrap()
            .expect("the whole body is taken, not reset");
        let after = connection.closed().expect("a clean close, not a reset");
        assert!(after < PATIENCE);
    }
    // The server is still there for everyone else.
    let mut connection = Connection::open(&served.address);
    let health = connection.request("GET", "/api/health", "", b"").unwrap();
    assert_eq!(health.status, 200);
}

/// A body that stops arriving does not hold the connection: the answer
/// comes with `Connection: close` and the server closes.
#[test]
fn a_half_sent_body_is_answered_and_the_connection_closed() {
    let dir = tempfile::tempdir().unwrap();
    let (served, _) = start(&dir);
    let mut connection = Connection::open(&served.address);
    let head = format!(
        "POST /api/projects HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer not-a-token\r\n\
Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        served.address,
        PROJECT.len() * 2
    );
    let started = Instant::now();
    connection.stream.write_all(head.as_bytes()).unwrap();
    connection.stream.write_all(PROJECT).unwrap();
    let answer = connection.answer().unwrap();
    assert_eq!(answer.status, 401, "{:?}", answer.body);
    assert!(answer.closes, "a body that stopped cannot be drained");
    connection.closed().expect("a clean close, not a reset");
    let took = started.elapsed();
    assert!(took < PATIENCE, "closed after {took:?}");
}
