//! Single-writer cases: CRUD, ordering, cascades, files, runs, tasks.

use std::sync::Arc;

use agentloop_storage::model::{
    AgentRunStatus, ApprovalMode, Attachment, AttachmentMeta, Checkpoint, RunRecord, RunStatus,
};
use agentloop_storage::{ProjectFiles, StorageError, Store};
use agentloop_types::{EventKind, LoopEvent, Message, RunPath, TokenTotals, Vfs};

use super::*;

pub async fn projects_crud(store: Arc<dyn Store>) {
    assert!(store.list_projects().await.unwrap().is_empty());
    store.create_project(&project("b", 2)).await.unwrap();
    store.create_project(&project("a", 3)).await.unwrap();
    store.create_project(&project("z", 1)).await.unwrap();
    assert!(matches!(
        store.create_project(&project("a", 9)).await,
        Err(StorageError::AlreadyExists { .. })
    ));
    let ids: Vec<String> = store
        .list_projects()
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.id)
        .collect();
    assert_eq!(ids, ["z", "b", "a"]);
    let mut a = store.get_project("a").await.unwrap();
    assert_eq!(a, project("a", 3));
    a.name = "renamed".into();
    a.settings = serde_json::json!({ "nested": { "list": [1, 2.5, null, true] } });
    a.updated_at = 10;
    store.update_project(&a).await.unwrap();
    assert_eq!(store.get_project("a").await.unwrap(), a);
    // The runtime's one read of a project: its settings, as updated.
    assert_eq!(store.project_settings("a").await.unwrap(), a.settings);
    store.delete_project("a").await.unwrap();
    assert!(matches!(
        store.project_settings("a").await,
        Err(StorageError::NotFound { .. })
    ));
    assert!(matches!(
        store.get_project("a").await,
        Err(StorageError::NotFound { .. })
    ));
    assert!(matches!(
        store.delete_project("a").await,
        Err(StorageError::NotFound { .. })
    ));
    assert!(matches!(
        store.update_project(&a).await,
        Err(StorageError::NotFound { .. })
    ));
}

pub async fn project_approval_modes(store: Arc<dyn Store>) {
    // None (follow the server) reads back as none, a mode as that mode,
    // whether the project claimed a folder or not.
    store.create_project(&project("n", 1)).await.unwrap();
    assert_eq!(store.get_project("n").await.unwrap().approval_mode, None);
    let mut asked = project("k", 2);
    asked.approval_mode = Some(ApprovalMode::Ask);
    store
        .create_project_in_folder(&asked, "/r/k")
        .await
        .unwrap();
    assert_eq!(store.get_project("k").await.unwrap(), asked);
    // An update sets it, changes it and clears it again.
    for mode in [
        Some(ApprovalMode::Unattended),
        Some(ApprovalMode::Ask),
        None,
    ] {
        asked.approval_mode = mode;
        asked.updated_at += 1;
        store.update_project(&asked).await.unwrap();
        assert_eq!(store.get_project("k").await.unwrap(), asked);
    }
    let mut listed = store.list_projects().await.unwrap();
    listed.retain(|p| p.id == "k");
    assert_eq!(listed, [asked]);
    assert_eq!(
        ApprovalMode::parse("unattended"),
        Some(ApprovalMode::Unattended)
    );
    assert_eq!(ApprovalMode::parse("never"), None);
}

pub async fn chats_and_minion_chats(store: Arc<dyn Store>) {
    let c = project_with_chat(&*store).await;
    assert!(matches!(
        store.create_chat(&c).await,
        Err(StorageError::AlreadyExists { .. })
    ));
    assert!(matches!(
        store.create_chat(&chat("orphan", "nope", 1)).await,
        Err(StorageError::Invalid(_))
    ));
    let m1 = minion_chat("m1", &c, "call-1", 5);
    let m2 = minion_chat("m2", &c, "call-2", 4);
    store.create_chat(&m1).await.unwrap();
    store.create_chat(&m2).await.unwrap();
    store.create_project(&project("q", 2)).await.unwrap();
    let mut elsewhere = minion_chat("m4", &c, "call-4", 7);
    elsewhere.project_id = "q".into();
    assert!(matches!(
        store.create_chat(&elsewhere).await,
        Err(StorageError::Invalid(_))
    ));
    let mut ghost = minion_chat("m3", &c, "call-3", 6);
    ghost.minion.as_mut().unwrap().parent_chat_id = "ghost".into();
    assert!(store.create_chat(&ghost).await.is_err());
    let all: Vec<String> = store
        .list_chats("p")
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(all, ["c", "m2", "m1"]);
    let minions = store.list_minion_chats("c").await.unwrap();
    assert_eq!(minions, vec![m2.clone(), m1.clone()]);
    assert_eq!(store.get_chat("m1").await.unwrap(), m1);

    let mut updated = c.clone();
    updated.title = "new title".into();
    updated.settings = serde_json::json!({ "model": "x", "temperature": 0.25 });
    updated.totals = TokenTotals {
        input_tokens: 10,
        output_tokens: 20,
        reasoning_tokens: 5,
        cache_creation_tokens: 1,
        cache_read_tokens: 2,
        web_search_count: 3,
        cost: 0.125,
        cost_unreliable: true,
    };
    updated.updated_at = 99;
    store.update_chat(&updated).await.unwrap();
    assert_eq!(store.get_chat("c").await.unwrap(), updated);
    assert!(matches!(
        store.get_chat("zzz").await,
        Err(StorageError::NotFound { .. })
    ));
}

