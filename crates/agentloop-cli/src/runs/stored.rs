//! The database and run a `runs` command reads, each found or refused in
//! one line.

use std::sync::Arc;

use agentloop_storage::model::RunRecord;
use agentloop_storage::{StorageError, Store};

use crate::db::{self, Access};
use crate::out::Failure;

/// The database `db`, or one line saying it holds nothing.
pub(super) async fn existing(db: Option<&str>) -> Result<Arc<dyn Store>, Failure> {
    db::open(db, Access::Read).await?.ok_or_else(|| {
        Failure::Runtime(format!("no runs in {} (no database yet)", db::describe(db)))
    })
}

/// Run `id` of `store`, or one line saying it is not there.
pub(super) async fn existing_run(
    store: &dyn Store,
    id: &str,
    db: Option<&str>,
) -> Result<RunRecord, Failure> {
    match store.get_run(id).await {
        Ok(run) => Ok(run),
        Err(StorageError::NotFound { .. }) => Err(Failure::Runtime(format!(
            "no run {id} in {} (see `agentloop runs list`)",
            db::describe(db)
        ))),
        Err(e) => Err(Failure::Runtime(e.to_string())),
    }
}
