//! `cargo xtask bench`: runs the benchmarks, prints their figures and writes
//! them to `docs/benchmarks.md`.
//!
//! Each benchmark is an example program built in release mode that prints
//! markdown table rows (`| benchmark | figure | value |`). Figures are
//! measured, never asserted: performance targets are read from this report,
//! not enforced by timed tests.

use std::fmt::Write as _;
use std::process::Stdio;

use crate::{Error, cargo, describe, workspace_root};

/// A registered benchmark: the package and example that run it, and
/// whether it drives the release `agentloop` binary (built first; its path
/// in `AGENTLOOP_BIN`).
struct Benchmark {
    package: &'static str,
    example: &'static str,
    needs_binary: bool,
}

const BENCHMARKS: &[Benchmark] = &[
    Benchmark {
        package: "agentloop-types",
        example: "assembler_bench",
        needs_binary: false,
    },
    Benchmark {
        package: "agentloop-engine",
        example: "loop_bench",
        needs_binary: false,
    },
    Benchmark {
        package: "agentloop-engine",
        example: "context_bench",
        needs_binary: false,
    },
    Benchmark {
        package: "agentloop-providers",
        example: "sse_bench",
        needs_binary: false,
    },
    Benchmark {
        package: "agentloop-providers",
        example: "cache_bench",
        needs_binary: false,
    },
    Benchmark {
        package: "agentloop-tests",
        example: "http_loop_bench",
        needs_binary: false,
    },
    Benchmark {
        package: "agentloop-tests",
        example: "floor_bench",
        needs_binary: false,
    },
    Benchmark {
        package: "agentloop-tests",
        example: "concurrency_bench",
        needs_binary: false,
    },
    Benchmark {
        package: "agentloop-server",
        example: "server_bench",
        needs_binary: false,
    },
    Benchmark {
        package: "agentloop-tools",
        example: "tools_bench",
        needs_binary: false,
    },
    Benchmark {
        package: "agentloop-tools",
        example: "checkpoint_bench",
        needs_binary: false,
    },
    Benchmark {
        package: "agentloop-runtime",
        example: "storage_bench",
        needs_binary: false,
    },
    Benchmark {
        package: "agentloop-cli",
        example: "restate_bench",
        needs_binary: true,
    },
];

/// Runs every registered benchmark (or those whose example name contains
/// one of `args`) and writes the report.
pub fn run(args: &[String]) -> Result<(), Error> {
    let selected: Vec<&Benchmark> = BENCHMARKS
        .iter()
        .filter(|b| args.is_empty() || args.iter().any(|a| b.example.contains(a.as_str())))
        .collect();
    if selected.is_empty() {
        return Err(Error::Usage(format!("no benchmark matches {args:?}")));
    }
    let mut rows = String::new();
    for benchmark in selected {
        if benchmark.needs_binary {
            build_binary()?;
        }
        let mut command = cargo(&[
            "run",
            "--quiet",
            "--release",
            "--package",
            benchmark.package,
            "--example",
            benchmark.example,
        ]);
        command.stderr(Stdio::inherit());
        if benchmark.needs_binary {
            command.env(
                "AGENTLOOP_BIN",
                workspace_root().join("target/release/agentloop"),
            );
        }
        let line = describe(&command);
        println!("==> bench: {line}");
        let output = command.output().map_err(|source| Error::Spawn {
            command: line.clone(),
            source,
        })?;
        if !output.status.success() {
            return Err(Error::StepFailed {
                step: format!("bench {}", benchmark.example),
                status: output.status,
            });
        }
        let text = String::from_utf8_lossy(&output.stdout);
        print!("{text}");
        rows.push_str(&text);
    }
    let path = workspace_root().join("docs").join("benchmarks.md");
    let previous = std::fs::read_to_string(&path).unwrap_or_default();
    // A run of some benchmarks only refreshes their rows: the others stay.
    let rows = if args.is_empty() {
        rows
    } else {
        merge_rows(&previous, &rows)
    };
    let mut report = report(&rows, &machine());
    // Sections recorded by hand (runs too long for every bench, the fuzzing
    // runs) are kept as they are.
    if let Some(at) = previous.find(KEPT_SECTION) {
        report.push('\n');
        report.push_str(&previous[at..]);
    }
    std::fs::write(&path, report)
        .map_err(|e| Error::Failed(format!("cannot write {}: {e}", path.display())))?;
    println!("wrote {}", path.display());
    Ok(())
}

