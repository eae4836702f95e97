//! Headless Chromium through ChromeDriver, and the page operations the
//! tests share: waiting for an element or a condition (polled, with a
//! deadline), clicking, filling fields, screenshots.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use crate::common::Killed;

/// How long a page gets to show what a test waits for.
const DEADLINE: Duration = Duration::from_secs(30);

fn chromedriver_path() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("AGENTLOOP_CHROMEDRIVER").map(PathBuf::from),
        Some(PathBuf::from("/usr/bin/chromedriver")),
    ];
    candidates.into_iter().flatten().find(|p| p.exists())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn start_chromedriver(path: &Path) -> (Killed, String) {
    agentloop_providers::ensure_crypto_provider();
    let port = free_port();
    let child = Command::new(path)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let status = format!("{url}/status");
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Ok(response) = reqwest::get(&status).await
            && response.status().is_success()
        {
            break;
        }
        assert!(Instant::now() < deadline, "chromedriver did not start");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (Killed(child), url)
}

/// Whether `error` says the element found is no longer in the page.
fn is_stale(error: &fantoccini::error::CmdError) -> bool {
    matches!(error, fantoccini::error::CmdError::Standard(e)
        if e.error == fantoccini::error::ErrorStatus::StaleElementReference)
}

/// A Chromium window (1280×900) and the ChromeDriver that drives it.
pub struct Page {
    pub client: Client,
    _driver: Killed,
}

