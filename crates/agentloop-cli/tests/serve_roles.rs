//! Members and roles of `agentloop serve`'s projects, from outside: four
//! users — the project's owner, an editor, a viewer, and an outsider who
//! is no member — walk every route of the API as the server's own OpenAPI
//! document lists it (generated from the one route table, so a new route
//! cannot escape), each route's least role read from its `x-role`. An
//! outsider gets 404 for the project's ids, a member below the role a 403
//! that names both roles, a member at or above it an answer that is
//! neither. Then what the roles mean beyond the table: listing projects
//! with one's role, inviting by name, changing and removing members, a
//! member leaving, the creator kept, the audit log, A2A refusing a
//! viewer's start, and a viewer's WebSocket hearing the project's runs. On
//! SQLite and on PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::create_user;
use common::served::*;
use serde_json::{Value, json};

/// The API's routes outside any one project: they need no role.
const OUTSIDE_PROJECTS: &[(&str, &str)] = &[
    ("get", "/api/health"),
    ("get", "/api/openapi.json"),
    ("get", "/.well-known/agent-card.json"),
    ("get", "/api/me"),
    ("get", "/api/session"),
    ("post", "/api/session"),
    ("delete", "/api/session"),
    ("get", "/api/projects"),
    ("post", "/api/projects"),
    ("get", "/api/me/budgets"),
    ("put", "/api/me/budgets"),
];

/// The roles, least first, and the users holding them.
const ROLES: [&str; 3] = ["viewer", "editor", "owner"];

struct Users {
    owner: String,
    editor: String,
    viewer: String,
    outsider: String,
}

impl Users {
    fn token(&self, who: &str) -> &str {
        match who {
            "owner" => &self.owner,
            "editor" => &self.editor,
            "viewer" => &self.viewer,
            _ => &self.outsider,
        }
    }
}

/// What the routes' ids name: a project with its members, a task, an
/// ended run, a schedule.
struct Fixture {
    project: String,
    task: String,
    run: String,
    schedule: String,
}

/// A project of the owner's in a folder of its own, with eddie as editor
/// and vera as viewer, a task, a run that ended and a paused schedule.
fn fixture(address: &str, users: &Users, root: &Path, n: usize) -> Fixture {
    let project = project(
        address,
        &users.owner,
        &root.join(format!("repo-{n}")),
        json!({}),
    );
    for (name, role) in [("eddie", "editor"), ("vera", "viewer")] {
        let (status, member) = http(
            address,
            &users.owner,
            "POST",
            &format!("/api/projects/{project}/members"),
            Some(json!({ "user": name, "role": role })),
        );
        assert_eq!(status, 201, "{member}");
        assert_eq!(member["role"], role, "{member}");
    }
    let (status, task) = http(
        address,
        &users.owner,
        "POST",
        &format!("/api/projects/{project}/tasks"),
        Some(json!({ "title": "t" })),
    );
    assert_eq!(status, 201, "{task}");
    let task = task["id"].as_str().unwrap().to_owned();
    let run = start_run(address, &users.owner, &task, "planification");
    until_status(address, &users.owner, &run, "completed");
    let (status, schedule) = http(
        address,
        &users.owner,
        "POST",
        &format!("/api/projects/{project}/schedules"),
        Some(json!({ "task_id": task, "cron": "0 3 * * *", "paused": true })),
    );
    assert_eq!(status, 201, "{schedule}");
    let schedule = schedule["id"].as_str().unwrap().to_owned();
    Fixture {
        project,
        task,
        run,
        schedule,
    }
}

/// The path with its parameters filled from `at`; a member's route names
/// a member other than the caller (a member removing themselves needs no
/// role: see [`members_and_roles`]).
fn fill(path: &str, at: &Fixture, who: &str) -> String {
    let member = if who == "editor" { "vera" } else { "eddie" };
    path.replace("{projectId}", &at.project)
        .replace("{taskId}", &at.task)
        .replace("{runId}", &at.run)
        .replace("{scheduleId}", &at.schedule)
        .replace("{memoryId}", "no-such-memory")
        .replace("{seq}", "0")
        .replace("{chatId}", &at.task)
        .replace("{user}", member)
}

