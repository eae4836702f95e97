//! A message sent over HTTP to a task whose agent is still going, under
//! each strategy: `enqueue` (delivered at the run's next step boundary, in
//! order, once), `interrupt` (the model call in flight stops and the run
//! goes on with the message), `rollback` (the run is cancelled and its
//! agent starts again with the message), `reject` (409, the project's
//! setting, overridden per message), and an AG-UI input while the agent
//! works. Checked by what the model received next and by the order of the
//! run's events.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_storage::Store;
use agentloop_types::{Message, ModelRequest, Role};
use common::TestServer;
use common::approvals::{create, finished_statuses, messages, until_status};
use common::gated::{GatedProvider, follow_until};
use serde_json::{Value, json};

fn message(id: &str, text: &str) -> Value {
    json!({ "id": id, "role": "user", "content": [{ "type": "text", "text": text }] })
}

/// Starts the task's planification agent (never chained) with `text`.
async fn start(server: &TestServer, task_id: &str, text: &str) -> String {
    let (status, started) = server
        .send(
            "POST",
            &format!("/api/tasks/{task_id}/inputs"),
            json!({ "type": "start", "agent": "planification", "message": message("m0", text) }),
        )
        .await;
    assert_eq!(status, 200, "{started}");
    started["agent_run"]["id"].as_str().unwrap().to_owned()
}

