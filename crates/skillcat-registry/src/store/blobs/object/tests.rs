//! The blob stores on a local directory and in memory (every run), and on a real S3 server
//! when `SKILLCAT_TEST_S3` names a bucket (`scripts/s3-garage-test`).

use std::collections::HashSet;
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, SystemTime};

use super::*;
use crate::digest::{sha256, to_hex};
use crate::store::blobs::{collect_garbage, find_garbage, get_verified};

/// What every backend must do: put, get, list, delete, an idempotent put, hashed reads.
async fn conformance(blobs: &dyn BlobStore) {
    let (a, b) = (b"alpha".as_slice(), b"bravo".as_slice());
    let (sa, sb) = (sha256(a), sha256(b));
    assert_eq!(blobs.get(&sa).await.unwrap(), None);
    assert_eq!(blobs.modified(&sa).await.unwrap(), None);
    blobs.put(&sa, Bytes::from_static(b"alpha")).await.unwrap();
    blobs.put(&sa, Bytes::from_static(b"alpha")).await.unwrap();
    blobs.put(&sb, Bytes::from_static(b"bravo")).await.unwrap();
    assert_eq!(blobs.get(&sa).await.unwrap().unwrap(), a);
    assert_eq!(get_verified(blobs, &sb).await.unwrap().unwrap(), b);
    let mut held: Vec<[u8; 32]> = blobs
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|(s, _)| s)
        .collect();
    held.sort();
    let mut want = vec![sa, sb];
    want.sort();
    assert_eq!(held, want, "an idempotent put is one blob");
    assert!(blobs.modified(&sa).await.unwrap().is_some());
    blobs.delete(&sa).await.unwrap();
    blobs.delete(&sa).await.unwrap();
    assert_eq!(blobs.get(&sa).await.unwrap(), None);
    assert_eq!(blobs.list().await.unwrap().len(), 1);

    // Garbage collection: a referenced blob stays; an unreferenced one written just now (a
    // publish that has not committed yet) stays through any grace period.
    let referenced = HashSet::from([sb]);
    let in_flight = sha256(b"in flight");
    blobs
        .put(&in_flight, Bytes::from_static(b"in flight"))
        .await
        .unwrap();
    let report = collect_garbage(blobs, &referenced, Duration::from_secs(3600))
        .await
        .unwrap();
    assert_eq!((report.held, report.referenced, report.young), (2, 1, 1));
    assert!(report.collected.is_empty());
    assert!(blobs.get(&in_flight).await.unwrap().is_some());
    // With no grace at all it is collected; the referenced one never is.
    let dry = find_garbage(blobs, &referenced, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(dry.collected, vec![to_hex(in_flight)]);
    assert!(dry.dry_run);
    assert!(
        blobs.get(&in_flight).await.unwrap().is_some(),
        "a dry run deletes nothing"
    );
    let report = collect_garbage(blobs, &referenced, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(report.collected, vec![to_hex(in_flight)]);
    assert_eq!(blobs.get(&in_flight).await.unwrap(), None);
    assert_eq!(get_verified(blobs, &sb).await.unwrap().unwrap(), b);
    blobs.delete(&sb).await.unwrap();
}

#[tokio::test]
async fn memory_store_conforms() {
    let blobs = open_blobs("memory:").await.unwrap();
    assert_eq!(blobs.url(), "memory:");
    conformance(&*blobs).await;
}

#[tokio::test]
async fn file_store_conforms_and_creates_its_directory_private() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("new/blobs");
    let url = format!("file://{}", dir.display());
    let blobs = open_blobs(&url).await.unwrap();
    assert_eq!(blobs.url(), url);
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "{mode:o}");
    conformance(&*blobs).await;
    // Fanned out on disk as the key says.
    let sha = sha256(b"on disk");
    blobs
        .put(&sha, Bytes::from_static(b"on disk"))
        .await
        .unwrap();
    assert!(dir.join(blob_key(&sha)).is_file());
    // An existing directory opens as it is.
    let again = open_blobs(&url).await.unwrap();
    assert!(again.get(&sha).await.unwrap().is_some());
}

