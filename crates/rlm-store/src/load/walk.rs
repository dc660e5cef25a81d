//! Turning paths into file sources: directories are walked like ripgrep walks them.

use std::path::{Path, PathBuf};

use super::Source;
use crate::error::{Error, Result, io};

/// How [`collect_sources_with`] walks directories. The default honours `.gitignore`,
/// `.ignore` and hidden-file rules and takes every file.
#[derive(Debug, Clone, Default)]
pub struct WalkOptions {
    /// Also take hidden files and directories (`.git` is still skipped).
    pub hidden: bool,
    /// Do not honour `.gitignore`, `.ignore` and git's exclude files.
    pub no_ignore: bool,
    /// Only files matching one of these globs (ripgrep's `-g` syntax, relative to the walked
    /// directory; `*.py`, `src/**`). As in ripgrep, they take precedence over ignore files
    /// and the hidden-file rule.
    pub include: Vec<String>,
    /// Never files or directories matching one of these globs.
    pub exclude: Vec<String>,
    /// Directories never walked into (the store's own directory, say).
    pub skip: Vec<PathBuf>,
}

/// Expands paths into file sources with the default [`WalkOptions`]: directories are walked
/// honouring `.gitignore`, `.ignore` and hidden-file rules (so a `.rlm` store inside is
/// skipped), sorted by path. Every path names a file or directory (`-` included); a caller
/// that reads standard input passes a [`Source::Reader`] itself.
pub fn collect_sources(paths: &[PathBuf]) -> Result<Vec<Source>> {
    collect_sources_with(paths, &WalkOptions::default())
}

/// Expands paths into file sources, walking directories as `options` say. A file named
/// directly is always taken; globs and ignore rules apply to what a walk finds. Symbolic
/// links found while walking (to files or directories) are never followed, so a walk reads
/// only what lies in the directory it was given.
pub fn collect_sources_with(paths: &[PathBuf], options: &WalkOptions) -> Result<Vec<Source>> {
    let mut sources = Vec::new();
    for path in paths {
        let metadata = std::fs::metadata(path).map_err(io("cannot read", path))?;
        if !metadata.is_dir() {
            sources.push(Source::File {
                path: path.clone(),
                name: display_name(path),
            });
            continue;
        }
        let mut found = walk(path, options)?;
        found.sort();
        sources.extend(found.into_iter().map(|path| Source::File {
            name: display_name(&path),
            path,
        }));
    }
    Ok(sources)
}

fn walk(root: &Path, options: &WalkOptions) -> Result<Vec<PathBuf>> {
    let walk_error = |error: ignore::Error| Error::Io {
        action: "cannot walk",
        path: root.to_owned(),
        source: std::io::Error::other(error.to_string()),
    };
    let mut overrides = ignore::overrides::OverrideBuilder::new(root);
    for glob in options.include.iter().chain(&options.exclude) {
        crate::select::check_glob(glob)?;
    }
    for glob in &options.include {
        overrides.add(glob).map_err(walk_error)?;
    }
    for glob in &options.exclude {
        overrides.add(&format!("!{glob}")).map_err(walk_error)?;
    }
    let skip: Vec<PathBuf> = options
        .skip
        .iter()
        .filter_map(|dir| dir.canonicalize().ok())
        .collect();
    let hidden = options.hidden;
    let walker = ignore::WalkBuilder::new(root)
        .require_git(false)
        .hidden(!options.hidden)
        .ignore(!options.no_ignore)
        .git_ignore(!options.no_ignore)
        .git_exclude(!options.no_ignore)
        .git_global(!options.no_ignore)
        .parents(!options.no_ignore)
        .overrides(overrides.build().map_err(walk_error)?)
        .filter_entry(move |entry| {
            if !entry.file_type().is_some_and(|kind| kind.is_dir()) {
                return true;
            }
            if hidden && entry.file_name() == ".git" {
                return false;
            }
            skip.is_empty()
                || entry
                    .path()
                    .canonicalize()
                    .is_ok_and(|dir| !skip.contains(&dir))
        })
        .build();
    let mut found = Vec::new();
    for entry in walker {
        let entry = entry.map_err(walk_error)?;
        if entry.file_type().is_some_and(|kind| kind.is_file()) {
            // Without the room the walk's join left at its end: the list holds every file
            // found until the load has read it.
            found.push(entry.into_path().into_boxed_path().into_path_buf());
        }
    }
    Ok(found)
}

