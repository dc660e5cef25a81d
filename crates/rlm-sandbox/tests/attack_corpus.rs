//! The attack corpus: hostile model code from the attack run (issue 12), kept as a test.
//!
//! Each snippet tries one way out and prints `ESCAPED` only if the step that should be
//! impossible worked. For every snippet the test checks that it did not, that no host secret
//! (the test process's environment) and no file outside the sandbox reached the output, that
//! nothing was written to disk, and that the session still answers afterwards.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::session;

/// One hostile snippet; `{mark}` is replaced by a path the code must not be able to create.
struct Attack {
    name: &'static str,
    code: &'static str,
}

const fn attack(name: &'static str, code: &'static str) -> Attack {
    Attack { name, code }
}

/// Ways out of the interpreter: files, environment, processes, network, introspection.
const ESCAPES: &[Attack] = &[
    attack(
        "open for reading",
        "print(open('/etc/hostname').read())\nprint('ESCAPED')",
    ),
    attack(
        "open for writing",
        "f = open('{mark}', 'w')\nf.write('x')\nprint('ESCAPED')",
    ),
    attack(
        "pathlib read",
        "from pathlib import Path\nprint(Path('/etc/hostname').read_text())\nprint('ESCAPED')",
    ),
    attack(
        "pathlib write",
        "from pathlib import Path\nPath('{mark}').write_text('x')\nprint('ESCAPED')",
    ),
    attack(
        "pathlib listing",
        "from pathlib import Path\nprint(list(Path('/').iterdir()))\nprint('ESCAPED')",
    ),
    attack(
        "proc environ",
        "from pathlib import Path\nprint(Path('/proc/self/environ').read_bytes())\nprint('ESCAPED')",
    ),
    attack(
        "parent environ",
        "from pathlib import Path\nprint(Path('/proc/1/environ').read_text())\nprint('ESCAPED')",
    ),
    attack(
        "os.environ",
        "import os\nprint(os.environ)\nprint('ESCAPED')",
    ),
    attack(
        "os.getenv",
        "import os\nprint(os.getenv('CARGO_MANIFEST_DIR'))\nprint('ESCAPED')",
    ),
    attack(
        "os.system",
        "import os\nos.system('touch {mark}')\nprint('ESCAPED')",
    ),
    attack(
        "os.popen",
        "import os\nprint(os.popen('id').read())\nprint('ESCAPED')",
    ),
    attack(
        "os.listdir",
        "import os\nprint(os.listdir('/'))\nprint('ESCAPED')",
    ),
    attack(
        "os.remove",
        "import os\nos.remove('/etc/hostname')\nprint('ESCAPED')",
    ),
    attack(
        "subprocess",
        "import subprocess\nsubprocess.run(['touch', '{mark}'])\nprint('ESCAPED')",
    ),
    attack(
        "socket",
        "import socket\nsocket.create_connection(('127.0.0.1', 22))\nprint('ESCAPED')",
    ),
    attack(
        "urllib",
        "import urllib.request\nurllib.request.urlopen('http://127.0.0.1/')\nprint('ESCAPED')",
    ),
    attack(
        "http.client",
        "import http.client\nhttp.client.HTTPConnection('127.0.0.1').request('GET', '/')\nprint('ESCAPED')",
    ),
    attack(
        "ctypes",
        "import ctypes\nctypes.CDLL(None).system(b'touch {mark}')\nprint('ESCAPED')",
    ),
    attack(
        "importlib",
        "import importlib\nimportlib.import_module('os').system('touch {mark}')\nprint('ESCAPED')",
    ),
    attack(
        "__import__",
        "__import__('os').system('touch {mark}')\nprint('ESCAPED')",
    ),
    attack("exec", "exec(\"open('{mark}', 'w')\")\nprint('ESCAPED')"),
    attack(
        "eval",
        "eval(\"__import__('os').system('touch {mark}')\")\nprint('ESCAPED')",
    ),
    attack("compile", "compile('1', 'x', 'exec')\nprint('ESCAPED')"),
    attack(
        "subclasses walk",
        "for c in ().__class__.__base__.__subclasses__():\n    print(c)\nprint('ESCAPED')",
    ),
    attack(
        "builtins dict",
        "b = __builtins__\nb['open']('{mark}', 'w')\nprint('ESCAPED')",
    ),
    attack(
        "globals",
        "g = globals()\ng['__builtins__'].open('{mark}', 'w')\nprint('ESCAPED')",
    ),
    attack(
        "getattr on a function",
        "f = len\nprint(getattr(f, '__globals__'))\nprint('ESCAPED')",
    ),
    attack(
        "frame walk",
        "import sys\nprint(sys._getframe().f_back.f_globals)\nprint('ESCAPED')",
    ),
    attack(
        "sys.modules",
        "import sys\nsys.modules['os'].system('touch {mark}')\nprint('ESCAPED')",
    ),
    attack(
        "format string introspection",
        "print('{0.__class__.__init__.__globals__}'.format(len))\nprint('ESCAPED')",
    ),
    attack(
        "pickle",
        "import pickle\npickle.loads(b'cos\\nsystem\\n(S\"touch {mark}\"\\ntR.')\nprint('ESCAPED')",
    ),
    attack(
        "threading",
        "import threading\nthreading.Thread(target=print).start()\nprint('ESCAPED')",
    ),
    attack("signal", "import signal\nsignal.alarm(1)\nprint('ESCAPED')"),
    attack(
        "resource limits",
        "import resource\nresource.setrlimit(resource.RLIMIT_AS, (-1, -1))\nprint('ESCAPED')",
    ),
    attack(
        "shutil",
        "import shutil\nshutil.copy('/etc/hostname', '{mark}')\nprint('ESCAPED')",
    ),
    attack(
        "tempfile",
        "import tempfile\ntempfile.mkstemp()\nprint('ESCAPED')",
    ),
    attack("input", "input()\nprint('ESCAPED')"),
    attack("breakpoint", "breakpoint()\nprint('ESCAPED')"),
];

