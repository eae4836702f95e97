//! Budgets of `agentloop serve`: a user's, a project's and a task's,
//! set and read on the API, reserved before each model call and settled
//! after it in the store. A run refused by a budget ends
//! `limit_exceeded` naming it (SQLite and PostgreSQL); two instances on
//! one PostgreSQL database, with many runs racing one budget, never
//! overspend it by more than one call's estimate.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use common::create_user;
use common::served::*;
use serde_json::{Value, json};

/// What each scripted model call costs, in US dollars.
const CALL_COST: f64 = 0.01;

/// A model turn that answers after a pause, spending 150 tokens and
/// [`CALL_COST`].
fn priced_turn(pause_ms: u64) -> Value {
    json!({
        "steps": [
            { "type": "delay", "ms": pause_ms },
            { "type": "text", "chunks": ["done"] }
        ],
        "usage": { "input_tokens": 100, "output_tokens": 50, "cost": CALL_COST }
    })
}

fn budgets(address: &str, token: &str, path: &str) -> Value {
    let (status, shown) = http(address, token, "GET", path, None);
    assert_eq!(status, 200, "{shown}");
    shown
}

/// The scope's budgets once no model call holds anything of them (a
/// call's spend is settled just after it; polled, bounded).
fn settled_budgets(address: &str, token: &str, path: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let shown = budgets(address, token, path);
        let budgets = shown["budgets"].as_array().unwrap();
        if budgets.iter().all(|b| b["reserved"] == 0.0) {
            return shown;
        }
        assert!(Instant::now() < deadline, "never settled: {shown}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn set_budgets(address: &str, token: &str, path: &str, budgets: Value) -> Value {
    let (status, shown) = http(
        address,
        token,
        "PUT",
        path,
        Some(json!({ "budgets": budgets })),
    );
    assert_eq!(status, 200, "{shown}");
    shown
}

/// The prometheus text of the server's metrics listener.
fn scrape(served: &Served) -> String {
    let metrics = served
        .log
        .lock()
        .unwrap()
        .iter()
        .find_map(|l| l.split("metrics on http://").nth(1).map(str::to_owned))
        .expect("the metrics address is printed");
    let metrics = metrics
        .split_whitespace()
        .next()
        .unwrap()
        .trim_end_matches("/metrics");
    let mut stream = TcpStream::connect(metrics).unwrap();
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut scrape = String::new();
    stream.read_to_string(&mut scrape).unwrap();
    scrape
}

/// The scenario on database `db`: budgets on the API, a run they let
/// through counted, a run they refuse ended naming the budget.
fn a_run_refused_by_a_budget_ends_limit_exceeded(db: &str, dir: &Path) {
    let script = dir.join("script.json");
    write_script(&script, json!([priced_turn(0)]));
    let ada = create_user(db, "ada");
    let bob = create_user(db, "bob");
    let provider = format!("scripted:{}", script.display());
    let server = serve_provider(
        db,
        &["--provider", &provider],
        dir,
        "budgets",
        &[
            "--budget-estimate-usd",
            "0.01",
            "--budget-estimate-tokens",
            "150",
            "--metrics-bind",
            "127.0.0.1:0",
        ],
    );
    let address = server.address.as_str();
    let project_id = project(address, &ada, &dir.join("repo"), json!({}));
    let project_path = format!("/api/projects/{project_id}/budgets");

    // None at first; bad input is a 400 and changes nothing; another
    // user's project is not found.
    let shown = budgets(address, &ada, &project_path);
    assert_eq!(shown["scope"], "project", "{shown}");
    assert_eq!(shown["budgets"], json!([]), "{shown}");
    for bad in [
        json!({ "budgets": [{ "metric": "cost", "period": "month", "limit": -1 }] }),
        json!({ "budgets": [{ "metric": "euros", "period": "month", "limit": 1 }] }),
        json!({ "budgets": [{ "metric": "cost", "period": "week", "limit": 1 }] }),
        json!({ "budgets": [{ "metric": "cost", "period": "day", "limit": 1 },
                            { "metric": "cost", "period": "day", "limit": 2 }] }),
        json!({ "budgets": [{ "metric": "cost", "period": "day" }] }),
        json!({ "limits": [] }),
    ] {
        let (status, refused) = http(address, &ada, "PUT", &project_path, Some(bad.clone()));
        assert_eq!(status, 400, "{bad} → {refused}");
        assert!(refused["error"].is_string(), "{refused}");
    }
    assert_eq!(budgets(address, &ada, &project_path)["budgets"], json!([]));
    for method in ["GET", "PUT"] {
        let body = (method == "PUT").then(|| json!({ "budgets": [] }));
        let (status, hidden) = http(address, &bob, method, &project_path, body);
        assert_eq!(status, 404, "{method} → {hidden}");
    }

    // Room for one call of the project's cost per day.
    let shown = set_budgets(
        address,
        &ada,
        &project_path,
        json!([{ "metric": "cost", "period": "day", "limit": 0.015 }]),
    );
    let budget = &shown["budgets"][0];
    assert_eq!(budget["limit"], 0.015, "{shown}");
    assert_eq!(budget["spent"], 0.0, "{shown}");
    assert_eq!(budget["reserved"], 0.0, "{shown}");
    assert_eq!(budget["period"], "day", "{shown}");
    assert_eq!(budget["period_key"].as_str().unwrap().len(), 10, "{shown}");

    let task_path = |task: &str| format!("/api/tasks/{task}/budgets");
    let first = new_task(address, &ada, &project_id);
    let (status, hidden) = http(address, &bob, "GET", &task_path(&first), None);
    assert_eq!(status, 404, "{hidden}");
    let run = start_run(address, &ada, &first, "planification");
    until_status(address, &ada, &run, "completed");
    let shown = settled_budgets(address, &ada, &project_path);
    assert_eq!(shown["budgets"][0]["spent"], CALL_COST, "{shown}");
    assert_eq!(shown["budgets"][0]["reserved"], 0.0, "{shown}");

    // The next call would take the day past its limit: not made.
    let second = new_task(address, &ada, &project_id);
    let run = start_run(address, &ada, &second, "planification");
    let ended = until_status(address, &ada, &run, "failed");
    let reason = &ended["error"];
    assert_eq!(reason["kind"], "limit_exceeded", "{ended}");
    let message = reason["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("project {project_id}")) && message.contains("cost per day"),
        "{ended}"
    );
    let shown = budgets(address, &ada, &project_path);
    assert_eq!(shown["budgets"][0]["spent"], CALL_COST, "{shown}");
    let events = whole_stream(address, &ada, &run);
    let finished = terminal_events(&events);
    assert_eq!(finished.len(), 1, "{events:?}");
    assert!(
        !events.iter().any(|(name, _)| name == "streaming_start"),
        "no model call was made: {events:?}"
    );

    // A task's budget, and the user's own, refuse the same way.
    set_budgets(address, &ada, &project_path, json!([]));
    let third = new_task(address, &ada, &project_id);
    set_budgets(
        address,
        &ada,
        &task_path(&third),
        json!([{ "metric": "tokens", "period": "total", "limit": 100 }]),
    );
    let run = start_run(address, &ada, &third, "planification");
    let ended = until_status(address, &ada, &run, "failed");
    let message = ended["error"]["message"].as_str().unwrap();
    assert!(message.contains(&format!("task {third}")), "{ended}");
    let mine = set_budgets(
        address,
        &ada,
        "/api/me/budgets",
        json!([{ "metric": "cost", "period": "month", "limit": 0.001 }]),
    );
    assert_eq!(mine["scope"], "user", "{mine}");
    let fourth = new_task(address, &ada, &project_id);
    let run = start_run(address, &ada, &fourth, "planification");
    let ended = until_status(address, &ada, &run, "failed");
    let message = ended["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("user ") && message.contains("cost per month"),
        "{ended}"
    );
    // Bob's own budgets are his, not Ada's.
    assert_eq!(
        budgets(address, &bob, "/api/me/budgets")["budgets"],
        json!([])
    );

    // The metrics carry the cost by user and project.
    let scrape = scrape(&server);
    let line = scrape
        .lines()
        .find(|l| l.starts_with("agentloop_owner_cost_usd_total") && l.contains(&project_id))
        .unwrap_or_else(|| panic!("no cost of the project in {scrape}"));
    let value: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!((value - CALL_COST).abs() < 1e-9, "{line}");
}

fn new_task(address: &str, token: &str, project_id: &str) -> String {
    let (status, task) = http(
        address,
        token,
        "POST",
        &format!("/api/projects/{project_id}/tasks"),
        Some(json!({ "title": "t" })),
    );
    assert_eq!(status, 201, "{task}");
    task["id"].as_str().unwrap().to_owned()
}

#[test]
fn a_run_refused_by_a_budget_ends_limit_exceeded_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    a_run_refused_by_a_budget_ends_limit_exceeded(&db, dir.path());
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
async fn a_run_refused_by_a_budget_ends_limit_exceeded_on_postgres() {
    let Some(admin_url) = postgres_url() else {
        return;
    };
    let name = format!("agentloop_cli_budgets_{}", std::process::id());
    let database = ScratchDatabase::create(&admin_url, &name).await;
    let dir = tempfile::tempdir().unwrap();
    let url = database.url.clone();
    let path = dir.path().to_owned();
    tokio::task::spawn_blocking(move || a_run_refused_by_a_budget_ends_limit_exceeded(&url, &path))
        .await
        .unwrap();
    database.remove().await;
}

/// Runs racing one budget from two instances.
const RACING_RUNS: usize = 50;
/// The budget: room for ten calls' estimates.
const RACED_LIMIT: f64 = 0.1;

fn two_instances_never_overspend_one_budget(db: &str, dir: &Path) {
    let script = dir.join("script.json");
    // Each call takes a moment, so calls of both instances are in flight
    // together.
    write_script(&script, json!([priced_turn(300)]));
    let ada = create_user(db, "ada");
    let provider = format!("scripted:{}", script.display());
    let flags = ["--budget-estimate-usd", "0.01", "--rate-limit", "off"];
    let one = serve_provider(db, &["--provider", &provider], dir, "budget-one", &flags);
    let two = serve_provider(db, &["--provider", &provider], dir, "budget-two", &flags);
    let addresses = [one.address.clone(), two.address.clone()];
    let project_id = project(&addresses[0], &ada, &dir.join("repo"), json!({}));
    let path = format!("/api/projects/{project_id}/budgets");
    set_budgets(
        &addresses[1],
        &ada,
        &path,
        json!([{ "metric": "cost", "period": "month", "limit": RACED_LIMIT }]),
    );
    let tasks: Vec<String> = (0..RACING_RUNS)
        .map(|i| new_task(&addresses[i % 2], &ada, &project_id))
        .collect();
    // Every run started at once, half on each instance.
    let runs: Vec<(usize, String)> = std::thread::scope(|scope| {
        let started: Vec<_> = tasks
            .iter()
            .enumerate()
            .map(|(i, task)| {
                let address = &addresses[i % 2];
                let ada = &ada;
                scope.spawn(move || (i % 2, start_run(address, ada, task, "planification")))
            })
            .collect();
        started.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut completed = 0;
    let mut refused = 0;
    for (instance, run) in &runs {
        let address = &addresses[*instance];
        loop {
            let (status, shown) = http(
                address,
                &ada,
                "GET",
                &format!("/api/agent-runs/{run}"),
                None,
            );
            assert_eq!(status, 200, "{shown}");
            match shown["status"].as_str().unwrap() {
                "completed" => {
                    completed += 1;
                    break;
                }
                "failed" => {
                    assert_eq!(shown["error"]["kind"], "limit_exceeded", "{shown}");
                    let message = shown["error"]["message"].as_str().unwrap();
                    assert!(
                        message.contains(&format!("project {project_id}")),
                        "{shown}"
                    );
                    refused += 1;
                    break;
                }
                _ => {
                    assert!(Instant::now() < deadline, "run {run} never ended: {shown}");
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
    }
    assert_eq!(completed + refused, RACING_RUNS);
    let shown = settled_budgets(&addresses[0], &ada, &path);
    let budget = &shown["budgets"][0];
    let spent = budget["spent"].as_f64().unwrap();
    assert_eq!(budget["reserved"], 0.0, "{shown}");
    // Each completed run made one call.
    assert!(
        (spent - CALL_COST * completed as f64).abs() < 1e-9,
        "{completed} runs completed, {spent} spent"
    );
    // Never more than one call's estimate past the limit, and the budget
    // was used: the race let calls through up to it.
    assert!(
        spent <= RACED_LIMIT + 0.01 + 1e-9,
        "{spent} spent of {RACED_LIMIT}"
    );
    assert!(completed >= 9, "only {completed} runs completed: {shown}");
    assert!(refused > 0);
    eprintln!(
        "{RACING_RUNS} runs on two instances: {completed} completed, {refused} refused, {spent} USD spent of {RACED_LIMIT}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_on_postgres_never_overspend_one_budget() {
    let Some(admin_url) = postgres_url() else {
        return;
    };
    let name = format!("agentloop_cli_budget_race_{}", std::process::id());
    let database = ScratchDatabase::create(&admin_url, &name).await;
    let dir = tempfile::tempdir().unwrap();
    let url = database.url.clone();
    let path = dir.path().to_owned();
    tokio::task::spawn_blocking(move || two_instances_never_overspend_one_budget(&url, &path))
        .await
        .unwrap();
    database.remove().await;
}
