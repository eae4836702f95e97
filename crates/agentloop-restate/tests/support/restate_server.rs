//! A real `restate-server` for tests, installed by
//! `scripts/install-restate.sh` into `target/restate`, started on free
//! loopback ports with its data under `target/restate-test/`. Never a
//! mock: when the binary is missing the test fails under `CI` and skips,
//! saying so loudly, elsewhere.
//!
//! Shared by the tests of `agentloop-restate` and of the `agentloop`
//! binary (included with `#[path]`); std only.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `restate-server`; killed when dropped (its data is left under
/// `target/restate-test/` for a look after a failure, and removed at the
/// next start of the same name).
pub struct RestateServer {
    child: Option<Child>,
    binary: PathBuf,
    config: PathBuf,
    log: PathBuf,
    /// The ingress URL (`http://127.0.0.1:PORT`).
    pub ingress: String,
    /// The admin API URL.
    pub admin: String,
}

fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target")
}

/// The installed binary, if any (`AGENTLOOP_TEST_RESTATE_SERVER` names
/// another).
fn binary() -> Option<PathBuf> {
    if let Ok(path) = std::env::var("AGENTLOOP_TEST_RESTATE_SERVER") {
        return Some(PathBuf::from(path));
    }
    let path = target_dir()
        .join("restate/node_modules/@restatedev/restate-server-linux-x64/bin/restate-server");
    path.is_file().then_some(path)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A plain HTTP/1.1 GET; the status, or `None` when nothing answers.
pub fn http_status(url: &str, path: &str) -> Option<u16> {
    let address = url.strip_prefix("http://")?;
    let mut stream = TcpStream::connect(address).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

impl RestateServer {
    /// Starts a server named `name` (its data folder), or `None` when
    /// `restate-server` is not installed outside CI.
    pub fn start(name: &str) -> Option<Self> {
        let Some(binary) = binary() else {
            if std::env::var_os("CI").is_some() {
                panic!(
                    "restate-server is not installed: run scripts/install-restate.sh \
                     (or set AGENTLOOP_TEST_RESTATE_SERVER)"
                );
            }
            eprintln!(
                "!!!! SKIPPED: restate-server is not installed; run \
                 scripts/install-restate.sh to run this test !!!!"
            );
            return None;
        };
        let dir = target_dir().join("restate-test").join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let dir = dir.canonicalize().unwrap();
        let (fabric, ingress, admin) = (free_port(), free_port(), free_port());
        let config = dir.join("restate.toml");
        std::fs::write(
            &config,
            format!(
                "cluster-name = \"agentloop-test\"\n\
                 node-name = \"n1\"\n\
                 base-dir = \"{data}\"\n\
                 default-num-partitions = 2\n\
                 rocksdb-total-memory-size = \"256 MiB\"\n\
                 listen-mode = \"tcp\"\n\
                 bind-address = \"127.0.0.1:{fabric}\"\n\
                 [ingress]\n\
                 bind-address = \"127.0.0.1:{ingress}\"\n\
                 [admin]\n\
                 bind-address = \"127.0.0.1:{admin}\"\n",
                data = dir.join("data").display()
            ),
        )
        .unwrap();
        let mut server = Self {
            child: None,
            binary,
            log: dir.join("restate.log"),
            config,
            ingress: format!("http://127.0.0.1:{ingress}"),
            admin: format!("http://127.0.0.1:{admin}"),
        };
        server.launch();
        Some(server)
    }

    fn launch(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let child = Command::new(&self.binary)
            .arg("--no-logo")
            .arg("--config-file")
            .arg(&self.config)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
        self.wait_ready();
    }

    /// Waits until the admin API and the ingress answer.
    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let admin = http_status(&self.admin, "/health") == Some(200);
            let ingress = http_status(&self.ingress, "/restate/health") == Some(200);
            if admin && ingress {
                return;
            }
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().unwrap()) {
                panic!(
                    "restate-server exited ({status}); log:\n{}",
                    std::fs::read_to_string(&self.log).unwrap_or_default()
                );
            }
            assert!(
                Instant::now() < deadline,
                "restate-server did not become ready in 60 s; log:\n{}",
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGKILLs the server (its data stays).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same ports and data, and waits until ready.
    pub fn restart(&mut self) {
        self.kill();
        self.launch();
    }
}

impl Drop for RestateServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Runs SQL on the admin API's `/query`; the rows as JSON text.
pub fn query(admin: &str, sql: &str) -> String {
    let address = admin.strip_prefix("http://").unwrap();
    let body = format!("{{\"query\": {}}}", json_string(sql));
    let mut stream = TcpStream::connect(address).unwrap();
    write!(
        stream,
        // HTTP/1.0: the answer comes whole, not in chunks.
        "POST /query HTTP/1.0\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Accept: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.contains(" 200 "), "{response}");
    response.split_once("\r\n\r\n").unwrap().1.to_owned()
}

fn json_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
