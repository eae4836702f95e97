//! Agent Skills folders in the shapes public skills are written in (front
//! matter with `license`, `metadata`, folded descriptions, `allowed-tools`
//! spaced or comma-separated; scripts and references beside `SKILL.md`),
//! and every folder refused with its reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::Path;

use agentloop_tools::agent_skills::find;

fn skill(root: &Path, folder: &str, text: &str) {
    fs::create_dir_all(root.join(folder)).unwrap();
    fs::write(root.join(folder).join("SKILL.md"), text).unwrap();
}

#[test]
fn skills_written_for_other_agents_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // A document skill: one long description line, a license, a body with
    // code, scripts and a second Markdown file beside it.
    skill(
        root,
        "invoices",
        "---\nname: invoices\ndescription: Use this skill whenever the user wants to read, total or \
         check invoices in PDF or CSV form, including currency conversion and VAT lines.\n\
         license: Proprietary. LICENSE.txt has complete terms\n---\n\n# Invoices\n\n\
         Run `python scripts/total.py FILE` and report the total.\n\n```python\nprint(1)\n```\n\
         For VAT rules read vat.md.\n",
    );
    fs::create_dir_all(root.join("invoices/scripts")).unwrap();
    fs::write(root.join("invoices/scripts/total.py"), "print('total')\n").unwrap();
    fs::write(root.join("invoices/vat.md"), "VAT is 20 %.\n").unwrap();
    // A folded description, metadata, and tools listed with commas.
    skill(
        root,
        "release-notes",
        "---\nname: release-notes\ndescription: >\n  Drafts release notes from merged pull requests.\n  \
         Use when asked for a changelog.\nallowed-tools: Read, Grep, shell\nmetadata:\n  author: \
         example-org\n  version: \"1.2\"\n---\nGroup changes by area.\n",
    );
    // Tools as a YAML list, CRLF line ends.
    skill(
        root,
        "csv-2-json",
        "---\r\nname: csv-2-json\r\ndescription: \"Converts CSV files to JSON: one object a row.\"\r\n\
         allowed-tools:\r\n  - fs\r\n---\r\nUse the first row as keys.\r\n",
    );

    let found = find(root);
    assert_eq!(found.refused, [], "{:?}", found.refused);
    let names: Vec<&str> = found.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["csv-2-json", "invoices", "release-notes"]);
    let invoices = &found.skills[1];
    assert!(invoices.description.starts_with("Use this skill whenever"));
    assert!(invoices.instructions.starts_with("# Invoices"));
    assert!(invoices.instructions.contains("scripts/total.py"));
    assert_eq!(invoices.allowed_tools, None);
    assert_eq!(invoices.dir, root.join("invoices"));
    let notes = &found.skills[2];
    assert_eq!(
        notes.description,
        "Drafts release notes from merged pull requests. Use when asked for a changelog."
    );
    assert_eq!(
        notes.allowed_tools.as_deref(),
        Some(&["Read".to_owned(), "Grep".to_owned(), "shell".to_owned()][..])
    );
    assert_eq!(
        found.skills[0].allowed_tools.as_deref(),
        Some(&["fs".to_owned()][..])
    );
    assert_eq!(found.skills[0].instructions, "Use the first row as keys.");

    // The folder of one skill is read as that skill.
    let one = find(&root.join("invoices"));
    assert_eq!(one.skills.len(), 1);
    assert_eq!(one.skills[0].name, "invoices");
}

#[test]
fn each_refused_folder_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let outside = tempfile::tempdir().unwrap();
    skill(
        outside.path(),
        "linked",
        "---\nname: linked\ndescription: d\n---\nx\n",
    );
    std::os::unix::fs::symlink(outside.path().join("linked"), root.join("linked")).unwrap();
    fs::create_dir_all(root.join("empty")).unwrap();
    skill(root, "no-front", "# Just Markdown\n");
    skill(root, "unclosed", "---\nname: unclosed\ndescription: d\n");
    skill(root, "Upper", "---\nname: Upper\ndescription: d\n---\n");
    skill(root, "other", "---\nname: renamed\ndescription: d\n---\n");
    skill(root, "quiet", "---\nname: quiet\n---\nbody\n");
    skill(
        root,
        "long",
        &format!("---\nname: long\ndescription: {}\n---\n", "a".repeat(1025)),
    );
    skill(root, "bad-yaml", "---\nname: [unclosed\n---\n");
    skill(root, "ok", "---\nname: ok\ndescription: fine\n---\nbody\n");
    fs::create_dir_all(root.join(".hidden")).unwrap();

    let found = find(root);
    let names: Vec<&str> = found.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["ok"]);
    let reasons: Vec<(String, &str)> = found
        .refused
        .iter()
        .map(|r| {
            let folder = r.dir.file_name().unwrap().to_string_lossy().into_owned();
            (folder, r.reason.as_str())
        })
        .collect();
    let reason = |folder: &str| {
        reasons
            .iter()
            .find(|(f, _)| f == folder)
            .map(|(_, r)| *r)
            .unwrap_or_else(|| panic!("{folder} not refused: {reasons:?}"))
    };
    assert_eq!(reasons.len(), 9, "{reasons:?}");
    assert!(reason("linked").contains("symbolic link"));
    assert_eq!(reason("empty"), "no SKILL.md");
    assert!(reason("no-front").contains("does not start with front matter"));
    assert!(reason("unclosed").contains("no closing ---"));
    assert!(reason("Upper").contains("lowercase"));
    assert!(reason("other").contains("not the folder's name (other)"));
    assert_eq!(reason("quiet"), "the front matter has no description");
    assert!(reason("long").contains("1025 characters, over 1024"));
    assert!(reason("bad-yaml").contains("not a YAML mapping"));
}
