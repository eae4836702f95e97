//! A cancellation token.
//!
//! Written here rather than taken from `tokio-util` because this crate may
//! depend only on serde, thiserror, futures and async-trait, and every layer
//! (tools, providers, consumers) needs the same token type.
//!
//! Waiting futures register their wakers in a small slab written over std
//! (for the same dependency reason): each [`Cancelled`] future holds the key
//! of its one slot, so re-polling replaces its waker in O(1) and dropping
//! the future frees the slot. A token that lives for a whole run therefore
//! holds at most one waker per live waiting future, however many polls and
//! tasks come and go.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Waker};

/// The wakers of the futures waiting on one token, keyed by slot.
#[derive(Default)]
struct Waiters {
    slots: Vec<Option<Waker>>,
    /// Vacant slot keys, reused before the slab grows.
    free: Vec<usize>,
}

impl Waiters {
    fn insert(&mut self, waker: Waker) -> usize {
        match self.free.pop() {
            Some(key) => {
                self.slots[key] = Some(waker);
                key
            }
            None => {
                self.slots.push(Some(waker));
                self.slots.len() - 1
            }
        }
    }

    /// Stores `waker` in `key`'s slot unless the one there already wakes the
    /// same task (saves a clone on the common re-poll from one task).
    fn update(&mut self, key: usize, waker: &Waker) {
        if let Some(slot) = self.slots.get_mut(key) {
            match slot {
                Some(current) if current.will_wake(waker) => {}
                _ => *slot = Some(waker.clone()),
            }
        }
    }

    fn remove(&mut self, key: usize) {
        // A key past the end belongs to a slab already drained by `cancel`.
        let freed = self.slots.get_mut(key).and_then(Option::take);
        if freed.is_some() {
            self.free.push(key);
        }
    }

    fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}

#[derive(Default)]
struct Inner {
    cancelled: AtomicBool,
    waiters: Mutex<Waiters>,
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
        // Drained whole: once the flag is set no future registers again, so
        // the keys futures still hold can never name a new slot.
        let waiters = std::mem::take(&mut *lock(&self.waiters));
        for waker in waiters.slots.into_iter().flatten() {
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

/// Up to this many children, a token drops the links of dropped ones each
/// time it makes a child.
const FEW_CHILDREN: usize = 8;

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

    /// Cancels this token and every child token, waking every future
    /// waiting on them.
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
            // A link to a dropped child keeps that child's allocation, so
            // a token with few children (a run's, one per tool call) drops
            // such links on every call. A token with many is pruned only
            // when its list is full: one that is the parent of every run in
            // a process has thousands of children, and scanning them all
            // for each new one made starting runs quadratic. Room for as
            // many again is made after a prune, so a scan comes at most
            // once every as many calls as it visits.
            if children.len() <= FEW_CHILDREN {
                children.retain(|c| c.strong_count() > 0);
            } else if children.len() == children.capacity() {
                children.retain(|c| c.strong_count() > 0);
                let live = children.len();
                children.reserve(live.max(4));
            }
            children.push(Arc::downgrade(&child.inner));
        }
        if self.is_cancelled() {
            child.cancel();
        }
        child
    }

    /// Completes once the token is cancelled. The future holds one waker
    /// slot while it waits and frees it when dropped.
    pub fn cancelled(&self) -> Cancelled {
        Cancelled {
            inner: self.inner.clone(),
            key: None,
        }
    }

    /// How many futures are registered as waiting on this token (not its
    /// children). Exposed for leak tests in other crates.
    #[doc(hidden)]
    pub fn waiter_count(&self) -> usize {
        lock(&self.inner.waiters).len()
    }
}

/// The future returned by [`CancellationToken::cancelled`].
#[must_use = "futures do nothing unless polled"]
pub struct Cancelled {
    inner: Arc<Inner>,
    /// This future's slot among the token's waiters, once it has waited.
    key: Option<usize>,
}

impl std::fmt::Debug for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cancelled")
            .field("cancelled", &self.inner.cancelled.load(Ordering::SeqCst))
            .finish()
    }
}

impl Future for Cancelled {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if this.inner.cancelled.load(Ordering::SeqCst) {
            this.key = None;
            return Poll::Ready(());
        }
        let mut waiters = lock(&this.inner.waiters);
        // Checked again under the lock: `cancel` sets the flag before taking
        // the waiters, so a cancel racing with this poll is never missed.
        if this.inner.cancelled.load(Ordering::SeqCst) {
            this.key = None;
            return Poll::Ready(());
        }
        match this.key {
            Some(key) => waiters.update(key, cx.waker()),
            None => this.key = Some(waiters.insert(cx.waker().clone())),
        }
        Poll::Pending
    }
}

