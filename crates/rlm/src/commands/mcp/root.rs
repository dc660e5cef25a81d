//! `--root`: the one directory tool arguments may name paths in.

use std::path::{Component, Path, PathBuf};

#[derive(Clone)]
pub struct Root {
    dir: PathBuf,
}

impl Root {
    /// `dir` made absolute with symlinks resolved (it must exist).
    pub fn new(dir: &Path) -> anyhow::Result<Self> {
        let dir = dir.canonicalize().map_err(|err| {
            crate::error::CliError::input(anyhow::anyhow!(
                "cannot use {} as the root: {err}",
                dir.display()
            ))
            .with_hint("pass an existing directory with --root DIR")
        })?;
        Ok(Self { dir })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `path` (relative to the root, or absolute) as an absolute path inside the root, or the
    /// refusal a client sees. An existing path is resolved through its symlinks, so a link
    /// cannot lead out; a missing one is checked by its components and then reported missing
    /// by the command, as on the command line.
    pub fn inside(&self, path: &str) -> Result<PathBuf, String> {
        if path == "-" {
            return Err(
                "error: `-` (standard input) is not available: the server's standard \
                 input carries the protocol"
                    .to_owned(),
            );
        }
        let joined = self.dir.join(path);
        let resolved = match joined.canonicalize() {
            Ok(resolved) => resolved,
            Err(_) => lexical(&joined),
        };
        if resolved.starts_with(&self.dir) {
            Ok(resolved)
        } else {
            Err(format!(
                "error: {path} is outside the server's root {}\nhint: name paths below the \
                 root, or start `rlm mcp --root DIR` with a wider one",
                self.dir.display()
            ))
        }
    }
}

/// `path` with `.` and `..` applied to its components, without touching the file system.
fn lexical(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    normal
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_outside_the_root_are_refused_and_inside_ones_made_absolute() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("inner")).unwrap();
        std::fs::write(dir.path().join("inner/a.txt"), "a").unwrap();
        let root = Root::new(&dir.path().join("inner")).unwrap();
        let inside = root.inside("a.txt").unwrap();
        assert_eq!(inside, root.dir().join("a.txt"));
        assert_eq!(
            root.inside("missing/../b.txt").unwrap(),
            root.dir().join("b.txt")
        );
        for outside in ["../x", "/etc/passwd", "missing/../../x"] {
            let refusal = root.inside(outside).unwrap_err();
            assert!(refusal.contains("outside the server's root"), "{refusal}");
        }
        assert!(root.inside("-").unwrap_err().contains("standard input"));
    }

    #[test]
    fn a_symlink_out_of_the_root_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("inner")).unwrap();
        std::fs::write(dir.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), dir.path().join("inner/link"))
            .unwrap();
        let root = Root::new(&dir.path().join("inner")).unwrap();
        assert!(root.inside("link").is_err());
    }
}
