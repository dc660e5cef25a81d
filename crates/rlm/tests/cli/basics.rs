//! The CLI's conventions and `rlm inspect`, driven through the real binary.

use crate::support::{json_lines, rlm_in as rlm, stdout_of, write};

#[test]
fn inspect_prints_the_hint_block_a_model_reads() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "feed.ndjson",
        "{\"author\":\"did:plc:abc\",\"text\":\"Arsenal win\",\"authorProfile\":{\"displayName\":\"A\"}}\n{\"author\":\"b\",\"hashtags\":[]}\n",
    );
    let out = stdout_of(
        rlm(dir.path())
            .args(["inspect", "feed.ndjson"])
            .assert()
            .success(),
    );
    insta::assert_snapshot!(out, @r#"
    [Context available in context]
      Source: feed.ndjson
      Format: NDJSON (newline-delimited JSON)
      Size: 111 chars, 2 lines
      Records: 2
      Fields: author, text, authorProfile, hashtags, authorProfile.displayName
      Sample: {"author":"did:plc:abc","text":"Arsenal win","authorProfile":{"displayName":"A"}}
    "#);
}

#[test]
fn inspect_csv_with_a_contradicting_extension_says_so() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "table.txt",
        "id,note\n1,\"two\nlines\"\n2,plain\n3,x\n",
    );
    let out = stdout_of(
        rlm(dir.path())
            .args(["inspect", "table.txt"])
            .assert()
            .success(),
    );
    insta::assert_snapshot!(out, @r#"
    [Context available in context]
      Source: table.txt
      Format: CSV (delimiter-separated values), delimiter ','
      Size: 34 chars, 5 lines
      Records: 3 (header excluded)
      Columns: id, note
      Note: the name suggests plain text but the content is CSV (delimiter-separated values)
      Sample: 1,"two\nlines"
    "#);
}

#[test]
fn inspect_json_lines_for_several_inputs_and_stdin() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "a.json",
        "[{\"x\":1},{\"x\":2,\"y\":{\"z\":3}}]",
    );
    let assert = rlm(dir.path())
        .args(["--json", "inspect", "a.json", "-", "--name", "piped.csv"])
        .write_stdin("k,v\n1,2\n")
        .assert()
        .success();
    let lines: Vec<serde_json::Value> = stdout_of(assert)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["type"], "metadata");
    assert_eq!(lines[0]["variable"], "context_0");
    assert_eq!(lines[0]["format"], "json-array");
    assert_eq!(lines[0]["records"], 2);
    assert_eq!(lines[0]["fields"], serde_json::json!(["x", "y", "y.z"]));
    assert_eq!(lines[0]["fields_truncated"], false);
    assert_eq!(lines[1]["variable"], "context_1");
    assert_eq!(lines[1]["source"], "piped.csv");
    assert_eq!(lines[1]["format"], "csv");
    assert_eq!(lines[1]["records"], 1);
}

#[test]
fn inline_text_without_a_name_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = stdout_of(
        rlm(dir.path())
            .args(["inspect", "--text", "hello\nworld"])
            .assert()
            .success(),
    );
    assert_eq!(
        out,
        "[Context available in context: plain text, 11 chars, 2 lines]\n"
    );
}

#[test]
fn missing_files_and_directories_are_input_errors_with_hints() {
    let dir = tempfile::tempdir().unwrap();
    let assert = rlm(dir.path())
        .args(["inspect", "nope.ndjson"])
        .assert()
        .code(2);
    let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.starts_with("error: cannot read nope.ndjson\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("Caused by: No such file or directory"),
        "{stderr}"
    );
    assert!(stderr.contains("hint: "), "{stderr}");

    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let assert = rlm(dir.path()).args(["inspect", "sub"]).assert().code(2);
    let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("error: sub is a directory"), "{stderr}");

    // One bad path among good ones: the good ones still print, the exit code says it failed.
    write(dir.path(), "ok.txt", "fine\n");
    let assert = rlm(dir.path())
        .args(["inspect", "ok.txt", "nope"])
        .assert()
        .code(2);
    assert!(stdout_of(assert).contains("Source: ok.txt"));
}

