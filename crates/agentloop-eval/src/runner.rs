//! Running a dataset: every case (times its repeats) in a temporary folder
//! of its own holding the case's files, at most `concurrency` at once; each
//! run judged by the case's expectations, the LLM judge when the case asks
//! for one, and the runner's own evaluators.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;

use crate::checks;
use crate::dataset::{Case, Dataset};
use crate::evaluator::{Evaluator, Observation};
use crate::judge::Judge;
use crate::report::{CaseReport, Report, RunReport};
use crate::subject::{CaseInput, Subject};

/// Why an eval cannot start.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// A case asks for the LLM judge and the runner has none.
    #[error("case {case:?} asks for an LLM judge (expect.judge), and no judge is configured")]
    NoJudge {
        /// The case.
        case: String,
    },
    /// No case is left to run (an empty dataset, or a tag no case has).
    #[error("no case to run{}", if tags.is_empty() { String::new() } else { format!(" with the tags {}", tags.join(", ")) })]
    NoCases {
        /// The tags asked for.
        tags: Vec<String>,
    },
}

/// One finished run, as progress.
#[derive(Debug, Clone)]
pub struct Progress {
    /// Runs finished so far.
    pub done: usize,
    /// Runs in all.
    pub total: usize,
    /// The case the finished run belongs to.
    pub case: String,
    /// Whether it passed.
    pub passed: bool,
}

/// Called after each run.
pub type ProgressFn = Arc<dyn Fn(&Progress) + Send + Sync>;

/// Runs datasets against one subject.
pub struct Runner {
    subject: Arc<dyn Subject>,
    evaluators: Vec<Arc<dyn Evaluator>>,
    judge: Option<Judge>,
    repeats: u32,
    concurrency: usize,
    tags: Vec<String>,
    progress: Option<ProgressFn>,
}

impl Runner {
    /// A runner of one run per case, one at a time.
    pub fn new(subject: Arc<dyn Subject>) -> Self {
        Self {
            subject,
            evaluators: Vec::new(),
            judge: None,
            repeats: 1,
            concurrency: 1,
            tags: Vec::new(),
            progress: None,
        }
    }

    /// Adds an evaluator run on every case.
    pub fn evaluator(mut self, evaluator: Arc<dyn Evaluator>) -> Self {
        self.evaluators.push(evaluator);
        self
    }

    /// The LLM judge for cases with `expect.judge`.
    pub fn judge(mut self, judge: Judge) -> Self {
        self.judge = Some(judge);
        self
    }

    /// Runs each case this many times (at least 1); a case's own `repeat`
    /// wins.
    pub fn repeats(mut self, repeats: u32) -> Self {
        self.repeats = repeats.max(1);
        self
    }

