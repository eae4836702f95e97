//! A task's chain of agent runs: begun by a person's start, written with
//! it (and with the start's audit entry), ended at a bound.

use std::sync::Arc;

use agentloop_storage::model::{AuditEntry, AuditFilter, ChainEnd, EndReason, TaskChain};
use agentloop_storage::{StorageError, Store};

use super::*;

/// Agent run `id` of task `t` created at `at`; a person's start (it
/// begins a chain and has an audit entry `{id}-audit`) when `person`.
fn start_at(id: &str, at: i64, person: bool) -> AgentRunStart {
    let mut start = agent_run_start(id, "t", "p", "me");
    start.agent_run.created_at = at;
    start.begins_chain = person;
    start.audit = person.then(|| AuditEntry {
        id: format!("{id}-audit"),
        at,
        user_id: Some("u".into()),
        action: "run.start".into(),
        project_id: Some("p".into()),
        target: Some(id.into()),
        address: Some("127.0.0.1".into()),
        detail: serde_json::json!({ "route": "/api/tasks/{task_id}/agent-runs" }),
    });
    start
}

async fn end(store: &dyn Store, id: &str, at: i64) {
    let ended = store
        .finish_agent_run(
            id,
            AgentRunStatus::Completed,
            at,
            Some(&EndReason::new("completed", "done")),
        )
        .await
        .unwrap();
    assert!(ended);
}

async fn audit_ids(store: &dyn Store) -> Vec<String> {
    let filter = AuditFilter {
        limit: 100,
        ..AuditFilter::default()
    };
    let entries = store.list_audit(&filter).await.unwrap();
    entries.into_iter().map(|e| e.id).collect()
}

pub async fn task_chains(store: Arc<dyn Store>) {
    store.create_project(&project("p", 1)).await.unwrap();
    store.create_task(&task("t", "p")).await.unwrap();
    store.create_task(&task("other", "p")).await.unwrap();
    assert_eq!(
        store.get_task("t").await.unwrap().chain,
        TaskChain::default()
    );
    // A person's start begins a chain and records its entry, in one write.
    store
        .start_agent_run(&start_at("r1", 40, true))
        .await
        .unwrap();
    assert_eq!(
        store.get_task("t").await.unwrap().chain,
        TaskChain {
            started_at: Some(40),
            end: None
        }
    );
    assert_eq!(audit_ids(&*store).await, ["r1-audit"]);
    // A refused start (the task's run is still active) begins nothing and
    // records nothing.
    assert!(matches!(
        store.start_agent_run(&start_at("r2", 45, true)).await,
        Err(StorageError::ActiveAgentRunExists { .. })
    ));
    assert_eq!(
        store.get_task("t").await.unwrap().chain.started_at,
        Some(40)
    );
    assert_eq!(audit_ids(&*store).await, ["r1-audit"]);

    let bound = ChainEnd {
        reason: "max_runs".into(),
        message: "the chain reached 20 agent runs".into(),
        agent_run_id: "r20".into(),
        runs: 20,
        tokens: 12_345,
        cost_micro_usd: 250_000,
        at: 50,
    };
    // The chain's next link continues it.
    end(&*store, "r1", 46).await;
    store
        .start_agent_run(&start_at("r3", 47, false))
        .await
        .unwrap();
    assert_eq!(
        store.get_task("t").await.unwrap().chain.started_at,
        Some(40)
    );
    store.end_task_chain("t", &bound).await.unwrap();
    let chain = store.get_task("t").await.unwrap().chain;
    assert_eq!(chain.started_at, Some(40));
    assert_eq!(chain.end, Some(bound.clone()));
    let listed = store.list_tasks("p").await.unwrap();
    assert_eq!(listed.iter().find(|t| t.id == "t").unwrap().chain, chain);
    assert_eq!(
        store.get_task("other").await.unwrap().chain,
        TaskChain::default()
    );
    // A person's next start begins a new chain, clearing the end before.
    end(&*store, "r3", 55).await;
    store
        .start_agent_run(&start_at("r4", 60, true))
        .await
        .unwrap();
    assert_eq!(
        store.get_task("t").await.unwrap().chain,
        TaskChain {
            started_at: Some(60),
            end: None
        }
    );
    assert_eq!(audit_ids(&*store).await, ["r1-audit", "r4-audit"]);
    assert!(matches!(
        store.end_task_chain("ghost", &bound).await,
        Err(StorageError::NotFound { .. })
    ));
}
