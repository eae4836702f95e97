//! `cargo xtask ci`: every check CI runs, in order, stopping at the first
//! failure: fmt, clippy, the lean CLI's clippy, layers, the event schema,
//! the fuzz targets (built, not run), packaging, nextest, the `acp`
//! feature's lint and tests, doctests, and docs without warnings.

use crate::{Error, cargo, layers, package, run_step, schema};

/// The cargo-fuzz crate, outside the workspace.
const FUZZ_MANIFEST: &str = "fuzz/Cargo.toml";

/// Splits the arguments after `ci` into the extra arguments for
/// `cargo nextest run`: everything after a leading `--`.
pub fn nextest_args(args: &[String]) -> Result<&[String], Error> {
    match args.split_first() {
        None => Ok(&[]),
        Some((first, rest)) if first == "--" => Ok(rest),
        Some((first, _)) => Err(Error::Usage(format!(
            "`ci` passes arguments to nextest only after `--`, got `{first}`"
        ))),
    }
}

/// Runs formatting, clippy (the workspace's, then the lean CLI's), the
/// layering check, the schema check, the fuzz targets' build check, the
/// packaging check, nextest, doctests and the docs build in that order;
/// `args` are the arguments after `ci`.
pub fn run(args: &[String]) -> Result<(), Error> {
    let extra = nextest_args(args)?;

    step("fmt");
    run_step("fmt", &mut cargo(&["fmt", "--all", "--check"]))?;

    step("clippy");
    run_step(
        "clippy",
        &mut cargo(&[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]),
    )?;

    step("lean build");
    // `cargo install agentloop-cli --no-default-features` must keep
    // compiling (no server, no Restate, no QuickJS) and stay free of code
    // that only the left-out commands use. Checked, not built: clippy
    // reuses the metadata of the step above.
    run_step(
        "lean build",
        &mut cargo(&[
            "clippy",
            "--package",
            "agentloop-cli",
            "--no-default-features",
            "--bin",
            "agentloop",
            "--",
            "-D",
            "warnings",
        ]),
    )?;

    step("layers");
    layers::run()?;

    step("schema");
    schema::run(&["--check".to_owned()])?;

    step("fuzz targets");
    // The fuzz crate is its own workspace (libFuzzer needs nightly flags to
    // link), so CI checks that its targets still compile and are formatted.
    // An input that ever crashes a target is kept as an ordinary test of
    // the crate it found a bug in, and runs under nextest. The check shares
    // the workspace's target folder so the libraries' clippy output above
    // is reused.
    run_step(
        "fuzz targets",
        &mut cargo(&["fmt", "--manifest-path", FUZZ_MANIFEST, "--check"]),
    )?;
    run_step(
        "fuzz targets",
        &mut cargo(&[
            "clippy",
            "--manifest-path",
            FUZZ_MANIFEST,
            "--target-dir",
            "target",
            // Not `--locked`: a dependency added to a library crate would
            // otherwise fail this step until fuzz/Cargo.lock is refreshed.
            "--bins",
            "--",
            "-D",
            "warnings",
        ]),
    )?;

    step("package");
    // Without `--verify`: building every package from its `.crate` again
    // took over nine minutes for the first three crates on two cores. The
    // file-list and include checks catch a file left out of a package; what
    // only a build of each package alone shows (a dependency feature a
    // crate uses but gets only through the workspace's feature unification)
    // is left to `cargo xtask package --verify` before a release.
    package::run(&[])?;

    step("nextest");
    let mut nextest = cargo(&["nextest", "run", "--workspace"]);
    nextest.args(extra);
    run_step("nextest", &mut nextest)?;

    // `agentloop acp` is behind the CLI's `acp` feature (its protocol crate
    // changes serde_json's map order for every crate built with it): linted
    // and tested in a build of its own.
    step("acp");
    run_step(
        "acp clippy",
        &mut cargo(&[
            "clippy",
            "-p",
            "agentloop-cli",
            "--features",
            "acp",
            // The layers below are linted by the clippy step; built with
            // `preserve_order`, their types are sized differently.
            "--no-deps",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]),
    )?;
    let mut acp = cargo(&[
        "nextest",
        "run",
        "-p",
        "agentloop-cli",
        "--features",
        "acp",
        "-E",
        "binary(acp) | test(/^acp::/)",
    ]);
    run_step("acp tests", &mut acp)?;

    step("doctests");
    run_step("doctests", &mut cargo(&["test", "--workspace", "--doc"]))?;

    step("docs");
    let mut doc = cargo(&["doc", "--workspace", "--no-deps"]);
    doc.env("RUSTDOCFLAGS", "-D warnings");
    run_step("docs", &mut doc)?;

    println!("==> ci: all steps passed");
    Ok(())
}

fn step(name: &str) {
    println!("==> ci: {name}");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn no_arguments_means_no_extra_nextest_arguments() {
        assert!(nextest_args(&[]).unwrap().is_empty());
    }

    #[test]
    fn arguments_after_double_dash_go_to_nextest() {
        let given = args(&["--", "-E", "test(foo)", "--no-fail-fast"]);
        assert_eq!(
            nextest_args(&given).unwrap(),
            &args(&["-E", "test(foo)", "--no-fail-fast"])[..]
        );
    }

    #[test]
    fn arguments_without_double_dash_are_rejected() {
        let given = args(&["--no-fail-fast"]);
        assert!(matches!(nextest_args(&given), Err(Error::Usage(_))));
    }
}
