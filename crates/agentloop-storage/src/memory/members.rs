//! Project members of the in-memory backend.

use async_trait::async_trait;

use super::MemoryStore;
use crate::error::{StorageError, StorageResult};
use crate::members::{MembersStore, ProjectMember, ProjectRole};

/// First added first, ties by `tie`.
fn oldest_first(members: &mut [ProjectMember], tie: fn(&ProjectMember) -> &str) {
    members.sort_by(|a, b| (a.added_at, tie(a)).cmp(&(b.added_at, tie(b))));
}

#[async_trait]
impl MembersStore for MemoryStore {
    async fn add_project_member(&self, member: &ProjectMember) -> StorageResult<()> {
        let mut state = self.lock();
        if !state.projects.contains_key(&member.project_id)
            || !state.users.contains_key(&member.user_id)
        {
            return Err(StorageError::Invalid(format!(
                "member {} of project {} refers to a record that does not exist",
                member.user_id, member.project_id
            )));
        }
        let key = (member.project_id.clone(), member.user_id.clone());
        if state.members.contains_key(&key) {
            return Err(StorageError::exists("member", &member.user_id));
        }
        state.members.insert(key, member.clone());
        Ok(())
    }

    async fn project_role(
        &self,
        project_id: &str,
        user_id: &str,
    ) -> StorageResult<Option<ProjectRole>> {
        let key = (project_id.to_owned(), user_id.to_owned());
        Ok(self.lock().members.get(&key).map(|m| m.role))
    }

    async fn set_project_role(
        &self,
        project_id: &str,
        user_id: &str,
        role: ProjectRole,
    ) -> StorageResult<()> {
        let key = (project_id.to_owned(), user_id.to_owned());
        match self.lock().members.get_mut(&key) {
            Some(member) => {
                member.role = role;
                Ok(())
            }
            None => Err(StorageError::not_found("member", user_id)),
        }
    }

    async fn remove_project_member(&self, project_id: &str, user_id: &str) -> StorageResult<()> {
        let key = (project_id.to_owned(), user_id.to_owned());
        self.lock()
            .members
            .remove(&key)
            .map(|_| ())
            .ok_or_else(|| StorageError::not_found("member", user_id))
    }

    async fn list_project_members(&self, project_id: &str) -> StorageResult<Vec<ProjectMember>> {
        let mut members: Vec<ProjectMember> = self
            .lock()
            .members
            .values()
            .filter(|m| m.project_id == project_id)
            .cloned()
            .collect();
        oldest_first(&mut members, |m| &m.user_id);
        Ok(members)
    }

    async fn list_memberships(&self, user_id: &str) -> StorageResult<Vec<ProjectMember>> {
        let mut members: Vec<ProjectMember> = self
            .lock()
            .members
            .values()
            .filter(|m| m.user_id == user_id)
            .cloned()
            .collect();
        oldest_first(&mut members, |m| &m.project_id);
        Ok(members)
    }
}
