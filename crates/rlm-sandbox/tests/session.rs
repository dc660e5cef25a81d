//! Session semantics: persistence, contexts, host functions, final answers, helpers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{FakeHost, sandbox, session, session_with};
use rlm_sandbox::{ContextInput, Isolation, Session, SubCallKind};

#[tokio::test]
async fn variables_persist_and_survive_errors() {
    let mut session = session("abc").await;
    let first = session
        .execute("x = 41\nprint(len(context))")
        .await
        .unwrap();
    assert!(first.is_ok(), "{first:?}");
    assert_eq!(first.stdout, "3\n");
    let failing = session.execute("y = 1\nundefined_name + 1").await.unwrap();
    let error = failing.exception.unwrap();
    assert_eq!(error.kind, "NameError");
    assert_eq!(error.line, Some(2));
    assert!(
        failing.stderr.contains("undefined_name"),
        "{}",
        failing.stderr
    );
    let after = session.execute("print(x + y)").await.unwrap();
    assert_eq!(after.stdout, "42\n");
    assert!(after.worker_restarted.is_none());
}

#[tokio::test]
async fn several_contexts_and_meta_are_bound() {
    let contexts = vec![
        ContextInput::from("first"),
        ContextInput::List(vec!["a".to_owned(), "b".to_owned()]),
        ContextInput::Json(serde_json::json!({"k": [1, 2.5, null, true]})),
    ];
    let meta = Some(serde_json::json!({"source": "test"}));
    let mut session = Session::start(
        &sandbox(Isolation::Process),
        contexts,
        meta,
        Arc::new(FakeHost::default()),
    )
    .await
    .unwrap();
    let result = session
        .execute("print(context, context is context_0, context_1, context_2['k'], contextMeta['source'])")
        .await
        .unwrap();
    assert_eq!(
        result.stdout, "first True ['a', 'b'] [1, 2.5, None, True] test\n",
        "{result:?}"
    );
    let names = session.variable_names().await.unwrap();
    for expected in [
        "context",
        "contextMeta",
        "context_0",
        "context_1",
        "context_2",
    ] {
        assert!(names.contains(&expected.to_owned()), "{names:?}");
    }
}

#[tokio::test]
async fn text_file_context_is_read_by_the_worker() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("ctx.txt");
    std::fs::write(&path, "héllo\nwörld\n").unwrap();
    let mut session = session_with(Isolation::Process, vec![ContextInput::TextFile(path)]).await;
    let result = session
        .execute("print(context.splitlines()[1], line_count())")
        .await
        .unwrap();
    assert_eq!(result.stdout, "wörld 2\n");
}

#[tokio::test]
async fn invalid_utf8_in_a_text_file_reads_as_replacement_characters() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("latin1.txt");
    std::fs::write(&path, b"caf\xe9 \xff\xfe\n").unwrap();
    let mut session = session_with(Isolation::Process, vec![ContextInput::TextFile(path)]).await;
    let result = session
        .execute("print(len(context), context[3] == '\\ufffd', context.count('\\ufffd'))")
        .await
        .unwrap();
    assert_eq!(result.stdout, "8 True 3\n", "{result:?}");
}

#[tokio::test]
async fn helpers_on_an_invalid_utf8_file_use_the_replaced_text() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("latin1.txt");
    std::fs::write(&path, b"caf\xe9 au lait\nna\xefve ERROR\n").unwrap();
    let mut session = session_with(Isolation::Process, vec![ContextInput::TextFile(path)]).await;
    let result = session
        .execute(
            "start, end, text = find_all('ERROR')[0]\n\
             print(context[start:end], slice_text(0, 4) == context[0:4], line_range(1))",
        )
        .await
        .unwrap();
    assert_eq!(
        result.stdout, "ERROR True ['na\u{fffd}ve ERROR']\n",
        "{result:?}"
    );
}

