//! Accounts of `agentloop serve`, managed with `agentloop users` while the
//! server runs: a reset prints a new token and the old one stops working,
//! and the WebSocket and event stream it had open close; revocation,
//! expiry (`--expires`) and deletion do what they say. On SQLite and on
//! PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use common::served::*;
use common::{agentloop, create_user};
use futures::{SinkExt, StreamExt};
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// How long a closed session may take to close: the server looks a
/// session's token up every second.
const CLOSES_WITHIN: Duration = Duration::from_secs(10);

fn users(db: &str, args: &[&str]) -> Output {
    agentloop()
        .arg("users")
        .args(args)
        .args(["--db", db])
        .output()
        .unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The status `GET /api/projects` answers the holder of `token`.
fn status_for(address: &str, token: &str) -> u16 {
    http(address, token, "GET", "/api/projects", None).0
}

/// A WebSocket on `/api/ws` opened with `token` in its header.
async fn open_socket(
    address: &str,
    token: &str,
) -> tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>> {
    let mut request = format!("ws://{address}/api/ws")
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    let (socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    socket
}

/// Waits (bounded) for the server to close the socket; returns the close
/// code it gave.
async fn closed_by_server(
    socket: &mut tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
) -> Option<u16> {
    let deadline = tokio::time::Instant::now() + CLOSES_WITHIN;
    loop {
        match tokio::time::timeout_at(deadline, socket.next()).await {
            Err(_) => panic!("the WebSocket stayed open"),
            Ok(Some(Ok(Message::Close(frame)))) => return frame.map(|f| u16::from(f.code)),
            Ok(None | Some(Err(_))) => return None,
            Ok(Some(Ok(_))) => {}
        }
    }
}

/// An event stream of the run opened with `token`, its headers read.
fn open_stream(address: &str, token: &str, run_id: &str) -> BufReader<TcpStream> {
    let mut stream = TcpStream::connect(address).unwrap();
    write!(
        stream,
        "GET /api/agent-runs/{run_id}/events HTTP/1.1\r\nHost: {address}\r\n\
Authorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    stream.set_read_timeout(Some(CLOSES_WITHIN)).unwrap();
    let mut reader = BufReader::new(stream);
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line.trim_end().is_empty() {
            return reader;
        }
    }
}

/// Reads the stream to its end; panics if it is still open when the read
/// times out.
fn stream_ends(mut reader: BufReader<TcpStream>) {
    let mut rest = Vec::new();
    match reader.read_to_end(&mut rest) {
        Ok(_) => {}
        Err(error) => panic!("the event stream stayed open: {error}"),
    }
}

/// The accounts scenario on `db`, the server started with `flags`.
async fn accounts(db: &str, dir: &Path, flags: &[&str]) {
    let script = dir.join("script.json");
    // The run the stream follows never ends on its own.
    write_script(&script, json!([{ "steps": [{ "type": "hang" }] }]));
    let old = create_user(db, "alice");
    let server = serve_with(db, &script, "accounts", flags);
    let address = server.address.clone();
    assert_eq!(status_for(&address, &old), 200);

    // A WebSocket and an event stream open with the old token.
    let mut socket = open_socket(&address, &old).await;
    let task_id = task(&address, &old, &dir.join("repo"));
    let run_id = start_run(&address, &old, &task_id, "planification");
    let stream = {
        let (address, old, run_id) = (address.clone(), old.clone(), run_id.clone());
        tokio::task::spawn_blocking(move || {
            let reader = open_stream(&address, &old, &run_id);
            stream_ends(reader);
            Instant::now()
        })
    };

    // Reset: a new token, the old one no longer works, anywhere.
    let reset_at = Instant::now();
    let reset = users(db, &["reset", "alice"]);
    assert!(reset.status.success(), "{}", stderr(&reset));
    let new = stdout(&reset).trim().to_owned();
    assert!(!new.is_empty());
    assert_ne!(new, old);
    assert_eq!(status_for(&address, &old), 401);
    assert_eq!(status_for(&address, &new), 200);
    assert_eq!(closed_by_server(&mut socket).await, Some(1008));
    let socket_closed = reset_at.elapsed();
    let stream_closed = stream.await.unwrap().duration_since(reset_at);
    println!(
        "after the reset: WebSocket closed in {socket_closed:?}, event stream in {stream_closed:?}"
    );
    assert!(stream_closed < CLOSES_WITHIN);
    // The reset is in alice's audit log, with no token in it.
    let (status, log) = http(&address, &new, "GET", "/api/audit", None);
    assert_eq!(status, 200, "{log}");
    let entries = log["entries"].as_array().unwrap();
    let reset_entry = entries
        .iter()
        .find(|e| e["action"] == "token.reset")
        .unwrap_or_else(|| panic!("no reset in {log}"));
    assert_eq!(reset_entry["user_id"], serde_json::Value::Null, "{log}");
    assert_eq!(reset_entry["detail"]["name"], "alice", "{log}");
    assert!(
        entries.iter().any(|e| e["action"] == "user.create"),
        "{log}"
    );
    assert!(entries.iter().any(|e| e["action"] == "run.start"), "{log}");
    let text = log.to_string();
    assert!(!text.contains(&old) && !text.contains(&new), "{text}");
    // A socket of the new token stays open through all of that.
    let mut fresh = open_socket(&address, &new).await;
    fresh.send(Message::Ping(Vec::new().into())).await.unwrap();

    // Revoke: every token of the user stops working.
    let revoked = users(db, &["revoke", "alice"]);
    assert!(revoked.status.success(), "{}", stderr(&revoked));
    assert!(
        stdout(&revoked).contains("1 token revoked"),
        "{}",
        stdout(&revoked)
    );
    assert_eq!(status_for(&address, &new), 401);
    assert_eq!(closed_by_server(&mut fresh).await, Some(1008));
    let listed = stdout(&users(db, &["list"]));
    assert!(listed.contains("\talice\t0 tokens\texpires -"), "{listed}");

    // Expiry: the token works until it expires, then neither it nor its
    // socket does.
    let refused = users(db, &["create", "carol", "--expires", "5w"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    let created = users(db, &["create", "bob", "--expires", "3s"]);
    assert!(created.status.success(), "{}", stderr(&created));
    let bob = stdout(&created).trim().to_owned();
    let issued = Instant::now();
    assert_eq!(status_for(&address, &bob), 200);
    let listed = stdout(&users(db, &["list"]));
    assert!(listed.contains("\tbob\t1 token\texpires 20"), "{listed}");
    let mut expiring = open_socket(&address, &bob).await;
    assert_eq!(closed_by_server(&mut expiring).await, Some(1008));
    assert!(
        issued.elapsed() >= Duration::from_millis(2500),
        "closed before it expired"
    );
    assert_eq!(status_for(&address, &bob), 401);

    // Delete: refused while the user owns a project, done once it owns
    // none; its token goes with it and its name is free again.
    let bob = stdout(&users(db, &["reset", "bob"])).trim().to_owned();
    let project_id = project(&address, &bob, &dir.join("bobs"), json!({}));
    let refused = users(db, &["delete", "bob"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("owns 1 project"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(status_for(&address, &bob), 200);
    let (status, _) = http(
        &address,
        &bob,
        "DELETE",
        &format!("/api/projects/{project_id}"),
        None,
    );
    assert_eq!(status, 204);
    let deleted = users(db, &["delete", "bob"]);
    assert!(deleted.status.success(), "{}", stderr(&deleted));
    assert_eq!(status_for(&address, &bob), 401);
    assert!(!stdout(&users(db, &["list"])).contains("\tbob\t"));
    let again = users(db, &["delete", "bob"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        stderr(&again).contains("no user named \"bob\""),
        "{}",
        stderr(&again)
    );
    assert!(users(db, &["create", "bob"]).status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_reset_revoked_expired_and_deleted_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    // Streams look at their token every second: `agentloop users`, another
    // process, announces nothing on SQLite.
    accounts(&db, dir.path(), &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_reset_revoked_expired_and_deleted_on_postgres() {
    let Ok(admin_url) = std::env::var("AGENTLOOP_TEST_POSTGRES_URL") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI needs AGENTLOOP_TEST_POSTGRES_URL"
        );
        println!("skipping: AGENTLOOP_TEST_POSTGRES_URL is not set");
        return;
    };
    let name = format!("agentloop_cli_accounts_{}", std::process::id());
    let database = ScratchDatabase::create(&admin_url, &name).await;
    let dir = tempfile::tempdir().unwrap();
    // Streams look at their token only once an hour here: they end within
    // `CLOSES_WITHIN` of each `agentloop users` change because PostgreSQL
    // announces the revocation to the server at once.
    accounts(&database.url, dir.path(), &["--token-check-secs", "3600"]).await;
    database.remove().await;
}
