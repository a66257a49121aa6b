//! The web catalog (`serve` and `export`): its pages in a real browser (headless Chromium,
//! screenshots kept under the build folder), a hostile skill whose payloads must not make the
//! browser send a single request, the search API's ranking and refusals, the same pages and API
//! over a registry, a directory and an HTTP source, and `skillcat search` end to end.
//!
//! Origin: step 20 (issue 30: a web catalog and a search API).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value as J;

use crate::support::bin::{Skillcat, manifest_dir};
use crate::support::central::{registry_dir, token};
use crate::support::serve::spawn_serve;

fn fixtures() -> PathBuf {
    manifest_dir().join("fixtures/skills")
}

/// Where the screenshots go: the build folder, kept after the run for people to look at.
fn shots_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("web-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A server of the test, stopped when dropped.
struct Served {
    child: Child,
    url: String,
}

impl Served {
    fn start(source: &Path, extra: &[&str]) -> Served {
        let (child, line, url) = spawn_serve(source, extra, Stdio::null());
        assert!(line.starts_with("Serving "), "{line}");
        Served { child, url }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Headless Chromium, as root: one fresh profile per run, nothing of its own on the network.
struct Chromium {
    bin: PathBuf,
}

impl Chromium {
    fn find() -> Chromium {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            if let Ok(out) = Command::new("sh")
                .args(["-c", &format!("command -v {name}")])
                .output()
                && out.status.success()
            {
                let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
                return Chromium { bin: path.into() };
            }
        }
        panic!("headless Chromium is needed (Debian `chromium`; scripts/test installs it)")
    }

    fn run(&self, args: &[&str]) -> String {
        let profile = tempfile::tempdir().unwrap();
        let dir = format!("--user-data-dir={}", profile.path().display());
        let mut child = Command::new(&self.bin)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--hide-scrollbars",
                "--mute-audio",
                &dir,
            ])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromium");
        let mut out = String::new();
        let mut stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let _ = stdout.read_to_string(&mut out);
            out
        });
        // A page that never finishes loading must not hang the tests.
        let deadline = std::time::Instant::now() + Duration::from_secs(90);
        loop {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("chromium {args:?} did not finish in 90 s");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        reader.join().unwrap()
    }

    /// The DOM after the page loaded (and ran whatever it was allowed to run).
    fn dom(&self, url: &str) -> String {
        self.run(&["--virtual-time-budget=3000", "--dump-dom", url])
    }

    /// A screenshot of `url` at `width`×`height`, light or dark, saved as `name`.png.
    fn shot(&self, url: &str, name: &str, width: u32, height: u32, dark: bool) -> PathBuf {
        let file = shots_dir().join(format!("{name}.png"));
        let _ = std::fs::remove_file(&file);
        let shot = format!("--screenshot={}", file.display());
        let size = format!("--window-size={width},{height}");
        let scheme = format!(
            "--blink-settings=preferredColorScheme={}",
            if dark { 0 } else { 1 }
        );
        let mut args = vec![shot.as_str(), size.as_str(), scheme.as_str()];
        if dark {
            args.push("--force-dark-mode");
        }
        args.push(url);
        self.run(&args);
        let bytes = std::fs::read(&file).unwrap_or_default();
        assert!(
            bytes.starts_with(b"\x89PNG") && bytes.len() > 10_000,
            "a screenshot of {url} at {file:?}"
        );
        file
    }
}

/// An HTTP server that records the request line of every request it gets and answers 204:
/// where every payload of the hostile skill points.
struct Recorder {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    fn start() -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                let log = log.clone();
                std::thread::spawn(move || {
                    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
                    let mut reader = BufReader::new(conn.try_clone().unwrap());
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) > 0 {
                        log.lock().unwrap().push(line.trim().to_string());
                    }
                    let _ = conn.write_all(
                        b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    );
                });
            }
        });
        Recorder { port, seen }
    }

    fn requests(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }

    fn clear(&self) {
        self.seen.lock().unwrap().clear();
    }
}

fn get(url: &str) -> (u16, reqwest::header::HeaderMap, String) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let r = client.get(url).send().await.unwrap();
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        (status, headers, r.text().await.unwrap())
    })
}

fn get_json(url: &str) -> (u16, J) {
    let (status, headers, body) = get(url);
    assert_eq!(headers["content-type"], "application/json", "{url}");
    (
        status,
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{url}: {e}: {body}")),
    )
}

