//! A schedule's own budget in `agentloop serve`: set and read at
//! `/api/schedules/{id}/budgets` and shown on the schedule, it holds the
//! runs the schedule's ticks start (a run it refuses ends
//! `limit_exceeded` naming it), and the runs chained after them, and not
//! a person's runs of the same task. On SQLite and on PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::create_user;
use common::served::*;
use serde_json::{Value, json};

/// What each scripted model call costs, in US dollars.
const CALL_COST: f64 = 0.01;

/// Polls `check` (bounded) until it gives a value.
fn until<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(found) = check() {
            return found;
        }
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn runs_of(address: &str, token: &str, task_id: &str) -> Vec<Value> {
    let (status, runs) = http(
        address,
        token,
        "GET",
        &format!("/api/tasks/{task_id}/agent-runs"),
        None,
    );
    assert_eq!(status, 200, "{runs}");
    runs.as_array().unwrap().clone()
}

fn call(address: &str, token: &str, method: &str, path: &str, body: Option<Value>) -> Value {
    let (status, answer) = http(address, token, method, path, body);
    assert!(
        (200..300).contains(&status),
        "{method} {path} → {status} {answer}"
    );
    answer
}

fn a_schedule_budget_holds_its_runs(db: &str, dir: &Path) {
    let script = dir.join("script.json");
    write_script(
        &script,
        json!([{
            "steps": [{ "type": "text", "chunks": ["done"] }],
            "usage": { "input_tokens": 100, "output_tokens": 50, "cost": CALL_COST }
        }]),
    );
    let ada = create_user(db, "ada");
    let bob = create_user(db, "bob");
    let provider = format!("scripted:{}", script.display());
    let server = serve_provider(
        db,
        &["--provider", &provider],
        dir,
        "schedule-budgets",
        &[
            "--budget-estimate-usd",
            "0.01",
            "--budget-hold-expiry-secs",
            "600",
        ],
    );
    let address = server.address.as_str();
    let project_id = project(address, &ada, &dir.join("repo"), json!({}));
    let task = call(
        address,
        &ada,
        "POST",
        &format!("/api/projects/{project_id}/tasks"),
        Some(json!({ "title": "nightly" })),
    );
    let task_id = task["id"].as_str().unwrap().to_owned();
    // Every second, paused until its budget is set.
    let schedule = call(
        address,
        &ada,
        "POST",
        &format!("/api/projects/{project_id}/schedules"),
        Some(json!({
            "task_id": task_id, "cron": "* * * * * *", "agent": "planification",
            "paused": true
        })),
    );
    let schedule_id = schedule["id"].as_str().unwrap().to_owned();
    assert_eq!(schedule["budgets"], json!([]), "{schedule}");
    let path = format!("/api/schedules/{schedule_id}/budgets");
    let shown = call(address, &ada, "GET", &path, None);
    assert_eq!(shown["scope"], "schedule", "{shown}");
    assert_eq!(shown["scope_id"], schedule_id.as_str(), "{shown}");
    assert_eq!(shown["budgets"], json!([]), "{shown}");

    // Bad input is a 400 and changes nothing; another user's schedule's
    // budgets are not found.
    for bad in [
        json!({ "budgets": [{ "metric": "cost", "period": "month", "limit": -1 }] }),
        json!({ "budgets": [{ "metric": "tokens", "period": "day", "limit": 1 },
                            { "metric": "tokens", "period": "day", "limit": 2 }] }),
        json!({ "budgets": [{ "metric": "cost", "period": "hour", "limit": 1 }] }),
    ] {
        let (status, refused) = http(address, &ada, "PUT", &path, Some(bad.clone()));
        assert_eq!(status, 400, "{bad} → {refused}");
        assert!(refused["error"].is_string(), "{refused}");
    }
    for method in ["GET", "PUT"] {
        let body = (method == "PUT").then(|| json!({ "budgets": [] }));
        let (status, hidden) = http(address, &bob, method, &path, body);
        assert_eq!(status, 404, "{method} → {hidden}");
    }

    // Room for one call a month (and a token budget beside it).
    let shown = call(
        address,
        &ada,
        "PUT",
        &path,
        Some(json!({ "budgets": [
            { "metric": "cost", "period": "month", "limit": 0.015 },
            { "metric": "tokens", "period": "total", "limit": 100000 }
        ] })),
    );
    assert_eq!(shown["budgets"].as_array().unwrap().len(), 2, "{shown}");
    let on_schedule = call(
        address,
        &ada,
        "GET",
        &format!("/api/schedules/{schedule_id}"),
        None,
    );
    assert_eq!(on_schedule["budgets"], shown["budgets"], "{on_schedule}");
    // The change is in the project's audit log.
    let audit = call(
        address,
        &ada,
        "GET",
        &format!("/api/audit?project_id={project_id}"),
        None,
    );
    let changes: Vec<&Value> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "budget.change")
        .collect();
    assert_eq!(changes.len(), 1, "{audit}");
    assert_eq!(changes[0]["target"], schedule_id.as_str(), "{audit}");

    // Resumed: the first tick's run spends against it, a later tick's is
    // refused by it.
    call(
        address,
        &ada,
        "PATCH",
        &format!("/api/schedules/{schedule_id}"),
        Some(json!({ "paused": false })),
    );
    let refused = until("a scheduled run refused by the budget", || {
        runs_of(address, &ada, &task_id)
            .into_iter()
            .find(|r| r["status"] == "failed")
    });
    call(
        address,
        &ada,
        "PATCH",
        &format!("/api/schedules/{schedule_id}"),
        Some(json!({ "paused": true })),
    );
    let run_id = refused["id"].as_str().unwrap();
    let ended = until_status(address, &ada, run_id, "failed");
    assert_eq!(ended["error"]["kind"], "limit_exceeded", "{ended}");
    let message = ended["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("schedule {schedule_id}")) && message.contains("cost per month"),
        "{ended}"
    );
    let runs = until("the scheduled runs ended", || {
        let runs = runs_of(address, &ada, &task_id);
        runs.iter()
            .all(|r| r["status"] != "running" && r["status"] != "waiting")
            .then_some(runs)
    });
    let completed = runs.iter().filter(|r| r["status"] == "completed").count();
    assert_eq!(
        completed, 1,
        "one scheduled run fitted the budget: {runs:?}"
    );
    for run in runs.iter().filter(|r| r["status"] == "failed") {
        assert_eq!(run["error"]["kind"], "limit_exceeded", "{run}");
    }
    let shown = until("the schedule's spend settled", || {
        let shown = call(address, &ada, "GET", &path, None);
        let settled = shown["budgets"]
            .as_array()
            .unwrap()
            .iter()
            .all(|b| b["reserved"] == 0.0);
        settled.then_some(shown)
    });
    let cost = shown["budgets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["metric"] == "cost")
        .unwrap();
    assert_eq!(cost["spent"], CALL_COST, "{shown}");
    let tokens = shown["budgets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["metric"] == "tokens")
        .unwrap();
    assert_eq!(tokens["spent"], 150.0, "{shown}");

    // A person's run of the same task is not the schedule's: it goes on.
    let run = start_run(address, &ada, &task_id, "planification");
    until_status(address, &ada, &run, "completed");
    let after = call(address, &ada, "GET", &path, None);
    assert_eq!(after["budgets"], shown["budgets"], "{after}");

    // Deleting the schedule deletes its budgets.
    let (status, _) = http(
        address,
        &ada,
        "DELETE",
        &format!("/api/schedules/{schedule_id}"),
        None,
    );
    assert_eq!(status, 204);
    let (status, gone) = http(address, &ada, "GET", &path, None);
    assert_eq!(status, 404, "{gone}");
}

/// An implementation run a tick started chains to a review run: the
/// review spends for the same schedule, so the schedule's budget, with
/// room for one call, refuses it.
fn a_chain_a_tick_began_spends_for_the_schedule(db: &str, dir: &Path) {
    let script = dir.join("script.json");
    write_script(
        &script,
        json!([{
            "steps": [{ "type": "text", "chunks": ["done"] }],
            "usage": { "input_tokens": 100, "output_tokens": 50, "cost": CALL_COST }
        }]),
    );
    let ada = create_user(db, "ada");
    let provider = format!("scripted:{}", script.display());
    let server = serve_provider(
        db,
        &["--provider", &provider],
        dir,
        "schedule-chain",
        &["--budget-estimate-usd", "0.01"],
    );
    let address = server.address.as_str();
    let project_id = project(address, &ada, &dir.join("repo"), json!({}));
    let task = call(
        address,
        &ada,
        "POST",
        &format!("/api/projects/{project_id}/tasks"),
        Some(json!({ "title": "chained" })),
    );
    let task_id = task["id"].as_str().unwrap().to_owned();
    let schedule = call(
        address,
        &ada,
        "POST",
        &format!("/api/projects/{project_id}/schedules"),
        Some(json!({
            "task_id": task_id, "cron": "* * * * * *", "agent": "implementation",
            "paused": true
        })),
    );
    let schedule_id = schedule["id"].as_str().unwrap().to_owned();
    call(
        address,
        &ada,
        "PUT",
        &format!("/api/schedules/{schedule_id}/budgets"),
        Some(json!({ "budgets": [{ "metric": "cost", "period": "day", "limit": 0.015 }] })),
    );
    call(
        address,
        &ada,
        "PATCH",
        &format!("/api/schedules/{schedule_id}"),
        Some(json!({ "paused": false })),
    );
    let review = until(
        "the chained review refused by the schedule's budget",
        || {
            runs_of(address, &ada, &task_id)
                .into_iter()
                .find(|r| r["agent_type"] == "review" && r["status"] == "failed")
        },
    );
    call(
        address,
        &ada,
        "PATCH",
        &format!("/api/schedules/{schedule_id}"),
        Some(json!({ "paused": true })),
    );
    assert_eq!(review["error"]["kind"], "limit_exceeded", "{review}");
    let message = review["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("schedule {schedule_id}")),
        "{review}"
    );
    let runs = runs_of(address, &ada, &task_id);
    assert!(
        runs.iter()
            .any(|r| r["agent_type"] == "implementation" && r["status"] == "completed"),
        "{runs:?}"
    );
}

#[test]
fn a_chain_a_tick_began_spends_for_the_schedule_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    a_chain_a_tick_began_spends_for_the_schedule(&db, dir.path());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_a_tick_began_spends_for_the_schedule_on_postgres() {
    let Some(admin_url) = postgres_url() else {
        return;
    };
    let name = format!("agentloop_cli_schedule_chain_{}", std::process::id());
    let database = ScratchDatabase::create(&admin_url, &name).await;
    let dir = tempfile::tempdir().unwrap();
    let url = database.url.clone();
    let path = dir.path().to_owned();
    tokio::task::spawn_blocking(move || a_chain_a_tick_began_spends_for_the_schedule(&url, &path))
        .await
        .unwrap();
    database.remove().await;
}

#[test]
fn a_schedule_budget_holds_its_runs_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    a_schedule_budget_holds_its_runs(&db, dir.path());
}

/// The admin URL of the test PostgreSQL server, or `None` (then the test
/// skips, except in CI).
fn postgres_url() -> Option<String> {
    match std::env::var("AGENTLOOP_TEST_POSTGRES_URL") {
        Ok(url) => Some(url),
        Err(_) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI needs AGENTLOOP_TEST_POSTGRES_URL"
            );
            println!("skipping: AGENTLOOP_TEST_POSTGRES_URL is not set");
            None
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_budget_holds_its_runs_on_postgres() {
    let Some(admin_url) = postgres_url() else {
        return;
    };
    let name = format!("agentloop_cli_schedule_budgets_{}", std::process::id());
    let database = ScratchDatabase::create(&admin_url, &name).await;
    let dir = tempfile::tempdir().unwrap();
    let url = database.url.clone();
    let path = dir.path().to_owned();
    tokio::task::spawn_blocking(move || a_schedule_budget_holds_its_runs(&url, &path))
        .await
        .unwrap();
    database.remove().await;
}
