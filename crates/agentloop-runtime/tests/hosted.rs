//! Hosted runs whose host hands over what it wrote as it created them
//! (`HostedRun::written`): the run starts from that, reading nothing back,
//! but only while the record is under this runtime's lease.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_runtime::{
    ChatRuntime, ChatSettings, Hosted, HostedRun, ProjectSettings, RuntimeError, Written,
};
use agentloop_storage::Store;
use agentloop_storage::model::{RunRecord, RunStatus, now_millis};
use agentloop_types::{LoopEvent, LoopStatus, Message, Role};

use common::{drain, stores};

/// A project, a chat holding `stored` as its first message, and a run
/// record in it leased to `owner` until `expires_at`.
async fn created(
    store: &dyn Store,
    runtime: &ChatRuntime,
    owner: &str,
    expires_at: i64,
    stored: &str,
) -> Written {
    let project = common::project(store, ProjectSettings::default()).await;
    let chat = runtime
        .create_chat(&project.id, "c", &ChatSettings::default())
        .await
        .unwrap();
    let message = Message::user_text("m1", stored);
    runtime
        .store()
        .save_message(&chat.id, &message)
        .await
        .unwrap();
    let now = now_millis();
    let record = RunRecord {
        id: format!("run-{owner}-{now}"),
        chat_id: Some(chat.id.clone()),
        status: RunStatus::Running,
        state: None,
        result: None,
        pending_tool_call: None,
        end_reason: None,
        lease_owner: Some(owner.to_owned()),
        lease_expires_at: Some(expires_at),
        created_at: now,
        updated_at: now,
    };
    runtime.store().create_run(&record).await.unwrap();
    Written {
        record,
        chat,
        project,
        messages: vec![message],
    }
}

/// A runtime whose lease owner is `worker-a`, and its model, which answers
/// once.
fn worker_a(store: &Arc<dyn Store>) -> (Arc<ScriptedProvider>, ChatRuntime) {
    let provider = ScriptedProvider::new([ScriptedTurn::new().text("Done.")]);
    let runtime = ChatRuntime::new(store.clone(), provider.clone()).with_lease("worker-a", 30_000);
    (provider, runtime)
}

/// Hosts `written` and reads the run to its end, which must be complete.
async fn host_to_the_end(runtime: &ChatRuntime, written: Written, name: &str) -> Vec<LoopEvent> {
    let Hosted::Running(run) = runtime.host(hosted(written)).await.unwrap() else {
        panic!("{name}: the run did not start");
    };
    let (events, result) = drain(run).await;
    assert!(
        matches!(result.status, LoopStatus::Complete { .. }),
        "{name}: {result:?}"
    );
    events
}

fn hosted(written: Written) -> HostedRun {
    HostedRun {
        run_id: written.record.id.clone(),
        chat_id: written.chat.id.clone(),
        decisions: Default::default(),
        ending: None,
        written: Some(Box::new(written)),
    }
}

/// The text of the last user message of the model's first request.
fn asked(provider: &ScriptedProvider) -> String {
    let requests = provider.requests();
    let first = requests.first().expect("the model was asked");
    let last_user = first
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .expect("a user message");
    last_user.text()
}

#[tokio::test]
async fn a_run_created_under_this_lease_starts_from_what_its_host_wrote() {
    for (name, store, _guard) in stores().await {
        let (provider, runtime) = worker_a(&store);
        let mut written = created(
            &*store,
            &runtime,
            "worker-a",
            now_millis() + 60_000,
            "as stored",
        )
        .await;
        // What the host hands over is taken as is: a message the store
        // does not hold reaches the model only if nothing is read back.
        written.messages = vec![Message::user_text("m1", "as written")];
        let run_id = written.record.id.clone();

        let events = host_to_the_end(&runtime, written, name).await;

        assert_eq!(asked(&provider), "as written", "{name}");
        // The run's events went to its log and its record was ended.
        let logged = store.list_events(&run_id, None, 10_000).await.unwrap();
        assert_eq!(logged.len(), events.len(), "{name}");
        let record = store.get_run(&run_id).await.unwrap();
        assert_eq!(record.status, RunStatus::Completed, "{name}");
    }
}

#[tokio::test]
async fn what_a_host_wrote_is_not_trusted_under_another_workers_lease() {
    for (name, store, _guard) in stores().await {
        let (provider, runtime) = worker_a(&store);
        // The record is another worker's, its lease running: the run is
        // claimed as any hosted run, and the claim is refused.
        let written = created(
            &*store,
            &runtime,
            "worker-b",
            now_millis() + 60_000,
            "as stored",
        )
        .await;

        let refused = runtime.host(hosted(written)).await;

        assert!(
            matches!(refused, Err(RuntimeError::RunInProgress { .. })),
            "{name}: {refused:?}"
        );
        assert!(
            provider.requests().is_empty(),
            "{name}: the model was asked"
        );
    }
}

#[tokio::test]
async fn what_a_host_wrote_with_an_expired_lease_is_read_again_from_the_store() {
    for (name, store, _guard) in stores().await {
        let (provider, runtime) = worker_a(&store);
        // Its lease ran out: another worker may have taken the run over
        // since, so what was written then is not trusted now.
        let mut written =
            created(&*store, &runtime, "worker-a", now_millis() - 1, "as stored").await;
        written.messages = vec![Message::user_text("m1", "as written")];

        host_to_the_end(&runtime, written, name).await;

        assert_eq!(asked(&provider), "as stored", "{name}");
    }
}
