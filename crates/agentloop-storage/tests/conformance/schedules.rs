//! Schedules, and the one claim of each tick.

use std::sync::Arc;

use agentloop_storage::model::AgentType;
use agentloop_storage::schedules::{Schedule, TickOutcome, TickOutcomeKind};
use agentloop_storage::{StorageError, Store};

use super::{project, task};

fn schedule(id: &str, task_id: &str, next_fire_at: i64, created_at: i64) -> Schedule {
    Schedule {
        id: id.into(),
        project_id: "p".into(),
        task_id: task_id.into(),
        cron: "*/5 * * * * *".into(),
        time_zone: "Europe/Paris".into(),
        agent: AgentType::Review,
        prompt: Some("look again — «nightly»".into()),
        paused: false,
        next_fire_at,
        last_fired_at: None,
        last_outcome: None,
        created_by: "u1".into(),
        created_at,
        updated_at: created_at,
    }
}

pub async fn schedules_claim_each_tick_once(store: Arc<dyn Store>) {
    store.create_project(&project("p", 1)).await.unwrap();
    store.create_task(&task("t", "p")).await.unwrap();
    store.create_task(&task("t2", "p")).await.unwrap();

    let a = schedule("s1", "t", 5_000, 10);
    store.create_schedule(&a).await.unwrap();
    assert!(matches!(
        store.create_schedule(&a).await,
        Err(StorageError::AlreadyExists {
            kind: "schedule",
            ..
        })
    ));
    assert!(matches!(
        store.create_schedule(&schedule("s9", "nope", 1, 1)).await,
        Err(StorageError::Invalid(_))
    ));
    let mut b = schedule("s2", "t2", 3_000, 5);
    b.prompt = None;
    b.agent = AgentType::Implementation;
    store.create_schedule(&b).await.unwrap();
    assert_eq!(store.get_schedule("s1").await.unwrap(), a);
    assert!(matches!(
        store.get_schedule("s9").await,
        Err(StorageError::NotFound {
            kind: "schedule",
            ..
        })
    ));
    let ids: Vec<String> = store
        .list_schedules("p")
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(ids, ["s2", "s1"]);
    assert!(store.list_schedules("q").await.unwrap().is_empty());

    // Due: earliest first; the next tick is the earliest of those running.
    assert_eq!(store.next_schedule_tick().await.unwrap(), Some(3_000));
    assert!(store.due_schedules(2_999, 10).await.unwrap().is_empty());
    let due = store.due_schedules(5_000, 10).await.unwrap();
    assert_eq!(
        due.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
        ["s2", "s1"]
    );
    assert_eq!(store.due_schedules(5_000, 1).await.unwrap().len(), 1);

    // A paused schedule is never due and cannot be claimed.
    b.paused = true;
    b.updated_at = 20;
    store.update_schedule(&b).await.unwrap();
    assert_eq!(store.next_schedule_tick().await.unwrap(), Some(5_000));
    assert_eq!(store.due_schedules(9_000, 10).await.unwrap().len(), 1);
    assert!(
        !store
            .claim_schedule_tick("s2", 3_000, 4_000, 3_000)
            .await
            .unwrap()
    );

    // Many claimers race one tick: exactly one wins.
    let claimers: Vec<_> = (0..16)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .claim_schedule_tick("s1", 5_000, 10_000, 5_000)
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut won = 0;
    for claimer in claimers {
        if claimer.await.unwrap() {
            won += 1;
        }
    }
    assert_eq!(won, 1);
    let claimed = store.get_schedule("s1").await.unwrap();
    assert_eq!(claimed.next_fire_at, 10_000);
    assert_eq!(claimed.last_fired_at, Some(5_000));
    // The same tick again, or a stale one: nobody wins.
    assert!(
        !store
            .claim_schedule_tick("s1", 5_000, 10_000, 5_000)
            .await
            .unwrap()
    );
    assert!(
        !store
            .claim_schedule_tick("nope", 5_000, 10_000, 5_000)
            .await
            .unwrap()
    );

    let outcome = TickOutcome {
        tick_at: 5_000,
        at: 5_010,
        kind: TickOutcomeKind::Skipped,
        agent_run_id: None,
        reason: Some("agent run r1 is still running".into()),
        missed: 2,
    };
    store.record_tick_outcome("s1", &outcome).await.unwrap();
    assert_eq!(
        store.get_schedule("s1").await.unwrap().last_outcome,
        Some(outcome.clone())
    );
    assert!(matches!(
        store.record_tick_outcome("s9", &outcome).await,
        Err(StorageError::NotFound { .. })
    ));

    // An update keeps what the ticks wrote.
    let mut changed = store.get_schedule("s1").await.unwrap();
    changed.cron = "0 0 * * *".into();
    changed.time_zone = "UTC".into();
    changed.prompt = None;
    changed.next_fire_at = 86_400_000;
    changed.updated_at = 30;
    store.update_schedule(&changed).await.unwrap();
    let read = store.get_schedule("s1").await.unwrap();
    assert_eq!(read, changed);
    assert_eq!(read.last_outcome, Some(outcome));
    assert!(matches!(
        store.update_schedule(&schedule("s9", "t", 1, 1)).await,
        Err(StorageError::NotFound { .. })
    ));

    // Deleting; a task's deletion takes its schedules along.
    store.delete_schedule("s1").await.unwrap();
    assert!(matches!(
        store.delete_schedule("s1").await,
        Err(StorageError::NotFound { .. })
    ));
    store.delete_task("t2").await.unwrap();
    assert!(store.list_schedules("p").await.unwrap().is_empty());
    store
        .create_schedule(&schedule("s3", "t", 1, 1))
        .await
        .unwrap();
    store.delete_project("p").await.unwrap();
    assert!(matches!(
        store.get_schedule("s3").await,
        Err(StorageError::NotFound { .. })
    ));
    assert_eq!(store.next_schedule_tick().await.unwrap(), None);
}

