//! `cargo xtask package [--verify]`: checks that every publishable crate
//! can be published and read on crates.io and docs.rs, then packages them
//! all together with `cargo package` (unpublished siblings resolve from
//! cargo's local overlay of the packages being made).
//!
//! In order: the manifests ([`manifest`]), the declared `rust-version`
//! against the dependencies ([`msrv`]), that the fuzz crate stays
//! unpublished, each package's file list ([`contents`]), then `cargo
//! package --no-verify` and the size of each `.crate`. `--verify` lets
//! cargo also build each package from its unpacked `.crate`, alone, which
//! also shows a dependency feature a crate uses but declares nowhere (the
//! workspace's feature unification hides it); that takes tens of minutes
//! on two cores, so CI runs without it and a release runs with it.

mod contents;
mod manifest;
mod msrv;
mod workspace;

use std::fmt;
use std::path::Path;

use serde_json::Value;

use crate::{Error, cargo, cargo_metadata, describe, run_step, stdout_of, workspace_root};
use workspace::{Crate, Workspace};

/// The cargo-fuzz crate, a workspace of its own that is never published.
const FUZZ_MANIFEST: &str = "fuzz/Cargo.toml";

/// crates.io's default limit on an uploaded `.crate`.
const MAX_CRATE_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// One thing that keeps a crate from being published as it should be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The crate concerned, or `workspace`.
    pub krate: String,
    /// What is wrong and, where it helps, what to do.
    pub message: String,
}

impl Problem {
    fn new(krate: &Crate, message: impl Into<String>) -> Self {
        Problem {
            krate: krate.name.clone(),
            message: message.into(),
        }
    }

    fn workspace(message: impl Into<String>) -> Self {
        Problem {
            krate: "workspace".to_owned(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.krate, self.message)
    }
}

/// Runs the checks and packages every publishable crate; `args` are the
/// arguments after `package`.
pub fn run(args: &[String]) -> Result<(), Error> {
    let verify = match args {
        [] => false,
        [flag] if flag == "--verify" => true,
        [other, ..] => {
            return Err(Error::Usage(format!(
                "`package` takes only `--verify`, got `{other}`"
            )));
        }
    };
    let root = workspace_root();
    let workspace = Workspace::from_metadata(&cargo_metadata()?)?;

    let mut problems = manifest::check(&workspace, &root);
    problems.extend(msrv::check(&workspace));
    problems.extend(fuzz_unpublished(&root)?);
    for krate in workspace.publishable() {
        let files = package_files(krate)?;
        problems.extend(contents::check(krate, &files));
    }
    if !problems.is_empty() {
        return Err(Error::Package(problems));
    }

    let mut package = cargo(&["package", "--allow-dirty"]);
    if !verify {
        package.arg("--no-verify");
    }
    for krate in workspace.publishable() {
        package.args(["-p", &krate.name]);
    }
    run_step("package", &mut package)?;

    for krate in workspace.publishable() {
        let file = workspace
            .target_dir
            .join("package")
            .join(format!("{}-{}.crate", krate.name, krate.version));
        let size = std::fs::metadata(&file)
            .map_err(|err| Error::Failed(format!("cannot read {}: {err}", file.display())))?
            .len();
        if size > MAX_CRATE_FILE_BYTES {
            problems.push(Problem::new(
                krate,
                format!(
                    "{} is {} KiB; crates.io takes at most {} KiB",
                    file.display(),
                    size / 1024,
                    MAX_CRATE_FILE_BYTES / 1024
                ),
            ));
        }
    }
    if !problems.is_empty() {
        return Err(Error::Package(problems));
    }

    let names: Vec<&str> = workspace
        .publishable()
        .map(|krate| krate.name.as_str())
        .collect();
    println!(
        "package ok{}: {} publishable crates ({})",
        if verify {
            " (built from their packages)"
        } else {
            ""
        },
        names.len(),
        names.join(", ")
    );
    let highest = workspace
        .publishable()
        .filter_map(|krate| msrv::floor(&workspace, krate))
        .max_by_key(|floor| (floor.version, !floor.member));
    if let Some(floor) = highest {
        println!(
            "rust-version: every crate declares at least what it builds with needs \
             (highest: {}, {})",
            floor.version, floor.package
        );
    }
    Ok(())
}

/// The files `cargo package --list` puts in `krate`'s package.
fn package_files(krate: &Crate) -> Result<Vec<String>, Error> {
    let mut command = cargo(&["package", "--list", "--allow-dirty", "-p", &krate.name]);
    let stdout = stdout_of(&mut command, Error::Failed)?;
    Ok(String::from_utf8_lossy(&stdout)
        .lines()
        .map(str::to_owned)
        .collect())
}

/// The fuzz crate is outside the workspace, so its `publish = false` is
/// read from its own metadata.
fn fuzz_unpublished(root: &Path) -> Result<Vec<Problem>, Error> {
    let manifest = root.join(FUZZ_MANIFEST);
    if !manifest.exists() {
        return Ok(Vec::new());
    }
    let mut command = cargo(&[
        "metadata",
        "--format-version",
        "1",
        "--no-deps",
        "--manifest-path",
    ]);
    command.arg(&manifest);
    let output = command.output().map_err(|source| Error::Spawn {
        command: describe(&command),
        source,
    })?;
    if !output.status.success() {
        return Err(Error::Metadata(format!(
            "`{}` failed ({})",
            describe(&command),
            output.status
        )));
    }
    let metadata: Value = serde_json::from_slice(&output.stdout)
        .map_err(|err| Error::Metadata(format!("{FUZZ_MANIFEST}: not valid JSON: {err}")))?;
    let publishable = metadata
        .get("packages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|package| {
            package
                .get("publish")
                .and_then(Value::as_array)
                .is_none_or(|registries| !registries.is_empty())
        })
        .filter_map(|package| package.get("name").and_then(Value::as_str))
        .map(|name| Problem {
            krate: name.to_owned(),
            message: format!("{FUZZ_MANIFEST} may be published: add `publish = false`"),
        })
        .collect();
    Ok(publishable)
}

