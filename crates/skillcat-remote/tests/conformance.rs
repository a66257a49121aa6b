//! The HTTP source passes the conformance suite (`skillcat_core::testing`) for the catalog's
//! valid skills, over a real server on 127.0.0.1 serving the site `serve` builds from the
//! fixture catalog; and again offline, from its cache alone.
//!
//! Origin: the HTTP store of step 4 (issue 5), whose conformance ran only through the
//! `skillcat serve` binary (`tests/integration/sources/http.rs`, which still does); run here too
//! by step 28 (issue 50) so the crate checks the store it owns. (The OCI store needs a registry program: its suite stays
//! in `tests/integration/sources/oci.rs`.)

use std::sync::Arc;

use skillcat_core::source::{DirOptions, DirSource};
use skillcat_core::testing;
use skillcat_remote::http::{HttpOptions, HttpSource};
use skillcat_serve::{ServeLimits, Site, SiteOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_source_passes_the_conformance_suite_for_valid_skills() {
    let catalog = DirSource::open(&testing::catalog_dir(), DirOptions::default()).unwrap();
    let (site, problems) = Site::build(&catalog, &SiteOptions::default())
        .await
        .unwrap();
    // Invalid roots are not served: the source sees the valid ones only.
    assert_eq!(
        problems.len() + testing::valid_roots().len(),
        testing::cases().len()
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(skillcat_serve::run(
        Arc::new(site),
        listener,
        false,
        ServeLimits::default(),
        async move {
            let _ = stopped.await;
        },
    ));

    let cache = tempfile::tempdir().unwrap();
    let online = HttpOptions {
        cache_dir: Some(cache.path().to_path_buf()),
        ..HttpOptions::default()
    };
    let src = HttpSource::new(&url, online.clone()).unwrap();
    testing::check_valid_subset(&src).await;
    assert!(src.warnings().is_empty(), "{:?}", src.warnings());
    assert!(src.stats().requests > 0);

    // Warm and offline: the same answers from the cache alone, no request sent.
    let offline = HttpOptions {
        offline: true,
        ..online
    };
    let again = HttpSource::new(&url, offline).unwrap();
    testing::check_valid_subset(&again).await;
    assert_eq!(again.stats().requests, 0);

    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}
