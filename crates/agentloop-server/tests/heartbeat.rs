//! One heartbeat renews the leases of every run an instance executes and
//! acts on each run alone: a run cancelled in the store (as another
//! instance's cancel does) ends `cancelled`, a run whose lease another
//! worker took stops without writing its end, and the others go on with
//! their leases renewed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use agentloop_engine::scripted::ScriptedTurn;
use agentloop_storage::model::{AgentRunStatus, now_millis};
use common::gated::{GatedProvider, assert_ended, follow_until, start_run};
use common::{TestServer, config, start_with};
use serde_json::json;

/// Waits for `check` to hold, failing after `limit`.
async fn until(limit: Duration, what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check().await {
        assert!(Instant::now() < deadline, "{what} within {limit:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn lease(server: &TestServer, run_id: &str) -> (Option<String>, Option<i64>) {
    let record = server.store.get_run(run_id).await.unwrap();
    (record.lease_owner, record.lease_expires_at)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_heartbeat_cancels_stops_and_renews_each_run_alone() {
    let (_dir, store) = common::sqlite().await;
    let provider = GatedProvider::new([
        ScriptedTurn::new().text("first answer"),
        ScriptedTurn::new().text("second answer"),
        ScriptedTurn::new().text("third answer"),
    ]);
    let server = start_with(store.clone(), config(provider.clone())).await;
    let mut runs = Vec::new();
    let mut followers = Vec::new();
    let (project_id, first_task) = server.project_and_task().await;
    for n in 0..3 {
        let task_id = if n == 0 {
            first_task.clone()
        } else {
            let (status, task) = server
                .send(
                    "POST",
                    &format!("/api/projects/{project_id}/tasks"),
                    json!({ "title": format!("task {n}") }),
                )
                .await;
            assert_eq!(status, 201, "{task}");
            task["id"].as_str().unwrap().to_owned()
        };
        let run_id = start_run(&server, &task_id, "planification").await;
        followers.push(follow_until(&server, &run_id, "first_chunk").await);
        runs.push((task_id, run_id));
    }
    let [(_, cancelled), (_, taken), (kept_task, kept)] = runs.clone().try_into().unwrap();
    assert_eq!(server.state.heartbeat.len(), 3);
    let owner = server.state.config.instance_id.clone();

    // Another instance cancels one run: it only ends the record.
    assert!(
        store
            .finish_agent_run(&cancelled, AgentRunStatus::Cancelled, now_millis(), None)
            .await
            .unwrap()
    );
    // Another worker takes the lease of the second.
    let far = now_millis() + 3_600_000;
    assert!(
        store
            .acquire_lease(&taken, "thief", far, far + 60_000)
            .await
            .unwrap()
    );

    followers[0].read_to_end(Duration::from_secs(2)).await;
    assert_ended(&server, &cancelled, &followers[0], "cancelled").await;
    until(Duration::from_secs(2), "both runs stop here", async || {
        server.state.local_run(&taken).is_none() && server.state.local_run(&cancelled).is_none()
    })
    .await;
    assert_eq!(
        store.get_agent_run(&taken).await.unwrap().status,
        AgentRunStatus::Running
    );
    assert_eq!(lease(&server, &taken).await.0.as_deref(), Some("thief"));
    let logged = store.list_events(&taken, None, 1000).await.unwrap();
    assert!(
        logged.iter().all(|e| e.kind.name() != "finished"),
        "a run whose lease was taken logs no end"
    );

    // The third goes on, its lease renewed by the heartbeat.
    assert!(server.state.local_run(&kept).is_some());
    assert_eq!(server.state.heartbeat.len(), 1);
    let (holder, first) = lease(&server, &kept).await;
    assert_eq!(holder.as_deref(), Some(owner.as_str()));
    until(
        Duration::from_secs(2),
        "the kept run's lease renewed",
        async || lease(&server, &kept).await.1 > first,
    )
    .await;
    provider.open();
    let settled = server.settle(&kept_task, 1).await;
    assert_eq!(settled[0]["status"], "completed", "{settled:?}");
    assert!(server.state.heartbeat.is_empty());
    server.stop().await;
}
