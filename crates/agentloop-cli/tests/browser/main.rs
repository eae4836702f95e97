//! The page served by `agentloop serve`, driven in headless Chromium
//! through ChromeDriver, each test against its own server on a scripted
//! model. Screenshots go to `target/screenshots/`.
//!
//! - `workflow`: sign in, projects, tasks, runs streaming and chaining,
//!   model output shown as text, reloads, cancel, Mark Done, approvals,
//!   minions;
//! - `run_view`: how a run ended (why it failed, who stopped it, the run
//!   the chain started, a run Mark Done stopped), cancelling from the
//!   run's page;
//! - `decisions`: approving (once, always, with edited arguments),
//!   answering a question (by a choice, or in words, never empty), the
//!   waiting notice, starting a run while one waits;
//! - `manage`: a project's approval policy, deleting tasks and projects,
//!   a deleted task's address;
//! - `layout`: a phone's width with long unbroken text, the Mark Done
//!   checkbox by its label, the runs table keeping words whole beside a
//!   long failure, no focus frame on a view after a reload;
//! - `restart`: the server killed mid-run and started again: the page
//!   says it cannot reach it, reconnects, shows the run's answer once;
//! - `steer`: a message sent while the run works, queued then delivered
//!   into the transcript; a message to an ended run starts the next one;
//!   a picked strategy refusing it or restarting the run;
//! - `inspect`: the run inspector's timeline, a step's request, response
//!   (as text) and tokens, a tool step's files, a step saved as an eval
//!   case `agentloop eval` runs, forking from a step; a queued message
//!   shown again after a reload;
//! - `memories`: a project's memories listed (linked to their run),
//!   edited and deleted; the audit log, the project's and one's own;
//! - `budgets_schedules`: a project's budgets edited and their spend
//!   shown; schedules created, paused, resumed and deleted, each with its
//!   next tick and what its last tick did.
//! - `roles`: an owner invites a viewer from the page; the viewer's page
//!   shows the project, its runs and what a run waits for, without the
//!   controls to start, decide, message, cancel or change.
//!
//! Needs `chromium` and `chromedriver` (`.ci/run` installs Debian's
//! `chromium` and `chromium-driver`). Without them each test says so loudly
//! and skips — except under CI, where it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../common/mod.rs"]
mod common;
mod driver;
mod site;

mod budgets_schedules;
mod decisions;
mod inspect;
mod layout;
mod manage;
mod memories;
mod restart;
mod roles;
mod run_view;
mod steer;
mod workflow;
