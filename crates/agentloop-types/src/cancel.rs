//! A cancellation token.
//!
//! Written here rather than taken from `tokio-util` because this crate may
//! depend only on serde, thiserror, futures and async-trait, and every layer
//! (tools, providers, consumers) needs the same token type.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Waker};

#[derive(Default)]
struct Inner {
    cancelled: AtomicBool,
    waiters: Mutex<Vec<Waker>>,
    children: Mutex<Vec<Weak<Inner>>>,
    /// Keeps the parent alive while this child lives: parents reach their
    /// children only through weak links, so without it a grandchild whose
    /// parent token was dropped would no longer hear the root's cancel.
    _parent: Option<Arc<Inner>>,
}

impl Inner {
    fn cancel(&self) {
        if self.cancelled.swap(true, Ordering::SeqCst) {
            return;
        }
        let waiters = std::mem::take(&mut *lock(&self.waiters));
        for waker in waiters {
            waker.wake();
        }
        let children = std::mem::take(&mut *lock(&self.children));
        for child in children.iter().filter_map(Weak::upgrade) {
            child.cancel();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock only means another thread panicked while holding it;
    // the data (wakers, weak links) is still valid.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Cancels a run, a tool or a child run. Clones share state; a child token
/// is cancelled with its parent but can be cancelled alone.
#[derive(Clone, Default)]
pub struct CancellationToken {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for CancellationToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancellationToken")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl CancellationToken {
    /// A fresh, uncancelled token.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels this token and every child token.
    pub fn cancel(&self) {
        self.inner.cancel();
    }

    /// Whether [`cancel`](Self::cancel) was called on this token or a parent.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::SeqCst)
    }

    /// A token cancelled when this one is, that can also be cancelled alone.
    pub fn child_token(&self) -> Self {
        let child = Self {
            inner: Arc::new(Inner {
                _parent: Some(self.inner.clone()),
                ..Inner::default()
            }),
        };
        {
            let mut children = lock(&self.inner.children);
            children.retain(|c| c.strong_count() > 0);
            children.push(Arc::downgrade(&child.inner));
        }
        if self.is_cancelled() {
            child.cancel();
        }
        child
    }

    /// Completes once the token is cancelled.
    pub fn cancelled(&self) -> Cancelled {
        Cancelled {
            inner: self.inner.clone(),
        }
    }
}

/// The future returned by [`CancellationToken::cancelled`].
pub struct Cancelled {
    inner: Arc<Inner>,
}

impl Future for Cancelled {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.inner.cancelled.load(Ordering::SeqCst) {
            return Poll::Ready(());
        }
        let mut waiters = lock(&self.inner.waiters);
        // Checked again under the lock: `cancel` sets the flag before taking
        // the waiters, so a cancel racing with this poll is never missed.
        if self.inner.cancelled.load(Ordering::SeqCst) {
            return Poll::Ready(());
        }
        if !waiters.iter().any(|w| w.will_wake(cx.waker())) {
            waiters.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_is_cancelled_with_parent_but_not_the_reverse() {
        let parent = CancellationToken::new();
        let child = parent.child_token();
        let other = parent.child_token();
        child.cancel();
        assert!(child.is_cancelled());
        assert!(!parent.is_cancelled());
        assert!(!other.is_cancelled());
        parent.cancel();
        assert!(other.is_cancelled());
        assert!(parent.child_token().is_cancelled());
    }

    #[test]
    fn grandchild_hears_the_root_after_its_parent_token_is_dropped() {
        let root = CancellationToken::new();
        let grandchild = root.child_token().child_token();
        let waiter = grandchild.cancelled();
        root.cancel();
        assert!(grandchild.is_cancelled());
        futures::executor::block_on(waiter);
    }

    #[test]
    fn cancelled_future_wakes() {
        let token = CancellationToken::new();
        let waiter = token.cancelled();
        let t2 = token.clone();
        let handle = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(10));
            t2.cancel();
        });
        futures::executor::block_on(waiter);
        handle.join().unwrap();
        assert!(token.is_cancelled());
    }
}
