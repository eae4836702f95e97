//! `cargo xtask bench`: runs the benchmarks, prints their figures and writes
//! them to `docs/benchmarks.md`.

use crate::Error;

/// Runs every registered benchmark; `args` are the arguments after `bench`.
pub fn run(args: &[String]) -> Result<(), Error> {
    let _ = args;
    println!("no benchmarks registered yet");
    Ok(())
}
