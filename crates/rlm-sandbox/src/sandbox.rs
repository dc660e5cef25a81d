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
    /// Monty, the embedded Python interpreter (a Python subset, no I/O by construction). In a
    /// worker process it is also confined by the OS: Landlock and a seccomp filter.
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
    /// A worker process with OS limits (`RLIMIT_AS`) and OS confinement (Landlock, seccomp),
    /// killed when stuck: the host survives any model code. Needs a worker command.
    #[default]
    Process,
    /// A thread in the host process. No extra process and no context file round trip, but the
    /// memory cap is only Monty's pre-check of single large results (a growth loop can exhaust
    /// host memory), an operation that never reaches a time check cannot be stopped, and there is
    /// no OS confinement: the interpreter's own lack of I/O is the only barrier.
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
    /// The OS confinement a worker applies here (process isolation only).
    pub(crate) protection: Option<String>,
    /// Protections this machine lacks, run without because the caller allowed it.
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

    /// The OS confinement each Monty worker applies to itself on this machine, e.g.
    /// `Landlock ABI 7 (no file system, ...); seccomp filter (...)`. `None` in process for the
    /// in-process isolation and the python backend (see [`Backend::Python`]).
    #[must_use]
    pub fn protection(&self) -> Option<&str> {
        self.protection.as_deref()
    }

    /// When running with reduced protection (allowed by
    /// [`SandboxBuilder::allow_reduced_protection`]): what is missing.
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

    /// Lets sessions run when an OS protection is unavailable: Landlock or seccomp for the Monty
    /// worker, namespaces or Landlock for [`Backend::Python`]. A warning is logged and
    /// [`Sandbox::reduced_protection`] says what is missing. Off by default: `build` refuses.
    #[must_use]
    pub fn allow_reduced_protection(mut self, allow: bool) -> Self {
        self.allow_reduced_protection = allow;
        self
    }

    /// Finishes the configuration.
    ///
    /// # Errors
    /// When process isolation is chosen without a worker command and the current executable
    /// cannot be found, or the worker does not start; when an OS protection is unavailable and
    /// reduced protection was not allowed ([`Error::Unavailable`]); for [`Backend::Python`], when
    /// `python3` is missing.
    ///
    /// For process isolation this starts one worker (without contexts) to learn which
    /// protections it can apply on this machine.
    pub fn build(self) -> Result<Sandbox> {
        if self.backend == Backend::Python {
            let python = self.python.unwrap_or_else(|| PathBuf::from("python3"));
            let launcher = crate::python::launcher(&python, self.allow_reduced_protection)?;
            return Ok(Sandbox {
                backend: self.backend,
                isolation: Isolation::Process,
                limits: self.limits,
                worker_command: Some(launcher.command),
                protection: None,
                reduced_protection: launcher.reduced,
                allow_reduced_protection: self.allow_reduced_protection,
            });
        }
        let worker_command = match (self.isolation, self.worker_command) {
            (Isolation::Process, None) => Some(WorkerCommand::current_exe()?),
            (_, command) => command,
        };
        let (protection, reduced_protection) = match (self.isolation, &worker_command) {
            (Isolation::Process, Some(command)) => {
                let probe = crate::probe::worker_protection(command, &self.limits)?;
                if let Some(missing) = &probe.missing {
                    if !self.allow_reduced_protection {
                        return Err(Error::Unavailable(format!(
                            "the sandbox worker cannot confine itself: {missing}; allow reduced \
                             protection to run anyway"
                        )));
                    }
                    tracing::warn!(
                        "the sandbox worker runs with REDUCED protection (only Monty's own \
                         isolation, an empty environment and resource limits): {missing}"
                    );
                }
                tracing::debug!(protection = ?probe.applied, "sandbox worker confinement");
                (probe.applied, probe.missing)
            }
            _ => (None, None),
        };
        Ok(Sandbox {
            backend: self.backend,
            isolation: self.isolation,
            limits: self.limits,
            worker_command,
            protection,
            reduced_protection,
            allow_reduced_protection: self.allow_reduced_protection,
        })
    }
}