pub async fn message_order_and_replace(store: Arc<dyn Store>) {
    project_with_chat(&*store).await;
    for i in 0..6u64 {
        let seq = store
            .save_message(
                "c",
                &Message::user_text(format!("m{i}"), format!("text {i}")),
            )
            .await
            .unwrap();
        assert_eq!(seq, i);
    }
    // A pending message replaced by its final form keeps its place.
    let replaced = Message::assistant_text("m2", "final form");
    assert_eq!(store.save_message("c", &replaced).await.unwrap(), 2);
    let listed = store.list_messages("c").await.unwrap();
    assert_eq!(
        listed.iter().map(|m| m.seq).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4, 5]
    );
    assert_eq!(listed[2].message, replaced);
    assert_eq!(listed[5].message.text(), "text 5");
    let got = store.get_message("c", "m4").await.unwrap();
    assert_eq!((got.seq, got.message.text()), (4, "text 4".to_owned()));
    assert!(matches!(
        store.get_message("c", "nope").await,
        Err(StorageError::NotFound { .. })
    ));

    assert_eq!(store.truncate_messages("c", Some(3)).await.unwrap(), 2);
    let next = store
        .save_message("c", &Message::user_text("m6", "after"))
        .await
        .unwrap();
    assert!(next > 3, "seqs keep increasing after a truncation");
    let ids: Vec<String> = store
        .list_messages("c")
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.message.id)
        .collect();
    assert_eq!(ids, ["m0", "m1", "m2", "m3", "m6"]);
    assert_eq!(store.truncate_messages("c", None).await.unwrap(), 5);
    assert!(store.list_messages("c").await.unwrap().is_empty());
    assert!(matches!(
        store
            .save_message("ghost", &Message::user_text("x", "y"))
            .await,
        Err(StorageError::NotFound { .. })
    ));
    assert!(matches!(
        store.list_messages("ghost").await,
        Err(StorageError::NotFound { .. })
    ));
}

pub async fn checkpoints_roll_back(store: Arc<dyn Store>) {
    let mut c = project_with_chat(&*store).await;
    let totals = |n: u64| TokenTotals {
        input_tokens: n,
        output_tokens: n,
        cost: n as f64 / 8.0,
        ..Default::default()
    };
    let empty = Checkpoint {
        chat_id: "c".into(),
        name: "empty".into(),
        message_seq: None,
        totals: TokenTotals::default(),
        created_at: 1,
    };
    store.create_checkpoint(&empty).await.unwrap();
    for i in 0..3 {
        store
            .save_message("c", &Message::user_text(format!("m{i}"), "x"))
            .await
            .unwrap();
    }
    let after_two = Checkpoint {
        chat_id: "c".into(),
        name: "two".into(),
        message_seq: Some(1),
        totals: totals(2),
        created_at: 2,
    };
    store.create_checkpoint(&after_two).await.unwrap();
    let after_three = Checkpoint {
        chat_id: "c".into(),
        name: "three".into(),
        message_seq: Some(2),
        totals: totals(3),
        created_at: 3,
    };
    store.create_checkpoint(&after_three).await.unwrap();
    assert!(matches!(
        store.create_checkpoint(&after_two).await,
        Err(StorageError::AlreadyExists { .. })
    ));
    let ghost = Checkpoint {
        chat_id: "ghost".into(),
        ..after_two.clone()
    };
    assert!(matches!(
        store.create_checkpoint(&ghost).await,
        Err(StorageError::NotFound { .. })
    ));
    assert_eq!(
        store.list_checkpoints("c").await.unwrap(),
        vec![empty.clone(), after_two.clone(), after_three.clone()]
    );

    c.totals = totals(9);
    store.update_chat(&c).await.unwrap();
    store
        .save_message("c", &Message::user_text("m3", "x"))
        .await
        .unwrap();

    let back = store.rollback_to_checkpoint("c", "two").await.unwrap();
    assert_eq!(back, after_two);
    let ids: Vec<String> = store
        .list_messages("c")
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.message.id)
        .collect();
    assert_eq!(ids, ["m0", "m1"]);
    assert_eq!(store.get_chat("c").await.unwrap().totals, totals(2));
    assert_eq!(
        store.list_checkpoints("c").await.unwrap(),
        vec![empty.clone(), after_two.clone()]
    );
    let seq = store
        .save_message("c", &Message::user_text("m9", "x"))
        .await
        .unwrap();
    assert!(seq > 1);

    store.rollback_to_checkpoint("c", "empty").await.unwrap();
    assert!(store.list_messages("c").await.unwrap().is_empty());
    assert_eq!(store.list_checkpoints("c").await.unwrap(), vec![empty]);
    assert!(matches!(
        store.rollback_to_checkpoint("c", "two").await,
        Err(StorageError::NotFound { .. })
    ));
    store.delete_checkpoint("c", "empty").await.unwrap();
    assert!(matches!(
        store.delete_checkpoint("c", "empty").await,
        Err(StorageError::NotFound { .. })
    ));
}

