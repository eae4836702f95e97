//! The conformance suite against the in-memory backend.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod conformance;

use std::sync::Arc;

use agentloop_storage::MemoryStore;
use conformance::Fixture;

async fn open() -> Option<Fixture> {
    Some(Fixture::new(Arc::new(MemoryStore::new())))
}

conformance_suite!(open());
