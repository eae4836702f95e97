//! `cargo xtask layers`: checks the design card's crate layering.
//!
//! Two rules, both over normal and build dependencies between workspace
//! crates (dev-dependencies do not count):
//!
//! 1. no crate below `agentloop-storage` ([`BELOW_STORAGE`]) depends on it,
//!    directly or through any other crate;
//! 2. every crate named in [`DESIGN_CARD`] depends only on the workspace crates
//!    the card allows it. Crates not in the card (`xtask`, `agentloop-tests`)
//!    may depend on anything.
//!
//! Then the module rules inside crates ([`crate::modules`]) and the
//! boundaries stated as absences ([`crate::boundaries`]).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;

use serde_json::Value;

use crate::Error;

/// Dependency graph of workspace crates: crate name → names of the workspace
/// crates it depends on directly.
pub type Graph = BTreeMap<String, BTreeSet<String>>;

/// The storage crate that lower layers must never reach.
pub const STORAGE: &str = "agentloop-storage";

/// Crates below storage: none of them may depend on [`STORAGE`], even
/// transitively.
pub const BELOW_STORAGE: &[&str] = &[
    "agentloop-types",
    "agentloop-engine",
    "agentloop-providers",
    "agentloop-tools",
    "agentloop-mcp",
    "agentloop-agui",
    "agentloop-aisdk",
    "agentloop-a2a",
    "agentloop-testing",
];

const TYPES: &str = "agentloop-types";
const ENGINE: &str = "agentloop-engine";
const PROVIDERS: &str = "agentloop-providers";
const TOOLS: &str = "agentloop-tools";
const MCP: &str = "agentloop-mcp";
const AGUI: &str = "agentloop-agui";
const AISDK: &str = "agentloop-aisdk";
const A2A: &str = "agentloop-a2a";
const RUNTIME: &str = "agentloop-runtime";
const SERVER: &str = "agentloop-server";
const RESTATE: &str = "agentloop-restate";
const CLI: &str = "agentloop-cli";
const EVAL: &str = "agentloop-eval";
const FACADE: &str = "agentloop";

/// The design card: each layered crate and the workspace crates it may depend
/// on directly.
pub const DESIGN_CARD: &[(&str, &[&str])] = &[
    (TYPES, &[]),
    (ENGINE, &[TYPES]),
    (PROVIDERS, &[TYPES]),
    (TOOLS, &[TYPES, ENGINE]),
    // MCP client tools sit beside the tools: they implement the tool port only.
    (MCP, &[TYPES]),
    // AG-UI: the protocol types' events in another protocol's words.
    (AGUI, &[TYPES]),
    // The AI SDK's UI message stream: the same, for its chat hooks.
    (AISDK, &[TYPES]),
    // A2A: runs as another protocol's tasks.
    (A2A, &[TYPES]),
    (STORAGE, &[TYPES]),
    (RUNTIME, &[TYPES, ENGINE, PROVIDERS, TOOLS, STORAGE]),
    (
        SERVER,
        &[
            RUNTIME, TYPES, ENGINE, PROVIDERS, TOOLS, STORAGE, MCP, AGUI, AISDK, A2A,
        ],
    ),
    // Evals run agents through the loop; what builds the agent (tools,
    // providers) is the caller's, so the eval layer needs only the loop.
    (EVAL, &[TYPES, ENGINE]),
    // Runs as Restate workflows: a second host beside the server, which
    // knows nothing of it (the binary wires the two).
    (
        RESTATE,
        &[RUNTIME, TYPES, ENGINE, PROVIDERS, TOOLS, STORAGE],
    ),
    (
        CLI,
        &[
            SERVER, RESTATE, RUNTIME, TYPES, ENGINE, PROVIDERS, TOOLS, STORAGE, MCP, EVAL, A2A,
        ],
    ),
    // The front door re-exports the layers (most behind opt-in features),
    // so it may depend on each of them and nothing depends on it.
    (
        FACADE,
        &[
            TYPES, ENGINE, PROVIDERS, TOOLS, MCP, STORAGE, RUNTIME, SERVER, EVAL,
        ],
    ),
];

