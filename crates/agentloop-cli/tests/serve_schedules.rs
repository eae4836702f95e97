//! Schedules of `agentloop serve`: a cron expression in a time zone that
//! starts agent runs on a task. Created over the API (and with
//! `agentloop schedules`), it fires every second; a tick while the task's
//! run still goes on is skipped and says so; pausing stops the ticks and
//! resuming brings them back; bad expressions and zones are refused with
//! a clear 400 and another user's schedules are not found. With two
//! instances on one PostgreSQL database, each tick fires once. On SQLite
//! and on PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use common::served::*;
use common::{agentloop, create_user};
use serde_json::{Value, json};

/// Model turns for every run the scenario starts: the first slow (its run
/// outlasts the next ticks, which are skipped), the rest quick.
fn script(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("script.json");
    let mut turns = vec![json!({ "steps": [
        { "type": "text", "chunks": ["Looking"] },
        { "type": "delay", "ms": 2500 },
        { "type": "text", "chunks": ["done"] }
    ] })];
    turns.extend((0..400).map(|n| text(&format!("checked {n}"))));
    write_script(&path, Value::Array(turns));
    path
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

fn schedule(address: &str, token: &str, id: &str) -> Value {
    let (status, found) = http(address, token, "GET", &format!("/api/schedules/{id}"), None);
    assert_eq!(status, 200, "{found}");
    found
}

/// Waits until the task has no running or waiting run and returns how
/// many it has.
fn settled_runs(address: &str, token: &str, task_id: &str) -> usize {
    until("the task's runs ended", || {
        let runs = runs_of(address, token, task_id);
        runs.iter()
            .all(|r| r["status"] != "running" && r["status"] != "waiting")
            .then_some(runs.len())
    })
}

/// The count of runs stays `count` for `ticks` seconds (each a tick of an
/// every-second schedule).
fn no_new_runs(address: &str, token: &str, task_id: &str, count: usize, ticks: u64) {
    let until = Instant::now() + Duration::from_secs(ticks);
    while Instant::now() < until {
        assert_eq!(runs_of(address, token, task_id).len(), count);
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn cli(db: &str, args: &[&str]) -> String {
    let output = agentloop()
        .arg("schedules")
        .args(args)
        .args(["--db", db])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn schedules_run_tasks_on_time(db: &str, dir: &Path) {
    let script = script(dir);
    let ada = create_user(db, "ada");
    let bob = create_user(db, "bob");
    let server = serve(db, &script, "scheduler");
    let address = server.address.as_str();
    let project_id = project(address, &ada, &dir.join("repo"), json!({}));
    let (status, task) = http(
        address,
        &ada,
        "POST",
        &format!("/api/projects/{project_id}/tasks"),
        Some(json!({ "title": "nightly" })),
    );
    assert_eq!(status, 201, "{task}");
    let task_id = task["id"].as_str().unwrap().to_owned();
    let path = format!("/api/projects/{project_id}/schedules");

    // Bad input: a clear 400, and nothing created.
    for (body, says) in [
        (
            json!({ "task_id": task_id, "cron": "61 * * * *" }),
            "invalid cron expression",
        ),
        (json!({ "task_id": task_id, "cron": "* * *" }), "3 fields"),
        (
            json!({ "task_id": task_id, "cron": "* * * * *", "time_zone": "Mars/Olympus" }),
            "unknown time zone \"Mars/Olympus\"",
        ),
        (
            json!({ "task_id": task_id, "cron": "0 0 30 2 *" }),
            "never fires",
        ),
        (json!({ "task_id": task_id }), "cron"),
        (
            json!({ "task_id": task_id, "cron": "* * * * *", "every": 1 }),
            "every",
        ),
    ] {
        let (status, refused) = http(address, &ada, "POST", &path, Some(body.clone()));
        assert_eq!(status, 400, "{body}: {refused}");
        let error = refused["error"].as_str().unwrap();
        assert!(error.contains(says), "{body}: {error}");
    }
    let (status, _) = http(
        address,
        &ada,
        "POST",
        &path,
        Some(json!({ "task_id": "no-such-task", "cron": "* * * * *" })),
    );
    assert_eq!(status, 404);
    let (_, listed) = http(address, &ada, "GET", &path, None);
    assert_eq!(listed["schedules"], json!([]), "{listed}");

    // Every second, in a zone, with a prompt.
    let (status, created) = http(
        address,
        &ada,
        "POST",
        &path,
        Some(json!({
            "task_id": task_id, "cron": "*/1 * * * * *", "time_zone": "Europe/Paris",
            "agent": "planification", "prompt": "check the nightly build",
        })),
    );
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["paused"], false, "{created}");
    assert_eq!(created["time_zone"], "Europe/Paris", "{created}");
    assert!(created["next_fire_at"].is_string(), "{created}");

    // Another user's schedules are not found.
    for (method, at, body) in [
        ("GET", format!("/api/schedules/{id}"), None),
        (
            "PATCH",
            format!("/api/schedules/{id}"),
            Some(json!({ "paused": true })),
        ),
        ("DELETE", format!("/api/schedules/{id}"), None),
        ("GET", path.clone(), None),
        (
            "POST",
            path.clone(),
            Some(json!({ "task_id": task_id, "cron": "* * * * *" })),
        ),
    ] {
        let (status, answer) = http(address, &bob, method, &at, body);
        assert_eq!(status, 404, "{method} {at}: {answer}");
    }

    // The first tick starts a run (slow); the ticks while it goes on are
    // skipped, and the schedule says so.
    let first = until("a scheduled run started", || {
        runs_of(address, &ada, &task_id).first().cloned()
    });
    assert_eq!(first["agent_type"], "planification", "{first}");
    let first_id = first["id"].as_str().unwrap().to_owned();
    let skipped = until("a tick was skipped", || {
        let shown = schedule(address, &ada, &id);
        (shown["last_outcome"]["outcome"] == "skipped").then_some(shown)
    });
    let reason = skipped["last_outcome"]["reason"].as_str().unwrap();
    assert!(reason.contains(&first_id), "{skipped}");
    assert!(skipped["last_fired_at"].is_string(), "{skipped}");
    let (_, messages) = http(
        address,
        &ada,
        "GET",
        &format!("/api/agent-runs/{first_id}/messages"),
        None,
    );
    assert!(
        messages.to_string().contains("check the nightly build"),
        "{messages}"
    );
    // More ticks start more runs, one at a time.
    let started = until("three scheduled runs", || {
        let runs = runs_of(address, &ada, &task_id);
        (runs.len() >= 3).then_some(runs)
    });
    assert!(started.iter().all(|r| r["agent_type"] == "planification"));
    let shown = schedule(address, &ada, &id);
    assert!(
        ["started", "skipped"].contains(&shown["last_outcome"]["outcome"].as_str().unwrap()),
        "{shown}"
    );

    // Paused: no tick fires.
    let (status, paused) = http(
        address,
        &ada,
        "PATCH",
        &format!("/api/schedules/{id}"),
        Some(json!({ "paused": true })),
    );
    assert_eq!(status, 200, "{paused}");
    assert_eq!(paused["paused"], true, "{paused}");
    assert!(paused["next_fire_at"].is_null(), "{paused}");
    let count = settled_runs(address, &ada, &task_id);
    no_new_runs(address, &ada, &task_id, count, 3);
    let (status, refused) = http(
        address,
        &ada,
        "PATCH",
        &format!("/api/schedules/{id}"),
        Some(json!({ "time_zone": "Nowhere/Else" })),
    );
    assert_eq!(status, 400, "{refused}");

    // Resumed: ticks fire again.
    let (status, resumed) = http(
        address,
        &ada,
        "PATCH",
        &format!("/api/schedules/{id}"),
        Some(json!({ "paused": false })),
    );
    assert_eq!(status, 200, "{resumed}");
    until("a run after resuming", || {
        (runs_of(address, &ada, &task_id).len() > count).then_some(())
    });

    // Deleted: gone, and no more ticks.
    let (status, _) = http(
        address,
        &ada,
        "DELETE",
        &format!("/api/schedules/{id}"),
        None,
    );
    assert_eq!(status, 204);
    let (status, _) = http(address, &ada, "GET", &format!("/api/schedules/{id}"), None);
    assert_eq!(status, 404);
    let count = settled_runs(address, &ada, &task_id);
    no_new_runs(address, &ada, &task_id, count, 2);

    // The audit log holds the changes and the ticks.
    let (status, audit) = http(
        address,
        &ada,
        "GET",
        &format!("/api/audit?project_id={project_id}&limit=1000"),
        None,
    );
    assert_eq!(status, 200, "{audit}");
    let actions: BTreeSet<&str> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["target"] == id.as_str())
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    for action in [
        "schedule.create",
        "schedule.change",
        "schedule.delete",
        "schedule.fire",
    ] {
        assert!(actions.contains(action), "{action}: {actions:?}");
    }

    // The CLI writes schedules the server fires.
    let made = cli(
        db,
        &[
            "create",
            "--task",
            &task_id,
            "--cron",
            "* * * * * *",
            "--tz",
            "Asia/Tokyo",
            "--agent",
            "planification",
        ],
    );
    let made = made.trim().to_owned();
    let listed = cli(db, &["list"]);
    assert!(
        listed.contains(&made) && listed.contains("Asia/Tokyo") && listed.contains("active"),
        "{listed}"
    );
    until("a run of the CLI's schedule", || {
        (runs_of(address, &ada, &task_id).len() > count).then_some(())
    });
    assert!(cli(db, &["pause", &made]).contains("paused"));
    let count = settled_runs(address, &ada, &task_id);
    no_new_runs(address, &ada, &task_id, count, 2);
    assert!(cli(db, &["resume", &made]).contains("active"));
    until("a run after the CLI resumed it", || {
        (runs_of(address, &ada, &task_id).len() > count).then_some(())
    });
    cli(db, &["delete", &made]);
    assert!(!cli(db, &["list"]).contains(&made));
    let output = agentloop()
        .args([
            "schedules",
            "create",
            "--task",
            &task_id,
            "--cron",
            "* * * * *",
        ])
        .args(["--tz", "Mars/Olympus", "--db", db])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown time zone"));
}

#[test]
fn schedules_run_tasks_on_time_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    schedules_run_tasks_on_time(&db, dir.path());
}

/// A PostgreSQL database of the test's own, or `None` (outside CI) when
/// none is configured.
async fn scratch(name: &str) -> Option<ScratchDatabase> {
    let Ok(admin_url) = std::env::var("AGENTLOOP_TEST_POSTGRES_URL") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI needs AGENTLOOP_TEST_POSTGRES_URL"
        );
        println!("skipping: AGENTLOOP_TEST_POSTGRES_URL is not set");
        return None;
    };
    let name = format!("agentloop_cli_{name}_{}", std::process::id());
    Some(ScratchDatabase::create(&admin_url, &name).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedules_run_tasks_on_time_on_postgres() {
    let Some(database) = scratch("schedules").await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let url = database.url.clone();
    let path = dir.path().to_owned();
    tokio::task::spawn_blocking(move || schedules_run_tasks_on_time(&url, &path))
        .await
        .unwrap();
    database.remove().await;
}

/// Two instances on one database, one schedule firing every second: over
/// several ticks each tick is claimed once (the audit log names each
/// tick once, with the ticks passed over counted), and each started tick
/// is one agent run.
fn each_tick_fires_once_across_instances(db: &str, dir: &Path) {
    let script = dir.join("script.json");
    write_script(
        &script,
        Value::Array((0..400).map(|n| text(&format!("checked {n}"))).collect()),
    );
    let ada = create_user(db, "ada");
    let one = serve(db, &script, "one");
    let two = serve(db, &script, "two");
    let project_id = project(&one.address, &ada, &dir.join("repo"), json!({}));
    let (status, task) = http(
        &one.address,
        &ada,
        "POST",
        &format!("/api/projects/{project_id}/tasks"),
        Some(json!({ "title": "twice?" })),
    );
    assert_eq!(status, 201, "{task}");
    let task_id = task["id"].as_str().unwrap().to_owned();
    // Created on the second instance, fired by whichever claims a tick.
    let (status, created) = http(
        &two.address,
        &ada,
        "POST",
        &format!("/api/projects/{project_id}/schedules"),
        Some(json!({ "task_id": task_id, "cron": "* * * * * *", "agent": "planification" })),
    );
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    const TICKS: usize = 8;
    until("several ticks fired", || {
        let runs = runs_of(&one.address, &ada, &task_id);
        (runs.len() >= TICKS).then_some(())
    });
    let (status, _) = http(
        &one.address,
        &ada,
        "PATCH",
        &format!("/api/schedules/{id}"),
        Some(json!({ "paused": true })),
    );
    assert_eq!(status, 200);
    let runs = settled_runs(&two.address, &ada, &task_id);

    let (status, audit) = http(
        &two.address,
        &ada,
        "GET",
        &format!("/api/audit?project_id={project_id}&limit=1000"),
        None,
    );
    assert_eq!(status, 200, "{audit}");
    let fires: Vec<&Value> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "schedule.fire" && e["target"] == id.as_str())
        .collect();
    let ticks: Vec<i64> = fires
        .iter()
        .map(|e| e["detail"]["tick_at"].as_i64().unwrap())
        .collect();
    let distinct: BTreeSet<i64> = ticks.iter().copied().collect();
    assert_eq!(distinct.len(), ticks.len(), "a tick fired twice: {ticks:?}");
    // Every second from the first tick to the last is accounted for once:
    // fired, or passed over and counted.
    let passed_over: i64 = fires
        .iter()
        .map(|e| e["detail"]["missed"].as_i64().unwrap())
        .sum();
    let first = distinct.first().unwrap();
    let last = distinct.last().unwrap();
    assert_eq!(
        (last - first) / 1000 + 1,
        i64::try_from(ticks.len()).unwrap() + passed_over,
        "{ticks:?}"
    );
    let started = fires
        .iter()
        .filter(|e| e["detail"]["outcome"] == "started")
        .count();
    assert_eq!(started, runs, "one run per started tick");
    let by_one = fires
        .iter()
        .filter(|e| e["detail"]["instance"] == "one")
        .count();
    // How late each tick's run was started and recorded.
    let late: Vec<i64> = fires
        .iter()
        .map(|e| e["at_ms"].as_i64().unwrap() - e["detail"]["tick_at"].as_i64().unwrap())
        .collect();
    println!(
        "{} ticks claimed: {by_one} by instance one, {} by instance two; {started} runs \
         started, {passed_over} ticks passed over; recorded {} to {} ms after the tick",
        fires.len(),
        fires.len() - by_one,
        late.iter().min().unwrap(),
        late.iter().max().unwrap()
    );
    assert!(runs >= TICKS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_tick_fires_once_across_two_instances_on_postgres() {
    let Some(database) = scratch("schedules_two").await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let url = database.url.clone();
    let path = dir.path().to_owned();
    tokio::task::spawn_blocking(move || each_tick_fires_once_across_instances(&url, &path))
        .await
        .unwrap();
    database.remove().await;
}

/// Writes schedule `id` as if the servers had been down since its tick
/// `next_fire_at` fell: resumed, due then.
fn due_since(db: &str, id: &str, next_fire_at: i64) {
    use agentloop_storage::{SchedulesStore, SqliteStore};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = SqliteStore::open(db).await.unwrap();
        let mut schedule = store.get_schedule(id).await.unwrap();
        schedule.paused = false;
        schedule.next_fire_at = next_fire_at;
        store.update_schedule(&schedule).await.unwrap();
        store.close().await;
    });
}

