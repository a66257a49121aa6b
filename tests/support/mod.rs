//! Shared test support: running the real binary, and skill directories confined scripts can
//! reach. (The source conformance suite ships in the core: `skillcat_core::testing`.)
#![allow(dead_code)]

pub mod bin;
pub mod central;
pub mod guest;
pub mod lab;
pub mod postgres;
pub mod project;
pub mod publish;
pub mod registry;
pub mod serve;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// `len` incompressible bytes (xorshift64 from a fixed seed: the same on every run), so an
/// archive of them is as big as they are.
pub fn incompressible(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Reads an HTTP request's head (through the blank line) from a test server's connection, as
/// text; `None` when the client closed first, or sent more than 64 KiB without ending it.
pub async fn read_request_head(stream: &mut tokio::net::TcpStream) -> Option<String> {
    use tokio::io::AsyncReadExt;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        if buf.len() > 64 * 1024 {
            return None;
        }
    }
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// `skillcat mcp ARGS…` from the crate directory, stdio piped, without `SKILLCAT_CONFIG`, with
/// its own TMPDIR, also its `XDG_RUNTIME_DIR` (where workspaces go; searchable by the sandbox
/// uid), killed when dropped.
pub fn spawn_mcp(args: &[&str]) -> (tokio::process::Child, tempfile::TempDir) {
    spawn_mcp_in(Path::new(env!("CARGO_MANIFEST_DIR")), None, args)
}

/// [`spawn_mcp`] started in `cwd`, with `HOME` set to `home` when given (a client starts its
/// server from its own working directory, as the user it runs as).
pub fn spawn_mcp_in(
    cwd: &Path,
    home: Option<&Path>,
    args: &[&str],
) -> (tokio::process::Child, tempfile::TempDir) {
    let tmp = tempfile::Builder::new()
        .prefix("skillcat-mcp-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_skillcat"));
    cmd.arg("mcp")
        .args(args)
        .current_dir(cwd)
        .env_remove("SKILLCAT_CONFIG")
        .env("TMPDIR", tmp.path())
        .env("XDG_RUNTIME_DIR", tmp.path());
    if let Some(home) = home {
        cmd.env("HOME", home);
    }
    let child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    (child, tmp)
}

/// The Python of the venv `scripts/test` makes with the Python MCP SDK (`SKILLCAT_PY_MCP`);
/// `None` (the test skips) only with `SKILLCAT_SKIP_PY_MCP=1` outside CI.
pub fn python_mcp() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("SKILLCAT_PY_MCP") {
        return Some(p.into());
    }
    if std::env::var_os("SKILLCAT_SKIP_PY_MCP").is_some_and(|v| v == "1")
        && std::env::var_os("CI").is_none()
    {
        eprintln!("skipped: SKILLCAT_SKIP_PY_MCP=1");
        return None;
    }
    panic!(
        "SKILLCAT_PY_MCP is not set: run the tests with scripts/test, which makes a venv with \
         the Python MCP SDK (pip install mcp==2.3.0) and sets it to its python \
         (SKILLCAT_SKIP_PY_MCP=1 skips these tests on a machine without Python, never in CI)"
    );
}

/// A temporary directory confined scripts can reach: when the tests run as root the sandbox
/// runs scripts as an unprivileged uid, so the directory must be traversable by others (0711).
pub fn sandbox_tempdir(prefix: &str) -> tempfile::TempDir {
    let dir = tempfile::Builder::new().prefix(prefix).tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    dir
}

/// Writes `root/SKILL.md` with `doc`, and each `(relative path, text, executable)` under `root`.
pub fn write_skill(root: &Path, doc: &str, files: &[(&str, &str, bool)]) {
    std::fs::create_dir_all(root).unwrap();
    std::fs::write(root.join("SKILL.md"), doc).unwrap();
    for (rel, text, exec) in files {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        let mode = if *exec { 0o755 } else { 0o644 };
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

/// `cp -r FROM TO`: a tree copied with its files' modes (executable bits kept).
pub fn copy_dir(from: &Path, to: &Path) {
    let st = std::process::Command::new("cp")
        .arg("-r")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(st.success(), "cp -r {} {}", from.display(), to.display());
}

/// The head of one HTTP/1.1 request read from `reader` (a blocking twin of
/// [`read_request_head`]): its lines up to the blank one, each
/// without its line end (the request line first); `None` when the connection ends before.
pub fn read_head_lines(reader: &mut impl std::io::BufRead) -> Option<Vec<String>> {
    let mut head = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return None;
        }
        if line == "\r\n" {
            return Some(head);
        }
        head.push(line.trim_end().to_string());
    }
}

/// A raw HTTP/1.1 response with an honest Content-Length and `Connection: close`, for the
/// hostile servers tests write by hand.
pub fn http_response(status: u16, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} X\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}