/// One breach of the layering rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// A crate below storage reaches [`STORAGE`]; `chain` runs from that crate
    /// to storage, one direct dependency per step.
    ReachesStorage {
        /// The crate below storage.
        krate: String,
        /// The shortest dependency chain from `krate` to storage.
        chain: Vec<String>,
    },
    /// A crate of the design card depends directly on a workspace crate the
    /// card does not allow it.
    ForbiddenEdge {
        /// The depending crate.
        from: String,
        /// The dependency the card does not allow.
        to: String,
        /// What the card allows `from` to depend on.
        allowed: &'static [&'static str],
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::ReachesStorage { krate, chain } => write!(
                f,
                "{krate} depends on {STORAGE} ({}); crates below storage must not depend on it, directly or transitively",
                chain.join(" -> ")
            ),
            Violation::ForbiddenEdge { from, to, allowed } => {
                let allowed = if allowed.is_empty() {
                    "no workspace crate".to_owned()
                } else {
                    allowed.join(", ")
                };
                write!(
                    f,
                    "{from} -> {to} is not allowed by the design card ({from} may depend on: {allowed})"
                )?;
                if !DESIGN_CARD.iter().any(|(name, _)| name == to) {
                    write!(
                        f,
                        "; {to} is not in the card: if the edge is intended, add it to DESIGN_CARD in xtask/src/layers.rs"
                    )?;
                }
                Ok(())
            }
        }
    }
}

/// Checks `graph` against both rules, returning every violation found, in a
/// stable order.
pub fn check(graph: &Graph) -> Result<(), Vec<Violation>> {
    let mut violations = Vec::new();

    for krate in BELOW_STORAGE {
        if let Some(chain) = shortest_chain(graph, krate, STORAGE) {
            violations.push(Violation::ReachesStorage {
                krate: (*krate).to_owned(),
                chain,
            });
        }
    }

    for (krate, allowed) in DESIGN_CARD {
        let Some(deps) = graph.get(*krate) else {
            continue;
        };
        for dep in deps {
            if !allowed.contains(&dep.as_str()) {
                violations.push(Violation::ForbiddenEdge {
                    from: (*krate).to_owned(),
                    to: dep.clone(),
                    allowed,
                });
            }
        }
    }

    if violations.is_empty() {
        Ok(())
    } else {
        Err(violations)
    }
}

/// The shortest dependency chain from `from` to `to` (both ends included), if
/// `from` depends on `to` at all.
fn shortest_chain(graph: &Graph, from: &str, to: &str) -> Option<Vec<String>> {
    let mut parent: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = VecDeque::from([from]);
    let mut seen = BTreeSet::from([from]);
    while let Some(current) = queue.pop_front() {
        for dep in graph.get(current).into_iter().flatten() {
            let dep = dep.as_str();
            if !seen.insert(dep) {
                continue;
            }
            parent.insert(dep, current);
            if dep == to {
                let mut chain = vec![to.to_owned()];
                let mut node = to;
                while let Some(&previous) = parent.get(node) {
                    chain.push(previous.to_owned());
                    node = previous;
                }
                chain.reverse();
                return Some(chain);
            }
            queue.push_back(dep);
        }
    }
    None
}

