//! A directory, a tarball and a zip built from the same random tree give the same roots, the
//! same skills with the same digests, and the same faults. Names are drawn at the Unicode and
//! case-folding edges (precomposed and decomposed accents, `ß`, the Kelvin sign, dotted and
//! dotless `i`, titlecase digraphs, astral characters); a tree where two paths fold to the same
//! key is refused by both archive formats alike, and `pack` refuses to write it.
//!
//! Origin: step 14 (issue 19: hostile input measured, the known races closed).

use std::collections::BTreeSet;
use std::path::Path;

use skillcat::archive::{ArchiveError, ArchiveKind, ArchiveLimits};
use skillcat::pack::{PackEntry, write_archive, write_tar_gz, write_zip};
use skillcat::path::fold_key;
use skillcat::source::{self, ArchiveSource, DirOptions, DirSource, Source, SourceExt};

/// xorshift64: the same seed gives the same trees everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const ROOTS: &[&str] = &[
    "pdf-forms",
    "log-search",
    "caf\u{e9}",
    "cafe\u{301}",
    "Stra\u{df}e",
    "STRASSE",
    "\u{212a}elvin",
    "kelvin",
    "\u{130}stanbul",
    "\u{1c5}z",
    "\u{1f980}crab",
    "\u{65e5}\u{672c}",
];

const FILES: &[&str] = &[
    "README.md",
    "readme.md",
    "scripts/run.sh",
    "scripts/RUN.sh",
    "references/\u{e9}t\u{e9}.md",
    "references/e\u{301}te\u{301}.md",
    "\u{fb01}le.txt",
    "file.txt",
    "\u{3a3}\u{3c3}\u{3c2}.md",
    "data/\u{1f600}.json",
    "a b/c.txt",
    "x.y.z",
];

struct Tree {
    files: Vec<PackEntry>,
    collides: bool,
}

fn document(rng: &mut Rng, root: &str) -> Vec<u8> {
    match rng.below(5) {
        // The name the folder asks for, when it is a valid skill name.
        0 | 1 => format!("---\nname: {root}\ndescription: Does {root}.\n---\nBody.\n").into_bytes(),
        // A name that does not match the folder, or is not a valid name at all.
        2 => format!("---\nname: other\ndescription: {root}\n---\n").into_bytes(),
        // No description.
        3 => format!("---\nname: {root}\n---\n").into_bytes(),
        // Frontmatter that is not YAML.
        _ => b"---\nname: [unclosed\n---\n".to_vec(),
    }
}

fn random_tree(rng: &mut Rng) -> Tree {
    let mut files: Vec<PackEntry> = Vec::new();
    for _ in 0..1 + rng.below(3) {
        let root = rng.pick(ROOTS);
        if rng.below(6) != 0 {
            let name = if rng.below(8) == 0 {
                "skill.md"
            } else {
                "SKILL.md"
            };
            files.push(entry(format!("{root}/{name}"), document(rng, root), false));
        }
        for _ in 0..rng.below(4) {
            let path = format!("{root}/{}", rng.pick(FILES));
            let mut bytes = vec![0u8; rng.below(64)];
            bytes.iter_mut().for_each(|b| *b = rng.next() as u8);
            files.push(entry(path, bytes, rng.below(3) == 0));
        }
    }
    // The same path twice is one file, the last one written (as on a disk).
    let mut seen = BTreeSet::new();
    files.reverse();
    files.retain(|f| seen.insert(f.path.clone()));
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let keys: BTreeSet<String> = files.iter().map(|f| fold_key(&f.path)).collect();
    let dirs: BTreeSet<String> = files
        .iter()
        .flat_map(|f| {
            let parts: Vec<&str> = f.path.split('/').collect();
            (1..parts.len()).map(move |n| parts[..n].join("/"))
        })
        .collect();
    let dir_keys: BTreeSet<String> = dirs.iter().map(|d| fold_key(d)).collect();
    Tree {
        collides: keys.len() != files.len() || dir_keys.len() != dirs.len(),
        files,
    }
}

fn entry(path: String, bytes: Vec<u8>, executable: bool) -> PackEntry {
    PackEntry {
        path,
        bytes: bytes.into(),
        executable,
    }
}

