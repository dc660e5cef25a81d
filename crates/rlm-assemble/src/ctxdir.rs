//! The ctx directory on disk: `ctx.json`, part files at the top and in `evidence/`, `build/`.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use rlm_context::root::FileRoot;
use rlm_context::tokens::Tokenizer;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::part::{PartName, Rank, Slot, State};
use crate::provenance::{Provenance, content_id, file_uri};
use crate::selector::Span;

/// File that marks a ctx directory and holds its settings.
pub const CONFIG_FILE: &str = "ctx.json";
/// Folder for evidence parts.
pub const EVIDENCE_DIR: &str = "evidence";
/// Folder for build outputs.
pub const BUILD_DIR: &str = "build";

/// Settings stored in `ctx.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CtxConfig {
    /// Format version of the directory.
    pub version: u32,
    /// Identifier written into the outputs (by default the name of the folder holding `ctx/`).
    pub flow_id: String,
    /// Default tokenizer name.
    pub tokenizer: String,
    /// Default token budget; `None` means unlimited.
    pub budget: Option<u64>,
}

impl CtxConfig {
    /// The configured tokenizer.
    pub fn tokenizer(&self) -> Result<Tokenizer> {
        self.tokenizer
            .parse()
            .map_err(|error: rlm_context::tokens::UnknownTokenizer| {
                Error::Invalid(error.to_string())
            })
    }
}

/// An opened ctx directory.
#[derive(Debug, Clone)]
pub struct CtxDir {
    root: PathBuf,
    /// Its settings.
    pub config: CtxConfig,
    /// The root every file read or written through it must resolve into, if any.
    fence: Option<FileRoot>,
}

/// One part file found by [`CtxDir::scan`].
#[derive(Debug, Clone)]
pub struct PartFile {
    /// Parsed name.
    pub name: PartName,
    /// Full path of the file (or symlink).
    pub path: PathBuf,
}

/// A part with its content loaded.
#[derive(Debug, Clone)]
pub struct LoadedPart {
    /// The file.
    pub file: PartFile,
    /// Provenance: from the header, from the link target, or describing the part file itself.
    pub provenance: Provenance,
    /// Whether the provenance came from a header (added from a source) rather than made up.
    pub has_source: bool,
    /// The content that goes into the prompt.
    pub body: String,
}

/// The parts of a directory, plus files that look like parts but are malformed.
#[derive(Debug, Default)]
pub struct Scan {
    /// Parts sorted by rank, then id.
    pub parts: Vec<PartFile>,
    /// `(file, reason)` for ignored files.
    pub ignored: Vec<(String, String)>,
}

