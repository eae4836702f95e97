//! A soak of the whole HTTP API: `agentloop serve` on PostgreSQL, its model
//! an OpenAI-compatible mock on loopback, and simulated users each opening
//! a WebSocket for their notifications and then, until the time is up,
//! starting runs (followed over SSE to their end, some waiting for an
//! approval, some cancelled), writing documents, browsing, creating and
//! deleting projects and tasks, and sending requests that must be refused.
//!
//! It fails on any 5xx, any broken connection or stream, any status other
//! than the one a request must get, any event a follower lost or saw twice
//! (followers' seqs against the stored log), any run whose log, record and
//! agent run disagree on its end, any run status a user's WebSocket never
//! told, a panic in the server's log, or the server's memory growing after
//! its warm-up by more than [`MEMORY_GROWTH_ALLOWED`]. It prints latency
//! percentiles per route, the memory figures and the counts as markdown
//! rows.
//!
//! Bounded in time and count: `AGENTLOOP_SOAK_SECS` (default 60) seconds of
//! traffic from `AGENTLOOP_SOAK_USERS` (default 40) users, then each user
//! finishes the scenario it is in. The full soak (10 minutes, 200 users)
//! is `cargo xtask soak`. Needs `AGENTLOOP_TEST_POSTGRES_URL`; skipped
//! without it, except under `CI=true`, where that fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "soak/api.rs"]
mod api;
#[path = "soak/checks.rs"]
mod checks;
mod common;
#[path = "soak/follow.rs"]
mod follow;
#[path = "soak/model.rs"]
mod model;
#[path = "soak/stats.rs"]
mod stats;
#[path = "soak/user.rs"]
mod user;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::served::ScratchDatabase;
use common::{Killed, agentloop, create_user};
use stats::Stats;
use tokio::sync::watch;
use user::{Shared, User};

/// How long, after the traffic, runs' end notices are awaited.
const NOTICE_WAIT: Duration = Duration::from_secs(30);

/// How much the server's resident memory may grow from the end of its
/// warm-up to the end of the soak: a fraction of it, plus a fixed slack for
/// caches that fill up to their bounds.
const MEMORY_GROWTH_ALLOWED: (f64, u64) = (0.25, 48 * 1024);

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .map(|v| v.parse().expect("a number"))
        .unwrap_or(default)
}

/// The served process, its address, and what its log showed.
struct Server {
    process: Killed,
    base: String,
    panics: Arc<Mutex<Vec<String>>>,
}

fn serve(db_url: &str, model_base: &str, root: &std::path::Path) -> Server {
    let mut child = agentloop()
        .args(["serve", "--db", db_url, "--bind", "127.0.0.1:0"])
        .args(["--provider", "openai-compatible", "--base-url", model_base])
        .args(["--model", "soak-plain", "--approvals", "ask"])
        .arg("--projects-root")
        .arg(root)
        .env("OPENAI_API_KEY", "soak")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let panics = Arc::new(Mutex::new(Vec::new()));
    let seen = panics.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { return };
            if let Some(rest) = line.split("serving on http://").nth(1) {
                let _ = tx.send(rest.split_whitespace().next().unwrap_or("").to_owned());
            }
            if line.contains("panicked") {
                seen.lock().unwrap().push(line.clone());
            }
            if line.contains("ERROR") || line.contains("panicked") {
                eprintln!("[server] {line}");
            }
        }
    });
    let address = rx.recv_timeout(Duration::from_secs(60)).unwrap();
    Server {
        process: Killed(child),
        base: format!("http://{address}"),
        panics,
    }
}

/// Resident memory of process `pid` in KiB.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

fn median(samples: &[u64]) -> u64 {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    sorted.get(sorted.len() / 2).copied().unwrap_or(0)
}

