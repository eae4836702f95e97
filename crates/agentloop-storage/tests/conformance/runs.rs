//! Runs with their leases and event logs.

use std::sync::Arc;

use agentloop_storage::model::{AgentRunStatus, RunStatus};
use agentloop_storage::{StorageError, Store};
use agentloop_types::{LoopEvent, RunState};

use super::cases::{event, run_record};
use super::*;

pub async fn runs_leases_and_events(store: Arc<dyn Store>) {
    project_with_chat(&*store).await;
    let mut r = run_record("r1", Some("c"));
    store.create_run(&r).await.unwrap();
    store.create_run(&run_record("r0", None)).await.unwrap();
    assert!(matches!(
        store.create_run(&r).await,
        Err(StorageError::AlreadyExists { .. })
    ));
    assert_eq!(store.get_run("r1").await.unwrap(), r);

    let (call, _) = tool_exchange("x", "call-9");
    r.status = RunStatus::Suspended;
    r.state = Some(RunState::new("r1", vec![call.clone()]));
    r.pending_tool_call = call.tool_uses().next().cloned();
    r.result = Some(serde_json::json!({ "status": "suspended", "n": 1.5 }));
    r.updated_at = 7;
    store.update_run(&r).await.unwrap();
    assert_eq!(store.get_run("r1").await.unwrap(), r);
    assert_eq!(store.list_runs("c").await.unwrap(), vec![r.clone()]);

    // r1 is suspended, r0 pending without a lease.
    let claimable: Vec<String> = store
        .list_claimable_runs(100, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(claimable, ["r0"]);
    let mut r0 = store.get_run("r0").await.unwrap();
    r0.status = RunStatus::Running;
    store.update_run(&r0).await.unwrap();
    assert!(
        store
            .acquire_lease("r0", "worker-a", 100, 200)
            .await
            .unwrap()
    );
    assert!(store.list_claimable_runs(150, 10).await.unwrap().is_empty());
    assert_eq!(store.list_claimable_runs(200, 10).await.unwrap().len(), 1);
    assert!(store.list_claimable_runs(200, 0).await.unwrap().is_empty());

    assert!(
        store
            .acquire_lease("r1", "worker-a", 100, 200)
            .await
            .unwrap()
    );
    assert!(
        !store
            .acquire_lease("r1", "worker-b", 150, 250)
            .await
            .unwrap()
    );
    assert!(
        store
            .acquire_lease("r1", "worker-a", 150, 300)
            .await
            .unwrap()
    );
    assert!(!store.release_lease("r1", "worker-b").await.unwrap());
    assert!(
        store
            .acquire_lease("r1", "worker-b", 300, 400)
            .await
            .unwrap()
    );
    let leased = store.get_run("r1").await.unwrap();
    assert_eq!(
        (leased.lease_owner.as_deref(), leased.lease_expires_at),
        (Some("worker-b"), Some(400))
    );
    // Updating the run leaves the lease alone.
    store.update_run(&r).await.unwrap();
    assert_eq!(
        store.get_run("r1").await.unwrap().lease_owner.as_deref(),
        Some("worker-b")
    );
    assert!(store.release_lease("r1", "worker-b").await.unwrap());
    assert_eq!(store.get_run("r1").await.unwrap().lease_owner, None);
    assert!(matches!(
        store.acquire_lease("nope", "a", 0, 1).await,
        Err(StorageError::NotFound { .. })
    ));

    let events: Vec<LoopEvent> = (0..10).map(event).collect();
    store.append_events("r1", &events[..5]).await.unwrap();
    store.append_events("r1", &events[5..]).await.unwrap();
    // A batch with a seq already stored is refused whole.
    assert!(matches!(
        store.append_events("r1", &[event(10), event(4)]).await,
        Err(StorageError::AlreadyExists { .. })
    ));
    assert_eq!(store.list_events("r1", None, 100).await.unwrap(), events);
    assert_eq!(
        store.list_events("r1", Some(6), 2).await.unwrap(),
        events[7..9].to_vec()
    );
    assert!(store.list_events("r0", None, 10).await.unwrap().is_empty());
    assert!(store.append_events("nope", &[event(0)]).await.is_err());
}

pub async fn lease_renewals(store: Arc<dyn Store>) {
    use agentloop_storage::model::LeaseRenewal;
    project_with_chat(&*store).await;
    for id in ["a", "b", "c", "d", "e"] {
        store.create_run(&run_record(id, Some("c"))).await.unwrap();
        assert!(store.acquire_lease(id, "me", 100, 200).await.unwrap());
    }
    // Agent runs share their record's id; each task has one running.
    for id in ["a", "b", "c", "d"] {
        let task_id = format!("t-{id}");
        store.create_task(&task(&task_id, "p")).await.unwrap();
        store
            .create_agent_run(&agent_run(id, &task_id, AgentRunStatus::Running, 1))
            .await
            .unwrap();
    }
    // Another instance cancels b; c's lease expires and another owner
    // takes it; d's lease is released; e has no agent run.
    assert!(
        store
            .finish_agent_run("b", AgentRunStatus::Cancelled, 150, None)
            .await
            .unwrap()
    );
    assert!(store.acquire_lease("c", "other", 250, 400).await.unwrap());
    assert!(store.release_lease("d", "me").await.unwrap());

    let ids: Vec<String> = ["a", "b", "c", "d", "e", "nope"]
        .into_iter()
        .map(String::from)
        .collect();
    // a's lease expired at 200 but nobody took it: still ours.
    let renewals = store.renew_leases("me", &ids, 500).await.unwrap();
    assert_eq!(
        renewals,
        [
            LeaseRenewal::Renewed,
            LeaseRenewal::Renewed,
            LeaseRenewal::Lost,
            LeaseRenewal::Lost,
            LeaseRenewal::Renewed,
            LeaseRenewal::Lost,
        ]
    );
    // The agent runs' statuses are the product store's to read: b was
    // cancelled elsewhere, e and "nope" have none.
    assert_eq!(
        store.agent_run_statuses(&ids).await.unwrap(),
        [
            Some(AgentRunStatus::Running),
            Some(AgentRunStatus::Cancelled),
            Some(AgentRunStatus::Running),
            Some(AgentRunStatus::Running),
            None,
            None,
        ]
    );
    assert_eq!(lease_of(&*store, "a").await, (Some("me".into()), Some(500)));
    assert_eq!(lease_of(&*store, "e").await, (Some("me".into()), Some(500)));
    // Neither a lease of another owner nor a released one is taken.
    assert_eq!(
        lease_of(&*store, "c").await,
        (Some("other".into()), Some(400))
    );
    assert_eq!(lease_of(&*store, "d").await, (None, None));
    // The other owner renews its own and finds the rest lost.
    assert_eq!(
        store.renew_leases("other", &ids[..3], 600).await.unwrap(),
        [
            LeaseRenewal::Lost,
            LeaseRenewal::Lost,
            LeaseRenewal::Renewed,
        ]
    );
    assert!(store.renew_leases("me", &[], 700).await.unwrap().is_empty());

    // More runs than one statement renews: the answers stay in order.
    let many: Vec<String> = (0..1_100).map(|i| format!("m{i:04}")).collect();
    for (i, id) in many.iter().enumerate() {
        store.create_run(&run_record(id, Some("c"))).await.unwrap();
        let owner = if i % 3 == 0 { "other" } else { "me" };
        assert!(store.acquire_lease(id, owner, 100, 200).await.unwrap());
    }
    let renewals = store.renew_leases("me", &many, 800).await.unwrap();
    assert_eq!(renewals.len(), many.len());
    for (i, renewal) in renewals.iter().enumerate() {
        let expected = if i % 3 == 0 {
            LeaseRenewal::Lost
        } else {
            LeaseRenewal::Renewed
        };
        assert_eq!(*renewal, expected, "run {}", many[i]);
    }
    // Statuses are read in batches too, in the order asked.
    let mut asked = many.clone();
    asked.push("a".to_owned());
    let statuses = store.agent_run_statuses(&asked).await.unwrap();
    assert_eq!(statuses.len(), asked.len());
    assert!(statuses[..many.len()].iter().all(Option::is_none));
    assert_eq!(statuses.last(), Some(&Some(AgentRunStatus::Running)));
    assert_eq!(
        lease_of(&*store, "m1099").await,
        (Some("me".into()), Some(800))
    );
    assert_eq!(
        lease_of(&*store, "m1098").await,
        (Some("other".into()), Some(200))
    );
}

async fn lease_of(store: &dyn Store, id: &str) -> (Option<String>, Option<i64>) {
    let run = store.get_run(id).await.unwrap();
    (run.lease_owner, run.lease_expires_at)
}

/// A root `finished` event reads back as it was appended, its whole
/// history included, whether the history is the chat's (the SQL backends
/// then store it once, in the messages table) or not.
pub async fn finished_events_read_back_whole(store: Arc<dyn Store>) {
    use agentloop_types::{EventKind, FinishedEvent, LoopResult, LoopStatus, Message, RunPath};
    project_with_chat(&*store).await;
    let history = vec![
        Message::user_text("u1", "Read the key."),
        Message::assistant_text("a1", "The key says hello, 世界."),
    ];
    for message in &history {
        store.save_message("c", message).await.unwrap();
    }
    let finished = |seq: u64, messages: Vec<Message>, path: RunPath| LoopEvent {
        seq,
        path,
        kind: EventKind::Finished(FinishedEvent {
            result: Box::new(LoopResult {
                status: LoopStatus::Complete {
                    return_value: None,
                    output: None,
                },
                messages: messages.into(),
                tokens: Default::default(),
                stop: None,
            }),
        }),
    };
    let mut other = history.clone();
    other[1] = Message::assistant_text("a1", "Not what the chat holds.");
    let nested = RunPath::root().child("call-1");
    let events = vec![
        event(0),
        finished(1, history.clone(), nested),
        finished(2, other, RunPath::root()),
        finished(3, history.clone(), RunPath::root()),
    ];
    store
        .create_run(&run_record("r1", Some("c")))
        .await
        .unwrap();
    store.append_events("r1", &events).await.unwrap();
    assert_eq!(store.list_events("r1", None, 100).await.unwrap(), events);
    assert_eq!(
        store.list_events("r1", Some(2), 100).await.unwrap(),
        events[3..]
    );
    // A run outside any chat keeps its history in the event.
    store.create_run(&run_record("r0", None)).await.unwrap();
    let alone = vec![finished(0, history, RunPath::root())];
    store.append_events("r0", &alone).await.unwrap();
    assert_eq!(store.list_events("r0", None, 100).await.unwrap(), alone);
}
