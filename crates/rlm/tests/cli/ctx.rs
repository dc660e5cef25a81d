//! `rlm ctx` end to end through the real binary.

use std::fs;
use std::path::{Path, PathBuf};

use crate::support::rlm_in;
use serde_json::Value;

/// A project folder with a few sources and an initialised `ctx/`.
struct Project {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Project {
    fn new(tokenizer: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("proj");
        fs::create_dir_all(root.join("src")).unwrap();
        fs::write(
            root.join("src/flow.sh"),
            "deploy() {\n  echo deploying\n  build_all\n}\nbuild_all() {\n  make\n}\n",
        )
        .unwrap();
        fs::write(
            root.join("src/test_flow.sh"),
            "source flow.sh\ntest_deploy() {\n  deploy\n}\n",
        )
        .unwrap();
        fs::write(
            root.join("src/main.rs"),
            "fn main() {\n    let logger = getLogger();\n}\n",
        )
        .unwrap();
        let project = Self { _dir: dir, root };
        project.ok(&["init", "--tokenizer", tokenizer]);
        project
    }

    fn cmd(&self, args: &[&str]) -> assert_cmd::assert::Assert {
        rlm_in(&self.root).arg("ctx").args(args).assert()
    }

    /// Runs a command that must succeed; returns stdout with the temp path filtered.
    fn ok(&self, args: &[&str]) -> String {
        let output = self.cmd(args).success().get_output().stdout.clone();
        self.filter(&String::from_utf8(output).unwrap())
    }

    /// Runs a command that must fail with `code`; returns stderr, filtered.
    fn fails(&self, code: i32, args: &[&str]) -> String {
        let output = self.cmd(args).code(code).get_output().stderr.clone();
        self.filter(&String::from_utf8(output).unwrap())
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut full = vec!["--json"];
        full.extend_from_slice(args);
        serde_json::from_str(&self.ok(&full)).unwrap()
    }

    fn filter(&self, text: &str) -> String {
        text.replace(&self.root.to_string_lossy().into_owned(), "[PROJ]")
    }

    fn read(&self, path: &str) -> String {
        fs::read_to_string(self.root.join(path)).unwrap()
    }

    fn bytes(&self, path: &str) -> Vec<u8> {
        fs::read(self.root.join(path)).unwrap()
    }

    fn listing(&self) -> Vec<String> {
        let mut names = Vec::new();
        for dir in ["ctx", "ctx/evidence"] {
            for entry in fs::read_dir(self.root.join(dir)).unwrap() {
                names.push(format!(
                    "{dir}/{}",
                    entry.unwrap().file_name().to_string_lossy()
                ));
            }
        }
        names.sort();
        names
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }
}

/// Section sizes include the absolute source path (a random temp folder), so byte and token
/// figures are masked in snapshots; other tests check the figures themselves.
fn mask_sizes(text: &str) -> String {
    let units = regex::Regex::new(r"( *)\b\d+ (bytes|tokens)|budget is \d+").unwrap();
    let columns = regex::Regex::new(r"(?m)^(\d{3} +\w+ +\S+) +\d+ +\d+ ").unwrap();
    let masked = units.replace_all(text, |found: &regex::Captures| match found.get(2) {
        Some(unit) => {
            let space = if found[1].is_empty() { "" } else { " " };
            format!("{space}[N] {}", unit.as_str())
        }
        None => "budget is [N]".to_owned(),
    });
    columns
        .replace_all(&masked, "$1 [BYTES] [TOKENS] ")
        .into_owned()
}

fn parts(plan: &Value) -> &Vec<Value> {
    plan["parts"].as_array().unwrap()
}

fn find<'a>(plan: &'a Value, name: &str) -> &'a Value {
    parts(plan).iter().find(|p| p["name"] == name).unwrap()
}

