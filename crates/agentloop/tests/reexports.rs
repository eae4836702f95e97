//! A typed tool needs no serde or schemars dependency of its own: the
//! fixture `tests/fixtures/facade_only.rs` derives everything through
//! `agentloop::` and is compiled here by rustc with `agentloop` as the only
//! crate it may name. (A doctest or an example would not show this: they see
//! every dependency of this package, serde and schemars included.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/facade_only.rs");

/// The folder holding this test's dependencies, `agentloop`'s rlib among
/// them.
fn deps_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().to_path_buf()
}

/// The `agentloop` rlibs built into `deps` (one per feature set built),
/// newest first.
fn agentloop_rlibs(deps: &Path) -> Vec<PathBuf> {
    let mut rlibs: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(deps)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            let name = path.file_name().unwrap().to_string_lossy();
            name.starts_with("libagentloop-") && name.ends_with(".rlib")
        })
        .map(|path| (path.metadata().unwrap().modified().unwrap(), path))
        .collect();
    rlibs.sort_by_key(|(modified, _)| std::cmp::Reverse(*modified));
    rlibs.into_iter().map(|(_, path)| path).collect()
}

/// Type-checks `source` as a library whose only direct dependency is
/// `agentloop` (`-L dependency=` lets rustc find that crate's own
/// dependencies, but not name them); the compiler's stderr on failure.
fn check_against(rlib: &Path, deps: &Path, source: &Path) -> Result<(), String> {
    let out = scratch_dir().join("out");
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = Command::new(rustc)
        .args(["--edition", "2024", "--crate-type", "lib"])
        .args(["--crate-name", "facade_only", "--emit", "metadata"])
        .arg("--out-dir")
        .arg(&out)
        .arg("--extern")
        .arg(format!("agentloop={}", rlib.display()))
        .arg("-L")
        .arg(format!("dependency={}", deps.display()))
        .arg(source)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&out);
    if output.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

fn scratch_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "agentloop-reexports-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_typed_tool_derives_through_the_reexports_alone() {
    let deps = deps_dir();
    let rlibs = agentloop_rlibs(&deps);
    assert!(
        !rlibs.is_empty(),
        "no libagentloop rlib in {}",
        deps.display()
    );

    // Any rlib of this crate built with `tools` will do; the newest is the
    // one just built, older ones are other feature sets.
    let mut failures = Vec::new();
    let checked = rlibs.iter().find(|rlib| {
        check_against(rlib, &deps, Path::new(FIXTURE))
            .map_err(|stderr| failures.push(format!("{}:\n{stderr}", rlib.display())))
            .is_ok()
    });
    let Some(rlib) = checked else {
        panic!(
            "the fixture does not compile against agentloop alone:\n{}",
            failures.join("\n")
        );
    };

    // The control: without the `crate` attribute serde's derive names its
    // own crate, which this fixture cannot reach. So the success above came
    // from the re-exports, not from serde being in reach anyway.
    let fixture = std::fs::read_to_string(FIXTURE).unwrap();
    let without = fixture.replace("#[serde(crate = \"agentloop::serde\")]\n", "");
    assert_ne!(
        without, fixture,
        "the fixture names serde's crate attribute"
    );
    let dir = scratch_dir();
    let control = dir.join("without_crate_attribute.rs");
    std::fs::write(&control, without).unwrap();
    let stderr = check_against(rlib, &deps, &control)
        .expect_err("serde's derive compiled without a serde dependency");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(stderr.contains("can't find crate for `serde`"), "{stderr}");
}
