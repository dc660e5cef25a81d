//! Hostile snippets: each is contained, reported clearly, and the session keeps working.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::session;
use rlm_sandbox::{Error, ExecutionResult, Isolation, Sandbox, Session};

/// Runs `code` in a session holding `canary = 'alive'`, checks the session still answers, and
/// returns the hostile result plus whether the variables survived.
async fn contained(session: &mut Session, code: &str) -> (ExecutionResult, bool) {
    session.execute("canary = 'alive'").await.unwrap();
    let result = session.execute(code).await.unwrap();
    let after = session.execute("print(len(context))").await.unwrap();
    assert_eq!(
        after.stdout, "7\n",
        "session unusable after {code:?}: {after:?}"
    );
    let kept = session.variable_str("canary").await.unwrap().as_deref() == Some("alive");
    (result, kept)
}

fn kind(result: &ExecutionResult) -> &str {
    result
        .exception
        .as_ref()
        .map_or("<none>", |error| error.kind.as_str())
}

#[tokio::test]
async fn infinite_loop_times_out_and_keeps_state() {
    let mut session = session("context").await;
    let (result, kept) = contained(&mut session, "while True:\n    pass").await;
    assert_eq!(kind(&result), "TimeoutError", "{result:?}");
    assert!(kept);
    assert!(result.worker_restarted.is_none());
}

#[tokio::test]
async fn single_huge_allocation_is_refused() {
    let mut session = session("context").await;
    let (result, kept) = contained(&mut session, "s = 'a' * 10**10").await;
    assert_eq!(kind(&result), "MemoryError", "{result:?}");
    assert!(kept);
}

#[tokio::test]
async fn memory_growth_kills_only_the_worker() {
    // A generous time limit, so that under load the memory cap (not the clock) stops the loop.
    let sandbox = Sandbox::builder()
        .limits(common::small_limits().timeout(Duration::from_secs(20)))
        .worker_command(common::worker())
        .build()
        .unwrap();
    let mut session = Session::start(
        &sandbox,
        vec!["context".into()],
        None,
        Arc::new(common::FakeHost::default()),
    )
    .await
    .unwrap();
    let (result, kept) = contained(
        &mut session,
        "hoard = []\nwhile True:\n    hoard.append('x' * 16000000 + str(len(hoard)))",
    )
    .await;
    // The OS cap (256 MB here) stops the growth: the worker dies, the session says so in one
    // plain sentence, without the allocator's or Rust's own text.
    let note = result.worker_restarted.clone().unwrap_or_default();
    assert!(note.contains("variables were reset"), "{result:?}");
    assert!(note.contains("ran out of memory"), "{note}");
    assert_eq!(note.matches(". ").count(), 0, "one sentence: {note}");
    for rust_text in [
        "memory allocation of",
        "SIGABRT",
        "panicked",
        "RUST_BACKTRACE",
    ] {
        assert!(!result.stderr.contains(rust_text), "{}", result.stderr);
    }
    assert!(!kept, "state cannot survive a dead worker");
    assert_eq!(kind(&result), "SandboxError");
}

#[tokio::test]
async fn recursion_bomb_raises_recursion_error() {
    let mut session = session("context").await;
    let (result, kept) = contained(
        &mut session,
        "def down(n):\n    return down(n + 1)\ndown(0)",
    )
    .await;
    assert_eq!(kind(&result), "RecursionError", "{result:?}");
    assert!(kept);
}

#[tokio::test]
async fn file_system_access_is_denied_and_recorded() {
    let mut session = session("context").await;
    let (result, kept) = contained(
        &mut session,
        "from pathlib import Path\nPath('/etc/passwd').read_text()",
    )
    .await;
    assert_eq!(kind(&result), "PermissionError", "{result:?}");
    assert_eq!(result.denied_operations, vec!["Path.read_text".to_owned()]);
    assert!(kept);
    let (result, _) = contained(&mut session, "open('/etc/passwd').read()").await;
    assert!(
        matches!(
            kind(&result),
            "PermissionError" | "NameError" | "NotImplementedError"
        ),
        "{result:?}"
    );
}

#[tokio::test]
async fn environment_access_is_denied() {
    let mut session = session("context").await;
    let (result, kept) = contained(&mut session, "import os\nprint(os.environ)").await;
    assert_eq!(kind(&result), "PermissionError", "{result:?}");
    assert_eq!(result.denied_operations, vec!["os.environ".to_owned()]);
    assert!(kept);
    let (result, _) = contained(&mut session, "import os\nos.getenv('HOME')").await;
    assert_eq!(kind(&result), "PermissionError", "{result:?}");
}

#[tokio::test]
async fn subprocess_and_network_modules_do_not_exist() {
    let mut session = session("context").await;
    for code in [
        "import subprocess",
        "import socket",
        "import urllib.request",
        "import ctypes",
    ] {
        let (result, kept) = contained(&mut session, code).await;
        assert_eq!(kind(&result), "ModuleNotFoundError", "{code}: {result:?}");
        assert!(kept);
    }
}

