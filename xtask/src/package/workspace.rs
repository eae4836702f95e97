//! The workspace's crates as the packaging checks see them, read once from
//! `cargo metadata`: each member's manifest fields, targets and declared
//! dependencies, and the lockfile's resolved graph with every package's own
//! `rust-version`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::Error;

/// How a crate depends on another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DepKind {
    /// A `[dependencies]` entry.
    Normal,
    /// A `[build-dependencies]` entry.
    Build,
    /// A `[dev-dependencies]` entry: not part of the published crate's build.
    Dev,
}

impl DepKind {
    fn from_metadata(kind: Option<&str>) -> Result<Self, Error> {
        match kind {
            None => Ok(DepKind::Normal),
            Some("build") => Ok(DepKind::Build),
            Some("dev") => Ok(DepKind::Dev),
            Some(other) => Err(Error::Metadata(format!(
                "unknown dependency kind `{other}` (expected normal, build or dev)"
            ))),
        }
    }

    /// Whether a build of the crate itself (not its tests) needs it.
    pub fn builds_the_crate(self) -> bool {
        matches!(self, DepKind::Normal | DepKind::Build)
    }
}

/// One dependency a workspace crate's manifest declares.
#[derive(Debug, Clone)]
pub struct Dependency {
    /// The package name depended on.
    pub name: String,
    /// The version requirement, `*` when the manifest gives none.
    pub req: String,
    /// Whether it is a path dependency.
    pub is_path: bool,
    /// Normal, build or dev.
    pub kind: DepKind,
}

/// A build target of a crate.
#[derive(Debug, Clone)]
pub struct Target {
    /// Cargo's kinds: `lib`, `bin`, `test`, `example`, ...
    pub kinds: Vec<String>,
    /// The target's root source file.
    pub src_path: PathBuf,
}

/// A workspace member.
#[derive(Debug, Clone)]
pub struct Crate {
    /// The package id in the metadata's resolve graph.
    pub id: String,
    /// The package name.
    pub name: String,
    /// The package version.
    pub version: String,
    /// The folder holding its `Cargo.toml`.
    pub dir: PathBuf,
    /// False when the manifest says `publish = false`.
    pub publishable: bool,
    /// `package.description`.
    pub description: Option<String>,
    /// `package.license` (an SPDX expression).
    pub license: Option<String>,
    /// `package.readme`, relative to [`Crate::dir`].
    pub readme: Option<String>,
    /// `package.rust-version`.
    pub rust_version: Option<String>,
    /// `package.documentation`.
    pub documentation: Option<String>,
    /// `package.keywords`.
    pub keywords: Vec<String>,
    /// `package.categories`.
    pub categories: Vec<String>,
    /// The `[features]` it declares, `default` left out.
    pub features: Vec<String>,
    /// `package.metadata.docs.rs`, when present.
    pub docs_rs: Option<Value>,
    /// Its build targets.
    pub targets: Vec<Target>,
    /// Its declared dependencies.
    pub dependencies: Vec<Dependency>,
}

impl Crate {
    /// The library target, if the crate has one.
    pub fn library(&self) -> Option<&Target> {
        self.targets
            .iter()
            .find(|target| target.kinds.iter().any(|kind| kind.ends_with("lib")))
    }

    /// The binary targets.
    pub fn binaries(&self) -> impl Iterator<Item = &Target> {
        self.targets
            .iter()
            .filter(|target| target.kinds.iter().any(|kind| kind == "bin"))
    }

    /// `path` relative to the crate's folder, with `/` separators; `None`
    /// when it lies outside the folder.
    pub fn relative(&self, path: &Path) -> Option<String> {
        let relative = path.strip_prefix(&self.dir).ok()?;
        let parts: Vec<String> = relative
            .components()
            .map(|part| part.as_os_str().to_string_lossy().into_owned())
            .collect();
        Some(parts.join("/"))
    }
}

/// A package of the lockfile's resolved graph (workspace or registry).
#[derive(Debug, Clone)]
pub struct Package {
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The `rust-version` it declares, if any.
    pub rust_version: Option<String>,
}

/// An edge of the resolved graph.
#[derive(Debug, Clone)]
pub struct Edge {
    /// The package id depended on.
    pub to: String,
    /// Every kind of the dependency (one package may be both a normal and a
    /// dev dependency).
    pub kinds: Vec<DepKind>,
}

/// The workspace: its members and the resolved graph.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// The workspace members, in metadata order.
    pub crates: Vec<Crate>,
    /// Every package of the resolved graph, by id.
    pub packages: BTreeMap<String, Package>,
    /// The resolved graph: package id → its dependencies.
    pub resolve: BTreeMap<String, Vec<Edge>>,
    /// Where cargo writes build output (and `package/*.crate`).
    pub target_dir: PathBuf,
}

