//! A directory that files must stay in: [`FileRoot`].
//!
//! A server that lets a client name files (`rlm mcp --root DIR`) must make sure that every
//! file it then opens, the one named and every one that file leads to (a part a ctx
//! directory lists, a link target, a store's database), lies inside its root *after following
//! symbolic links*: a checked-out repository can ship a link to `~/.ssh`. The libraries that
//! open files take an optional `FileRoot` and check each path with [`FileRoot::check`] before
//! they open it; without one they open what they are given, as a command line tool does.
//!
//! A check and an open by name leave a window: another process can swap a checked file (or a
//! directory above it) for a link out between the two. [`FileRoot::open`] closes it for
//! reads: it opens the checked path from a descriptor of the root with the kernel refusing
//! every step out of it (`openat2` with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`, Linux 5.6
//! on), or, where the kernel lacks `openat2`, walking the path one component at a time from
//! the root with `O_NOFOLLOW`, so that a link appearing where the check saw none is refused.
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

use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{Mode, OFlags, ResolveFlags};

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

/// Why [`FileRoot::open`] gave no file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The path leads out of the root, or tried to while it was opened.
    #[error(transparent)]
    Outside(#[from] OutsideRoot),
    /// The file could not be opened (missing, unreadable, a directory).
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// How [`FileRoot::open`] opened the last file, for tests and diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenedBy {
    /// `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`.
    Openat2,
    /// A walk from the root, one `O_NOFOLLOW` component at a time.
    Walk,
}

impl FileRoot {
    /// Opens `path` for reading when it lies in the root or an allowed directory, with no
    /// window between the check and the open (see the module docs): the path is checked as
    /// [`FileRoot::check`] does, then opened from a descriptor of the directory it lies in,
    /// the kernel refusing any step out of that directory (a file or a directory above it
    /// swapped for a link out since the check is [`OpenError::Outside`]).
    pub fn open(&self, path: &Path) -> Result<File, OpenError> {
        self.open_by(path).map(|(file, _)| file)
    }

    /// [`FileRoot::open`], saying which way the file was opened.
    pub fn open_by(&self, path: &Path) -> Result<(File, OpenedBy), OpenError> {
        let resolved = self.check(path)?;
        let outside = || OutsideRoot {
            path: path.to_owned(),
            root: self.dir.clone(),
        };
        let base = std::iter::once(&self.dir)
            .chain(&self.also)
            .find(|dir| resolved.starts_with(dir))
            .ok_or_else(outside)?;
        let relative = resolved.strip_prefix(base).map_err(|_| outside())?;
        let (fd, by) = open_beneath(base, relative).map_err(|err| match err {
            Beneath::Escaped => OpenError::Outside(outside()),
            Beneath::Io(err) => OpenError::Io(err),
        })?;
        Ok((File::from(fd), by))
    }
}

/// Why a file was not opened beneath a directory.
#[derive(Debug)]
enum Beneath {
    /// A step led out of it (or through a link where the check saw none).
    Escaped,
    Io(io::Error),
}

impl From<rustix::io::Errno> for Beneath {
    fn from(errno: rustix::io::Errno) -> Self {
        Self::Io(errno.into())
    }
}