/// The schedule an agent run spends for is written with its start, read
/// back by run and as the task's latest, and forgotten with the schedule.
pub async fn agent_runs_remember_their_schedule(store: Arc<dyn Store>) {
    store.create_project(&project("p", 1)).await.unwrap();
    store.create_task(&task("t", "p")).await.unwrap();
    store
        .create_schedule(&schedule("s1", "t", 5_000, 10))
        .await
        .unwrap();
    assert_eq!(store.latest_run_schedule("t").await.unwrap(), None);

    let mut first = super::agent_run_start("r1", "t", "p", "me");
    first.agent_run.created_at = 20;
    first.schedule_id = Some("s1".into());
    store.start_agent_run(&first).await.unwrap();
    assert_eq!(
        store.schedule_of_agent_run("r1").await.unwrap().as_deref(),
        Some("s1")
    );
    assert_eq!(
        store.latest_run_schedule("t").await.unwrap().as_deref(),
        Some("s1")
    );
    // A refused start records no schedule.
    let mut refused = super::agent_run_start("r2", "t", "p", "me");
    refused.schedule_id = Some("s1".into());
    assert!(store.start_agent_run(&refused).await.is_err());
    assert_eq!(store.schedule_of_agent_run("r2").await.unwrap(), None);

    let ended = store
        .finish_agent_run(
            "r1",
            agentloop_storage::model::AgentRunStatus::Completed,
            30,
            None,
        )
        .await
        .unwrap();
    assert!(ended);
    // A person's run after it spends for no schedule.
    let mut person = super::agent_run_start("r3", "t", "p", "me");
    person.agent_run.created_at = 40;
    store.start_agent_run(&person).await.unwrap();
    assert_eq!(store.schedule_of_agent_run("r3").await.unwrap(), None);
    assert_eq!(store.latest_run_schedule("t").await.unwrap(), None);

    store.delete_schedule("s1").await.unwrap();
    assert_eq!(store.schedule_of_agent_run("r1").await.unwrap(), None);
}
