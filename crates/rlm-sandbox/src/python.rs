//! The opt-in CPython backend: a `python3 -I -S` worker made into a sandbox.
//!
//! Protections, all required unless the caller allows reduced protection:
//! - user, network, IPC and UTS namespaces (`unshare`): no network interfaces but a down loopback;
//! - Landlock (applied by the worker before any model code): no file-system access at all, no TCP
//!   bind/connect, no signals or abstract sockets outside the worker; `no_new_privs`;
//! - `RLIMIT_AS` (memory), `RLIMIT_FSIZE` = 0, no core dumps; an empty environment;
//! - a wall-time `TimeoutError` per execution (paused during host calls) and a kill when code ignores it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::{Error, Result};
use crate::sandbox::WorkerCommand;

/// The worker program, run with `python3 -c`.
const WORKER_SOURCE: &str = include_str!("python_worker.py");

/// How to launch the CPython worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PythonLauncher {
    pub command: WorkerCommand,
    /// Some protections are missing and the caller accepted that.
    pub reduced: Option<String>,
}

/// Finds `python` (a name on `PATH` or a path), checks the namespace sandbox works, and builds
/// the worker command.
pub(crate) fn launcher(python: &Path, allow_reduced: bool) -> Result<PythonLauncher> {
    let interpreter = real_interpreter(python)?;
    let worker_args = [
        "-I".into(),
        "-S".into(),
        "-c".into(),
        WORKER_SOURCE.to_owned(),
    ];
    let namespaces = ["--user", "--map-root-user", "--net", "--ipc", "--uts"];
    let unshare = find_on_path("unshare");
    let problem = match &unshare {
        None => Some("the `unshare` tool (util-linux) is not installed".to_owned()),
        Some(unshare) => {
            let works = Command::new(unshare)
                .args(namespaces)
                .arg("true")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|status| status.success());
            (!works).then(|| "user and network namespaces are not permitted here".to_owned())
        }
    };
    match (problem, unshare) {
        (None, Some(unshare)) => {
            let mut args: Vec<String> = namespaces.iter().map(|&arg| arg.to_owned()).collect();
            args.push(interpreter.display().to_string());
            args.extend(worker_args);
            Ok(PythonLauncher {
                command: WorkerCommand::new(unshare, args),
                reduced: None,
            })
        }
        (Some(problem), _) if allow_reduced => {
            tracing::warn!("CPython sandbox runs WITHOUT namespace isolation: {problem}");
            Ok(PythonLauncher {
                command: WorkerCommand::new(interpreter, worker_args),
                reduced: Some(problem),
            })
        }
        (Some(problem), _) => Err(Error::Unavailable(format!(
            "the python backend needs namespace isolation, but {problem}; allow reduced protection to run anyway"
        ))),
        (None, None) => Err(Error::Unavailable("`unshare` vanished".to_owned())),
    }
}

/// The interpreter's real path (a pyenv-style shim needs environment variables the cleared
/// worker environment does not have).
fn real_interpreter(python: &Path) -> Result<PathBuf> {
    let output = Command::new(python)
        .args(["-I", "-S", "-c", "import sys; print(sys.executable)"])
        .stderr(Stdio::null())
        .output()
        .map_err(|source| Error::Spawn {
            command: python.display().to_string(),
            source,
        })?;
    let path = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if !output.status.success() || path.is_empty() {
        return Err(Error::Unavailable(format!(
            "`{}` did not report its executable",
            python.display()
        )));
    }
    Ok(PathBuf::from(path))
}

fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|directory| directory.join(program))
        .find(|candidate| candidate.is_file())
}