impl CtxDir {
    /// Opens an existing ctx directory; with a `fence`, every file read or written through
    /// it ([`CtxDir::check`]) must resolve inside that root, `ctx.json` first.
    pub fn open(root: &Path, fence: Option<FileRoot>) -> Result<Self> {
        let config_path = root.join(CONFIG_FILE);
        if let Some(fence) = &fence {
            fence.check(&config_path).map_err(Error::OutsideRoot)?;
        }
        let text = match fs::read_to_string(&config_path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::NotInitialized {
                    path: root.to_path_buf(),
                });
            }
            Err(error) => return Err(Error::io("read", config_path, error)),
        };
        let config: CtxConfig = serde_json::from_str(&text).map_err(|source| Error::Json {
            path: config_path,
            source,
        })?;
        config.tokenizer()?;
        Ok(Self {
            root: root.to_path_buf(),
            config,
            fence,
        })
    }

    /// Creates the directory layout and `ctx.json`; an existing config is an error.
    pub fn create(root: &Path, config: CtxConfig) -> Result<Self> {
        if root.join(CONFIG_FILE).exists() {
            return Err(Error::Invalid(format!(
                "{} is already a ctx directory",
                root.display()
            )));
        }
        for dir in [root.to_path_buf(), root.join(EVIDENCE_DIR)] {
            fs::create_dir_all(&dir).map_err(|e| Error::io("create", dir.clone(), e))?;
        }
        let ctx = Self {
            root: root.to_path_buf(),
            config,
            fence: None,
        };
        ctx.save_config()?;
        Ok(ctx)
    }

    /// Writes `ctx.json`.
    pub fn save_config(&self) -> Result<()> {
        let mut text = serde_json::to_string_pretty(&self.config).unwrap_or_default();
        text.push('\n');
        write_atomic(&self.root.join(CONFIG_FILE), text.as_bytes())
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// [`Error::OutsideRoot`] when the directory was opened within a root and `path` (a
    /// file about to be read or written, or a folder about to be listed) resolves outside it.
    pub fn check(&self, path: &Path) -> Result<()> {
        match &self.fence {
            Some(fence) => fence.check(path).map(drop).map_err(Error::OutsideRoot),
            None => Ok(()),
        }
    }

    /// [`read_text`] of a file the directory leads to, once [`CtxDir::check`] allows it.
    pub fn read_text(&self, path: &Path) -> Result<String> {
        self.check(path)?;
        read_text(path)
    }

    /// `build/` inside the directory.
    pub fn build_dir(&self) -> PathBuf {
        self.root.join(BUILD_DIR)
    }

    /// The folder a part of this slot lives in.
    pub fn folder_for(&self, slot: Slot) -> PathBuf {
        match slot {
            Slot::Evidence => self.root.join(EVIDENCE_DIR),
            Slot::System | Slot::User => self.root.clone(),
        }
    }

    /// Lists the parts in the top folder and `evidence/`, sorted by rank then id.
    pub fn scan(&self) -> Result<Scan> {
        let mut scan = Scan::default();
        for dir in [self.root.clone(), self.root.join(EVIDENCE_DIR)] {
            // Not even the names in a folder that leads out of the root are listed.
            self.check(&dir)?;
            let entries = match fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
                Err(error) => return Err(Error::io("list", dir, error)),
            };
            for entry in entries {
                let entry = entry.map_err(|e| Error::io("list", dir.clone(), e))?;
                let file_name = entry.file_name().to_string_lossy().into_owned();
                if file_name.starts_with('.') || file_name == CONFIG_FILE {
                    continue;
                }
                match PartName::parse(&file_name) {
                    Ok(Some(name)) => scan.parts.push(PartFile {
                        name,
                        path: entry.path(),
                    }),
                    Ok(None) => {}
                    Err(error) => scan.ignored.push((file_name, error.to_string())),
                }
            }
        }
        scan.parts
            .sort_by_cached_key(|p| (p.name.rank, p.name.id(), p.path.clone()));
        scan.ignored.sort();
        Ok(scan)
    }

    /// Reads a part's content and provenance.
    pub fn load(&self, file: &PartFile) -> Result<LoadedPart> {
        if file.name.state == State::Linked {
            // Checked before it is resolved, so a link out of the root is refused whether or
            // not its target exists.
            self.check(&file.path)?;
            let target = fs::canonicalize(&file.path).map_err(|_| Error::Missing {
                path: fs::read_link(&file.path).unwrap_or_else(|_| file.path.clone()),
            })?;
            let body = read_text(&target)?;
            let provenance = Provenance {
                source_uri: file_uri(&target),
                path: link_display(&self.root, &target),
                cid: content_id(body.as_bytes()),
                span: Span::All,
                tags: Vec::new(),
            };
            return Ok(LoadedPart {
                file: file.clone(),
                provenance,
                has_source: true,
                body,
            });
        }
        let text = self.read_text(&file.path)?;
        let (header, body) = Provenance::split(&text);
        let has_source = header.is_some();
        let provenance = header.unwrap_or_else(|| {
            let display = file
                .path
                .strip_prefix(&self.root)
                .unwrap_or(&file.path)
                .to_string_lossy()
                .into_owned();
            Provenance {
                source_uri: file_uri(&absolute(&file.path)),
                path: display,
                cid: content_id(body.as_bytes()),
                span: Span::All,
                tags: Vec::new(),
            }
        });
        let body = body.to_owned();
        Ok(LoadedPart {
            file: file.clone(),
            provenance,
            has_source,
            body,
        })
    }

    /// The path a part with this name would have.
    pub fn path_for(&self, name: &PartName) -> PathBuf {
        self.folder_for(name.slot).join(name.file_name())
    }

    /// Whether a part with this id (any state) exists.
    pub fn id_taken(&self, scan: &Scan, rank: Rank, kind: &str, slot: Slot) -> bool {
        scan.parts
            .iter()
            .any(|p| p.name.rank == rank && p.name.kind == kind && p.name.slot == slot)
    }
}

/// A link part is shown by its target relative to the folder holding the ctx directory (the
/// project, usually), or by its absolute path when it lies outside.
fn link_display(root: &Path, target: &Path) -> String {
    let project = fs::canonicalize(root)
        .ok()
        .and_then(|root| root.parent().map(Path::to_path_buf));
    let shown = project
        .as_deref()
        .and_then(|project| target.strip_prefix(project).ok())
        .unwrap_or(target);
    shown.to_string_lossy().into_owned()
}

/// An absolute form of `path` without resolving symlinks.
pub fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Reads a file as UTF-8 text, rejecting binary files (a NUL byte) and invalid UTF-8.
pub fn read_text(path: &Path) -> Result<String> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::Missing {
                path: path.to_path_buf(),
            });
        }
        Err(error) => return Err(Error::io("read", path, error)),
    };
    if let Some(at) = memchr::memchr(0, &bytes) {
        return Err(Error::NotText {
            path: path.to_path_buf(),
            reason: format!("binary: NUL byte at offset {at}"),
        });
    }
    String::from_utf8(bytes).map_err(|error| Error::NotText {
        path: path.to_path_buf(),
        reason: format!("invalid UTF-8 at byte {}", error.utf8_error().valid_up_to()),
    })
}

/// Writes a file by writing a temporary sibling and renaming it over the target, so a reader or an
/// interrupted command never sees half a file. There is deliberately no fsync: these are
/// rebuildable working files, and an fsync per part made adding 1,000 files take seconds.
/// The temporary file is always a new one (a link left under its name is removed, never
/// written through), and the rename replaces a link at `path` rather than following it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let file_name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temporary = dir.join(format!(".{file_name}.tmp{}", std::process::id()));
    let result = (|| {
        let _ = fs::remove_file(&temporary);
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)?;
        file.write_all(bytes)?;
        drop(file);
        fs::rename(&temporary, path)
    })();
    if let Err(error) = result {
        let _ = fs::remove_file(&temporary);
        return Err(Error::io("write", path, error));
    }
    Ok(())
}

/// Renames a part file (atomic on one filesystem).
pub fn rename(from: &Path, to: &Path) -> Result<()> {
    fs::rename(from, to).map_err(|error| Error::io("rename", from, error))
}