/// Users created with the CLI, a few at a time: their tokens.
fn create_users(db_url: &str, count: u64) -> Vec<String> {
    let names: Vec<String> = (0..count).map(|i| format!("soak-{i}")).collect();
    let mut tokens = Vec::new();
    for batch in names.chunks(8) {
        let made: Vec<_> = batch
            .iter()
            .map(|name| {
                let (db, name) = (db_url.to_owned(), name.clone());
                std::thread::spawn(move || create_user(&db, &name))
            })
            .collect();
        tokens.extend(made.into_iter().map(|t| t.join().unwrap()));
    }
    tokens
}

#[test]
fn soak_of_the_http_api_on_postgres() {
    let Ok(admin_url) = std::env::var("AGENTLOOP_TEST_POSTGRES_URL") else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "the soak needs AGENTLOOP_TEST_POSTGRES_URL under CI"
        );
        eprintln!("skipped: AGENTLOOP_TEST_POSTGRES_URL is not set");
        return;
    };
    let seconds = setting("AGENTLOOP_SOAK_SECS", 60);
    let users = setting("AGENTLOOP_SOAK_USERS", 40);
    agentloop_providers::ensure_crypto_provider();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(soak(&admin_url, seconds, users));
}

async fn soak(admin_url: &str, seconds: u64, users: u64) {
    let database =
        ScratchDatabase::create(admin_url, &format!("agentloop_soak_{}", std::process::id())).await;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("projects");
    let (_model, model_base) = model::start().await;
    let server = serve(&database.url, &model_base, &root);
    let pid = server.process.0.id();
    let tokens = {
        let url = database.url.clone();
        tokio::task::spawn_blocking(move || create_users(&url, users))
            .await
            .unwrap()
    };
    let stats = Arc::new(Stats::default());
    let shared = Arc::new(Shared::default());
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(usize::MAX)
        .build()
        .unwrap();

    // Each user's notifications, read for the whole soak.
    let (stop_sockets, stopped) = watch::channel(false);
    let apis: Vec<api::Api> = tokens
        .into_iter()
        .map(|token| api::Api {
            base: server.base.clone(),
            token,
            http: http.clone(),
            stats: stats.clone(),
        })
        .collect();
    let told: Vec<follow::Told> = apis.iter().map(|_| Default::default()).collect();
    let sockets: Vec<_> = apis
        .iter()
        .zip(&told)
        .map(|(api, told)| {
            tokio::spawn(follow::notices(api.clone(), told.clone(), stopped.clone()))
        })
        .collect();

    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    let (stop_sampling, mut sampling_stopped) = watch::channel(false);
    let sampler = tokio::spawn(async move {
        let mut samples = Vec::new();
        loop {
            if let Some(kib) = rss_kib(pid) {
                samples.push((started.elapsed(), kib));
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = sampling_stopped.wait_for(|stop| *stop) => return samples,
            }
        }
    });
    let running: Vec<_> = apis
        .into_iter()
        .enumerate()
        .map(|(index, api)| {
            let (shared, root) = (shared.clone(), root.clone());
            tokio::spawn(async move {
                if let Some(user) = User::start(api, shared, index as u64, &root).await {
                    user.run_until(deadline).await;
                }
            })
        })
        .collect();
    for user in running {
        user.await.unwrap();
    }
    let traffic = started.elapsed();
    let _ = stop_sampling.send(true);
    let samples = sampler.await.unwrap();
    // The store against what the users saw.
    let db = sqlx::PgPool::connect(&database.url).await.unwrap();
    let seen = std::mem::take(&mut *shared.runs.lock().unwrap());
    // A run's owner is told of its end after its record and last event
    // are written (its lease is released first), so a run that ended as
    // the traffic stopped may not have been told yet: its notice is
    // awaited, within a bound, before the sockets close.
    let told_of = |run: &user::SeenRun, status: &str| {
        told[run.user as usize]
            .lock()
            .unwrap()
            .iter()
            .filter(|(id, s)| *id == run.run_id && s == status)
            .count()
    };
    let waiting_from = Instant::now();
    while waiting_from.elapsed() < NOTICE_WAIT {
        let statuses = checks::statuses(&db, &seen).await;
        if seen
            .iter()
            .zip(&statuses)
            .all(|(run, status)| told_of(run, status) > 0)
        {
            break;
        }
        // The notices arrive on the sockets' tasks and the statuses in the
        // store: both are polled, within the bound above.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = stop_sockets.send(true);
    let mut open = HashMap::new();
    for (index, socket) in sockets.into_iter().enumerate() {
        open.insert(index as u64, socket.await.unwrap());
    }

    let (checked, events) = checks::check_runs(&db, &seen, &stats).await;
    for (id, status) in checks::active_runs(&db).await.unwrap() {
        stats.finding(format!("run {id} is still {status} after the soak"));
    }
    let mut duplicated_notices = 0;
    let statuses = checks::statuses(&db, &seen).await;
    for (run, status) in seen.iter().zip(&statuses) {
        // A socket that broke was a finding already.
        if !open.get(&run.user).copied().unwrap_or(false) {
            continue;
        }
        let told = told_of(run, status);
        if told == 0 {
            stats.finding(format!(
                "the WebSocket of user {} never told run {} ended {status}",
                run.user, run.run_id
            ));
        }
        duplicated_notices += told.saturating_sub(1);
    }
    db.close().await;
    for panic in server.panics.lock().unwrap().iter() {
        stats.finding(format!("the server panicked: {panic}"));
    }

    // Memory after the warm-up (the first quarter) against the end.
    let warm_until = traffic / 4;
    let after_warm_up: Vec<u64> = samples
        .iter()
        .filter(|(at, _)| {
            *at >= warm_until && *at < warm_until + traffic / 10 + Duration::from_secs(1)
        })
        .map(|(_, kib)| *kib)
        .collect();
    let tail_from = traffic - traffic / 10 - Duration::from_secs(1);
    let at_end: Vec<u64> = samples
        .iter()
        .filter(|(at, _)| *at >= tail_from)
        .map(|(_, kib)| *kib)
        .collect();
    let (warm, end) = (median(&after_warm_up), median(&at_end));
    let peak = samples.iter().map(|(_, kib)| *kib).max().unwrap_or(0);
    let growth = end as f64 / warm.max(1) as f64 - 1.0;
    let allowed = warm as f64 * MEMORY_GROWTH_ALLOWED.0 + MEMORY_GROWTH_ALLOWED.1 as f64;
    if end as f64 - warm as f64 > allowed {
        stats.finding(format!(
            "the server's memory grew from {warm} KiB after its warm-up to {end} KiB"
        ));
    }

    let label = format!("soak: {users} users, {} s on PostgreSQL", traffic.as_secs());
    let requests = stats.requests();
    println!(
        "| {label} | requests answered | {requests} ({:.0}/s) |",
        requests as f64 / traffic.as_secs_f64()
    );
    println!("| {label} | answers by status | {:?} |", stats.statuses());
    println!(
        "| {label} | runs followed and checked against the store | {checked} ({events} events) |"
    );
    println!("| {label} | run status notices told twice on a WebSocket | {duplicated_notices} |");
    println!(
        "| {label} | server RSS after warm-up → at the end (peak) | {:.1} → {:.1} MiB ({:.1}), {:+.1}% |",
        warm as f64 / 1024.0,
        end as f64 / 1024.0,
        peak as f64 / 1024.0,
        growth * 100.0
    );
    for (route, count, [p50, p90, p99, max]) in stats.percentiles() {
        println!(
            "| {label} | `{route}` p50 / p90 / p99 / max ({count}) | {p50:.1} / {p90:.1} / {p99:.1} / {max:.1} ms |"
        );
    }
    let findings = stats.findings();
    println!("| {label} | findings | {} |", findings.len());

    drop(server);
    database.remove().await;
    assert!(
        findings.is_empty(),
        "{} findings, the first ones:\n{}",
        findings.len(),
        findings
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
