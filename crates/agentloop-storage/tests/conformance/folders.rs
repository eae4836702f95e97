//! Project folders never overlap.

use std::sync::Arc;

use agentloop_storage::{StorageError, Store, folders_overlap};

use super::*;

pub async fn project_folders_never_overlap(store: Arc<dyn Store>) {
    assert!(folders_overlap("/r/a", "/r/a"));
    assert!(folders_overlap("/r/a/b", "/r/a"));
    assert!(folders_overlap("/r/a", "/r/a/b"));
    assert!(!folders_overlap("/r/a", "/r/ab"));
    assert!(!folders_overlap("/r/ab/c", "/r/a"));

    store
        .create_project_in_folder(&project("p1", 1), "/r/a")
        .await
        .unwrap();
    for (id, folder) in [("p2", "/r/a"), ("p3", "/r/a/b"), ("p4", "/r")] {
        match store
            .create_project_in_folder(&project(id, 2), folder)
            .await
        {
            Err(StorageError::FolderTaken { project_id, .. }) => assert_eq!(project_id, "p1"),
            other => panic!("{folder}: {other:?}"),
        }
        assert!(matches!(
            store.get_project(id).await,
            Err(StorageError::NotFound { .. })
        ));
    }
    store
        .create_project_in_folder(&project("p5", 3), "/r/ab")
        .await
        .unwrap();
    // A taken id is refused before the folder is looked at.
    assert!(matches!(
        store
            .create_project_in_folder(&project("p1", 4), "/s")
            .await,
        Err(StorageError::AlreadyExists { .. })
    ));
    // Deleting a project frees its folder.
    store.delete_project("p1").await.unwrap();
    store
        .create_project_in_folder(&project("p6", 5), "/r/a/b")
        .await
        .unwrap();
}

pub async fn concurrent_folder_claims(store: Arc<dyn Store>) {
    // Sixteen claims on nested folders at once: exactly one wins.
    let claims = (0..16).map(|i| {
        let store = store.clone();
        async move {
            let folder = format!("/r/x{}", "/y".repeat(i % 4));
            store
                .create_project_in_folder(&project(&format!("q{i}"), i as i64), &folder)
                .await
        }
    });
    let results = futures::future::join_all(claims).await;
    let won = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(won, 1, "{results:?}");
    for result in results.into_iter().filter(Result::is_err) {
        assert!(
            matches!(result, Err(StorageError::FolderTaken { .. })),
            "{result:?}"
        );
    }
}