pub async fn cascade_delete_chat(store: Arc<dyn Store>) {
    let c = project_with_chat(&*store).await;
    let other = chat("other", "p", 2);
    store.create_chat(&other).await.unwrap();
    let m = minion_chat("m", &c, "call-1", 3);
    let mm = minion_chat("mm", &m, "call-2", 4);
    store.create_chat(&m).await.unwrap();
    store.create_chat(&mm).await.unwrap();
    for id in ["c", "m", "mm", "other"] {
        store
            .save_message(id, &Message::user_text(format!("{id}-0"), "hi"))
            .await
            .unwrap();
        store
            .put_attachment(&attachment(
                &format!("att-{id}"),
                Some(id),
                vec![1, 2, 3],
                1,
            ))
            .await
            .unwrap();
    }
    store
        .put_attachment(&attachment("att-project", None, vec![9], 1))
        .await
        .unwrap();
    store
        .create_checkpoint(&Checkpoint {
            chat_id: "c".into(),
            name: "cp".into(),
            message_seq: Some(0),
            totals: TokenTotals::default(),
            created_at: 1,
        })
        .await
        .unwrap();
    store.create_run(&run_record("r", Some("m"))).await.unwrap();
    store
        .append_events("r", &[event(0), event(1)])
        .await
        .unwrap();

    store.delete_chat("c").await.unwrap();
    for id in ["c", "m", "mm"] {
        assert!(
            matches!(store.get_chat(id).await, Err(StorageError::NotFound { .. })),
            "{id}"
        );
        assert!(store.list_messages(id).await.is_err());
        assert!(matches!(
            store.get_attachment(&format!("att-{id}")).await,
            Err(StorageError::NotFound { .. })
        ));
    }
    assert!(matches!(
        store.get_run("r").await,
        Err(StorageError::NotFound { .. })
    ));
    assert_eq!(store.list_messages("other").await.unwrap().len(), 1);
    let left: Vec<String> = store
        .list_attachments("p")
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.id)
        .collect();
    assert_eq!(left, ["att-other", "att-project"]);
    assert_eq!(store.list_chats("p").await.unwrap(), vec![other]);
    assert!(matches!(
        store.delete_chat("c").await,
        Err(StorageError::NotFound { .. })
    ));
}

pub async fn cascade_delete_project(store: Arc<dyn Store>) {
    let c = project_with_chat(&*store).await;
    store.create_project(&project("keep", 2)).await.unwrap();
    store.create_chat(&chat("kept", "keep", 1)).await.unwrap();
    store
        .create_chat(&minion_chat("m", &c, "call", 2))
        .await
        .unwrap();
    store
        .save_message("m", &Message::user_text("x", "y"))
        .await
        .unwrap();
    store
        .put_attachment(&attachment("a", Some("c"), vec![1], 1))
        .await
        .unwrap();
    let files = ProjectFiles::new(store.clone(), "p");
    files.write("/dir/f.txt", b"data").await.unwrap();
    store.create_task(&task("t", "p")).await.unwrap();
    store
        .create_agent_run(&agent_run("ar", "t", AgentRunStatus::Running, 1))
        .await
        .unwrap();
    store.delete_project("p").await.unwrap();
    assert!(store.list_chats("p").await.unwrap().is_empty());
    assert!(store.get_chat("m").await.is_err());
    assert!(store.get_attachment("a").await.is_err());
    assert!(store.list_files("p", "/").await.unwrap().is_empty());
    assert!(store.get_task("t").await.is_err());
    assert!(store.get_agent_run("ar").await.is_err());
    assert_eq!(store.list_chats("keep").await.unwrap().len(), 1);
}

pub fn attachment(id: &str, chat_id: Option<&str>, data: Vec<u8>, created_at: i64) -> Attachment {
    Attachment {
        meta: AttachmentMeta {
            id: id.into(),
            project_id: "p".into(),
            chat_id: chat_id.map(Into::into),
            media_type: "image/png".into(),
            name: Some(format!("{id}.png")),
            size: data.len() as u64,
            created_at,
        },
        data,
    }
}

pub fn run_record(id: &str, chat_id: Option<&str>) -> RunRecord {
    RunRecord {
        id: id.into(),
        chat_id: chat_id.map(Into::into),
        status: RunStatus::Pending,
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

pub fn event(seq: u64) -> LoopEvent {
    LoopEvent {
        seq,
        path: RunPath::root(),
        kind: EventKind::FirstChunk,
    }
}
