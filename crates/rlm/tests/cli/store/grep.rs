//! `rlm grep`: ripgrep-style lines and its flags.

use super::*;

#[test]
fn grep_prints_ripgrep_style_lines() {
    let fixture = Fixture::new();
    fixture.load();
    let out = stdout(fixture.rlm().args([
        "grep",
        "log(ger|ging)",
        "-C",
        "1",
        "--buffer",
        "project/src/app.py",
    ]));
    insta::assert_snapshot!("grep", out);
    fixture
        .rlm()
        .args(["grep", "no_such_thing_anywhere"])
        .assert()
        .code(1);
    // A pattern that needs a line break is an input error that says why.
    let refused = fixture.rlm().args(["grep", "argv\\n"]).assert().code(2);
    let stderr = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    assert!(
        stderr.contains("invalid regular expression") && stderr.contains("within one line"),
        "{stderr}"
    );
}

#[test]
fn grep_takes_fixed_strings_words_names_counts_and_one_sided_context() {
    let fixture = Fixture::new();
    fixture.load();
    let grep = |args: &[&str]| stdout(fixture.rlm().arg("grep").args(args));
    assert_eq!(
        grep(&["-F", "getLogger(__name__)"]),
        "project/src/app.py:3:log = logging.getLogger(__name__)\n"
    );
    assert_eq!(
        grep(&["-w", "log"]),
        "project/src/app.py:3:log = logging.getLogger(__name__)\n"
    );
    assert_eq!(
        grep(&["-l", "logg"]),
        "project/docs/guide.md\nproject/src/app.py\n"
    );
    assert_eq!(
        grep(&["-c", "log"]),
        "project/docs/guide.md:1\nproject/src/app.py:2\n"
    );
    assert_eq!(
        grep(&["-A", "1", "def"]),
        "project/src/app.py:6:def parse_args(argv):\nproject/src/app.py-7-    return argv[1:]\n"
    );
    assert_eq!(
        grep(&["-B", "1", "^def"]),
        "project/src/app.py-5-\nproject/src/app.py:6:def parse_args(argv):\n"
    );
    let coloured = grep(&["--color", "always", "-w", "log"]);
    assert!(
        coloured.contains("\u{1b}[1m\u{1b}[31mlog\u{1b}[0m = logging"),
        "{coloured:?}"
    );
    // Search snippets mark the matched terms the same way.
    let search = stdout(
        fixture
            .rlm()
            .args(["search", "--color", "always", "parse_args"]),
    );
    assert!(
        search.contains("def \u{1b}[1m\u{1b}[31mparse_args\u{1b}[0m(argv):"),
        "{search:?}"
    );
}

#[test]
fn a_bad_pattern_is_shown_as_written() {
    let fixture = Fixture::new();
    fixture.load();
    let (code, _, stderr) = run(fixture.rlm().args(["grep", "(unclosed"]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("invalid regular expression"), "{stderr}");
    assert!(stderr.contains("    (unclosed\n"), "{stderr}");
    // Not the group grep-regex wraps a pattern in.
    assert!(!stderr.contains("(?:"), "{stderr}");
    let (code, _, stderr) = run(fixture.rlm().args(["grep", "-w", "a[b"]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        !stderr.contains("(?:") && stderr.contains("a[b"),
        "{stderr}"
    );
}
