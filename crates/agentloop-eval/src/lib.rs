//! Evals for agentloop agents: "did my prompt change make it worse?"
//! answered by running a dataset of cases and judging every run.
//!
//! - [`dataset`]: cases in YAML, JSON or JSON Lines — a prompt (or a
//!   conversation), files for the case's folder, tags and expectations —
//!   checked when loaded ([`DatasetError`] names the file, line and case);
//! - [`expect`] and [`checks`]: the expectations a case may set: the answer
//!   equals, contains or matches a pattern; the structured output fits a
//!   JSON Schema; the tools called (in order, exactly or as a set, with
//!   argument matchers); steps, tokens, cost and wall-time limits;
//! - [`judge`]: an LLM judge with a rubric, through any provider;
//! - [`evaluator`]: the [`Evaluator`] trait, for checks of one's own;
//! - [`subject`]: what runs a case ([`Subject`]; [`EngineSubject`] is the
//!   loop with a provider, options and tools);
//! - [`runner`]: repeats, bounded concurrency, a temporary folder per run;
//! - [`report`], [`table`], [`junit`], [`compare`]: the report as JSON, a
//!   terminal table and JUnit XML, and its comparison with an earlier one.
//!
//! ```
//! use std::sync::Arc;
//! use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
//! use agentloop_eval::{EngineSubject, Format, Runner, dataset};
//! use agentloop_types::{LoopOptions, ModelProvider};
//!
//! let yaml = r#"
//! name: greetings
//! cases:
//!   - name: says-hello
//!     prompt: Say hello.
//!     expect:
//!       contains: Hello
//!   - name: says-goodbye
//!     prompt: Say goodbye.
//!     expect:
//!       contains: Goodbye
//! "#;
//! let data = dataset::parse(yaml, Format::Yaml, "greetings.yaml".as_ref()).unwrap();
//! // A fresh scripted provider for each run: it always says hello.
//! let subject = EngineSubject::new(
//!     Arc::new(|| ScriptedProvider::new([ScriptedTurn::new().text("Hello!")]) as Arc<dyn ModelProvider>),
//!     LoopOptions::default(),
//! );
//! # futures::executor::block_on(async {
//! let report = Runner::new(Arc::new(subject)).run(&data).await.unwrap();
//! assert!(report.cases[0].passed);
//! assert!(!report.cases[1].passed);
//! println!("{}", agentloop_eval::table::render(&report));
//! # });
//! ```
//!
//! # Cargo features
//!
//! None: every format and evaluator is always built.

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod checks;
pub mod compare;
pub mod dataset;
pub mod evaluator;
pub mod expect;
pub mod judge;
pub mod junit;
pub mod report;
pub mod runner;
pub mod subject;
pub mod table;
mod text;

pub use compare::Comparison;
pub use dataset::{Case, Dataset, DatasetError, Format};
pub use evaluator::{Evaluator, Observation, ToolCall, Verdict};
pub use judge::{Judge, ProviderFactory};
pub use report::{CaseReport, Report, RunReport, Summary};
pub use runner::{EvalError, Progress, Runner};
pub use subject::{CaseInput, EngineSubject, Subject, SubjectError, ToolFactory};
