//! The report as JUnit XML, the format CI systems read: one `testsuite`
//! for the dataset, one `testcase` per case, a `failure` on a case with a
//! failed run (its reasons in the text) and an `error` on one that could not
//! run.

use std::fmt::Write;

use crate::report::Report;

/// The report as a JUnit XML document.
pub fn render(report: &Report) -> String {
    let s = &report.summary;
    let errors = report
        .cases
        .iter()
        .filter(|c| c.runs.iter().any(|r| r.error.is_some()))
        .count();
    let failures = s.failed - errors;
    let suite = escape(&report.dataset);
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"agentloop eval\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{:.3}\">",
        s.cases, s.seconds
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{suite}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"0\" time=\"{:.3}\">",
        s.cases, s.seconds
    );
    for case in &report.cases {
        let time: f64 = case.runs.iter().map(|r| r.seconds).sum();
        let _ = write!(
            out,
            "    <testcase name=\"{}\" classname=\"{suite}\" time=\"{time:.3}\"",
            escape(&case.name)
        );
        if case.passed {
            out.push_str("/>\n");
            continue;
        }
        out.push_str(">\n");
        let not_run = case.runs.iter().find_map(|r| r.error.as_deref());
        let lines: Vec<String> = case
            .runs
            .iter()
            .enumerate()
            .flat_map(|(i, run)| {
                run.failures()
                    .into_iter()
                    .map(move |f| format!("run {}: {f}", i + 1))
            })
            .collect();
        let (tag, message) = match not_run {
            Some(error) => ("error", error.to_owned()),
            None => (
                "failure",
                format!(
                    "{} of {} runs failed",
                    case.runs.iter().filter(|r| !r.passed).count(),
                    case.runs.len()
                ),
            ),
        };
        let _ = writeln!(
            out,
            "      <{tag} message=\"{}\" type=\"{}\">{}</{tag}>",
            escape(&message),
            if not_run.is_some() {
                "not_run"
            } else {
                "expectation"
            },
            escape(&lines.join("\n"))
        );
        out.push_str("    </testcase>\n");
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// Text as XML character data or an attribute value; characters XML 1.0
/// cannot hold at all are replaced.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\t' | '\r' => out.push(' '),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_control_characters_are_escaped() {
        assert_eq!(
            escape("a<b & \"c\"\u{1b}"),
            "a&lt;b &amp; &quot;c&quot;\u{FFFD}"
        );
    }
}
