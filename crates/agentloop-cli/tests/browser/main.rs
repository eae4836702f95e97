//! The page served by `agentloop serve`, driven in headless Chromium
//! through ChromeDriver, each test against its own server on a scripted
//! model. Screenshots go to `target/screenshots/`.
//!
//! - `workflow`: sign in, projects, tasks, runs streaming and chaining,
//!   model output shown as text, reloads, cancel, Mark Done, approvals,
//!   minions;
//! - `run_view`: how a run ended (why it failed, who stopped it, the run
//!   the chain started), cancelling from the run's page;
//! - `decisions`: approving (once, always, with edited arguments),
//!   answering a question, the waiting notice, starting a run while one
//!   waits;
//! - `manage`: a project's approval policy, deleting tasks and projects;
//! - `layout`: a phone's width with long unbroken text, the Mark Done
//!   checkbox by its label.
//!
//! Needs `chromium` and `chromedriver` (`.ci/run` installs Debian's
//! `chromium` and `chromium-driver`). Without them each test says so loudly
//! and skips — except under CI, where it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../common/mod.rs"]
mod common;
mod driver;
mod site;

mod decisions;
mod layout;
mod manage;
mod run_view;
mod workflow;
