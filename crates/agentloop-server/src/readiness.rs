//! Whether the instance is ready to serve. A host that must finish
//! something after the listener is up (registering its service endpoint
//! with a durable engine) says what it waits for; meanwhile
//! `GET /api/health` answers 503 naming it and every other route 503 with
//! the same reason, so a probe or a person learns at once why nothing
//! works yet rather than meeting a silent listener.

use std::sync::{Mutex, PoisonError};

/// What the instance still waits for before it serves; nothing by default.
#[derive(Debug, Default)]
pub struct Readiness {
    waiting_for: Mutex<Option<String>>,
}

impl Readiness {
    /// The instance waits for `what` (e.g. "restate: registering the
    /// worker endpoint …") until [`Readiness::ready`].
    pub fn wait_for(&self, what: impl Into<String>) {
        *self.lock() = Some(what.into());
    }

    /// The instance serves.
    pub fn ready(&self) {
        *self.lock() = None;
    }

    /// What the instance waits for; `None` once it serves.
    pub fn waiting_for(&self) -> Option<String> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.waiting_for
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instance_waits_until_it_is_told_it_is_ready() {
        let readiness = Readiness::default();
        assert_eq!(readiness.waiting_for(), None);
        readiness.wait_for("restate");
        assert_eq!(readiness.waiting_for().as_deref(), Some("restate"));
        readiness.ready();
        assert_eq!(readiness.waiting_for(), None);
    }
}
