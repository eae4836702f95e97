//! `cargo xtask soak`: the full soak of the HTTP API — `agentloop serve` on
//! PostgreSQL under mixed traffic from 200 users for 10 minutes (the test
//! `soak` of `agentloop-cli`, release build). CI runs the same test for one
//! minute with fewer users. `AGENTLOOP_SOAK_SECS` and `AGENTLOOP_SOAK_USERS`
//! override the length and the user count; `AGENTLOOP_TEST_POSTGRES_URL`
//! names the PostgreSQL server (a scratch database is created on it).

use crate::{Error, cargo, describe, run_step};

/// The full soak's length in seconds and user count.
const FULL: (&str, &str) = ("600", "200");

/// Runs the soak; it takes no arguments.
pub fn run(args: &[String]) -> Result<(), Error> {
    if let Some(extra) = args.first() {
        return Err(Error::Usage(format!(
            "`soak` takes no arguments, got `{extra}`"
        )));
    }
    if std::env::var_os("AGENTLOOP_TEST_POSTGRES_URL").is_none() {
        return Err(Error::Failed(
            "the soak runs on PostgreSQL: set AGENTLOOP_TEST_POSTGRES_URL".to_owned(),
        ));
    }
    let mut command = cargo(&[
        "test",
        "--release",
        "--package",
        "agentloop-cli",
        "--test",
        "soak",
        "--",
        "--nocapture",
    ]);
    for (name, full) in [
        ("AGENTLOOP_SOAK_SECS", FULL.0),
        ("AGENTLOOP_SOAK_USERS", FULL.1),
    ] {
        if std::env::var_os(name).is_none() {
            command.env(name, full);
        }
    }
    println!("==> soak: {}", describe(&command));
    run_step("soak", &mut command)
}