impl Page {
    /// Starts ChromeDriver and a headless Chromium session; `None` (said
    /// loudly) when ChromeDriver is not installed, which fails under CI.
    pub async fn open() -> Option<Self> {
        let Some(driver_path) = chromedriver_path() else {
            let message = "chromedriver not found: install Debian's chromium and chromium-driver \
                           (.ci/run does) to run the browser tests";
            assert!(std::env::var_os("CI").is_none(), "{message}");
            eprintln!("\n!!!!!!!! SKIPPED: {message} !!!!!!!!\n");
            return None;
        };
        let (driver, webdriver) = start_chromedriver(&driver_path).await;
        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "goog:chromeOptions".into(),
            json!({ "args": ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                              "--disable-gpu", "--window-size=1280,900"] }),
        );
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = ClientBuilder::new(connector)
            .capabilities(capabilities)
            .connect(&webdriver)
            .await
            .expect("a Chromium session");
        Some(Self {
            client,
            _driver: driver,
        })
    }

    pub async fn goto(&self, url: &str) {
        self.client.goto(url).await.unwrap();
    }

    /// Waits until an element matches `css`.
    pub async fn wait_for(&self, css: &str) -> Element {
        self.client
            .wait()
            .at_most(DEADLINE)
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("{css} did not appear: {e}"))
    }

    /// Waits until `script` (a JS expression) is true.
    pub async fn wait_until(&self, script: &str) {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let value = self
                .run(&format!(
                    "try {{ return !!({script}); }} catch (e) {{ return false; }}"
                ))
                .await;
            if value == json!(true) {
                return;
            }
            assert!(Instant::now() < deadline, "never true: {script}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until the page's text contains `text`.
    pub async fn wait_for_text(&self, text: &str) {
        self.wait_until(&format!(
            "document.body.textContent.includes({})",
            json!(text)
        ))
        .await;
    }

    /// Runs `script` (a function body) in the page; returns its value.
    pub async fn run(&self, script: &str) -> Value {
        self.client.execute(script, vec![]).await.unwrap()
    }

    /// The text of the element `css` names, looked up again when a
    /// re-render replaces it between the lookup and the read.
    pub async fn text_of(&self, css: &str) -> String {
        let mut attempts = 0;
        loop {
            match self.wait_for(css).await.text().await {
                Ok(text) => return text,
                Err(e) if is_stale(&e) && attempts < 10 => attempts += 1,
                Err(e) => panic!("reading {css}: {e}"),
            }
        }
    }

    pub async fn screenshot(&self, name: &str) {
        let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/screenshots");
        std::fs::create_dir_all(&folder).unwrap();
        let png = self.client.screenshot().await.unwrap();
        std::fs::write(folder.join(format!("{name}.png")), png).unwrap();
    }

    /// Types `text` into the field `css` names, in place of its value.
    /// A view renders again when its address changes, so a field found
    /// may be replaced meanwhile: it is looked up again then.
    pub async fn fill(&self, css: &str, text: &str) {
        let mut attempts = 0;
        loop {
            let field = self.wait_for(css).await;
            let typed = match field.clear().await {
                Ok(()) => field.send_keys(text).await,
                Err(e) => Err(e),
            };
            match typed {
                Ok(()) => return,
                Err(e) if is_stale(&e) && attempts < 10 => attempts += 1,
                Err(e) => panic!("filling {css}: {e}"),
            }
        }
    }

    /// Chooses the option with `value` in the select `css`.
    pub async fn select(&self, css: &str, value: &str) {
        self.wait_for(css)
            .await
            .select_by_value(value)
            .await
            .unwrap_or_else(|e| panic!("choosing {value} in {css}: {e}"));
    }

    /// Clicks the element `css` names. Lists re-render when a notice
    /// arrives, so an element found may be replaced before the click: it
    /// is looked up again then.
    pub async fn click(&self, css: &str) {
        let mut attempts = 0;
        loop {
            match self.wait_for(css).await.click().await {
                Ok(()) => return,
                Err(e) if is_stale(&e) && attempts < 10 => attempts += 1,
                Err(e) => panic!("clicking {css}: {e}"),
            }
        }
    }

    /// The id in the page's address after `#/kind/`.
    pub async fn id_in_hash(&self, kind: &str) -> String {
        self.wait_until(&format!("location.hash.startsWith('#/{kind}/')"))
            .await;
        let hash = self.run("return location.hash;").await;
        hash.as_str()
            .unwrap()
            .rsplit('/')
            .next()
            .unwrap()
            .to_owned()
    }

    /// Whether the page scrolls sideways (wider content than its window).
    pub async fn scrolls_sideways(&self) -> bool {
        self.run("const d = document.documentElement; return d.scrollWidth > d.clientWidth;")
            .await
            == json!(true)
    }

    /// The words of the text in the elements `css` names that the page
    /// breaks across lines: each word's range lies on more than one line.
    pub async fn broken_words(&self, css: &str) -> Vec<String> {
        let found = self
            .run(&format!(
                "const broken = []; \
                 for (const el of document.querySelectorAll({})) {{ \
                   const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT); \
                   for (let node = walker.nextNode(); node; node = walker.nextNode()) {{ \
                     for (const word of node.data.matchAll(/\\S+/g)) {{ \
                       const range = document.createRange(); \
                       range.setStart(node, word.index); \
                       range.setEnd(node, word.index + word[0].length); \
                       const lines = new Set([...range.getClientRects()] \
                         .filter((r) => r.width > 0).map((r) => Math.round(r.bottom))); \
                       if (lines.size > 1) broken.push(word[0]); \
                     }} \
                   }} \
                 }} \
                 return broken;",
                json!(css)
            ))
            .await;
        serde_json::from_value(found).unwrap()
    }

    /// The element that has the focus (`tag#id`), and whether it draws a
    /// visible outline.
    pub async fn focus_frame(&self) -> (String, bool) {
        let seen = self
            .run(
                "const el = document.activeElement; \
                 const style = getComputedStyle(el); \
                 const drawn = style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0; \
                 return [el.tagName.toLowerCase() + (el.id ? '#' + el.id : ''), drawn];",
            )
            .await;
        (seen[0].as_str().unwrap().to_owned(), seen[1] == json!(true))
    }

    pub async fn close(self) {
        self.client.close().await.unwrap();
    }
}
