//! Tasks, their agent runs and conversations: starts written whole,
//! one status per run, decisions, deletion.

use std::sync::Arc;

use agentloop_storage::model::{AgentRunDecision, EndReason};
use agentloop_storage::model::{AgentRunStatus, Conversation, RunStatus};
use agentloop_storage::{StorageError, Store};
use agentloop_types::Decision;

use super::cases::{event, run_record};
use super::*;

pub async fn tasks_agent_runs_conversations(store: Arc<dyn Store>) {
    let c = project_with_chat(&*store).await;
    store.create_task(&task("t", "p")).await.unwrap();
    store.create_task(&task("u", "p")).await.unwrap();
    assert!(matches!(
        store.create_task(&task("t", "p")).await,
        Err(StorageError::AlreadyExists { .. })
    ));
    assert_eq!(store.list_tasks("p").await.unwrap().len(), 2);

    let conv = Conversation {
        id: "conv1".into(),
        task_id: "t".into(),
        chat_id: Some(c.id.clone()),
        session_id: None,
        created_at: 2,
    };
    store.create_conversation(&conv).await.unwrap();
    store
        .set_conversation_session("conv1", "sess-1")
        .await
        .unwrap();
    assert_eq!(
        store
            .get_conversation("conv1")
            .await
            .unwrap()
            .session_id
            .as_deref(),
        Some("sess-1")
    );
    assert_eq!(store.list_conversations("t").await.unwrap().len(), 1);

    store
        .create_agent_run(&agent_run("a1", "t", AgentRunStatus::Running, 1))
        .await
        .unwrap();
    assert_eq!(
        store
            .create_agent_run(&agent_run("a2", "t", AgentRunStatus::Running, 2))
            .await,
        Err(StorageError::ActiveAgentRunExists {
            task_id: "t".into()
        })
    );
    assert!(matches!(
        store
            .create_agent_run(&agent_run("a1", "t", AgentRunStatus::Completed, 2))
            .await,
        Err(StorageError::AlreadyExists { .. })
    ));
    // Another task and non-running runs are not affected.
    store
        .create_agent_run(&agent_run("b1", "u", AgentRunStatus::Running, 1))
        .await
        .unwrap();
    store
        .create_agent_run(&agent_run("a0", "t", AgentRunStatus::Failed, 0))
        .await
        .unwrap();
    store.link_conversation("a1", "conv1").await.unwrap();
    let active = store.active_agent_run("t").await.unwrap().unwrap();
    assert_eq!(
        (active.id.as_str(), active.conversation_id.as_deref()),
        ("a1", Some("conv1"))
    );

    move_record(&*store, "a1", RunStatus::Completed, 5).await;
    assert_eq!(store.active_agent_run("t").await.unwrap(), None);
    store
        .create_agent_run(&agent_run("a2", "t", AgentRunStatus::Running, 6))
        .await
        .unwrap();
    let ids: Vec<String> = store
        .list_agent_runs("t")
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(ids, ["a0", "a1", "a2"]);
    let active: Vec<String> = store
        .list_active_agent_runs()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(active, ["b1", "a2"]);

    // The recovery path: marking the workflow complete force-completes
    // running runs, saying why.
    let finished = store.set_workflow_complete("t", true, 50).await.unwrap();
    assert_eq!(finished.len(), 1);
    assert_eq!(
        (
            finished[0].id.as_str(),
            finished[0].status,
            finished[0].completed_at
        ),
        ("a2", AgentRunStatus::Completed, Some(50))
    );
    assert_eq!(finished[0].end_reason, Some(EndReason::workflow_complete()));
    assert!(store.get_task("t").await.unwrap().workflow_complete);
    assert_eq!(store.get_agent_run("a2").await.unwrap(), finished[0]);
    assert!(
        store
            .set_workflow_complete("t", false, 51)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(!store.get_task("t").await.unwrap().workflow_complete);
    assert!(store.active_agent_run("u").await.unwrap().is_some());

    // A cancelled run reads back cancelled and frees the task's slot.
    assert!(
        store
            .finish_agent_run("b1", AgentRunStatus::Cancelled, 52, None)
            .await
            .unwrap()
    );
    let cancelled = store.get_agent_run("b1").await.unwrap();
    assert_eq!(
        (cancelled.status, cancelled.completed_at),
        (AgentRunStatus::Cancelled, Some(52))
    );
    assert_eq!(store.active_agent_run("u").await.unwrap(), None);

    // Finishing is conditional: only a running run is ended, so a run
    // cancelled meanwhile stays cancelled, with its reason.
    let boom = EndReason::new("provider", "the model answered 500");
    store
        .create_agent_run(&agent_run("b2", "u", AgentRunStatus::Running, 53))
        .await
        .unwrap();
    assert!(
        store
            .finish_agent_run("b2", AgentRunStatus::Failed, 54, Some(&boom))
            .await
            .unwrap()
    );
    assert!(
        !store
            .finish_agent_run("b2", AgentRunStatus::Completed, 55, None)
            .await
            .unwrap()
    );
    assert!(
        !store
            .finish_agent_run("b1", AgentRunStatus::Completed, 55, None)
            .await
            .unwrap()
    );
    let failed = store.get_agent_run("b2").await.unwrap();
    assert_eq!(
        (failed.status, failed.completed_at, failed.end_reason),
        (AgentRunStatus::Failed, Some(54), Some(boom.clone()))
    );
    assert_eq!(
        store.get_agent_run("b1").await.unwrap().status,
        AgentRunStatus::Cancelled
    );
    assert!(matches!(
        store
            .finish_agent_run("nope", AgentRunStatus::Completed, 55, None)
            .await,
        Err(StorageError::NotFound { .. })
    ));
    assert!(matches!(
        store
            .finish_agent_run("b2", AgentRunStatus::Running, 55, None)
            .await,
        Err(StorageError::Invalid(_))
    ));

    // Deleting the chat unlinks the conversation.
    store.delete_chat("c").await.unwrap();
    assert_eq!(store.get_conversation("conv1").await.unwrap().chat_id, None);
}

/// Moves the record of agent run `id` to `status` at `at`, storing it
/// `running` first when it has none: the agent run follows it.
async fn move_record(store: &dyn Store, id: &str, status: RunStatus, at: i64) {
    let mut record = match store.get_run(id).await {
        Ok(record) => record,
        Err(_) => {
            let mut record = run_record(id, None);
            record.status = RunStatus::Running;
            store.create_run(&record).await.unwrap();
            record
        }
    };
    record.status = status;
    record.updated_at = at;
    store.update_run(&record).await.unwrap();
}

pub async fn an_agent_run_has_its_records_status(store: Arc<dyn Store>) {
    project_with_chat(&*store).await;
    store.create_task(&task("t", "p")).await.unwrap();
    store
        .create_agent_run(&agent_run("a1", "t", AgentRunStatus::Running, 1))
        .await
        .unwrap();
    let status = |id: &'static str| {
        let store = Arc::clone(&store);
        async move { store.get_agent_run(id).await.unwrap() }
    };

    // A wait moves the agent run to `waiting` with the record's write.
    move_record(&*store, "a1", RunStatus::Running, 2).await;
    move_record(&*store, "a1", RunStatus::Suspended, 3).await;
    assert_eq!(status("a1").await.status, AgentRunStatus::Waiting);
    // A wake is conditional: of two, one moves it back to `running`.
    assert!(store.resume_run("a1", 4).await.unwrap());
    assert!(!store.resume_run("a1", 5).await.unwrap());
    assert_eq!(
        store.get_run("a1").await.unwrap().status,
        RunStatus::Running
    );
    assert_eq!(status("a1").await.status, AgentRunStatus::Running);
    assert!(matches!(
        store.resume_run("nope", 5).await,
        Err(StorageError::NotFound { .. })
    ));
    // A checkpoint that keeps the status moves nothing.
    move_record(&*store, "a1", RunStatus::Running, 6).await;
    assert_eq!(status("a1").await.completed_at, None);

    // The record's end is the agent run's: status, time and reason.
    let boom = EndReason::new("provider", "the model answered 500");
    let mut record = store.get_run("a1").await.unwrap();
    record.status = RunStatus::Failed;
    record.end_reason = Some(boom.clone());
    record.updated_at = 7;
    store.update_run(&record).await.unwrap();
    assert_eq!(
        store.get_run("a1").await.unwrap().end_reason,
        Some(boom.clone())
    );
    let failed = status("a1").await;
    assert_eq!(
        (failed.status, failed.completed_at, failed.end_reason),
        (AgentRunStatus::Failed, Some(7), Some(boom))
    );
    assert_eq!(store.active_agent_run("t").await.unwrap(), None);
    // An ended agent run no longer follows its record.
    move_record(&*store, "a1", RunStatus::Running, 8).await;
    assert_eq!(status("a1").await.status, AgentRunStatus::Failed);

    // A person's end wins over the record's later one.
    store
        .create_agent_run(&agent_run("a2", "t", AgentRunStatus::Running, 9))
        .await
        .unwrap();
    move_record(&*store, "a2", RunStatus::Running, 9).await;
    let cancel = EndReason::new("cancel", "cancelled by ada");
    assert!(
        store
            .finish_agent_run("a2", AgentRunStatus::Cancelled, 10, Some(&cancel))
            .await
            .unwrap()
    );
    move_record(&*store, "a2", RunStatus::Completed, 11).await;
    let cancelled = status("a2").await;
    assert_eq!(
        (
            cancelled.status,
            cancelled.completed_at,
            cancelled.end_reason
        ),
        (AgentRunStatus::Cancelled, Some(10), Some(cancel))
    );
    // A record with no agent run moves alone.
    move_record(&*store, "solo", RunStatus::Completed, 12).await;
    assert_eq!(
        store.get_run("solo").await.unwrap().status,
        RunStatus::Completed
    );
}