/// Builds the workspace graph from `cargo metadata --format-version 1`
/// output: workspace members and their normal and build dependencies on
/// other workspace members.
pub fn graph_from_metadata(metadata: &Value) -> Result<Graph, Error> {
    let members: BTreeSet<&str> = metadata
        .get("workspace_members")
        .and_then(Value::as_array)
        .ok_or_else(|| Error::Metadata("no `workspace_members` array".to_owned()))?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let packages = metadata
        .get("packages")
        .and_then(Value::as_array)
        .ok_or_else(|| Error::Metadata("no `packages` array".to_owned()))?;

    let workspace: Vec<&Value> = packages
        .iter()
        .filter(|package| {
            package
                .get("id")
                .and_then(Value::as_str)
                .is_some_and(|id| members.contains(id))
        })
        .collect();
    let names: BTreeSet<&str> = workspace
        .iter()
        .filter_map(|package| package.get("name").and_then(Value::as_str))
        .collect();
    if names.len() != members.len() {
        return Err(Error::Metadata(format!(
            "found {} named workspace packages for {} workspace members",
            names.len(),
            members.len()
        )));
    }

    let mut graph = Graph::new();
    for package in workspace {
        let name = package
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::Metadata("a workspace package has no name".to_owned()))?;
        let dependencies = package
            .get("dependencies")
            .and_then(Value::as_array)
            .ok_or_else(|| Error::Metadata(format!("{name} has no `dependencies` array")))?;
        let mut deps = BTreeSet::new();
        for dependency in dependencies {
            let dep_name = dependency
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| Error::Metadata(format!("{name} has a dependency with no name")))?;
            let is_dev = dependency.get("kind").and_then(Value::as_str) == Some("dev");
            if !is_dev && names.contains(dep_name) {
                deps.insert(dep_name.to_owned());
            }
        }
        graph.insert(name.to_owned(), deps);
    }
    Ok(graph)
}

/// Runs `cargo metadata` on the workspace and builds its [`Graph`].
pub fn load_graph() -> Result<Graph, Error> {
    graph_from_metadata(&crate::cargo_metadata()?)
}

