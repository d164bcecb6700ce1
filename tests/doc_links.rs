//! Every relative link in the front door (README.md), in docs/*.md and in benches/README.md leads
//! to a file that exists, and a `#fragment` to a heading of that file (GitHub's anchor for it).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn documents() -> Vec<PathBuf> {
    let mut docs = vec![
        Path::new(ROOT).join("README.md"),
        Path::new(ROOT).join("benches/README.md"),
    ];
    for entry in std::fs::read_dir(Path::new(ROOT).join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            docs.push(path);
        }
    }
    docs
}

/// The text outside fenced code blocks and inline code spans, where links are links.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            let mut in_code = false;
            for c in line.chars() {
                if c == '`' {
                    in_code = !in_code;
                    out.push('`');
                } else if !in_code {
                    out.push(c);
                }
            }
            out.push('\n');
        }
    }
    out
}

/// Targets of `[text](target)` links.
fn link_targets(text: &str) -> Vec<String> {
    let prose = prose(text);
    let mut targets = Vec::new();
    let mut rest = prose.as_str();
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        if let Some(end) = rest.find(')') {
            targets.push(rest[..end].trim().to_string());
            rest = &rest[end..];
        }
    }
    targets
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens, and a
/// `-N` suffix for the Nth repeat.
fn anchors(text: &str) -> HashSet<String> {
    let mut seen = HashSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#').trim();
        let base: String = title
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

fn broken_links(doc: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(doc).unwrap();
    let mut broken = Vec::new();
    for target in link_targets(&text) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (file, fragment) = match target.split_once('#') {
            Some((file, fragment)) => (file, Some(fragment)),
            None => (target.as_str(), None),
        };
        let path = if file.is_empty() {
            doc.to_path_buf()
        } else {
            doc.parent().unwrap().join(file)
        };
        if !path.exists() {
            broken.push(format!("{target}: no such file"));
            continue;
        }
        if let Some(fragment) = fragment {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            if !anchors(&text).contains(fragment) {
                broken.push(format!("{target}: no such heading"));
            }
        }
    }
    broken
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let mut broken = Vec::new();
    for doc in documents() {
        for b in broken_links(&doc) {
            broken.push(format!(
                "{}: {b}",
                doc.strip_prefix(ROOT).unwrap().display()
            ));
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn a_broken_link_or_anchor_is_seen() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("b.md"), "# A heading, `with` code\n").unwrap();
    let doc = dir.path().join("a.md");
    std::fs::write(
        &doc,
        "[ok](b.md) [ok](b.md#a-heading-with-code) [self](#top)\n# Top\n\
         [gone](c.md) [bad](b.md#nothing) `[code](x.md)`\n```\n[fenced](y.md)\n```\n",
    )
    .unwrap();
    assert_eq!(
        broken_links(&doc),
        ["c.md: no such file", "b.md#nothing: no such heading"]
    );
}

/// The front door stays one screen: what and why, the two commands, the picture, how to test
/// and where to read next. A new section belongs in docs/ (session.md, audit.md, profiles.md,
/// ... or a file of its own), linked from the README's reading list.
#[test]
fn the_readme_fits_one_screen() {
    const SCREEN_LINES: usize = 60;
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= SCREEN_LINES,
        "README.md has {lines} lines, more than one screen ({SCREEN_LINES}): move the new text into docs/ and link it"
    );
}
