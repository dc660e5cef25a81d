//! Reading material from the file system: a file, a directory (its text files, recursively, in
//! name order) or a glob such as `src/**/*.rs`.

use std::path::{Path, PathBuf};

use super::{ContextItem, ItemKind};
use crate::error::{Error, Result};

/// Reads the items `spec` names, relative to `base`. A named file must exist and be UTF-8
/// text; files found through a directory or a glob that are not text are left out.
pub fn load_items(kind: ItemKind, spec: &str, base: &Path) -> Result<Vec<ContextItem>> {
    let is_glob = spec.contains(['*', '?', '[']);
    let path = base.join(spec);
    let mut files: Vec<PathBuf> = if is_glob {
        let pattern = path.to_string_lossy().into_owned();
        let paths = glob::glob(&pattern)
            .map_err(|error| Error::Invalid(format!("bad glob `{spec}`: {error}")))?;
        paths
            .filter_map(std::result::Result::ok)
            .filter(|p| p.is_file())
            .collect()
    } else if path.is_dir() {
        let mut found = Vec::new();
        walk(&path, &mut found)?;
        found
    } else if path.is_file() {
        let text = read_text(&path)?;
        return Ok(vec![item(kind, spec.to_owned(), text)]);
    } else {
        return Err(Error::Missing { path });
    };
    files.sort();
    let mut items = Vec::with_capacity(files.len());
    for file in files {
        if let Ok(text) = read_text(&file) {
            let name = file.strip_prefix(base).unwrap_or(&file);
            items.push(item(kind, name.to_string_lossy().into_owned(), text));
        }
    }
    Ok(items)
}

fn item(kind: ItemKind, name: String, text: String) -> ContextItem {
    ContextItem { kind, name, text }
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io("read", dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("read", dir, e))?;
        let path = entry.path();
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if hidden {
            continue;
        }
        if path.is_dir() {
            walk(&path, found)?;
        } else if path.is_file() {
            found.push(path);
        }
    }
    Ok(())
}

fn read_text(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::io("read", path, e))?;
    if bytes.contains(&0) {
        return Err(Error::NotText {
            path: path.to_path_buf(),
            reason: "it contains NUL bytes".into(),
        });
    }
    String::from_utf8(bytes).map_err(|error| Error::NotText {
        path: path.to_path_buf(),
        reason: format!("invalid UTF-8 at byte {}", error.utf8_error().valid_up_to()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_directories_and_globs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/a")).unwrap();
        std::fs::write(dir.path().join("src/a/x.rs"), "x").unwrap();
        std::fs::write(dir.path().join("src/b.rs"), "b").unwrap();
        std::fs::write(dir.path().join("src/bin.rs"), [0u8, 1]).unwrap();
        std::fs::write(dir.path().join("src/c.md"), "c").unwrap();
        let names = |spec| {
            load_items(ItemKind::SourceFiles, spec, dir.path())
                .unwrap()
                .into_iter()
                .map(|item| item.name)
                .collect::<Vec<_>>()
        };
        assert_eq!(names("src/**/*.rs"), ["src/a/x.rs", "src/b.rs"]);
        assert_eq!(names("src"), ["src/a/x.rs", "src/b.rs", "src/c.md"]);
        assert_eq!(names("src/c.md"), ["src/c.md"]);
        let missing = load_items(ItemKind::Notes, "NOTES.md", dir.path()).unwrap_err();
        assert!(matches!(missing, Error::Missing { .. }));
        let binary = load_items(ItemKind::Notes, "src/bin.rs", dir.path()).unwrap_err();
        assert!(matches!(binary, Error::NotText { .. }));
    }
}
