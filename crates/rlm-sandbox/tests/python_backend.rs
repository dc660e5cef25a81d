//! The opt-in CPython backend: same protocol and semantics, plus the OS sandbox around it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{FakeHost, small_limits};
use rlm_sandbox::{Backend, ContextInput, ExecutionResult, Sandbox, Session};

async fn python_session(context: &str) -> Option<Session> {
    let sandbox = match Sandbox::builder()
        .backend(Backend::Python)
        .limits(small_limits())
        .build()
    {
        Ok(sandbox) => sandbox,
        // No python3 on this machine: nothing to test (the Monty suites still run).
        Err(rlm_sandbox::Error::Spawn { .. }) => {
            eprintln!("python3 not found; skipping the CPython backend tests");
            return None;
        }
        Err(error) => panic!("python backend unavailable: {error}"),
    };
    assert_eq!(sandbox.reduced_protection(), None);
    let host = Arc::new(FakeHost {
        latency: Duration::from_millis(100),
        ..FakeHost::default()
    });
    Some(
        Session::start(&sandbox, vec![ContextInput::from(context)], None, host)
            .await
            .unwrap(),
    )
}

fn kind(result: &ExecutionResult) -> &str {
    result
        .exception
        .as_ref()
        .map_or("<none>", |error| error.kind.as_str())
}

#[tokio::test]
async fn python_backend_runs_the_same_protocol() {
    let context = "alpha ünïcode\nsecret code: XYZ-1234\nbeta\nsecret code: ABC-9999\n";
    let Some(mut session) = python_session(context).await else {
        return;
    };
    let code = "found = find_all(r'[A-Z]{3}-\\d{4}')\n\
                start, end, text = found[1]\n\
                print(len(found), text, context[start:end] == text, slice_text(start, end) == text)\n\
                print(line_range(1, 3))\n\
                print(grep('secret', 0), end='')\n\
                print(chunk_text(10, 2)[1], line_count(), len(find_all('e', max_matches=3)))";
    let result = session.execute(code).await.unwrap();
    assert_eq!(
        result.stdout,
        "2 ABC-9999 True True\n['secret code: XYZ-1234', 'beta']\n1: secret code: XYZ-1234\n3: secret code: ABC-9999\n\
         ïcode\nsecr 4 3\n",
        "{result:?}"
    );
    let result = session
        .execute("class Answer(Exception):\n    pass\nanswers = llm_query_batched(['a', 'FAIL b'])\nprint(answers)")
        .await
        .unwrap();
    assert_eq!(
        result.stdout, "['answer:a', 'Error: refused FAIL b']\n",
        "{result:?}"
    );
    assert_eq!(result.sub_calls.len(), 2);
    let result = session
        .execute("final = answers[0]\nFINAL_VAR('final')")
        .await
        .unwrap();
    assert_eq!(result.final_answer.unwrap().value, "answer:a");
    assert_eq!(
        session.variable_repr("answers").await.unwrap().as_deref(),
        Some("['answer:a', 'Error: refused FAIL b']")
    );
    assert!(
        session
            .variable_names()
            .await
            .unwrap()
            .contains(&"Answer".to_owned())
    );
    let failing = session.execute("x = 1\n1 / 0").await.unwrap();
    assert_eq!(
        (kind(&failing), failing.exception.as_ref().unwrap().line),
        ("ZeroDivisionError", Some(2))
    );
    assert_eq!(session.execute("print(x)").await.unwrap().stdout, "1\n");
}

#[tokio::test]
async fn python_backend_is_locked_down() {
    let Some(mut session) = python_session("context").await else {
        return;
    };
    let read = session.execute("open('/etc/passwd').read()").await.unwrap();
    assert_eq!(kind(&read), "PermissionError", "{read:?}");
    let write = session
        .execute("open('/tmp/rlm-sandbox-escape', 'w').write('x')")
        .await
        .unwrap();
    assert_eq!(kind(&write), "PermissionError", "{write:?}");
    assert!(!std::path::Path::new("/tmp/rlm-sandbox-escape").exists());
    let import = session.execute("import subprocess").await.unwrap();
    assert!(!import.is_ok(), "{import:?}");
    let os_exec = session
        .execute("import os\nos.system('true')")
        .await
        .unwrap();
    assert!(os_exec.stdout.is_empty() && session.variable_str("x").await.unwrap().is_none());
    let env = session
        .execute("import os\nprint('PATH' in os.environ, 'HOME' in os.environ)")
        .await
        .unwrap();
    assert_eq!(env.stdout, "False False\n", "{env:?}");
    let network = session
        .execute("import _socket\ns = _socket.socket()\ns.connect(('1.1.1.1', 80))")
        .await
        .unwrap();
    // `_socket` is a shared library the worker never loaded, so Landlock stops the import itself.
    assert!(
        matches!(
            kind(&network),
            "ImportError" | "OSError" | "PermissionError"
        ),
        "{network:?}"
    );
    let memory = session.execute("hoard = 'a' * 10**10").await.unwrap();
    assert_eq!(kind(&memory), "MemoryError", "{memory:?}");
    session.execute("kept = 'yes'").await.unwrap();
    let spin = session.execute("while True:\n    pass").await.unwrap();
    assert_eq!(kind(&spin), "TimeoutError", "{spin:?}");
    assert_eq!(
        session.variable_str("kept").await.unwrap().as_deref(),
        Some("yes")
    );
    // Code that swallows the timeout is killed; the session reports the lost state.
    let stubborn = session
        .execute("while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass")
        .await
        .unwrap();
    assert!(stubborn.worker_restarted.is_some(), "{stubborn:?}");
    assert_eq!(session.variable_str("kept").await.unwrap(), None);
    assert_eq!(
        session.execute("print(len(context))").await.unwrap().stdout,
        "7\n"
    );
}

/// As in the Monty worker, `re` and `json` are imported already.
#[tokio::test]
async fn python_backend_has_re_and_json_imported_already() {
    let Some(mut session) = python_session("a1b22").await else {
        return;
    };
    let result = session
        .execute("print(re.findall(r'\\d+', context), json.dumps({'k': [1]}))")
        .await
        .unwrap();
    assert_eq!(result.stdout, "['1', '22'] {\"k\": [1]}\n", "{result:?}");
}
