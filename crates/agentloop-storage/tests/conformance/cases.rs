//! Single-writer cases: CRUD, ordering, cascades, files, runs, tasks.

use std::sync::Arc;

use agentloop_storage::model::{
    AgentRunStatus, Attachment, AttachmentMeta, Checkpoint, Conversation, RunRecord, RunStatus,
};
use agentloop_storage::{ProjectFiles, StorageError, Store, StoreAttachmentLoader};
use agentloop_types::{
    AttachmentError, AttachmentLoader, EntryKind, EventKind, LoopEvent, Message, RunPath, RunState,
    TokenTotals, Vfs, VfsError,
};

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
    store.delete_project("a").await.unwrap();
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

fn attachment(id: &str, chat_id: Option<&str>, data: Vec<u8>, created_at: i64) -> Attachment {
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
        lease_owner: None,
        lease_expires_at: None,
        created_at: 1,
        updated_at: 1,
    }
}

fn event(seq: u64) -> LoopEvent {
    LoopEvent {
        seq,
        path: RunPath::root(),
        kind: EventKind::FirstChunk,
    }
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

pub async fn attachments_and_loader(store: Arc<dyn Store>) {
    project_with_chat(&*store).await;
    let bytes: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
    let mut a = attachment("a1", Some("c"), bytes.clone(), 2);
    a.meta.size = 0; // the store sets it from the data
    store.put_attachment(&a).await.unwrap();
    store
        .put_attachment(&attachment("a0", None, Vec::new(), 1))
        .await
        .unwrap();
    assert!(matches!(
        store.put_attachment(&a).await,
        Err(StorageError::AlreadyExists { .. })
    ));
    let got = store.get_attachment("a1").await.unwrap();
    assert_eq!(got.data, bytes);
    assert_eq!(got.meta.size, 5000);
    assert_eq!(got.meta.chat_id.as_deref(), Some("c"));
    let listed = store.list_attachments("p").await.unwrap();
    assert_eq!(
        listed.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
        ["a0", "a1"]
    );
    assert_eq!(listed[1], got.meta);
    assert!(store.get_attachment("a0").await.unwrap().data.is_empty());

    let loader = StoreAttachmentLoader(store.clone());
    let loaded = loader.load("a1").await.unwrap();
    assert_eq!(
        (loaded.media_type.as_str(), loaded.data),
        ("image/png", bytes)
    );
    assert_eq!(
        loader.load("nope").await,
        Err(AttachmentError::NotFound("nope".into()))
    );

    store.delete_attachment("a1").await.unwrap();
    assert!(matches!(
        store.delete_attachment("a1").await,
        Err(StorageError::NotFound { .. })
    ));
    store.create_project(&project("q", 2)).await.unwrap();
    let mut elsewhere = attachment("elsewhere", Some("c"), vec![1], 1);
    elsewhere.meta.project_id = "q".into();
    assert!(matches!(
        store.put_attachment(&elsewhere).await,
        Err(StorageError::Invalid(_))
    ));
    assert!(
        store
            .put_attachment(&attachment("bad", Some("ghost"), vec![1], 1))
            .await
            .is_err()
    );
}

pub async fn files_as_vfs(store: Arc<dyn Store>) {
    store.create_project(&project("p", 1)).await.unwrap();
    store.create_project(&project("q", 2)).await.unwrap();
    let files = ProjectFiles::new(store.clone(), "p");
    let other = ProjectFiles::new(store.clone(), "q");
    files.write("notes/today.md", b"# today").await.unwrap();
    files.write("/notes/sub/deep.txt", b"deep").await.unwrap();
    files.write("/notes.txt", b"sibling").await.unwrap();
    files
        .write("/notes0", b"after slash in byte order")
        .await
        .unwrap();
    other
        .write("/notes/today.md", b"other project")
        .await
        .unwrap();
    assert_eq!(files.read("/notes/today.md").await.unwrap(), b"# today");
    assert_eq!(
        other.read("/notes/today.md").await.unwrap(),
        b"other project"
    );
    let listing = files.list("/notes").await.unwrap();
    let names: Vec<(&str, EntryKind)> = listing.iter().map(|e| (e.name.as_str(), e.kind)).collect();
    assert_eq!(
        names,
        [("sub", EntryKind::Directory), ("today.md", EntryKind::File)]
    );
    assert_eq!(listing[1].path, "/notes/today.md");
    assert_eq!(listing[1].size, 7);
    let root: Vec<String> = files
        .list("/")
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(root, ["notes", "notes.txt", "notes0"]);
    assert!(files.stat("/notes").await.unwrap().unwrap().is_dir());
    assert_eq!(files.stat("/missing").await.unwrap(), None);
    assert!(matches!(
        files.read("/notes").await,
        Err(VfsError::IsADirectory(_))
    ));
    assert!(matches!(
        files.read("/nope").await,
        Err(VfsError::NotFound(_))
    ));
    assert!(matches!(
        files.write("/notes.txt/x", b"").await,
        Err(VfsError::NotADirectory(_))
    ));
    assert!(matches!(
        files.list("/notes.txt").await,
        Err(VfsError::NotADirectory(_))
    ));
    assert!(files.read("/../etc/passwd").await.is_err());

    files.rename("/notes", "/archive/2024").await.unwrap();
    assert_eq!(
        files.read("/archive/2024/sub/deep.txt").await.unwrap(),
        b"deep"
    );
    assert!(files.stat("/notes/today.md").await.unwrap().is_none());
    assert_eq!(files.read("/notes.txt").await.unwrap(), b"sibling");
    assert_eq!(
        files.read("/notes0").await.unwrap(),
        b"after slash in byte order"
    );
    assert!(matches!(
        files.rename("/archive", "/archive/inner").await,
        Err(VfsError::InvalidPath { .. })
    ));
    assert!(matches!(
        files.rename("/notes.txt", "/notes0").await,
        Err(VfsError::AlreadyExists(_))
    ));

    files.delete("/archive").await.unwrap();
    assert!(
        files
            .stat("/archive/2024/sub/deep.txt")
            .await
            .unwrap()
            .is_none()
    );
    assert!(matches!(
        files.delete("/archive").await,
        Err(VfsError::NotFound(_))
    ));
    files.create_dir("/empty/dir").await.unwrap();
    files.create_dir("/empty/dir").await.unwrap();
    assert!(files.list("/empty/dir").await.unwrap().is_empty());
    let all: Vec<String> = store
        .list_files("p", "/")
        .await
        .unwrap()
        .into_iter()
        .map(|f| f.path)
        .collect();
    assert_eq!(all, ["/empty", "/empty/dir", "/notes.txt", "/notes0"]);
}

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

    store
        .set_agent_run_status("a1", AgentRunStatus::Completed, Some(5))
        .await
        .unwrap();
    assert_eq!(store.active_agent_run("t").await.unwrap(), None);
    store
        .create_agent_run(&agent_run("a2", "t", AgentRunStatus::Running, 6))
        .await
        .unwrap();
    assert_eq!(
        store
            .set_agent_run_status("a1", AgentRunStatus::Running, None)
            .await,
        Err(StorageError::ActiveAgentRunExists {
            task_id: "t".into()
        })
    );
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

    // The recovery path: marking the workflow complete completes running runs.
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

    // Deleting the chat unlinks the conversation.
    store.delete_chat("c").await.unwrap();
    assert_eq!(store.get_conversation("conv1").await.unwrap().chat_id, None);
}