#[test]
fn full_session_end_to_end() {
    let project = Project::new("o200k");
    let mut transcript = String::new();
    for args in [
        &["ask", "What does deploy do?"][..],
        &["add", "src/flow.sh::1,4#deploy", "--rank", "100"],
        &["add", "src/*.sh", "src/main.rs"],
        &["add", "--link", "src/main.rs", "--rank", "300"],
        &["status"],
        &["toggle", "off", "200_src_main_rs"],
        &["plan"],
        &["assemble"],
    ] {
        transcript.push_str(&format!(
            "$ rlm ctx {}\n{}",
            args.join(" "),
            project.ok(args)
        ));
    }
    insta::assert_snapshot!("session_transcript", mask_sizes(&transcript));
    let prompt = project.read("ctx/build/prompt.mdctx");
    insta::assert_snapshot!("session_prompt", project.filter(&prompt));

    // Each included part's offset and size point at its own section of the prompt.
    let plan: Value = serde_json::from_str(&project.read("ctx/build/ctxplan.json")).unwrap();
    for part in parts(&plan) {
        if part["status"] != "active" {
            assert!(part.get("offset").is_none());
            continue;
        }
        let offset = part["offset"].as_u64().unwrap() as usize;
        let length = part["bytes"].as_u64().unwrap() as usize;
        let section = &prompt[offset..offset + length];
        if part["role"] == "evidence" {
            assert!(section.starts_with(&format!(
                "## Evidence: {}\n",
                part["path"].as_str().unwrap()
            )));
            assert!(section.contains(part["cid"].as_str().unwrap()));
        }
    }
    assert_eq!(
        plan["totals"]["bytes"].as_u64().unwrap() as usize,
        prompt.len()
    );
    assert_eq!(find(&plan, "200_src_main_rs.evidence")["status"], "skipped");
    assert_eq!(find(&plan, "300_src_main_rs.evidence")["linked"], true);
    assert_eq!(
        find(&plan, "100_src_flow_sh_l1_4.evidence")["tags"][0],
        "deploy"
    );
    assert!(plan["ctx_digest"].as_str().unwrap().starts_with("sha256:"));
}

#[test]
fn init_reports_its_files_without_a_size_for_ctx_json() {
    let dir = tempfile::tempdir().unwrap();
    let out = String::from_utf8(
        rlm_in(dir.path())
            .args(["ctx", "init", "--tokenizer", "approx", "--flow", "demo"])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone(),
    )
    .unwrap();
    let first = out.lines().next().unwrap();
    assert_eq!(first, "created   ctx.json  (flow demo)");
    assert!(
        out.contains("added     000_policy.system  ") && out.contains(" bytes  "),
        "{out}"
    );
    let json: Value = serde_json::from_slice(
        &rlm_in(dir.path())
            .args([
                "--json",
                "ctx",
                "--dir",
                "other",
                "init",
                "--tokenizer",
                "approx",
            ])
            .assert()
            .success()
            .get_output()
            .stdout,
    )
    .unwrap();
    assert_eq!(json["changes"][0]["part"], "ctx.json");
    assert!(json["changes"][0].get("bytes").is_none(), "{json}");
    assert!(json["changes"][1]["bytes"].as_u64().unwrap() > 0);
}

