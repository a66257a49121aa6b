//! The follower against a store whose database can be made to stop answering: writes by
//! another replica reach this one's site; during an outage the site keeps what it held; when
//! the database answers again the replica catches up by itself.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;

use super::Replica;
use crate::path::FileEntry;
use crate::registry::store::{ChangePage, Engine, Imported, SqliteStore, Store, VersionRecord};
use crate::registry::{
    Actor, AuditEntry, CheckReport, Pin, Prepared, PublishOptions, Published, Registry,
    RegistryError, RegistrySource, Release, Result, SearchHit, StoredSignature, VersionInfo,
};
use crate::site::{RegistryVersions, RegistryYanked, Site, SiteOptions};

/// A registry file whose every call fails as a lost database does while `down` is set.
#[derive(Debug)]
struct Switchable {
    inner: SqliteStore,
    down: AtomicBool,
    /// Every call but the feed's fails: the database lost between reading the feed and
    /// reading the skills it names.
    skills_down: AtomicBool,
}

impl Switchable {
    fn new(db: &std::path::Path) -> Switchable {
        Switchable {
            inner: SqliteStore::open(db).unwrap(),
            down: AtomicBool::new(false),
            skills_down: AtomicBool::new(false),
        }
    }

    fn up(&self) -> Result<()> {
        if self.down.load(Ordering::SeqCst) || self.skills_down.load(Ordering::SeqCst) {
            return self.feed_up().and(Err(RegistryError::Unavailable {
                what: "the test database".into(),
                reason: "connection refused".into(),
            }));
        }
        Ok(())
    }

    fn feed_up(&self) -> Result<()> {
        if self.down.load(Ordering::SeqCst) {
            return Err(RegistryError::Unavailable {
                what: "the test database".into(),
                reason: "connection refused".into(),
            });
        }
        Ok(())
    }
}

#[async_trait]
impl Store for Switchable {
    fn engine(&self) -> Engine {
        self.inner.engine()
    }
    fn display(&self) -> &str {
        self.inner.display()
    }
    async fn schema_version(&self) -> Result<u32> {
        self.up()?;
        self.inner.schema_version().await
    }
    async fn pins(&self) -> Result<Vec<Pin>> {
        self.up()?;
        self.inner.pins().await
    }
    async fn resolve(&self, name: &str, version: Option<&str>) -> Result<Option<Pin>> {
        self.up()?;
        self.inner.resolve(name, version).await
    }
    async fn version_files(&self, pin: &Pin) -> Result<Vec<FileEntry>> {
        self.up()?;
        self.inner.version_files(pin).await
    }
    async fn read_file(&self, pin: &Pin, path: &str) -> Result<Option<Bytes>> {
        self.up()?;
        self.inner.read_file(pin, path).await
    }
    async fn signatures(&self, pin: &Pin) -> Result<Vec<StoredSignature>> {
        self.up()?;
        self.inner.signatures(pin).await
    }
    async fn version_contents(
        &self,
        name: &str,
        version: &str,
    ) -> Result<Option<Vec<(FileEntry, Bytes)>>> {
        self.up()?;
        self.inner.version_contents(name, version).await
    }
    async fn versions(&self, name: &str) -> Result<Vec<VersionInfo>> {
        self.up()?;
        self.inner.versions(name).await
    }
    async fn all_versions(&self, name: Option<&str>) -> Result<Vec<VersionInfo>> {
        self.up()?;
        self.inner.all_versions(name).await
    }
    async fn yanked(&self, name: Option<&str>) -> Result<Vec<VersionInfo>> {
        self.up()?;
        self.inner.yanked(name).await
    }
    async fn all_yanked(&self) -> Result<Vec<(String, Vec<String>)>> {
        self.up()?;
        self.inner.all_yanked().await
    }
    async fn latest(&self, name: &str) -> Result<Option<VersionInfo>> {
        self.up()?;
        self.inner.latest(name).await
    }
    async fn get(&self, name: &str, version: &str) -> Result<Option<Release>> {
        self.up()?;
        self.inner.get(name, version).await
    }
    async fn findings(&self, name: &str, version: &str) -> Result<Option<String>> {
        self.up()?;
        self.inner.findings(name, version).await
    }
    async fn search_page(
        &self,
        query: &str,
        offset: usize,
        limit: usize,
        deadline: Duration,
    ) -> Result<(Vec<SearchHit>, usize)> {
        self.up()?;
        self.inner.search_page(query, offset, limit, deadline).await
    }
    async fn audit(
        &self,
        limit: usize,
        before: Option<i64>,
        keep: &(dyn for<'n> Fn(&'n str) -> bool + Sync),
    ) -> Result<Vec<AuditEntry>> {
        self.up()?;
        self.inner.audit(limit, before, keep).await
    }
    async fn publishers(&self, name: Option<&str>) -> Result<HashMap<(String, String), String>> {
        self.up()?;
        self.inner.publishers(name).await
    }
    async fn check(&self) -> Result<CheckReport> {
        self.up()?;
        self.inner.check().await
    }
    async fn changes(&self, since: i64, limit: usize) -> Result<ChangePage> {
        self.feed_up()?;
        self.inner.changes(since, limit).await
    }
    async fn head(&self) -> Result<i64> {
        self.feed_up()?;
        self.inner.head().await
    }
    async fn commit(&self, prepared: Arc<Prepared>, actor: Option<Actor>) -> Result<Published> {
        self.up()?;
        self.inner.commit(prepared, actor).await
    }
    async fn commit_many(
        &self,
        prepared: Arc<Vec<Prepared>>,
        actor: Option<Actor>,
    ) -> Vec<Result<Published>> {
        self.inner.commit_many(prepared, actor).await
    }
    async fn set_yanked(
        &self,
        name: &str,
        version: &str,
        yanked: bool,
        actor: Option<Actor>,
    ) -> Result<bool> {
        self.up()?;
        self.inner.set_yanked(name, version, yanked, actor).await
    }
    async fn export(&self, name: &str, version: &str) -> Result<Option<VersionRecord>> {
        self.up()?;
        self.inner.export(name, version).await
    }
    async fn import(&self, record: VersionRecord) -> Result<Imported> {
        self.up()?;
        self.inner.import(record).await
    }
    async fn import_audit(&self, entries: Vec<AuditEntry>) -> Result<usize> {
        self.up()?;
        self.inner.import_audit(entries).await
    }
}