#[test]
fn absurd_flags_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    rlm(dir.path())
        .args(["inspect", "--sample-chars", "0", "--text", "x"])
        .assert()
        .code(2);
    rlm(dir.path())
        .args(["inspect", "--sample-chars", "-5", "--text", "x"])
        .assert()
        .code(2);
    rlm(dir.path()).args(["no-such-command"]).assert().code(2);
    rlm(dir.path()).arg("inspect").assert().code(2);
}

#[test]
fn version_help_and_completions() {
    let dir = tempfile::tempdir().unwrap();
    let version = stdout_of(rlm(dir.path()).arg("--version").assert().success());
    assert_eq!(version.trim(), format!("rlm {}", env!("CARGO_PKG_VERSION")));
    for shell in ["bash", "zsh", "fish"] {
        let script = stdout_of(
            rlm(dir.path())
                .args(["completions", shell])
                .assert()
                .success(),
        );
        assert!(
            script.contains("inspect"),
            "{shell} completions mention subcommands"
        );
    }
}

/// `--help` ends with examples (`-h` stays short); `rlm man` writes the main page on stdout,
/// and with `--dir` a page per command, each with its EXAMPLES section.
#[test]
fn long_help_has_examples_and_man_pages_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let long = stdout_of(rlm(dir.path()).args(["grep", "--help"]).assert().success());
    assert!(long.contains("\nExamples:\n  $ rlm grep "), "{long}");
    let short = stdout_of(rlm(dir.path()).args(["grep", "-h"]).assert().success());
    assert!(!short.contains("Examples:"), "{short}");
    let nested = stdout_of(
        rlm(dir.path())
            .args(["runs", "show", "--help"])
            .assert()
            .success(),
    );
    assert!(nested.contains("  $ rlm runs show last"), "{nested}");
    assert!(!nested.contains("$ rlm runs list"), "{nested}");

    let main_page = stdout_of(rlm(dir.path()).arg("man").assert().success());
    assert!(main_page.starts_with(".ie \\n(.g .ds Aq"), "{main_page}");
    assert!(main_page.contains(".TH rlm 1"), "{main_page}");
    assert!(main_page.contains(".SH EXAMPLES"), "{main_page}");

    let pages = dir.path().join("man/man1");
    let output = rlm(dir.path())
        .args(["man", "--dir"])
        .arg(&pages)
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&output.get_output().stderr).into_owned();
    let written = std::fs::read_dir(&pages).unwrap().count();
    assert!(written > 40, "{written} pages");
    assert!(
        stderr.contains(&format!("wrote {written} manual pages")),
        "{stderr}"
    );
    let load = std::fs::read_to_string(pages.join("rlm-load.1")).unwrap();
    assert!(load.contains(".SH EXAMPLES"), "{load}");
    // Hyphens are minus signs, so flags copy from the rendered page as typed.
    assert!(load.contains("\\-\\-chunker records"), "{load}");
    let show = std::fs::read_to_string(pages.join("rlm-runs-show.1")).unwrap();
    assert!(show.contains("rlm runs show last"), "{show}");
}

#[test]
fn config_layers_project_over_user_and_redacts_secrets() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("xdg/rlm")).unwrap();
    write(
        &dir.path().join("xdg/rlm"),
        "config.toml",
        "[llm]\nmodel = 'user-model'\ntimeout = 30\napi_key = 'sk-user-secret'\n",
    );
    write(dir.path(), "rlm.toml", "[llm]\nmodel = 'project-model'\n");
    let out = stdout_of(
        rlm(dir.path())
            .args(["--json", "config", "show"])
            .assert()
            .success(),
    );
    let lines = json_lines(&out);
    let shown = &lines[0];
    assert_eq!(shown["type"], "config");
    assert_eq!(shown["config"]["llm"]["model"], "project-model");
    assert_eq!(shown["config"]["llm"]["timeout"], 30);
    assert_eq!(shown["config"]["llm"]["api_key"], "<redacted>");
    assert!(!out.contains("sk-user-secret"));
    assert_eq!(shown["files"].as_array().unwrap().len(), 2);

    write(dir.path(), "broken.toml", "[llm\nmodel=");
    let assert = rlm(dir.path())
        .args(["--config", "broken.toml", "config", "show"])
        .assert()
        .code(2);
    let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.contains("hint: fix or remove broken.toml"),
        "{stderr}"
    );
}