/// A valid body for each route that takes one: a change that leaves the
/// fixture usable (no Mark Done, the members kept, runs of the agent that
/// does not chain).
fn body(method: &str, path: &str, at: &Fixture) -> Option<Value> {
    let body = match (method, path) {
        ("patch", "/api/projects/{projectId}") => json!({ "approvals": "ask" }),
        ("post", "/api/projects/{projectId}/tasks") => json!({ "title": "another" }),
        ("put", "/api/tasks/{taskId}/document") => json!({ "content": "# t\n" }),
        ("put", "/api/tasks/{taskId}/workflow-complete") => json!({ "complete": false }),
        ("post", "/api/tasks/{taskId}/agent-runs") => json!({ "agentType": "planification" }),
        ("post", "/api/agent-runs/{runId}/decisions") => {
            json!({ "decisions": [{ "call_id": "c1", "decision": "approve" }] })
        }
        ("post", "/api/tasks/{taskId}/ag-ui") => {
            json!({ "threadId": "t", "runId": "r", "messages": [],
                    "forwardedProps": { "agentType": "planification" } })
        }
        ("post", "/api/tasks/{taskId}/ai-sdk") => json!({
            "id": "chat", "agentType": "planification",
            "messages": [{ "id": "m1", "role": "user", "parts": [{ "type": "text", "text": "go" }] }]
        }),
        ("post", "/api/agent-runs/{runId}/fork") => json!({ "at": 0 }),
        ("post", "/api/agent-runs/{runId}/rewind") => json!({ "to": 0 }),
        ("post", "/api/tasks/{taskId}/inputs") => {
            json!({ "type": "start", "agent": "planification" })
        }
        ("post", "/api/agent-runs/{runId}/inputs") => json!({ "type": "cancel" }),
        ("put", "/api/projects/{projectId}/webhooks") => {
            json!({ "urls": ["http://127.0.0.1:9/hook"] })
        }
        (
            "put",
            "/api/projects/{projectId}/budgets"
            | "/api/tasks/{taskId}/budgets"
            | "/api/schedules/{scheduleId}/budgets",
        ) => {
            json!({ "budgets": [] })
        }
        ("patch", "/api/projects/{projectId}/memories/{memoryId}") => json!({ "text": "x" }),
        ("post", "/api/projects/{projectId}/schedules") => {
            json!({ "task_id": at.task, "cron": "0 4 * * *", "paused": true })
        }
        ("patch", "/api/schedules/{scheduleId}") => json!({ "paused": true }),
        ("post", "/api/projects/{projectId}/members") => {
            json!({ "user": "nina", "role": "viewer" })
        }
        // The owner changes eddie's role to the one he has.
        ("patch", "/api/projects/{projectId}/members/{user}") => json!({ "role": "editor" }),
        _ => return None,
    };
    Some(body)
}

/// Whether an answer is a refusal to reach what the route's ids name:
/// a 403, or a 404 for the project, task, run or schedule itself.
fn refused(status: u16, answer: &Value) -> bool {
    let missing = answer["error"].as_str().is_some_and(|e| {
        [
            "Project not found",
            "Task not found",
            "Agent run not found",
            "Schedule not found",
        ]
        .contains(&e)
    });
    status == 403 || (status == 404 && missing)
}