#[test]
fn rebuilds_are_byte_identical_and_the_digest_tracks_content() {
    let project = Project::new("o200k");
    project.ok(&["add", "src/*"]);
    project.ok(&["assemble"]);
    let prompt = project.bytes("ctx/build/prompt.mdctx");
    let plan = project.bytes("ctx/build/ctxplan.json");
    // Rewriting a part with the same bytes (new mtime) changes nothing.
    let part = project.path("ctx/evidence/200_src_main_rs.evidence.md");
    fs::write(&part, fs::read(&part).unwrap()).unwrap();
    project.ok(&["assemble"]);
    assert_eq!(project.bytes("ctx/build/prompt.mdctx"), prompt);
    assert_eq!(project.bytes("ctx/build/ctxplan.json"), plan);

    let digest = |p: &Project| {
        p.json(&["plan"])["plan"]["ctx_digest"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let original = digest(&project);
    project.ok(&["toggle", "off", "200_src_main_rs"]);
    let toggled = digest(&project);
    assert_ne!(toggled, original);
    project.ok(&["toggle", "on", "200_src_main_rs"]);
    assert_eq!(digest(&project), original);
    // A different tokenizer or budget does not change what goes in, so not the digest either.
    let other = project.json(&["plan", "--tokenizer", "cl100k"]);
    assert_eq!(other["plan"]["ctx_digest"].as_str().unwrap(), original);
}

#[test]
fn token_counts_are_cached_by_content() {
    let project = Project::new("o200k");
    project.ok(&["add", "src/*"]);
    let cold = project.json(&["assemble", "--tokenizer", "cl100k"]);
    assert_eq!(
        cold["counted_parts"], 6,
        "5 parts and the frame are counted once"
    );
    let warm = project.json(&["assemble", "--tokenizer", "cl100k"]);
    assert_eq!(warm["counted_parts"], 0);
    fs::write(project.path("src/main.rs"), "fn main() {}\n").unwrap();
    project.ok(&["add", "src/main.rs"]);
    let after = project.json(&["assemble", "--tokenizer", "cl100k"]);
    assert_eq!(
        after["counted_parts"], 1,
        "only the changed part is recounted"
    );
    // Exact counts, consistent with the tokenizer run directly.
    let main = find(&after["plan"], "200_src_main_rs.evidence");
    let prompt = project.read("ctx/build/prompt.mdctx");
    let offset = main["offset"].as_u64().unwrap() as usize;
    let section = &prompt[offset..offset + main["bytes"].as_u64().unwrap() as usize];
    let expected = rlm_context::tokens::Tokenizer::Cl100k.count(section) as u64;
    assert_eq!(main["tokens"].as_u64().unwrap(), expected);
    // The total is a sum of per-section counts; sections split on blank lines, so it matches
    // counting the whole prompt at once.
    let whole = rlm_context::tokens::Tokenizer::Cl100k.count(&prompt) as u64;
    assert_eq!(after["plan"]["totals"]["tokens"].as_u64().unwrap(), whole);
}

#[test]
fn budget_fitting_keeps_required_parts_and_skips_what_does_not_fit() {
    let project = Project::new("approx");
    fs::write(project.path("src/big.txt"), "word ".repeat(400)).unwrap();
    fs::write(project.path("src/small.txt"), "tiny\n").unwrap();
    project.ok(&["add", "src/flow.sh", "--rank", "100"]);
    project.ok(&["add", "src/big.txt", "--rank", "200"]);
    project.ok(&["add", "src/small.txt", "--rank", "300"]);
    let unlimited = project.json(&["plan"]);
    let required = unlimited["plan"]["totals"]["tokens"].as_u64().unwrap()
        - find(&unlimited["plan"], "200_src_big_txt.evidence")["tokens"]
            .as_u64()
            .unwrap()
        - find(&unlimited["plan"], "300_src_small_txt.evidence")["tokens"]
            .as_u64()
            .unwrap();
    let small = find(&unlimited["plan"], "300_src_small_txt.evidence")["tokens"]
        .as_u64()
        .unwrap();

    // Room for the required parts and the small one, not the big one: big is dropped, small kept.
    let budget = (required + small).to_string();
    let fitted = project.json(&["assemble", "--budget", &budget]);
    let big = find(&fitted["plan"], "200_src_big_txt.evidence");
    assert_eq!(big["status"], "dropped-over-budget");
    assert!(
        big["reason"]
            .as_str()
            .unwrap()
            .contains("left in the budget")
    );
    assert_eq!(
        find(&fitted["plan"], "300_src_small_txt.evidence")["status"],
        "active"
    );
    assert_eq!(
        fitted["plan"]["totals"]["tokens"].as_u64().unwrap(),
        required + small
    );
    assert!(!project.read("ctx/build/prompt.mdctx").contains("word word"));

    // Less than the required parts: exit 1, the message names what to drop, nothing written.
    fs::remove_dir_all(project.path("ctx/build")).unwrap();
    let error = project.fails(1, &["assemble", "--budget", &(required - 1).to_string()]);
    assert!(error.contains("drop or shrink: "), "{error}");
    assert!(error.contains("100_src_flow_sh.evidence ("), "{error}");
    assert!(!project.path("ctx/build/prompt.mdctx").exists());
    insta::assert_snapshot!("over_budget_error", mask_sizes(&error));
}

#[test]
fn stale_parts_are_detected_and_rebase_refinds_moved_ranges() {
    let project = Project::new("approx");
    project.ok(&["add", "src/flow.sh::5,7", "--rank", "150"]);
    let status = project.json(&["status"]);
    assert_eq!(status["parts"][2]["freshness"]["state"], "current");

    // Two lines inserted above: the function moved from lines 5-7 to 7-9.
    let old = project.read("src/flow.sh");
    fs::write(
        project.path("src/flow.sh"),
        format!("#!/bin/sh\nset -e\n{old}"),
    )
    .unwrap();
    let status = project.ok(&["status"]);
    assert!(
        status.contains("stale: moved to lines:7-9 (run rebase)"),
        "{status}"
    );

    let rebase = project.ok(&["rebase"]);
    assert!(
        rebase.contains("refound   150_src_flow_sh_l5_7.evidence"),
        "{rebase}"
    );
    assert!(rebase.contains("lines:5-7 → lines:7-9"), "{rebase}");
    // Ranks renumbered within their band, order kept: 150 → 100.
    assert!(
        rebase.contains("renumbered 100_src_flow_sh_l5_7.evidence"),
        "{rebase}"
    );
    let status = project.json(&["status"]);
    assert_eq!(status["parts"][2]["freshness"]["state"], "current");
    assert!(
        project
            .read("ctx/evidence/100_src_flow_sh_l5_7.evidence.md")
            .contains("\"span\":\"lines:7-9\"")
    );

    // The text itself changes: reported, and rebase keeps the part as it was.
    fs::write(project.path("src/flow.sh"), "build_all() {\n  ninja\n}\n").unwrap();
    let status = project.ok(&["status"]);
    assert!(status.contains("stale: source changed"), "{status}");
    let before = project.read("ctx/evidence/100_src_flow_sh_l5_7.evidence.md");
    let rebase = project.ok(&["rebase"]);
    assert!(
        rebase.contains("no longer in src/flow.sh; kept as added"),
        "{rebase}"
    );
    assert_eq!(
        project.read("ctx/evidence/100_src_flow_sh_l5_7.evidence.md"),
        before
    );

    fs::remove_file(project.path("src/flow.sh")).unwrap();
    assert!(project.ok(&["status"]).contains("stale: source missing"));
}

#[test]
fn assemble_warns_about_stale_parts_and_lists_them_in_the_plan() {
    let project = Project::new("approx");
    project.ok(&["add", "src/flow.sh::5,7", "--rank", "150"]);
    project.ok(&["add", "src/main.rs"]);
    let assert = project.cmd(&["assemble"]).success();
    assert!(assert.get_output().stderr.is_empty());
    let plan: Value = serde_json::from_str(&project.read("ctx/build/ctxplan.json")).unwrap();
    assert_eq!(plan["stale"], serde_json::json!([]));

    // Two lines inserted above the range, and main.rs rewritten.
    let old = project.read("src/flow.sh");
    fs::write(
        project.path("src/flow.sh"),
        format!("#!/bin/sh\nset -e\n{old}"),
    )
    .unwrap();
    fs::write(project.path("src/main.rs"), "fn main() {}\n").unwrap();
    let assert = project.cmd(&["assemble"]).success();
    let stderr = project.filter(&String::from_utf8(assert.get_output().stderr.clone()).unwrap());
    assert_eq!(
        stderr,
        "warning: 2 stale parts go into the prompt: 150_src_flow_sh_l5_7.evidence (moved to lines:7-9 (run rebase)), 200_src_main_rs.evidence (source changed)\n\
         hint: `rlm ctx rebase` re-finds moved ranges; re-adding a part refreshes it; `rlm ctx status` shows every part\n"
    );
    let stdout = String::from_utf8(assert.get_output().stdout.clone()).unwrap();
    assert!(stdout.contains("in (stale: source changed)\n"), "{stdout}");
    let plan: Value = serde_json::from_str(&project.read("ctx/build/ctxplan.json")).unwrap();
    assert_eq!(
        plan["stale"],
        serde_json::json!([
            {"name": "150_src_flow_sh_l5_7.evidence", "state": "moved", "span": "lines:7-9"},
            {"name": "200_src_main_rs.evidence", "state": "changed"}
        ])
    );
    assert_eq!(project.json(&["plan"])["plan"]["stale"], plan["stale"]);

    // Switched off, a stale part is not in the prompt and not warned about.
    project.ok(&["toggle", "off", "200_src_main_rs"]);
    project.ok(&["rebase"]);
    let assert = project.cmd(&["assemble"]).success();
    assert!(assert.get_output().stderr.is_empty());
    let plan: Value = serde_json::from_str(&project.read("ctx/build/ctxplan.json")).unwrap();
    assert_eq!(plan["stale"], serde_json::json!([]));
}

#[test]
fn link_parts_are_always_current_and_active() {
    let project = Project::new("approx");
    project.ok(&["add", "--link", "src/main.rs"]);
    let link = project.path("ctx/evidence/200_src_main_rs.evidence.link");
    assert_eq!(
        fs::read_link(&link).unwrap(),
        Path::new("../../src/main.rs")
    );
    fs::write(project.path("src/main.rs"), "fn main() { changed(); }\n").unwrap();
    project.ok(&["assemble"]);
    let prompt = project.read("ctx/build/prompt.mdctx");
    assert!(prompt.contains("## Evidence: src/main.rs\n"));
    assert!(prompt.contains("changed();"));
    let error = project.fails(2, &["toggle", "off", "200_src_main_rs"]);
    assert!(error.contains("always active"), "{error}");
    // A range toggle leaves the link on and says so.
    assert!(
        project
            .ok(&["toggle", "off", "200-299"])
            .contains("is a link, always active")
    );
    assert!(link.exists());
    // Links carry no ranges.
    project.fails(2, &["add", "--link", "src/main.rs::1,2"]);
    // A broken link is an input error naming the missing file.
    fs::remove_file(project.path("src/main.rs")).unwrap();
    let error = project.fails(2, &["assemble"]);
    assert!(error.contains("does not exist"), "{error}");
}

#[test]
fn toggle_rank_remove_ask_env() {
    let project = Project::new("approx");
    project.ok(&["add", "src/*"]);
    let out = project.ok(&["toggle", "off", "200-299"]);
    assert_eq!(out.matches("off ").count(), 3, "{out}");
    assert!(
        project
            .path("ctx/evidence/200_src_flow_sh.evidence.md.skip")
            .exists()
    );
    project.ok(&["toggle", "on", "src_flow_sh"]);
    assert!(
        project
            .path("ctx/evidence/200_src_flow_sh.evidence.md")
            .exists()
    );

    let out = project.ok(&["rank", "src_flow_sh", "120"]);
    assert!(out.contains("renamed   120_src_flow_sh.evidence"), "{out}");
    assert!(out.contains("(was 200_src_flow_sh.evidence)"), "{out}");
    project.fails(2, &["rank", "src_flow_sh", "50"]);

    let out = project.ok(&["remove", "src_main_rs"]);
    assert!(out.contains("removed   200_src_main_rs.evidence"), "{out}");
    assert!(
        !project
            .path("ctx/evidence/200_src_main_rs.evidence.md.skip")
            .exists()
    );

    project.ok(&["ask", "Why does the build fail?"]);
    assert_eq!(
        project.read("ctx/010_request.user.md"),
        "Why does the build fail?\n"
    );

    let env = project.ok(&["env"]);
    insta::assert_snapshot!("env", env);
}

#[test]
fn focus_switches_off_irrelevant_evidence_and_focus_off_restores() {
    let project = Project::new("approx");
    project.ok(&["add", "src/*"]);
    let out = project.ok(&["focus", "logger"]);
    assert!(out.contains("keep      200_src_main_rs.evidence"), "{out}");
    assert!(
        project
            .path("ctx/evidence/200_src_flow_sh.evidence.md.skip")
            .exists()
    );
    assert!(
        project
            .path("ctx/evidence/200_src_test_flow_sh.evidence.md.skip")
            .exists()
    );
    // Focusing again starts from the full set.
    let out = project.ok(&["focus", "build_all"]);
    assert!(out.contains("undid the previous focus first"), "{out}");
    assert!(
        project
            .path("ctx/evidence/200_src_flow_sh.evidence.md")
            .exists()
    );
    assert!(
        project
            .path("ctx/evidence/200_src_main_rs.evidence.md.skip")
            .exists()
    );
    let out = project.ok(&["focus", "off"]);
    assert_eq!(out.matches("on ").count(), 2, "{out}");
    assert!(
        project
            .path("ctx/evidence/200_src_main_rs.evidence.md")
            .exists()
    );
    project.fails(2, &["focus", "off"]);
    project.fails(2, &["focus", "zebra"]);
}

#[test]
fn focus_never_switches_off_critical_evidence() {
    let project = Project::new("approx");
    project.ok(&["add", "src/flow.sh", "--rank", "150"]);
    project.ok(&["add", "src/main.rs", "src/test_flow.sh"]);
    let out = project.ok(&["focus", "logger", "--top", "1"]);
    assert!(
        out.contains("keep      150_src_flow_sh.evidence")
            && out.contains("rank 150 is critical, always kept"),
        "{out}"
    );
    assert!(out.contains("keep      200_src_main_rs.evidence"), "{out}");
    assert!(
        out.contains("off       200_src_test_flow_sh.evidence"),
        "{out}"
    );
    assert!(
        project
            .path("ctx/evidence/150_src_flow_sh.evidence.md")
            .exists()
    );
}

#[test]
fn deps_lists_parts_mentioning_the_file_or_its_symbols() {
    let project = Project::new("approx");
    project.ok(&["add", "src/*"]);
    insta::assert_snapshot!("deps", project.ok(&["deps", "src_flow_sh"]));
    let json = project.json(&["deps", "src_flow_sh"]);
    assert_eq!(json["defines"], serde_json::json!(["build_all", "deploy"]));
}

#[test]
fn bad_input_exits_2_and_writes_nothing() {
    let project = Project::new("approx");
    project.ok(&["add", "src/flow.sh"]);
    fs::write(project.path("bin.dat"), b"ab\0cd").unwrap();
    fs::write(project.path("latin1.txt"), b"caf\xe9\n").unwrap();
    let before = project.listing();
    let evidence_before = project.read("ctx/evidence/200_src_flow_sh.evidence.md");
    let mut errors = String::new();
    for args in [
        &["add", "missing.txt"][..],
        &["add", "src/main.rs", "missing.txt"],
        &["add", "src/flow.sh::9,12"],
        &["add", "src/flow.sh::0,2"],
        &["add", "src/flow.sh::900c,1000c"],
        &["add", "bin.dat"],
        &["add", "latin1.txt"],
        &["add", "src"],
        &["add", "nothing/*.rs"],
        &["add", "src/main.rs", "--rank", "1000"],
        &["add", "src/main.rs", "--rank", "7"],
        &["add", "src/main.rs", "--rank", "500"],
        &["toggle", "off", "nope"],
        &["rank", "src_flow_sh", "abc"],
        &["remove", "src_flow_sh", "nope"],
        &["deps", "nope"],
        &["ask", "  "],
    ] {
        let error = project.fails(2, args);
        errors.push_str(&format!("$ rlm ctx {}\n{error}", args.join(" ")));
    }
    insta::assert_snapshot!("bad_input", errors);
    assert_eq!(project.listing(), before, "nothing was added or removed");
    // An end past the last line is clamped, as `rlm peek --lines` and `read()` do.
    project.ok(&["add", "src/flow.sh::5,99"]);
    let text = project.read("ctx/evidence/200_src_flow_sh_l5_7.evidence.md");
    assert!(text.contains("\"span\":\"lines:5-7\""), "{text}");
    assert_eq!(
        project.read("ctx/evidence/200_src_flow_sh.evidence.md"),
        evidence_before
    );
    // Outside a ctx directory.
    let error = project.fails(2, &["--dir", "elsewhere", "status"]);
    assert!(error.contains("is not a ctx directory"), "{error}");
    // Malformed part names are reported, not silently used.
    fs::write(project.path("ctx/evidence/1000_x.evidence.md"), "x").unwrap();
    assert!(
        project
            .ok(&["status"])
            .contains("ignored 1000_x.evidence.md: bad rank `1000`")
    );
}

#[test]
fn every_command_speaks_json() {
    let project = Project::new("approx");
    for args in [
        &["ask", "q?"][..],
        &["add", "src/*"],
        &["status"],
        &["plan"],
        &["budget"],
        &["toggle", "off", "src_main_rs"],
        &["rank", "src_flow_sh", "150"],
        &["deps", "src_flow_sh"],
        &["focus", "deploy"],
        &["focus", "off"],
        &["env"],
        &["rebase"],
        &["remove", "src_main_rs"],
        &["assemble"],
    ] {
        let value = project.json(args);
        assert_eq!(value["type"], "ctx", "{args:?}");
    }
}

#[test]
fn broad_globs_skip_the_ctx_directory_and_binary_files() {
    let project = Project::new("approx");
    fs::write(project.path("src/logo.png"), b"\x89PNG\r\n\x1a\n\0\0").unwrap();
    project.ok(&["ask", "q"]);
    let out = project.ok(&["add", "**/*"]);
    assert_eq!(out.matches("added ").count(), 3, "{out}");
    assert!(
        out.contains("note: skipped [PROJ]/src/logo.png is not UTF-8 text"),
        "{out}"
    );
    let evidence: Vec<String> = project
        .listing()
        .into_iter()
        .filter(|n| n.contains("evidence/"))
        .collect();
    assert_eq!(evidence.len(), 3, "{evidence:?}");
    // Adding the same glob again refreshes in place rather than duplicating.
    let again = project.ok(&["add", "**/*"]);
    assert_eq!(again.matches("unchanged ").count(), 3, "{again}");
}