/// Loads the workspace graph, checks it and reports the outcome.
pub fn run() -> Result<(), Error> {
    let graph = load_graph()?;
    check(&graph).map_err(Error::Layers)?;
    let layered = DESIGN_CARD
        .iter()
        .filter(|(name, _)| graph.contains_key(*name))
        .count();
    println!(
        "layers ok: {} workspace crates, {layered} of them in the design card",
        graph.len()
    );
    let mut violations = crate::modules::check_workspace(&crate::workspace_root());
    violations.extend(crate::boundaries::check_workspace(&crate::workspace_root()));
    if !violations.is_empty() {
        return Err(Error::Modules(violations));
    }
    println!(
        "modules ok: no import cycle in {}; sans-IO: {}; {} boundaries kept",
        crate::modules::ACYCLIC.join(", "),
        crate::modules::SANS_IO
            .iter()
            .map(|(krate, module)| format!("{krate}/{module}"))
            .collect::<Vec<_>>()
            .join(", "),
        crate::boundaries::ABSENT.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(edges: &[(&str, &[&str])]) -> Graph {
        edges
            .iter()
            .map(|(krate, deps)| {
                (
                    (*krate).to_owned(),
                    deps.iter().map(|dep| (*dep).to_owned()).collect(),
                )
            })
            .collect()
    }

    fn good_graph() -> Graph {
        graph(&[
            (TYPES, &[]),
            (ENGINE, &[TYPES]),
            (PROVIDERS, &[TYPES]),
            (TOOLS, &[TYPES, ENGINE]),
            (MCP, &[TYPES]),
            (STORAGE, &[TYPES]),
            (RUNTIME, &[TYPES, ENGINE, PROVIDERS, TOOLS, STORAGE]),
            (SERVER, &[RUNTIME, STORAGE, TYPES]),
            (CLI, &[SERVER, RUNTIME, TYPES, MCP]),
            (
                FACADE,
                &[
                    TYPES, ENGINE, PROVIDERS, TOOLS, MCP, STORAGE, RUNTIME, SERVER,
                ],
            ),
            ("agentloop-testing", &[TYPES, ENGINE]),
            ("agentloop-tests", &[CLI, SERVER, RUNTIME, STORAGE, TOOLS]),
            ("xtask", &[]),
        ])
    }

    fn add_edge(graph: &mut Graph, from: &str, to: &str) {
        graph
            .entry(from.to_owned())
            .or_default()
            .insert(to.to_owned());
    }

    fn messages(violations: &[Violation]) -> Vec<String> {
        violations.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn the_design_card_graph_passes() {
        assert_eq!(check(&good_graph()), Ok(()));
    }

    #[test]
    fn no_layer_may_depend_on_the_facade() {
        let mut graph = good_graph();
        add_edge(&mut graph, ENGINE, FACADE);
        let violations = check(&graph).unwrap_err();
        assert!(violations.contains(&Violation::ForbiddenEdge {
            from: ENGINE.to_owned(),
            to: FACADE.to_owned(),
            allowed: &[TYPES],
        }));
        // The facade can reach storage, so a layer below it would too.
        assert!(violations.contains(&Violation::ReachesStorage {
            krate: ENGINE.to_owned(),
            chain: vec![ENGINE.to_owned(), FACADE.to_owned(), STORAGE.to_owned()],
        }));
    }

    #[test]
    fn an_empty_or_partial_workspace_passes() {
        assert_eq!(check(&Graph::new()), Ok(()));
        assert_eq!(check(&graph(&[(TYPES, &[]), (ENGINE, &[TYPES])])), Ok(()));
    }

    #[test]
    fn a_direct_storage_dependency_below_storage_is_caught() {
        let mut graph = good_graph();
        add_edge(&mut graph, TOOLS, STORAGE);
        let violations = check(&graph).unwrap_err();
        assert!(violations.contains(&Violation::ReachesStorage {
            krate: TOOLS.to_owned(),
            chain: vec![TOOLS.to_owned(), STORAGE.to_owned()],
        }));
        assert!(violations.contains(&Violation::ForbiddenEdge {
            from: TOOLS.to_owned(),
            to: STORAGE.to_owned(),
            allowed: &[TYPES, ENGINE],
        }));
        let text = messages(&violations).join("\n");
        assert!(
            text.contains("agentloop-tools -> agentloop-storage"),
            "{text}"
        );
    }

    #[test]
    fn a_transitive_storage_dependency_through_an_unlisted_crate_is_caught() {
        let mut graph = good_graph();
        add_edge(&mut graph, ENGINE, "x");
        add_edge(&mut graph, "x", STORAGE);
        let violations = check(&graph).unwrap_err();
        let text = messages(&violations).join("\n");
        assert!(
            text.contains("agentloop-engine -> x -> agentloop-storage"),
            "{text}"
        );
        // tools depends on engine, so it now reaches storage as well.
        assert!(
            text.contains("agentloop-tools -> agentloop-engine -> x -> agentloop-storage"),
            "{text}"
        );
        assert!(
            text.contains("agentloop-engine -> x is not allowed"),
            "{text}"
        );
        assert!(text.contains("x is not in the card"), "{text}");
    }

    #[test]
    fn a_transitive_storage_dependency_through_runtime_is_caught() {
        let mut graph = good_graph();
        add_edge(&mut graph, TOOLS, RUNTIME);
        let text = messages(&check(&graph).unwrap_err()).join("\n");
        assert!(
            text.contains("agentloop-tools -> agentloop-runtime -> agentloop-storage"),
            "{text}"
        );
        assert!(
            text.contains("agentloop-tools -> agentloop-runtime is not allowed"),
            "{text}"
        );
    }

    #[test]
    fn the_testing_crate_must_not_reach_storage() {
        let mut graph = good_graph();
        add_edge(&mut graph, "agentloop-testing", STORAGE);
        let violations = check(&graph).unwrap_err();
        assert_eq!(
            violations,
            vec![Violation::ReachesStorage {
                krate: "agentloop-testing".to_owned(),
                chain: vec!["agentloop-testing".to_owned(), STORAGE.to_owned()],
            }]
        );
    }

    #[test]
    fn edges_the_card_does_not_allow_are_caught() {
        let mut graph = good_graph();
        add_edge(&mut graph, ENGINE, PROVIDERS);
        add_edge(&mut graph, TYPES, ENGINE);
        add_edge(&mut graph, SERVER, CLI);
        let violations = check(&graph).unwrap_err();
        let edges: Vec<(&str, &str)> = violations
            .iter()
            .filter_map(|violation| match violation {
                Violation::ForbiddenEdge { from, to, .. } => Some((from.as_str(), to.as_str())),
                Violation::ReachesStorage { .. } => None,
            })
            .collect();
        assert_eq!(
            edges,
            vec![(TYPES, ENGINE), (ENGINE, PROVIDERS), (SERVER, CLI)]
        );
        let text = messages(&violations).join("\n");
        assert!(
            text.contains("agentloop-types may depend on: no workspace crate"),
            "{text}"
        );
    }

    #[test]
    fn crates_outside_the_card_are_unrestricted() {
        let mut graph = good_graph();
        add_edge(&mut graph, "xtask", STORAGE);
        add_edge(&mut graph, "xtask", CLI);
        add_edge(&mut graph, "agentloop-tests", "xtask");
        assert_eq!(check(&graph), Ok(()));
    }

    #[test]
    fn cycles_do_not_hang_the_search() {
        let mut graph = good_graph();
        add_edge(&mut graph, TYPES, ENGINE);
        let violations = check(&graph).unwrap_err();
        assert!(
            violations
                .iter()
                .all(|violation| matches!(violation, Violation::ForbiddenEdge { .. }))
        );
    }

    #[test]
    fn metadata_keeps_normal_and_build_edges_between_members_only() {
        let metadata = serde_json::json!({
            "workspace_members": [
                "path+file:///ws/crates/agentloop-types#0.1.0",
                "path+file:///ws/crates/agentloop-engine#0.1.0",
                "path+file:///ws/crates/agentloop-storage#0.1.0",
            ],
            "packages": [
                {
                    "id": "path+file:///ws/crates/agentloop-types#0.1.0",
                    "name": "agentloop-types",
                    "dependencies": [
                        { "name": "serde", "kind": null },
                        { "name": "agentloop-storage", "kind": "dev" },
                    ],
                },
                {
                    "id": "path+file:///ws/crates/agentloop-engine#0.1.0",
                    "name": "agentloop-engine",
                    "dependencies": [
                        { "name": "agentloop-types", "kind": null, "rename": "types" },
                        { "name": "agentloop-storage", "kind": "build" },
                    ],
                },
                {
                    "id": "path+file:///ws/crates/agentloop-storage#0.1.0",
                    "name": "agentloop-storage",
                    "dependencies": [{ "name": "agentloop-types", "kind": null }],
                },
                {
                    "id": "registry+https://github.com/rust-lang/crates.io-index#serde@1.0.0",
                    "name": "serde",
                    "dependencies": [{ "name": "agentloop-storage", "kind": null }],
                },
            ],
        });
        let graph = graph_from_metadata(&metadata).unwrap();
        assert_eq!(
            graph,
            super::tests::graph(&[
                (TYPES, &[]),
                (ENGINE, &[TYPES, STORAGE]),
                (STORAGE, &[TYPES]),
            ])
        );
        let text = messages(&check(&graph).unwrap_err()).join("\n");
        assert!(
            text.contains("agentloop-engine -> agentloop-storage"),
            "{text}"
        );
    }

    #[test]
    fn malformed_metadata_is_an_error() {
        assert!(matches!(
            graph_from_metadata(&serde_json::json!({})),
            Err(Error::Metadata(_))
        ));
    }

    #[test]
    fn the_real_workspace_follows_the_design_card() {
        let graph = load_graph().unwrap();
        assert!(graph.contains_key(TYPES), "{graph:?}");
        assert!(graph.contains_key("xtask"), "{graph:?}");
        if let Err(violations) = check(&graph) {
            panic!("{}", messages(&violations).join("\n"));
        }
    }
}