/// Workspaces made up for the checks' tests: a folder with a LICENSE at
/// its root and crates written into it, and the [`Workspace`] describing
/// them.
#[cfg(test)]
mod fixture {
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};

    use serde_json::json;

    use super::workspace::{Crate, DepKind, Dependency, Edge, Package, Target, Workspace};

    pub const LICENSE: &str = "License text.\n";

    /// A fresh folder under the system's temporary folder, removed when
    /// dropped.
    pub struct Folder(PathBuf);

    impl std::ops::Deref for Folder {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Folder {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A fresh [`Folder`] holding a LICENSE.
    pub fn folder(name: &str) -> Folder {
        let dir = std::env::temp_dir().join(format!("xtask-package-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("LICENSE"), LICENSE).unwrap();
        Folder(dir)
    }

    /// Writes `files` (path, text) into `dir`.
    pub fn write(dir: &Path, files: &[(&str, &str)]) {
        for (path, text) in files {
            let path = dir.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
    }

    /// A library crate `crates/<name>` under `root` with everything a
    /// publishable library needs, and one feature, `extra`.
    pub fn library(root: &Path, name: &str) -> Crate {
        let dir = root.join("crates").join(name);
        write(
            &dir,
            &[
                ("LICENSE", LICENSE),
                (
                    "README.md",
                    "# it\n\nDoes one thing.\n\n## Cargo features\n\n- `extra`: more.\n",
                ),
                (
                    "src/lib.rs",
                    "//! Does one thing.\n//!\n//! # Cargo features\n//!\n//! - `extra`: more.\n\n#![cfg_attr(docsrs, feature(doc_cfg))]\n",
                ),
            ],
        );
        Crate {
            id: format!("{name} 0.1.0"),
            name: name.to_owned(),
            version: "0.1.0".to_owned(),
            publishable: true,
            description: Some("Does one thing.".to_owned()),
            license: Some("Apache-2.0".to_owned()),
            readme: Some("README.md".to_owned()),
            rust_version: Some("1.88".to_owned()),
            documentation: Some(format!("https://docs.rs/{name}")),
            keywords: vec!["llm".to_owned()],
            categories: vec!["science".to_owned()],
            features: vec!["extra".to_owned()],
            docs_rs: Some(json!({"all-features": true, "rustdoc-args": ["--cfg", "docsrs"]})),
            targets: vec![Target {
                kinds: vec!["lib".to_owned()],
                src_path: dir.join("src/lib.rs"),
            }],
            dependencies: Vec::new(),
            dir,
        }
    }

    /// A dependency of `kind` on `name`.
    pub fn dependency(name: &str, req: &str, is_path: bool, kind: DepKind) -> Dependency {
        Dependency {
            name: name.to_owned(),
            req: req.to_owned(),
            is_path,
            kind,
        }
    }

    /// A workspace of `crates` and no registry packages.
    pub fn workspace(crates: Vec<Crate>) -> Workspace {
        let packages = crates
            .iter()
            .map(|krate| {
                (
                    krate.id.clone(),
                    Package {
                        name: krate.name.clone(),
                        version: krate.version.clone(),
                        rust_version: krate.rust_version.clone(),
                    },
                )
            })
            .collect();
        Workspace {
            crates,
            packages,
            resolve: BTreeMap::new(),
            target_dir: PathBuf::from("target"),
        }
    }

    /// Adds a registry package declaring `rust_version`, depended on by
    /// `from` as `kind`.
    pub fn add_registry_dependency(
        workspace: &mut Workspace,
        from: &str,
        name: &str,
        rust_version: &str,
        kind: DepKind,
    ) {
        let id = format!("registry+{name} 1.0.0");
        workspace.packages.insert(
            id.clone(),
            Package {
                name: name.to_owned(),
                version: "1.0.0".to_owned(),
                rust_version: Some(rust_version.to_owned()),
            },
        );
        workspace
            .resolve
            .entry(from.to_owned())
            .or_default()
            .push(Edge {
                to: id,
                kinds: vec![kind],
            });
    }
}
