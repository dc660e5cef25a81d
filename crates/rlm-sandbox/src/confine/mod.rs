//! OS confinement the Monty worker process applies to itself once its contexts are loaded.
//!
//! Monty has no file, network or process access of its own; this is defence in depth in case
//! the interpreter ever has a hole. In order: Landlock (no file system at all, no TCP, signals
//! and abstract UNIX sockets scoped to the worker), then a seccomp deny-list (no sockets, exec,
//! ptrace, namespaces, mounts, io_uring, bpf, ...). Both are irreversible and inherited by
//! anything the process could start. A restarted worker loads its own contexts, then confines
//! itself again.

mod landlock_rules;
mod syscall_filter;

/// What the worker locked down, and what this kernel could not provide.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Confinement {
    /// Protections in force, e.g. `Landlock ABI 7 (no file system, ...)`.
    pub applied: Vec<String>,
    /// Protections that could not be applied, each with the reason.
    pub missing: Vec<String>,
}

/// Applies every protection this kernel offers to the calling process. Call it only from a
/// single-threaded worker process: Landlock restricts the calling thread and its future children.
pub(crate) fn confine() -> Confinement {
    let mut confinement = Confinement::default();
    for outcome in [landlock_rules::restrict(), syscall_filter::restrict()] {
        match outcome {
            Ok(applied) => confinement.applied.push(applied),
            Err(missing) => confinement.missing.push(missing),
        }
    }
    confinement
}

impl Confinement {
    /// What is in force, for logs.
    pub(crate) fn applied(&self) -> String {
        if self.applied.is_empty() {
            "no OS confinement".to_owned()
        } else {
            self.applied.join("; ")
        }
    }

    /// `Ok(None)` when fully confined, `Ok(Some(what is missing))` when something is missing and
    /// reduced protection is allowed, and the refusal otherwise.
    pub(crate) fn check(&self, allow_reduced_protection: bool) -> Result<Option<String>, String> {
        if self.missing.is_empty() {
            return Ok(None);
        }
        let missing = self.missing.join("; ");
        if allow_reduced_protection {
            Ok(Some(missing))
        } else {
            Err(format!(
                "the sandbox worker cannot confine itself: {missing}; refusing to run model code \
                 with reduced protection"
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::io::ErrorKind;
    use std::net::{TcpListener, TcpStream, UdpSocket};
    use std::process::Command;

    use super::*;

    /// Set in the child process that runs [`confined_child`].
    const CHILD_VARIABLE: &str = "RLM_SANDBOX_CONFINEMENT_CHILD";
    const CHILD_DONE: &str = "confined child: every check passed";

    #[test]
    fn missing_protection_fails_closed_unless_allowed() {
        let full = Confinement {
            applied: vec!["Landlock ABI 7".to_owned(), "seccomp".to_owned()],
            missing: Vec::new(),
        };
        assert_eq!(full.check(false), Ok(None));
        let partial = Confinement {
            applied: vec!["seccomp".to_owned()],
            missing: vec!["this kernel has no Landlock".to_owned()],
        };
        let refusal = partial.check(false).unwrap_err();
        assert!(refusal.contains("this kernel has no Landlock"), "{refusal}");
        assert!(refusal.contains("refusing"), "{refusal}");
        assert_eq!(
            partial.check(true),
            Ok(Some("this kernel has no Landlock".to_owned()))
        );
    }

    /// Confinement cannot be undone, so it is tried in a child process: this test binary, asked
    /// to run only [`confined_child`]. Where the kernel lacks Landlock or seccomp it skips with
    /// a notice, unless `RLM_REQUIRE_CONFINEMENT=1` (CI sets it: its machines have both), where
    /// a skip is a failure.
    #[test]
    fn a_confined_process_cannot_read_files_connect_or_exec() {
        let output = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "confine::tests::confined_child",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_VARIABLE, "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        if stdout.contains("skipped:") {
            assert!(
                std::env::var("RLM_REQUIRE_CONFINEMENT").as_deref() != Ok("1"),
                "RLM_REQUIRE_CONFINEMENT=1 but the confinement could not be tried:\n{stdout}"
            );
            eprintln!("{stdout}");
            return;
        }
        assert!(
            output.status.success() && stdout.contains(CHILD_DONE),
            "status {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            output.status
        );
    }

    #[test]
    #[ignore = "run in a child process by a_confined_process_cannot_read_files_connect_or_exec"]
    fn confined_child() {
        if std::env::var_os(CHILD_VARIABLE).is_none() {
            return;
        }
        // Everything below would succeed without confinement.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let readable = std::env::current_exe().unwrap();
        std::fs::read(&readable).unwrap();
        TcpStream::connect(address).unwrap();

        let landlock = landlock_rules::restrict();
        println!("landlock: {landlock:?}");
        let Ok(landlock) = landlock else {
            println!("skipped: Landlock is unavailable here");
            return;
        };
        let denied = |error: std::io::Error| error.kind() == ErrorKind::PermissionDenied;
        for path in [readable.as_path(), "/etc/hostname".as_ref(), "/".as_ref()] {
            let error = std::fs::read(path).unwrap_err();
            assert!(
                denied(error) || !path.exists(),
                "{} was readable",
                path.display()
            );
        }
        assert!(denied(std::fs::read_dir("/").unwrap_err()));
        let scratch = std::env::temp_dir().join("rlm-confinement-probe");
        assert!(denied(std::fs::write(&scratch, b"x").unwrap_err()));
        if landlock.contains("no TCP") {
            let error = TcpStream::connect(address).unwrap_err();
            assert_eq!(error.raw_os_error(), Some(libc::EACCES), "{error}");
        }

        let seccomp = syscall_filter::restrict();
        println!("seccomp: {seccomp:?}");
        if seccomp.is_err() {
            println!("skipped: seccomp is unavailable here");
            return;
        }
        let eperm = |error: std::io::Error| error.raw_os_error() == Some(libc::EPERM);
        assert!(eperm(TcpStream::connect(address).unwrap_err()));
        assert!(eperm(UdpSocket::bind("127.0.0.1:0").unwrap_err()));
        assert!(eperm(
            std::os::unix::net::UnixStream::connect("/run/any.sock").unwrap_err()
        ));
        assert!(eperm(Command::new("/bin/true").status().unwrap_err()));
        // The worker's own needs still work: memory, threads of its own, time, its pipes.
        let joined = std::thread::spawn(|| vec![0_u8; 1 << 20].len()).join();
        assert_eq!(joined.unwrap(), 1 << 20);
        println!("{CHILD_DONE}");
    }
}
