#![allow(clippy::unwrap_used, clippy::expect_used, dead_code, missing_docs)]

pub mod approvals;
pub mod gated;

use std::sync::Arc;
use std::time::Duration;

use agentloop_server::{Server, ServerConfig};
use agentloop_storage::Store;
use agentloop_types::ModelProvider;
use serde_json::{Value, json};

pub struct TestServer {
    pub base: String,
    pub token: String,
    pub client: reqwest::Client,
    pub store: Arc<dyn Store>,
    pub repo: tempfile::TempDir,
    pub state: agentloop_server::AppState,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    handle: Option<tokio::task::JoinHandle<()>>,
}

/// A store in a SQLite file of a temp folder (kept while the folder lives).
pub async fn sqlite() -> (tempfile::TempDir, Arc<dyn Store>) {
    let dir = tempfile::tempdir().unwrap();
    let store = agentloop_storage::open_store(dir.path().join("db.sqlite").to_str().unwrap())
        .await
        .unwrap();
    (dir, store)
}

pub fn config(provider: Arc<dyn ModelProvider>) -> ServerConfig {
    let mut config = ServerConfig::new(provider, "scripted");
    config.heartbeat = Duration::from_millis(50);
    config.lease_ttl = Duration::from_millis(1500);
    config.claim_interval = Duration::from_millis(100);
    config.max_body_bytes = 64 * 1024;
    config
}

pub async fn start(store: Arc<dyn Store>, provider: Arc<dyn ModelProvider>) -> TestServer {
    start_with(store, config(provider)).await
}

pub async fn start_with(store: Arc<dyn Store>, config: ServerConfig) -> TestServer {
    let (_, token) = agentloop_server::users::create_user(&*store, "ada")
        .await
        .unwrap();
    start_as(store, config, token).await
}

/// A second instance on the same store, used by the holder of `token`.
/// A server on a memory store whose projects may name MCP servers.
pub async fn start_with_project_mcp(provider: Arc<dyn ModelProvider>) -> TestServer {
    let mut config = config(provider);
    config.allow_project_mcp = true;
    start_with(Arc::new(agentloop_storage::MemoryStore::new()), config).await
}

/// The stdio MCP server the MCP crate's tests script (a python file).
pub fn fake_mcp_server() -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../agentloop-mcp/tests/fixtures/fake_server.py")
        .display()
        .to_string()
}

pub async fn start_as(store: Arc<dyn Store>, config: ServerConfig, token: String) -> TestServer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = Server::new(store.clone(), config);
    let state = server.state.clone();
    let handle = tokio::spawn(async move {
        server
            .serve(listener, async move {
                let _ = stopped.await;
            })
            .await
            .unwrap();
    });
    agentloop_providers::ensure_crypto_provider();
    TestServer {
        base,
        token,
        client: reqwest::Client::new(),
        store,
        repo: tempfile::tempdir().unwrap(),
        state,
        stop: Some(stop),
        handle: Some(handle),
    }
}

impl TestServer {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        let response = self
            .client
            .get(self.url(path))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        decode(response).await
    }

    pub async fn send(&self, method: &str, path: &str, body: Value) -> (u16, Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let response = self
            .client
            .request(method, self.url(path))
            .bearer_auth(&self.token)
            .json(&body)
            .send()
            .await
            .unwrap();
        decode(response).await
    }

    pub async fn raw(&self, method: &str, path: &str, body: &str) -> (u16, Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let response = self
            .client
            .request(method, self.url(path))
            .bearer_auth(&self.token)
            .header("content-type", "application/json")
            .body(body.to_owned())
            .send()
            .await
            .unwrap();
        decode(response).await
    }

    /// A project over this server's temp folder and a task in it.
    pub async fn project_and_task(&self) -> (String, String) {
        self.project_and_task_with(json!({})).await
    }

    /// [`project_and_task`](Self::project_and_task) with more fields of
    /// the project (e.g. `approvals`).
    pub async fn project_and_task_with(&self, extra: Value) -> (String, String) {
        let mut body = json!({ "name": "demo", "repoFolder": self.repo.path() });
        for (key, value) in extra.as_object().cloned().unwrap_or_default() {
            body[key] = value;
        }
        let (status, project) = self.send("POST", "/api/projects", body).await;
        assert_eq!(status, 201, "{project}");
        let project_id = project["id"].as_str().unwrap().to_owned();
        let (status, task) = self
            .send(
                "POST",
                &format!("/api/projects/{project_id}/tasks"),
                json!({ "title": "Add a README", "description": "Write it." }),
            )
            .await;
        assert_eq!(status, 201, "{task}");
        (project_id, task["id"].as_str().unwrap().to_owned())
    }

    /// A project named "with tools" over this server's temp folder, with
    /// these `approvals` and `mcpServers`, and a task in it; returns the
    /// task's id.
    pub async fn mcp_task(&self, approvals: Value, mcp_servers: Value) -> String {
        let (status, project) = self
            .send(
                "POST",
                "/api/projects",
                json!({
                    "name": "with tools",
                    "repoFolder": self.repo.path(),
                    "approvals": approvals,
                    "mcpServers": mcp_servers
                }),
            )
            .await;
        assert_eq!(status, 201, "{project}");
        let (_, task) = self
            .send(
                "POST",
                &format!("/api/projects/{}/tasks", project["id"].as_str().unwrap()),
                json!({ "title": "use the tool" }),
            )
            .await;
        task["id"].as_str().unwrap().to_owned()
    }

    /// Polls the task's agent runs until none is running and at least
    /// `count` exist (bounded).
    pub async fn settle(&self, task_id: &str, count: usize) -> Vec<Value> {
        let mut last = Value::Null;
        for _ in 0..600 {
            let (_, runs) = self.get(&format!("/api/tasks/{task_id}/agent-runs")).await;
            last = runs.clone();
            let runs = runs.as_array().cloned().unwrap_or_default();
            if runs.len() >= count && runs.iter().all(|r| r["status"] != "running") {
                return runs;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        for run in last.as_array().cloned().unwrap_or_default() {
            let id = run["id"].as_str().unwrap_or_default();
            let events = self.store.list_events(id, None, 1000).await.unwrap();
            let kinds: Vec<&str> = events.iter().map(|e| e.kind.name()).collect();
            println!(
                "run {id}: {:?} events {kinds:?}",
                self.store.get_run(id).await
            );
        }
        panic!("the agent runs of task {task_id} did not settle: {last}");
    }

    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(handle) = self.handle.take() {
            handle.await.unwrap();
        }
    }
}