#[tokio::test]
async fn a_context_file_shortened_on_disk_is_refused_by_the_helpers_only() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("log.txt");
    let line = "ünïcode line with ERROR in it\n";
    std::fs::write(&path, line.repeat(20_000)).unwrap();
    let mut session = session_with(
        Isolation::Process,
        vec![ContextInput::TextFile(path.clone())],
    )
    .await;
    let before = session
        .execute("print(len(find_all('ERROR', max_matches=100000)), line_count())")
        .await
        .unwrap();
    assert_eq!(before.stdout, "20000 20000\n", "{before:?}");
    // Log rotation by `copytruncate`: the file the worker mapped is emptied under it.
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(0)
        .unwrap();
    let after = session.execute("grep('ERROR')").await.unwrap();
    assert!(after.worker_restarted.is_none(), "{after:?}");
    let error = after.exception.unwrap();
    assert_eq!(error.kind, "OSError");
    assert!(error.message.contains("shrank"), "{error:?}");
    let kept = session
        .execute("print(len(context), context.count('ERROR'))")
        .await
        .unwrap();
    assert_eq!(
        kept.stdout,
        format!("{} 20000\n", line.chars().count() * 20_000)
    );
}

/// Issue 45: a context file rewritten in place (same size, other bytes) while the session runs
/// made `find_all`, `slice_text` and `line_range` answer from the new bytes while `context` kept
/// the old ones. Now each refuses with `OSError`; an append is harmless and goes on.
#[tokio::test]
async fn a_context_file_rewritten_on_disk_is_refused_by_the_helpers_only() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("log.txt");
    let line = "ünïcode line with ERROR in it\n";
    std::fs::write(&path, line.repeat(1_000)).unwrap();
    let mut session = session_with(
        Isolation::Process,
        vec![ContextInput::TextFile(path.clone())],
    )
    .await;
    let before = session
        .execute("print(len(find_all('ERROR')), slice_text(0, 7), line_range(0, 1))")
        .await
        .unwrap();
    assert_eq!(
        before.stdout, "1000 ünïcode ['ünïcode line with ERROR in it']\n",
        "{before:?}"
    );
    // A log being written to: appended lines leave the mapped bytes as they were.
    let file = std::fs::File::options().append(true).open(&path).unwrap();
    std::io::Write::write_all(&mut &file, b"appended\n").unwrap();
    let appended = session
        .execute("print(len(find_all('ERROR')))")
        .await
        .unwrap();
    assert_eq!(appended.stdout, "1000\n", "{appended:?}");
    // Rewritten in place: the same size, WARN for ERROR.
    let rewritten = line.replace("ERROR", "WARNX").repeat(1_000);
    let file = std::fs::File::options().write(true).open(&path).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&file, rewritten.as_bytes(), 0).unwrap();
    for call in [
        "find_all('WARNX')",
        "slice_text(18, 23)",
        "line_range(0, 1)",
    ] {
        let after = session.execute(call).await.unwrap();
        let error = after
            .exception
            .clone()
            .unwrap_or_else(|| panic!("{call}: {after:?}"));
        assert_eq!(error.kind, "OSError", "{call}");
        assert!(error.message.contains("rewritten"), "{call}: {error:?}");
    }
    let kept = session
        .execute("print(context.count('ERROR'), context.count('WARNX'))")
        .await
        .unwrap();
    assert_eq!(kept.stdout, "1000 0\n");
}

#[tokio::test]
async fn llm_calls_are_answered_and_recorded() {
    let host = Arc::new(FakeHost {
        latency: Duration::from_millis(200),
        ..FakeHost::default()
    });
    let mut session = Session::start(
        &sandbox(Isolation::Process),
        vec!["ctx".into()],
        None,
        host.clone(),
    )
    .await
    .unwrap();
    let code = "single = llm_query('hi', model='m1')\n\
                many = llm_query_batched(['p' + str(i) for i in range(10)] + ['FAIL me'])\n\
                deep = rlm_query('sub')\n\
                print(single)\nprint(many[0], many[-1])\nprint(deep)";
    let result = session.execute(code).await.unwrap();
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(
        result.stdout,
        "answer[m1]:hi\nanswer:p0 Error: refused FAIL me\nsub-run:sub\n"
    );
    assert_eq!(result.sub_calls.len(), 13);
    assert_eq!(result.sub_calls[0].kind, SubCallKind::LlmQuery);
    assert_eq!(result.sub_calls[0].model.as_deref(), Some("m1"));
    let batch: Vec<_> = result
        .sub_calls
        .iter()
        .filter(|call| call.kind == SubCallKind::LlmQueryBatched)
        .collect();
    assert_eq!(batch.len(), 11);
    assert_eq!(batch[10].error.as_deref(), Some("refused FAIL me"));
    assert_eq!(batch[3].prompt_chars, 2);
    // Eleven 200 ms calls ran concurrently: far less than 11 × 200 ms (host time is not
    // interpreter time, so the 1 s interpreter timeout is not hit either).
    assert!(
        batch[0].latency < Duration::from_millis(1500),
        "{:?}",
        batch[0].latency
    );
    assert_eq!(host.calls.load(std::sync::atomic::Ordering::SeqCst), 12);
}

