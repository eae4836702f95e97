//! The report of an eval: every case's runs and verdicts, and totals. It
//! is what `--report` writes as JSON and what `--compare` reads back, so
//! its shape is kept stable (fields are only added).

use serde::{Deserialize, Serialize};

use crate::evaluator::Verdict;

/// The report of one eval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The dataset's name.
    pub dataset: String,
    /// Totals over every case.
    pub summary: Summary,
    /// Each case, in the dataset's order.
    pub cases: Vec<CaseReport>,
}

/// Totals over every case.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Cases run.
    pub cases: usize,
    /// Cases all of whose runs passed.
    pub passed: usize,
    /// Cases with a failed run.
    pub failed: usize,
    /// Runs (cases times repeats).
    pub runs: usize,
    /// Passed runs over all runs (0 to 1).
    pub pass_rate: f64,
    /// Mean score over all runs (0 to 1).
    pub score: f64,
    /// Tokens of every run (input and output, cache included).
    pub tokens: u64,
    /// Cost of every run in US dollars.
    pub cost: f64,
    /// Wall time of the whole eval in seconds.
    pub seconds: f64,
}

/// One case's runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseReport {
    /// The case's name.
    pub name: String,
    /// Its tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Whether every run passed.
    pub passed: bool,
    /// Passed runs over runs (0 to 1).
    pub pass_rate: f64,
    /// Mean score of its runs (0 to 1).
    pub score: f64,
    /// Tokens of its runs.
    pub tokens: u64,
    /// Cost of its runs in US dollars.
    pub cost: f64,
    /// Mean wall time of its runs in seconds.
    pub seconds: f64,
    /// Each run.
    pub runs: Vec<RunReport>,
}

/// One run of a case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// Whether every verdict passed.
    pub passed: bool,
    /// Mean score of its verdicts (0 to 1).
    pub score: f64,
    /// How the run ended (`complete`, `error`, ...), or `not_run`.
    pub status: String,
    /// The answer, as the evaluators saw it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The tools called, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Model turns.
    pub steps: u32,
    /// Tokens (input and output, cache included).
    pub tokens: u64,
    /// Cost in US dollars.
    pub cost: f64,
    /// Wall time in seconds.
    pub seconds: f64,
    /// Every evaluator's verdict.
    pub verdicts: Vec<Verdict>,
    /// Why the case could not be run, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl RunReport {
    /// The reasons of its failed verdicts (and why it did not run).
    pub fn failures(&self) -> Vec<String> {
        self.error
            .iter()
            .cloned()
            .chain(
                self.verdicts
                    .iter()
                    .filter(|v| !v.passed)
                    .map(|v| format!("{}: {}", v.evaluator, v.reason)),
            )
            .collect()
    }
}

impl CaseReport {
    /// A case's report from its runs.
    pub fn new(name: String, tags: Vec<String>, runs: Vec<RunReport>) -> Self {
        let count = runs.len().max(1) as f64;
        let passes = runs.iter().filter(|r| r.passed).count();
        Self {
            name,
            tags,
            passed: !runs.is_empty() && passes == runs.len(),
            pass_rate: passes as f64 / count,
            score: runs.iter().map(|r| r.score).sum::<f64>() / count,
            tokens: runs.iter().map(|r| r.tokens).sum(),
            cost: runs.iter().map(|r| r.cost).sum(),
            seconds: runs.iter().map(|r| r.seconds).sum::<f64>() / count,
            runs,
        }
    }
}

impl Report {
    /// A report from its cases; `seconds` is the eval's wall time.
    pub fn new(dataset: String, cases: Vec<CaseReport>, seconds: f64) -> Self {
        let runs: Vec<&RunReport> = cases.iter().flat_map(|c| &c.runs).collect();
        let count = runs.len().max(1) as f64;
        let passed = cases.iter().filter(|c| c.passed).count();
        let summary = Summary {
            cases: cases.len(),
            passed,
            failed: cases.len() - passed,
            runs: runs.len(),
            pass_rate: runs.iter().filter(|r| r.passed).count() as f64 / count,
            score: runs.iter().map(|r| r.score).sum::<f64>() / count,
            tokens: runs.iter().map(|r| r.tokens).sum(),
            cost: runs.iter().map(|r| r.cost).sum(),
            seconds,
        };
        Self {
            dataset,
            summary,
            cases,
        }
    }

    /// Whether every case passed.
    pub fn passed(&self) -> bool {
        self.summary.failed == 0
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        // A report holds only strings, numbers and booleans: serialising
        // it cannot fail, and a non-finite number is written as null.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Reads a report written by [`Report::to_json`].
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }
}
