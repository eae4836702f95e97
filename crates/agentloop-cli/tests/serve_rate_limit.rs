//! `agentloop serve --rate-limit`: each client — the user a valid token
//! names, else the peer address — gets its own bucket. A client past it is
//! answered 429 with `Retry-After` and the usual JSON error, logged like
//! any request, while other clients go on; after `Retry-After` seconds it
//! is served again. Sign-in attempts and forged tokens count against the
//! address they come from: behind a proxy given with `--trust-proxy`, the
//! client's address that proxy names in `X-Forwarded-For`, which is
//! ignored otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::served::{Served, serve_with, write_script};
use common::{agentloop, create_user};
use serde_json::{Value, json};

/// One answer, read whole (`Connection: close`).
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// `Retry-After`, which a 429 must carry as whole seconds.
    fn retry_after(&self) -> u64 {
        let value = self
            .header("retry-after")
            .unwrap_or_else(|| panic!("a 429 without Retry-After: {self:?}"));
        value.parse().unwrap()
    }
}

fn request(address: &str, method: &str, path: &str, token: Option<&str>, body: &str) -> Answer {
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    request_with(address, method, path, &auth, body)
}

/// A request with `headers` (each line ending in CRLF) added.
fn request_with(address: &str, method: &str, path: &str, headers: &str, body: &str) -> Answer {
    let mut stream = TcpStream::connect(address).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\n{headers}Content-Type: application/json\r\n\
Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status = lines.next().unwrap()[9..12].parse().unwrap();
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    Answer {
        status,
        headers,
        body: serde_json::from_str(body).unwrap_or(Value::Null),
    }
}

fn get(address: &str, path: &str, token: &str) -> Answer {
    request(address, "GET", path, Some(token), "")
}

/// Sends `send` until it is refused; every answer before must be `ok`.
fn until_refused(ok: u16, mut send: impl FnMut() -> Answer) -> (usize, Answer) {
    for sent in 0..1000 {
        let answer = send();
        if answer.status == 429 {
            return (sent, answer);
        }
        assert_eq!(answer.status, ok, "{answer:?}");
    }
    panic!("1000 requests in a row and none refused");
}

fn assert_refused(answer: &Answer) {
    assert_eq!(answer.status, 429, "{answer:?}");
    assert!(
        answer
            .header("content-type")
            .is_some_and(|v| v.starts_with("application/json")),
        "{answer:?}"
    );
    assert!(
        answer.body["error"]
            .as_str()
            .is_some_and(|e| e.contains("too many requests"))
    );
    assert!(answer.retry_after() >= 1, "{answer:?}");
}

/// Log lines of answers with `status`, once the server has written at
/// least `at_least` of them (bounded wait: the log is read by a thread).
fn logged_with_status(served: &Served, status: u16, at_least: usize) -> usize {
    let needle = format!("status_code={status}");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let count = served
            .log
            .lock()
            .unwrap()
            .iter()
            .filter(|line| line.contains(&needle))
            .count();
        if count >= at_least || Instant::now() > deadline {
            return count;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A server with `flags` over a fresh database holding `users`; their
/// tokens in the same order.
fn start(dir: &tempfile::TempDir, users: &[&str], flags: &[&str]) -> (Served, Vec<String>) {
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([{"steps": [{"type": "text", "chunks": ["Done."]}]}]),
    );
    let db = dir.path().join("db.sqlite").display().to_string();
    let tokens = users.iter().map(|name| create_user(&db, name)).collect();
    (serve_with(&db, &script, "limited", flags), tokens)
}

#[test]
fn a_flooding_user_is_refused_with_retry_after_while_another_is_served() {
    let dir = tempfile::tempdir().unwrap();
    // Request lines are DEBUG.
    let (served, tokens) = start(
        &dir,
        &["ada", "bob"],
        &[
            "--rate-limit",
            "1",
            "--rate-burst",
            "5",
            "--log-level",
            "info,agentloop_server=debug",
        ],
    );
    let (ada, bob) = (&tokens[0], &tokens[1]);
    let address = served.address.clone();

    // The burst, then a refusal.
    let (served_first, refused) = until_refused(200, || get(&address, "/api/projects", ada));
    assert_eq!(served_first, 5, "the burst is five requests");
    assert_refused(&refused);
    let wait = refused.retry_after();
    let refused_at = Instant::now();
    // Ada stays refused, and Bob, at the same moment, is served.
    assert_refused(&get(&address, "/api/me", ada));
    let bobs = get(&address, "/api/me", bob);
    assert_eq!(bobs.status, 200, "{bobs:?}");
    assert_eq!(bobs.body["name"], "bob");

    // Retry-After is a promise: once that many seconds have passed Ada is
    // served again (the wait is what the header says, not a guess).
    let since = refused_at.elapsed();
    std::thread::sleep(Duration::from_secs(wait).saturating_sub(since));
    let again = get(&address, "/api/projects", ada);
    assert_eq!(again.status, 200, "after Retry-After: {again:?}");

    // Each refusal is logged once, as a request like any other.
    assert_eq!(logged_with_status(&served, 429, 2), 2);

    // The description says so.
    let document = get(&address, "/api/openapi.json", bob).body;
    assert_eq!(
        document["paths"]["/api/projects"]["get"]["responses"]["429"]["$ref"],
        "#/components/responses/TooManyRequests"
    );
    assert!(
        document["components"]["responses"]["TooManyRequests"]["headers"]["Retry-After"]
            .is_object()
    );
}

/// A kept-alive connection: answers read by `Content-Length`.
struct KeptAlive {
    stream: TcpStream,
    address: String,
    buffer: Vec<u8>,
}

impl KeptAlive {
    fn open(address: &str) -> Self {
        let stream = TcpStream::connect(address).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        Self {
            stream,
            address: address.to_owned(),
            buffer: Vec::new(),
        }
    }

    fn post(&mut self, path: &str, token: &str, body: &str) -> std::io::Result<Answer> {
        write!(
            self.stream,
            "POST {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\n\
Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.address,
            body.len()
        )?;
        let head_end = loop {
            if let Some(at) = self.buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            self.fill()?;
        };
        let head = String::from_utf8_lossy(&self.buffer[..head_end]).into_owned();
        let mut lines = head.lines();
        let status = lines.next().unwrap()[9..12].parse().unwrap();
        let headers: Vec<(String, String)> = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
            .collect();
        let length: usize = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
            .map_or(0, |(_, v)| v.parse().unwrap());
        while self.buffer.len() < head_end + length {
            self.fill()?;
        }
        let body: Vec<u8> = self
            .buffer
            .drain(..head_end + length)
            .skip(head_end)
            .collect();
        Ok(Answer {
            status,
            headers,
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        })
    }

    fn fill(&mut self) -> std::io::Result<()> {
        let mut chunk = [0u8; 4096];
        match self.stream.read(&mut chunk)? {
            0 => Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                self.buffer.extend_from_slice(&chunk[..n]);
                Ok(())
            }
        }
    }
}

