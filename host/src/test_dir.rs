//! Unit tests' scratch folders: a fresh folder under the system temp dir, removed
//! when the guard is dropped, so a failing assertion leaves nothing behind.

use std::path::{Path, PathBuf};

/// A fresh folder under the system temp dir, removed (with its contents) on drop.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    /// Creates `$TMP/<tag>_<unique id>`.
    pub(crate) fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(crate::ids::new_id(tag));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    /// The folder.
    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

/// The names of the entries of `dir`, sorted.
pub(crate) fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// `host/tests/fixtures/NAME`, found from the folder cargo runs the tests in
/// (a build shared by two checkouts must not read the other one's files).
pub(crate) fn fixture(name: &str) -> PathBuf {
    manifest_dir().join("tests/fixtures").join(name)
}

/// `path` in this repository (relative to its root), found the same way.
pub(crate) fn repo_path(path: &str) -> PathBuf {
    manifest_dir().join("..").join(path)
}

/// The host crate's folder, as cargo says when it runs the tests.
fn manifest_dir() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo test sets CARGO_MANIFEST_DIR"))
}

/// Copies `from` into `to`, folders and all.
pub(crate) fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
