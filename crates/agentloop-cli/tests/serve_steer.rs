//! `agentloop serve` as a process: a message sent to a running agent is
//! stored as it arrives, so a SIGKILL before the run takes it loses
//! nothing, and the restarted server delivers it once; an A2A message to
//! a working task joins its run at the next step.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use agentloop_storage::model::AgentRunStatus;
use agentloop_types::{EventKind, FinishedEvent, MessageCreatedEvent};
use common::create_user;
use common::served::*;
use serde_json::json;

#[tokio::test]
async fn a_message_queued_before_a_sigkill_is_delivered_once_after_the_restart() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    // The first server's model streams a word and then takes its time.
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([{ "steps": [
            { "type": "text", "chunks": ["Working"] },
            { "type": "delay", "ms": 60000 }
        ] }]),
    );
    let rest = dir.path().join("rest.json");
    write_script(&rest, json!([text("Short it is.")]));
    let repo = dir.path().join("repo");
    let token = create_user(&db, "ada");
    let mut first = serve(&db, &script, "first");
    let task_id = task(&first.address, &token, &repo);
    let run_id = start_run(&first.address, &token, &task_id, "planification");
    let store = agentloop_storage::open_store(&db).await.unwrap();
    for _ in 0..600 {
        if !store
            .list_events(&run_id, None, 10)
            .await
            .unwrap()
            .is_empty()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let (status, answer) = http(
        &first.address,
        &token,
        "POST",
        &format!("/api/tasks/{task_id}/inputs"),
        Some(json!({ "type": "message", "message": {
            "id": "steer-1", "role": "user",
            "content": [{ "type": "text", "text": "Keep it short." }]
        } })),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["submitted"], "queued", "{answer}");
    let run = store.get_agent_run(&run_id).await.unwrap();
    let conversation = store
        .get_conversation(run.conversation_id.as_deref().unwrap())
        .await
        .unwrap();
    let chat_id = conversation.chat_id.unwrap();
    let queued = store.queued_messages(&chat_id).await.unwrap();
    assert_eq!(queued.len(), 1, "stored as it arrived");
    first.child.kill().unwrap(); // SIGKILL
    first.child.wait().unwrap();

    let _second = serve(&db, &rest, "second");
    let mut ended = None;
    for _ in 0..600 {
        let run = store.get_agent_run(&run_id).await.unwrap();
        if run.status != AgentRunStatus::Running {
            ended = Some(run.status);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(ended, Some(AgentRunStatus::Completed));

    let messages = store.list_messages(&chat_id).await.unwrap();
    let ids: Vec<&str> = messages.iter().map(|m| m.message.id.as_str()).collect();
    assert_eq!(
        ids.iter().filter(|id| **id == "steer-1").count(),
        1,
        "{ids:?}"
    );
    let last = &messages[messages.len() - 1].message;
    assert_eq!(last.text(), "Short it is.");
    assert_eq!(messages[messages.len() - 2].message.id, "steer-1");
    assert!(store.queued_messages(&chat_id).await.unwrap().is_empty());

    // The log: the message is reported created once, and the run ends once.
    let events = store.list_events(&run_id, None, 100_000).await.unwrap();
    let created = events
        .iter()
        .filter(|e| {
            matches!(&e.kind, EventKind::MessageCreated(MessageCreatedEvent { message })
                     if message.id == "steer-1")
        })
        .count();
    assert_eq!(created, 1);
    let finished = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Finished(FinishedEvent { .. })) && e.path.is_root())
        .count();
    assert_eq!(finished, 1);
}

#[tokio::test]
async fn an_a2a_message_to_a_working_task_joins_its_run_at_the_next_step() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    let view = json!({ "command": "view", "path": "/" }).to_string();
    write_script(
        &script,
        json!([
            { "steps": [
                { "type": "text", "chunks": ["Looking"] },
                { "type": "delay", "ms": 1500 },
                { "type": "tool_call", "id": "v1", "name": "fs", "fragments": [view] }
            ] },
            text("Done, briefly."),
            text("Reviewed.")
        ]),
    );
    let token = create_user(&db, "ada");
    let server = serve(&db, &script, "only");
    let address = server.address.clone();
    let project_id = project(&address, &token, &dir.path().join("repo"), json!({}));
    let send = |message: serde_json::Value| {
        http(
            &address,
            &token,
            "POST",
            "/a2a",
            Some(
                json!({ "jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
                "tenant": project_id, "message": message,
                "configuration": { "returnImmediately": true }
            } }),
            ),
        )
        .1
    };
    let started = send(json!({ "messageId": "a1", "role": "ROLE_USER",
                                "parts": [{ "text": "Look around." }] }));
    let task_id = started["result"]["task"]["id"].as_str().unwrap().to_owned();
    // Sent once the first turn streams (the task is the agent run): the
    // run takes it at the step after that turn's call.
    let mut steered = serde_json::Value::Null;
    read_sse_acting(&address, &token, &task_id, "first_chunk", || {
        steered = send(
            json!({ "messageId": "a2", "role": "ROLE_USER", "taskId": task_id,
                                    "parts": [{ "text": "Be brief." }] }),
        );
    });
    assert!(steered["error"].is_null(), "{steered}");
    assert_eq!(
        steered["result"]["task"]["id"],
        task_id.as_str(),
        "{steered}"
    );
    until_status(&address, &token, &task_id, "completed");

    let store = agentloop_storage::open_store(&db).await.unwrap();
    let run = store.get_agent_run(&task_id).await.unwrap();
    let conversation = store
        .get_conversation(run.conversation_id.as_deref().unwrap())
        .await
        .unwrap();
    let messages = store
        .list_messages(conversation.chat_id.as_deref().unwrap())
        .await
        .unwrap();
    let at: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.message.text() == "Be brief.")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(at.len(), 1, "{messages:?}");
    assert!(messages[at[0] - 1].message.tool_results().next().is_some());
    assert_eq!(messages[at[0] + 1].message.text(), "Done, briefly.");
}
