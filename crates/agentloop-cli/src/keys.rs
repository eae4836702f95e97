//! API keys kept in a file beside the configuration:
//! `$XDG_CONFIG_HOME/agentloop/keys.env` (else `~/.config/agentloop/`),
//! `NAME=value` lines (`#` comments). The environment wins over the file.
//! The file is read only when no one but its owner can read it (mode 0600
//! or stricter); otherwise the command stops and says how to fix it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;

use crate::out::Failure;

static KEYS: OnceLock<BTreeMap<String, String>> = OnceLock::new();

/// The key file's path.
pub fn path() -> Result<PathBuf, Failure> {
    let config = crate::config::path()?;
    Ok(config.with_file_name("keys.env"))
}

/// Reads the key file once, if there is one.
pub fn load() -> Result<(), Failure> {
    let path = path()?;
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let _ = KEYS.set(BTreeMap::new());
            return Ok(());
        }
        Err(e) => {
            return Err(Failure::usage(format!(
                "cannot read the key file {}: {e}",
                path.display()
            )));
        }
    };
    check_private(&path)?;
    let mut keys = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((name, value)) = line.split_once('=') else {
            return Err(Failure::usage(format!(
                "the key file {} line {} is not NAME=value",
                path.display(),
                n + 1
            )));
        };
        let value = value.trim().trim_matches('"');
        keys.insert(name.trim().to_owned(), value.to_owned());
    }
    let _ = KEYS.set(keys);
    Ok(())
}

#[cfg(unix)]
fn check_private(path: &std::path::Path) -> Result<(), Failure> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)
        .map_err(|e| Failure::usage(format!("cannot read {}: {e}", path.display())))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        return Err(Failure::usage(format!(
            "the key file {} can be read by others (mode {:o}); run: chmod 600 {}",
            path.display(),
            mode & 0o777,
            path.display()
        )));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_path: &std::path::Path) -> Result<(), Failure> {
    Ok(())
}

/// The value the key file gives `name`, if any.
pub fn get(name: &str) -> Option<String> {
    KEYS.get()?.get(name).filter(|v| !v.is_empty()).cloned()
}
