//! Where a run reads the time. The clock is an input of the driver
//! ([`RunDeps::clock`](crate::RunDeps::clock)), so nothing a run decides or
//! records reads a clock the caller cannot set; the machine reads none.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The wall clock a run reads: today only to name a run that was given no
/// id.
pub trait Clock: Send + Sync {
    /// Time since the Unix epoch (zero for a clock set before it).
    fn since_epoch(&self) -> Duration;
}

/// The system's wall clock: the default of [`RunDeps`](crate::RunDeps).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn since_epoch(&self) -> Duration {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
    }
}
