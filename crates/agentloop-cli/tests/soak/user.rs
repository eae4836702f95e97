//! One soak user: three projects (one per kind of model answer), then, until
//! the deadline, one scenario after another — a plain run, a run whose
//! call waits for approval (approved or rejected), a run cancelled while it
//! waits on the model, requests that must be refused, browsing, and
//! projects and tasks created and deleted.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};

use super::api::Api;
use super::follow::follow;
use super::model::Behaviour;

/// A run a user started and followed to its end: what the checks compare
/// with the store.
pub struct SeenRun {
    /// The user who started it.
    pub user: u64,
    pub run_id: String,
    /// Seqs the SSE followers saw, in order (across a reconnect).
    pub seqs: Vec<u64>,
    /// The statuses the run may have ended with.
    pub ends: &'static [&'static str],
    /// Whether its followers' streams all ended on their own.
    pub followed_to_end: bool,
}

/// What every user shares: the runs seen, and the projects of all users
/// (another user's project must answer 404).
#[derive(Default)]
pub struct Shared {
    pub runs: Mutex<Vec<SeenRun>>,
    pub projects: Mutex<Vec<String>>,
}

/// A small deterministic generator: each user's traffic mix is the same
/// from run to run.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

pub struct User {
    pub index: u64,
    pub api: Api,
    /// Where this user's project folders go.
    pub root: std::path::PathBuf,
    pub shared: Arc<Shared>,
    pub rng: Rng,
    pub projects: Vec<(Behaviour, String)>,
}

impl User {
    /// Creates the user's three projects under `root`.
    pub async fn start(api: Api, shared: Arc<Shared>, index: u64, root: &Path) -> Option<Self> {
        let mut projects = Vec::new();
        for behaviour in [Behaviour::Plain, Behaviour::Approve, Behaviour::Slow] {
            let folder = root.join(format!("user-{index}")).join(behaviour.model());
            let body = json!({ "name": behaviour.model(), "repoFolder": folder,
                               "model": behaviour.model(), "approvals": "ask" });
            let created = api
                .json("POST /api/projects", Method::POST, "/api/projects", body)
                .await;
            let project = api.expect(created, 201, "create a project")?;
            let id = project["id"].as_str()?.to_owned();
            shared.projects.lock().ok()?.push(id.clone());
            projects.push((behaviour, id));
        }
        Some(Self {
            index,
            api,
            root: root.join(format!("user-{index}")),
            shared,
            rng: Rng::new(index + 1),
            projects,
        })
    }

    /// Runs scenarios until `deadline`.
    pub async fn run_until(mut self, deadline: Instant) {
        while Instant::now() < deadline {
            match self.rng.below(20) {
                0..=5 => self.plain_run().await,
                6..=9 => self.approved_run().await,
                10..=12 => self.cancelled_run().await,
                13..=15 => self.refused_requests().await,
                16..=17 => self.browse().await,
                _ => self.churn().await,
            }
        }
    }

    fn project(&self, behaviour: Behaviour) -> &str {
        self.projects
            .iter()
            .find(|(b, _)| *b == behaviour)
            .map(|(_, id)| id.as_str())
            .unwrap_or_default()
    }

    async fn task(&self, behaviour: Behaviour) -> Option<String> {
        let path = format!("/api/projects/{}/tasks", self.project(behaviour));
        let created = self
            .api
            .json(
                "POST /api/projects/{id}/tasks",
                Method::POST,
                &path,
                json!({ "title": "soak task" }),
            )
            .await;
        let task = self.api.expect(created, 201, "create a task")?;
        Some(task["id"].as_str()?.to_owned())
    }

    async fn start_run(&self, task: &str) -> Option<String> {
        // `planification` ends the chain: the task has no next run.
        let started = self
            .api
            .json(
                "POST /api/tasks/{id}/agent-runs",
                Method::POST,
                &format!("/api/tasks/{task}/agent-runs"),
                json!({ "agentType": "planification" }),
            )
            .await;
        let run = self.api.expect(started, 201, "start a run")?;
        Some(run["id"].as_str()?.to_owned())
    }

