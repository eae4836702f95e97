//! Owner notifications (`streaming-started`, `agent-run-status` …): each
//! user's WebSocket clients hear that user's notices only — the owner's of
//! a project, and the members it invited through the project's own channel
//! ([`SocketNotices`]) — and the webhook dispatcher hears the run statuses
//! of projects with webhooks.
//!
//! Each user with a socket open has a channel of their own, so a socket
//! wakes only for its user's notices, and one that falls behind misses
//! only its own user's notices — and is told so (see [`UserNotices::next`]).
//! The dispatcher's queue is unbounded: a notice it has not read yet
//! becomes a webhook delivery later, never a lost one. It is fed only what
//! can become a delivery, so runs of projects without webhooks cost it
//! nothing (fed every notice, it fell behind under load by two store reads
//! a notice, and its queue grew without end).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{broadcast, mpsc};

/// How many notices one user's sockets may fall behind before they miss
/// some.
const PER_USER: usize = 1024;

/// What a socket that fell behind is sent in place of the notices it
/// missed: its client reads the runs' state again.
const MISSED: &str = r#"{"type":"notices-missed"}"#;

type Channels = Mutex<HashMap<String, broadcast::Sender<Arc<str>>>>;

/// The notifications of one instance.
#[derive(Default)]
pub struct Notices {
    /// Per user with a socket open, the channel of their notices as JSON
    /// text, written once for all their sockets.
    users: Arc<Channels>,
    /// The webhook dispatcher's queue, once it listens.
    dispatcher: Mutex<Option<mpsc::UnboundedSender<Value>>>,
}

impl std::fmt::Debug for Notices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notices").finish_non_exhaustive()
    }
}

impl Notices {
    /// Sends `message` to the sockets of `user_id`.
    pub fn send(&self, user_id: &str, message: &Value) {
        if let Some(channel) = lock(&self.users).get(user_id) {
            // Fails only when no socket listens any more: nothing to tell.
            let _ = channel.send(Arc::from(message.to_string()));
        }
    }

    /// Sends `message` to the sockets of the members project `project_id`
    /// invited (its owner hears it through [`send`](Self::send)).
    pub fn send_to_members(&self, project_id: &str, message: &Value) {
        self.send(&members_key(project_id), message);
    }

    /// Queues `message` for the webhook dispatcher.
    pub fn to_webhooks(&self, message: Value) {
        if let Some(dispatcher) = lock(&self.dispatcher).as_ref() {
            // Fails only once the dispatcher stopped, at shutdown.
            let _ = dispatcher.send(message);
        }
    }

    /// The notices of `user_id` from now on, for one socket.
    pub fn subscribe(&self, user_id: &str) -> UserNotices {
        let receiver = lock(&self.users)
            .entry(user_id.to_owned())
            .or_insert_with(|| broadcast::channel(PER_USER).0)
            .subscribe();
        UserNotices {
            receiver: Some(receiver),
            user_id: user_id.to_owned(),
            users: self.users.clone(),
        }
    }

    /// Every notice queued [`to_webhooks`](Self::to_webhooks) from now on,
    /// for the dispatcher; a later call takes them from an earlier one.
    pub fn dispatch(&self) -> mpsc::UnboundedReceiver<Value> {
        let (sender, receiver) = mpsc::unbounded_channel();
        *lock(&self.dispatcher) = Some(sender);
        receiver
    }
}

/// The channel of the notices of a project's invited members: a key no
/// user id takes (ids have no `:`).
fn members_key(project_id: &str) -> String {
    format!("members:{project_id}")
}

/// One socket's notices: its user's, and those of the projects the user
/// was invited to when it opened.
pub struct SocketNotices {
    own: UserNotices,
    projects: Vec<UserNotices>,
}

impl SocketNotices {
    /// The notices of `user_id` and of the projects `invited_to` from now
    /// on, for one socket.
    pub fn subscribe(notices: &Notices, user_id: &str, invited_to: &[String]) -> Self {
        Self {
            own: notices.subscribe(user_id),
            projects: invited_to
                .iter()
                .map(|project| notices.subscribe(&members_key(project)))
                .collect(),
        }
    }

    /// The next notice of any of them (see [`UserNotices::next`]).
    pub async fn next(&mut self) -> Option<Arc<str>> {
        if self.projects.is_empty() {
            return self.own.next().await;
        }
        let all = std::iter::once(&mut self.own)
            .chain(self.projects.iter_mut())
            .map(|notices| Box::pin(notices.next()));
        futures::future::select_all(all).await.0
    }
}

/// One socket's subscription to its user's notices; the user's channel
/// goes when their last socket closes.
pub struct UserNotices {
    /// `None` only while being dropped.
    receiver: Option<broadcast::Receiver<Arc<str>>>,
    user_id: String,
    users: Arc<Channels>,
}

impl UserNotices {
    /// The next notice as JSON text, or `notices-missed` in place of those
    /// this socket fell too far behind to get; `None` once the instance no
    /// longer sends any.
    pub async fn next(&mut self) -> Option<Arc<str>> {
        let receiver = self.receiver.as_mut()?;
        match receiver.recv().await {
            Ok(text) => Some(text),
            Err(RecvError::Lagged(_)) => Some(Arc::from(MISSED)),
            Err(RecvError::Closed) => None,
        }
    }
}

impl Drop for UserNotices {
    fn drop(&mut self) {
        drop(self.receiver.take());
        let mut users = lock(&self.users);
        // Under the lock that subscribing takes: a socket of the same user
        // subscribing now is counted here or finds no channel and makes one.
        if users
            .get(&self.user_id)
            .is_some_and(|channel| channel.receiver_count() == 0)
        {
            users.remove(&self.user_id);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock only means a thread panicked while holding it; the
    // map of channels is still whole.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[tokio::test]
    async fn a_user_hears_only_their_own_notices() {
        let notices = Notices::default();
        let mut alice = notices.subscribe("alice");
        let mut bob = notices.subscribe("bob");
        notices.send("bob", &json!({ "type": "for-bob" }));
        notices.send("alice", &json!({ "type": "for-alice" }));
        assert_eq!(&*alice.next().await.unwrap(), r#"{"type":"for-alice"}"#);
        assert_eq!(&*bob.next().await.unwrap(), r#"{"type":"for-bob"}"#);
    }

    #[tokio::test]
    async fn a_socket_that_fell_behind_is_told_it_missed_notices() {
        let notices = Notices::default();
        let mut socket = notices.subscribe("alice");
        for i in 0..PER_USER + 10 {
            notices.send("alice", &json!({ "n": i }));
        }
        assert_eq!(&*socket.next().await.unwrap(), MISSED);
        // Then the oldest notices the channel still holds, in order.
        assert_eq!(&*socket.next().await.unwrap(), r#"{"n":10}"#);
    }

    #[tokio::test]
    async fn the_dispatcher_hears_every_notice_however_far_behind() {
        let notices = Notices::default();
        let mut dispatcher = notices.dispatch();
        let sent = PER_USER * 3;
        for i in 0..sent {
            notices.to_webhooks(json!({ "n": i }));
        }
        for i in 0..sent {
            assert_eq!(dispatcher.recv().await.unwrap(), json!({ "n": i }));
        }
    }

    #[test]
    fn a_users_channel_goes_with_their_last_socket() {
        let notices = Notices::default();
        let first = notices.subscribe("alice");
        let second = notices.subscribe("alice");
        drop(first);
        assert!(lock(&notices.users).contains_key("alice"));
        drop(second);
        assert!(lock(&notices.users).is_empty());
    }
}
