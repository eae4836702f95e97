//! What each publishable crate's package holds, from `cargo package
//! --list`: its manifest, README, LICENSE and target roots; nothing from a
//! `target/` folder; no file or total too large for crates.io; and every
//! file its sources pull in with `include_str!`, `include_bytes!` or
//! `include!`, so the published crate builds without the workspace around
//! it.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use super::Problem;
use super::workspace::Crate;

/// The largest file a package may hold.
pub const MAX_FILE_BYTES: u64 = 512 * 1024;
/// The largest a package may be, uncompressed (crates.io refuses a
/// compressed `.crate` over 10 MiB).
pub const MAX_PACKAGE_BYTES: u64 = 4 * 1024 * 1024;

/// Included files that may lie outside their package: `(crate, path as
/// written)`. Each is read only by the workspace's own tests, never by a
/// build of the published crate.
pub const INCLUDES_OUTSIDE_ALLOWED: &[(&str, &str)] = &[
    // `ReadmeDoctests` compiles the workspace README's Rust blocks; it
    // exists only under `cfg(doctest)`.
    ("agentloop", "../../../README.md"),
];

/// Checks the file list `files` (paths relative to the crate's folder, as
/// `cargo package --list` prints them) of `krate`.
pub fn check(krate: &Crate, files: &[String]) -> Vec<Problem> {
    let listed: BTreeSet<&str> = files.iter().map(String::as_str).collect();
    let mut problems = Vec::new();

    let mut required = vec!["Cargo.toml".to_owned(), "LICENSE".to_owned()];
    required.extend(krate.readme.clone());
    for target in krate.library().into_iter().chain(krate.binaries()) {
        match krate.relative(&target.src_path) {
            Some(path) => required.push(path),
            None => problems.push(Problem::new(
                krate,
                format!(
                    "target root {} lies outside the crate's folder",
                    target.src_path.display()
                ),
            )),
        }
    }
    for path in &required {
        if !listed.contains(path.as_str()) {
            problems.push(Problem::new(krate, format!("its package lacks {path}")));
        }
    }

    let mut total = 0;
    for file in files {
        if file.split('/').any(|part| part == "target") {
            problems.push(Problem::new(
                krate,
                format!("its package holds build output: {file}"),
            ));
        }
        // Files cargo writes itself (Cargo.lock, .cargo_vcs_info.json,
        // Cargo.toml.orig) may not exist in the folder; they are small.
        let Ok(meta) = std::fs::metadata(krate.dir.join(file)) else {
            continue;
        };
        total += meta.len();
        if meta.len() > MAX_FILE_BYTES {
            problems.push(Problem::new(
                krate,
                format!(
                    "its package holds {file} of {} KiB (at most {} KiB a file): exclude it",
                    meta.len() / 1024,
                    MAX_FILE_BYTES / 1024
                ),
            ));
        }
    }
    if total > MAX_PACKAGE_BYTES {
        problems.push(Problem::new(
            krate,
            format!(
                "its package holds {} KiB (at most {} KiB): exclude test data from it",
                total / 1024,
                MAX_PACKAGE_BYTES / 1024
            ),
        ));
    }

    for file in files.iter().filter(|file| file.ends_with(".rs")) {
        let Ok(source) = std::fs::read_to_string(krate.dir.join(file)) else {
            continue;
        };
        for included in included_paths(&source) {
            let allowed = INCLUDES_OUTSIDE_ALLOWED
                .iter()
                .any(|(name, path)| *name == krate.name && *path == included);
            if allowed {
                continue;
            }
            let resolved = normalize(
                &Path::new(file)
                    .parent()
                    .unwrap_or(Path::new(""))
                    .join(&included),
            );
            let inside = resolved
                .as_ref()
                .map(|path| path.to_string_lossy().replace('\\', "/"))
                .filter(|path| listed.contains(path.as_str()));
            if inside.is_none() {
                problems.push(Problem::new(
                    krate,
                    format!(
                        "{file} includes \"{included}\", which its package does not hold \
                         (keep included files inside the crate's folder)"
                    ),
                ));
            }
        }
    }
    problems
}

