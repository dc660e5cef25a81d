//! Settings: what each command runs with, resolved in one place.
//!
//! Precedence, highest first: flags > environment > project file (`./rlm.toml` or an
//! ancestor's) > user file (`$XDG_CONFIG_HOME/rlm/config.toml`) > defaults.
//!
//! A command turns its parsed arguments and the shared [`Sources`] into one plain settings
//! value (`LlmSettings::resolve`, `RunSettings::resolve`, `StoreSettings::resolve`, …) and then
//! calls a library with it. The settings hold library types only, never clap types, so another
//! front end (the MCP server) fills the same `*Args` from its own input and gets the same
//! result. Sources are injected: tests build them from a fixed [`Environment`] and a
//! temporary directory instead of touching the process environment.

pub mod backends;
pub mod catalog;
pub mod check;
pub mod embedding;
pub mod env;
pub mod files;
pub mod inspection;
pub mod llm;
pub mod prompt;
pub mod providers;
pub mod query;
pub mod run;
pub mod setting;
pub mod shown;
pub mod size;
pub mod store;
pub mod view;

use std::cell::OnceCell;
use std::path::{Path, PathBuf};

use rlm_context::root::FileRoot;

pub use backends::ModelBackend;
pub use embedding::EmbeddingSettings;
pub use env::Environment;
pub use files::LoadedConfig;
pub use inspection::{RunsSettings, SessionTarget};
pub use llm::{ChatSettings, LlmSettings};
pub use prompt::PromptSettings;
pub use query::QuerySettings;
pub use run::{ContextSource, LoopSettings, RunSettings};
pub use setting::{Origin, Setting, Value};
pub use store::{EmbedOnLoad, LoadSettings, SearchSettings, StoreSettings};
pub use view::{ViewSettings, ViewTarget};

/// Everything below the flags: the environment, the configuration files and the directories
/// derived from them. The files are read on first use, so a command that needs no
/// configuration (a BM25 search, `rlm list`) never fails on a broken or missing file.
pub struct Sources {
    env: Environment,
    dirs: Dirs,
    /// `--config` or `RLM_CONFIG`: the only file read when set.
    explicit_config: Option<PathBuf>,
    /// Where the project file search starts.
    cwd: Option<PathBuf>,
    config: OnceCell<LoadedConfig>,
    /// What in the files is not in force once they are merged, found when they are read.
    problems: OnceCell<Vec<check::Problem>>,
    /// Providers the front end offers besides the configured ones (`rlm mcp`'s sampling).
    model_backends: Vec<ModelBackend>,
    /// The directory every file a command reads or writes must resolve into (`rlm mcp
    /// --root`); `None` on the command line.
    root: Option<FileRoot>,
    /// Providers the front end sets above every other source (the Python package's
    /// `backend_kwargs`: a base URL, a key).
    providers: Vec<rlm_llm::ProviderConfig>,
    /// The store the front end names (`--store`, `rlm mcp --store`, Python's `Store(path)`),
    /// above `RLM_STORE`, `[store] url` and `.rlm`.
    store: Option<PathBuf>,
    /// Who hears the warnings about the files (a setting that is not in force).
    warnings: Option<std::sync::Arc<dyn crate::Events>>,
}

impl std::fmt::Debug for Sources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sources")
            .field("env", &self.env)
            .field("dirs", &self.dirs)
            .field("explicit_config", &self.explicit_config)
            .field("cwd", &self.cwd)
            .field("root", &self.root)
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

impl Sources {
    /// The process environment and current directory; `config_flag` is `--config`.
    pub fn from_process(config_flag: Option<PathBuf>) -> Self {
        Self::new(
            Environment::process(),
            std::env::current_dir().ok(),
            config_flag,
        )
    }

    /// Sources from an explicit environment and working directory.
    pub fn new(env: Environment, cwd: Option<PathBuf>, config_flag: Option<PathBuf>) -> Self {
        let dirs = Dirs::from_env(&env);
        let explicit_config = config_flag.or_else(|| env.path(env::RLM_CONFIG));
        Self {
            env,
            dirs,
            explicit_config,
            cwd,
            config: OnceCell::new(),
            problems: OnceCell::new(),
            model_backends: Vec::new(),
            root: None,
            providers: Vec::new(),
            store: None,
            warnings: None,
        }
    }

    /// These sources with the store at `dir` named by the front end (a flag's level: above
    /// `RLM_STORE` and the files).
    #[must_use]
    pub fn with_store(mut self, dir: PathBuf) -> Self {
        self.store = Some(dir);
        self
    }

    /// The store the front end named, if any.
    pub fn store_flag(&self) -> Option<&Path> {
        self.store.as_deref()
    }

