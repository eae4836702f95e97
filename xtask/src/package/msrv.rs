//! The declared `rust-version` against the dependencies: a crate cannot
//! build on a toolchain older than what any dependency it builds with
//! declares, so each publishable crate's `rust-version` must be at least the
//! highest `rust-version` in its normal and build dependency closure of the
//! lockfile. (Std APIs newer than the declared version are clippy's
//! `incompatible_msrv` lint, denied in the workspace lints; language
//! features are checked by neither.)

use std::collections::BTreeSet;
use std::fmt;

use super::Problem;
use super::workspace::{Crate, Workspace};

/// A Rust version as manifests write it: `1.88` or `1.88.0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct RustVersion {
    major: u64,
    minor: u64,
    patch: u64,
}

impl RustVersion {
    /// Parses `major.minor` or `major.minor.patch`.
    pub fn parse(text: &str) -> Option<Self> {
        let mut parts = text.trim().split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        let patch = match parts.next() {
            Some(patch) => patch.parse().ok()?,
            None => 0,
        };
        if parts.next().is_some() {
            return None;
        }
        Some(RustVersion {
            major,
            minor,
            patch,
        })
    }
}

impl fmt::Display for RustVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// The dependency that sets a crate's floor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Floor {
    /// The Rust version it declares.
    pub version: RustVersion,
    /// `name version` of the dependency.
    pub package: String,
    /// Whether the dependency is a workspace sibling.
    pub member: bool,
}

/// The highest `rust-version` among the packages `krate` builds with
/// (normal and build dependencies, transitively: workspace siblings and
/// registry crates; dev-dependencies only build its tests and are left
/// out). Of equal versions a registry crate is named, as the one that sets
/// the floor.
pub fn floor(workspace: &Workspace, krate: &Crate) -> Option<Floor> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![krate.id.as_str()];
    let mut highest: Option<Floor> = None;
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        let member = workspace.crates.iter().any(|member| member.id == id);
        if id != krate.id
            && let Some(package) = workspace.packages.get(id)
            && let Some(version) = package.rust_version.as_deref().and_then(RustVersion::parse)
            && highest.as_ref().is_none_or(|floor| {
                version > floor.version || (version == floor.version && floor.member && !member)
            })
        {
            highest = Some(Floor {
                version,
                package: format!("{} {}", package.name, package.version),
                member,
            });
        }
        for edge in workspace.resolve.get(id).into_iter().flatten() {
            if edge.kinds.iter().any(|kind| kind.builds_the_crate()) {
                stack.push(edge.to.as_str());
            }
        }
    }
    highest
}

/// Checks every publishable crate's declared `rust-version` against its
/// floor. A crate declaring none is reported by the manifest check.
pub fn check(workspace: &Workspace) -> Vec<Problem> {
    let mut problems = Vec::new();
    for krate in workspace.publishable() {
        let Some(declared) = krate.rust_version.as_deref() else {
            continue;
        };
        let Some(declared) = RustVersion::parse(declared) else {
            problems.push(Problem::new(
                krate,
                format!("rust-version `{declared}` is not a version like 1.88 or 1.88.0"),
            ));
            continue;
        };
        if let Some(floor) = floor(workspace, krate)
            && floor.version > declared
        {
            problems.push(Problem::new(
                krate,
                format!(
                    "declares rust-version {declared}, but its dependency {} declares {}: \
                     raise rust-version in the workspace Cargo.toml to at least {}",
                    floor.package, floor.version, floor.version
                ),
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::super::fixture;
    use super::super::workspace::DepKind;
    use super::*;

    #[test]
    fn a_dependency_needing_a_newer_rust_is_caught_through_the_graph() {
        let root = fixture::folder("msrv");
        let mut workspace = fixture::workspace(vec![fixture::library(&root, "lib")]);
        fixture::add_registry_dependency(
            &mut workspace,
            "lib 0.1.0",
            "direct",
            "1.80",
            DepKind::Normal,
        );
        fixture::add_registry_dependency(
            &mut workspace,
            "registry+direct 1.0.0",
            "deep",
            "1.90",
            DepKind::Normal,
        );
        let problems: Vec<String> = check(&workspace).iter().map(ToString::to_string).collect();
        assert_eq!(
            problems,
            [
                "lib: declares rust-version 1.88.0, but its dependency deep 1.0.0 declares 1.90.0: \
              raise rust-version in the workspace Cargo.toml to at least 1.90.0"
            ]
        );
    }

    #[test]
    fn a_sibling_declaring_a_newer_rust_raises_the_floor() {
        let root = fixture::folder("msrv-siblings");
        let base = fixture::library(&root, "base");
        let mut top = fixture::library(&root, "top");
        top.rust_version = Some("1.85".to_owned());
        let mut workspace = fixture::workspace(vec![base, top]);
        workspace.resolve.insert(
            "top 0.1.0".to_owned(),
            vec![super::super::workspace::Edge {
                to: "base 0.1.0".to_owned(),
                kinds: vec![DepKind::Normal],
            }],
        );
        fixture::add_registry_dependency(
            &mut workspace,
            "top 0.1.0",
            "same",
            "1.88",
            DepKind::Normal,
        );
        let floor = floor(&workspace, &workspace.crates[1]).unwrap();
        assert_eq!(floor.version, RustVersion::parse("1.88").unwrap());
        assert_eq!(
            floor.package, "same 1.0.0",
            "a registry crate is named over a sibling"
        );
        assert_eq!(check(&workspace).len(), 1);
    }

    #[test]
    fn dev_dependencies_do_not_set_the_floor() {
        let root = fixture::folder("msrv-dev");
        let mut workspace = fixture::workspace(vec![fixture::library(&root, "lib")]);
        fixture::add_registry_dependency(
            &mut workspace,
            "lib 0.1.0",
            "tester",
            "1.95",
            DepKind::Dev,
        );
        fixture::add_registry_dependency(
            &mut workspace,
            "lib 0.1.0",
            "builder",
            "1.87",
            DepKind::Build,
        );
        assert!(check(&workspace).is_empty());
        let floor = floor(&workspace, &workspace.crates[0]).unwrap();
        assert_eq!(floor.package, "builder 1.0.0");
    }

    #[test]
    fn the_real_workspace_declares_at_least_its_dependencies_floor() {
        let workspace =
            super::super::Workspace::from_metadata(&crate::cargo_metadata().unwrap()).unwrap();
        let problems: Vec<String> = check(&workspace).iter().map(ToString::to_string).collect();
        assert_eq!(problems, Vec::<String>::new());
    }

    #[test]
    fn versions_parse_with_or_without_a_patch_and_order_numerically() {
        let short = RustVersion::parse("1.88").unwrap();
        assert_eq!(short, RustVersion::parse("1.88.0").unwrap());
        assert!(RustVersion::parse("1.9").unwrap() < RustVersion::parse("1.10").unwrap());
        assert!(RustVersion::parse("1.85.1").unwrap() > RustVersion::parse("1.85").unwrap());
        assert_eq!(short.to_string(), "1.88.0");
    }

    #[test]
    fn malformed_versions_are_refused() {
        for text in ["", "1", "1.x", "1.88.0.1", "stable"] {
            assert!(RustVersion::parse(text).is_none(), "{text}");
        }
    }
}
