//! The runner through the library API: each run's own folder, custom
//! evaluators, repeats under a concurrency bound.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agentloop_eval::{
    Case, CaseInput, Evaluator, Format, Observation, Runner, Subject, SubjectError, Verdict,
    dataset,
};
use agentloop_types::{LoopResult, LoopStatus, Message, TokenTotals};
use async_trait::async_trait;

/// Answers with the names of the files in its case's folder, and keeps
/// the folders it was given.
#[derive(Default)]
struct ListsFolder {
    folders: Mutex<Vec<PathBuf>>,
    running: AtomicUsize,
    most_at_once: AtomicUsize,
}

#[async_trait]
impl Subject for ListsFolder {
    async fn run(&self, input: CaseInput<'_>) -> Result<LoopResult, SubjectError> {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_at_once.fetch_max(now, Ordering::SeqCst);
        // Let the other runs start before this one ends.
        for _ in 0..4 {
            yield_now().await;
        }
        self.folders.lock().unwrap().push(input.folder.to_owned());
        let mut names: Vec<String> = std::fs::read_dir(input.folder)
            .map_err(|e| SubjectError(e.to_string()))?
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let mut messages = input.context;
        messages.push(Message::assistant_text("a1", names.join(",")));
        self.running.fetch_sub(1, Ordering::SeqCst);
        Ok(LoopResult {
            status: LoopStatus::Complete {
                return_value: None,
                output: None,
            },
            messages: messages.into(),
            tokens: TokenTotals::default(),
            stop: None,
        })
    }
}

/// Gives the other runs a turn (wakes itself, so the executor comes back).
async fn yield_now() {
    let mut yielded = false;
    futures::future::poll_fn(|cx| {
        if yielded {
            std::task::Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    })
    .await;
}

/// Passes answers shorter than a limit, scoring shorter ones higher.
struct Short(usize);

#[async_trait]
impl Evaluator for Short {
    fn name(&self) -> &str {
        "short"
    }

    async fn evaluate(&self, _case: &Case, run: &Observation) -> Verdict {
        let length = run.answer.as_deref().unwrap_or("").len();
        Verdict {
            evaluator: String::new(),
            passed: length <= self.0,
            score: 1.0 - length as f64 / 100.0,
            reason: format!("{length} characters"),
        }
    }
}

const DATASET: &str = r#"
cases:
  - name: one
    prompt: list
    files: {a.txt: "1", sub/b.txt: "2"}
    expect: {equals: "a.txt,sub"}
  - name: two
    prompt: list
    files: {c.txt: "3"}
    expect: {equals: "c.txt"}
  - name: empty
    prompt: list
    repeat: 3
    expect: {equals: ""}
"#;

#[test]
fn each_run_sees_only_its_own_files_in_a_folder_removed_afterwards() {
    let data = dataset::parse(DATASET, Format::Yaml, "d.yaml".as_ref()).unwrap();
    let subject = Arc::new(ListsFolder::default());
    let report =
        futures::executor::block_on(Runner::new(subject.clone()).concurrency(2).run(&data))
            .unwrap();
    for case in &report.cases {
        assert!(case.passed, "{case:?}");
    }
    assert_eq!(report.cases[2].runs.len(), 3);
    let folders = subject.folders.lock().unwrap();
    assert_eq!(folders.len(), 5);
    let mut distinct = folders.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 5, "every run has a folder of its own");
    assert!(folders.iter().all(|f| !f.exists()), "folders are removed");
    assert_eq!(subject.most_at_once.load(Ordering::SeqCst), 2);
}

#[test]
fn custom_evaluators_judge_every_case() {
    let data = dataset::parse(DATASET, Format::Yaml, "d.yaml".as_ref()).unwrap();
    let report = futures::executor::block_on(
        Runner::new(Arc::new(ListsFolder::default()))
            .evaluator(Arc::new(Short(5)))
            .run(&data),
    )
    .unwrap();
    let verdict = |case: usize| {
        report.cases[case].runs[0]
            .verdicts
            .iter()
            .find(|v| v.evaluator == "short")
            .unwrap()
            .clone()
    };
    assert!(!verdict(0).passed, "9 characters is too long");
    assert_eq!(verdict(0).reason, "9 characters");
    assert!(verdict(1).passed);
    assert!((verdict(1).score - 0.95).abs() < 1e-9);
    assert!(!report.cases[0].passed);
    assert!(report.cases[1].passed);
}

#[test]
fn a_case_asking_for_a_judge_needs_one() {
    let data = dataset::parse(
        "cases:\n  - name: j\n    prompt: x\n    expect:\n      judge: {rubric: be kind}\n",
        Format::Yaml,
        "d.yaml".as_ref(),
    )
    .unwrap();
    let error =
        futures::executor::block_on(Runner::new(Arc::new(ListsFolder::default())).run(&data))
            .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("case \"j\" asks for an LLM judge"),
        "{error}"
    );
}
