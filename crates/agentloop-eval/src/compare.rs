//! Comparing a report with an earlier one: which cases got worse
//! (regressions), which got better, which are new or gone.

use serde::Serialize;

use crate::report::{CaseReport, Report};
use crate::text::clean;

/// How far a score may drop before it counts as a regression (runs of a
/// real model vary a little).
pub const SCORE_TOLERANCE: f64 = 0.001;

/// One case that changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// The case.
    pub case: String,
    /// What changed, in words.
    pub what: String,
}

/// What changed between an earlier report and this one.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Comparison {
    /// Cases that passed and now fail, or whose pass rate or score dropped.
    pub regressions: Vec<Change>,
    /// Cases that failed and now pass, or whose pass rate or score rose.
    pub improvements: Vec<Change>,
    /// Cases only in this report.
    pub added: Vec<String>,
    /// Cases only in the earlier report.
    pub removed: Vec<String>,
}

impl Comparison {
    /// Compares `now` with `earlier`, case by case (by name).
    pub fn new(earlier: &Report, now: &Report) -> Self {
        let mut comparison = Self::default();
        for case in &now.cases {
            match earlier.cases.iter().find(|c| c.name == case.name) {
                None => comparison.added.push(case.name.clone()),
                Some(before) => comparison.case(before, case),
            }
        }
        comparison.removed = earlier
            .cases
            .iter()
            .filter(|c| !now.cases.iter().any(|n| n.name == c.name))
            .map(|c| c.name.clone())
            .collect();
        comparison
    }

    fn case(&mut self, before: &CaseReport, now: &CaseReport) {
        let change = |what: String| Change {
            case: now.name.clone(),
            what,
        };
        if before.passed && !now.passed {
            let reason = now
                .runs
                .iter()
                .flat_map(|r| r.failures())
                .next()
                .unwrap_or_default();
            self.regressions
                .push(change(format!("passed before, fails now ({reason})")));
        } else if !before.passed && now.passed {
            self.improvements
                .push(change("failed before, passes now".to_owned()));
        } else if now.pass_rate + SCORE_TOLERANCE < before.pass_rate {
            self.regressions.push(change(format!(
                "pass rate fell from {:.0}% to {:.0}%",
                before.pass_rate * 100.0,
                now.pass_rate * 100.0
            )));
        } else if now.score + SCORE_TOLERANCE < before.score {
            self.regressions.push(change(format!(
                "score fell from {:.2} to {:.2}",
                before.score, now.score
            )));
        } else if now.score > before.score + SCORE_TOLERANCE {
            self.improvements.push(change(format!(
                "score rose from {:.2} to {:.2}",
                before.score, now.score
            )));
        }
    }

    /// Whether anything got worse.
    pub fn regressed(&self) -> bool {
        !self.regressions.is_empty()
    }

    /// The comparison as text lines.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for change in &self.regressions {
            out.push_str(&format!(
                "regression: {}: {}\n",
                clean(&change.case),
                clean(&change.what)
            ));
        }
        for change in &self.improvements {
            out.push_str(&format!(
                "improvement: {}: {}\n",
                clean(&change.case),
                clean(&change.what)
            ));
        }
        for case in &self.added {
            out.push_str(&format!("new case: {}\n", clean(case)));
        }
        for case in &self.removed {
            out.push_str(&format!("case gone: {}\n", clean(case)));
        }
        if self.regressions.is_empty() {
            out.push_str("no regressions\n");
        } else {
            out.push_str(&format!("{} regressions\n", self.regressions.len()));
        }
        out
    }
}
