//! Sandbox configuration: backend, isolation, limits, worker command.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::limits::Limits;

/// The argument that puts the `rlm` binary into worker mode (hidden from `--help`).
pub const WORKER_ARG: &str = "__sandbox-worker";

/// Which interpreter runs model code.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Backend {
    /// Monty, the embedded Python interpreter (a Python subset, no I/O by construction).
    #[default]
    Monty,
    /// CPython (`python3`) in a namespace + Landlock sandbox: the full language and standard
    /// library, always in a worker process. Needs `python3` and `unshare` (util-linux).
    Python,
}

/// Where the interpreter runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Isolation {
    /// A worker process with OS limits (`RLIMIT_AS`), killed when stuck: the host survives any
    /// model code. Needs a worker command.
    #[default]
    Process,
    /// A thread in the host process. No extra process and no context file round trip, but the
    /// memory cap is only Monty's pre-check of single large results (a growth loop can exhaust
    /// host memory) and an operation that never reaches a time check cannot be stopped.
    InProcess,
}

/// The program (and arguments) that runs [`crate::worker_main`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerCommand {
    /// The executable.
    pub program: PathBuf,
    /// Its arguments, e.g. `["__sandbox-worker"]`.
    pub args: Vec<OsString>,
}

impl WorkerCommand {
    /// A command from a program and its arguments.
    pub fn new(
        program: impl Into<PathBuf>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> Self {
        Self {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
        }
    }

    /// The running executable in worker mode: `<current exe> __sandbox-worker`. Right for the
    /// `rlm` binary, which routes that argument to [`crate::worker_main`].
    ///
    /// # Errors
    /// When the path of the running executable cannot be determined.
    pub fn current_exe() -> Result<Self> {
        let program = std::env::current_exe().map_err(|source| Error::Spawn {
            command: "<current executable>".to_owned(),
            source,
        })?;
        Ok(Self::new(program, [WORKER_ARG]))
    }
}

/// A configured sandbox; cheap to clone, starts any number of [`crate::Session`]s.
#[derive(Debug, Clone)]
pub struct Sandbox {
    pub(crate) backend: Backend,
    pub(crate) isolation: Isolation,
    pub(crate) limits: Limits,
    pub(crate) worker_command: Option<WorkerCommand>,
    /// Set for [`Backend::Python`]: whether some protections are missing.
    pub(crate) reduced_protection: Option<String>,
    pub(crate) allow_reduced_protection: bool,
}

impl Sandbox {
    /// Starts a configuration with the defaults: Monty in a worker process, default [`Limits`].
    #[must_use]
    pub fn builder() -> SandboxBuilder {
        SandboxBuilder::default()
    }

    /// The limits sessions get.
    #[must_use]
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The interpreter in use.
    #[must_use]
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// For the python backend run with reduced protection: what is missing.
    #[must_use]
    pub fn reduced_protection(&self) -> Option<&str> {
        self.reduced_protection.as_deref()
    }
}

/// Builder for [`Sandbox`].
#[derive(Debug, Clone, Default)]
pub struct SandboxBuilder {
    backend: Backend,
    isolation: Isolation,
    limits: Limits,
    worker_command: Option<WorkerCommand>,
    python: Option<PathBuf>,
    allow_reduced_protection: bool,
}

impl SandboxBuilder {
    /// Chooses the interpreter.
    #[must_use]
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }

    /// Chooses process or in-process isolation.
    #[must_use]
    pub fn isolation(mut self, isolation: Isolation) -> Self {
        self.isolation = isolation;
        self
    }

    /// Sets the limits.
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the worker command (default: [`WorkerCommand::current_exe`]).
    #[must_use]
    pub fn worker_command(mut self, command: WorkerCommand) -> Self {
        self.worker_command = Some(command);
        self
    }

    /// The Python interpreter for [`Backend::Python`] (default `python3` from `PATH`).
    #[must_use]
    pub fn python_executable(mut self, python: impl Into<PathBuf>) -> Self {
        self.python = Some(python.into());
        self
    }

    /// Lets [`Backend::Python`] run when namespaces or Landlock are unavailable (with a loud
    /// warning, and [`Sandbox::reduced_protection`] set). Off by default: it refuses instead.
    #[must_use]
    pub fn allow_reduced_protection(mut self, allow: bool) -> Self {
        self.allow_reduced_protection = allow;
        self
    }

    /// Finishes the configuration.
    ///
    /// # Errors
    /// When process isolation is chosen without a worker command and the current executable
    /// cannot be found; for [`Backend::Python`], when `python3` is missing or a protection is
    /// unavailable and reduced protection was not allowed.
    pub fn build(self) -> Result<Sandbox> {
        if self.backend == Backend::Python {
            let python = self.python.unwrap_or_else(|| PathBuf::from("python3"));
            let launcher = crate::python::launcher(&python, self.allow_reduced_protection)?;
            return Ok(Sandbox {
                backend: self.backend,
                isolation: Isolation::Process,
                limits: self.limits,
                worker_command: Some(launcher.command),
                reduced_protection: launcher.reduced,
                allow_reduced_protection: self.allow_reduced_protection,
            });
        }
        let worker_command = match (self.isolation, self.worker_command) {
            (Isolation::Process, None) => Some(WorkerCommand::current_exe()?),
            (_, command) => command,
        };
        Ok(Sandbox {
            backend: self.backend,
            isolation: self.isolation,
            limits: self.limits,
            worker_command,
            reduced_protection: None,
            allow_reduced_protection: false,
        })
    }
}
