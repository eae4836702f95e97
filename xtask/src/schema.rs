//! `cargo xtask schema [--check]`: the JSON Schemas of a run's protocol,
//! generated from `agentloop-types` (its `schema` feature) by the
//! `event_schema` example into `docs/`: what a run emits
//! (`docs/events.schema.json`) and what can be submitted to it
//! (`docs/inputs.schema.json`). With `--check` the files are only
//! compared, and a stale file fails (CI runs this).

use crate::{Error, cargo, describe, workspace_root};

/// Each document: the example's argument and where the schema is kept.
pub const SCHEMAS: [(&str, &str); 2] = [
    ("events", "docs/events.schema.json"),
    ("inputs", "docs/inputs.schema.json"),
];

/// Generates the schemas; writes them, or with `check` compares them.
pub fn run(args: &[String]) -> Result<(), Error> {
    let check = match args {
        [] => false,
        [flag] if flag == "--check" => true,
        [other, ..] => {
            return Err(Error::Usage(format!(
                "`schema` takes only `--check`, got `{other}`"
            )));
        }
    };
    for (which, path) in SCHEMAS {
        let generated = generate(which)?;
        let full = workspace_root().join(path);
        if check {
            let stored = std::fs::read(&full).unwrap_or_default();
            if stored != generated {
                return Err(Error::Failed(format!(
                    "{path} is stale: run `cargo xtask schema` and commit it"
                )));
            }
            println!("==> schema: {path} is current");
        } else {
            std::fs::write(&full, &generated)
                .map_err(|e| Error::Failed(format!("cannot write {path}: {e}")))?;
            println!("==> schema: wrote {path}");
        }
    }
    Ok(())
}

/// The schema document the example prints for `which`.
fn generate(which: &str) -> Result<Vec<u8>, Error> {
    let mut command = cargo(&[
        "run",
        "--quiet",
        "-p",
        "agentloop-types",
        "--features",
        "schema",
        "--example",
        "event_schema",
        "--",
        which,
    ]);
    let output = command.output().map_err(|source| Error::Spawn {
        command: describe(&command),
        source,
    })?;
    if !output.status.success() {
        return Err(Error::StepFailed {
            step: format!("schema {which}"),
            status: output.status,
        });
    }
    Ok(output.stdout)
}
