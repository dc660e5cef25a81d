//! When `rlm load` computes vectors by itself: a static model, and only a load of at most
//! `[embed] load_auto_limit_mb`; `--embed` always, `--no-embed` never.

use serde_json::Value;

use crate::support::{rlm_in, text, write};

/// The static model wheel, when scripts/test has set RLM_TEST_WHEELS.
pub fn static_wheel() -> Option<std::path::PathBuf> {
    let wheels = std::env::var_os("RLM_TEST_WHEELS").filter(|v| !v.is_empty());
    let Some(wheels) = wheels else {
        eprintln!("skipped: RLM_TEST_WHEELS is not set (scripts/test downloads the model wheels)");
        return None;
    };
    let wheel = std::fs::read_dir(&wheels)
        .unwrap()
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| {
            path.to_string_lossy()
                .contains("tokenlearn_static_model-0.1.1")
        })
        .expect("RLM_TEST_WHEELS has no tokenlearn_static_model wheel");
    Some(wheel)
}

fn embedded_chunks(dir: &std::path::Path) -> u64 {
    let out = rlm_in(dir).args(["status", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    status["embedded_chunks"].as_u64().unwrap()
}

#[test]
fn a_load_over_the_auto_limit_is_not_embedded_unless_asked() {
    let Some(wheel) = static_wheel() else {
        return;
    };
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    rlm_in(dir)
        .args(["models", "import", "--name", "small"])
        .arg(&wheel)
        .assert()
        .success();
    // 0 MiB: every load is over the limit.
    write(dir, "rlm.toml", "[embed]\nload_auto_limit_mb = 0\n");
    write(dir, "a.md", "# Alpha\n\nThe logger writes to a file.\n");
    let out = rlm_in(dir).args(["load", "a.md"]).output().unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("new chunks are not embedded"), "{stderr}");
    assert!(stderr.contains("--embed"), "{stderr}");
    assert_eq!(embedded_chunks(dir), 0);

    write(dir, "b.md", "# Beta\n\nThe parser reads the config.\n");
    let out = rlm_in(dir)
        .args(["load", "b.md", "--embed"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("embedded"), "{stderr}");
    assert!(embedded_chunks(dir) >= 1);

    // Under the default limit the same kind of load embeds by itself; --no-embed still wins.
    write(dir, "rlm.toml", "");
    write(dir, "c.md", "# Gamma\n\nThe cache keeps results.\n");
    let before = embedded_chunks(dir);
    let out = rlm_in(dir)
        .args(["load", "c.md", "--no-embed"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(embedded_chunks(dir), before);
    write(dir, "d.md", "# Delta\n\nThe scheduler runs jobs.\n");
    let out = rlm_in(dir).args(["load", "d.md"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(embedded_chunks(dir) > before);
}

#[test]
fn embed_without_a_model_exits_2_and_keeps_the_load() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    write(dir, "a.md", "# Alpha\n\nThe logger writes to a file.\n");
    let out = rlm_in(dir)
        .args(["load", "a.md", "--embed"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no embedding model is imported"),
        "{stderr}"
    );
    assert!(stderr.contains("rlm models import"), "{stderr}");
    let list = rlm_in(dir).args(["list", "--json"]).output().unwrap();
    assert!(
        text(&list.stdout).contains("a.md"),
        "{}",
        text(&list.stdout)
    );

    let out = rlm_in(dir)
        .args(["load", "a.md", "--embed", "--no-embed"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
