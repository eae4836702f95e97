//! A run's kept steps: addressed by seq, replaced at the same seq, the
//! oldest dropped beyond a retention, read back without their messages
//! and over a history, gone with their run.

use std::sync::Arc;

use agentloop_storage::model::{RunRecord, RunStatus};
use agentloop_storage::{RunStep, StorageError, Store};
use agentloop_types::{Message, RunState};

use super::project_with_chat;

fn record(id: &str) -> RunRecord {
    RunRecord {
        id: id.into(),
        chat_id: Some("c".into()),
        status: RunStatus::Running,
        state: None,
        result: None,
        pending_tool_call: None,
        end_reason: None,
        lease_owner: None,
        lease_expires_at: None,
        created_at: 1,
        updated_at: 1,
    }
}

/// The state of run `run_id` after `n` messages.
fn state(run_id: &str, n: usize) -> RunState {
    let messages: Vec<Message> = (0..n)
        .map(|i| Message::user_text(format!("m{i}"), format!("message {i}")))
        .collect();
    let mut state = RunState::new(run_id, messages);
    state.iteration = u32::try_from(n).unwrap();
    state.tool_calls = 2 * state.iteration;
    state.totals.input_tokens = 10 * u64::try_from(n).unwrap();
    state.approved_tools = vec!["fs".into()];
    state
}

pub async fn run_steps_kept_and_retained(store: Arc<dyn Store>) {
    project_with_chat(&*store).await;
    for id in ["r", "kept", "other"] {
        store.create_run(&record(id)).await.unwrap();
    }
    let full = state("r", 6);
    for (seq, n) in [(3, 2), (7, 4), (12, 6)] {
        let step = RunStep::of_state("r", seq, &state("r", n), 100 + i64::try_from(seq).unwrap());
        store.keep_step(&step, None).await.unwrap();
    }
    // Replaced at the same seq.
    let again = RunStep::of_state("r", 7, &state("r", 4), 170);
    store.keep_step(&again, None).await.unwrap();
    store
        .keep_step(&RunStep::of_state("other", 1, &state("other", 1), 5), None)
        .await
        .unwrap();

    let steps = store.list_steps("r").await.unwrap();
    let seqs: Vec<u64> = steps.iter().map(|s| s.seq).collect();
    assert_eq!(seqs, [3, 7, 12], "oldest first, one a seq");
    assert_eq!(steps[1].created_at, 170);
    assert_eq!(steps[1].message_count, 4);
    assert_eq!(steps[1].last_message_id.as_deref(), Some("m3"));
    assert!(steps[1].state.messages.is_empty(), "kept without messages");
    assert_eq!(steps[1].state.tool_calls, 8);
    assert_eq!(steps[1].tokens().input_tokens, 40);
    assert_eq!(steps[1].state.approved_tools, ["fs"]);

    // The state at a step, over the run's later history.
    let step = store.get_step("r", 7).await.unwrap();
    let at = step.state_over(&full.messages).unwrap();
    let mut expected = state("r", 4);
    expected.messages = full.messages[..4].to_vec().into();
    assert_eq!(at, expected);
    // A history that does not start with the step's messages is refused.
    let other: Vec<Message> = (0..6)
        .map(|i| Message::user_text(format!("x{i}"), "elsewhere"))
        .collect();
    assert!(step.state_over(&other).is_none());
    assert!(step.state_over(&full.messages[..2]).is_none());

    let missing = store.get_step("r", 8).await;
    assert!(
        matches!(missing, Err(StorageError::NotFound { .. })),
        "{missing:?}"
    );
    assert!(store.list_steps("nope").await.unwrap().is_empty());
    let orphan = store
        .keep_step(&RunStep::of_state("nope", 1, &state("nope", 1), 1), None)
        .await;
    assert!(orphan.is_err(), "a step of no run: {orphan:?}");

    // Retention: the latest two are kept as steps come, each written with
    // its record.
    for seq in 1..=5 {
        let step = RunStep::of_state("kept", seq, &state("kept", 1), 1);
        let mut run = record("kept");
        run.updated_at = 10 + i64::try_from(seq).unwrap();
        store
            .update_run_keeping_step(&run, &step, Some(2))
            .await
            .unwrap();
    }
    assert_eq!(store.get_run("kept").await.unwrap().updated_at, 15);
    let unknown = store
        .update_run_keeping_step(
            &record("nope"),
            &RunStep::of_state("nope", 1, &state("nope", 1), 1),
            None,
        )
        .await;
    assert!(
        matches!(unknown, Err(StorageError::NotFound { .. })),
        "{unknown:?}"
    );
    assert!(store.list_steps("nope").await.unwrap().is_empty());
    let seqs: Vec<u64> = store
        .list_steps("kept")
        .await
        .unwrap()
        .iter()
        .map(|s| s.seq)
        .collect();
    assert_eq!(seqs, [4, 5]);
    // None kept: the run's steps go.
    let step = RunStep::of_state("kept", 6, &state("kept", 1), 1);
    store.keep_step(&step, Some(0)).await.unwrap();
    assert!(store.list_steps("kept").await.unwrap().is_empty());
    assert_eq!(store.list_steps("other").await.unwrap().len(), 1);

    // Gone with the run's chat.
    store.delete_chat("c").await.unwrap();
    assert!(store.list_steps("r").await.unwrap().is_empty());
}