/// Resource bombs: each must end in an error (or a cut output), never take the host down.
const BOMBS: &[Attack] = &[
    attack("busy loop", "while True:\n    pass"),
    attack("huge string", "s = 'a' * 10**10"),
    attack("huge list", "l = [0] * 10**10"),
    attack(
        "growing list",
        "l = []\nwhile True:\n    l.append('x' * 1000)",
    ),
    attack("huge integer", "n = 2 ** (10 ** 10)"),
    attack("integer to text", "n = 10 ** 100000\ns = str(n) * 100000"),
    attack("recursion", "def f(n):\n    return f(n + 1)\nf(0)"),
    attack("nested data", "x = []\nfor i in range(10**7):\n    x = [x]"),
    attack("giant print", "print('x' * 10**8)"),
    attack("many prints", "for i in range(10**7):\n    print(i)"),
    attack("huge dict", "d = {}\nfor i in range(10**9):\n    d[i] = i"),
    attack("string doubling", "s = 'ab'\nwhile True:\n    s = s + s"),
    attack(
        "deep parse",
        "x = ((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))\nprint('ok')",
    ),
    attack(
        "exception storm",
        "while True:\n    try:\n        1 / 0\n    except ZeroDivisionError:\n        pass",
    ),
    attack("sort of a huge list", "sorted(range(10**9))"),
];

/// Text that must never reach model code: the test process's own environment.
fn host_secret() -> String {
    std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_owned())
}

#[tokio::test]
async fn no_escape_attempt_gets_out() {
    let temp = tempfile::tempdir().unwrap();
    let mark = temp.path().join("escaped");
    let mark_text = mark.to_str().unwrap();
    let secret = host_secret();
    let hostname = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
    let mut session = session("context").await;
    let mut failures = Vec::new();
    for attack in ESCAPES {
        let code = attack.code.replace("{mark}", mark_text);
        let result = session.execute(&code).await.unwrap();
        let exception = result
            .exception
            .as_ref()
            .map(|e| format!("{}: {}", e.kind, e.message))
            .unwrap_or_default();
        let seen = format!("{}\n{}\n{exception}", result.stdout, result.stderr);
        if result.stdout.contains("ESCAPED") {
            failures.push(format!("{}: ran to the end: {seen}", attack.name));
        }
        if seen.contains(&secret) {
            failures.push(format!("{}: the host environment leaked", attack.name));
        }
        if !hostname.trim().is_empty() && result.stdout.contains(hostname.trim()) {
            failures.push(format!("{}: a host file was read", attack.name));
        }
        if mark.exists() {
            failures.push(format!("{}: wrote {}", attack.name, mark.display()));
            std::fs::remove_file(&mark).unwrap();
        }
        let after = session.execute("print(len(context))").await.unwrap();
        if after.stdout != "7\n" {
            failures.push(format!(
                "{}: session unusable after: {after:?}",
                attack.name
            ));
        }
    }
    println!(
        "{} escape attempts, {} got out",
        ESCAPES.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{failures:#?}");
}

#[tokio::test]
async fn every_resource_bomb_is_stopped_and_the_session_goes_on() {
    let mut session = session("context").await;
    let mut failures = Vec::new();
    for attack in BOMBS {
        let result = session.execute(attack.code).await.unwrap();
        let stopped = result.exception.is_some()
            || result.stdout_truncated_chars > 0
            || result.stdout.trim() == "ok";
        if !stopped {
            failures.push(format!("{}: not stopped: {result:?}", attack.name));
        }
        if result.stdout.len() > 1000 {
            failures.push(format!("{}: output not capped", attack.name));
        }
        let after = session.execute("print(len(context))").await.unwrap();
        if after.stdout != "7\n" {
            failures.push(format!(
                "{}: session unusable after: {after:?}",
                attack.name
            ));
        }
    }
    println!(
        "{} resource bombs, {} not contained",
        BOMBS.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{failures:#?}");
}
