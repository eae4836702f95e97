//! What the soak measures and finds: each request's latency by route, and
//! every finding (a 5xx, a broken connection, an unexpected status, a lost
//! or duplicated event, an inconsistent run).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

/// Latencies by route and the findings, shared by every user.
#[derive(Default)]
pub struct Stats {
    latencies: Mutex<BTreeMap<&'static str, Vec<Duration>>>,
    statuses: Mutex<BTreeMap<u16, u64>>,
    findings: Mutex<Vec<String>>,
}

impl Stats {
    /// Records one answered request.
    pub fn answered(&self, route: &'static str, status: u16, took: Duration) {
        lock(&self.latencies).entry(route).or_default().push(took);
        *lock(&self.statuses).entry(status).or_default() += 1;
    }

    /// Records a finding.
    pub fn finding(&self, what: String) {
        eprintln!("[soak] finding: {what}");
        lock(&self.findings).push(what);
    }

    pub fn findings(&self) -> Vec<String> {
        lock(&self.findings).clone()
    }

    /// How many answers had each status.
    pub fn statuses(&self) -> BTreeMap<u16, u64> {
        lock(&self.statuses).clone()
    }

    /// Requests answered in all.
    pub fn requests(&self) -> u64 {
        lock(&self.statuses).values().sum()
    }

    /// Per route: count, p50, p90, p99 and max (ms).
    pub fn percentiles(&self) -> Vec<(&'static str, usize, [f64; 4])> {
        lock(&self.latencies)
            .iter_mut()
            .map(|(route, took)| {
                took.sort();
                let at = |p: f64| {
                    let index = ((took.len() as f64 - 1.0) * p).round() as usize;
                    took[index.min(took.len() - 1)].as_secs_f64() * 1e3
                };
                (*route, took.len(), [at(0.5), at(0.9), at(0.99), at(1.0)])
            })
            .collect()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