#[test]
fn a_refusal_keeps_the_connection_and_it_is_served_again_after_retry_after() {
    let dir = tempfile::tempdir().unwrap();
    let (served, tokens) = start(&dir, &["ada"], &["--rate-limit", "1", "--rate-burst", "2"]);
    let mut connection = KeptAlive::open(&served.address);
    // A body the route reads and refuses (400); the refusal (429) comes
    // before any route, with the body unread.
    let body = r#"{"name": "no folder"}"#;
    let (_, refused) = until_refused(400, || {
        connection.post("/api/projects", &tokens[0], body).unwrap()
    });
    assert_refused(&refused);
    assert!(
        refused
            .header("connection")
            .is_none_or(|v| !v.eq_ignore_ascii_case("close")),
        "{refused:?}"
    );
    let refused_at = Instant::now();
    std::thread::sleep(
        Duration::from_secs(refused.retry_after()).saturating_sub(refused_at.elapsed()),
    );
    let again = connection.post("/api/projects", &tokens[0], body).unwrap();
    assert_eq!(again.status, 400, "the same connection, served: {again:?}");
}

#[test]
fn sign_in_attempts_and_forged_tokens_count_against_their_address() {
    let dir = tempfile::tempdir().unwrap();
    let (served, tokens) = start(&dir, &["ada"], &["--rate-limit", "1", "--rate-burst", "3"]);
    let ada = &tokens[0];
    let address = served.address.clone();
    let (attempts, refused) = until_refused(401, || {
        request(
            &address,
            "POST",
            "/api/session",
            None,
            r#"{"token": "al_guessed"}"#,
        )
    });
    assert_eq!(attempts, 3);
    assert_refused(&refused);
    // The address is out of requests, whatever token it makes up...
    assert_refused(&get(&address, "/api/projects", "al_another-guess"));
    assert_refused(&request(&address, "GET", "/api/openapi.json", None, ""));
    // (Health alone is never limited.)
    let health = request(&address, "GET", "/api/health", None, "");
    assert_eq!(health.status, 200, "{health:?}");
    // ...while a user with a real token, from the same address, is counted
    // on their own.
    let served_ada = get(&address, "/api/projects", ada);
    assert_eq!(served_ada.status, 200, "{served_ada:?}");
    drop(served);
}

#[test]
fn off_serves_a_flood_and_the_default_is_announced() {
    let dir = tempfile::tempdir().unwrap();
    let (served, tokens) = start(&dir, &["ada"], &["--rate-limit", "off"]);
    let ada = &tokens[0];
    for i in 0..500 {
        let answer = get(&served.address, "/api/me", ada);
        assert_eq!(answer.status, 200, "request {i}: {answer:?}");
    }
    let document = get(&served.address, "/api/openapi.json", ada).body;
    assert!(
        document["paths"]["/api/projects"]["get"]["responses"]["429"].is_null(),
        "a server with no limit documents no 429"
    );
    until_logged(&served, "rate limit: off");
    drop(served);

    let dir = tempfile::tempdir().unwrap();
    let (served, _) = start(&dir, &[], &[]);
    until_logged(&served, "rate limit: 100/s per client, bursts of 200");
}