#[tokio::test]
async fn host_function_arguments_are_checked() {
    let mut session = session("ctx").await;
    let result = session.execute("llm_query(42)").await.unwrap();
    let error = result.exception.unwrap();
    assert_eq!(error.kind, "TypeError");
    assert!(
        error.message.contains("'prompt' must be str"),
        "{}",
        error.message
    );
    let result = session
        .execute("llm_query_batched('not a list')")
        .await
        .unwrap();
    assert_eq!(result.exception.unwrap().kind, "TypeError");
    assert!(
        session
            .execute("print(llm_query_batched([]))")
            .await
            .unwrap()
            .stdout
            == "[]\n"
    );
}

#[tokio::test]
async fn final_var_resolves_the_variable_and_final_takes_a_value() {
    let mut session = session("ctx").await;
    let result = session
        .execute("answer = 'forty two'\nFINAL_VAR('answer')")
        .await
        .unwrap();
    let answer = result.final_answer.unwrap();
    assert_eq!(
        (answer.variable.as_deref(), answer.value.as_str()),
        (Some("answer"), "forty two")
    );
    let result = session.execute("FINAL_VAR(answer)").await.unwrap();
    assert_eq!(result.final_answer.unwrap().value, "forty two");
    let result = session.execute("FINAL(6 * 7)").await.unwrap();
    let answer = result.final_answer.unwrap();
    assert_eq!((answer.variable, answer.value.as_str()), (None, "42"));
    let missing = session.execute("FINAL_VAR('nope')").await.unwrap();
    assert!(missing.final_answer.is_none());
    assert_eq!(missing.exception.unwrap().kind, "NameError");
}

#[tokio::test]
async fn variable_access_from_the_host() {
    let mut session = session("ctx").await;
    session
        .execute("numbers = [1, 2]\ntext = 'a\\nb'\ndef f(): return 1\nok = isinstance(str(len(numbers)), str)")
        .await
        .unwrap();
    assert_eq!(
        session.variable_str("text").await.unwrap().as_deref(),
        Some("a\nb")
    );
    assert_eq!(
        session.variable_repr("text").await.unwrap().as_deref(),
        Some("'a\\nb'")
    );
    assert_eq!(
        session.variable_repr("numbers").await.unwrap().as_deref(),
        Some("[1, 2]")
    );
    assert_eq!(session.variable_str("missing").await.unwrap(), None);
    assert!(session.variable_str("not a name; import os").await.is_err());
    let variables = session.variables().await.unwrap();
    let names: Vec<_> = variables
        .iter()
        .map(|variable| (variable.name.as_str(), variable.type_name.as_str()))
        .collect();
    assert!(names.contains(&("numbers", "list")), "{names:?}");
    assert!(names.contains(&("f", "function")), "{names:?}");
    assert!(!names.iter().any(|(name, _)| *name == "print"), "{names:?}");
    // Builtin types the code only named are not its variables.
    assert!(
        !names.iter().any(|(name, _)| ["str", "len"].contains(name)),
        "{names:?}"
    );
    assert!(names.contains(&("ok", "bool")), "{names:?}");
    let shown = session
        .execute("print(SHOW_VARS()['numbers'])")
        .await
        .unwrap();
    assert_eq!(shown.stdout, "list\n");
}

#[tokio::test]
async fn helpers_work_on_the_context_with_char_positions() {
    let context = "alpha ünïcode\nsecret code: XYZ-1234\nbeta\nsecret code: ABC-9999\n";
    let mut session = session(context).await;
    let code = "found = find_all(r'[A-Z]{3}-\\d{4}')\n\
                start, end, text = found[1]\n\
                print(len(found), text, context[start:end] == text, slice_text(start, end) == text)\n\
                print(line_range(1, 3))\n\
                print(grep('secret', 0), end='')\n\
                print(chunk_text(10, 2)[1], line_count(), len(find_all('e', max_matches=3)))";
    let result = session.execute(code).await.unwrap();
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(
        result.stdout,
        "2 ABC-9999 True True\n['secret code: XYZ-1234', 'beta']\n1: secret code: XYZ-1234\n3: secret code: ABC-9999\n\
         ïcode\nsecr 4 3\n"
    );
    let bad = session.execute("find_all('(unclosed')").await.unwrap();
    assert_eq!(bad.exception.unwrap().kind, "ValueError");
}

