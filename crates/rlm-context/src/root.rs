//! A directory that files must stay in: [`FileRoot`].
//!
//! A server that lets a client name files (`rlm mcp --root DIR`) must make sure that every
//! file it then opens, the one named and every one that file leads to (a part a ctx
//! directory lists, a link target, a store's database), lies inside its root *after following
//! symbolic links*: a checked-out repository can ship a link to `~/.ssh`. The libraries that
//! open files take an optional `FileRoot` and check each path with [`FileRoot::check`] before
//! they open it; without one they open what they are given, as a command line tool does.
//!
//! ```
//! use rlm_context::root::FileRoot;
//!
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("notes.md"), "inside")?;
//! let root = FileRoot::new(dir.path())?;
//! assert!(root.check(&dir.path().join("notes.md")).is_ok());
//! // Missing files are checked by where they would be, so outputs can be checked too.
//! assert!(root.check(&dir.path().join("build/prompt.mdctx")).is_ok());
//! let outside = root.check(&dir.path().join("../elsewhere")).unwrap_err();
//! assert!(outside.to_string().contains("is outside the server's root"));
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io;
use std::path::{Component, Path, PathBuf};

/// How many symbolic links one path may pass through (Linux's `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// A directory, absolute with its links resolved, that checked paths must resolve into; and
/// other directories allowed as well (a store the operator placed elsewhere).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRoot {
    dir: PathBuf,
    also: Vec<PathBuf>,
}

/// A path that leads outside a [`FileRoot`] (or cannot be shown to stay inside it: a loop of
/// links). Its message is the one a client sees for every such path, named or reached.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} is outside the server's root {}", path.display(), root.display())]
pub struct OutsideRoot {
    /// The path as it was named or found.
    pub path: PathBuf,
    /// The root directory.
    pub root: PathBuf,
}

impl FileRoot {
    /// `dir` (which must exist) made absolute with its links resolved.
    pub fn new(dir: impl AsRef<Path>) -> io::Result<Self> {
        Ok(Self {
            dir: dir.as_ref().canonicalize()?,
            also: Vec::new(),
        })
    }

    /// These bounds with `dir` and what lies below it allowed too (resolved now; it need not
    /// exist yet).
    #[must_use]
    pub fn also_allow(mut self, dir: &Path) -> Self {
        if let Ok(resolved) = resolve(dir) {
            self.also.push(resolved);
        }
        self
    }

    /// The root directory, absolute with its links resolved.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `path` (relative ones from the current directory, as the file system takes them)
    /// resolved through every symbolic link, when that lies in the root or an allowed
    /// directory. A path that does not exist (yet) is resolved as far as it exists and checked
    /// by where it would be, so a file about to be written is checked too; a dangling link is
    /// followed to where it points.
    pub fn check(&self, path: &Path) -> Result<PathBuf, OutsideRoot> {
        let outside = || OutsideRoot {
            path: path.to_owned(),
            root: self.dir.clone(),
        };
        let resolved = resolve(path).map_err(|_| outside())?;
        let inside = std::iter::once(&self.dir)
            .chain(&self.also)
            .any(|dir| resolved.starts_with(dir));
        if inside { Ok(resolved) } else { Err(outside()) }
    }
}

/// `path` made absolute with every symbolic link it passes through resolved, like
/// `realpath`, except that a missing tail is kept (lexically normalised) instead of failing.
fn resolve(path: &Path) -> io::Result<PathBuf> {
    if let Ok(resolved) = path.canonicalize() {
        return Ok(resolved);
    }
    let mut links = 0;
    resolve_from(&std::path::absolute(path)?, &mut links)
}