    /// These sources with `events` hearing the warnings about the configuration files, when
    /// they are read (without, the warnings go to the log).
    #[must_use]
    pub fn with_warnings(mut self, events: std::sync::Arc<dyn crate::Events>) -> Self {
        self.warnings = Some(events);
        self
    }

    /// These sources with `provider` set above the environment and the files (a provider of
    /// the same name keeps only what `provider` does not say: a key it lacks).
    #[must_use]
    pub fn with_provider(mut self, provider: rlm_llm::ProviderConfig) -> Self {
        self.providers.push(provider);
        self
    }

    /// The providers the front end sets.
    pub fn providers(&self) -> &[rlm_llm::ProviderConfig] {
        &self.providers
    }

    /// These sources for commands confined to `root`: the stores they open, the ctx
    /// directories they assemble and the project file they read must resolve inside it
    /// (`rlm mcp --root`).
    #[must_use]
    pub fn with_root(mut self, root: FileRoot) -> Self {
        self.root = Some(root);
        self
    }

    /// The root commands are confined to, if any.
    pub fn root(&self) -> Option<&FileRoot> {
        self.root.as_ref()
    }

    /// These sources with `backend` offered to every model client built from them.
    #[must_use]
    pub fn with_model_backend(mut self, backend: ModelBackend) -> Self {
        self.model_backends.push(backend);
        self
    }

    /// The providers the front end offers besides the configured ones.
    pub fn model_backends(&self) -> &[ModelBackend] {
        &self.model_backends
    }

    pub fn env(&self) -> &Environment {
        &self.env
    }

    /// The working directory relative paths start from, when known.
    pub fn cwd(&self) -> Option<&Path> {
        self.cwd.as_deref()
    }

    pub fn dirs(&self) -> &Dirs {
        &self.dirs
    }

    /// The explicit configuration file (`--config` or `RLM_CONFIG`), if any.
    pub fn explicit_config(&self) -> Option<&Path> {
        self.explicit_config.as_deref()
    }

    /// Configuration files looked for when none is explicit, lowest precedence first: the
    /// user file, then the nearest project file (only when one exists).
    pub fn config_candidates(&self) -> Vec<PathBuf> {
        let user = self.dirs.user_config_file();
        let project = self.cwd.as_deref().and_then(files::find_project_file);
        user.into_iter().chain(project).collect()
    }

    /// The merged configuration files, read on first call. Within a root, a project file
    /// below it must resolve inside it (one above it, or an explicit file, is the operator's).
    pub fn config(&self) -> anyhow::Result<&LoadedConfig> {
        if let Some(loaded) = self.config.get() {
            return Ok(loaded);
        }
        let candidates = self.config_candidates();
        if let Some(root) = &self.root
            && self.explicit_config.is_none()
        {
            for candidate in candidates
                .iter()
                .filter(|path| path.starts_with(root.dir()))
            {
                root.check(candidate)?;
            }
        }
        let loaded = LoadedConfig::load(self.explicit_config(), &candidates)?;
        let problems: Vec<check::Problem> = loaded
            .layers()
            .flat_map(|(path, table)| check::check_file(path, table))
            .collect();
        for problem in &problems {
            // Even with --quiet: a setting the user wrote is not in force.
            let text = format!("{}: {}", problem.path.display(), problem.message);
            match &self.warnings {
                Some(events) => events.event(&crate::Event::Warning(&text)),
                None => tracing::warn!("{text}"),
            }
        }
        // A command refuses only what is still wrong once the files are merged: a bad value
        // one file sets and a later file replaces is warned about, not in force.
        let merged = check::check_file(Path::new(""), &loaded.table);
        let refused = problems
            .into_iter()
            .filter(|problem| merged.iter().any(|m| m.message == problem.message))
            .collect();
        let _ = self.problems.set(refused);
        Ok(self.config.get_or_init(|| loaded))
    }

    /// The merged files, for a setting in `table` (`llm`, `prompt.rlm`): refused when a file
    /// has a problem in its section (an unknown key, a value of the wrong type), which the
    /// warning about it named.
    pub fn checked_config(&self, table: &str) -> anyhow::Result<&LoadedConfig> {
        let config = self.config()?;
        let section = table.split('.').next().unwrap_or(table);
        let problem = self
            .problems
            .get()
            .into_iter()
            .flatten()
            .find(|problem| problem.section.as_deref() == Some(section));
        if let Some(problem) = problem {
            let path = problem.path.display();
            return Err(crate::error::AppError::input(anyhow::anyhow!(
                "invalid [{section}] section in {path}: {}",
                problem.message
            ))
            .with_hint(format!("fix or remove it in {path}"))
            .into());
        }
        Ok(config)
    }

