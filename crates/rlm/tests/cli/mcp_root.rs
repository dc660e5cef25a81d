//! `rlm mcp --root DIR` as an attacker's repository would meet it: links out of the root
//! inside a ctx directory, a store or a loaded directory; paths that cannot be read; messages
//! too large to read. Every file a tool reads must resolve inside the root, or the call is
//! refused with the message of a path outside it; every failed call says why in its result.
//! Driven over stdio with raw JSON-RPC lines.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use rlm_fake::{FakeReply, FakeServer};

use crate::mcp_session::Session;
use crate::support::{rlm_process, rlm_store_process, rlm_with_store, with_fake};

/// What the files outside the root hold; no tool result may ever show it.
const SECRET: &str = "TOPSECRET-7781";

/// A scratch directory: `root/` (the server's root, its store `root/store`) and `outside/`
/// beside it, holding `secret.txt`.
struct Layout {
    scratch: tempfile::TempDir,
}

impl Layout {
    fn new() -> Self {
        let scratch = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(scratch.path().join("root")).unwrap();
        std::fs::create_dir_all(scratch.path().join("outside")).unwrap();
        std::fs::write(
            scratch.path().join("outside/secret.txt"),
            format!("the password is {SECRET}\n"),
        )
        .unwrap();
        Self { scratch }
    }

    fn root(&self) -> PathBuf {
        self.path("root")
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.scratch.path().join(relative)
    }

    /// `name` (below the scratch directory) made a link to `target` (likewise).
    fn link(&self, target: &str, name: &str) {
        symlink(self.path(target), self.path(name)).unwrap();
    }

    /// `rlm mcp --root root` over stdio, with `fake` as the model provider if given.
    fn serve(&self, fake: Option<&FakeServer>) -> Session {
        self.serve_with(fake, &[])
    }

    /// As [`Self::serve`], with more of `rlm mcp`'s flags.
    fn serve_with(&self, fake: Option<&FakeServer>, flags: &[&str]) -> Session {
        let mut command = rlm_store_process(&self.root());
        if let Some(fake) = fake {
            with_fake(&mut command, fake);
        }
        Session::start(command.args(["mcp", "--root"]).arg(self.root()).args(flags))
    }
}

/// The text of a tool result.
fn text_of(result: &serde_json::Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Asserts that `result` is the refusal of `named` (a path below the scratch directory) as
/// outside the root, and shows nothing of the secret.
fn assert_refused_outside(result: &serde_json::Value, named: &Path, root: &Path) {
    assert_eq!(result["isError"], true, "{result}");
    let text = text_of(result);
    let expected = format!(
        "error: {} is outside the server's root {}\nhint: name paths below the root, or \
         start `rlm mcp --root DIR` with a wider one",
        named.display(),
        root.canonicalize().unwrap().display()
    );
    assert!(
        text.starts_with(&expected),
        "{expected:?} is not the start of {text:?}"
    );
    assert!(!result.to_string().contains(SECRET), "{result}");
}

/// No file below `dir` holds the secret.
fn assert_no_secret_below(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let kind = std::fs::symlink_metadata(&path).unwrap().file_type();
        if kind.is_dir() {
            assert_no_secret_below(&path);
        } else if kind.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            assert!(
                !String::from_utf8_lossy(&bytes).contains(SECRET),
                "{} holds the secret",
                path.display()
            );
        }
    }
}

