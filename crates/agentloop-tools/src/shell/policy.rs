//! The sandbox's lists: what the command may read, which environment it
//! gets, and which variable names are never passed.

use std::path::{Path, PathBuf};

/// Read-only system folders and files: programs, libraries, the dynamic
/// linker's and resolver's configuration, certificates, time zones,
/// locales, devices that give bytes, and `/proc` (reading another
/// process's environment, memory, `cwd` or `root` there is refused by
/// Landlock's ptrace scoping, and paths reached through `/proc/*/root`
/// are checked as the files they are).
pub const SYSTEM_READ: &[&str] = &[
    "/bin",
    "/sbin",
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/opt",
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/resolv.conf",
    "/etc/gai.conf",
    "/etc/localtime",
    "/etc/timezone",
    // Certificates only: `/etc/ssl/private` holds keys.
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
    "/etc/ca-certificates",
    "/etc/ca-certificates.conf",
    "/etc/pki/tls/certs",
    "/etc/pki/ca-trust",
    "/etc/os-release",
    "/etc/debian_version",
    "/etc/mime.types",
    "/etc/inputrc",
    "/etc/locale.alias",
    "/etc/python3",
    "/dev/urandom",
    "/dev/random",
    "/proc",
    "/sys/devices/system/cpu",
];

/// Devices the command may write to as well as read.
pub const DEVICE_WRITE: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

/// Toolchains below the home folder, read-only: Rust's (only the parts of
/// `CARGO_HOME` that hold programs and downloaded sources, never its
/// credentials), pyenv, nvm and user-installed programs.
pub fn toolchain_read(home: Option<&Path>, cargo_home: Option<&Path>) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    let cargo = cargo_home
        .map(Path::to_path_buf)
        .or_else(|| home.map(|h| h.join(".cargo")));
    if let Some(cargo) = cargo {
        for part in ["bin", "registry", "git", "env", "config.toml"] {
            paths.push(cargo.join(part));
        }
    }
    if let Some(home) = home {
        for part in [".rustup", ".pyenv", ".nvm", ".local/bin", ".local/lib"] {
            paths.push(home.join(part));
        }
    }
    paths
}

/// Variables passed from the caller when set, besides the ones the tool
/// sets itself (`HOME` and `TMPDIR`: the private temporary folder; `TERM`:
/// `dumb`; `PATH`, `LANG`, `CARGO_HOME`, `RUSTUP_HOME`, `PYENV_ROOT`).
pub const PASSED_ENV: &[&str] = &[
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "RUSTUP_TOOLCHAIN",
    "PYENV_VERSION",
    "JAVA_HOME",
];

/// Whether a variable name looks like it holds a secret (`*_KEY`,
/// `*TOKEN*`, `*SECRET*`, `*PASSWORD*`, `*CREDENTIAL*`, `*_AUTH*`): such a
/// variable is never passed, even when named.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper.ends_with("_KEY")
        || upper == "KEY"
        || upper.contains("_KEY_")
        || upper.contains("TOKEN")
        || upper.contains("SECRET")
        || upper.contains("PASSWORD")
        || upper.contains("PASSWD")
        || upper.contains("CREDENTIAL")
        || upper.contains("_AUTH")
        || upper.starts_with("AUTH")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names_are_recognised_and_ordinary_ones_pass() {
        for secret in [
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "DB_PASSWORD",
            "CARGO_REGISTRY_TOKEN",
            "my_key",
            "AUTH_HEADER",
        ] {
            assert!(is_secret_name(secret), "{secret}");
        }
        for plain in [
            "PATH",
            "LANG",
            "RUST_LOG",
            "KEYBOARD",
            "CARGO_HOME",
            "PYTHONPATH",
        ] {
            assert!(!is_secret_name(plain), "{plain}");
        }
    }

    #[test]
    fn cargo_home_gives_its_program_and_source_folders_not_its_credentials() {
        let paths = toolchain_read(Some(Path::new("/home/u")), None);
        assert!(paths.contains(&PathBuf::from("/home/u/.cargo/bin")));
        assert!(paths.contains(&PathBuf::from("/home/u/.rustup")));
        assert!(!paths.iter().any(|p| p.ends_with("credentials.toml")));
        assert!(!paths.contains(&PathBuf::from("/home/u/.cargo")));
    }
}