/// `run` and `query` read and refuse a budget the same way: a negative or zero amount is an
/// input error with a hint, not a parse error on one and a hint on the other.
#[test]
fn run_and_query_refuse_the_same_bad_budgets_the_same_way() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            ["--max-cost", "-1"],
            "--max-cost -1 is not a positive amount",
            "hint: give a budget in US dollars",
        ),
        (
            ["--max-cost", "0"],
            "--max-cost 0 is not a positive amount",
            "hint: give a budget in US dollars",
        ),
        (
            ["--max-tokens", "-5"],
            "--max-tokens -5 must be at least 1",
            "hint: give a number of tokens",
        ),
        (
            ["--max-tokens", "0"],
            "--max-tokens 0 must be at least 1",
            "hint: give a number of tokens",
        ),
    ];
    for command in [vec!["run", "--context", "x"], vec!["query"]] {
        for (flag, error, hint) in &cases {
            let assert = rlm(dir.path())
                .args(&command)
                .args(flag)
                .args(["--model", "openai:x", "question"])
                .assert()
                .code(2);
            let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
            assert!(
                stderr.contains(&format!("error: {error}")),
                "{command:?} {flag:?}: {stderr}"
            );
            assert!(stderr.contains(hint), "{command:?} {flag:?}: {stderr}");
        }
    }
}

/// A section or key rlm does not know, or a value of the wrong type, is not silently ignored:
/// each gets a warning naming the file and what is wrong, and the command goes on.
#[test]
fn unknown_sections_keys_and_wrong_types_in_a_config_file_are_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "rlm.toml",
        "top = 1\n[quer]\ntop_k = 3\n[query]\ntop_k = 5\n[run]\nmax_answer_sise = '1MB'\n",
    );
    let assert = rlm(dir.path()).args(["config", "show"]).assert().success();
    let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    let file = dir.path().join("rlm.toml").canonicalize().unwrap();
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .collect();
    assert_eq!(warnings.len(), 3, "{stderr}");
    assert!(
        warnings.iter().all(|w| w.contains(&*file.to_string_lossy())
            || w.contains(&*dir.path().join("rlm.toml").to_string_lossy())),
        "{stderr}"
    );
    assert!(
        stderr.contains("unknown section [quer], ignored"),
        "{stderr}"
    );
    assert!(stderr.contains("unknown top-level key `top`"), "{stderr}");
    // A typo gets the name it is a typo of, not the list of every key.
    assert!(
        stderr.contains("[run]: unknown key `max_answer_sise`; did you mean `max_answer_size`?"),
        "{stderr}"
    );
    assert!(stderr.contains("did you mean [query]?"), "{stderr}");

    write(dir.path(), "rlm.toml", "[llm]\nmax_retries = 'three'\n");
    let assert = rlm(dir.path()).args(["config", "show"]).assert().success();
    let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.contains("[llm] max_retries: invalid type: string \"three\""),
        "{stderr}"
    );

    write(dir.path(), "rlm.toml", "[query]\ntop_k = 5\n");
    let assert = rlm(dir.path()).args(["config", "show"]).assert().success();
    let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    assert!(!stderr.contains("warning"), "{stderr}");
}