/// Every route of the document under every role; returns how many
/// requests were made.
fn walk_every_route(address: &str, users: &Users, root: &Path) -> usize {
    let (status, document) = http(address, "", "GET", "/api/openapi.json", None);
    assert_eq!(status, 200);
    let shared = fixture(address, users, root, 0);
    let mut fresh = 1;
    let mut outside = BTreeSet::new();
    let mut requests = 0;
    let paths = document["paths"].as_object().unwrap();
    for (path, operations) in paths {
        for (method, operation) in operations.as_object().unwrap() {
            let Some(needed) = operation["x-role"].as_str() else {
                outside.insert((method.clone(), path.clone()));
                continue;
            };
            let needed = ROLES.iter().position(|r| *r == needed).unwrap();
            let takes_body = operation.get("requestBody").is_some();
            for who in ["outsider", "viewer", "editor", "owner"] {
                // A deletion takes what it deletes with it: each caller
                // deletes from a fixture of its own.
                let at = if method == "delete" {
                    fresh += 1;
                    fixture(address, users, root, fresh)
                } else {
                    shared_ids(&shared)
                };
                let mut target = fill(path, &at, who);
                if path == "/api/audit" {
                    target.push_str(&format!("?project_id={}", at.project));
                }
                if path.ends_with("/file-changes") {
                    target.push_str("?at=0");
                }
                let sent = body(method, path, &at);
                assert_eq!(
                    sent.is_some(),
                    takes_body,
                    "{method} {path}: give the test a body for it"
                );
                let (status, answer) = http(
                    address,
                    users.token(who),
                    &method.to_uppercase(),
                    &target,
                    sent,
                );
                requests += 1;
                let context = format!("{method} {path} as {who}: {status} {answer}");
                match ROLES.iter().position(|r| *r == who) {
                    None => {
                        assert_eq!(status, 404, "{context}");
                        assert!(refused(status, &answer), "{context}");
                    }
                    Some(role) if role < needed => {
                        assert_eq!(status, 403, "{context}");
                        let reason = answer["error"].as_str().unwrap_or_default();
                        assert!(
                            reason.contains(who) && reason.contains(ROLES[needed]),
                            "{context}"
                        );
                    }
                    Some(_) => {
                        assert!(!refused(status, &answer), "{context}");
                        assert!(status < 500, "{context}");
                    }
                }
            }
        }
    }
    let expected: BTreeSet<(String, String)> = OUTSIDE_PROJECTS
        .iter()
        .map(|(m, p)| ((*m).to_owned(), (*p).to_owned()))
        .collect();
    assert_eq!(
        outside, expected,
        "a route naming a project's ids must say the role it needs (`.role(..)` in the route table)"
    );
    requests
}

fn shared_ids(f: &Fixture) -> Fixture {
    Fixture {
        project: f.project.clone(),
        task: f.task.clone(),
        run: f.run.clone(),
        schedule: f.schedule.clone(),
    }
}

