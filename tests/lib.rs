//! Workspace-level integration tests; see `tests/`.