/// The literal paths of `include_str!`, `include_bytes!` and `include!`
/// calls in `source`.
pub fn included_paths(source: &str) -> Vec<String> {
    let mut paths = Vec::new();
    for macro_name in ["include_str!", "include_bytes!", "include!"] {
        let mut rest = source;
        while let Some(at) = rest.find(macro_name) {
            let before = rest[..at].chars().next_back();
            let after = &rest[at + macro_name.len()..];
            rest = after;
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let Some(arguments) = after.trim_start().strip_prefix('(') else {
                continue;
            };
            let Some(literal) = arguments.trim_start().strip_prefix('"') else {
                continue;
            };
            if let Some(end) = literal.find('"') {
                paths.push(literal[..end].to_owned());
            }
        }
    }
    paths
}

/// `path` with `.` and `..` resolved; `None` when it climbs above its
/// start (out of the package).
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => parts.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts.iter().collect())
}

#[cfg(test)]
mod tests {
    use super::super::fixture;
    use super::*;

    fn listed(files: &[&str]) -> Vec<String> {
        files.iter().map(|file| (*file).to_owned()).collect()
    }

    #[test]
    fn a_package_with_its_files_passes() {
        let root = fixture::folder("contents");
        let krate = fixture::library(&root, "whole");
        fixture::write(
            &krate.dir,
            &[
                ("data.json", "{}"),
                (
                    "src/data.rs",
                    "const D: &str = include_str!(\"../data.json\");",
                ),
            ],
        );
        let files = listed(&[
            "Cargo.toml",
            "LICENSE",
            "README.md",
            "data.json",
            "src/data.rs",
            "src/lib.rs",
        ]);
        assert!(check(&krate, &files).is_empty());
    }

    #[test]
    fn missing_files_build_output_and_outside_includes_are_caught() {
        let root = fixture::folder("contents-bad");
        let krate = fixture::library(&root, "leaky");
        fixture::write(
            &krate.dir,
            &[(
                "src/demo.rs",
                "const D: &str = include_str!(\"../../../examples/demo.json\");",
            )],
        );
        let files = listed(&[
            "Cargo.toml",
            "README.md",
            "src/demo.rs",
            "target/debug/leaky",
        ]);
        let problems: Vec<String> = check(&krate, &files)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(
            problems.contains(&"leaky: its package lacks LICENSE".to_owned()),
            "{problems:#?}"
        );
        assert!(problems.contains(&"leaky: its package lacks src/lib.rs".to_owned()));
        assert!(
            problems
                .contains(&"leaky: its package holds build output: target/debug/leaky".to_owned())
        );
        assert!(problems.iter().any(|p| p.starts_with(
            "leaky: src/demo.rs includes \"../../../examples/demo.json\", which its package does not hold"
        )));
    }

    #[test]
    fn an_oversized_file_is_caught() {
        let root = fixture::folder("contents-big");
        let krate = fixture::library(&root, "heavy");
        let big = "x".repeat(usize::try_from(MAX_FILE_BYTES).unwrap() + 1);
        fixture::write(&krate.dir, &[("tests/fixtures/big.txt", &big)]);
        let files = listed(&[
            "Cargo.toml",
            "LICENSE",
            "README.md",
            "src/lib.rs",
            "tests/fixtures/big.txt",
        ]);
        let problems: Vec<String> = check(&krate, &files)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            problems,
            [
                "heavy: its package holds tests/fixtures/big.txt of 512 KiB (at most 512 KiB a file): exclude it"
            ]
        );
    }

    #[test]
    fn included_paths_are_the_literal_arguments() {
        let source = r#"
            const A: &str = include_str!("a.json");
            const B: &[u8] = include_bytes!( "../b.bin" );
            include!("sql/records.rs");
            //! Written once and compiled twice with `include!`.
            my_include!("not/this");
            include_str!(concat!(env!("OUT_DIR"), "/gen.rs"));
        "#;
        assert_eq!(
            included_paths(source),
            ["a.json", "../b.bin", "sql/records.rs"]
        );
    }

    #[test]
    fn normalize_resolves_dots_and_refuses_climbing_out() {
        assert_eq!(
            normalize(Path::new("src/../demo.json")),
            Some(PathBuf::from("demo.json"))
        );
        assert_eq!(
            normalize(Path::new("src/./web/../app.js")),
            Some(PathBuf::from("src/app.js"))
        );
        assert_eq!(
            normalize(Path::new("src/../../../examples/demo.json")),
            None
        );
    }
}