/// Opens `relative` (no `..`, no links when it was checked) below `base` for reading, with
/// `openat2` where the kernel has it, else by a walk of `O_NOFOLLOW` opens.
fn open_beneath(base: &Path, relative: &Path) -> Result<(OwnedFd, OpenedBy), Beneath> {
    let dir = rustix::fs::open(
        base,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY;
    let target = if relative.as_os_str().is_empty() {
        Path::new(".")
    } else {
        relative
    };
    match rustix::fs::openat2(
        &dir,
        target,
        flags,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
    ) {
        Ok(fd) => Ok((fd, OpenedBy::Openat2)),
        Err(rustix::io::Errno::XDEV) => Err(Beneath::Escaped),
        // No `openat2` (Linux before 5.6, or a filter refusing it): the walk.
        Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => {
            walk_beneath(&dir, relative).map(|fd| (fd, OpenedBy::Walk))
        }
        Err(errno) => Err(errno.into()),
    }
}

/// Opens `relative` below `dir` one component at a time, never following a link: the path had
/// none when it was checked, so a link now is a swap, refused.
fn walk_beneath(dir: &OwnedFd, relative: &Path) -> Result<OwnedFd, Beneath> {
    let names: Vec<&std::ffi::OsStr> = relative
        .components()
        .map(|component| match component {
            Component::Normal(name) => Ok(name),
            _ => Err(Beneath::Escaped),
        })
        .collect::<Result<_, _>>()?;
    let Some((last, parents)) = names.split_last() else {
        return Ok(rustix::fs::openat(
            dir,
            ".",
            OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )?);
    };
    let mut current: Option<OwnedFd> = None;
    for name in parents {
        let from = current.as_ref().unwrap_or(dir);
        let next = rustix::fs::openat(
            from,
            *name,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|errno| match errno {
            // A link where a directory was (`O_PATH | O_NOFOLLOW` opens the link itself, which
            // `O_DIRECTORY` then refuses).
            rustix::io::Errno::NOTDIR | rustix::io::Errno::LOOP => Beneath::Escaped,
            other => other.into(),
        })?;
        current = Some(next);
    }
    let from = current.as_ref().unwrap_or(dir);
    rustix::fs::openat(
        from,
        *last,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )
    .map_err(|errno| match errno {
        rustix::io::Errno::LOOP => Beneath::Escaped,
        other => other.into(),
    })
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
                    // Nothing there this process can reach: missing, a name or path too long
                    // to exist, a file where a directory would be, a directory it may not
                    // search. An open would fail the same way, saying why, so the rest is
                    // checked by where it would be rather than refused as outside.
                    Err(err)
                        if matches!(
                            err.kind(),
                            io::ErrorKind::NotFound
                                | io::ErrorKind::InvalidFilename
                                | io::ErrorKind::NotADirectory
                                | io::ErrorKind::PermissionDenied
                        ) =>
                    {
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

    /// A path too long for the file system, or through a file, is not outside the root: it
    /// is checked by where it would be, and opening it says what is wrong.
    #[test]
    fn a_path_that_cannot_exist_is_not_called_outside() {
        let (dir, root) = layout();
        for name in ["a".repeat(300), format!("{}/x", "b".repeat(200)).repeat(30)] {
            let path = dir.path().join("root").join(&name);
            assert!(root.check(&path).is_ok(), "{}", name.len());
            let Err(OpenError::Io(err)) = root.open(&path) else {
                panic!("{} opened", name.len());
            };
            assert_eq!(err.kind(), io::ErrorKind::InvalidFilename, "{err}");
        }
        let through_a_file = dir.path().join("root/sub/inside.txt/more");
        assert!(root.check(&through_a_file).is_ok());
        assert!(matches!(root.open(&through_a_file), Err(OpenError::Io(_))));
    }

    #[test]
    fn a_loop_of_links_is_refused() {
        let (dir, root) = layout();
        symlink("b", dir.path().join("root/a")).unwrap();
        symlink("a", dir.path().join("root/b")).unwrap();
        assert!(root.check(&dir.path().join("root/a")).is_err());
    }

    /// Inside files open (through a link that stays inside too); a link out is refused.
    #[test]
    fn open_reads_what_the_check_allows() {
        let (dir, root) = layout();
        let mut text = String::new();
        let named = dir.path().join("root/sub/inside.txt");
        let (mut file, by) = root.open_by(&named).unwrap();
        std::io::Read::read_to_string(&mut file, &mut text).unwrap();
        assert_eq!(text, "in");
        // This kernel has openat2 (Linux 5.6+); the walk is tested below either way.
        assert_eq!(by, OpenedBy::Openat2);
        symlink("sub/inside.txt", dir.path().join("root/link")).unwrap();
        assert!(root.open(&dir.path().join("root/link")).is_ok());
        symlink(dir.path().join("outside.txt"), dir.path().join("root/leak")).unwrap();
        assert!(matches!(
            root.open(&dir.path().join("root/leak")),
            Err(OpenError::Outside(_))
        ));
        assert!(matches!(
            root.open(&dir.path().join("root/missing.txt")),
            Err(OpenError::Io(err)) if err.kind() == io::ErrorKind::NotFound
        ));
    }

    /// The race `open` closes: the path is checked, then a directory on it is swapped for a
    /// link out before the open. Both ways of opening refuse it.
    #[test]
    fn a_directory_swapped_for_a_link_after_the_check_is_refused() {
        let (dir, root) = layout();
        std::fs::create_dir(dir.path().join("elsewhere")).unwrap();
        std::fs::write(dir.path().join("elsewhere/inside.txt"), "secret").unwrap();
        let base = root.dir().to_path_buf();
        let checked = root.check(&dir.path().join("root/sub/inside.txt")).unwrap();
        let relative = checked.strip_prefix(&base).unwrap().to_path_buf();
        // The swap, after the check.
        std::fs::rename(dir.path().join("root/sub"), dir.path().join("root/old")).unwrap();
        symlink(dir.path().join("elsewhere"), dir.path().join("root/sub")).unwrap();
        assert!(matches!(
            open_beneath(&base, &relative),
            Err(Beneath::Escaped)
        ));
        let dir_fd = rustix::fs::open(
            &base,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        assert!(matches!(
            walk_beneath(&dir_fd, &relative),
            Err(Beneath::Escaped)
        ));
        // The file itself swapped for a link: refused by the walk too.
        std::fs::remove_file(dir.path().join("root/sub")).unwrap();
        std::fs::rename(dir.path().join("root/old"), dir.path().join("root/sub")).unwrap();
        std::fs::remove_file(dir.path().join("root/sub/inside.txt")).unwrap();
        symlink(
            dir.path().join("outside.txt"),
            dir.path().join("root/sub/inside.txt"),
        )
        .unwrap();
        assert!(matches!(
            walk_beneath(&dir_fd, &relative),
            Err(Beneath::Escaped)
        ));
        assert!(matches!(
            open_beneath(&base, &relative),
            Err(Beneath::Escaped)
        ));
        // And unswapped, the walk reads it.
        std::fs::remove_file(dir.path().join("root/sub/inside.txt")).unwrap();
        std::fs::write(dir.path().join("root/sub/inside.txt"), "in").unwrap();
        let fd = walk_beneath(&dir_fd, &relative).unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut File::from(fd), &mut text).unwrap();
        assert_eq!(text, "in");
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
