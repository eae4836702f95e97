//! Concurrent writers.

use std::collections::HashSet;
use std::sync::Arc;

use agentloop_storage::model::AgentRunStatus;
use agentloop_storage::{StorageError, Store};
use agentloop_types::Message;

use super::*;

const WRITERS: usize = 16;
const PER_WRITER: usize = 20;

pub async fn concurrent_appends_lose_nothing(store: Arc<dyn Store>) {
    project_with_chat(&*store).await;
    let mut handles = Vec::new();
    for writer in 0..WRITERS {
        let store = store.clone();
        handles.push(tokio::spawn(async move {
            let mut seqs = Vec::new();
            for i in 0..PER_WRITER {
                let message = Message::user_text(
                    format!("w{writer}-{i}"),
                    format!("writer {writer} message {i}"),
                );
                seqs.push(store.save_message("c", &message).await.unwrap());
            }
            seqs
        }));
    }
    let mut all_seqs = Vec::new();
    for handle in handles {
        let seqs = handle.await.unwrap();
        assert!(
            seqs.windows(2).all(|w| w[0] < w[1]),
            "one writer's appends keep their order"
        );
        all_seqs.extend(seqs);
    }
    let total = WRITERS * PER_WRITER;
    let listed = store.list_messages("c").await.unwrap();
    assert_eq!(listed.len(), total);
    let unique_seqs: HashSet<u64> = listed.iter().map(|m| m.seq).collect();
    assert_eq!(unique_seqs.len(), total);
    let unique_ids: HashSet<&str> = listed.iter().map(|m| m.message.id.as_str()).collect();
    assert_eq!(unique_ids.len(), total);
    all_seqs.sort_unstable();
    assert_eq!(all_seqs, listed.iter().map(|m| m.seq).collect::<Vec<_>>());
    assert_eq!(all_seqs, (0..total as u64).collect::<Vec<_>>());
    for writer in 0..WRITERS {
        let mine: Vec<String> = listed
            .iter()
            .filter(|m| m.message.id.starts_with(&format!("w{writer}-")))
            .map(|m| m.message.id.clone())
            .collect();
        let expected: Vec<String> = (0..PER_WRITER).map(|i| format!("w{writer}-{i}")).collect();
        assert_eq!(mine, expected);
    }
}

pub async fn concurrent_active_agent_runs(store: Arc<dyn Store>) {
    store.create_project(&project("p", 1)).await.unwrap();
    store.create_task(&task("t", "p")).await.unwrap();
    let mut handles = Vec::new();
    for i in 0..WRITERS {
        let store = store.clone();
        handles.push(tokio::spawn(async move {
            store
                .create_agent_run(&agent_run(
                    &format!("run-{i}"),
                    "t",
                    AgentRunStatus::Running,
                    i as i64,
                ))
                .await
        }));
    }
    let mut ok = 0;
    for handle in handles {
        match handle.await.unwrap() {
            Ok(()) => ok += 1,
            Err(StorageError::ActiveAgentRunExists { task_id }) => assert_eq!(task_id, "t"),
            Err(other) => panic!("unexpected error {other:?}"),
        }
    }
    assert_eq!(ok, 1);
    let runs = store.list_agent_runs("t").await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(
        store.active_agent_run("t").await.unwrap(),
        Some(runs[0].clone())
    );
}

pub async fn concurrent_totals_and_leases(store: Arc<dyn Store>) {
    project_with_chat(&*store).await;
    let mut handles = Vec::new();
    for writer in 0..WRITERS {
        let store = store.clone();
        handles.push(tokio::spawn(async move {
            for _ in 0..5 {
                let delta = agentloop_types::TokenTotals {
                    input_tokens: 1,
                    output_tokens: writer as u64,
                    cost: 0.5,
                    ..Default::default()
                };
                store.add_chat_totals("c", delta, 7).await.unwrap();
            }
        }));
    }
    for handle in handles {
        handle.await.unwrap();
    }
    let chat = store.get_chat("c").await.unwrap();
    assert_eq!(chat.totals.input_tokens, (WRITERS * 5) as u64);
    assert_eq!(
        chat.totals.output_tokens,
        5 * (0..WRITERS as u64).sum::<u64>()
    );
    assert_eq!(chat.totals.cost, WRITERS as f64 * 5.0 * 0.5);
    assert_eq!(chat.updated_at, 7);

    // Many workers race for one expired lease: exactly one wins.
    let mut run = cases::run_record("r", Some("c"));
    run.lease_owner = Some("dead-worker".into());
    run.lease_expires_at = Some(10);
    store.create_run(&run).await.unwrap();
    let mut handles = Vec::new();
    for worker in 0..WRITERS {
        let store = store.clone();
        handles.push(tokio::spawn(async move {
            store
                .acquire_lease("r", &format!("worker-{worker}"), 100, 1000)
                .await
                .unwrap()
        }));
    }
    let mut winners = 0;
    for handle in handles {
        if handle.await.unwrap() {
            winners += 1;
        }
    }
    assert_eq!(winners, 1);
}

const LOGS: usize = 40;
const EVENTS_PER_LOG: u64 = 25;