fn resolve_from(path: &Path, links: &mut usize) -> io::Result<PathBuf> {
    let mut resolved = PathBuf::from("/");
    // Once a component is missing, nothing after it exists either: the rest is lexical.
    let mut missing = false;
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => resolved = PathBuf::from("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                // `resolved` has no links left in it, so its parent is the real one.
                resolved.pop();
            }
            Component::Normal(name) => {
                let next = resolved.join(name);
                if missing {
                    resolved = next;
                    continue;
                }
                match std::fs::symlink_metadata(&next) {
                    Ok(metadata) if metadata.file_type().is_symlink() => {
                        *links += 1;
                        if *links > MAX_LINKS {
                            return Err(io::Error::other("too many levels of symbolic links"));
                        }
                        let target = std::fs::read_link(&next)?;
                        resolved = resolve_from(&resolved.join(target), links)?;
                    }
                    Ok(_) => resolved = next,
                    Err(err) if err.kind() == io::ErrorKind::NotFound => {
                        missing = true;
                        resolved = next;
                    }
                    Err(err) => return Err(err),
                }
            }
        }
    }
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    /// `root/` inside a scratch directory, `outside.txt` beside it.
    fn layout() -> (tempfile::TempDir, FileRoot) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("root/sub")).unwrap();
        std::fs::write(dir.path().join("root/sub/inside.txt"), "in").unwrap();
        std::fs::write(dir.path().join("outside.txt"), "secret").unwrap();
        let root = FileRoot::new(dir.path().join("root")).unwrap();
        (dir, root)
    }

    #[test]
    fn files_inside_are_returned_resolved() {
        let (dir, root) = layout();
        let named = dir.path().join("root/sub/../sub/inside.txt");
        assert_eq!(
            root.check(&named).unwrap(),
            root.dir().join("sub/inside.txt")
        );
        symlink("sub/inside.txt", dir.path().join("root/link")).unwrap();
        assert_eq!(
            root.check(&dir.path().join("root/link")).unwrap(),
            root.dir().join("sub/inside.txt")
        );
    }

    #[test]
    fn a_link_out_of_the_root_is_refused_with_the_one_message() {
        let (dir, root) = layout();
        symlink(dir.path().join("outside.txt"), dir.path().join("root/leak")).unwrap();
        symlink("../..", dir.path().join("root/sub/up")).unwrap();
        for path in [
            "root/leak",
            "root/sub/up/outside.txt",
            "root/../outside.txt",
        ] {
            let refused = root.check(&dir.path().join(path)).unwrap_err();
            assert_eq!(refused.path, dir.path().join(path));
            assert_eq!(
                refused.to_string(),
                format!(
                    "{} is outside the server's root {}",
                    dir.path().join(path).display(),
                    root.dir().display()
                )
            );
        }
    }

    #[test]
    fn missing_files_are_checked_by_where_they_would_be() {
        let (dir, root) = layout();
        let planned = dir.path().join("root/build/prompt.mdctx");
        assert_eq!(
            root.check(&planned).unwrap(),
            root.dir().join("build/prompt.mdctx")
        );
        // A directory that is a link out makes everything written below it outside.
        symlink(dir.path(), dir.path().join("root/out")).unwrap();
        assert!(root.check(&dir.path().join("root/out/new/file")).is_err());
        // A dangling link is followed to where writing through it would create a file.
        symlink(dir.path().join("created"), dir.path().join("root/dangling")).unwrap();
        assert!(root.check(&dir.path().join("root/dangling")).is_err());
        symlink("sub/later.txt", dir.path().join("root/pending")).unwrap();
        assert_eq!(
            root.check(&dir.path().join("root/pending")).unwrap(),
            root.dir().join("sub/later.txt")
        );
    }

    #[test]
    fn a_loop_of_links_is_refused() {
        let (dir, root) = layout();
        symlink("b", dir.path().join("root/a")).unwrap();
        symlink("a", dir.path().join("root/b")).unwrap();
        assert!(root.check(&dir.path().join("root/a")).is_err());
    }

    #[test]
    fn an_allowed_directory_counts_as_inside() {
        let (dir, root) = layout();
        std::fs::create_dir(dir.path().join("store")).unwrap();
        let store = dir.path().join("store/store.sqlite");
        assert!(root.check(&store).is_err());
        let root = root.also_allow(&dir.path().join("store"));
        assert!(root.check(&store).is_ok());
        assert!(root.check(&dir.path().join("outside.txt")).is_err());
    }
}
