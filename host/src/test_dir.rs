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

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
