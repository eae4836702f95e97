//! Code shared by the SQL backends. The trait implementations themselves
//! are written once in `sql/*.rs` fragments and compiled for each driver by
//! `include!`, because the two drivers accept the same SQL text (`$n`
//! placeholders, `RETURNING`, `ON CONFLICT`, partial unique indexes).

use std::borrow::Cow;

use sqlx::migrate::{Migration, MigrationType, Migrator};

use crate::error::StorageError;

/// A driver error as a [`StorageError::Database`].
pub(crate) fn db_err(err: sqlx::Error) -> StorageError {
    match err {
        sqlx::Error::Database(e) if e.is_foreign_key_violation() => {
            StorageError::Invalid(format!("refers to a record that does not exist: {e}"))
        }
        other => StorageError::Database(other.to_string()),
    }
}

/// `NotFound` for `kind` `id` when a statement touched no row.
pub(crate) fn found(
    affected: u64,
    kind: &'static str,
    id: &str,
) -> crate::error::StorageResult<()> {
    if affected == 0 {
        Err(StorageError::not_found(kind, id))
    } else {
        Ok(())
    }
}

/// Whether the error is a unique-constraint violation.
pub(crate) fn is_unique(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Database(e) if e.is_unique_violation())
}

/// Maps an insert's error: a unique violation means the id is taken.
pub(crate) fn insert_err(err: sqlx::Error, kind: &'static str, id: &str) -> StorageError {
    if is_unique(&err) {
        StorageError::exists(kind, id)
    } else {
        db_err(err)
    }
}

/// A statement being bound, for the driver `DB`.
pub(crate) type Query<'q, DB> = sqlx::query::Query<'q, DB, <DB as sqlx::Database>::Arguments<'q>>;

/// Statements written to run alone, numbered to run as one query: their
/// arguments are bound one statement after another, so each statement's
/// `$n` becomes `$n` plus the count of placeholders before it.
pub(crate) fn numbered_in_turn(statements: &[&str]) -> Vec<String> {
    let mut before = 0;
    let mut numbered = Vec::with_capacity(statements.len());
    for statement in statements {
        let mut highest = 0;
        let mut text = String::with_capacity(statement.len());
        let mut rest = *statement;
        while let Some(at) = rest.find('$') {
            text.push_str(&rest[..=at]);
            rest = &rest[at + 1..];
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if let Ok(n) = rest[..digits].parse::<usize>() {
                highest = highest.max(n);
                text.push_str(&(n + before).to_string());
                rest = &rest[digits..];
            }
        }
        text.push_str(rest);
        numbered.push(text);
        before += highest;
    }
    numbered
}

/// Version of the first schema script, dated so it does not collide with
/// an application's own sqlx migrations in the same database. Each later
/// script takes the next version; applied scripts are never edited.
const SCHEMA_VERSION: i64 = 20_261_122_000_001;

/// The descriptions of the schema scripts, in version order: the scripts
/// of both backends (`migrations/<backend>/000N_*.sql`) follow this list.
const SCRIPT_DESCRIPTIONS: [&str; 18] = [
    "agentloop storage schema",
    "agentloop storage users",
    "agentloop storage folders and end reasons",
    "agentloop storage waiting agent runs",
    "agentloop storage message revisions",
    "agentloop storage project approval modes",
    "agentloop storage webhook deliveries",
    "agentloop storage memories",
    "agentloop storage one run status",
    "agentloop storage chains, token expiry and audit log",
    "agentloop storage inbox",
    "agentloop storage schedules",
    "agentloop storage budgets",
    "agentloop storage run steps",
    "agentloop storage schedule budgets and hold expiry",
    "agentloop storage project members",
    "agentloop storage messages from events",
    "agentloop storage inbox strategies",
];

/// The embedded schema scripts of one backend, in version order.
pub(crate) type SchemaScripts = [&'static str; SCRIPT_DESCRIPTIONS.len()];

/// The embedded migrator for one backend's schema scripts.
pub(crate) fn migrator(scripts: SchemaScripts) -> Migrator {
    let migrations = (SCHEMA_VERSION..)
        .zip(SCRIPT_DESCRIPTIONS)
        .zip(scripts)
        .map(|((version, description), sql)| {
            Migration::new(
                version,
                Cow::Borrowed(description),
                MigrationType::Simple,
                Cow::Borrowed(sql),
                false,
            )
        })
        .collect();
    Migrator {
        migrations: Cow::Owned(migrations),
        ..Migrator::DEFAULT
    }
}

/// The bounds of the paths strictly below the folder `dir` (`/` + 1 is
/// `0`), for a range scan of a column that sorts byte by byte.
pub(crate) fn below(dir: &str) -> (String, String) {
    if dir == "/" {
        ("/".to_owned(), "0".to_owned())
    } else {
        (format!("{dir}/"), format!("{dir}0"))
    }
}

/// A decode error for an unexpected stored value.
pub(crate) fn bad_value(column: &str, value: &str) -> StorageError {
    StorageError::Serialization(format!("unexpected {column} value {value:?}"))
}

#[cfg(test)]
mod tests {
    use super::numbered_in_turn;

    #[test]
    fn statements_number_their_placeholders_one_after_the_other() {
        assert_eq!(
            numbered_in_turn(&[
                "INSERT INTO a (x, y) VALUES ($1, $2)",
                "INSERT INTO b (z) VALUES ($1)",
                "UPDATE c SET u = $2, v = $1 WHERE w = '$'",
            ]),
            [
                "INSERT INTO a (x, y) VALUES ($1, $2)",
                "INSERT INTO b (z) VALUES ($3)",
                "UPDATE c SET u = $5, v = $4 WHERE w = '$'",
            ]
        );
    }
}
