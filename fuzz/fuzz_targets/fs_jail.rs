//! The DirJail path resolver over a fixed tree holding symlinks that stay
//! inside, lead outside (relative and absolute), dangle and loop. For every
//! path: a resolved host path lies inside the root, its existing part does
//! not leave the root through a symlink, and no read, stat or list returns
//! anything from outside.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use agentloop_tools::vfs::DirJail;
use agentloop_types::Vfs;
use libfuzzer_sys::fuzz_target;

const SECRET: &[u8] = b"OUTSIDE-THE-JAIL";

struct Fixture {
    jail: DirJail,
    root: PathBuf,
    runtime: tokio::runtime::Runtime,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let base = std::env::temp_dir().join(format!("agentloop-fuzz-jail-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let outside = base.join("outside");
        let root = base.join("root");
        let mk = |p: &Path| std::fs::create_dir_all(p).unwrap_or_else(|e| panic!("{e}"));
        let put = |p: &Path, b: &[u8]| std::fs::write(p, b).unwrap_or_else(|e| panic!("{e}"));
        let link = |target: &Path, at: &Path| {
            std::os::unix::fs::symlink(target, at).unwrap_or_else(|e| panic!("{e}"))
        };
        mk(&outside.join("deep"));
        put(&outside.join("secret.txt"), SECRET);
        put(&outside.join("deep/secret.txt"), SECRET);
        mk(&root.join("dir/sub"));
        put(&root.join("a.txt"), b"inside a");
        put(&root.join("dir/b.txt"), b"inside b");
        link(Path::new("dir"), &root.join("link_in"));
        link(Path::new("../outside"), &root.join("link_out"));
        link(&outside.join("secret.txt"), &root.join("link_abs"));
        link(Path::new("missing"), &root.join("dangling"));
        link(Path::new("loop"), &root.join("loop"));
        link(Path::new(".."), &root.join("dir/up"));
        link(Path::new("../.."), &root.join("dir/upup"));
        link(Path::new("../a.txt"), &root.join("dir/a_link"));
        link(Path::new("/"), &root.join("dir/slash"));
        let jail = DirJail::new(&root).unwrap_or_else(|e| panic!("{e}"));
        let root = jail.root().to_path_buf();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        Fixture {
            jail,
            root,
            runtime,
        }
    })
}

/// The canonical form of the longest existing ancestor of `path`.
fn existing_part(path: &Path) -> Option<PathBuf> {
    path.ancestors().find_map(|p| std::fs::canonicalize(p).ok())
}

fuzz_target!(|input: (bool, String)| {
    let (follow_last, path) = input;
    let f = fixture();
    if let Ok(host) = f.jail.resolve_host(&path, follow_last) {
        assert!(host.starts_with(&f.root), "{path:?} resolved to {host:?}");
        // With the last link not followed, it is the parent that must stay.
        let checked = if follow_last || host == f.root {
            host.as_path()
        } else {
            host.parent().unwrap_or(&host)
        };
        if let Some(real) = existing_part(checked) {
            assert!(real.starts_with(&f.root), "{path:?} reaches {real:?}");
        }
    }
    f.runtime.block_on(async {
        if let Ok(bytes) = f.jail.read(&path).await {
            assert_ne!(bytes, SECRET, "{path:?} read a file outside the root");
        }
        let _ = f.jail.stat(&path).await;
        if let Ok(entries) = f.jail.list(&path).await {
            for entry in entries {
                assert!(!entry.name.contains("secret"), "{path:?} listed {entry:?}");
                assert!(entry.path.starts_with('/'));
            }
        }
    });
});