/// Publishes `name@1.0.0` into the registry file at `db` as another replica would.
async fn publish_elsewhere(dir: &std::path::Path, db: &std::path::Path, name: &str) {
    use crate::source::{DirOptions, DirSource};
    let root = dir.join(format!("src-{name}"));
    std::fs::create_dir_all(root.join(name)).unwrap();
    std::fs::write(
        root.join(name).join("SKILL.md"),
        format!(
            "---\nname: {name}\ndescription: Does {name} things for the follower test.\n\
             metadata:\n  version: \"1.0.0\"\n---\n# {name}\n"
        ),
    )
    .unwrap();
    let src = DirSource::open(&root, DirOptions::default()).unwrap();
    let mut registry = Registry::open(db).unwrap();
    registry
        .publish(&src, name, &PublishOptions::default())
        .await
        .unwrap();
}

fn served(site: &RwLock<Arc<Site>>) -> Vec<String> {
    let site = site.read().unwrap().clone();
    site.skills().iter().map(|s| s.name.clone()).collect()
}

/// Waits until the site serves `name` (failing after `limit`).
async fn until_served(site: &RwLock<Arc<Site>>, name: &str, limit: Duration) {
    let start = Instant::now();
    while !served(site).iter().any(|n| n == name) {
        assert!(
            start.elapsed() < limit,
            "{name} not served after {limit:?}: {:?}",
            served(site)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

type Following = (
    Arc<Switchable>,
    Arc<dyn Store>,
    Arc<RwLock<Arc<Site>>>,
    Arc<Replica>,
);

/// A replica of the registry file `db` through a switchable store, its follower started.
async fn following(db: &std::path::Path) -> Following {
    let store = Arc::new(Switchable::new(db));
    let shared: Arc<dyn Store> = store.clone();
    let head = shared.head().await.unwrap();
    let opts = SiteOptions {
        yanked: Some(Arc::new(RegistryYanked(shared.clone()))),
        versions: Some(Arc::new(RegistryVersions(shared.clone()))),
        ..SiteOptions::default()
    };
    let (mut site, _) = Site::build(&RegistrySource::new(shared.clone()), &opts)
        .await
        .unwrap();
    site.set_seq(head);
    let site = Arc::new(RwLock::new(Arc::new(site)));
    let replica = Replica::new(shared.clone(), site.clone());
    replica.follow();
    (store, shared, site, replica)
}

/// The database lost after the feed named a change but before the skill was read: the change
/// is not taken as applied, and is applied when the database answers again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_whose_skill_could_not_be_read_is_applied_when_the_database_is_back() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("r.db");
    Registry::init(&db).unwrap();
    publish_elsewhere(tmp.path(), &db, "first").await;
    let (store, _shared, site, _replica) = following(&db).await;
    store.skills_down.store(true, Ordering::SeqCst);
    publish_elsewhere(tmp.path(), &db, "second").await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(served(&site), ["first"]);
    store.skills_down.store(false, Ordering::SeqCst);
    until_served(&site, "second", Duration::from_secs(10)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_follower_serves_other_replicas_writes_keeps_its_site_in_an_outage_and_catches_up() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("r.db");
    Registry::init(&db).unwrap();
    publish_elsewhere(tmp.path(), &db, "first").await;
    let (store, shared, site, replica) = following(&db).await;
    let head = shared.head().await.unwrap();
    assert_eq!(served(&site), ["first"]);

    // Another replica's publish is served here within the bound.
    publish_elsewhere(tmp.path(), &db, "second").await;
    until_served(&site, "second", Duration::from_secs(2)).await;
    let at = site.read().unwrap().seq().unwrap();
    assert!(at > head, "the site's position moved: {at} > {head}");

    // The database stops answering: what the site holds is still served, unchanged.
    store.down.store(true, Ordering::SeqCst);
    publish_elsewhere(tmp.path(), &db, "third").await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(served(&site), ["first", "second"]);
    assert!(replica.outage.load(Ordering::SeqCst), "the outage is known");
    // A write through this replica meanwhile is refused as the database's outage.
    assert!(matches!(
        shared.set_yanked("first", "1.0.0", true, None).await,
        Err(RegistryError::Unavailable { .. })
    ));

    // Back: the replica catches up by itself (the backoff is at most 8 s).
    store.down.store(false, Ordering::SeqCst);
    until_served(&site, "third", Duration::from_secs(10)).await;
    assert!(!replica.outage.load(Ordering::SeqCst), "the outage is over");
    let head = shared.head().await.unwrap();
    assert_eq!(site.read().unwrap().seq(), Some(head));
}

/// A registry's search answers a query it answered at the site's position from memory (so a
/// lost database still answers it), and forgets every answer once the site moves on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_search_answers_from_memory_until_the_site_moves_on() {
    use crate::web::{RegistrySearch, SiteSearch};
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("r.db");
    Registry::init(&db).unwrap();
    publish_elsewhere(tmp.path(), &db, "first").await;
    let (store, shared, site, _replica) = following(&db).await;
    let search = Arc::new(RegistrySearch::new(shared));
    let ask = |query: &'static str| {
        let (search, site) = (search.clone(), site.read().unwrap().clone());
        async move {
            tokio::task::spawn_blocking(move || search.search(&site, query, 0, 10))
                .await
                .unwrap()
        }
    };
    assert_eq!(ask("first").await.unwrap(), (vec!["first".to_string()], 1));

    store.down.store(true, Ordering::SeqCst);
    assert_eq!(
        ask("first").await.unwrap(),
        (vec!["first".to_string()], 1),
        "answered from memory at the same position"
    );
    let err = ask("follower").await.unwrap_err();
    assert!(err.to_string().contains("unavailable"), "{err}");

    store.down.store(false, Ordering::SeqCst);
    publish_elsewhere(tmp.path(), &db, "second").await;
    until_served(&site, "second", Duration::from_secs(10)).await;
    store.down.store(true, Ordering::SeqCst);
    let err = ask("first").await.unwrap_err();
    assert!(
        err.to_string().contains("unavailable"),
        "an answer of the old position is not given at the new one: {err}"
    );
    store.down.store(false, Ordering::SeqCst);
    assert_eq!(ask("follower").await.unwrap().1, 2);
}
