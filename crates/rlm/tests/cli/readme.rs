//! The README's keyless examples, read from README.md itself: the tests that replay them run
//! the commands as the README prints them, so an example that stops working (a renamed flag, a
//! moved file, a question that no longer matches the recording) fails a test.

use std::path::Path;

/// How every example command starts in the README: the binary built from the checkout.
const CARGO_RUN: &str = "cargo run --release --locked -p rlm -- ";

/// The arguments after `cargo run … --` of the README command whose arguments start with
/// `start` (e.g. `"run --replay"`), with `\` line continuations joined and `"…"` words unquoted.
/// Panics when the README has no such command: the failure the callers want.
pub fn command(start: &str) -> Vec<String> {
    let joined = readme().replace("\\\n", " ");
    let line = joined
        .lines()
        .map(|line| line.trim_start().trim_start_matches("$ "))
        .find_map(|line| {
            line.strip_prefix(CARGO_RUN)
                .filter(|rest| rest.starts_with(start))
        })
        .expect("README.md has the `cargo run … --` command the test runs");
    words(line)
}

/// What the README shows a command printing: the lines after the command whose arguments start
/// with `start`, up to the end of its code block.
pub fn shown_output(start: &str) -> String {
    let readme = readme().replace("\\\n", " ");
    let begin = readme
        .find(&format!("$ {CARGO_RUN}{start}"))
        .expect("README.md has the `$ cargo run … --` example whose output the test compares");
    let after_command = &readme[begin..];
    let output = &after_command[after_command.find('\n').map_or(0, |end| end + 1)..];
    output[..output.find("```").unwrap_or(output.len())].to_owned()
}

fn readme() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md")).unwrap()
}

/// Splits a shell command line of plain and double-quoted words (all the README's examples use).
fn words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current: Option<String> = None;
    let mut quoted = false;
    for character in line.chars() {
        match character {
            '"' => {
                quoted = !quoted;
                current.get_or_insert_with(String::new);
            }
            c if c.is_whitespace() && !quoted => words.extend(current.take()),
            c => current.get_or_insert_with(String::new).push(c),
        }
    }
    assert!(!quoted, "unbalanced quote in the README command: {line}");
    words.extend(current);
    words
}

#[test]
fn words_split_like_a_shell() {
    assert_eq!(
        words(r#"query --model  m "How does it fail?" -x"#),
        ["query", "--model", "m", "How does it fail?", "-x"]
    );
}