/// The generated table's rows of `previous` (the report before this run,
/// up to the section kept by hand) with `fresh` in place of those of the
/// same benchmark and figure; a fresh row new to the table goes after the
/// row it follows in the fresh run (at the table's end if it is first).
fn merge_rows(previous: &str, fresh: &str) -> String {
    let key = |row: &str| -> Option<String> {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        (cells.len() > 3).then(|| format!("{}|{}", cells[1], cells[2]))
    };
    let generated = previous
        .find(KEPT_SECTION)
        .map_or(previous, |at| &previous[..at]);
    let mut merged: Vec<&str> = generated
        .lines()
        .filter(|l| {
            l.starts_with("| ") && !l.starts_with("| benchmark |") && !l.starts_with("| ---")
        })
        .collect();
    let mut after: Option<usize> = None;
    for row in fresh.lines().filter(|l| l.starts_with("| ")) {
        let at = match merged.iter().position(|m| key(m) == key(row)) {
            Some(at) => {
                merged[at] = row;
                at
            }
            None => {
                let at = after.map_or(merged.len(), |a| a + 1);
                merged.insert(at, row);
                at
            }
        };
        after = Some(at);
    }
    merged.iter().map(|row| format!("{row}\n")).collect()
}

/// Builds the release `agentloop` binary a benchmark drives.
fn build_binary() -> Result<(), Error> {
    let mut command = cargo(&[
        "build",
        "--quiet",
        "--release",
        "--package",
        "agentloop-cli",
        "--bin",
        "agentloop",
    ]);
    let line = describe(&command);
    println!("==> bench: {line}");
    let status = command.status().map_err(|source| Error::Spawn {
        command: line.clone(),
        source,
    })?;
    if !status.success() {
        return Err(Error::StepFailed {
            step: "build the agentloop binary".to_owned(),
            status,
        });
    }
    Ok(())
}

/// The heading from which `docs/benchmarks.md` is not generated.
const KEPT_SECTION: &str = "## Recorded by hand";

fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    format!("{cores} cores, {cpu}")
}

fn report(rows: &str, machine: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Benchmarks\n");
    let _ = writeln!(
        out,
        "Produced by `cargo xtask bench` (release build) on {machine}. \
         Figures are from one run; rerun the command to refresh them.\n"
    );
    let _ = writeln!(out, "| benchmark | figure | value |");
    let _ = writeln!(out, "| --- | --- | --- |");
    out.push_str(rows);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_is_a_table_with_the_command() {
        let report = report("| a | b | 1 |\n", "2 cores, test CPU");
        assert!(report.contains("`cargo xtask bench`"));
        assert!(report.contains("| --- | --- | --- |\n| a | b | 1 |\n"));
        assert!(report.contains("2 cores, test CPU"));
    }

    #[test]
    fn a_run_of_some_benchmarks_refreshes_only_their_rows() {
        let previous = report("| a | x | 1 |\n| b | y | 2 |\n", "cpu")
            + &format!("\n{KEPT_SECTION}\n\n| c | z | 3 |\n");
        let merged = merge_rows(&previous, "| b | y | 20 |\n| d | w | 4 |\n");
        assert_eq!(merged, "| a | x | 1 |\n| b | y | 20 |\n| d | w | 4 |\n");
    }

    #[test]
    fn a_figure_new_to_the_table_goes_beside_its_benchmarks_rows() {
        let previous = report("| a | x | 1 |\n| a | y | 2 |\n| b | z | 3 |\n", "cpu");
        let merged = merge_rows(
            &previous,
            "| a | x | 10 |\n| a | new | 5 |\n| a | y | 20 |\n",
        );
        assert_eq!(
            merged,
            "| a | x | 10 |\n| a | new | 5 |\n| a | y | 20 |\n| b | z | 3 |\n"
        );
    }
}