#[tokio::test]
async fn file_store_collects_only_old_unreferenced_blobs() {
    let tmp = tempfile::tempdir().unwrap();
    let url = format!("file://{}", tmp.path().display());
    let blobs = open_blobs(&url).await.unwrap();
    let put = |b: &'static [u8]| {
        let blobs = blobs.clone();
        async move {
            let sha = sha256(b);
            blobs.put(&sha, Bytes::from_static(b)).await.unwrap();
            sha
        }
    };
    let (kept, stale, fresh) = (put(b"kept").await, put(b"stale").await, put(b"fresh").await);
    let two_hours_ago = SystemTime::now() - Duration::from_secs(7200);
    for sha in [kept, stale] {
        let file = std::fs::File::options()
            .write(true)
            .open(tmp.path().join(blob_key(&sha)))
            .unwrap();
        file.set_modified(two_hours_ago).unwrap();
    }
    let referenced = HashSet::from([kept]);
    let report = collect_garbage(&*blobs, &referenced, Duration::from_secs(3600))
        .await
        .unwrap();
    assert_eq!(report.collected, vec![to_hex(stale)]);
    assert_eq!((report.held, report.referenced, report.young), (3, 1, 1));
    assert!(blobs.get(&kept).await.unwrap().is_some());
    assert!(
        blobs.get(&fresh).await.unwrap().is_some(),
        "a publish in flight keeps its blob"
    );
    assert_eq!(blobs.get(&stale).await.unwrap(), None);
}

#[tokio::test]
async fn hostile_files_are_never_blobs_and_altered_bytes_are_caught() {
    let tmp = tempfile::tempdir().unwrap();
    let url = format!("file://{}", tmp.path().display());
    let blobs = open_blobs(&url).await.unwrap();
    let sha = sha256(b"genuine");
    blobs
        .put(&sha, Bytes::from_static(b"genuine"))
        .await
        .unwrap();
    let hex = to_hex(sha);
    // Keys that are not the registry's: never listed, so never collected.
    let strays = [
        format!("sha256/2c/{}", "z".repeat(64)),
        format!(
            "sha256/{}/{hex}",
            if hex.starts_with("00") { "01" } else { "00" }
        ),
        format!("sha256/{}/{}", &hex[..2], hex.to_uppercase()),
        format!("sha256/{}/{}", &hex[..2], &hex[..40]),
        format!("notes/{hex}"),
    ];
    for stray in &strays {
        let path = tmp.path().join(stray);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, b"not a blob").unwrap();
    }
    let listed: Vec<[u8; 32]> = blobs
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|(s, _)| s)
        .collect();
    assert_eq!(listed, vec![sha]);
    let report = collect_garbage(&*blobs, &HashSet::new(), Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(report.collected, vec![hex.clone()]);
    for stray in &strays {
        assert!(tmp.path().join(stray).is_file(), "{stray} left alone");
    }

    // A blob altered on disk: the store hands back what it holds, the hash refuses it.
    blobs
        .put(&sha, Bytes::from_static(b"genuine"))
        .await
        .unwrap();
    std::fs::write(tmp.path().join(blob_key(&sha)), b"altered").unwrap();
    assert_eq!(blobs.get(&sha).await.unwrap().unwrap(), &b"altered"[..]);
    let err = get_verified(&*blobs, &sha).await.unwrap_err();
    assert!(matches!(err, RegistryError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("digest mismatch"), "{err}");
}

#[tokio::test]
async fn a_read_is_bounded() {
    let mut blobs = ObjectBlobs::new("memory:", Arc::new(InMemory::new()), false);
    blobs.max = 4;
    let sha = sha256(b"too long");
    blobs
        .put(&sha, Bytes::from_static(b"too long"))
        .await
        .unwrap();
    let err = blobs.get(&sha).await.unwrap_err();
    assert!(err.to_string().contains("not read"), "{err}");
    let ok = sha256(b"ok");
    blobs.put(&ok, Bytes::from_static(b"ok")).await.unwrap();
    assert_eq!(blobs.get(&ok).await.unwrap().unwrap(), &b"ok"[..]);
}

#[tokio::test]
async fn bad_urls_are_refused_clearly() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("a-file");
    std::fs::write(&file, b"").unwrap();
    let under_a_file = format!("file://{}/blobs", file.display());
    let cases: &[(&str, &str)] = &[
        ("ftp://host/blobs", "file:///DIR, s3://BUCKET"),
        ("blobs", "memory:"),
        ("file://relative/dir", "file:///ABSOLUTE/PATH"),
        (&under_a_file, "a-file"),
        ("s3://", "s3://BUCKET"),
        ("s3://b/some/path", "one bucket"),
        (
            "s3://b?endpont=http://127.0.0.1:3900",
            "unknown parameter \"endpont\"",
        ),
        ("s3://b?allow_http=yes", "true or false"),
    ];
    for (url, says) in cases {
        let err = open_blobs(url).await.unwrap_err().to_string();
        assert!(err.contains(says), "{url}: {err}");
    }
}