    /// Polls the run until `done` holds for it (bounded); its view.
    async fn until_run(&self, run: &str, done: impl Fn(&Value) -> bool) -> Option<Value> {
        let deadline = Instant::now() + Duration::from_secs(60);
        let path = format!("/api/agent-runs/{run}");
        loop {
            let answer = self
                .api
                .send("GET /api/agent-runs/{id}", Method::GET, &path, None)
                .await;
            let view = self.api.expect(answer, 200, "read a run")?;
            if done(&view) {
                return Some(view);
            }
            if Instant::now() > deadline {
                self.api
                    .stats
                    .finding(format!("run {run} did not get where expected: {view}"));
                return None;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn seen(&self, run_id: String, seqs: Vec<u64>, ends: &'static [&'static str], whole: bool) {
        if let Ok(mut runs) = self.shared.runs.lock() {
            runs.push(SeenRun {
                user: self.index,
                run_id,
                seqs,
                ends,
                followed_to_end: whole,
            });
        }
    }

    /// A task with a document, a run followed to its end, its messages.
    async fn plain_run(&mut self) {
        let Some(task) = self.task(Behaviour::Plain).await else {
            return;
        };
        let document = format!("# Soak\n\nDocument of {task}.\n");
        let path = format!("/api/tasks/{task}/document");
        let put = self
            .api
            .json(
                "PUT /api/tasks/{id}/document",
                Method::PUT,
                &path,
                json!({ "content": document }),
            )
            .await;
        self.api.expect(put, 200, "write a document");
        let got = self
            .api
            .send("GET /api/tasks/{id}/document", Method::GET, &path, None)
            .await;
        if let Some(body) = self.api.expect(got, 200, "read a document")
            && body["content"] != document.as_str()
        {
            self.api
                .stats
                .finding(format!("document of {task} read back as {body}"));
        }
        let Some(run) = self.start_run(&task).await else {
            return;
        };
        let followed = follow(&self.api, &run, None).await;
        self.until_run(&run, |view| view["status"] == "completed")
            .await;
        let messages = self
            .api
            .send(
                "GET /api/agent-runs/{id}/messages",
                Method::GET,
                &format!("/api/agent-runs/{run}/messages"),
                None,
            )
            .await;
        self.api.expect(messages, 200, "read a run's messages");
        self.seen(run, followed.seqs, &["completed"], followed.ended);
    }

    /// A run whose fs write waits for a person: followed until it waits,
    /// decided (approved or rejected), followed again from where it was.
    async fn approved_run(&mut self) {
        let Some(task) = self.task(Behaviour::Approve).await else {
            return;
        };
        let Some(run) = self.start_run(&task).await else {
            return;
        };
        let first = follow(&self.api, &run, None).await;
        if self
            .until_run(&run, |view| view["status"] == "waiting")
            .await
            .is_none()
        {
            self.seen(run, first.seqs, &["waiting"], false);
            return;
        }
        let pending = self
            .api
            .send(
                "GET /api/agent-runs/{id}/pending",
                Method::GET,
                &format!("/api/agent-runs/{run}/pending"),
                None,
            )
            .await;
        let calls: Vec<String> = self
            .api
            .expect(pending, 200, "read what a run waits for")
            .and_then(|body| {
                body["pending"].as_array().map(|calls| {
                    calls
                        .iter()
                        .filter_map(|c| c["call_id"].as_str().map(str::to_owned))
                        .collect()
                })
            })
            .unwrap_or_default();
        let decision = if self.rng.below(2) == 0 {
            json!("approve")
        } else {
            json!("reject")
        };
        let decisions: Vec<Value> = calls
            .iter()
            .map(|call| json!({ "call_id": call, "decision": decision }))
            .collect();
        let path = format!("/api/agent-runs/{run}/decisions");
        let decided = self
            .api
            .json(
                "POST /api/agent-runs/{id}/decisions",
                Method::POST,
                &path,
                json!({ "decisions": decisions }),
            )
            .await;
        self.api
            .expect(decided, 200, "decide a waiting run's calls");
        // The same decision again is refused.
        let again = self
            .api
            .json(
                "POST /api/agent-runs/{id}/decisions (refused)",
                Method::POST,
                &path,
                json!({ "decisions": decisions }),
            )
            .await;
        if let Some(answer) = &again
            && answer.status < 400
        {
            self.api
                .stats
                .finding(format!("a repeated decision on {run} was accepted"));
        }
        let last = first.seqs.last().copied();
        let rest = follow(&self.api, &run, last).await;
        self.until_run(&run, |view| view["status"] == "completed")
            .await;
        let mut seqs = first.seqs;
        seqs.extend(rest.seqs);
        self.seen(run, seqs, &["completed"], first.ended && rest.ended);
    }

    /// A run cancelled while it waits on a slow model; a second start on
    /// its task meanwhile is refused.
    async fn cancelled_run(&mut self) {
        let Some(task) = self.task(Behaviour::Slow).await else {
            return;
        };
        let Some(run) = self.start_run(&task).await else {
            return;
        };
        let api = self.api.clone();
        let follower = {
            let run = run.clone();
            tokio::spawn(async move { follow(&api, &run, None).await })
        };
        let second = self
            .api
            .json(
                "POST /api/tasks/{id}/agent-runs (refused: one is active)",
                Method::POST,
                &format!("/api/tasks/{task}/agent-runs"),
                json!({ "agentType": "planification" }),
            )
            .await;
        self.api
            .expect(second, 409, "a second run of a task with an active one");
        // Cancel at some point while the model holds its answer.
        let wait = Duration::from_millis(self.rng.below(800));
        tokio::time::sleep(wait).await;
        let cancelled = self
            .api
            .send(
                "POST /api/agent-runs/{id}/cancel",
                Method::POST,
                &format!("/api/agent-runs/{run}/cancel"),
                None,
            )
            .await;
        // 409 when the run ended first (the answer came before the cancel).
        if let Some(answer) = &cancelled
            && answer.status != 200
            && answer.status != 409
        {
            self.api.stats.finding(format!(
                "cancel of {run}: status {}: {}",
                answer.status, answer.body
            ));
        }
        let followed = match follower.await {
            Ok(followed) => followed,
            Err(error) => {
                self.api
                    .stats
                    .finding(format!("follower of {run} panicked: {error}"));
                return;
            }
        };
        self.until_run(&run, |view| {
            view["status"] == "cancelled" || view["status"] == "completed"
        })
        .await;
        self.seen(
            run,
            followed.seqs,
            &["cancelled", "completed"],
            followed.ended,
        );
    }

    /// Requests the server must refuse, each with its own 4xx.
    async fn refused_requests(&mut self) {
        let api = &self.api;
        let anonymous = api
            .send_as(
                "GET /api/projects (no token)",
                Method::GET,
                "/api/projects",
                None,
                None,
            )
            .await;
        api.expect(anonymous, 401, "a request with no token");
        let forged = api
            .send_as(
                "GET /api/projects (unknown token)",
                Method::GET,
                "/api/projects",
                None,
                Some("al_not-a-token"),
            )
            .await;
        api.expect(forged, 401, "a request with an unknown token");
        let malformed = api
            .send(
                "POST /api/projects (malformed JSON)",
                Method::POST,
                "/api/projects",
                Some(b"{\"name\": \"half".to_vec()),
            )
            .await;
        api.expect(malformed, 400, "malformed JSON");
        let wrong_shape = api
            .send(
                "POST /api/projects (JSON not an object)",
                Method::POST,
                "/api/projects",
                Some(b"[1, 2, 3]".to_vec()),
            )
            .await;
        api.expect(wrong_shape, 400, "JSON that is not an object");
        let unknown = api
            .send(
                "GET /api/agent-runs/{id} (unknown)",
                Method::GET,
                "/api/agent-runs/no-such-run",
                None,
            )
            .await;
        api.expect(unknown, 404, "an unknown run");
        // Another user's project is not found for this one.
        let others: Vec<String> = self
            .shared
            .projects
            .lock()
            .map(|all| all.clone())
            .unwrap_or_default();
        let mine: Vec<&String> = self.projects.iter().map(|(_, id)| id).collect();
        let foreign: Vec<&String> = others.iter().filter(|p| !mine.contains(p)).collect();
        if !foreign.is_empty() {
            let other = foreign[self.rng.below(foreign.len() as u64) as usize];
            let peek = api
                .send(
                    "GET /api/projects/{id} (another user's)",
                    Method::GET,
                    &format!("/api/projects/{other}"),
                    None,
                )
                .await;
            api.expect(peek, 404, "another user's project");
            let task = api
                .json(
                    "POST /api/projects/{id}/tasks (another user's)",
                    Method::POST,
                    &format!("/api/projects/{other}/tasks"),
                    json!({ "title": "not mine" }),
                )
                .await;
            api.expect(task, 404, "a task in another user's project");
        }
        if let Some(task) = self.task(Behaviour::Plain).await {
            let bad_agent = api
                .json(
                    "POST /api/tasks/{id}/agent-runs (invalid agent type)",
                    Method::POST,
                    &format!("/api/tasks/{task}/agent-runs"),
                    json!({ "agentType": "astrologer" }),
                )
                .await;
            api.expect(bad_agent, 400, "an invalid agent type");
        }
    }

    /// Lists: projects, tasks, runs.
    async fn browse(&mut self) {
        let api = &self.api;
        let projects = api
            .send("GET /api/projects", Method::GET, "/api/projects", None)
            .await;
        api.expect(projects, 200, "list projects");
        let project = self.project(Behaviour::Plain).to_owned();
        let tasks = api
            .send(
                "GET /api/projects/{id}/tasks",
                Method::GET,
                &format!("/api/projects/{project}/tasks"),
                None,
            )
            .await;
        let Some(tasks) = api.expect(tasks, 200, "list tasks") else {
            return;
        };
        let Some(task) = tasks
            .as_array()
            .and_then(|tasks| tasks.last())
            .and_then(|t| t["id"].as_str())
        else {
            return;
        };
        let runs = api
            .send(
                "GET /api/tasks/{id}/agent-runs",
                Method::GET,
                &format!("/api/tasks/{task}/agent-runs"),
                None,
            )
            .await;
        api.expect(runs, 200, "list a task's runs");
    }

    /// A project created and deleted, a task created and deleted.
    async fn churn(&mut self) {
        let api = &self.api;
        let folder = self
            .root
            .join(format!("churn-{}", self.rng.below(u64::MAX)));
        let created = api
            .json(
                "POST /api/projects",
                Method::POST,
                "/api/projects",
                json!({ "name": "churn", "repoFolder": folder }),
            )
            .await;
        if let Some(project) = api.expect(created, 201, "create a project")
            && let Some(id) = project["id"].as_str()
        {
            let deleted = api
                .send(
                    "DELETE /api/projects/{id}",
                    Method::DELETE,
                    &format!("/api/projects/{id}"),
                    None,
                )
                .await;
            api.expect(deleted, 204, "delete a project");
        }
        if let Some(task) = self.task(Behaviour::Plain).await {
            let deleted = self
                .api
                .send(
                    "DELETE /api/tasks/{id}",
                    Method::DELETE,
                    &format!("/api/tasks/{task}"),
                    None,
                )
                .await;
            self.api.expect(deleted, 204, "delete a task");
        }
    }
}
