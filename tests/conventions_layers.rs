//! The layers src/lib.rs states, checked against the code: no module of src/ names a module
//! above its own layer (`crate::NAME` in a `use` line or a path), and no two files of one
//! module name each other, directly or round a longer circle (`super::NAME`,
//! `crate::MODULE::NAME`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file beneath `dir`, as its path relative to src/ with `/` between the parts.
fn files(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(src()).expect("beneath src");
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// The names a file's code gives after `prefix` (comments left out).
fn named_after(text: &str, prefix: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
        for (at, _) in line.match_indices(prefix) {
            let rest = &line[at + prefix.len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                names.insert(name);
            }
        }
    }
    names
}

/// Each module's layer, bottom first, as lib.rs lists them: `→` and `;` start the next layer.
fn layers() -> BTreeMap<String, usize> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).expect("lib.rs");
    let start = lib.find("Layers, bottom up:").expect("lib.rs states the layers");
    let order = &lib[start..];
    let order = &order[order.find(").").expect("the sentence before the order") + 2..];
    let order = &order[..order.find("`cli`.").expect("the order ends with cli") + 6];
    let mut layers = BTreeMap::new();
    let mut layer = 0;
    for (i, part) in order.split('`').enumerate() {
        if i % 2 == 1 {
            layers.insert(part.to_string(), layer);
        } else {
            layer += part.matches(['→', ';']).count();
        }
    }
    layers
}

#[test]
fn no_module_names_one_above_it() {
    let layers = layers();
    let mut sources = Vec::new();
    files(&src(), &mut sources);
    let lib = std::fs::read_to_string(src().join("lib.rs")).expect("lib.rs");
    for module in named_after(&lib, "mod ") {
        assert!(
            layers.contains_key(&module),
            "lib.rs's layer order leaves out {module}"
        );
    }
    let mut above = Vec::new();
    for file in sources.iter().filter(|f| *f != "lib.rs" && *f != "main.rs") {
        let module = file.split(['/', '.']).next().expect("a module");
        let text = std::fs::read_to_string(src().join(file)).expect("read");
        for named in named_after(&text, "crate::") {
            if let (Some(own), Some(theirs)) = (layers.get(module), layers.get(&named))
                && theirs > own
            {
                above.push(format!("{file} names {named}, a layer above {module}"));
            }
        }
    }
    assert!(above.is_empty(), "{above:#?}");
}

#[test]
fn no_two_files_of_a_module_name_each_other() {
    let mut sources = Vec::new();
    files(&src(), &mut sources);
    // Within each directory: file stem -> the sibling stems it names.
    let mut names: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for file in &sources {
        let Some((dir, name)) = file.rsplit_once('/') else {
            continue;
        };
        let stem = name.trim_end_matches(".rs");
        if stem == "mod" {
            continue;
        }
        let text = std::fs::read_to_string(src().join(file)).expect("read");
        let crate_path = format!("crate::{}::", dir.replace('/', "::"));
        let named: BTreeSet<String> = named_after(&text, "super::")
            .into_iter()
            .chain(named_after(&text, &crate_path))
            .filter(|n| n != stem)
            .collect();
        names.insert((dir.to_string(), stem.to_string()), named);
    }
    let mut circles = Vec::new();
    for (dir, stem) in names.keys() {
        // Depth-first from each file through its siblings: back at the start is a circle.
        let mut stack = vec![(stem.clone(), vec![stem.clone()])];
        let mut seen = BTreeSet::new();
        while let Some((at, path)) = stack.pop() {
            for next in names.get(&(dir.clone(), at)).into_iter().flatten() {
                if next == stem {
                    circles.push(format!("{dir}: {} -> {stem}", path.join(" -> ")));
                } else if names.contains_key(&(dir.clone(), next.clone())) && seen.insert(next.clone()) {
                    let mut longer = path.clone();
                    longer.push(next.clone());
                    stack.push((next.clone(), longer));
                }
            }
        }
    }
    assert!(circles.is_empty(), "{circles:#?}");
}