#[test]
fn ctx_assemble_refuses_parts_links_and_outputs_that_lead_out_of_the_root() {
    let layout = Layout::new();
    rlm_with_store(&layout.root())
        .args(["ctx", "init", "--tokenizer", "approx"])
        .assert()
        .success();
    let mut session = layout.serve(None);
    let ctx = layout.root().canonicalize().unwrap().join("ctx");

    // A part that is a link to a file outside, then a `.link` part naming one.
    for part in [
        "evidence/100_leak.evidence.md",
        "evidence/100_leak.evidence.link",
    ] {
        let name = format!("root/ctx/{part}");
        layout.link("outside/secret.txt", &name);
        let refused = session.call("ctx_assemble", serde_json::json!({}));
        assert_refused_outside(&refused, &ctx.join(part), &layout.root());
        assert_no_secret_below(&layout.root());
        std::fs::remove_file(layout.path(&name)).unwrap();
    }

    // The outputs written through a link out of the root.
    std::fs::remove_dir_all(ctx.join("build")).unwrap();
    layout.link("outside", "root/ctx/build");
    let refused = session.call("ctx_assemble", serde_json::json!({}));
    assert_refused_outside(
        &refused,
        &ctx.join("build/.token-cache/approx"),
        &layout.root(),
    );
    assert_eq!(
        std::fs::read_dir(layout.path("outside")).unwrap().count(),
        1,
        "only secret.txt is outside"
    );

    // With the links gone the same directory assembles.
    std::fs::remove_file(ctx.join("build")).unwrap();
    let built = session.call("ctx_assemble", serde_json::json!({}));
    assert_eq!(built["isError"], false, "{built}");
    assert!(ctx.join("build/prompt.mdctx").is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_refuses_a_store_whose_files_lead_out_of_the_root() {
    let layout = Layout::new();
    // A store outside the root holding the secret, and one inside holding other text.
    let outside_store = layout.path("outside/store");
    rlm_with_store(&layout.path("outside"))
        .args(["load", "--store"])
        .arg(&outside_store)
        .arg("secret.txt")
        .assert()
        .success();
    std::fs::write(layout.root().join("notes.txt"), "nothing to see\n").unwrap();
    for store in ["index-linked", "plain"] {
        rlm_with_store(&layout.root())
            .args(["load", "--store", store, "notes.txt"])
            .assert()
            .success();
    }
    // Its database linked from a store directory inside the root; its index linked from a
    // store that is otherwise inside.
    std::fs::create_dir(layout.root().join("database-linked")).unwrap();
    layout.link(
        "outside/store/store.sqlite",
        "root/database-linked/store.sqlite",
    );
    std::fs::remove_dir_all(layout.root().join("index-linked/bm25")).unwrap();
    layout.link("outside/store/bm25", "root/index-linked/bm25");

    // The model lists the buffers of the store it is given.
    let fake = FakeServer::start().await.unwrap();
    let lister = "```repl\nanswer = str([b['name'] for b in buffers()['buffers']])\nFINAL_VAR(\"answer\")\n```";
    fake.script("root", (0..3).map(|_| FakeReply::text(lister)));
    let root = layout.root().canonicalize().unwrap();
    tokio::task::spawn_blocking(move || {
        let mut session = layout.serve(Some(&fake));
        let run = |session: &mut Session, store: &str| {
            session.call(
                "run",
                serde_json::json!({
                    "query": "Which buffers are there?", "store": store, "model": "openai:root",
                }),
            )
        };
        let refused = run(&mut session, "database-linked");
        assert_refused_outside(&refused, &root.join("database-linked/store.sqlite"), &root);
        let refused = run(&mut session, "index-linked");
        assert_refused_outside(&refused, &root.join("index-linked/bm25"), &root);
        // A store wholly inside the root answers.
        let answered = run(&mut session, "plain");
        assert_eq!(answered["isError"], false, "{answered}");
        assert!(text_of(&answered).contains("notes.txt"), "{answered}");
    })
    .await
    .unwrap();
}

#[test]
fn load_of_a_directory_does_not_read_through_links_out_of_the_root() {
    let layout = Layout::new();
    std::fs::create_dir(layout.root().join("docs")).unwrap();
    std::fs::write(layout.root().join("docs/readme.md"), "inside text\n").unwrap();
    layout.link("outside/secret.txt", "root/docs/secret.txt");
    layout.link("outside", "root/docs/outside-dir");
    let mut session = layout.serve(None);

    let loaded = session.call("load", serde_json::json!({ "paths": ["docs"] }));
    assert_eq!(loaded["isError"], false, "{loaded}");
    let listed = session.call("list_buffers", serde_json::json!({}));
    let names: Vec<&str> = listed["structuredContent"]["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|record| record["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 1, "{listed}");
    assert!(names[0].ends_with("docs/readme.md"), "{listed}");
    let grep = session.call("grep", serde_json::json!({ "pattern": SECRET }));
    assert!(!grep.to_string().contains(SECRET), "{grep}");
    assert_no_secret_below(&layout.root());

    // Named directly, the link is refused as outside.
    let refused = session.call("load", serde_json::json!({ "paths": ["docs/secret.txt"] }));
    assert_refused_outside(&refused, Path::new("docs/secret.txt"), &layout.root());
}

#[test]
fn a_project_file_linked_out_of_the_root_is_refused() {
    let layout = Layout::new();
    std::fs::write(layout.root().join("notes.txt"), "notes\n").unwrap();
    layout.link("outside/secret.txt", "root/rlm.toml");
    // No `RLM_CONFIG`: the project file in the root is the one read.
    let mut session = Session::start(
        rlm_process(&layout.root())
            .args(["mcp", "--root"])
            .arg(layout.root()),
    );
    let refused = session.call("load", serde_json::json!({ "paths": ["notes.txt"] }));
    let root = layout.root().canonicalize().unwrap();
    assert_refused_outside(&refused, &root.join("rlm.toml"), &root);
}

#[test]
fn a_failed_call_says_why_in_its_result() {
    let layout = Layout::new();
    let mut session = layout.serve(None);
    let root = layout.root().canonicalize().unwrap();
    for (path, expected) in [
        (
            "missing.txt",
            format!("error: cannot read {}", root.join("missing.txt").display()),
        ),
        (
            "~",
            format!("error: cannot read {}", root.join("~").display()),
        ),
        (
            "*",
            format!("error: cannot read {}", root.join("*").display()),
        ),
        (
            "a\0b",
            "error: \"a\\0b\" contains a NUL character".to_owned(),
        ),
    ] {
        let failed = session.call("load", serde_json::json!({ "paths": [path] }));
        assert_eq!(failed["isError"], true, "{path:?}: {failed}");
        let text = text_of(&failed);
        assert!(
            text.starts_with(&expected),
            "{path:?}: {expected:?} is not the start of {text:?}"
        );
    }
    // One path unreadable among good ones: the others are loaded, the error is in the result.
    std::fs::write(layout.root().join("good.txt"), "good\n").unwrap();
    let partial = session.call(
        "load",
        serde_json::json!({ "paths": ["good.txt", "gone.txt"] }),
    );
    assert_eq!(partial["isError"], true, "{partial}");
    assert!(text_of(&partial).contains("gone.txt"), "{partial}");
    assert_eq!(
        partial["structuredContent"]["records"][0]["type"], "load",
        "{partial}"
    );
}

/// Issue 45: a grep that matched nothing — no match, a 100,000-way alternation, a 1 MB fixed
/// string, `max_count: 0` — was a tool error with empty text. It is an answer that says so; a
/// pattern that does not parse is an error that says why. A path too long for the file system
/// was called "outside the server's root": it is refused saying what is wrong with it.
#[test]
fn greps_that_find_nothing_and_paths_too_long_say_what_happened() {
    let layout = Layout::new();
    let lines: String = (1..=200).map(|n| format!("line word {n}\n")).collect();
    std::fs::write(layout.root().join("story.txt"), lines).unwrap();
    let mut session = layout.serve(None);
    let loaded = session.call("load", serde_json::json!({ "paths": ["story.txt"] }));
    assert_eq!(loaded["isError"], false, "{loaded}");
    let alternation: Vec<String> = (0..100_000).map(|n| format!("w{n}x")).collect();
    for (arguments, said) in [
        (
            serde_json::json!({ "pattern": "zebra" }),
            "no line matched the pattern (5 chars)",
        ),
        (
            serde_json::json!({ "pattern": alternation.join("|") }),
            "no line matched the pattern (788,889 chars)",
        ),
        (
            serde_json::json!({ "pattern": "x".repeat(1_000_000), "fixed_strings": true }),
            "no line matched the text (1,000,000 chars)",
        ),
        (
            serde_json::json!({ "pattern": "word", "max_count": 0 }),
            "no lines: `max_count` is 0",
        ),
    ] {
        let result = session.call("grep", arguments);
        assert_eq!(result["isError"], false, "{said}: {result}");
        assert!(text_of(&result).starts_with(said), "{said}: {result}");
        assert_eq!(
            result["structuredContent"]["records"],
            serde_json::json!([])
        );
    }
    let bad = session.call("grep", serde_json::json!({ "pattern": "(" }));
    assert_eq!(bad["isError"], true, "{bad}");
    assert!(
        text_of(&bad).starts_with("error: invalid regular expression"),
        "{bad}"
    );
    let long = "a".repeat(5_000);
    let refused = session.call("inspect", serde_json::json!({ "paths": [long] }));
    assert_eq!(refused["isError"], true, "{refused}");
    let text = text_of(&refused);
    assert!(!text.contains("outside the server's root"), "{text}");
    assert!(text.contains("name too long"), "{text}");
}

#[test]
fn a_message_over_16_mib_is_answered_with_an_error_and_the_session_goes_on() {
    let layout = Layout::new();
    let mut session = layout.serve(None);
    let text = "x".repeat(16 * 1024 * 1024);
    // The id before the text, as clients write it: the error answers it.
    let oversized = serde_json::json!({
        "jsonrpc": "2.0", "id": 77, "method": "tools/call",
        "params": {"name": "inspect", "arguments": {"text": text}},
    });
    session.send(oversized.to_string().as_bytes());
    let answer = session.receive();
    assert_eq!(answer["id"], 77, "{answer}");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("message too large"), "{message}");

    // The id after the text cannot be read in time: the error has none.
    let late_id = format!(
        r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"inspect","arguments":{{"text":"{text}"}}}},"id":78}}"#
    );
    session.send(late_id.as_bytes());
    let answer = session.receive();
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert!(
        answer.get("id").is_none_or(serde_json::Value::is_null),
        "{answer}"
    );

    // The session goes on.
    let inspected = session.call("inspect", serde_json::json!({ "text": "a,b\n1,2\n" }));
    assert_eq!(inspected["isError"], false, "{inspected}");
}

