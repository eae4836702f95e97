//! What each crate's manifest and front page must say before it can be
//! published and read on crates.io and docs.rs.
//!
//! - Crates under `crates/` are published; every other member (`xtask`, the
//!   workspace tests) says `publish = false`.
//! - A publishable crate has a description, a license, rust-version,
//!   keywords and categories within crates.io's limits, and a README inside
//!   its folder that has a "Cargo features" section naming each feature.
//! - Its `LICENSE` is the workspace's license text.
//! - A publishable library also links its docs.rs page, has docs.rs
//!   metadata building every feature with `--cfg docsrs`, turns on
//!   `doc_cfg` under that cfg, and its crate docs name each feature.
//! - Every dependency on a workspace crate that the published crate builds
//!   with carries the sibling's version and points at a publishable crate.

use std::path::Path;

use serde_json::Value;

use super::Problem;
use super::workspace::{Crate, Workspace};

/// The folder whose crates are published.
pub const PUBLISHED_FOLDER: &str = "crates";

/// The crate attribute that labels feature-gated items on docs.rs.
pub const DOC_CFG_ATTRIBUTE: &str = "#![cfg_attr(docsrs, feature(doc_cfg))]";

/// crates.io's limits on keywords and categories.
const MAX_KEYWORDS: usize = 5;
const MAX_KEYWORD_LEN: usize = 20;
const MAX_CATEGORIES: usize = 5;

/// Checks every member; `root` is the workspace folder.
pub fn check(workspace: &Workspace, root: &Path) -> Vec<Problem> {
    let license_text = std::fs::read(root.join("LICENSE")).ok();
    let mut problems = Vec::new();
    if license_text.is_none() {
        problems.push(Problem::workspace(
            "LICENSE is missing at the workspace root",
        ));
    }
    for krate in &workspace.crates {
        let published_folder = krate
            .dir
            .strip_prefix(root)
            .is_ok_and(|relative| relative.starts_with(PUBLISHED_FOLDER));
        if published_folder && !krate.publishable {
            problems.push(Problem::new(
                krate,
                format!("lives under {PUBLISHED_FOLDER}/ but says `publish = false`"),
            ));
        }
        if !published_folder && krate.publishable {
            problems.push(Problem::new(
                krate,
                format!(
                    "is not under {PUBLISHED_FOLDER}/ and may be published: add `publish = false`"
                ),
            ));
        }
        if krate.publishable {
            problems.extend(metadata(krate));
            problems.extend(license(krate, license_text.as_deref()));
            problems.extend(readme(krate));
            problems.extend(library_docs(krate));
            problems.extend(sibling_dependencies(krate, workspace));
        }
    }
    problems
}

fn metadata(krate: &Crate) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut missing = |field: &str, present: bool| {
        if !present {
            problems.push(Problem::new(
                krate,
                format!("`{field}` is missing from its manifest"),
            ));
        }
    };
    missing("description", krate.description.is_some());
    missing("license", krate.license.is_some());
    missing("readme", krate.readme.is_some());
    missing("rust-version", krate.rust_version.is_some());
    missing("keywords", !krate.keywords.is_empty());
    missing("categories", !krate.categories.is_empty());
    if krate.keywords.len() > MAX_KEYWORDS {
        problems.push(Problem::new(
            krate,
            format!(
                "has {} keywords; crates.io takes at most {MAX_KEYWORDS}",
                krate.keywords.len()
            ),
        ));
    }
    for keyword in &krate.keywords {
        if !valid_keyword(keyword) {
            problems.push(Problem::new(
                krate,
                format!(
                    "keyword `{keyword}` is not accepted by crates.io (at most \
                     {MAX_KEYWORD_LEN} characters: a letter or digit, then letters, digits, `_`, `-` or `+`)"
                ),
            ));
        }
    }
    if krate.categories.len() > MAX_CATEGORIES {
        problems.push(Problem::new(
            krate,
            format!(
                "has {} categories; crates.io takes at most {MAX_CATEGORIES}",
                krate.categories.len()
            ),
        ));
    }
    problems
}