fn creds() -> S3Credentials {
    S3Credentials {
        key_id: "GKexample".into(),
        secret: "s3cr3t-value".into(),
        token: None,
    }
}

#[test]
fn s3_urls_take_credentials_from_the_environment_only_and_http_on_loopback() {
    let url = "s3://skills?endpoint=http://127.0.0.1:3900&region=garage";
    let rest = url.strip_prefix("s3://").unwrap();
    let err = open_s3(url, rest, None).unwrap_err().to_string();
    assert!(err.contains("AWS_ACCESS_KEY_ID"), "{err}");
    let blobs = open_s3(url, rest, Some(&creds())).unwrap();
    assert_eq!(blobs.url(), url);
    let shown = format!("{blobs:?}");
    assert!(!shown.contains("s3cr3t"), "{shown}");
    for ok in [
        "s3://b?endpoint=http://localhost:3900",
        "s3://b?endpoint=http://[::1]:3900",
        "s3://b?endpoint=http://10.0.0.5:3900&allow_http=true",
        "s3://b?endpoint=https://s3.example.net",
        "s3://b/?region=eu-west-1",
    ] {
        open_s3(ok, ok.strip_prefix("s3://").unwrap(), Some(&creds())).unwrap();
    }
    for (bad_url, says) in [
        ("s3://b?endpoint=http://10.0.0.5:3900", "allow_http=true"),
        (
            "s3://b?endpoint=http://127.0.0.1.example.net:3900",
            "allow_http=true",
        ),
        ("s3://key:secret@b", "AWS_ACCESS_KEY_ID"),
        ("s3://b?endpoint=http://k:s@127.0.0.1:3900", "credentials"),
        ("s3://b?endpoint=127.0.0.1:3900", "http(s)://"),
    ] {
        let err = open_s3(
            bad_url,
            bad_url.strip_prefix("s3://").unwrap(),
            Some(&creds()),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains(says), "{bad_url}: {err}");
    }
}

#[tokio::test]
async fn an_unreachable_s3_server_is_unavailable() {
    // A port nothing listens on: refused at once, retried a little, then Unavailable.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("s3://skills?endpoint=http://127.0.0.1:{port}&region=garage");
    let blobs = open_s3(&url, url.strip_prefix("s3://").unwrap(), Some(&creds())).unwrap();
    let err = blobs.get(&sha256(b"x")).await.unwrap_err();
    assert!(matches!(err, RegistryError::Unavailable { .. }), "{err}");
    // Refused by the server's address, not by the client before any request (an http
    // endpoint on loopback is allowed).
    assert!(!err.to_string().contains("builder error"), "{err}");
    assert!(!err.to_string().contains("s3cr3t"), "{err}");
}

/// A real S3 server: `SKILLCAT_TEST_S3=s3://BUCKET?endpoint=…` with `AWS_ACCESS_KEY_ID` and
/// `AWS_SECRET_ACCESS_KEY` set (`scripts/s3-garage-test` does all of it).
#[tokio::test]
async fn s3_store_conforms_when_a_server_is_given() {
    let Ok(url) = std::env::var("SKILLCAT_TEST_S3") else {
        eprintln!(
            "skipping the S3 case: SKILLCAT_TEST_S3 is unset (scripts/s3-garage-test sets it)"
        );
        return;
    };
    let blobs = open_blobs(&url).await.unwrap();
    conformance(&*blobs).await;
}
