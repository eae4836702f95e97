//! Attachments, files, large and non-ASCII content.

use std::sync::Arc;

use agentloop_storage::{ProjectFiles, StorageError, Store, StoreAttachmentLoader};
use agentloop_types::{AttachmentError, AttachmentLoader, EntryKind, Message, Vfs, VfsError};

use super::cases::attachment;
use super::*;

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