impl Drop for Cancelled {
    fn drop(&mut self) {
        let Some(key) = self.key.take() else { return };
        if !self.inner.cancelled.load(Ordering::SeqCst) {
            lock(&self.inner.waiters).remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::task::Wake;

    /// A waker that counts how often it was woken.
    #[derive(Default)]
    struct CountingWaker(AtomicUsize);

    impl Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    impl CountingWaker {
        fn woken(&self) -> usize {
            self.0.load(Ordering::SeqCst)
        }
    }

    fn counting() -> (Arc<CountingWaker>, Waker) {
        let counter = Arc::new(CountingWaker::default());
        let waker = Waker::from(counter.clone());
        (counter, waker)
    }

    fn poll(future: &mut Cancelled, waker: &Waker) -> Poll<()> {
        Pin::new(future).poll(&mut Context::from_waker(waker))
    }

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
            t2.cancel();
        });
        futures::executor::block_on(waiter);
        handle.join().unwrap();
        assert!(token.is_cancelled());
    }

    #[test]
    fn dropped_futures_leave_no_waiters() {
        let token = CancellationToken::new();
        for _ in 0..1_000 {
            let (_, waker) = counting();
            let mut future = token.cancelled();
            assert_eq!(poll(&mut future, &waker), Poll::Pending);
            assert_eq!(token.waiter_count(), 1);
        }
        assert_eq!(token.waiter_count(), 0);

        let mut live: Vec<Cancelled> = (0..100).map(|_| token.cancelled()).collect();
        let (_, waker) = counting();
        for future in &mut live {
            assert_eq!(poll(future, &waker), Poll::Pending);
        }
        assert_eq!(token.waiter_count(), 100);
        live.truncate(40);
        assert_eq!(token.waiter_count(), 40);
        // Freed slots are reused before the slab grows.
        live.extend((0..60).map(|_| token.cancelled()));
        for future in &mut live {
            assert_eq!(poll(future, &waker), Poll::Pending);
        }
        assert_eq!(token.waiter_count(), 100);
        assert_eq!(lock(&token.inner.waiters).slots.len(), 100);
        drop(live);
        assert_eq!(token.waiter_count(), 0);
    }

    #[test]
    fn repolling_one_future_keeps_one_waiter() {
        let token = CancellationToken::new();
        let mut future = token.cancelled();
        for _ in 0..100 {
            let (_, waker) = counting();
            assert_eq!(poll(&mut future, &waker), Poll::Pending);
        }
        assert_eq!(token.waiter_count(), 1);
    }

    #[test]
    fn cancel_wakes_every_live_waiter_once() {
        let token = CancellationToken::new();
        let mut futures = Vec::new();
        let mut counters = Vec::new();
        for _ in 0..10 {
            let (counter, waker) = counting();
            let mut future = token.cancelled();
            assert_eq!(poll(&mut future, &waker), Poll::Pending);
            futures.push((future, waker));
            counters.push(counter);
        }
        // A dropped waiter is not woken.
        let (dropped_counter, dropped_waker) = counting();
        let mut dropped = token.cancelled();
        assert_eq!(poll(&mut dropped, &dropped_waker), Poll::Pending);
        drop(dropped);

        token.cancel();
        assert!(counters.iter().all(|c| c.woken() == 1));
        assert_eq!(dropped_counter.woken(), 0);
        assert_eq!(token.waiter_count(), 0);
        for (future, waker) in &mut futures {
            assert_eq!(poll(future, waker), Poll::Ready(()));
        }
    }

    #[test]
    fn a_future_moved_between_tasks_wakes_the_latest_waker() {
        let token = CancellationToken::new();
        let mut future = token.cancelled();
        let (first, first_waker) = counting();
        let (second, second_waker) = counting();
        assert_eq!(poll(&mut future, &first_waker), Poll::Pending);
        assert_eq!(poll(&mut future, &second_waker), Poll::Pending);
        token.cancel();
        assert_eq!(first.woken(), 0);
        assert_eq!(second.woken(), 1);
        assert_eq!(poll(&mut future, &second_waker), Poll::Ready(()));
    }

    #[test]
    fn child_waiters_wake_on_parent_cancel_and_free_on_drop() {
        let parent = CancellationToken::new();
        let child = parent.child_token();
        let (counter, waker) = counting();
        let mut waiting = child.cancelled();
        assert_eq!(poll(&mut waiting, &waker), Poll::Pending);
        {
            let mut short = child.cancelled();
            assert_eq!(poll(&mut short, &waker), Poll::Pending);
            assert_eq!(child.waiter_count(), 2);
        }
        assert_eq!(child.waiter_count(), 1);
        assert_eq!(parent.waiter_count(), 0);
        parent.cancel();
        assert_eq!(counter.woken(), 1);
        assert_eq!(poll(&mut waiting, &waker), Poll::Ready(()));
        // A future created after cancel is ready at once and registers nothing.
        let mut late = child.cancelled();
        assert_eq!(poll(&mut late, &waker), Poll::Ready(()));
        assert_eq!(child.waiter_count(), 0);
    }

    #[test]
    fn links_to_dropped_children_are_pruned_and_live_ones_kept() {
        let parent = CancellationToken::new();
        let kept: Vec<_> = (0..100).map(|_| parent.child_token()).collect();
        for _ in 0..10_000 {
            drop(parent.child_token());
        }
        // The list holds the live children and at most as many dropped ones
        // again (plus the growth a prune leaves room for).
        let links = lock(&parent.inner.children).len();
        assert!((100..=400).contains(&links), "{links} links");
        parent.cancel();
        assert!(kept.iter().all(CancellationToken::is_cancelled));
    }

    /// A run's token makes one child per tool call: a dropped one's link
    /// (and with it its allocation) goes when the next child is made.
    #[test]
    fn a_token_with_few_children_keeps_no_dropped_one() {
        let parent = CancellationToken::new();
        let kept = parent.child_token();
        for _ in 0..100 {
            let call = parent.child_token();
            assert_eq!(lock(&parent.inner.children).len(), 2, "kept and this call");
            drop(call);
        }
        parent.cancel();
        assert!(kept.is_cancelled());
    }
}
