//! Export and import of a whole project.

use std::sync::Arc;

use agentloop_storage::model::{Attachment, AttachmentMeta, Checkpoint};
use agentloop_storage::{
    MemoryStore, ProjectExport, ProjectFiles, Store, export_project, import_project,
};
use agentloop_types::{Message, TokenTotals, Vfs};

use super::*;

async fn build_project(store: &Arc<dyn Store>) {
    let c = project_with_chat(&**store).await;
    let second = chat("c2", "p", 0);
    store.create_chat(&second).await.unwrap();
    let (call, result) = tool_exchange("t1", "call-1");
    store
        .save_message("c", &Message::user_text("u1", "start ü 🙂"))
        .await
        .unwrap();
    store.save_message("c", &call).await.unwrap();
    store.save_message("c", &result).await.unwrap();
    store.truncate_messages("c", Some(1)).await.unwrap();
    store.save_message("c", &result).await.unwrap(); // seq gap: 0, 1, 3
    let mut with_totals = c.clone();
    with_totals.totals = TokenTotals {
        input_tokens: 12,
        output_tokens: 7,
        cost: 0.000_375,
        ..Default::default()
    };
    store.update_chat(&with_totals).await.unwrap();
    let m = minion_chat("minion-1", &c, "call-1", 5);
    store.create_chat(&m).await.unwrap();
    store
        .save_message("minion-1", &Message::user_text("mu", "sub task"))
        .await
        .unwrap();
    store
        .save_message("minion-1", &Message::assistant_text("ma", "sub answer"))
        .await
        .unwrap();
    store
        .create_chat(&minion_chat("minion-2", &m, "call-x", 6))
        .await
        .unwrap();
    store
        .create_checkpoint(&Checkpoint {
            chat_id: "c".into(),
            name: "before tools".into(),
            message_seq: Some(0),
            totals: TokenTotals::default(),
            created_at: 3,
        })
        .await
        .unwrap();
    for (id, chat_id, data) in [
        ("img", Some("c"), vec![0u8, 255, 1, 2, 128]),
        ("doc", None, b"plain".to_vec()),
    ] {
        store
            .put_attachment(&Attachment {
                meta: AttachmentMeta {
                    id: id.into(),
                    project_id: "p".into(),
                    chat_id: chat_id.map(Into::into),
                    media_type: "application/octet-stream".into(),
                    name: None,
                    size: 0,
                    created_at: 4,
                },
                data,
            })
            .await
            .unwrap();
    }
    let files = ProjectFiles::new(store.clone(), "p");
    files
        .write("/memories/notes.md", "remember ✓".as_bytes())
        .await
        .unwrap();
    files
        .write("/bin/data", &[0, 1, 2, 254, 255])
        .await
        .unwrap();
    files.create_dir("/empty").await.unwrap();
}

pub async fn export_import_round_trip(store: Arc<dyn Store>) {
    build_project(&store).await;
    let exported = export_project(&*store, "p").await.unwrap();
    assert_eq!(exported.chats.len(), 4);
    assert_eq!(exported.chats[0].chat.id, "c2");
    let order: Vec<&str> = exported.chats.iter().map(|c| c.chat.id.as_str()).collect();
    assert!(order.iter().position(|&c| c == "minion-1") > order.iter().position(|&c| c == "c"));
    assert!(
        order.iter().position(|&c| c == "minion-2") > order.iter().position(|&c| c == "minion-1")
    );
    let seqs: Vec<u64> = exported
        .chats
        .iter()
        .find(|c| c.chat.id == "c")
        .unwrap()
        .messages
        .iter()
        .map(|m| m.seq)
        .collect();
    assert_eq!(seqs, [0, 1, 3]);
    assert_eq!(exported.attachments.len(), 2);
    assert_eq!(exported.files.len(), 5);
    let json = serde_json::to_string_pretty(&exported).unwrap();
    let parsed: ProjectExport = serde_json::from_str(&json).unwrap();
    assert_eq!(parsed, exported);

    // Into a fresh in-memory store.
    let memory: Arc<dyn Store> = Arc::new(MemoryStore::new());
    import_project(&*memory, &parsed).await.unwrap();
    let again = export_project(&*memory, "p").await.unwrap();
    assert_eq!(again, exported);
    assert_eq!(serde_json::to_string_pretty(&again).unwrap(), json);

    // Back into this backend once the project is gone.
    store.delete_project("p").await.unwrap();
    import_project(&*store, &parsed).await.unwrap();
    let back = export_project(&*store, "p").await.unwrap();
    assert_eq!(back, exported);
    assert_eq!(serde_json::to_string_pretty(&back).unwrap(), json);
    // Appends continue after the restored seqs.
    let seq = store
        .save_message("c", &Message::user_text("next", "more"))
        .await
        .unwrap();
    assert!(seq > 3);
    // Importing over an existing project is refused and changes nothing.
    assert!(import_project(&*store, &parsed).await.is_err());
    assert_eq!(store.list_messages("c").await.unwrap().len(), 4);

    // A document that fails half-way leaves nothing behind.
    let mut broken = parsed.clone();
    broken.project.id = "p-broken".into();
    for chat in &mut broken.chats {
        chat.chat.project_id = "p-broken".into();
        chat.chat.id = format!("{}-b", chat.chat.id);
        if let Some(link) = chat.chat.minion.as_mut() {
            link.parent_chat_id = format!("{}-b", link.parent_chat_id);
        }
        for checkpoint in &mut chat.checkpoints {
            checkpoint.chat_id = format!("{}-b", checkpoint.chat_id);
        }
    }
    // Attachment ids are global and already taken: the import fails late.
    for attachment in &mut broken.attachments {
        attachment.meta.project_id = "p-broken".into();
        attachment.meta.chat_id = attachment.meta.chat_id.as_ref().map(|c| format!("{c}-b"));
    }
    assert!(import_project(&*store, &broken).await.is_err());
    assert!(store.get_project("p-broken").await.is_err());
    assert!(store.get_chat("c-b").await.is_err());
    assert_eq!(export_project(&*store, "p").await.unwrap().chats.len(), 4);
}