pub async fn waiting_agent_runs_and_decisions(store: Arc<dyn Store>) {
    project_with_chat(&*store).await;
    store.create_task(&task("t", "p")).await.unwrap();
    store
        .create_agent_run(&agent_run("a1", "t", AgentRunStatus::Running, 1))
        .await
        .unwrap();
    move_record(&*store, "a1", RunStatus::Suspended, 2).await;
    assert_eq!(
        store.get_agent_run("a1").await.unwrap().status,
        AgentRunStatus::Waiting
    );
    // A waiting run keeps the task's one active slot.
    assert_eq!(
        store.active_agent_run("t").await.unwrap().map(|r| r.id),
        Some("a1".to_owned())
    );
    assert_eq!(
        store
            .create_agent_run(&agent_run("a2", "t", AgentRunStatus::Running, 2))
            .await,
        Err(StorageError::ActiveAgentRunExists {
            task_id: "t".into()
        })
    );

    let approve = AgentRunDecision {
        call_id: "call-1".into(),
        decision: Decision::Approve { arguments: None },
        decided_at: 3,
    };
    let reject = AgentRunDecision {
        call_id: "call-2".into(),
        decision: Decision::Reject {
            reason: "not that file".into(),
        },
        decided_at: 4,
    };
    assert!(store.add_agent_run_decision("a1", &approve).await.unwrap());
    assert!(store.add_agent_run_decision("a1", &reject).await.unwrap());
    // A call is decided once: a second decision is refused, the first kept.
    let again = AgentRunDecision {
        decided_at: 5,
        ..reject.clone()
    };
    assert!(!store.add_agent_run_decision("a1", &again).await.unwrap());
    assert_eq!(
        store.list_agent_run_decisions("a1").await.unwrap(),
        [approve.clone(), reject.clone()]
    );
    assert!(
        store
            .list_agent_run_decisions("nope")
            .await
            .unwrap()
            .is_empty()
    );
    assert!(matches!(
        store.add_agent_run_decision("nope", &approve).await,
        Err(StorageError::NotFound { .. })
    ));
    store.clear_agent_run_decisions("a1").await.unwrap();
    assert!(
        store
            .list_agent_run_decisions("a1")
            .await
            .unwrap()
            .is_empty()
    );
    assert!(store.add_agent_run_decision("a1", &approve).await.unwrap());

    // Waiting runs end like running ones: by finishing or by marking the
    // workflow complete.
    let finished = store.set_workflow_complete("t", true, 6).await.unwrap();
    assert_eq!(
        finished
            .iter()
            .map(|r| (r.id.as_str(), r.status))
            .collect::<Vec<_>>(),
        [("a1", AgentRunStatus::Completed)]
    );
    store.create_task(&task("u", "p")).await.unwrap();
    store
        .create_agent_run(&agent_run("b1", "u", AgentRunStatus::Running, 7))
        .await
        .unwrap();
    move_record(&*store, "b1", RunStatus::Suspended, 8).await;
    assert!(
        store
            .finish_agent_run("b1", AgentRunStatus::Cancelled, 8, None)
            .await
            .unwrap()
    );
    assert!(matches!(
        store
            .finish_agent_run("b1", AgentRunStatus::Waiting, 9, None)
            .await,
        Err(StorageError::Invalid(_))
    ));
    // Deleting the task deletes its runs' decisions.
    store.delete_project("p").await.unwrap();
    assert!(
        store
            .list_agent_run_decisions("a1")
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn cascade_delete_task(store: Arc<dyn Store>) {
    // Task `t` with two finished agent runs, each with a conversation whose
    // chat has a message, a run record carrying its event log, and a
    // decision; task `u` beside it keeps everything.
    project_with_chat(&*store).await;
    for (task_id, runs) in [("t", ["t1", "t2"]), ("u", ["u1", "u2"])] {
        store.create_task(&task(task_id, "p")).await.unwrap();
        for (n, run_id) in (0..).zip(runs) {
            let chat_id = format!("chat-{run_id}");
            store
                .create_chat(&chat(&chat_id, "p", 2 + n))
                .await
                .unwrap();
            store
                .save_message(&chat_id, &Message::user_text(format!("m-{run_id}"), "go"))
                .await
                .unwrap();
            let conversation = format!("conv-{run_id}");
            store
                .create_conversation(&Conversation {
                    id: conversation.clone(),
                    task_id: task_id.into(),
                    chat_id: Some(chat_id),
                    session_id: None,
                    created_at: 2 + n,
                })
                .await
                .unwrap();
            store
                .create_agent_run(&agent_run(
                    run_id,
                    task_id,
                    AgentRunStatus::Completed,
                    2 + n,
                ))
                .await
                .unwrap();
            store
                .link_conversation(run_id, &conversation)
                .await
                .unwrap();
            store.create_run(&run_record(run_id, None)).await.unwrap();
            store
                .append_events(run_id, &[event(0), event(1)])
                .await
                .unwrap();
            let decision = AgentRunDecision {
                call_id: "w1".into(),
                decision: Decision::Approve { arguments: None },
                decided_at: 3,
            };
            store
                .add_agent_run_decision(run_id, &decision)
                .await
                .unwrap();
        }
    }

    // A task whose run waits (or runs) is not deleted, nor is any of it.
    store
        .create_agent_run(&agent_run("t3", "t", AgentRunStatus::Running, 9))
        .await
        .unwrap();
    move_record(&*store, "t3", RunStatus::Suspended, 8).await;
    assert_eq!(
        store.delete_task("t").await,
        Err(StorageError::ActiveAgentRunExists {
            task_id: "t".into()
        })
    );
    assert_eq!(store.list_agent_runs("t").await.unwrap().len(), 3);
    assert_eq!(store.list_events("t1", None, 10).await.unwrap().len(), 2);
    store
        .finish_agent_run("t3", AgentRunStatus::Cancelled, 10, None)
        .await
        .unwrap();

    store.delete_task("t").await.unwrap();
    assert!(matches!(
        store.get_task("t").await,
        Err(StorageError::NotFound { .. })
    ));
    for run_id in ["t1", "t2", "t3"] {
        assert!(matches!(
            store.get_agent_run(run_id).await,
            Err(StorageError::NotFound { .. })
        ));
        assert!(
            store
                .list_agent_run_decisions(run_id)
                .await
                .unwrap()
                .is_empty()
        );
    }
    for run_id in ["t1", "t2"] {
        assert!(matches!(
            store.get_run(run_id).await,
            Err(StorageError::NotFound { .. })
        ));
        // A record made again under the id finds no event of the old log.
        store.create_run(&run_record(run_id, None)).await.unwrap();
        assert!(
            store
                .list_events(run_id, None, 10)
                .await
                .unwrap()
                .is_empty()
        );
        assert!(matches!(
            store.get_chat(&format!("chat-{run_id}")).await,
            Err(StorageError::NotFound { .. })
        ));
        assert!(matches!(
            store.get_conversation(&format!("conv-{run_id}")).await,
            Err(StorageError::NotFound { .. })
        ));
    }
    assert!(store.list_conversations("t").await.unwrap().is_empty());
    assert_eq!(
        store.delete_task("t").await,
        Err(StorageError::NotFound {
            kind: "task",
            id: "t".into()
        })
    );

    // The other task, the project and its other chat are untouched.
    assert_eq!(store.list_tasks("p").await.unwrap().len(), 1);
    assert_eq!(store.list_agent_runs("u").await.unwrap().len(), 2);
    assert_eq!(store.list_conversations("u").await.unwrap().len(), 2);
    for run_id in ["u1", "u2"] {
        store.get_run(run_id).await.unwrap();
        assert_eq!(store.list_events(run_id, None, 10).await.unwrap().len(), 2);
        assert_eq!(
            store.list_agent_run_decisions(run_id).await.unwrap().len(),
            1
        );
        assert_eq!(
            store
                .list_messages(&format!("chat-{run_id}"))
                .await
                .unwrap()
                .len(),
            1
        );
    }
    store.get_chat("c").await.unwrap();

    // Deleting the project takes the other task's run records and event
    // logs with it, though they belong to no chat.
    store.delete_project("p").await.unwrap();
    for run_id in ["u1", "u2"] {
        assert!(matches!(
            store.get_run(run_id).await,
            Err(StorageError::NotFound { .. })
        ));
        store.create_run(&run_record(run_id, None)).await.unwrap();
        assert!(
            store
                .list_events(run_id, None, 10)
                .await
                .unwrap()
                .is_empty()
        );
    }
}

pub async fn agent_run_starts_whole_or_not_at_all(store: Arc<dyn Store>) {
    store.create_project(&project("p", 1)).await.unwrap();
    store.create_task(&task("t", "p")).await.unwrap();
    store.create_task(&task("u", "p")).await.unwrap();
    let first = agent_run_start("s1", "t", "p", "worker-1");
    store.start_agent_run(&first).await.unwrap();

    // Each part reads back as written, linked to the others.
    assert_eq!(store.get_agent_run("s1").await.unwrap(), first.agent_run);
    assert_eq!(
        store.get_conversation("s1-conv").await.unwrap(),
        first.conversation
    );
    assert_eq!(store.get_chat("s1-chat").await.unwrap(), first.chat);
    assert_eq!(store.get_run("s1").await.unwrap(), first.record);
    let messages = store.list_messages("s1-chat").await.unwrap();
    assert_eq!(messages.len(), 1);
    assert_eq!(
        (messages[0].seq, &messages[0].message),
        (0, &first.first_message)
    );
    assert!(store.list_events("s1", None, 10).await.unwrap().is_empty());
    // The chat's numbering goes on after the first message, and the
    // record's lease is its owner's: another worker cannot take it.
    let next = Message::user_text("s1-next", "go on");
    assert_eq!(store.save_message("s1-chat", &next).await.unwrap(), 1);
    assert!(!store.acquire_lease("s1", "worker-2", 2, 9).await.unwrap());
    assert!(store.acquire_lease("s1", "worker-1", 2, 9).await.unwrap());

    // A second start while the first is active writes none of its parts.
    assert_eq!(
        store
            .start_agent_run(&agent_run_start("s2", "t", "p", "worker-1"))
            .await,
        Err(StorageError::ActiveAgentRunExists {
            task_id: "t".into()
        })
    );
    assert_nothing_of_start(&*store, "s2").await;
    // So does a start whose record id is taken: nothing half-written.
    store.create_run(&run_record("taken", None)).await.unwrap();
    assert!(matches!(
        store
            .start_agent_run(&agent_run_start("taken", "u", "p", "worker-1"))
            .await,
        Err(StorageError::AlreadyExists { .. })
    ));
    assert!(matches!(
        store.get_agent_run("taken").await,
        Err(StorageError::NotFound { .. })
    ));
    assert!(store.list_conversations("u").await.unwrap().is_empty());
    assert_eq!(store.active_agent_run("u").await.unwrap(), None);
    // A start on a task that does not exist is refused whole as well.
    assert!(
        store
            .start_agent_run(&agent_run_start("s3", "missing", "p", "worker-1"))
            .await
            .is_err()
    );
    assert_nothing_of_start(&*store, "s3").await;

    // Once the first run ended, the task takes another.
    assert!(
        store
            .finish_agent_run("s1", AgentRunStatus::Completed, 5, None)
            .await
            .unwrap()
    );
    store
        .start_agent_run(&agent_run_start("s2", "t", "p", "worker-1"))
        .await
        .unwrap();
    assert_eq!(
        store.active_agent_run("t").await.unwrap().map(|r| r.id),
        Some("s2".to_owned())
    );
    assert_eq!(store.list_conversations("t").await.unwrap().len(), 2);
}

pub async fn a_start_dropped_unanswered_is_whole_or_absent(store: Arc<dyn Store>) {
    store.create_project(&project("p", 1)).await.unwrap();
    store.create_task(&task("t", "p")).await.unwrap();
    store.create_task(&task("u", "p")).await.unwrap();
    let dropped = agent_run_start("d1", "t", "p", "worker-1");
    {
        // Polled once, which sends the write, then dropped as a request
        // whose client went away is: its answer is never read.
        let mut start = std::pin::pin!(store.start_agent_run(&dropped));
        let _ = futures::poll!(start.as_mut());
    }
    // The store goes on writing.
    store
        .start_agent_run(&agent_run_start("d2", "u", "p", "worker-1"))
        .await
        .unwrap();
    store.create_project(&project("q", 2)).await.unwrap();
    // The dropped start is stored whole or not at all.
    match store.get_agent_run("d1").await {
        Ok(run) => {
            assert_eq!(run, dropped.agent_run);
            assert_eq!(store.get_run("d1").await.unwrap(), dropped.record);
            assert_eq!(store.get_chat("d1-chat").await.unwrap(), dropped.chat);
            assert_eq!(
                store.get_conversation("d1-conv").await.unwrap(),
                dropped.conversation
            );
        }
        Err(StorageError::NotFound { .. }) => {
            assert_nothing_of_start(&*store, "d1").await;
            // Nor does anything of it hold the task: it takes a start.
            store.start_agent_run(&dropped).await.unwrap();
        }
        Err(other) => panic!("reading the dropped start failed: {other}"),
    }
}

/// Asserts that no part of agent run start `id` (see [`agent_run_start`])
/// was stored.
pub async fn assert_nothing_of_start(store: &dyn Store, id: &str) {
    assert!(matches!(
        store.get_agent_run(id).await,
        Err(StorageError::NotFound { .. })
    ));
    assert!(matches!(
        store.get_run(id).await,
        Err(StorageError::NotFound { .. })
    ));
    assert!(matches!(
        store.get_chat(&format!("{id}-chat")).await,
        Err(StorageError::NotFound { .. })
    ));
    assert!(matches!(
        store.get_conversation(&format!("{id}-conv")).await,
        Err(StorageError::NotFound { .. })
    ));
}