    /// A command's compiled-in prompts with the overrides `load` finds in the prompts
    /// directory (`RLM_PROMPT_DIR`, else the user's `prompts/`); which files were used is
    /// logged. `load` returns the prompts and the names of the files it used.
    pub fn prompts_with_overrides<P, E>(
        &self,
        load: impl FnOnce(&Path) -> Result<(P, Vec<String>), E>,
    ) -> anyhow::Result<P>
    where
        P: Default,
        E: Into<anyhow::Error>,
    {
        let Some(dir) = catalog::PROMPT_DIR.environment_path(None, self).value else {
            return Ok(P::default());
        };
        let (prompts, used) = load(&dir).map_err(crate::error::AppError::input)?;
        if !used.is_empty() {
            tracing::info!(
                "prompt overrides from {}: {}",
                dir.display(),
                used.join(", ")
            );
        }
        Ok(prompts)
    }
}

/// The per-user directories, from the XDG base directory variables with the usual `HOME`
/// fallbacks. Each is `None` only when neither variable is set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dirs {
    /// `$XDG_CONFIG_HOME/rlm`, else `~/.config/rlm`: `config.toml` and `prompts/`.
    pub config: Option<PathBuf>,
    /// `$XDG_STATE_HOME/rlm`, else `~/.local/state/rlm`: trajectories in `runs/`.
    pub state: Option<PathBuf>,
    /// `$XDG_DATA_HOME/rlm`, else `~/.local/share/rlm`: embedding models in `models/`.
    pub data: Option<PathBuf>,
}

impl Dirs {
    pub fn from_env(env: &Environment) -> Self {
        let home = env.path(env::HOME);
        let base = |variable: &str, fallback: &[&str]| {
            env.path(variable)
                .or_else(|| {
                    let home = home.clone()?;
                    Some(fallback.iter().fold(home, |path, part| path.join(part)))
                })
                .map(|base| base.join("rlm"))
        };
        Self {
            config: base(env::XDG_CONFIG_HOME, &[".config"]),
            state: base(env::XDG_STATE_HOME, &[".local", "state"]),
            data: base(env::XDG_DATA_HOME, &[".local", "share"]),
        }
    }

    /// The user configuration file.
    pub fn user_config_file(&self) -> Option<PathBuf> {
        self.config.as_ref().map(|dir| dir.join("config.toml"))
    }

    /// Default directory of prompt overrides for `rlm run`.
    pub fn prompts(&self) -> Option<PathBuf> {
        self.config.as_ref().map(|dir| dir.join("prompts"))
    }

    /// Default directory of `rlm run` trajectories.
    pub fn runs(&self) -> Option<PathBuf> {
        self.state.as_ref().map(|dir| dir.join("runs"))
    }

    /// Default directory of `rlm run --session` sessions.
    pub fn sessions(&self) -> Option<PathBuf> {
        self.state.as_ref().map(|dir| dir.join("sessions"))
    }

    /// Default directory of imported embedding models.
    pub fn models(&self) -> Option<PathBuf> {
        self.data.as_ref().map(|dir| dir.join("models"))
    }
}

