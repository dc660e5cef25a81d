//! `--root`: the one directory tool arguments may name paths in, and the fence every file a
//! tool then reads or writes must resolve into.
//!
//! Arguments are checked here ([`Root::inside`]). What they lead to (the parts of a ctx
//! directory, a store's database and index, the project file) is checked by the commands
//! themselves against [`Root::fence`], which `call.rs` hands them in their `Sources`; both
//! refuse with `rlm_context::root::OutsideRoot`'s one message.

use std::path::{Path, PathBuf};

use rlm_context::root::{FileRoot, OutsideRoot};

use rlm_app::error::OUTSIDE_ROOT_HINT;

#[derive(Clone)]
pub struct Root {
    /// The root itself: where arguments may point.
    named: FileRoot,
    /// The root and the store the operator named, if any: where commands may read and write.
    fence: FileRoot,
}

impl Root {
    /// `dir` made absolute with symlinks resolved (it must exist).
    pub fn new(dir: &Path) -> anyhow::Result<Self> {
        let named = FileRoot::new(dir).map_err(|err| {
            rlm_app::error::AppError::input(anyhow::anyhow!(
                "cannot use {} as the root: {err}",
                dir.display()
            ))
            .with_hint("pass an existing directory with --root DIR")
        })?;
        Ok(Self {
            fence: named.clone(),
            named,
        })
    }

    /// This root with the store the operator started the server with (`--store`,
    /// `RLM_STORE`) allowed to the commands wherever it lies: the operator chose it, as the
    /// root. Tool arguments still name paths below the root only.
    #[must_use]
    pub fn with_store(mut self, store: &Path) -> Self {
        self.fence = self.fence.also_allow(store);
        self
    }

    pub fn dir(&self) -> &Path {
        self.named.dir()
    }

    /// Where the commands a tool runs may read and write files.
    pub fn fence(&self) -> &FileRoot {
        &self.fence
    }

    /// `path` (relative to the root, or absolute) as an absolute path inside the root, or the
    /// refusal a client sees. An existing path is resolved through its symlinks, so a link
    /// cannot lead out; a missing one is checked by where it would be and then reported
    /// missing by the command, as on the command line.
    pub fn inside(&self, path: &str) -> Result<PathBuf, String> {
        if path == "-" {
            return Err(
                "error: `-` (standard input) is not available: the server's standard \
                 input carries the protocol"
                    .to_owned(),
            );
        }
        if path.contains('\0') {
            return Err(format!(
                "error: {path:?} contains a NUL character, which no file name can\nhint: name \
                 files below the root by their paths"
            ));
        }
        self.named
            .check(&self.dir().join(path))
            .map_err(|outside| refusal(path, &outside))
    }
}

/// The text a client sees for an argument outside the root, naming it as it was given.
fn refusal(path: &str, outside: &OutsideRoot) -> String {
    let named = OutsideRoot {
        path: PathBuf::from(path),
        root: outside.root.clone(),
    };
    format!("error: {named}\nhint: {OUTSIDE_ROOT_HINT}")
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
            assert_eq!(
                refusal,
                format!(
                    "error: {outside} is outside the server's root {}\nhint: \
                     {OUTSIDE_ROOT_HINT}",
                    root.dir().display()
                )
            );
        }
        assert!(root.inside("-").unwrap_err().contains("standard input"));
        assert!(root.inside("a\0b").unwrap_err().contains("NUL"));
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

    #[test]
    fn the_operators_store_is_allowed_to_commands_but_not_to_arguments() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("inner")).unwrap();
        std::fs::create_dir_all(dir.path().join("store")).unwrap();
        let root = Root::new(&dir.path().join("inner"))
            .unwrap()
            .with_store(&dir.path().join("store"));
        let store_file = dir.path().join("store/store.sqlite");
        assert!(root.fence().check(&store_file).is_ok());
        assert!(root.inside(store_file.to_str().unwrap()).is_err());
        assert!(root.fence().check(&dir.path().join("elsewhere")).is_err());
    }
}