/// Many runs append to their logs at once, one event a call (as a server
/// streams them), while one writer repeats a seq: every other append lands,
/// in order per run, and only the repeated one fails.
pub async fn concurrent_event_appends_land_in_order(store: Arc<dyn Store>) {
    project_with_chat(&*store).await;
    for log in 0..LOGS {
        store
            .create_run(&run_record(&format!("log{log}"), Some("c")))
            .await
            .unwrap();
    }
    store
        .create_run(&run_record("dup", Some("c")))
        .await
        .unwrap();
    store.append_events("dup", &[event(0)]).await.unwrap();
    let mut writers = Vec::new();
    for log in 0..LOGS {
        let store = store.clone();
        writers.push(tokio::spawn(async move {
            let run = format!("log{log}");
            for seq in 0..EVENTS_PER_LOG {
                store.append_events(&run, &[event(seq)]).await.unwrap();
            }
        }));
    }
    let repeater = {
        let store = store.clone();
        tokio::spawn(async move {
            let mut refused = 0;
            for seq in 0..EVENTS_PER_LOG {
                let repeated = [event(1_000 + seq), event(0)];
                if let Err(e) = store.append_events("dup", &repeated).await {
                    assert!(matches!(e, StorageError::AlreadyExists { .. }), "{e}");
                    refused += 1;
                }
            }
            refused
        })
    };
    for writer in writers {
        writer.await.unwrap();
    }
    assert_eq!(repeater.await.unwrap(), EVENTS_PER_LOG);
    assert_eq!(
        store.list_events("dup", None, 1_000).await.unwrap(),
        [event(0)]
    );
    for log in 0..LOGS {
        let seqs: Vec<u64> = store
            .list_events(&format!("log{log}"), None, 1_000)
            .await
            .unwrap()
            .iter()
            .map(|e| e.seq)
            .collect();
        assert_eq!(seqs, (0..EVENTS_PER_LOG).collect::<Vec<_>>(), "log{log}");
    }
}

pub async fn concurrent_agent_run_starts(store: Arc<dyn Store>) {
    store.create_project(&project("p", 1)).await.unwrap();
    store.create_task(&task("t", "p")).await.unwrap();
    let mut handles = Vec::new();
    for i in 0..WRITERS {
        let store = store.clone();
        handles.push(tokio::spawn(async move {
            let id = format!("start-{i}");
            let started = store
                .start_agent_run(&agent_run_start(&id, "t", "p", "worker"))
                .await;
            (id, started)
        }));
    }
    let mut started = Vec::new();
    for handle in handles {
        match handle.await.unwrap() {
            (id, Ok(())) => started.push(id),
            (id, Err(StorageError::ActiveAgentRunExists { task_id })) => {
                assert_eq!(task_id, "t");
                assert_nothing_of_start(&*store, &id).await;
            }
            (_, Err(other)) => panic!("unexpected error {other:?}"),
        }
    }
    assert_eq!(started.len(), 1);
    let runs = store.list_agent_runs("t").await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].id, started[0]);
    assert_eq!(store.list_conversations("t").await.unwrap().len(), 1);
    assert_eq!(store.list_chats("p").await.unwrap().len(), 1);
}

/// Starts of many tasks at once (written together where the store
/// batches them): each is stored whole, and a start its task refuses is
/// refused alone, with nothing of it stored.
pub async fn concurrent_starts_are_stored_or_refused_each_alone(store: Arc<dyn Store>) {
    const TASKS: usize = 40;
    const BUSY: usize = 10;
    store.create_project(&project("p", 1)).await.unwrap();
    for t in 0..TASKS {
        store
            .create_task(&task(&format!("t{t}"), "p"))
            .await
            .unwrap();
    }
    for t in 0..BUSY {
        store
            .start_agent_run(&agent_run_start(
                &format!("busy-{t}"),
                &format!("t{t}"),
                "p",
                "w",
            ))
            .await
            .unwrap();
    }
    let handles: Vec<_> = (0..TASKS)
        .map(|t| {
            let store = store.clone();
            tokio::spawn(async move {
                let start = agent_run_start(&format!("new-{t}"), &format!("t{t}"), "p", "w");
                let written = store.start_agent_run(&start).await;
                (t, start, written)
            })
        })
        .collect();
    for handle in handles {
        let (t, start, written) = handle.await.unwrap();
        let id = &start.agent_run.id;
        if t < BUSY {
            match written {
                Err(StorageError::ActiveAgentRunExists { task_id }) => {
                    assert_eq!(task_id, format!("t{t}"));
                }
                other => panic!("{id}: {other:?}"),
            }
            assert_nothing_of_start(&*store, id).await;
        } else {
            written.unwrap();
            assert_eq!(store.get_agent_run(id).await.unwrap(), start.agent_run);
            assert_eq!(store.get_run(id).await.unwrap(), start.record);
            assert_eq!(
                store.get_chat(&format!("{id}-chat")).await.unwrap(),
                start.chat
            );
            assert_eq!(
                store.get_conversation(&format!("{id}-conv")).await.unwrap(),
                start.conversation
            );
            let messages: Vec<Message> = store
                .list_messages(&start.chat.id)
                .await
                .unwrap()
                .into_iter()
                .map(|stored| stored.message)
                .collect();
            assert_eq!(messages, std::slice::from_ref(&start.first_message), "{id}");
        }
    }
}
