//! A project's memories: what its runs' memory tool wrote, listed, edited
//! and deleted by the project's owner.

use agentloop_storage::ProjectRole;
use agentloop_storage::model::{MemoryRecord, MemoryScope, now_millis};

use super::owned::owned_project;
use crate::http::error::ApiError;
use crate::http::extract::check_id;
use crate::http::requests::{Change, MemoryChange};
use crate::state::AppState;
use crate::users::User;

/// The project's live memories, sorted by path.
pub async fn memories(
    state: &AppState,
    user: &User,
    project_id: &str,
) -> Result<Vec<MemoryRecord>, ApiError> {
    let project = owned_project(state, user, project_id, ProjectRole::Viewer).await?;
    Ok(state
        .store
        .list_memories(&MemoryScope::project(&project.id), "/", now_millis())
        .await?)
}

/// One of the project's memories (404 for an unknown one or another
/// project's), expired or not.
pub async fn memory(
    state: &AppState,
    user: &User,
    project_id: &str,
    memory_id: &str,
    needed: ProjectRole,
) -> Result<MemoryRecord, ApiError> {
    let project = owned_project(state, user, project_id, needed).await?;
    check_id(memory_id, "memory")?;
    let found = state.store.get_memory(memory_id).await?;
    if found.scope == MemoryScope::project(&project.id) {
        Ok(found)
    } else {
        Err(ApiError::not_found("memory not found"))
    }
}

/// Changes a memory's text or expiry; the run it came from stays linked.
pub async fn edit_memory(
    state: &AppState,
    user: &User,
    project_id: &str,
    memory_id: &str,
    change: MemoryChange,
) -> Result<MemoryRecord, ApiError> {
    let mut edited = memory(state, user, project_id, memory_id, ProjectRole::Editor).await?;
    if let Some(text) = change.text {
        edited.text = text;
    }
    match change.expires_at {
        Change::Keep => {}
        Change::Clear => edited.expires_at = None,
        Change::Set(at) => edited.expires_at = Some(at),
    }
    edited.updated_at = now_millis();
    Ok(state.store.save_memory(&edited).await?)
}

/// Deletes a memory.
pub async fn delete_memory(
    state: &AppState,
    user: &User,
    project_id: &str,
    memory_id: &str,
) -> Result<(), ApiError> {
    let gone = memory(state, user, project_id, memory_id, ProjectRole::Editor).await?;
    Ok(state.store.delete_memory(&gone.id).await?)
}
