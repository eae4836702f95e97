//! Per-client request rates: each client has a bucket of `burst` requests
//! that refills at `per_second` (GCRA, from `governor`). A client is the
//! authenticated user when a request carries a valid token, otherwise the
//! address it comes from (its peer, or the client a trusted proxy names:
//! [`crate::proxies`]; IPv6 by its /64, which one host usually holds
//! whole), so a flood, a token guesser or a sign-in loop slows down alone
//! while everyone else is served.
//!
//! Buckets that have refilled are indistinguishable from new ones, so
//! they are dropped every [`FORGET_IDLE_EVERY`] (by the request that finds
//! the time has come, so no task of its own is needed however the router
//! is served): the map holds only the clients seen within about the last
//! refill time plus that period.

use std::net::{IpAddr, Ipv6Addr};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};

/// How often buckets that have refilled are dropped.
pub const FORGET_IDLE_EVERY: Duration = Duration::from_secs(10);

/// A per-client rate: a steady rate and the burst allowed above it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// Requests per second a client may keep up.
    pub per_second: NonZeroU32,
    /// Requests a client may send at once after a quiet spell.
    pub burst: NonZeroU32,
}

impl Default for RateLimit {
    /// 100 requests a second with bursts of 200: far above what a person
    /// with a page open sends (a few polls and streams a second, a few
    /// dozen requests when a page loads), far below a flood.
    fn default() -> Self {
        Self {
            per_second: NonZeroU32::new(100).unwrap_or(NonZeroU32::MIN),
            burst: NonZeroU32::new(200).unwrap_or(NonZeroU32::MIN),
        }
    }
}

/// Who a request's rate is counted for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Client {
    /// An authenticated user, by id.
    User(String),
    /// An unauthenticated request, by the address it comes from (see
    /// [`Client::address`]).
    Address(IpAddr),
    /// A request whose peer address was not recorded (the router served
    /// without connection info): all such requests share one bucket.
    UnknownPeer,
}

impl Client {
    /// The client of an unauthenticated request from `address`. IPv6
    /// addresses count by their /64: a single host is commonly handed one
    /// whole, so counting each address would give it billions of buckets.
    pub fn address(address: Option<IpAddr>) -> Self {
        match address.map(|a| a.to_canonical()) {
            Some(IpAddr::V6(v6)) => {
                let bits = u128::from(v6) & !((1u128 << 64) - 1);
                Self::Address(IpAddr::V6(Ipv6Addr::from(bits)))
            }
            Some(v4) => Self::Address(v4),
            None => Self::UnknownPeer,
        }
    }
}

/// The buckets of every client seen recently.
pub struct ClientLimiter {
    limiter: DefaultKeyedRateLimiter<Client>,
    clock: DefaultClock,
    /// When the limiter was made; sweeps are counted from it.
    born: Instant,
    /// Milliseconds after `born` of the last sweep of refilled buckets.
    swept_ms: AtomicU64,
}

impl std::fmt::Debug for ClientLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientLimiter")
            .field("tracked", &self.tracked())
            .finish_non_exhaustive()
    }
}

impl ClientLimiter {
    /// Buckets of `limit` for every client.
    pub fn new(limit: RateLimit) -> Self {
        let quota = Quota::per_second(limit.per_second).allow_burst(limit.burst);
        Self {
            limiter: DefaultKeyedRateLimiter::hashmap(quota),
            clock: DefaultClock::default(),
            born: Instant::now(),
            swept_ms: AtomicU64::new(0),
        }
    }

    /// Takes one request from `client`'s bucket; when it is empty, how
    /// long until the next request would be allowed.
    pub fn check(&self, client: &Client) -> Result<(), Duration> {
        self.sweep_when_due();
        self.limiter
            .check_key(client)
            .map_err(|not_until| not_until.wait_time_from(self.clock.now()))
    }

    /// Drops the buckets that have refilled (a client seen again starts a
    /// new, full one: the same thing).
    pub fn forget_idle(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }

    /// Drops refilled buckets when [`FORGET_IDLE_EVERY`] has passed since
    /// the last sweep; one request among those arriving together does it.
    fn sweep_when_due(&self) {
        let now = u64::try_from(self.born.elapsed().as_millis()).unwrap_or(u64::MAX);
        let last = self.swept_ms.load(Ordering::Relaxed);
        let due = u64::try_from(FORGET_IDLE_EVERY.as_millis()).unwrap_or(u64::MAX);
        if now.saturating_sub(last) >= due
            && self
                .swept_ms
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.forget_idle();
        }
    }

    /// How many clients have a bucket.
    pub fn tracked(&self) -> usize {
        self.limiter.len()
    }
}

/// Whole seconds to send in `Retry-After` for a wait: rounded up, at least
/// one, so a client that waits that long is let through.
pub fn retry_after_secs(wait: Duration) -> u64 {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    secs.max(1)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn limiter(per_second: u32, burst: u32) -> ClientLimiter {
        ClientLimiter::new(RateLimit {
            per_second: NonZeroU32::new(per_second).unwrap(),
            burst: NonZeroU32::new(burst).unwrap(),
        })
    }

    #[test]
    fn a_client_past_its_burst_waits_while_another_goes_on() {
        let limits = limiter(1, 3);
        let ada = Client::User("ada".into());
        let bob = Client::User("bob".into());
        for _ in 0..3 {
            assert!(limits.check(&ada).is_ok());
        }
        let wait = limits.check(&ada).unwrap_err();
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_secs(1),
            "{wait:?}"
        );
        assert!(limits.check(&bob).is_ok());
    }

    #[test]
    fn retry_after_rounds_up_to_whole_seconds_and_is_never_zero() {
        assert_eq!(retry_after_secs(Duration::ZERO), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(10)), 1);
        assert_eq!(retry_after_secs(Duration::from_secs(1)), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1001)), 2);
    }

    #[test]
    fn ipv6_peers_count_by_their_64_and_mapped_ipv4_as_ipv4() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(Client::address(Some(a)), Client::address(Some(b)));
        assert_ne!(Client::address(Some(a)), Client::address(Some(c)));
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        let plain: IpAddr = "192.0.2.7".parse().unwrap();
        assert_eq!(Client::address(Some(mapped)), Client::address(Some(plain)));
        assert_eq!(Client::address(None), Client::UnknownPeer);
    }

    #[test]
    fn refilled_buckets_are_forgotten_and_busy_ones_kept() {
        // A burst of one at 1000/s refills in a millisecond.
        let limits = limiter(1000, 1);
        for n in 0..100 {
            let _ = limits.check(&Client::User(format!("user-{n}")));
        }
        assert_eq!(limits.tracked(), 100);
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while limits.tracked() > 0 {
            assert!(std::time::Instant::now() < deadline, "never forgotten");
            std::thread::sleep(Duration::from_millis(2));
            limits.forget_idle();
        }
        let slow = limiter(1, 2);
        let _ = slow.check(&Client::UnknownPeer);
        slow.forget_idle();
        assert_eq!(slow.tracked(), 1, "a bucket still refilling was dropped");
    }
}