/// Issue 45: one grep for a common word answered with a 429 MB line and took the server to
/// 4.25 GB; `context: 1000000000` on one match answered 354 MB. Every answer stays within the
/// reply ceiling (`--max-reply-bytes`, 1 MiB by default): grep, search and list_buffers give a
/// cursor whose pages join into the whole answer, peek the range that continues, and a
/// resource too large for one answer is refused naming the peek that reads it.
#[test]
fn answers_stay_within_the_reply_ceiling_and_a_cursor_gives_the_rest_exactly() {
    let layout = Layout::new();
    let lines: String = (1..=40_000)
        .map(|n| format!("the word {n} is here\n"))
        .collect();
    std::fs::write(layout.root().join("big.txt"), &lines).unwrap();
    let mut session = layout.serve_with(None, &["--max-reply-bytes", "65536"]);
    let loaded = session.call("load", serde_json::json!({ "paths": ["big.txt"] }));
    assert_eq!(loaded["isError"], false, "{loaded}");

    let mut numbers = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut arguments = serde_json::json!({ "pattern": "word" });
        if let Some(cursor) = &cursor {
            arguments["cursor"] = cursor.as_str().into();
        }
        let (answer, bytes) = session.request_line(
            "tools/call",
            serde_json::json!({ "name": "grep", "arguments": arguments }),
        );
        let result = &answer["result"];
        assert_eq!(result["isError"], false, "{}", short(result));
        // The records (as structured content and as text), and the notes and the JSON-RPC
        // frame around them.
        assert!(bytes < 65_536 + 1_024, "{bytes} bytes");
        for record in result["structuredContent"]["records"].as_array().unwrap() {
            if record["type"] == "match" {
                numbers.push(record["line"].as_u64().unwrap());
            }
        }
        pages += 1;
        match result["structuredContent"]["next_cursor"].as_str() {
            Some(next) => {
                assert!(text_of(result).contains(&format!("cursor \"{next}\"")));
                cursor = Some(next.to_owned());
            }
            None => break,
        }
    }
    assert!(pages > 20, "{pages} pages");
    assert_eq!(numbers, (1..=40_000).collect::<Vec<u64>>());

    // Context past what a page holds is cut, and said.
    let (wide, bytes) = session.request_line(
        "tools/call",
        serde_json::json!({ "name": "grep", "arguments":
            { "pattern": "word 20000 ", "context": 1_000_000_000u64 } }),
    );
    assert!(bytes < 65_536 + 1_024, "{bytes} bytes");
    assert!(
        text_of(&wide["result"]).contains("context cut to"),
        "{}",
        short(&wide)
    );
    // A cursor of another grep is refused.
    let wrong = session.call(
        "grep",
        serde_json::json!({ "pattern": "here", "cursor": cursor_of(&wide["result"]) }),
    );
    assert_eq!(wrong["isError"], true, "{}", short(&wrong));
    assert!(
        text_of(&wrong).contains("continues another request"),
        "{}",
        short(&wrong)
    );

    // peek says where the rest is; that range reads on exactly.
    let whole = session.call(
        "peek",
        serde_json::json!({ "buffer": "big.txt", "lines": "1:" }),
    );
    let record = &whole["structuredContent"]["records"][0];
    let text = record["text"].as_str().unwrap();
    assert!(text.len() < 65_536 / 2, "{}", text.len());
    let shown = text.lines().count();
    assert_eq!(record["rest"]["lines"], format!("{}:40000", shown + 1));
    assert!(text_of(&whole).contains("peek lines"), "{}", short(&whole));

    // A resource larger than an answer is refused, naming how to read it.
    let listed = session.request("resources/list", serde_json::json!({}));
    let uri = listed["result"]["resources"][0]["uri"]
        .as_str()
        .unwrap()
        .to_owned();
    let read = session.request("resources/read", serde_json::json!({ "uri": uri }));
    let message = read["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("more than one answer carries"), "{read}");
}

