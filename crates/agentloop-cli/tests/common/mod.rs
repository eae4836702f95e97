//! What the black-box tests of `agentloop serve` share: the binary with no
//! provider keys from the environment, and a served process that is killed
//! when dropped; `served` drives a served process over raw HTTP,
//! `openai` stands in for an OpenAI-compatible model server, and `python`
//! and `node` find the Python test tools and the reference npm clients.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

#[cfg(unix)]
pub mod folders;
pub mod node;
pub mod openai;
pub mod python;
pub mod served;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// A child process killed (and reaped) when dropped.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The binary, with no provider configured by the environment.
pub fn agentloop() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentloop"));
    without_provider_keys(&mut command);
    command
}

/// Removes from `command`'s environment the variables that would configure
/// a provider for the binary (or for a binary it starts).
pub fn without_provider_keys(command: &mut Command) -> &mut Command {
    for key in [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "AGENTLOOP_MODEL",
    ] {
        command.env_remove(key);
    }
    command
}

/// The events a run printed with `--json`: each line of its stdout, parsed.
pub fn events(output: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Runs `command` with `stdin` piped in (then closed); returns its output.
pub fn piped(mut command: Command, stdin: &str) -> Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// Starts `agentloop serve --bind 127.0.0.1:0` with `args`; returns it, its
/// base URL and the lines it logged before it served. Its later stderr
/// goes to the test's output, marked `[server]`.
pub fn serve(args: &[&str]) -> (Killed, String, Vec<String>) {
    serve_at("127.0.0.1:0", args)
}

/// [`serve`] on the address `bind` (a port of its own when it ends `:0`).
pub fn serve_at(bind: &str, args: &[&str]) -> (Killed, String, Vec<String>) {
    let mut child = agentloop()
        .args(["serve", "--bind", bind])
        .args(args)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut before = Vec::new();
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { return };
            eprintln!("[server] {line}");
            if let Some(rest) = line.split("serving on http://").nth(1) {
                let address = rest.split_whitespace().next().unwrap_or("").to_owned();
                let _ = tx.send((address, std::mem::take(&mut before)));
            } else {
                before.push(line);
            }
        }
    });
    let (address, logged) = rx.recv_timeout(Duration::from_secs(60)).unwrap();
    (Killed(child), format!("http://{address}"), logged)
}

/// `agentloop ARGS` in `folder` with a home of its own (`home`: its
/// configuration and data folders) and no provider keys.
pub fn in_folder(folder: &std::path::Path, home: &std::path::Path, args: &[&str]) -> Command {
    let mut command = agentloop();
    without_provider_keys(&mut command);
    command
        .args(args)
        .current_dir(folder)
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("NO_COLOR", "1");
    command
}

/// Creates user `name` in `db` and returns its token.
pub fn create_user(db: &str, name: &str) -> String {
    let output = agentloop()
        .args(["users", "create", name, "--db", db])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}
