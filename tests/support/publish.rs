//! A central registry server for tests: `skillcat serve REGISTRY.db --publish --tokens` on
//! 127.0.0.1 with its log in a file, and the answers of its API.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value as J;

use super::serve::spawn_serve;

/// A running server; its log goes to a file in the registry's folder.
pub struct Server {
    pub child: Child,
    pub url: String,
    pub log: PathBuf,
}

impl Server {
    /// Starts the server on `dir/r.db` with `dir/tokens.toml` and the `extra` arguments.
    pub fn start(dir: &Path, extra: &[&str]) -> Server {
        let log = dir.join(format!("server-{}.log", extra.len()));
        let file = std::fs::File::create(&log).unwrap();
        let tokens = dir.join("tokens.toml");
        let mut args = vec!["--publish", "--tokens", tokens.to_str().unwrap()];
        args.extend_from_slice(extra);
        let (child, line, url) = spawn_serve(&dir.join("r.db"), &args, Stdio::from(file));
        assert!(line.contains("publishing at /api/v1/"), "{line}");
        Server { child, url, log }
    }

    /// The server's peak resident memory so far (`VmHWM`), in bytes.
    pub fn peak_rss(&self) -> u64 {
        status_kib(self.child.id(), "VmHWM:") * 1024
    }

    /// Whether the server is still running.
    pub fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    pub fn log_text(&self) -> String {
        let mut text = String::new();
        std::fs::File::open(&self.log)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        text
    }

    pub fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.log_text()
    }
}

/// A server outlives no test: one that fails (panics) before `stop` still ends it (two were
/// found running an hour after a failed memory-bound test).
impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `kB` line of `/proc/PID/status`.
pub fn status_kib(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {key} in /proc/{pid}/status"))
}

/// One answer: status, headers, body.
pub struct Answer {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
}

impl Answer {
    pub fn json(&self) -> J {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("{e}: {}", self.text))
    }

    #[track_caller]
    pub fn is(&self, status: u16, code: Option<&str>) -> &Self {
        assert_eq!(self.status.as_u16(), status, "{}", self.text);
        if let Some(code) = code {
            assert_eq!(self.json()["errors"][0]["code"], code, "{}", self.text);
        }
        self
    }

    pub fn detail(&self) -> String {
        self.json()["errors"][0]["detail"]
            .as_str()
            .unwrap_or("")
            .to_string()
    }
}

pub async fn send(
    method: reqwest::Method,
    url: String,
    token: Option<&str>,
    body: Vec<u8>,
    headers: &[(&str, String)],
) -> Answer {
    let shown = url.clone();
    try_send(method, url, token, body, headers)
        .await
        .unwrap_or_else(|e| panic!("{shown}: {e}"))
}

/// A request whose transport may fail (a connection cut by the server's request timeout).
pub async fn try_send(
    method: reqwest::Method,
    url: String,
    token: Option<&str>,
    body: Vec<u8>,
    headers: &[(&str, String)],
) -> Result<Answer, String> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap();
    let mut req = client.request(method, url).body(body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    for (k, v) in headers {
        req = req.header(*k, v);
    }
    let resp = req.send().await.map_err(|e| format!("{e:?}"))?;
    Ok(Answer {
        status: resp.status(),
        headers: resp.headers().clone(),
        text: resp.text().await.map_err(|e| format!("{e:?}"))?,
    })
}