/// The names of the result cards of a page's DOM, in order.
fn card_names(dom: &str) -> Vec<String> {
    dom.split(r#"<a class="name" href=""#)
        .skip(1)
        .filter_map(|rest| {
            let text = rest.split_once('>')?.1;
            Some(text.split_once('<')?.0.to_string())
        })
        .collect()
}

/// The pages in Chromium: home, a search and a skill page, with JavaScript irrelevant (none
/// runs), the DOM checked and screenshots taken at desktop and phone widths, light and dark.
#[test]
fn web_pages_in_a_real_browser() {
    let chrome = Chromium::find();
    let s = Served::start(&fixtures(), &[]);
    let home = chrome.dom(&s.url);
    assert!(home.contains("<main id=\"main\""), "{home}");
    assert!(home.contains(r#"<form class="search" role="search""#));
    assert!(home.contains(r#"<label for="q" class="sr">Search skills</label>"#));
    let names = card_names(&home);
    assert_eq!(
        names,
        [
            "api-style-review",
            "csv-cleaner",
            "git-release-notes",
            "incident-timeline",
            "log-search",
            "meeting-summary",
            "pdf-forms"
        ],
        "sorted by name"
    );
    assert!(home.contains("7 skills in this catalog"));

    let search = chrome.dom(&format!("{}search/?q=fill+a+pdf+form", s.url));
    assert_eq!(
        card_names(&search).first().map(String::as_str),
        Some("pdf-forms")
    );
    assert!(
        search.contains(r#"value="fill a pdf form""#),
        "the box keeps the query"
    );

    let page = chrome.dom(&format!("{}skills/pdf-forms/", s.url));
    for want in [
        "<h1>pdf-forms</h1>",
        "<h1>PDF forms</h1>",
        &format!("skillcat add {} pdf-forms", s.url),
        &format!("npx skills add {}", s.url),
        "mcpServers",
        "run_pdf_forms_list_fields",
        "Declared capabilities",
        "Frontmatter",
        "scripts/list_fields.py",
        "Skill digest",
        "Archive digest",
        "unsigned",
        "Audit findings",
        r#"href="../../skills/pdf-forms/0.4.1/files/references/field-types.md.txt""#,
    ] {
        assert!(page.contains(want), "{want} in the skill page:\n{page}");
    }
    // A relative link of the body goes to the file's text view, which is text.
    let (status, headers, body) = get(&format!(
        "{}skills/pdf-forms/0.4.1/files/references/field-types.md.txt",
        s.url
    ));
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "text/plain; charset=utf-8");
    assert!(body.contains("Tx"));
    // The pages' headers.
    let (_, headers, _) = get(&format!("{}skills/pdf-forms/", s.url));
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("default-src 'none'") && !csp.contains("script-src"),
        "{csp}"
    );
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["referrer-policy"], "no-referrer");
    // Without its slash, a folder's page is a redirect to it (as a static host does).
    let (status, headers, _) = get(&format!("{}skills/pdf-forms", s.url));
    assert_eq!(
        (status, &headers["location"]),
        (308, &"/skills/pdf-forms/".parse().unwrap())
    );

    for (name, path, w, h, dark) in [
        ("home-desktop-light", "", 1280, 1000, false),
        ("home-phone-dark", "", 390, 1400, true),
        ("search-desktop-dark", "search/?q=csv", 1280, 800, true),
        (
            "skill-desktop-light",
            "skills/pdf-forms/",
            1280,
            2400,
            false,
        ),
        ("skill-desktop-dark", "skills/pdf-forms/", 1280, 2400, true),
        ("skill-phone-light", "skills/csv-cleaner/", 390, 2400, false),
        ("skill-phone-dark", "skills/csv-cleaner/", 390, 2400, true),
    ] {
        chrome.shot(&format!("{}{path}", s.url), name, w, h, dark);
    }
}

/// A skill whose body, description and files hold every kind of payload a page could be made
/// to run or load, published to a central registry and opened in Chromium: the server that
/// every payload points at sees no request at all.
#[test]
fn a_hostile_skill_causes_no_request() {
    let chrome = Chromium::find();
    let rec = Recorder::start();
    let p = rec.port;
    let at = |n: u32| format!("http://127.0.0.1:{p}/pwned-{n}");
    // The recorder sees what a browser asks of it (the control for everything below).
    chrome.dom(&at(0));
    assert_eq!(rec.requests().len(), 1, "{:?}", rec.requests());
    rec.clear();

    let tmp = registry_dir();
    let dir = tmp.path();
    let tok = token(dir, "ci", "*", "publish");
    std::fs::write(dir.join("ci.token"), &tok).unwrap();
    let skill = dir.join("hostile");
    std::fs::create_dir_all(skill.join("files")).unwrap();
    let description = format!(
        "A hostile skill <script>fetch('{}')</script><img src=x onerror=\"fetch('{}')\"> \
         <iframe src=\"{}\"></iframe><svg onload=\"fetch('{}')\"></svg> <a href=\"javascript:fetch('{}')\">x</a>",
        at(1),
        at(2),
        at(3),
        at(4),
        at(5)
    );
    let body = format!(
        r#"# Hostile

<script>fetch('{s1}')</script>
<script src="{s2}"></script>

<img src="{i1}" onerror="fetch('{i2}')" onload="fetch('{i3}')">

<svg onload="fetch('{v1}')"><image href="{v2}"/><script>fetch('{v3}')</script></svg>

<iframe src="{f1}"></iframe><iframe srcdoc="<script>fetch('{f2}')</script>"></iframe>

<a href="javascript:fetch('{j1}')">javascript link</a> <a href="data:text/html;base64,PHNjcmlwdD5mZXRjaCgnLycpPC9zY3JpcHQ+">data link</a>
<a href="data:text/html,<script>fetch('{j2}')</script>">data link 2</a>

[markdown javascript](javascript:fetch('{j3}')) and ![an image]({m1}) and <{m2}>

<body onload="fetch('{b1}')"><div onmouseover="fetch('{b2}')" style="background:url({b3})">styled</div>
<style>@import url({c1}); body {{ background: url({c2}) }}</style>
<link rel="stylesheet" href="{c3}"><link rel="prefetch" href="{c4}">
<meta http-equiv="refresh" content="0;url={r1}"><base href="{r2}">
<object data="{o1}"></object><embed src="{o2}"><video src="{o3}" autoplay></video><audio src="{o4}" autoplay></audio>
<form action="{o5}"><input type="image" src="{o6}"><button formaction="{o7}">go</button></form>
<details open ontoggle="fetch('{d1}')"><summary>more</summary>x</details>
<math><mtext><table><mglyph><style><img src="{d2}" onerror="fetch('{d3}')"></style></mglyph></table></mtext></math>
"#,
        s1 = at(10),
        s2 = at(11),
        i1 = at(12),
        i2 = at(13),
        i3 = at(14),
        v1 = at(15),
        v2 = at(16),
        v3 = at(17),
        f1 = at(18),
        f2 = at(19),
        j1 = at(20),
        j2 = at(21),
        j3 = at(22),
        m1 = at(23),
        m2 = at(24),
        b1 = at(25),
        b2 = at(26),
        b3 = at(27),
        c1 = at(28),
        c2 = at(29),
        c3 = at(30),
        c4 = at(31),
        r1 = at(32),
        r2 = at(33),
        o1 = at(34),
        o2 = at(35),
        o3 = at(36),
        o4 = at(37),
        o5 = at(38),
        o6 = at(39),
        o7 = at(40),
        d1 = at(41),
        d2 = at(42),
        d3 = at(43),
    );
    std::fs::write(
        skill.join("SKILL.md"),
        format!(
            "---\nname: hostile\ndescription: '{}'\nmetadata:\n  version: \"1.0.0\"\n---\n{body}",
            description.replace('\'', "''")
        ),
    )
    .unwrap();
    std::fs::write(
        skill.join("files/x.html"),
        format!(
            "<!doctype html><script>fetch('{}')</script><img src=\"{}\"><body onload=\"fetch('{}')\">",
            at(50),
            at(51),
            at(52)
        ),
    )
    .unwrap();
    std::fs::write(
        skill.join("files/evil.svg"),
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" onload=\"fetch('{}')\"><script>fetch('{}')</script><image href=\"{}\"/></svg>",
            at(53),
            at(54),
            at(55)
        ),
    )
    .unwrap();

    // Published over the API, as anyone with a token would (the audit's findings recorded and
    // accepted: a catalog shows them).
    let server = crate::support::publish::Server::start(dir, &["--audit", "warn"]);
    let base = server.url.clone();
    Skillcat::new(&[
        "publish",
        &base,
        skill.to_str().unwrap(),
        "--token-file",
        dir.join("ci.token").to_str().unwrap(),
    ])
    .run()
    .code(0);

    let pages = [
        String::new(),
        "browse/updated/1/".into(),
        "skills/hostile/".into(),
        "skills/hostile/1.0.0/".into(),
        "search/?q=hostile".into(),
        "skills/hostile/1.0.0/files/files/x.html.txt".into(),
        "skills/hostile/1.0.0/files/files/evil.svg.txt".into(),
        "skills/hostile/1.0.0/files/SKILL.md.txt".into(),
        ".well-known/agent-skills/hostile/files/x.html".into(),
        ".well-known/agent-skills/hostile/files/evil.svg".into(),
    ];
    let mut doms = Vec::new();
    for path in &pages {
        doms.push((path, chrome.dom(&format!("{base}{path}"))));
    }
    chrome.shot(
        &format!("{base}skills/hostile/"),
        "hostile-skill",
        1280,
        2400,
        false,
    );
    // Give anything deferred its chance to fire.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        rec.requests(),
        Vec::<String>::new(),
        "the payloads of the hostile skill caused requests"
    );

    let skill_dom = &doms[2].1;
    assert!(skill_dom.contains("<h1>hostile</h1>"), "{skill_dom}");
    assert!(skill_dom.contains("Audit findings"));
    assert!(
        skill_dom.contains("recorded when it was published"),
        "{skill_dom}"
    );
    let doc = skill_dom
        .split_once(r#"<article class="doc""#)
        .and_then(|(_, rest)| rest.split_once("</article>"))
        .map(|(doc, _)| doc)
        .expect("the body's article");
    for bad in [
        "<script",
        "<iframe",
        "<svg",
        "<img",
        "<style",
        "<link",
        "<meta",
        "<object",
        "<embed",
        "<video",
        "<audio",
        "<form",
        "<input",
        "<button",
        "<base",
        "onerror",
        "onload",
        "onmouseover",
        "ontoggle",
        "javascript:",
        "data:",
        "style=",
    ] {
        assert!(!doc.contains(bad), "{bad} in the rendered body:\n{doc}");
    }
    // The description is text on every page, escaped where it shows.
    for (path, dom) in &doms[..5] {
        assert!(
            !dom.contains("<script>fetch") && !dom.contains("<iframe src"),
            "{path}: {dom}"
        );
    }
    assert!(
        skill_dom.contains("A hostile skill &lt;script&gt;"),
        "{skill_dom}"
    );
    // The file named .html is text wherever it is served.
    for path in [
        "skills/hostile/1.0.0/files/files/x.html.txt",
        ".well-known/agent-skills/hostile/files/x.html",
        ".well-known/agent-skills/hostile/files/evil.svg",
    ] {
        let (status, headers, _) = get(&format!("{base}{path}"));
        assert_eq!(status, 200, "{path}");
        let ctype = headers["content-type"].to_str().unwrap();
        assert!(ctype.starts_with("text/plain"), "{path}: {ctype}");
        assert!(
            headers["content-security-policy"]
                .to_str()
                .unwrap()
                .contains("sandbox")
        );
    }
    server.stop();
}

/// The search API over the fixture skills: the right skill first for plain queries, paging,
/// and a clear JSON refusal of bad input.
#[test]
fn the_search_api_ranks_and_refuses() {
    let s = Served::start(&fixtures(), &[]);
    for (query, first) in [
        ("fill a pdf form", "pdf-forms"),
        ("clean up this csv export", "csv-cleaner"),
        ("release notes from git tags", "git-release-notes"),
        ("summarise a meeting transcript", "meeting-summary"),
        ("why did the server fail, search the logs", "log-search"),
        ("postmortem timeline of an incident", "incident-timeline"),
        ("review my openapi design", "api-style-review"),
    ] {
        let url = format!("{}api/v1/search?q={}", s.url, query.replace(' ', "+"));
        let (status, j) = get_json(&url);
        assert_eq!(status, 200, "{j}");
        assert_eq!(j["results"][0]["name"], first, "{query}: {j}");
        let r = &j["results"][0];
        for key in ["name", "description", "version", "digest", "signed", "url"] {
            assert!(r.get(key).is_some(), "{key} in {r}");
        }
        assert_eq!(r["url"], format!("/skills/{first}/"));
        assert!(r["digest"].as_str().unwrap().starts_with("sha256:"));
        assert!(j["total"].as_u64().unwrap() >= 1);
    }
    // Paging: one a page, the second page is the second best.
    let (_, all) = get_json(&format!("{}api/v1/search?q=csv+pdf+logs", s.url));
    let (_, second) = get_json(&format!(
        "{}api/v1/search?q=csv+pdf+logs&limit=1&page=2",
        s.url
    ));
    assert_eq!(second["results"].as_array().unwrap().len(), 1);
    assert_eq!(second["results"][0], all["results"][1]);
    assert_eq!(second["total"], all["total"]);
    // Bad input: a 400 that says which parameter and why; unknown skills are 404.
    for (query, code, says) in [
        (
            "q=x&page=0",
            "bad_parameter",
            "page must be a whole number from 1 to 1000",
        ),
        ("q=x&page=two", "bad_parameter", "page must be"),
        (
            "q=x&limit=0",
            "bad_parameter",
            "limit must be a whole number from 1 to 100",
        ),
        ("q=x&limit=101", "bad_parameter", "limit must be"),
        ("q=x&limit=-3", "bad_parameter", "limit must be"),
        ("", "missing_query", "q must hold something"),
        ("q=+++", "missing_query", "q must hold something"),
    ] {
        let (status, j) = get_json(&format!("{}api/v1/search?{query}", s.url));
        assert_eq!(status, 400, "{query}: {j}");
        assert_eq!(j["errors"][0]["code"], code, "{query}: {j}");
        assert!(
            j["errors"][0]["detail"].as_str().unwrap().contains(says),
            "{query}: {j}"
        );
    }
    let (status, j) = get_json(&format!("{}api/v1/skills/no-such-skill", s.url));
    assert_eq!(
        (status, &j["errors"][0]["code"]),
        (404, &J::from("not_found"))
    );
    let (status, _, _) = get(&format!("{}skills/no-such-skill/", s.url));
    assert_eq!(status, 404);
    let (status, j) = get_json(&format!("{}api/v1/nothing-here", s.url));
    assert_eq!(status, 404, "{j}");
    // A query nothing matches is an empty page, not an error.
    let (status, j) = get_json(&format!("{}api/v1/search?q=zzzqqq", s.url));
    assert_eq!((status, &j["total"]), (200, &J::from(0)));
}

/// A skill of its own for the registry: `name` at `version`.
fn versioned(dir: &Path, name: &str, version: &str) -> PathBuf {
    let d = dir.join(format!("v{version}")).join(name);
    std::fs::create_dir_all(d.join("scripts")).unwrap();
    std::fs::write(
        d.join("SKILL.md"),
        format!(
            "---\nname: {name}\ndescription: Turn weather station readings into a daily report (version {version}).\n\
             metadata:\n  version: \"{version}\"\n---\n# Weather report\n\nRun `scripts/report.sh`.\n"
        ),
    )
    .unwrap();
    std::fs::write(
        d.join("scripts/report.sh"),
        format!("#!/bin/sh\n# Print the report.\necho {version}\n"),
    )
    .unwrap();
    d
}

/// A registry of the fixtures and a skill with three versions (the newest yanked).
fn fixture_registry() -> tempfile::TempDir {
    let tmp = registry_dir();
    let dir = tmp.path();
    for entry in std::fs::read_dir(fixtures()).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(path.join("SKILL.md")).unwrap();
        let mut args = vec!["registry", "publish", "r.db", path.to_str().unwrap()];
        if !text.contains("version:") {
            args.extend(["--version", "1.0.0"]);
        }
        Skillcat::new(&args).cwd(dir).run().code(0);
    }
    for v in ["1.0.0", "1.1.0", "2.0.0"] {
        let d = versioned(dir, "weather-report", v);
        Skillcat::new(&["registry", "publish", "r.db", d.to_str().unwrap()])
            .cwd(dir)
            .run()
            .code(0);
    }
    Skillcat::new(&["registry", "yank", "r.db", "weather-report@2.0.0"])
        .cwd(dir)
        .run()
        .code(0);
    tmp
}

/// The pages and the API answer the same way for a registry, a directory and an HTTP source;
/// a registry's pages also list every version with its date and yanked mark, and `export`
/// writes the very pages `serve` answers.
#[test]
fn pages_and_api_for_registry_directory_and_http() {
    let reg = fixture_registry();
    let from_registry = Served::start(&reg.path().join("r.db"), &[]);
    let from_dir = Served::start(&fixtures(), &[]);
    let from_http = Served::start(Path::new(&from_dir.url), &[]);
    for (what, s) in [
        ("registry", &from_registry),
        ("directory", &from_dir),
        ("http", &from_http),
    ] {
        let (status, _, home) = get(&s.url);
        assert_eq!(status, 200, "{what}");
        assert!(
            home.contains(r#"href="./skills/pdf-forms/""#),
            "{what}: {home}"
        );
        let (status, _, page) = get(&format!("{}skills/pdf-forms/", s.url));
        assert_eq!(status, 200, "{what}");
        assert!(page.contains("<h1>PDF forms</h1>"), "{what}");
        assert!(page.contains("run_pdf_forms_make_fdf"), "{what}");
        let (status, j) = get_json(&format!("{}api/v1/search?q=fill+a+pdf+form", s.url));
        assert_eq!(
            (status, &j["results"][0]["name"]),
            (200, &J::from("pdf-forms")),
            "{what}: {j}"
        );
        let (status, j) = get_json(&format!("{}api/v1/skills/pdf-forms", s.url));
        assert_eq!(status, 200, "{what}: {j}");
        assert_eq!(j["latest"], "0.4.1", "{what}: {j}");
        let v = &j["versions"][0];
        assert!(
            v["skill_digest"].as_str().unwrap().starts_with("sha256:"),
            "{what}"
        );
        assert!(
            v["archive_digest"].as_str().unwrap().starts_with("sha256:"),
            "{what}"
        );
        assert_eq!(v["signed"], false, "{what}");
    }
    // The registry's versions: dates, the yanked one marked, a page each.
    let s = &from_registry;
    let (_, j) = get_json(&format!("{}api/v1/skills/weather-report", s.url));
    let versions: Vec<(&str, bool)> = j["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["version"].as_str().unwrap(),
                v["yanked"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        versions,
        [("2.0.0", true), ("1.1.0", false), ("1.0.0", false)],
        "{j}"
    );
    assert_eq!(j["latest"], "1.1.0");
    assert!(
        j["versions"][1]["published"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    let (_, _, page) = get(&format!("{}skills/weather-report/", s.url));
    assert!(page.contains(r#"<span class="ver">1.1.0</span>"#), "{page}");
    assert!(page.contains(r#"<span class="badge yanked">yanked</span>"#));
    // The latest is the highest version not yanked.
    assert!(
        page.contains(r#"<a href="../../skills/weather-report/1.1.0/">1.1.0</a></td><td><time"#),
        "{page}"
    );
    let latest_row = page.split("1.1.0</a></td>").nth(1).unwrap_or_default();
    assert!(
        latest_row
            .split("</tr>")
            .next()
            .unwrap_or_default()
            .contains("badge latest"),
        "{page}"
    );
    for v in ["1.0.0", "1.1.0", "2.0.0"] {
        let (status, _, page) = get(&format!("{}skills/weather-report/{v}/", s.url));
        assert_eq!(status, 200, "{v}");
        assert!(page.contains(&format!("(version {v})")), "{v}");
        assert!(page.contains(&format!("skillcat add {} weather-report@{v}", s.url)));
    }
    let (_, j) = get_json(&format!("{}api/v1/search?q=weather", s.url));
    assert_eq!(
        j["results"][0]["version"], "1.1.0",
        "a yanked version is never a result"
    );

    // export writes the pages serve answers, byte for byte (the same address given to both).
    let out = tempfile::tempdir().unwrap();
    let public = out.path().join("public");
    let url = "https://skills.example.com/";
    Skillcat::new(&[
        "export",
        fixtures().to_str().unwrap(),
        public.to_str().unwrap(),
        "--url",
        url,
    ])
    .run()
    .code(0);
    let same = Served::start(&fixtures(), &["--url", url]);
    for path in [
        "index.html",
        "browse/updated/1/index.html",
        "skills/pdf-forms/index.html",
        "skills/pdf-forms/0.4.1/index.html",
        "skills/pdf-forms/0.4.1/files/SKILL.md.txt",
        "assets/style.css",
    ] {
        let written = std::fs::read_to_string(public.join(path)).unwrap();
        let served_path = path.strip_suffix("index.html").unwrap_or(path);
        let (status, _, served) = get(&format!("{}{served_path}", same.url));
        assert_eq!(status, 200, "{path}");
        assert_eq!(written, served, "{path}");
    }
    let page = std::fs::read_to_string(public.join("skills/pdf-forms/index.html")).unwrap();
    assert!(page.contains("skillcat add https://skills.example.com/ pdf-forms"));
    // Search is the server's: the static copy's search page says so (the live one searches).
    let search = std::fs::read_to_string(public.join("search/index.html")).unwrap();
    assert!(
        search.contains("This is a static copy of the catalog"),
        "{search}"
    );
}

/// `skillcat search URL QUERY`, its text and JSON, no match, and the example its `--help`
/// shows, run against a catalog served here.
#[test]
fn skillcat_search_end_to_end() {
    let s = Served::start(&fixtures(), &[]);
    let out = Skillcat::new(&["search", &s.url, "fill a pdf form", "--format", "json"]).run();
    out.code(0);
    let j = out.json();
    assert_eq!(j["results"][0]["name"], "pdf-forms", "{j}");
    assert_eq!(
        j["results"][0]["url"],
        format!("{}skills/pdf-forms/", s.url),
        "an absolute URL"
    );
    let out = Skillcat::new(&["search", &s.url, "clean csv", "--limit", "1"]).run();
    out.code(0);
    let first = out.out().lines().next().unwrap_or_default().to_string();
    assert!(
        first.starts_with("csv-cleaner  1.2.0  unsigned  "),
        "{first}"
    );
    assert_eq!(out.out().lines().count(), 1);
    Skillcat::new(&["search", &s.url, "zzzqqq"]).run().code(1);
    // Bad input is the server's own sentence, exit 2.
    let out = Skillcat::new(&["search", &format!("{}nowhere/", s.url), "pdf"]).run();
    out.code(2);
    // The --help example, pointed at this server.
    let help = Skillcat::new(&["search", "--help"]).run();
    let example = help
        .out()
        .lines()
        .find_map(|l| l.strip_prefix("Example: skillcat "))
        .expect("an example")
        .replace("https://skills.example.com/", &s.url);
    let args = shell_words::split(&example).unwrap();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = Skillcat::new(&args).run();
    out.code(0);
    assert_eq!(out.json()["results"][0]["name"], "pdf-forms");
}

/// A signed skill's page names its key; with the keyring given, whether the signature
/// verifies and in which scope; the API says the same; the listing marks it signed.
#[test]
fn signatures_with_and_without_a_keyring() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let run = |args: &[&str]| Skillcat::new(args).cwd(t).run();
    run(&["keygen", "-o", "me", "--unencrypted"]).code(0);
    let pdf = fixtures().join("pdf-forms");
    run(&[
        "pack",
        pdf.to_str().unwrap(),
        "-o",
        "pdf.tar.gz",
        "--sign",
        "me.key",
    ])
    .code(0);
    run(&[
        "trust",
        "add",
        "me.pub",
        "--scope",
        "pdf-*",
        "--keyring",
        "k.toml",
    ])
    .code(0);
    // Another key, trusted for other names only.
    run(&["keygen", "-o", "other", "--unencrypted"]).code(0);
    run(&[
        "trust",
        "add",
        "other.pub",
        "--scope",
        "docs-*",
        "--keyring",
        "narrow.toml",
    ])
    .code(0);
    run(&["registry", "init", "r.db"]).code(0);
    run(&["registry", "publish", "r.db", "pdf.tar.gz"]).code(0);
    let db = t.join("r.db");

    // Issue 49, finding 7: a signature nobody checked is not "signed" on any page or answer:
    // the home page, the search page, the search API, the skill API and the skill page all
    // say the same word, and `verified` only with a keyring that verifies it (with the key).
    let says = |url: &str, word: &str, key: Option<&str>| {
        let badge = match key {
            Some(k) => {
                format!(r#"<span class="badge {word}" title="signed by key {k}">{word}</span>"#)
            }
            None => format!(r#"<span class="badge {word}">{word}</span>"#),
        };
        for page in ["", "search/?q=pdf", "skills/pdf-forms/"] {
            let (_, _, html) = get(&format!("{url}{page}"));
            assert!(html.contains(&badge), "{page}: {badge} not in {html}");
            assert!(!html.contains(">signed</span>"), "{page}: {html}");
        }
        let (_, j) = get_json(&format!("{url}api/v1/search?q=pdf"));
        let hit = &j["results"][0];
        assert_eq!(
            (&hit["trust"], &hit["key_id"]),
            (&J::from(word), &J::from(key)),
            "{j}"
        );
        let (_, j) = get_json(&format!("{url}api/v1/skills/pdf-forms"));
        let v = &j["versions"][0];
        assert_eq!(
            (&v["trust"], &v["key_id"]),
            (&J::from(word), &J::from(key)),
            "{j}"
        );
    };
    // What a person sees: the badge as a real browser shows the home page.
    let shown = |url: &str, badge: &str| {
        let dom = Chromium::find().dom(url);
        assert!(
            dom.contains(badge),
            "{badge} not in the DOM Chromium shows: {dom}"
        );
        assert!(!dom.contains(">signed</span>"), "{dom}");
    };
    let unchecked = Served::start(&db, &[]);
    says(&unchecked.url, "unverified", None);
    shown(
        &unchecked.url,
        r#"<span class="badge unverified">unverified</span>"#,
    );
    let (_, j) = get_json(&format!("{}api/v1/skills/pdf-forms", unchecked.url));
    let sig = &j["versions"][0]["signatures"][0];
    let key = sig["key_id"].as_str().unwrap().to_string();
    assert_eq!(key.len(), 16, "{sig}");
    assert_eq!(sig["status"], "not checked", "{sig}");
    let (_, _, page) = get(&format!("{}skills/pdf-forms/", unchecked.url));
    assert!(page.contains(&format!("key <code>{key}</code>")), "{page}");
    assert!(page.contains("no keyring to check it against"));

    let keyring = t.join("k.toml");
    let checked = Served::start(&db, &["--keyring", keyring.to_str().unwrap()]);
    let (_, j) = get_json(&format!("{}api/v1/skills/pdf-forms", checked.url));
    let sig = &j["versions"][0]["signatures"][0];
    assert_eq!(
        (&sig["status"], &sig["key_id"]),
        (&J::from("verified"), &J::from(key.as_str()))
    );
    assert_eq!(sig["detail"], "keyring scope: pdf-*");
    let (_, _, page) = get(&format!("{}skills/pdf-forms/0.4.1/", checked.url));
    assert!(
        page.contains(r#"<span class="badge signed">verified</span>"#),
        "{page}"
    );
    assert!(page.contains("keyring scope: pdf-*"));
    says(&checked.url, "verified", Some(&key));
    shown(
        &checked.url,
        &format!(r#"<span class="badge verified" title="signed by key {key}">verified</span>"#),
    );

    let narrow = t.join("narrow.toml");
    let refused = Served::start(&db, &["--keyring", narrow.to_str().unwrap()]);
    says(&refused.url, "unverified", None);
    let (_, j) = get_json(&format!("{}api/v1/skills/pdf-forms", refused.url));
    let sig = &j["versions"][0]["signatures"][0];
    assert_eq!(sig["status"], "not verified", "{sig}");
    assert!(
        sig["detail"]
            .as_str()
            .unwrap()
            .contains("not in the keyring"),
        "{sig}"
    );
}

/// A skill's guest (JavaScript) tools are on its page with their parameters, beside its
/// script tools.
#[test]
fn guest_tools_are_listed_with_their_parameters() {
    let s = Served::start(&manifest_dir().join("fixtures/runtime/skills"), &[]);
    let (status, _, page) = get(&format!("{}skills/lead-scoring/", s.url));
    assert_eq!(status, 200);
    for want in [
        "<code>score_lead</code>",
        "guest tool (JavaScript, confined) · tools/score.js",
        "<code>quote_discount</code>",
        "<th scope=\"col\">Parameter</th>",
    ] {
        assert!(page.contains(want), "{want} in {page}");
    }
}
