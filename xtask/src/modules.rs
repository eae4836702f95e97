//! Module rules inside a crate, read from its sources (part of
//! `cargo xtask layers`).
//!
//! The scan is deliberately simple: comments, string and character
//! literals and `#[cfg(test)]` modules are dropped, then every path that
//! starts with `crate`, `super` or `self` (including `use` groups), and
//! every `child::` path naming a module's own child, is one import of the
//! module it resolves to (the longest known module prefix of the path).
//! Paths through the crate root (`crate::Item` re-exports) are not edges of
//! the graph: the root is the crate's facade.
//!
//! Rules, in [`ACYCLIC`], [`SANS_IO`] and [`CLOCK`]:
//!
//! 1. the modules of each crate in [`ACYCLIC`] import each other without a
//!    cycle (so no lower module imports a higher one);
//! 2. every file of a sans-IO module ([`SANS_IO`]) reaches no module
//!    outside it, and names no async or I/O machinery: no `tokio`,
//!    `futures`, `async`, `await`, clock (`SystemTime`, `Instant`),
//!    randomness (`rand`) or `std::{env, fs, io, net, process, thread,
//!    time}`;
//! 3. only the crate's clock module ([`CLOCK`]) names `SystemTime` or
//!    `Instant`: every other module gets the time from it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

use crate::Error;

/// A module path inside a crate (`["machine", "run_core"]`); the root is
/// empty.
pub type Module = Vec<String>;

/// Crates (their `src` folders, from the workspace root) whose modules must
/// import each other without a cycle.
pub const ACYCLIC: &[&str] = &[
    "crates/agentloop-types/src",
    "crates/agentloop-engine/src",
    "crates/agentloop-providers/src",
    "crates/agentloop-tools/src",
    "crates/agentloop-mcp/src",
    "crates/agentloop-agui/src",
    "crates/agentloop-aisdk/src",
    "crates/agentloop-a2a/src",
    "crates/agentloop-storage/src",
    "crates/agentloop-runtime/src",
    "crates/agentloop-server/src",
    "crates/agentloop-eval/src",
    "crates/agentloop-restate/src",
    "crates/agentloop-cli/src",
    "crates/agentloop/src",
];

/// Sans-IO modules: (crate `src` folder, module). The engine's machine
/// decides a run; the async driver and the strategies' entry points sit
/// above it, and it cannot reach them.
pub const SANS_IO: &[(&str, &str)] = &[("crates/agentloop-engine/src", "machine")];

/// The one module of a crate that reads the clock: (crate `src`, module).
pub const CLOCK: &[(&str, &str)] = &[("crates/agentloop-engine/src", "clock")];

/// Words a sans-IO module must not name.
const NOT_SANS_IO: &[&str] = &[
    "tokio",
    "futures",
    "async",
    "await",
    "SystemTime",
    "Instant",
    "rand",
];

/// `std` modules a sans-IO module must not use.
const STD_IO: &[&str] = &["env", "fs", "io", "net", "process", "thread", "time"];

/// Words only the clock module may name.
const CLOCK_READS: &[&str] = &["SystemTime", "Instant"];

/// One source file of a crate.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Its path inside `src`, for messages.
    pub path: String,
    /// Its module.
    pub module: Module,
    /// Its tokens, with comments, literals and `#[cfg(test)]` modules
    /// dropped.
    tokens: Vec<String>,
    /// Child modules it declares `#[cfg(test)] mod name;`.
    test_children: Vec<String>,
}

impl SourceFile {
    /// The file at `path` (inside `src`, `/`-separated) holding `text`.
    pub fn new(path: &str, text: &str) -> Self {
        let mut module: Module = path
            .trim_end_matches(".rs")
            .split('/')
            .map(str::to_owned)
            .collect();
        if module
            .last()
            .is_some_and(|last| ["mod", "lib", "main"].contains(&last.as_str()))
        {
            module.pop();
        }
        let (tokens, test_children) = without_tests(tokens(text));
        Self {
            path: path.to_owned(),
            module,
            tokens,
            test_children,
        }
    }