/// The start and the end of a long answer.
fn short(value: &serde_json::Value) -> String {
    let text = value.to_string();
    if text.len() < 2_000 {
        return text;
    }
    let head = text.char_indices().nth(800).map_or(0, |(at, _)| at);
    let tail = text.char_indices().rev().nth(800).map_or(0, |(at, _)| at);
    format!("{} … {}", &text[..head], &text[tail..])
}

/// The cursor a result gives, or a made-up one.
fn cursor_of(result: &serde_json::Value) -> String {
    result["structuredContent"]["next_cursor"]
        .as_str()
        .unwrap_or("1.00000000")
        .to_owned()
}

/// Issue 45: `load` of a directory that cannot be read answered `isError: false` with nothing
/// loaded while `rlm load` reported the error. Whatever cannot be read — the directory named, a
/// directory inside it, a file — is a tool error naming it, as on the command line. Permissions
/// bind only a user other than root: as root, the server runs as `nobody`.
#[test]
fn load_of_what_cannot_be_read_is_a_tool_error_naming_it() {
    use std::os::unix::fs::PermissionsExt as _;
    use std::os::unix::process::CommandExt as _;

    let layout = Layout::new();
    let root = layout.root();
    for dir in ["locked", "open/sealed"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
        std::fs::write(root.join(dir).join("inner.txt"), "inside\n").unwrap();
    }
    std::fs::write(root.join("open/ok.txt"), "fine\n").unwrap();
    std::fs::create_dir_all(root.join("files")).unwrap();
    std::fs::write(root.join("files/ok.txt"), "fine\n").unwrap();
    std::fs::write(root.join("files/closed.txt"), "closed\n").unwrap();
    let mut command = rlm_store_process(&root);
    // Whether this process runs as root (from /proc: the tests do not link libc).
    let as_root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|line| line.starts_with("Uid:") && line.split_whitespace().nth(2) == Some("0"));
    if as_root {
        let nobody = 65_534;
        let mut owned = vec![layout.path("")];
        while let Some(path) = owned.pop() {
            std::os::unix::fs::chown(&path, Some(nobody), Some(nobody)).unwrap();
            if path.is_dir() {
                owned.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            }
        }
        std::fs::set_permissions(layout.path(""), std::fs::Permissions::from_mode(0o755)).unwrap();
        command.uid(nobody).gid(nobody);
    }
    let shut = std::fs::Permissions::from_mode(0o000);
    for path in ["locked", "open/sealed", "files/closed.txt"] {
        std::fs::set_permissions(root.join(path), shut.clone()).unwrap();
    }
    let mut session = Session::start(command.args(["mcp", "--root"]).arg(&root));
    for (path, named) in [
        ("locked", "locked"),
        ("open", "open/sealed"),
        ("files", "files/closed.txt"),
    ] {
        let result = session.call("load", serde_json::json!({ "paths": [path] }));
        assert_eq!(result["isError"], true, "{path}: {result}");
        let text = text_of(&result);
        assert!(text.contains(named), "{path}: {text}");
        assert!(text.contains("Permission denied"), "{path}: {text}");
    }
    drop(session);
    for path in ["locked", "open/sealed", "files/closed.txt"] {
        let open = std::fs::Permissions::from_mode(0o755);
        std::fs::set_permissions(root.join(path), open).unwrap();
    }
}
