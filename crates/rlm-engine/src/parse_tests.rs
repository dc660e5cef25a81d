//! Table-driven corpus of tricky replies.

use super::*;

/// (name, reply, expected code blocks, expected answer)
type Case = (
    &'static str,
    &'static str,
    &'static [&'static str],
    Option<AnswerTag>,
);

fn text(value: &str) -> Option<AnswerTag> {
    Some(AnswerTag::Text(value.to_owned()))
}

fn var(value: &str) -> Option<AnswerTag> {
    Some(AnswerTag::Variable(value.to_owned()))
}

#[expect(clippy::too_many_lines, reason = "a table of cases, one per line")]
fn corpus() -> Vec<Case> {
    vec![
        ("plain final", "FINAL(42)", &[], text("42")),
        (
            "final then prose with parens",
            "FINAL(42) (this is the count (approximately))",
            &[],
            text("42"),
        ),
        (
            "nested parens inside final",
            "FINAL(f(x) = (a + b) * c)",
            &[],
            text("f(x) = (a + b) * c"),
        ),
        (
            "multi-line final",
            "Done.\nFINAL(line one\nline two (with note)\n)\ntrailing",
            &[],
            text("line one\nline two (with note)"),
        ),
        (
            "unclosed final runs to the end",
            "FINAL(the answer is 7",
            &[],
            text("the answer is 7"),
        ),
        (
            "final mentioned in prose is ignored",
            "I will call FINAL(x) once I know x.\n```repl\nprint(1)\n```",
            &["print(1)\n"],
            None,
        ),
        (
            "final_var mentioned in prose is ignored",
            "When ready I'll use FINAL_VAR(result).",
            &[],
            None,
        ),
        (
            "final at line start after indentation",
            "Answer:\n   FINAL(yes)",
            &[],
            text("yes"),
        ),
        ("final_var", "FINAL_VAR(result)", &[], var("result")),
        (
            "final_var with quotes and spaces",
            "FINAL_VAR( \"summary\" )",
            &[],
            var("summary"),
        ),
        (
            "code then final_var",
            "```repl\nresult = 6 * 7\n```\nFINAL_VAR(result)",
            &["result = 6 * 7\n"],
            var("result"),
        ),
        (
            "final inside a repl block is code, not an answer",
            "```repl\nFINAL(42)\n```",
            &["FINAL(42)\n"],
            None,
        ),
        (
            "final inside a text fence is prose",
            "Example:\n```text\nFINAL(not this)\n```\nstill thinking",
            &[],
            None,
        ),
        (
            "fence inside the answer is part of the answer",
            "FINAL(Use this:\n```python\nprint(\"hi\")\n```\n)",
            &[],
            text("Use this:\n```python\nprint(\"hi\")\n```"),
        ),
        (
            "multiple blocks run in order",
            "First:\n```repl\na = 1\n```\nThen:\n```python\nb = a + 1\n```\n```py\nprint(b)\n```",
            &["a = 1\n", "b = a + 1\n", "print(b)\n"],
            None,
        ),
        (
            "empty blocks are dropped",
            "```repl\n```\n```repl\n   \n```\n```repl\nx = 1\n```",
            &["x = 1\n"],
            None,
        ),
        (
            "crlf line endings",
            "```repl\r\nx = 1\r\nprint(x)\r\n```\r\nFINAL_VAR(x)\r\n",
            &["x = 1\nprint(x)\n"],
            var("x"),
        ),
        (
            "tags are case-insensitive and may carry extra info",
            "```Python title=a.py\nprint(2)\n```",
            &["print(2)\n"],
            None,
        ),
        (
            "untagged and json fences do not run",
            "```\nprint(1)\n```\n```json\n{\"a\": 1}\n```",
            &[],
            None,
        ),
        (
            "a tag on its own line opens code in an untagged fence (Qwen2.5-Coder-1.5B)",
            "```\nrepl\nprint(context[:100])\n```\n```\nPython\nx = 1\n```",
            &["print(context[:100])\n", "x = 1\n"],
            None,
        ),
        (
            "a tag alone in an untagged fence is no code",
            "```\nrepl\n```\n```\nrepl is the tag\nprint(1)\n```",
            &[],
            None,
        ),
        (
            "a fenced answer alone counts",
            "```\nFINAL(12345678)\n```\n```repl\nprint('late')\n```",
            &[],
            text("12345678"),
        ),
        (
            "a fenced answer variable alone counts",
            "```\nFINAL_VAR(result)\n```",
            &[],
            var("result"),
        ),
        (
            "an answer tag among other fenced lines is quoted text",
            "```\nWhen done, write:\nFINAL(42)\n```\n```text\nFINAL(7)\n```",
            &[],
            None,
        ),
        (
            "a fenced placeholder is still an echo",
            "```\nFINAL(...)\n```",
            &[],
            None,
        ),
        (
            "unterminated block still runs (stop sequence cut it)",
            "Let me look.\n```repl\nprint(len(context))\n",
            &["print(len(context))\n"],
            None,
        ),
        (
            "longer fence may contain a shorter one",
            "````repl\ns = \"\"\"\n```\n\"\"\"\nprint(s)\n````",
            &["s = \"\"\"\n```\n\"\"\"\nprint(s)\n"],
            None,
        ),
        (
            "tilde fences",
            "~~~repl\nprint(3)\n~~~",
            &["print(3)\n"],
            None,
        ),
        (
            "indented fence strips its indentation",
            "  ```repl\n  for x in [1]:\n      print(x)\n  ```",
            &["for x in [1]:\n    print(x)\n"],
            None,
        ),
        (
            "code after the answer is ignored",
            "FINAL(done)\n```repl\nprint('late')\n```",
            &[],
            text("done"),
        ),
        (
            "inline triple backticks are not a fence",
            "Use ```repl``` blocks.\nFINAL(ok)",
            &[],
            text("ok"),
        ),
        ("bold final is prose", "**FINAL(maybe)**\n", &[], None),
        ("empty reply", "", &[], None),
        ("empty final", "FINAL()", &[], text("")),
        (
            "final_var without closing paren is not a tag",
            "FINAL_VAR(result\nFINAL(fallback)",
            &[],
            text("fallback"),
        ),
    ]
}

