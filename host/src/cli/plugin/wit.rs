//! `wasmhub plugin wit [--out DIR]`: the contract travels with the binary. Prints
//! the newest `wasmhub:plugin` WIT package, or writes every version served into
//! DIR (`DIR/plugin.wit` the newest, `DIR/<version>/plugin.wit` each older one,
//! which WIT tools reading DIR as a package ignore) and `DIR/deps/config/store.wit`
//! (`wasi:config/store`, which a plugin may import for its configuration), so any
//! toolchain can bind against exactly what this hub serves.

use crate::runtime::{WASI_CONFIG_WIT, WIT_SOURCES};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub(crate) fn wit(out: Option<&Path>) -> ExitCode {
    let Some(dir) = out else {
        print!("{}", WIT_SOURCES[0].1);
        return ExitCode::SUCCESS;
    };
    match write_all(dir) {
        Ok(files) => {
            for file in files {
                println!("wrote {}", file.display());
            }
            ExitCode::SUCCESS
        }
        Err((file, e)) => {
            eprintln!("wasmhub plugin wit: cannot write {}: {e}", file.display());
            ExitCode::FAILURE
        }
    }
}

/// Writes every version; the error names the file that could not be written.
fn write_all(dir: &Path) -> Result<Vec<PathBuf>, (PathBuf, std::io::Error)> {
    let mut written = Vec::new();
    for (i, (version, text)) in WIT_SOURCES.iter().enumerate() {
        let folder = if i == 0 {
            dir.to_path_buf()
        } else {
            dir.join(version.as_str())
        };
        let file = folder.join("plugin.wit");
        std::fs::create_dir_all(&folder)
            .and_then(|()| std::fs::write(&file, text))
            .map_err(|e| (file.clone(), e))?;
        written.push(file);
    }
    let folder = dir.join("deps/config");
    let file = folder.join("store.wit");
    std::fs::create_dir_all(&folder)
        .and_then(|()| std::fs::write(&file, WASI_CONFIG_WIT))
        .map_err(|e| (file.clone(), e))?;
    written.push(file);
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::WitVersion;

    #[test]
    fn every_version_is_written_the_newest_at_the_top() {
        let dir = std::env::temp_dir().join(crate::ids::new_id("wasmhub-wit-"));
        let written = write_all(&dir).map(|files| {
            let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
            (
                files.len(),
                read("plugin.wit"),
                read("0.1.0/plugin.wit"),
                read("deps/config/store.wit"),
                read("0.2.0/plugin.wit"),
            )
        });
        let _ = std::fs::remove_dir_all(&dir);
        let (count, top, old, config, previous) = written.unwrap();
        assert_eq!(count, 4);
        assert!(previous.contains("package wasmhub:plugin@0.2.0;"), "{previous}");
        assert!(config.contains("package wasi:config@0.2.0-draft;"), "{config}");
        assert!(top.contains("package wasmhub:plugin@0.3.0;"), "{top}");
        assert!(old.contains("package wasmhub:plugin@0.1.0;"), "{old}");
        assert_eq!(WIT_SOURCES[0].0, WitVersion::ALL[0]);
    }
}
