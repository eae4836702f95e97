//! What the store must hold once the soak is over: each run a user followed
//! has one gapless log whose seqs are exactly those its followers saw, ends
//! with one terminal event, and its agent run and run record agree on its
//! end with the lease given up; no run is left running or waiting.

use sqlx::PgPool;
use sqlx::Row;

use super::stats::Stats;
use super::user::SeenRun;

/// Checks every run in `seen` against the store; each problem is a
/// finding. Returns how many runs were checked and how many events their
/// followers saw.
pub async fn check_runs(db: &PgPool, seen: &[SeenRun], stats: &Stats) -> (usize, usize) {
    let mut events = 0;
    for run in seen {
        events += run.seqs.len();
        if let Err(problem) = check_run(db, run).await {
            stats.finding(format!("run {}: {problem}", run.run_id));
        }
    }
    (seen.len(), events)
}

async fn check_run(db: &PgPool, run: &SeenRun) -> Result<(), String> {
    let id = run.run_id.as_str();
    let log: Vec<(i64, String)> =
        sqlx::query_as("SELECT seq, body FROM run_events WHERE run_id = $1 ORDER BY seq")
            .bind(id)
            .fetch_all(db)
            .await
            .map_err(|e| e.to_string())?;
    let stored: Vec<u64> = log.iter().map(|(seq, _)| *seq as u64).collect();
    if stored != (0..stored.len() as u64).collect::<Vec<_>>() {
        return Err(format!("its log has gaps: {stored:?}"));
    }
    if run.followed_to_end && run.seqs != stored {
        let mut sorted = run.seqs.clone();
        sorted.sort_unstable();
        sorted.dedup();
        let lost: Vec<&u64> = stored.iter().filter(|s| !run.seqs.contains(s)).collect();
        let duplicated = run.seqs.len() - sorted.len();
        return Err(format!(
            "followers saw {:?}, the log holds {stored:?} (lost {lost:?}, {duplicated} duplicated)",
            run.seqs
        ));
    }
    let ends: Vec<String> = log
        .iter()
        .filter_map(|(_, body)| serde_json::from_str::<serde_json::Value>(body).ok())
        .filter(|event| event["type"] == "finished" && event.get("path").is_none())
        .map(|event| {
            event["result"]["status"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    let last_is_end = log.last().is_some_and(|(_, body)| {
        serde_json::from_str::<serde_json::Value>(body)
            .is_ok_and(|event| event["type"] == "finished" && event.get("path").is_none())
    });
    let final_ends = ends.iter().filter(|status| *status != "suspended").count();
    if !last_is_end || final_ends != 1 {
        return Err(format!("its log does not end once: root ends {ends:?}"));
    }
    let agent_run = sqlx::query("SELECT status FROM agent_runs WHERE id = $1")
        .bind(id)
        .fetch_one(db)
        .await
        .map_err(|e| e.to_string())?;
    let status: String = agent_run.get("status");
    if !run.ends.contains(&status.as_str()) {
        return Err(format!("it ended {status}, expected one of {:?}", run.ends));
    }
    let record = sqlx::query("SELECT status, lease_owner FROM runs WHERE id = $1")
        .bind(id)
        .fetch_one(db)
        .await
        .map_err(|e| e.to_string())?;
    let record_status: String = record.get("status");
    let lease: Option<String> = record.get("lease_owner");
    let agrees = match status.as_str() {
        "completed" => record_status == "completed",
        "cancelled" => record_status == "cancelled",
        _ => record_status == "failed",
    };
    if !agrees || lease.is_some() {
        return Err(format!(
            "its agent run ended {status}, its record is {record_status} with lease {lease:?}"
        ));
    }
    Ok(())
}

/// Agent runs still running or waiting in the store.
pub async fn active_runs(db: &PgPool) -> Result<Vec<(String, String)>, sqlx::Error> {
    sqlx::query_as("SELECT id, status FROM agent_runs WHERE status IN ('running', 'waiting')")
        .fetch_all(db)
        .await
}

/// The stored status of each run in `seen`, in order (`""` for a run the
/// store does not hold, which `check_runs` reports).
pub async fn statuses(db: &PgPool, seen: &[SeenRun]) -> Vec<String> {
    let ids: Vec<&str> = seen.iter().map(|run| run.run_id.as_str()).collect();
    let stored: std::collections::HashMap<String, String> =
        sqlx::query_as("SELECT id, status FROM agent_runs WHERE id = ANY($1)")
            .bind(&ids)
            .fetch_all(db)
            .await
            .unwrap()
            .into_iter()
            .collect();
    seen.iter()
        .map(|run| stored.get(&run.run_id).cloned().unwrap_or_default())
        .collect()
}