#[test]
fn corpus_of_tricky_replies() {
    let mut failures = Vec::new();
    for (name, reply, blocks, answer) in corpus() {
        let parsed = parse_reply(reply);
        let expected: Vec<String> = blocks.iter().map(|b| (*b).to_owned()).collect();
        if parsed.code_blocks != expected || parsed.answer != answer {
            failures.push(format!(
                "{name}: got blocks {:?} answer {:?}; expected {:?} {:?}",
                parsed.code_blocks, parsed.answer, expected, answer
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn reports_unterminated_only_when_last_fence_is_open() {
    assert!(parse_reply("```repl\nx=1\n").unterminated);
    assert!(!parse_reply("```repl\nx=1\n```\n").unterminated);
}

#[test]
fn an_unclosed_final_is_flagged() {
    assert!(parse_reply("FINAL(Use:\n```python\nprint(1)").answer_unclosed);
    assert!(!parse_reply("FINAL(Use (this))").answer_unclosed);
    assert!(!parse_reply("```repl\nx = 1\n```").answer_unclosed);
}

/// A small model that repeats the instructions (older prompt wordings put these at the start
/// of a line) has not answered; a real tag after the echo still counts.
#[test]
fn echoed_placeholder_tags_are_not_answers() {
    let echo = "Continue with more code, or answer with FINAL(...) or\nFINAL_VAR(...) if done.\n\
                FINAL(the answer, written out)\nFINAL_VAR(variable_name)\nFINAL(your answer)\n";
    assert_eq!(parse_reply(echo).answer, None);
    let then_real = format!("{echo}FINAL(42)");
    assert_eq!(
        parse_reply(&then_real).answer,
        Some(AnswerTag::Text("42".to_owned()))
    );
    assert_eq!(
        parse_reply("FINAL_VAR(result)").answer,
        Some(AnswerTag::Variable("result".to_owned()))
    );
}