pub async fn decode(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    };
    (status, body)
}

/// A PostgreSQL database for one test, dropped when this is dropped.
pub struct PgDatabase {
    admin_url: String,
    name: String,
    pub url: String,
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        let admin_url = self.admin_url.clone();
        let name = self.name.clone();
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                use sqlx::Connection;
                let mut admin = sqlx::PgConnection::connect(&admin_url).await.unwrap();
                sqlx::raw_sql(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
                    .execute(&mut admin)
                    .await
                    .unwrap();
            });
        })
        .join();
    }
}

/// A fresh database on `AGENTLOOP_TEST_POSTGRES_URL`'s server; `None` (after
/// printing why) when the variable is unset.
pub async fn postgres(test: &str) -> Option<PgDatabase> {
    use sqlx::Connection;
    let Ok(admin_url) = std::env::var("AGENTLOOP_TEST_POSTGRES_URL") else {
        println!("skipping {test}: AGENTLOOP_TEST_POSTGRES_URL is not set");
        return None;
    };
    let name = format!("agentloop_server_{}", agentloop_server::ids::new_id());
    let mut admin = sqlx::PgConnection::connect(&admin_url).await.unwrap();
    sqlx::raw_sql(&format!("CREATE DATABASE \"{name}\""))
        .execute(&mut admin)
        .await
        .unwrap();
    let (base, query) = match admin_url.split_once('?') {
        Some((base, query)) => (base, format!("?{query}")),
        None => (admin_url.as_str(), String::new()),
    };
    let authority_end = base.find("://").map_or(0, |i| i + 3);
    let base = match base[authority_end..].find('/') {
        Some(slash) => &base[..authority_end + slash],
        None => base,
    };
    let url = format!("{base}/{name}{query}");
    Some(PgDatabase {
        admin_url,
        name,
        url,
    })
}

/// Sends `n` agent-run POSTs for a task at once; returns their statuses.
pub async fn concurrent_posts(server: &TestServer, task_id: &str, n: usize) -> Vec<u16> {
    let url = server.url(&format!("/api/tasks/{task_id}/agent-runs"));
    let requests = (0..n).map(|_| {
        server
            .client
            .post(&url)
            .bearer_auth(&server.token)
            .json(&json!({ "agentType": "implementation" }))
            .send()
    });
    futures::future::join_all(requests)
        .await
        .into_iter()
        .map(|r| r.unwrap().status().as_u16())
        .collect()
}

/// Opens the owner WebSocket of `server`'s user (`?token=`), over a plain
/// TCP stream read with [`read_text_frame`].
pub async fn connect_ws(server: &TestServer) -> std::net::TcpStream {
    connect_ws_as(server, &server.token).await
}

/// Opens the owner WebSocket of the user `token` names.
pub async fn connect_ws_as(server: &TestServer, token: &str) -> std::net::TcpStream {
    use std::io::{Read, Write};
    let address = server.base.trim_start_matches("http://").to_owned();
    let token = token.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut stream = std::net::TcpStream::connect(&address).unwrap();
        write!(
            stream,
            "GET /api/ws?token={token} HTTP/1.1\r\nHost: {address}\r\nUpgrade: websocket\r\n\
Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
Sec-WebSocket-Version: 13\r\n\r\n"
        )
        .unwrap();
        let mut response = Vec::new();
        let mut byte = [0u8; 1];
        while !response.ends_with(b"\r\n\r\n") {
            stream.read_exact(&mut byte).unwrap();
            response.push(byte[0]);
        }
        assert!(String::from_utf8_lossy(&response).starts_with("HTTP/1.1 101"));
        // A notice that never comes fails the test instead of hanging it.
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        stream
    })
    .await
    .unwrap()
}

/// Reads one unmasked server frame's text payload.
pub fn read_text_frame(stream: &mut std::net::TcpStream) -> String {
    use std::io::Read;
    let mut head = [0u8; 2];
    stream.read_exact(&mut head).unwrap();
    assert_eq!(head[0] & 0x0f, 1, "a text frame");
    let len = match head[1] & 0x7f {
        126 => {
            let mut ext = [0u8; 2];
            stream.read_exact(&mut ext).unwrap();
            usize::from(u16::from_be_bytes(ext))
        }
        127 => panic!("frame too large for this test"),
        n => usize::from(n),
    };
    let mut payload = vec![0u8; len];
    stream.read_exact(&mut payload).unwrap();
    String::from_utf8(payload).unwrap()
}
