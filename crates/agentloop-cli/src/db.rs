//! Which database a command uses, checked before it is opened.
//!
//! Every subcommand defaults to `agentloop.db` in the data folder
//! (`$XDG_DATA_HOME/agentloop`, else `~/.local/share/agentloop`). `--db`
//! takes a SQLite file path, `sqlite:PATH`, `postgres://...` or `memory`.
//! A folder, a path whose folder does not exist or an unknown URL scheme is
//! refused with one line before anything is opened; PostgreSQL gets a few
//! seconds to answer. Commands that only read ([`Access::Read`]) never
//! create a database: with none there, they see nothing.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agentloop_storage::{Store, open_store};

use crate::out::Failure;

/// How long PostgreSQL has to accept a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether a command may create the database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Only reads: a missing SQLite file is not created.
    Read,
    /// Writes: a missing SQLite file is created.
    Write,
}

/// The data folder, not created: `$XDG_DATA_HOME/agentloop`, else
/// `$HOME/.local/share/agentloop`.
pub fn data_dir_path() -> Result<PathBuf, Failure> {
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let base = match env("XDG_DATA_HOME") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(
            env("HOME").ok_or_else(|| Failure::usage("neither XDG_DATA_HOME nor HOME is set"))?,
        )
        .join(".local/share"),
    };
    Ok(base.join("agentloop"))
}

/// The [data folder](data_dir_path), created when missing.
pub fn data_dir() -> Result<PathBuf, String> {
    let dir = data_dir_path().map_err(|e| e.to_string())?;
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("cannot create the data folder {}: {e}", dir.display()))?;
    Ok(dir)
}

/// The default database: `agentloop.db` in the data folder.
pub fn default_db() -> Result<String, Failure> {
    Ok(data_dir_path()?
        .join("agentloop.db")
        .to_string_lossy()
        .into_owned())
}

/// What a `--db` value names.
#[derive(Debug, PartialEq, Eq)]
enum Target<'a> {
    Memory,
    Postgres { host: &'a str },
    Sqlite(&'a Path),
}

fn classify(target: &str) -> Result<Target<'_>, Failure> {
    if target.trim().is_empty() {
        return Err(Failure::usage(
            "--db is empty; use a file path, sqlite:PATH, postgres://HOST/DB or memory",
        ));
    }
    if matches!(target, "memory" | "memory:" | ":memory:") {
        return Ok(Target::Memory);
    }
    for scheme in ["postgres://", "postgresql://"] {
        if let Some(rest) = target.strip_prefix(scheme) {
            let authority = rest.split(['/', '?']).next().unwrap_or_default();
            let host = authority.rsplit('@').next().unwrap_or(authority);
            return Ok(Target::Postgres { host });
        }
    }
    let path = target
        .strip_prefix("sqlite://")
        .or_else(|| target.strip_prefix("sqlite:"));
    if let Some(path) = path {
        return Ok(match path {
            "" | ":memory:" => Target::Memory,
            path => Target::Sqlite(Path::new(path)),
        });
    }
    if let Some((scheme, _)) = target.split_once("://") {
        return Err(Failure::usage(format!(
            "--db {target}: unknown scheme {scheme}://; use a file path, sqlite:PATH, \
             postgres://HOST/DB or memory"
        )));
    }
    Ok(Target::Sqlite(Path::new(target)))
}

/// The SQLite file `db` names (the default database when `None`), or
/// `None` for PostgreSQL and memory.
pub fn sqlite_path(db: Option<&str>) -> Result<Option<PathBuf>, Failure> {
    let target = match db {
        Some(db) => db.to_owned(),
        None => default_db()?,
    };
    Ok(match classify(&target)? {
        Target::Sqlite(path) => Some(path.to_owned()),
        Target::Memory | Target::Postgres { .. } => None,
    })
}

/// Opens the database `db` names (or the default one). With
/// [`Access::Read`] and no SQLite file there, `Ok(None)`.
pub async fn open(db: Option<&str>, access: Access) -> Result<Option<Arc<dyn Store>>, Failure> {
    let target = match db {
        Some(db) => db.to_owned(),
        None => default_db()?,
    };
    match classify(&target)? {
        Target::Memory => {}
        Target::Postgres { host } => {
            return match tokio::time::timeout(CONNECT_TIMEOUT, open_store(&target)).await {
                Ok(Ok(store)) => Ok(Some(store)),
                Ok(Err(e)) => Err(Failure::Runtime(format!(
                    "cannot open the PostgreSQL database at {host}: {e}"
                ))),
                Err(_) => Err(Failure::Runtime(format!(
                    "PostgreSQL at {host} did not answer within {} s",
                    CONNECT_TIMEOUT.as_secs()
                ))),
            };
        }
        Target::Sqlite(path) => {
            if path.is_dir() {
                return Err(Failure::usage(format!(
                    "--db {} is a folder; name a file in it, e.g. {}",
                    path.display(),
                    path.join("agentloop.db").display()
                )));
            }
            if !path.exists() {
                if access == Access::Read {
                    return Ok(None);
                }
                let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
                match parent {
                    Some(parent) if !parent.is_dir() => {
                        if db.is_some() {
                            return Err(Failure::usage(format!(
                                "the folder of --db {} does not exist ({})",
                                path.display(),
                                parent.display()
                            )));
                        }
                        // The default database lives in the data folder,
                        // which is ours to create.
                        data_dir()?;
                    }
                    _ => {}
                }
            }
        }
    }
    open_store(&target)
        .await
        .map(Some)
        .map_err(|e| Failure::Runtime(format!("cannot open the database {target}: {e}")))
}

/// Opens a database the command writes to (created when missing).
pub async fn open_for_write(db: Option<&str>) -> Result<Arc<dyn Store>, Failure> {
    open(db, Access::Write)
        .await?
        .ok_or_else(|| Failure::Runtime("the database could not be created".to_owned()))
}

/// Names the database for messages: `--db`, else the default path.
pub fn describe(db: Option<&str>) -> String {
    db.map(str::to_owned)
        .or_else(|| default_db().ok())
        .unwrap_or_else(|| "the default database".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_told_apart() {
        assert_eq!(classify("memory").ok(), Some(Target::Memory));
        assert_eq!(classify("sqlite::memory:").ok(), Some(Target::Memory));
        assert_eq!(
            classify("postgres://me:secret@db.example:5432/app").ok(),
            Some(Target::Postgres {
                host: "db.example:5432"
            })
        );
        assert_eq!(
            classify("sqlite:/tmp/a.db").ok(),
            Some(Target::Sqlite(Path::new("/tmp/a.db")))
        );
        assert_eq!(
            classify("a.db").ok(),
            Some(Target::Sqlite(Path::new("a.db")))
        );
        assert!(matches!(classify("mysql://x/y"), Err(Failure::Usage(_))));
        assert!(matches!(classify(" "), Err(Failure::Usage(_))));
    }
}
