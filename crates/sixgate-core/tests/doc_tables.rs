//! docs/architecture.md, "Translation choices": every test the table names
//! exists, so the table cannot point at a test that was renamed or removed.

use std::path::{Path, PathBuf};

const DOC: &str = include_str!("../../../docs/architecture.md");

/// The backticked cells of the table's last column.
fn named_tests() -> Vec<String> {
    let section = DOC
        .split("## Translation choices")
        .nth(1)
        .expect("docs/architecture.md has the section");
    let mut names = Vec::new();
    for line in section.lines().skip_while(|l| !l.starts_with('|')) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').collect();
        let last = cells.last().copied().unwrap_or("");
        for (i, part) in last.split('`').enumerate() {
            if i % 2 == 1 {
                names.push(part.to_string());
            }
        }
    }
    names
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn translation_choices_name_tests_that_exist() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let root = crates.join("..");
    let mut files = Vec::new();
    rust_files(&crates, &mut files);
    let sources: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    let names = named_tests();
    assert!(names.len() > 20, "the table was not found: {names:?}");
    for name in names {
        if name.contains('/') {
            assert!(root.join(&name).exists(), "{name} does not exist");
        } else {
            let decl = format!("fn {name}(");
            assert!(
                sources.iter().any(|s| s.contains(&decl)),
                "docs/architecture.md names test {name}, which no crate has"
            );
        }
    }
}