    /// Runs at most this many cases at once (at least 1).
    pub fn concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = concurrency.max(1);
        self
    }

    /// Runs only the cases having one of these tags (none: every case).
    pub fn tags(mut self, tags: Vec<String>) -> Self {
        self.tags = tags;
        self
    }

    /// Calls `progress` after each run.
    pub fn on_progress(mut self, progress: ProgressFn) -> Self {
        self.progress = Some(progress);
        self
    }

    /// The cases of `dataset` this runner runs.
    pub fn selected<'a>(&self, dataset: &'a Dataset) -> Vec<&'a Case> {
        dataset
            .cases
            .iter()
            .filter(|c| self.tags.is_empty() || c.tags.iter().any(|t| self.tags.contains(t)))
            .collect()
    }

    /// Runs the selected cases of `dataset` and reports on them.
    pub async fn run(&self, dataset: &Dataset) -> Result<Report, EvalError> {
        let cases = self.selected(dataset);
        if cases.is_empty() {
            return Err(EvalError::NoCases {
                tags: self.tags.clone(),
            });
        }
        if self.judge.is_none()
            && let Some(case) = cases.iter().find(|c| c.expect.judge.is_some())
        {
            return Err(EvalError::NoJudge {
                case: case.name.clone(),
            });
        }
        let started = Instant::now();
        let jobs: Vec<(usize, u32)> = cases
            .iter()
            .enumerate()
            .flat_map(|(i, case)| (0..case.repeat.unwrap_or(self.repeats)).map(move |r| (i, r)))
            .collect();
        let total = jobs.len();
        let mut runs: Vec<Vec<(u32, RunReport)>> = vec![Vec::new(); cases.len()];
        let mut finished = futures::stream::iter(jobs)
            .map(|(i, r)| {
                let case = cases[i];
                async move { (i, r, self.run_case(case).await) }
            })
            .buffer_unordered(self.concurrency);
        let mut done = 0;
        while let Some((i, r, report)) = finished.next().await {
            done += 1;
            if let Some(progress) = &self.progress {
                progress(&Progress {
                    done,
                    total,
                    case: cases[i].name.clone(),
                    passed: report.passed,
                });
            }
            runs[i].push((r, report));
        }
        let reports = cases
            .iter()
            .zip(runs)
            .map(|(case, mut runs)| {
                runs.sort_by_key(|(r, _)| *r);
                CaseReport::new(
                    case.name.clone(),
                    case.tags.clone(),
                    runs.into_iter().map(|(_, run)| run).collect(),
                )
            })
            .collect();
        Ok(Report::new(
            dataset.name.clone(),
            reports,
            started.elapsed().as_secs_f64(),
        ))
    }

    /// One run of one case, in a folder of its own removed afterwards.
    async fn run_case(&self, case: &Case) -> RunReport {
        let folder = match case_folder(case) {
            Ok(folder) => folder,
            Err(e) => return not_run(format!("cannot lay out the case's folder: {e}")),
        };
        let started = Instant::now();
        let outcome = self
            .subject
            .run(CaseInput {
                case,
                context: case.context(),
                folder: folder.path(),
            })
            .await;
        let elapsed = started.elapsed();
        let result = match outcome {
            Ok(result) => result,
            Err(e) => return not_run(format!("the case could not run: {e}")),
        };
        let observed = Observation::new(result, case.context_turns(), elapsed);
        let mut verdicts = checks::verdicts(&case.expect, &observed);
        if let (Some(judge), Some(expect)) = (&self.judge, &case.expect.judge) {
            verdicts.push(judge.judge(case, expect, &observed).await);
        }
        for evaluator in &self.evaluators {
            let mut verdict = evaluator.evaluate(case, &observed).await;
            if verdict.evaluator.is_empty() {
                verdict.evaluator = evaluator.name().to_owned();
            }
            verdict.score = if verdict.score.is_finite() {
                verdict.score.clamp(0.0, 1.0)
            } else {
                0.0
            };
            verdicts.push(verdict);
        }
        let count = verdicts.len().max(1) as f64;
        let tokens = observed.tokens();
        RunReport {
            passed: verdicts.iter().all(|v| v.passed),
            score: verdicts.iter().map(|v| v.score).sum::<f64>() / count,
            status: observed.result.status.name().to_owned(),
            answer: observed.answer.clone(),
            tools: observed.tool_calls.iter().map(|c| c.name.clone()).collect(),
            steps: observed.steps,
            tokens: tokens.total_tokens(),
            cost: tokens.cost,
            seconds: elapsed.as_secs_f64(),
            verdicts,
            error: None,
        }
    }
}

/// A run that never started.
fn not_run(error: String) -> RunReport {
    RunReport {
        passed: false,
        score: 0.0,
        status: "not_run".to_owned(),
        answer: None,
        tools: Vec::new(),
        steps: 0,
        tokens: 0,
        cost: 0.0,
        seconds: 0.0,
        verdicts: Vec::new(),
        error: Some(error),
    }
}

/// A new temporary folder holding the case's files.
fn case_folder(case: &Case) -> std::io::Result<tempfile::TempDir> {
    let folder = tempfile::Builder::new()
        .prefix("agentloop-eval-")
        .tempdir()?;
    for (path, content) in &case.files {
        let target = folder.path().join(Path::new(path));
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(target, content)?;
    }
    Ok(folder)
}