impl Workspace {
    /// Reads the workspace from `cargo metadata --format-version 1` output.
    pub fn from_metadata(metadata: &Value) -> Result<Self, Error> {
        let members: Vec<&str> = array(metadata, "workspace_members")?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let mut crates = Vec::new();
        let mut packages = BTreeMap::new();
        for package in array(metadata, "packages")? {
            let id = text(package, "id")?;
            packages.insert(
                id.to_owned(),
                Package {
                    name: text(package, "name")?.to_owned(),
                    version: text(package, "version")?.to_owned(),
                    rust_version: optional_text(package, "rust_version"),
                },
            );
            if members.contains(&id) {
                crates.push(read_crate(package)?);
            }
        }
        let mut resolve = BTreeMap::new();
        let nodes = metadata
            .get("resolve")
            .and_then(|resolve| resolve.get("nodes"))
            .and_then(Value::as_array)
            .ok_or_else(|| Error::Metadata("no `resolve.nodes` array".to_owned()))?;
        for node in nodes {
            let mut edges = Vec::new();
            for dep in array(node, "deps")? {
                let kinds = array(dep, "dep_kinds")?
                    .iter()
                    .map(|kind| DepKind::from_metadata(kind.get("kind").and_then(Value::as_str)))
                    .collect::<Result<Vec<_>, _>>()?;
                edges.push(Edge {
                    to: text(dep, "pkg")?.to_owned(),
                    kinds,
                });
            }
            resolve.insert(text(node, "id")?.to_owned(), edges);
        }
        Ok(Workspace {
            crates,
            packages,
            resolve,
            target_dir: PathBuf::from(text(metadata, "target_directory")?),
        })
    }

    /// The members that may be published.
    pub fn publishable(&self) -> impl Iterator<Item = &Crate> {
        self.crates.iter().filter(|krate| krate.publishable)
    }

    /// The member called `name`.
    pub fn member(&self, name: &str) -> Option<&Crate> {
        self.crates.iter().find(|krate| krate.name == name)
    }
}

fn read_crate(package: &Value) -> Result<Crate, Error> {
    let name = text(package, "name")?.to_owned();
    let manifest = PathBuf::from(text(package, "manifest_path")?);
    let dir = manifest
        .parent()
        .ok_or_else(|| Error::Metadata(format!("{name}: manifest path has no folder")))?
        .to_path_buf();
    // `publish`: null means any registry, `[]` means `publish = false`.
    let publishable = package
        .get("publish")
        .and_then(Value::as_array)
        .is_none_or(|registries| !registries.is_empty());
    let features = package
        .get("features")
        .and_then(Value::as_object)
        .map(|features| {
            features
                .keys()
                .filter(|feature| feature.as_str() != "default")
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let mut targets = Vec::new();
    for target in array(package, "targets")? {
        targets.push(Target {
            kinds: strings(target, "kind"),
            src_path: PathBuf::from(text(target, "src_path")?),
        });
    }
    let mut dependencies = Vec::new();
    for dependency in array(package, "dependencies")? {
        dependencies.push(Dependency {
            name: text(dependency, "name")?.to_owned(),
            req: text(dependency, "req")?.to_owned(),
            is_path: dependency.get("path").is_some_and(Value::is_string),
            kind: DepKind::from_metadata(dependency.get("kind").and_then(Value::as_str))?,
        });
    }
    Ok(Crate {
        id: text(package, "id")?.to_owned(),
        version: text(package, "version")?.to_owned(),
        dir,
        publishable,
        description: optional_text(package, "description"),
        license: optional_text(package, "license"),
        readme: optional_text(package, "readme"),
        rust_version: optional_text(package, "rust_version"),
        documentation: optional_text(package, "documentation"),
        keywords: strings(package, "keywords"),
        categories: strings(package, "categories"),
        features,
        docs_rs: package
            .get("metadata")
            .and_then(|metadata| metadata.get("docs"))
            .and_then(|docs| docs.get("rs"))
            .cloned(),
        targets,
        dependencies,
        name,
    })
}

fn array<'a>(value: &'a Value, key: &str) -> Result<&'a Vec<Value>, Error> {
    value
        .get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| Error::Metadata(format!("no `{key}` array")))
}

fn text<'a>(value: &'a Value, key: &str) -> Result<&'a str, Error> {
    value
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| Error::Metadata(format!("no `{key}` string")))
}

fn optional_text(value: &Value, key: &str) -> Option<String> {
    value
        .get(key)
        .and_then(Value::as_str)
        .filter(|text| !text.trim().is_empty())
        .map(str::to_owned)
}

fn strings(value: &Value, key: &str) -> Vec<String> {
    value
        .get(key)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}
