//! Streamable HTTP: server-everything in its `streamableHttp` mode, and the
//! configured headers on the wire.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Stdio;
use std::time::Duration;

use agentloop_mcp::{HttpConfig, McpServer, ServerConfig, ServerOptions};
use common::{find, installed_server, run};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::process::{Child, Command};

/// Starts server-everything over HTTP on a free port; returns the child
/// (killed on drop) and the endpoint once the server says it listens.
async fn start_http_everything() -> Option<(Child, String)> {
    let script = installed_server("server-everything")?;
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let mut child = Command::new("node")
        .arg(&script)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("listening on port") {
                return;
            }
        }
        panic!("the HTTP server exited before listening");
    })
    .await
    .expect("the HTTP server did not start");
    // Keep draining stderr so the server never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Some((child, format!("http://127.0.0.1:{port}/mcp")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_over_streamable_http() {
    let Some((_child, url)) = start_http_everything().await else {
        return;
    };
    let config = ServerConfig::Http(HttpConfig {
        url,
        headers: [("Authorization".to_owned(), "Bearer test-token".to_owned())].into(),
    });
    let server = McpServer::start("remote", config, ServerOptions::default())
        .await
        .unwrap();
    let tools = server.tools();
    let (_, result) = run(
        find(&tools, "remote__echo"),
        json!({"message": "over http"}),
    )
    .await;
    assert_eq!(result.content, "Echo: over http");
    let (progress, result) = run(
        find(&tools, "remote__trigger-long-running-operation"),
        json!({"duration": 0.3, "steps": 3}),
    )
    .await;
    assert_eq!(progress, ["Progress 1/3", "Progress 2/3", "Progress 3/3"]);
    assert!(
        result
            .content
            .starts_with("Long running operation completed.")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_headers_are_sent() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let captured = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = Vec::new();
        let mut buffer = [0u8; 4096];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = socket.read(&mut buffer).await.unwrap();
            assert!(n > 0, "connection closed before the headers ended");
            request.extend_from_slice(&buffer[..n]);
        }
        socket
            .write_all(
                b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            )
            .await
            .unwrap();
        String::from_utf8_lossy(&request).to_lowercase()
    });
    let config = ServerConfig::Http(HttpConfig {
        url,
        headers: [
            ("Authorization".to_owned(), "Bearer secret-token".to_owned()),
            ("X-Team".to_owned(), "agents".to_owned()),
        ]
        .into(),
    });
    let options = ServerOptions {
        connect_timeout: Duration::from_secs(20),
        ..ServerOptions::default()
    };
    let started = McpServer::start("guarded", config, options).await;
    assert!(started.is_err(), "a 401 must not start the server");
    let request = captured.await.unwrap();
    assert!(request.starts_with("post /mcp"), "{request}");
    assert!(
        request.contains("authorization: bearer secret-token"),
        "{request}"
    );
    assert!(request.contains("x-team: agents"), "{request}");
}