fn display_name(path: &Path) -> String {
    let text = path.to_string_lossy();
    text.strip_prefix("./").unwrap_or(&text).to_owned()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn names(root: &Path, options: &WalkOptions) -> Vec<String> {
        collect_sources_with(&[root.to_owned()], options)
            .unwrap()
            .iter()
            .map(|source| {
                let name = source.name();
                name.strip_prefix(&*root.to_string_lossy())
                    .unwrap_or(name)
                    .trim_start_matches('/')
                    .to_owned()
            })
            .collect()
    }

    #[test]
    fn walks_honour_ignore_files_hidden_files_and_globs_as_asked() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (path, text) in [
            ("a.py", "x"),
            ("b.md", "x"),
            ("gen/out.py", "x"),
            (".hidden.py", "x"),
            (".git/config", "x"),
            (".rlm/store.sqlite", "x"),
            (".gitignore", "gen/\n"),
        ] {
            std::fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
            std::fs::write(root.join(path), text).unwrap();
        }
        assert_eq!(names(root, &WalkOptions::default()), ["a.py", "b.md"]);
        let everything = WalkOptions {
            hidden: true,
            no_ignore: true,
            skip: vec![root.join(".rlm")],
            ..WalkOptions::default()
        };
        assert_eq!(
            names(root, &everything),
            [".gitignore", ".hidden.py", "a.py", "b.md", "gen/out.py"]
        );
        let python = WalkOptions {
            include: vec!["*.py".into()],
            exclude: vec!["gen/**".into()],
            no_ignore: true,
            ..WalkOptions::default()
        };
        assert_eq!(names(root, &python), [".hidden.py", "a.py"]);
        let not_markdown = WalkOptions {
            exclude: vec!["*.md".into()],
            ..WalkOptions::default()
        };
        assert_eq!(names(root, &not_markdown), ["a.py"]);
    }

    #[test]
    fn links_found_while_walking_are_never_followed() {
        // `rlm mcp --root` relies on this: a directory inside the root may hold links out of
        // it, and a walk must not read through them.
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("root")).unwrap();
        std::fs::create_dir_all(dir.path().join("outside")).unwrap();
        std::fs::write(dir.path().join("outside/secret.txt"), "secret").unwrap();
        std::fs::write(dir.path().join("root/a.txt"), "a").unwrap();
        let link = |target: &str, name: &str| {
            std::os::unix::fs::symlink(dir.path().join(target), dir.path().join(name)).unwrap();
        };
        link("outside/secret.txt", "root/file-link.txt");
        link("outside", "root/dir-link");
        link("root/a.txt", "root/inner-link.txt");
        let everything = WalkOptions {
            hidden: true,
            no_ignore: true,
            ..WalkOptions::default()
        };
        assert_eq!(names(&dir.path().join("root"), &everything), ["a.txt"]);
    }

    #[test]
    fn a_dash_is_an_ordinary_path() {
        let dir = tempfile::tempdir().unwrap();
        let missing = collect_sources(&[PathBuf::from("-")]);
        assert!(matches!(missing, Err(Error::Io { .. })), "{missing:?}");
        std::fs::write(dir.path().join("-"), "dash\n").unwrap();
        let found = collect_sources(&[dir.path().join("-")]).unwrap();
        assert!(matches!(&found[..], [Source::File { .. }]), "{found:?}");
    }
}
