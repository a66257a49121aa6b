//! What runs is what was audited (step 26, finding 7): under `[runtime] audit = "withhold"` the
//! skill's files are read once, audited, and every later use — the tool's description, the
//! workspace a script runs in, a guest's `readSkillFile` — takes those same bytes. A source
//! whose file changes after the audit read it (here deterministically: a source that answers
//! the audited bytes on the first read of the script and other bytes on every later one) runs
//! the audited bytes, never the changed ones.

#![cfg(target_os = "linux")]

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use serde_json::json;
use skillcat::audit::AuditOptions;
use skillcat::capability::{Grant, Trust};
use skillcat::catalog::{Catalog, CatalogSource};
use skillcat::config::Environment;
use skillcat::path::FileEntry;
use skillcat::runtime::Session;
use skillcat::script::{AllowAll, Runner, RunnerConfig};
use skillcat::source::{DirOptions, DirSource, Source, Symlink};

const SCRIPT: &str = "scripts/go.sh";
const AUDITED: &str = "#!/bin/sh\n# Say which bytes ran.\necho audited-bytes\n";
const SWAPPED: &str = "#!/bin/sh\n# Say which bytes ran.\necho SWAPPED-AFTER-THE-AUDIT\n";

/// A directory source whose script reads as [`AUDITED`] the first time and as [`SWAPPED`]
/// every time after: a writer that changes the file right after the audit, without a race.
#[derive(Debug)]
struct SwapAfterFirstRead {
    inner: DirSource,
    reads: AtomicUsize,
}

#[async_trait]
impl Source for SwapAfterFirstRead {
    async fn list(&self) -> skillcat::Result<Vec<String>> {
        self.inner.list().await
    }
    async fn files(&self, root: &str) -> skillcat::Result<Vec<FileEntry>> {
        self.inner.files(root).await
    }
    async fn read(&self, path: &str) -> skillcat::Result<Bytes> {
        if path.ends_with(SCRIPT) {
            let n = self.reads.fetch_add(1, Ordering::SeqCst);
            return Ok(Bytes::from_static(if n == 0 {
                AUDITED.as_bytes()
            } else {
                SWAPPED.as_bytes()
            }));
        }
        self.inner.read(path).await
    }
    fn location(&self, path: &str) -> String {
        self.inner.location(path)
    }
    async fn symlinks(&self, root: &str) -> skillcat::Result<Vec<Symlink>> {
        self.inner.symlinks(root).await
    }
}

#[tokio::test]
async fn the_workspace_holds_the_bytes_the_audit_read() {
    let dir = crate::support::sandbox_tempdir("skillcat-audited-");
    let skills = dir.path().join("skills");
    crate::support::write_skill(
        &skills.join("swap"),
        "---\nname: swap\ndescription: Runs one script.\n---\nBody\n",
        &[(SCRIPT, AUDITED, true)],
    );
    let source = Arc::new(SwapAfterFirstRead {
        inner: DirSource::open(&skills, DirOptions::default()).unwrap(),
        reads: AtomicUsize::new(0),
    });
    let catalog = Catalog::new(vec![
        CatalogSource::from_source("skills", source.clone()).trusted(true),
    ]);
    let mut config = RunnerConfig::new(
        Grant {
            fs_read: vec![],
            fs_write: vec![],
            network: skillcat::capability::Network::Off,
            timeout: Duration::from_secs(60),
            trust: Trust::External,
        },
        skillcat::context::Env::from_process().user_dirs(),
    );
    config.helper = PathBuf::from(env!("CARGO_BIN_EXE_skillcat"));
    config.workspace_base = dir.path().join("ws");
    let runner = Arc::new(Runner::new(config, Arc::new(AllowAll)).unwrap());
    let session = Session::builder(catalog)
        .runner(runner)
        .environment(Environment {
            cwd: dir.path().to_path_buf(),
            home: None,
        })
        .audit_tools(Some(AuditOptions::default()))
        .build();
    let run = session.begin_with(&["swap"]).await.unwrap();
    let tools: Vec<&str> = run.tools().map(|t| t.name.as_str()).collect();
    assert_eq!(
        tools,
        ["run_swap_go"],
        "the audit found nothing to withhold"
    );
    let out = run.call("run_swap_go", &json!({})).await.unwrap();
    assert_eq!(
        out.to_model_text().trim(),
        "audited-bytes",
        "the script that ran is not the one the audit read"
    );
    run.finish().await.unwrap();
    // Read once, by the audit: nothing after it went back to the source for the script.
    assert_eq!(source.reads.load(Ordering::SeqCst), 1);
}