fn now_ms() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// The missed-tick policy after downtime: of the ticks that fell while no
/// server ran, the latest fires once when it is at most 15 minutes old
/// (the older ones counted as passed over); a latest tick older than that
/// fires no run and says `missed`. Either way the schedule goes on from
/// its first tick after now.
#[test]
fn after_downtime_the_latest_missed_tick_fires_once_within_the_grace_window() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = script(dir.path());
    let ada = create_user(&db, "ada");
    let server = serve(&db, &script, "before");
    let address = server.address.clone();
    let project_id = project(&address, &ada, &dir.path().join("repo"), json!({}));
    let mut tasks = Vec::new();
    for title in ["every minute", "daily"] {
        let (status, task) = http(
            &address,
            &ada,
            "POST",
            &format!("/api/projects/{project_id}/tasks"),
            Some(json!({ "title": title })),
        );
        assert_eq!(status, 201, "{task}");
        tasks.push(task["id"].as_str().unwrap().to_owned());
    }
    // A tick of the daily schedule half an hour ago, at its minute in
    // Kolkata (UTC+05:30).
    let half_hour_ago = now_ms() / 1000 - 1800;
    let local = half_hour_ago + 19_800;
    let daily_tick = (half_hour_ago - half_hour_ago % 60) * 1000;
    let daily_cron = format!("0 {} {} * * *", (local / 60) % 60, (local / 3600) % 24);
    let mut ids = Vec::new();
    for (task_id, cron, zone) in [
        (&tasks[0], "* * * * *", "UTC"),
        (&tasks[1], daily_cron.as_str(), "Asia/Kolkata"),
    ] {
        let (status, created) = http(
            &address,
            &ada,
            "POST",
            &format!("/api/projects/{project_id}/schedules"),
            Some(json!({ "task_id": task_id, "cron": cron, "time_zone": zone,
                         "agent": "planification", "paused": true })),
        );
        assert_eq!(status, 201, "{created}");
        ids.push(created["id"].as_str().unwrap().to_owned());
    }
    drop(server);

    // Down for five minutes of the every-minute schedule, and since
    // before the daily one's tick.
    let now = now_ms();
    let minute = now - now % 60_000;
    due_since(&db, &ids[0], minute - 5 * 60_000);
    due_since(&db, &ids[1], daily_tick);
    let server = serve(&db, &script, "after");
    let address = server.address.as_str();

    let fires = |id: &str| -> Vec<Value> {
        let (status, audit) = http(
            address,
            &ada,
            "GET",
            &format!("/api/audit?project_id={project_id}&limit=1000"),
            None,
        );
        assert_eq!(status, 200, "{audit}");
        audit["entries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["action"] == "schedule.fire" && e["target"] == id)
            .cloned()
            .collect()
    };
    let first = until("the every-minute schedule fired", || {
        fires(&ids[0]).first().cloned()
    });
    assert_eq!(first["detail"]["outcome"], "started", "{first}");
    let missed = first["detail"]["missed"].as_i64().unwrap();
    assert!((5..=6).contains(&missed), "{first}");
    let tick = first["detail"]["tick_at"].as_i64().unwrap();
    assert_eq!(tick % 60_000, 0, "{first}");
    assert!(tick >= minute, "the latest tick fired: {first}");
    // One run for the ticks missed (a later minute may have started
    // another since).
    let runs = runs_of(address, &ada, &tasks[0]);
    assert_eq!(runs[0]["id"], first["detail"]["agent_run_id"], "{runs:?}");
    assert!(fires(&ids[0]).len() <= 2);

    let late = until("the daily schedule's tick was handled", || {
        fires(&ids[1]).first().cloned()
    });
    assert_eq!(late["detail"]["outcome"], "missed", "{late}");
    assert_eq!(late["detail"]["tick_at"], daily_tick, "{late}");
    assert!(runs_of(address, &ada, &tasks[1]).is_empty());
    let shown = schedule(address, &ada, &ids[1]);
    assert_eq!(shown["last_outcome"]["outcome"], "missed", "{shown}");
    assert!(
        shown["last_outcome"]["reason"]
            .as_str()
            .unwrap()
            .contains("grace window"),
        "{shown}"
    );
    assert!(shown["next_fire_at"].is_string(), "{shown}");
    next_tick_is_a_day_later(&db, &ids[1], daily_tick);
}

/// The daily schedule's next tick is the same minute a day later.
fn next_tick_is_a_day_later(db: &str, id: &str, tick: i64) {
    use agentloop_storage::{SchedulesStore, SqliteStore};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = SqliteStore::open(db).await.unwrap();
        let schedule = store.get_schedule(id).await.unwrap();
        assert_eq!(schedule.next_fire_at, tick + 86_400_000);
        store.close().await;
    });
}
