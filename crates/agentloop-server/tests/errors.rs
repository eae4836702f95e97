//! Every error answer is JSON: unknown routes, wrong methods, undecodable
//! path segments, WebSocket requests without an upgrade, and a token in
//! the URL anywhere but the WebSocket route.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use agentloop_engine::scripted::ScriptedProvider;
use agentloop_storage::MemoryStore;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Sends a raw request (so paths reach the server byte for byte) and
/// returns the status, content type and body.
async fn raw(base: &str, request: &str) -> (u16, String, String) {
    let address = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let response = String::from_utf8_lossy(&response).into_owned();
    let status = response[9..12].parse().unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let content_type = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-type:")
                .map(|v| v.trim().to_owned())
        })
        .unwrap_or_default();
    (status, content_type, body.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_error_is_json() {
    let server = common::start(Arc::new(MemoryStore::new()), ScriptedProvider::new([])).await;
    let token = server.token.clone();
    let get = |path: &str, extra: &str| {
        format!(
            "GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n{extra}Connection: close\r\n\r\n"
        )
    };
    let cases = [
        (get("/nope", ""), 404),
        (get("/api/tasks/%FF%FE", ""), 400),
        (get("/api/ws", ""), 400),
        (
            "DELETE /api/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_owned(),
            405,
        ),
        (
            format!(
                "PATCH /api/projects HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
            ),
            405,
        ),
        (
            format!("GET /api/me?token={token} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
            401,
        ),
    ];
    for (request, expected) in cases {
        let (status, content_type, body) = raw(&server.base, &request).await;
        let first = request.lines().next().unwrap().to_owned();
        assert!(
            status == expected || (expected == 400 && (400..500).contains(&status)),
            "{first}: {status} {body}"
        );
        assert_eq!(content_type, "application/json", "{first}: {body}");
        let body: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert!(
            body["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{first}: {body}"
        );
    }
    let (_, _, body) = raw(
        &server.base,
        "DELETE /api/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(body.contains("allowed: GET"), "{body}");
    server.stop().await;
}
