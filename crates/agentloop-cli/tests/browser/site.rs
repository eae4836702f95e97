//! An `agentloop serve` on a scripted model for one test, signed in to
//! from the page; projects and tasks created through the page; scripted
//! turns; the HTTP API for checking what a person's clicks did.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::common::{self, Killed, create_user};
use crate::driver::Page;

/// A served instance, its user's token and its projects folder.
pub struct Site {
    pub base: String,
    pub token: String,
    pub root: PathBuf,
    server: Option<Killed>,
    /// The flags it was started with, to start it again.
    args: Vec<String>,
    _dir: tempfile::TempDir,
}

impl Site {
    /// Serves `turns` (a scripted provider's script, shared by every run
    /// in the order they ask) with `extra` flags; one user, `ada`.
    pub fn start(turns: Value, extra: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("script.json");
        std::fs::write(&script, turns.to_string()).unwrap();
        let provider = format!("scripted-shared:{}", script.display());
        let mut args = vec!["--provider", provider.as_str()];
        args.extend_from_slice(extra);
        Self::serve(dir, &args)
    }

    /// Serves with no model configured (and no key in the environment).
    pub fn without_a_model() -> Self {
        Self::serve(tempfile::tempdir().unwrap(), &[])
    }

    fn serve(dir: tempfile::TempDir, extra: &[&str]) -> Self {
        let db = dir.path().join("agentloop.db").display().to_string();
        let root = dir.path().join("projects");
        std::fs::create_dir_all(&root).unwrap();
        let token = create_user(&db, "ada");
        let root_arg = root.display().to_string();
        let mut args = vec!["--db", db.as_str(), "--projects-root", root_arg.as_str()];
        args.extend_from_slice(extra);
        let (server, base, _) = common::serve(&args);
        Self {
            base,
            token,
            root,
            server: Some(server),
            args: args.into_iter().map(str::to_owned).collect(),
            _dir: dir,
        }
    }

    /// Kills the server with SIGKILL: it ends with no shutdown of any kind,
    /// mid-run if a run is running.
    pub fn kill(&mut self) {
        let mut server = self.server.take().expect("a running server");
        server.0.kill().unwrap();
        server.0.wait().unwrap();
    }

    /// Starts the server again on the same database, projects folder and
    /// address.
    pub fn restart(&mut self) {
        assert!(self.server.is_none(), "the server still runs");
        let bind = self.base.trim_start_matches("http://");
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        let (server, base, _) = common::serve_at(bind, &args);
        assert_eq!(base, self.base);
        self.server = Some(server);
    }

    pub fn url(&self, hash: &str) -> String {
        format!("{}/{hash}", self.base)
    }

    /// Creates another user of the server (`agentloop users create`);
    /// returns their token.
    pub fn add_user(&self, name: &str) -> String {
        let db = self._dir.path().join("agentloop.db").display().to_string();
        create_user(&db, name)
    }

    /// Signs `page` in with the user's token; the projects list shows.
    pub async fn sign_in(&self, page: &Page) {
        self.sign_in_with(page, &self.token).await;
    }

    /// Signs `page` in with `token`; the projects list shows.
    pub async fn sign_in_with(&self, page: &Page, token: &str) {
        page.goto(&self.url("#/")).await;
        page.fill("#token", token).await;
        page.click("form button[type=submit]").await;
        page.wait_until("document.querySelector('h1')?.textContent === 'Projects'")
            .await;
    }

    /// Creates a project in folder `folder` from the page; returns its id.
    pub async fn new_project(&self, page: &Page, name: &str, folder: &str) -> String {
        page.goto(&self.url("#/")).await;
        page.fill("#project-name", name).await;
        page.fill("#project-folder", folder).await;
        page.click("form button[type=submit]").await;
        page.id_in_hash("projects").await
    }

    /// Creates a task in project `project` from the page; returns its id.
    pub async fn new_task(&self, page: &Page, project: &str, title: &str) -> String {
        page.goto(&self.url(&format!("#/projects/{project}"))).await;
        page.fill("#task-title", title).await;
        page.click("form button[type=submit]").await;
        page.id_in_hash("tasks").await
    }

    /// One API request as the user; returns the status and the JSON body.
    pub async fn api(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = reqwest::Client::new()
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// The task's agent runs, oldest first.
    pub async fn runs(&self, task: &str) -> Vec<Value> {
        let (status, runs) = self
            .api("GET", &format!("/api/tasks/{task}/agent-runs"), None)
            .await;
        assert_eq!(status, 200, "{runs}");
        runs.as_array().unwrap().clone()
    }
}

/// A turn that streams `chunks` as one text block, `delay_ms` apart.
pub fn text_turn(chunks: &[&str], delay_ms: u64) -> Value {
    let mut steps = Vec::new();
    for chunk in chunks {
        steps.push(json!({ "type": "text", "chunks": [chunk] }));
        if delay_ms > 0 {
            steps.push(json!({ "type": "delay", "ms": delay_ms }));
        }
    }
    json!({ "steps": steps, "usage": { "input_tokens": 50, "output_tokens": 10 } })
}

/// A turn that makes one call of `tool` with `input`.
pub fn call_turn(id: &str, tool: &str, input: Value) -> Value {
    json!({ "steps": [
        { "type": "tool_call", "id": id, "name": tool, "fragments": [input.to_string()] }
    ] })
}

/// A review's turn that ends the chain.
pub fn finish_turn(id: &str) -> Value {
    call_turn(id, "complete_workflow", json!({}))
}

/// A turn that never answers (a run to cancel).
pub fn hanging_turn() -> Value {
    json!({ "steps": [{ "type": "text", "chunks": ["thinking it over"] }, { "type": "hang" }] })
}