/// crates.io's keyword rule.
pub fn valid_keyword(keyword: &str) -> bool {
    let mut chars = keyword.chars();
    keyword.len() <= MAX_KEYWORD_LEN
        && chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+'))
}

fn license(krate: &Crate, workspace_license: Option<&[u8]>) -> Vec<Problem> {
    let Some(workspace_license) = workspace_license else {
        return Vec::new();
    };
    match std::fs::read(krate.dir.join("LICENSE")) {
        Err(_) => vec![Problem::new(
            krate,
            "has no LICENSE in its folder (link ../../LICENSE so the package carries the text)",
        )],
        Ok(text) if text != workspace_license => vec![Problem::new(
            krate,
            "its LICENSE differs from the workspace's LICENSE",
        )],
        Ok(_) => Vec::new(),
    }
}

fn readme(krate: &Crate) -> Vec<Problem> {
    let Some(readme) = &krate.readme else {
        return Vec::new();
    };
    if Path::new(readme)
        .components()
        .any(|part| matches!(part, std::path::Component::ParentDir))
    {
        return vec![Problem::new(
            krate,
            format!("readme `{readme}` lies outside the crate's folder"),
        )];
    }
    let Ok(text) = std::fs::read_to_string(krate.dir.join(readme)) else {
        return vec![Problem::new(
            krate,
            format!("readme `{readme}` cannot be read"),
        )];
    };
    let mut problems = Vec::new();
    if !text.to_lowercase().contains("cargo features") {
        problems.push(Problem::new(
            krate,
            format!("{readme} has no \"Cargo features\" section"),
        ));
    }
    for feature in unnamed_features(krate, &text) {
        problems.push(Problem::new(
            krate,
            format!("{readme} does not name its feature `{feature}`"),
        ));
    }
    problems
}

fn library_docs(krate: &Crate) -> Vec<Problem> {
    let Some(library) = krate.library() else {
        return Vec::new();
    };
    let mut problems = Vec::new();
    let docs_rs_page = format!("https://docs.rs/{}", krate.name);
    if krate.documentation.as_deref() != Some(docs_rs_page.as_str()) {
        problems.push(Problem::new(
            krate,
            format!("`documentation` should be {docs_rs_page}"),
        ));
    }
    problems.extend(docs_rs_metadata(krate));
    let Ok(source) = std::fs::read_to_string(&library.src_path) else {
        problems.push(Problem::new(
            krate,
            format!("cannot read {}", library.src_path.display()),
        ));
        return problems;
    };
    if !source.lines().any(|line| line.trim() == DOC_CFG_ATTRIBUTE) {
        problems.push(Problem::new(
            krate,
            format!("its crate root lacks `{DOC_CFG_ATTRIBUTE}`"),
        ));
    }
    let docs = crate_docs(&source);
    if !docs.to_lowercase().contains("cargo features") {
        problems.push(Problem::new(
            krate,
            "its crate docs say nothing about its Cargo features",
        ));
    }
    for feature in unnamed_features(krate, &docs) {
        problems.push(Problem::new(
            krate,
            format!("its crate docs do not name its feature `{feature}`"),
        ));
    }
    problems
}

