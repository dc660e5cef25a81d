//! Settings of the store commands: where the store lives, how to chunk, what to search.
//!
//! `rlm list`, `show`, `peek`, `grep`, `delete` and `status` need only [`StoreSettings`];
//! `rlm load` and `rlm search` have their own settings around it.

use std::path::{Path, PathBuf};

use rlm_context::chunk::ChunkOptions;
use rlm_context::root::FileRoot;
use rlm_store::{Store, WalkOptions};

use super::{Sources, catalog};
use crate::error::{AppError, input_error};
use crate::requests::{ChunkingOptions, LoadRequest, SearchRequest};

/// Default store directory, relative to the current directory.
pub const DEFAULT_STORE_DIR: &str = ".rlm";

/// Where the store lives: the front end's (`--store`) > `RLM_STORE` > `.rlm` in the current
/// directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreSettings {
    pub dir: PathBuf,
    /// The root the store's files must resolve into (`rlm mcp --root`), if any.
    pub root: Option<FileRoot>,
}

impl StoreSettings {
    pub fn resolve(sources: &Sources) -> Self {
        Self::at(sources.store_flag().map(Path::to_path_buf), sources)
    }

    /// The store at `dir` when given, else where [`StoreSettings::resolve`] finds it.
    pub fn at(dir: Option<PathBuf>, sources: &Sources) -> Self {
        Self {
            dir: catalog::STORE.environment_path(dir, sources).value,
            root: sources.root().cloned(),
        }
    }

    /// Opens the store, creating it if needed.
    pub fn open(&self) -> anyhow::Result<Store> {
        let opened = match &self.root {
            Some(root) => Store::open_within(&self.dir, root),
            None => Store::open(&self.dir),
        };
        opened.map_err(|err| {
            crate::error::store_error(err)
                .context(format!("cannot open the store at {}", self.dir.display()))
        })
    }

    /// Opens a store that must already exist (read-only commands should not create one).
    pub fn open_existing(&self) -> anyhow::Result<Store> {
        self.require_existing()?;
        self.open()
    }

    /// An input error unless the directory holds a store (or what is left of one: a search
    /// index without its database is reported as damage when opened).
    pub fn require_existing(&self) -> anyhow::Result<()> {
        if !self.dir.join("store.sqlite").is_file() && !self.dir.join("bm25/meta.json").is_file() {
            return Err(
                AppError::input(anyhow::anyhow!("no store at {}", self.dir.display()))
                    .with_hint("load something first with `rlm load PATH`, or pass --store DIR")
                    .into(),
            );
        }
        Ok(())
    }
}

/// Chunking options from `--chunker`, `--chunk-size`, `--overlap` and `--unit`, validated.
pub fn chunk_options(args: &ChunkingOptions) -> anyhow::Result<ChunkOptions> {
    let options = ChunkOptions {
        strategy: args.chunker,
        size: args.chunk_size,
        overlap: args.overlap,
        unit: args.unit,
    };
    options.validate().map_err(|err| {
        AppError::input(err).with_hint("use --chunk-size N with --overlap below N")
    })?;
    Ok(options)
}

/// New text up to which `rlm load` embeds by itself (MiB): a static model embeds about
/// 1 MiB/s on two cores, so larger loads would wait minutes for vectors nobody asked for.
pub const DEFAULT_EMBED_AUTO_LIMIT_MB: u64 = 16;

/// When `rlm load` computes vectors for the chunks it added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbedOnLoad {
    /// `--no-embed`: never; `rlm embed` does it later.
    Never,
    /// `--embed`: always, with whatever model is chosen (a dense one too).
    Always,
    /// Default: with a static model, when the load added at most `max_bytes` of text.
    Auto { max_bytes: u64 },
}

/// What `rlm load` does.
#[derive(Debug, Clone)]
pub struct LoadSettings {
    pub store: StoreSettings,
    pub chunking: ChunkOptions,
    /// Buffer name for a single source.
    pub name: Option<String>,
    /// Whether to embed the new chunks after loading.
    pub embed: EmbedOnLoad,
    /// `--model`; the rest of the embedding settings are resolved only if a model is needed.
    pub embedding_model: Option<String>,
    /// How directories are walked (`--include`, `--exclude`, `--hidden`, `--no-ignore`); the
    /// store's own directory is never walked.
    pub walk: WalkOptions,
}

impl LoadSettings {
    pub fn resolve(args: &LoadRequest, sources: &Sources) -> anyhow::Result<Self> {
        let store = StoreSettings::resolve(sources);
        let walk = WalkOptions {
            hidden: args.hidden,
            no_ignore: args.no_ignore,
            include: args.include.clone(),
            exclude: args.exclude.clone(),
            skip: vec![store.dir.clone()],
        };
        Ok(Self {
            chunking: chunk_options(&args.chunking)?,
            store,
            name: args.name.clone(),
            embed: if args.no_embed {
                EmbedOnLoad::Never
            } else if args.embed {
                EmbedOnLoad::Always
            } else {
                let mib = catalog::EMBED_LOAD_AUTO_LIMIT_MB.read(sources)?.value;
                EmbedOnLoad::Auto {
                    max_bytes: mib.saturating_mul(1024 * 1024),
                }
            },
            embedding_model: args.model.clone(),
            walk,
        })
    }
}

/// What `rlm search` does.
#[derive(Debug, Clone)]
pub struct SearchSettings {
    pub store: StoreSettings,
    pub request: rlm_store::SearchRequest,
    /// `--model`; the rest of the embedding settings are resolved only if vectors are searched.
    pub embedding_model: Option<String>,
}

impl SearchSettings {
    pub fn resolve(args: &SearchRequest, sources: &Sources) -> anyhow::Result<Self> {
        crate::requests::checks::range("--top", args.k, 1..=10_000)?;
        if !(args.rrf_k.is_finite() && args.rrf_k >= 0.0) {
            return Err(input_error("--rrf-k must be a finite number ≥ 0").into());
        }
        Ok(Self {
            store: StoreSettings::resolve(sources),
            request: rlm_store::SearchRequest {
                // Unquoted words are one query: `rlm search profile cache`.
                query: args.query.join(" "),
                mode: args.mode,
                limit: args.k as usize,
                buffers: args.buffers.clone(),
                path_glob: args.path_glob.clone(),
                rrf_k: args.rrf_k,
            },
            embedding_model: args.model.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::tests::Layout;

    #[test]
    fn store_directory_is_flag_then_env_then_default() {
        let layout = Layout::new(None, None);
        let sources = layout.sources(&[]);
        assert_eq!(StoreSettings::resolve(&sources).dir, PathBuf::from(".rlm"));
        let sources = layout.sources(&[("RLM_STORE", "/env/store")]);
        assert_eq!(
            StoreSettings::resolve(&sources).dir,
            PathBuf::from("/env/store")
        );
        let flagged = layout
            .sources(&[("RLM_STORE", "/env/store")])
            .with_store(PathBuf::from("/flag"));
        assert_eq!(StoreSettings::resolve(&flagged).dir, PathBuf::from("/flag"));
    }

    #[test]
    fn overlap_must_stay_below_the_chunk_size() {
        let args = ChunkingOptions {
            chunker: rlm_context::chunk::Strategy::Fixed,
            chunk_size: 10,
            overlap: 10,
            unit: rlm_context::chunk::SizeUnit::Chars,
        };
        assert!(chunk_options(&args).is_err());
        let args = ChunkingOptions { overlap: 3, ..args };
        assert_eq!(chunk_options(&args).unwrap().overlap, 3);
    }
}
