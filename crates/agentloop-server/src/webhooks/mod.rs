//! Webhooks: a project's registered URLs hear when one of its agent runs
//! ends (`run.ended`), waits for a person (`run.waiting`), or ends a chain
//! (`chain.completed`: a run completed and its task's workflow is
//! complete). The dispatcher listens to the owner notifications this
//! instance sends, so it never sits in a run's way; each delivery is
//! signed ([`sign`]), sent only to public addresses unless the operator
//! allows private ones ([`target`]), retried with backoff ([`deliver`]) and
//! recorded in the project's delivery log in the store
//! ([`agentloop_storage::WebhookStore`]).

pub mod deliver;
pub mod dispatch;
pub mod registry;
pub mod sign;
pub mod target;

pub use dispatch::spawn_dispatcher;
pub use registry::{EVENTS, Registration};