fn docs_rs_metadata(krate: &Crate) -> Vec<Problem> {
    let Some(docs_rs) = &krate.docs_rs else {
        return vec![Problem::new(krate, "has no [package.metadata.docs.rs]")];
    };
    let mut problems = Vec::new();
    if docs_rs.get("all-features") != Some(&Value::Bool(true)) {
        problems.push(Problem::new(
            krate,
            "[package.metadata.docs.rs] should set `all-features = true`",
        ));
    }
    let rustdoc_args: Vec<&str> = docs_rs
        .get("rustdoc-args")
        .and_then(Value::as_array)
        .map(|args| args.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !rustdoc_args
        .windows(2)
        .any(|pair| pair == ["--cfg", "docsrs"])
    {
        problems.push(Problem::new(
            krate,
            "[package.metadata.docs.rs] should pass `rustdoc-args = [\"--cfg\", \"docsrs\"]`",
        ));
    }
    problems
}

fn sibling_dependencies(krate: &Crate, workspace: &Workspace) -> Vec<Problem> {
    let mut problems = Vec::new();
    for dependency in &krate.dependencies {
        if !dependency.kind.builds_the_crate() {
            continue;
        }
        let Some(sibling) = workspace.member(&dependency.name) else {
            if dependency.is_path {
                problems.push(Problem::new(
                    krate,
                    format!(
                        "depends on `{}` by path outside the workspace; it cannot be published",
                        dependency.name
                    ),
                ));
            }
            continue;
        };
        if !sibling.publishable {
            problems.push(Problem::new(
                krate,
                format!(
                    "depends on `{}`, which says `publish = false`",
                    sibling.name
                ),
            ));
        }
        let expected = format!("^{}", sibling.version);
        if dependency.req != expected {
            problems.push(Problem::new(
                krate,
                format!(
                    "depends on `{}` with version requirement `{}`; it should be `{}` \
                     (set `version = \"{}\"` beside its path in [workspace.dependencies])",
                    sibling.name, dependency.req, sibling.version, sibling.version
                ),
            ));
        }
    }
    problems
}

/// The leading `//!` comment of a crate root.
pub fn crate_docs(source: &str) -> String {
    source
        .lines()
        .map_while(|line| line.trim_start().strip_prefix("//!"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The crate's features that `text` does not name as `` `feature` ``.
fn unnamed_features<'a>(krate: &'a Crate, text: &str) -> Vec<&'a str> {
    krate
        .features
        .iter()
        .map(String::as_str)
        .filter(|feature| !text.contains(&format!("`{feature}`")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::fixture;
    use super::super::workspace::DepKind;
    use super::*;

    fn messages(problems: &[Problem]) -> Vec<String> {
        problems.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_complete_library_passes() {
        let root = fixture::folder("complete");
        let workspace = fixture::workspace(vec![fixture::library(&root, "good")]);
        assert_eq!(messages(&check(&workspace, &root)), Vec::<String>::new());
    }

    #[test]
    fn missing_metadata_is_named_field_by_field() {
        let root = fixture::folder("missing");
        let mut krate = fixture::library(&root, "bare");
        krate.description = None;
        krate.license = None;
        krate.readme = None;
        krate.rust_version = None;
        krate.keywords.clear();
        krate.categories.clear();
        let problems = messages(&check(&fixture::workspace(vec![krate]), &root));
        for field in [
            "description",
            "license",
            "readme",
            "rust-version",
            "keywords",
            "categories",
        ] {
            assert!(
                problems.contains(&format!("bare: `{field}` is missing from its manifest")),
                "{field}: {problems:#?}"
            );
        }
    }

    #[test]
    fn a_license_file_missing_or_different_is_caught() {
        let root = fixture::folder("license");
        let missing = fixture::library(&root, "unlicensed");
        std::fs::remove_file(missing.dir.join("LICENSE")).unwrap();
        let different = fixture::library(&root, "relicensed");
        std::fs::write(different.dir.join("LICENSE"), "Other terms.\n").unwrap();
        let problems = messages(&check(&fixture::workspace(vec![missing, different]), &root));
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("unlicensed: has no LICENSE")),
            "{problems:#?}"
        );
        assert!(
            problems.contains(
                &"relicensed: its LICENSE differs from the workspace's LICENSE".to_owned()
            ),
            "{problems:#?}"
        );
    }

    #[test]
    fn features_the_readme_or_crate_docs_leave_out_are_caught() {
        let root = fixture::folder("features");
        let mut krate = fixture::library(&root, "quiet");
        krate.features.push("hidden".to_owned());
        fixture::write(&krate.dir, &[("src/lib.rs", "//! Does one thing.\n")]);
        let problems = messages(&check(&fixture::workspace(vec![krate]), &root));
        assert!(
            problems.contains(&"quiet: README.md does not name its feature `hidden`".to_owned())
        );
        assert!(
            problems.contains(&"quiet: its crate docs do not name its feature `extra`".to_owned())
        );
        assert!(
            problems
                .contains(&"quiet: its crate docs say nothing about its Cargo features".to_owned())
        );
        assert!(
            problems.contains(&format!(
                "quiet: its crate root lacks `{DOC_CFG_ATTRIBUTE}`"
            )),
            "{problems:#?}"
        );
    }

    #[test]
    fn docs_rs_metadata_and_link_are_required_of_libraries() {
        let root = fixture::folder("docsrs");
        let mut none = fixture::library(&root, "undocumented");
        none.docs_rs = None;
        none.documentation = None;
        let mut partial = fixture::library(&root, "partial");
        partial.docs_rs = Some(serde_json::json!({"rustdoc-args": ["--cfg", "docs"]}));
        let problems = messages(&check(&fixture::workspace(vec![none, partial]), &root));
        assert!(problems.contains(&"undocumented: has no [package.metadata.docs.rs]".to_owned()));
        assert!(problems.contains(
            &"undocumented: `documentation` should be https://docs.rs/undocumented".to_owned()
        ));
        assert!(problems.iter().any(|p| {
            p.starts_with("partial: [package.metadata.docs.rs] should set `all-features")
        }));
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("partial: [package.metadata.docs.rs] should pass"))
        );
    }

    #[test]
    fn sibling_dependencies_need_the_version_and_a_publishable_sibling() {
        let root = fixture::folder("siblings");
        let base = fixture::library(&root, "base");
        let mut tool = fixture::library(&root, "tool");
        tool.publishable = false;
        let mut top = fixture::library(&root, "top");
        top.dependencies = vec![
            fixture::dependency("base", "*", true, DepKind::Normal),
            fixture::dependency("tool", "^0.1.0", true, DepKind::Build),
            // Dev-dependencies are dropped from the published manifest.
            fixture::dependency("base", "*", true, DepKind::Dev),
        ];
        let problems = messages(&check(&fixture::workspace(vec![base, tool, top]), &root));
        assert!(
            problems.iter().any(|p| p.starts_with(
                "top: depends on `base` with version requirement `*`; it should be `0.1.0`"
            )),
            "{problems:#?}"
        );
        assert!(
            problems.contains(&"top: depends on `tool`, which says `publish = false`".to_owned())
        );
        assert!(
            problems.contains(&"tool: lives under crates/ but says `publish = false`".to_owned())
        );
        assert_eq!(problems.len(), 3, "{problems:#?}");
    }

    #[test]
    fn members_outside_crates_must_say_publish_false() {
        let root = fixture::folder("outside");
        let mut task = fixture::library(&root, "task");
        task.dir = root.join("xtask");
        let problems = messages(&check(&fixture::workspace(vec![task]), &root));
        assert!(
            problems.contains(
                &"task: is not under crates/ and may be published: add `publish = false`"
                    .to_owned()
            ),
            "{problems:#?}"
        );
    }

    #[test]
    fn the_real_workspace_is_ready_to_publish() {
        let workspace =
            super::super::Workspace::from_metadata(&crate::cargo_metadata().unwrap()).unwrap();
        let problems = messages(&check(&workspace, &crate::workspace_root()));
        assert_eq!(problems, Vec::<String>::new());
        assert!(workspace.publishable().count() >= 10);
    }

    #[test]
    fn keywords_follow_the_crates_io_rule() {
        for good in [
            "llm",
            "agent-loop",
            "sans-io",
            "c++",
            "x_1",
            "a2345678901234567890",
        ] {
            assert!(valid_keyword(good), "{good}");
        }
        for bad in ["", "-llm", "model context", "llm!", "a23456789012345678901"] {
            assert!(!valid_keyword(bad), "{bad}");
        }
    }

    #[test]
    fn crate_docs_are_the_leading_inner_doc_comment() {
        let source =
            "//! First.\n//!\n//! # Cargo features\n\n#![forbid(unsafe_code)]\n//! not docs\n";
        assert_eq!(crate_docs(source), " First.\n\n # Cargo features");
    }
}
