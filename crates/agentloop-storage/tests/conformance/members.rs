//! Project members and their roles.

use std::sync::Arc;

use agentloop_storage::{ProjectMember, ProjectRole, StorageError, Store};

use super::{project, user};

fn member(project_id: &str, user_id: &str, role: ProjectRole, added_at: i64) -> ProjectMember {
    ProjectMember {
        project_id: project_id.into(),
        user_id: user_id.into(),
        role,
        added_at,
    }
}

pub async fn project_members_and_roles(store: Arc<dyn Store>) {
    for (id, at) in [("p1", 1), ("p2", 2)] {
        store.create_project(&project(id, at)).await.unwrap();
    }
    for (id, name) in [("ed", "Edith"), ("vi", "Vic"), ("gone", "Gone")] {
        store.create_user(&user(id, name, 1)).await.unwrap();
    }
    assert_eq!(store.project_role("p1", "ed").await.unwrap(), None);
    store
        .add_project_member(&member("p1", "vi", ProjectRole::Viewer, 5))
        .await
        .unwrap();
    store
        .add_project_member(&member("p1", "ed", ProjectRole::Editor, 5))
        .await
        .unwrap();
    store
        .add_project_member(&member("p2", "ed", ProjectRole::Owner, 3))
        .await
        .unwrap();
    store
        .add_project_member(&member("p2", "gone", ProjectRole::Viewer, 4))
        .await
        .unwrap();
    assert_eq!(
        store
            .add_project_member(&member("p1", "ed", ProjectRole::Viewer, 9))
            .await,
        Err(StorageError::exists("member", "ed")),
        "one role per member"
    );
    for (project_id, user_id) in [("p1", "nobody"), ("nowhere", "ed")] {
        assert!(
            matches!(
                store
                    .add_project_member(&member(project_id, user_id, ProjectRole::Viewer, 1))
                    .await,
                Err(StorageError::Invalid(_))
            ),
            "{project_id} {user_id}"
        );
    }
    assert_eq!(
        store.project_role("p1", "ed").await.unwrap(),
        Some(ProjectRole::Editor)
    );
    assert_eq!(
        store.project_role("p2", "ed").await.unwrap(),
        Some(ProjectRole::Owner)
    );
    assert_eq!(store.project_role("p2", "vi").await.unwrap(), None);
    let in_p1: Vec<_> = store
        .list_project_members("p1")
        .await
        .unwrap()
        .into_iter()
        .map(|m| (m.user_id, m.role))
        .collect();
    assert_eq!(
        in_p1,
        [
            ("ed".to_owned(), ProjectRole::Editor),
            ("vi".to_owned(), ProjectRole::Viewer)
        ],
        "first added first, ties by user"
    );
    let of_ed: Vec<_> = store
        .list_memberships("ed")
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.project_id)
        .collect();
    assert_eq!(of_ed, ["p2", "p1"], "first added first");

    store
        .set_project_role("p1", "vi", ProjectRole::Editor)
        .await
        .unwrap();
    assert_eq!(
        store.project_role("p1", "vi").await.unwrap(),
        Some(ProjectRole::Editor)
    );
    assert_eq!(
        store.set_project_role("p2", "vi", ProjectRole::Owner).await,
        Err(StorageError::not_found("member", "vi"))
    );
    store.remove_project_member("p1", "vi").await.unwrap();
    assert_eq!(store.project_role("p1", "vi").await.unwrap(), None);
    assert_eq!(
        store.remove_project_member("p1", "vi").await,
        Err(StorageError::not_found("member", "vi"))
    );

    // Members go with their user and with their project.
    store.delete_user("gone").await.unwrap();
    assert_eq!(store.project_role("p2", "gone").await.unwrap(), None);
    assert!(store.list_memberships("gone").await.unwrap().is_empty());
    store.delete_project("p2").await.unwrap();
    assert!(store.list_project_members("p2").await.unwrap().is_empty());
    let of_ed: Vec<_> = store
        .list_memberships("ed")
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.project_id)
        .collect();
    assert_eq!(of_ed, ["p1"]);
}