/// What roles mean beyond one route: listings, invitations, changes,
/// leaving, the creator kept, the audit log, A2A.
fn members_and_roles(address: &str, users: &Users, root: &Path) {
    let at = fixture(address, users, root, 1000);
    let members_path = format!("/api/projects/{}/members", at.project);

    // Each member lists the project with their role; the outsider does not.
    for (who, role) in [
        ("owner", "owner"),
        ("editor", "editor"),
        ("viewer", "viewer"),
    ] {
        let (status, projects) = http(address, users.token(who), "GET", "/api/projects", None);
        assert_eq!(status, 200, "{projects}");
        let listed = projects
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == at.project.as_str())
            .unwrap_or_else(|| panic!("{who} does not list the project: {projects}"));
        assert_eq!(listed["role"], role, "{listed}");
    }
    let (_, projects) = http(address, &users.outsider, "GET", "/api/projects", None);
    assert!(!projects.to_string().contains(&at.project), "{projects}");

    // Everyone in the project sees who is in it: the creator first.
    let (status, listed) = http(address, &users.viewer, "GET", &members_path, None);
    assert_eq!(status, 200, "{listed}");
    let names: Vec<(&str, &str)> = listed["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["name"].as_str().unwrap(), m["role"].as_str().unwrap()))
        .collect();
    assert_eq!(
        names,
        [("olga", "owner"), ("eddie", "editor"), ("vera", "viewer")]
    );

    // Inviting: by name, once; an unknown name and the creator refused.
    let invite = |token: &str, body: Value| http(address, token, "POST", &members_path, Some(body));
    let (status, answer) = invite(&users.owner, json!({ "user": "nobody", "role": "viewer" }));
    assert_eq!(status, 404, "{answer}");
    let (status, answer) = invite(&users.owner, json!({ "user": "vera", "role": "editor" }));
    assert_eq!(status, 409, "{answer}");
    let (status, answer) = invite(&users.owner, json!({ "user": "olga", "role": "viewer" }));
    assert_eq!(status, 409, "{answer}");
    let (status, answer) = invite(&users.owner, json!({ "user": "otto", "role": "gardener" }));
    assert_eq!(status, 400, "{answer}");
    let (status, answer) = invite(&users.editor, json!({ "user": "otto", "role": "viewer" }));
    assert_eq!(status, 403, "{answer}");

    // A viewer made editor starts a run; made viewer again, cannot.
    let start = |token: &str| {
        http(
            address,
            token,
            "POST",
            &format!("/api/tasks/{}/agent-runs", at.task),
            Some(json!({ "agentType": "planification" })),
        )
    };
    let (status, answer) = start(&users.viewer);
    assert_eq!(status, 403, "{answer}");
    let vera = format!("{members_path}/vera");
    let (status, answer) = http(
        address,
        &users.owner,
        "PATCH",
        &vera,
        Some(json!({ "role": "editor" })),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["role"], "editor");
    let (status, run) = start(&users.viewer);
    assert_eq!(status, 201, "{run}");
    until_status(
        address,
        &users.viewer,
        run["id"].as_str().unwrap(),
        "completed",
    );
    let (status, _) = http(
        address,
        &users.owner,
        "PATCH",
        &vera,
        Some(json!({ "role": "viewer" })),
    );
    assert_eq!(status, 200);
    let (status, answer) = start(&users.viewer);
    assert_eq!(status, 403, "{answer}");
    // Still reads and follows.
    let (status, _) = http(
        address,
        &users.viewer,
        "GET",
        &format!("/api/agent-runs/{}/events", at.run),
        None,
    );
    assert_eq!(status, 200);

    // The creator's role stays; a non-owner removes nobody but themselves.
    let (status, answer) = http(
        address,
        &users.owner,
        "PATCH",
        &format!("{members_path}/olga"),
        Some(json!({ "role": "viewer" })),
    );
    assert_eq!(status, 409, "{answer}");
    let (status, answer) = http(
        address,
        &users.editor,
        "DELETE",
        &format!("{members_path}/olga"),
        None,
    );
    assert_eq!(status, 403, "{answer}");
    let (status, answer) = http(
        address,
        &users.owner,
        "DELETE",
        &format!("{members_path}/olga"),
        None,
    );
    assert_eq!(status, 409, "{answer}");
    let (status, answer) = http(address, &users.editor, "DELETE", &vera, None);
    assert_eq!(status, 403, "{answer}");
    let (status, answer) = http(address, &users.viewer, "DELETE", &vera, None);
    assert_eq!(status, 204, "a member leaves: {answer}");
    let (status, answer) = http(
        address,
        &users.viewer,
        "GET",
        &format!("/api/projects/{}", at.project),
        None,
    );
    assert_eq!(status, 404, "once gone, the project is not found: {answer}");

    // The owner removes the editor, by id too.
    let (_, eddie) = http(address, &users.editor, "GET", "/api/me", None);
    let eddie = eddie["id"].as_str().unwrap().to_owned();
    let (status, answer) = http(
        address,
        &users.owner,
        "DELETE",
        &format!("{members_path}/{eddie}"),
        None,
    );
    assert_eq!(status, 204, "{answer}");
    let (status, _) = http(
        address,
        &users.editor,
        "GET",
        &format!("/api/tasks/{}", at.task),
        None,
    );
    assert_eq!(status, 404);

    // Every membership change is in the project's audit log, with the
    // role given and who it was given to.
    let (status, log) = http(
        address,
        &users.owner,
        "GET",
        &format!("/api/audit?project_id={}&limit=1000", at.project),
        None,
    );
    assert_eq!(status, 200, "{log}");
    let actions: Vec<(String, String)> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"].as_str().unwrap().starts_with("member."))
        .map(|e| {
            (
                e["action"].as_str().unwrap().to_owned(),
                e["detail"]["role"].as_str().unwrap_or("-").to_owned(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("member.add", "editor"),
        ("member.add", "viewer"),
        ("member.role", "editor"),
        ("member.role", "viewer"),
        ("member.remove", "-"),
        ("member.remove", "-"),
    ]
    .iter()
    .map(|(a, r)| ((*a).to_owned(), (*r).to_owned()))
    .collect();
    assert_eq!(actions, expected, "{log}");
    let removed = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|e| e["action"] == "member.remove")
        .unwrap();
    assert_eq!(removed["target"], eddie.as_str(), "{removed}");
}

/// A2A: a viewer reads the project's runs as tasks but starts none.
fn a2a_follows_the_role(address: &str, users: &Users, root: &Path) {
    let at = fixture(address, users, root, 2000);
    let send = |token: &str, id: u64| {
        let (status, answer) = http(
            address,
            token,
            "POST",
            "/a2a",
            Some(
                json!({ "jsonrpc": "2.0", "id": id, "method": "SendMessage", "params": {
                "configuration": { "returnImmediately": true },
                "metadata": { "agentType": "planification" },
                "message": { "messageId": format!("m{id}"), "role": "ROLE_USER",
                             "contextId": at.task, "parts": [{ "text": "Plan." }] } } }),
            ),
        );
        assert_eq!(status, 200, "{answer}");
        answer
    };
    let refused = send(&users.viewer, 1);
    let reason = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(
        reason.contains("viewer") && reason.contains("editor"),
        "{refused}"
    );
    let (status, get) = http(
        address,
        &users.viewer,
        "POST",
        "/a2a",
        Some(json!({ "jsonrpc": "2.0", "id": 2, "method": "GetTask",
                     "params": { "id": at.run } })),
    );
    assert_eq!(status, 200);
    assert_eq!(get["result"]["id"], at.run.as_str(), "{get}");
    let outsider = send(&users.outsider, 3);
    assert!(outsider["error"].is_object(), "{outsider}");
    let started = send(&users.editor, 4);
    assert!(started["error"].is_null(), "{started}");
}

/// The walk and the members' checks; returns the server, still serving.
fn roles(db: &str, dir: &Path) -> (Served, Users) {
    let script = dir.join("script.json");
    // Every run answers at once; there are more turns than runs.
    let turns: Vec<Value> = (0..400).map(|_| text("Planned.")).collect();
    write_script(&script, Value::Array(turns));
    let users = Users {
        owner: create_user(db, "olga"),
        editor: create_user(db, "eddie"),
        viewer: create_user(db, "vera"),
        outsider: create_user(db, "otto"),
    };
    // Invited by the walk.
    create_user(db, "nina");
    let server = serve_with(db, &script, "roles", &[]);
    let address = server.address.clone();
    let root = dir.join("projects");
    let started = std::time::Instant::now();
    let requests = walk_every_route(&address, &users, &root);
    println!(
        "{requests} requests over every route and role in {:?}",
        started.elapsed()
    );
    members_and_roles(&address, &users, &root);
    a2a_follows_the_role(&address, &users, &root);
    (server, users)
}

/// A viewer's WebSocket hears the statuses of the project's runs, as its
/// owner's does.
async fn a_viewer_hears_the_projects_runs(server: Served, users: Users, root: PathBuf) {
    use futures::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;

    let address = server.address.clone();
    let users = std::sync::Arc::new(users);
    let task = {
        let (address, users) = (address.clone(), users.clone());
        tokio::task::spawn_blocking(move || fixture(&address, &users, &root, 3000).task)
            .await
            .unwrap()
    };
    let mut request = format!("ws://{address}/api/ws")
        .into_client_request()
        .unwrap();
    request.headers_mut().insert(
        "authorization",
        format!("Bearer {}", users.viewer).parse().unwrap(),
    );
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    let run = {
        let (address, users) = (address.clone(), users.clone());
        tokio::task::spawn_blocking(move || {
            start_run(&address, &users.owner, &task, "planification")
        })
        .await
        .unwrap()
    };
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let message = tokio::time::timeout_at(deadline, socket.next())
            .await
            .expect("the viewer heard the run end")
            .unwrap()
            .unwrap();
        let Message::Text(text) = message else {
            continue;
        };
        let notice: Value = serde_json::from_str(&text).unwrap();
        if notice["type"] == "agent-run-status"
            && notice["agentRunId"] == run.as_str()
            && notice["status"] == "completed"
        {
            break;
        }
    }
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_answers_each_role_as_it_should_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let path = dir.path().to_owned();
    let (server, users) = tokio::task::spawn_blocking(move || roles(&db, &path))
        .await
        .unwrap();
    a_viewer_hears_the_projects_runs(server, users, dir.path().join("projects")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_answers_each_role_as_it_should_on_postgres() {
    let Ok(admin_url) = std::env::var("AGENTLOOP_TEST_POSTGRES_URL") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI needs AGENTLOOP_TEST_POSTGRES_URL"
        );
        println!("skipping: AGENTLOOP_TEST_POSTGRES_URL is not set");
        return;
    };
    let name = format!("agentloop_cli_roles_{}", std::process::id());
    let database = ScratchDatabase::create(&admin_url, &name).await;
    let dir = tempfile::tempdir().unwrap();
    let url = database.url.clone();
    let path = dir.path().to_owned();
    let (server, users) = tokio::task::spawn_blocking(move || roles(&url, &path))
        .await
        .unwrap();
    a_viewer_hears_the_projects_runs(server, users, dir.path().join("projects")).await;
    database.remove().await;
}