    /// Whether its code (not its comments, literals or tests) names `word`.
    pub fn names(&self, word: &str) -> bool {
        self.tokens.iter().any(|t| t == word)
    }
}

/// One breach of the module rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// Modules that import each other in a circle.
    Cycle {
        /// The crate's `src` folder.
        krate: String,
        /// The modules of the cycle, sorted.
        modules: Vec<String>,
    },
    /// A sans-IO module's file reaches a module outside it.
    LeavesSansIo {
        /// The file.
        file: String,
        /// The sans-IO module.
        module: String,
        /// The module it reaches.
        target: String,
    },
    /// A file names a word its module must not.
    Forbidden {
        /// The file.
        file: String,
        /// The word.
        word: String,
        /// Why the module may not name it.
        rule: &'static str,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Cycle { krate, modules } => write!(
                f,
                "{krate}: import cycle among {} modules: {}",
                modules.len(),
                modules.join(", ")
            ),
            Violation::LeavesSansIo {
                file,
                module,
                target,
            } => write!(
                f,
                "{file} reaches `{target}`, outside the sans-IO module `{module}`; it may only use modules inside it"
            ),
            Violation::Forbidden { file, word, rule } => {
                write!(f, "{file} names `{word}`: {rule}")
            }
        }
    }
}

/// Reads every `.rs` file under `src` (a folder of the workspace).
pub fn read_crate(src: &Path) -> Result<Vec<SourceFile>, Error> {
    let mut files = Vec::new();
    let mut folders = vec![src.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let entries = std::fs::read_dir(&folder)
            .map_err(|err| Error::Failed(format!("cannot read {}: {err}", folder.display())))?;
        for entry in entries {
            let path = entry
                .map_err(|err| Error::Failed(format!("cannot read {}: {err}", folder.display())))?
                .path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                let text = std::fs::read_to_string(&path).map_err(|err| {
                    Error::Failed(format!("cannot read {}: {err}", path.display()))
                })?;
                let inside = path.strip_prefix(src).unwrap_or(&path);
                let inside: Vec<String> = inside
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                files.push(SourceFile::new(&inside.join("/"), &text));
            }
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

/// Checks one crate's files: `acyclic` asks for rule 1, `sans_io` names
/// its sans-IO modules (rule 2), `clock` its clock module (rule 3).
pub fn check(
    krate: &str,
    files: &[SourceFile],
    acyclic: bool,
    sans_io: &[&str],
    clock: Option<&str>,
) -> Vec<Violation> {
    let files = without_test_files(files);
    let known: BTreeSet<Module> = files.iter().map(|f| f.module.clone()).collect();
    let mut violations = Vec::new();
    let mut graph: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for file in &files {
        let targets = imports(file, &known);
        for sans in sans_io {
            if file.module.first().map(String::as_str) != Some(*sans) {
                continue;
            }
            for target in &targets {
                if target.first().map(String::as_str) != Some(*sans) {
                    violations.push(Violation::LeavesSansIo {
                        file: file.path.clone(),
                        module: (*sans).to_owned(),
                        target: display(target),
                    });
                }
            }
            for word in forbidden_words(&file.tokens) {
                violations.push(Violation::Forbidden {
                    file: file.path.clone(),
                    word,
                    rule: "a sans-IO module does no I/O, no async, reads no clock and no randomness",
                });
            }
        }
        if let Some(clock) = clock
            && file.module.first().map(String::as_str) != Some(clock)
        {
            for word in CLOCK_READS {
                if file.tokens.iter().any(|t| t == word) {
                    violations.push(Violation::Forbidden {
                        file: file.path.clone(),
                        word: (*word).to_owned(),
                        rule: "only the clock module reads the clock; take the time from it",
                    });
                }
            }
        }
        let edges = graph.entry(file.module.clone()).or_default();
        edges.extend(
            targets
                .into_iter()
                .filter(|t| !t.is_empty() && *t != file.module),
        );
    }
    if acyclic {
        for modules in cycles(&graph) {
            violations.push(Violation::Cycle {
                krate: krate.to_owned(),
                modules: modules.iter().map(|m| display(m)).collect(),
            });
        }
    }
    violations
}

/// Runs every rule on the workspace's sources.
pub fn check_workspace(root: &Path) -> Vec<Violation> {
    let mut crates: BTreeSet<&str> = ACYCLIC.iter().copied().collect();
    crates.extend(SANS_IO.iter().map(|(krate, _)| *krate));
    crates.extend(CLOCK.iter().map(|(krate, _)| *krate));
    let mut violations = Vec::new();
    for krate in crates {
        let files = match read_crate(&root.join(krate)) {
            Ok(files) => files,
            Err(err) => {
                violations.push(Violation::Forbidden {
                    file: krate.to_owned(),
                    word: err.to_string(),
                    rule: "the sources of a checked crate must be readable",
                });
                continue;
            }
        };
        let sans_io: Vec<&str> = SANS_IO
            .iter()
            .filter(|(k, _)| *k == krate)
            .map(|(_, m)| *m)
            .collect();
        let clock = CLOCK.iter().find(|(k, _)| *k == krate).map(|(_, m)| *m);
        violations.extend(check(
            krate,
            &files,
            ACYCLIC.contains(&krate),
            &sans_io,
            clock,
        ));
    }
    violations
}

fn display(module: &[String]) -> String {
    if module.is_empty() {
        "crate".to_owned()
    } else {
        module.join("::")
    }
}

/// The files left once modules declared `#[cfg(test)] mod name;` (and
/// everything under them) are dropped.
pub fn without_test_files(files: &[SourceFile]) -> Vec<&SourceFile> {
    let tests: Vec<Module> = files
        .iter()
        .flat_map(|f| {
            f.test_children.iter().map(|child| {
                let mut module = f.module.clone();
                module.push(child.clone());
                module
            })
        })
        .collect();
    files
        .iter()
        .filter(|f| !tests.iter().any(|t| f.module.starts_with(t)))
        .collect()
}

/// The modules `file` imports, resolved to the longest known prefix of
/// each path (the crate root when none).
fn imports(file: &SourceFile, known: &BTreeSet<Module>) -> BTreeSet<Module> {
    let tokens = &file.tokens;
    let mut found = BTreeSet::new();
    let mut i = 0;
    while i < tokens.len() {
        let after_colons = i > 0 && tokens[i - 1] == "::";
        // A path goes on with `::` (`pub(crate)` and `&self` are not paths).
        let starts = tokens.get(i + 1).is_some_and(|t| t == "::")
            && match tokens[i].as_str() {
                "crate" | "super" | "self" => true,
                word => {
                    let mut child = file.module.clone();
                    child.push(word.to_owned());
                    known.contains(&child)
                }
            };
        if starts && !after_colons {
            let (paths, next) = parse_path(tokens, i);
            for path in paths {
                if let Some(absolute) = resolve(&file.module, &path) {
                    found.insert(owner(&absolute, known));
                }
            }
            i = next;
        } else {
            i += 1;
        }
    }
    found
}

/// The paths starting at `tokens[start]` (a `use` group gives several) and
/// the index after them.
fn parse_path(tokens: &[String], start: usize) -> (Vec<Vec<String>>, usize) {
    let mut prefix = vec![tokens[start].clone()];
    let mut i = start + 1;
    while i + 1 < tokens.len() && tokens[i] == "::" {
        if tokens[i + 1] == "{" {
            let mut paths = Vec::new();
            let mut j = i + 2;
            while j < tokens.len() && tokens[j] != "}" {
                if tokens[j] == "," {
                    j += 1;
                    continue;
                }
                let (inner, next) = parse_path(tokens, j);
                for path in inner {
                    let mut full = prefix.clone();
                    full.extend(path);
                    paths.push(full);
                }
                // Skip what follows an item (`as name`, `*`).
                j = next;
                while j < tokens.len() && tokens[j] != "," && tokens[j] != "}" {
                    j += 1;
                }
            }
            return (paths, j + 1);
        }
        if !is_ident(&tokens[i + 1]) {
            break;
        }
        prefix.push(tokens[i + 1].clone());
        i += 2;
    }
    (vec![prefix], i)
}

/// `path` (as written in `module`) from the crate root; `None` for paths
/// that leave the crate.
fn resolve(module: &[String], path: &[String]) -> Option<Module> {
    let mut segments = path.iter().peekable();
    let mut base: Module = match segments.peek().map(|s| s.as_str()) {
        Some("crate") => {
            segments.next();
            Vec::new()
        }
        Some("super") => {
            let mut base = module.to_vec();
            while segments.peek().map(|s| s.as_str()) == Some("super") {
                segments.next();
                base.pop()?;
            }
            base
        }
        Some("self") => {
            segments.next();
            module.to_vec()
        }
        _ => module.to_vec(),
    };
    // `use x::{self}` names `x` itself.
    base.extend(segments.filter(|s| *s != "self").cloned());
    Some(base)
}

/// The longest prefix of `path` that is a known module.
fn owner(path: &[String], known: &BTreeSet<Module>) -> Module {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|prefix| known.contains(prefix))
        .unwrap_or_default()
}

/// The words of `NOT_SANS_IO` and the `std::…` modules of `STD_IO` that
/// `tokens` name.
fn forbidden_words(tokens: &[String]) -> BTreeSet<String> {
    let mut words: BTreeSet<String> = tokens
        .iter()
        .filter(|t| NOT_SANS_IO.contains(&t.as_str()))
        .cloned()
        .collect();
    for (i, token) in tokens.iter().enumerate() {
        if token != "std" || tokens.get(i + 1).is_none_or(|t| t != "::") {
            continue;
        }
        let (paths, _) = parse_path(tokens, i);
        for path in paths {
            if let Some(second) = path.get(1)
                && STD_IO.contains(&second.as_str())
            {
                words.insert(format!("std::{second}"));
            }
        }
    }
    words
}

/// Strongly connected components of more than one module, each sorted.
fn cycles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    let reach = |from: &Module| -> BTreeSet<Module> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(node) = stack.pop() {
            for next in graph.get(&node).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&Module, BTreeSet<Module>> =
        graph.keys().map(|m| (m, reach(m))).collect();
    let mut placed = BTreeSet::new();
    let mut found = Vec::new();
    for (module, reached) in &reaches {
        if placed.contains(*module) || !reached.contains(*module) {
            continue;
        }
        let component: Vec<Module> = reached
            .iter()
            .filter(|other| {
                reaches
                    .get(other)
                    .is_some_and(|back| back.contains(*module))
            })
            .cloned()
            .collect();
        if component.len() > 1 {
            placed.extend(component.iter().cloned());
            found.push(component);
        }
    }
    found
}

fn is_ident(token: &str) -> bool {
    token
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// The tokens of `text` that matter here: identifiers, `::` and single
/// punctuation. Comments, strings, characters and lifetimes are dropped.
fn tokens(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == '"' {
            i = skip_string(&chars, i + 1, 0);
        } else if (c == 'r' || c == 'b') && raw_string_start(&chars, i).is_some() {
            let (hashes, quote) = raw_string_start(&chars, i).unwrap_or((0, i));
            i = skip_string(&chars, quote + 1, hashes);
        } else if c == '\'' {
            // A character literal, or a lifetime (dropped either way).
            if next == Some('\\') {
                i += 3;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
            }
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(chars[start..i].iter().collect());
        } else if c == ':' && next == Some(':') {
            tokens.push("::".to_owned());
            i += 2;
        } else if c.is_whitespace() || c.is_ascii_digit() {
            i += 1;
        } else {
            tokens.push(c.to_string());
            i += 1;
        }
    }
    tokens
}

/// Where a raw or byte string starting at `i` opens: its `#` count and the
/// index of its opening quote.
fn raw_string_start(chars: &[char], i: usize) -> Option<(usize, usize)> {
    // An identifier ending in `r` or `b` is not a string prefix.
    if i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_') {
        return None;
    }
    let mut j = i;
    if chars.get(j) == Some(&'b') {
        j += 1;
    }
    let raw = chars.get(j) == Some(&'r');
    if raw {
        j += 1;
    }
    let mut hashes = 0;
    while raw && chars.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    (j > i && chars.get(j) == Some(&'"')).then_some((hashes, j))
}

