//! The Rust binding against the built toolkit (TOOLKIT_BIN), embedded and remote.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use toolkit_svc::{Client, Opts};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn setup() {
    if std::env::var("TOOLKIT_BIN").is_err() {
        std::env::set_var("TOOLKIT_BIN", root().join("bin/run.js"));
    }
}

/// A scratch directory removed when the test is done with it (after the servers using it: declare it first).
struct Scratch(PathBuf);

impl Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("svc-rs-{name}-{}-{:?}", std::process::id(), std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()));
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

struct Server {
    child: Child,
    url: String,
    // Removed after `drop` has stopped the child (fields drop after the struct's own Drop).
    _home: Scratch,
}

impl Server {
    fn start(data: &str) -> Server {
        setup();
        let home = temp("home");
        let mut child = Command::new(std::env::var("TOOLKIT_BIN").unwrap())
            .args(["svc", "server", "--data-dir", data, "--http-port", "0", "--disable-redis", "--disable-sql", "--format", "json"])
            .env("HOME", &*home)
            .env("TOOLKIT_CONFIG_DIR", &*home)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
        let ready: Value = serde_json::from_str(&line).unwrap();
        Server { child, url: format!("http://127.0.0.1:{}", ready["rest"]), _home: home }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg(self.child.id().to_string()).status();
        let _ = self.child.wait();
    }
}

