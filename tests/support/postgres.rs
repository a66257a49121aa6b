//! PostgreSQL for the tests: a fresh database per test on a throwaway cluster.
//!
//! `scripts/test` starts one cluster for the whole run (`scripts/pg-cluster`) and exports
//! `SKILLCAT_TEST_PG` (its URL) and `SKILLCAT_TEST_PG_DIR` (its folder). When they are unset
//! (`cargo test` alone), the first test that asks starts a cluster of its own with the same
//! script, in the build's temporary folder, stopped by a watchdog when the test binary exits.
//! A test that stops or restarts the database takes a [`Cluster::private`] one instead, so
//! the other tests never see it go.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/pg-cluster")
}

/// The PostgreSQL binaries' folder (`psql`).
fn bin_dir() -> PathBuf {
    if let Ok(out) = Command::new("sh")
        .args(["-c", "readlink -f \"$(command -v initdb)\""])
        .output()
        && out.status.success()
        && !out.stdout.is_empty()
    {
        let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if let Some(dir) = path.parent() {
            return dir.to_path_buf();
        }
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|d| d.flatten().map(|e| e.path().join("bin")).collect())
        .unwrap_or_default();
    found.sort();
    found
        .pop()
        .expect("PostgreSQL is not installed (initdb not found)")
}

/// A throwaway PostgreSQL cluster on 127.0.0.1.
#[derive(Debug)]
pub struct Cluster {
    dir: PathBuf,
    port: u16,
    /// Stopped when dropped (a private cluster); the shared one lives as long as the run.
    owned: bool,
}

impl Cluster {
    /// Starts a new cluster of its own in the build's temporary folder: for a test that stops
    /// or restarts the database. Stopped (and removed) when dropped.
    pub fn private() -> Cluster {
        Self::private_with("")
    }

    /// [`private`](Self::private), the server started with `options` too (`-c ssl=on …`,
    /// kept for every restart).
    pub fn private_with(options: &str) -> Cluster {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "pg-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("options"), options).unwrap();
        let mut cluster = Cluster {
            dir,
            port: 0,
            owned: true,
        };
        let url = cluster.script(&["start", cluster.dir.to_str().unwrap()]);
        watch_exit(&cluster.dir);
        cluster.port = port_of(&url);
        cluster
    }

    /// The URL of database `db` on it (as the `postgres` superuser, trust authentication).
    pub fn url(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its folder (where a test may put a server's certificate and key).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stops it (fast shutdown: connections are cut).
    pub fn stop(&self) {
        self.script(&["stop", self.dir.to_str().unwrap()]);
    }

    /// Starts it again on the same port.
    pub fn start(&self) {
        self.script(&["start", self.dir.to_str().unwrap(), &self.port.to_string()]);
    }

    /// `scripts/pg-cluster ARGS` with this cluster's server options.
    fn script(&self, args: &[&str]) -> String {
        let options = std::fs::read_to_string(self.dir.join("options")).unwrap_or_default();
        run_script(args, &options)
    }

    /// Stops it and starts it again.
    pub fn restart(&self) {
        self.stop();
        self.start();
    }

    /// Runs `sql` in database `db` with `psql`; its output (unaligned, tuples only).
    pub fn psql(&self, db: &str, sql: &str) -> String {
        let out = Command::new(bin_dir().join("psql"))
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d"])
            .arg(self.url(db))
            .args(["-c", sql])
            .output()
            .expect("run psql");
        assert!(
            out.status.success(),
            "psql {sql:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Like [`psql`](Self::psql), but the error text when it fails.
    pub fn psql_err(&self, db: &str, sql: &str) -> Result<String, String> {
        let out = Command::new(bin_dir().join("psql"))
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d"])
            .arg(self.url(db))
            .args(["-c", sql])
            .output()
            .expect("run psql");
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
    }

    /// Ends every connection to database `db` (`pg_terminate_backend`) but this one's own;
    /// how many were ended.
    pub fn terminate_backends(&self, db: &str) -> usize {
        self.psql(
            "postgres",
            &format!(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                 WHERE datname = '{db}' AND pid <> pg_backend_pid()"
            ),
        )
        .parse()
        .unwrap_or(0)
    }

    /// A new, empty database on this cluster: its URL, and a guard that drops it.
    pub fn fresh_database(&'static self) -> (String, Database) {
        static N: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "t_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        self.psql("postgres", &format!("CREATE DATABASE {name}"));
        (
            self.url(&name),
            Database {
                cluster: self,
                name,
            },
        )
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.owned {
            self.stop();
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A database made for one test; dropped (its connections ended) with the guard.
#[derive(Debug)]
pub struct Database {
    cluster: &'static Cluster,
    name: String,
}

impl Database {
    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The cluster it is on.
    pub fn cluster(&self) -> &'static Cluster {
        self.cluster
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        let _ = self.cluster.psql_err(
            "postgres",
            &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        );
    }
}

/// The cluster the tests share: `SKILLCAT_TEST_PG`'s, or one started for this test binary.
pub fn shared() -> &'static Cluster {
    static SHARED: OnceLock<Cluster> = OnceLock::new();
    SHARED.get_or_init(|| match std::env::var("SKILLCAT_TEST_PG") {
        Ok(url) => Cluster {
            dir: std::env::var_os("SKILLCAT_TEST_PG_DIR")
                .map(PathBuf::from)
                .unwrap_or_default(),
            port: port_of(&url),
            owned: false,
        },
        Err(_) => {
            let mut cluster = Cluster::private();
            // Lives as long as the test binary; the watchdog stops it.
            cluster.owned = false;
            cluster
        }
    })
}

/// A new, empty database on the shared cluster: `(url, guard)`.
pub fn fresh_database() -> (String, Database) {
    shared().fresh_database()
}

fn run_script(args: &[&str], options: &str) -> String {
    let out = Command::new(script())
        .args(args)
        .env("PG_CLUSTER_OPTS", options)
        .output()
        .expect("run scripts/pg-cluster");
    assert!(
        out.status.success(),
        "pg-cluster {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn port_of(url: &str) -> u16 {
    let after = url.rsplit_once(':').map(|(_, p)| p).unwrap_or("");
    after
        .split('/')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {url}"))
}

/// A watchdog that stops the cluster in `dir` once this test binary has exited, however it
/// ends (a static is never dropped).
fn watch_exit(dir: &Path) {
    let pid = std::process::id();
    let _ = Command::new("sh")
        .arg("-c")
        .arg(
            "while kill -0 \"$1\" 2>/dev/null; do sleep 1; done; \
             \"$2\" stop \"$3\" >/dev/null 2>&1; rm -rf \"$3\"",
        )
        .args(["watchdog", &pid.to_string()])
        .arg(script())
        .arg(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}