/// `config show` lists every value the files set, in every section, not only the ones it
/// describes itself; a secret shows as `<set>`.
#[test]
fn config_show_lists_every_value_the_files_set() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "rlm.toml",
        "[query]\ntop_k = 5\n[prompt.rlm]\nthreshold_percentage = 70\n[run.context_windows]\nm = 4096\n[llm.prices.m]\ninput_per_mtok = 1.5\noutput_per_mtok = 2.0\n[llm.prices.\"gpt-4.1\"]\ninput_per_mtok = 2.5\noutput_per_mtok = 8.0\n[llm.capabilities.\"my-reasoner\"]\nmax_tokens_field = \"max_completion_tokens\"\n",
    );
    let stdout = stdout_of(rlm(dir.path()).args(["config", "show"]).assert().success());
    for line in [
        "query.top_k = 5",
        "prompt.rlm.threshold_percentage = 70",
        "run.context_windows.m = 4096",
        "llm.prices.m.input_per_mtok = 1.5",
        // A model name with a dot is an entry too, quoted as TOML writes it.
        "llm.prices.\"gpt-4.1\".input_per_mtok = 2.5",
        // Not a secret, though its name holds `tokens`.
        "llm.capabilities.my-reasoner.max_tokens_field = \"max_completion_tokens\"",
    ] {
        let found = stdout
            .lines()
            .find(|shown| shown.starts_with(line))
            .unwrap_or_else(|| panic!("{line} missing: {stdout}"));
        assert!(found.ends_with("rlm.toml"), "{found}");
    }
}

/// `config show` lists the settings nobody set too, each with its default or what unset means,
/// as the commands read them; a value a command would refuse is shown as written, with why,
/// and the command itself refuses it.
#[test]
fn config_show_lists_unset_settings_and_says_why_a_value_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let shown = |env: &[(&str, &str)]| {
        let mut command = rlm(dir.path());
        command.envs(env.iter().copied());
        stdout_of(command.args(["config", "show"]).assert().success())
    };
    let text = shown(&[("RLM_MAX_RETRIES", "2")]);
    for (start, end) in [
        ("query.top_k = (the plan decides)", "# default"),
        (
            "llm.max_output_tokens = (8192, 32768 for reasoning models)",
            "# default",
        ),
        ("prompt.rlm.window_tokens = 100000", "# default"),
        ("llm.max_retries = 2", "# env RLM_MAX_RETRIES"),
    ] {
        assert!(
            text.lines()
                .any(|line| line.starts_with(start) && line.ends_with(end)),
            "{start} … {end}: {text}"
        );
    }
    let text = shown(&[("RLM_TIMEOUT", "soon")]);
    assert!(
        text.lines()
            .any(|line| line.starts_with("llm.timeout_secs = \"soon\"")
                && line.ends_with(
                    "# env RLM_TIMEOUT: refused: RLM_TIMEOUT=soon is not a valid number"
                )),
        "{text}"
    );
    let assert = rlm(dir.path())
        .env("RLM_TIMEOUT", "soon")
        .args(["chat", "--model", "openai:x", "hi"])
        .assert()
        .code(2);
    let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.contains("RLM_TIMEOUT=soon is not a valid number"),
        "{stderr}"
    );
}