fn round_trip(db: &Client) {
    assert_eq!(db.put("users:1", json!({"name": "Ada", "city": "Oslo"})).unwrap()["id"], "users:1");
    assert_eq!(db.get("users:1").unwrap(), Some(json!({"id": "users:1", "name": "Ada", "city": "Oslo"})));
    assert_eq!(db.get("users:404").unwrap(), None);
    db.put("users:1", json!({"name": "Ada Lovelace", "city": "London"})).unwrap();
    db.put("users:2", json!({"name": "Ann", "city": "Oslo"})).unwrap();
    let versions = db.history("users:1", Opts::default()).unwrap()["versions"].as_array().unwrap().clone();
    let names: Vec<&str> = versions.iter().map(|v| v["doc"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Ada Lovelace", "Ada"]);
    assert_eq!(db.history("users:1", Opts::limit(1)).unwrap()["versions"].as_array().unwrap().len(), 1);
    let first = versions[1]["commit"].as_str().unwrap();
    assert_eq!(db.get_as_of_commit("users:1", first).unwrap().unwrap()["name"], "Ada");
    let changes = db.diff("users:1", first, None).unwrap();
    assert!(changes.as_array().unwrap().contains(&json!({"op": "change", "path": "/name", "before": "Ada", "after": "Ada Lovelace"})));
    let ids = |v: Value| -> Vec<String> { v["documents"].as_array().unwrap().iter().map(|d| d["id"].as_str().unwrap().to_string()).collect() };
    assert_eq!(ids(db.list_by_table("users", Opts::default()).unwrap()), ["users:1", "users:2"]);
    assert_eq!(ids(db.list_by_prefix("users:2", Opts::default()).unwrap()), ["users:2"]);
    assert_eq!(db.search("oslo", Opts::default()).unwrap()["hits"][0]["id"], "users:2");
    assert_eq!(db.query("SELECT name FROM users WHERE city = $1", vec![json!("Oslo")]).unwrap()["rows"], json!([["Ann"]]));
    db.create_branch("dev", None).unwrap();
    db.put_with("users:3", json!({"name": "Dev only"}), Opts::branch("dev")).unwrap();
    assert_eq!(db.get("users:3").unwrap(), None);
    assert_eq!(db.get_with("users:3", Opts::branch("dev")).unwrap().unwrap()["name"], "Dev only");
    db.remove_branch("dev").unwrap();
    assert_eq!(db.delete("users:2").unwrap()["existed"], true);
    assert_eq!(db.delete("users:2").unwrap()["existed"], false);
    let err = db.query("SELEC nonsense", vec![]).unwrap_err();
    assert_eq!(err.code, "42601");
    let err = db.put("_pg_schema:x", json!({"a": 1})).unwrap_err();
    assert_eq!(err.code, "reserved");
}

#[test]
fn embedded_round_trip_backup_and_lock() {
    setup();
    let dir = temp("embedded");
    let data = dir.join("data");
    let db = toolkit_svc::open(data.to_str().unwrap()).unwrap();
    round_trip(&db);
    let err = toolkit_svc::open(data.to_str().unwrap()).err().unwrap();
    assert_eq!(err.code, "locked");
    assert!(err.message.contains("connect(url)"), "{}", err.message);
    let backup = dir.join("full.tar.gz");
    assert_eq!(db.create_backup(backup.to_str().unwrap(), None, None).unwrap()["type"], "full");
    let restored = dir.join("restored");
    db.restore_backup(backup.to_str().unwrap(), restored.to_str().unwrap()).unwrap();
    db.close().unwrap();
    let copy = toolkit_svc::open(restored.to_str().unwrap()).unwrap();
    assert_eq!(copy.get("users:1").unwrap().unwrap()["name"], "Ada Lovelace");
}

#[test]
fn remote_round_trip_and_server_down() {
    let dir = temp("remote");
    let server = Server::start(dir.join("data").to_str().unwrap());
    let db = toolkit_svc::connect(&server.url, None).unwrap();
    round_trip(&db);
    let down = toolkit_svc::connect("http://127.0.0.1:9", None).unwrap();
    assert_eq!(down.get("users:1").unwrap_err().code, "unavailable");
}

#[test]
fn remote_snapshot_import_and_a_refused_restore() {
    let dir = temp("remote-ops");
    let server = Server::start(dir.join("data").to_str().unwrap());
    let db = toolkit_svc::connect(&server.url, None).unwrap();
    db.put("m:1", json!({"on": "main"})).unwrap();
    db.create_branch("feature", None).unwrap();
    db.put_with("f:1", json!({"n": 1}), Opts::branch("feature")).unwrap();
    let backup = db.create_backup("full.tar.gz", None, None).unwrap();
    let snap = db.export_snapshot("feature.bundle", &["feature"]).unwrap();
    let other = Server::start(dir.join("other").to_str().unwrap());
    let remote = toolkit_svc::connect(&other.url, None).unwrap();
    remote.import_snapshot(snap["path"].as_str().unwrap(), true).unwrap();
    assert_eq!(remote.get_with("f:1", Opts::branch("feature")).unwrap().unwrap()["n"], 1);
    let refused = remote.restore_backup(backup["path"].as_str().unwrap(), "").unwrap_err();
    assert_eq!(refused.code, "conflict");
    assert!(refused.message.contains("toolkit svc restore"), "{}", refused.message);
}

#[test]
fn readme_example_runs() {
    setup();
    let dir = temp("readme");
    // `cargo test` builds the examples beside the test binaries (target/<profile>/examples).
    let exe = std::env::current_exe().unwrap();
    let example = exe.parent().unwrap().parent().unwrap().join("examples").join("readme");
    let out = Command::new(example).current_dir(&dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Ada"));
}

#[test]
fn a_killed_child_is_named_in_the_error() {
    setup();
    let dir = temp("killed");
    let transport = toolkit_svc::EmbeddedTransport::start(dir.join("data").to_str().unwrap(), None).unwrap();
    let pid = transport.pid;
    let db = Client::new(Box::new(transport));
    db.put("users:1", json!({"name": "Ada"})).unwrap();
    assert!(Command::new("kill").args(["-KILL", &pid.to_string()]).status().unwrap().success());
    let err = db.get("users:1").err().unwrap();
    assert_eq!(err.code, "unavailable");
    assert!(err.message.starts_with("the svc child process has exited (killed by SIGKILL)"), "{}", err.message);
}