pub async fn large_messages(store: Arc<dyn Store>) {
    project_with_chat(&*store).await;
    let big: String = "0123456789abcdef".repeat(65_536); // 1 MiB
    let message = Message::user_text("big", big.clone());
    store.save_message("c", &message).await.unwrap();
    let mixed: String = "ü日🙂".repeat(100_000);
    store
        .save_message("c", &Message::assistant_text("big2", mixed.clone()))
        .await
        .unwrap();
    let listed = store.list_messages("c").await.unwrap();
    assert_eq!(listed[0].message, message);
    assert_eq!(listed[1].message.text(), mixed);
    let bytes: Vec<u8> = (0..1_048_576u32).map(|i| (i % 251) as u8).collect();
    store
        .put_attachment(&attachment("blob", Some("c"), bytes.clone(), 1))
        .await
        .unwrap();
    assert_eq!(store.get_attachment("blob").await.unwrap().data, bytes);
    let files = ProjectFiles::new(store.clone(), "p");
    files.write("/big.bin", &bytes).await.unwrap();
    assert_eq!(files.read("/big.bin").await.unwrap(), bytes);
}

pub async fn non_ascii_text(store: Arc<dyn Store>) {
    let id = "プロジェクト-ü";
    let mut p = project(id, 1);
    p.name = "Ünïcødé 项目 🚀".into();
    p.settings =
        serde_json::json!({ "système": "réponds en français", "emoji": "👩‍💻", "rtl": "مرحبا" });
    store.create_project(&p).await.unwrap();
    assert_eq!(store.get_project(id).await.unwrap(), p);
    let mut c = chat("чат-1", id, 1);
    c.title = "Ça va? 你好 \u{0301}e\u{0301}".into();
    store.create_chat(&c).await.unwrap();
    assert_eq!(store.get_chat("чат-1").await.unwrap(), c);
    let texts = [
        "日本語のテキスト",
        "emoji 🙂🙃 ZWJ 👨‍👩‍👧",
        "NUL-free \u{7f} control \t\n",
        "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
        "'; DROP TABLE messages; --",
    ];
    for (i, text) in texts.iter().enumerate() {
        store
            .save_message(
                "чат-1",
                &Message::user_text(format!("メッセージ{i}"), *text),
            )
            .await
            .unwrap();
    }
    let got: Vec<String> = store
        .list_messages("чат-1")
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.message.text())
        .collect();
    assert_eq!(got, texts);
    let files = ProjectFiles::new(store.clone(), id);
    files
        .write("/папка/файл ü.md", "contenu é 中文".as_bytes())
        .await
        .unwrap();
    assert_eq!(
        files.read_to_string("/папка/файл ü.md").await.unwrap(),
        "contenu é 中文"
    );
    let names: Vec<String> = files
        .list("/папка")
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["файл ü.md"]);
}