/// `config show` gives every setting's effective value and its source — the environment, a
/// file or the default — and shows key variable names but never keys.
#[test]
fn config_show_gives_each_setting_its_value_and_source() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "rlm.toml",
        "[llm]\nmodel = 'file:m'\n[llm.providers.local]\nkind = 'openai'\nbase_url = 'http://h/v1'\napi_key_env = 'LOCAL_KEY'\n",
    );
    let shown = |json: bool| {
        let mut command = rlm(dir.path());
        command
            .env("RLM_SUBCALL_MODEL", "env:s")
            .env("LOCAL_KEY", "sk-local-secret")
            .env("OPENAI_API_KEY", "sk-openai-secret");
        if json {
            command.arg("--json");
        }
        stdout_of(command.args(["config", "show"]).assert().success())
    };
    let out = shown(true);
    assert!(
        !out.contains("sk-local-secret") && !out.contains("sk-openai-secret"),
        "{out}"
    );
    let settings: Vec<serde_json::Value> = json_lines(&out)
        .into_iter()
        .filter(|line| line["type"] == "setting")
        .collect();
    let setting = |key: &str| {
        settings
            .iter()
            .find(|s| s["key"] == key)
            .unwrap_or_else(|| panic!("{key} missing: {out}"))
            .clone()
    };
    let model = setting("llm.model");
    assert_eq!(
        (&model["value"], &model["source"]),
        (&"file:m".into(), &"file".into())
    );
    assert!(
        model["path"].as_str().unwrap().ends_with("rlm.toml"),
        "{model}"
    );
    let subcall = setting("llm.subcall_model");
    assert_eq!(subcall["value"], "env:s");
    assert_eq!(
        (&subcall["source"], &subcall["variable"]),
        (&"env".into(), &"RLM_SUBCALL_MODEL".into())
    );
    let retries = setting("llm.max_retries");
    assert_eq!(retries["source"], "default");
    assert!(retries["value"].is_u64(), "{retries}");
    assert_eq!(setting("run.block_timeout")["value"], 60.0);
    assert_eq!(
        setting("llm.providers.local.api_key_env")["value"],
        "LOCAL_KEY"
    );
    let key = setting("llm.providers.local.api_key");
    assert_eq!(
        (&key["value"], &key["variable"]),
        (&"<set>".into(), &"LOCAL_KEY".into())
    );
    assert_eq!(shown(false).lines().count(), settings.len() + 1);
    let text = shown(false);
    assert!(
        text.lines()
            .any(|line| line.starts_with("llm.subcall_model = \"env:s\"")
                && line.ends_with("# env RLM_SUBCALL_MODEL")),
        "{text}"
    );
    assert!(!text.contains("sk-local-secret"), "{text}");
}

#[test]
fn colour_follows_the_flag_and_no_color() {
    let dir = tempfile::tempdir().unwrap();
    let forced = rlm(dir.path())
        .args(["--color", "always", "inspect", "nope"])
        .assert()
        .code(2);
    assert!(
        forced.get_output().stderr.starts_with(b"\x1b["),
        "--color always colours errors"
    );
    let plain = rlm(dir.path()).args(["inspect", "nope"]).assert().code(2);
    assert!(
        plain.get_output().stderr.starts_with(b"error: "),
        "NO_COLOR (set by the helper) wins in auto mode"
    );
}

#[test]
fn a_closed_pipe_ends_quietly() {
    use std::io::Read as _;
    use std::process::{Command as Std, Stdio};
    let dir = tempfile::tempdir().unwrap();
    // Enough output to fill the pipe buffer, so the write after the reader leaves must fail.
    let big = format!("{{\"text\":\"{}\"}}\n", "x".repeat(150_000));
    write(dir.path(), "big.ndjson", &big);
    let mut child = Std::new(assert_cmd::cargo::cargo_bin("rlm"))
        .current_dir(dir.path())
        .args([
            "inspect",
            "--sample-chars",
            "100000",
            "big.ndjson",
            "big.ndjson",
            "big.ndjson",
        ])
        .args(std::iter::repeat_n("big.ndjson", 40))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // stdout is dropped here: the reader is gone.
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert!(
        output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn help_keeps_global_options_apart_and_completion_does_not_offer_files_for_models() {
    let dir = tempfile::tempdir().unwrap();
    let help = stdout_of(
        rlm(dir.path())
            .args(["search", "--help"])
            .assert()
            .success(),
    );
    let (own, global) = help.split_once("Global options:").expect(&help);
    assert!(own.contains("--model") && !own.contains("--json"), "{help}");
    assert!(
        global.contains("--json") && global.contains("--color"),
        "{help}"
    );

    let bash = stdout_of(
        rlm(dir.path())
            .args(["completions", "bash"])
            .assert()
            .success(),
    );
    let model_case = bash
        .split("--model)")
        .nth(1)
        .and_then(|rest| rest.split(";;").next())
        .expect("a --model case in the bash script");
    assert!(!model_case.contains("compgen -f"), "{model_case}");

    let timeout = rlm(dir.path())
        .args(["run", "--timeout", "0", "question"])
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&timeout.get_output().stderr).into_owned();
    assert!(stderr.contains("greater than 0"), "{stderr}");
}
