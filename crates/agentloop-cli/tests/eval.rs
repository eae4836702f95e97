//! `agentloop eval`, driven as a user would: datasets run against scripted
//! providers (and the demo), so every verdict is known in advance.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/evals")
        .join(name)
        .display()
        .to_string()
}

/// Runs `agentloop eval` with a home of its own: no configuration or key
/// file of the machine's user applies.
fn eval(args: &[&str]) -> Output {
    let home = tempfile::tempdir().unwrap();
    common::agentloop()
        .arg("eval")
        .args(args)
        .env("HOME", home.path())
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Seconds vary from run to run: the snapshots show `[t]`.
fn redact_times(text: &str) -> String {
    let seconds = regex::Regex::new(r#""seconds": [0-9.e-]+"#).unwrap();
    let table = regex::Regex::new(r"\b[0-9]+\.[0-9]{2}s\b").unwrap();
    let text = seconds.replace_all(text, r#""seconds": "[t]""#);
    table.replace_all(&text, "[t]").into_owned()
}

fn folder_eval(script: &str, extra: &[&str]) -> Output {
    let dataset = fixture("folder.yaml");
    let provider = format!("scripted:{}", fixture(script));
    let mut args = vec![dataset.as_str(), "--provider", &provider, "--tools", "fs"];
    args.extend_from_slice(extra);
    eval(&args)
}

fn passed_by_case(report: &Value) -> Vec<(String, bool)> {
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_owned(),
                c["passed"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[test]
fn each_case_passes_or_fails_as_its_expectations_say() {
    let output = folder_eval("lists-folder.json", &["--format", "json"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        passed_by_case(&report),
        [
            ("lists-the-file".to_owned(), true),
            ("exact-answer".to_owned(), true),
            ("answer-pattern".to_owned(), true),
            ("wrong-answer".to_owned(), false),
            ("wrong-tool".to_owned(), false),
            ("over-budget".to_owned(), false),
        ]
    );
    assert_eq!(report["summary"]["passed"], 3);
    assert_eq!(report["cases"][0]["runs"][0]["tools"][0], "fs");
    assert_eq!(report["cases"][0]["runs"][0]["steps"], 2);
    insta::assert_snapshot!("eval_report_json", redact_times(&text(&output.stdout)));
}

#[test]
fn the_table_shows_scores_costs_tokens_and_why_cases_failed() {
    let output = folder_eval("lists-folder.json", &[]);
    assert_eq!(output.status.code(), Some(1));
    // Piped: no progress bar on stderr.
    assert!(
        !text(&output.stderr).contains('█'),
        "{}",
        text(&output.stderr)
    );
    insta::assert_snapshot!("eval_table", redact_times(&text(&output.stdout)));
}

#[test]
fn a_dataset_whose_cases_all_pass_exits_0() {
    let output = folder_eval("lists-folder.json", &["--tag", "fs"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stdout));
    assert!(text(&output.stdout).contains("1/1 cases passed"));
}

#[test]
fn the_junit_report_is_well_formed_junit() {
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("eval.xml");
    let output = folder_eval("lists-folder.json", &["--junit", junit.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let xml = std::fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    assert_eq!(root.attribute("tests"), Some("6"));
    assert_eq!(root.attribute("failures"), Some("3"));
    assert_eq!(root.attribute("errors"), Some("0"));
    let suites: Vec<_> = root.children().filter(|n| n.is_element()).collect();
    assert_eq!(suites.len(), 1);
    let suite = suites[0];
    assert_eq!(suite.tag_name().name(), "testsuite");
    assert_eq!(suite.attribute("name"), Some("folder"));
    for attribute in ["tests", "failures", "errors", "skipped"] {
        suite.attribute(attribute).unwrap().parse::<u32>().unwrap();
    }
    suite.attribute("time").unwrap().parse::<f64>().unwrap();
    let cases: Vec<_> = suite.children().filter(|n| n.is_element()).collect();
    assert_eq!(cases.len(), 6);
    let mut failed = Vec::new();
    for case in cases {
        assert_eq!(case.tag_name().name(), "testcase");
        assert_eq!(case.attribute("classname"), Some("folder"));
        case.attribute("time").unwrap().parse::<f64>().unwrap();
        let children: Vec<_> = case.children().filter(|n| n.is_element()).collect();
        if let Some(failure) = children.first() {
            assert_eq!(failure.tag_name().name(), "failure");
            assert!(failure.attribute("message").is_some());
            assert!(!failure.text().unwrap_or("").is_empty());
            failed.push(case.attribute("name").unwrap().to_owned());
        }
    }
    assert_eq!(failed, ["wrong-answer", "wrong-tool", "over-budget"]);
}

#[test]
fn a_broken_prompt_shows_as_regressions_and_fails_the_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let earlier = dir.path().join("earlier.json");
    let earlier_arg = earlier.to_str().unwrap();
    let output = folder_eval("lists-folder.json", &["--report", earlier_arg]);
    assert_eq!(output.status.code(), Some(1));

    // The same agent again: nothing got worse.
    let same = folder_eval("lists-folder.json", &["--compare", earlier_arg]);
    assert_eq!(same.status.code(), Some(0), "{}", text(&same.stdout));
    assert!(text(&same.stdout).contains("no regressions"));

    // An agent that no longer looks at the folder.
    let broken = folder_eval("broken-prompt.json", &["--compare", earlier_arg]);
    assert_eq!(broken.status.code(), Some(1));
    let stdout = text(&broken.stdout);
    let regressions: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("regression: "))
        .map(|l| l.split(':').next().unwrap())
        .collect();
    assert_eq!(
        regressions,
        ["lists-the-file", "exact-answer", "answer-pattern"]
    );
    assert!(stdout.contains("improvement: over-budget"), "{stdout}");
    assert!(stdout.contains("3 regressions"), "{stdout}");
}

#[test]
fn structured_output_is_checked_against_a_schema_and_a_judge_keeps_its_reason() {
    let provider = format!("scripted:{}", fixture("structured.json"));
    let judge = format!("scripted:{}", fixture("judge-pass.json"));
    let dataset = fixture("structured.jsonl");
    let output = eval(&[
        &dataset,
        "--provider",
        &provider,
        "--judge-provider",
        &judge,
        "--format",
        "json",
    ]);
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", text(&output.stderr)));
    assert_eq!(
        passed_by_case(&report),
        [
            ("fits-the-schema".to_owned(), true),
            ("misses-a-field".to_owned(), false),
            ("judged".to_owned(), true),
        ]
    );
    let missing = &report["cases"][1]["runs"][0]["verdicts"];
    let schema = missing
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["evaluator"] == "schema")
        .unwrap();
    assert!(
        schema["reason"].as_str().unwrap().contains("size"),
        "{schema}"
    );
    let judged = report["cases"][2]["runs"][0]["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["evaluator"] == "judge")
        .unwrap()
        .clone();
    assert_eq!(judged["score"], 0.9);
    assert_eq!(judged["reason"], "It names the one file.");

    let judge = format!("scripted:{}", fixture("judge-fail.json"));
    let output = eval(&[
        &dataset,
        "--provider",
        &provider,
        "--judge-provider",
        &judge,
        "--tag",
        "none",
    ]);
    // No case has the tag: a usage error.
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("no case to run with the tags none"));
    let output = eval(&[
        &dataset,
        "--provider",
        &provider,
        "--judge-provider",
        &judge,
    ]);
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("judge: It does not say what the file holds."),
        "{stdout}"
    );
}

#[test]
fn repeats_run_each_case_again_at_bounded_concurrency() {
    let output = folder_eval(
        "lists-folder.json",
        &["--repeat", "3", "--concurrency", "2", "--format", "json"],
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["summary"]["runs"], 18);
    for case in report["cases"].as_array().unwrap() {
        assert_eq!(case["runs"].as_array().unwrap().len(), 3);
    }
    assert_eq!(report["summary"]["passed"], 3);
}

#[test]
fn the_demo_runs_the_shipped_example_dataset() {
    let dataset = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/evals/demo.yaml");
    let output = eval(&[dataset.to_str().unwrap(), "--demo"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        text(&output.stdout),
        text(&output.stderr)
    );
}

#[test]
fn malformed_datasets_are_refused_naming_file_line_and_case() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &str, &str); 7] = [
        (
            "typo.yaml",
            "cases:\n  - name: a\n    prompt: hi\n  - name: b\n    prompt: hi\n    expect:\n      contians: x\n",
            ":7: case \"b\": cases[1].expect: unknown field `contians`",
        ),
        (
            "regex.yaml",
            "cases:\n  - name: a\n    prompt: hi\n  - name: b\n    prompt: hi\n    expect:\n      regex: \"(\"\n",
            ":4: case \"b\": expect.regex is not a valid regular expression",
        ),
        (
            "syntax.json",
            "{\"cases\": [\n {\"name\": \"a\", \"prompt\": \"x\"},\n {\"name\": \"b\"\n  \"prompt\": \"y\"}]}",
            ":4: case \"b\": expected `,` or `}`",
        ),
        (
            "lines.jsonl",
            "{\"name\": \"a\", \"prompt\": \"x\"}\n\n{\"name\": \"b\", \"prompt\": \"y\", \"expect\": {\"max_steps\": -1}}\n",
            ":3: case \"b\": invalid value: integer `-1`",
        ),
        (
            "noprompt.yaml",
            "cases:\n  - name: a\n    tags: [x]\n",
            ":2: case \"a\": a case needs a prompt or messages",
        ),
        (
            "escape.yaml",
            "cases:\n  - name: a\n    prompt: hi\n    files:\n      ../outside.txt: x\n",
            ":2: case \"a\": files: \"../outside.txt\" must be a relative path inside the case's folder",
        ),
        (
            "dataset.txt",
            "cases: []\n",
            ": unknown dataset format; use .yaml, .yml, .json or .jsonl",
        ),
    ];
    for (name, content, expected) in cases {
        let path: PathBuf = dir.path().join(name);
        std::fs::write(&path, content).unwrap();
        let output = eval(&[path.to_str().unwrap(), "--demo"]);
        assert_eq!(output.status.code(), Some(2), "{name}");
        let stderr = text(&output.stderr);
        let want = format!("{}{expected}", path.display());
        assert!(stderr.contains(&want), "{name}: {stderr}\nwanted: {want}");
        assert!(output.stdout.is_empty(), "{name}");
    }
    let missing = dir.path().join("missing.yaml");
    let output = eval(&[missing.to_str().unwrap(), "--demo"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("cannot read the dataset"));
}

#[test]
fn a_terminal_gets_a_progress_bar_and_a_pipe_does_not() {
    let home = tempfile::tempdir().unwrap();
    let provider = format!("scripted:{}", fixture("lists-folder.json"));
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_agentloop"));
    command
        .args(["eval", &fixture("folder.yaml"), "--provider", &provider])
        .args(["--tools", "fs", "--concurrency", "1"])
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("TERM", "xterm");
    // Generous: a slow CI machine, not a performance bound.
    let mut p = rexpect::session::spawn_command(command, Some(30_000)).unwrap();
    let shown = p.exp_string("cases passed").unwrap();
    p.exp_eof().unwrap();
    // The bar is redrawn in place after each run, then cleared.
    for done in 1..=6 {
        assert!(shown.contains(&format!(" {done}/6 runs\r")), "{shown:?}");
    }
    assert!(shown.contains("6/6 runs\r\u{1b}[2Kcase"), "{shown:?}");
    // Piped (as in every other test here): the table alone.
    let piped = folder_eval("lists-folder.json", &[]);
    assert!(!text(&piped.stderr).contains("/6 runs"));
    assert!(!text(&piped.stderr).contains('█'));
}

#[test]
fn a_case_past_its_wall_time_is_cancelled_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = dir.path().join("slow.yaml");
    std::fs::write(
        &dataset,
        "cases:\n  - name: hangs\n    prompt: hi\n    expect:\n      max_seconds: 0.3\n",
    )
    .unwrap();
    let provider = format!("scripted:{}", fixture("hangs.json"));
    let output = eval(&[
        dataset.to_str().unwrap(),
        "--provider",
        &provider,
        "--format",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let run = &report["cases"][0]["runs"][0];
    assert_eq!(run["status"], "cancelled");
    let failed: Vec<&str> = run["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["passed"] == false)
        .map(|v| v["evaluator"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["status", "max_seconds"]);
}

#[test]
fn with_no_provider_configured_an_eval_says_what_to_set() {
    let output = eval(&[&fixture("folder.yaml")]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("no model provider is configured"),
        "{stderr}"
    );
    assert!(stderr.contains("pass --demo"), "{stderr}");
    assert!(output.stdout.is_empty());
}