/// A checked budget: `(max_cost_usd, max_tokens)`. The same refusals for every command that
/// takes [`crate::requests::BudgetOptions`].
pub fn budget(args: &crate::requests::BudgetOptions) -> anyhow::Result<(Option<f64>, Option<u64>)> {
    if let Some(cost) = args.max_cost
        && !(cost.is_finite() && cost > 0.0)
    {
        return Err(crate::error::AppError::input(anyhow::anyhow!(
            "--max-cost {cost} is not a positive amount"
        ))
        .with_hint("give a budget in US dollars, e.g. --max-cost 0.50")
        .into());
    }
    let max_tokens = match args.max_tokens {
        Some(tokens) if tokens < 1 => {
            return Err(crate::error::AppError::input(anyhow::anyhow!(
                "--max-tokens {tokens} must be at least 1"
            ))
            .with_hint("give a number of tokens, e.g. --max-tokens 200000")
            .into());
        }
        Some(tokens) => u64::try_from(tokens).ok(),
        None => None,
    };
    Ok((args.max_cost, max_tokens))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A scratch layout for precedence tests: `xdg/rlm/config.toml` (user file),
    /// `project/rlm.toml` (project file), and sources over a fixed environment that points
    /// `XDG_CONFIG_HOME` at it. `project/sub` is the working directory, so the project file is
    /// found in an ancestor.
    pub(crate) struct Layout {
        pub dir: tempfile::TempDir,
    }

    impl Layout {
        pub fn new(user_file: Option<&str>, project_file: Option<&str>) -> Self {
            let dir = tempfile::tempdir().unwrap();
            std::fs::create_dir_all(dir.path().join("xdg/rlm")).unwrap();
            std::fs::create_dir_all(dir.path().join("project/sub")).unwrap();
            if let Some(text) = user_file {
                std::fs::write(dir.path().join("xdg/rlm/config.toml"), text).unwrap();
            }
            if let Some(text) = project_file {
                std::fs::write(dir.path().join("project/rlm.toml"), text).unwrap();
            }
            Self { dir }
        }

        pub fn path(&self, relative: &str) -> PathBuf {
            self.dir.path().join(relative)
        }

        /// Sources with `XDG_CONFIG_HOME` pointing into the layout, plus `vars`.
        pub fn sources(&self, vars: &[(&str, &str)]) -> Sources {
            let mut pairs: Vec<(String, std::ffi::OsString)> = vec![(
                env::XDG_CONFIG_HOME.to_owned(),
                self.path("xdg").into_os_string(),
            )];
            pairs.extend(
                vars.iter()
                    .map(|(name, value)| ((*name).to_owned(), (*value).into())),
            );
            Sources::new(
                Environment::from_pairs(pairs),
                Some(self.path("project/sub")),
                None,
            )
        }
    }

    #[test]
    fn dirs_follow_xdg_then_home() {
        let env = Environment::from_pairs([
            ("XDG_DATA_HOME", "/data"),
            ("XDG_STATE_HOME", ""),
            ("HOME", "/home/u"),
        ]);
        let dirs = Dirs::from_env(&env);
        assert_eq!(dirs.models().unwrap(), Path::new("/data/rlm/models"));
        assert_eq!(
            dirs.runs().unwrap(),
            Path::new("/home/u/.local/state/rlm/runs")
        );
        assert_eq!(
            dirs.user_config_file().unwrap(),
            Path::new("/home/u/.config/rlm/config.toml")
        );
        assert_eq!(
            dirs.prompts().unwrap(),
            Path::new("/home/u/.config/rlm/prompts")
        );
        assert_eq!(
            Dirs::from_env(&Environment::from_pairs::<&str, &str>([])),
            Dirs::default()
        );
    }

    #[test]
    fn project_file_overrides_user_file_and_explicit_file_replaces_both() {
        let layout = Layout::new(
            Some("[llm]\nmodel = 'user'\nmax_retries = 1\n"),
            Some("[llm]\nmodel = 'project'\n"),
        );
        let sources = layout.sources(&[]);
        let table = &sources.config().unwrap().table;
        assert_eq!(table["llm"]["model"].as_str(), Some("project"));
        assert_eq!(table["llm"]["max_retries"].as_integer(), Some(1));
        assert_eq!(sources.config_candidates().len(), 2);

        std::fs::write(layout.path("explicit.toml"), "[llm]\nmodel = 'explicit'\n").unwrap();
        let explicit = layout.path("explicit.toml");
        let sources = layout.sources(&[("RLM_CONFIG", explicit.to_str().unwrap())]);
        let table = &sources.config().unwrap().table;
        assert_eq!(table["llm"]["model"].as_str(), Some("explicit"));
        assert!(table["llm"].get("max_retries").is_none());
    }

    /// A section with a problem in the merged files is refused by the commands that read it,
    /// naming the file; a bad value a later file replaces is not in force, and other sections
    /// are read.
    #[test]
    fn a_section_with_a_problem_is_refused_once_the_files_are_merged() {
        let replaced = Layout::new(
            Some("[llm]\nmax_retries = 'three'\n"),
            Some("[llm]\nmax_retries = 2\n"),
        );
        let sources = replaced.sources(&[]);
        assert_eq!(catalog::LLM_MAX_RETRIES.read(&sources).unwrap().value, 2);

        let layout = Layout::new(
            None,
            Some("[llm]\nmax_retries = 'three'\n[query]\ntop_k = 3\n"),
        );
        let sources = layout.sources(&[]);
        let err = catalog::LLM_MODEL.read(&sources).unwrap_err().to_string();
        let file = layout.path("project/rlm.toml");
        assert!(
            err.starts_with(&format!("invalid [llm] section in {}: ", file.display()))
                && err.contains("[llm] max_retries: invalid type: string \"three\""),
            "{err}"
        );
        assert_eq!(catalog::QUERY_TOP_K.read(&sources).unwrap().value, Some(3));
    }

    #[test]
    fn configuration_is_read_only_when_asked_for() {
        let layout = Layout::new(Some("not toml ["), None);
        let sources = layout.sources(&[]);
        assert_eq!(
            sources.dirs().config.as_deref(),
            Some(layout.path("xdg/rlm").as_path())
        );
        assert!(sources.config().is_err());
    }
}