#[tokio::test]
async fn helpers_refuse_non_text_contexts_clearly() {
    let mut session = session_with(
        Isolation::Process,
        vec![ContextInput::List(vec!["x".to_owned()])],
    )
    .await;
    let result = session.execute("grep('x')").await.unwrap();
    let error = result.exception.unwrap();
    assert_eq!(error.kind, "TypeError");
    assert!(error.message.contains("not a string"), "{}", error.message);
    let result = session
        .execute("print(grep('x', text=context[0]), end='')")
        .await
        .unwrap();
    assert_eq!(result.stdout, "0: x\n");
}

#[tokio::test]
async fn in_process_mode_has_the_same_semantics() {
    let mut session = session_with(Isolation::InProcess, vec!["in process".into()]).await;
    let result = session
        .execute("words = context.split()\nprint(llm_query(words[1]))")
        .await
        .unwrap();
    assert_eq!(result.stdout, "answer:process\n");
    let result = session.execute("while True:\n    pass").await.unwrap();
    assert_eq!(result.exception.unwrap().kind, "TimeoutError");
    assert_eq!(
        session.execute("print(words)").await.unwrap().stdout,
        "['in', 'process']\n"
    );
}

#[tokio::test]
async fn output_is_capped_visibly() {
    let mut session = session("ctx").await;
    let result = session
        .execute("for i in range(500):\n    print('line', i)")
        .await
        .unwrap();
    assert!(result.is_ok());
    assert_eq!(result.stdout.chars().count(), 1000);
    assert!(
        result.stdout_truncated_chars > 2000,
        "{}",
        result.stdout_truncated_chars
    );
    assert!(
        result
            .to_model_text()
            .contains(&format!("… {} more chars", result.stdout_truncated_chars))
    );
}

#[test]
fn sessions_and_their_futures_can_move_between_threads() {
    fn assert_send<T: Send>(_: &T) {}
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut session = runtime.block_on(session("ctx"));
    assert_send(&session);
    let future = session.execute("print(1)");
    assert_send(&future);
    let result = runtime.block_on(future).unwrap();
    assert_eq!(result.stdout, "1\n");
}

#[tokio::test]
async fn host_functions_refuse_arguments_python_would_refuse() {
    let mut session = session("ctx").await;
    let cases = [
        ("llm_query(None)", "'prompt' must be str, not NoneType"),
        (
            "f = lambda x: x\nllm_query(f)",
            "'prompt' must be str, not function",
        ),
        (
            "llm_query('p', 'm', 'extra')",
            "llm_query() takes at most 2 positional arguments (3 given)",
        ),
        (
            "llm_query('p', temperature=0.2)",
            "llm_query() got an unexpected keyword argument 'temperature'",
        ),
        (
            "llm_query('p', prompt='q')",
            "got multiple values for argument 'prompt'",
        ),
        (
            "llm_query_batched(None)",
            "'prompts' must be a list of str, not NoneType",
        ),
        ("llm_query()", "missing required argument 'prompt' (str)"),
        ("slice_text(None, 3)", "'start' must be int, not NoneType"),
        (
            "grep('x', max_lines=3)",
            "unexpected keyword argument 'max_lines'",
        ),
    ];
    for (code, expected) in cases {
        let result = session.execute(code).await.unwrap();
        let error = result.exception.clone().unwrap();
        assert_eq!(error.kind, "TypeError", "{code}: {result:?}");
        assert!(
            error.message.contains(expected),
            "{code}: {}",
            error.message
        );
        assert!(result.sub_calls.is_empty(), "{code} reached the host");
    }
    // Optional parameters still take None, by position or by name.
    let result = session
        .execute("print(llm_query('p', None), llm_query(prompt='q', model=None))")
        .await
        .unwrap();
    assert_eq!(result.stdout, "answer:p answer:q\n", "{result:?}");
}

