//! Memories kept across runs, and a scope's memories as files.

use std::sync::Arc;

use agentloop_storage::model::{MemoryRecord, MemoryScope};
use agentloop_storage::{StorageError, Store, StoredMemories};
use agentloop_types::{EntryKind, VfsError, VfsFor, WriteOrigin};

use super::project;

fn memory(id: &str, scope: &MemoryScope, path: &str, text: &str, at: i64) -> MemoryRecord {
    MemoryRecord {
        id: id.into(),
        scope: scope.clone(),
        path: path.into(),
        text: text.into(),
        source_run: Some("run-1".into()),
        source_step: Some("call-1".into()),
        created_at: at,
        updated_at: at,
        expires_at: None,
    }
}

fn paths(memories: &[MemoryRecord]) -> Vec<&str> {
    memories.iter().map(|m| m.path.as_str()).collect()
}

pub async fn memories_by_scope_and_path(store: Arc<dyn Store>) {
    let p = MemoryScope::project("p");
    let q = MemoryScope::project("q");
    let ada = MemoryScope::user("p");
    store.create_project(&project("p", 1)).await.unwrap();

    let saved = store
        .save_memory(&memory("m1", &p, "/memories/a.md", "tea, no sugar", 10))
        .await
        .unwrap();
    assert_eq!(saved.id, "m1");
    // Written again at the same path: same memory, new text and source.
    let mut again = memory("m-other", &p, "/memories/a.md", "coffee — «black»", 20);
    again.source_run = Some("run-2".into());
    again.source_step = None;
    let replaced = store.save_memory(&again).await.unwrap();
    assert_eq!(replaced.id, "m1");
    assert_eq!(replaced.created_at, 10);
    assert_eq!(replaced.updated_at, 20);
    assert_eq!(replaced.text, "coffee — «black»");
    assert_eq!(replaced.source_run.as_deref(), Some("run-2"));
    assert_eq!(replaced.source_step, None);
    assert_eq!(store.get_memory("m1").await.unwrap(), replaced);
    assert!(matches!(
        store.get_memory("m-other").await,
        Err(StorageError::NotFound { kind: "memory", .. })
    ));
    // An id is one memory's only.
    assert!(matches!(
        store
            .save_memory(&memory("m1", &p, "/memories/b.md", "x", 21))
            .await,
        Err(StorageError::AlreadyExists { kind: "memory", .. })
    ));

    for (id, scope, path) in [
        ("m2", &p, "/memories/team/b.md"),
        ("m3", &p, "/memories/team/deep/c.md"),
        ("m4", &p, "/memories/teams.md"),
        ("m5", &q, "/memories/a.md"),
        ("m6", &ada, "/memories/a.md"),
    ] {
        store
            .save_memory(&memory(id, scope, path, id, 30))
            .await
            .unwrap();
    }
    let all = store.list_memories(&p, "/", 30).await.unwrap();
    assert_eq!(
        paths(&all),
        [
            "/memories/a.md",
            "/memories/team/b.md",
            "/memories/team/deep/c.md",
            "/memories/teams.md"
        ]
    );
    let team = store.list_memories(&p, "/memories/team", 30).await.unwrap();
    assert_eq!(
        paths(&team),
        ["/memories/team/b.md", "/memories/team/deep/c.md"]
    );
    // Scopes never see each other, even a user and a project of one id.
    let other = store.list_memories(&q, "/", 30).await.unwrap();
    assert_eq!(other.len(), 1);
    assert_eq!(other[0].text, "m5");
    assert_eq!(
        store
            .find_memory(&ada, "/memories/a.md", 30)
            .await
            .unwrap()
            .unwrap()
            .text,
        "m6"
    );
    assert_eq!(
        store
            .find_memory(&MemoryScope::agent("p"), "/memories/a.md", 30)
            .await
            .unwrap(),
        None
    );

    // Expired memories are not read, but a person still finds them by id;
    // a write after the expiry starts a new memory.
    let mut short = memory("m7", &p, "/memories/soon.md", "gone at 50", 40);
    short.expires_at = Some(50);
    store.save_memory(&short).await.unwrap();
    assert!(
        store
            .find_memory(&p, "/memories/soon.md", 49)
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(
        store
            .find_memory(&p, "/memories/soon.md", 50)
            .await
            .unwrap(),
        None
    );
    assert!(
        !paths(&store.list_memories(&p, "/", 50).await.unwrap()).contains(&"/memories/soon.md")
    );
    assert_eq!(store.get_memory("m7").await.unwrap().expires_at, Some(50));
    let fresh = store
        .save_memory(&memory("m8", &p, "/memories/soon.md", "back", 60))
        .await
        .unwrap();
    assert_eq!((fresh.id.as_str(), fresh.created_at), ("m8", 60));
    assert_eq!(fresh.expires_at, None);

    // Moves take the whole tree, and never onto a used path.
    store
        .move_memory_tree(&p, "/memories/team", "/memories/crew", 70)
        .await
        .unwrap();
    let moved = store.list_memories(&p, "/memories/crew", 70).await.unwrap();
    assert_eq!(
        paths(&moved),
        ["/memories/crew/b.md", "/memories/crew/deep/c.md"]
    );
    assert!(moved.iter().all(|m| m.updated_at == 70));
    assert_eq!(moved[0].id, "m2");
    assert!(matches!(
        store
            .move_memory_tree(&p, "/memories/crew/b.md", "/memories/teams.md", 71)
            .await,
        Err(StorageError::AlreadyExists { kind: "memory", .. })
    ));
    assert!(
        store
            .find_memory(&p, "/memories/crew/b.md", 71)
            .await
            .unwrap()
            .is_some()
    );

    // Deleting a tree takes the folder's memories only.
    assert_eq!(
        store
            .delete_memory_tree(&p, "/memories/crew")
            .await
            .unwrap(),
        2
    );
    store.delete_memory("m4").await.unwrap();
    assert!(matches!(
        store.delete_memory("m4").await,
        Err(StorageError::NotFound { kind: "memory", .. })
    ));
    assert_eq!(
        paths(&store.list_memories(&p, "/", 80).await.unwrap()),
        ["/memories/a.md", "/memories/soon.md"]
    );

    // Deleting a project forgets its memories, not its owner's.
    store.delete_project("p").await.unwrap();
    assert!(store.list_memories(&p, "/", 80).await.unwrap().is_empty());
    assert_eq!(store.list_memories(&ada, "/", 80).await.unwrap().len(), 1);
    assert_eq!(store.list_memories(&q, "/", 80).await.unwrap().len(), 1);
}

pub async fn memories_as_files(store: Arc<dyn Store>) {
    let scope = MemoryScope::user("ada");
    let memories = StoredMemories::new(store.clone(), scope.clone());
    let origin = |run: &str, step: &str| WriteOrigin {
        run_id: run.into(),
        step: step.into(),
    };
    let first = memories.vfs_for(origin("run-a", "call-1"));
    first.create_dir("/memories").await.unwrap();
    assert!(first.list("/memories").await.unwrap().is_empty());
    first
        .write("/memories/people/ada.md", "likes tea".as_bytes())
        .await
        .unwrap();
    first
        .write("/memories/notes.md", "ünïcode ✓".as_bytes())
        .await
        .unwrap();
    assert!(matches!(
        first.write("/memories/bin", &[0xff, 0xfe]).await,
        Err(VfsError::NotText(_))
    ));
    assert!(matches!(
        first.write("/memories/notes.md/x", b"x").await,
        Err(VfsError::NotADirectory(_))
    ));

    // Another call (another run) reads what the first wrote, with its source.
    let second = memories.vfs_for(origin("run-b", "call-9"));
    assert_eq!(
        second.read_to_string("/memories/notes.md").await.unwrap(),
        "ünïcode ✓"
    );
    let listing = second.list("/memories").await.unwrap();
    let shown: Vec<(&str, EntryKind)> = listing.iter().map(|e| (e.name.as_str(), e.kind)).collect();
    assert_eq!(
        shown,
        [
            ("notes.md", EntryKind::File),
            ("people", EntryKind::Directory)
        ]
    );
    assert_eq!(listing[0].size, "ünïcode ✓".len() as u64);
    let stored = store
        .find_memory(&scope, "/memories/people/ada.md", i64::MAX - 1)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.source_run.as_deref(), Some("run-a"));
    assert_eq!(stored.source_step.as_deref(), Some("call-1"));
    second
        .write("/memories/people/ada.md", b"likes coffee now")
        .await
        .unwrap();
    let updated = store.get_memory(&stored.id).await.unwrap();
    assert_eq!(updated.text, "likes coffee now");
    assert_eq!(
        (
            updated.source_run.as_deref(),
            updated.source_step.as_deref()
        ),
        (Some("run-b"), Some("call-9"))
    );

    second
        .rename("/memories/people", "/memories/friends")
        .await
        .unwrap();
    assert!(matches!(
        second.read("/memories/people/ada.md").await,
        Err(VfsError::NotFound(_))
    ));
    assert_eq!(
        second
            .read_to_string("/memories/friends/ada.md")
            .await
            .unwrap(),
        "likes coffee now"
    );
    assert!(matches!(
        second
            .rename("/memories/notes.md", "/memories/friends/ada.md")
            .await,
        Err(VfsError::AlreadyExists(_))
    ));
    second.delete("/memories/friends").await.unwrap();
    assert!(second.stat("/memories/friends").await.unwrap().is_none());

    // Another scope's files are its own.
    let bob = StoredMemories::new(store.clone(), MemoryScope::user("bob"))
        .vfs_for(origin("run-c", "call-1"));
    assert!(matches!(
        bob.read("/memories/notes.md").await,
        Err(VfsError::NotFound(_))
    ));
}