#[tokio::test]
async fn giant_print_is_truncated() {
    let mut session = session("context").await;
    let (result, kept) = contained(&mut session, "print('x' * 10**7)").await;
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(result.stdout.len(), 1000);
    assert_eq!(result.stdout_truncated_chars, 10_000_001 - 1000);
    assert!(kept);
}

#[tokio::test]
async fn syntax_errors_and_unsupported_features_are_explained() {
    let mut session = session("context").await;
    let (result, kept) = contained(&mut session, "def broken(:\n    pass").await;
    assert_eq!(kind(&result), "SyntaxError", "{result:?}");
    assert!(kept);
    for code in [
        "class MyError(Exception):\n    pass",
        "def gen():\n    yield 1",
        "x = 1\ndel x",
    ] {
        let (result, kept) = contained(&mut session, code).await;
        let error = result.exception.clone().unwrap();
        assert_eq!(error.kind, "NotImplementedError", "{code}: {result:?}");
        assert!(!error.message.is_empty());
        assert!(kept);
    }
}

#[tokio::test]
async fn unknown_functions_are_name_errors() {
    let mut session = session("context").await;
    let (result, kept) = contained(&mut session, "exec('1')\n").await;
    assert!(
        matches!(kind(&result), "NameError" | "NotImplementedError"),
        "{result:?}"
    );
    assert!(kept);
}

#[tokio::test]
async fn the_worker_confines_itself_or_the_sandbox_refuses_to_start() {
    // Reduced protection is not allowed here: either the worker applies Landlock and seccomp, or
    // `build` fails closed and says what is missing.
    let built = Sandbox::builder()
        .limits(common::small_limits())
        .worker_command(common::worker())
        .build();
    match built {
        Ok(sandbox) => {
            let protection = sandbox.protection().unwrap_or_default();
            println!("worker confinement on this machine: {protection}");
            assert!(protection.contains("Landlock ABI"), "{protection}");
            assert!(protection.contains("no file system"), "{protection}");
            assert!(protection.contains("seccomp filter"), "{protection}");
            assert_eq!(sandbox.reduced_protection(), None);
        }
        Err(Error::Unavailable(message)) => {
            assert!(message.contains("allow reduced protection"), "{message}");
            let allowed = Sandbox::builder()
                .worker_command(common::worker())
                .allow_reduced_protection(true)
                .build()
                .unwrap();
            assert!(allowed.reduced_protection().is_some());
        }
        Err(other) => panic!("unexpected error: {other}"),
    }
    // In-process sessions have no worker to confine.
    assert_eq!(common::sandbox(Isolation::InProcess).protection(), None);
}

#[tokio::test]
async fn a_worker_that_cannot_confine_itself_is_refused_unless_allowed() {
    // A stand-in worker on a machine without Landlock: it answers the start message with what
    // is missing, as the real worker does when reduced protection is allowed.
    let unconfined = rlm_sandbox::WorkerCommand::new(
        "/bin/sh",
        [
            "-c",
            r#"read start; echo '{"type":"ready","protection":"seccomp filter","reduced_protection":"this kernel has no Landlock"}'"#,
        ],
    );
    let refused = Sandbox::builder()
        .worker_command(unconfined.clone())
        .build()
        .unwrap_err();
    let message = refused.to_string();
    assert!(matches!(refused, Error::Unavailable(_)), "{message}");
    assert!(message.contains("this kernel has no Landlock"), "{message}");
    assert!(message.contains("allow reduced protection"), "{message}");
    let allowed = Sandbox::builder()
        .worker_command(unconfined)
        .allow_reduced_protection(true)
        .build()
        .unwrap();
    assert_eq!(
        allowed.reduced_protection(),
        Some("this kernel has no Landlock")
    );
    assert_eq!(allowed.protection(), Some("seccomp filter"));
}

/// A process probes a worker command once: the next sandboxes built with it start no worker
/// before their sessions (the Python package builds one per completion).
#[test]
fn a_worker_command_is_probed_once_per_process() {
    let dir = tempfile::tempdir().unwrap();
    let starts = dir.path().join("starts");
    let script = format!("echo started >> '{}'; exec \"$0\"", starts.display());
    let command = rlm_sandbox::WorkerCommand::new(
        "/bin/sh",
        vec![
            "-c".to_owned(),
            script,
            env!("CARGO_BIN_EXE_rlm-sandbox-worker").to_owned(),
        ],
    );
    for _ in 0..3 {
        Sandbox::builder()
            .limits(common::small_limits())
            .worker_command(command.clone())
            .allow_reduced_protection(true)
            .build()
            .unwrap();
    }
    let started = std::fs::read_to_string(&starts).unwrap();
    assert_eq!(started.lines().count(), 1, "{started}");
}
