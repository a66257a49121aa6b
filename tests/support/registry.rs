//! The CNCF distribution registry (Debian `docker-registry`) on 127.0.0.1 for a test: a free
//! port, a throwaway storage folder, a generated config.yml, optionally htpasswd auth; killed
//! when dropped. Also raw OCI uploads with `curl` (no skillcat code), for artifacts the tests
//! build by hand.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::project::KillOnDrop;

/// A running registry.
pub struct Registry {
    _child: KillOnDrop,
    pub dir: tempfile::TempDir,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// `user:password` when it has htpasswd auth.
    pub basic: Option<(String, String)>,
}

/// The registry program: `docker-registry` (Debian), else `registry` (upstream).
fn program() -> &'static str {
    for p in ["docker-registry", "registry"] {
        if Command::new("sh")
            .args(["-c", &format!("command -v {p}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
        {
            return p;
        }
    }
    panic!(
        "the CNCF distribution registry is not installed (scripts/test installs the Debian package docker-registry)"
    );
}

impl Registry {
    /// Without auth.
    pub fn start() -> Registry {
        Self::start_with(None)
    }

    /// With htpasswd auth for `user`/`password` (the bcrypt line made by `htpasswd -B`).
    pub fn start_with_auth(user: &str, password: &str) -> Registry {
        Self::start_with(Some((user.to_string(), password.to_string())))
    }

    fn start_with(basic: Option<(String, String)>) -> Registry {
        let dir = tempfile::Builder::new()
            .prefix("skillcat-oci-registry-")
            .tempdir()
            .unwrap();
        let auth = match &basic {
            None => String::new(),
            Some((u, p)) => {
                let out = Command::new("htpasswd")
                    .args(["-Bbn", u, p])
                    .output()
                    .expect("htpasswd (Debian apache2-utils; scripts/test installs it)");
                assert!(out.status.success(), "htpasswd failed");
                std::fs::write(dir.path().join("htpasswd"), &out.stdout).unwrap();
                format!(
                    "auth:\n  htpasswd:\n    realm: skillcat-test\n    path: {}\n",
                    dir.path().join("htpasswd").display()
                )
            }
        };
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let addr = format!("127.0.0.1:{port}");
            let config = format!(
                "version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: false\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {addr}\n{auth}",
                dir.path().join("storage").display()
            );
            std::fs::write(dir.path().join("config.yml"), config).unwrap();
            let log = std::fs::File::create(dir.path().join("registry.log")).unwrap();
            let child = Command::new(program())
                .arg("serve")
                .arg(dir.path().join("config.yml"))
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .expect("start the registry");
            let mut child = KillOnDrop(child);
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(10) {
                if let Ok(Some(_)) = child.0.try_wait() {
                    break; // the port was taken meanwhile: try another
                }
                if TcpStream::connect(&addr).is_ok() {
                    return Registry {
                        _child: child,
                        dir,
                        addr,
                        basic,
                    };
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let log = std::fs::read_to_string(dir.path().join("registry.log")).unwrap_or_default();
        panic!("the registry did not start:\n{log}");
    }

    /// `oci://127.0.0.1:PORT/REPO`.
    pub fn oci(&self, repo: &str) -> String {
        format!("oci://{}/{repo}", self.addr)
    }

    /// What the registry logged (its access log included).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default()
    }

    /// Stops it (the storage folder stays until the value is dropped).
    pub fn stop(&mut self) {
        let _ = self._child.0.kill();
        let _ = self._child.0.wait();
    }

    fn curl(&self, args: &[&str], body: Option<&Path>) -> (u16, String) {
        let mut cmd = Command::new("curl");
        cmd.args(["-sS", "-o", "/dev/null", "-D", "-", "-w", "%{http_code}"]);
        if let Some((u, p)) = &self.basic {
            cmd.args(["-u", &format!("{u}:{p}")]);
        }
        if let Some(b) = body {
            cmd.arg("--data-binary").arg(format!("@{}", b.display()));
        }
        let out = cmd.args(args).output().expect("curl");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let code = text
            .lines()
            .last()
            .and_then(|l| l.trim().parse().ok())
            .unwrap_or(0);
        (code, text)
    }

    /// Uploads a blob with plain HTTP calls (POST, then PUT with the digest); returns its digest.
    pub fn put_blob(&self, repo: &str, bytes: &[u8]) -> String {
        let digest = sha256_digest(bytes);
        let file = self.dir.path().join(format!("blob-{}", &digest[7..]));
        std::fs::write(&file, bytes).unwrap();
        let (code, head) = self.curl(
            &[
                "-X",
                "POST",
                &format!("http://{}/v2/{repo}/blobs/uploads/", self.addr),
            ],
            None,
        );
        assert_eq!(code, 202, "{head}");
        let location = head
            .lines()
            .find_map(|l| {
                l.split_once(':')
                    .filter(|(k, _)| k.eq_ignore_ascii_case("location"))
                    .map(|(_, v)| v.trim().to_string())
            })
            .expect("a Location");
        let url = if location.starts_with("http") {
            location
        } else {
            format!("http://{}{location}", self.addr)
        };
        let sep = if url.contains('?') { '&' } else { '?' };
        let (code, head) = self.curl(
            &[
                "-X",
                "PUT",
                "-H",
                "Content-Type: application/octet-stream",
                &format!("{url}{sep}digest={digest}"),
            ],
            Some(&file),
        );
        assert_eq!(code, 201, "{head}");
        digest
    }

    /// PUTs a manifest or index under `reference`; returns its digest.
    pub fn put_manifest(
        &self,
        repo: &str,
        reference: &str,
        media_type: &str,
        bytes: &[u8],
    ) -> String {
        let file = self.dir.path().join("manifest.json");
        std::fs::write(&file, bytes).unwrap();
        let (code, head) = self.curl(
            &[
                "-X",
                "PUT",
                "-H",
                &format!("Content-Type: {media_type}"),
                &format!("http://{}/v2/{repo}/manifests/{reference}", self.addr),
            ],
            Some(&file),
        );
        assert_eq!(code, 201, "{head}");
        sha256_digest(bytes)
    }
}

/// `sha256:<hex>`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    let h = Sha256::digest(bytes);
    let mut s = String::from("sha256:");
    for b in h {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// A gzip-compressed tar of `(path, text, executable)` entries, built with the tar and flate2
/// crates (not skillcat's packer).
pub fn tar_gz(files: &[(&str, &str, bool)]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    for (path, text, exec) in files {
        let mut h = tar::Header::new_ustar();
        h.set_size(text.len() as u64);
        h.set_mode(if *exec { 0o755 } else { 0o644 });
        h.set_entry_type(tar::EntryType::Regular);
        h.set_mtime(0);
        tar.append_data(&mut h, path, text.as_bytes()).unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap()
}

/// A path inside a temp folder, for the cache of one test.
pub fn cache_blobs(cache: &Path) -> Vec<PathBuf> {
    let dir = cache.join("skillcat").join("blobs-v3").join("sha256");
    match std::fs::read_dir(dir) {
        Ok(rd) => rd.flatten().map(|e| e.path()).collect(),
        Err(_) => Vec::new(),
    }
}