/// Waits (bounded) for a line containing `needle` in the server's log,
/// which a thread reads as it comes.
fn until_logged(served: &Served, needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = served.log.lock().unwrap().join("\n");
        if log.contains(needle) {
            return;
        }
        assert!(Instant::now() < deadline, "never logged {needle:?}: {log}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_configuration_file_sets_the_limit_and_flags_win() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    std::fs::create_dir_all(config.join("agentloop")).unwrap();
    std::fs::write(
        config.join("agentloop/config.toml"),
        "[serve]\nrate_limit = 7\nrate_burst = 9\ntrusted_proxies = [\"10.0.0.0/8\"]\n",
    )
    .unwrap();
    let announced = |flags: &[&str]| {
        let db = dir.path().join("db.sqlite").display().to_string();
        let mut child = agentloop()
            .args(["serve", "--db", &db, "--bind", "127.0.0.1:0", "--demo"])
            .arg("--projects-root")
            .arg(dir.path().join("projects"))
            .args(flags)
            .env("XDG_CONFIG_HOME", &config)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let found = loop {
            line.clear();
            let read = std::io::BufRead::read_line(&mut stderr, &mut line).unwrap();
            assert!(read > 0, "the server ended before it served");
            if line.contains("serving on") {
                break line.clone();
            }
        };
        let _ = child.kill();
        let _ = child.wait();
        found
    };
    let from_file = announced(&[]);
    assert!(
        from_file.contains("rate limit: 7/s per client, bursts of 9"),
        "{from_file}"
    );
    let from_flags = announced(&["--rate-limit", "3"]);
    assert!(
        from_flags.contains("rate limit: 3/s per client, bursts of 9"),
        "{from_flags}"
    );
    assert!(
        from_file.contains("clients named by proxies: 10.0.0.0/8)"),
        "{from_file}"
    );
    let proxy_flags = announced(&["--trust-proxy", "::1", "--trust-proxy", "192.0.2.1"]);
    assert!(
        proxy_flags.contains("clients named by proxies: ::1, 192.0.2.1)"),
        "{proxy_flags}"
    );
    let off = announced(&["--rate-limit", "0"]);
    assert!(off.contains("rate limit: off"), "{off}");
}

/// An unauthenticated request that says, through `X-Forwarded-For`, that it
/// was forwarded for `chain`.
fn forwarded_for(address: &str, chain: &str) -> Answer {
    let header = format!("X-Forwarded-For: {chain}\r\n");
    request_with(address, "GET", "/api/openapi.json", &header, "")
}

#[test]
fn behind_a_trusted_proxy_each_forwarded_client_has_its_own_bucket() {
    let dir = tempfile::tempdir().unwrap();
    let (served, _) = start(
        &dir,
        &[],
        &[
            "--rate-limit",
            "1",
            "--rate-burst",
            "3",
            "--trust-proxy",
            "127.0.0.0/8",
        ],
    );
    let address = served.address.clone();
    until_logged(&served, "clients named by proxies: 127.0.0.0/8");

    // One client behind the proxy floods and is refused...
    let (first, refused) = until_refused(200, || forwarded_for(&address, "203.0.113.5"));
    assert_eq!(first, 3, "the burst is three requests");
    assert_refused(&refused);
    // ...whatever it writes in front of what the proxy appended.
    assert_refused(&forwarded_for(&address, "198.51.100.77, 203.0.113.5"));
    // Another client behind the same proxy, and the proxy's own requests,
    // are served meanwhile.
    let other = forwarded_for(&address, "203.0.113.6");
    assert_eq!(other.status, 200, "{other:?}");
    let own = request(&address, "GET", "/api/openapi.json", None, "");
    assert_eq!(own.status, 200, "{own:?}");
    // An entry that is no address leaves the request to the proxy's bucket.
    let malformed = forwarded_for(&address, "unknown");
    assert_eq!(malformed.status, 200, "{malformed:?}");
}

#[test]
fn without_trust_a_forwarded_header_does_not_escape_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let (served, _) = start(&dir, &[], &["--rate-limit", "1", "--rate-burst", "3"]);
    let address = served.address.clone();
    // Each request claims another client; all count against the peer.
    let mut claimed = 0u32;
    let (first, refused) = until_refused(200, || {
        claimed += 1;
        forwarded_for(&address, &format!("203.0.113.{claimed}"))
    });
    assert_eq!(first, 3);
    assert_refused(&refused);
    let log = served.log.lock().unwrap().join("\n");
    assert!(!log.contains("clients named by proxies"), "{log}");
}

#[test]
fn a_proxy_that_is_not_an_address_is_refused_before_serving() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let output = agentloop()
        .args(["serve", "--db", &db, "--bind", "127.0.0.1:0", "--demo"])
        .args(["--trust-proxy", "proxy.lan"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("\"proxy.lan\" is not an address or a network"),
        "{stderr}"
    );
}