#[tokio::test]
async fn printf_style_formatting_works_on_string_literals() {
    let mut session = session("ctx").await;
    // Expected outputs are CPython's.
    let cases = [
        ("i = 3\nprint('%d' % i)", "3\n"),
        (
            "print('%s has %d items (%.1f%%)' % ('box', 7, 12.345))",
            "box has 7 items (12.3%)\n",
        ),
        (
            "print('%5s|%-5s|%05.1f|%x|%r' % ('a', 'b', 3.14159, 255, 'q'))",
            "    a|b    |003.1|ff|'q'\n",
        ),
        (
            "print('%(name)s=%(n)03d' % {'name': 'k', 'n': 7})",
            "k=007\n",
        ),
        (
            "print('%d' % 3.9, '%s' % [1, 'a'], '%s' % None, '%c%c' % (72, 'i'), \
             '%+.2e|%g|%#x|%o' % (12345.678, 0.0001, 255, 8))",
            "3 [1, 'a'] None Hi +1.23e+04|0.0001|0xff|10\n",
        ),
        (
            "print('''line %d\nand %s''' % (1, 'two'))\nprint(17 % 5)",
            "line 1\nand two\n2\n",
        ),
    ];
    for (code, expected) in cases {
        let result = session.execute(code).await.unwrap();
        assert!(result.is_ok(), "{code}: {result:?}");
        assert_eq!(result.stdout, expected, "{code}");
    }
    let errors = [
        (
            "'%s %s' % ('only one',)",
            "not enough arguments for format string",
        ),
        (
            "'%d' % 'x'",
            "%d format: a real number is required, not str",
        ),
        (
            "'%d %d' % (1, 2, 3)",
            "not all arguments converted during string formatting",
        ),
    ];
    for (code, expected) in errors {
        let result = session.execute(code).await.unwrap();
        let error = result.exception.clone().unwrap();
        assert_eq!(
            (error.kind.as_str(), error.message.as_str()),
            ("TypeError", expected),
            "{code}"
        );
        assert_eq!(error.line, Some(1), "{code}");
        // The traceback shows the code as written, not the rewrite behind it.
        assert!(result.stderr.contains(code), "{}", result.stderr);
        assert!(!result.stderr.contains("_rlm_percent"), "{}", result.stderr);
    }
    // A format string in a variable is not rewritten: the error says what to use instead.
    let result = session.execute("fmt = '%d'\nfmt % 3").await.unwrap();
    assert_eq!(result.exception.unwrap().kind, "TypeError");
    assert!(
        result.stderr.contains("hint:") && result.stderr.contains("f-string"),
        "{}",
        result.stderr
    );
    // The helper behind the rewrite is not one of the session's variables.
    let names = session.variable_names().await.unwrap();
    assert!(
        !names.iter().any(|name| name.starts_with("_rlm")),
        "{names:?}"
    );
}

/// `re` and `json` are there without an import (the prompt says so; models use them so), and
/// are not listed as the code's variables.
#[tokio::test]
async fn re_and_json_are_imported_already() {
    let mut session = session("a1b22").await;
    let result = session
        .execute("print(re.findall(r'\\d+', context), json.dumps({'k': [1]}))")
        .await
        .unwrap();
    assert_eq!(result.stdout, "['1', '22'] {\"k\": [1]}\n", "{result:?}");
    let names = session.variable_names().await.unwrap();
    assert!(
        !names.iter().any(|name| name == "re" || name == "json"),
        "{names:?}"
    );
}

/// Monty builds a generator expression as a list, so `next(<generator>, default)` — common in
/// model code (Qwen2.5-Coder-1.5B ended a run on it, five turns in a row) — must take the list
/// as the generator it stands for; `next` on a real iterator is Python's own.
#[tokio::test]
async fn next_takes_a_generator_expression() {
    let mut session = session("xx launch code 7 yy").await;
    let code = "words = context.split()\n\
                print(next((i for i in range(10) if i > 3), None))\n\
                print(next((w for w in words if w == 'nothing'), 'none'))\n\
                print(next(w for w in words if w.isdigit()))\n\
                it = iter(words)\n\
                print(next(it), next(it), next(iter([]), 'empty'))";
    let result = session.execute(code).await.unwrap();
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(result.stdout, "4\nnone\n7\nxx launch empty\n", "{result:?}");
    let result = session
        .execute("next(w for w in context.split() if w == 'nothing')")
        .await
        .unwrap();
    assert_eq!(result.exception.unwrap().kind, "StopIteration");
    let names = session.variable_names().await.unwrap();
    assert!(!names.iter().any(|name| name == "next"), "{names:?}");
}
