//! The README's Rust examples compile in a fresh crate that depends on
//! tocpile alone, as a library user's would: ndarray comes from
//! `tocpile::ndarray`, not from a dependency the user must add by hand.
//! (The doc-tests of the README run the same blocks, but inside this
//! package, where ndarray is a dependency anyway.)
//!
//! The crate is written under the target directory and checked with
//! `cargo check --offline`: the registry cache the outer `cargo test`
//! filled has every crate it needs, and the workspace's lock file pins
//! the same versions.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The README's ```rust blocks, rustdoc's hidden-line marks (`# `)
/// removed.
fn rust_blocks(readme: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in readme.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```rust") => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), line) => {
                let line = line.strip_prefix("# ").unwrap_or(line);
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

/// `Cargo.toml` and `src/main.rs` of a crate whose only dependency is
/// tocpile, by path; each README block becomes a function.
fn write_crate(dir: &Path, root: &Path, blocks: &[String]) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest = format!(
        "[package]\n\
         name = \"tocpile-readme-example\"\n\
         version = \"0.0.0\"\n\
         edition = \"2021\"\n\
         publish = false\n\n\
         [dependencies]\n\
         tocpile = {{ path = {:?} }}\n\n\
         # Its own workspace, not the tocpile workspace it sits inside.\n\
         [workspace]\n",
        root.display().to_string()
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    let mut main = String::from("//! Generated from tocpile's README by tests/readme.\n\n");
    for (i, block) in blocks.iter().enumerate() {
        main.push_str(&format!(
            "fn example_{i}() -> Result<(), tocpile::Error> {{\n{block}}}\n\n"
        ));
    }
    main.push_str("fn main() {\n");
    for i in 0..blocks.len() {
        main.push_str(&format!("    example_{i}().unwrap();\n"));
    }
    main.push_str("}\n");
    std::fs::write(dir.join("src/main.rs"), main).unwrap();
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
}

#[test]
fn readme_examples_compile_in_a_fresh_crate() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let blocks = rust_blocks(&readme);
    assert!(
        blocks.len() >= 2,
        "the README's library examples: {blocks:?}"
    );
    assert!(
        blocks.iter().any(|b| b.contains("tocpile::ndarray")),
        "the README's example takes ndarray from tocpile"
    );
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("readme-example");
    write_crate(&dir, &root, &blocks);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args(["check", "--offline", "--quiet"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .output()
        .expect("run cargo");
    assert!(
        output.status.success(),
        "the README's examples do not compile in a crate depending on tocpile alone \
         ({}):\n{}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn blocks_are_extracted_without_hidden_marks() {
    let readme = "text\n```rust\nlet x = 1;\n# Ok::<(), tocpile::Error>(())\n```\n```sh\nls\n```\n";
    assert_eq!(
        rust_blocks(readme),
        ["let x = 1;\nOk::<(), tocpile::Error>(())\n"]
    );
}
