//! Embedding on load and semantic/hybrid search with an imported model.

use super::*;

/// With two imported models and none configured, the store's own model is the choice: load
/// embeds new chunks with it and semantic search uses it (both exited 2 before).
#[test]
fn with_two_models_the_store_uses_the_model_of_its_vectors() {
    let Some(wheel) = static_model_wheel() else {
        return;
    };
    let fixture = Fixture::new();
    let import = |name: &str| {
        fixture
            .rlm()
            .args(["models", "import", "--name", name])
            .arg(&wheel)
            .assert()
            .success();
    };
    import("small");
    fixture.load();
    import("other");
    std::fs::write(fixture.path("project/extra.md"), "# Extra\n\nMore words.\n").unwrap();
    let (code, _, stderr) = run(fixture.rlm().args(["load", "project"]));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("embedded 1 chunk"), "{stderr}");
    let (code, out, stderr) = run(fixture
        .rlm()
        .args(["--json", "search", "logger", "--mode", "semantic"]));
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(json_lines(&out)[0]["mode"], "semantic", "{stderr}");
    // A fresh store and two models: the load succeeds and says why nothing was embedded.
    let (code, _, stderr) = run(fixture.rlm().args(["load", "project", "--store", "fresh"]));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("note: new chunks are not embedded"),
        "{stderr}"
    );
}

/// With the static model wheel (scripts/test sets RLM_TEST_WHEELS): import, load embeds at
/// once, hybrid search runs without a fallback notice, and `rlm embed` has nothing left to do.
#[test]
fn load_embeds_with_an_imported_static_model_and_hybrid_search_uses_it() {
    let Some(wheel) = static_model_wheel() else {
        return;
    };
    let fixture = Fixture::new();
    fixture
        .rlm()
        .args(["models", "import", "--name", "small"])
        .arg(&wheel)
        .assert()
        .success();
    let load = fixture.rlm().args(["load", "project"]).output().unwrap();
    assert!(load.status.success());
    assert!(String::from_utf8_lossy(&load.stderr).contains("embedded 3 chunks"));
    let status: serde_json::Value =
        serde_json::from_str(&stdout(fixture.rlm().args(["status", "--json"]))).unwrap();
    assert_eq!(status["embedded_chunks"], 3);
    assert!(
        status["embedding_model"]
            .as_str()
            .unwrap()
            .starts_with("small@")
    );
    let search = fixture
        .rlm()
        .args(["search", "logger", "--mode", "hybrid", "--json"])
        .output()
        .unwrap();
    assert!(search.status.success());
    assert!(
        search.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&search.stderr)
    );
    let first: serde_json::Value = serde_json::from_str(
        String::from_utf8_lossy(&search.stdout)
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(first["mode"], "hybrid");
    let again = fixture.rlm().arg("embed").output().unwrap();
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(
        stderr.contains("nothing to embed: every chunk has a vector"),
        "{stderr}"
    );
    assert!(!stderr.contains("0 chunks/s"), "{stderr}");

    // Chunks loaded without vectors are a state `rlm embed` resumes, not damage.
    std::fs::write(
        fixture.path("later.md"),
        "# Later\n\nA note loaded afterwards.\n",
    )
    .unwrap();
    fixture
        .rlm()
        .args(["load", "--no-embed", "later.md"])
        .assert()
        .success();
    let doctor = fixture.rlm().arg("doctor").output().unwrap();
    let stdout = String::from_utf8_lossy(&doctor.stdout);
    assert_eq!(doctor.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("chunks have a vector so far"), "{stdout}");
    assert!(stdout.contains("next: run `rlm embed`"), "{stdout}");
}
