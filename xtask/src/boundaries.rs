//! Boundaries stated as absences (part of `cargo xtask layers`): words a
//! crate's code must never name, outside its tests. Each is an invariant
//! of `docs/architecture.md` that reads as "X does not do Y"; naming the
//! method or trait that does Y is how a breach starts, so naming it fails.
//!
//! Comments, literals and `#[cfg(test)]` code are not read (see
//! [`crate::modules`]), so docs may still speak of what is absent.

use std::path::Path;

use crate::modules::{Violation, read_crate};

/// (crate `src` folder, or one file of it, words none of its files may
/// name, the invariant).
pub const ABSENT: &[(&str, &[&str], &str)] = &[
    (
        "crates/agentloop-runtime/src/lifecycle.rs",
        &[
            "async",
            "await",
            "tokio",
            "now_millis",
            "RuntimeStore",
            "RunEnding",
            "Persister",
        ],
        "a run's lifecycle is a sans-IO machine: no async, no clock (the time is an input), no store, no host; its driver (`persist`) performs what it asks",
    ),
    (
        "crates/agentloop-cli/src",
        &["cancel_suspended", "continue_chat"],
        "the CLI submits a `RunInput` (`ChatRuntime::submit`); it maps no input to runtime calls of its own",
    ),
    (
        "crates/agentloop-server/src",
        &[
            "create_run",
            "update_run",
            "acquire_lease",
            "release_lease",
            "renew_leases",
            "append_events",
        ],
        "the server writes no run record, status transition or lease: the runtime does (`ChatRuntime::host`, `fail_hosted`, `wake_hosted`, `take_over`, `Heartbeat`)",
    ),
    (
        "crates/agentloop-runtime/src",
        &[
            "Store",
            "ProductStore",
            "ProjectStore",
            "FileStore",
            "TaskStore",
            "UserStore",
            "WebhookStore",
        ],
        "the runtime runs over `RuntimeStore` and names no product store (nor `Store`, their union)",
    ),
];

/// Checks every boundary on the workspace's sources.
pub fn check_workspace(root: &Path) -> Vec<Violation> {
    let mut violations = Vec::new();
    for (place, words, rule) in ABSENT {
        // A file is checked alone, read with the rest of its crate.
        let (krate, file) = match place
            .strip_suffix(".rs")
            .and_then(|_| place.split_once("/src/"))
        {
            Some((krate, file)) => (format!("{krate}/src"), Some(file)),
            None => ((*place).to_owned(), None),
        };
        match read_crate(&root.join(&krate)) {
            Ok(files) => {
                let files: Vec<_> = files
                    .into_iter()
                    .filter(|f| file.is_none_or(|file| f.path == file))
                    .collect();
                if files.is_empty() {
                    violations.push(Violation::Forbidden {
                        file: (*place).to_owned(),
                        word: "(missing)".to_owned(),
                        rule: "a checked file must exist",
                    });
                }
                violations.extend(check(&files, words, rule));
            }
            Err(err) => violations.push(Violation::Forbidden {
                file: (*place).to_owned(),
                word: err.to_string(),
                rule: "the sources of a checked crate must be readable",
            }),
        }
    }
    violations
}

/// The files of one crate that name one of `words`, outside its tests.
pub fn check(
    files: &[crate::modules::SourceFile],
    words: &[&str],
    rule: &'static str,
) -> Vec<Violation> {
    let mut violations = Vec::new();
    for file in crate::modules::without_test_files(files) {
        for word in words {
            if file.names(word) {
                violations.push(Violation::Forbidden {
                    file: file.path.clone(),
                    word: (*word).to_owned(),
                    rule,
                });
            }
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::SourceFile;

    const RULE: &str = "the host writes no run record";

    #[test]
    fn a_named_word_is_a_breach_and_a_mention_is_not() {
        let files = [
            SourceFile::new(
                "lib.rs",
                "// update_run is the runtime's\nfn f(s: &S) { let _ = \"update_run\"; s.read() }\n#[cfg(test)]\nmod tests { fn t(s: &S) { s.update_run() } }",
            ),
            SourceFile::new("bad.rs", "fn g(s: &S) { s.update_run(&r) }"),
        ];
        assert_eq!(
            check(&files, &["update_run"], RULE),
            vec![Violation::Forbidden {
                file: "bad.rs".to_owned(),
                word: "update_run".to_owned(),
                rule: RULE,
            }]
        );
    }

    #[test]
    fn the_real_workspace_keeps_its_boundaries() {
        let violations = check_workspace(&crate::workspace_root());
        let text: Vec<String> = violations.iter().map(ToString::to_string).collect();
        assert!(violations.is_empty(), "{}", text.join("\n"));
    }
}
