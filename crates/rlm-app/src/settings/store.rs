//! Settings of the store commands: where the store lives, how to chunk, what to search.
//!
//! `rlm list`, `show`, `peek`, `grep`, `delete` and `status` need only [`StoreSettings`];
//! `rlm load` and `rlm search` have their own settings around it.

use std::path::{Path, PathBuf};

use rlm_context::chunk::ChunkOptions;
use rlm_context::root::FileRoot;
use rlm_store::{PostgresLocation, Store, WalkOptions};

use super::{Sources, catalog, env};
use crate::error::{AppError, input_error};
use crate::requests::{ChunkingOptions, LoadRequest, SearchRequest};

/// Default store directory, relative to the current directory.
pub const DEFAULT_STORE_DIR: &str = ".rlm";

/// Where the store lives: the front end's (`--store`) > `RLM_STORE` > `[store] url` in the
/// configuration files > `.rlm` in the current
/// directory; a directory, or a PostgreSQL URL (`postgres://USER@HOST/DATABASE?schema=NAME`)
/// whose password comes from the URL, `PGPASSWORD` or the password file (`PGPASSFILE`,
/// `~/.pgpass`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreSettings {
    pub location: rlm_store::StoreLocation,
    /// The root the store's files must resolve into (`rlm mcp --root`), if any.
    pub root: Option<FileRoot>,
}

impl StoreSettings {
    pub fn resolve(sources: &Sources) -> anyhow::Result<Self> {
        Self::at(sources.store_flag().map(Path::to_path_buf), sources)
    }

    /// The store at `place` (a directory or a PostgreSQL URL) when given, else where
    /// [`StoreSettings::resolve`] finds it.
    pub fn at(place: Option<PathBuf>, sources: &Sources) -> anyhow::Result<Self> {
        let value = catalog::STORE.resolve(place, sources)?;
        let mut location = rlm_store::StoreLocation::from_path(&value.value).map_err(|err| {
            AppError::input(crate::error::store_error(err))
                .with_hint(format!("set by {}", catalog::STORE.named_by(&value.origin)))
        })?;
        if let rlm_store::StoreLocation::Postgres(postgres) = &mut location {
            add_password(postgres, sources);
        }
        Ok(Self {
            location,
            root: sources.root().cloned(),
        })
    }

    /// The store directory, for a local store.
    pub fn dir(&self) -> Option<&std::path::Path> {
        self.location.directory()
    }

    /// Opens the store, creating it if needed.
    pub fn open(&self) -> anyhow::Result<Store> {
        Store::open_at(&self.location, self.root.as_ref()).map_err(|err| {
            crate::error::store_error(err)
                .context(format!("cannot open the store at {}", self.location))
        })
    }

    /// Opens a store that must already exist (read-only commands should not create one).
    pub fn open_existing(&self) -> anyhow::Result<Store> {
        self.require_existing()?;
        self.open()
    }

    /// An input error unless the location holds a store (or what is left of one: a search
    /// index without its database is reported as damage when opened).
    pub fn require_existing(&self) -> anyhow::Result<()> {
        let exists = Store::exists_at(&self.location).map_err(|err| {
            crate::error::store_error(err)
                .context(format!("cannot open the store at {}", self.location))
        })?;
        if !exists {
            return Err(
                AppError::input(anyhow::anyhow!("no store at {}", self.location))
                    .with_hint("load something first with `rlm load PATH`, or pass --store DIR")
                    .into(),
            );
        }
        Ok(())
    }
}

/// The password of a PostgreSQL store whose URL has none: `PGPASSWORD`, else the password
/// file (`PGPASSFILE`, else `~/.pgpass`), as libpq finds them. None found is no error: the
/// server may not ask for one.
fn add_password(location: &mut PostgresLocation, sources: &Sources) {
    if location.has_password() {
        return;
    }
    if let Some(password) = sources.env().var(env::PGPASSWORD) {
        location.set_password(password);
        return;
    }
    let file = sources.env().path(env::PGPASSFILE).or_else(|| {
        sources
            .env()
            .path(env::HOME)
            .map(|home| home.join(".pgpass"))
    });
    if let Some(contents) = file.and_then(|file| std::fs::read_to_string(file).ok())
        && let Some(password) = location.password_from_pgpass(&contents)
    {
        location.set_password(password);
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
        let store = StoreSettings::resolve(sources)?;
        let walk = WalkOptions {
            hidden: args.hidden,
            no_ignore: args.no_ignore,
            include: args.include.clone(),
            exclude: args.exclude.clone(),
            skip: store.dir().map(PathBuf::from).into_iter().collect(),
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
            store: StoreSettings::resolve(sources)?,
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
        let dir = |sources: &Sources| -> Option<PathBuf> {
            StoreSettings::resolve(sources)
                .unwrap()
                .dir()
                .map(PathBuf::from)
        };
        let sources = layout.sources(&[]);
        assert_eq!(dir(&sources), Some(PathBuf::from(".rlm")));
        let sources = layout.sources(&[("RLM_STORE", "/env/store")]);
        assert_eq!(dir(&sources), Some(PathBuf::from("/env/store")));
        let flagged = layout
            .sources(&[("RLM_STORE", "/env/store")])
            .with_store(PathBuf::from("/flag"));
        assert_eq!(dir(&flagged), Some(PathBuf::from("/flag")));
    }

    #[test]
    fn a_postgres_url_takes_its_password_from_the_environment_or_the_password_file() {
        let layout = Layout::new(None, None);
        let url = |password_env: &[(&str, &str)]| {
            let place = Some(PathBuf::from("postgres://ann@db.example/team?schema=docs"));
            let settings = StoreSettings::at(place, &layout.sources(password_env)).unwrap();
            let rlm_store::StoreLocation::Postgres(postgres) = settings.location else {
                panic!("{:?}", settings.location)
            };
            postgres
        };
        assert!(!url(&[]).has_password());
        let with_env = url(&[("PGPASSWORD", "from-the-environment")]);
        assert!(with_env.has_password());
        assert!(!with_env.to_string().contains("from-the-environment"));
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), "db.example:5432:team:ann:from-the-file\n").unwrap();
        let path = file.path().to_str().unwrap();
        assert!(url(&[("PGPASSFILE", path)]).has_password());
        let bad = Some(PathBuf::from("postgres://db.example/team"));
        let error = StoreSettings::at(bad, &layout.sources(&[])).unwrap_err();
        assert!(format!("{error:#}").contains("names no user"), "{error:#}");
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