/// The index after a string whose body starts at `i`, closed by `"` and
/// `hashes` `#` (escapes count only in plain strings).
fn skip_string(chars: &[char], mut i: usize, hashes: usize) -> usize {
    while i < chars.len() {
        if chars[i] == '\\' && hashes == 0 {
            i += 2;
            continue;
        }
        if chars[i] == '"' && (0..hashes).all(|k| chars.get(i + 1 + k) == Some(&'#')) {
            return i + 1 + hashes;
        }
        i += 1;
    }
    i
}

/// `tokens` without `#[cfg(test)] mod name { … }` blocks, and the names of
/// the child modules declared `#[cfg(test)] mod name;`.
fn without_tests(tokens: Vec<String>) -> (Vec<String>, Vec<String>) {
    const ATTRIBUTE: [&str; 7] = ["#", "[", "cfg", "(", "test", ")", "]"];
    let mut kept = Vec::with_capacity(tokens.len());
    let mut test_children = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let is_test_mod = tokens.len() > i + 9
            && ATTRIBUTE
                .iter()
                .enumerate()
                .all(|(k, t)| tokens[i + k] == *t)
            && tokens[i + 7] == "mod";
        if !is_test_mod {
            kept.push(tokens[i].clone());
            i += 1;
            continue;
        }
        let name = tokens[i + 8].clone();
        if tokens[i + 9] == ";" {
            test_children.push(name);
            i += 10;
            continue;
        }
        let mut depth = 0;
        i += 9;
        while i < tokens.len() {
            match tokens[i].as_str() {
                "{" => depth += 1,
                "}" => {
                    depth -= 1;
                    if depth == 0 {
                        i += 1;
                        break;
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
    (kept, test_children)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(sources: &[(&str, &str)]) -> Vec<SourceFile> {
        sources
            .iter()
            .map(|(path, text)| SourceFile::new(path, text))
            .collect()
    }

    /// A small engine of the checked shape: a sans-IO machine below a
    /// driver, a clock module, and entry points beside the driver.
    const GOOD: &[(&str, &str)] = &[
        (
            "lib.rs",
            "mod clock; mod driver; pub mod machine; pub mod strategy;\npub use driver::run;",
        ),
        (
            "clock.rs",
            "pub fn now() -> std::time::SystemTime { std::time::SystemTime::now() }",
        ),
        (
            "machine/mod.rs",
            "mod protocol; mod run;\npub use protocol::Step;\npub use run::Machine;",
        ),
        ("machine/protocol.rs", "pub enum Step { Done }"),
        (
            "machine/run.rs",
            "use super::protocol::Step;\n// not `async`: a comment may say tokio\npub struct Machine;\nimpl Machine { pub fn step(&self) -> Step { let _ = \"async tokio\"; Step::Done } }",
        ),
        (
            "driver.rs",
            "use crate::machine::{Machine, Step};\nuse crate::clock::now;\npub async fn run() {}",
        ),
        ("strategy/mod.rs", "mod native;\npub use native::Native;"),
        (
            "strategy/native.rs",
            "use crate::driver;\nuse crate::machine::Machine;\npub struct Native;",
        ),
    ];

    fn check_files(sources: &[(&str, &str)]) -> Vec<Violation> {
        check("engine", &files(sources), true, &["machine"], Some("clock"))
    }

    fn replaced(path: &str, text: &str) -> Vec<(&'static str, String)> {
        GOOD.iter()
            .map(|(p, t)| {
                (
                    *p,
                    if *p == path {
                        text.to_owned()
                    } else {
                        (*t).to_owned()
                    },
                )
            })
            .collect()
    }

    fn check_owned(sources: &[(&'static str, String)]) -> Vec<Violation> {
        let borrowed: Vec<(&str, &str)> = sources.iter().map(|(p, t)| (*p, t.as_str())).collect();
        check_files(&borrowed)
    }

    #[test]
    fn the_checked_shape_passes() {
        assert_eq!(check_files(GOOD), Vec::new());
    }

    #[test]
    fn a_machine_file_importing_the_driver_is_caught() {
        let violations = check_owned(&replaced(
            "machine/run.rs",
            "use super::protocol::Step;\nuse crate::driver::run;\npub struct Machine;",
        ));
        assert!(violations.contains(&Violation::LeavesSansIo {
            file: "machine/run.rs".to_owned(),
            module: "machine".to_owned(),
            target: "driver".to_owned(),
        }));
        // driver -> machine -> driver is a cycle as well.
        assert!(violations.iter().any(|v| matches!(
            v,
            Violation::Cycle { modules, .. } if modules.contains(&"driver".to_owned())
        )));
    }

    #[test]
    fn super_paths_and_use_groups_that_leave_the_machine_are_caught() {
        let violations = check_owned(&replaced(
            "machine/run.rs",
            "use super::super::{strategy::native::Native, machine::protocol::Step};",
        ));
        let leaving: Vec<&Violation> = violations
            .iter()
            .filter(|v| matches!(v, Violation::LeavesSansIo { .. }))
            .collect();
        assert_eq!(
            leaving,
            vec![&Violation::LeavesSansIo {
                file: "machine/run.rs".to_owned(),
                module: "machine".to_owned(),
                target: "strategy::native".to_owned(),
            }],
            "the path back into the machine is allowed"
        );
    }

    #[test]
    fn async_io_clock_and_randomness_in_the_machine_are_caught() {
        let violations = check_owned(&replaced(
            "machine/run.rs",
            "use std::{fs, collections::HashMap};\nasync fn f() { tokio::task::yield_now().await; let _ = std::time::Instant::now(); }",
        ));
        let words: BTreeSet<String> = violations
            .iter()
            .filter_map(|v| match v {
                Violation::Forbidden { word, .. } => Some(word.clone()),
                _ => None,
            })
            .collect();
        let expected: BTreeSet<String> =
            ["async", "await", "tokio", "Instant", "std::fs", "std::time"]
                .map(str::to_owned)
                .into();
        assert_eq!(words, expected);
    }

    #[test]
    fn reading_the_clock_outside_the_clock_module_is_caught() {
        let violations = check_owned(&replaced(
            "driver.rs",
            "use crate::machine::Machine;\npub fn id() -> u128 { std::time::SystemTime::now().elapsed().map(|d| d.as_nanos()).unwrap_or(0) }",
        ));
        assert_eq!(
            violations,
            vec![Violation::Forbidden {
                file: "driver.rs".to_owned(),
                word: "SystemTime".to_owned(),
                rule: "only the clock module reads the clock; take the time from it",
            }]
        );
    }

    #[test]
    fn a_child_that_imports_its_re_exporting_parent_is_a_cycle() {
        let violations = check_owned(&replaced(
            "strategy/native.rs",
            "use super::Native as Again;\npub struct Native;",
        ));
        assert_eq!(
            violations,
            vec![Violation::Cycle {
                krate: "engine".to_owned(),
                modules: vec!["strategy".to_owned(), "strategy::native".to_owned()],
            }]
        );
    }

    #[test]
    fn test_modules_and_visibility_are_not_imports() {
        let mut sources = replaced(
            "machine/run.rs",
            "use super::protocol::Step;\npub(crate) struct Machine;\nimpl Machine { pub(super) fn f(&self) {} }\n#[cfg(test)]\nmod tests { use crate::driver::run; async fn t() { run().await } }\n#[cfg(test)]\nmod more;",
        );
        sources.push(("machine/run/more.rs", "use crate::driver::run;".to_owned()));
        assert_eq!(check_owned(&sources), Vec::new());
    }

    #[test]
    fn literals_and_lifetimes_hide_nothing() {
        let text = "fn f<'a>(x: &'a str) -> char { let _ = r#\"crate::driver \"quoted\" \"#; let _ = b\"tokio\"; '\\'' }\npub struct Machine;\nuse super::protocol::Step;";
        assert_eq!(check_owned(&replaced("machine/run.rs", text)), Vec::new());
    }

    #[test]
    fn the_real_workspace_keeps_its_module_rules() {
        let violations = check_workspace(&crate::workspace_root());
        let text: Vec<String> = violations.iter().map(ToString::to_string).collect();
        assert!(violations.is_empty(), "{}", text.join("\n"));
    }
}