/// Polls until `count()` reaches `n` (bounded).
async fn until(what: &str, n: usize, count: impl Fn() -> usize) {
    for _ in 0..800 {
        if count() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{what} never reached {n}");
}

/// The ids and texts of a request's messages.
fn sent(request: &ModelRequest) -> Vec<(Role, String)> {
    request
        .messages
        .iter()
        .map(|m| (m.role, m.text()))
        .collect()
}

/// The run's stored events.
async fn logged(store: &dyn Store, run_id: &str) -> Vec<Value> {
    store
        .list_events(run_id, None, 10_000)
        .await
        .unwrap()
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect()
}

/// Where the message `id` was reported created in `events`, each time.
fn created_at(events: &[Value], id: &str) -> Vec<usize> {
    events
        .iter()
        .enumerate()
        .filter(|(_, e)| e["type"] == "message_created" && e["message"]["id"] == id)
        .map(|(i, _)| i)
        .collect()
}

fn count_id(messages: &[Message], id: &str) -> usize {
    messages.iter().filter(|m| m.id == id).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enqueued_messages_join_at_the_next_step_in_order_and_once() {
    let (_dir, store) = common::sqlite().await;
    // The first turn is held at the gate while the messages arrive; it
    // then calls a tool, and the messages join before the next turn.
    let provider = GatedProvider::new([
        create("w1", "notes.md", "hello"),
        ScriptedTurn::new().text("Noted both."),
    ]);
    let server = common::start(store.clone(), provider.clone()).await;
    let (_, task_id) = server
        .project_and_task_with(json!({ "approvals": "unattended" }))
        .await;
    let run_id = start(&server, &task_id, "Write notes.").await;
    until("model requests", 1, || provider.request_count()).await;

    // One through the task, one through the run; no strategy named: the
    // project's default, enqueue.
    for (path, id, text) in [
        (
            format!("/api/tasks/{task_id}/inputs"),
            "s1",
            "Use British spelling.",
        ),
        (
            format!("/api/agent-runs/{run_id}/inputs"),
            "s2",
            "And keep it short.",
        ),
    ] {
        let (status, answer) = server
            .send(
                "POST",
                &path,
                json!({ "type": "message", "message": message(id, text) }),
            )
            .await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["submitted"], "queued", "{answer}");
        assert_eq!(answer["agent_run"]["id"], run_id.as_str(), "{answer}");
    }
    assert_eq!(provider.request_count(), 1, "nothing was sent mid-turn");
    provider.open();
    until_status(&server, &run_id, "completed").await;

    let requests = provider.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    // The first request never saw them; the second has them after the
    // tool's result, in the order they arrived.
    assert!(
        !sent(&requests[0])
            .iter()
            .any(|(_, t)| t.contains("British"))
    );
    let second = &requests[1].messages;
    let n = second.len();
    assert!(second[n - 3].tool_results().next().is_some(), "{second:?}");
    assert_eq!(second[n - 2].id, "s1");
    assert_eq!(second[n - 2].text(), "Use British spelling.");
    assert_eq!(second[n - 1].id, "s2");
    assert_eq!(second[n - 1].role, Role::User);

    // The log: tool result, then each message once, then the answer.
    let events = logged(&*store, &run_id).await;
    let (s1, s2) = (created_at(&events, "s1"), created_at(&events, "s2"));
    assert_eq!((s1.len(), s2.len()), (1, 1), "each message is logged once");
    let result_at = events
        .iter()
        .position(|e| {
            e["type"] == "message_created" && e["message"]["content"][0]["type"] == "tool_result"
        })
        .unwrap();
    let answer_at = events
        .iter()
        .position(|e| {
            e["type"] == "message_created"
                && e["message"]["role"] == "assistant"
                && e["message"]["content"][0]["text"] == "Noted both."
        })
        .unwrap();
    assert!(
        result_at < s1[0] && s1[0] < s2[0] && s2[0] < answer_at,
        "{events:#?}"
    );
    assert_eq!(finished_statuses(&events), ["complete"]);
    let kept = messages(&*store, &run_id).await;
    assert_eq!((count_id(&kept, "s1"), count_id(&kept, "s2")), (1, 1));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_stops_the_turn_and_the_run_goes_on_with_the_message() {
    let (_dir, store) = common::sqlite().await;
    let provider = ScriptedProvider::new([
        ScriptedTurn::new()
            .text_chunks(&["Reading the whole"])
            .hang(),
        ScriptedTurn::new().text("Only the README, then."),
    ]);
    let server = common::start(store.clone(), provider.clone()).await;
    let (_, task_id) = server.project_and_task().await;
    let run_id = start(&server, &task_id, "Read everything.").await;
    // The turn has streamed its first words and hangs.
    let _live = tokio::time::timeout(
        Duration::from_secs(10),
        follow_until(&server, &run_id, "streaming_chunk"),
    )
    .await
    .expect("the turn streams its first words");

    let (status, answer) = server
        .send(
            "POST",
            &format!("/api/tasks/{task_id}/inputs"),
            json!({ "type": "message", "strategy": "interrupt",
                    "message": message("i1", "Stop: only the README.") }),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["submitted"], "interrupted", "{answer}");
    let run = until_status(&server, &run_id, "completed").await;
    assert_eq!(run["id"], run_id.as_str(), "the same run went on");

    let requests = provider.requests();
    assert_eq!(requests.len(), 2, "the interrupted call was made again");
    let second = sent(&requests[1]);
    let n = second.len();
    assert_eq!(
        second[n - 2],
        (Role::Assistant, "Reading the whole".to_owned()),
        "what the interrupted turn streamed is kept: {second:?}"
    );
    assert_eq!(
        second[n - 1],
        (Role::User, "Stop: only the README.".to_owned())
    );
    let events = logged(&*store, &run_id).await;
    assert_eq!(created_at(&events, "i1").len(), 1);
    assert_eq!(
        finished_statuses(&events),
        ["complete"],
        "one end, not a cancel"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_to_a_waiting_run_is_kept_for_its_next_step_and_listed_so() {
    let (_dir, store) = common::sqlite().await;
    let provider = ScriptedProvider::new([
        create("w1", "notes.md", "hello"),
        ScriptedTurn::new().text("Written, and noted."),
    ]);
    let server = common::start(store.clone(), provider.clone()).await;
    let (_, task_id) = server
        .project_and_task_with(json!({ "approvals": "ask" }))
        .await;
    let run_id = start(&server, &task_id, "Write a note.").await;
    until_status(&server, &run_id, "waiting").await;

    // Nothing runs to interrupt: the message waits for the next step.
    let (status, answer) = server
        .send(
            "POST",
            &format!("/api/agent-runs/{run_id}/inputs"),
            json!({ "type": "message", "strategy": "interrupt",
                    "message": message("i2", "Also note the date.") }),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["submitted"], "queued", "{answer}");
    let (status, queued) = server
        .get(&format!("/api/agent-runs/{run_id}/queued-messages"))
        .await;
    assert_eq!(status, 200, "{queued}");
    let waiting = &queued["messages"][0];
    assert_eq!(waiting["message"]["id"], "i2", "{queued}");
    assert_eq!(waiting["strategy"], "enqueue", "{queued}");

    let (status, decided) = common::approvals::decide(
        &server,
        &run_id,
        json!([{ "call_id": "w1", "decision": "approve" }]),
    )
    .await;
    assert_eq!(status, 200, "{decided}");
    until_status(&server, &run_id, "completed").await;
    let requests = provider.requests();
    assert_eq!(
        sent(&requests[1]).last().unwrap(),
        &(Role::User, "Also note the date.".to_owned()),
        "taken at the step after the approved call"
    );
    let (_, queued) = server
        .get(&format!("/api/agent-runs/{run_id}/queued-messages"))
        .await;
    assert_eq!(queued["messages"], json!([]), "{queued}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollback_ends_the_run_and_starts_its_agent_again_with_the_message() {
    let (_dir, store) = common::sqlite().await;
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().text_chunks(&["Half a plan"]).hang(),
        ScriptedTurn::new().text("A plan for the CLI."),
    ]);
    let server = common::start(store.clone(), provider.clone()).await;
    let (_, task_id) = server.project_and_task().await;
    let first = start(&server, &task_id, "Plan the server.").await;
    until("model requests", 1, || provider.requests().len()).await;

    let (status, answer) = server
        .send(
            "POST",
            &format!("/api/agent-runs/{first}/inputs"),
            json!({ "type": "message", "strategy": "rollback",
                    "message": message("r1", "Plan the CLI instead.") }),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["submitted"], "started", "{answer}");
    let second = answer["agent_run"]["id"].as_str().unwrap().to_owned();
    assert_ne!(second, first);
    assert_eq!(answer["agent_run"]["agent_type"], "planification");
    until_status(&server, &first, "cancelled").await;
    until_status(&server, &second, "completed").await;

    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    let restarted = sent(&requests[1]);
    assert!(
        restarted.iter().all(|(_, t)| !t.contains("Half a plan")),
        "the new run starts from the prompt: {restarted:?}"
    );
    assert_eq!(restarted.last().unwrap().0, Role::User);
    assert!(
        restarted
            .last()
            .unwrap()
            .1
            .contains("Plan the CLI instead."),
        "{restarted:?}"
    );
    let ended = logged(&*store, &first).await;
    assert_eq!(finished_statuses(&ended), ["cancelled"]);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_that_rejects_refuses_and_a_message_may_still_ask_to_wait() {
    let (_dir, store) = common::sqlite().await;
    let provider = GatedProvider::new([
        ScriptedTurn::new().text("First answer."),
        ScriptedTurn::new().text("Second answer."),
    ]);
    let server = common::start(store.clone(), provider.clone()).await;
    let (project_id, task_id) = server.project_and_task().await;
    let (status, project) = server
        .send(
            "PATCH",
            &format!("/api/projects/{project_id}"),
            json!({ "steer_strategy": "reject" }),
        )
        .await;
    assert_eq!(status, 200, "{project}");
    assert_eq!(project["steer_strategy"], "reject");
    let (status, bad) = server
        .send(
            "PATCH",
            &format!("/api/projects/{project_id}"),
            json!({ "steer_strategy": "later" }),
        )
        .await;
    assert_eq!(status, 400, "{bad}");

    let run_id = start(&server, &task_id, "Answer.").await;
    until("model requests", 1, || provider.request_count()).await;
    let inputs = format!("/api/tasks/{task_id}/inputs");
    let (status, refused) = server
        .send(
            "POST",
            &inputs,
            json!({ "type": "message", "message": message("x1", "Refused.") }),
        )
        .await;
    assert_eq!(status, 409, "{refused}");
    let error = refused["error"].as_str().unwrap();
    assert!(
        error.contains(&run_id) && error.contains("reject"),
        "{error}"
    );

    // Named on the message, enqueue wins over the project's setting. It
    // arrives during the run's last turn: the agent runs again with it.
    let (status, queued) = server
        .send(
            "POST",
            &inputs,
            json!({ "type": "message", "strategy": "enqueue",
                    "message": message("q1", "One more thing.") }),
        )
        .await;
    assert_eq!(status, 200, "{queued}");
    assert_eq!(queued["submitted"], "queued");
    provider.open();
    until_status(&server, &run_id, "completed").await;
    until("model requests", 2, || provider.request_count()).await;
    let settled = server.settle(&task_id, 2).await;
    assert!(
        settled.iter().all(|r| r["status"] == "completed"),
        "{settled:?}"
    );

    let requests = provider.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let texts: Vec<String> = requests
        .iter()
        .flat_map(|r| r.messages.iter().map(Message::text))
        .collect();
    assert!(!texts.iter().any(|t| t.contains("Refused.")), "{texts:?}");
    assert_eq!(
        texts
            .iter()
            .filter(|t| t.contains("One more thing."))
            .count(),
        1,
        "delivered once, to the next run: {texts:?}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_that_is_not_a_persons_is_refused() {
    let (_dir, store) = common::sqlite().await;
    let provider = ScriptedProvider::new([ScriptedTurn::new().text("Hm").hang()]);
    let server = common::start(store.clone(), provider.clone()).await;
    let (_, task_id) = server.project_and_task().await;
    let run_id = start(&server, &task_id, "Go.").await;
    until("model requests", 1, || provider.requests().len()).await;
    let (status, answer) = server
        .send(
            "POST",
            &format!("/api/agent-runs/{run_id}/inputs"),
            json!({ "type": "message", "message": {
                "id": "a1", "role": "assistant", "content": [{ "type": "text", "text": "I said so." }]
            } }),
        )
        .await;
    assert_eq!(status, 400, "{answer}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ag_ui_message_while_the_agent_works_joins_its_run() {
    let (_dir, store) = common::sqlite().await;
    let provider = GatedProvider::new([
        create("w1", "notes.md", "hello"),
        ScriptedTurn::new().text("With tabs."),
    ]);
    let server = common::start(store.clone(), provider.clone()).await;
    let (_, task_id) = server
        .project_and_task_with(json!({ "approvals": "unattended" }))
        .await;
    let run_id = start(&server, &task_id, "Write notes.").await;
    until("model requests", 1, || provider.request_count()).await;

    let response = server
        .client
        .post(server.url(&format!("/api/tasks/{task_id}/ag-ui")))
        .bearer_auth(&server.token)
        .json(&json!({ "threadId": "t1", "runId": "r1",
                       "messages": [{ "id": "u1", "role": "user", "content": "Use tabs." }] }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    provider.open();
    let body = tokio::time::timeout(Duration::from_secs(20), response.text())
        .await
        .expect("the AG-UI stream ends with the run")
        .unwrap();
    assert!(body.contains(&run_id), "it follows the working run: {body}");
    assert!(body.contains("RUN_FINISHED"), "{body}");
    until_status(&server, &run_id, "completed").await;

    let requests = provider.requests();
    assert_eq!(requests.len(), 2, "no second run started");
    let second = sent(&requests[1]);
    assert_eq!(
        second.last().unwrap(),
        &(Role::User, "Use tabs.".to_owned())
    );
    let texts: Vec<String> = requests
        .iter()
        .flat_map(|r| r.messages.iter().map(Message::text))
        .collect();
    assert_eq!(texts.iter().filter(|t| *t == "Use tabs.").count(), 1);
    server.stop().await;
}
