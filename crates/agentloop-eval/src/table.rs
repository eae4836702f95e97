//! The report as a table for a terminal: a row per case (result, score,
//! runs passed, status, steps, tokens, cost, mean time), the reasons of
//! failed runs under their case, and the totals.

use std::fmt::Write;

use crate::report::{CaseReport, Report};
use crate::text::clean;

/// The widest a case name's column gets.
const NAME_WIDTH: usize = 40;

/// The report as text lines.
pub fn render(report: &Report) -> String {
    let width = report
        .cases
        .iter()
        .map(|c| clean(&c.name).chars().count())
        .max()
        .unwrap_or(0)
        .clamp(4, NAME_WIDTH);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<width$}  {:<6} {:>5} {:>5}  {:<14} {:>5} {:>8} {:>9} {:>8}",
        "case", "result", "score", "runs", "status", "steps", "tokens", "cost", "time"
    );
    for case in &report.cases {
        let passes = case.runs.iter().filter(|r| r.passed).count();
        let _ = writeln!(
            out,
            "{:<width$}  {:<6} {:>5.2} {:>5}  {:<14} {:>5} {:>8} {:>9} {:>8}",
            truncate(&clean(&case.name), width),
            if case.passed { "pass" } else { "FAIL" },
            case.score,
            format!("{passes}/{}", case.runs.len()),
            status(case),
            steps(case),
            case.tokens,
            format!("${:.4}", case.cost),
            format!("{:.2}s", case.seconds),
        );
        for (i, run) in case.runs.iter().enumerate() {
            for failure in run.failures() {
                let run = if case.runs.len() > 1 {
                    format!("run {}: ", i + 1)
                } else {
                    String::new()
                };
                let _ = writeln!(out, "    ✗ {run}{}", clean(&failure));
            }
        }
    }
    let s = &report.summary;
    let _ = writeln!(
        out,
        "{}: {}/{} cases passed, pass rate {:.0}% over {} runs, score {:.2}, {} tokens, ${:.4}, {:.2}s",
        clean(&report.dataset),
        s.passed,
        s.cases,
        s.pass_rate * 100.0,
        s.runs,
        s.score,
        s.tokens,
        s.cost,
        s.seconds,
    );
    out
}

/// The runs' status, or `mixed` when they differ.
fn status(case: &CaseReport) -> String {
    let first = case.runs.first().map_or("", |r| r.status.as_str());
    if case.runs.iter().all(|r| r.status == first) {
        first.to_owned()
    } else {
        "mixed".to_owned()
    }
}

/// The runs' mean number of model turns.
fn steps(case: &CaseReport) -> String {
    let total: u32 = case.runs.iter().map(|r| r.steps).sum();
    let count = case.runs.len().max(1) as u32;
    if total.is_multiple_of(count) {
        (total / count).to_string()
    } else {
        format!("{:.1}", f64::from(total) / f64::from(count))
    }
}

fn truncate(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        text.to_owned()
    } else {
        let mut short: String = text.chars().take(width.saturating_sub(1)).collect();
        short.push('…');
        short
    }
}