fn write_dir(tree: &Tree, dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    for f in &tree.files {
        let path = dir.join(&f.path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &f.bytes).unwrap();
        let mode = if f.executable { 0o755 } else { 0o644 };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

/// What a store says about a tree: per root, the skill's name, description and digest, or the
/// fault that refused it.
async fn answers(src: &(impl Source + ?Sized)) -> Vec<String> {
    let mut out = Vec::new();
    let found = source::discover(src).await.unwrap();
    for skill in &found.skills {
        let manifest = src
            .manifest(skill.root(), &skill.name(), "1.0.0")
            .await
            .unwrap();
        out.push(format!(
            "{:?}: skill {:?} {:?} {} ({} files)",
            skill.root(),
            skill.name(),
            skill.description(),
            manifest.digest,
            manifest.files.len(),
        ));
    }
    for fault in &found.faults {
        out.push(format!(
            "{:?}: fault {}",
            fault.root,
            fault.fault.kind().as_str()
        ));
    }
    out.sort();
    out
}

#[tokio::test]
async fn a_directory_a_tarball_and_a_zip_of_one_tree_agree() {
    let mut rng = Rng(0x5eed_cafe_f00d_0019);
    let (mut compared, mut refused) = (0, 0);
    for case in 0..150 {
        let tree = random_tree(&mut rng);
        if tree.files.is_empty() {
            continue;
        }
        let mut gz = Vec::new();
        write_tar_gz(&tree.files, &mut gz).unwrap();
        let mut zip = std::io::Cursor::new(Vec::new());
        write_zip(&tree.files, &mut zip).unwrap();
        let limits = ArchiveLimits::default();
        let from_gz = ArchiveSource::from_bytes(ArchiveKind::TarGz, "t.tar.gz", &gz, limits);
        let from_zip = ArchiveSource::from_bytes(ArchiveKind::Zip, "t.zip", zip.get_ref(), limits);
        let paths: Vec<&str> = tree.files.iter().map(|f| f.path.as_str()).collect();
        if tree.collides {
            // Both archive formats refuse a tree whose paths collide on a case-insensitive or
            // normalising file system, for that reason.
            for (format, read) in [("tar.gz", &from_gz), ("zip", &from_zip)] {
                let err = read.as_ref().map(|_| ()).unwrap_err();
                assert!(
                    matches!(
                        err,
                        skillcat::Error::Archive(ArchiveError::CaseCollision { .. })
                    ),
                    "case {case}, {format}: {err} for {paths:?}"
                );
            }
            // A directory can hold such a tree (this file system is case-sensitive), but `pack`
            // will not write an archive of it that every reader refuses: it fails with the
            // reader's reason and leaves no file.
            let dir = tempfile::tempdir().unwrap();
            for out in ["t.tar.gz", "t.zip"] {
                let path = dir.path().join(out);
                let err = write_archive(&tree.files, &path).unwrap_err().to_string();
                assert!(
                    err.contains("no reader would accept it") && err.contains("collides"),
                    "case {case}, {out}: {err}"
                );
                assert!(!path.exists(), "case {case}: {out} was written");
            }
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
            refused += 1;
            continue;
        }
        let (from_gz, from_zip) = match (from_gz, from_zip) {
            (Ok(a), Ok(b)) => (a, b),
            (a, b) => {
                // An archive with no document anywhere is refused alike by both formats.
                let (a, b) = (a.unwrap_err(), b.unwrap_err());
                assert_eq!(a.to_string(), b.to_string(), "case {case}: {paths:?}");
                assert!(
                    matches!(a, skillcat::Error::Archive(ArchiveError::NoSkill)),
                    "case {case}: {a} for {paths:?}"
                );
                continue;
            }
        };
        let dir = tempfile::tempdir().unwrap();
        write_dir(&tree, dir.path());
        let from_dir = DirSource::open(dir.path(), DirOptions::default()).unwrap();
        let expected = answers(&from_dir).await;
        assert_eq!(
            answers(&from_gz).await,
            expected,
            "case {case}: tar.gz vs directory for {paths:?}"
        );
        assert_eq!(
            answers(&from_zip).await,
            expected,
            "case {case}: zip vs directory for {paths:?}"
        );
        compared += 1;
    }
    // The generator reaches both kinds of tree.
    assert!(
        compared >= 50 && refused >= 10,
        "{compared} compared, {refused} refused"
    );
}
