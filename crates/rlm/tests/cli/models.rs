//! `rlm models import|list|remove`, driving the real binary.

use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;

use crate::support::{rlm_in, static_model_wheel};

fn rlm(models: &Path) -> Command {
    let mut command = rlm_in(models.parent().unwrap());
    command
        .env("RLM_MODELS_DIR", models)
        .env("RLM_CONFIG", models.join("absent.toml"));
    command
}

/// `--config` pointing at an empty file so the user's own configuration never leaks in.
fn isolated(models: &Path) -> Command {
    std::fs::create_dir_all(models).unwrap();
    let config = models.join("rlm.toml");
    std::fs::write(&config, "").unwrap();
    let mut command = rlm(models);
    command.env("RLM_CONFIG", &config);
    command
}

#[test]
fn empty_models_dir_lists_nothing_and_says_how_to_import() {
    let work = tempfile::tempdir().unwrap();
    let models = work.path().join("models");
    isolated(&models)
        .args(["models", "list"])
        .assert()
        .success()
        .stdout("")
        .stderr(
            predicate::str::contains("no models in")
                .and(predicate::str::contains("rlm models import")),
        );
    isolated(&models)
        .args(["models", "list", "--json"])
        .assert()
        .success()
        .stdout(predicate::str::contains("rlm.toml").not())
        .stdout("");
}

#[test]
fn bad_input_exits_2_with_a_reason() {
    let work = tempfile::tempdir().unwrap();
    let models = work.path().join("models");
    let code_only = work.path().join("code");
    std::fs::create_dir_all(&code_only).unwrap();
    std::fs::write(code_only.join("main.py"), "print(1)").unwrap();
    isolated(&models)
        .args(["models", "import"])
        .arg(&code_only)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("error: no usable model"));
    let fake = work.path().join("fake.whl");
    std::fs::write(&fake, "not a zip").unwrap();
    isolated(&models)
        .args(["models", "import"])
        .arg(&fake)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a zip archive"));
    isolated(&models)
        .args(["models", "remove", "nothing"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no model named nothing"))
        .stderr(predicate::str::contains("hint: see `rlm models list`"));
    isolated(&models)
        .args(["models", "import", "/definitely/not/here"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("/definitely/not/here"));
}

#[test]
fn import_list_remove_the_static_model_wheel() {
    let Some(wheel) = static_model_wheel() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let models = work.path().join("models");
    isolated(&models)
        .args(["models", "import", "--name", "small"])
        .arg(&wheel)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "imported small (static, 64 dimensions, id small@",
        ));
    let output = isolated(&models)
        .args(["models", "list", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let line: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(line["type"], "model");
    assert_eq!(line["name"], "small");
    assert_eq!(line["kind"], "static");
    assert_eq!(line["dimension"], 64);
    assert_eq!(line["package"], "tokenlearn-static-model 0.1.1");
    isolated(&models)
        .args(["models", "list"])
        .assert()
        .success()
        .stdout(predicate::str::is_match(r"small\s+static\s+64\s+small@[0-9a-f]{12}").unwrap());
    isolated(&models)
        .args(["models", "remove", "small"])
        .assert()
        .success()
        .stdout(predicate::str::contains("removed small"));
    assert!(!models.join("small").exists());
}
