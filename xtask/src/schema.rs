//! `cargo xtask schema [--check]`: the JSON Schema of the event stream,
//! generated from `agentloop-types` (its `schema` feature) by the
//! `event_schema` example into `docs/events.schema.json`. With `--check`
//! the file is only compared, and a stale file fails (CI runs this).

use crate::{Error, cargo, describe, workspace_root};

/// Where the schema is kept.
pub const SCHEMA_PATH: &str = "docs/events.schema.json";

/// Generates the schema; writes it, or with `check` compares it.
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
    let mut command = cargo(&[
        "run",
        "--quiet",
        "-p",
        "agentloop-types",
        "--features",
        "schema",
        "--example",
        "event_schema",
    ]);
    let output = command.output().map_err(|source| Error::Spawn {
        command: describe(&command),
        source,
    })?;
    if !output.status.success() {
        return Err(Error::StepFailed {
            step: "schema".to_owned(),
            status: output.status,
        });
    }
    let path = workspace_root().join(SCHEMA_PATH);
    if check {
        let stored = std::fs::read(&path).unwrap_or_default();
        if stored != output.stdout {
            return Err(Error::Failed(format!(
                "{SCHEMA_PATH} is stale: run `cargo xtask schema` and commit it"
            )));
        }
        println!("==> schema: {SCHEMA_PATH} is current");
    } else {
        std::fs::write(&path, &output.stdout)
            .map_err(|e| Error::Failed(format!("cannot write {SCHEMA_PATH}: {e}")))?;
        println!("==> schema: wrote {SCHEMA_PATH}");
    }
    Ok(())
}