pub async fn memories_recalled_by_relevance(store: Arc<dyn Store>) {
    use agentloop_storage::MemoryRecall;
    use agentloop_types::Retriever;

    let scope = MemoryScope::project("p");
    for (id, path, text) in [
        (
            "r1",
            "/memories/drinks.md",
            "Ada takes her tea without sugar.",
        ),
        (
            "r2",
            "/memories/deploy.md",
            "Deploys go out on Tuesdays after the standup.",
        ),
        (
            "r3",
            "/memories/tea-shop.md",
            "The tea shop on the corner closes at six.",
        ),
    ] {
        store
            .save_memory(&memory(id, &scope, path, text, 1))
            .await
            .unwrap();
    }
    let mut gone = memory("r4", &scope, "/memories/old.md", "Tea with sugar, once.", 1);
    gone.expires_at = Some(2);
    store.save_memory(&gone).await.unwrap();
    store
        .save_memory(&memory(
            "r5",
            &MemoryScope::project("q"),
            "/memories/a.md",
            "tea sugar",
            1,
        ))
        .await
        .unwrap();

    let recall = MemoryRecall::new(store.clone(), scope);
    let found = recall
        .retrieve("Does Ada take sugar in her tea?", 5)
        .await
        .unwrap();
    let ids: Vec<&str> = found.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(
        ids,
        ["r1", "r3"],
        "the best first; no other scope, nothing expired, nothing unrelated"
    );
    assert_eq!(found[0].source, "/memories/drinks.md");
    assert_eq!(found[0].text, "Ada takes her tea without sugar.");
    assert!(found[0].score > found[1].score);
    assert_eq!(recall.retrieve("tea", 1).await.unwrap().len(), 1);
    assert!(recall.retrieve("kubernetes", 5).await.unwrap().is_empty());

    // Over a project's and a user's memories: ranked together, the user's
    // named with their scope; a third scope stays out.
    store
        .save_memory(&memory(
            "r6",
            &MemoryScope::user("ada"),
            "/memories/drinks.md",
            "Ada drinks tea, sugar never.",
            1,
        ))
        .await
        .unwrap();
    let both = MemoryRecall::over(
        store.clone(),
        vec![MemoryScope::project("p"), MemoryScope::user("ada")],
    );
    let found = both
        .retrieve("Does Ada take sugar in her tea?", 5)
        .await
        .unwrap();
    let mut sources: Vec<&str> = found.iter().map(|p| p.source.as_str()).collect();
    sources.sort_unstable();
    assert_eq!(
        sources,
        [
            "/memories/drinks.md",
            "/memories/tea-shop.md",
            "user:ada /memories/drinks.md"
        ]
    );
    // What a recall reads, in one read: the first scope's memories first,
    // each scope's by path, nothing expired.
    let read = store
        .recall_memories(&[MemoryScope::user("ada"), MemoryScope::project("p")], 3)
        .await
        .unwrap();
    let ids: Vec<&str> = read.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["r6", "r2", "r1", "r3"]);
    assert!(store.recall_memories(&[], 3).await.unwrap().is_empty());
}
