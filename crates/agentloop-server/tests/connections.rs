//! Connections are bounded: slow or half-sent request heads and idle
//! kept-alive connections are closed, and more of them than the cap do not
//! lock anyone out; a half-sent body is answered and its connection closed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentloop_engine::scripted::ScriptedProvider;
use agentloop_server::listener::ConnectionLimits;
use agentloop_storage::MemoryStore;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const CAP: usize = 8;
const HEADER_TIMEOUT: Duration = Duration::from_millis(800);

async fn bounded_server() -> common::TestServer {
    let mut config = common::config(ScriptedProvider::new([]));
    config.connections = ConnectionLimits {
        max_connections: CAP,
        header_timeout: HEADER_TIMEOUT,
    };
    common::start_with(Arc::new(MemoryStore::new()), config).await
}

/// Waits until the server closes `stream` (EOF or reset), bounded.
async fn closed_by_server(stream: &mut TcpStream, limit: Duration) -> Duration {
    let start = Instant::now();
    let mut buffer = [0u8; 1024];
    loop {
        match tokio::time::timeout(limit, stream.read(&mut buffer)).await {
            Ok(Ok(0) | Err(_)) => return start.elapsed(),
            Ok(Ok(_)) => {}
            Err(_) => panic!("the server kept the connection open for {limit:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_half_sent_requests_than_the_cap_do_not_lock_out_health() {
    let server = bounded_server().await;
    let address = server.base.trim_start_matches("http://").to_owned();
    let mut slow = Vec::new();
    for i in 0..CAP * 3 {
        let mut stream = TcpStream::connect(&address).await.unwrap();
        match i % 3 {
            0 => {}
            1 => stream.write_all(b"GET /api/hea").await.unwrap(),
            _ => stream
                .write_all(b"GET /api/health HTTP/1.1\r\nHost: x\r\n")
                .await
                .unwrap(),
        }
        slow.push(stream);
    }
    // A trickle of header lines does not extend the deadline.
    let trickler = &mut slow[2];
    trickler.write_all(b"X-Slow: 1\r\n").await.unwrap();

    let health = tokio::time::timeout(Duration::from_secs(10), async {
        server
            .client
            .get(server.url("/api/health"))
            .send()
            .await
            .unwrap()
            .status()
    })
    .await
    .expect("/api/health did not answer while slow connections filled the cap");
    assert_eq!(health, 200);
    for stream in &mut slow {
        closed_by_server(stream, Duration::from_secs(10)).await;
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_kept_alive_connection_is_closed() {
    let server = bounded_server().await;
    let address = server.base.trim_start_matches("http://").to_owned();
    let mut stream = TcpStream::connect(&address).await.unwrap();
    stream
        .write_all(b"GET /api/health HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buffer = [0u8; 4096];
    let n = stream.read(&mut buffer).await.unwrap();
    assert!(String::from_utf8_lossy(&buffer[..n]).starts_with("HTTP/1.1 200"));
    let idle = closed_by_server(&mut stream, Duration::from_secs(10)).await;
    assert!(idle >= HEADER_TIMEOUT / 2, "closed too early: {idle:?}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_sent_body_of_an_accepted_request_is_bounded_by_the_request_timeout() {
    let mut config = common::config(ScriptedProvider::new([]));
    config.request_timeout = Duration::from_millis(500);
    let server = common::start_with(Arc::new(MemoryStore::new()), config).await;
    let address = server.base.trim_start_matches("http://").to_owned();
    let mut stream = TcpStream::connect(&address).await.unwrap();
    let started = Instant::now();
    stream
        .write_all(
            format!(
                "POST /api/projects HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\
Content-Type: application/json\r\nContent-Length: 200\r\n\r\n{{\"name\": ",
                server.token
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut answer))
        .await
        .expect("the server answered and closed");
    read.expect("a clean close, not a reset");
    let answer = String::from_utf8_lossy(&answer).to_ascii_lowercase();
    assert!(answer.starts_with("http/1.1 408"), "{answer}");
    assert!(answer.contains("connection: close"), "{answer}");
    assert!(answer.contains("the request took too long"), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(20));
    server.stop().await;
}
